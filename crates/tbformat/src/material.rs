//! Material configurations of the built-in tables and their canonical colouring.

use shakmaty::{Color, Role};

/// Most pieces (kings included) a built-in table can have. Every material
/// of 3 to 5 pieces has a built-in table; of 6 pieces, only four identical
/// pieces against a bare king ([`Material::is_builtin`]).
pub const MAX_PIECES: usize = 6;

/// Most pieces of the materials that all have a built-in table.
pub const MAX_PIECES_ALL: usize = 5;

/// Most pieces of the tables generated without being asked for: all of
/// them together cost far less than one table of one more piece, which
/// takes gigabytes while generating (docs/builtin-generation.md).
pub const DEFAULT_PIECES: usize = 4;

/// Non-king pieces of each side, strongest first (Q, R, B, N, P).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Material {
    /// White's men besides the king, strongest first.
    pub white: Vec<Role>,
    /// Black's men besides the king, strongest first.
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
    /// The material of these men (kings implied), each side sorted strongest first.
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

    /// Parses the name of a built-in table (in either colouring, see
    /// [`Material::is_builtin`]) into its canonical material.
    pub fn parse_table(name: &str) -> Option<Material> {
        Material::parse(name).filter(Material::is_builtin).map(|m| m.canonical())
    }

    /// Whether this material has a built-in table: every material of 3 to
    /// [`MAX_PIECES_ALL`] pieces, and of [`MAX_PIECES`] pieces four identical
    /// pieces, none a pawn, against a bare king (KQQQQvK, KRRRRvK, KBBBBvK,
    /// KNNNNvK). Those four have one combination digit for their four men,
    /// so their index (2 × 462 × C(64, 4) = 587,087,424 positions) fits the
    /// 32-bit index and their generation a machine of a few GiB; any other
    /// 6-piece index takes at least 4 times as many positions (KNNNvKN) and
    /// most more than 2³² (KRBvKRN: 15.5 G).
    pub fn is_builtin(&self) -> bool {
        match self.pieces() {
            3..=MAX_PIECES_ALL => true,
            MAX_PIECES => {
                let (many, none) = if self.white.len() >= self.black.len() {
                    (&self.white, &self.black)
                } else {
                    (&self.black, &self.white)
                };
                none.is_empty() && many[0] != Role::Pawn && many.iter().all(|&r| r == many[0])
            }
            _ => false,
        }
    }

    /// Pieces on the board, kings included.
    pub fn pieces(&self) -> usize {
        2 + self.white.len() + self.black.len()
    }

    /// Whether either side has a pawn.
    pub fn has_pawns(&self) -> bool {
        self.white.iter().chain(&self.black).any(|&r| r == Role::Pawn)
    }

    /// Pawns of both sides.
    pub fn pawns(&self) -> usize {
        self.white.iter().chain(&self.black).filter(|&&r| r == Role::Pawn).count()
    }

    /// The same material with colours swapped.
    pub(crate) fn flipped(&self) -> Material {
        Material { white: self.black.clone(), black: self.white.clone() }
    }

    /// Tables are stored for one colouring only: the stronger side is White
    /// (as in Syzygy names). Symmetric materials are their own flip.
    pub fn is_canonical(&self) -> bool {
        side_key(&self.white) >= side_key(&self.black)
    }

    /// The same material with the stronger side as White, as tables are named.
    pub fn canonical(&self) -> Material {
        if self.is_canonical() { self.clone() } else { self.flipped() }
    }

    /// The table name, e.g. `KQvKR`.
    pub fn name(&self) -> String {
        let mut s = String::from("K");
        s.extend(self.white.iter().map(|&r| role_char(r)));
        s.push_str("vK");
        s.extend(self.black.iter().map(|&r| role_char(r)));
        s
    }

    /// Dense id (below [`NUMBER_OF_IDS`]) of any material with at most
    /// three pieces per side, or four against none.
    pub fn id(&self) -> usize {
        id_of(&self.white, &self.black)
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

/// Ids: three digits per side, one per piece (roles are 1..=5, 0 for no
/// piece), strongest first; after those, four digits for four pieces of
/// White against none.
pub const NUMBER_OF_IDS: usize = 6usize.pow(6) + 6usize.pow(4);

/// [`Material::id`] of sides already sorted strongest first (four pieces
/// only for White, against none).
pub fn id_of(white: &[Role], black: &[Role]) -> usize {
    let side = |v: &[Role], k: usize| (0..k).fold(0, |acc, i| acc * 6 + v.get(i).map_or(0, |&r| r as usize));
    if white.len() == 4 {
        debug_assert!(black.is_empty());
        return 6usize.pow(6) + side(white, 4);
    }
    debug_assert!(white.len() <= 3 && black.len() <= 3);
    side(white, 3) * 216 + side(black, 3)
}

const ROLES: [Role; 5] = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight, Role::Pawn];

