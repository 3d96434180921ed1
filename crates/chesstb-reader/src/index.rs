//! chesstb's position index: king slices under the table's symmetry, pawn
//! slices, and the combinatorial rank of each non-pawn piece class, composed
//! in the order a frame's permutation gives.

use std::sync::OnceLock;

use arrayvec::ArrayVec;

use super::material::{TableMaterial, canonical_pair, pair_number};

/// Squares a1 = 0, b1 = 1, …, h8 = 63 (as in shakmaty).
pub(crate) type Sq = u8;

const fn file(s: Sq) -> u8 {
    s & 7
}
const fn rank(s: Sq) -> u8 {
    s >> 3
}
const fn make(file: u8, rank: u8) -> Sq {
    rank * 8 + file
}

/// Symmetry transforms as bits: 1 mirrors files, 2 mirrors ranks, 4 swaps
/// file and rank (after the mirrors).
fn transform(s: Sq, t: u8) -> Sq {
    let (mut f, mut r) = (file(s), rank(s));
    if t & 1 != 0 {
        f = 7 - f;
    }
    if t & 2 != 0 {
        r = 7 - r;
    }
    if t & 4 != 0 {
        std::mem::swap(&mut f, &mut r);
    }
    make(f, r)
}

fn adjacent(a: Sq, b: Sq) -> bool {
    file(a).abs_diff(file(b)) <= 1 && rank(a).abs_diff(rank(b)) <= 1
}

/// C(n, k) for n ≤ 64, k ≤ 7.
fn binomial(n: usize, k: usize) -> u64 {
    static TABLE: OnceLock<[[u64; 8]; 65]> = OnceLock::new();
    let t = TABLE.get_or_init(|| {
        let mut t = [[0u64; 8]; 65];
        for n in 0..=64 {
            t[n][0] = 1;
            for k in 1..8 {
                t[n][k] = if k > n { 0 } else { t[n - 1][k - 1] + t[n - 1][k] };
            }
        }
        t
    });
    if k > 7 { 0 } else { t[n][k] }
}

/// Colex rank of a sorted set of positions: Σ C(pᵢ, i+1).
fn colex_rank(sorted_positions: &[u8]) -> u64 {
    sorted_positions.iter().enumerate().map(|(i, &p)| binomial(p as usize, i + 1)).sum()
}

#[derive(Clone, Copy, Default)]
struct KingEntry {
    slice: i32,
    transform: u8,
    diag_stabilizer: bool,
}

/// The placements of the two kings that a table stores, and how every other
/// placement maps onto one of them.
struct KingSlices {
    num: usize,
    lookup: Vec<KingEntry>,
}

impl KingSlices {
    fn build(dihedral: bool) -> KingSlices {
        let anchor = |s: Sq| if dihedral { file(s) <= 3 && rank(s) <= file(s) } else { file(s) <= 3 };
        let on_diag = |s: Sq| file(s) == rank(s);
        let mut lookup = vec![KingEntry { slice: -1, ..Default::default() }; 64 * 64];
        let mut num = 0usize;
        for wk in 0..64u8 {
            if !anchor(wk) {
                continue;
            }
            for bk in 0..64u8 {
                if bk == wk || adjacent(wk, bk) {
                    continue;
                }
                if dihedral && on_diag(wk) {
                    let bk_d = transform(bk, 4);
                    if bk_d != bk && bk > bk_d {
                        continue;
                    }
                }
                lookup[wk as usize * 64 + bk as usize] = KingEntry {
                    slice: num as i32,
                    transform: 0,
                    diag_stabilizer: dihedral && on_diag(wk) && on_diag(bk),
                };
                num += 1;
            }
        }
        let transforms = if dihedral { 8 } else { 2 };
        for wk in 0..64u8 {
            for bk in 0..64u8 {
                if bk == wk || adjacent(wk, bk) || lookup[wk as usize * 64 + bk as usize].slice >= 0 {
                    continue;
                }
                for t in 0..transforms {
                    let e = lookup[transform(wk, t) as usize * 64 + transform(bk, t) as usize];
                    if e.slice >= 0 && e.transform == 0 {
                        lookup[wk as usize * 64 + bk as usize] = KingEntry { transform: t, ..e };
                        break;
                    }
                }
            }
        }
        KingSlices { num, lookup }
    }

    fn get(dihedral: bool) -> &'static KingSlices {
        static FILE_MIRROR: OnceLock<KingSlices> = OnceLock::new();
        static DIHEDRAL: OnceLock<KingSlices> = OnceLock::new();
        if dihedral {
            DIHEDRAL.get_or_init(|| KingSlices::build(true))
        } else {
            FILE_MIRROR.get_or_init(|| KingSlices::build(false))
        }
    }
}

