//! Positions of one table and their index.
//!
//! A position is the square of each man in [`Material::men`] order plus the
//! side to move. The index has room for little more than the positions that
//! exist:
//! - The two kings are one digit, a *king pair*: without pawns the white
//!   king in the a1–d1–d4 triangle (8-fold symmetry) and, when it is on the
//!   a1–h8 diagonal, the black king on or below it: 462 pairs. With pawns
//!   the white king on files a–d (left-right mirror): 1806 pairs. Kings on
//!   one square or adjacent have no pair.
//! - Identical pieces (two to four of a kind) are one digit, the rank of
//!   their sorted squares among the combinations (C(64, 2) = 2016, C(64, 3)
//!   = 41664, C(64, 4) = 635376), rather than 64² to 64⁴ for the squares
//!   in every order.
//! - Identical pawns keep a file digit each, sorted by square; their ranks
//!   are counted as a multiset (21 layers for two pawns, not 36).
//! - With both kings on the a1–h8 diagonal, a position and its
//!   transposition share the king pair: the smaller index of the two is the
//!   position's, the other index is unused.
//!
//! Digits, most significant first: the layer (the pawns' ranks), the side
//! to move, the king pair, the identical pieces' combination, then each
//! other man's square (a pawn's file only) as a bit field. So the positions
//! with the same pawn ranks, a *layer*, fill one contiguous range of
//! [`Layout::layer_span`] indexes: the generator needs working memory for
//! one layer at a time, not for the whole table. Decoding takes shifts for
//! the bit fields and a multiply (no division) and a table look-up each for
//! the combination and the king pair.

use std::sync::OnceLock;

use shakmaty::{Bitboard, Color, Piece, Role, Square, attacks};

use crate::material::Material;

/// Marks a man that was captured in a move under construction, or a slot
/// beyond a table's men.
pub const NONE: u8 = 255;

/// Most men (kings included) a position of a built-in table has.
pub const MAX_MEN: usize = 6;

/// The square of each man, in [`Layout::men`] order; slots past the last
/// man hold [`NONE`].
pub type Squares = [u8; MAX_MEN];

#[inline]
pub(crate) fn transpose(sq: u8) -> u8 {
    ((sq & 7) << 3) | (sq >> 3)
}

#[inline]
fn anti_transpose(sq: u8) -> u8 {
    transpose(sq ^ 63)
}

#[inline]
const fn on_diagonal(sq: u8) -> bool {
    sq >> 3 == sq & 7
}

/// Strictly above the a1–h8 diagonal (rank greater than file).
#[inline]
const fn above_diagonal(sq: u8) -> bool {
    sq >> 3 > sq & 7
}

/// The 8 board symmetries as square maps: bit 0 mirrors files, bit 1
/// mirrors ranks, bit 2 then transposes.
const SYMMETRIES: [[u8; 64]; 8] = {
    let mut t = [[0u8; 64]; 8];
    let mut s = 0;
    while s < 8 {
        let mut sq = 0;
        while sq < 64 {
            let mut x = sq as u8;
            if s & 1 != 0 {
                x ^= 7;
            }
            if s & 2 != 0 {
                x ^= 56;
            }
            if s & 4 != 0 {
                x = ((x & 7) << 3) | (x >> 3);
            }
            t[s][sq] = x;
            sq += 1;
        }
        s += 1;
    }
    t
};

/// For each white king square, the symmetry that brings it into the
/// a1–d1–d4 triangle (pawnless tables).
const TO_TRIANGLE: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut sq = 0;
    while sq < 64 {
        let (mut file, mut rank) = (sq % 8, sq / 8);
        let mut s = 0;
        if file > 3 {
            s |= 1;
            file = 7 - file;
        }
        if rank > 3 {
            s |= 2;
            rank = 7 - rank;
        }
        if rank > file {
            s |= 4;
        }
        t[sq] = s;
        sq += 1;
    }
    t
};

/// Applies a symmetry to every slot (an absent man's garbage stays
/// harmless: its stride is 0).
#[inline]
fn apply(sym: &[u8; 64], sq: Squares) -> Squares {
    sq.map(|s| sym[s as usize & 63])
}

/// The squares `piece` on `sq` attacks, as [`attacks::attacks`], but
/// inlined: shakmaty's dispatch is not marked inline, and the retrograde
/// passes call it for every position they touch.
#[inline(always)]
pub fn attacks_of(sq: Square, piece: Piece, occupied: Bitboard) -> Bitboard {
    match piece.role {
        Role::Pawn => attacks::pawn_attacks(piece.color, sq),
        Role::Knight => attacks::knight_attacks(sq),
        Role::Bishop => attacks::bishop_attacks(sq, occupied),
        Role::Rook => attacks::rook_attacks(sq, occupied),
        Role::Queen => attacks::queen_attacks(sq, occupied),
        Role::King => attacks::king_attacks(sq),
    }
}

/// Every slot of [`Squares`] [`NONE`], as the low bytes of one word (the
/// squares of a position built in a register).
const EMPTY_SQUARES: u64 = u64::MAX >> (8 * (8 - MAX_MEN));

/// In [`KingPairs`]: kings that have no pair digit.
const NO_PAIR: u16 = u16::MAX;

/// Pawnless king pairs (white king in the triangle, the diagonal resolved).
#[cfg(test)]
const PAWNLESS_KING_PAIRS: u32 = 462;
/// King pairs with pawns (white king on files a–d).
pub(crate) const PAWN_KING_PAIRS: u32 = 1806;

