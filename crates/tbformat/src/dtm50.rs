//! DTM50 values of a table: each position's DTM50 as a function of the
//! half-move clock, stored as a short list of [`Segment`]s.
//!
//! For a position, the clocks at which the side to move wins (or is mated)
//! within `n` plies form a down-set `0..=t`: a lower clock never hurts the
//! winner. So DTM50 is a step function of the clock: DTM50 at clock `c` is
//! the value of the first segment whose `max_clock` is at least `c`, and a
//! draw beyond the last one. Most positions have one or two segments.

use std::ops::Range;

use crate::value::{self, DRAW};

/// Last clock at which a move may still be played.
pub const LAST_MOVE_CLOCK: u8 = 99;

/// The clock at which a non-mate position is drawn by the 50-move rule.
pub const DRAW_CLOCK: u32 = 100;

/// One step of a position's DTM50 function: `value` (encoded as in
/// [`crate::value`]) holds for the clocks up to `max_clock` that no earlier
/// segment covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The value, encoded as in [`crate::value`].
    pub value: u16,
    /// The last half-move clock (0..=99) this segment covers.
    pub max_clock: u8,
}

/// DTM50 at `clock` of a position whose segments (in clock order, as
/// a table gives them) are `segments`: the value of
/// the first one reaching that clock, a draw past the last.
pub fn value_at(segments: &[Segment], clock: u32) -> u16 {
    segments.iter().find(|g| clock <= g.max_clock as u32).map_or(DRAW, |g| g.value)
}

/// Marks an inline entry whose position has more segments in the overflow.
pub const MORE: u32 = 1 << 31;

impl Segment {
    /// The segment in one word: the value in the low 16 bits, the clock above.
    #[inline]
    pub const fn pack(self) -> u32 {
        self.value as u32 | (self.max_clock as u32) << 16
    }

    #[inline]
    pub(crate) const fn unpack(v: u32) -> Segment {
        Segment { value: v as u16, max_clock: (v >> 16) as u8 & 0x7f }
    }
}

/// DTM50 of a whole table: the first segment of each position inline, the
/// others of the few positions that have more in a sorted overflow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dtm50Data {
    /// Per index: first segment packed, [`MORE`] if there are others; a
    /// position without segments holds [`DRAW`] (or [`UNKNOWN`] if illegal).
    pub inline: Vec<u32>,
    /// Indexes with more than one segment, ascending.
    pub overflow_index: Vec<u32>,
    /// Start of each overflow position's further segments in `segments`, and
    /// one past the end.
    pub overflow_start: Vec<u32>,
    /// The further segments, packed, by position in `overflow_index` order.
    pub segments: Vec<u32>,
}

/// DTM50 of consecutive positions, from which a table's blocks and
/// statistics are made.
pub trait Dtm50Slices: Sync {
    /// Per position, its first segment packed, with [`MORE`] if it has
    /// others (as [`Dtm50Data::inline`]).
    fn firsts(&self) -> &[u32];
    /// The data of positions `range`, by position less `range.start`.
    fn slice(&self, range: Range<usize>) -> Dtm50Data;

    /// Positions.
    fn len(&self) -> usize {
        self.firsts().len()
    }

    /// Whether there are no positions.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// DTM50 at clock 0 of position `j`: its first segment covers clock 0.
    #[inline]
    fn at_zero(&self, j: usize) -> u16 {
        self.firsts()[j] as u16
    }
}

impl Dtm50Slices for Dtm50Data {
    fn firsts(&self) -> &[u32] {
        &self.inline
    }

    fn slice(&self, range: Range<usize>) -> Dtm50Data {
        let k = |i: usize| self.overflow_index.partition_point(|&o| (o as usize) < i);
        let (k0, k1) = (k(range.start), k(range.end));
        let s0 = self.overflow_start[k0];
        Dtm50Data {
            inline: self.inline[range.clone()].to_vec(),
            overflow_index: self.overflow_index[k0..k1].iter().map(|&o| o - range.start as u32).collect(),
            overflow_start: self.overflow_start[k0..=k1].iter().map(|&s| s - s0).collect(),
            segments: self.segments[s0 as usize..self.overflow_start[k1] as usize].to_vec(),
        }
    }
}

