//! Six pieces: tbserver's built-in KNNNNvK (four identical pieces against a
//! bare king, the 6-piece tables the built-in generator makes) against
//! chesstb's KNNNNK, made by chesstb's own generator and `shrink` step.
//!
//! Neither table is in the shared data: the built-in one takes minutes and
//! about 10 GiB to generate (an operator's action), chesstb's takes hours.
//! - Quick tier: the 6-piece index on random positions of all four
//!   materials (every symmetric image and order of the identical men has
//!   the index, which decodes to the position).
//! - Ignored until their data exist (run with `--ignored`): 20 positions
//!   through the API from the built-in KNNNNvK in [`six_dir`], and the
//!   positions of `tests/data/chesstb-six/knnnnk.jsonl` (chesstb's prober's
//!   values, made by `scripts/chesstb-six-reference.py` once chesstb's
//!   KNNNNK exists) against it.
//! - Exhaustive tier (`#[ignore]`, run with `--ignored` where 10 GiB of
//!   memory are free, see docs/verification.md): generates KNNNNvK if it is
//!   not there, checks the committed positions against it, and, given
//!   chesstb's KNNNNK in `TBSERVER_CHESSTB_SIX_DIR`, compares every
//!   position of the share (`TBSERVER_EXHAUSTIVE_SHARE`) in WDL, DTZ, DTM
//!   and DTM50 at every clock 0–99, as `tests/chesstb_five.rs` does at 5
//!   pieces.

#[macro_use]
mod common;
#[path = "common/two_generators.rs"]
mod two_generators;

use std::{path::PathBuf, sync::atomic::Ordering};

use chesstb_reader::{Chesstb, Kind};
use shakmaty::{CastlingMode, Chess, Position, PositionError, fen::Fen};
use tbformat::{
    index::{Layout, NONE, Pos},
    value,
};
use tbserver::builtin::{Material, Store};
use two_generators::{Counts, DROPPED_SIDE_SAMPLE, FenOf, check_metrics, for_positions};

/// The committed positions with chesstb's prober's values.
fn reference_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/chesstb-six/knnnnk.jsonl")
}

/// Where the built-in KNNNNvK is looked for: `TBSERVER_SIX_BUILTIN_DIR`,
/// else the directory of the other built-in test tables.
fn six_dir() -> PathBuf {
    std::env::var_os("TBSERVER_SIX_BUILTIN_DIR").map(PathBuf::from).unwrap_or_else(common::builtin_test_dir)
}

/// Whether `dir` holds the built-in KNNNNvK.
fn has_knnnnvk(dir: &std::path::Path) -> bool {
    dir.join(format!("KNNNNvK.{}", tbformat::format::EXTENSION)).exists()
}

fn knnnnvk() -> Material {
    Material::parse("KNNNNvK").unwrap()
}

/// `pos`'s men in the slots of `l` (colours as they stand: the tables here
/// are White's four pieces against a bare king).
fn pos_of(l: &Layout, pos: &Chess) -> Pos {
    let mut sq = [NONE; tbformat::index::MAX_MEN];
    for (s, piece) in pos.board().clone() {
        let slot = (0..l.n).find(|&i| l.men[i] == (piece.color, piece.role) && sq[i] == NONE).expect("material");
        sq[slot] = s as u8;
    }
    Pos { sq, turn: pos.turn() }
}

/// The 8 board symmetries of a square (bit 0 mirrors files, bit 1 ranks,
/// bit 2 then transposes).
fn symmetric(sq: u8, s: usize) -> u8 {
    let mut x = sq;
    if s & 1 != 0 {
        x ^= 7;
    }
    if s & 2 != 0 {
        x ^= 56;
    }
    if s & 4 != 0 {
        x = ((x & 7) << 3) | (x >> 3);
    }
    x
}

