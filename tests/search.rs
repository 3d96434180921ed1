//! The bounded search and mate bounds against real tables (`docs/dtm50.md`).

#[macro_use]
mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use common::{Rng, random_position};
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, Position};
use shakmaty_syzygy::Wdl;
use tbserver::domain::{Category, Dtz50};
use tbserver::search::{
    Limits, NoBound, Oracle, Score, ScoreBound, SearchOptions, SearchResult, StopReason, WithoutDtm, analyse,
    mate_bound,
};

fn tables(gaviota: bool) -> Option<impl Oracle> {
    let syzygy = common::syzygy_dir()?;
    let gav = if gaviota { vec![common::gaviota_dir()?] } else { Vec::new() };
    Some(tbserver::app::open_table_dirs(&[syzygy], &gav))
}

fn pos(fen: &str) -> Chess {
    fen.parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap()
}

fn category(oracle: &dyn Oracle, p: &Chess) -> Category {
    if p.is_checkmate() {
        return Category::Loss;
    }
    if p.is_stalemate() || p.is_insufficient_material() {
        return Category::Draw;
    }
    let wdl = oracle.wdl(p).expect("wdl");
    if wdl == Wdl::Draw {
        return Category::Draw;
    }
    Category::at_clock(wdl, Dtz50::from_syzygy(oracle.dtz(p).expect("dtz")), p.halfmoves())
}

#[test]
fn kbnk_figures_with_real_tables() {
    let Some(t) = tables(false) else { return };
    let p = pos("3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1");
    let wdl = t.wdl(&p).unwrap();
    let dtz = t.dtz(&p).unwrap();
    assert_eq!(wdl, Wdl::Win);
    assert_eq!(dtz.ignore_rounding().0, 24);
    assert_eq!(mate_bound(&p, 0, Some(wdl), None, None).unwrap().max_plies, 69);
    assert_eq!(mate_bound(&p, 0, Some(wdl), Some(dtz), None).unwrap().max_plies, 26);
}

#[test]
fn clock_70_position_is_unusable() {
    let Some(t) = tables(false) else { return };
    let p = pos("7q/3N2k1/8/8/8/7Q/8/1K6 w - - 70 1");
    let wdl = t.wdl(&p).unwrap();
    let dtz = t.dtz(&p).unwrap();
    println!("wdl {wdl:?} dtz {dtz:?}");
    assert_eq!(mate_bound(&p, 70, Some(wdl), Some(dtz), None), Err(NoBound::UnusableAtClock));
    assert_eq!(mate_bound(&p, 70, Some(wdl), None, None), Err(NoBound::UnusableAtClock));
}

const MATERIALS: &[&str] = &[
    "KQvK", "KRvK", "KPvK", "KBvK", "KQvKR", "KRvKP", "KPvKP", "KBNvK", "KBBvK", "KQvKB", "KNPvK", "KRPvKR", "KQNvKQ",
    "KRBvKR", "KNNvKP", "KBBvKN", "KQRvKR", "KRBvKQ",
];

#[test]
fn bounds_contain_the_truth_on_random_positions() {
    let Some(t) = tables(true) else { return };
    let mut rng = Rng(0x5eed_1234_abcd);
    let (mut bounded, mut dtm_checked, mut draws, mut unusable) = (0, 0, 0, 0);
    for i in 0..3000 {
        let material = MATERIALS[i % MATERIALS.len()];
        let clock = if rng.below(3) == 0 { 0 } else { rng.below(101) as u32 };
        let p = random_position(&mut rng, material, clock);
        let (wdl, dtz) = (t.wdl(&p).unwrap(), t.dtz(&p).unwrap());
        let verdict = category(&t, &p);
        for use_dtz in [false, true] {
            let b = mate_bound(&p, clock, Some(wdl), use_dtz.then_some(dtz), None);
            match b {
                Ok(b) => {
                    bounded += 1;
                    let win = b.side == tbserver::search::MateSide::Win;
                    assert_eq!(verdict, if win { Category::Win } else { Category::Loss }, "{material} {p:?}");
                    assert!(b.min_plies <= b.max_plies);
                    // DTM50 ≥ DTZ (stored values never exceed the truth).
                    assert!(b.max_plies >= dtz.ignore_rounding().0.unsigned_abs());
                    if p.board().occupied().count() == 3 && clock == 0 {
                        let dtm = t.dtm_plies(&p).unwrap();
                        assert!(
                            b.min_plies <= dtm.unsigned_abs() && dtm.unsigned_abs() <= b.max_plies,
                            "{} dtm {dtm} bound {b:?}",
                            Fen::from_position(&p, shakmaty::EnPassantMode::Legal)
                        );
                        dtm_checked += 1;
                    }
                }
                Err(NoBound::Draw | NoBound::FiftyMoveRule) => {
                    draws += 1;
                    assert!(
                        matches!(verdict, Category::Draw | Category::CursedWin | Category::BlessedLoss),
                        "{verdict:?}"
                    );
                }
                Err(NoBound::UnusableAtClock) => unusable += 1,
                Err(NoBound::Unknown) => panic!("tables answered"),
            }
        }
    }
    report!("bounded {bounded}, checked against Gaviota DTM {dtm_checked}, draws {draws}, unusable {unusable}");
    assert!(bounded > 1000 && dtm_checked > 100 && draws > 100);
}

