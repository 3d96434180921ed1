//! Generation speed of built-in tables.
//!
//! `cargo bench --bench generate`. Timings on a shared machine are noisy, so
//! a baseline workload (shakmaty perft 5 from the start position) is timed in
//! the same run: compare ratios, not absolute times.
//! The whole set (all 3–4 piece tables) is timed by `tbserver generate`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tbformat::index::Layout;
use tbgen::generate::generate;
use tbserver::builtin::{Material, Store};

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("tbserver-bench-{}", std::process::id()));
    let store = Store::new(&dir, true);
    // Dependencies of the 4-piece benchmark, generated once.
    for name in ["KQvK", "KRvK"] {
        store.table(&Material::parse(name).unwrap()).unwrap();
    }
    let never = std::sync::atomic::AtomicBool::new(false);
    let mut group = c.benchmark_group("generate");
    group.sample_size(10);
    group.bench_function("baseline_perft5", |b| b.iter(|| shakmaty::perft(black_box(&shakmaty::Chess::default()), 5)));
    for name in ["KRvK", "KQvK"] {
        let layout = Layout::new(&Material::parse(name).unwrap());
        group.bench_function(name, |b| {
            b.iter(|| {
                generate(black_box(&layout), &|board| store.lookup(board).map_err(String::from), true, &never)
                    .unwrap()
                    .legal_positions
            })
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
