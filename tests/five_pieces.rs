//! Built-in tables of 5 pieces, generated on request. With no table files
//! at all: a probe never starts one (minutes of work nobody asked for);
//! `POST /api/v1/tables/generate` does, `GET` follows it; then probes answer
//! from it exactly (DTM50 included), the search stops on it, scores lines
//! of 6 pieces that capture into it exactly, and its values agree with the
//! Syzygy file of the same material.

#[macro_use]
mod common;

use std::time::{Duration, Instant};

use serde_json::Value;
use shakmaty::{CastlingMode, Chess, fen::Fen};
use shakmaty_syzygy::{Tablebase, Wdl};
use tbformat::{index::Pos, value};
use tbserver::builtin::{Material, Store};

/// KNNvKN: a Syzygy file in the shared data, identical men (the two white
/// knights), and the quickest table of 5 pieces to generate (about a minute
/// on 2 cores with its three smaller tables).
const MATERIAL: &str = "KNNvKN";

fn send(request: reqwest::blocking::RequestBuilder) -> (u16, Value) {
    let response = request.send().expect("request");
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(Value::Null))
}

fn fen_of(l: &tbformat::index::Layout, p: &Pos) -> String {
    let mut board = shakmaty::Board::empty();
    for i in 0..l.n {
        let (color, role) = l.men[i];
        board.set_piece_at(shakmaty::Square::new(p.sq[i] as u32), shakmaty::Piece { color, role });
    }
    let mut setup = shakmaty::Setup::empty();
    setup.board = board;
    setup.turn = p.turn;
    Fen::try_from_setup(setup).expect("a table position").to_string()
}

/// The won position of the table with the longest DTM50 at clock 0: a line
/// worth checking.
fn a_long_win(dir: &std::path::Path) -> (String, i32) {
    let store = Store::new(dir, false);
    let t = store.table(&Material::parse(MATERIAL).unwrap()).expect("generated table");
    let l = &t.layout;
    let mut best: Option<(u32, u16)> = None;
    for idx in 0..l.size as u32 {
        if !value::is_win(t.dtz(idx)) {
            continue;
        }
        let v = t.values(idx).dtm50;
        // Illegal indexes read as don't-care values.
        if value::is_win(v) && best.is_none_or(|(_, b)| value::plies(v) > value::plies(b)) && l.decode(idx).is_some() {
            best = Some((idx, v));
        }
    }
    let (idx, v) = best.expect("KNNvKN has wins");
    (fen_of(l, &l.decode(idx).expect("a legal position")), value::signed_plies(v))
}

/// A position of 6 pieces whose every legal move is a capture into the
/// table: Black, in check from a white rook beside its king, must take the
/// rook, and each capture leaves a won KNNvKN for White, at least 9 plies
/// from mate. Returns its FEN and its value for the side to move (Black),
/// signed plies: mated one ply after the slowest of those wins, as read off
/// the table for each capture.
fn a_capture_into_the_table(dir: &std::path::Path) -> (String, i32) {
    use shakmaty::{Color, FromSetup, Piece, Position, Role, attacks};
    let store = Store::new(dir, false);
    let t = store.table(&Material::parse(MATERIAL).unwrap()).expect("generated table");
    let l = &t.layout;
    for idx in 0..l.size as u32 {
        let v = t.values(idx).dtm50;
        if !value::is_win(v) || value::plies(v) < 9 {
            continue;
        }
        let Some(p) = l.decode(idx) else { continue };
        if p.turn != Color::White {
            continue;
        }
        // The won position after the capture: Black's king stands where
        // the rook stood.
        let after: Chess = fen_of(l, &p).parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap();
        let king = after.board().king_of(Color::Black).unwrap();
        for from in attacks::rook_attacks(king, shakmaty::Bitboard::EMPTY) & attacks::king_attacks(king) {
            if after.board().occupied().contains(from) {
                continue;
            }
            let mut setup = after.to_setup(shakmaty::EnPassantMode::Legal);
            setup.board.set_piece_at(from, Color::Black.king());
            setup.board.set_piece_at(king, Piece { color: Color::White, role: Role::Rook });
            setup.turn = Color::Black;
            let Ok(root) = Chess::from_setup(setup, CastlingMode::Standard) else { continue };
            let moves = root.legal_moves();
            if moves.is_empty() || moves.iter().any(|m| m.to() != king || !m.is_capture()) {
                continue;
            }
            // Black picks the slowest loss.
            let mut slowest = Some(0);
            for m in &moves {
                let child = root.clone().play(*m).unwrap();
                let w = store.probe_dtm50(&child, 0).ok().flatten().filter(|&w| value::is_win(w));
                slowest = slowest.zip(w).map(|(s, w)| s.max(value::plies(w) as i32));
            }
            if let Some(s) = slowest.filter(|&s| s >= 9) {
                let fen = Fen::from_position(&root, shakmaty::EnPassantMode::Legal).to_string();
                return (fen, -(s + 1));
            }
        }
    }
    panic!("{MATERIAL}: no position of 6 pieces that must capture into a win");
}