/// Random legal positions of the four 6-piece materials: each position, in
/// each of the 8 symmetries and 8 orders of its identical pieces (the
/// rotations of the four, each with two swapped), has one index, below the table's size, which decodes to one of those
/// images; positions that differ beyond symmetry have different indexes.
#[test]
fn the_six_piece_index_on_random_positions() {
    let seed = common::sample_seed();
    let mut images = 0u64;
    for name in ["KQQQQvK", "KRRRRvK", "KBBBBvK", "KNNNNvK"] {
        let m = Material::parse(name).unwrap();
        let l = Layout::new(&m);
        assert_eq!(l.size, 2 * 462 * 635_376, "{name}");
        let mut rng = common::rng_for(seed, name);
        let mut seen: std::collections::HashMap<u32, Vec<u8>> = std::collections::HashMap::new();
        for _ in 0..2_000 {
            let pos = common::random_position(&mut rng, name, 0);
            let p = pos_of(&l, &pos);
            let idx = l.index(&p);
            assert!((idx as usize) < l.size, "{name}");
            let decoded =
                l.decode(idx).unwrap_or_else(|| panic!("{name}: index {idx} of a legal position decodes to none"));
            assert_eq!(decoded.turn, p.turn);
            // The position up to symmetry, as a canonical key: the least
            // over the 8 images of (kings, sorted pieces).
            let key = |sq: &[u8]| -> Vec<u8> {
                (0..8)
                    .map(|s| {
                        let mut k: Vec<u8> = sq[..2].iter().map(|&x| symmetric(x, s)).collect();
                        let mut rest: Vec<u8> = sq[2..6].iter().map(|&x| symmetric(x, s)).collect();
                        rest.sort_unstable();
                        k.extend(rest);
                        k
                    })
                    .min()
                    .unwrap()
            };
            assert_eq!(key(&decoded.sq), key(&p.sq), "{name}: {} decodes to another position", FenOf(&pos));
            if let Some(other) = seen.insert(idx, key(&p.sq)) {
                assert_eq!(other, key(&p.sq), "{name}: two positions share index {idx}");
            }
            for s in 0..8 {
                let mut sq = p.sq;
                for x in &mut sq[..6] {
                    *x = symmetric(*x, s);
                }
                // Each rotation of the four identical pieces' slots.
                for r in 0..4 {
                    sq[2..6].rotate_left(1);
                    let order = if r % 2 == 0 { sq } else { [sq[0], sq[1], sq[3], sq[2], sq[4], sq[5]] };
                    assert_eq!(l.index(&Pos { sq: order, turn: p.turn }), idx, "{name}");
                    images += 1;
                }
            }
        }
    }
    report!("6-piece index: 8,000 random positions of KQQQQvK, KRRRRvK, KBBBBvK, KNNNNvK, {images} images agree");
}

/// One committed position and chesstb's prober's values (side to move's
/// view): WDL50 at clock 0, DTZ and DTM in signed plies, DTM50 at the
/// position's own clock (`None` where the file was made without chesstb's
/// DTM50 of KNNNNK).
struct Expected {
    pos: Chess,
    fen: String,
    wdl50: i32,
    dtz_plies: i32,
    dtm_plies: i32,
    dtm50_plies: Option<i32>,
}

/// The committed positions; `None` until chesstb's KNNNNK has been made
/// and probed (`scripts/chesstb-six-reference.py`).
fn committed() -> Option<Vec<Expected>> {
    let text = std::fs::read_to_string(reference_file()).ok()?;
    let expected = text
        .lines()
        .map(|line| {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            let fen = r["fen"].as_str().unwrap().to_string();
            let pos: Chess = fen
                .parse::<Fen>()
                .unwrap()
                .into_position(CastlingMode::Standard)
                .or_else(PositionError::ignore_impossible_check)
                .unwrap();
            let (sign, wdl50) = match r["wdl"].as_str().unwrap() {
                "WIN" => (1, 2),
                "CURSED_WIN" => (1, 1),
                "DRAW" => (0, 0),
                "BLESSED_LOSS" => (-1, -1),
                "LOSE" => (-1, -2),
                other => panic!("{fen}: class {other}"),
            };
            let d50 = &r["dtm50"];
            let dtm50_plies = (!d50.is_null()).then(|| match d50["class"].as_str().unwrap() {
                "WIN" => d50["plies"].as_i64().unwrap() as i32,
                "LOSE" => -d50["plies"].as_i64().unwrap() as i32,
                _ => 0,
            });
            Expected {
                dtz_plies: sign * r["dtz_plies"].as_i64().unwrap() as i32,
                dtm_plies: sign * r["dtm_plies"].as_i64().unwrap() as i32,
                wdl50,
                dtm50_plies,
                pos,
                fen,
            }
        })
        .collect();
    Some(expected)
}

