//! chesstb's shipping format against chesstb's own prober
//! (`shared/reference/chesstb-positions.jsonl`).

#[macro_use]
mod common;

use std::{collections::BTreeMap, path::PathBuf};

use chesstb_reader::{Chesstb, Class};
use shakmaty::{CastlingMode, Chess, Position, fen::Fen};

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
        let pos: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .or_else(shakmaty::PositionError::ignore_impossible_check)
            .unwrap();
        let v = tb.probe_with_dtc(&pos, pos.halfmoves()).unwrap_or_else(|e| panic!("{fen}: {e}")).expect("covered");
        tally.check("wdl", fen, v.wdl.map(class_name), r["wdl"].as_str());
        tally.check("dtz_plies", fen, v.dtz_plies.map(u64::from), r["dtz_plies"].as_u64());
        tally.check("dtm_plies", fen, v.dtm_plies.map(u64::from), r["dtm_plies"].as_u64());
        let d50 = &r["dtm50"];
        tally.check("dtm50.class", fen, v.dtm50.map(|m| class_name(m.class)), d50["class"].as_str());
        let plies = v.dtm50.filter(|m| m.class != Class::Draw).map(|m| m.plies as u64);
        tally.check("dtm50.plies", fen, plies, d50["plies"].as_u64());
        let dtc = &r["dtc"];
        if dtc.is_null() {
            // No DTC table (KPKP): decisive positions have no DTC.
            if v.wdl.is_some_and(|w| w != Class::Draw) {
                tally.check("dtc absent", fen, v.dtc.map(|d| (class_name(d.class), d.order, d.plies)), None);
            }
        } else {
            let theirs = (
                dtc["class"].as_str().unwrap(),
                dtc["order"].as_u64().unwrap() as u16,
                dtc["value"].as_u64().unwrap() as u16,
            );
            tally.check(
                "dtc class/order/plies",
                fen,
                v.dtc.map(|d| (class_name(d.class), d.order, d.plies)),
                Some(theirs),
            );
            if theirs.1 > 0 {
                *tally.agree.entry("(dtc rows with pushes owed)").or_default() += 1;
            }
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
    let tb = Chesstb::open(std::slice::from_ref(&dir), 256 << 20);
    let text = std::fs::read_to_string(&reference).expect("reference file");
    let positions: Vec<Chess> = text
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            r["fen"]
                .as_str()
                .unwrap()
                .parse::<Fen>()
                .unwrap()
                .into_position(CastlingMode::Standard)
                .or_else(shakmaty::PositionError::ignore_impossible_check)
                .unwrap()
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
    // DTC decodes the DTC files' blocks too (and rebuilds dropped frames
    // from the children's whole records).
    for (tb, cache) in [(&tb, "256 MiB"), (&Chesstb::open(&[dir], 1024 << 20), "1 GiB")] {
        for pass in ["cold", "warm"] {
            let start = std::time::Instant::now();
            for pos in &positions {
                tb.probe_with_dtc(pos, pos.halfmoves()).unwrap();
            }
            println!("with DTC, {cache} cache, {pass}: {:?} for {} probes", start.elapsed(), positions.len());
        }
        let s = tb.cache_stats();
        println!(
            "cache hits {:?} misses {:?} evictions {:?} bytes {}",
            s.hits,
            s.misses,
            s.evictions,
            tb.cache_bytes()
        );
    }
}

