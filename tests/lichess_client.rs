//! The contract of syzygy-tables.info's front end (GitHub
//! `niklasf/syzygy-tables.info`, `syzygy_tables_info/server.py` and
//! `model.py` at commit 1202ea4), a real client of the lichess tablebase
//! API: it asks with `Accept: application/cbor` and decodes the body with
//! `cbor2.loads`. Every key it reads, with the line that reads it:
//!
//! `GET /standard` (server.py `index`):
//! - 432 the body is CBOR (`cbor2.loads`), a map;
//! - 434 `dtz` (`.get`: int or null), 436 `precise_dtz` (`.get`: int or null),
//!   441 `dtm` (`.get`: int or null);
//! - 438, 439, 464 `category` (required; one of model.py's `ApiCategory`);
//! - 467 `moves` (required, an array of maps), each move:
//!   468/512 `checkmate`, 470/513 `stalemate`, 472/514 `insufficient_material`,
//!   478/510 `zeroing` (required booleans: `move_info["..."]`),
//!   474/476/508 `dtz` (int or null; compared with 0), 485–493 `category`,
//!   498 `dtm` (int or null; `abs()`), 501/504 `uci`, 505/511 `san` (strings;
//!   511 looks for "x" in `san`).
//!
//! `GET /standard/mainline` (server.py `syzygy_vs_syzygy_pgn`):
//! - 291 the body is CBOR when the status is 200 (404 otherwise is expected);
//! - 294–302 `dtz` (int or null, `%d`), 304 `mainline` (array), each step:
//!   305 `uci`, 307 `dtz` (an int: formatted with `%d` after a zeroing move);
//! - 321–330 `winner` (null, or a string starting with "w" or "b").
//!
//! Values the lichess-semantics work is changing (the `syzygy-*` categories,
//! `dtm` of a checkmated position) are checked for type only.

#[macro_use]
mod common;

use ciborium::Value;
use common::{TestServer, enc};

/// model.py `ApiCategory`.
const CATEGORIES: [&str; 10] = [
    "win",
    "unknown",
    "syzygy-win",
    "maybe-win",
    "cursed-win",
    "draw",
    "blessed-loss",
    "maybe-loss",
    "syzygy-loss",
    "loss",
];

/// Asks as the front end does; returns the status and the decoded CBOR body,
/// after checking the headers that tell a cache the body depends on Accept.
fn ask_cbor(server: &TestServer, path: &str, fen: &str) -> (u16, Option<Value>, serde_json::Value) {
    let url = format!("{}{path}?fen={}", server.base, enc(fen));
    let client = reqwest::blocking::Client::new();
    let response = client.get(&url).header("accept", "application/cbor").send().unwrap();
    let status = response.status().as_u16();
    if status != 200 {
        return (status, None, serde_json::Value::Null);
    }
    assert_eq!(response.headers()["content-type"], "application/cbor", "{path} {fen}");
    let vary: Vec<_> =
        response.headers().get_all("vary").iter().map(|v| v.to_str().unwrap().to_ascii_lowercase()).collect();
    assert!(vary.iter().any(|v| v.split(',').any(|p| p.trim() == "accept")), "Vary: {vary:?}");
    let body = response.bytes().unwrap();
    let value: Value = ciborium::from_reader(&body[..]).unwrap_or_else(|e| panic!("{path} {fen}: not CBOR: {e}"));
    // The same answer as the JSON one, value for value.
    let as_json: serde_json::Value = ciborium::from_reader(&body[..]).unwrap();
    let json: serde_json::Value = client.get(&url).send().unwrap().json().unwrap();
    assert_eq!(as_json, json, "{path} {fen}: CBOR and JSON differ");
    (status, Some(value), json)
}

fn get<'a>(map: &'a Value, key: &str) -> Option<&'a Value> {
    map.as_map()
        .unwrap_or_else(|| panic!("not a map: {map:?}"))
        .iter()
        .find(|(k, _)| k.as_text() == Some(key))
        .map(|(_, v)| v)
}

