//! Positions whose DTM50 the tables hold (built-in tables, up to 4 pieces)
//! need no search: the best move and the whole line are read off the table.
//! Draws are left to the search, which ranks drawn moves by their swindle
//! chances, something DTM50 alone cannot do.

use shakmaty::{Chess, Move, Position};

use super::Oracle;

/// A decided position's line to mate, read off DTM50.
pub(crate) struct ExactLine {
    /// Signed plies to mate from the root: positive when the side to move mates.
    pub root_plies: i32,
    /// Best play for both sides until mate.
    pub line: Vec<Move>,
    /// Table probes made.
    pub probes: u64,
}

/// The mover's value of a reply: signed plies, 0 for a draw.
fn through(child_plies: i32) -> i32 {
    match child_plies.signum() {
        -1 => -child_plies + 1,
        1 => -(child_plies + 1),
        _ => 0,
    }
}

/// Orders the mover's options: quicker wins, then draws, then slower losses.
fn preference(plies: i32) -> i64 {
    match plies.signum() {
        1 => 1_000_000 - i64::from(plies),
        -1 => -1_000_000 - i64::from(plies),
        _ => 0,
    }
}

/// The line for `pos` at its own clock, or `None` when the tables do not
/// hold its DTM50, it is drawn, or a table is inconsistent along the way.
pub(crate) fn dtm50_line(oracle: &dyn Oracle, pos: &Chess) -> Option<ExactLine> {
    let covered = |p: &Chess| p.board().occupied().count() <= oracle.max_pieces() && p.castles().is_empty();
    if !covered(pos) || pos.is_game_over() {
        return None;
    }
    let root_plies = oracle.dtm50_plies(pos, pos.halfmoves())?;
    if root_plies == 0 {
        return None;
    }
    let mut out = ExactLine { root_plies, line: Vec::new(), probes: 1 };
    let mut p = pos.clone();
    let mut expect = root_plies;
    while expect != 0 {
        let mut best: Option<(Move, i32)> = None;
        for m in p.legal_moves() {
            let mut child = p.clone();
            child.play_unchecked(m);
            let value = if child.is_checkmate() {
                // A mate given at clock 99 still counts; later ones do not.
                if child.halfmoves() <= 100 { 1 } else { 0 }
            } else if child.is_game_over() {
                0
            } else {
                out.probes += 1;
                through(oracle.dtm50_plies(&child, child.halfmoves())?)
            };
            if best.is_none_or(|(_, b)| preference(value) > preference(b)) {
                best = Some((m, value));
            }
        }
        let (m, value) = best?;
        if value != expect {
            return None;
        }
        out.line.push(m);
        p.play_unchecked(m);
        // The same line seen from the other side, one ply closer to mate.
        expect = -(expect - expect.signum());
    }
    Some(out)
}