/// The king pairs of one kind of table, numbered in square order (white
/// king, then black king).
#[derive(Debug)]
struct KingPairs {
    /// By `white_king * 64 + black_king`: the pair's digit, or [`NO_PAIR`]
    /// if the kings are not canonical as they stand (or touch).
    digit: [u16; 4096],
    /// As `digit`, but [`NO_PAIR`] also for the pairs with both kings on the
    /// a1–h8 diagonal, where the other men decide whether the position or
    /// its transposition is stored: a move that lands on a `plain` pair
    /// needs no symmetry and no tie-break.
    plain: [u16; 4096],
    /// By digit: the white king's square in the low byte, the black king's
    /// in the high byte.
    squares: [u16; PAWN_KING_PAIRS as usize],
    count: u32,
}

const fn king_pairs(pawns: bool) -> KingPairs {
    let mut p =
        KingPairs { digit: [NO_PAIR; 4096], plain: [NO_PAIR; 4096], squares: [0; PAWN_KING_PAIRS as usize], count: 0 };
    let mut wk: usize = 0;
    while wk < 64 {
        let (wf, wr) = (wk % 8, wk / 8);
        let white_diagonal = !pawns && wf == wr;
        if wf <= 3 && (pawns || wr <= wf) {
            let mut bk: usize = 0;
            while bk < 64 {
                let (bf, br) = (bk % 8, bk / 8);
                let apart = wf.abs_diff(bf) > 1 || wr.abs_diff(br) > 1;
                if apart && (!white_diagonal || br <= bf) {
                    let n = p.count as u16;
                    p.digit[wk * 64 + bk] = n;
                    if !(white_diagonal && br == bf) {
                        p.plain[wk * 64 + bk] = n;
                    }
                    p.squares[n as usize] = (wk | bk << 8) as u16;
                    p.count += 1;
                }
                bk += 1;
            }
        }
        wk += 1;
    }
    p
}

static PAWNLESS_KINGS: KingPairs = king_pairs(false);
static PAWN_KINGS: KingPairs = king_pairs(true);

/// `BINOMIAL[k][n]` = C(n, k), for the colex rank of sorted squares
/// `s0 < s1 < s2 < s3`: C(s0, 1) + C(s1, 2) + C(s2, 3) + C(s3, 4).
const BINOMIAL: [[u32; 64]; MAX_COMBINED + 1] = {
    let mut t = [[0u32; 64]; MAX_COMBINED + 1];
    let mut n = 0;
    while n < 64 {
        t[0][n] = 1;
        let mut k = 1;
        while k <= MAX_COMBINED {
            t[k][n] = if n == 0 { 0 } else { t[k][n - 1] + t[k - 1][n - 1] };
            k += 1;
        }
        n += 1;
    }
    t
};

/// Most identical men stored as one combination digit.
const MAX_COMBINED: usize = 4;

/// By colex rank: the `k` sorted squares of each combination of `k` of the
/// 64 squares, one per byte (lowest square in the low byte).
fn combinations(k: usize) -> &'static [u32] {
    static TABLES: [OnceLock<Vec<u32>>; MAX_COMBINED + 1] = [const { OnceLock::new() }; MAX_COMBINED + 1];
    TABLES[k].get_or_init(|| {
        // Colex order: the highest square varies slowest.
        fn extend(out: &mut Vec<u32>, k: usize, below: u32, high: u32) {
            if k == 0 {
                out.push(high);
                return;
            }
            for s in 0..below {
                extend(out, k - 1, s, high << 8 | s);
            }
        }
        let mut out = Vec::with_capacity(BINOMIAL[k][63] as usize + 64);
        extend(&mut out, k, 64, 0);
        out
    })
}

/// Division by a divisor fixed when a layout is made, by one multiply
/// (Lemire, Kaser and Kurz's direct computation, exact for every `u32`).
#[derive(Debug, Clone, Copy)]
struct Divisor {
    d: u32,
    /// ceil(2^64 / d).
    m: u64,
}

impl Divisor {
    fn new(d: u32) -> Divisor {
        assert!(d >= 2);
        Divisor { d, m: u64::MAX / d as u64 + 1 }
    }

    /// Quotient and remainder of `a` by the divisor.
    #[inline(always)]
    fn div_rem(self, a: u32) -> (u32, u32) {
        let q = ((self.m as u128 * a as u128) >> 64) as u32;
        (q, a - q * self.d)
    }
}

/// How a table lays out its positions.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The material laid out.
    pub material: Material,
    /// The men in slot order: white king, black king, then the others.
    pub men: Vec<(Color, Role)>,
    /// Number of men.
    pub n: usize,
    /// Whether any man is a pawn (the pawn layout: no diagonal symmetry, layers by pawn ranks).
    pub pawns: bool,
    /// Men `start..end` are the same piece (at most one such group: see
    /// [`Material::is_builtin`]): their squares are stored sorted. Empty if
    /// none.
    identical: std::ops::Range<usize>,
    /// The identical men are pieces (not pawns): one combination digit.
    combined: bool,
    /// By combination digit, the identical pieces' squares (see
    /// [`combinations`]); empty if not `combined`.
    combos: &'static [u32],
    /// C(64, k) for `k` combined pieces.
    combo_radix: Option<Divisor>,
    kings: &'static KingPairs,
    pair_radix: Divisor,
    /// Index weight of each man's bit field (its square, a pawn's file): 0
    /// for kings, combined pieces and absent men.
    stride: [u32; MAX_MEN],
    field_shift: [u8; MAX_MEN],
    /// 63 for a piece's square, 7 for a pawn's file, 0 for men without a
    /// bit field.
    field_mask: [u8; MAX_MEN],
    /// Bits of the bit fields, the index's lowest.
    low_bits: u32,
    /// Index weight of the combination digit (`1 << low_bits`).
    combo_stride: u32,
    /// Index weight of the king pair.
    pair_stride: u32,
    /// Index weight of the side to move: black adds it.
    turn_stride: u32,
    /// The pawns' slots; the first one's rank is the least significant
    /// base-6 digit of a layer's rank code.
    pawn_slots: arrayvec::ArrayVec<u8, MAX_MEN>,
    /// By rank code (each pawn's rank less 2 as a base-6 digit): its layer,
    /// or `u32::MAX` where identical pawns' ranks are not in slot order.
    layer_of_code: Vec<u32>,
    /// By layer: each pawn's rank times 8 in its slot's byte, added to the
    /// decoded files.
    layer_ranks: Vec<u64>,
    /// Indexes of the table for both sides to move, illegal ones included.
    pub size: usize,
}

