//! The order in which built-in tables are generated, and how far along they
//! are: bookkeeping only, under the store's lock. The store runs the jobs.
//!
//! Every table is generated once, by a job on the generator's own thread
//! pool, and only after every table it converts into is settled (ready or
//! failed); its lookups then never wait. Tables a request needs (`urgent`) go
//! ahead of background work, each class in generation order (fewer pieces,
//! then fewer pawns: captures and promotions only ever lead there).

use std::time::{Duration, Instant};

use serde::Serialize;

use super::budget::Refusal;
use tbformat::material::Material;

/// Why a table cannot be read now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// Queued or being generated: ask again later.
    #[error("built-in table {0} is being generated")]
    Generating(String),
    /// A table larger than the store generates unasked, not generated yet
    /// (see `Store::with_lazy_max_pieces`).
    #[error("built-in table {0} has not been generated")]
    NotGenerated(String),
    /// Not started, or not kept: it would not fit in this process's memory
    /// or disk budget.
    #[error("{0}")]
    Refused(Refusal),
    #[error("{0}")]
    Failed(String),
}

impl From<Unavailable> for String {
    fn from(u: Unavailable) -> String {
        u.to_string()
    }
}

/// A table whose last attempt failed. Not final: a request for it after
/// [`RETRY_AFTER`] (or a request by name at any time) tries again, so that
/// freeing disk space or memory is all an operator has to do.
struct Failed {
    material: Material,
    why: Unavailable,
    at: Instant,
}

/// How long a failure is answered from memory before a lookup that needs
/// the table tries again. Budget refusals are checked before any work, so
/// a retry whose conditions have not changed costs next to nothing.
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// A table waiting to be generated.
struct Wanted {
    material: Material,
    urgent: bool,
}

/// A table being generated (or opened) now.
struct Running {
    material: Material,
    positions: u64,
    started: Instant,
}

/// Positions per second assumed before this process has measured its own
/// rate (2 cores, DTM50 included, two tables at once).
const DEFAULT_POSITIONS_PER_S: f64 = 4.0e6;

/// Index positions above which a table is generated alone (every table of
/// 5 pieces has 335 million or more; those of 4 at most 9.4 million).
const LARGE_POSITIONS: u64 = 64 << 20;

#[derive(Default)]
pub(super) struct Queue {
    wanted: Vec<Wanted>,
    running: Vec<Running>,
    failed: Vec<Failed>,
    /// Tables asked for by name (`POST /api/v1/tables/generate`) and not
    /// settled yet: what `builtin.max_queued_tables` bounds.
    requested: Vec<Material>,
    /// Index positions generated, and the seconds they took, for estimates.
    measured_positions: u64,
    measured_secs: f64,
}

impl Queue {
    pub(crate) fn is_queued(&self, m: &Material) -> bool {
        self.wanted.iter().any(|w| &w.material == m) || self.running.iter().any(|r| &r.material == m)
    }

    pub(crate) fn running(&self) -> usize {
        self.running.len()
    }

    /// The tables being generated (or opened) now.
    pub(crate) fn running_materials(&self) -> impl Iterator<Item = &Material> {
        self.running.iter().map(|r| &r.material)
    }

    /// Records that `m` failed (replacing an earlier failure).
    pub(crate) fn fail(&mut self, m: &Material, why: Unavailable) {
        self.forget_failure(m);
        self.failed.push(Failed { material: m.clone(), why, at: Instant::now() });
    }

    /// Why `m` failed last, and how long ago.
    pub(crate) fn failure(&self, m: &Material) -> Option<(&Unavailable, Duration)> {
        self.failed.iter().find(|f| &f.material == m).map(|f| (&f.why, f.at.elapsed()))
    }

    /// `m`'s failure if it is younger than [`RETRY_AFTER`]; an older one is
    /// forgotten, so that `m` may be tried again.
    pub(crate) fn fresh_failure(&mut self, m: &Material) -> Option<&Unavailable> {
        if self.failure(m).is_some_and(|(_, age)| age >= RETRY_AFTER) {
            self.forget_failure(m);
        }
        self.failure(m).map(|(why, _)| why)
    }

    pub(crate) fn forget_failure(&mut self, m: &Material) {
        self.failed.retain(|f| &f.material != m);
    }

