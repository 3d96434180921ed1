//! chesstb probes against the other sources, in one run so the ratios mean
//! something: a warm DTM50 probe (chesstb, built-in), a raw Syzygy WDL probe,
//! a cold chesstb probe (block decode), and the full `/api/v1/probe` answer
//! of a 4-piece position from chesstb and from the built-in tables.
//!
//! Tables: `$TBSERVER_SHARED_DIR/tables` (default `../shared/tables`); the
//! built-in tables are generated into the target's tmp dir if missing.

use std::path::PathBuf;

use chesstb_reader::Chesstb;
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position, fen::Fen};
use tbserver::{
    builtin::Store,
    config::{BuiltinMode, Config},
    probe::{self, MoveOrder},
};

fn shared() -> PathBuf {
    std::env::var_os("TBSERVER_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

/// Every 7th reference position without an en-passant right (300).
fn positions() -> Vec<Chess> {
    let text =
        std::fs::read_to_string(shared().join("reference/chesstb-positions.jsonl")).expect("reference positions");
    text.lines()
        .step_by(7)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["fen"].as_str().unwrap().parse::<Fen>().unwrap()
        })
        .filter_map(|f| f.into_position(CastlingMode::Standard).ok())
        .filter(|p: &Chess| p.ep_square(EnPassantMode::Legal).is_none())
        .collect()
}

fn bench(c: &mut Criterion) {
    let tables = shared().join("tables");
    let tb = Chesstb::open(&[tables.join("chesstb")], 512 << 20);
    // The same tables with no rebuilt answers kept: every probe of a side
    // to move the files leave out searches its children again.
    let searching = Chesstb::open_with_caches(&[tables.join("chesstb")], 448 << 20, 0);
    let store = Store::new(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("builtin-tables"), true);
    tbserver::builtin::generate_in(&store, &tbserver::builtin::all_materials(4), &|_| {}).expect("built-in tables");
    // SAFETY: the shared table files are read-only for the benchmark's lifetime.
    let mut syzygy = unsafe { shakmaty_syzygy::Tablebase::<Chess>::with_mmap_filesystem() };
    syzygy.add_directory(tables.join("syzygy")).expect("syzygy tables");
    let positions = positions();
    for pos in &positions {
        tb.probe(pos, Some(pos.halfmoves())).unwrap().expect("covered");
        searching.probe(pos, Some(pos.halfmoves())).unwrap().expect("covered");
        store.probe_dtm50(pos, pos.halfmoves()).unwrap().expect("covered");
        syzygy.probe_wdl_after_zeroing(pos).unwrap();
    }
    let n = positions.len();

    let mut group = c.benchmark_group("chesstb_warm");
    group.sample_size(20);
    group.bench_function(BenchmarkId::new("chesstb_dtm50_at_clock", n), |b| {
        b.iter(|| {
            for pos in &positions {
                std::hint::black_box(tb.probe(pos, Some(pos.halfmoves())).unwrap());
            }
        })
    });
    group.bench_function(BenchmarkId::new("chesstb_dtm50_at_clock_no_rebuilt_cache", n), |b| {
        b.iter(|| {
            for pos in &positions {
                std::hint::black_box(searching.probe(pos, Some(pos.halfmoves())).unwrap());
            }
        })
    });
    group.bench_function(BenchmarkId::new("chesstb_wdl", n), |b| {
        b.iter(|| {
            for pos in &positions {
                std::hint::black_box(tb.probe_wdl(pos).unwrap());
            }
        })
    });
    group.bench_function(BenchmarkId::new("builtin_dtm50_at_clock", n), |b| {
        b.iter(|| {
            for pos in &positions {
                std::hint::black_box(store.probe_dtm50(pos, pos.halfmoves()).unwrap());
            }
        })
    });
    group.bench_function(BenchmarkId::new("syzygy_wdl", n), |b| {
        b.iter(|| {
            for pos in &positions {
                std::hint::black_box(syzygy.probe_wdl_after_zeroing(pos).unwrap());
            }
        })
    });
    group.finish();

    // A stored DTM50 frame (KQKR, white to move): one LZ4 WDL block and one
    // LZMA pack block of a million positions decoded from a cold cache.
    let cold_pos: Chess =
        "8/8/8/4k3/8/8/8/KQ5r w - - 0 1".parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap();
    let mut group = c.benchmark_group("chesstb_cold");
    group.sample_size(10);
    group.bench_function("probe_with_block_decode", |b| {
        b.iter_batched(
            || Chesstb::open(&[tables.join("chesstb")], 64 << 20),
            |fresh| std::hint::black_box(fresh.probe(&cold_pos, Some(0)).unwrap()),
            BatchSize::PerIteration,
        )
    });
    group.finish();

    let answer_from = |chesstb: bool| {
        let mut config = Config::default();
        config.builtin.mode = if chesstb { BuiltinMode::Off } else { BuiltinMode::Lazy };
        config.builtin.dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("builtin-tables");
        if chesstb {
            config.chesstb = vec![tables.join("chesstb")];
        }
        tbserver::app::open_tablebases(&config)
    };
    let (from_chesstb, from_builtin) = (answer_from(true), answer_from(false));
    let full: Vec<Chess> = positions.iter().take(50).cloned().collect();
    for pos in &full {
        probe::probe(&from_chesstb, pos, MoveOrder::Dtm50First).unwrap();
        probe::probe(&from_builtin, pos, MoveOrder::Dtm50First).unwrap();
    }
    let mut group = c.benchmark_group("full_answer_4piece");
    group.sample_size(10);
    for (name, tbs) in [("chesstb", &from_chesstb), ("builtin", &from_builtin)] {
        group.bench_function(BenchmarkId::new(name, full.len()), |b| {
            b.iter(|| {
                for pos in &full {
                    let answer = probe::probe(tbs, pos, MoveOrder::Dtm50First).unwrap();
                    std::hint::black_box(serde_json::to_vec(&answer).unwrap());
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
