//! tbserver's chesstb index against chesstb's own indexing code, at 5 and 6
//! pieces: `tests/data/chesstb-index/` holds 84,000 random legal positions
//! (12,000 of each class) with the table, mirroring, side to move, king
//! slice, symmetry, pawn slice and storage index that chesstb's generator
//! computes for them (and its prober agrees with, position by position; see
//! the PROVENANCE file there). No table file is needed: 6-piece tables
//! cannot be generated here, so this is how their index is proven.

use std::{collections::BTreeMap, io::Read};

use shakmaty::{CastlingMode, Chess, fen::Fen};
use tbserver::chesstb::index_trace;

#[derive(Default)]
struct ClassCount {
    positions: usize,
    five: usize,
    six: usize,
    above_2_32: usize,
    mirrored: usize,
    transformed: usize,
    diagonal_flips: usize,
    mismatches: Vec<String>,
}

#[test]
fn index_agrees_with_chesstb_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/chesstb-index/chesstb-index.tsv.xz");
    let mut text = String::new();
    liblzma::read::XzDecoder::new(std::fs::File::open(path).expect("index test data")).read_to_string(&mut text).expect("xz");
    let mut classes: BTreeMap<String, ClassCount> = BTreeMap::new();
    let mut tables = std::collections::BTreeSet::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 12, "{line}");
        let (class, fen, table) = (f[0], f[1], f[2]);
        let num = |i: usize| -> u64 { f[i].parse().unwrap_or_else(|_| panic!("{line}")) };
        let pos: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .or_else(shakmaty::PositionError::ignore_impossible_check)
            .unwrap_or_else(|e| panic!("{fen}: {e}"));
        let perm = num(9) as u32;
        let c = classes.entry(class.to_string()).or_default();
        c.positions += 1;
        if table.len() == 5 { c.five += 1 } else { c.six += 1 }
        tables.insert(table.to_string());
        let index = num(10);
        c.above_2_32 += (index >= 1 << 32) as usize;
        c.mirrored += (f[3] == "1") as usize;
        c.transformed += (f[6] != "0") as usize;
        c.diagonal_flips += (f[7] == "1") as usize;
        let theirs = (table.to_string(), f[3] == "1", (f[4] == "b") as usize, num(5), num(6) as u8, f[7] == "1", num(8), index);
        let ours = index_trace(&pos, perm).map(|t| {
            (t.table, t.mirrored, t.side, t.parts.king_slice, t.parts.transform, t.parts.diagonal_flip, t.parts.pawn_slice, t.parts.index)
        });
        if ours.as_ref() != Some(&theirs) {
            c.mismatches.push(format!("{fen} perm {perm}: ours {ours:?}, chesstb {theirs:?}"));
        }
    }
    println!("chesstb index vs chesstb's code: {} positions, {} tables", classes.values().map(|c| c.positions).sum::<usize>(), tables.len());
    println!("  class             positions  5-piece  6-piece  index>=2^32  mirrored  transformed  diagonal-flip  mismatches");
    for (name, c) in &classes {
        println!(
            "  {name:<17} {:>9}  {:>7}  {:>7}  {:>11}  {:>8}  {:>11}  {:>13}  {:>10}",
            c.positions, c.five, c.six, c.above_2_32, c.mirrored, c.transformed, c.diagonal_flips, c.mismatches.len()
        );
    }
    let mut failed = 0;
    for (name, c) in &classes {
        for m in c.mismatches.iter().take(5) {
            println!("MISMATCH {name}: {m}");
        }
        failed += c.mismatches.len();
    }
    assert_eq!(failed, 0, "positions whose index differs from chesstb's");
    let expected = ["en_passant", "four_of_a_kind", "pawnless", "pawns_both_sides", "pawns_one_side", "three_of_a_kind", "two_of_a_kind"];
    assert_eq!(classes.keys().map(String::as_str).collect::<Vec<_>>(), expected);
    for (name, c) in &classes {
        assert!(c.positions >= 10_000, "{name}: only {} positions", c.positions);
        assert!(c.six > 0, "{name}: no 6-piece position");
    }
    assert!(classes.values().map(|c| c.above_2_32).sum::<usize>() >= 10_000, "too few indexes above 2^32");
    assert!(classes["pawnless"].diagonal_flips > 0 && classes["pawnless"].mirrored > 0);
}
