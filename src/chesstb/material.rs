//! chesstb's material names and which colour a table calls white.

use shakmaty::{Board, Color, Role};

/// Non-king roles in the order of a name: queen, rook, bishop, knight, pawn.
pub const ROLES: [Role; 5] = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight, Role::Pawn];
const LETTERS: [char; 5] = ['Q', 'R', 'B', 'N', 'P'];
/// chesstb's strength for choosing the side named first.
const STRENGTH: [u32; 5] = [900, 500, 330, 320, 100];

/// A material as chesstb names its files: the stronger side first, called
/// white in the table whatever colour it has on the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableMaterial {
    /// `[side][role]`: side 0 is the one named first.
    pub counts: [[u8; 5]; 2],
}

pub fn role_index(role: Role) -> Option<usize> {
    ROLES.iter().position(|&r| r == role)
}

impl TableMaterial {
    /// Parses a canonical name such as `KRPKB`. Lowercase `p` (opposing pawn
    /// pairs) is not supported.
    pub fn parse(name: &str) -> Option<TableMaterial> {
        let rest = name.strip_prefix('K')?;
        let (white, black) = rest.split_once('K')?;
        let mut counts = [[0u8; 5]; 2];
        for (side, letters) in [white, black].into_iter().enumerate() {
            for ch in letters.chars() {
                let i = LETTERS.iter().position(|&l| l == ch)?;
                counts[side][i] += 1;
            }
        }
        let m = TableMaterial { counts };
        (m.canonical() == (m, false)).then_some(m)
    }

    pub fn name(&self) -> String {
        let mut s = String::new();
        for side in 0..2 {
            s.push('K');
            for (i, &n) in self.counts[side].iter().enumerate() {
                for _ in 0..n {
                    s.push(LETTERS[i]);
                }
            }
        }
        s
    }

    pub fn pieces(&self) -> usize {
        2 + self.counts.iter().flatten().map(|&n| n as usize).sum::<usize>()
    }

    pub fn has_pawns(&self) -> bool {
        self.counts[0][4] + self.counts[1][4] > 0
    }

    pub fn is_symmetric(&self) -> bool {
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
        TableMaterial { counts }
    }

    /// The canonical material and whether the colours had to be swapped to
    /// reach it (chesstb: the stronger side is white; on equal strength the
    /// side with more queens, then rooks, … ; a symmetric material is never
    /// swapped).
    pub fn canonical(&self) -> (TableMaterial, bool) {
        let score = |side: usize| -> u32 { self.counts[side].iter().zip(STRENGTH).map(|(&n, s)| n as u32 * s).sum() };
        let swap = match score(1).cmp(&score(0)) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => self.counts[1] > self.counts[0],
        };
        if swap { (TableMaterial { counts: [self.counts[1], self.counts[0]] }, true) } else { (*self, false) }
    }
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
        let m = TableMaterial { counts: [[0, 0, 0, 1, 0], [0, 0, 1, 0, 0]] };
        assert_eq!(m.canonical().0.name(), "KBKN");
        assert!(m.canonical().1);
    }
}
