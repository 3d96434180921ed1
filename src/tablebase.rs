//! Probing policy: which source answers which metric.
//!
//! Sources are asked in priority order (Syzygy, Gaviota, chesstb, built-in);
//! the first that covers a position answers, except that a rounded DTZ gives
//! way to an exact one from a later source. A broken table does not stop the search for
//! an answer: the next source is asked, and the error is returned only when no
//! source could answer. A built-in table still being generated is the same:
//! another source may answer at once, otherwise the caller learns that the
//! value is pending.

use std::sync::Arc;

use shakmaty::{Chess, FromSetup, Position};
use shakmaty_syzygy::{Dtz, MaybeRounded, Wdl};

use crate::{
    domain::{Dtc, Source, Sourced},
    probe_counts::{ProbeCounts, ProbeMetric},
    search::Oracle,
    sources::{BestMove, ProbeResult, TableInfo, TableSource, Unanswered},
};

/// A DTZ50'' and, when it replaced a rounded value, the source that
/// stored it rounded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DtzFound {
    pub dtz: Sourced<MaybeRounded<Dtz>>,
    pub rounded_in: Option<Source>,
}

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

    /// Whether answering `pos` (its values and its moves') might wait for
    /// a file read, a table to open or to be generated in some source
    /// ([`TableSource::may_block`]); if not, the answer is bounded work on
    /// memory and may be computed on an async thread.
    pub fn may_block(&self, pos: &Chess) -> bool {
        self.sources.iter().any(|s| s.may_block(pos))
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

    /// DTZ50'', exact wherever some source knows it exactly: see
    /// [`Tablebases::dtz_found`].
    pub fn dtz(&self, pos: &Chess) -> ProbeResult<Sourced<MaybeRounded<Dtz>>> {
        Ok(self.dtz_found(pos)?.map(|found| found.dtz))
    }

    /// DTZ50'' from the first source that covers the position; when that
    /// value is rounded (Syzygy stores some DTZ in full moves; chesstb halves
    /// cursed ones), the exact value of a later source (built-in tables,
    /// chesstb) replaces it. Done here, once, so that every answer and every
    /// move of every endpoint (and the search) gets the exact value.
    pub(crate) fn dtz_found(&self, pos: &Chess) -> ProbeResult<DtzFound> {
        let Some(first) = self.first(ProbeMetric::Dtz, pos, |s| s.probe_dtz(pos))? else { return Ok(None) };
        let MaybeRounded::Rounded(rounded) = first.value else {
            return Ok(Some(DtzFound { dtz: first, rounded_in: None }));
        };
        Ok(Some(match self.exact_dtz(pos, first.source, rounded) {
            Some(exact) => DtzFound { dtz: exact, rounded_in: Some(first.source) },
            None => DtzFound { dtz: first, rounded_in: None },
        }))
    }

    /// An exact DTZ from a source other than `rounded_by`, if one covers the
    /// position and agrees with the rounded value (`n` or `n + 1` plies away
    /// from zero). A source that is broken, still generating or disagrees is
    /// passed over: the rounded value stands.
    fn exact_dtz(&self, pos: &Chess, rounded_by: Source, Dtz(rounded): Dtz) -> Option<Sourced<MaybeRounded<Dtz>>> {
        if pos.is_checkmate() {
            // Nothing to make exact, and the exact sources store a mate as 0
            // where Syzygy says −1: the library's value stands (lichess's too).
            return None;
        }
        for source in self.sources.iter().filter(|s| s.source() != rounded_by) {
            let Ok(Some(MaybeRounded::Precise(Dtz(exact)))) = source.probe_dtz(pos) else { continue };
            if exact == rounded || exact == rounded + rounded.signum() {
                self.probes.record(source.source(), ProbeMetric::Dtz, pos.board());
                return Some(Sourced::new(MaybeRounded::Precise(Dtz(exact)), source.source()));
            }
            tracing::warn!(
                fen = %shakmaty::fen::Epd::from_position(pos, shakmaty::EnPassantMode::Legal),
                rounded, exact, rounded_by = rounded_by.as_str(), exact_by = source.source().as_str(),
                "exact DTZ outside the rounded value's range; kept the rounded one"
            );
        }
        None
    }

    /// Signed plies to mate ignoring the 50-move rule.
    pub fn dtm_plies(&self, pos: &Chess) -> ProbeResult<Sourced<i32>> {
        self.first(ProbeMetric::Dtm, pos, |s| s.probe_dtm_plies(pos))
    }

    /// DTC at the position's clock (chesstb).
    pub fn dtc(&self, pos: &Chess) -> ProbeResult<Sourced<Dtc>> {
        self.first(ProbeMetric::Dtc, pos, |s| s.probe_dtc(pos))
    }

    /// Signed plies to mate under the 50-move rule at the position's clock.
    pub fn dtm50_plies(&self, pos: &Chess) -> ProbeResult<Sourced<i32>> {
        self.first(ProbeMetric::Dtm50, pos, |s| s.probe_dtm50_plies(pos))
    }

    /// The statistics of the table of `material` (canonical), from the first
    /// source that keeps them.
    pub(crate) fn table_stats(
        &self,
        material: &crate::builtin::Material,
    ) -> ProbeResult<Sourced<Arc<tbgen::stats::TableStats>>> {
        let mut error = None;
        for source in &self.sources {
            match source.table_stats(material) {
                Ok(Some(stats)) => return Ok(Some(Sourced::new(stats, source.source()))),
                Ok(None) => {}
                Err(err) => {
                    error.get_or_insert(err);
                }
            }
        }
        error.map_or(Ok(None), Err)
    }

    /// `shakmaty_syzygy`'s best move and the DTZ after it, from the first
    /// source that implements it and covers the position and every move.
    /// The move is the library's (chosen on the values as stored); the DTZ
    /// after it is exact where a source knows it ([`Tablebases::dtz_found`]).
    pub fn best_move(&self, pos: &Chess) -> ProbeResult<Sourced<Option<BestMove>>> {
        let Some(mut best) = self.first(ProbeMetric::Dtz, pos, |s| s.best_move(pos))? else { return Ok(None) };
        if let Some((m, MaybeRounded::Rounded(rounded))) = best.value {
            let mut after = pos.clone();
            after.play_unchecked(m);
            if let Some(exact) = self.exact_dtz(&after, best.source, rounded) {
                best.value = Some((m, exact.value));
            }
        }
        Ok(Some(best))
    }

    /// How far the built-in tables of `material` (e.g. `KPPvK`) are from
    /// ready; `None` when none is pending.
    pub(crate) fn progress(&self, material: &str) -> Option<crate::builtin::schedule::Progress> {
        self.sources.iter().find_map(|s| s.progress(material))
    }

    /// Asks for the built-in tables of `material` to be generated (`start`)
    /// or only tells how far they are; `None` without built-in tables.
    pub fn generation(
        &self,
        material: &crate::builtin::Material,
        start: bool,
    ) -> Option<
        Result<
            (crate::builtin::schedule::GenerationState, crate::builtin::schedule::Progress),
            crate::builtin::budget::Refusal,
        >,
    > {
        self.sources.iter().find_map(|s| s.generation(material, start))
    }

    /// What the built-in tables have refused or could not write; `None`
    /// without them.
    pub(crate) fn generation_counters(&self) -> Option<crate::builtin::StoreCounters> {
        self.sources.iter().find_map(|s| s.generation_counters())
    }

    /// Changes whenever a built-in table is ready; `None` without built-in tables.
    pub(crate) fn generated(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.sources.iter().find_map(|s| s.generated())
    }

    /// Stops background generation (shutdown).
    pub fn shutdown(&self) {
        for s in &self.sources {
            s.shutdown();
        }
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