/// The committed positions against the built-in table in `store`.
fn check_committed(store: &Store, expected: &[Expected]) {
    let (mut agree, mut with_dtm50, mut decisive_at_clock, mut bad) = (0, 0, 0, Vec::new());
    for e in expected {
        let (dtz, dtm) = store.probe(&e.pos).expect("built-in").expect("covered");
        let dtm50 = store.probe_dtm50(&e.pos, e.pos.halfmoves()).expect("built-in").expect("DTM50");
        let ours = (
            value::wdl50(dtz) as i32,
            value::signed_plies(dtz),
            value::signed_plies(dtm),
            e.dtm50_plies.map(|_| value::signed_plies(dtm50)),
        );
        let theirs = (e.wdl50, e.dtz_plies, e.dtm_plies, e.dtm50_plies);
        with_dtm50 += usize::from(e.dtm50_plies.is_some());
        decisive_at_clock += usize::from(e.dtm50_plies.is_some_and(|p| p != 0));
        if ours == theirs {
            agree += 1;
        } else {
            bad.push(format!("{}: built-in {ours:?}, chesstb's prober {theirs:?}", e.fen));
        }
    }
    report!(
        "committed KNNNNK positions (chesstb's prober) against the built-in KNNNNvK: {agree} of {} agree in WDL50, DTZ \
         and DTM, {with_dtm50} of them with chesstb's DTM50 at their clock too ({decisive_at_clock} decisive at their \
         clock)",
        expected.len()
    );
    assert!(bad.is_empty(), "{} disagree, e.g. {:?}", bad.len(), &bad[..bad.len().min(5)]);
}

/// The committed positions: legal KNNNNvK positions (either side to move,
/// clocks 0–99) in the 6-piece index, with values that hang together: the
/// same sign in WDL50, DTZ and DTM, a win's DTM odd and a loss's even, DTZ
/// never beyond DTM, DTM50 never shorter than DTM.
#[test]
fn the_committed_chesstb_positions() {
    let expected = committed().unwrap_or_else(|| panic!("{} is missing", reference_file().display()));
    assert!(expected.len() >= 1_000, "{} committed positions", expected.len());
    let l = Layout::new(&knnnnvk());
    let (mut wins, mut losses, mut draws, mut mated) = (0, 0, 0, 0);
    for e in &expected {
        assert_eq!(tbserver::material::normalized(e.pos.board()), "KNNNNvK", "{}", e.fen);
        let index = l.index(&pos_of(&l, &e.pos));
        assert_eq!(l.decode(index).map(|p| l.index(&p)), Some(index), "{}", e.fen);
        if e.pos.is_checkmate() {
            assert_eq!((e.wdl50, e.dtz_plies, e.dtm_plies), (-2, 0, 0), "{}: mated", e.fen);
            mated += 1;
            continue;
        }
        assert_eq!(e.wdl50.signum(), e.dtz_plies.signum(), "{}", e.fen);
        assert_eq!(e.dtz_plies.signum(), e.dtm_plies.signum(), "{}", e.fen);
        assert!(e.dtz_plies.abs() <= e.dtm_plies.abs(), "{}: DTZ beyond DTM", e.fen);
        match e.dtm_plies.signum() {
            1 => wins += usize::from(e.dtm_plies % 2 == 1),
            -1 => losses += usize::from(e.dtm_plies % 2 == 0),
            _ => draws += 1,
        }
        if let Some(d50) = e.dtm50_plies.filter(|&p| p != 0) {
            assert!(d50.abs() >= e.dtm_plies.abs() && d50.signum() == e.dtm_plies.signum(), "{}: DTM50 {d50}", e.fen);
        }
    }
    assert_eq!(wins + losses + draws + mated, expected.len(), "a win's DTM is odd, a loss's even");
    report!(
        "committed KNNNNK positions (chesstb's prober): {} legal KNNNNvK positions in the 6-piece index, {wins} wins, \
         {losses} losses, {mated} checkmated, {draws} draws for the side to move, values consistent",
        expected.len()
    );
}

