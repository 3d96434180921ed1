//! Moves and unmoves inside a table's index space: the move generation that
//! the retrograde analyses ([`super::generate`], [`super::dtm50`]) share.

// A man's slot indexes several parallel arrays at once (the layout's men,
// the squares, what each attacks): loops over slots read best by index.
#![allow(clippy::needless_range_loop)]

use arrayvec::ArrayVec;
use shakmaty::{Bitboard, Color, Piece, Role, Square, attacks};

use super::index::{Layout, MAX_MEN, NONE, Pos, Squares, Steps, attacks_of};

/// Any position with at most [`MAX_MEN`] men, used to look up other tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    /// Each man: colour, role and square (0 = a1 ... 63 = h8).
    pub men: ArrayVec<(Color, Role, u8), MAX_MEN>,
    /// The side to move.
    pub turn: Color,
}

/// A legal move's result, by how it is evaluated.
pub enum Succ {
    /// Same layer: a non-zeroing move (its result is found by
    /// [`for_each_quiet_child`] where it is needed).
    Quiet,
    /// Same table, later layer: a pawn move without capture or promotion.
    Push {
        /// The squares after the push.
        sq: Squares,
        /// Whether it is a double step (which may allow an en passant capture).
        double: bool,
    },
    /// Another table: a capture or a promotion.
    Exit(Board),
}

pub(super) fn board(l: &Layout, sq: &Squares, turn: Color, promoted: Option<(usize, Role)>) -> Board {
    let mut men = ArrayVec::new();
    for i in 0..l.n {
        if sq[i] != NONE {
            let (c, mut role) = l.men[i];
            if let Some((j, r)) = promoted
                && j == i
            {
                role = r;
            }
            men.push((c, role, sq[i]));
        }
    }
    Board { men, turn }
}

/// `sq` with man `i` on `to`, built in a register: writing one byte into the
/// array and reading it back whole stalls store forwarding in the hot loops.
#[inline]
fn with_square(sq: Squares, i: usize, to: u8) -> Squares {
    let mut bytes = [0u8; 8];
    bytes[..MAX_MEN].copy_from_slice(&sq);
    let shift = 8 * i as u32;
    let packed = u64::from_le_bytes(bytes) & !(0xff << shift) | (to as u64) << shift;
    let mut out = [0u8; MAX_MEN];
    out.copy_from_slice(&packed.to_le_bytes()[..MAX_MEN]);
    out
}

/// Calls `f` for every legal move of `p` (a legal position of layout `l`).
/// En passant is not generated: table positions carry no en-passant rights.
pub(crate) fn for_each_move(l: &Layout, p: &Pos, f: impl FnMut(Succ)) {
    let legal = moves::<true>(l, p, f);
    debug_assert!(legal.is_some(), "moves of an illegal position");
}

/// Calls `f` for every legal zeroing move of `p` (those that leave its
/// layer) and returns its legal non-zeroing moves, each weighted by the
/// number of symmetries that fix the position it leads to (as
/// [`Layout::symmetry_count`]). `None`, without calling `f`, if `p` is
/// illegal: the side not to move in check.
pub(crate) fn for_each_zeroing_move(l: &Layout, p: &Pos, f: impl FnMut(Succ)) -> Option<u32> {
    moves::<false>(l, p, f)
}

