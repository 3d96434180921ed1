//! The probe core on 5-piece positions: one full `/api/v1/probe` answer
//! (values, every move, JSON), against a same-run baseline of the least work
//! any server must do (one raw `shakmaty-syzygy` DTZ probe per legal move).
//!
//! Tables: `$TBSERVER_SHARED_DIR/tables` (default `../shared/tables`).

use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use shakmaty::{Chess, Position};
use tbserver::{
    config::{BuiltinMode, Config},
    probe::{self, MoveOrder},
    request::parse_fen,
};

fn tables_dir() -> PathBuf {
    std::env::var_os("TBSERVER_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
        .join("tables")
}

fn positions() -> Vec<Chess> {
    include_str!("../bench/fens-5piece.txt").lines().map(|fen| parse_fen(fen).expect("valid bench FEN")).collect()
}

fn bench(c: &mut Criterion) {
    let mut config = Config::default();
    config.syzygy = vec![tables_dir().join("syzygy")];
    config.gaviota = vec![tables_dir().join("gaviota")];
    config.builtin.mode = BuiltinMode::Off;
    let tb = tbserver::app::open_tablebases(&config);
    // Safety: the shared table files are read-only for the benchmark's lifetime.
    let mut raw = unsafe { shakmaty_syzygy::Tablebase::<Chess>::with_mmap_filesystem() };
    raw.add_directory(tables_dir().join("syzygy")).expect("syzygy tables");
    let positions = positions();
    // Warm the page cache and the lazily opened tables.
    for pos in &positions {
        probe::probe(&tb, pos, MoveOrder::Dtm50First).expect("bench positions are covered");
    }

    let mut group = c.benchmark_group("probe_5piece");
    group.bench_function(BenchmarkId::new("baseline_raw_dtz_per_move", positions.len()), |b| {
        b.iter(|| {
            for pos in &positions {
                for m in pos.legal_moves() {
                    let mut after = pos.clone();
                    after.play_unchecked(m);
                    std::hint::black_box(raw.probe_dtz(&after).ok());
                }
            }
        })
    });
    group.bench_function(BenchmarkId::new("full_answer_json", positions.len()), |b| {
        b.iter(|| {
            for pos in &positions {
                let answer = probe::probe(&tb, pos, MoveOrder::Dtm50First).unwrap();
                std::hint::black_box(serde_json::to_vec(&answer).unwrap());
            }
        })
    });
    group.bench_function(BenchmarkId::new("wdl_root", positions.len()), |b| {
        b.iter(|| {
            for pos in &positions {
                std::hint::black_box(tb.wdl(pos).unwrap());
            }
        })
    });
    group.bench_function(BenchmarkId::new("dtz_root", positions.len()), |b| {
        b.iter(|| {
            for pos in &positions {
                std::hint::black_box(tb.dtz(pos).unwrap());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