/// `key` is present and an integer or null (`.get()` would take absence as
/// null, but lichess always sends the key).
fn int_or_null(map: &Value, key: &str, what: &str) -> Option<i128> {
    match get(map, key) {
        Some(Value::Integer(i)) => Some(i128::from(*i)),
        Some(Value::Null) => None,
        other => panic!("{what}: `{key}` is {other:?}, wanted an integer or null"),
    }
}

fn boolean(map: &Value, key: &str, what: &str) -> bool {
    match get(map, key) {
        Some(Value::Bool(b)) => *b,
        other => panic!("{what}: `{key}` is {other:?}, wanted a boolean"),
    }
}

fn text<'a>(map: &'a Value, key: &str, what: &str) -> &'a str {
    get(map, key).and_then(Value::as_text).unwrap_or_else(|| panic!("{what}: `{key}` is not a string"))
}

fn category_of<'a>(map: &'a Value, what: &str) -> &'a str {
    let category = text(map, "category", what);
    assert!(CATEGORIES.contains(&category), "{what}: category {category:?} is not one the front end knows");
    category
}

/// Checks every key `index()` reads; returns (dtz, category, number of moves).
fn check_standard(server: &TestServer, fen: &str) -> (Option<i128>, String, usize) {
    let (status, body, _) = ask_cbor(server, "/standard", fen);
    assert_eq!(status, 200, "/standard {fen}");
    let body = body.unwrap();
    let dtz = int_or_null(&body, "dtz", fen);
    int_or_null(&body, "precise_dtz", fen);
    int_or_null(&body, "dtm", fen);
    let category = category_of(&body, fen).to_owned();
    for key in ["checkmate", "stalemate", "insufficient_material"] {
        boolean(&body, key, fen);
    }
    let moves =
        get(&body, "moves").and_then(Value::as_array).unwrap_or_else(|| panic!("{fen}: `moves` is not an array"));
    for m in moves {
        let uci = text(m, "uci", fen).to_owned();
        let what = format!("{fen} {uci}");
        assert!((4..=5).contains(&uci.len()), "{what}");
        text(m, "san", &what);
        for key in ["checkmate", "stalemate", "insufficient_material", "zeroing"] {
            boolean(m, key, &what);
        }
        int_or_null(m, "dtz", &what);
        int_or_null(m, "dtm", &what);
        category_of(m, &what);
    }
    (dtz, category, moves.len())
}

/// Checks every key the PGN export reads; returns (dtz, winner, plies).
fn check_mainline(server: &TestServer, fen: &str) -> (Option<i128>, Option<String>, usize) {
    let (status, body, _) = ask_cbor(server, "/standard/mainline", fen);
    assert_eq!(status, 200, "/standard/mainline {fen}");
    let body = body.unwrap();
    let dtz = int_or_null(&body, "dtz", fen);
    let winner = match get(&body, "winner") {
        Some(Value::Null) => None,
        Some(Value::Text(w)) => {
            assert!(w.starts_with('w') || w.starts_with('b'), "{fen}: winner {w:?}");
            Some(w.clone())
        }
        other => panic!("{fen}: `winner` is {other:?}"),
    };
    let line =
        get(&body, "mainline").and_then(Value::as_array).unwrap_or_else(|| panic!("{fen}: `mainline` is not an array"));
    for step in line {
        let uci = text(step, "uci", fen);
        assert!(int_or_null(step, "dtz", fen).is_some(), "{fen} {uci}: the PGN export formats `dtz` with %d");
    }
    (dtz, winner, line.len())
}

