//! The lichess-compatible endpoints behave as lichess's tablebase server
//! (`lichess-org/lila-tablebase`) does on the same tables: uncovered and
//! castling positions, status codes, category words, null cases, and a
//! mainline identical to `shakmaty_syzygy::Tablebase::best_move` played out.

#[macro_use]
mod common;

use common::{TestServer, enc, reference_file, syzygy_dir};
use serde_json::Value;
use shakmaty::{Chess, Position, fen::Fen, uci::UciMove};
use shakmaty_syzygy::Tablebase;

fn get(server: &TestServer, path: &str, fen: &str) -> (u16, Value) {
    server.get(&format!("{path}?fen={}", enc(fen)))
}

fn ok(server: &TestServer, path: &str, fen: &str) -> Value {
    let (status, body) = get(server, path, fen);
    assert_eq!(status, 200, "{path} {fen}: {body}");
    body
}

fn moves(answer: &Value) -> &Vec<Value> {
    answer["moves"].as_array().unwrap()
}

#[test]
fn positions_without_tables_are_unknown_and_rate_what_they_can() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    // Six pieces, tables up to five, no capture: nothing is known.
    let a = ok(&server, "/standard", "8/8/4k3/8/2P1P3/4K3/r7/5R2 w - - 0 1");
    assert_eq!((a["category"].as_str(), a["dtz"].is_null(), a["dtm"].is_null()), (Some("unknown"), true, true), "{a}");
    assert_eq!(moves(&a).len(), 20);
    assert!(moves(&a).iter().all(|m| m["category"] == "unknown" && m["dtz"].is_null()), "{a}");
    // lichess's order among unknowns: zeroing moves (the pawn pushes) first.
    assert_eq!(moves(&a)[..2].iter().map(|m| m["uci"].as_str().unwrap()).collect::<Vec<_>>(), ["c4c5", "e4e5"]);

    // Six pieces with a capture into KRRvKR: the capture is rated and wins,
    // so the position is a win with DTZ 1 (the winning capture is zeroing).
    let a = ok(&server, "/standard", "6kr/8/8/8/8/8/n7/RR4K1 w - - 0 1");
    let first = &moves(&a)[0];
    assert_eq!(
        (first["uci"].as_str(), first["category"].as_str(), first["conversion"].as_bool()),
        (Some("a1a2"), Some("loss"), Some(true)),
        "{a}"
    );
    assert!(first["dtz"].as_i64().unwrap() < 0, "{first}");
    assert!(moves(&a)[1..].iter().all(|m| m["category"] == "unknown"), "{a}");
    assert_eq!(
        (a["category"].as_str(), a["dtz"].as_i64(), a["precise_dtz"].as_i64()),
        (Some("win"), Some(1), Some(1)),
        "{a}"
    );

    // tbserver's own API still refuses them, with its own codes.
    let (status, body) = get(&server, "/api/v1/probe", "8/8/4k3/8/2P1P3/4K3/r7/5R2 w - - 0 1");
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("too_many_pieces")));

    // Any legal position is answered, even a full board (all unknown)...
    let a = ok(&server, "/standard", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    assert_eq!((a["category"].as_str(), moves(&a).len()), (Some("unknown"), 20));
    // ...but more material than a game can have is illegal: 400, as lichess.
    let (status, body) = get(&server, "/standard", "qqqqkqqq/qqqqqqqq/8/8/8/8/QQQQQQQQ/QQQQKQQQ w - - 0 1");
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("illegal_position")), "{body}");
    report!("uncovered positions: 200 unknown; a winning capture from six pieces rated");
}

