//! Exact DTM50 from the built-in tables: served by the API (probe, mainline,
//! analyse), and used as the oracle that the DTM50-style search is measured
//! against while it cannot read those tables.
//!
//! `cargo test --release --test dtm50`. The two search tests are tiered: the
//! quick tier searches 200 positions (of 1000) and proves 50 short mates
//! (of 150); `TBSERVER_EXHAUSTIVE=1` (`scripts/verify-all.sh`) the larger
//! numbers. Knobs: `TBSERVER_DTM50_SEARCH_POSITIONS` (overrides either
//! count), `TBSERVER_DTM50_SEARCH_MS` (time per search, default 250 ms;
//! the figures in docs/ use 1000) and `TBSERVER_TEST_SEED`.

#[macro_use]
mod common;

use std::{
    sync::{Arc, Mutex, atomic::AtomicBool},
    time::{Duration, Instant},
};

use common::{Rng, TestServer, enc, random_position};
use shakmaty::{Chess, EnPassantMode, Position, fen::Fen, uci::UciMove};
use tbserver::{
    builtin::all_materials,
    config::{BuiltinMode, Config},
    search::{Limits, Oracle, Score, ScoreBound, SearchOptions, StopReason, WithoutDtm, WithoutDtm50, analyse},
    tablebase::Tablebases,
};