/// Damaged files fail only the probes that need them, with the file named;
/// `verify` names each of them.
#[test]
fn broken_files_fail_cleanly() {
    let Some(dir) = chesstb_dir() else { return };
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("chesstb-broken");
    let _ = std::fs::remove_dir_all(&work);
    for kind in ["wdl", "dtm50"] {
        std::fs::create_dir_all(work.join(kind)).unwrap();
    }
    let copy = |rel: &str| {
        std::fs::copy(dir.join(rel), work.join(rel)).unwrap();
        std::fs::read(work.join(rel)).unwrap()
    };
    for m in ["KQK", "KRK", "KQKR", "KRKN", "KBNK"] {
        copy(&format!("wdl/{m}.lzw"));
    }
    copy("dtm50/KQK.lzdtm50");
    // A rank table mapping to a value no distance reaches (the first rank's
    // high byte: magic, key, flag, permutation, entry size, block unit,
    // count, tail and data size come first, then the rank count).
    let mut bytes = copy("dtm50/KRK.lzdtm50");
    bytes[4 + 4 + 1 + 4 + 1 + 4 + 8 + 4 + 8 + 2 + 1] ^= 0xff;
    std::fs::write(work.join("dtm50/KRK.lzdtm50"), &bytes).unwrap();
    // Truncated.
    let bytes = copy("dtm50/KQKR.lzdtm50");
    std::fs::write(work.join("dtm50/KQKR.lzdtm50"), &bytes[..bytes.len() / 2]).unwrap();
    // One flipped bit in the compressed data: only the checksum sees it for sure.
    let mut bytes = copy("dtm50/KRKN.lzdtm50");
    let at = bytes.len() - 100;
    bytes[at] ^= 0x10;
    std::fs::write(work.join("dtm50/KRKN.lzdtm50"), &bytes).unwrap();
    // Wrong magic.
    let mut bytes = copy("dtm50/KBNK.lzdtm50");
    bytes[0] ^= 0xff;
    std::fs::write(work.join("dtm50/KBNK.lzdtm50"), &bytes).unwrap();
    // A DTM50 file without its WDL companion.
    copy("dtm50/KQKN.lzdtm50");

    let reports = tbserver::verify::verify_dir(&work, 1).unwrap();
    let bad: Vec<(&str, &str)> =
        reports.iter().filter(|r| !r.problems.is_empty()).map(|r| (r.name.as_str(), r.problems[0].as_str())).collect();
    println!("verify: {bad:?}");
    let bad_names: Vec<&str> = bad.iter().map(|b| b.0).collect();
    assert_eq!(
        bad_names,
        ["dtm50/KBNK.lzdtm50", "dtm50/KQKN.lzdtm50", "dtm50/KQKR.lzdtm50", "dtm50/KRK.lzdtm50", "dtm50/KRKN.lzdtm50"]
    );
    assert!(bad[0].1.contains("magic") && bad[1].1.contains("WDL companion") && bad[2].1.contains("truncated"));
    assert!(bad[3].1.contains("rank table") && bad[4].1.contains("checksum"));
    assert_eq!(reports.len(), 5 + 6);

    let tb = Chesstb::open(&[work], 1 << 20);
    let pos = |fen: &str| -> Chess { fen.parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap() };
    // Healthy tables answer.
    let v = tb.probe(&pos("8/8/8/4k3/8/8/8/KQ6 w - - 0 1"), Some(0)).unwrap().unwrap();
    assert_eq!((v.wdl, v.dtm50.map(|m| m.plies)), (Some(Class::Win), Some(17)));
    // The truncated and the mislabelled file fail with their names; WDL still answers.
    let krq = pos("8/8/8/4k3/8/8/8/KQ5r w - - 0 1");
    let err = tb.probe(&krq, Some(0)).unwrap_err();
    assert_eq!(err.table, "KQKR.lzdtm50");
    assert!(tb.probe_wdl(&krq).unwrap().is_some());
    let err = tb.probe(&pos("8/8/8/4k3/8/8/8/KBN5 w - - 0 1"), Some(0)).unwrap_err();
    assert_eq!(err.table, "KBNK.lzdtm50");
    // A damaged rank table fails the file's probes, never a value out of it.
    let krk = pos("8/8/8/4k3/8/8/8/KR6 w - - 0 1");
    let err = tb.probe(&krk, Some(0)).unwrap_err();
    assert_eq!(err.table, "KRK.lzdtm50");
    assert_eq!(tb.probe_wdl(&krk).unwrap(), Some(Class::Win));
    // No WDL companion: chesstb does not cover the material.
    assert!(tb.probe(&pos("8/8/8/4k3/8/8/8/KQ5n w - - 0 1"), Some(0)).unwrap().is_none());
}

