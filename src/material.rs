//! Material keys such as `KBNvK`, in the spelling of Syzygy file names.

use shakmaty::{Board, ByRole, Role};

const ROLES_BY_VALUE: [Role; 6] = [Role::King, Role::Queen, Role::Rook, Role::Bishop, Role::Knight, Role::Pawn];

fn side_key(counts: &ByRole<u8>) -> String {
    ROLES_BY_VALUE
        .iter()
        .flat_map(|&role| std::iter::repeat_n(role.upper_char(), usize::from(*counts.get(role))))
        .collect()
}

/// Sort key of one side: more pieces first, then stronger pieces first — the
/// order Syzygy uses to name its files.
fn strength(counts: &ByRole<u8>) -> (u8, [u8; 6]) {
    let total = ROLES_BY_VALUE.iter().map(|&r| *counts.get(r)).sum();
    (total, ROLES_BY_VALUE.map(|r| *counts.get(r)))
}

/// White's material, `v`, Black's material: `KRvKB` when White has the rook.
pub(crate) fn by_color(board: &Board) -> String {
    let m = board.material();
    format!("{}v{}", side_key(&m.white), side_key(&m.black))
}

/// The stronger side first, as table files are named: `KRvKB` for either colour.
pub fn normalized(board: &Board) -> String {
    let m = board.material();
    let (strong, weak) =
        if strength(&m.white) >= strength(&m.black) { (&m.white, &m.black) } else { (&m.black, &m.white) };
    format!("{}v{}", side_key(strong), side_key(weak))
}

/// [`normalized`] packed into an integer, without allocating: 4 bits per
/// role and side, stronger side in the high bits. Never 0 (kings count).
pub(crate) fn normalized_key(board: &Board) -> u64 {
    let m = board.material();
    let (strong, weak) =
        if strength(&m.white) >= strength(&m.black) { (&m.white, &m.black) } else { (&m.black, &m.white) };
    [strong, weak]
        .iter()
        .flat_map(|side| ROLES_BY_VALUE.map(|role| *side.get(role)))
        .fold(0, |key, n| key << 4 | u64::from(n.min(15)))
}

/// The name of a [`normalized_key`], e.g. `KRvK`.
pub(crate) fn key_name(key: u64) -> String {
    let side = |shift: u32| -> String {
        ROLES_BY_VALUE
            .iter()
            .enumerate()
            .flat_map(|(i, role)| {
                let n = (key >> (shift + 4 * (5 - i as u32))) & 0xf;
                std::iter::repeat_n(role.upper_char(), n as usize)
            })
            .collect()
    };
    format!("{}v{}", side(24), side(0))
}

/// Whether the side that is first in [`normalized`] is `color`'s mirror image;
/// i.e. whether `color` is the stronger side.
#[cfg(test)]
pub(crate) fn is_stronger(board: &Board, color: shakmaty::Color) -> bool {
    let m = board.material();
    strength(m.get(color)) >= strength(m.get(!color))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::Color;
    use shakmaty::fen::Fen;

    fn board(fen: &str) -> Board {
        fen.parse::<Fen>().unwrap().into_setup().board
    }

    #[test]
    fn keys_follow_syzygy_naming() {
        let b = board("8/8/2N5/8/3k4/7N/p2K4/8 b - - 0 1");
        assert_eq!(by_color(&b), "KNNvKP");
        assert_eq!(normalized(&b), "KNNvKP");
        let b = board("4k3/8/8/8/8/8/8/3rK2Q w - - 0 1");
        assert_eq!(by_color(&b), "KQvKR");
        let b = board("4k2q/8/8/8/8/8/8/3RK3 w - - 0 1");
        assert_eq!(by_color(&b), "KRvKQ");
        assert_eq!(normalized(&b), "KQvKR");
        assert!(!is_stronger(&b, Color::White));
        assert_eq!(key_name(normalized_key(&b)), "KQvKR");
        let b = board("8/8/2N5/8/3k4/7N/p2K4/8 b - - 0 1");
        assert_eq!(key_name(normalized_key(&b)), "KNNvKP");
    }
}
