//! Mate bounds without search (`docs/dtm50.md`, "Mate bound from a WDL / DTZ
//! probe"): how many plies a tablebase win can need at most before mate, under
//! the 50-move rule, given only a WDL or DTZ value and the material.

// Fx hashing: these maps are read at every table node of the search.
use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

use serde::Serialize;
use shakmaty::{ByColor, ByRole, Chess, Color, Position};
use shakmaty_syzygy::{Dtz, MaybeRounded, Wdl};

/// Longest DTZ per Syzygy class, `table<TAB>max_dtz_plies` (−1: no decisive
/// position). Our own copy of the published statistics.
const MAX_DTZ_TSV: &str = include_str!("../../data/max_dtz.tsv");

/// The non-king pieces of both sides: `counts[color][role]` for pawn..queen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct MaterialKey {
    /// Index 0 = white, 1 = black; roles in order P, N, B, R, Q.
    counts: [[u8; 5]; 2],
}

const NAME_ORDER: [(usize, char); 5] = [(4, 'Q'), (3, 'R'), (2, 'B'), (1, 'N'), (0, 'P')];

impl MaterialKey {
    pub(crate) fn from_counts(material: &ByColor<ByRole<u8>>) -> MaterialKey {
        let side = |m: &ByRole<u8>| [m.pawn, m.knight, m.bishop, m.rook, m.queen];
        MaterialKey { counts: [side(&material.white), side(&material.black)] }
    }

    pub(crate) fn of(pos: &Chess) -> MaterialKey {
        MaterialKey::from_counts(&pos.board().material())
    }

    /// Parses a Syzygy-style name such as `KBNvK`.
    pub(crate) fn parse(name: &str) -> Option<MaterialKey> {
        let (w, b) = name.split_once('v')?;
        let mut counts = [[0u8; 5]; 2];
        for (side, s) in [w, b].into_iter().enumerate() {
            let mut chars = s.chars();
            if chars.next()? != 'K' {
                return None;
            }
            for c in chars {
                let idx = NAME_ORDER.iter().find(|(_, n)| *n == c)?.0;
                counts[side][idx] += 1;
            }
        }
        Some(MaterialKey { counts })
    }

    pub(crate) fn pieces(&self) -> usize {
        2 + self.counts.iter().flatten().map(|&c| usize::from(c)).sum::<usize>()
    }

    fn pawns(&self) -> u8 {
        self.counts[0][0] + self.counts[1][0]
    }

    fn mirrored(&self) -> MaterialKey {
        MaterialKey { counts: [self.counts[1], self.counts[0]] }
    }

    /// Colour-independent form: both orientations share one table and one bound.
    fn normalized(&self) -> MaterialKey {
        (*self).min(self.mirrored())
    }

    #[cfg(test)]
    pub(crate) fn name(&self) -> String {
        let side = |c: &[u8; 5]| {
            let mut s = String::from("K");
            for (idx, ch) in NAME_ORDER {
                s.extend(std::iter::repeat_n(ch, usize::from(c[idx])));
            }
            s
        };
        format!("{}v{}", side(&self.counts[0]), side(&self.counts[1]))
    }
}

fn max_dtz_table() -> &'static HashMap<MaterialKey, i32> {
    static TABLE: OnceLock<HashMap<MaterialKey, i32>> = OnceLock::new();
    TABLE.get_or_init(|| {
        MAX_DTZ_TSV
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| {
                let (name, value) = l.split_once('\t')?;
                Some((MaterialKey::parse(name)?.normalized(), value.trim().parse().ok()?))
            })
            .collect()
    })
}

/// `max_dtz'(class)`: the longest DTZ of the class + 2 (absorbs rounding),
/// capped at 100; 0 for a class without decisive results. A class we have no
/// figure for gets the cap, which is always sound for a win under the rule.
pub(crate) fn max_dtz_prime_plies(material: MaterialKey) -> u32 {
    if material.pieces() <= 2 {
        return 0;
    }
    match max_dtz_table().get(&material.normalized()) {
        Some(&d) if d < 0 => 0,
        Some(&d) => (d as u32 + 2).min(100),
        None => 100,
    }
}

/// Pawn moves still possible: 6 − rank per white pawn, rank − 1 per black pawn
/// (ranks 0..7 from White's side). Promotions are not counted.
pub(crate) fn pawn_moves(pos: &Chess) -> u32 {
    let board = pos.board();
    let rank = |sq: shakmaty::Square| u32::from(sq.rank());
    let white: u32 = (board.pawns() & board.by_color(Color::White)).into_iter().map(|sq| 6 - rank(sq).min(6)).sum();
    let black: u32 = (board.pawns() & board.by_color(Color::Black)).into_iter().map(|sq| rank(sq).max(1) - 1).sum();
    white + black
}