/// Squares of the men (by [`Layout::men`] order) and the side to move.
// One aligned word: the squares first, as `unchecked_pos` builds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct Pos {
    /// Square of each man by slot ([`NONE`] for a man not on the board).
    pub sq: Squares,
    /// The side to move.
    pub turn: Color,
}

/// How [`Layout::steps`] finds the index after a piece move to square `t`
/// (see [`Steps::at`]). The fields are described with each variant.
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)]
pub enum Steps {
    /// A man with a square digit moves: `base + t * stride` (the symmetry
    /// and the tie-break stay as they were).
    Plain { base: u32, stride: u32 },
    /// The same with both kings on the a1–h8 diagonal: the smaller of
    /// `base + t * stride` and `transposed_base + transpose(t) * stride`.
    Diagonal { base: u32, transposed_base: u32, stride: u32 },
    /// One of the combined identical pieces moves, the others staying on
    /// `others` (ascending; [`NONE`] past the last): `base + rank * stride`
    /// where `rank` is the combination of `t` and `others`.
    Group { base: u32, others: [u8; MAX_COMBINED - 1], stride: u32 },
    /// The white king moves: `base + pair * stride` if its pair with the
    /// black king on `black_king` is plain, else the full index.
    WhiteKing { base: u32, black_king: u8, stride: u32 },
    /// The black king moves: `base + pair * stride` if its pair with the
    /// white king on `white_king` is plain; with the white king on the
    /// diagonal and `t` above it, the transposed position's
    /// `transposed_base + pair * stride`; else the full index.
    BlackKing { base: u32, transposed_base: u32, white_king: u8, stride: u32 },
    /// The full index.
    Full,
}

impl Steps {
    /// The index after the move to `t`, or `None` where it takes the full
    /// index ([`Layout::index`]).
    #[inline(always)]
    pub fn at(self, l: &Layout, t: u8) -> Option<u32> {
        match self {
            Steps::Plain { base, stride } => Some(base + t as u32 * stride),
            Steps::Diagonal { base, transposed_base, stride } => {
                Some((base + t as u32 * stride).min(transposed_base + transpose(t) as u32 * stride))
            }
            Steps::Group { base, others, stride } => Some(base + l.combination_with(t, others) * stride),
            Steps::WhiteKing { base, black_king, stride } => {
                let d = l.kings.plain[(t as usize) << 6 | black_king as usize];
                (d != NO_PAIR).then(|| base + d as u32 * stride)
            }
            Steps::BlackKing { base, transposed_base, white_king, stride } => {
                let d = l.kings.plain[(white_king as usize) << 6 | t as usize];
                if d != NO_PAIR {
                    return Some(base + d as u32 * stride);
                }
                // Only with the white king on the diagonal: the black king
                // above it stands for its transposition.
                let d = l.kings.plain[(white_king as usize) << 6 | transpose(t) as usize];
                (!l.pawns && above_diagonal(t) && d != NO_PAIR).then(|| transposed_base + d as u32 * stride)
            }
            Steps::Full => None,
        }
    }
}

impl Layout {
    /// The layout of `material`'s table.
    pub fn new(material: &Material) -> Layout {
        let men = material.men();
        let n = men.len();
        let pawns = material.has_pawns();
        assert!(n <= MAX_MEN, "at most {MAX_MEN} men");
        // Men of one kind are next to each other in `men`.
        let identical = (2..n)
            .find_map(|a| {
                let b = (a..n).take_while(|&j| men[j] == men[a]).count() + a;
                (b - a >= 2).then_some(a..b)
            })
            .unwrap_or(0..0);
        assert!((identical.end..n).all(|j| (j + 1..n).all(|k| men[j] != men[k])), "one group of identical men at most");
        let is_pawn = |i: usize| i > 1 && men[i].1 == Role::Pawn;
        let combined = !identical.is_empty() && !is_pawn(identical.start);
        assert!(identical.len() <= MAX_COMBINED);
        // Bit fields, the last man lowest.
        let (mut stride, mut field_shift, mut field_mask) = ([0u32; MAX_MEN], [0u8; MAX_MEN], [0u8; MAX_MEN]);
        let mut low_bits = 0;
        for i in (2..n).rev().filter(|&i| !(combined && identical.contains(&i))) {
            let bits = if is_pawn(i) { 3 } else { 6 };
            stride[i] = 1 << low_bits;
            field_shift[i] = low_bits as u8;
            field_mask[i] = (1u8 << bits) - 1;
            low_bits += bits;
        }
        let combo_stride = 1u32 << low_bits;
        let (combos, combo_radix, combo_count) = if combined {
            let k = identical.len();
            (
                combinations(k),
                Some(Divisor::new(BINOMIAL[k][63] + BINOMIAL[k - 1][63])),
                BINOMIAL[k][63] + BINOMIAL[k - 1][63],
            )
        } else {
            (&[][..], None, 1)
        };
        let kings = if pawns { &PAWN_KINGS } else { &PAWNLESS_KINGS };
        let pair_stride = combo_stride * combo_count;
        let turn_stride = pair_stride * kings.count;
        let pawn_slots: arrayvec::ArrayVec<u8, MAX_MEN> = (2..n).filter(|&i| is_pawn(i)).map(|i| i as u8).collect();
        // Layers: the pawns' ranks, identical pawns' in slot order (as their
        // sorted squares have them).
        let codes = 6usize.pow(pawn_slots.len() as u32);
        let (mut layer_of_code, mut layer_ranks) = (vec![u32::MAX; codes], Vec::new());
        for (code, layer) in layer_of_code.iter_mut().enumerate() {
            let rank = |j: usize| code / 6usize.pow(j as u32) % 6;
            let sorted = (1..pawn_slots.len()).all(|j| {
                let (a, b) = (pawn_slots[j - 1] as usize, pawn_slots[j] as usize);
                !(identical.contains(&a) && identical.contains(&b)) || rank(j - 1) <= rank(j)
            });
            if sorted {
                *layer = layer_ranks.len() as u32;
                layer_ranks
                    .push(pawn_slots.iter().enumerate().map(|(j, &s)| (((rank(j) + 1) * 8) as u64) << (8 * s)).sum());
            }
        }
        let size = layer_ranks.len() * 2 * turn_stride as usize;
        assert!(size <= u32::MAX as usize, "indexes are u32");
        Layout {
            material: material.clone(),
            men,
            n,
            pawns,
            identical,
            combined,
            combos,
            combo_radix,
            kings,
            pair_radix: Divisor::new(kings.count),
            stride,
            field_shift,
            field_mask,
            low_bits,
            combo_stride,
            pair_stride,
            turn_stride,
            pawn_slots,
            layer_of_code,
            layer_ranks,
            size,
        }
    }