    /// Every table whose last attempt failed, with why.
    pub(crate) fn failures(&self) -> impl Iterator<Item = (&Material, &Unavailable)> {
        self.failed.iter().map(|f| (&f.material, &f.why))
    }

    /// Tables asked for by name and not settled (`done` says which are
    /// ready), after forgetting those that are settled.
    pub(crate) fn requested(&mut self, done: impl Fn(&Material) -> bool) -> &mut Vec<Material> {
        let failed = &self.failed;
        self.requested.retain(|m| !done(m) && !failed.iter().any(|f| &f.material == m));
        &mut self.requested
    }

    /// Adds `m` unless it is queued already; `urgent` also moves a queued
    /// table (and, by the caller, its dependencies) ahead of background work.
    pub(crate) fn want(&mut self, m: &Material, urgent: bool) {
        if self.running.iter().any(|r| &r.material == m) {
            return;
        }
        match self.wanted.iter_mut().find(|w| &w.material == m) {
            Some(w) => w.urgent |= urgent,
            None => self.wanted.push(Wanted { material: m.clone(), urgent }),
        }
        // Stable: equal keys keep their order of arrival.
        self.wanted.sort_by_key(|w| (!w.urgent, w.material.pieces(), w.material.pawns()));
    }

    /// Takes the first wanted table whose dependencies are all settled
    /// (ready, or failed: it then fails at once) and marks it running. Large tables run one at a time: each uses both
    /// cores by itself, and two would need twice the memory.
    pub(crate) fn next(
        &mut self,
        settled: impl Fn(&Material) -> bool,
        positions: impl Fn(&Material) -> u64,
    ) -> Option<Material> {
        let large_running = self.running.iter().any(|r| r.positions > LARGE_POSITIONS);
        let i = self.wanted.iter().position(|w| {
            w.material.dependencies().iter().all(|d| settled(d) || self.failure(d).is_some())
                && !(large_running && positions(&w.material) > LARGE_POSITIONS)
        })?;
        let Wanted { material, .. } = self.wanted.remove(i);
        self.running.push(Running {
            positions: positions(&material),
            material: material.clone(),
            started: Instant::now(),
        });
        Some(material)
    }

    /// `m` is settled; `generated_secs` when it was generated (not opened).
    pub(crate) fn finish(&mut self, m: &Material, generated_secs: Option<f64>) {
        if let Some(i) = self.running.iter().position(|r| &r.material == m) {
            let r = self.running.swap_remove(i);
            if let Some(secs) = generated_secs {
                self.measured_positions += r.positions;
                self.measured_secs += secs;
            }
        }
    }

    /// Forgets every table not yet started (shutdown).
    pub(crate) fn clear_wanted(&mut self) {
        self.wanted.clear();
    }

    fn positions_per_s(&self) -> f64 {
        if self.measured_secs > 0.5 {
            self.measured_positions as f64 / self.measured_secs
        } else {
            DEFAULT_POSITIONS_PER_S
        }
    }

    /// How far the tables `needed` (in generation order) are; `settled`
    /// says which are done.
    pub(crate) fn progress(
        &self,
        material: &Material,
        needed: &[Material],
        settled: impl Fn(&Material) -> bool,
        positions: impl Fn(&Material) -> u64,
    ) -> Progress {
        let rate = self.positions_per_s();
        let mut tables = Vec::new();
        let mut remaining_s = 0.0;
        for m in needed.iter().filter(|m| !settled(m)) {
            let estimated_s = positions(m) as f64 / rate;
            let running = self.running.iter().find(|r| &r.material == m);
            let failure = self.failure(m).filter(|_| running.is_none() && !self.is_queued(m));
            let (state, elapsed_s) = match (running, failure) {
                (Some(r), _) => (TableState::Generating, Some(r.started.elapsed().as_secs_f64())),
                (None, Some(_)) => (TableState::Failed, None),
                (None, None) => (TableState::Queued, None),
            };
            if failure.is_none() {
                remaining_s += (estimated_s - elapsed_s.unwrap_or(0.0)).max(0.0);
            }
            let error = failure.map(|(why, _)| why.to_string());
            tables.push(TableProgress { material: m.name(), state, elapsed_s, estimated_s, error });
        }
        // Two tables run at once on two cores; the sum is an upper estimate.
        Progress {
            material: material.name(),
            tables_needed: needed.len(),
            tables_ready: needed.len() - tables.len(),
            estimated_remaining_s: remaining_s,
            tables,
        }
    }
}

