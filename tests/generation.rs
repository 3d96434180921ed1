//! Requests while built-in tables are being generated: nobody waits for work
//! it does not need, concurrent first requests share one generation, and
//! shutdown in the middle of a generation exits promptly and leaves no
//! partial table behind.

#[macro_use]
mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use common::{TestServer, syzygy_dir};
use serde_json::Value;

/// KPPvK, KPvKP, KRPvK: the pawn endings whose built-in tables take longest
/// (with every table they convert into).
const SLOW_FENS: [&str; 3] =
    ["8/7P/4P3/8/7K/8/5k2/8 b - - 0 1", "8/3p4/1k5P/8/1K6/8/8/8 b - - 0 1", "8/8/8/8/3k4/8/3PK3/4R3 w - - 0 1"];

/// KBNvK, White to move: a win (Syzygy says so too). Its built-in tables
/// (KBvK, KNvK, KBNvK) take seconds, not minutes: the tests that wait for
/// complete answers wait for these, so that the quick tier does not generate
/// every table three times over (the storm below generates them all once).
const KBNK_WIN: &str = "8/8/8/4k3/8/8/8/KBN5 w - - 0 1";

/// 16 concurrent requests whose tables depend on one another: a lazy
/// generation that waits for a dependency inside its own thread pool
/// freezes on them for good.
const FROZE: [&str; 8] = [
    "8/8/8/1p6/8/2N5/3k4/5K2 w - - 0 1",
    "8/7P/4P3/8/7K/8/5k2/8 b - - 0 1",
    "8/3p4/1k5P/8/1K6/8/8/8 b - - 0 1",
    "8/4P3/8/8/2k5/8/8/4K2Q w - - 0 1",
    "8/8/8/8/3k4/8/3PK3/4R3 w - - 0 1",
    "8/8/8/8/3k4/8/3PK3/4B3 w - - 0 1",
    "8/8/8/8/3k4/8/3PK3/4N3 w - - 0 1",
    "8/8/2p5/8/3k4/8/3PK3/8 w - - 0 1",
];

fn empty_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tbserver-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn url(base: &str, path: &str, fen: &str) -> String {
    format!("{base}{path}?fen={}", fen.replace(' ', "_"))
}

/// Status, `Retry-After` and body of a GET.
fn get(client: &reqwest::blocking::Client, url: &str) -> (u16, Option<u64>, Value) {
    let response = client.get(url).send().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
    (status, retry, response.json().unwrap_or(Value::Null))
}

fn pending(answer: &Value) -> Vec<String> {
    let mut fields: Vec<String> = Vec::new();
    let moves = answer["moves"].as_array().into_iter().flatten();
    for list in std::iter::once(answer).chain(moves).filter_map(|a| a["pending"].as_array()) {
        for f in list.iter().map(|f| f.as_str().unwrap().to_owned()) {
            if !fields.contains(&f) {
                fields.push(f);
            }
        }
    }
    fields
}

/// Asks until the answer is complete, as a client that honours `Retry-After`.
fn until_complete(client: &reqwest::blocking::Client, url: &str, limit: Duration) -> Value {
    let start = Instant::now();
    loop {
        let (status, retry, body) = get(client, url);
        match status {
            200 if pending(&body).is_empty() => return body,
            200 => std::thread::sleep(Duration::from_millis(500)),
            503 => {
                assert_eq!(body["error"]["code"], "generating", "{url}: {body}");
                std::thread::sleep(Duration::from_secs(retry.expect("Retry-After with 503 generating")));
            }
            other => panic!("{url}: status {other}: {body}"),
        }
        assert!(start.elapsed() < limit, "{url}: no complete answer within {limit:?}");
    }
}