    /// The layer of the pawns on `sq` (0 without pawns).
    #[inline]
    fn layer(&self, sq: &Squares) -> u32 {
        if !self.pawns {
            return 0;
        }
        let mut code = 0;
        for &i in self.pawn_slots.iter().rev() {
            code = code * 6 + ((sq[i as usize] >> 3) - 1) as usize;
        }
        self.layer_of_code[code]
    }

    /// The combination digit of the sorted squares `s`.
    #[inline(always)]
    fn combination(s: &[u8]) -> u32 {
        s.iter().enumerate().map(|(j, &x)| BINOMIAL[j + 1][x as usize]).sum()
    }

    /// The combination digit of the combined pieces on `t` and `others`
    /// (ascending, [`NONE`] past the last).
    #[inline(always)]
    fn combination_with(&self, t: u8, others: [u8; MAX_COMBINED - 1]) -> u32 {
        let [a, b, c] = others;
        match self.identical.len() {
            2 => {
                let (lo, hi) = if t < a { (t, a) } else { (a, t) };
                BINOMIAL[1][lo as usize] + BINOMIAL[2][hi as usize]
            }
            3 => {
                let (x, y, z) = if t < a {
                    (t, a, b)
                } else if t < b {
                    (a, t, b)
                } else {
                    (a, b, t)
                };
                BINOMIAL[1][x as usize] + BINOMIAL[2][y as usize] + BINOMIAL[3][z as usize]
            }
            _ => {
                let (w, x, y, z) = if t < a {
                    (t, a, b, c)
                } else if t < b {
                    (a, t, b, c)
                } else if t < c {
                    (a, b, t, c)
                } else {
                    (a, b, c, t)
                };
                BINOMIAL[1][w as usize] + BINOMIAL[2][x as usize] + BINOMIAL[3][y as usize] + BINOMIAL[4][z as usize]
            }
        }
    }

    /// The index of `sq` (canonical kings, identical men sorted) less its
    /// king pair's share: every digit but the kings'.
    #[inline]
    // One slot indexes four arrays (squares, masks, strides, shifts).
    #[allow(clippy::needless_range_loop)]
    fn index_without_kings(&self, sq: &Squares, turn: Color) -> u32 {
        let mut idx = (self.layer(sq) * 2 + turn.fold_wb(0, 1)) * self.turn_stride;
        // Absent men have strides 0; wrapping keeps their garbage harmless.
        for i in 2..MAX_MEN {
            idx = idx.wrapping_add(((sq[i] & self.field_mask[i]) as u32).wrapping_mul(self.stride[i]));
        }
        if self.combined {
            idx += Self::combination(&sq[self.identical.clone()]) * self.combo_stride;
        }
        idx
    }

    /// The index of `sq`, its kings a canonical pair and its identical men
    /// sorted (but the tie-break on the diagonal not applied).
    #[inline]
    fn raw_index(&self, sq: &Squares, turn: Color) -> u32 {
        let pair = self.kings.digit[(sq[0] as usize) << 6 | sq[1] as usize];
        debug_assert_ne!(pair, NO_PAIR, "kings {} {}", sq[0], sq[1]);
        self.index_without_kings(sq, turn) + pair as u32 * self.pair_stride
    }

    #[inline]
    fn sort_identical(&self, sq: &mut Squares) {
        let g = self.identical.clone();
        match g.len() {
            0 => {}
            2 => {
                if sq[g.start] > sq[g.start + 1] {
                    sq.swap(g.start, g.start + 1);
                }
            }
            _ => sq[g].sort_unstable(),
        }
    }

    /// Whether the identical men of `sq` are in index order.
    #[inline]
    fn identical_sorted(&self, sq: &Squares) -> bool {
        self.identical.clone().skip(1).all(|j| sq[j - 1] < sq[j])
    }