/// The committed positions against the built-in table where it is on disk.
#[test]
#[ignore = "needs the built-in KNNNNvK (about 10 GiB and 20-45 minutes to make): TBSERVER_SIX_BUILTIN_DIR names a directory holding it"]
fn committed_chesstb_values_against_the_builtin_table() {
    let expected = committed().unwrap_or_else(|| panic!("{} is missing", reference_file().display()));
    let store = Store::new(six_dir(), false).with_lazy_max_pieces(6);
    assert!(
        has_knnnnvk(&six_dir()),
        "the built-in KNNNNvK is not in {}: `tbserver generate KNNNNvK` first",
        six_dir().display()
    );
    check_committed(&store, &expected);
}

/// The exhaustive tier: KNNNNvK generated (if missing) and compared with
/// the committed positions and, given `TBSERVER_CHESSTB_SIX_DIR`, with
/// chesstb's KNNNNK position by position.
#[test]
#[ignore = "generates a 6-piece table (about 10 GiB of memory, 20-45 minutes): the exhaustive tier, where the memory is free"]
fn knnnnvk_equals_chesstb_knnnnk() {
    let store = Store::new(six_dir(), true).with_lazy_max_pieces(6);
    let m = knnnnvk();
    let s = tbserver::builtin::generate_in(
        &store,
        &tbserver::builtin::with_dependencies(std::slice::from_ref(&m)),
        &|_| {},
    )
    .expect("generate KNNNNvK");
    report!("built-in tables: {} tables, {} generated now, {:.1} s", s.tables, s.generated, s.secs);
    if let Some(expected) = committed() {
        check_committed(&store, &expected);
    }
    serve_and_check(&six_dir(), &store);
    let Some(theirs) = std::env::var_os("TBSERVER_CHESSTB_SIX_DIR").map(PathBuf::from) else {
        report!("TBSERVER_CHESSTB_SIX_DIR unset: chesstb's KNNNNK not compared position by position");
        return;
    };
    // chesstb's KNNNNK, and the smaller tables its captures reach from the shared data.
    let Some(shared) = common::chesstb_dir() else { return };
    // chesstb's DTM50 of KNNNNK takes its generator hours beyond the other
    // metrics; without the file, WDL, DTZ and DTM are compared and the
    // report says DTM50 was not.
    let dtm50 = theirs.join("dtm50/KNNNNK.lzdtm50").exists();
    let tb = Chesstb::open(&[theirs, shared], 1 << 30);
    let kind = if dtm50 { Kind::Dtm50 } else { Kind::Dtm };
    let stored = |p: &Chess| tb.stores_side_to_move_in(p, kind).expect("chesstb").expect("covered");
    let counts = Counts::default();
    let t = store.table(&m).unwrap();
    let start = std::time::Instant::now();
    for_positions(
        &t.layout,
        common::sample_seed() ^ m.id() as u64,
        2_000,
        |_| true,
        |c| !c.is_game_over(),
        |p| check_metrics(&tb, &store, p, &counts, stored, dtm50),
    );
    report!(
        "chesstb's KNNNNK vs built-in KNNNNvK ({}): {} positions in {:.1} s; {}{}; {} positions of a side to move the \
         files leave out not in the 1-in-{DROPPED_SIDE_SAMPLE} sample",
        if common::exhaustive() { format!("exhaustive, share {}", common::share()) } else { "sample".into() },
        counts.positions.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64(),
        counts.agreement(),
        if dtm50 { "" } else { " (DTM50 not compared: no dtm50/KNNNNK.lzdtm50)" },
        counts.dropped_unchecked.load(Ordering::Relaxed),
    );
    assert!(counts.disagreements.lock().unwrap().is_empty(), "chesstb and the built-in table disagree at 6 pieces");
    counts.assert_every_position_agreed(if dtm50 { 100 } else { 0 });
}

/// A 6-piece position served from the built-in KNNNNvK (where it is on
/// disk, read-only as a replica reads tables made ahead): `/api/v1/probe`
/// with exact DTM50 from the table, `/standard`, the clock chart (JSON and
/// SVG) and the mainline, each equal to the table's own values.
#[test]
#[ignore = "needs the built-in KNNNNvK (about 10 GiB and 20-45 minutes to make): TBSERVER_SIX_BUILTIN_DIR names a directory holding it"]
fn a_six_piece_position_through_the_api() {
    let dir = six_dir();
    let store = Store::new(&dir, false).with_lazy_max_pieces(6);
    assert!(has_knnnnvk(&dir), "the built-in KNNNNvK is not in {}: `tbserver generate KNNNNvK` first", dir.display());
    serve_and_check(&dir, &store);
}

