//! The verdict at the real half-move clock (metrics.md), and the reference
//! positions named there.

#[macro_use]
mod common;

use common::{TestServer, enc, reference_file};
use serde_json::Value;

fn with_clock(fen: &str, clock: u32) -> String {
    let mut parts: Vec<&str> = fen.split_whitespace().collect();
    let clock = clock.to_string();
    parts[4] = &clock;
    parts.join(" ")
}

fn probe(server: &TestServer, fen: &str) -> Value {
    let (status, body) = server.get(&format!("/api/v1/probe?fen={}", enc(fen)));
    assert_eq!(status, 200, "{fen}: {body}");
    body
}

#[test]
fn category_follows_clock_and_rounding() {
    let (Some(server), Some(reference)) = (TestServer::with_shared_tables(), reference_file()) else { return };
    let text = std::fs::read_to_string(reference).unwrap();
    let mut checked = [0usize; 4];
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        let fen = r["fen"].as_str().unwrap();
        let dtz = r["dtz"].as_i64().unwrap();
        // Checkmated positions (no moves) are lost whatever the clock.
        if dtz == 0 || dtz.abs() > 99 || r["moves"].as_object().unwrap().is_empty() {
            continue;
        }
        let d = dtz.unsigned_abs() as u32;
        let at_zero = probe(&server, fen);
        let exact = at_zero["dtz50"]["rounding"] == "exact";
        let (win, maybe, cursed) =
            if dtz > 0 { ("win", "maybe-win", "cursed-win") } else { ("loss", "maybe-loss", "blessed-loss") };
        assert_eq!(at_zero["category"], win, "{fen}");
        // One ply before the edge: always decisive.
        assert_eq!(probe(&server, &with_clock(fen, 99 - d))["category"], win, "{fen} at clock {}", 99 - d);
        // Exactly at the edge: decisive if exact, unknowable if rounded.
        let edge = probe(&server, &with_clock(fen, 100 - d));
        assert_eq!(edge["category"], if exact { win } else { maybe }, "{fen} at clock {}", 100 - d);
        // Past the edge: the 50-move rule decides.
        assert_eq!(probe(&server, &with_clock(fen, 101 - d))["category"], cursed, "{fen} at clock {}", 101 - d);
        // WDL50 itself is the value at clock 0 whatever the clock.
        assert_eq!(edge["wdl50"], at_zero["wdl50"]);
        checked[usize::from(dtz < 0) * 2 + usize::from(exact)] += 1;
    }
    report!(
        "clock rules checked: wins rounded {} exact {}, losses rounded {} exact {}",
        checked[0],
        checked[1],
        checked[2],
        checked[3]
    );
    assert!(checked.iter().all(|&n| n > 0), "every combination must be covered: {checked:?}");
}

#[test]
fn metrics_reference_positions() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    // KNNvKB: the only move Ka8 keeps the same (rounded) DTZ.
    let a = probe(&server, "1kb5/8/1KN5/3N4/8/8/8/8 b - - 0 1");
    let moves = a["moves"].as_array().unwrap();
    let ka8 = moves.iter().find(|m| m["san"] == "Ka8").expect("Ka8 is legal");
    assert_eq!(ka8["dtz50"]["plies"].as_i64().unwrap(), -a["dtz50"]["plies"].as_i64().unwrap(), "{a}");
    assert_eq!(a["dtz50"]["rounding"], "maybe_rounded");

    // KNNvKP: promotion in 7 plies, yet DTZ 107: a cursed win for Black.
    let a = probe(&server, "8/8/2N5/8/3k4/7N/p2K4/8 b - - 0 1");
    assert_eq!(a["dtz50"]["plies"], 107, "{a}");
    assert_eq!(a["dtz50"]["beyond_100"], true);
    assert_eq!(a["wdl50"], 1);
    assert_eq!(a["category"], "cursed-win");

    // KBNvK: an ordinary win, DTZ 24.
    let a = probe(&server, "3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1");
    assert_eq!(a["dtz50"]["plies"], 24);
    assert_eq!(a["wdl50"], 2);
    assert_eq!(a["category"], "win");
    assert_eq!(a["moves"][0]["category"], "loss", "best move wins");
}

