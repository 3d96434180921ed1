//! Operations: `/prometheus` output and graceful shutdown of the real binary.

#[macro_use]
mod common;

use std::{
    collections::HashMap,
    process::Command,
    time::{Duration, Instant},
};

use common::{TestServer, enc, gaviota_dir, syzygy_dir};

/// Samples of an OpenMetrics text exposition, keyed by `name{labels}` as
/// written. Panics on any line that is not valid OpenMetrics text.
fn parse_openmetrics(text: &str) -> HashMap<String, f64> {
    let mut families: HashMap<String, String> = HashMap::new();
    let mut samples = HashMap::new();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "exposition must end with # EOF");
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .enumerate()
                .all(|(i, c)| c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit()))
    };
    for line in &lines[..lines.len() - 1] {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (kind, name, rest) = (parts.next().unwrap(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            assert!(is_name(name), "bad metric name in {line:?}");
            match kind {
                "TYPE" => {
                    let known =
                        ["counter", "gauge", "histogram", "summary", "info", "stateset", "gaugehistogram", "unknown"];
                    assert!(known.contains(&rest), "bad type in {line:?}");
                    assert!(
                        families.insert(name.to_owned(), rest.to_owned()).is_none(),
                        "family {name} declared twice"
                    );
                }
                "HELP" | "UNIT" => {}
                _ => panic!("unknown metadata line {line:?}"),
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("sample without value: {line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let name = series.split('{').next().unwrap();
        assert!(is_name(name), "bad sample name in {line:?}");
        if let Some(labels) = series.strip_prefix(name).filter(|l| !l.is_empty()) {
            let inner = labels
                .strip_prefix('{')
                .and_then(|l| l.strip_suffix('}'))
                .unwrap_or_else(|| panic!("bad labels in {line:?}"));
            for pair in inner.split("\",").map(|p| p.trim_end_matches('"')) {
                let (key, value) = pair.split_once("=\"").unwrap_or_else(|| panic!("bad label {pair:?} in {line:?}"));
                assert!(is_name(key) && !value.contains('"'), "bad label {pair:?} in {line:?}");
            }
        }
        // Every sample belongs to a declared family (with its type's suffix).
        let family = ["_total", "_bucket", "_sum", "_count", "_created", ""]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix).filter(|f| families.contains_key(*f)))
            .unwrap_or_else(|| panic!("sample {name} of no declared family"));
        assert!(family == name || families[family] != "gauge", "gauge {family} with a suffixed sample {name}");
        assert!(samples.insert(series.to_owned(), value).is_none(), "duplicate series {series}");
    }
    samples
}

fn scrape(base: &str) -> HashMap<String, f64> {
    let response = reqwest::blocking::get(format!("{base}/prometheus")).unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    parse_openmetrics(&response.text().unwrap())
}

#[test]
fn prometheus_output_parses_and_moves_with_traffic() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let krk = "/api/v1/probe?fen=".to_owned() + &enc("8/8/8/8/8/2k5/8/R3K3 w - - 0 1");
    let probes = r#"tbserver_http_requests_total{route="/api/v1/probe",method="GET",status="200"}"#;
    let unknown_fen = r#"tbserver_http_requests_total{route="/api/v1/probe",method="GET",status="400"}"#;
    let not_found = r#"tbserver_http_requests_total{route="unmatched",method="GET",status="404"}"#;
    let krk_dtz = r#"tbserver_table_probes_total{source="syzygy",table="KRvK",metric="dtz"}"#;
    let krk_dtm = r#"tbserver_table_probes_total{source="gaviota",table="KRvK",metric="dtm"}"#;
    let latency = r#"tbserver_http_request_duration_seconds_count{route="/api/v1/probe"}"#;
    let latency_inf = r#"tbserver_http_request_duration_seconds_bucket{le="+Inf",route="/api/v1/probe"}"#;

    let before = scrape(&server.base);
    assert_eq!(before.get(probes), None, "no probe requests yet");
    for _ in 0..5 {
        assert_eq!(server.get(&krk).0, 200);
    }
    assert_eq!(server.get("/api/v1/probe?fen=nonsense").0, 400);
    assert_eq!(server.get("/no/such/page").0, 404);
    let after = scrape(&server.base);
    report!("prometheus: {} series after traffic ({} before)", after.len(), before.len());

    assert_eq!(after[probes], 5.0);
    assert_eq!(after[unknown_fen], 1.0);
    assert_eq!(after[not_found], 1.0);
    assert_eq!(after[latency], 6.0, "probe route timed once per request");
    assert_eq!(after[latency_inf], 6.0);
    // The test server has no response cache: every request probes the tables.
    // KRvK has 15 legal moves, each leading to KRvK or KvK.
    assert!(after[krk_dtz] >= 5.0, "{after:?}");
    assert!(after[krk_dtm] >= 5.0, "{after:?}");
    assert_eq!(after[r#"tbserver_tables{source="syzygy"}"#], 96.0);
    assert!(after[r#"tbserver_table_size_bytes{source="syzygy"}"#] > 1e8);
    assert_eq!(after["tbserver_searches_running"], 0.0);
}

#[test]
fn request_id_is_echoed_or_generated() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let client = reqwest::blocking::Client::new();
    let echoed = client.get(format!("{}/healthz", server.base)).header("x-request-id", "lb-42").send().unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "lb-42");
    let generated = client.get(format!("{}/healthz", server.base)).send().unwrap();
    let id = generated.headers()["x-request-id"].to_str().unwrap();
    assert_eq!(id.len(), 36, "a UUID: {id}");
}

/// The benchmark floor `/_bench/stored` exists only in a build with the
/// `bench-routes` feature.
#[cfg(not(feature = "bench-routes"))]
#[test]
fn no_benchmark_route_by_default() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let fen = enc("8/8/8/8/8/2k5/8/R3K3 w - - 0 1");
    assert_eq!(server.get(&format!("/_bench/stored?fen={fen}")).0, 404);
}

/// With `bench-routes` (`cargo test --features bench-routes --test ops`),
/// `/_bench/stored` sends the cached `/standard` answer of its first FEN,
/// whatever the later requests ask.
#[cfg(feature = "bench-routes")]
#[test]
fn benchmark_route_sends_the_stored_answer() {
    let Some(mut config) = common::shared_tables_config() else { return };
    config.cache_entries = 100;
    let server = TestServer::start(config);
    let krk = enc("8/8/8/8/8/2k5/8/R3K3 w - - 0 1");
    let kqk = enc("8/8/8/8/8/2k5/8/Q3K3 w - - 0 1");
    assert_eq!(server.get(&format!("/_bench/stored?fen={krk}")).0, 404, "nothing cached yet");
    let (status, standard) = server.get(&format!("/standard?fen={krk}"));
    assert_eq!(status, 200);
    assert_eq!(server.get(&format!("/_bench/stored?fen={krk}")), (200, standard.clone()));
    assert_eq!(server.get(&format!("/_bench/stored?fen={kqk}")), (200, standard));
}

/// The server process, killed if a failing test leaves it running.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The real binary on an ephemeral port; returns the process and its address.
fn start_binary() -> Option<(Server, String)> {
    start_binary_with("")
}

/// As [`start_binary`], with `settings` (top-level TOML lines) added.
fn start_binary_with(settings: &str) -> Option<(Server, String)> {
    let (syzygy, gaviota) = (syzygy_dir()?, gaviota_dir()?);
    // Built-in tables off: answers come from the files, none is generated
    // (generating one takes seconds of CPU on first use).
    static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let config = std::env::temp_dir().join(format!("tbserver-ops-{}-{n}.toml", std::process::id()));
    std::fs::write(&config, format!("cache_entries = 0\n{settings}\n[builtin]\nmode = \"off\"\n")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_tbserver"));
    command
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--listen", "127.0.0.1:0", "--syzygy"])
        .arg(&syzygy)
        .arg("--gaviota")
        .arg(&gaviota)
        .env("RUST_LOG", "info");
    let (child, base, _log) = common::spawn_listening(command);
    Some((Server(child), base))
}

#[test]
fn sigterm_finishes_requests_in_flight_and_stops_searches() {
    let Some((mut server, base)) = start_binary() else { return };
    // Beyond the tables: each search would run its whole 8 s budget.
    let search =
        format!("{base}/api/v1/analyse?fen={}&movetime_ms=8000", enc("r3k3/pppp4/8/8/8/8/PPPP4/R3K3 w - - 0 1"));
    let searches: Vec<_> = (0..2)
        .map(|_| {
            let url = search.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                let r = reqwest::blocking::get(url).unwrap();
                let status = r.status().as_u16();
                (status, r.json::<serde_json::Value>().unwrap(), started.elapsed())
            })
        })
        .collect();
    // Batches of probes, sent back to back until the server stops accepting.
    let fens: Vec<String> = std::fs::read_to_string(
        common::shared_dir("reference/positions.jsonl").unwrap().join("reference/positions.jsonl"),
    )
    .unwrap()
    .lines()
    .take(200)
    .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["fen"].as_str().unwrap().to_owned())
    .collect();
    let batch = serde_json::json!({ "fens": fens }).to_string();
    let probers: Vec<_> = (0..4)
        .map(|_| {
            let (url, batch) = (format!("{base}/api/v1/probe"), batch.clone());
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::builder().pool_max_idle_per_host(0).build().unwrap();
                // (sent, answered) of each request answered in full.
                let (mut answered, mut broken) = (Vec::new(), Vec::new());
                loop {
                    let sent = Instant::now();
                    match client.post(&url).header("content-type", "application/json").body(batch.clone()).send() {
                        Ok(r) => {
                            let status = r.status().as_u16();
                            match r.json::<serde_json::Value>() {
                                Ok(body)
                                    if status == 200 && body["results"].as_array().is_some_and(|a| a.len() == 200) =>
                                {
                                    answered.push((sent, Instant::now()))
                                }
                                other => broken.push(format!("{status}: {other:?}")),
                            }
                        }
                        // Refused: the server no longer accepts; not a request in flight.
                        Err(e) if e.is_connect() => return (answered, broken),
                        Err(e) => broken.push(format!("{e:?}")),
                    }
                }
            })
        })
        .collect();

    // Wait until both searches run, then ask the server to stop.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !reqwest::blocking::get(format!("{base}/prometheus"))
        .and_then(|r| r.text())
        .is_ok_and(|t| t.contains("tbserver_searches_running 2"))
    {
        assert!(Instant::now() < deadline, "searches never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let term_sent = Instant::now();
    assert!(Command::new("kill").args(["-TERM", &server.0.id().to_string()]).status().unwrap().success());

    for handle in searches {
        let (status, body, elapsed) = handle.join().unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body["best_move"]["uci"].is_string(), "a stopped search still answers its best move: {body}");
        assert!(elapsed < Duration::from_secs(5), "search stopped at shutdown, not after its 8 s: {elapsed:?}");
    }
    let (mut total, mut in_flight) = (0, 0);
    for handle in probers {
        let (answered, broken) = handle.join().unwrap();
        assert!(broken.is_empty(), "requests broken by shutdown: {broken:?}");
        total += answered.len();
        in_flight += answered.iter().filter(|(sent, done)| *sent < term_sent && *done > term_sent).count();
    }
    let status = server.0.wait().unwrap();
    let exit_after = term_sent.elapsed();
    report!(
        "shutdown: {total} probe batches of 200 answered, {in_flight} of them in flight at SIGTERM; {status} {exit_after:?} after SIGTERM"
    );
    assert!(status.success(), "{status}");
    assert!(in_flight > 0, "no probe request was in flight at SIGTERM; the test proved nothing");
}

