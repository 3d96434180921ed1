//! Positions of one table and their index.
//!
//! A position is the square of each man in [`Material::men`] order plus the
//! side to move. The index uses symmetry: without pawns the white king is
//! brought into the a1–d1–d4 triangle (8-fold), with pawns onto files a–d
//! (left-right mirror). Ties (white king on the a1–h8 diagonal, identical
//! pieces) are broken by taking the smallest index, so every position has
//! exactly one index; other index values are simply unused.
//!
//! Digits, most significant first: the rank of each pawn, then the side to
//! move, then each man's square (a pawn's file only). So the positions with
//! the same pawn ranks, a *layer*, fill one contiguous range of
//! [`Layout::layer_span`] indexes: the generator needs working memory for
//! one layer at a time, not for the whole table.

use shakmaty::{Bitboard, Color, Piece, Role, Square, attacks};

use super::material::Material;

/// Marks a man that was captured in a move under construction, or a slot
/// beyond a table's men.
pub const NONE: u8 = 255;

/// Most men (kings included) a position of a built-in table has.
pub const MAX_MEN: usize = 5;

/// The square of each man, in [`Layout::men`] order; slots past the last
/// man hold [`NONE`].
pub type Squares = [u8; MAX_MEN];

/// Index of the a1–d1–d4 triangle squares, or -1.
const TRIANGLE: [i8; 64] = {
    let mut t = [-1i8; 64];
    let mut n = 0;
    let mut sq = 0;
    while sq < 64 {
        let (file, rank) = (sq % 8, sq / 8);
        if file <= 3 && rank <= file {
            t[sq] = n;
            n += 1;
        }
        sq += 1;
    }
    t
};

const TRIANGLE_SQUARES: [u8; 10] = {
    let mut s = [0u8; 10];
    let mut sq = 0;
    while sq < 64 {
        if TRIANGLE[sq] >= 0 {
            s[TRIANGLE[sq] as usize] = sq as u8;
        }
        sq += 1;
    }
    s
};

#[inline]
pub fn transpose(sq: u8) -> u8 {
    ((sq & 7) << 3) | (sq >> 3)
}

#[inline]
fn anti_transpose(sq: u8) -> u8 {
    transpose(sq ^ 63)
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

/// How a table lays out its positions.
#[derive(Debug, Clone)]
pub struct Layout {
    pub material: Material,
    pub men: Vec<(Color, Role)>,
    pub n: usize,
    pub pawns: bool,
    /// Men `start..end` are the same piece (at most one such group up to
    /// 5 men): their squares are stored sorted. Empty if none.
    identical: std::ops::Range<usize>,
    /// Index weight of each man's low digit (0 for absent men).
    stride: [u32; MAX_MEN],
    /// Index weight of each man's rank: `8 * stride` for pieces (so that
    /// file and rank make the square digit), a high digit for pawns.
    rank_stride: [u32; MAX_MEN],
    /// Rank offset of each man: 1 for pawns (ranks 2–7 only), else 0.
    rank_offset: [u8; MAX_MEN],
    /// Index weight of the side to move: black adds it.
    turn_stride: u32,
    /// Bits of the men after the white king: their digits (64 or 8 each)
    /// are bit fields of the index's low `low_bits` bits.
    low_bits: u32,
    /// Where each man's low digit sits in those bits, and its mask (both 0
    /// for the king and for absent men).
    low_shift: [u8; MAX_MEN],
    low_mask: [u8; MAX_MEN],
    /// The pawns' slots, the one with the least significant rank digit
    /// first.
    pawn_slots: arrayvec::ArrayVec<u8, MAX_MEN>,
    pub size: usize,
}

/// Squares of the men (by [`Layout::men`] order) and the side to move.
// One aligned word: the squares first, as `unchecked_pos` builds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct Pos {
    pub sq: Squares,
    pub turn: Color,
}

/// How [`Layout::steps`] finds the index after a piece move to square `t`
/// (as `u32`).
#[derive(Debug, Clone, Copy)]
pub enum Steps {
    /// `base + t * stride`: the symmetry and tie-breaks stay as they were.
    Plain { base: u32, stride: u32 },
    /// The white king moves: `base + d * stride` where
    /// [`Layout::plain_king_digit`] gives `d`, else the full index.
    WhiteKing { base: u32, stride: u32 },
    /// The smaller of `base + t * stride` and `transposed_base +
    /// transpose(t) * stride` (white king on the a1–h8 diagonal).
    Diagonal { base: u32, transposed_base: u32, stride: u32 },
    /// One of two identical men moves, the other stays on `other`: `base +
    /// low * low_stride + high * high_stride` where `low` and `high` are
    /// `t` and `other` in order (no symmetry or tie-break in question).
    Pair { base: u32, other: u8, low_stride: u32, high_stride: u32 },
    /// The full index.
    Full,
}