    /// Whether both kings stand on the a1–h8 diagonal of a pawnless table
    /// (canonical squares): then the position and its transposition share
    /// the king pair, and the smaller index is the position's.
    #[inline]
    fn tie_broken_by_transposition(&self, sq: &Squares) -> bool {
        !self.pawns && on_diagonal(sq[0]) && on_diagonal(sq[1])
    }

    /// `sq` (a canonical placement) transposed, identical men sorted.
    #[inline]
    fn transposed(&self, sq: &Squares) -> Squares {
        let mut t = apply(&SYMMETRIES[4], *sq);
        self.sort_identical(&mut t);
        t
    }

    /// The index of any position of this material (all men present, pawns
    /// on ranks 2–7, kings apart).
    #[inline]
    pub fn index(&self, pos: &Pos) -> u32 {
        let wk = pos.sq[0];
        let mut s = if self.pawns {
            if wk & 7 > 3 { apply(&SYMMETRIES[1], pos.sq) } else { pos.sq }
        } else {
            let s = apply(&SYMMETRIES[TO_TRIANGLE[wk as usize] as usize], pos.sq);
            // The white king on the diagonal: the black king goes below it.
            if on_diagonal(s[0]) && above_diagonal(s[1]) { apply(&SYMMETRIES[4], s) } else { s }
        };
        self.sort_identical(&mut s);
        let ia = self.raw_index(&s, pos.turn);
        if !self.tie_broken_by_transposition(&s) {
            return ia;
        }
        ia.min(self.raw_index(&self.transposed(&s), pos.turn))
    }

    /// How the indexes of the positions reached by moving man `moved` (not
    /// a pawn) of the canonical position `from` to empty squares are found,
    /// with `turn` to move: mostly by one multiply-add per target square
    /// (see [`Steps`]).
    #[inline]
    pub fn steps(&self, from: &Squares, moved: usize, turn: Color) -> Steps {
        self.steps_from_raw(from, self.raw_index(from, turn), moved, turn)
    }

    /// [`Layout::steps`] of `from` given `raw`, its index with `turn` to
    /// move (as [`Layout::raw_index`]; for a decoded position and the other
    /// side to move, [`Layout::other_turn`] of its own index): every digit
    /// but the moved man's is taken from `raw` rather than computed again.
    #[inline]
    pub fn steps_from_raw(&self, from: &Squares, raw: u32, moved: usize, turn: Color) -> Steps {
        debug_assert!(moved < 2 || self.men[moved].1 != Role::Pawn);
        debug_assert_eq!(raw, self.raw_index(from, turn));
        let tie = self.tie_broken_by_transposition(from);
        match moved {
            0 | 1 => {
                let pair = self.kings.digit[(from[0] as usize) << 6 | from[1] as usize];
                let base = raw - pair as u32 * self.pair_stride;
                if moved == 0 {
                    return Steps::WhiteKing { base, black_king: from[1], stride: self.pair_stride };
                }
                let transposed_base = if !self.pawns && on_diagonal(from[0]) {
                    self.index_without_kings(&self.transposed(from), turn)
                } else {
                    base
                };
                Steps::BlackKing { base, transposed_base, white_king: from[0], stride: self.pair_stride }
            }
            _ if self.combined && self.identical.contains(&moved) => {
                if tie {
                    return Steps::Full;
                }
                let g = self.identical.clone();
                let mut others = [NONE; MAX_COMBINED - 1];
                for (o, j) in others.iter_mut().zip(g.clone().filter(|&j| j != moved)) {
                    *o = from[j];
                }
                let base = raw - Self::combination(&from[g]) * self.combo_stride;
                Steps::Group { base, others, stride: self.combo_stride }
            }
            _ => {
                let stride = self.stride[moved];
                let base = raw - from[moved] as u32 * stride;
                if !tie {
                    return Steps::Plain { base, stride };
                }
                let t = self.transposed(from);
                let transposed_base = self.raw_index(&t, turn) - t[moved] as u32 * stride;
                Steps::Diagonal { base, transposed_base, stride }
            }
        }
    }

    /// The index of the squares of `idx` (a raw index, as that of a decoded
    /// position, whose side to move is `turn`) with the other side to move.
    #[inline]
    pub fn other_turn(&self, idx: u32, turn: Color) -> u32 {
        match turn {
            Color::White => idx + self.turn_stride,
            Color::Black => idx - self.turn_stride,
        }
    }

    /// The position stored at `idx` if `idx` is the index of a legal position
    /// (men on distinct squares, side not to move not in check).
    pub fn decode(&self, idx: u32) -> Option<Pos> {
        self.decode_placement(idx).filter(|pos| !self.in_check(&pos.sq, !pos.turn))
    }

    /// The position stored at `idx` if `idx` is its index and its men stand
    /// on distinct squares; whether the side not to move is in check is left
    /// to the caller (move generation finds it out on the way).
    #[inline]
    pub fn decode_placement(&self, idx: u32) -> Option<Pos> {
        let pos = self.unchecked_pos(idx);
        let sq = pos.sq;
        if self.occupied(&sq).count() != self.n {
            return None;
        }
        // Decoded kings are a canonical pair and combined pieces sorted, so
        // only identical pawns' order and the tie-break on the diagonal can
        // make `idx` non-canonical: with both kings on the diagonal, the
        // index is the smaller of the raw indexes of the squares and of
        // their transposition; `idx` is the raw index of its own squares.
        let canonical = self.identical_sorted(&sq)
            && (!self.tie_broken_by_transposition(&sq) || idx <= self.raw_index(&self.transposed(&sq), pos.turn));
        debug_assert_eq!(canonical, self.index(&pos) == idx);
        canonical.then_some(pos)
    }