fn serve_and_check(dir: &std::path::Path, store: &Store) {
    let mut config = tbserver::config::Config { cache_entries: 0, ..Default::default() };
    config.builtin.mode = tbserver::config::BuiltinMode::ReadOnly;
    config.builtin.dir = dir.to_path_buf();
    let server = common::TestServer::start(config);
    // Mate in a few moves with four knights; then a drawn-at-its-clock win.
    let mut checked = 0;
    let mut rng = common::rng_for(common::sample_seed(), "six-api");
    let mut positions: Vec<Chess> = Vec::new();
    while positions.len() < 20 {
        let clock = rng.below(100) as u32;
        let p = common::random_position(&mut rng, "KNNNNvK", clock);
        if !p.is_game_over() {
            positions.push(p);
        }
    }
    for pos in &positions {
        let fen = FenOf(pos).to_string();
        let (dtz, dtm) = store.probe(pos).unwrap().unwrap();
        let dtm50 = value::signed_plies(store.probe_dtm50(pos, pos.halfmoves()).unwrap().unwrap());
        let (status, a) = server.get(&format!("/api/v1/probe?fen={}", common::enc(&fen)));
        assert_eq!(status, 200, "{fen}: {a}");
        assert_eq!(a["sources"]["dtm50"], "builtin", "{fen}: {a}");
        assert_eq!(a["dtm50"]["exact"], true, "{fen}: {a}");
        assert_eq!(a["dtm50"]["plies"].as_i64(), Some(dtm50 as i64), "{fen}: {a}");
        assert_eq!(a["dtm"]["plies"].as_i64(), Some(value::signed_plies(dtm) as i64), "{fen}: {a}");
        assert_eq!(a["dtz50"]["plies"].as_i64(), Some(value::signed_plies(dtz) as i64), "{fen}: {a}");
        let (status, s) = server.get(&format!("/standard?fen={}", common::enc(&fen)));
        assert_eq!(status, 200, "{fen}: {s}");
        assert_eq!(s["dtm"].as_i64(), Some(value::signed_plies(dtm) as i64), "{fen}: {s}");
        let (status, c) = server.get(&format!("/api/v1/dtm50-by-clock?fen={}", common::enc(&fen)));
        assert_eq!(status, 200, "{fen}: {c}");
        assert_eq!(c["source"], "builtin", "{fen}: {c}");
        let curve: Vec<Option<i64>> = c["dtm50"].as_array().unwrap().iter().map(|v| v["plies"].as_i64()).collect();
        assert_eq!(curve.len(), 100, "{fen}");
        for clock in [0u32, 37, 99] {
            let at = value::signed_plies(store.probe_dtm50(pos, clock).unwrap().unwrap()) as i64;
            assert_eq!(curve[clock as usize], Some(at), "{fen} clock {clock}");
        }
        let svg = reqwest::blocking::get(format!("{}/dtm50-chart.svg?fen={}", server.base, common::enc(&fen))).unwrap();
        assert_eq!(svg.status(), 200, "{fen}");
        assert!(svg.text().unwrap().starts_with("<svg"), "{fen}");
        checked += 1;
    }
    // The mainline of a position won at its clock follows DTM50 to mate,
    // one ply per step of its DTM50.
    let win = positions
        .iter()
        .find(|p| value::is_win(store.probe_dtm50(p, p.halfmoves()).unwrap().unwrap()))
        .expect("a win at its clock");
    let fen = FenOf(win).to_string();
    let plies = value::signed_plies(store.probe_dtm50(win, win.halfmoves()).unwrap().unwrap());
    let (status, m) = server.get(&format!("/api/v1/mainline?fen={}", common::enc(&fen)));
    assert_eq!(status, 200, "{fen}: {m}");
    assert_eq!((m["metric"].as_str(), m["end"].as_str()), (Some("dtm50"), Some("checkmate")), "{fen}: {m}");
    assert_eq!(m["mainline"].as_array().unwrap().len(), plies as usize, "{fen}: {m}");
    report!(
        "6 pieces through the API (built-in KNNNNvK, read-only): {checked} positions, /api/v1/probe (exact DTM50), \
         /standard, the clock chart (JSON and SVG) agree with the table; the mainline of {fen} mates in {plies} plies"
    );
}

