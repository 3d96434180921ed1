//! The compressed blocks against their oracle: for every built-in table of
//! 3–4 pieces, the values the generator computes (its whole arrays, DTM50
//! read through the generator's own view of its segments) against what the
//! block file gives back: DTZ50'', DTM, and DTM50 at every half-move clock
//! 0–99, for every legal position (illegal indexes are never probed and
//! read as don't-care values). Sampled in the quick tier (whole blocks and
//! random indexes of every table), every index in the exhaustive tier.
//! Prints each table's file size beside what its raw arrays would take.

#[macro_use]
mod common;

use std::sync::atomic::AtomicBool;

use rayon::prelude::*;
use tbformat::{
    dtm50::{Dtm50Data, Dtm50View, LAST_MOVE_CLOCK},
    format,
    index::Layout,
};
use tbgen::generate::generate;
use tbserver::builtin::{Store, all_materials};

use common::{exhaustive, generated_builtin_dir, rng_for, sample_seed};

/// Bytes of a table's raw arrays, as the generator holds them: DTZ50'' and
/// DTM two per index, DTM50 four per inline word, overflow entry and
/// further segment.
fn raw_bytes(positions: usize, dtm50: &Dtm50Data) -> [u64; 3] {
    let n = positions as u64;
    let words = dtm50.inline.len() + dtm50.overflow_index.len() + dtm50.overflow_start.len() + dtm50.segments.len();
    [2 * n, 2 * n, 4 * words as u64]
}

/// Blocks and random indexes per table checked in the quick tier.
const SAMPLE_BLOCKS: usize = 3;
const SAMPLE_INDEXES: usize = 3000;

#[test]
fn blocks_give_back_every_value_the_generator_computed() {
    let seed = sample_seed();
    let dir = generated_builtin_dir();
    let store = Store::new(&dir, false);
    let never = AtomicBool::new(false);
    let (mut raw_total, mut blocks_total, mut checked) = ([0u64; 3], [0u64; 3], 0u64);
    let (mut raw_file, mut blocks_file) = (0u64, 0u64);
    for m in all_materials(4) {
        let t = store.table(&m).unwrap();
        let layout = Layout::new(&m);
        let lookup = |b: &tbgen::generate::Board| store.lookup(b).map_err(|e| e.to_string());
        let g = generate(&layout, &lookup, true, &never).unwrap();
        let oracle = g.dtm50.as_ref().unwrap();
        // The file as generated now is the file on disk, byte for byte:
        // generation is deterministic, and so is the encoding, whether a
        // table is encoded whole (here) or layer by layer (the store; a pawn
        // table's layers cut blocks in two).
        let bytes = format::encode(&m, &g.dtz, &g.dtm, Some(oracle), g.legal_positions);
        assert_eq!(bytes.len() as u64, t.file_size(), "{}", m.name());
        let file = std::fs::read(dir.join(format!("{}.{}", m.name(), format::EXTENSION))).unwrap();
        assert!(file == bytes, "{}: the store's file differs from the whole table encoded", m.name());

        let n = layout.size;
        let indexes: Vec<u32> = if exhaustive() {
            let share = common::share();
            (0..n as u32).filter(|&i| share.takes(i.into())).collect()
        } else {
            let mut rng = rng_for(seed, &m.name());
            let mut v: Vec<u32> = (0..SAMPLE_INDEXES).map(|_| rng.below(n as u64) as u32).collect();
            for _ in 0..SAMPLE_BLOCKS {
                let start = rng.below(n as u64) as usize / format::BLOCK_POSITIONS * format::BLOCK_POSITIONS;
                v.extend(start as u32..(start + format::BLOCK_POSITIONS).min(n) as u32);
            }
            v
        };
        indexes.par_chunks(4096).for_each(|chunk| {
            let mut segments = Vec::new();
            for &idx in chunk {
                let i = idx as usize;
                // Illegal indexes are never probed, and read as don't-care.
                if g.dtz[i] == tbformat::value::UNKNOWN {
                    continue;
                }
                let v = t.try_values(idx).unwrap();
                assert_eq!((v.dtz, v.dtm), (g.dtz[i], g.dtm[i]), "{} index {idx}", m.name());
                for clock in 0..=LAST_MOVE_CLOCK as u32 {
                    let at = t.try_at_clock(idx, clock).unwrap();
                    assert_eq!(at, Some(oracle.at_clock(idx, clock)), "{} index {idx} clock {clock}", m.name());
                }
                assert_eq!(v.dtm50, oracle.at_clock(idx, 0));
                segments.clear();
                t.try_segments_into(idx, &mut segments).unwrap();
                let mut expected = Vec::new();
                oracle.segments_into(idx, &mut expected);
                assert_eq!(segments, expected, "{} index {idx}", m.name());
            }
        });
        checked += indexes.iter().filter(|&&i| g.dtz[i as usize] != tbformat::value::UNKNOWN).count() as u64;

        let raw = raw_bytes(n, oracle);
        let blocks = t.metric_bytes();
        let overhead = t.file_size() - blocks.iter().sum::<u64>();
        for k in 0..3 {
            raw_total[k] += raw[k];
            blocks_total[k] += blocks[k];
        }
        raw_file += raw.iter().sum::<u64>();
        blocks_file += t.file_size();
        report!(
            "{:8} {:>10} indexes: arrays {:>11} bytes (DTZ {} DTM {} DTM50 {}), v{} {:>9} bytes (DTZ {} DTM {} DTM50 {}, header and index {})",
            m.name(),
            n,
            raw.iter().sum::<u64>(),
            raw[0],
            raw[1],
            raw[2],
            format::VERSION,
            t.file_size(),
            blocks[0],
            blocks[1],
            blocks[2],
            overhead
        );
    }
    report!(
        "all 35: arrays {raw_file} bytes (DTZ {} DTM {} DTM50 {}), v{} {blocks_file} bytes (DTZ {} DTM {} DTM50 {}), {:.0}x smaller",
        raw_total[0],
        raw_total[1],
        raw_total[2],
        format::VERSION,
        blocks_total[0],
        blocks_total[1],
        blocks_total[2],
        raw_file as f64 / blocks_file as f64
    );
    report!(
        "compressed blocks (format v{}) against the generator's arrays: {checked} legal positions{}, DTZ, DTM and DTM50 at clocks 0-99 equal",
        format::VERSION,
        if exhaustive() { format!(" (share {} of each table)", common::share()) } else { " (sample)".into() }
    );
    // A bound a little above the 35 files' total (docs/builtin-format.md):
    // a change that makes the tables larger fails here.
    assert!(blocks_file <= 75_000_000, "all 35 tables with DTM50 within 75 MB: {blocks_file}");
}