fn run(oracle: &dyn Oracle, p: &Chess, limits: Limits) -> SearchResult {
    let cancel = Arc::new(AtomicBool::new(false));
    analyse(p, oracle, &limits, &SearchOptions { threads: 1, hash_mb: 16 }, &cancel, &mut |_| {})
}

#[test]
fn root_move_never_spoils_the_verdict() {
    let Some(t) = tables(false) else { return };
    let mut rng = Rng(0xfeed_beef_0042);
    let mut checked = 0;
    let mut decisive = 0;
    for i in 0..300 {
        let material = MATERIALS[i % MATERIALS.len()];
        let clock = rng.below(101) as u32;
        let p = random_position(&mut rng, material, clock);
        let r = run(&t, &p, Limits { nodes: Some(3_000), depth: Some(6), ..Default::default() });
        let best = r.best_move.expect("a move");
        let m = best.uci.parse::<shakmaty::uci::UciMove>().unwrap().to_move(&p).unwrap();
        let reachable = p
            .legal_moves()
            .iter()
            .map(|m| {
                let mut c = p.clone();
                c.play_unchecked(*m);
                category(&t, &c).flip()
            })
            .max()
            .unwrap();
        let mut after = p.clone();
        after.play_unchecked(m);
        assert_eq!(
            category(&t, &after).flip(),
            reachable,
            "{} played {}",
            Fen::from_position(&p, shakmaty::EnPassantMode::Legal),
            best.uci
        );
        checked += 1;
        decisive += usize::from(reachable != Category::Draw);
    }
    report!("root moves checked {checked}, decisive {decisive}");
    assert!(decisive > 50);
}

/// A root without legal moves is answered without searching: mated (the
/// root-move filter would take the best of no verdicts) or stalemate.
#[test]
fn roots_without_moves_are_terminal() {
    let Some(t) = tables(false) else { return };
    let limits = || Limits { nodes: Some(1_000), ..Default::default() };
    let mated = run(&t, &pos("1R6/8/8/k7/8/8/8/QK6 b - - 0 1"), limits());
    assert_eq!(mated.stop, Some(StopReason::Terminal));
    assert!(mated.best_move.is_none() && mated.pv.is_empty());
    assert!(matches!(mated.score, Score::Mate { mate_in_plies: 0, bound: ScoreBound::Exact, .. }), "{:?}", mated.score);
    let stalemate = run(&t, &pos("k7/2Q5/1K6/8/8/8/8/8 b - - 0 1"), limits());
    assert_eq!(stalemate.stop, Some(StopReason::Terminal));
    assert!(stalemate.best_move.is_none());
    assert!(matches!(stalemate.score, Score::Draw { .. }), "{:?}", stalemate.score);
}

/// On 3-piece positions whose mate is short, the search (without any DTM
/// table) proves exactly Gaviota's DTM; with Gaviota it must agree too.
#[test]
fn search_finds_exact_gaviota_dtm() {
    let Some(t) = tables(true) else { return };
    let gav = tables(true).unwrap();
    let syzygy_only = WithoutDtm(t);
    let mut rng = Rng(0xab_cdef_1357);
    let (mut exact, mut tried) = (0, 0);
    let mut i = 0;
    while tried < 40 {
        i += 1;
        let material = ["KQvK", "KRvK", "KPvK"][i % 3];
        let p = random_position(&mut rng, material, 0);
        let dtm = gav.dtm_plies(&p).unwrap();
        if dtm == 0 || dtm.abs() > 11 {
            continue;
        }
        tried += 1;
        for oracle in [&syzygy_only as &dyn Oracle, &gav] {
            let r = run(oracle, &p, Limits { nodes: Some(3_000_000), depth: Some(20), ..Default::default() });
            let fen = Fen::from_position(&p, shakmaty::EnPassantMode::Legal);
            match r.score {
                Score::Mate { mate_in_plies, bound: ScoreBound::Exact, .. } => {
                    assert_eq!(mate_in_plies, dtm, "{fen}: {r:?}");
                    exact += 1;
                }
                other => panic!("{fen}: DTM {dtm}, got {other:?} after depth {}", r.depth),
            }
        }
    }
    report!("exact mates found {exact} of {}", 2 * tried);
}

