//! What the fuzz targets check, shared with `tests/fuzz_corpus.rs`, which
//! replays every committed corpus file through the same functions.
//!
//! Each function panics (a crash for libFuzzer) when tbserver misbehaves on
//! an input: a panic of its own, a FEN that does not survive a round trip,
//! a 5xx other than the intended 503s, an error that is not JSON.
#![allow(dead_code)]

use std::path::Path;

use axum::{
    Router,
    body::Body,
    extract::Query,
    http::{Method, Request, Uri},
};
use tbserver::{
    config::{BuiltinMode, Config},
    http::{FenQuery, Shared, analyse::AnalyseQuery, pages::parse_board_request},
    request::{normalized_fen, parse_fen},
};
use tower::ServiceExt as _;

/// FEN parsing: never panics; what parses normalizes to a FEN that parses
/// to the same position.
pub fn fen(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_fen(text) {
        Ok(pos) => {
            let normalized = normalized_fen(&pos);
            let again = parse_fen(&normalized).unwrap_or_else(|e| panic!("{normalized:?} does not parse again: {e}"));
            assert_eq!(normalized_fen(&again), normalized);
        }
        Err(err) => assert!((400..500).contains(&err.status()), "{err:?}"),
    }
}

/// Query strings as the handlers parse them: `?fen=`, the analysis
/// parameters, and `/board.svg`'s own parser and renderer.
pub fn query(data: &[u8]) {
    let Ok(raw) = std::str::from_utf8(data) else { return };
    if let Ok(request) = parse_board_request(Some(raw)) {
        let svg = tbserver::board_svg::render(&request.board, &request.options);
        assert!(svg.starts_with("<svg"), "{svg:.40}");
    }
    if let Ok(uri) = format!("/?{raw}").parse::<Uri>() {
        let _ = Query::<FenQuery>::try_from_uri(&uri);
        let _ = Query::<AnalyseQuery>::try_from_uri(&uri);
    }
}

/// Endpoints the pipeline target reaches; the first input byte picks one.
const ENDPOINTS: [(Method, &str); 8] = [
    (Method::GET, "/api/v1/probe"),
    (Method::GET, "/api/v1/mainline"),
    (Method::GET, "/standard"),
    (Method::GET, "/standard/mainline"),
    (Method::GET, "/api/v1/analyse"),
    (Method::GET, "/api/v1/analyse/stream"),
    (Method::GET, "/board.svg"),
    (Method::POST, "/api/v1/probe"),
];

/// Status 503 codes that are answers, not failures.
const INTENDED_503: [&str; 3] = ["table_error", "busy", "timeout"];

/// The whole service in process: router, limits, tables (Syzygy 3–5 piece
/// from the shared data; built-in tables off so that nothing is generated),
/// searches capped at a few milliseconds.
pub struct Pipeline {
    router: Router,
    runtime: tokio::runtime::Runtime,
}

impl Pipeline {
    pub fn new(syzygy: &Path) -> Pipeline {
        assert!(syzygy.is_dir(), "no Syzygy tables at {}", syzygy.display());
        let mut config = Config { syzygy: vec![syzygy.to_owned()], cache_entries: 1000, ..Config::default() };
        config.builtin.mode = BuiltinMode::Off;
        config.search.max_movetime_ms = 5;
        config.search.default_movetime_ms = 5;
        let tablebases = std::sync::Arc::new(tbserver::app::open_for_server(&config));
        let router = tbserver::http::router(Shared::new(tablebases, config));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        Pipeline { router, runtime }
    }

    /// First byte: endpoint; the rest: the query string (GET) or the body (POST).
    pub fn run(&self, data: &[u8]) {
        let Some((&selector, rest)) = data.split_first() else { return };
        let (method, path) = &ENDPOINTS[usize::from(selector) % ENDPOINTS.len()];
        let request = if *method == Method::POST {
            Request::post(*path).header("content-type", "application/json").body(Body::from(rest.to_vec()))
        } else {
            let Ok(query) = std::str::from_utf8(rest) else { return };
            Request::get(format!("{path}?{query}")).body(Body::empty())
        };
        let Ok(request) = request else { return };
        let described = format!("{} {}", request.method(), request.uri());
        let (status, content_type, body) = self.runtime.block_on(async {
            let response = self.router.clone().oneshot(request).await.expect("infallible");
            let status = response.status();
            let content_type = response.headers().get("content-type").map(|v| v.to_str().unwrap_or("").to_owned());
            let body = axum::body::to_bytes(response.into_body(), 64 << 20).await.expect("body completes");
            (status, content_type.unwrap_or_default(), body)
        });
        let json = content_type.starts_with("application/json").then(|| serde_json::from_slice::<serde_json::Value>(&body));
        if status.is_client_error() || status.is_server_error() {
            let value = match json {
                Some(Ok(v)) => v,
                _ => panic!("{described}: {status} without a JSON body: {:?}", String::from_utf8_lossy(&body)),
            };
            let code = value["error"]["code"].as_str().unwrap_or_else(|| panic!("{described}: no error code: {value}"));
            if status.is_server_error() {
                assert!(status == 503 && INTENDED_503.contains(&code), "{described}: {status} {value}");
            }
        } else if let Some(parsed) = json {
            parsed.unwrap_or_else(|e| panic!("{described}: invalid JSON ({e})"));
        }
    }
}
