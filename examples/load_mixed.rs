//! Mixed-traffic load generator for `scripts/load-mixed.sh` (loopback only).
//!
//! `CONNECTIONS` clients, each with its own connection, send requests at a
//! paced total `RATE` for `SECONDS`: single probes, batches, mainlines,
//! lichess endpoints and malformed requests; `SEARCHERS` further clients keep
//! analyses (searches) running throughout. Reports per-class status counts,
//! connection errors, probe latency percentiles while searches run, and the
//! server's resident memory (`/proc/PID/status`) every second.
//!
//! cargo run --release --example load_mixed -- URL PID FEN_FILE [SECONDS] [CONNECTIONS] [RATE] [SEARCHERS]
//!
//! Exit status 1 when a request failed unexpectedly (a 5xx other than the
//! 503 `busy` of searches, a connection error, a malformed request answered
//! 2xx) or probe p99 while searching is 50 ms (`$P99_LIMIT_MS`) or more.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Probe,
    Batch,
    Mainline,
    Standard,
    StandardMainline,
    Malformed,
    Analyse,
}

/// Share of the paced traffic per class, in percent.
const MIX: [(Class, u32); 6] = [
    (Class::Probe, 45),
    (Class::Batch, 5),
    (Class::Mainline, 10),
    (Class::Standard, 20),
    (Class::StandardMainline, 5),
    (Class::Malformed, 15),
];

#[derive(Default)]
struct Stats {
    /// (class, status or "connection error") → count
    outcomes: BTreeMap<(Class, String), u64>,
    /// Probe latencies (µs) of requests sent while a search was running.
    probe_us_searching: Vec<u64>,
    probe_us_all: Vec<u64>,
    unexpected: Vec<String>,
}