#[test]
fn castling_rights_lose_the_position_value_but_not_the_moves() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let fen = "4k3/8/8/8/8/8/8/4K2R w K - 0 1";
    let a = ok(&server, "/standard", fen);
    // The position itself is not in any table; its verdict is its best move's.
    assert!(a["dtz"].is_null() && a["precise_dtz"].is_null() && a["dtm"].is_null(), "{a}");
    assert_eq!(a["category"], "win");
    // Every move loses the right, so every move is probed (castling too).
    assert_eq!(moves(&a).len(), 15);
    assert!(moves(&a).iter().all(|m| m["dtz"].is_i64() && m["category"] == "loss"), "{a}");
    let castle = moves(&a).iter().find(|m| m["uci"] == "e1g1").expect("O-O is legal");
    assert_eq!(castle["san"], "O-O");
    // The same material without the right agrees move by move.
    let plain = ok(&server, "/standard", "4k3/8/8/8/8/8/8/4K2R w - - 0 1");
    let rook_lift = |a: &Value| moves(a).iter().find(|m| m["uci"] == "h1h7").unwrap()["dtz"].clone();
    assert_eq!(rook_lift(&a), rook_lift(&plain));

    // Rights kept by the opponent after the move keep it unknown.
    let a = ok(&server, "/standard", "r3k3/8/8/8/8/8/8/4K2R w Kq - 0 1");
    assert!(moves(&a).iter().all(|m| m["category"] == "unknown"), "{a}");

    // The mainline of such a position is not in the tablebases: 404.
    let (status, body) = get(&server, "/standard/mainline", fen);
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("castling_rights")), "{body}");
    let (status, body) = get(&server, "/standard/mainline", "8/8/4k3/8/2P1P3/4K3/r7/5R2 w - - 0 1");
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("too_many_pieces")), "{body}");
    // Bad FENs and illegal positions are 400 there too.
    assert_eq!(get(&server, "/standard/mainline", "banana").0, 400);
    assert_eq!(get(&server, "/standard/mainline", "4k3/8/8/8/8/8/8/4R2K w - - 0 1").0, 400);
    // tbserver's own API keeps its 422 for castling rights.
    let (status, body) = get(&server, "/api/v1/probe", fen);
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("castling_rights")));
    report!("castling rights: 15 moves probed, mainline 404");
}