/// DTC through the service: `/api/v1/probe` reports chesstb's DTC of every
/// reference position at its own clock (and each move's at the clock after
/// it), and `/standard` fills lichess's `dtc` in full moves where the next
/// zeroing move is the conversion.
#[test]
fn dtc_in_the_answers() {
    let (Some(dir), Some(mut config)) = (chesstb_dir(), common::shared_tables_config()) else { return };
    let reference =
        std::fs::read_to_string(dir.join("../../reference/chesstb-positions.jsonl")).expect("reference file");
    config.chesstb = vec![dir];
    let server = common::TestServer::start(config);
    let (mut compared, mut pushes, mut lichess_filled, mut lichess_null, mut moves_with_dtc) = (0, 0, 0, 0, 0);
    for line in reference.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let dtc = &r["dtc"];
        if dtc.is_null() {
            continue;
        }
        let fen = r["fen"].as_str().unwrap();
        let (status, a) = server.get(&format!("/api/v1/probe?fen={}", common::enc(fen)));
        if status != 200 {
            // Checkmate and stalemate are decided by the rules (no DTC).
            assert!(status == 200 || a["error"].is_object(), "{fen}: {a}");
            continue;
        }
        if a["checkmate"] == true || a["stalemate"] == true || a["insufficient_material"] == true {
            continue;
        }
        let sign = match dtc["class"].as_str().unwrap() {
            "WIN" => 1,
            "LOSE" => -1,
            _ => 0,
        };
        let (order, value) = (dtc["order"].as_i64().unwrap(), dtc["value"].as_i64().unwrap());
        let ours = &a["dtc"];
        assert_eq!(
            (
                ours["plies"].as_i64(),
                ours["pushes_owed"].as_i64(),
                ours["halfmove_clock"].as_u64(),
                a["sources"]["dtc"].as_str()
            ),
            (
                Some(sign * value),
                Some(if sign == 0 { 0 } else { order }),
                Some(fen.split(' ').nth(4).unwrap().parse().unwrap()),
                Some("chesstb")
            ),
            "{fen}: {ours}"
        );
        let conversion = (sign != 0 && order == 0).then_some(sign * value);
        assert_eq!(ours["conversion_plies"].as_i64(), conversion, "{fen}: {ours}");
        compared += 1;
        pushes += usize::from(order > 0 && sign != 0);
        moves_with_dtc += a["moves"].as_array().unwrap().iter().filter(|m| m["dtc"].is_object()).count();

        let (status, l) = server.get(&format!("/standard?fen={}", common::enc(fen)));
        assert_eq!(status, 200, "{fen}: {l}");
        // lichess counts DTC in full moves: ⌈plies/2⌉ with the sign.
        let expected = conversion.map(|p: i64| p.signum() * ((p.abs() + 1) / 2));
        assert_eq!(l["dtc"].as_i64(), expected, "{fen}: {l}");
        if expected.is_some() { lichess_filled += 1 } else { lichess_null += 1 }
    }
    report!(
        "DTC through the API: {compared} reference positions equal chesstb's prober ({pushes} with pushes owed), \
         {moves_with_dtc} moves with DTC; lichess dtc filled {lichess_filled}, null {lichess_null}"
    );
    assert!(compared >= 1800 && pushes > 100 && lichess_filled > 500, "{compared} {pushes} {lichess_filled}");
}