fn enc(fen: &str) -> String {
    fen.replace(' ', "_")
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn pick(rng: &mut Rng) -> Class {
    let mut r = rng.below(100) as u32;
    for (class, share) in MIX {
        if r < share {
            return class;
        }
        r -= share;
    }
    Class::Probe
}

/// Method, path and query, body; the malformed ones are expected to get 4xx.
fn request(class: Class, fens: &[String], rng: &mut Rng) -> (reqwest::Method, String, Option<String>) {
    let fen = &fens[rng.below(fens.len() as u64) as usize];
    let get = reqwest::Method::GET;
    match class {
        Class::Probe => (get, format!("/api/v1/probe?fen={}", enc(fen)), None),
        Class::Mainline => (get, format!("/api/v1/mainline?fen={}", enc(fen)), None),
        Class::Standard => (get, format!("/standard?fen={}", enc(fen)), None),
        Class::StandardMainline => (get, format!("/standard/mainline?fen={}", enc(fen)), None),
        Class::Batch => {
            let batch: Vec<&String> = (0..16).map(|_| &fens[rng.below(fens.len() as u64) as usize]).collect();
            (reqwest::Method::POST, "/api/v1/probe".to_owned(), Some(serde_json::json!({ "fens": batch }).to_string()))
        }
        Class::Analyse => (get, format!("/api/v1/analyse?fen={}&movetime_ms=1000", enc(fen)), None),
        Class::Malformed => match rng.below(6) {
            0 => (get, "/api/v1/probe?fen=banana".to_owned(), None),
            1 => (get, format!("/api/v1/probe?fen={}", "x".repeat(3000)), None),
            2 => (reqwest::Method::POST, "/api/v1/probe".to_owned(), Some("{\"fens\": [".to_owned())),
            3 => (get, "/no/such/endpoint".to_owned(), None),
            4 => (reqwest::Method::DELETE, "/api/v1/probe".to_owned(), None),
            _ => (get, "/api/v1/probe?fen=4k3/8/8/8/8/8/8/4R2K_w_-_-_0_1".to_owned(), None),
        },
    }
}

/// Whether an answer is what this class should get.
fn expected(class: Class, status: u16) -> bool {
    match class {
        Class::Malformed => (400..500).contains(&status),
        // Searches beyond max_concurrent_searches are refused by design.
        Class::Analyse => status == 200 || status == 503,
        // Positions beyond the shared tables answer 404 missing_table.
        _ => status == 200 || status == 404,
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "load_mixed URL PID FEN_FILE [SECONDS] [CONNECTIONS] [RATE] [SEARCHERS]";
    let base = args.get(1).expect(usage).trim_end_matches('/').to_owned();
    assert!(base.starts_with("http://127.0.0.1") || base.starts_with("http://localhost"), "loopback only");
    let pid: u32 = args.get(2).expect(usage).parse().expect("PID");
    let fens: Vec<String> = std::fs::read_to_string(args.get(3).expect(usage))
        .expect("FEN file")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let seconds: u64 = args.get(4).map_or(60, |s| s.parse().expect("SECONDS"));
    let connections: usize = args.get(5).map_or(256, |s| s.parse().expect("CONNECTIONS"));
    let rate: f64 = args.get(6).map_or(2000.0, |s| s.parse().expect("RATE"));
    let searchers: usize = args.get(7).map_or(3, |s| s.parse().expect("SEARCHERS"));

    let fens = Arc::new(fens);
    let stats = Arc::new(Mutex::new(Stats::default()));
    let searching = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let deadline = start + Duration::from_secs(seconds);
    let interval = Duration::from_secs_f64(connections as f64 / rate);

    let mut tasks = Vec::new();
    for i in 0..connections + searchers {
        let (base, fens, stats, searching) =
            (base.clone(), Arc::clone(&fens), Arc::clone(&stats), Arc::clone(&searching));
        let searcher = i >= connections;
        tasks.push(tokio::spawn(async move {
            // One client per task: its own connection (kept alive).
            let client =
                reqwest::Client::builder().pool_max_idle_per_host(1).timeout(Duration::from_secs(15)).build().unwrap();
            let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ ((i as u64 + 1) * 0x9e37_79b9));
            // Spread the first requests over one interval.
            let mut next = Instant::now() + interval.mul_f64(rng.below(1000) as f64 / 1000.0);
            while Instant::now() < deadline {
                let class = if searcher { Class::Analyse } else { pick(&mut rng) };
                if !searcher {
                    tokio::time::sleep_until(next.into()).await;
                    next += interval;
                }
                let (method, path, body) = request(class, &fens, &mut rng);
                let mut req = client.request(method, format!("{base}{path}"));
                if let Some(body) = body {
                    req = req.header("content-type", "application/json").body(body);
                }
                let searches_running = searching.load(Ordering::SeqCst) > 0;
                if searcher {
                    searching.fetch_add(1, Ordering::SeqCst);
                }
                let sent = Instant::now();
                let result = match req.send().await {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        let text =
                            r.bytes().await.map(|b| String::from_utf8_lossy(&b).chars().take(200).collect::<String>());
                        text.map(|t| (status, t))
                    }
                    Err(e) => Err(e),
                };
                let micros = sent.elapsed().as_micros() as u64;
                if searcher {
                    searching.fetch_sub(1, Ordering::SeqCst);
                }
                let busy = {
                    let mut s = stats.lock().unwrap();
                    match result {
                        Ok((status, text)) => {
                            *s.outcomes.entry((class, status.to_string())).or_default() += 1;
                            if !expected(class, status) && s.unexpected.len() < 20 {
                                s.unexpected.push(format!("{class:?} {path:.80} → {status} {text}"));
                            }
                            if class == Class::Probe && status == 200 {
                                s.probe_us_all.push(micros);
                                if searches_running {
                                    s.probe_us_searching.push(micros);
                                }
                            }
                            status == 503
                        }
                        Err(e) => {
                            *s.outcomes.entry((class, "connection error".to_owned())).or_default() += 1;
                            if s.unexpected.len() < 20 {
                                s.unexpected.push(format!("{class:?} {path:.80} → {e:?}"));
                            }
                            false
                        }
                    }
                };
                if searcher && busy {
                    // Busy: come back after Retry-After, as a client should.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }));
    }

    // Resident memory every second.
    let mut rss = Vec::new();
    while Instant::now() < deadline {
        rss.push(rss_kib(pid).unwrap_or(0));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    rss.push(rss_kib(pid).unwrap_or(0));

    let mut s = std::mem::take(&mut *stats.lock().unwrap());
    s.probe_us_searching.sort_unstable();
    s.probe_us_all.sort_unstable();
    let total: u64 = s.outcomes.values().sum();
    let connection_errors: u64 = s.outcomes.iter().filter(|((_, o), _)| o == "connection error").map(|(_, n)| n).sum();
    let unexpected_5xx: u64 = s
        .outcomes
        .iter()
        .filter(|((c, o), _)| o.starts_with('5') && !(*c == Class::Analyse && o == "503"))
        .map(|(_, n)| n)
        .sum();
    println!(
        "duration {elapsed:.1} s, {connections} paced connections (+{searchers} searching), {total} requests, {:.0} req/s",
        total as f64 / elapsed
    );
    let mut by_class: BTreeMap<Class, Vec<String>> = BTreeMap::new();
    for ((class, outcome), n) in &s.outcomes {
        by_class.entry(*class).or_default().push(format!("{outcome}: {n}"));
    }
    for (class, outcomes) in by_class {
        println!("  {class:?}: {}", outcomes.join(", "));
    }
    let (p50, p99) = (percentile(&s.probe_us_searching, 0.5), percentile(&s.probe_us_searching, 0.99));
    println!(
        "probe latency while searching: p50 {p50:.2} ms, p99 {p99:.2} ms, max {:.2} ms (n={}); all probes p50 {:.2} ms, p99 {:.2} ms",
        s.probe_us_searching.last().copied().unwrap_or(0) as f64 / 1000.0,
        s.probe_us_searching.len(),
        percentile(&s.probe_us_all, 0.5),
        percentile(&s.probe_us_all, 0.99),
    );
    println!(
        "resident memory (MiB, every second): {}",
        rss.iter().map(|k| format!("{:.0}", *k as f64 / 1024.0)).collect::<Vec<_>>().join(" ")
    );
    println!("connection errors: {connection_errors}; unexpected 5xx: {unexpected_5xx}");
    for u in &s.unexpected {
        println!("  unexpected: {u}");
    }
    // The probe p99 target while searches run; P99_LIMIT_MS overrides it on
    // shared machines.
    let p99_limit_ms: f64 = std::env::var("P99_LIMIT_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(50.0);
    // Exit 1: a wrong answer or a lost connection. Exit 2: answers all
    // right, only the p99 over the limit (on a shared machine, possibly
    // someone else's load; a caller may try again).
    let code = if !s.unexpected.is_empty() {
        1
    } else if p99 >= p99_limit_ms {
        2
    } else {
        0
    };
    println!("RESULT {}", ["PASS", "FAIL", "FAIL (p99 only)"][code as usize]);
    if code != 0 {
        std::process::exit(code);
    }
}
