//! DTM50's segments of a layer being solved, held compactly.
//!
//! A position's DTM50 is a list of segments (see [`super::dtm50`]): a mate
//! in so many plies up to some clock, a slower one up to a higher clock,
//! and so on; each clock where it changes is a change point. The analysis
//! finds the segments distance by distance, and within a distance all its
//! losses, then all its wins: one value at a time, each position at most
//! once per value, in index order. So they are kept as runs, one per
//! value, each delta-coded: about two bytes per segment, where the index,
//! the value and the clock as found take eight. KRBNvK has 577 million
//! segments (409 million beyond each position's first).
//!
//! The runs are read back block by block when a layer's file blocks are
//! written, through a checkpoint per [`CHECKPOINT_POSITIONS`] indexes.

use std::ops::Range;

/// Indexes per checkpoint of a run: a range starting on a multiple of it
/// is found without decoding anything before it (the file's blocks are as
/// long, which `format` asserts).
pub(crate) const CHECKPOINT_POSITIONS: u32 = 8192;

/// The segments of one layer, by index less the layer's first.
#[derive(Default)]
pub(crate) struct ChangeLog {
    runs: Vec<Run>,
}

/// The segments of one value.
struct Run {
    value: u16,
    /// Per segment, in index order: its index less the previous one's
    /// (the first of a checkpoint: less the checkpoint's first index) as a
    /// LEB128 number, then its clock.
    bytes: Vec<u8>,
    /// Per checkpoint with segments, ascending: its number and where its
    /// first segment starts in `bytes`.
    checkpoints: Vec<(u32, u32)>,
}

impl ChangeLog {
    pub fn new() -> ChangeLog {
        ChangeLog::default()
    }

    /// Logs the positions that have a segment of `value`, with its last
    /// clock, by ascending index (the analysis walks its lists in index
    /// order anyway). Each value comes once, after the earlier ones.
    pub(crate) fn push_run(&mut self, value: u16, points: impl IntoIterator<Item = (u32, u8)>) {
        let mut run = Run { value, bytes: Vec::new(), checkpoints: Vec::new() };
        let (mut checkpoint, mut prev) = (u32::MAX, 0);
        for (j, clock) in points {
            assert!(run.bytes.is_empty() || j > prev, "change points in index order, each once");
            if j / CHECKPOINT_POSITIONS != checkpoint {
                checkpoint = j / CHECKPOINT_POSITIONS;
                run.checkpoints.push((checkpoint, run.bytes.len() as u32));
                prev = checkpoint * CHECKPOINT_POSITIONS;
            }
            write_leb128(&mut run.bytes, j - prev);
            run.bytes.push(clock);
            prev = j;
        }
        if !run.bytes.is_empty() {
            run.bytes.shrink_to_fit();
            run.checkpoints.shrink_to_fit();
            self.runs.push(run);
        }
    }

    /// Memory the log holds, in bytes.
    pub(crate) fn heap_bytes(&self) -> usize {
        let runs: usize = self.runs.iter().map(|r| r.bytes.capacity() + 8 * r.checkpoints.capacity()).sum();
        runs + size_of::<Run>() * self.runs.capacity()
    }

    /// Calls `f(j, value, clock)` for every segment of positions in
    /// `range`: run by run in the order they were logged, within a run by
    /// index.
    pub(crate) fn for_each_in(&self, range: Range<u32>, mut f: impl FnMut(u32, u16, u8)) {
        for run in &self.runs {
            let first = range.start / CHECKPOINT_POSITIONS;
            let mut k = run.checkpoints.partition_point(|&(c, _)| c < first);
            let Some(&(c, start)) = run.checkpoints.get(k) else {
                continue;
            };
            let (mut at, mut prev) = (start as usize, c * CHECKPOINT_POSITIONS);
            while at < run.bytes.len() {
                if run.checkpoints.get(k + 1).is_some_and(|&(_, s)| s as usize == at) {
                    k += 1;
                    prev = run.checkpoints[k].0 * CHECKPOINT_POSITIONS;
                }
                let j = prev + read_leb128(&run.bytes, &mut at);
                if j >= range.end {
                    break;
                }
                let clock = run.bytes[at];
                at += 1;
                if j >= range.start {
                    f(j, run.value, clock);
                }
                prev = j;
            }
        }
    }
}

fn write_leb128(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_leb128(bytes: &[u8], at: &mut usize) -> u32 {
    let (mut v, mut shift) = (0u32, 0);
    loop {
        let b = bytes[*at];
        *at += 1;
        v |= ((b & 0x7f) as u32) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every segment read back, from any range, as logged: values in
    /// the order they came, within one by index; gaps of one to four
    /// LEB128 bytes, checkpoints without points, a range starting and
    /// ending inside checkpoints.
    #[test]
    fn reads_back_every_range_as_logged() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let span = 40 * CHECKPOINT_POSITIONS;
        let mut log = ChangeLog::new();
        let mut expected: Vec<(u32, u16, u8)> = Vec::new();
        for (v, value) in [7u16, 9, 0x8003, 12, 0x8005].into_iter().enumerate() {
            // Distinct indexes per value, dense for some values, sparse (and
            // with gaps past 2^21) for others, pushed in shuffled order.
            let mut js: Vec<u32> = (0..span).filter(|_| next(if v % 2 == 0 { 3 } else { 5000 }) == 0).collect();
            if v == 4 {
                if js.last() != Some(&(span - 1)) {
                    js.push(span - 1);
                }
                if js.first() != Some(&0) {
                    js.insert(0, 0);
                }
            }
            let points: Vec<(u32, u8)> = js.iter().map(|&j| (j, next(100) as u8)).collect();
            expected.extend(points.iter().map(|&(j, c)| (j, value, c)));
            log.push_run(value, points);
        }
        log.push_run(1, []);
        let mut logged = 0;
        log.for_each_in(0..u32::MAX, |_, _, _| logged += 1);
        assert_eq!(logged, expected.len());
        assert!(log.heap_bytes() < 3 * expected.len() + 100_000, "{} bytes for {}", log.heap_bytes(), expected.len());
        let ranges = [
            0..span,
            0..CHECKPOINT_POSITIONS,
            3 * CHECKPOINT_POSITIONS..4 * CHECKPOINT_POSITIONS,
            1000..span - 5,
            12_345..100_001,
            span - 1..span,
        ];
        for range in ranges {
            let mut got = Vec::new();
            log.for_each_in(range.clone(), |j, v, c| got.push((j, v, c)));
            let want: Vec<_> = expected.iter().copied().filter(|e| range.contains(&e.0)).collect();
            assert!(!want.is_empty());
            assert_eq!(got, want, "{range:?}");
        }
    }

    #[test]
    #[should_panic(expected = "change points in index order")]
    fn points_out_of_order_are_refused() {
        ChangeLog::new().push_run(3, [(5, 0), (9, 1), (9, 2)]);
    }

    #[test]
    fn leb128_round_trips() {
        let mut bytes = Vec::new();
        let values = [0, 1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, u32::MAX];
        for v in values {
            write_leb128(&mut bytes, v);
        }
        assert_eq!(bytes.len(), 1 + 1 + 1 + 2 + 2 + 3 + 3 + 4 + 5);
        let mut at = 0;
        for v in values {
            assert_eq!(read_leb128(&bytes, &mut at), v);
        }
        assert_eq!(at, bytes.len());
    }
}