impl Layout {
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
        debug_assert!(
            (identical.end..n).all(|j| (j + 1..n).all(|k| men[j] != men[k])),
            "one group of identical men at most"
        );
        let radix: Vec<u32> = men
            .iter()
            .enumerate()
            .map(|(i, &(_, role))| match (i, role) {
                (0, _) => if pawns { 32 } else { 10 },
                // A pawn's low digit is its file; its rank is a high digit.
                (_, Role::Pawn) => 8,
                _ => 64,
            })
            .collect();
        let is_pawn = |i: usize| i > 0 && men[i].1 == Role::Pawn;
        let (mut stride, mut rank_stride, mut rank_offset) = ([0u32; MAX_MEN], [0u32; MAX_MEN], [0u8; MAX_MEN]);
        let mut w = 1;
        for i in (0..n).rev() {
            stride[i] = w;
            rank_stride[i] = 8 * w;
            w *= radix[i];
        }
        let turn_stride = w;
        w *= 2;
        for i in (0..n).rev().filter(|&i| is_pawn(i)) {
            rank_stride[i] = w;
            rank_offset[i] = 1;
            w *= 6;
        }
        let size = w as usize;
        let (mut low_shift, mut low_mask) = ([0u8; MAX_MEN], [0u8; MAX_MEN]);
        for i in 1..n {
            debug_assert!(radix[i].is_power_of_two(), "digits below the white king's are bit fields");
            low_shift[i] = stride[i].trailing_zeros() as u8;
            low_mask[i] = (radix[i] - 1) as u8;
        }
        let low_bits = stride[0].trailing_zeros();
        let pawn_slots = (1..n).rev().filter(|&i| is_pawn(i)).map(|i| i as u8).collect();
        Layout {
            material: material.clone(),
            men,
            n,
            pawns,
            identical,
            stride,
            rank_stride,
            rank_offset,
            turn_stride,
            low_bits,
            low_shift,
            low_mask,
            pawn_slots,
            size,
        }
    }

    #[inline]
    fn raw_index(&self, sq: &Squares, turn: Color) -> u32 {
        let mut idx = turn.fold_wb(0, self.turn_stride) + self.king_digit(sq[0]) * self.stride[0];
        if !self.pawns {
            // Every square is one digit: one multiply-add per man.
            for i in 1..MAX_MEN {
                idx = idx.wrapping_add((sq[i] as u32).wrapping_mul(self.stride[i]));
            }
            return idx;
        }
        for i in 1..MAX_MEN {
            // Absent men have strides 0; wrapping keeps their garbage harmless.
            let (file, rank) = ((sq[i] & 7) as u32, (sq[i] >> 3).wrapping_sub(self.rank_offset[i]) as u32);
            idx = idx.wrapping_add(file.wrapping_mul(self.stride[i])).wrapping_add(rank.wrapping_mul(self.rank_stride[i]));
        }
        idx
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

    /// The index of any position of this material (all men present, pawns
    /// on ranks 2–7).
    #[inline]
    pub fn index(&self, pos: &Pos) -> u32 {
        let wk = pos.sq[0];
        if self.pawns {
            let mut s = if wk & 7 > 3 { apply(&SYMMETRIES[1], pos.sq) } else { pos.sq };
            self.sort_identical(&mut s);
            return self.raw_index(&s, pos.turn);
        }
        let s = apply(&SYMMETRIES[TO_TRIANGLE[wk as usize] as usize], pos.sq);
        let mut a = s;
        self.sort_identical(&mut a);
        let ia = self.raw_index(&a, pos.turn);
        // On the a1–h8 diagonal the transposed position is in the triangle
        // too: take the smaller index of the two.
        if !self.tie_broken_by_transposition(s[0]) {
            return ia;
        }
        let mut b = apply(&SYMMETRIES[4], s);
        self.sort_identical(&mut b);
        ia.min(self.raw_index(&b, pos.turn))
    }

    /// How the indexes of the positions reached by moving man `moved` (not
    /// a pawn) of the canonical position `from` to empty squares are found,
    /// with `turn` to move: mostly by one multiply-add per target square
    /// (see [`Steps`]).
    #[inline]
    pub fn steps(&self, from: &Squares, moved: usize, turn: Color) -> Steps {
        debug_assert_eq!(self.rank_stride[moved], 8 * self.stride[moved], "a piece's square is one digit");
        let stride = self.stride[moved];
        let wk = from[0];
        if moved == 0 {
            let base = self.raw_index(from, turn) - self.king_digit(wk) * stride;
            return Steps::WhiteKing { base, stride };
        }
        if self.identical.contains(&moved) {
            let g = self.identical.clone();
            if g.len() != 2 || self.tie_broken_by_transposition(wk) {
                return Steps::Full;
            }
            let other = if moved == g.start { g.start + 1 } else { g.start };
            let (low_stride, high_stride) = (self.stride[g.start], self.stride[g.start + 1]);
            let base = self.raw_index(from, turn) - from[g.start] as u32 * low_stride - from[g.start + 1] as u32 * high_stride;
            return Steps::Pair { base, other: from[other], low_stride, high_stride };
        }
        let base = self.raw_index(from, turn) - from[moved] as u32 * stride;
        if !self.tie_broken_by_transposition(wk) {
            return Steps::Plain { base, stride };
        }
        // The white king stays on the a1–h8 diagonal: the index is the
        // smaller of the position's and its transposition's.
        let mut t = apply(&SYMMETRIES[4], *from);
        self.sort_identical(&mut t);
        let transposed_base = self.raw_index(&t, turn) - t[moved] as u32 * stride;
        Steps::Diagonal { base, transposed_base, stride }
    }

    /// Whether a position with the white king on `wk` (in its canonical
    /// region) may have to be told from its transposition by the smaller
    /// index: without pawns, the king on the a1–h8 diagonal.
    #[inline]
    fn tie_broken_by_transposition(&self, wk: u8) -> bool {
        !self.pawns && wk >> 3 == wk & 7
    }

    /// The index digit of the white king on `sq` (in its canonical region).
    #[inline]
    fn king_digit(&self, sq: u8) -> u32 {
        if self.pawns { ((sq >> 3) * 4 + (sq & 7)) as u32 } else { TRIANGLE[sq as usize] as u32 }
    }

    /// The white king's digit on `to` if a position with it there needs no
    /// symmetry and no tie-break to be canonical (the other men staying).
    #[inline]
    pub fn plain_king_digit(&self, to: u8) -> Option<u32> {
        let (file, rank) = (to & 7, to >> 3);
        let plain = if self.pawns { file <= 3 } else { file <= 3 && rank < file };
        plain.then(|| self.king_digit(to))
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
        // Decoded squares have the white king in its canonical region
        // already, so only the tie-breaks can make `idx` non-canonical.
        // With the white king on the a1-h8 diagonal, the index is the
        // smaller of the raw indexes of the squares and of their
        // transposition (each with identical men sorted); `idx` is the raw
        // index of its own squares.
        let wk = sq[0];
        let canonical = self.identical_sorted(&sq)
            && (!self.tie_broken_by_transposition(wk) || {
                let mut t = apply(&SYMMETRIES[4], sq);
                self.sort_identical(&mut t);
                idx <= self.raw_index(&t, pos.turn)
            });
        debug_assert_eq!(canonical, self.index(&pos) == idx);
        canonical.then_some(pos)
    }

    /// The squares an index stands for, without any check.
    #[inline]
    pub fn unchecked_pos(&self, idx: u32) -> Pos {
        // Below the white king every digit is a bit field; above it come its
        // own digit, the side to move and the pawns' ranks. The squares are
        // built as bytes of one register: writing them one by one into the
        // array and reading it back whole stalls store forwarding.
        let mut packed: u64 = u64::from_le_bytes([NONE, NONE, NONE, NONE, NONE, 0, 0, 0]);
        for i in 1..self.n {
            let d = ((idx >> self.low_shift[i]) & self.low_mask[i] as u32) as u64;
            packed = packed & !(0xff << (8 * i)) | d << (8 * i);
        }
        let high = idx >> self.low_bits;
        let (king, mut rest) = if self.pawns {
            let d = high & 31;
            (((d >> 2) << 3) | (d & 3), high >> 5)
        } else {
            (TRIANGLE_SQUARES[(high % 10) as usize] as u32, high / 10)
        };
        packed = packed & !0xff | king as u64;
        let turn = if rest & 1 == 0 { Color::White } else { Color::Black };
        rest >>= 1;
        for &i in &self.pawn_slots {
            // Adds the rank to the file: no carry into the next byte.
            packed += (((rest % 6 + 1) * 8) as u64) << (8 * i);
            rest /= 6;
        }
        let mut sq = [0u8; MAX_MEN];
        sq.copy_from_slice(&packed.to_le_bytes()[..MAX_MEN]);
        Pos { sq, turn }
    }

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

    /// The layers in the order the generator solves them: every pawn move
    /// leads to a layer earlier in this order (more pawn progress), other
    /// moves stay in their layer.
    pub fn layer_order(&self) -> Vec<usize> {
        let layers = self.size / self.layer_span();
        let progress = |k: usize| {
            let mut rest = k;
            let mut sum = 0;
            for &i in &self.pawn_slots {
                let i = i as usize;
                // 0 for a pawn on rank 2, 5 on rank 7.
                let rank = rest % 6;
                rest /= 6;
                sum += self.men[i].0.fold_wb(rank, 5 - rank);
            }
            sum
        };
        let mut order: Vec<usize> = (0..layers).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(progress(k)));
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_legal_position_decodes_to_its_index() {
        for name in ["KRvK", "KNNvK", "KPvKP", "KBvKN", "KPPvK"] {
            let l = Layout::new(&Material::parse(name).unwrap());
            let mut valid = 0;
            for idx in 0..l.size as u32 {
                // Legal: men on distinct squares, `idx` the position's index,
                // the side not to move not in check.
                let p = l.unchecked_pos(idx);
                let distinct = (0..l.n).all(|i| (0..i).all(|j| p.sq[i] != p.sq[j]));
                let legal = distinct && l.index(&p) == idx && !l.in_check(&p.sq, !p.turn);
                assert_eq!(l.decode(idx).is_some(), legal, "{name} {idx}");
                if let Some(p) = l.decode(idx) {
                    valid += 1;
                    // Every symmetric image maps back to the same index.
                    let mut m = p;
                    for x in &mut m.sq[..l.n] {
                        *x ^= 7;
                    }
                    assert_eq!(l.index(&m), idx, "{name}");
                }
            }
            assert!(valid > 0);
        }
    }

    /// A layer is a contiguous range; pawn moves lead to layers solved
    /// earlier, piece moves stay in their layer.
    #[test]
    fn layers_are_ranges_ordered_by_pawn_progress() {
        for name in ["KPvK", "KPvKP", "KPPvK", "KRvKP"] {
            let l = Layout::new(&Material::parse(name).unwrap().canonical());
            let order = l.layer_order();
            let rank_of = |k: usize| order.iter().position(|&o| o == k).unwrap();
            assert_eq!(order.len(), 6usize.pow(l.material.pawns() as u32), "{name}");
            let (mut pushes, mut quiet) = (0u64, 0u64);
            for idx in (0..l.size as u32).step_by(11) {
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
                        let child = l.index(&Pos { sq, turn: !p.turn }) as usize / l.layer_span();
                        if pawn {
                            assert!(rank_of(child) < rank_of(layer), "{name} {idx}: pawn move to a layer solved later");
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
        for name in ["KRvK", "KNNvK", "KRvKP", "KBvKN"] {
            let l = Layout::new(&Material::parse(name).unwrap());
            let (mut fast, mut slow) = (0u64, 0u64);
            for idx in (0..l.size as u32).step_by(7) {
                let Some(p) = l.decode(idx) else { continue };
                for i in (0..l.n).filter(|&i| l.men[i].1 != Role::Pawn) {
                    for turn in [Color::White, Color::Black] {
                        let steps = l.steps(&p.sq, i, turn);
                        for t in (0..64u8).filter(|t| !p.sq[..l.n].contains(t)) {
                            let mut sq = p.sq;
                            sq[i] = t;
                            let full = l.index(&Pos { sq, turn });
                            let by_steps = match steps {
                                Steps::Plain { base, stride } => base + t as u32 * stride,
                                Steps::Diagonal { base, transposed_base, stride } => {
                                    (base + t as u32 * stride).min(transposed_base + transpose(t) as u32 * stride)
                                }
                                Steps::WhiteKing { base, stride } => match l.plain_king_digit(t) {
                                    Some(d) => base + d * stride,
                                    None => {
                                        slow += 1;
                                        continue;
                                    }
                                },
                                Steps::Pair { base, other, low_stride, high_stride } => {
                                    base + t.min(other) as u32 * low_stride + t.max(other) as u32 * high_stride
                                }
                                Steps::Full => {
                                    slow += 1;
                                    continue;
                                }
                            };
                            assert_eq!(by_steps, full, "{name} {idx} man {i} to {t} {steps:?}");
                            fast += 1;
                        }
                    }
                }
            }
            assert!(fast > 100_000 && slow > 0, "{name}: {fast} checked, {slow} left to the full index");
        }
    }
}
