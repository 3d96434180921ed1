//! chesstb's material names and which colour a table calls white.

use shakmaty::{Board, Color, Role};

/// Non-king roles in the order of a name: queen, rook, bishop, knight, pawn.
pub(crate) const ROLES: [Role; 5] = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight, Role::Pawn];
const LETTERS: [char; 5] = ['Q', 'R', 'B', 'N', 'P'];
/// chesstb's strength for choosing the side named first.
const STRENGTH: [u32; 5] = [900, 500, 330, 320, 100];

/// A material as chesstb names its files: the stronger side first, called
/// white in the table whatever colour it has on the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableMaterial {
    /// `[side][role]`: side 0 is the one named first. Without the pair's
    /// two pawns, for a pair table.
    pub counts: [[u8; 5]; 2],
    /// An opposing-pair table (`p` in the name, e.g. `KQpKp`): one white
    /// and one black pawn on a file, the white one below, indexed together;
    /// the same positions as the full material, another index.
    pub pair: bool,
}

pub(crate) fn role_index(role: Role) -> Option<usize> {
    ROLES.iter().position(|&r| r == role)
}

impl TableMaterial {
    /// Parses a canonical name such as `KRPKB`, or `KQpKp` for an opposing
    /// pair (one `p` on each side, after the side's other letters).
    pub fn parse(name: &str) -> Option<TableMaterial> {
        let rest = name.strip_prefix('K')?;
        let (white, black) = rest.split_once('K')?;
        let mut counts = [[0u8; 5]; 2];
        let mut pairs = [false; 2];
        for (side, letters) in [white, black].into_iter().enumerate() {
            let letters = match letters.strip_suffix('p') {
                Some(l) => {
                    pairs[side] = true;
                    l
                }
                None => letters,
            };
            for ch in letters.chars() {
                let i = LETTERS.iter().position(|&l| l == ch)?;
                counts[side][i] += 1;
            }
        }
        if pairs[0] != pairs[1] {
            return None;
        }
        let m = TableMaterial { counts, pair: pairs[0] };
        (m.canonical() == (m, false)).then_some(m)
    }

    /// chesstb's name of the material, stronger side first, e.g. `KQKR`.
    pub fn name(&self) -> String {
        let mut s = String::new();
        for side in 0..2 {
            s.push('K');
            for (i, &n) in self.counts[side].iter().enumerate() {
                for _ in 0..n {
                    s.push(LETTERS[i]);
                }
            }
            if self.pair {
                s.push('p');
            }
        }
        s
    }

    /// Pieces on the board, kings included.
    pub fn pieces(&self) -> usize {
        2 + 2 * self.pair as usize + self.counts.iter().flatten().map(|&n| n as usize).sum::<usize>()
    }

    /// Whether either side has a pawn.
    pub fn has_pawns(&self) -> bool {
        self.pair || self.counts[0][4] + self.counts[1][4] > 0
    }

    pub(crate) fn is_symmetric(&self) -> bool {
        self.counts[0] == self.counts[1]
    }

    /// The material of a board, with its colours as on the board (white first).
    pub fn of_board(board: &Board) -> TableMaterial {
        let mut counts = [[0u8; 5]; 2];
        for (side, color) in [Color::White, Color::Black].into_iter().enumerate() {
            for (i, &role) in ROLES.iter().enumerate() {
                counts[side][i] = (board.by_color(color) & board.by_role(role)).count() as u8;
            }
        }
        TableMaterial { counts, pair: false }
    }

    /// The pair table's material of a board with an opposing pair (its
    /// colours as on the board), `None` without one. Which pair stands for
    /// the pair does not change the material.
    pub fn pair_of_board(board: &Board) -> Option<TableMaterial> {
        let pawns = |c: Color| {
            (board.by_color(c) & board.pawns()).into_iter().map(|s| s as u8).collect::<arrayvec::ArrayVec<u8, 8>>()
        };
        canonical_pair(&pawns(Color::White), &pawns(Color::Black))?;
        let mut m = TableMaterial::of_board(board);
        m.counts[0][4] -= 1;
        m.counts[1][4] -= 1;
        m.pair = true;
        Some(m)
    }