/// Answers rebuilt for a side to move the files leave out are kept and read
/// back: four threads probe the same positions at once (concurrent first
/// use), then again (read back), and every answer equals a fresh search by
/// an instance that keeps none.
#[test]
fn rebuilt_answers_read_back_equal_a_fresh_search() {
    let Some(dir) = chesstb_dir() else { return };
    let reference = dir.join("../../reference/chesstb-positions.jsonl");
    let kept = Chesstb::open(std::slice::from_ref(&dir), 64 << 20);
    let searching = Chesstb::open_with_caches(&[dir], 56 << 20, 0);
    let text = std::fs::read_to_string(&reference).expect("reference file");
    let dropped: Vec<Chess> = text
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            let fen = r["fen"].as_str().unwrap().parse::<Fen>().unwrap();
            fen.into_position(CastlingMode::Standard).or_else(shakmaty::PositionError::ignore_impossible_check).unwrap()
        })
        .filter(|p: &Chess| kept.stores_side_to_move(p).unwrap() == Some(false))
        .collect();
    let key = |tb: &Chesstb, p: &Chess| {
        let v = tb.probe(p, Some(p.halfmoves())).unwrap().expect("covered");
        (v.wdl, v.dtz_plies, v.dtm_plies, v.dtm50)
    };
    let expected: Vec<_> = dropped.iter().map(|p| key(&searching, p)).collect();
    let mismatches = std::sync::atomic::AtomicUsize::new(0);
    for round in ["first use", "read back"] {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for (p, want) in dropped.iter().zip(&expected) {
                        if key(&kept, p) != *want {
                            mismatches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        println!("rebuilt answers, {round}: {} positions x 4 threads", dropped.len());
    }
    let stats = kept.rebuilt_stats();
    let (hits, misses) = (
        stats.hits.load(std::sync::atomic::Ordering::Relaxed),
        stats.misses.load(std::sync::atomic::Ordering::Relaxed),
    );
    println!(
        "rebuilt answers: {hits} hits, {misses} misses; {} mismatches",
        mismatches.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert!(dropped.len() > 500, "the reference file has {} positions of a dropped side", dropped.len());
    assert_eq!(mismatches.into_inner(), 0);
    assert!(hits > misses, "the second round reads every answer back");
}

/// `shared/reference/chesstb-positions-5.jsonl` (values chesstb's own prober
/// read from the shared 5-piece files, `KNNNK` and `KQKRB`) through
/// `/api/v1/probe`, with Syzygy and Gaviota configured beside chesstb as a
/// service would be: WDL50 at clock 0, DTZ, DTM and DTM50 at the position's
/// own clock, every position.
#[test]
fn five_piece_reference_through_the_api() {
    let (Some(dir), Some(mut config)) = (chesstb_dir(), common::shared_tables_config()) else { return };
    let reference =
        std::fs::read_to_string(dir.join("../../reference/chesstb-positions-5.jsonl")).expect("5-piece reference file");
    config.chesstb = vec![dir];
    let server = common::TestServer::start(config);
    let mut per_material: BTreeMap<String, usize> = BTreeMap::new();
    let mut tally = Tally::default();
    let mut decisive_at_clock = 0;
    for line in reference.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let fen = r["fen"].as_str().unwrap();
        let (status, a) = server.get(&format!("/api/v1/probe?fen={}", common::enc(fen)));
        assert_eq!(status, 200, "{fen}: {a}");
        *per_material.entry(r["material"].as_str().unwrap().to_string()).or_default() += 1;
        let wdl = r["wdl"].as_str().unwrap();
        let sign = match wdl {
            "WIN" | "CURSED_WIN" => 1,
            "LOSE" | "BLESSED_LOSS" => -1,
            _ => 0,
        };
        let wdl50 = match wdl {
            "WIN" => 2,
            "CURSED_WIN" => 1,
            "DRAW" => 0,
            "BLESSED_LOSS" => -1,
            _ => -2,
        };
        tally.check("wdl", fen, a["wdl50"].as_i64(), Some(wdl50));
        if a["checkmate"] == true {
            tally.check("checkmate", fen, (wdl, r["dtm_plies"].as_u64()), ("LOSE", Some(0)));
            continue;
        }
        tally.check("dtz_plies", fen, a["dtz50"]["plies"].as_i64(), r["dtz_plies"].as_i64().map(|d| sign * d));
        tally.check("dtm_plies", fen, a["dtm"]["plies"].as_i64(), r["dtm_plies"].as_i64().map(|d| sign * d));
        let d50 = &r["dtm50"];
        let theirs = match d50["class"].as_str().unwrap() {
            "WIN" => d50["plies"].as_i64().unwrap(),
            "LOSE" => -d50["plies"].as_i64().unwrap(),
            _ => 0,
        };
        decisive_at_clock += usize::from(theirs != 0);
        tally.check("dtm50_plies", fen, a["dtm50"]["plies"].as_i64(), Some(theirs));
        tally.check(
            "dtm50 clock",
            fen,
            a["dtm50"]["halfmove_clock"].as_u64(),
            Some(fen.split(' ').nth(4).unwrap().parse().unwrap()),
        );
        // A stalemate is decided by the rules, not a table.
        let source = if a["stalemate"] == true { "rules" } else { "chesstb" };
        tally.check(
            "dtm/dtm50 source",
            fen,
            (a["sources"]["dtm"].as_str(), a["sources"]["dtm50"].as_str()),
            (Some(source), Some(source)),
        );
    }
    let total: usize = per_material.values().sum();
    report!(
        "5-piece chesstb reference through /api/v1/probe: {total} positions {per_material:?}, {decisive_at_clock} decisive at their clock"
    );
    for (metric, n) in &tally.agree {
        report!("  {metric}: {n} agree");
    }
    for (metric, list) in &tally.disagree {
        report!("  {metric}: {} DISAGREE, e.g. {:?}", list.len(), &list[..list.len().min(3)]);
    }
    assert!(tally.disagree.is_empty(), "the API disagrees with chesstb's prober at 5 pieces");
    assert_eq!(total, 600);
    assert_eq!(per_material.len(), 2);
}

/// Six pieces, beyond every table: Black's only move takes the rook into a
/// lost KNNNvK, which only chesstb's shared `KNNNK` covers (no Syzygy file,
/// no built-in table of 5 pieces here), and `/api/v1/analyse` scores the
/// line exactly from it.
#[test]
fn six_piece_line_into_a_five_piece_chesstb_table() {
    let (Some(dir), Some(mut config)) = (chesstb_dir(), common::shared_tables_config()) else { return };
    config.chesstb = vec![dir];
    let server = common::TestServer::start(config);
    let six = "7N/8/8/8/8/6K1/8/kRNN4 b - - 0 1";
    let child = "7N/8/8/8/8/6K1/8/1kNN4 w - - 0 1";
    let (status, c) = server.get(&format!("/api/v1/probe?fen={}", common::enc(child)));
    assert_eq!(status, 200, "{child}: {c}");
    assert_eq!(
        (c["sources"]["dtm50"].as_str(), c["dtm50"]["exact"].as_bool()),
        (Some("chesstb"), Some(true)),
        "{child}: {c}"
    );
    let child_plies = c["dtm50"]["plies"].as_i64().unwrap();
    assert!(child_plies > 0, "{child}: {c}");
    let (status, a) = server.get(&format!("/api/v1/analyse?fen={}&movetime_ms=20000", common::enc(six)));
    assert_eq!(status, 200, "{six}: {a}");
    assert_eq!(a["score"]["bound"], "exact", "{six}: {a}");
    assert_eq!(a["score"]["mate_in_plies"].as_i64(), Some(-(child_plies + 1)), "{six}: {a}");
    report!(
        "6 pieces: {six} mated in {} plies, exact, through chesstb's KNNNK ({child}: mate in {child_plies})",
        child_plies + 1
    );
}

/// `/api/v1/mainline` carries chesstb's DTC at the start and after every
/// step, equal to what `/api/v1/probe` answers for the position on the line
/// (checked against chesstb's prober in `dtc_in_the_answers`).
#[test]
fn mainline_steps_carry_dtc() {
    let (Some(dir), Some(mut config)) = (chesstb_dir(), common::shared_tables_config()) else { return };
    config.chesstb = vec![dir];
    let server = common::TestServer::start(config);
    let (mut steps, mut decisive) = (0, 0);
    for fen in
        ["8/2k5/8/8/8/6P1/2K5/5B2 b - - 0 1", "8/8/8/4k3/8/8/3PK3/8 w - - 0 1", "8/3N4/8/5N2/8/8/K7/2k4N w - - 40 1"]
    {
        let (status, line) = server.get(&format!("/api/v1/mainline?fen={}", common::enc(fen)));
        assert_eq!(status, 200, "{fen}: {line}");
        let mut pos: Chess = fen.parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap();
        let (_, first) = server.get(&format!("/api/v1/probe?fen={}", common::enc(fen)));
        assert_eq!(line["dtc"], first["dtc"], "{fen}: {line}");
        assert!(line["dtc"].is_object(), "{fen}: {line}");
        for step in line["mainline"].as_array().unwrap() {
            let m = step["uci"].as_str().unwrap().parse::<shakmaty::uci::UciMove>().unwrap().to_move(&pos).unwrap();
            pos.play_unchecked(m);
            let here = shakmaty::fen::Fen::from_position(&pos, shakmaty::EnPassantMode::Legal).to_string();
            let (status, p) = server.get(&format!("/api/v1/probe?fen={}", common::enc(&here)));
            if status != 200 {
                // The game is over on the board (no table value).
                assert!(step["dtc"].is_null(), "{here}: {step}");
                continue;
            }
            assert_eq!(step["dtc"], p["dtc"], "{fen}, after {} ({here}): {step}", step["uci"]);
            assert!(step["dtc"].is_object() || p["checkmate"] == true, "{here}: {step}");
            steps += 1;
            decisive += usize::from(step["dtc"]["plies"].as_i64().is_some_and(|d| d != 0));
        }
    }
    report!("mainline DTC: {steps} steps equal /api/v1/probe, {decisive} decisive");
    assert!(steps > 20 && decisive > 20, "{steps} {decisive}");
}