#[test]
fn category_words_and_null_cases_are_lichess_s() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    // DTZ 21 (rounded) at clock 79: exactly at the edge, rounding unknown.
    let a = ok(&server, "/standard", "4k3/8/8/8/8/8/8/4K2R w - - 79 40");
    assert_eq!(
        (a["category"].as_str(), a["dtz"].as_i64(), a["precise_dtz"].as_i64()),
        (Some("syzygy-win"), Some(21), None),
        "{a}"
    );
    assert_eq!((moves(&a)[0]["uci"].as_str(), moves(&a)[0]["category"].as_str()), (Some("h1h7"), Some("syzygy-loss")));
    assert_eq!(moves(&a)[1]["category"], "blessed-loss");
    // tbserver's own API says the same in its own words.
    let (_, own) = get(&server, "/api/v1/probe", "4k3/8/8/8/8/8/8/4K2R w - - 79 40");
    assert_eq!(own["category"], "maybe-win");

    let a = ok(&server, "/standard", "7q/3N2k1/8/8/8/7Q/8/1K6 w - - 70 1");
    assert_eq!((a["category"].as_str(), a["dtz"].as_i64()), (Some("syzygy-win"), Some(30)), "{a}");
    assert_eq!((moves(&a)[0]["uci"].as_str(), moves(&a)[0]["category"].as_str()), (Some("h3c3"), Some("syzygy-loss")));
    // Then the draws (the capture first), then the moves that lose.
    assert_eq!((moves(&a)[1]["san"].as_str(), moves(&a)[1]["category"].as_str()), (Some("Qxh8+"), Some("draw")));
    assert_eq!(moves(&a).last().unwrap()["category"], "win");

    // The verdict is the flip of the best move's, cursed wins included.
    for fen in
        ["3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1", "8/8/2N5/8/3k4/7N/p2K4/8 b - - 0 1", "8/8/8/4k3/8/8/8/KB6 w - - 0 1"]
    {
        let a = ok(&server, "/standard", fen);
        let flip = |c: &str| {
            match c {
                "win" => "loss",
                "loss" => "win",
                "cursed-win" => "blessed-loss",
                "blessed-loss" => "cursed-win",
                other => other,
            }
            .to_owned()
        };
        assert_eq!(a["category"].as_str().unwrap(), flip(moves(&a)[0]["category"].as_str().unwrap()), "{fen}");
    }
    assert_eq!(ok(&server, "/standard", "8/8/2N5/8/3k4/7N/p2K4/8 b - - 0 1")["category"], "cursed-win");

    // Checkmate: DTM null (0 means a draw in lichess's DTM), DTZ −1.
    let mate = ok(&server, "/standard", "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1");
    assert_eq!(
        (mate["checkmate"].as_bool(), mate["category"].as_str(), mate["dtz"].as_i64()),
        (Some(true), Some("loss"), Some(-1))
    );
    assert!(mate["dtm"].is_null() && mate["dtw"].is_null() && mate["dtc"].is_null(), "{mate}");
    assert!(moves(&mate).is_empty());
    // The mating move: checkmate first, DTM null; other moves keep their DTM.
    let a = ok(&server, "/standard", "7k/8/6K1/8/8/8/8/5Q2 w - - 0 1");
    let qf8 = &moves(&a)[0];
    assert_eq!(
        (qf8["san"].as_str(), qf8["checkmate"].as_bool(), qf8["dtz"].as_i64()),
        (Some("Qf8#"), Some(true), Some(-1))
    );
    assert!(qf8["dtm"].is_null(), "{qf8}");
    assert_eq!(moves(&a)[1]["dtm"].as_i64(), Some(-2), "{a}");
    assert_eq!(a["dtm"].as_i64(), Some(1));
    // Ties in lichess's sort key come out in lichess's order: recorded from
    // lila-tablebase a06a88b on the same tables (equal keys among the DTZ
    // −23 and −27 king and bishop moves).
    let a = ok(&server, "/standard", "8/4k3/8/2b5/8/8/b7/4K3 b - - 0 1");
    let order: Vec<&str> = moves(&a).iter().map(|m| m["uci"].as_str().unwrap()).collect();
    assert_eq!(
        order.join(" "),
        "a2c4 e7d6 e7e6 c5d4 e7f6 a2b1 a2b3 a2d5 a2e6 a2f7 a2g8 c5g1 c5b4 c5b6 c5d6 c5a7 e7d7 e7f7 c5a3 c5e3 e7d8 e7e8 e7f8 c5f2"
    );
    // A mate once the clock reached 100 no longer wins.
    let late = ok(&server, "/standard", "7k/8/6K1/8/8/8/8/5Q2 w - - 100 80");
    let qf8 = moves(&late).iter().find(|m| m["san"] == "Qf8#").unwrap();
    assert_eq!(qf8["category"], "blessed-loss");
    // Stalemate and bare kings: a draw with DTZ 0 and DTM 0.
    for fen in ["7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "8/8/8/4k3/8/8/8/4K3 w - - 0 1"] {
        let a = ok(&server, "/standard", fen);
        assert_eq!(
            (a["category"].as_str(), a["dtz"].as_i64(), a["precise_dtz"].as_i64(), a["dtm"].as_i64()),
            (Some("draw"), Some(0), Some(0), Some(0)),
            "{fen}: {a}"
        );
    }
    report!("categories: syzygy-win/-loss at the 100-ply edge; null DTM for checkmate");
}

/// As the server parses it (tables hold positions with impossible checks).
fn position(fen: &str) -> Chess {
    tbserver::request::parse_position(fen).unwrap()
}

/// lichess's `mainline_blocking`, written again on `shakmaty_syzygy` alone.
fn best_move_line(tables: &Tablebase<Chess>, mut pos: Chess) -> Value {
    let dtz = tables.probe_dtz(&pos).unwrap();
    let mut line = Vec::new();
    if !dtz.is_zero() {
        while pos.halfmoves() < 100 {
            let Some((m, after)) = tables.best_move(&pos).unwrap() else { break };
            line.push(serde_json::json!({
                "uci": UciMove::from_standard(m).to_string(),
                "dtz": after.ignore_rounding().0,
                "precise_dtz": after.precise().map(|d| d.0),
            }));
            pos.play_unchecked(m);
        }
    }
    serde_json::json!({
        "mainline": line,
        "winner": pos.outcome().winner().map(|c| c.char().to_string()),
        "dtz": dtz.ignore_rounding().0,
        "precise_dtz": dtz.precise().map(|d| d.0),
    })
}