/// Placements of an opposing pawn pair (a white pawn below a black one on
/// one file, ranks 2–7): chesstb's order, file by file, then the white
/// pawn's rank, then the black pawn's. 8 files × 15 rank pairs.
const PAIR_PLACEMENTS: u64 = 120;

/// A `p` table's pawn slices: chesstb numbers the cells pair + 120 ·
/// (white free pawns' rank + C(48, white) · black free pawns' rank) and
/// stores only those whose pawns do not collide and whose pair is the
/// canonical one; a slice's number is its cell's rank among those.
struct PairRanks {
    /// One bit per cell: stored.
    stored: Vec<u64>,
    /// Stored cells before each 64-cell word.
    before: Vec<u32>,
    slices: u64,
}

/// Cells past this are refused (only 8-man pair tables come near it).
const MAX_PAIR_CELLS: u64 = 1 << 28;

impl PairRanks {
    /// For `free` white and black pawns besides the pair: built once per
    /// pair of counts, shared by every material with them.
    fn get(free: [usize; 2]) -> Option<&'static PairRanks> {
        const MAX: usize = 4;
        static RANKS: [[OnceLock<Option<PairRanks>>; MAX + 1]; MAX + 1] =
            [const { [const { OnceLock::new() }; MAX + 1] }; MAX + 1];
        if free[0] > MAX || free[1] > MAX {
            return None;
        }
        RANKS[free[0]][free[1]].get_or_init(|| PairRanks::build(free)).as_ref()
    }

    fn build(free: [usize; 2]) -> Option<PairRanks> {
        let sizes = [binomial(48, free[0]), binomial(48, free[1])];
        let cells = PAIR_PLACEMENTS * sizes[0] * sizes[1];
        if cells > MAX_PAIR_CELLS {
            return None;
        }
        let placements = |n: usize, size: u64| -> Vec<ArrayVec<Sq, 8>> {
            (0..size).map(|r| unrank(r, n).into_iter().map(|p| p + 8).collect()).collect()
        };
        let (whites, blacks) = (placements(free[0], sizes[0]), placements(free[1], sizes[1]));
        let pairs: Vec<(Sq, Sq)> = (0..64u8)
            .flat_map(|w| (0..64u8).map(move |b| (w, b)))
            .filter_map(|(w, b)| pair_number(w, b).map(|n| (n, w, b)))
            .fold(vec![(0, 0); PAIR_PLACEMENTS as usize], |mut v, (n, w, b)| {
                v[n as usize] = (w, b);
                v
            });
        let mut stored = vec![0u64; cells.div_ceil(64) as usize];
        let mut cell = 0u64;
        for b in &blacks {
            for w in &whites {
                for &(pw, pb) in &pairs {
                    let collide = w.iter().any(|s| b.contains(s) || *s == pw || *s == pb)
                        || b.iter().any(|s| *s == pw || *s == pb);
                    if !collide {
                        let all_w: ArrayVec<Sq, 9> = w.iter().copied().chain([pw]).collect();
                        let all_b: ArrayVec<Sq, 9> = b.iter().copied().chain([pb]).collect();
                        if canonical_pair(&all_w, &all_b) == Some((pw, pb)) {
                            stored[(cell / 64) as usize] |= 1 << (cell % 64);
                        }
                    }
                    cell += 1;
                }
            }
        }
        let mut before = Vec::with_capacity(stored.len());
        let mut n = 0u32;
        for word in &stored {
            before.push(n);
            n += word.count_ones();
        }
        Some(PairRanks { stored, before, slices: n as u64 })
    }

    /// The slice of a cell, `None` if the cell is not stored.
    fn slice(&self, cell: u64) -> Option<u64> {
        let (word, bit) = ((cell / 64) as usize, cell % 64);
        let w = *self.stored.get(word)?;
        (w >> bit & 1 == 1).then(|| self.before[word] as u64 + (w & ((1 << bit) - 1)).count_ones() as u64)
    }
}

/// The `k` positions (ascending) of colex rank `r`.
fn unrank(mut r: u64, k: usize) -> ArrayVec<u8, 8> {
    let mut out = ArrayVec::new();
    let mut hi = 64usize;
    for i in (1..=k).rev() {
        let mut p = hi - 1;
        while binomial(p, i) > r {
            p -= 1;
        }
        r -= binomial(p, i);
        out.push(p as u8);
        hi = p;
    }
    out.reverse();
    out
}

/// One populated non-pawn class: a colour and role with its count.
#[derive(Clone, Copy, Debug)]
struct Class {
    color: usize,
    role: usize,
    count: usize,
    table_size: u64,
}

/// A position oriented to the table's colours: white is the side named
/// first in the file name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    pub kings: [Sq; 2],
    /// `[colour][role]`, roles in [`ROLES`] order, squares in any order.
    pub pieces: [[ArrayVec<Sq, 8>; 5]; 2],
}

