//! The order in which built-in tables are generated, and how far along they
//! are: bookkeeping only, under the store's lock. The store runs the jobs.
//!
//! Every table is generated once, by a job on the generator's own thread
//! pool, and only after every table it converts into is settled (ready or
//! failed); its lookups then never wait. Tables a request needs (`urgent`) go
//! ahead of background work, each class in generation order (fewer pieces,
//! then fewer pawns: captures and promotions only ever lead there).

use std::time::Instant;

use serde::Serialize;

use super::material::Material;

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
    /// Index positions generated, and the seconds they took, for estimates.
    measured_positions: u64,
    measured_secs: f64,
}

impl Queue {
    pub fn is_queued(&self, m: &Material) -> bool {
        self.wanted.iter().any(|w| &w.material == m) || self.running.iter().any(|r| &r.material == m)
    }

    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// Adds `m` unless it is queued already; `urgent` also moves a queued
    /// table (and, by the caller, its dependencies) ahead of background work.
    pub fn want(&mut self, m: &Material, urgent: bool) {
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

    /// Takes the first wanted table whose dependencies are all settled and
    /// marks it running. Large tables run one at a time: each uses both
    /// cores by itself, and two would need twice the memory.
    pub fn next(&mut self, settled: impl Fn(&Material) -> bool, positions: impl Fn(&Material) -> u64) -> Option<Material> {
        let large_running = self.running.iter().any(|r| r.positions > LARGE_POSITIONS);
        let i = self.wanted.iter().position(|w| {
            w.material.dependencies().iter().all(&settled) && !(large_running && positions(&w.material) > LARGE_POSITIONS)
        })?;
        let Wanted { material, .. } = self.wanted.remove(i);
        self.running.push(Running { positions: positions(&material), material: material.clone(), started: Instant::now() });
        Some(material)
    }

    /// `m` is settled; `generated_secs` when it was generated (not opened).
    pub fn finish(&mut self, m: &Material, generated_secs: Option<f64>) {
        if let Some(i) = self.running.iter().position(|r| &r.material == m) {
            let r = self.running.swap_remove(i);
            if let Some(secs) = generated_secs {
                self.measured_positions += r.positions;
                self.measured_secs += secs;
            }
        }
    }

    /// Forgets every table not yet started (shutdown).
    pub fn clear_wanted(&mut self) {
        self.wanted.clear();
    }

    fn positions_per_s(&self) -> f64 {
        if self.measured_secs > 0.5 { self.measured_positions as f64 / self.measured_secs } else { DEFAULT_POSITIONS_PER_S }
    }

    /// How far the tables `needed` (in generation order) are; `settled`
    /// says which are done.
    pub fn progress(
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
            let (state, elapsed_s) = match self.running.iter().find(|r| &r.material == m) {
                Some(r) => (TableState::Generating, Some(r.started.elapsed().as_secs_f64())),
                None => (TableState::Queued, None),
            };
            remaining_s += (estimated_s - elapsed_s.unwrap_or(0.0)).max(0.0);
            tables.push(TableProgress { material: m.name(), state, elapsed_s, estimated_s });
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
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GenerationState {
    /// It and every table it converts into can be probed.
    Ready,
    /// Queued or being generated.
    Pending,
    /// Not on disk and not asked for (a table larger than probes generate).
    NotStarted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TableState {
    Queued,
    Generating,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct TableProgress {
    pub material: String,
    pub state: TableState,
    /// Seconds since its generation started.
    pub elapsed_s: Option<f64>,
    /// Rough seconds its generation takes.
    pub estimated_s: f64,
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
        let settled = |d: &Material, done: &[Material]| !["KQvK", "KRvK"].contains(&d.name().as_str()) || done.contains(d);
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
        let size = |m: &Material| crate::builtin::index::Layout::new(m).size as u64;
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
