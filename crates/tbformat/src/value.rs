//! One metric value of one position in 16 bits: 2 bits of kind, 14 bits of
//! distance in plies. The same encoding is used while generating and on disk.

/// Unused index, illegal position, or not yet known while generating.
pub const UNKNOWN: u16 = 0;
/// A draw.
pub const DRAW: u16 = 1;
const WIN: u16 = 2;
const LOSS: u16 = 3;

/// Largest distance the encoding holds.
pub const MAX_PLIES: u16 = (1 << 14) - 1;

/// The side to move wins in `plies` plies.
#[inline]
pub const fn win(plies: u16) -> u16 {
    (plies << 2) | WIN
}

/// The side to move loses in `plies` plies (0: it is mated).
#[inline]
pub const fn loss(plies: u16) -> u16 {
    (plies << 2) | LOSS
}

/// The plies of a win or loss.
#[inline]
pub const fn plies(v: u16) -> u16 {
    v >> 2
}

/// Whether `v` is a win for the side to move.
#[inline]
pub const fn is_win(v: u16) -> bool {
    v & 3 == WIN
}

/// Whether `v` is a loss for the side to move.
#[inline]
pub const fn is_loss(v: u16) -> bool {
    v & 3 == LOSS
}

/// Signed plies as the API reports them: positive when the side to move wins.
/// A checkmated side gets 0 (with WDL loss), like a draw.
#[inline]
pub fn signed_plies(v: u16) -> i32 {
    match v & 3 {
        WIN => plies(v) as i32,
        LOSS => -(plies(v) as i32),
        _ => 0,
    }
}

/// Orders values from the mover's point of view: quicker wins, then draws,
/// then slower losses.
#[inline]
pub(crate) fn score(v: u16) -> i32 {
    match v & 3 {
        WIN => 1_000_000 - plies(v) as i32,
        LOSS => -1_000_000 + plies(v) as i32,
        DRAW => 0,
        _ => i32::MIN,
    }
}

/// The better of two options for the side choosing between them.
#[inline]
pub fn better(a: u16, b: u16) -> u16 {
    if score(b) > score(a) { b } else { a }
}

/// The mover's value of a move whose resulting position has value `child`
/// (from the opponent's point of view), one ply further away.
#[inline]
pub fn back_one_ply(child: u16) -> u16 {
    match child & 3 {
        WIN => loss(plies(child) + 1),
        LOSS => win(plies(child) + 1),
        _ => child,
    }
}

/// DTZ50'': the mover's value of a zeroing move (capture, pawn move) into a
/// position of value `child`. The distance restarts: 1 ply for a result the
/// 50-move rule leaves alone, 101 when the later phase is cursed/blessed, so
/// that every value above 100 means "drawn by the 50-move rule".
#[inline]
pub fn back_zeroing(child: u16) -> u16 {
    let d = if plies(child) <= 100 { 1 } else { 101 };
    match child & 3 {
        WIN => loss(d),
        LOSS => win(d),
        _ => child,
    }
}

/// Five-valued WDL50 from a DTZ50'' value.
#[inline]
pub fn wdl50(dtz: u16) -> shakmaty_syzygy::Wdl {
    use shakmaty_syzygy::Wdl;
    let cursed = plies(dtz) > 100;
    match dtz & 3 {
        WIN => {
            if cursed {
                Wdl::CursedWin
            } else {
                Wdl::Win
            }
        }
        LOSS => {
            if cursed {
                Wdl::BlessedLoss
            } else {
                Wdl::Loss
            }
        }
        _ => Wdl::Draw,
    }
}
