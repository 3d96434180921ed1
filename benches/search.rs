//! Search speed with table probes enabled, and time to an exact mate.
//!
//! Run: `cargo bench --bench search` (tables from `../shared` or
//! `$TBSERVER_SHARED_DIR`). The same-run baseline is raw legal move generation
//! plus make-move over the same positions, so the nps figure can be read as a
//! ratio on a noisy machine.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, Position};
use tbserver::search::{Limits, Score, SearchOptions, WithoutDtm, analyse};
use tbserver::tablebase::Tablebases;

fn shared() -> PathBuf {
    std::env::var_os("TBSERVER_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

fn pos(fen: &str) -> Chess {
    fen.parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap()
}

/// 5-piece table positions: every node is a table position, probed as the
/// search's policy says (all but quiet horizon nodes).
const NPS_POSITIONS: &[&str] = &[
    "8/8/4k3/8/2R5/3P4/5r2/4K3 w - - 0 1", // KRPvKR
    "8/2k5/8/3r4/8/1B6/8/R3K3 w - - 0 1",  // KRBvKR
    "8/8/2k5/8/8/5r2/8/R2RK3 w - - 0 1",   // KRRvKR
    "8/8/3k4/8/8/3q4/1N6/3QK3 w - - 0 1",  // KQNvKQ
    "6k1/8/8/8/3n4/8/1N1N4/4K3 w - - 0 1", // KNNvKN
];

/// Positions with a known short mate, searched until the mate is proven exact
/// with Syzygy only (no DTM table), so the search itself has to find it.
const MATE_POSITIONS: &[&str] = &[
    "k7/8/2K5/8/8/8/8/7R w - - 0 1",       // KRvK
    "7k/8/5K2/8/8/8/8/Q7 w - - 0 1",       // KQvK
    "3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1",    // KBNvK, DTZ 24: exact by DTZ + parity
    "8/8/8/8/8/2k5/8/K1q5 w - - 0 1",      // KvKQ, being mated
    "6k1/5R2/6K1/8/8/8/3r4/5B2 w - - 0 1", // KRBvKR
];

fn usable(t: &Tablebases, fen: &str) -> Option<Chess> {
    use tbserver::search::Oracle;
    let p = pos(fen);
    (p.board().occupied().count() <= t.max_pieces() && Oracle::wdl(t, &p).is_some()).then_some(p)
}

fn movegen_nodes(p: &Chess, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut n = 0;
    for m in p.legal_moves() {
        let mut c = p.clone();
        c.play_unchecked(m);
        n += movegen_nodes(&c, depth - 1);
    }
    n
}

fn bench(c: &mut Criterion) {
    let dir = shared();
    let tables = tbserver::app::open_table_dirs(&[dir.join("tables/syzygy")], &[dir.join("tables/gaviota")]);
    let positions: Vec<Chess> = NPS_POSITIONS.iter().filter_map(|f| usable(&tables, f)).collect();
    let opts = SearchOptions { threads: 1, hash_mb: 64 };
    let limits = Limits { depth: Some(7), ..Default::default() };
    let cancel = Arc::new(AtomicBool::new(false));

    // Node counts are deterministic single-threaded: measure once for throughput.
    let mut nodes = 0;
    let t0 = Instant::now();
    for p in &positions {
        nodes += analyse(p, &tables, &limits, &opts, &cancel, &mut |_| {}).nodes;
    }
    let secs = t0.elapsed().as_secs_f64();
    let mg_depth = 3;
    let t1 = Instant::now();
    let mg: u64 = positions.iter().map(|p| movegen_nodes(p, mg_depth)).sum();
    let mg_secs = t1.elapsed().as_secs_f64();
    println!(
        "search: {} positions, {nodes} nodes in {secs:.3}s = {:.0} nps; movegen baseline {:.0} nps; ratio {:.3}",
        positions.len(),
        nodes as f64 / secs,
        mg as f64 / mg_secs,
        (nodes as f64 / secs) / (mg as f64 / mg_secs)
    );

    let mut g = c.benchmark_group("search");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(nodes));
    g.bench_function("5-piece depth 7, probes on", |b| {
        b.iter(|| {
            for p in &positions {
                black_box(analyse(p, &tables, &limits, &opts, &cancel, &mut |_| {}));
            }
        })
    });
    g.throughput(Throughput::Elements(mg));
    g.bench_function("baseline movegen perft 3", |b| {
        b.iter(|| positions.iter().map(|p| movegen_nodes(p, mg_depth)).sum::<u64>())
    });
    g.finish();

    let syzygy_only = WithoutDtm(tbserver::app::open_table_dirs(&[dir.join("tables/syzygy")], &[]));
    let mut g = c.benchmark_group("time_to_exact_mate");
    g.sample_size(10);
    for fen in MATE_POSITIONS {
        let p = pos(fen);
        let limits = Limits { depth: Some(40), movetime: Some(Duration::from_secs(20)), ..Default::default() };
        let r = analyse(&p, &syzygy_only, &limits, &opts, &cancel, &mut |_| {});
        println!("{fen}: {:?} depth {} nodes {} {} ms stop {:?}", r.score, r.depth, r.nodes, r.elapsed_ms, r.stop);
        assert!(matches!(r.score, Score::Mate { .. }), "{fen}");
        g.bench_function(*fen, |b| {
            b.iter(|| black_box(analyse(&p, &syzygy_only, &limits, &opts, &cancel, &mut |_| {})))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