#[test]
fn a_five_piece_table_is_generated_on_request_then_answers_exactly() {
    let Some(syzygy) = common::syzygy_dir() else { return };
    let dir = std::env::temp_dir().join(format!("tbserver-five-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // No table files: built-in tables only, generated into `dir`.
    let mut config = tbserver::config::Config::default();
    config.builtin.dir = dir.clone();
    config.builtin.wait_ms = 200;
    let server = common::TestServer::start(config);
    let client = reqwest::blocking::Client::new();
    let api = |path: &str| format!("{}{path}", server.base);
    let status_url = api(&format!("/api/v1/tables/generate?material={MATERIAL}"));

    // A probe does not start it: nothing covers 5 pieces yet.
    let drawn = "8/8/8/8/1k6/8/8/KNN3n1 w - - 0 1";
    let (status, body) = send(client.get(api(&format!("/api/v1/probe?fen={}", drawn.replace(' ', "_")))));
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("too_many_pieces")), "{body}");
    // It says how to make the table (as KNNvKN, whichever side has the knights).
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&format!("POST /api/v1/tables/generate?material={MATERIAL}")), "{message}");
    let (status, body) = send(client.get(&status_url));
    assert_eq!((status, body["state"].as_str()), (200, Some("not_started")), "{body}");
    assert!(!dir.join(format!("{MATERIAL}.tbsb")).exists());

    // Bad names are the client's mistake.
    for bad in ["KXvK", "KQRBvKQ", "KvK", ""] {
        let (status, body) = send(client.post(api(&format!("/api/v1/tables/generate?material={bad}"))));
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("invalid_parameter")), "{bad}: {body}");
    }

    // Asked for by name (either colouring): 202 with the plan, KNNvKN last.
    let start = Instant::now();
    let (status, body) = send(client.post(api("/api/v1/tables/generate?material=KNvKNN")));
    assert_eq!(
        (status, body["state"].as_str(), body["material"].as_str()),
        (202, Some("pending"), Some(MATERIAL)),
        "{body}"
    );
    let tables = body["progress"]["tables"].as_array().unwrap();
    assert_eq!(tables.last().unwrap()["material"], MATERIAL, "{body}");
    assert!(body["progress"]["estimated_remaining_s"].as_f64().unwrap() > 0.0, "{body}");
    loop {
        let (status, body) = send(client.get(&status_url));
        assert_eq!(status, 200, "{body}");
        if body["state"] == "ready" {
            break;
        }
        assert_eq!(body["state"], "pending", "{body}");
        assert!(start.elapsed() < Duration::from_secs(900), "not ready after 15 min: {body}");
        std::thread::sleep(Duration::from_millis(500));
    }
    report!("{MATERIAL} generated on request in {:.1} s", start.elapsed().as_secs_f64());
    let (status, body) = send(client.post(&status_url));
    assert_eq!((status, body["state"].as_str()), (200, Some("ready")), "{body}");

    // Probes answer from it, DTM50 exact, and agree with Syzygy's WDL.
    // SAFETY: the shared table files are not modified while the test runs.
    let mut tb = unsafe { Tablebase::<Chess>::with_mmap_filesystem() };
    tb.add_directory(&syzygy).unwrap();
    let (win_fen, win_plies) = a_long_win(&dir);
    for fen in [drawn, win_fen.as_str()] {
        let (status, body) = send(client.get(api(&format!("/api/v1/probe?fen={}", fen.replace(' ', "_")))));
        assert_eq!(status, 200, "{fen}: {body}");
        assert_eq!(body["sources"]["dtm50"], "builtin", "{fen}: {body}");
        assert_eq!(body["dtm50"]["exact"], true, "{fen}: {body}");
        let pos: Chess = fen.parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap();
        let wdl = tb.probe_wdl_after_zeroing(&pos).unwrap();
        let expected = match wdl {
            Wdl::Loss => -2,
            Wdl::BlessedLoss => -1,
            Wdl::Draw => 0,
            Wdl::CursedWin => 1,
            Wdl::Win => 2,
        };
        assert_eq!(body["wdl50"].as_i64(), Some(expected), "{fen}: {body}");
    }
    // The search stops on the table at once, with its exact mate.
    let (status, body) = send(client.get(api(&format!("/api/v1/analyse?fen={}", win_fen.replace(' ', "_")))));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["stop"], "table_exact", "{win_fen}: {body}");
    assert_eq!(body["score"]["mate_in_plies"].as_i64(), Some(i64::from(win_plies)), "{win_fen}: {body}");
    report!("{MATERIAL}: {win_fen} mate in {win_plies} plies, exact, from the generated table");

    // Six pieces, beyond every table: the lines convert into the generated
    // one by a capture, so the search scores them exactly from it.
    let (six_fen, six_plies) = a_capture_into_the_table(&dir);
    let url = api(&format!("/api/v1/analyse?fen={}&movetime_ms=20000", six_fen.replace(' ', "_")));
    let (status, body) = send(client.get(url));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["score"]["bound"], "exact", "{six_fen}: {body}");
    assert_eq!(body["score"]["mate_in_plies"].as_i64(), Some(i64::from(six_plies)), "{six_fen}: {body}");
    assert_eq!(body["stop"], "mate_proven", "{six_fen}: {body}");
    report!("6 pieces: {six_fen} mated in {} plies, exact, through the generated {MATERIAL}", -six_plies);
    let _ = std::fs::remove_dir_all(&dir);
}