#[test]
fn files_answer_at_once_while_builtin_tables_generate() {
    let Some(syzygy) = syzygy_dir() else { return };
    let dir = empty_dir("pending");
    let mut config = tbserver::config::Config { syzygy: vec![syzygy], ..Default::default() };
    config.builtin.dir = dir.clone();
    let server = TestServer::start(config);
    let client = reqwest::blocking::Client::new();
    // KBNvK first: queued first among the urgent tables, it completes soon.
    for fen in std::iter::once(KBNK_WIN).chain(SLOW_FENS) {
        let start = Instant::now();
        let (status, _, body) = get(&client, &url(&server.base, "/api/v1/probe", fen));
        let took = start.elapsed();
        assert_eq!(status, 200, "{fen}: {body}");
        assert!(took < Duration::from_secs(1), "{fen}: answered in {took:?}");
        assert_eq!(body["sources"]["dtz50"], "syzygy", "{fen}");
        let pending = pending(&body);
        assert!(
            pending.contains(&"dtm".to_owned()) && pending.contains(&"dtm50".to_owned()),
            "{fen}: pending {pending:?}"
        );
        assert!(!pending.contains(&"dtz50".to_owned()) && !pending.contains(&"wdl50".to_owned()), "{fen}: {pending:?}");
        // The lichess endpoint likewise.
        let start = Instant::now();
        let (status, _, body) = get(&client, &url(&server.base, "/standard", fen));
        assert_eq!(status, 200, "{fen}: {body}");
        assert!(start.elapsed() < Duration::from_secs(1));
        report!("{fen}: first probe in {took:?}, pending {pending:?}");
    }
    // Once generated, the same request (cache on: the partial answer was
    // not kept) carries DTM and DTM50 from the built-in tables. The slow
    // tables are abandoned when the server stops.
    let start = Instant::now();
    let fen = KBNK_WIN;
    let body = until_complete(&client, &url(&server.base, "/api/v1/probe", fen), Duration::from_secs(600));
    assert_eq!(body["sources"]["dtm"], "builtin", "{fen}: {body}");
    assert_eq!(body["sources"]["dtm50"], "builtin", "{fen}: {body}");
    assert!(body.get("pending").is_none());
    let again = get(&client, &url(&server.base, "/api/v1/probe", fen)).2;
    assert_eq!(again, body, "{fen}: the cached answer is the complete one");
    report!("complete KBNvK answer after {:?} of generation", start.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn builtin_only_answers_generating_with_progress_then_the_values() {
    let dir = empty_dir("generating");
    let mut config = tbserver::config::Config::default();
    config.builtin.dir = dir.clone();
    config.builtin.wait_ms = 300;
    let server = TestServer::start(config);
    let client = reqwest::blocking::Client::new();
    let fen = KBNK_WIN;
    let start = Instant::now();
    let (status, retry, body) = get(&client, &url(&server.base, "/api/v1/probe", fen));
    let took = start.elapsed();
    assert_eq!(status, 503, "{body}");
    assert!(took < Duration::from_secs(3), "waited {took:?}, configured 300 ms");
    assert!(retry.is_some_and(|s| (1..=5).contains(&s)), "Retry-After {retry:?}");
    let error = &body["error"];
    assert_eq!(error["code"], "generating");
    let progress = &error["generating"];
    assert_eq!(progress["material"], "KBNvK");
    let needed = progress["tables_needed"].as_u64().unwrap();
    let deps = tbserver::builtin::Material::parse("KBNvK").unwrap().dependencies().len() as u64;
    assert_eq!(needed, deps + 1, "{progress}");
    let tables = progress["tables"].as_array().unwrap();
    assert!(!tables.is_empty() && tables.len() as u64 <= needed);
    assert_eq!(tables.last().unwrap()["material"], "KBNvK", "in generation order: {progress}");
    assert!(tables.iter().any(|t| t["state"] == "generating"), "{progress}");
    report!("503 generating after {took:?}: {} of {needed} ready", progress["tables_ready"]);
    let body = until_complete(&client, &url(&server.base, "/api/v1/probe", fen), Duration::from_secs(600));
    assert_eq!(body["sources"]["dtm50"], "builtin");
    assert_eq!(body["category"], "win", "{body}");
    assert_eq!(body["dtm"]["plies"], body["dtm50"]["plies"], "a mate well within 50 moves: {body}");
    report!("complete after {:?}", start.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The real binary on an ephemeral port with built-in tables only; its log
/// lines are collected.
struct Server {
    child: std::process::Child,
    base: String,
    log: common::Log,
}

impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            eprintln!("server log, last lines:\n{}", log[log.len().saturating_sub(60)..].join("\n"));
        }
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn start_binary(builtin_dir: &Path) -> Server {
    let config = builtin_dir.with_extension("toml");
    std::fs::write(&config, "[builtin]\nmode = \"lazy\"\nwait_ms = 1000\n").unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_tbserver"));
    command
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", "127.0.0.1:0"])
        .env("TBSERVER_BUILTIN_DIR", builtin_dir)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    let (child, base, log) = common::spawn_listening(command);
    Server { child, base, log }
}

/// Built-in table files in `dir`, and anything else left there (each
/// table's statistics, `<material>.stats.json`, go with it).
fn files(dir: &Path) -> (Vec<String>, Vec<String>) {
    let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap());
    let (tables, other): (Vec<String>, Vec<String>) = names.partition(|n| n.ends_with(".tbsb") && !n.contains(".tmp"));
    let with_table = |n: &String| n.strip_suffix(".stats.json").is_some_and(|m| tables.contains(&format!("{m}.tbsb")));
    let other = other.into_iter().filter(|n| !with_table(n)).collect();
    (tables, other)
}

/// Tables the server logged as generated; fails if one was generated twice.
fn generated_once(server: &Server) -> Vec<String> {
    let log = server.log.lock().unwrap().clone();
    let generated: Vec<String> = log
        .iter()
        .filter(|l| l.contains("generated built-in table"))
        .map(|l| l.split("table=").nth(1).unwrap().split_whitespace().next().unwrap().to_owned())
        .collect();
    let mut unique = generated.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), generated.len(), "a table was generated twice: {generated:?}");
    generated
}