#[test]
fn mainline_is_best_move_played_out() {
    let (Some(server), Some(reference), Some(dir)) = (TestServer::with_shared_tables(), reference_file(), syzygy_dir())
    else {
        return;
    };
    let mut tables = Tablebase::new();
    tables.add_directory(&dir).unwrap();
    let text = std::fs::read_to_string(reference).unwrap();
    let (mut positions, mut plies, mut mates, mut claims) = (0, 0, 0, 0);
    let mut check = |fen: &str| {
        let expected = best_move_line(&tables, position(fen));
        let mut got = ok(&server, "/standard/mainline", fen);
        for step in got["mainline"].as_array_mut().unwrap() {
            step.as_object_mut().unwrap().remove("san");
        }
        assert_eq!(got, expected, "{fen}");
        let n = expected["mainline"].as_array().unwrap().len();
        if expected["winner"].is_null() {
            claims += 1
        } else {
            mates += 1
        }
        positions += 1;
        plies += n;
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let r: Value = serde_json::from_str(line).unwrap();
        if r["dtz"].as_i64() != Some(0) {
            check(r["fen"].as_str().unwrap());
        }
    }
    // Positions of note: a mate in 6 plies, a queen promotion, and a
    // position at half-move clock 79.
    for fen in
        ["3kR3/8/5K2/8/4r2Q/8/8/8 b - - 0 1", "8/8/6K1/8/7p/3p4/2k5/8 b - - 0 1", "4k3/8/8/8/8/8/8/4K2R w - - 79 40"]
    {
        check(fen);
    }
    report!(
        "mainline = best_move played out: {positions} decisive positions, {plies} plies, {mates} end in mate, {claims} in a draw claim"
    );
    assert!(positions >= 300, "too few decisive reference positions: {positions}");
    let a = ok(&server, "/standard/mainline", "3kR3/8/5K2/8/4r2Q/8/8/8 b - - 0 1");
    let sans: Vec<&str> = a["mainline"].as_array().unwrap().iter().map(|s| s["san"].as_str().unwrap()).collect();
    assert_eq!(sans, ["Kc7", "Qxe4", "Kb6", "Rb8+", "Ka5", "Qa8#"]);
    assert_eq!(a["winner"], "w");
    let a = ok(&server, "/standard/mainline", "8/8/6K1/8/7p/3p4/2k5/8 b - - 0 1");
    assert!(a["mainline"].as_array().unwrap().iter().any(|s| s["san"] == "d1=Q"), "{a}");
    // A draw has an empty line and no winner; so does a position already mated.
    let a = ok(&server, "/standard/mainline", "8/8/8/4k3/8/8/8/KB6 w - - 0 1");
    assert_eq!((a["mainline"].as_array().unwrap().len(), a["winner"].is_null(), a["dtz"].as_i64()), (0, true, Some(0)));
    let a = ok(&server, "/standard/mainline", "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1");
    assert_eq!(
        (a["mainline"].as_array().unwrap().len(), a["winner"].as_str(), a["dtz"].as_i64()),
        (0, Some("w"), Some(-1))
    );
}

/// tbserver's own DTZ line: mate whenever a mate is there, queen promotions,
/// no underpromotion that gains nothing.
#[test]
fn own_dtz_line_prefers_mate_and_queens() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    for fen in ["3kR3/8/5K2/8/4r2Q/8/8/8 b - - 0 1", "8/8/6K1/8/7p/3p4/2k5/8 b - - 0 1"] {
        let (status, line) = server.get(&format!("/api/v1/mainline?metric=dtz&fen={}", enc(fen)));
        assert_eq!(status, 200, "{line}");
        assert_eq!(line["end"], "checkmate", "{fen}: {line}");
        let mut pos = position(fen);
        for step in line["mainline"].as_array().unwrap() {
            let answer =
                ok(&server, "/api/v1/probe", &Fen::from_position(&pos, shakmaty::EnPassantMode::Legal).to_string());
            let can_mate = moves(&answer).iter().any(|m| m["checkmate"] == true);
            let m = UciMove::from_ascii(step["uci"].as_str().unwrap().as_bytes()).unwrap().to_move(&pos).unwrap();
            pos.play_unchecked(m);
            assert!(!can_mate || pos.is_checkmate(), "{fen}: {} passes up a mate", step["san"]);
            if let Some(role) = m.promotion() {
                assert_eq!(role, shakmaty::Role::Queen, "{fen}: underpromotion {}", step["san"]);
            }
        }
    }
    let (_, line) = server.get(&format!("/api/v1/mainline?metric=dtz&fen={}", enc("8/8/6K1/8/7p/3p4/2k5/8 b - - 0 1")));
    let sans: Vec<&str> = line["mainline"].as_array().unwrap().iter().map(|s| s["san"].as_str().unwrap()).collect();
    assert_eq!(sans[..3], ["d2", "Kf5", "d1=Q"], "{sans:?}");
    // Where DTM is known (Gaviota, 3 pieces), it breaks DTZ ties: the DTZ
    // line of KRvK is then as short as the DTM line.
    let fen = "8/8/8/4k3/8/8/8/KR6 w - - 0 1";
    let (_, dtz_line) = server.get(&format!("/api/v1/mainline?metric=dtz&fen={}", enc(fen)));
    let (_, dtm_line) = server.get(&format!("/api/v1/mainline?metric=dtm&fen={}", enc(fen)));
    let len = |l: &Value| l["mainline"].as_array().unwrap().len();
    report!("own DTZ lines: KRvK {} plies (DTM line {})", len(&dtz_line), len(&dtm_line));
    assert_eq!(len(&dtz_line), len(&dtm_line), "{dtz_line}");
}