/// Move generation for both of the above: with `QUIET` every move is passed
/// to `f` (and 0 returned); without, the non-zeroing moves are only counted,
/// by population count wherever no legality test or symmetry is in question.
#[inline(always)]
fn moves<const QUIET: bool>(l: &Layout, p: &Pos, mut f: impl FnMut(Succ)) -> Option<u32> {
    let us = p.turn;
    let occ = l.occupied(&p.sq);
    let mut ours = Bitboard::EMPTY;
    // What each of our men attacks; the position is illegal if that
    // includes the other king.
    let mut attacked = [Bitboard::EMPTY; MAX_MEN];
    let their_king = Square::new(p.sq[us.fold_wb(1, 0)] as u32);
    for i in 0..l.n {
        let (c, role) = l.men[i];
        if c == us {
            let from = Square::new(p.sq[i] as u32);
            ours.add(from);
            attacked[i] = attacks_of(from, Piece { color: c, role }, occ);
            if attacked[i].contains(their_king) {
                return None;
            }
        }
    }
    let theirs = occ & !ours;
    let man_at = |s: u8| (0..l.n).find(|&j| p.sq[j] == s).unwrap();
    // A move other than the king's is legal if it ends on `evasions` (in
    // check: onto the checker or between it and the king) and, for a pinned
    // man, on its pin line. King moves are tested against one map of the
    // enemy's attacks. No move needs a test of the position it leads to.
    let king = Square::new(p.sq[us.fold_wb(0, 1)] as u32);
    let mut checkers = Bitboard::EMPTY;
    // Our men alone between the king and an enemy slider, with the squares
    // they may go to.
    let mut pins: ArrayVec<(Square, Bitboard), MAX_MEN> = ArrayVec::new();
    // Squares the king must not step on: every enemy attack, seen through
    // the king itself (it cannot retreat along a slider's line).
    let mut danger = Bitboard::EMPTY;
    for j in 0..l.n {
        let (c, role) = l.men[j];
        if c != us {
            let from = Square::new(p.sq[j] as u32);
            let piece = Piece { color: c, role };
            let attacks = attacks_of(from, piece, occ.without(king));
            danger |= attacks;
            // Seen through the king or not, an attack on its square is the same.
            if attacks.contains(king) {
                checkers.add(from);
            } else if matches!(role, Role::Bishop | Role::Rook | Role::Queen)
                && attacks_of(from, piece, Bitboard::EMPTY).contains(king)
            {
                let line = attacks::between(king, from);
                let blockers = line & occ;
                if !blockers.more_than_one() && (blockers & ours).any() {
                    pins.push((blockers.first().expect("one blocker"), line.with(from)));
                }
            }
        }
    }
    let evasions = match checkers.first() {
        None => Bitboard::FULL,
        Some(_) if checkers.more_than_one() => Bitboard::EMPTY,
        Some(c) => attacks::between(king, c).with(c),
    };
    let may_go = |from: Square| pins.iter().find(|&&(at, _)| at == from).map_or(evasions, |&(_, line)| evasions & line);
    // Positions reached by a non-king move keep both kings: unless they
    // share a long diagonal, no symmetry can fix them.
    let on_diagonal = |s: u8| s >> 3 == s & 7;
    let on_anti_diagonal = |s: u8| (s >> 3) + (s & 7) == 7;
    let kings_fixed_by_symmetry = !l.pawns
        && ((on_diagonal(p.sq[0]) && on_diagonal(p.sq[1])) || (on_anti_diagonal(p.sq[0]) && on_anti_diagonal(p.sq[1])));
    let quiet_weight = std::cell::Cell::new(0u32);
    let emit = |i: usize, to: u8, f: &mut dyn FnMut(Succ), double: bool| {
        let mut child = with_square(p.sq, i, to);
        let captured = theirs.contains(Square::new(to as u32)).then(|| man_at(to));
        if let Some(j) = captured {
            child[j] = NONE;
        }
        if l.men[i].1 == Role::King {
            if danger.contains(Square::new(to as u32)) {
                return;
            }
        } else if !may_go(Square::new(p.sq[i] as u32)).contains(Square::new(to as u32)) {
            return;
        }
        let role = l.men[i].1;
        if role == Role::Pawn && (to >> 3 == 7 || to >> 3 == 0) {
            for promo in [Role::Queen, Role::Rook, Role::Bishop, Role::Knight] {
                f(Succ::Exit(board(l, &child, !us, Some((i, promo)))));
            }
        } else if captured.is_some() {
            f(Succ::Exit(board(l, &child, !us, None)));
        } else if role == Role::Pawn {
            f(Succ::Push { sq: child, double });
        } else if QUIET {
            f(Succ::Quiet);
        } else {
            quiet_weight.set(quiet_weight.get() + l.symmetry_count(&child));
        }
    };
    // A king step can lead to a position a symmetry fixes only onto a long
    // diagonal the other king stands on (pawnless tables).
    let their_lines = if l.pawns {
        Bitboard::EMPTY
    } else {
        let s = their_king as u32 as u8;
        let mut lines = Bitboard::EMPTY;
        if on_diagonal(s) {
            lines |= Bitboard(0x8040_2010_0804_0201);
        }
        if on_anti_diagonal(s) {
            lines |= Bitboard(0x0102_0408_1020_4080);
        }
        lines
    };
    for i in 0..l.n {
        let (c, role) = l.men[i];
        if c != us {
            continue;
        }
        let from = p.sq[i];
        let from_sq = Square::new(from as u32);
        if role == Role::Pawn {
            let fwd: i32 = us.fold_wb(8, -8);
            let to = (from as i32 + fwd) as u8;
            if !occ.contains(Square::new(to as u32)) {
                emit(i, to, &mut f, false);
                if from >> 3 == us.fold_wb(1, 6) {
                    let to2 = (to as i32 + fwd) as u8;
                    if !occ.contains(Square::new(to2 as u32)) {
                        emit(i, to2, &mut f, true);
                    }
                }
            }
            for t in attacked[i] & theirs {
                emit(i, t as u8, &mut f, false);
            }
        } else {
            let targets = attacked[i] & !ours;
            if !QUIET && role != Role::King && !kings_fixed_by_symmetry {
                let targets = targets & may_go(from_sq);
                quiet_weight.set(quiet_weight.get() + (targets & !occ).count() as u32);
                for t in targets & theirs {
                    emit(i, t as u8, &mut f, false);
                }
            } else if !QUIET && role == Role::King {
                // Every step to a safe empty square weighs 1, except onto
                // the other king's long diagonal.
                let quiet = targets & !occ & !danger;
                let mut weight = (quiet & !their_lines).count() as u32;
                for t in quiet & their_lines {
                    weight += l.symmetry_count(&with_square(p.sq, i, t as u8));
                }
                quiet_weight.set(quiet_weight.get() + weight);
                for t in targets & theirs {
                    emit(i, t as u8, &mut f, false);
                }
            } else {
                for t in targets {
                    emit(i, t as u8, &mut f, false);
                }
            }
        }
    }
    Some(quiet_weight.get())
}