/// Tables of 5 pieces checked by [`blocks_give_back_every_five_piece_value`]:
/// `TBSERVER_FORMAT_FIVE` (comma-separated; `all` for the three below, of
/// which a run with `TBSERVER_EXHAUSTIVE_SHARE=k/3` takes the k-th), or
/// none in the quick tier, where generating one would take most of the
/// tier's time and gigabytes of memory.
/// KNNvKN is nearly all draws, KRBvKQ has mates of up to 140 plies with
/// many DTM50 change points, KNNNvK has three identical men.
fn five_piece_tables() -> Vec<tbserver::builtin::Material> {
    let names = std::env::var("TBSERVER_FORMAT_FIVE")
        .unwrap_or_else(|_| if exhaustive() { "all".into() } else { String::new() });
    let parse = |names: &str| -> Vec<_> {
        names
            .split(',')
            .filter(|n| !n.is_empty())
            .map(|n| {
                tbserver::builtin::Material::parse(n)
                    .filter(|m| m.pieces() == 5)
                    .unwrap_or_else(|| panic!("{n}: not a table of 5 pieces"))
            })
            .collect()
    };
    // Each table is generated anew to compare: too costly to split by index.
    if names == "all" { common::share().pick(parse("KNNvKN,KRBvKQ,KNNNvK")) } else { parse(&names) }
}

/// The compressed blocks against the generator for tables of 5 pieces, every legal
/// position: DTZ50'', DTM, and DTM50's segments (equal segments give equal
/// values at every clock; the 3-4-piece test also reads every clock).
#[test]
fn blocks_give_back_every_five_piece_value() {
    let tables = five_piece_tables();
    report!(
        "compressed blocks (format v{}), tables of 5 pieces checked: {}",
        format::VERSION,
        if tables.is_empty() {
            "none (TBSERVER_FORMAT_FIVE names them)".into()
        } else {
            tables.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
        }
    );
    if tables.is_empty() {
        return;
    }
    let store = Store::new(generated_builtin_dir(), true).with_lazy_max_pieces(5);
    let never = AtomicBool::new(false);
    for m in tables {
        let started = std::time::Instant::now();
        let wanted = tbserver::builtin::with_dependencies(std::slice::from_ref(&m));
        tbserver::builtin::generate_in(&store, &wanted, &|_| {}).expect("generate");
        let t = store.table(&m).unwrap();
        let layout = Layout::new(&m);
        let lookup = |b: &tbgen::generate::Board| store.lookup(b).map_err(|e| e.to_string());
        let g = generate(&layout, &lookup, true, &never).unwrap();
        let oracle = g.dtm50.as_ref().unwrap();
        let checked: u64 = (0..layout.size as u32)
            .into_par_iter()
            .chunks(1 << 16)
            .map(|chunk| {
                let (mut segments, mut expected, mut n) = (Vec::new(), Vec::new(), 0u64);
                for idx in chunk {
                    let i = idx as usize;
                    if g.dtz[i] == tbformat::value::UNKNOWN {
                        continue;
                    }
                    let v = t.try_values(idx).unwrap();
                    assert_eq!((v.dtz, v.dtm), (g.dtz[i], g.dtm[i]), "{} index {idx}", m.name());
                    segments.clear();
                    expected.clear();
                    t.try_segments_into(idx, &mut segments).unwrap();
                    oracle.segments_into(idx, &mut expected);
                    assert_eq!(segments, expected, "{} index {idx}", m.name());
                    n += 1;
                }
                n
            })
            .sum();
        assert_eq!(checked, g.legal_positions, "{}", m.name());
        let raw = raw_bytes(layout.size, oracle).iter().sum::<u64>();
        report!(
            "{}: {checked} legal positions equal (DTZ, DTM, DTM50 segments); arrays {} bytes, v{} {} bytes ({:.0}x smaller); {:.0} s",
            m.name(),
            raw,
            format::VERSION,
            t.file_size(),
            raw as f64 / t.file_size() as f64,
            started.elapsed().as_secs_f64()
        );
    }
}
