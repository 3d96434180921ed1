//! The probe core on 5-piece positions: one full `/api/v1/probe` answer
//! (values, every move, JSON), against a same-run baseline of the least work
//! any server must do (one raw `shakmaty-syzygy` DTZ probe per legal move).
//!
//! Tables: `$TBSERVER_SHARED_DIR/tables` (default `../shared/tables`).
//!
//! Built-in tables (`builtin_4piece`): DTM50 at the position's clock of
//! random 4-piece positions, warm (blocks in the cache) and cold (every
//! probe decodes its block: a store whose cache holds nothing). The tables
//! are generated into the target's tmp dir on first run.

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
    let mut config = Config {
        syzygy: vec![tables_dir().join("syzygy")],
        gaviota: vec![tables_dir().join("gaviota")],
        ..Default::default()
    };
    config.builtin.mode = BuiltinMode::Off;
    let tb = tbserver::app::open_tablebases(&config);
    // Safety: the shared table files are read-only for the benchmark's lifetime.
    let mut raw = unsafe { shakmaty_syzygy::Tablebase::<Chess>::with_mmap_filesystem() };
    raw.add_directory(tables_dir().join("syzygy")).expect("syzygy tables");
    // The same through tbserver's file system: maps whose lost pages fail reads.
    let mut guarded =
        shakmaty_syzygy::Tablebase::<Chess>::with_filesystem(tbserver::sources::guarded_syzygy_filesystem());
    guarded.add_directory(tables_dir().join("syzygy")).expect("syzygy tables");
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
    group.bench_function(BenchmarkId::new("guarded_raw_dtz_per_move", positions.len()), |b| {
        b.iter(|| {
            for pos in &positions {
                for m in pos.legal_moves() {
                    let mut after = pos.clone();
                    after.play_unchecked(m);
                    std::hint::black_box(guarded.probe_dtz(&after).ok());
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

/// Random legal positions of `material` (e.g. `KRvKP`), with random clocks.
fn random_positions(material: &str, n: usize, seed: &mut u64) -> Vec<Chess> {
    use shakmaty::{CastlingMode, Color, FromSetup, Piece, Role, Setup, Square};
    let mut next = |below: u64| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed % below
    };
    let (white, black) = material.split_once('v').expect("a material");
    let pieces: Vec<Piece> = white
        .chars()
        .map(|c| (Color::White, c))
        .chain(black.chars().map(|c| (Color::Black, c)))
        .map(|(color, c)| Piece { color, role: Role::from_char(c.to_ascii_lowercase()).expect("a role") })
        .collect();
    let mut out = Vec::new();
    while out.len() < n {
        let mut setup = Setup::empty();
        for &p in &pieces {
            let mut sq = Square::new(next(64) as u32);
            while setup.board.piece_at(sq).is_some()
                || (p.role == Role::Pawn && matches!(sq.rank(), shakmaty::Rank::First | shakmaty::Rank::Eighth))
            {
                sq = Square::new(next(64) as u32);
            }
            setup.board.set_piece_at(sq, p);
        }
        setup.turn = if next(2) == 0 { Color::White } else { Color::Black };
        setup.halfmoves = next(100) as u32;
        if let Ok(pos) = Chess::from_setup(setup, CastlingMode::Standard) {
            out.push(pos);
        }
    }
    out
}

fn bench_builtin(c: &mut Criterion) {
    use tbserver::builtin::{Store, all_materials, generate_in};
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("builtin-tables");
    generate_in(&Store::new(&dir, true), &all_materials(4), &|_| {}).expect("built-in tables");
    let mut seed = 0x2545_f491_4f6c_dd1d;
    let positions: Vec<Chess> = ["KQvKR", "KRvKP", "KPvKP", "KRPvK", "KBNvK", "KQvKQ"]
        .iter()
        .flat_map(|m| random_positions(m, 200, &mut seed))
        .collect();
    // Warm: a cache that holds every block these positions need.
    let warm = Store::new(&dir, false).with_cache_mib(1024);
    for pos in &positions {
        warm.probe_dtm50(pos, pos.halfmoves()).unwrap().expect("4 pieces");
    }
    let mut group = c.benchmark_group("builtin_4piece");
    group.bench_function(BenchmarkId::new("dtm50_at_clock_warm", positions.len()), |b| {
        b.iter(|| {
            for pos in &positions {
                std::hint::black_box(warm.probe_dtm50(pos, pos.halfmoves()).unwrap());
            }
        })
    });
    // Every probe misses: the cache holds nothing, and consecutive positions
    // lie in different blocks (and tables), past the per-thread memo.
    let cold = Store::new(&dir, false).with_cache_mib(0);
    for pos in &positions {
        cold.probe_dtm50(pos, pos.halfmoves()).unwrap();
    }
    group.bench_function(BenchmarkId::new("dtm50_at_clock_cold", positions.len()), |b| {
        b.iter(|| {
            for pos in &positions {
                std::hint::black_box(cold.probe_dtm50(pos, pos.halfmoves()).unwrap());
            }
        })
    });
    // The table whose blocks take longest to decode (the most DTM50 change
    // points a block among the 3–4-piece tables): the cold-probe target
    // (docs/performance.md) must hold for each table, not on average.
    let heaviest = random_positions("KRNvK", 200, &mut seed);
    group.bench_function(BenchmarkId::new("dtm50_at_clock_cold_krnvk", heaviest.len()), |b| {
        b.iter(|| {
            for pos in &heaviest {
                std::hint::black_box(cold.probe_dtm50(pos, pos.halfmoves()).unwrap());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench, bench_builtin);
criterion_main!(benches);