/// SIGTERM, then: exit 0 within 5 s, no partial file left, every table file
/// whole. Returns how long the exit took and the tables kept.
fn terminate(mut server: Server, dir: &Path) -> (Duration, Vec<String>) {
    assert!(Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap().success());
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(signalled.elapsed() < Duration::from_secs(5), "still running 5 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    let exit_after = signalled.elapsed();
    assert!(status.success(), "{status}");
    let (tables, other) = files(dir);
    assert!(other.is_empty(), "left behind: {other:?}");
    let store = tbserver::builtin::Store::new(dir, false);
    for name in &tables {
        let m = tbserver::builtin::Material::parse(name.trim_end_matches(".tbsb")).unwrap();
        store.table(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    (exit_after, tables)
}

/// The 16 requests of [`FROZE`] at once, on a fresh server:
/// each answers (200, or 503 `generating`) within `wait_ms` plus its probing.
fn storm(client: &reqwest::blocking::Client, server: &Server) -> (usize, Duration) {
    let start = Instant::now();
    let answers: Vec<(u16, Duration)> = std::thread::scope(|scope| {
        let handles: Vec<_> = FROZE
            .iter()
            .chain(FROZE.iter())
            .map(|fen| {
                let base = &server.base;
                scope.spawn(move || {
                    let (status, retry, body) = get(client, &url(base, "/standard", fen));
                    match status {
                        200 => assert!(body["category"].is_string(), "{fen}: {body}"),
                        503 => {
                            assert_eq!(body["error"]["code"], "generating", "{fen}: {body}");
                            assert!(retry.is_some());
                        }
                        other => panic!("{fen}: {other} {body}"),
                    }
                    (status, start.elapsed())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let slowest = answers.iter().map(|a| a.1).max().unwrap();
    assert!(slowest < Duration::from_secs(5), "slowest first answer {slowest:?}");
    // Generation goes on meanwhile: a 3-piece table is answered.
    let kqk = until_complete(
        client,
        &url(&server.base, "/standard", "8/8/8/8/8/2k5/8/KQ6 w - - 0 1"),
        Duration::from_secs(30),
    );
    assert_eq!(kqk["category"], "win");
    (answers.iter().filter(|a| a.0 == 200).count(), slowest)
}

/// The deadlock scenario in full: 16 concurrent first requests, every answer
/// complete in the end, each table generated once, then SIGTERM in the middle
/// of another generation. `GENERATION_STORM_ONLY=1` stops the first server in
/// the middle of its generation instead of waiting for it (a quick loop:
/// `for i in $(seq 20); do GENERATION_STORM_ONLY=1 cargo test --release --test generation sixteen; done`).
#[test]
fn sixteen_concurrent_first_requests_share_one_generation_and_sigterm_exits() {
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let dir = empty_dir("concurrent");
    let server = start_binary(&dir);
    let start = Instant::now();
    let (ok, slowest) = storm(&client, &server);
    if std::env::var_os("GENERATION_STORM_ONLY").is_some() {
        let generated = generated_once(&server);
        let (exit_after, kept) = terminate(server, &dir);
        report!(
            "storm: {ok} of 16 answered 200, slowest {slowest:?}; {} tables generated once each; SIGTERM exit after {exit_after:?}, {} whole tables kept",
            generated.len(),
            kept.len()
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    for fen in FROZE {
        until_complete(&client, &url(&server.base, "/standard", fen), Duration::from_secs(600));
    }
    let all_done = start.elapsed();
    let generated = generated_once(&server);
    let (tables, other) = files(&dir);
    assert!(other.is_empty(), "left behind: {other:?}");
    assert_eq!(tables.len(), generated.len(), "{tables:?} vs {generated:?}");
    report!(
        "16 concurrent first requests: {ok} answered 200 and {} 503 generating, slowest after {slowest:?}; \
         {} tables generated once each; every answer complete after {all_done:?}",
        16 - ok,
        generated.len()
    );
    drop(server);
    // Gigabytes of tables: without this every run would leave them in the
    // temporary directory.
    let _ = std::fs::remove_dir_all(&dir);

    // SIGTERM in the middle of a generation: the process exits within the
    // drain time, and the table being generated is never written.
    let dir = empty_dir("sigterm");
    let server = start_binary(&dir);
    let (status, _, _) = get(&client, &url(&server.base, "/api/v1/probe", SLOW_FENS[0]));
    assert_eq!(status, 503, "KPPvK takes longer than wait_ms to generate");
    let (exit_after, tables) = terminate(server, &dir);
    assert!(!tables.contains(&"KPPvK.tbsb".to_owned()));
    report!("SIGTERM during generation: exit after {exit_after:?}, {} whole tables kept", tables.len());
    let _ = std::fs::remove_dir_all(&dir);
}