    /// The side to move of index `idx`: the digit above the pieces'.
    #[inline]
    pub fn turn_of(&self, idx: u32) -> Color {
        if (idx / self.turn_stride) & 1 == 0 { Color::White } else { Color::Black }
    }

    /// The squares an index stands for, without any check.
    #[inline]
    pub fn unchecked_pos(&self, idx: u32) -> Pos {
        // The squares are built as bytes of one register: writing them one
        // by one into the array and reading it back whole stalls store
        // forwarding.
        let mut packed: u64 = EMPTY_SQUARES;
        for i in 2..self.n {
            let d = ((idx >> self.field_shift[i]) & self.field_mask[i] as u32) as u64;
            packed = packed & !(0xff << (8 * i)) | d << (8 * i);
        }
        let mut high = idx >> self.low_bits;
        if let Some(radix) = self.combo_radix {
            let (q, r) = radix.div_rem(high);
            let shift = 8 * self.identical.start;
            let mask = (1u64 << (8 * self.identical.len())) - 1;
            packed = packed & !(mask << shift) | (self.combos[r as usize] as u64) << shift;
            high = q;
        }
        let (rest, pair) = self.pair_radix.div_rem(high);
        packed = packed & !0xffff | self.kings.squares[pair as usize] as u64;
        let turn = if rest & 1 == 0 { Color::White } else { Color::Black };
        if self.pawns {
            // Adds the ranks to the files: no carry into the next byte.
            packed += self.layer_ranks[(rest >> 1) as usize];
        }
        let mut sq = [0u8; MAX_MEN];
        sq.copy_from_slice(&packed.to_le_bytes()[..MAX_MEN]);
        Pos { sq, turn }
    }

    /// The squares the men of `sq` stand on.
    #[inline]
    pub fn occupied(&self, sq: &Squares) -> Bitboard {
        let mut bb = Bitboard::EMPTY;
        for &s in &sq[..self.n] {
            if s != NONE {
                bb.add(Square::new(s as u32));
            }
        }
        bb
    }

    /// Is `color`'s king attacked?
    #[inline]
    // A slot indexes both the men and their squares.
    #[allow(clippy::needless_range_loop)]
    pub fn in_check(&self, sq: &Squares, color: Color) -> bool {
        let king = sq[color.fold_wb(0, 1)];
        let occ = self.occupied(sq);
        let target = Square::new(king as u32);
        for i in 0..self.n {
            let (c, role) = self.men[i];
            if c == color || sq[i] == NONE {
                continue;
            }
            let from = Square::new(sq[i] as u32);
            if attacks_of(from, Piece { color: c, role }, occ).contains(target) {
                return true;
            }
        }
        false
    }

    /// Number of symmetries (among the 8 of the board) mapping the position
    /// onto itself: 1 or 2 (all men on a long diagonal, up to identical men).
    #[inline]
    pub fn symmetry_count(&self, sq: &Squares) -> u32 {
        if self.pawns {
            return 1;
        }
        // A symmetry must fix both (unique) kings: only the two long
        // diagonals are fixed lines of a board symmetry.
        let on_diagonal = |s: u8| s >> 3 == s & 7;
        let on_anti_diagonal = |s: u8| (s >> 3) + (s & 7) == 7;
        let f: fn(u8) -> u8 = if on_diagonal(sq[0]) && on_diagonal(sq[1]) {
            transpose
        } else if on_anti_diagonal(sq[0]) && on_anti_diagonal(sq[1]) {
            anti_transpose
        } else {
            return 1;
        };
        let mut t = *sq;
        let mut a = *sq;
        for x in &mut t[..self.n] {
            *x = f(*x);
        }
        self.sort_identical(&mut t);
        self.sort_identical(&mut a);
        if (2..self.n).all(|i| t[i] == a[i]) { 2 } else { 1 }
    }

    /// Indexes per layer (positions with the same pawn ranks, both sides to
    /// move): layer `k` is `k * layer_span..(k + 1) * layer_span`.
    pub fn layer_span(&self) -> usize {
        2 * self.turn_stride as usize
    }

    /// The layers a pawn push (single or double) leads to from layer `k`:
    /// the only layers of this table whose values the moves of `k` that
    /// leave it read (captures and promotions read other tables).
    pub fn pawn_push_layers(&self, k: usize) -> Vec<usize> {
        let bytes = self.layer_ranks[k].to_le_bytes();
        // Ranks less 2, by pawn slot.
        let ranks: Vec<i32> = self.pawn_slots.iter().map(|&s| (bytes[s as usize] / 8 - 1) as i32).collect();
        let identical: Vec<usize> =
            (0..ranks.len()).filter(|&j| self.identical.contains(&(self.pawn_slots[j] as usize))).collect();
        let mut out = Vec::new();
        for (j, &s) in self.pawn_slots.iter().enumerate() {
            let (step, start) = self.men[s as usize].0.fold_wb((1, 0), (-1, 5));
            let double = (ranks[j] == start).then_some(ranks[j] + 2 * step);
            for to in std::iter::once(ranks[j] + step).chain(double).filter(|r| (0..6).contains(r)) {
                let mut moved = ranks.clone();
                moved[j] = to;
                // Identical pawns' ranks in slot order, as layers hold them.
                let mut same: Vec<i32> = identical.iter().map(|&i| moved[i]).collect();
                same.sort_unstable();
                for (&i, &r) in identical.iter().zip(&same) {
                    moved[i] = r;
                }
                let code = moved.iter().rev().fold(0, |c, &r| c * 6 + r as usize);
                let layer = self.layer_of_code[code] as usize;
                debug_assert!(layer < self.layer_ranks.len(), "a layer for every rank code in slot order");
                if !out.contains(&layer) {
                    out.push(layer);
                }
            }
        }
        out
    }

