//! Probing policy: which source answers which metric.
//!
//! Sources are asked in priority order (Syzygy, Gaviota, built-in); the first
//! that covers a position answers. A broken table does not stop the search for
//! an answer: the next source is asked, and the error is returned only when no
//! source could answer. A built-in table still being generated is the same:
//! another source may answer at once, otherwise the caller learns that the
//! value is pending.

use std::sync::Arc;

use shakmaty::{Chess, FromSetup, Move, Position};
use shakmaty_syzygy::{Dtz, MaybeRounded, Wdl};

use crate::{
    domain::{Source, Sourced},
    probe_counts::{ProbeCounts, ProbeMetric},
    search::Oracle,
    sources::{ProbeResult, TableInfo, TableSource, Unanswered},
};

pub struct Tablebases {
    /// In priority order.
    sources: Vec<Arc<dyn TableSource>>,
    /// Answered probes by source, table and metric (for `/prometheus`).
    pub probes: ProbeCounts,
}

impl Tablebases {
    pub fn new(sources: Vec<Arc<dyn TableSource>>) -> Tablebases {
        Tablebases { sources, probes: ProbeCounts::default() }
    }

    /// Most pieces any source covers.
    pub fn max_pieces(&self) -> usize {
        self.sources.iter().map(|s| s.max_pieces()).max().unwrap_or(0)
    }

    pub fn sources(&self) -> impl Iterator<Item = Source> + '_ {
        self.sources.iter().map(|s| s.source())
    }

    /// The sources themselves, in priority order.
    pub fn source_handles(&self) -> impl Iterator<Item = &Arc<dyn TableSource>> {
        self.sources.iter()
    }

    pub fn tables(&self) -> Vec<TableInfo> {
        self.sources.iter().flat_map(|s| s.tables()).collect()
    }

    fn first<T>(
        &self,
        metric: ProbeMetric,
        pos: &Chess,
        probe: impl Fn(&dyn TableSource) -> ProbeResult<T>,
    ) -> ProbeResult<Sourced<T>> {
        // No table holds positions with castling rights; sources are never
        // asked about them (lichess-compatible answers reach here with them).
        if pos.castles().any() {
            return Ok(None);
        }
        let mut error: Option<Unanswered> = None;
        for source in &self.sources {
            match probe(source.as_ref()) {
                Ok(Some(value)) => {
                    self.probes.record(source.source(), metric, pos.board());
                    return Ok(Some(Sourced::new(value, source.source())));
                }
                Ok(None) => {}
                Err(err) => {
                    error.get_or_insert(err);
                }
            }
        }
        error.map_or(Ok(None), Err)
    }

    /// WDL50 at half-move clock 0.
    pub fn wdl(&self, pos: &Chess) -> ProbeResult<Sourced<Wdl>> {
        self.first(ProbeMetric::Wdl, pos, |s| s.probe_wdl(pos))
    }

    pub fn dtz(&self, pos: &Chess) -> ProbeResult<Sourced<MaybeRounded<Dtz>>> {
        self.first(ProbeMetric::Dtz, pos, |s| s.probe_dtz(pos))
    }

    /// Signed plies to mate ignoring the 50-move rule.
    pub fn dtm_plies(&self, pos: &Chess) -> ProbeResult<Sourced<i32>> {
        self.first(ProbeMetric::Dtm, pos, |s| s.probe_dtm_plies(pos))
    }

    /// Signed plies to mate under the 50-move rule at the position's clock.
    pub fn dtm50_plies(&self, pos: &Chess) -> ProbeResult<Sourced<i32>> {
        self.first(ProbeMetric::Dtm50, pos, |s| s.probe_dtm50_plies(pos))
    }

    /// `shakmaty_syzygy`'s best move and the DTZ after it, from the first
    /// source that implements it and covers the position and every move.
    pub fn best_move(&self, pos: &Chess) -> ProbeResult<Sourced<Option<(Move, MaybeRounded<Dtz>)>>> {
        self.first(ProbeMetric::Dtz, pos, |s| s.best_move(pos))
    }

    /// How far the built-in tables of `material` (e.g. `KPPvK`) are from
    /// ready; `None` when none is pending.
    pub fn progress(&self, material: &str) -> Option<crate::builtin::schedule::Progress> {
        self.sources.iter().find_map(|s| s.progress(material))
    }

    /// Changes whenever a built-in table is ready; `None` without built-in tables.
    pub fn generated(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.sources.iter().find_map(|s| s.generated())
    }

    /// Stops background generation (shutdown).
    pub fn shutdown(&self) {
        for s in &self.sources {
            s.shutdown();
        }
    }

    /// Whether some source could in principle hold this position.
    pub fn within_piece_limit(&self, pos: &Chess) -> bool {
        pos.board().occupied().count() <= self.max_pieces()
    }
}

/// The search asks the same policy: a broken table is "no answer", so the
/// search goes on without it.
impl Oracle for Tablebases {
    fn max_pieces(&self) -> usize {
        Tablebases::max_pieces(self)
    }
    fn wdl(&self, pos: &Chess) -> Option<Wdl> {
        Tablebases::wdl(self, pos).ok().flatten().map(|s| s.value)
    }
    fn dtz(&self, pos: &Chess) -> Option<MaybeRounded<Dtz>> {
        Tablebases::dtz(self, pos).ok().flatten().map(|s| s.value)
    }
    fn dtm_plies(&self, pos: &Chess) -> Option<i32> {
        Tablebases::dtm_plies(self, pos).ok().flatten().map(|s| s.value)
    }
    fn dtm50_plies(&self, pos: &Chess, clock_plies: u32) -> Option<i32> {
        if clock_plies != pos.halfmoves() {
            // The search asks about its own clocks; the position carries one.
            let mut setup = pos.to_setup(shakmaty::EnPassantMode::Legal);
            setup.halfmoves = clock_plies;
            let at_clock = Chess::from_setup(setup, shakmaty::CastlingMode::Standard)
                .or_else(shakmaty::PositionError::ignore_impossible_check)
                .ok()?;
            return Tablebases::dtm50_plies(self, &at_clock).ok().flatten().map(|s| s.value);
        }
        Tablebases::dtm50_plies(self, pos).ok().flatten().map(|s| s.value)
    }
}