/// The index of one material (both frames share it; only the order of the
/// classes differs, see [`Layout`]).
pub(crate) struct IndexConfig {
    dihedral: bool,
    classes: ArrayVec<Class, 8>,
    /// Native weights (products of the table sizes before each class), used
    /// to break the tie of a diagonal-symmetric king placement.
    weights: ArrayVec<u64, 8>,
    within_size: u64,
    king_slices: &'static KingSlices,
    /// Free pawns (an opposing pair's two not counted).
    pawns: [usize; 2],
    /// White pawn placements left by any one black pawn placement.
    white_per_black: u64,
    /// Set for an opposing-pair (`p`) table.
    pair: Option<&'static PairRanks>,
    pub num_positions: u64,
}

/// The order of the classes in one frame's index.
#[derive(Clone, Debug)]
pub struct Layout {
    order: ArrayVec<usize, 8>,
}

impl IndexConfig {
    /// `None` for a pair table whose pawn slices are too many to rank.
    pub fn new(m: &TableMaterial) -> Option<IndexConfig> {
        let pawns = [m.counts[0][4] as usize, m.counts[1][4] as usize];
        let dihedral = pawns == [0, 0] && !m.pair;
        let pair = if m.pair { Some(PairRanks::get(pawns)?) } else { None };
        // Black before white; within a colour knights, bishops, rooks, queens.
        let mut classes = ArrayVec::new();
        for color in [1, 0] {
            for role in [3, 2, 1, 0] {
                let count = m.counts[color][role] as usize;
                if count > 0 {
                    classes.push(Class { color, role, count, table_size: binomial(64, count) });
                }
            }
        }
        let mut weights = ArrayVec::new();
        let mut w = 1u64;
        for c in &classes {
            weights.push(w);
            w = w.saturating_mul(c.table_size);
        }
        let within_size = w;
        let king_slices = KingSlices::get(dihedral);
        let white_size = binomial(48, pawns[0]);
        let black_size = binomial(48, pawns[1]);
        let white_per_black = binomial(48 - pawns[1], pawns[0]);
        let _ = white_size;
        let num_pawn_slices = pair.map_or(black_size.saturating_mul(white_per_black), |p| p.slices);
        let num_positions = num_pawn_slices.saturating_mul(king_slices.num as u64).saturating_mul(within_size);
        Some(IndexConfig {
            dihedral,
            classes,
            weights,
            within_size,
            king_slices,
            pawns,
            white_per_black,
            pair,
            num_positions,
        })
    }

    #[cfg(test)]
    fn num_classes(&self) -> usize {
        self.classes.len()
    }

    /// The class order of permutation number `perm` (factorial number
    /// system over the native order), or `None` if out of range.
    pub(crate) fn layout(&self, perm: u32) -> Option<Layout> {
        let n = self.classes.len();
        let factorial = |k: usize| (1..=k as u32).product::<u32>();
        if perm >= factorial(n) {
            return None;
        }
        let mut available: ArrayVec<usize, 8> = (0..n).collect();
        let mut order = ArrayVec::new();
        let mut rest = perm;
        for i in 0..n {
            let f = factorial(n - 1 - i);
            let pick = (rest / f) as usize;
            rest %= f;
            order.push(available.remove(pick));
        }
        Some(Layout { order })
    }

    fn class_rank(&self, c: &Class, p: &Placement) -> u64 {
        let mut sqs: ArrayVec<u8, 8> = p.pieces[c.color][c.role].clone();
        sqs.sort_unstable();
        colex_rank(&sqs)
    }

    /// The storage index of a position, or `None` if the kings are adjacent
    /// or the placement does not fit the material.
    pub fn index(&self, layout: &Layout, p: &Placement) -> Option<u64> {
        self.index_parts(layout, p).map(|parts| parts.index)
    }