#[test]
fn kbnk_search_keeps_the_win_and_proves_a_bound() {
    let Some(t) = tables(false) else { return };
    let p = pos("3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1");
    let r = run(&t, &p, Limits { depth: Some(8), ..Default::default() });
    println!("{}", serde_json::to_string(&r).unwrap());
    match r.score {
        Score::Mate { mate_in_plies, .. } => assert!(mate_in_plies > 0 && mate_in_plies <= 26),
        other => panic!("{other:?}"),
    }
}

#[test]
fn gaviota_adapter_answers() {
    let Some(t) = tables(true) else { return };
    let p = pos("8/8/8/4k3/8/8/8/KR6 w - - 0 1");
    assert_eq!(t.dtm_plies(&p), Some(29));
    let p = pos("8/8/8/4k3/8/8/8/KR6 b - - 0 1");
    println!("{:?}", t.dtm_plies(&p));
}

/// Whatever the clock, a reported mate agrees with the tables' verdict at that
/// clock, and for 3 pieces at clock 0 it contains Gaviota's DTM.
#[test]
fn search_scores_are_sound_at_random_clocks() {
    let Some(t) = tables(true) else { return };
    let mut rng = Rng(0x0dd_ba11_2026);
    let (mut mates, mut exact, mut checked_dtm) = (0, 0, 0);
    for i in 0..240 {
        let material = MATERIALS[i % MATERIALS.len()];
        let clock = if i % 3 == 0 { 0 } else { rng.below(101) as u32 };
        let p = random_position(&mut rng, material, clock);
        let r = run(&t, &p, Limits { nodes: Some(20_000), depth: Some(12), ..Default::default() });
        let verdict = category(&t, &p);
        let fen = Fen::from_position(&p, shakmaty::EnPassantMode::Legal);
        if let Score::Mate { mate_in_plies, bound, .. } = r.score {
            mates += 1;
            assert_eq!(verdict, if mate_in_plies > 0 { Category::Win } else { Category::Loss }, "{fen}: {r:?}");
            if p.board().occupied().count() == 3 && clock == 0 {
                let dtm = t.dtm_plies(&p).unwrap();
                match bound {
                    ScoreBound::Exact => assert_eq!(dtm, mate_in_plies, "{fen}"),
                    _ => assert!(dtm.abs() <= mate_in_plies.abs(), "{fen}: dtm {dtm} vs {r:?}"),
                }
                checked_dtm += 1;
            }
            exact += usize::from(bound == ScoreBound::Exact);
        } else {
            assert!(
                !matches!(verdict, Category::Win | Category::Loss)
                    || r.stop != Some(tbserver::search::StopReason::MateProven),
                "{fen}"
            );
        }
    }
    report!("mate scores {mates} (exact {exact}), checked against DTM {checked_dtm}");
    assert!(mates > 50);
}

#[test]
fn lazy_smp_cancellation_and_cli() {
    let Some(t) = tables(false) else { return };
    let only = WithoutDtm(t);
    // KRBvKR: the search itself must find the mate (no DTM table).
    let p = pos("6k1/5R2/6K1/8/8/8/3r4/5B2 w - - 0 1");
    let cancel = Arc::new(AtomicBool::new(false));
    let mut depths = 0;
    let r = analyse(
        &p,
        &only,
        &Limits { depth: Some(30), ..Default::default() },
        &SearchOptions { threads: 2, hash_mb: 16 },
        &cancel,
        &mut |_| depths += 1,
    );
    println!("2 threads: {:?} depth {} nodes {} events {depths}", r.score, r.depth, r.nodes);
    assert!(matches!(r.score, Score::Mate { mate_in_plies: 15, bound: ScoreBound::Exact, .. }), "{r:?}");
    assert_eq!(r.stop, Some(tbserver::search::StopReason::MateProven));
    assert_eq!(depths as u32, r.depth);

    // Cancellation from another thread stops a search that has no other limit.
    let busy = pos("r3k3/pppp4/8/8/8/8/PPPP4/R3K3 w - - 0 1");
    let c = Arc::clone(&cancel);
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        c.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let r = analyse(&busy, &only, &Limits::default(), &SearchOptions::default(), &cancel, &mut |_| {});
    stopper.join().unwrap();
    assert_eq!(r.stop, Some(tbserver::search::StopReason::Cancelled));
    assert!(r.elapsed_ms < 2_000 && r.best_move.is_some(), "{r:?}");

    let mut out = Vec::new();
    let r = tbserver::search::run_analyse_cli("3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1", &only, Some(2_000), None, &mut out)
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    println!("{text}");
    assert!(text.contains("score mate 13") && text.contains(&format!("bestmove {}", r.best_move.unwrap().uci)));
}