#[test]
fn terminal_positions_are_decided_by_the_rules() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let mate = probe(&server, "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1");
    assert_eq!(
        (mate["checkmate"].clone(), mate["category"].clone(), mate["wdl50"].clone()),
        (Value::Bool(true), "loss".into(), (-2).into())
    );
    assert_eq!(mate["moves"].as_array().unwrap().len(), 0);
    let stalemate = probe(&server, "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1");
    assert_eq!((stalemate["stalemate"].clone(), stalemate["category"].clone()), (Value::Bool(true), "draw".into()));
    let bare = probe(&server, "8/8/8/4k3/8/8/8/4K3 w - - 0 1");
    assert_eq!((bare["insufficient_material"].clone(), bare["category"].clone()), (Value::Bool(true), "draw".into()));
    // A mate given after the clock reached 100 no longer wins.
    let late = probe(&server, "7k/8/6K1/8/8/8/8/5Q2 w - - 100 80");
    let qf8 = late["moves"].as_array().unwrap().iter().find(|m| m["san"] == "Qf8#").unwrap();
    assert_eq!(qf8["category"], "blessed-loss");
}

#[test]
fn mainline_reaches_mate_and_agrees_with_best_move() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let fen = "8/8/8/4k3/8/8/8/KR6 w - - 0 1";
    let (status, line) = server.get(&format!("/api/v1/mainline?fen={}", enc(fen)));
    assert_eq!(status, 200, "{line}");
    let steps = line["mainline"].as_array().unwrap();
    assert_eq!(line["end"], "checkmate");
    assert_eq!(line["winner"], "w");
    // With DTM known (Gaviota), the line is a shortest mate.
    assert_eq!(steps.len() as i64, line["dtm"]["plies"].as_i64().unwrap(), "{line}");
    assert_eq!(steps[0]["uci"], probe(&server, fen)["moves"][0]["uci"]);
    let (_, lichess) = server.get(&format!("/standard/mainline?fen={}", enc(fen)));
    assert_eq!(lichess["winner"], "w");
    assert!(!lichess["mainline"].as_array().unwrap().is_empty());
    // Drawn positions have no line.
    let (_, draw) = server.get(&format!("/api/v1/mainline?fen={}", enc("8/8/8/4k3/8/8/8/KB6 w - - 0 1")));
    assert_eq!(draw["mainline"].as_array().unwrap().len(), 0);
    report!("mainline: {} plies to mate", steps.len());
}

#[test]
fn probe_answers_carry_mate_bounds() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    // dtm50.md: a DTZ probe proves mate within 24 + 2 plies.
    let a = probe(&server, "3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1");
    let bound = &a["mate_bound"];
    assert_eq!(bound["derived_from"], "dtz", "{a}");
    assert_eq!(bound["side"], "win");
    assert!(bound["max_plies"].as_u64().unwrap() <= 26 && bound["min_plies"].as_u64().unwrap() >= 24, "{bound}");
    // Every winning move's bound is a loss bound for the opponent.
    for m in a["moves"].as_array().unwrap().iter().filter(|m| m["category"] == "loss") {
        assert_eq!(m["mate_bound"]["side"], "loss", "{m}");
    }
    // dtm50.md: at clock 70 the rounded DTZ cannot be used.
    let a = probe(&server, "7q/3N2k1/8/8/8/7Q/8/1K6 w - - 70 1");
    assert!(a["mate_bound"].is_null(), "{a}");
    assert_eq!(a["no_mate_bound"]["reason"], "unusable_at_clock");
    // Draws have no bound, with the reason.
    let a = probe(&server, "8/8/8/4k3/8/8/8/KB6 w - - 0 1");
    assert_eq!(a["no_mate_bound"]["reason"], "draw");
    // Gaviota's DTM makes the bound exact at clock 0 for short mates.
    let a = probe(&server, "8/8/8/4k3/8/8/8/KR6 w - - 0 1");
    assert_eq!(a["mate_bound"]["exact"], true, "{a}");
    assert_eq!(a["mate_bound"]["max_plies"], a["dtm"]["plies"]);
}