/// Every canonical material with 3..=`max_pieces` pieces that has a built-in
/// table ([`Material::is_builtin`]), in an order where
/// each table comes after all tables it depends on (captures reduce the
/// piece count; promotions reduce the pawn count).
pub fn all_materials(max_pieces: usize) -> Vec<Material> {
    // Multisets of `k` roles, strongest first.
    fn sides(k: usize, from: usize, prefix: &mut Vec<Role>, out: &mut Vec<Vec<Role>>) {
        if prefix.len() == k {
            out.push(prefix.clone());
            return;
        }
        for (i, &role) in ROLES.iter().enumerate().skip(from) {
            prefix.push(role);
            sides(k, i, prefix, out);
            prefix.pop();
        }
    }
    let mut out = Vec::new();
    for pieces in 3..=max_pieces {
        for white in 1..=pieces - 2 {
            let (mut ws, mut bs) = (Vec::new(), Vec::new());
            sides(white, 0, &mut Vec::new(), &mut ws);
            sides(pieces - 2 - white, 0, &mut Vec::new(), &mut bs);
            for w in &ws {
                for b in &bs {
                    let m = Material::new(w.clone(), b.clone());
                    if m.is_canonical() && m.is_builtin() && !out.contains(&m) {
                        out.push(m);
                    }
                }
            }
        }
    }
    out.sort_by_key(|m| (m.pieces(), m.pawns()));
    out
}