/// The longest mate the later phases (after the next zeroing move) can need, in
/// plies: dynamic programming over captures, promotions and pawn moves, each
/// successor phase contributing its own `max_dtz'`. Memoised by
/// (material, pawn moves).
pub(crate) fn max_sub_mate_plies(material: MaterialKey, pawn_moves: u32) -> u32 {
    // Every class the project's figures cover (up to 6 pieces), computed once
    // and then only read: no lock on the search's hot path.
    static PRECOMPUTED: OnceLock<HashMap<(MaterialKey, u32), u32>> = OnceLock::new();
    let pre = PRECOMPUTED.get_or_init(|| {
        let mut map = HashMap::default();
        for &m in max_dtz_table().keys() {
            for pm in 0..=5 * u32::from(m.pawns()) {
                sub_mate(m, pm, &mut map);
            }
        }
        map
    });
    let pm = pawn_moves.min(5 * u32::from(material.pawns()));
    match pre.get(&(material.normalized(), pm)) {
        Some(&v) => v,
        // Beyond the figures (more pieces): every class counts 100, still sound.
        None => sub_mate(material, pm, &mut HashMap::default()),
    }
}

fn sub_mate(m: MaterialKey, pm: u32, memo: &mut HashMap<(MaterialKey, u32), u32>) -> u32 {
    let m = m.normalized();
    if let Some(&v) = memo.get(&(m, pm)) {
        return v;
    }
    let mut best = 0;
    let mut successor = |next: MaterialKey, next_pm: u32, memo: &mut HashMap<_, _>| {
        // A successor's pending pawn moves cannot exceed what its pawns allow.
        let next_pm = next_pm.min(5 * u32::from(next.pawns()));
        let v = max_dtz_prime_plies(next) + sub_mate(next, next_pm, memo);
        best = best.max(v);
    };
    // A pawn move: same material, one pending pawn move used up.
    if pm > 0 && m.pawns() > 0 {
        successor(m, pm - 1, memo);
    }
    for side in 0..2 {
        for role in 0..5 {
            if m.counts[side][role] == 0 {
                continue;
            }
            // Capture of this piece (by anything): keeping every other pending
            // pawn move is the longest case.
            let mut next = m;
            next.counts[side][role] -= 1;
            successor(next, pm, memo);
            // Promotion of a pawn of this side (promotions use no counted move).
            if role == 0 {
                for promo in 1..5 {
                    let mut next = m;
                    next.counts[side][0] -= 1;
                    next.counts[side][promo] += 1;
                    successor(next, pm, memo);
                }
            }
        }
    }
    memo.insert((m, pm), best);
    best
}

/// The proven range of the distance to mate, from the side to move's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MateBound {
    /// `win`: the side to move mates; `loss`: it is mated.
    pub side: MateSide,
    /// The true DTM50 (plies) lies in `[min_plies, max_plies]`.
    pub min_plies: u32,
    pub max_plies: u32,
    /// The same range as "mate in N" full moves: the winner's N is
    /// `ceil(plies / 2)`, the loser's `floor(plies / 2)`.
    pub min_moves: u32,
    pub max_moves: u32,
    /// `min_plies == max_plies`.
    pub exact: bool,
    /// What proved the upper bound.
    pub derived_from: Derivation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MateSide {
    Win,
    Loss,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Derivation {
    /// Already checkmated: no table needed.
    Rules,
    /// `max_sub_mate + max_dtz'(class) + 2`.
    Wdl,
    /// `max_sub_mate + |dtz| + 2`.
    Dtz,
    /// DTM ignoring the 50-move rule, exact because the clock cannot interfere.
    Dtm,
    /// Exact DTM50 tables.
    Dtm50,
}

/// Why no mate bound can be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum NoBound {
    /// A draw (under the 50-move rule): nobody can force mate.
    #[error("draw: no side can force mate")]
    Draw,
    /// Decisive at clock 0, but the 50-move rule decides at this clock (or the
    /// win is cursed / the loss blessed).
    #[error("draw by the 50-move rule at this half-move clock")]
    FiftyMoveRule,
    /// The tables cannot tell at this clock (possibly rounded DTZ at the 50-move
    /// edge, or a WDL-only answer that the clock may spoil): search must go on.
    #[error("tables unusable at this half-move clock")]
    UnusableAtClock,
    /// No table answer for this position.
    #[error("no table answer")]
    Unknown,
}

impl MateBound {
    pub fn new(side: MateSide, min_plies: u32, max_plies: u32, derived_from: Derivation) -> MateBound {
        let moves = |p: u32| match side {
            MateSide::Win => p.div_ceil(2),
            MateSide::Loss => p / 2,
        };
        MateBound {
            side,
            min_plies,
            max_plies,
            min_moves: moves(min_plies),
            max_moves: moves(max_plies),
            exact: min_plies == max_plies,
            derived_from,
        }
    }