/// Calls `f` with the index of every legal position that reaches `r` by a
/// non-zeroing move (a non-pawn piece of the side that just moved steps back
/// to an empty square). `r` must be canonical (decoded from its index). The
/// predecessor has the other side to move.
#[cfg(test)]
fn for_each_unmove(l: &Layout, r: &Pos, f: impl FnMut(usize)) {
    Neighbours::Unmoves.for_each(l, r, None, f);
}

/// Calls `f` with the index of every position a legal non-zeroing move of
/// `p` leads to. `p` must be canonical.
pub(crate) fn for_each_quiet_child(l: &Layout, p: &Pos, f: impl FnMut(usize)) {
    Neighbours::QuietChildren.for_each(l, p, None, f);
}

/// The indexes, with `turn` to move, of `sq` with one of `mover`'s pieces
/// (not pawns) moved to an empty square it attacks, where the side not to
/// move then is not in check. `sq` is canonical; `raw`, if given, is its
/// index with `turn` to move (see [`Layout::steps_from_raw`]).
#[inline(always)]
fn piece_steps(l: &Layout, sq: &Squares, mover: Color, turn: Color, raw: Option<u32>, mut f: impl FnMut(usize)) {
    let occ = l.occupied(sq);
    // The king that must not be left attacked, and who would attack it:
    // after an un-move the side to move's (the mover's men attack), after
    // a move the mover's own.
    let attackers = if mover == turn { mover } else { !mover };
    let victim = Square::new(sq[(!attackers).fold_wb(0, 1)] as u32);
    // Attackers on a line (or at a leap) to the king, whatever stands
    // between: only these can attack it after a step.
    let mut lined_up = [false; MAX_MEN];
    for j in 0..l.n {
        let (c, role) = l.men[j];
        if c == attackers && sq[j] != NONE {
            lined_up[j] =
                attacks_of(Square::new(sq[j] as u32), Piece { color: c, role }, Bitboard::EMPTY).contains(victim);
        }
    }
    for i in 0..l.n {
        let (c, role) = l.men[i];
        if c != mover || role == Role::Pawn {
            continue;
        }
        let from = Square::new(sq[i] as u32);
        let mut targets = attacks_of(from, Piece { color: c, role }, occ) & !occ;
        // Legality: with this man gone from `from`, which targets leave the
        // victim king unattacked.
        let vacated = occ.without(from);
        if from == victim {
            // The king itself steps: onto squares no attacker reaches.
            for j in 0..l.n {
                let (a, arole) = l.men[j];
                if a == attackers && sq[j] != NONE {
                    targets &= !attacks_of(Square::new(sq[j] as u32), Piece { color: a, role: arole }, vacated);
                }
            }
        } else {
            if c == attackers {
                // An attacker steps back: not onto a square it checks from
                // (its attacks are symmetric, it is no pawn).
                targets &= !attacks_of(victim, Piece { color: c, role }, vacated);
            }
            for j in 0..l.n {
                if j != i && lined_up[j] {
                    let (a, arole) = l.men[j];
                    let at = Square::new(sq[j] as u32);
                    if attacks_of(at, Piece { color: a, role: arole }, vacated).contains(victim) {
                        // Only a target in between blocks it.
                        targets &= attacks::between(at, victim);
                    }
                }
            }
        }
        if targets.is_empty() {
            continue;
        }
        // The hot loop of every retrograde pass: where the symmetry stays,
        // one multiply-add per position.
        let full = |t: u8| l.index(&Pos { sq: with_square(*sq, i, t), turn }) as usize;
        let steps = match raw {
            Some(raw) => l.steps_from_raw(sq, raw, i, turn),
            None => l.steps(sq, i, turn),
        };
        match steps {
            Steps::Plain { base, stride } => {
                for t in targets {
                    f((base + t as u32 * stride) as usize);
                }
            }
            Steps::Full => {
                for t in targets {
                    f(full(t as u8));
                }
            }
            steps => {
                for t in targets {
                    f(steps.at(l, t as u8).map_or_else(|| full(t as u8), |x| x as usize));
                }
            }
        }
    }
}

