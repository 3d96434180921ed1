//! Two independent generators at 5 pieces: chesstb's `KNNNK` and `KQKRB`
//! (shipping format, in the shared data) against tbserver's built-in
//! `KNNNvK` and `KRBvKQ`, generated here — WDL, DTZ, DTM and DTM50 at every
//! clock 0–99, the same comparison as `tests/chesstb_vs_builtin.rs` makes
//! at 3–4 pieces (`tests/common/two_generators.rs`).
//!
//! Quick tier: [`SAMPLE_PER_TABLE`] random positions of KNNNvK (the
//! cheaper table to generate), every clock probed as the service probes it.
//! Exhaustive tier (`TBSERVER_EXHAUSTIVE=1`): both tables, every legal
//! position of the side to move the DTM50 pack stores and 1 in 8 of the side
//! it leaves out, of the built-in indexes in `TBSERVER_EXHAUSTIVE_SHARE`
//! (all by default; CI takes a third per run, see `.ci/run`).
//!
//! Generating the two built-in tables takes minutes and several GiB, once:
//! they are kept with the other built-in test tables.

#[macro_use]
mod common;
#[path = "common/two_generators.rs"]
mod two_generators;

use std::sync::atomic::Ordering;

use chesstb_reader::{Chesstb, Kind};
use shakmaty::{Chess, Position};
use tbserver::builtin::{Material, Store};
use two_generators::{Counts, DROPPED_SIDE_SAMPLE, check_where, for_positions, to_chess};

/// The built-in table and chesstb's name of the same material.
const TABLES: [(&str, &str); 2] = [("KNNNvK", "KNNNK"), ("KRBvKQ", "KQKRB")];

/// Positions per table in the quick tier, each at all 100 clocks.
const SAMPLE_PER_TABLE: usize = 5_000;

#[test]
fn chesstb_agrees_with_builtin_tables_at_five_pieces() {
    let Some(shared) = common::shared_dir("tables/chesstb/dtm50/KQKRB.lzdtm50") else { return };
    let tb = Chesstb::open(&[shared.join("tables/chesstb")], 512 << 20);
    let dir = common::builtin_test_dir();
    let store = Store::new(dir, true).with_lazy_max_pieces(5);
    // The quick tier's sample comes from KNNNvK alone: generating KRBvKQ
    // takes minutes, and the exhaustive tier compares it.
    let tables = if common::exhaustive() { &TABLES[..] } else { &TABLES[..1] };
    let materials = common::only_named(tables.iter().map(|(b, _)| Material::parse(b).unwrap()).collect());
    let tables: Vec<(&str, &str)> =
        tables.iter().copied().filter(|(b, _)| materials.iter().any(|m| m.name() == *b)).collect();
    let s = tbserver::builtin::generate_in(&store, &tbserver::builtin::with_dependencies(&materials), &|_| {})
        .expect("generate");
    report!("built-in tables: {} tables, {} generated now, {:.1} s", s.tables, s.generated, s.secs);
    let seed = common::sample_seed();
    let share = common::share();

    // A side counts as stored where the DTM50 pack stores it (DTM50, DTM
    // and DTZ are read there directly; WDL may be rebuilt from the
    // children): chesstb's KNNNK keeps White to move in its WDL file and
    // Black to move in its pack, so "both files" would leave no side stored.
    let stored = |p: &Chess| tb.stores_side_to_move_in(p, Kind::Dtm50).expect("chesstb").expect("covered");
    let counts = Counts::default();
    let start = std::time::Instant::now();
    for (m, (builtin, theirs)) in materials.iter().zip(tables) {
        let t = store.table(m).unwrap();
        let l = &t.layout;
        assert!(
            tb.covers(&to_chess(l, &(0..l.size as u32).find_map(|i| l.decode(i)).unwrap()).unwrap()),
            "chesstb's {theirs}"
        );
        let before = counts.positions.load(Ordering::Relaxed);
        let pairs_before = counts.dtm50_pairs.load(Ordering::Relaxed);
        let t0 = std::time::Instant::now();
        for_positions(
            l,
            seed ^ m.id() as u64,
            SAMPLE_PER_TABLE,
            |_| true,
            |c| !c.is_game_over(),
            |p| check_where(&tb, &store, p, &counts, stored),
        );
        let cache = tb.cache_stats();
        report!(
            "  {builtin} vs chesstb's {theirs}: {} positions, {} DTM50 (position, clock) pairs, {:.1} s; {} disagreements so far \
             (chesstb block cache so far: {} hits, {} misses, {} evictions)",
            counts.positions.load(Ordering::Relaxed) - before,
            counts.dtm50_pairs.load(Ordering::Relaxed) - pairs_before,
            t0.elapsed().as_secs_f64(),
            counts.disagreements.lock().unwrap().len(),
            cache.hits.load(Ordering::Relaxed),
            cache.misses.load(Ordering::Relaxed),
            cache.evictions.load(Ordering::Relaxed),
        );
    }
    let positions = counts.positions.load(Ordering::Relaxed);
    report!(
        "chesstb vs built-in at 5 pieces ({}): {} positions in {:.1} s; {}; {} positions of a side to move the \
         files leave out not in the 1-in-{DROPPED_SIDE_SAMPLE} sample",
        if common::exhaustive() { format!("exhaustive, share {share}") } else { "sample".into() },
        positions,
        start.elapsed().as_secs_f64(),
        counts.agreement(),
        counts.dropped_unchecked.load(Ordering::Relaxed),
    );
    let bad = counts.disagreements.lock().unwrap();
    assert!(bad.is_empty(), "chesstb and the built-in tables disagree at 5 pieces");
    counts.assert_every_position_agreed(100);
}
