//! `/api/v1/analyse` and its SSE stream over real HTTP.

#[macro_use]
mod common;

use common::{TestServer, enc};

#[test]
fn analyse_proves_the_kbnk_mate_and_streams_depths() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let fen = enc("3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1");
    let (status, body) = server.get(&format!("/api/v1/analyse?fen={fen}&movetime_ms=3000"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["score"]["kind"], "mate", "{body}");
    assert_eq!(body["score"]["mate_in_plies"], 25, "{body}");
    assert_eq!(body["score"]["bound"], "exact", "{body}");
    assert_eq!(body["stop"], "mate_proven", "{body}");
    assert_eq!(body["root_bound"]["max_plies"], 26, "{body}");
    assert!(body["best_move"]["uci"].is_string() && body["best_move"]["san"].is_string());

    let (status, body) = server.get("/api/v1/analyse");
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("missing_parameter")));

    let text = reqwest::blocking::get(format!(
        "{}/api/v1/analyse/stream?fen={}&movetime_ms=500",
        server.base,
        enc("8/8/2k5/8/8/5r2/8/R2RK3 w - - 0 1")
    ))
    .unwrap()
    .text()
    .unwrap();
    let depths = text.matches("event: depth").count();
    report!("SSE depth events: {depths}");
    assert!(depths >= 1, "{text}");
    assert_eq!(text.matches("event: result").count(), 1, "{text}");
}

#[test]
fn too_many_searches_get_503_with_retry_after() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    // A position beyond the tables: every search runs for its whole budget.
    let url = format!(
        "{}/api/v1/analyse?fen={}&movetime_ms=1500",
        server.base,
        enc("r3k3/pppp4/8/8/8/8/PPPP4/R3K3 w - - 0 1")
    );
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                let r = reqwest::blocking::get(url).unwrap();
                (r.status().as_u16(), r.headers().get("retry-after").is_some())
            })
        })
        .collect();
    let results: Vec<(u16, bool)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    println!("{results:?}");
    assert!(results.iter().any(|&(s, _)| s == 200));
    assert!(results.iter().any(|&(s, retry)| s == 503 && retry));
}
