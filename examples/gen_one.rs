//! Generates one built-in table (and, first, what it depends on) and times it:
//! `cargo run --release --example gen_one -- KQvKR /tmp/tables [RUNS]`.

use std::time::Instant;

use tbformat::index::Layout;
use tbgen::generate::generate;
use tbserver::builtin::{Material, Store};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "KRvK".into());
    let dir = args.next().unwrap_or_else(|| std::env::temp_dir().join("tbserver-gen-one").display().to_string());
    let material = Material::parse(&name).expect("material like KQvKR").canonical();
    let store = Store::new(&dir, true);
    let layout = Layout::new(&material);
    // Open or generate the dependencies through the store, then time the table itself.
    for d in material.dependencies() {
        store.table(&d).expect("dependency");
    }
    let lookup = |b: &_| store.lookup(b).map_err(String::from);
    let never = std::sync::atomic::AtomicBool::new(false);
    let warm = generate(&layout, &lookup, true, &never).expect("generate");
    let runs: u32 = args.next().map_or(5, |r| r.parse().expect("RUNS is a number"));
    let start = Instant::now();
    let mut phases = tbgen::generate::PhaseSecs::default();
    for _ in 0..runs {
        phases += std::hint::black_box(generate(&layout, &lookup, true, &never).expect("generate")).secs;
    }
    let secs = start.elapsed().as_secs_f64() / f64::from(runs);
    let per_run = |s: f64| s / f64::from(runs) * 1e3;
    // Baseline in the same run (timings on a shared machine are noisy):
    // shakmaty perft 5.
    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(shakmaty::perft(&shakmaty::Chess::default(), 5));
    }
    let base = start.elapsed().as_secs_f64() / f64::from(runs);
    println!(
        "{}: {} legal positions, {:.1} ms per generation (exits {:.1} ms, then DTZ50'' {:.1} ms beside DTM50 {:.1} ms); \
         baseline perft(5) {:.1} ms; ratio {:.2}",
        material.name(),
        warm.legal_positions,
        secs * 1e3,
        per_run(phases.exits),
        per_run(phases.dtz),
        per_run(phases.dtm50),
        base * 1e3,
        secs / base
    );
}