    /// The index with the pieces it is made of: what tests compare with
    /// chesstb's own indexing.
    pub(crate) fn index_parts(&self, layout: &Layout, p: &Placement) -> Option<IndexParts> {
        let [wk, bk] = p.kings;
        if wk >= 64 || bk >= 64 || wk == bk || adjacent(wk, bk) {
            return None;
        }
        for c in &self.classes {
            if p.pieces[c.color][c.role].len() != c.count {
                return None;
            }
        }
        let in_pair = self.pair.is_some() as usize;
        if p.pieces[0][4].len() != self.pawns[0] + in_pair || p.pieces[1][4].len() != self.pawns[1] + in_pair {
            return None;
        }
        let entry = self.king_slices.lookup[wk as usize * 64 + bk as usize];
        if entry.slice < 0 {
            return None;
        }
        let t = entry.transform;
        let mut q = p.clone();
        if t != 0 {
            q.kings = [transform(wk, t), transform(bk, t)];
            for side in q.pieces.iter_mut() {
                for sqs in side.iter_mut() {
                    for s in sqs.iter_mut() {
                        *s = transform(*s, t);
                    }
                }
            }
        }
        let mut diagonal_flip = false;
        if entry.diag_stabilizer {
            let mut alt = q.clone();
            for c in &self.classes {
                for s in alt.pieces[c.color][c.role].iter_mut() {
                    *s = transform(*s, 4);
                }
            }
            let native = |pl: &Placement| -> u64 {
                self.classes.iter().zip(&self.weights).map(|(c, w)| w * self.class_rank(c, pl)).sum()
            };
            if native(&alt) < native(&q) {
                q = alt;
                diagonal_flip = true;
            }
        }

        let pawn_slice = if self.dihedral {
            0
        } else if let Some(ranks) = self.pair {
            // Chosen after the symmetry, as chesstb does: the file mirror can
            // change which pair is the lowest.
            let (pw, pb) = canonical_pair(&q.pieces[0][4], &q.pieces[1][4])?;
            let rank_of = |sqs: &[Sq], skip: Sq| -> Option<u64> {
                let mut v: ArrayVec<u8, 8> = sqs
                    .iter()
                    .filter(|&&s| s != skip)
                    .map(|&s| s.checked_sub(8).filter(|&p| p < 48))
                    .collect::<Option<_>>()?;
                v.sort_unstable();
                Some(colex_rank(&v))
            };
            let (w, b) = (rank_of(&q.pieces[0][4], pw)?, rank_of(&q.pieces[1][4], pb)?);
            let cell = pair_number(pw, pb)? + PAIR_PLACEMENTS * (w + binomial(48, self.pawns[0]) * b);
            ranks.slice(cell)?
        } else {
            let mut black: ArrayVec<u8, 8> = q.pieces[1][4].iter().map(|&s| s.checked_sub(8)).collect::<Option<_>>()?;
            let mut white: ArrayVec<u8, 8> = q.pieces[0][4].iter().map(|&s| s.checked_sub(8)).collect::<Option<_>>()?;
            if black.iter().chain(&white).any(|&s| s >= 48) {
                return None;
            }
            black.sort_unstable();
            white.sort_unstable();
            // A white pawn's position among the squares no black pawn holds.
            let mut reduced: ArrayVec<u8, 8> = ArrayVec::new();
            for &w in &white {
                if black.contains(&w) {
                    return None;
                }
                reduced.push(w - black.iter().filter(|&&b| b < w).count() as u8);
            }
            colex_rank(&black) * self.white_per_black + colex_rank(&reduced)
        };

        let mut within = 0u64;
        let mut weight = 1u64;
        for &i in &layout.order {
            let c = &self.classes[i];
            within += weight * self.class_rank(c, &q);
            weight *= c.table_size;
        }
        let king_slice = entry.slice as u64;
        Some(IndexParts {
            index: (pawn_slice * self.king_slices.num as u64 + king_slice) * self.within_size + within,
            king_slice,
            pawn_slice,
            transform: t,
            diagonal_flip,
        })
    }
}

/// One position's index and what it was composed of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexParts {
    pub index: u64,
    pub king_slice: u64,
    pub pawn_slice: u64,
    /// The symmetry that took the kings to their stored placement (bit 1
    /// mirrors files, 2 ranks, 4 swaps file and rank).
    pub transform: u8,
    /// Whether the other pieces were also reflected in the long diagonal,
    /// as chesstb does when both kings stand on it and that ranks lower.
    pub diagonal_flip: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn king_slice_counts() {
        // The classical counts: 462 pawnless, 1806 with pawns.
        assert_eq!(KingSlices::get(true).num, 462);
        assert_eq!(KingSlices::get(false).num, 1806);
    }

    #[test]
    fn every_pair_of_kings_maps_to_a_slice() {
        for dihedral in [false, true] {
            let ks = KingSlices::get(dihedral);
            for wk in 0..64u8 {
                for bk in 0..64u8 {
                    let legal = wk != bk && !adjacent(wk, bk);
                    assert_eq!(ks.lookup[wk as usize * 64 + bk as usize].slice >= 0, legal);
                }
            }
        }
    }

    #[test]
    fn permutations_decode() {
        let m = TableMaterial::parse("KRBKN").unwrap();
        let cfg = IndexConfig::new(&m).unwrap();
        assert_eq!(cfg.num_classes(), 3);
        assert_eq!(cfg.layout(0).unwrap().order.as_slice(), &[0, 1, 2]);
        assert_eq!(cfg.layout(5).unwrap().order.as_slice(), &[2, 1, 0]);
        assert!(cfg.layout(6).is_none());
    }
}
