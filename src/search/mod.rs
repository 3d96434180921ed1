//! The DTM50-style bounded search (`docs/dtm50.md`): iterative deepening PVS
//! alpha-beta whose tablebase probes act like transposition-table hits of
//! infinite depth, so that every mate score it reports is sound under the
//! 50-move rule at the real half-move clock.
//!
//! Probing policy stays outside: the search asks an [`Oracle`], which the
//! service implements over its multi-source tables.

pub(crate) mod bounds;
mod cli;
mod engine;
mod exact;
mod tt;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;
use shakmaty::Chess;
use shakmaty_syzygy::{Dtz, MaybeRounded, Wdl};

pub use bounds::{Derivation, MateBound, MateSide, NoBound, mate_bound};
pub use cli::run_analyse_cli;
pub use engine::analyse;

/// The table answers the search needs. Positions handed to it are legal, not
/// terminal, have no castling rights and at most `max_pieces()` pieces.
/// Every method must be cheap and safe to call from several threads at once.
pub trait Oracle: Send + Sync {
    /// Largest piece count (kings included) for which `wdl` can answer.
    fn max_pieces(&self) -> usize;
    /// WDL50 as if the half-move clock were 0.
    fn wdl(&self, pos: &Chess) -> Option<Wdl>;
    /// DTZ50'' in plies, possibly rounded.
    fn dtz(&self, pos: &Chess) -> Option<MaybeRounded<Dtz>>;
    /// Signed plies to mate ignoring the 50-move rule (Gaviota); 0 = draw.
    fn dtm_plies(&self, _pos: &Chess) -> Option<i32> {
        None
    }
    /// Exact DTM50 at half-move clock `clock_plies` (signed plies, 0 = draw),
    /// from tables that respect the 50-move rule.
    fn dtm50_plies(&self, _pos: &Chess, _clock_plies: u32) -> Option<i32> {
        None
    }
}

/// A borrowed oracle is one too (e.g. wrapped in [`WithoutDtm50`]).
impl<O: Oracle + ?Sized> Oracle for &O {
    fn max_pieces(&self) -> usize {
        (**self).max_pieces()
    }
    fn wdl(&self, pos: &Chess) -> Option<Wdl> {
        (**self).wdl(pos)
    }
    fn dtz(&self, pos: &Chess) -> Option<MaybeRounded<Dtz>> {
        (**self).dtz(pos)
    }
    fn dtm_plies(&self, pos: &Chess) -> Option<i32> {
        (**self).dtm_plies(pos)
    }
    fn dtm50_plies(&self, pos: &Chess, clock_plies: u32) -> Option<i32> {
        (**self).dtm50_plies(pos, clock_plies)
    }
}

/// Hides DTM and DTM50 from an oracle, so that tests and benchmarks see what
/// the search proves from WDL and DTZ alone.
pub struct WithoutDtm<O>(pub O);

impl<O: Oracle> Oracle for WithoutDtm<O> {
    fn max_pieces(&self) -> usize {
        self.0.max_pieces()
    }
    fn wdl(&self, pos: &Chess) -> Option<Wdl> {
        self.0.wdl(pos)
    }
    fn dtz(&self, pos: &Chess) -> Option<MaybeRounded<Dtz>> {
        self.0.dtz(pos)
    }
}

/// Hides only DTM50, so that the search is compared with the DTM50 tables
/// as an oracle it cannot read (Gaviota and built-in DTM stay visible).
pub struct WithoutDtm50<O>(pub O);

impl<O: Oracle> Oracle for WithoutDtm50<O> {
    fn max_pieces(&self) -> usize {
        self.0.max_pieces()
    }
    fn wdl(&self, pos: &Chess) -> Option<Wdl> {
        self.0.wdl(pos)
    }
    fn dtz(&self, pos: &Chess) -> Option<MaybeRounded<Dtz>> {
        self.0.dtz(pos)
    }
    fn dtm_plies(&self, pos: &Chess) -> Option<i32> {
        self.0.dtm_plies(pos)
    }
}

/// When to stop. Unset limits are unbounded, so the caller (the HTTP layer)
/// must always cap at least one of them.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    pub movetime: Option<Duration>,
    pub nodes: Option<u64>,
    pub depth: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Search threads (lazy SMP); 1 = single-threaded.
    pub threads: usize,
    /// Transposition table size in MiB.
    pub hash_mb: usize,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions { threads: 1, hash_mb: 64 }
    }
}

/// Handle to stop a running search from another thread (client gone, shutdown).
pub(crate) type Cancel = Arc<AtomicBool>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScoreBound {
    Exact,
    /// The true distance to mate is at most `mate_in_moves`.
    AtMost,
    /// The true distance to mate is at least `mate_in_moves`.
    AtLeast,
}

/// The score from the side to move's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Score {
    /// Positive: the side to move mates in N moves; negative: it is mated.
    Mate { mate_in_moves: i32, mate_in_plies: i32, bound: ScoreBound },
    /// A draw (by the tables or the rules), nudged by the swindle rule:
    /// +35..+69 cursed win, −69..−35 blessed loss, −34..+34 other draws.
    Draw { swindle_cp: i32 },
    /// A heuristic evaluation in centipawns (positions beyond the tables).
    Cp { cp: i32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    MateProven,
    Time,
    Nodes,
    Depth,
    Cancelled,
    /// No legal move, or nothing left to search (e.g. a single tablebase draw).
    Terminal,
    /// The tables hold the exact DTM50: best move and line read off, no search.
    TableExact,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MoveText {
    pub uci: String,
    pub san: String,
}

/// One completed depth (streamed) or the final answer.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    pub best_move: Option<MoveText>,
    pub score: Score,
    pub pv: Vec<MoveText>,
    /// Last fully completed iteration, in plies.
    pub depth: u32,
    pub nodes: u64,
    pub tb_hits: u64,
    pub elapsed_ms: u64,
    /// `None` while the search is still running (per-depth events).
    pub stop: Option<StopReason>,
    /// What the tables alone prove about the root (no search).
    pub root_bound: Option<MateBound>,
}
