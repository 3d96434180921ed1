//! Every error code, with its HTTP status and JSON shape.

#[macro_use]
mod common;

use common::{TestServer, enc, syzygy_dir};
use serde_json::Value;

fn assert_error(got: (u16, Value), status: u16, code: &str) {
    let (s, body) = got;
    assert_eq!(s, status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

#[test]
fn every_error_code_has_its_status() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let mut checked = 0;
    let mut check = |got, status, code| {
        assert_error(got, status, code);
        checked += 1;
    };
    check(server.get("/api/v1/probe"), 400, "missing_parameter");
    check(server.get("/api/v1/probe?fen=banana"), 400, "invalid_fen");
    check(server.get(&format!("/api/v1/probe?fen={}", "8".repeat(300))), 400, "invalid_fen");
    let illegal = server.get(&format!("/api/v1/probe?fen={}", enc("4k3/8/8/8/8/8/8/4R2K w - - 0 1")));
    let message = illegal.1["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.starts_with("illegal position: ") && message.matches("illegal position").count() == 1, "{message}");
    check(illegal, 422, "illegal_position");
    check(server.get(&format!("/api/v1/probe?fen={}", enc("4k3/8/8/8/8/8/8/4K2R w K - 0 1"))), 422, "castling_rights");
    check(
        server.get(&format!("/api/v1/probe?fen={}", enc("4k3/pppp4/8/8/8/8/PPPP4/4K3 w - - 0 1"))),
        422,
        "too_many_pieces",
    );
    // KQQvKQ is not among the shared 5-piece tables.
    let (status, body) = server.get(&format!("/api/v1/probe?fen={}", enc("4k3/7q/8/8/8/8/QQ6/4K3 w - - 0 1")));
    assert!(body["error"]["message"].as_str().unwrap().contains("KQQvKQ.rtbw"), "names the table: {body}");
    check((status, body), 404, "missing_table");
    check(server.get("/no/such/page"), 404, "not_found");
    check(server.post("/api/v1/probe", "{not json"), 400, "invalid_body");
    check(server.post("/api/v1/probe", r#"{"positions": []}"#), 400, "invalid_body");
    let many = vec!["8/8/8/4k3/8/8/8/KR6 w - - 0 1"; 257];
    check(server.post("/api/v1/probe", &serde_json::json!({ "fens": many }).to_string()), 413, "batch_too_large");
    check(server.get("/standard?fen=banana"), 400, "invalid_fen");
    check(server.get("/api/v1/mainline"), 400, "missing_parameter");
    report!("error codes: {checked} checks passed");
}

#[test]
fn batch_answers_in_order_with_errors_inline() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let body =
        serde_json::json!({ "fens": ["8/8/8/4k3/8/8/8/KR6 w - - 0 1", "garbage", "8/8/8/4k3/8/8/8/KQ6 b - - 0 1"] });
    let (status, answer) = server.post("/api/v1/probe", &body.to_string());
    assert_eq!(status, 200, "{answer}");
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["category"], "win");
    assert_eq!(results[1]["error"]["code"], "invalid_fen");
    assert_eq!(results[2]["category"], "loss");
    assert_eq!(results[2]["side_to_move"], "black");
}

/// A table that passes the start-up checks but cannot be read gives a
/// `table_error` naming it; other tables keep serving.
#[test]
fn broken_table_fails_cleanly() {
    let Some(syzygy) = syzygy_dir() else { return };
    let dir = std::env::temp_dir().join(format!("tbserver-broken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Right magic and a plausible size, but cut short.
    let original = std::fs::read(syzygy.join("KQvK.rtbw")).unwrap();
    std::fs::write(dir.join("KQvK.rtbw"), &original[..16 + 64]).unwrap();
    std::fs::write(dir.join("KRvK.rtbw"), std::fs::read(syzygy.join("KRvK.rtbw")).unwrap()).unwrap();
    std::fs::write(dir.join("KRvK.rtbz"), std::fs::read(syzygy.join("KRvK.rtbz")).unwrap()).unwrap();
    // Garbage with a wrong size: reported at start-up, never probed.
    std::fs::write(dir.join("KBvK.rtbw"), b"garbage").unwrap();
    let mut config = tbserver::config::Config { syzygy: vec![dir.clone()], cache_entries: 0, ..Default::default() };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    let server = TestServer::start(config);

    let (status, body) = server.get(&format!("/api/v1/probe?fen={}", enc("8/8/8/4k3/8/8/8/KQ6 w - - 0 1")));
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "table_error");
    assert_eq!(body["error"]["table"], "KQvK.rtbw");
    let (status, body) = server.get(&format!("/api/v1/probe?fen={}", enc("8/8/8/4k3/8/8/8/KR6 w - - 0 1")));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["category"], "win");
    let (_, tables) = server.get("/api/v1/tables");
    let bad: Vec<&Value> =
        tables["tables"].as_array().unwrap().iter().filter(|t| !t["problems"].as_array().unwrap().is_empty()).collect();
    // KBvK at start-up; KQvK once a probe found it broken.
    assert_eq!(bad.len(), 2, "{tables}");
    assert_eq!(bad[0]["name"], "KBvK.rtbw");
    assert_eq!(bad[1]["name"], "KQvK.rtbw");
    assert_eq!(bad[1]["problems"][0], "failed when probed: corrupted table (truncated or damaged)");
    std::fs::remove_dir_all(&dir).ok();
}

/// With no table directory at all, built-in tables answer every position of
/// up to 4 pieces and say so; 5 pieces are out of reach.
#[test]
fn builtin_tables_alone_answer_four_pieces() {
    let dir = std::env::temp_dir().join(format!("tbserver-builtin-api-{}", std::process::id()));
    let mut config = tbserver::config::Config::default();
    config.builtin.dir = dir.clone();
    config.cache_entries = 0;
    let server = TestServer::start(config);
    // KRvK and KPvK: small enough to generate on first use in a test.
    let (status, a) = server.get(&format!("/api/v1/probe?fen={}", enc("8/8/8/4k3/8/8/8/KR6 w - - 0 1")));
    assert_eq!(status, 200, "{a}");
    assert_eq!(
        (a["sources"]["wdl50"].as_str(), a["sources"]["dtz50"].as_str(), a["sources"]["dtm"].as_str()),
        (Some("builtin"), Some("builtin"), Some("builtin"))
    );
    assert_eq!(a["dtz50"]["rounding"], "exact");
    assert_eq!(a["dtm"]["plies"], 29);
    let (status, a) = server.get(&format!("/api/v1/probe?fen={}", enc("8/3KP3/8/8/8/8/8/k7 w - - 0 1")));
    assert_eq!(status, 200, "{a}");
    assert_eq!(a["category"], "win");
    assert_error(
        server.get(&format!("/api/v1/probe?fen={}", enc("8/8/8/4k3/8/8/8/KRR1N3 w - - 0 1"))),
        422,
        "too_many_pieces",
    );
    std::fs::remove_dir_all(&dir).ok();
}