/// Built-in tables in the directory the built-in table test fills (generated
/// lazily here if that test has not run).
fn config(with_files: bool) -> Option<Config> {
    let mut config = Config::default();
    if with_files {
        config.syzygy = vec![common::syzygy_dir()?];
        config.gaviota = vec![common::gaviota_dir()?];
    }
    config.builtin.mode = BuiltinMode::Lazy;
    config.builtin.dir = common::builtin_test_dir();
    config.cache_entries = 0;
    Some(config)
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn fen(p: &Chess) -> String {
    Fen::from_position(p, EnPassantMode::Legal).to_string()
}

/// The mover's value of a move into a position of `child_plies` (signed
/// plies from the opponent's side, 0 a draw).
fn through(child_plies: i64) -> i64 {
    match child_plies.signum() {
        -1 => -child_plies + 1,
        1 => -(child_plies + 1),
        _ => 0,
    }
}

/// Quicker wins, then draws, then slower losses.
fn preference(plies: i64) -> i64 {
    match plies.signum() {
        1 => 1_000_000 - plies,
        -1 => -1_000_000 - plies,
        _ => 0,
    }
}

/// Random positions of every 3- and 4-piece material in turn, at random clocks.
fn positions(count: usize, seed: u64) -> Vec<Chess> {
    let materials: Vec<String> = all_materials(4).iter().map(|m| m.name()).collect();
    let mut rng = Rng(seed);
    (0..count)
        .map(|i| {
            let clock = rng.below(100) as u32;
            random_position(&mut rng, &materials[i % materials.len()], clock)
        })
        .collect()
}

/// The API's DTM50 at every place it appears, on random positions.
#[test]
fn api_serves_exact_dtm50() {
    let Some(config) = config(false) else { return };
    let server = TestServer::start(config);
    let (mut decided, mut drawn, mut moves_checked, mut lines, mut analysed) = (0, 0, 0, 0, 0);
    for p in positions(240, 0xd750_0001) {
        let f = fen(&p);
        let (status, answer) = server.get(&format!("/api/v1/probe?fen={}", enc(&f)));
        assert_eq!(status, 200, "{f}: {answer}");
        let dtm50 = &answer["dtm50"];
        assert_eq!(dtm50["exact"], true, "{f}");
        assert_eq!(dtm50["halfmove_clock"], p.halfmoves(), "{f}");
        let by_rules = p.is_insufficient_material();
        assert_eq!(answer["sources"]["dtm50"], if by_rules { "rules" } else { "builtin" }, "{f}");
        let plies = dtm50["plies"].as_i64().unwrap();
        // The verdict at this clock comes from WDL and DTZ: DTM50 must agree.
        let category = answer["category"].as_str().unwrap();
        match plies.signum() {
            1 => assert_eq!(category, "win", "{f}"),
            -1 => assert_eq!(category, "loss", "{f}"),
            _ => assert!(!["win", "loss"].contains(&category), "{f}: {category} but DTM50 draw"),
        }
        if plies == 0 {
            drawn += 1;
            assert!(dtm50["mate_in_moves"].is_null());
            let reason = if answer["wdl50"] == 0 { "draw" } else { "fifty_move_rule" };
            assert_eq!(answer["no_mate_bound"]["reason"], reason, "{f}: {answer}");
            continue;
        }
        decided += 1;
        // The mate bound is DTM50 itself.
        let bound = &answer["mate_bound"];
        assert_eq!(bound["derived_from"], "dtm50", "{f}");
        assert_eq!((bound["min_plies"].as_i64(), bound["max_plies"].as_i64()), (Some(plies.abs()), Some(plies.abs())));
        assert_eq!(dtm50["mate_in_moves"].as_i64().unwrap(), plies.signum() * ((plies.abs() + 1) / 2));
        // The first move keeps the distance: one ply less, from the other side.
        let best = &answer["moves"][0];
        let after = best["dtm50"]["plies"].as_i64().unwrap();
        if best["checkmate"] == true {
            assert_eq!(plies, 1, "{f}");
        } else {
            assert_eq!(after, -(plies - plies.signum()), "{f}: best move {} has {}", best["uci"], best["dtm50"]);
        }
        // No move beats it.
        for m in answer["moves"].as_array().unwrap() {
            let mover = if m["checkmate"] == true { 1 } else { through(m["dtm50"]["plies"].as_i64().unwrap()) };
            assert!(preference(mover) <= preference(plies), "{f}: {} gives {mover}, root {plies}", m["uci"]);
            moves_checked += 1;
        }
        // The DTM50 mainline mates in exactly that many plies.
        let (status, line) = server.get(&format!("/api/v1/mainline?metric=dtm50&fen={}", enc(&f)));
        assert_eq!(status, 200);
        assert_eq!(line["metric"], "dtm50");
        assert_eq!(line["end"], "checkmate", "{f}: {line}");
        assert_eq!(line["mainline"].as_array().unwrap().len() as i64, plies.abs(), "{f}");
        lines += 1;
        // analyse reads the same answer off the table, without searching.
        let (status, a) = server.get(&format!("/api/v1/analyse?movetime_ms=100&fen={}", enc(&f)));
        assert_eq!(status, 200);
        assert_eq!(a["stop"], "table_exact", "{f}: {a}");
        assert_eq!(a["nodes"], 0);
        assert_eq!(a["score"]["mate_in_plies"].as_i64().unwrap(), plies, "{f}");
        assert_eq!(a["score"]["bound"], "exact");
        assert_eq!(a["pv"].as_array().unwrap().len() as i64, plies.abs(), "{f}");
        analysed += 1;
    }
    report!(
        "DTM50 via the API: {decided} decided and {drawn} drawn positions, {moves_checked} moves, \
         {lines} mainlines and {analysed} analyses of exact length"
    );
    assert!(decided > 60 && drawn > 30);
}

/// The search, with the DTM50 tables hidden from it, against those tables:
/// an exact score must equal the table, any other mate score must bound it,
/// and the move it plays must keep the verdict. Once with DTM visible
/// (Gaviota, built-in), once with WDL and DTZ alone.
#[test]
fn search_agrees_with_dtm50_tables() {
    let Some(config) = config(true) else { return };
    let tables = Arc::new(tbserver::app::open_tablebases(&config));
    let with_dtm = WithoutDtm50(tables.as_ref());
    let without_dtm = WithoutDtm(tables.as_ref());
    let count = env_or("TBSERVER_DTM50_SEARCH_POSITIONS", if common::exhaustive() { 1000 } else { 200 }) as usize;
    // CI's share of the exhaustive tier takes every n-th of the positions.
    let all = common::share().pick(positions(count, common::fixed_seed("search vs DTM50 tables", 0xd750_5eed)));
    search_against_dtm50(&tables, &all, &with_dtm, "WDL, DTZ and DTM visible");
    search_against_dtm50(&tables, &all, &without_dtm, "WDL and DTZ only");
}

fn search_against_dtm50(tables: &Tablebases, all: &[Chess], hidden: &(dyn Oracle + Sync), label: &str) {
    let movetime = Duration::from_millis(env_or("TBSERVER_DTM50_SEARCH_MS", 250));
    #[derive(Default)]
    struct Tally {
        exact: usize,
        at_most: usize,
        at_least: usize,
        draws: usize,
        unsolved_wins: usize,
        decided: usize,
        failures: Vec<String>,
    }
    let tally = Mutex::new(Tally::default());
    let start = Instant::now();
    std::thread::scope(|scope| {
        for part in all.chunks(all.len().div_ceil(2)) {
            let tally = &tally;
            scope.spawn(move || {
                for p in part {
                    let truth = Oracle::dtm50_plies(tables, p, p.halfmoves()).expect("built-in tables cover 4 pieces");
                    let cancel = Arc::new(AtomicBool::new(false));
                    let limits = Limits { movetime: Some(movetime), ..Default::default() };
                    let r =
                        analyse(p, hidden, &limits, &SearchOptions { threads: 1, hash_mb: 16 }, &cancel, &mut |_| {});
                    let mut t = tally.lock().unwrap();
                    t.decided += usize::from(truth != 0);
                    let fail =
                        |t: &mut Tally, why: String| t.failures.push(format!("{} (DTM50 {truth}): {why}", fen(p)));
                    assert_ne!(r.stop, Some(StopReason::TableExact), "DTM50 tables are hidden");
                    match r.score {
                        Score::Mate { mate_in_plies, bound, .. } => {
                            let same_side = mate_in_plies.signum() == truth.signum();
                            match bound {
                                ScoreBound::Exact if mate_in_plies == truth => t.exact += 1,
                                ScoreBound::AtMost if same_side && truth.abs() <= mate_in_plies.abs() => t.at_most += 1,
                                ScoreBound::AtLeast if same_side && truth.abs() >= mate_in_plies.abs() => {
                                    t.at_least += 1
                                }
                                _ => fail(&mut t, format!("search says {bound:?} {mate_in_plies}")),
                            }
                        }
                        Score::Draw { .. } if truth == 0 => t.draws += 1,
                        Score::Draw { .. } => fail(&mut t, "search says draw".into()),
                        Score::Cp { .. } if truth != 0 => t.unsolved_wins += 1,
                        Score::Cp { cp } => fail(&mut t, format!("search gives {cp} cp in a drawn position")),
                    }
                    // The root guarantee, judged by DTM50: the move keeps the result.
                    if let Some(best) = &r.best_move {
                        let m = best.uci.parse::<UciMove>().unwrap().to_move(p).unwrap();
                        let mut after = p.clone();
                        after.play_unchecked(m);
                        let mover = if after.is_checkmate() {
                            1
                        } else {
                            through(i64::from(Oracle::dtm50_plies(tables, &after, after.halfmoves()).unwrap_or(0)))
                        };
                        if mover.signum() != i64::from(truth.signum()) {
                            fail(&mut t, format!("played {} which changes the result", best.uci));
                        }
                    }
                }
            });
        }
    });
    let t = tally.into_inner().unwrap();
    let n = all.len();
    report!(
        "search vs DTM50 tables ({label}, share {}): {n} positions ({} decided) at {} ms each, {:.0} s in all: exact {} ({:.1}% of decided), \
         at most {}, at least {}, draws {}, wins without a mate score {}, failures {}",
        common::share(),
        t.decided,
        movetime.as_millis(),
        start.elapsed().as_secs_f64(),
        t.exact,
        100.0 * t.exact as f64 / t.decided.max(1) as f64,
        t.at_most,
        t.at_least,
        t.draws,
        t.unsolved_wins,
        t.failures.len()
    );
    assert!(
        t.failures.is_empty(),
        "{} failures, first ones:\n{}",
        t.failures.len(),
        t.failures[..t.failures.len().min(20)].join("\n")
    );
    assert!(t.exact > 0 && t.draws > 0);
}

/// Exactness on short mates: at clock 0, where the 50-move rule cannot
/// touch a mate this near, the search sees only WDL and DTZ (Syzygy) and must
/// still prove the exact distance that the built-in tables hold, by searching
/// one ply deeper than the mate.
#[test]
fn search_proves_short_mates_exactly() {
    let Some(config) = config(true) else { return };
    let tables = tbserver::app::open_tablebases(&config);
    let builtin = Tablebases::new(vec![Arc::new(tbserver::sources::builtin::BuiltinSource::new(
        &config.builtin,
        tbserver::builtin::Waiting::Block,
    ))]);
    let wdl_dtz_only = WithoutDtm(&tables);
    const MAX_PLIES: i32 = 9;
    let wanted = if common::exhaustive() { 150 } else { 50 };
    let materials: Vec<String> = all_materials(4).iter().map(|m| m.name()).collect();
    let mut rng = Rng(common::fixed_seed("exact short mates", 0x5407_3a7e));
    let (mut tried, mut short, mut by_pieces) = (0, 0, [0usize; 5]);
    while short < wanted && tried < 200_000 {
        let p = random_position(&mut rng, &materials[tried % materials.len()], 0);
        tried += 1;
        if p.is_game_over() {
            continue;
        }
        let dtm = builtin.dtm_plies(&p).expect("built-in tables cover 4 pieces").map(|s| s.value).unwrap();
        if dtm == 0 || dtm.abs() > MAX_PLIES {
            continue;
        }
        short += 1;
        by_pieces[p.board().occupied().count()] += 1;
        let limits = Limits {
            depth: Some(dtm.unsigned_abs() + 1),
            movetime: Some(Duration::from_secs(20)),
            ..Default::default()
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let r = analyse(&p, &wdl_dtz_only, &limits, &SearchOptions { threads: 1, hash_mb: 16 }, &cancel, &mut |_| {});
        match r.score {
            Score::Mate { mate_in_plies, bound: ScoreBound::Exact, .. } => {
                assert_eq!(mate_in_plies, dtm, "{}: {r:?}", fen(&p))
            }
            _ => panic!("{}: DTM {dtm}, search {:?} after depth {} ({:?})", fen(&p), r.score, r.depth, r.stop),
        }
    }
    report!(
        "exact short mates (|DTM| <= {MAX_PLIES} plies, clock 0, WDL and DTZ only): {short} of {short} \
         ({} with 3 pieces, {} with 4), from {tried} random positions",
        by_pieces[3],
        by_pieces[4]
    );
    // Two thirds with 4 pieces: the harder material must not be missing.
    assert!(short >= wanted && by_pieces[4] >= wanted * 2 / 3);
}

/// The oracle the search reads: Tablebases answers DTM50 at the clock the
/// search asks for, not only the position's own.
#[test]
fn oracle_answers_at_any_clock() {
    let Some(config) = config(false) else { return };
    let tables = Tablebases::new(vec![Arc::new(tbserver::sources::builtin::BuiltinSource::new(
        &config.builtin,
        tbserver::builtin::Waiting::Block,
    ))]);
    // KBNvK, mate in 59 plies: drawn once the clock leaves fewer than 59.
    let p: Chess = Fen::from_ascii(b"8/8/8/8/8/2k5/8/KBN5 w - - 0 1")
        .unwrap()
        .into_position(shakmaty::CastlingMode::Standard)
        .unwrap();
    assert_eq!(Oracle::dtm50_plies(&tables, &p, 0), Some(59));
    assert_eq!(Oracle::dtm50_plies(&tables, &p, 41), Some(59));
    assert_eq!(Oracle::dtm50_plies(&tables, &p, 42), Some(0));
    assert_eq!(Oracle::dtm50_plies(&tables, &p, 99), Some(0));
}