    /// The layers in the order the generator solves them: every pawn move
    /// leads to a layer earlier in this order (more pawn progress), other
    /// moves stay in their layer.
    pub fn layer_order(&self) -> Vec<usize> {
        let progress = |k: usize| -> u32 {
            let bytes = self.layer_ranks[k].to_le_bytes();
            self.pawn_slots
                .iter()
                .map(|&i| {
                    // 0 for a pawn on rank 2, 5 on rank 7.
                    let rank = (bytes[i as usize] / 8 - 1) as u32;
                    self.men[i as usize].0.fold_wb(rank, 5 - rank)
                })
                .sum()
        };
        let mut order: Vec<usize> = (0..self.layer_ranks.len()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(progress(k)));
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn king_pairs_and_sizes() {
        assert_eq!(PAWNLESS_KINGS.count, PAWNLESS_KING_PAIRS);
        assert_eq!(PAWN_KINGS.count, PAWN_KING_PAIRS);
        for k in 1..=MAX_COMBINED {
            let c = combinations(k);
            assert_eq!(c.len() as u32, BINOMIAL[k][63] + BINOMIAL[k - 1][63], "C(64, {k})");
            for (r, &packed) in c.iter().enumerate() {
                let s: Vec<u8> = packed.to_le_bytes()[..k].to_vec();
                assert!(s.windows(2).all(|w| w[0] < w[1]) && Layout::combination(&s) == r as u32, "{k}: {r}");
            }
        }
        for (name, size) in [
            ("KRvK", 2 * 462 * 64),
            ("KPvK", 6 * 2 * 1806 * 8),
            ("KNNvK", 2 * 462 * 2016),
            ("KPPvK", 21 * 2 * 1806 * 64),
            ("KRvKP", 6 * 2 * 1806 * 64 * 8),
            ("KNNNvK", 2 * 462 * 41664),
            ("KNNNNvK", 2 * 462 * 635376),
            ("KQQQQvK", 2 * 462 * 635376),
            ("KRBvKQ", 2 * 462 * 64 * 64 * 64),
            ("KRPvKR", 6 * 2 * 1806 * 64 * 8 * 64),
            ("KNNvKP", 6 * 2 * 1806 * 2016 * 8),
            ("KPPPvK", 56 * 2 * 1806 * 512),
        ] {
            assert_eq!(Layout::new(&Material::parse(name).unwrap()).size, size, "{name}");
        }
    }

    /// Every index decodes to a placement whose index is itself (or to
    /// none), and every legal position, in every orientation and order of
    /// its identical men, has the index of a legal decoded position: the
    /// index is a bijection between legal positions up to symmetry and
    /// the indexes that decode.
    #[test]
    fn index_round_trips() {
        for name in ["KRvK", "KPvK", "KNNvK", "KPPvK", "KBvKN", "KRvKP"] {
            let l = Layout::new(&Material::parse(name).unwrap());
            let mut legal = vec![false; l.size];
            for idx in 0..l.size as u32 {
                let p = l.unchecked_pos(idx);
                if let Some(q) = l.decode_placement(idx) {
                    assert_eq!(l.index(&q), idx, "{name} {idx}");
                    legal[idx as usize] = !l.in_check(&q.sq, !q.turn);
                } else {
                    let distinct = (0..l.n).all(|i| (0..i).all(|j| p.sq[i] != p.sq[j]));
                    assert!(!distinct || l.index(&p) != idx, "{name} {idx}: a placement's own index refused");
                }
            }
            // Every placement of the men (pawns on ranks 2–7), both sides
            // to move.
            let (mut placements, mut reached) = (0u64, vec![false; l.size]);
            let squares =
                |i: usize| -> Vec<u8> { if l.men[i].1 == Role::Pawn { (8..56).collect() } else { (0..64).collect() } };
            let mut sq = [NONE; MAX_MEN];
            fn place(
                l: &Layout,
                i: usize,
                sq: &mut Squares,
                squares: &dyn Fn(usize) -> Vec<u8>,
                f: &mut dyn FnMut(&Squares),
            ) {
                if i == l.n {
                    return f(sq);
                }
                for s in squares(i) {
                    if !sq[..i].contains(&s) {
                        sq[i] = s;
                        place(l, i + 1, sq, squares, f);
                    }
                }
                sq[i] = NONE;
            }
            place(&l, 0, &mut sq, &squares, &mut |sq| {
                let kings_apart = (sq[0] & 7).abs_diff(sq[1] & 7) > 1 || (sq[0] >> 3).abs_diff(sq[1] >> 3) > 1;
                for turn in [Color::White, Color::Black] {
                    if !kings_apart || l.in_check(sq, !turn) {
                        continue;
                    }
                    let idx = l.index(&Pos { sq: *sq, turn }) as usize;
                    assert!(legal[idx], "{name}: {sq:?} {turn:?} at {idx}, which does not decode");
                    reached[idx] = true;
                    placements += 1;
                }
            });
            let decoded = legal.iter().filter(|&&b| b).count();
            assert_eq!(reached.iter().filter(|&&b| b).count(), decoded, "{name}: a decoded position no placement has");
            assert!(decoded > 0 && placements > decoded as u64, "{name}");
        }
    }

    #[test]
    fn every_legal_position_decodes_to_its_index() {
        for name in ["KRvK", "KNNvK", "KPvKP", "KBvKN", "KPPvK", "KNNNvK", "KNNNNvK"] {
            let l = Layout::new(&Material::parse(name).unwrap());
            let mut valid = 0;
            // KNNNNvK: every 1009th index.
            let step = if l.size > 1 << 28 { 1009 } else { 1 };
            for idx in (0..l.size as u32).step_by(step) {
                // Legal: men on distinct squares, `idx` the position's index,
                // the side not to move not in check.
                let p = l.unchecked_pos(idx);
                let distinct = (0..l.n).all(|i| (0..i).all(|j| p.sq[i] != p.sq[j]));
                let legal = distinct && l.index(&p) == idx && !l.in_check(&p.sq, !p.turn);
                assert_eq!(l.decode(idx).is_some(), legal, "{name} {idx}");
                if let Some(p) = l.decode(idx) {
                    valid += 1;
                    // Every symmetric image, in any order of identical men,
                    // maps back to the same index.
                    for s in if l.pawns { vec![0, 1] } else { (0..8).collect() } {
                        let mut m = Pos { sq: apply(&SYMMETRIES[s], p.sq), turn: p.turn };
                        assert_eq!(l.index(&m), idx, "{name}");
                        let g = l.identical.clone();
                        if g.len() >= 2 {
                            m.sq.swap(g.start, g.end - 1);
                            assert_eq!(l.index(&m), idx, "{name}");
                        }
                    }
                }
            }
            assert!(valid > 0);
        }
    }

    /// A layer is a contiguous range; pawn moves lead to layers solved
    /// earlier, piece moves stay in their layer.
    #[test]
    fn layers_are_ranges_ordered_by_pawn_progress() {
        for (name, layers) in [("KPvK", 6), ("KPvKP", 36), ("KPPvK", 21), ("KRvKP", 6), ("KPPPvK", 56)] {
            let l = Layout::new(&Material::parse(name).unwrap().canonical());
            let order = l.layer_order();
            let rank_of = |k: usize| order.iter().position(|&o| o == k).unwrap();
            assert_eq!(order.len(), layers, "{name}");
            assert_eq!(l.size, layers * l.layer_span(), "{name}");
            let (mut pushes, mut quiet) = (0u64, 0u64);
            for idx in (0..l.size as u32).step_by(if l.n > 4 { 301 } else { 11 }) {
                let Some(p) = l.decode(idx) else { continue };
                let layer = idx as usize / l.layer_span();
                for i in 1..l.n {
                    let from = p.sq[i];
                    let pawn = l.men[i].1 == Role::Pawn;
                    let targets: Vec<u8> = if pawn {
                        let to = from as i32 + l.men[i].0.fold_wb(8, -8);
                        if (8..56).contains(&to) { vec![to as u8] } else { vec![] }
                    } else {
                        (0..64).collect()
                    };
                    for t in targets.into_iter().filter(|t| !p.sq[..l.n].contains(t)) {
                        let mut sq = p.sq;
                        sq[i] = t;
                        let (a, b) = (sq[0], sq[1]);
                        if (a & 7).abs_diff(b & 7) <= 1 && (a >> 3).abs_diff(b >> 3) <= 1 {
                            continue;
                        }
                        let child = l.index(&Pos { sq, turn: !p.turn }) as usize / l.layer_span();
                        if pawn {
                            assert!(rank_of(child) < rank_of(layer), "{name} {idx}: pawn move to a layer solved later");
                            assert!(l.pawn_push_layers(layer).contains(&child), "{name} {idx}: push to layer {child}");
                            pushes += 1;
                        } else {
                            assert_eq!(child, layer, "{name} {idx}");
                            quiet += 1;
                        }
                    }
                }
            }
            assert!(pushes > 1000 && quiet > 10_000, "{name}: {pushes} pawn moves, {quiet} piece moves");
        }
    }

    /// Wherever `steps` answers with arithmetic, it is the full index of
    /// the position after the move, with either side to move.
    #[test]
    fn steps_equal_the_full_index() {
        for name in ["KRvK", "KNNvK", "KRvKP", "KBvKN", "KNNNvK", "KNNvKP", "KNNNNvK"] {
            let l = Layout::new(&Material::parse(name).unwrap());
            let (mut fast, mut slow) = (0u64, 0u64);
            let step = match l.n {
                ..=4 => 7,
                5 => 997,
                _ => 99_991,
            };
            for idx in (0..l.size as u32).step_by(step) {
                let Some(p) = l.decode(idx) else { continue };
                for i in (0..l.n).filter(|&i| l.men[i].1 != Role::Pawn) {
                    for turn in [Color::White, Color::Black] {
                        let steps = l.steps(&p.sq, i, turn);
                        // The same from the index, as the retrograde passes find them.
                        let raw = if turn == p.turn { idx } else { l.other_turn(idx, p.turn) };
                        assert_eq!(raw, l.raw_index(&p.sq, turn), "{name} {idx}");
                        let from_raw = l.steps_from_raw(&p.sq, raw, i, turn);
                        for t in (0..64u8).filter(|t| !p.sq[..l.n].contains(t)) {
                            let mut sq = p.sq;
                            sq[i] = t;
                            let (a, b) = (sq[0], sq[1]);
                            if (a & 7).abs_diff(b & 7) <= 1 && (a >> 3).abs_diff(b >> 3) <= 1 {
                                continue;
                            }
                            let full = l.index(&Pos { sq, turn });
                            assert_eq!(from_raw.at(&l, t), steps.at(&l, t), "{name} {idx} man {i} to {t} {steps:?}");
                            match steps.at(&l, t) {
                                Some(by_steps) => {
                                    assert_eq!(by_steps, full, "{name} {idx} man {i} to {t} {steps:?}");
                                    fast += 1;
                                }
                                None => slow += 1,
                            }
                        }
                    }
                }
            }
            assert!(fast > 100_000 && slow > 0, "{name}: {fast} checked, {slow} left to the full index");
        }
    }
}