/// Which positions [`for_each_neighbour_prefetched`] finds for an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Neighbours {
    /// Its predecessors, as [`for_each_unmove`].
    Unmoves,
    /// The positions its quiet moves lead to, as [`for_each_quiet_child`].
    QuietChildren,
}

impl Neighbours {
    /// Calls `f` with the index of each of `p`'s neighbours of this kind;
    /// `raw`, if given, is the index of `p`'s squares with the other side to
    /// move (see [`Layout::steps_from_raw`]).
    #[inline(always)]
    fn for_each(self, l: &Layout, p: &Pos, raw: Option<u32>, f: impl FnMut(usize)) {
        match self {
            // A piece steps back along the lines it stepped forward on.
            Neighbours::Unmoves => piece_steps(l, &p.sq, !p.turn, !p.turn, raw, f),
            Neighbours::QuietChildren => piece_steps(l, &p.sq, p.turn, !p.turn, raw, f),
        }
    }
}

/// [`for_each_unmove`] or [`for_each_quiet_child`] over a batch of
/// positions, for the retrograde passes, which wait on memory more than on
/// arithmetic: the neighbours of each entry are found, and `prefetch` is
/// called with each of their indexes, a few entries before `f` processes
/// the entry (with all its neighbours' indexes). `f` sees the entries in
/// order; `index` gives each entry's position index.
#[inline(always)]
pub(crate) fn for_each_neighbour_prefetched<E: Copy>(
    l: &Layout,
    which: Neighbours,
    entries: impl IntoIterator<Item = E>,
    index: impl Fn(E) -> u32,
    prefetch: impl Fn(usize),
    mut f: impl FnMut(E, &[u32]),
) {
    // The entries found but not processed yet, oldest at `slot`, with
    // their neighbours. Fixed arrays, not vectors: a push that might grow
    // would keep the length in memory in the hot loop.
    let mut pending: [Option<E>; PREFETCH_ENTRIES] = [None; PREFETCH_ENTRIES];
    let mut neighbours = [[0u32; MAX_NEIGHBOURS]; PREFETCH_ENTRIES];
    let mut lens = [0usize; PREFETCH_ENTRIES];
    let mut slot = 0;
    for e in entries {
        if let Some(p) = pending[slot].take() {
            f(p, &neighbours[slot][..lens[slot]]);
        }
        let (out, mut len) = (&mut neighbours[slot], 0);
        let found = |q: usize| {
            prefetch(q);
            out[len] = q as u32;
            len += 1;
        };
        let idx = index(e);
        let p = l.unchecked_pos(idx);
        // Both find positions with the other side to move, whose index
        // differs from the entry's in that digit only until a man moves.
        which.for_each(l, &p, Some(l.other_turn(idx, p.turn)), found);
        lens[slot] = len;
        pending[slot] = Some(e);
        slot = (slot + 1) % PREFETCH_ENTRIES;
    }
    for k in 0..PREFETCH_ENTRIES {
        let s = (slot + k) % PREFETCH_ENTRIES;
        if let Some(p) = pending[s].take() {
            f(p, &neighbours[s][..lens[s]]);
        }
    }
}

/// More positions than one move or un-move of a built-in table's position
/// can reach: three queens and a king reach at most 3 * 27 + 8 = 89 squares.
const MAX_NEIGHBOURS: usize = 128;

/// How many entries ahead [`for_each_neighbour_prefetched`] looks: enough
/// for the prefetched lines to arrive before their entry is processed;
/// looking further ahead generates no faster (docs/performance.md) and only
/// holds more entries.
const PREFETCH_ENTRIES: usize = 2;

