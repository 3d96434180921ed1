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
        Err(err) => {
            let status = tbserver::http::error::ApiError::from(err.clone()).status();
            assert!((400..500).contains(&status), "{err:?}");
        }
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
        let json =
            content_type.starts_with("application/json").then(|| serde_json::from_slice::<serde_json::Value>(&body));
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

/// chesstb files damaged in place: the input says which real file of the
/// shared data (KQK or KPK, any kind) to damage and how (truncation, byte
/// changes). Opening and probing never panics, and a material that does not
/// depend on the damaged one keeps answering: a broken file makes only the
/// probes that read it fail.
/// The corpus holds only these small edit scripts, never table bytes.
pub struct ChesstbDamage {
    /// Copies of the real files, laid out as chesstb ships them.
    work: std::path::PathBuf,
    files: Vec<(std::path::PathBuf, Vec<u8>)>,
}

/// Positions probed after each change, both materials, both sides to move,
/// several clocks.
const CHESSTB_FENS: [&str; 8] = [
    "8/8/8/8/8/2k5/8/KQ6 w - - 0 1",
    "8/8/8/8/8/2k5/8/KQ6 b - - 37 1",
    "4k3/8/8/8/8/8/1Q6/K7 w - - 90 1",
    "k7/8/8/8/2KP4/8/8/8 w - - 64 1",
    "8/2P4K/8/8/1k6/8/8/8 b - - 95 1",
    "8/8/8/4k3/8/8/3P4/3K4 w - - 0 1",
    "8/8/8/4k3/8/8/3P4/3K4 b - - 12 1",
    "8/3P4/8/8/8/8/k7/2K5 w - - 3 1",
];

impl ChesstbDamage {
    pub fn new(chesstb: &Path) -> ChesstbDamage {
        let work = std::env::temp_dir().join(format!("tbserver-fuzz-chesstb-{}", std::process::id()));
        let mut files = Vec::new();
        for kind in ["wdl", "dtz", "dtm", "dtm50", "dtc"] {
            std::fs::create_dir_all(work.join(kind)).unwrap();
            for entry in std::fs::read_dir(chesstb.join(kind)).unwrap_or_else(|e| panic!("{}: {e}", chesstb.display()))
            {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if (name.starts_with("KQK.") || name.starts_with("KPK.")) && !name.ends_with(".info") {
                    let bytes = std::fs::read(&path).unwrap();
                    let copy = work.join(kind).join(&name);
                    std::fs::write(&copy, &bytes).unwrap();
                    files.push((copy, bytes));
                }
            }
        }
        files.sort();
        assert!(files.len() >= 9, "chesstb KQK/KPK files missing under {}", chesstb.display());
        ChesstbDamage { work, files }
    }

    /// Byte 0: which file; byte 1 bit 0: truncate at the `u32` in bytes
    /// 2..6 (modulo the length); then 5-byte edits, a `u32` offset (modulo
    /// the length) and a byte XORed there.
    pub fn run(&self, data: &[u8]) {
        use shakmaty::Position as _;
        use tbserver::sources::TableSource as _;
        let Some((&which, rest)) = data.split_first() else { return };
        let (path, original) = &self.files[usize::from(which) % self.files.len()];
        let mut bytes = original.clone();
        let mut edits = rest;
        if let Some((&mode, after)) = rest.split_first() {
            edits = after;
            if mode & 1 == 1 && after.len() >= 4 {
                let at = u32::from_le_bytes(after[..4].try_into().unwrap()) as usize;
                bytes.truncate(at % (bytes.len() + 1));
                edits = &after[4..];
            }
        }
        for edit in edits.chunks_exact(5) {
            if bytes.is_empty() {
                break;
            }
            let at = u32::from_le_bytes(edit[..4].try_into().unwrap()) as usize % bytes.len();
            bytes[at] ^= edit[4];
        }
        std::fs::write(path, &bytes).unwrap();
        let damaged = path.file_name().unwrap().to_string_lossy()[..3].to_owned();
        let source = tbserver::sources::chesstb::ChesstbSource::open(
            std::slice::from_ref(&self.work),
            1 << 20,
            chesstb_reader::DEFAULT_MAX_OPEN_FILES,
        );
        for fen in CHESSTB_FENS {
            let pos: shakmaty::Chess =
                fen.parse::<shakmaty::fen::Fen>().unwrap().into_position(shakmaty::CastlingMode::Standard).unwrap();
            let wdl = source.probe_wdl(&pos);
            let _ = source.probe_dtz(&pos);
            let _ = source.probe_dtm_plies(&pos);
            let _ = source.probe_dtm50_plies(&pos);
            let _ = source.probe_dtc(&pos);
            // KPK positions may read KQK (promotions, when a dropped side
            // is rebuilt from its children); KQK never reads KPK.
            let material = tbserver::sources::chesstb::file_stem(pos.board());
            if material == "KQK" && damaged == "KPK" {
                assert!(matches!(wdl, Ok(Some(_))), "{fen}: {wdl:?} although only {damaged} is damaged");
            }
        }
        let _ = source.tables();
        drop(source);
        std::fs::write(path, original).unwrap();
    }
}

impl Drop for ChesstbDamage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
    }
}
