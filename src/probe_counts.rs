//! Table probes counted by source, table and metric, without locks or
//! allocation on the probing path: a fixed open-addressing table of atomic
//! counters keyed by a packed (material, source, metric).

use std::sync::atomic::{AtomicU64, Ordering};

use shakmaty::Board;

use crate::{domain::Source, material};

/// What was probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeMetric {
    Wdl,
    Dtz,
    Dtm,
    Dtm50,
    Dtc,
}

impl ProbeMetric {
    const ALL: [ProbeMetric; 5] =
        [ProbeMetric::Wdl, ProbeMetric::Dtz, ProbeMetric::Dtm, ProbeMetric::Dtm50, ProbeMetric::Dtc];

    pub fn as_str(self) -> &'static str {
        match self {
            ProbeMetric::Wdl => "wdl",
            ProbeMetric::Dtz => "dtz",
            ProbeMetric::Dtm => "dtm",
            ProbeMetric::Dtm50 => "dtm50",
            ProbeMetric::Dtc => "dtc",
        }
    }
}

/// Indexed by the discriminant of [`Source`].
const SOURCES: [Source; 5] = [Source::Syzygy, Source::Gaviota, Source::Builtin, Source::Rules, Source::Chesstb];
/// Comfortably more than (tables up to 7 pieces) x sources x metrics seen in practice.
const SLOTS: usize = 1 << 13;

struct Slot {
    /// 0: free; else material << 8 | source << 4 | metric.
    key: AtomicU64,
    count: AtomicU64,
}

/// One probe count as rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProbeCount {
    pub source: Source,
    /// Normalized material, e.g. `KRvK`; `other` once the table is full.
    pub table: String,
    pub metric: ProbeMetric,
    pub count: u64,
}

pub struct ProbeCounts {
    slots: Box<[Slot]>,
    /// Probes whose key found no free slot.
    overflow: AtomicU64,
}

impl Default for ProbeCounts {
    fn default() -> ProbeCounts {
        ProbeCounts {
            slots: (0..SLOTS).map(|_| Slot { key: AtomicU64::new(0), count: AtomicU64::new(0) }).collect(),
            overflow: AtomicU64::new(0),
        }
    }
}

impl ProbeCounts {
    /// Counts one probe that `source` answered.
    pub(crate) fn record(&self, source: Source, metric: ProbeMetric, board: &Board) {
        let key = material::normalized_key(board) << 8 | (source as u64) << 4 | metric as u64;
        // Fibonacci hashing spreads the packed keys over the slots.
        let start = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize;
        for i in 0..SLOTS {
            let slot = &self.slots[(start + i) % SLOTS];
            let current = slot.key.load(Ordering::Relaxed);
            let owned = current == key
                || (current == 0 && {
                    match slot.key.compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed) {
                        Ok(_) => true,
                        Err(other) => other == key,
                    }
                });
            if owned {
                slot.count.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        self.overflow.fetch_add(1, Ordering::Relaxed);
    }

    /// Every non-zero count (order unspecified).
    pub(crate) fn snapshot(&self) -> Vec<ProbeCount> {
        let mut counts: Vec<ProbeCount> = self
            .slots
            .iter()
            .filter_map(|slot| {
                let key = slot.key.load(Ordering::Relaxed);
                let count = slot.count.load(Ordering::Relaxed);
                (key != 0 && count != 0).then(|| ProbeCount {
                    source: SOURCES[((key >> 4) & 0xf) as usize],
                    table: material::key_name(key >> 8),
                    metric: ProbeMetric::ALL[(key & 0xf) as usize],
                    count,
                })
            })
            .collect();
        let overflow = self.overflow.load(Ordering::Relaxed);
        if overflow > 0 {
            counts.push(ProbeCount {
                source: Source::Rules,
                table: "other".into(),
                metric: ProbeMetric::Wdl,
                count: overflow,
            });
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::Position;

    #[test]
    fn counts_by_normalized_table_source_and_metric() {
        let counts = ProbeCounts::default();
        let krk_white = crate::request::parse_fen("8/8/8/8/8/2k5/8/R3K3 w - - 0 1").unwrap().board().clone();
        let krk_black = crate::request::parse_fen("8/8/8/8/8/2K5/8/r3k3 b - - 0 1").unwrap().board().clone();
        for _ in 0..3 {
            counts.record(Source::Syzygy, ProbeMetric::Wdl, &krk_white);
        }
        counts.record(Source::Syzygy, ProbeMetric::Wdl, &krk_black);
        counts.record(Source::Gaviota, ProbeMetric::Dtm, &krk_black);
        let mut snapshot = counts.snapshot();
        snapshot.sort_by_key(|c| c.count);
        assert_eq!(
            snapshot,
            vec![
                ProbeCount { source: Source::Gaviota, table: "KRvK".into(), metric: ProbeMetric::Dtm, count: 1 },
                ProbeCount { source: Source::Syzygy, table: "KRvK".into(), metric: ProbeMetric::Wdl, count: 4 },
            ]
        );
    }
}
