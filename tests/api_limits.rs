//! Every limit answers with a JSON error, a stable code, the right status
//! and, where retrying helps, `Retry-After`.

#[macro_use]
mod common;

use std::sync::{Arc, Barrier};

use common::{TestServer, enc, syzygy_dir};
use reqwest::blocking::{Client, Response};
use serde_json::Value;
use tbserver::config::{BuiltinMode, Config};

/// Syzygy 3–4 piece tables from the shared data, built-in tables off.
fn config() -> Option<Config> {
    let mut config = Config { syzygy: vec![syzygy_dir()?], cache_entries: 0, ..Config::default() };
    config.builtin.mode = BuiltinMode::Off;
    Some(config)
}

/// Status, `Retry-After` and JSON body.
fn parts(response: Response) -> (u16, Option<u64>, Value) {
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
    (status, retry, response.json().unwrap_or(Value::Null))
}

fn assert_error((status, retry, body): (u16, Option<u64>, Value), want_status: u16, code: &str, want_retry: bool) {
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert_eq!(retry.is_some(), want_retry, "Retry-After {retry:?} for {code}");
}

const KRVK: &str = "8/8/8/4k3/8/8/8/KR6 w - - 0 1";

#[test]
fn request_size_limits() {
    let Some(mut config) = config() else { return };
    config.limits.max_body_bytes = 1000;
    config.limits.max_batch = 2;
    config.limits.max_query_bytes = 400;
    let server = TestServer::start(config);
    let client = Client::new();
    let get = |q: &str| parts(client.get(format!("{}/api/v1/probe?{q}", server.base)).send().unwrap());
    let post = |body: String| {
        parts(
            client
                .post(format!("{}/api/v1/probe", server.base))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .unwrap(),
        )
    };

    assert_error(get(&format!("fen={}&pad={}", enc(KRVK), "x".repeat(400))), 414, "query_too_long", false);
    let (status, _, _) = get(&format!("fen={}", enc(KRVK)));
    assert_eq!(status, 200, "a query under the limit is served");
    // FENs have their own fixed cap (256 bytes), under any query limit.
    assert_error(get(&format!("fen={}", "8".repeat(300))), 400, "invalid_fen", false);
    assert_error(post(format!(r#"{{"fens": ["{}"]}}"#, "x".repeat(2000))), 413, "body_too_large", false);
    assert_error(post(serde_json::json!({ "fens": [KRVK, KRVK, KRVK] }).to_string()), 413, "batch_too_large", false);
    assert_error(post("{\"fens\": [".to_owned()), 400, "invalid_body", false);
    let (status, _, body) = post(serde_json::json!({ "fens": [KRVK, KRVK] }).to_string());
    assert_eq!((status, body["results"].as_array().map(Vec::len)), (200, Some(2)), "{body}");
    assert_error(
        parts(client.delete(format!("{}/api/v1/probe", server.base)).send().unwrap()),
        405,
        "method_not_allowed",
        false,
    );
    assert_error(
        parts(client.put(format!("{}/standard", server.base)).send().unwrap()),
        405,
        "method_not_allowed",
        false,
    );
    report!("size limits: query 414, FEN 400, body 413, batch 413, bad JSON 400, methods 405 checked");
}

#[test]
fn per_client_rate_limit() {
    let Some(mut config) = config() else { return };
    config.limits.rate_limit_per_second = 0.5;
    config.limits.rate_limit_burst = 3;
    let server = TestServer::start(config);
    let client = Client::new();
    let url = format!("{}/api/v1/probe?fen={}", server.base, enc(KRVK));
    let statuses: Vec<u16> = (0..3).map(|_| client.get(&url).send().unwrap().status().as_u16()).collect();
    assert_eq!(statuses, [200, 200, 200], "the burst is served");
    let (status, retry, body) = parts(client.get(&url).send().unwrap());
    assert_error((status, retry, body), 429, "rate_limited", true);
    // One token per 2 s: the bucket is empty, so the next is due in 2 s.
    assert_eq!(retry, Some(2));
    let health = client.get(format!("{}/healthz", server.base)).send().unwrap().status().as_u16();
    assert_eq!(health, 200, "health checks are never limited");
    report!("rate limit: burst of 3 served, 4th answered 429 with Retry-After: 2");
}

#[test]
fn rate_limit_is_off_by_default() {
    let Some(config) = config() else { return };
    let server = TestServer::start(config);
    let client = Client::new();
    let url = format!("{}/api/v1/probe?fen={}", server.base, enc(KRVK));
    assert!((0..200).all(|_| client.get(&url).send().unwrap().status() == 200));
}

#[test]
fn slow_requests_time_out_with_json() {
    let Some(mut config) = config() else { return };
    config.limits.request_timeout_ms = 200;
    let server = TestServer::start(config);
    // Six pieces: beyond the tables, so the search uses its whole budget.
    let fen = "4k3/8/8/8/8/8/PPP5/4K3 w - - 0 1";
    let started = std::time::Instant::now();
    let got = parts(
        Client::new().get(format!("{}/api/v1/analyse?fen={}&movetime_ms=3000", server.base, enc(fen))).send().unwrap(),
    );
    let elapsed = started.elapsed();
    assert_error(got, 503, "timeout", true);
    assert!(elapsed.as_millis() < 2000, "answered after {elapsed:?}");
    report!("request timeout: 503 timeout after {} ms (limit 200 ms)", elapsed.as_millis());
}

#[test]
fn probe_queue_is_bounded() {
    let Some(mut config) = config() else { return };
    config.limits.max_concurrent_probes = 1;
    config.limits.max_queued_probes = 0;
    let server = Arc::new(TestServer::start(config));
    // Batches of 256 full answers keep the single slot busy for a while.
    let body = serde_json::json!({ "fens": vec!["1r6/8/8/4k3/8/8/8/K1Q5 w - - 0 1"; 256] }).to_string();
    let barrier = Arc::new(Barrier::new(8));
    let results: Vec<(u16, Option<u64>, Value)> = (0..8)
        .map(|_| {
            let (server, body, barrier) = (Arc::clone(&server), body.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let client = Client::new();
                barrier.wait();
                parts(
                    client
                        .post(format!("{}/api/v1/probe", server.base))
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .unwrap(),
                )
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let served = results.iter().filter(|r| r.0 == 200).count();
    let busy: Vec<_> = results.into_iter().filter(|r| r.0 != 200).collect();
    assert!(served >= 1 && !busy.is_empty(), "served {served}, refused {}", busy.len());
    for refused in busy.iter().cloned() {
        assert_error(refused, 503, "busy", true);
    }
    report!("probe queue: {served} of 8 simultaneous batches served, {} refused with 503 busy", busy.len());
}

#[test]
fn cors_policy() {
    let Some(config) = config() else { return };
    let server = TestServer::start(config);
    let client = Client::new();
    let url = format!("{}/api/v1/probe?fen={}", server.base, enc(KRVK));
    let allowed = |client: &Client, url: &str, origin: &str| {
        let r = client.get(url).header("origin", origin).send().unwrap();
        r.headers().get("access-control-allow-origin").map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(allowed(&client, &url, "https://example.org").as_deref(), Some("*"), "any origin by default");

    let Some(mut config) = self::config() else { return };
    config.limits.cors_allowed_origins = vec!["https://lichess.org".to_owned()];
    let server = TestServer::start(config);
    let url = format!("{}/api/v1/probe?fen={}", server.base, enc(KRVK));
    assert_eq!(allowed(&client, &url, "https://lichess.org").as_deref(), Some("https://lichess.org"));
    assert_eq!(allowed(&client, &url, "https://evil.example"), None);
    // A preflight for the JSON batch.
    let preflight = client
        .request(reqwest::Method::OPTIONS, format!("{}/api/v1/probe", server.base))
        .header("origin", "https://lichess.org")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .unwrap();
    assert_eq!(preflight.status(), 200);
    assert!(preflight.headers()["access-control-allow-methods"].to_str().unwrap().contains("POST"));
}

/// Sends `head` (a request head, written by hand: no HTTP client builds a
/// URI over 64 KiB) and returns the status and JSON body of the answer (and
/// no `Retry-After`).
fn raw_request(base: &str, head: &[u8]) -> (u16, Option<u64>, Value) {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    // The server may answer and close before reading everything.
    let _ = stream.write_all(head);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no answer: {text:?}"));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{head}"));
    assert!(head.to_ascii_lowercase().contains("content-type: application/json"), "{head}");
    (status, None, serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}")))
}

#[test]
fn overlong_request_lines_and_headers_get_json_errors() {
    let Some(config) = config() else { return };
    let server = TestServer::start(config);
    let fen = enc(KRVK);
    let get_with_query = |bytes: usize| {
        let head = format!("GET /standard?fen={fen}&pad={} HTTP/1.1\r\nHost: x\r\n\r\n", "x".repeat(bytes));
        raw_request(&server.base, head.as_bytes())
    };
    // Over tbserver's limit (2 KiB by default), under the HTTP server's.
    assert_error(get_with_query(10_000), 414, "query_too_long", false);
    // 100 KB: the HTTP server's own refusal (request line over 64 KiB).
    assert_error(get_with_query(100_000), 414, "query_too_long", false);
    // 1 MB: the request line overflows the HTTP server's buffer.
    assert_error(get_with_query(1_000_000), 414, "query_too_long", false);
    // A 1 MB header, and too many headers.
    let head = format!("GET /standard?fen={fen} HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "x".repeat(1_000_000));
    assert_error(raw_request(&server.base, head.as_bytes()), 431, "headers_too_large", false);
    let many: String = (0..200).map(|i| format!("X-H{i}: 1\r\n")).collect();
    let head = format!("GET /standard?fen={fen} HTTP/1.1\r\nHost: x\r\n{many}\r\n");
    assert_error(raw_request(&server.base, head.as_bytes()), 431, "headers_too_large", false);
    // Not HTTP at all.
    assert_error(raw_request(&server.base, b"HELLO\r\n\r\n"), 400, "bad_request", false);
    // A large but acceptable header is served.
    let head = format!(
        "GET /standard?fen={fen} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: {}\r\n\r\n",
        "x".repeat(100_000)
    );
    let (status, _, body) = raw_request(&server.base, head.as_bytes());
    assert_eq!(status, 200, "{body}");
    report!(
        "refusals: 10 KB / 100 KB / 1 MB query 414 query_too_long, 1 MB header and 200 headers 431 headers_too_large, garbage 400"
    );
}