#[test]
fn syzygy_tables_info_reads_every_answer() {
    let Some(server) = TestServer::with_shared_tables() else { return };

    // KNvKP: a draw; the knight takes the pawn.
    let (dtz, category, moves) = check_standard(&server, "8/8/8/1p6/8/2N5/3k4/5K2 w - - 0 1");
    assert_eq!((dtz, category.as_str()), (Some(0), "draw"));
    assert!(moves > 0);
    // KRvK with 79 halfmoves gone: DTZ 21 reaches past the 100-ply limit
    // only if rounded (a syzygy-/maybe- category; which, the other work decides).
    let (dtz, category, _) = check_standard(&server, "4k3/8/8/8/8/8/8/4K2R w - - 79 40");
    assert_eq!(dtz, Some(21));
    assert!(category.ends_with("win"), "{category}");
    // KQNvKQ at halfmove 70.
    let (dtz, category, _) = check_standard(&server, "7q/3N2k1/8/8/8/7Q/8/1K6 w - - 70 1");
    assert!(dtz.is_some_and(|d| d > 0) && category.ends_with("win"), "{dtz:?} {category}");
    // Checkmated and stalemated: no moves (the front end answers these by
    // itself, but a lichess client may ask).
    let (_, category, moves) = check_standard(&server, "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1");
    assert_eq!((category.as_str(), moves), ("loss", 0));
    let (dtz, category, moves) = check_standard(&server, "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1");
    assert_eq!((dtz, category.as_str(), moves), (Some(0), "draw", 0));
    // Five pieces: KQvKRB, black to move wins.
    let (dtz, category, moves) = check_standard(&server, "8/7K/8/q7/3k4/4R3/8/4B3 b - - 0 1");
    assert_eq!((dtz, category.as_str()), (Some(2), "win"));
    assert!(moves > 10);

    // The PGN export's line.
    let (dtz, winner, plies) = check_mainline(&server, "8/7K/8/q7/3k4/4R3/8/4B3 b - - 0 1");
    assert_eq!((dtz, winner.as_deref()), (Some(2), Some("b")));
    assert!(plies > 0);
    let (dtz, winner, plies) = check_mainline(&server, "8/8/8/1p6/8/2N5/3k4/5K2 w - - 0 1");
    assert_eq!((dtz, winner, plies), (Some(0), None, 0));
    let (_, winner, plies) = check_mainline(&server, "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1");
    assert_eq!((winner.as_deref(), plies), (Some("w"), 0));
    report!(
        "syzygy-tables.info contract: 6 /standard and 3 /standard/mainline answers decoded from CBOR, equal to JSON"
    );
}

#[test]
fn errors_follow_the_accept_header_except_on_lichess_endpoints() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let client = reqwest::blocking::Client::new();
    let ask =
        |path: &str| client.get(format!("{}{path}", server.base)).header("accept", "application/cbor").send().unwrap();
    // tbserver's own API: the error in CBOR, same shape as the JSON one.
    let response = ask("/api/v1/probe?fen=not-a-fen");
    assert_eq!(response.status(), 400);
    assert_eq!(response.headers()["content-type"], "application/cbor");
    let body: serde_json::Value = ciborium::from_reader(&response.bytes().unwrap()[..]).unwrap();
    assert_eq!(body["error"]["code"], "invalid_fen", "{body}");
    // Errors made by the framework and the limits too.
    let response = ask("/api/v1/nowhere");
    assert_eq!(response.status(), 404);
    let body: serde_json::Value = ciborium::from_reader(&response.bytes().unwrap()[..]).unwrap();
    assert_eq!(body["error"]["code"], "not_found");
    // lichess answers errors in text whatever is asked, and its clients show
    // the body as it came: tbserver's JSON error, readable.
    let response = ask("/standard?fen=not-a-fen");
    assert_eq!(response.status(), 400);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: serde_json::Value = response.json().unwrap();
    assert_eq!(body["error"]["code"], "invalid_fen");
    // tbserver's own answers in CBOR too.
    let response = ask(&format!("/api/v1/probe?fen={}", enc("8/8/8/4k3/8/8/8/KR6 w - - 0 1")));
    assert_eq!(
        (response.status().as_u16(), response.headers()["content-type"].to_str().unwrap()),
        (200, "application/cbor")
    );
    let cbor: serde_json::Value = ciborium::from_reader(&response.bytes().unwrap()[..]).unwrap();
    let (_, json) = server.get(&format!("/api/v1/probe?fen={}", enc("8/8/8/4k3/8/8/8/KR6 w - - 0 1")));
    assert_eq!(cbor, json);
}