/// How far the built-in tables a position needs are from ready.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    /// The table the position is in, e.g. `KPPvK`.
    pub material: String,
    /// Tables needed: that table and every table it converts into.
    pub tables_needed: usize,
    pub tables_ready: usize,
    /// Rough seconds until all are ready, from this process's measured rate.
    pub estimated_remaining_s: f64,
    /// The tables not ready yet, in generation order.
    pub tables: Vec<TableProgress>,
}

impl Progress {
    /// Nothing left to generate (the tables became ready meanwhile).
    pub fn ready(material: String) -> Progress {
        Progress { material, tables_needed: 0, tables_ready: 0, estimated_remaining_s: 0.0, tables: Vec::new() }
    }
}

/// Where the tables of one material stand, as `/api/v1/tables/generate`
/// tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GenerationState {
    /// It and every table it converts into can be probed.
    Ready,
    /// Queued or being generated.
    Pending,
    /// Not on disk and not asked for (a table larger than probes generate).
    NotStarted,
    /// Its last attempt, or that of a table it converts into, failed (see
    /// each table's `error`); asking again retries.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TableState {
    Queued,
    Generating,
    /// The last attempt failed (`error` says why); not retried until asked.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableProgress {
    pub material: String,
    pub state: TableState,
    /// Seconds since its generation started.
    pub elapsed_s: Option<f64>,
    /// Rough seconds its generation takes.
    pub estimated_s: f64,
    /// Why the last attempt failed (state `failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str) -> Material {
        Material::parse(name).unwrap()
    }

    #[test]
    fn urgent_tables_go_first_and_dependencies_before_their_tables() {
        let mut q = Queue::default();
        for name in ["KQvK", "KRvK", "KPvK"] {
            q.want(&m(name), false);
        }
        q.want(&m("KRvK"), true);
        let mut done: Vec<Material> = Vec::new();
        // KPvK needs KQvK and KRvK (and KBvK, KNvK: wanted by nobody, so
        // settled as far as the test is concerned).
        let settled =
            |d: &Material, done: &[Material]| !["KQvK", "KRvK"].contains(&d.name().as_str()) || done.contains(d);
        let mut order = Vec::new();
        while let Some(next) = q.next(|d| settled(d, &done), |_| 1000) {
            q.finish(&next, Some(0.001));
            order.push(next.name());
            done.push(next);
        }
        assert_eq!(order, ["KRvK", "KQvK", "KPvK"]);
        assert!(!q.is_queued(&m("KPvK")));
    }

    #[test]
    fn large_tables_run_one_at_a_time() {
        let mut q = Queue::default();
        for name in ["KRBvKQ", "KNNvKN", "KQvK"] {
            q.want(&m(name), false);
        }
        let size = |m: &Material| tbformat::index::Layout::new(m).size as u64;
        let first = q.next(|_| true, size).unwrap();
        assert_eq!(first.name(), "KQvK", "fewer pieces first");
        let second = q.next(|_| true, size).unwrap();
        assert_eq!(second.pieces(), 5);
        assert!(q.next(|_| true, size).is_none(), "a second table of 5 pieces waits");
        q.finish(&second, Some(60.0));
        assert_eq!(q.next(|_| true, size).unwrap().pieces(), 5);
    }

    #[test]
    fn a_table_waits_for_its_dependencies() {
        let mut q = Queue::default();
        q.want(&m("KPvK"), true);
        // KQvK is not settled: nothing can start.
        assert!(q.next(|d| d.name() != "KQvK", |_| 1).is_none());
        let p = q.progress(&m("KPvK"), &[m("KQvK"), m("KPvK")], |d| d.name() == "KRvK", |_| 4_000_000);
        assert_eq!((p.tables_needed, p.tables_ready, p.tables.len()), (2, 0, 2));
        assert_eq!(p.tables[0].state, TableState::Queued);
        assert!((p.estimated_remaining_s - 2.0).abs() < 1e-9, "{}", p.estimated_remaining_s);
    }
}