impl Dtm50Data {
    /// Appends `other`'s positions after this one's.
    pub fn append(&mut self, other: Dtm50Data) {
        let (n, s) = (self.inline.len() as u32, self.segments.len() as u32);
        // One end marker for both.
        self.overflow_start.pop();
        self.inline.extend(other.inline);
        self.overflow_index.extend(other.overflow_index.iter().map(|&o| o + n));
        self.overflow_start.extend(other.overflow_start.iter().map(|&o| o + s));
        self.segments.extend(other.segments);
        if self.overflow_start.is_empty() {
            self.overflow_start.push(self.segments.len() as u32);
        }
    }
}

impl Dtm50Data {
    /// The data of a whole table from that of its layers (each by index
    /// less its first, with that first index).
    pub fn concat(mut layers: Vec<(usize, Dtm50Data)>) -> Dtm50Data {
        layers.sort_unstable_by_key(|&(base, _)| base);
        let mut out = Dtm50Data::default();
        for (base, d) in layers {
            debug_assert_eq!(base, out.inline.len(), "layers cover the table");
            let offset = out.segments.len() as u32;
            out.inline.extend_from_slice(&d.inline);
            out.overflow_index.extend(d.overflow_index.iter().map(|&j| base as u32 + j));
            out.overflow_start.extend(d.overflow_start[..d.overflow_start.len() - 1].iter().map(|&s| offset + s));
            out.segments.extend_from_slice(&d.segments);
        }
        out.overflow_start.push(out.segments.len() as u32);
        out
    }
}

/// Read access to DTM50 data, wherever it lives (memory or a mapped file).
pub trait Dtm50View {
    /// Position `idx`'s first segment packed, with [`MORE`] if it has others.
    fn inline(&self, idx: u32) -> u32;
    /// How many positions have further segments.
    fn overflow_len(&self) -> usize;
    /// The `k`-th position with further segments (ascending).
    fn overflow_index(&self, k: usize) -> u32;
    /// Where the `k`-th such position's further segments start (the next one's start ends them).
    fn overflow_start(&self, k: usize) -> u32;
    /// Further segment `s`, packed.
    fn segment(&self, s: usize) -> u32;

    /// Where `idx` (which has overflow segments) is in the overflow index.
    fn overflow_slot(&self, idx: u32) -> usize {
        let (mut lo, mut hi) = (0, self.overflow_len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.overflow_index(mid) < idx { lo = mid + 1 } else { hi = mid }
        }
        debug_assert_eq!(self.overflow_index(lo), idx);
        lo
    }

    /// DTM50 of position `idx` at half-move clock `clock` (0..=99), encoded
    /// as in [`crate::value`]: a win or loss in plies, or [`DRAW`].
    fn at_clock(&self, idx: u32, clock: u32) -> u16 {
        let first = self.inline(idx);
        let seg = Segment::unpack(first & !MORE);
        if value::is_win(seg.value) || value::is_loss(seg.value) {
            if clock <= seg.max_clock as u32 {
                return seg.value;
            }
        } else {
            return seg.value;
        }
        if first & MORE == 0 {
            return DRAW;
        }
        let k = self.overflow_slot(idx);
        for s in self.overflow_start(k)..self.overflow_start(k + 1) {
            let seg = Segment::unpack(self.segment(s as usize));
            if clock <= seg.max_clock as u32 {
                return seg.value;
            }
        }
        DRAW
    }

    /// Appends every segment of `idx` to `out`, in clock order (none for a
    /// draw at every clock).
    fn segments_into(&self, idx: u32, out: &mut Vec<Segment>) {
        let first = self.inline(idx);
        let seg = Segment::unpack(first & !MORE);
        if !(value::is_win(seg.value) || value::is_loss(seg.value)) {
            return;
        }
        out.push(seg);
        if first & MORE != 0 {
            let k = self.overflow_slot(idx);
            for s in self.overflow_start(k)..self.overflow_start(k + 1) {
                out.push(Segment::unpack(self.segment(s as usize)));
            }
        }
    }
}

impl Dtm50View for Dtm50Data {
    fn inline(&self, idx: u32) -> u32 {
        self.inline[idx as usize]
    }
    fn overflow_len(&self) -> usize {
        self.overflow_index.len()
    }
    fn overflow_index(&self, k: usize) -> u32 {
        self.overflow_index[k]
    }
    fn overflow_start(&self, k: usize) -> u32 {
        self.overflow_start[k]
    }
    fn segment(&self, s: usize) -> u32 {
        self.segments[s]
    }
}