    /// The canonical material and whether the colours had to be swapped to
    /// reach it (chesstb: the stronger side is white; on equal strength the
    /// side with more queens, then rooks, … ; a symmetric material is never
    /// swapped). A pair adds the same to both sides: only the free pieces
    /// decide.
    pub fn canonical(&self) -> (TableMaterial, bool) {
        let score = |side: usize| -> u32 { self.counts[side].iter().zip(STRENGTH).map(|(&n, s)| n as u32 * s).sum() };
        let swap = match score(1).cmp(&score(0)) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => self.counts[1] > self.counts[0],
        };
        if swap {
            (TableMaterial { counts: [self.counts[1], self.counts[0]], pair: self.pair }, true)
        } else {
            (*self, false)
        }
    }
}

/// The pair's number in chesstb's order of its 120 placements (file by
/// file, then the white pawn's rank, then the black pawn's); `None` if the two pawns
/// are not an opposing pair.
pub(super) fn pair_number(white: u8, black: u8) -> Option<u64> {
    let (wr, br) = ((white >> 3) as u64, (black >> 3) as u64);
    if white & 7 != black & 7 || wr < 1 || br > 6 || wr >= br {
        return None;
    }
    // Rank pairs of a white pawn below `wr`: 5 + 4 + … (a black pawn above it).
    let below: u64 = (1..wr).map(|r| 6 - r).sum();
    Some((white & 7) as u64 * 15 + below + (br - wr - 1))
}

/// The opposing pair that a `p` table stores as the pair: of all the
/// pairs on the board, the one of the lowest file, then lowest white rank,
/// then lowest black rank.
pub(super) fn canonical_pair(white: &[u8], black: &[u8]) -> Option<(u8, u8)> {
    let mut best: Option<(u8, u8)> = None;
    for &w in white {
        for &b in black {
            if pair_number(w, b).is_none() {
                continue;
            }
            let key = |(w, b): (u8, u8)| (w & 7, w >> 3, b >> 3);
            if best.is_none_or(|old| key((w, b)) < key(old)) {
                best = Some((w, b));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_orient() {
        for name in ["KQK", "KRKB", "KBKN", "KPKP", "KQRKBN"] {
            assert_eq!(TableMaterial::parse(name).unwrap().name(), name);
        }
        assert!(TableMaterial::parse("KNKB").is_none());
        assert!(TableMaterial::parse("KKQ").is_none());
        let m = TableMaterial { counts: [[0, 0, 0, 1, 0], [0, 0, 1, 0, 0]], pair: false };
        assert_eq!(m.canonical().0.name(), "KBKN");
        assert!(m.canonical().1);
    }

    #[test]
    fn pair_names() {
        for name in ["KpKp", "KQpKp", "KPpKp", "KRpKRp", "KPPpKp"] {
            let m = TableMaterial::parse(name).unwrap();
            assert!(m.pair && m.has_pawns());
            assert_eq!(m.name(), name);
        }
        assert_eq!(TableMaterial::parse("KQpKp").unwrap().pieces(), 5);
        // One p on each side, last; never the weaker side first.
        for bad in ["KQpK", "KQKp", "KpQKp", "KpKQp", "KQppKpp"] {
            assert!(TableMaterial::parse(bad).is_none(), "{bad}");
        }
        // The pair's pawns leave the counts; the canonical pair is the lowest file's.
        let board: shakmaty::Board = "8/1p6/8/1P5q/8/k7/8/K7".parse().unwrap();
        let (m, swapped) = TableMaterial::pair_of_board(&board).unwrap().canonical();
        assert_eq!((m.name().as_str(), swapped), ("KQpKp", true));
        assert!(TableMaterial::pair_of_board(&"8/1P6/8/1p6/8/k7/8/K7".parse().unwrap()).is_none());
    }
}
