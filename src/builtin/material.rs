//! Material configurations of the built-in tables and their canonical colouring.

use shakmaty::{Color, Role};

/// Most pieces (kings included) a built-in table has.
pub const MAX_PIECES: usize = 4;

/// Non-king pieces of each side, strongest first (Q, R, B, N, P).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Material {
    pub white: Vec<Role>,
    pub black: Vec<Role>,
}

fn role_char(role: Role) -> char {
    role.upper_char()
}

/// Strength order used for naming: more pieces first, then stronger pieces.
fn side_key(roles: &[Role]) -> (usize, Vec<Role>) {
    (roles.len(), roles.to_vec())
}

impl Material {
    pub fn new(mut white: Vec<Role>, mut black: Vec<Role>) -> Material {
        white.sort_by(|a, b| b.cmp(a));
        black.sort_by(|a, b| b.cmp(a));
        Material { white, black }
    }

    /// Parses `KQvKR`-style names.
    pub fn parse(name: &str) -> Option<Material> {
        let (w, b) = name.split_once('v')?;
        let side = |s: &str| -> Option<Vec<Role>> {
            let rest = s.strip_prefix('K')?;
            rest.chars().map(|c| Role::from_char(c.to_ascii_lowercase())).collect()
        };
        Some(Material::new(side(w)?, side(b)?))
    }

    pub fn pieces(&self) -> usize {
        2 + self.white.len() + self.black.len()
    }

    pub fn has_pawns(&self) -> bool {
        self.white.iter().chain(&self.black).any(|&r| r == Role::Pawn)
    }

    pub fn pawns(&self) -> usize {
        self.white.iter().chain(&self.black).filter(|&&r| r == Role::Pawn).count()
    }

    /// The same material with colours swapped.
    pub fn flipped(&self) -> Material {
        Material { white: self.black.clone(), black: self.white.clone() }
    }

    /// Tables are stored for one colouring only: the stronger side is White
    /// (as in Syzygy names). Symmetric materials are their own flip.
    pub fn is_canonical(&self) -> bool {
        side_key(&self.white) >= side_key(&self.black)
    }

    pub fn canonical(&self) -> Material {
        if self.is_canonical() { self.clone() } else { self.flipped() }
    }

    pub fn name(&self) -> String {
        let mut s = String::from("K");
        s.extend(self.white.iter().map(|&r| role_char(r)));
        s.push_str("vK");
        s.extend(self.black.iter().map(|&r| role_char(r)));
        s
    }

    /// Dense id of any material with at most two pieces per side (0..7^4);
    /// roles are 1..=5 with 0 for "no piece".
    pub fn id(&self) -> usize {
        let slot = |v: &Vec<Role>, i: usize| v.get(i).map_or(0, |&r| r as usize);
        ((slot(&self.white, 0) * 7 + slot(&self.white, 1)) * 7 + slot(&self.black, 0)) * 7
            + slot(&self.black, 1)
    }

    /// Every canonical material a position of this one can convert into by
    /// captures and promotions (any number of them), bare kings excluded,
    /// in generation order: a table comes after those it depends on.
    pub fn dependencies(&self) -> Vec<Material> {
        let mut found: Vec<Material> = Vec::new();
        let mut todo = vec![self.canonical()];
        while let Some(m) = todo.pop() {
            let mut next = Vec::new();
            for white_side in [true, false] {
                let (own, other) = if white_side { (&m.white, &m.black) } else { (&m.black, &m.white) };
                for i in 0..own.len() {
                    let mut fewer = own.clone();
                    let role = fewer.remove(i);
                    next.push((fewer.clone(), other.clone(), white_side));
                    if role == Role::Pawn {
                        for promoted in [Role::Queen, Role::Rook, Role::Bishop, Role::Knight] {
                            let mut more = fewer.clone();
                            more.push(promoted);
                            next.push((more, other.clone(), white_side));
                        }
                    }
                }
            }
            for (own, other, white_side) in next {
                let d = if white_side { Material::new(own, other) } else { Material::new(other, own) }.canonical();
                if d.pieces() > 2 && !found.contains(&d) {
                    found.push(d.clone());
                    todo.push(d);
                }
            }
        }
        found.sort_by_key(|m| (m.pieces(), m.pawns()));
        found
    }

    /// The men of a table in index order: white king, black king, then White's
    /// pieces, then Black's.
    pub fn men(&self) -> Vec<(Color, Role)> {
        let mut men = vec![(Color::White, Role::King), (Color::Black, Role::King)];
        men.extend(self.white.iter().map(|&r| (Color::White, r)));
        men.extend(self.black.iter().map(|&r| (Color::Black, r)));
        men
    }
}

pub const NUMBER_OF_IDS: usize = 7 * 7 * 7 * 7;

const ROLES: [Role; 5] = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight, Role::Pawn];

/// Every canonical material with 3..=`max_pieces` pieces, in an order where
/// each table comes after all tables it depends on (captures reduce the
/// piece count; promotions reduce the pawn count).
pub fn all_materials(max_pieces: usize) -> Vec<Material> {
    let mut out = Vec::new();
    if max_pieces >= 3 {
        for &a in &ROLES {
            out.push(Material::new(vec![a], vec![]));
        }
    }
    if max_pieces >= 4 {
        for (i, &a) in ROLES.iter().enumerate() {
            for &b in &ROLES[i..] {
                out.push(Material::new(vec![a, b], vec![]));
                let m = Material::new(vec![a], vec![b]);
                out.push(m.canonical());
            }
        }
    }
    out.sort_by_key(|m| (m.pieces(), m.pawns()));
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_counts() {
        let all = all_materials(4);
        assert_eq!(all.len(), 5 + 15 + 15);
        assert!(all.iter().any(|m| m.name() == "KQvKR"));
        assert!(all.iter().any(|m| m.name() == "KPvKP"));
        assert!(!all.iter().any(|m| m.name() == "KRvKQ"));
        assert_eq!(Material::parse("KRvKQ").unwrap().canonical().name(), "KQvKR");
        assert_eq!(Material::parse("KBNvK").unwrap().name(), "KBNvK");
    }

    #[test]
    fn dependencies_follow_captures_and_promotions() {
        let names = |m: &str| Material::parse(m).unwrap().dependencies().iter().map(Material::name).collect::<Vec<_>>();
        assert!(names("KQvK").is_empty());
        assert_eq!(names("KRvKB"), ["KBvK", "KRvK"]);
        let kppk = names("KPPvK");
        // Every 3-piece table but none with a black piece left or more pieces.
        assert!(kppk.contains(&"KPvK".to_string()) && kppk.contains(&"KQQvK".to_string()) && kppk.contains(&"KQPvK".to_string()));
        assert!(!kppk.contains(&"KPPvK".to_string()) && !kppk.contains(&"KQvKR".to_string()));
        // Generation order: fewer pieces, then fewer pawns, first.
        let order: Vec<_> = Material::parse("KPvKP").unwrap().dependencies().iter().map(|m| (m.pieces(), m.pawns())).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]));
    }
}
