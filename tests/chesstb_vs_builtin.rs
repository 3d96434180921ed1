//! Two independent generators: chesstb's tables (shipping format, read by
//! `chesstb_reader`) against tbserver's built-in tables — WDL, DTM and
//! DTM50 at every clock 0–99. A random sample of every material by default;
//! with `TBSERVER_EXHAUSTIVE=1`, every legal position of the side to move
//! the files store and 1 in [`DROPPED_SIDE_SAMPLE`] of the side they leave
//! out (see there why).
//!
//! Run in release mode: `cargo test --release --test chesstb_vs_builtin`.

#[macro_use]
mod common;
#[path = "common/two_generators.rs"]
mod two_generators;

use std::sync::atomic::Ordering;

use chesstb_reader::Chesstb;
use rayon::prelude::*;
use shakmaty::{Board, CastlingMode, Chess, FromSetup, Piece, Position, PositionError, Setup, Square};
use tbserver::builtin::{Store, all_materials};
use two_generators::{Counts, DROPPED_SIDE_SAMPLE, check};

/// Positions per material in the sample (each checked at 100 clocks).
const SAMPLE_PER_MATERIAL: usize = 80;

use common::exhaustive;

fn chess(board: Board, turn: shakmaty::Color) -> Option<Chess> {
    let mut setup = Setup::empty();
    setup.board = board;
    setup.turn = turn;
    Chess::from_setup(setup, CastlingMode::Standard).or_else(PositionError::ignore_impossible_check).ok()
}

#[test]
fn chesstb_agrees_with_builtin_tables() {
    let Some(shared) = common::shared_dir("tables/chesstb") else { return };
    let tb = Chesstb::open(&[shared.join("tables/chesstb")], 512 << 20);
    let dir = common::builtin_test_dir();
    let store = Store::new(dir, true);
    let s = tbserver::builtin::generate_in(&store, &tbserver::builtin::all_materials(4), &|_| {}).expect("generate");
    report!("built-in tables: {} tables, {} generated now, {:.1} s", s.tables, s.generated, s.secs);

    let counts = Counts::default();
    let start = std::time::Instant::now();
    let materials = common::only_named(all_materials(4));
    let share = common::share();
    for m in &materials {
        let t = store.table(m).unwrap();
        let l = &t.layout;
        let positions: Vec<Chess> = if exhaustive() {
            (0..l.size as u32)
                .into_par_iter()
                .filter(|&i| share.takes(i.into()))
                .filter_map(|i| l.decode(i))
                .filter_map(|p| to_chess(l, &p))
                .collect()
        } else {
            let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ m.id() as u64;
            let mut out = Vec::new();
            let mut tries = 0;
            while out.len() < SAMPLE_PER_MATERIAL && tries < 1_000_000 {
                tries += 1;
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                if let Some(p) = l.decode((seed % l.size as u64) as u32)
                    && let Some(c) = to_chess(l, &p)
                    && !c.is_game_over()
                {
                    out.push(c);
                }
            }
            out
        };
        let t = std::time::Instant::now();
        positions.par_iter().for_each(|p| check(&tb, &store, p, &counts));
        if exhaustive() {
            report!(
                "  {}: {} positions, {:.1} s; so far {} checked, {} DTM50 pairs agree, {} disagreements",
                m.name(),
                positions.len(),
                t.elapsed().as_secs_f64(),
                counts.positions.load(Ordering::Relaxed),
                counts.dtm50_pairs.load(Ordering::Relaxed),
                counts.disagreements.lock().unwrap().len()
            );
        }
    }
    let positions = counts.positions.load(Ordering::Relaxed);
    report!(
        "chesstb vs built-in ({}): {} positions of {} materials in {:.1} s; {}; DTC {} (position, clock) pairs \
         consistent with the built-in DTZ ({} with pushes owed), {} KQvK/KRvK pairs equal to DTM50; {} positions of \
         a side to move the files leave out not in the 1-in-{DROPPED_SIDE_SAMPLE} sample",
        if exhaustive() { format!("exhaustive, share {share}") } else { "sample".into() },
        positions,
        materials.len(),
        start.elapsed().as_secs_f64(),
        counts.agreement(),
        counts.dtc_class_pairs.load(Ordering::Relaxed),
        counts.dtc_pushes.load(Ordering::Relaxed),
        counts.dtc_mate_pairs.load(Ordering::Relaxed),
        counts.dropped_unchecked.load(Ordering::Relaxed),
    );
    let bad = counts.disagreements.lock().unwrap();
    assert!(bad.is_empty(), "chesstb and the built-in tables disagree");
    assert_eq!(counts.wdl.load(Ordering::Relaxed), positions);
    assert!(exhaustive() || counts.dtm50_pairs.load(Ordering::Relaxed) >= 200_000);
    assert!(counts.dtc_class_pairs.load(Ordering::Relaxed) > 0);
    // DTC equals DTM50 only where mate is the sole conversion (KQvK, KRvK).
    if materials.iter().any(|m| ["KQvK", "KRvK"].contains(&m.name().as_str())) {
        assert!(counts.dtc_mate_pairs.load(Ordering::Relaxed) > 0);
    }
}

fn to_chess(l: &tbformat::index::Layout, p: &tbformat::index::Pos) -> Option<Chess> {
    let mut board = Board::empty();
    for i in 0..l.n {
        let (color, role) = l.men[i];
        board.set_piece_at(Square::new(p.sq[i] as u32), Piece { color, role });
    }
    chess(board, p.turn)
}