/// The binary reports its allocator's totals, and a running search's tables
/// are not among them: they are mappings of their own, given back to the
/// kernel when the search ends (from the allocator, two searches would add
/// 2 × 64 MiB that it keeps after they end).
#[test]
fn heap_metrics_leave_out_the_search_tables() {
    let Some((server, base)) = start_binary() else { return };
    let before = scrape(&base);
    let (allocated, resident) = (before["tbserver_heap_allocated_bytes"], before["tbserver_heap_resident_bytes"]);
    assert!(allocated > 0.0 && resident >= allocated, "allocated {allocated}, resident {resident}");

    let search =
        format!("{base}/api/v1/analyse?fen={}&movetime_ms=3000", enc("r3k3/pppp4/8/8/8/8/PPPP4/R3K3 w - - 0 1"));
    let searches: Vec<_> = (0..2)
        .map(|_| {
            let url = search.clone();
            std::thread::spawn(move || reqwest::blocking::get(url).unwrap().status().as_u16())
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    let during = loop {
        let m = scrape(&base);
        if m["tbserver_searches_running"] == 2.0 {
            break m;
        }
        assert!(Instant::now() < deadline, "searches never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let grown_mib = (during["tbserver_heap_allocated_bytes"] - allocated) / f64::from(1 << 20);
    for handle in searches {
        assert_eq!(handle.join().unwrap(), 200);
    }
    report!(
        "heap: {:.1} MiB allocated at start, {grown_mib:+.1} MiB with two searches running",
        allocated / f64::from(1 << 20)
    );
    assert!(grown_mib < 32.0, "two searches added {grown_mib:.1} MiB to the heap");
    drop(server);
}

/// Resident and mapped KiB of the files of `pid` whose path ends with `name`.
fn mapped_kib(pid: u32, name: &str) -> (u64, u64) {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let (mut rss, mut size, mut inside) = (0, 0, false);
    for line in smaps.lines() {
        let field = |l: &str| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap();
        if line.contains('-') && !line.ends_with(" kB") {
            inside = line.ends_with(name);
        } else if inside && line.starts_with("Rss:") {
            rss += field(line);
        } else if inside && line.starts_with("Size:") {
            size += field(line);
        }
    }
    (rss, size)
}

/// `prefault_tables`: a table's first probe makes its whole file resident;
/// without it, one probe reads a few pages of it.
#[test]
fn prefault_tables_reads_a_file_whole_on_first_use() {
    let fen = enc("7q/8/8/8/3k4/8/8/KRB5 w - - 0 1");
    let mut kib = Vec::new();
    for prefault in [false, true] {
        let Some((server, base)) = start_binary_with(&format!("prefault_tables = {prefault}")) else { return };
        let answer = reqwest::blocking::get(format!("{base}/api/v1/probe?fen={fen}")).unwrap();
        assert_eq!(answer.status(), 200);
        let (rss, size) = mapped_kib(server.0.id(), "/KRBvKQ.rtbw");
        assert!(size > 8 * 1024, "KRBvKQ.rtbw mapped: {size} kB");
        kib.push((rss, size));
        drop(server);
    }
    report!(
        "KRBvKQ.rtbw resident after one probe: {} of {} kB; with prefault_tables {} of {} kB",
        kib[0].0,
        kib[0].1,
        kib[1].0,
        kib[1].1
    );
    assert!(kib[0].0 < kib[0].1 / 4, "without prefault: {:?}", kib[0]);
    assert_eq!(kib[1].0, kib[1].1, "with prefault");
}