    /// From an exact DTM50 (signed plies, positive when the side to move mates;
    /// 0 = draw, or checkmated when the position is checkmate).
    pub(crate) fn from_dtm50(pos: &Chess, dtm50_plies: i32) -> Result<MateBound, NoBound> {
        if pos.is_checkmate() {
            return Ok(MateBound::new(MateSide::Loss, 0, 0, Derivation::Rules));
        }
        match dtm50_plies {
            0 => Err(NoBound::Draw),
            p => {
                let side = if p > 0 { MateSide::Win } else { MateSide::Loss };
                Ok(MateBound::new(side, p.unsigned_abs(), p.unsigned_abs(), Derivation::Dtm50))
            }
        }
    }
}

/// The proven range of DTM50 for `pos` at half-move clock `clock_plies`, from
/// whatever tables answered: `wdl` (at clock 0), `dtz` (DTZ50'', possibly
/// rounded), `dtm_plies` (signed, ignoring the 50-move rule).
pub fn mate_bound(
    pos: &Chess,
    clock_plies: u32,
    wdl: Option<Wdl>,
    dtz: Option<MaybeRounded<Dtz>>,
    dtm_plies: Option<i32>,
) -> Result<MateBound, NoBound> {
    if pos.is_checkmate() {
        return Ok(MateBound::new(MateSide::Loss, 0, 0, Derivation::Rules));
    }
    if pos.is_stalemate() || pos.is_insufficient_material() {
        return Err(NoBound::Draw);
    }
    live_mate_bound(pos, clock_plies, wdl, dtz, dtm_plies)
}

