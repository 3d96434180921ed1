//! chesstb's shipping format against chesstb's own prober
//! (`shared/reference/chesstb-positions.jsonl`).

mod common;

use std::{collections::BTreeMap, path::PathBuf};

use shakmaty::{CastlingMode, Chess, Position, fen::Fen};
use tbserver::chesstb::{Chesstb, Class};

fn chesstb_dir() -> Option<PathBuf> {
    common::shared_dir("tables/chesstb").map(|d| d.join("tables/chesstb"))
}

fn class_name(c: Class) -> &'static str {
    match c {
        Class::Win => "WIN",
        Class::CursedWin => "CURSED_WIN",
        Class::Draw => "DRAW",
        Class::BlessedLoss => "BLESSED_LOSS",
        Class::Loss => "LOSE",
    }
}

#[derive(Default)]
struct Tally {
    agree: BTreeMap<&'static str, usize>,
    disagree: BTreeMap<&'static str, Vec<String>>,
}

impl Tally {
    fn check<T: PartialEq + std::fmt::Debug>(&mut self, metric: &'static str, fen: &str, ours: T, theirs: T) {
        if ours == theirs {
            *self.agree.entry(metric).or_default() += 1;
        } else {
            self.disagree.entry(metric).or_default().push(format!("{fen}: ours {ours:?}, chesstb {theirs:?}"));
        }
    }
}

#[test]
fn agrees_with_chesstb_prober() {
    let Some(dir) = chesstb_dir() else { return };
    let reference = dir.join("../../reference/chesstb-positions.jsonl");
    let tb = Chesstb::open(&[dir], 64 << 20);
    let text = std::fs::read_to_string(&reference).expect("reference file");
    let mut tally = Tally::default();
    let mut lines = 0;
    for line in text.lines() {
        lines += 1;
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let fen = r["fen"].as_str().unwrap();
        let pos: Chess = fen.parse::<Fen>().unwrap().into_position(CastlingMode::Standard).or_else(shakmaty::PositionError::ignore_impossible_check).unwrap();
        let v = tb.probe(&pos, Some(pos.halfmoves())).unwrap_or_else(|e| panic!("{fen}: {e}")).expect("covered");
        tally.check("wdl", fen, v.wdl.map(class_name), r["wdl"].as_str());
        tally.check("dtz_plies", fen, v.dtz_plies.map(u64::from), r["dtz_plies"].as_u64());
        tally.check("dtm_plies", fen, v.dtm_plies.map(u64::from), r["dtm_plies"].as_u64());
        let d50 = &r["dtm50"];
        tally.check("dtm50.class", fen, v.dtm50.map(|m| class_name(m.class)), d50["class"].as_str());
        let plies = v.dtm50.filter(|m| m.class != Class::Draw).map(|m| m.plies as u64);
        tally.check("dtm50.plies", fen, plies, d50["plies"].as_u64());
        if !r["dtc"].is_null() {
            *tally.agree.entry("dtc (not read: unsupported)").or_default() += 0;
        }
    }
    println!("chesstb reference: {lines} positions");
    for (metric, n) in &tally.agree {
        println!("  {metric}: {n} agree");
    }
    for (metric, bad) in &tally.disagree {
        println!("  {metric}: {} DISAGREE, e.g.", bad.len());
        for b in bad.iter().take(5) {
            println!("    {b}");
        }
    }
    assert!(tally.disagree.is_empty(), "disagreements with chesstb's prober");
    assert!(lines >= 2000);
}

/// Timing of the reference positions, cold then warm (`--ignored`).
#[test]
#[ignore]
fn reference_timing() {
    let Some(dir) = chesstb_dir() else { return };
    let reference = dir.join("../../reference/chesstb-positions.jsonl");
    let tb = Chesstb::open(&[dir], 256 << 20);
    let text = std::fs::read_to_string(&reference).expect("reference file");
    let positions: Vec<Chess> = text
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            r["fen"].as_str().unwrap().parse::<Fen>().unwrap().into_position(CastlingMode::Standard).or_else(shakmaty::PositionError::ignore_impossible_check).unwrap()
        })
        .collect();
    for pass in ["cold", "warm"] {
        let start = std::time::Instant::now();
        let mut slow = Vec::new();
        for pos in &positions {
            let t = std::time::Instant::now();
            tb.probe(pos, Some(pos.halfmoves())).unwrap();
            slow.push((t.elapsed(), Fen::from_position(pos, shakmaty::EnPassantMode::Legal).to_string()));
        }
        slow.sort();
        println!("{pass}: {:?} for {} probes; slowest {:?}", start.elapsed(), positions.len(), &slow[slow.len() - 3..]);
    }
    let s = tb.cache_stats();
    println!("cache hits {:?} misses {:?} evictions {:?} bytes {}", s.hits, s.misses, s.evictions, tb.cache_bytes());
}