/// chesstb's KNNNNK (`TBSERVER_CHESSTB_SIX_DIR`, chesstb's own generator and
/// `shrink`) served alone: the committed positions through `/api/v1/probe`
/// and `/standard` with chesstb's prober's values, a
/// mainline to mate, and, where the directory has chesstb's DTM50, the
/// clock chart at each position's clock.
#[test]
#[ignore = "needs chesstb's KNNNNK (hours of chesstb's generator): TBSERVER_CHESSTB_SIX_DIR names its directory"]
fn chesstb_knnnnk_through_the_api() {
    let dir = PathBuf::from(std::env::var_os("TBSERVER_CHESSTB_SIX_DIR").expect("TBSERVER_CHESSTB_SIX_DIR"));
    let dtm50 = dir.join("dtm50/KNNNNK.lzdtm50").exists();
    let expected = committed().unwrap_or_else(|| panic!("{} is missing", reference_file().display()));
    let mut config = tbserver::config::Config { cache_entries: 0, ..Default::default() };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    config.chesstb = vec![dir, common::chesstb_dir().expect("shared chesstb tables")];
    let server = common::TestServer::start(config);
    let (mut checked, mut charts, mut mainline) = (0, 0, None);
    for e in expected.iter().filter(|e| !e.pos.is_checkmate()).take(300) {
        let fen = common::enc(&e.fen);
        let (status, a) = server.get(&format!("/api/v1/probe?fen={fen}"));
        assert_eq!(status, 200, "{}: {a}", e.fen);
        assert_eq!((a["sources"]["dtm"].as_str(), a["sources"]["dtz50"].as_str()), (Some("chesstb"), Some("chesstb")));
        assert_eq!(a["wdl50"].as_i64(), Some(e.wdl50 as i64), "{}: {a}", e.fen);
        assert_eq!(a["dtz50"]["plies"].as_i64(), Some(e.dtz_plies as i64), "{}: {a}", e.fen);
        assert_eq!(a["dtm"]["plies"].as_i64(), Some(e.dtm_plies as i64), "{}: {a}", e.fen);
        let (status, s) = server.get(&format!("/standard?fen={fen}"));
        assert_eq!(status, 200, "{}: {s}", e.fen);
        assert_eq!(s["dtm"].as_i64(), Some(e.dtm_plies as i64), "{}: {s}", e.fen);
        if let Some(d50) = e.dtm50_plies.filter(|_| dtm50) {
            let (status, c) = server.get(&format!("/api/v1/dtm50-by-clock?fen={fen}"));
            assert_eq!(status, 200, "{}: {c}", e.fen);
            let at = c["dtm50"][e.pos.halfmoves() as usize]["plies"].as_i64().unwrap_or(0);
            assert_eq!(at, d50 as i64, "{}: {c}", e.fen);
            charts += 1;
        }
        if mainline.is_none() && e.dtm_plies > 0 {
            let (status, m) = server.get(&format!("/api/v1/mainline?fen={fen}"));
            assert_eq!(status, 200, "{}: {m}", e.fen);
            let plies = m["mainline"].as_array().unwrap().len() as i32;
            // DTM50 at the clock: never shorter than DTM, and a mate when the
            // position is won at its clock.
            assert!(plies >= e.dtm_plies, "{}: {m}", e.fen);
            assert_eq!(m["end"], "checkmate", "{}: {m}", e.fen);
            mainline = Some((e.fen.clone(), plies));
        }
        checked += 1;
    }
    let page = reqwest::blocking::get(format!("{}/?fen={}", server.base, common::enc(&expected[0].fen))).unwrap();
    assert_eq!(page.status(), 200);
    report!(
        "chesstb's KNNNNK through the API: {checked} committed positions, /api/v1/probe (WDL50, DTZ, DTM from \
         chesstb) and /standard agree with chesstb's prober; clock chart at {charts} of them{}; mainline {:?}",
        if dtm50 { "" } else { " (no DTM50 file)" },
        mainline
    );
    assert!(mainline.is_some());
}