/// Syzygy's WDL and DTZ without its `best_move`, so that
/// `probe::dtz_best_move` runs its own rule (the one used for built-in tables).
struct WithoutBestMove(std::sync::Arc<dyn tbserver::sources::TableSource>);

impl tbserver::sources::TableSource for WithoutBestMove {
    fn source(&self) -> tbserver::domain::Source {
        self.0.source()
    }
    fn max_pieces(&self) -> usize {
        self.0.max_pieces()
    }
    fn probe_wdl(&self, pos: &Chess) -> tbserver::sources::ProbeResult<shakmaty_syzygy::Wdl> {
        self.0.probe_wdl(pos)
    }
    fn probe_dtz(
        &self,
        pos: &Chess,
    ) -> tbserver::sources::ProbeResult<shakmaty_syzygy::MaybeRounded<shakmaty_syzygy::Dtz>> {
        self.0.probe_dtz(pos)
    }
    fn tables(&self) -> Vec<tbserver::sources::TableInfo> {
        self.0.tables()
    }
}

#[test]
fn own_best_move_rule_equals_the_library_s() {
    let (Some(reference), Some(dir)) = (reference_file(), syzygy_dir()) else { return };
    let syzygy = tbserver::app::open_table_dirs(std::slice::from_ref(&dir), &[]);
    let wrapped: Vec<std::sync::Arc<dyn tbserver::sources::TableSource>> =
        syzygy.source_handles().map(|s| std::sync::Arc::new(WithoutBestMove(std::sync::Arc::clone(s))) as _).collect();
    let own = tbserver::tablebase::Tablebases::new(wrapped);
    let mut tables = Tablebase::new();
    tables.add_directory(&dir).unwrap();
    let text = std::fs::read_to_string(reference).unwrap();
    let mut compared = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let r: Value = serde_json::from_str(line).unwrap();
        let mut pos = position(r["fen"].as_str().unwrap());
        // The position and the first plies of its line.
        for _ in 0..8 {
            let expected = tables.best_move(&pos).unwrap();
            let got = tbserver::probe::dtz_best_move(&own, &pos).unwrap();
            let view = |b: Option<(shakmaty::Move, shakmaty_syzygy::MaybeRounded<shakmaty_syzygy::Dtz>)>| {
                b.map(|(m, d)| (m, d.ignore_rounding()))
            };
            assert_eq!(view(got), view(expected), "{}", Fen::from_position(&pos, shakmaty::EnPassantMode::Legal));
            compared += 1;
            let Some((m, _)) = expected else { break };
            pos.play_unchecked(m);
        }
    }
    report!("own best-move rule = library's on {compared} positions");
    assert!(compared > 3000, "{compared}");
}