/// [`mate_bound`] for a position the caller already knows to be playable:
/// it has a legal move and mating material. The search calls this at every
/// table node, where the terminal checks (two more move generations) would
/// cost more than the bound itself.
pub(crate) fn live_mate_bound(
    pos: &Chess,
    clock_plies: u32,
    wdl: Option<Wdl>,
    dtz: Option<MaybeRounded<Dtz>>,
    dtm_plies: Option<i32>,
) -> Result<MateBound, NoBound> {
    let wdl = match (wdl, dtz) {
        (Some(w), _) => w,
        (None, Some(d)) => Wdl::from_dtz_after_zeroing(d),
        (None, None) => match dtm_plies {
            Some(0) => return Err(NoBound::Draw),
            _ => return Err(NoBound::Unknown),
        },
    };
    let side = match wdl {
        Wdl::Draw => return Err(NoBound::Draw),
        Wdl::CursedWin | Wdl::BlessedLoss => return Err(NoBound::FiftyMoveRule),
        Wdl::Win => MateSide::Win,
        Wdl::Loss => MateSide::Loss,
    };
    let material = MaterialKey::of(pos);
    let sub = max_sub_mate_plies(material, pawn_moves(pos));
    // The winner mates on an odd ply, the loser is mated on an even one.
    let parity_floor = match side {
        MateSide::Win => 1,
        MateSide::Loss => 2,
    };

    let (mut min_plies, max_plies, derived_from) = match dtz {
        Some(d) => {
            let (stored, rounded) = match d {
                MaybeRounded::Precise(Dtz(n)) => (n.unsigned_abs(), false),
                MaybeRounded::Rounded(Dtz(n)) => (n.unsigned_abs(), true),
            };
            let reach = clock_plies + stored;
            // A mate in one at the edge may still count, and a DTZ of 1 or 2
            // may hide it (rounding): the tables cannot decide.
            if stored <= 2 && reach == 101 {
                return Err(NoBound::UnusableAtClock);
            }
            if reach > 100 {
                return Err(NoBound::FiftyMoveRule);
            }
            if reach == 100 && clock_plies > 0 && rounded {
                return Err(NoBound::UnusableAtClock);
            }
            // Every mating line zeroes by mate at the latest, so DTM50 ≥ DTZ
            // (a rounded value is never above the truth).
            (stored, sub + stored + 2, Derivation::Dtz)
        }
        None => {
            let class_max = max_dtz_prime_plies(material);
            // The clock can only spoil a win whose DTZ may cross the edge.
            if clock_plies > 0 && clock_plies + class_max > 100 {
                return Err(NoBound::UnusableAtClock);
            }
            (0, sub + class_max + 2, Derivation::Wdl)
        }
    };
    min_plies = min_plies.max(parity_floor);
    if (min_plies + parity_floor) % 2 == 1 {
        min_plies += 1;
    }
    if let Some(dtm) = dtm_plies.filter(|&p| p != 0) {
        let dtm = dtm.unsigned_abs();
        // The 50-move rule can only lengthen a mate.
        min_plies = min_plies.max(dtm);
        if clock_plies + dtm <= 100 {
            // The rule cannot interfere with a mate that near: exact.
            return Ok(MateBound::new(side, dtm, dtm, Derivation::Dtm));
        }
    }
    Ok(MateBound::new(side, min_plies, max_plies.max(min_plies), derived_from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{CastlingMode, fen::Fen};

    fn pos(fen: &str) -> Chess {
        fen.parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap()
    }

    #[test]
    fn class_figures_come_from_the_data_file() {
        let kbnk = MaterialKey::parse("KBNvK").unwrap();
        assert_eq!(max_dtz_prime_plies(kbnk), 67);
        assert_eq!(max_dtz_prime_plies(kbnk.mirrored()), 67);
        assert_eq!(max_dtz_prime_plies(MaterialKey::parse("KBvK").unwrap()), 0);
        assert_eq!(max_dtz_prime_plies(MaterialKey::parse("KvK").unwrap()), 0);
        assert_eq!(MaterialKey::parse("KQRvKBP").unwrap().name(), "KQRvKBP");
        assert!(max_dtz_table().len() > 1000);
    }

    #[test]
    fn sub_mates_follow_captures_promotions_and_pawn_moves() {
        let m = |n| MaterialKey::parse(n).unwrap();
        assert_eq!(max_sub_mate_plies(m("KBNvK"), 0), 0);
        // KQvKR: the capture of the rook leads to KQvK (20 + 2).
        assert_eq!(max_sub_mate_plies(m("KQvKR"), 0), 22.max(max_dtz_prime_plies(m("KRvK"))));
        // KPvK with 5 pawn moves: 5 pawn-move phases of KPvK, then KQvK / KRvK.
        let kpk = max_dtz_prime_plies(m("KPvK"));
        let krk = max_dtz_prime_plies(m("KRvK"));
        assert_eq!(max_sub_mate_plies(m("KPvK"), 5), 5 * kpk + krk);
        assert_eq!(max_sub_mate_plies(m("KPvK"), 0), krk);
        // More pending pawn moves never shorten the bound.
        for pm in 1..10 {
            assert!(max_sub_mate_plies(m("KPPvKP"), pm) >= max_sub_mate_plies(m("KPPvKP"), pm - 1));
        }
    }

    #[test]
    fn kbnk_figures_from_the_brief() {
        let p = pos("3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1");
        let by_wdl = mate_bound(&p, 0, Some(Wdl::Win), None, None).unwrap();
        assert_eq!(by_wdl.max_plies, 69);
        assert_eq!(by_wdl.derived_from, Derivation::Wdl);
        let by_dtz = mate_bound(&p, 0, Some(Wdl::Win), Some(MaybeRounded::Precise(Dtz(24))), None).unwrap();
        assert_eq!(by_dtz.max_plies, 26);
        assert_eq!(by_dtz.min_plies, 25);
        assert_eq!((by_dtz.min_moves, by_dtz.max_moves), (13, 13));
        assert_eq!(by_dtz.derived_from, Derivation::Dtz);
    }

    #[test]
    fn clock_rules() {
        let p = pos("3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1");
        let rounded = |n| Some(MaybeRounded::Rounded(Dtz(n)));
        let precise = |n| Some(MaybeRounded::Precise(Dtz(n)));
        assert_eq!(mate_bound(&p, 76, Some(Wdl::Win), rounded(24), None), Err(NoBound::UnusableAtClock));
        assert!(mate_bound(&p, 76, Some(Wdl::Win), precise(24), None).is_ok());
        assert_eq!(mate_bound(&p, 77, Some(Wdl::Win), precise(24), None), Err(NoBound::FiftyMoveRule));
        assert_eq!(mate_bound(&p, 99, Some(Wdl::Win), precise(2), None), Err(NoBound::UnusableAtClock));
        assert!(mate_bound(&p, 33, Some(Wdl::Win), None, None).is_ok());
        assert_eq!(mate_bound(&p, 34, Some(Wdl::Win), None, None), Err(NoBound::UnusableAtClock));
        assert_eq!(mate_bound(&p, 0, Some(Wdl::CursedWin), None, None), Err(NoBound::FiftyMoveRule));
        assert_eq!(mate_bound(&p, 0, Some(Wdl::Draw), None, None), Err(NoBound::Draw));
        // DTM is exact when the clock cannot interfere, else only a lower bound.
        let b = mate_bound(&p, 0, Some(Wdl::Win), precise(24), Some(35)).unwrap();
        assert!(b.exact && b.max_plies == 35 && b.derived_from == Derivation::Dtm);
        let b = mate_bound(&p, 76, Some(Wdl::Win), precise(24), Some(25)).unwrap();
        assert_eq!((b.min_plies, b.max_plies, b.exact), (25, 26, false));
    }
}