/// Asks for the cache line holding `*p` without waiting for it (a hint: no
/// access is made, so any address will do).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unused_unsafe)]
    // SAFETY: a prefetch never faults and reads nothing.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use shakmaty::{CastlingMode, Chess, FromSetup, Move, Position, Setup};

    use super::*;
    use tbformat::Material;

    /// The position `p` of layout `l` as shakmaty sees it.
    fn chess(l: &Layout, p: &Pos) -> Chess {
        let mut setup = Setup::empty();
        for i in 0..l.n {
            let (c, r) = l.men[i];
            setup.board.set_piece_at(Square::new(p.sq[i] as u32), r.of(c));
        }
        setup.turn = p.turn;
        // Table positions include checks no game could reach.
        match Chess::from_setup(setup, CastlingMode::Standard) {
            Ok(pos) => pos,
            Err(e) => e.ignore_impossible_check().unwrap(),
        }
    }

    /// Our index of a shakmaty position of layout `l`'s material. (The
    /// store's `pos_in` does this for boards, but `store` depends on
    /// `moves`, and the module graph allows no cycle, tests included.)
    fn index_of(l: &Layout, pos: &Chess) -> usize {
        let mut sq = [NONE; MAX_MEN];
        for (s, piece) in pos.board().clone() {
            let slot = (0..l.n).find(|&i| l.men[i] == (piece.color, piece.role) && sq[i] == NONE).unwrap();
            sq[slot] = s as u8;
        }
        l.index(&Pos { sq, turn: pos.turn() }) as usize
    }

    /// Quiet children, un-moves and the zeroing moves with their weighted
    /// count of quiet moves, each against shakmaty's legal moves, on every
    /// 37th index of tables with and without pawns, identical men and
    /// sliders (pins, checks, symmetric positions).
    #[test]
    fn moves_and_unmoves_match_shakmaty() {
        for name in ["KRvK", "KQvKR", "KBBvK", "KBvKN", "KRvKP", "KPvKP", "KQvKB"] {
            let l = Layout::new(&Material::parse(name).unwrap().canonical());
            let (mut positions, mut edges) = (0, 0);
            for idx in (0..l.size as u32).step_by(37) {
                let Some(p) = l.decode(idx) else { continue };
                positions += 1;
                let pos = chess(&l, &p);
                let (quiet, zeroing): (Vec<Move>, Vec<Move>) =
                    pos.legal_moves().into_iter().partition(|m| !m.is_zeroing());
                let mut expected: Vec<usize> =
                    quiet.iter().map(|m| index_of(&l, &pos.clone().play(*m).unwrap())).collect();
                let mut children = Vec::new();
                for_each_quiet_child(&l, &p, |c| children.push(c));
                expected.sort_unstable();
                children.sort_unstable();
                assert_eq!(children, expected, "{name} {idx}: quiet children");
                // Every quiet move is found again as an un-move of its child.
                for &c in &children {
                    let mut preds = Vec::new();
                    for_each_unmove(&l, &l.decode(c as u32).expect("a legal child"), |q| preds.push(q));
                    assert!(preds.contains(&(idx as usize)), "{name} {idx}: un-moves of child {c}");
                    edges += 1;
                }
                // And every un-move is a legal position with a quiet move here.
                for_each_unmove(&l, &p, |q| {
                    let qp = l.decode(q as u32).expect("un-moves reach legal positions");
                    let mut back = Vec::new();
                    for_each_quiet_child(&l, &qp, |c| back.push(c));
                    assert!(back.contains(&(idx as usize)), "{name} {idx}: un-move {q}");
                });
                let mut exits = 0;
                let weight = for_each_zeroing_move(&l, &p, |_| exits += 1).expect("legal");
                let promotions = zeroing.iter().filter(|m| m.is_promotion()).count();
                assert_eq!(exits, zeroing.len(), "{name} {idx}: zeroing moves ({promotions} promotions)");
                let weighted: u32 = quiet
                    .iter()
                    .map(|m| {
                        l.symmetry_count(&l.decode(index_of(&l, &pos.clone().play(*m).unwrap()) as u32).unwrap().sq)
                    })
                    .sum();
                assert_eq!(weight, weighted, "{name} {idx}: weighted quiet moves");
            }
            assert!(positions > 1000 && edges > 10_000, "{name}: {positions} positions, {edges} edges");
        }
    }
}