/// lichess fills `precise_dtz` only where Syzygy stores DTZ exactly; tbserver
/// also where another source (here the built-in tables) knows the exact
/// value, on the position, every move and every mainline step.
#[test]
fn precise_dtz_comes_from_exact_sources() {
    let (Some(plain), Some(server), Some(dir)) =
        (TestServer::with_shared_tables(), TestServer::with_shared_and_builtin_tables(), syzygy_dir())
    else {
        return;
    };
    let mut tables = Tablebase::new();
    tables.add_directory(&dir).unwrap();
    let fen = "8/8/8/4k3/8/8/8/KR6 w - - 0 1";
    // Syzygy alone: rounded, as lichess answers.
    let a = ok(&plain, "/standard", fen);
    assert_eq!((a["dtz"].as_i64(), a["precise_dtz"].as_i64()), (Some(29), None), "{a}");
    // In KRvK the winner zeroes only by mating (nothing to capture): DTZ is
    // DTM, which Gaviota gives independently of any DTZ table.
    let a = ok(&server, "/standard", fen);
    assert_eq!((a["dtz"].as_i64(), a["precise_dtz"].as_i64()), (a["dtm"].as_i64(), a["dtm"].as_i64()), "{a}");
    let mut filled = 0;
    for m in moves(&a) {
        assert_eq!(m["precise_dtz"], m["dtz"], "{m}");
        if m["category"] != "draw" {
            assert_eq!(m["dtz"], m["dtm"], "{m}");
            filled += 1;
        }
    }
    assert!(filled > 5, "{a}");
    // The mainline: every step's DTZ exact, the moves still the library's.
    let line = ok(&server, "/standard/mainline", fen);
    let mut expected = best_move_line(&tables, position(fen));
    let steps = expected["mainline"].as_array_mut().unwrap();
    for step in steps.iter_mut() {
        step["precise_dtz"] = step["dtz"].clone();
    }
    assert!(steps.iter().any(|s| s["dtz"].as_i64().unwrap().abs() > 1));
    let got: Vec<(&Value, &Value, &Value)> =
        line["mainline"].as_array().unwrap().iter().map(|s| (&s["uci"], &s["dtz"], &s["precise_dtz"])).collect();
    let want: Vec<(&Value, &Value, &Value)> = steps.iter().map(|s| (&s["uci"], &s["dtz"], &s["precise_dtz"])).collect();
    assert_eq!(got, want);
    assert_eq!((line["dtz"].as_i64(), line["precise_dtz"].as_i64()), (Some(29), Some(29)));

    // At clock 79 the rounded 21 could not tell a win from a cursed win
    // (syzygy-win); the exact DTZ (= Gaviota's DTM here) can.
    let edge = "4k3/8/8/8/8/8/8/4K2R w - - 79 40";
    let a = ok(&server, "/standard", edge);
    let exact = a["precise_dtz"].as_i64().expect("precise");
    assert_eq!(Some(exact), a["dtm"].as_i64());
    assert_eq!(a["category"], if exact + 79 <= 100 { "win" } else { "cursed-win" }, "{a}");

    // Five pieces: no exact source, so lichess's null stays. Other tests
    // keep 5-piece built-in tables (KRBvKQ, KNNvKN, ...) in the directory
    // this server shares with them, and those are exact: skip their materials.
    let builtin_dir = common::generated_builtin_dir();
    let text = std::fs::read_to_string(reference_file().unwrap()).unwrap();
    let (five, syzygy) = text
        .lines()
        .filter_map(|l| Some(serde_json::from_str::<Value>(l).ok()?["fen"].as_str()?.to_owned()))
        .filter(|fen| position(fen).board().occupied().count() == 5)
        .filter(|fen| {
            !builtin_dir.join(format!("{}.tbsb", tbserver::material::normalized(position(fen).board()))).exists()
        })
        .find_map(|fen| match tables.probe_dtz(&position(&fen)).unwrap() {
            rounded @ shakmaty_syzygy::MaybeRounded::Rounded(d) if d.0 != 0 => Some((fen, rounded)),
            _ => None,
        })
        .expect("a 5-piece reference position with a rounded DTZ");
    let a = ok(&server, "/standard", &five);
    assert_eq!(
        (a["dtz"].as_i64(), a["precise_dtz"].is_null()),
        (Some(i64::from(syzygy.ignore_rounding().0)), true),
        "{a}"
    );
    report!(
        "precise_dtz: KRvK exact at the root, {filled} moves and {} mainline steps; 5 pieces stay null",
        steps.len()
    );
}