/// `selection` (canonical tables) in dependency waves, for spreading the
/// work over processes: a table's wave is one more than the latest wave of
/// the tables of `selection` it converts into, 0 when it converts into none
/// of them (what it needs then lies outside the selection and must exist
/// first). Tables of one wave never need each other, so a wave can run all
/// at once once the earlier ones are done; pawn tables come after the
/// tables their promotions reach. Duplicates are dropped; each wave keeps
/// the selection's order, in generation order.
pub fn waves(selection: &[Material]) -> Vec<Vec<Material>> {
    let mut ordered: Vec<&Material> = Vec::new();
    for m in selection {
        if !ordered.contains(&m) {
            ordered.push(m);
        }
    }
    // Captures lower the piece count and promotions the pawn count: in this
    // order a table comes after every table it needs.
    ordered.sort_by_key(|m| (m.pieces(), m.pawns()));
    let mut wave_of = vec![None::<usize>; NUMBER_OF_IDS];
    let mut waves: Vec<Vec<Material>> = Vec::new();
    for m in ordered {
        let wave = m.dependencies().iter().filter_map(|d| wave_of[d.id()]).max().map_or(0, |w| w + 1);
        wave_of[m.id()] = Some(wave);
        if waves.len() <= wave {
            waves.resize_with(wave + 1, Vec::new);
        }
        waves[wave].push(m.clone());
    }
    waves
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_counts() {
        let all = all_materials(4);
        assert_eq!(all.len(), 5 + 15 + 15);
        // As Syzygy counts them: 110 tables of 5 pieces.
        let five = all_materials(5);
        assert_eq!(five.len(), 35 + 110);
        assert!(five.iter().any(|m| m.name() == "KRBvKQ") && five.iter().any(|m| m.name() == "KPPPvK"));
        // Of 6 pieces, four identical pieces against a bare king.
        let six: Vec<String> = all_materials(6).iter().filter(|m| m.pieces() == 6).map(Material::name).collect();
        assert_eq!(six, ["KQQQQvK", "KRRRRvK", "KBBBBvK", "KNNNNvK"]);
        assert_eq!(all_materials(6).len(), five.len() + 4);
        for (name, builtin) in [
            ("KNNNNvK", true),
            ("KKNNNN", false),
            ("KvKQQQQ", true),
            ("KPPPPvK", false),
            ("KRBvKRN", false),
            ("KNNNvKN", false),
            ("KRRRNvK", false),
            ("KQQQQQvK", false),
            ("KvK", false),
        ] {
            assert_eq!(Material::parse(name).is_some_and(|m| m.is_builtin()), builtin, "{name}");
        }
        assert_eq!(Material::parse_table("KvKNNNN").map(|m| m.name()).as_deref(), Some("KNNNNvK"));
        let with_six: std::collections::HashSet<usize> = all_materials(6).iter().map(Material::id).collect();
        assert_eq!(with_six.len(), five.len() + 4);
        assert!(with_six.iter().all(|&i| i < NUMBER_OF_IDS));
        let ids: std::collections::HashSet<usize> = five.iter().map(Material::id).collect();
        assert_eq!(ids.len(), five.len());
        assert!(ids.iter().all(|&i| i < NUMBER_OF_IDS));
        assert!(all.iter().any(|m| m.name() == "KQvKR"));
        assert!(all.iter().any(|m| m.name() == "KPvKP"));
        assert!(!all.iter().any(|m| m.name() == "KRvKQ"));
        assert_eq!(Material::parse("KRvKQ").unwrap().canonical().name(), "KQvKR");
        assert_eq!(Material::parse("KBNvK").unwrap().name(), "KBNvK");
    }

    #[test]
    fn waves_need_only_earlier_waves() {
        let names = |w: &[Material]| w.iter().map(Material::name).collect::<Vec<_>>();
        let three = waves(&all_materials(3));
        assert_eq!(
            three.iter().map(|w| names(w)).collect::<Vec<_>>(),
            [vec!["KQvK", "KRvK", "KBvK", "KNvK"], vec!["KPvK"]]
        );
        // The 5-piece tables alone: those of 4 and 3 pieces lie outside, so
        // the pawnless ones need nothing of the selection.
        let five: Vec<Material> = all_materials(5).into_iter().filter(|m| m.pieces() == 5).collect();
        let five_waves = waves(&five);
        assert_eq!(five_waves.iter().map(Vec::len).sum::<usize>(), 110);
        assert!(five_waves[0].iter().all(|m| !m.has_pawns()) && five_waves[0].iter().any(|m| m.name() == "KRBvKQ"));
        assert!(five_waves[1].iter().any(|m| m.name() == "KRPvKR"));
        for (i, wave) in five_waves.iter().enumerate() {
            for m in wave {
                let needed: Vec<usize> =
                    m.dependencies().iter().filter_map(|d| five_waves.iter().position(|w| w.contains(d))).collect();
                // Everything it needs is in an earlier wave, and something in the one before.
                assert!(needed.iter().all(|&w| w < i), "{} in wave {i} needs {needed:?}", m.name());
                assert!(i == 0 || needed.contains(&(i - 1)), "{} could be in an earlier wave than {i}", m.name());
            }
        }
        // Duplicates collapse.
        let krk = Material::parse("KRvK").unwrap();
        assert_eq!(waves(&[krk.clone(), krk.clone()]), vec![vec![krk]]);
    }

    #[test]
    fn dependencies_follow_captures_and_promotions() {
        let names = |m: &str| Material::parse(m).unwrap().dependencies().iter().map(Material::name).collect::<Vec<_>>();
        assert!(names("KQvK").is_empty());
        assert_eq!(names("KRvKB"), ["KBvK", "KRvK"]);
        let kppk = names("KPPvK");
        // Every 3-piece table but none with a black piece left or more pieces.
        assert!(
            kppk.contains(&"KPvK".to_string())
                && kppk.contains(&"KQQvK".to_string())
                && kppk.contains(&"KQPvK".to_string())
        );
        assert!(!kppk.contains(&"KPPvK".to_string()) && !kppk.contains(&"KQvKR".to_string()));
        // Generation order: fewer pieces, then fewer pawns, first.
        let order: Vec<_> =
            Material::parse("KPvKP").unwrap().dependencies().iter().map(|m| (m.pieces(), m.pawns())).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]));
    }
}
