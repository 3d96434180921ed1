//! Every reference position (values computed by an independent
//! implementation from the same files) against the running server.

#[macro_use]
mod common;

use common::{TestServer, enc, reference_file};
use serde_json::Value;

#[test]
fn probe_matches_reference_positions() {
    let (Some(server), Some(reference)) = (TestServer::with_shared_tables(), reference_file()) else { return };
    let text = std::fs::read_to_string(reference).unwrap();
    let (mut positions, mut moves, mut dtm_compared, mut mates) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let r: Value = serde_json::from_str(line).unwrap();
        let fen = r["fen"].as_str().unwrap();
        let (status, a) = server.get(&format!("/api/v1/probe?fen={}", enc(fen)));
        assert_eq!(status, 200, "{fen}: {a}");
        positions += 1;
        if a["wdl50"] != r["wdl"] || a["dtz50"]["plies"] != r["dtz"] {
            failures.push(format!(
                "{fen}: wdl50 {} dtz {} expected wdl {} dtz {}",
                a["wdl50"], a["dtz50"]["plies"], r["wdl"], r["dtz"]
            ));
        }
        if !r["dtm_plies"].is_null() {
            dtm_compared += 1;
            if a["dtm"]["plies"] != r["dtm_plies"] {
                failures.push(format!("{fen}: dtm {} expected {}", a["dtm"], r["dtm_plies"]));
            }
        }
        let expected = r["moves"].as_object().unwrap();
        let got = a["moves"].as_array().unwrap();
        assert_eq!(got.len(), expected.len(), "{fen}: number of legal moves");
        for m in got {
            let uci = m["uci"].as_str().unwrap();
            let e = &expected[uci];
            moves += 1;
            if e["checkmate"] == Value::Bool(true) {
                mates += 1;
                if m["checkmate"] != Value::Bool(true) || m["category"] != "loss" {
                    failures.push(format!("{fen} {uci}: expected checkmate, got {m}"));
                }
            } else if m["wdl50"] != e["wdl"] || m["dtz50"]["plies"] != e["dtz"] {
                failures.push(format!(
                    "{fen} {uci}: wdl50 {} dtz {} expected wdl {} dtz {}",
                    m["wdl50"], m["dtz50"]["plies"], e["wdl"], e["dtz"]
                ));
            }
        }
    }
    report!(
        "reference: compared {positions} positions, {moves} moves ({mates} mates), {dtm_compared} DTM values; {} mismatches",
        failures.len()
    );
    assert!(failures.is_empty(), "{} mismatches, first: {:#?}", failures.len(), &failures[..failures.len().min(10)]);
    assert!(positions >= 700 && moves >= 10_000, "reference file unexpectedly small");
}

#[test]
fn lichess_endpoint_matches_reference_positions() {
    let (Some(server), Some(reference)) = (TestServer::with_shared_tables(), reference_file()) else { return };
    let text = std::fs::read_to_string(reference).unwrap();
    let (mut positions, mut moves) = (0, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()).step_by(3) {
        let r: Value = serde_json::from_str(line).unwrap();
        let fen = r["fen"].as_str().unwrap().replace(' ', "_");
        let (status, a) = server.get(&format!("/standard?fen={}", enc(&fen)));
        assert_eq!(status, 200, "{fen}: {a}");
        assert_eq!(a["dtz"], r["dtz"], "{fen}");
        for key in [
            "checkmate",
            "stalemate",
            "variant_win",
            "variant_loss",
            "insufficient_material",
            "precise_dtz",
            "dtm",
            "category",
        ] {
            assert!(a.get(key).is_some(), "{fen}: lichess field {key} missing");
        }
        positions += 1;
        for m in a["moves"].as_array().unwrap() {
            let e = &r["moves"][m["uci"].as_str().unwrap()];
            if e["checkmate"] != Value::Bool(true) {
                assert_eq!(m["dtz"], e["dtz"], "{fen} {}", m["uci"]);
            }
            for key in [
                "uci",
                "san",
                "zeroing",
                "checkmate",
                "stalemate",
                "insufficient_material",
                "dtz",
                "precise_dtz",
                "dtm",
                "category",
            ] {
                assert!(m.get(key).is_some(), "{fen}: lichess move field {key} missing");
            }
            moves += 1;
        }
        // The position's verdict is the negation of its best move's.
        if let Some(best) = a["moves"].as_array().unwrap().first() {
            let flip = |c: &str| {
                match c {
                    "win" => "loss",
                    "loss" => "win",
                    "cursed-win" => "blessed-loss",
                    "blessed-loss" => "cursed-win",
                    "syzygy-win" => "syzygy-loss",
                    "syzygy-loss" => "syzygy-win",
                    other => other,
                }
                .to_owned()
            };
            assert_eq!(a["category"].as_str().unwrap(), flip(best["category"].as_str().unwrap()), "{fen}");
        }
    }
    report!("lichess-compatible: compared {positions} positions, {moves} moves");
}

/// One position's probes run on the async thread that has the request when
/// every table is memory-mapped, on a blocking thread otherwise
/// (`syzygy_io = read`): the answers are the same, byte for byte, in both
/// formats.
#[test]
fn answers_on_async_threads_match_blocking_threads() {
    let (Some(dir), Some(reference)) = (common::syzygy_dir(), reference_file()) else { return };
    let server = |io| {
        let mut config = tbserver::config::Config {
            syzygy: vec![dir.clone()],
            syzygy_io: io,
            cache_entries: 0,
            ..Default::default()
        };
        config.builtin.mode = tbserver::config::BuiltinMode::Off;
        TestServer::start(config)
    };
    let (mapped, read) = (server(tbserver::config::SyzygyIo::Mmap), server(tbserver::config::SyzygyIo::Read));
    let client = reqwest::blocking::Client::new();
    let body = |server: &TestServer, path: &str, accept: &str| {
        let response = client.get(format!("{}{path}", server.base)).header("accept", accept).send().unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        response.bytes().unwrap()
    };
    let text = std::fs::read_to_string(reference).unwrap();
    let mut positions = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()).step_by(2) {
        let r: Value = serde_json::from_str(line).unwrap();
        let fen = enc(r["fen"].as_str().unwrap());
        for path in [format!("/standard?fen={fen}"), format!("/api/v1/probe?fen={fen}")] {
            for accept in ["application/json", "application/cbor"] {
                assert_eq!(body(&mapped, &path, accept), body(&read, &path, accept), "{path} {accept}");
            }
        }
        positions += 1;
    }
    assert!(positions >= 100, "too few reference positions: {positions}");
    report!(
        "async-thread answers = blocking-thread answers: {positions} positions, /standard and /api/v1/probe, JSON and CBOR"
    );
}
