//! Broken, misnamed and replaced table files: the service starts, lists
//! them, answers positions that need them with `table_error` naming the
//! table, and keeps serving everything else. All on copies of the shared
//! tables in a temporary directory.

#[macro_use]
mod common;
#[path = "common/faulty_fs.rs"]
mod faulty_fs;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use common::{TestServer, enc, syzygy_dir};
use serde_json::Value;

const KQVK: &str = "8/8/8/4k3/8/8/8/KQ6 w - - 0 1";
const KRVK: &str = "8/8/8/4k3/8/8/8/KR6 w - - 0 1";
const KPVK: &str = "8/8/8/4k3/8/8/P7/K7 w - - 0 1";
const KBNVK: &str = "8/8/8/4k3/8/8/8/KBN5 w - - 0 1";
/// No capture: a probe must read KQvKR itself.
const KQVKR: &str = "1r6/8/8/4k3/8/8/8/K1Q5 w - - 0 1";

/// A fresh directory with copies of the shared 3–4 piece Syzygy tables
/// (writable, unlike the shared ones).
fn copy_tables(name: &str) -> Option<PathBuf> {
    let from = syzygy_dir()?;
    let dir = std::env::temp_dir().join(format!("tbserver-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_owned();
        if file.chars().filter(char::is_ascii_uppercase).count() <= 4 {
            std::fs::write(dir.join(&file), std::fs::read(&path).unwrap()).unwrap();
        }
    }
    Some(dir)
}

fn config(dir: &Path) -> tbserver::config::Config {
    let mut config = tbserver::config::Config { syzygy: vec![dir.to_owned()], cache_entries: 0, ..Default::default() };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    config
}

/// Bytes with a plausible Syzygy size (16 mod 64) and no Syzygy magic.
fn garbage() -> Vec<u8> {
    (0..16 + 64 * 4).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

fn problems(server: &TestServer) -> BTreeMap<String, String> {
    let (_, tables) = server.get("/api/v1/tables");
    tables["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["problems"].as_array().unwrap().is_empty())
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t["problems"].to_string()))
        .collect()
}

fn probe(server: &TestServer, fen: &str) -> (u16, Value) {
    server.get(&format!("/api/v1/probe?fen={}", enc(fen)))
}

fn assert_table_error((status, body): (u16, Value), table: &str) {
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "table_error", "{body}");
    assert_eq!(body["error"]["table"], table, "{body}");
}

#[test]
fn broken_files_are_listed_refused_and_the_rest_served() {
    let Some(dir) = copy_tables("broken") else { return };
    let krvk = std::fs::read(dir.join("KRvK.rtbw")).unwrap();
    let kqvk = std::fs::read(dir.join("KQvK.rtbw")).unwrap();
    // Wrongly named: valid magic and size, but KRvK's content.
    std::fs::write(dir.join("KQvK.rtbw"), &krvk).unwrap();
    std::fs::write(dir.join("KRvK.rtbw"), b"").unwrap();
    std::fs::write(dir.join("KPvK.rtbw"), garbage()).unwrap();
    // Right magic and header, cut short: found only when probed.
    let kbnvk = std::fs::read(dir.join("KBNvK.rtbw")).unwrap();
    std::fs::write(dir.join("KBNvK.rtbw"), &kbnvk[..16 + 64]).unwrap();
    std::fs::write(dir.join("foo.rtbw"), &krvk).unwrap();
    std::fs::write(dir.join("KQvKR.RTBW"), &kqvk).unwrap();
    let server = TestServer::start(config(&dir));

    let listed = problems(&server);
    let names: Vec<&str> = listed.keys().map(String::as_str).collect();
    assert_eq!(names, ["KPvK.rtbw", "KQvK.rtbw", "KQvKR.RTBW", "KRvK.rtbw", "foo.rtbw"], "{listed:#?}");
    assert!(listed["KQvK.rtbw"].contains("wrongly named"), "{}", listed["KQvK.rtbw"]);
    assert!(listed["KRvK.rtbw"].contains("unexpected size 0"), "{}", listed["KRvK.rtbw"]);
    assert!(listed["KPvK.rtbw"].contains("bad magic"), "{}", listed["KPvK.rtbw"]);
    assert!(listed["KQvKR.RTBW"].contains("lower-case"), "{}", listed["KQvKR.RTBW"]);
    assert!(listed["foo.rtbw"].contains("not a material key"), "{}", listed["foo.rtbw"]);

    assert_table_error(probe(&server, KQVK), "KQvK.rtbw");
    assert_table_error(probe(&server, KRVK), "KRvK.rtbw");
    assert_table_error(probe(&server, KPVK), "KPvK.rtbw");
    assert_table_error(probe(&server, KBNVK), "KBNvK.rtbw");
    // Found on first use, then listed too.
    assert!(problems(&server).get("KBNvK.rtbw").is_some_and(|p| p.contains("failed when probed")));
    // Everything else is served (KQvKR from its good lower-case file would
    // be too, but its moves lead into the broken KQvK).
    let (status, body) = probe(&server, "8/8/8/4k3/8/8/8/KBB5 w - - 0 1");
    assert_eq!((status, body["category"].as_str()), (200, Some("win")), "{body}");
    let (status, body) = server.get(&format!("/standard?fen={}", enc("8/8/8/4k3/8/8/8/KNN5 w - - 0 1")));
    assert_eq!((status, body["category"].as_str()), (200, Some("draw")), "{body}");
    report!("broken tables: {} listed, 4 refused probes answered table_error, others served", listed.len() + 1);
    std::fs::remove_dir_all(&dir).ok();
}

/// The documented update procedure: write the new file beside the old one,
/// `rename()` it over, rescan (SIGHUP). Under a steady probe load, nothing
/// fails except the intended `table_error` of the table that is garbage at
/// the time, and the rescan serves the new content.
#[test]
fn replacement_by_rename_under_load() {
    let Some(dir) = copy_tables("rename") else { return };
    let good = std::fs::read(dir.join("KQvK.rtbw")).unwrap();
    let krvk_dtz = std::fs::read(dir.join("KRvK.rtbz")).unwrap();
    std::fs::write(dir.join("KQvK.rtbw"), garbage()).unwrap();
    // With the answer cache on: a rescan must not leave answers of replaced tables in it.
    let server = Arc::new(TestServer::start(tbserver::config::Config { cache_entries: 10_000, ..config(&dir) }));
    assert_table_error(probe(&server, KQVK), "KQvK.rtbw");

    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..6)
        .map(|i| {
            let (server, stop) = (Arc::clone(&server), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
                let fens = [KQVK, KRVK, KPVK, KBNVK, KQVKR];
                let mut n = i;
                while !stop.load(Ordering::Relaxed) {
                    let fen = fens[n % fens.len()];
                    n += 1;
                    let outcome = match reqwest::blocking::get(format!("{}/api/v1/probe?fen={}", server.base, enc(fen)))
                    {
                        Err(e) => format!("connection error: {e}"),
                        Ok(r) => {
                            let status = r.status().as_u16();
                            let body: Value = r.json().unwrap_or(Value::Null);
                            match status {
                                200 => "200".to_owned(),
                                _ => format!("{status} {} {}", body["error"]["code"], body["error"]["table"]),
                            }
                        }
                    };
                    *outcomes.entry(outcome).or_default() += 1;
                }
                outcomes
            })
        })
        .collect();

    let replace = |name: &str, bytes: &[u8]| {
        let tmp = dir.join(format!("{name}.new"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    };
    let bad = garbage();
    let start = Instant::now();
    let mut rescans = 0;
    for round in 0..6 {
        std::thread::sleep(Duration::from_millis(150));
        // Garbage → good on even rounds, good → garbage on odd ones; KRvK's
        // DTZ table, mapped by running probes, is replaced by a copy each time.
        replace("KQvK.rtbw", if round % 2 == 0 { &good } else { &bad });
        replace("KRvK.rtbz", &krvk_dtz);
        server.state.rescan();
        rescans += 1;
    }
    // Ends on the good file.
    replace("KQvK.rtbw", &good);
    server.state.rescan();
    std::thread::sleep(Duration::from_millis(150));
    stop.store(true, Ordering::Relaxed);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for client in clients {
        for (k, v) in client.join().unwrap() {
            *outcomes.entry(k).or_default() += v;
        }
    }
    let total: usize = outcomes.values().sum();
    let intended = r#"503 "table_error" "KQvK.rtbw""#;
    let unexpected: Vec<_> = outcomes.iter().filter(|(k, _)| *k != "200" && *k != intended).collect();
    assert!(unexpected.is_empty(), "unexpected outcomes: {outcomes:?}");
    assert!(outcomes.get("200").is_some_and(|&n| n > 100), "{outcomes:?}");
    let (status, body) = probe(&server, KQVK);
    assert_eq!(
        (status, body["category"].as_str(), body["sources"]["wdl50"].as_str()),
        (200, Some("win"), Some("syzygy")),
        "{body}"
    );
    assert!(problems(&server).is_empty(), "{:?}", problems(&server));
    // The good answer is cached now; garbage again, rescan: no stale answer.
    replace("KQvK.rtbw", &bad);
    server.state.rescan();
    assert_table_error(probe(&server, KQVK), "KQvK.rtbw");
    report!(
        "rename under load: {total} requests in {:.1} s across {} rescans: {outcomes:?}",
        start.elapsed().as_secs_f64(),
        rescans + 1
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A table file truncated in place while mapped, under a server whose
/// answers are compared with those of a reference server reading intact
/// copies: after the fault each answer is the reference's, a 503
/// `table_error` naming the file, or the reference's with the values that
/// need the file left out and a `table_error` naming it; never anything else.
struct FaultCase<'a> {
    server: &'a TestServer,
    reference: &'a TestServer,
    /// The material whose file is truncated, e.g. `KQvKR`.
    affected: &'a str,
    /// The material of a table left alone.
    other: &'a str,
    /// The file, its name in errors and in `/api/v1/tables`.
    file: PathBuf,
    table: &'a str,
    listed: &'a str,
}

/// Whether `after` is `reference` or `reference` with values the lost file
/// gave left out (`null`, category `unknown`) and a `table_error` naming it.
fn consistent(after: &Value, reference: &Value, table: &str) -> bool {
    match (after, reference) {
        (Value::Null, _) => true,
        (Value::Object(a), Value::Object(r)) => a.iter().all(|(k, v)| match k.as_str() {
            "table_error" => v.to_string().contains(table),
            "category" if v == "unknown" => true,
            // Derived from whichever values are left: not a table's value.
            "mate_bound" | "no_mate_bound" => true,
            _ => r.get(k).is_some_and(|rv| consistent(v, rv, table)),
        }),
        // Moves, in an order that depends on the values known: by move.
        (Value::Array(a), Value::Array(r)) => {
            a.len() == r.len()
                && a.iter().all(|a| match a.get("uci") {
                    Some(uci) => r.iter().any(|r| r.get("uci") == Some(uci) && consistent(a, r, table)),
                    None => r.contains(a),
                })
        }
        (a, r) => a == r,
    }
}

impl FaultCase<'_> {
    /// Probes a few positions of both tables (mapping the files), truncates
    /// the affected file to half in place, then probes other positions of
    /// both; returns the count of answers with a `table_error`.
    fn run(&self, seed: u64) -> usize {
        let truncate = |file: &Path| {
            let len = std::fs::metadata(file).unwrap().len();
            std::fs::OpenOptions::new().write(true).open(file).unwrap().set_len(len / 2).unwrap();
        };
        self.run_with(seed, "truncated in place while mapped", truncate)
    }

    /// As [`FaultCase::run`] with another fault than truncation.
    fn run_with(&self, seed: u64, what: &str, fault: impl FnOnce(&Path)) -> usize {
        let mut rng = common::Rng(seed);
        let mut fens = |material: &str, n: usize| -> Vec<String> {
            (0..n)
                .map(|_| {
                    let pos = common::random_position(&mut rng, material, 0);
                    shakmaty::fen::Fen::from_position(&pos, shakmaty::EnPassantMode::Legal).to_string()
                })
                .collect()
        };
        let (first, affected, other) = (fens(self.affected, 3), fens(self.affected, 60), fens(self.other, 10));
        for fen in first.iter().chain(&other) {
            let (status, body) = probe(self.server, fen);
            assert_eq!((status, &body), (200, &probe(self.reference, fen).1), "{fen}");
        }
        let len = std::fs::metadata(&self.file).unwrap().len();
        let faults_before = mapped_faults(self.server);
        fault(&self.file);
        let (mut errors, mut lost) = (0, 0);
        for fen in &affected {
            let (status, body) = probe(self.server, fen);
            let (ref_status, reference) = probe(self.reference, fen);
            assert_eq!(ref_status, 200, "{fen}: {reference}");
            if status == 503 {
                assert_eq!(body["error"]["code"], "table_error", "{fen}: {body}");
                assert!(body["error"].to_string().contains(self.table), "{fen}: {body}");
            } else {
                assert_eq!(status, 200, "{fen}: {body}");
                assert!(consistent(&body, &reference, self.table), "{fen}: {body}\nreference: {reference}");
                if body.get("table_error").is_none() {
                    continue;
                }
            }
            errors += 1;
            lost += usize::from(body.to_string().contains("lost pages"));
        }
        for fen in &other {
            let (status, body) = probe(self.server, fen);
            assert_eq!((status, &body), (200, &probe(self.reference, fen).1), "{fen}: another table's answer");
        }
        // A read past the new end inside its last page finds zeros, not a
        // fault: such probes fail on the data (a built-in block's CRC-32).
        assert!(lost > 0, "no probe of the truncated {} met a lost page ({errors} errors)", self.table);
        // Process-wide, so other tests' faults may add to it.
        let faults = mapped_faults(self.server) - faults_before;
        assert!(faults >= 1, "lost pages met, yet tbserver_mapped_faults_total did not grow");
        let listed = problems(self.server);
        assert!(listed.get(self.listed).is_some_and(|p| p.contains("lost pages")), "{listed:?}");
        assert_eq!(listed.len(), 1, "only the truncated file is listed: {listed:?}");
        let (status, _) = self.server.get("/healthz");
        assert_eq!(status, 200);
        report!(
            "{} ({len} bytes) {what}: {errors} of {} probes table_error ({lost} lost pages), the others and {} of {} as the reference",
            self.table,
            affected.len(),
            other.len(),
            self.other
        );
        errors
    }
}

/// `tbserver_mapped_faults_total` from `/prometheus`.
fn mapped_faults(server: &TestServer) -> u64 {
    let text = reqwest::blocking::get(format!("{}/prometheus", server.base)).unwrap().text().unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("tbserver_mapped_faults_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no tbserver_mapped_faults_total in {text}"))
}

/// Truncating a mapped Syzygy file *in place* (not the update procedure):
/// the probes that meet a lost page, and every later one that reads the
/// file, answer `table_error`; the process keeps serving, and a rescan
/// refuses the truncated file by its size.
#[test]
fn truncation_in_place_while_mapped_is_contained_syzygy() {
    let Some(dir) = copy_tables("truncate") else { return };
    let server = TestServer::start(config(&dir));
    let reference = TestServer::start(config(&syzygy_dir().unwrap()));
    let case = FaultCase {
        server: &server,
        reference: &reference,
        affected: "KQvKR",
        other: "KRvK",
        file: dir.join("KQvKR.rtbz"),
        table: "KQvKR.rtbz",
        listed: "KQvKR.rtbz",
    };
    case.run(51);
    server.state.rescan();
    assert!(problems(&server).get("KQvKR.rtbz").is_some_and(|p| p.contains("unexpected size")));
    std::fs::remove_dir_all(&dir).ok();
}

/// chesstb's KQKR, KQK and KRK in a fresh directory (`wdl/ dtz/ dtm/
/// dtm50/`), but `leave_out`; the shared directory.
fn chesstb_copy(name: &str, leave_out: Option<&str>) -> Option<(PathBuf, PathBuf)> {
    let from = common::chesstb_dir()?;
    let dir = std::env::temp_dir().join(format!("tbserver-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (sub, ext) in [("wdl", "lzw"), ("dtz", "lzdtz"), ("dtm", "lzdtm"), ("dtm50", "lzdtm50")] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for m in ["KQKR", "KQK", "KRK"] {
            let name = format!("{sub}/{m}.{ext}");
            if leave_out != Some(name.as_str()) {
                std::fs::write(dir.join(&name), std::fs::read(from.join(&name)).unwrap()).unwrap();
            }
        }
    }
    Some((dir, from))
}

fn chesstb_config(dirs: &[&Path]) -> tbserver::config::Config {
    // No block cache: every probe reads the file.
    let mut config = tbserver::config::Config {
        chesstb: dirs.iter().map(|d| d.to_path_buf()).collect(),
        chesstb_cache_mib: 0,
        cache_entries: 0,
        ..Default::default()
    };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    config
}

/// The same for a chesstb file (the DTM50 pack of KQKR).
#[test]
fn truncation_in_place_while_mapped_is_contained_chesstb() {
    let Some((dir, from)) = chesstb_copy("truncate-chesstb", None) else { return };
    let server = TestServer::start(chesstb_config(&[&dir]));
    let reference = TestServer::start(chesstb_config(&[&from]));
    let case = FaultCase {
        server: &server,
        reference: &reference,
        affected: "KQvKR",
        other: "KRvK",
        file: dir.join("dtm50/KQKR.lzdtm50"),
        table: "KQKR.lzdtm50",
        listed: "KQKR.lzdtm50",
    };
    case.run(52);
    std::fs::remove_dir_all(&dir).ok();
}

/// Built-in KQvK and KRvK, generated in a fresh directory.
fn builtin_tables(name: &str) -> PathBuf {
    use tbserver::builtin::{Material, Store};
    let dir = std::env::temp_dir().join(format!("tbserver-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::new(&dir, true);
    for m in ["KQvK", "KRvK"] {
        store.table(&Material::parse(m).unwrap()).unwrap();
    }
    dir
}

fn builtin_config(dir: &Path) -> tbserver::config::Config {
    let mut config = tbserver::config::Config { cache_entries: 0, ..Default::default() };
    config.builtin.dir = dir.to_owned();
    config.builtin.mode = tbserver::config::BuiltinMode::ReadOnly;
    // No block cache: every probe reads the file.
    config.builtin.cache_mib = 0;
    config
}

/// The same for a built-in table.
#[test]
fn truncation_in_place_while_mapped_is_contained_builtin() {
    let dir = builtin_tables("truncate-builtin");
    let copy = dir.join("intact");
    std::fs::create_dir_all(&copy).unwrap();
    for m in ["KQvK", "KRvK"] {
        std::fs::copy(dir.join(format!("{m}.tbsb")), copy.join(format!("{m}.tbsb"))).unwrap();
    }
    let server = TestServer::start(builtin_config(&dir));
    let reference = TestServer::start(builtin_config(&copy));
    let case = FaultCase {
        server: &server,
        reference: &reference,
        affected: "KRvK",
        other: "KQvK",
        file: dir.join("KRvK.tbsb"),
        table: "KRvK.tbsb",
        listed: "KRvK (builtin)",
    };
    case.run(53);
    std::fs::remove_dir_all(&dir).ok();
}

/// Whether this process may mount a FUSE file system. Without root that
/// fails the test under `CI=true` (as tests/operator_actions.rs); without
/// `/dev/fuse` (a container not given the device) the test says that it
/// skipped.
fn fuse_allowed(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{test} needs root (a FUSE mount) under CI=true");
        eprintln!("SKIPPED: {test} needs root (a FUSE mount)");
        return false;
    }
    if !Path::new("/dev/fuse").exists() {
        eprintln!("SKIPPED: {test} needs /dev/fuse");
        return false;
    }
    true
}

/// `files` of `from` on a FUSE file system at `mount` whose reads of the
/// second half of `failing` fail with EIO once [`faulty_fs::FaultyFs::fail`]
/// is called.
fn faulty_mount(mount: &Path, from: &Path, files: &[&str], failing: &str) -> faulty_fs::FaultyFs {
    let files = files
        .iter()
        .map(|name| {
            let bytes = std::fs::read(from.join(name)).unwrap();
            let len = bytes.len() as u64;
            let file = Path::new(name).file_name().unwrap().to_str().unwrap().to_owned();
            let bad = if *name == failing { (len / 2) & !4095..len } else { 0..0 };
            faulty_fs::FaultyFile { name: file, bytes, bad }
        })
        .collect();
    faulty_fs::FaultyFs::mount(mount, files).expect("mount a FUSE file system")
}

/// A disk read error under a mapped Syzygy file: served by a FUSE file
/// system of the test whose reads of the file's second half fail with EIO
/// from some point on (pages read before stay in the page cache).
#[test]
fn read_errors_under_a_mapped_file_are_contained_syzygy() {
    if !fuse_allowed("read_errors_under_a_mapped_file_are_contained_syzygy") {
        return;
    }
    let Some(dir) = copy_tables("read-error") else { return };
    let name = "KQvKR.rtbz";
    let mount = dir.join("faulty");
    let fs = faulty_mount(&mount, &dir, &[name], name);
    std::fs::remove_file(dir.join(name)).unwrap();
    let mut config = config(&dir);
    config.syzygy = vec![mount.clone(), dir.clone()];
    let server = TestServer::start(config);
    let reference = TestServer::start(self::config(&syzygy_dir().unwrap()));
    let case = FaultCase {
        server: &server,
        reference: &reference,
        affected: "KQvKR",
        other: "KRvK",
        file: mount.join(name),
        table: name,
        listed: name,
    };
    case.run_with(54, "failing reads of its second half (EIO)", |_| fs.fail());
    assert!(fs.failed_reads.load(Ordering::Relaxed) > 0);
    drop((server, reference, fs));
    std::fs::remove_dir_all(&dir).ok();
}

/// The same for a chesstb file.
#[test]
fn read_errors_under_a_mapped_file_are_contained_chesstb() {
    if !fuse_allowed("read_errors_under_a_mapped_file_are_contained_chesstb") {
        return;
    }
    let name = "dtm50/KQKR.lzdtm50";
    let Some((dir, from)) = chesstb_copy("read-error-chesstb", Some(name)) else { return };
    let mount = dir.join("faulty");
    let fs = faulty_mount(&mount, &from, &[name], name);
    let server = TestServer::start(chesstb_config(&[&mount, &dir]));
    let reference = TestServer::start(chesstb_config(&[&from]));
    let case = FaultCase {
        server: &server,
        reference: &reference,
        affected: "KQvKR",
        other: "KRvK",
        file: mount.join("KQKR.lzdtm50"),
        table: "KQKR.lzdtm50",
        listed: "KQKR.lzdtm50",
    };
    case.run_with(55, "failing reads of its second half (EIO)", |_| fs.fail());
    assert!(fs.failed_reads.load(Ordering::Relaxed) > 0);
    drop((server, reference, fs));
    std::fs::remove_dir_all(&dir).ok();
}

/// The same for a built-in table (the store's directory on the FUSE file
/// system, read-only).
#[test]
fn read_errors_under_a_mapped_file_are_contained_builtin() {
    if !fuse_allowed("read_errors_under_a_mapped_file_are_contained_builtin") {
        return;
    }
    let dir = builtin_tables("read-error-builtin");
    let mount = dir.join("faulty");
    let fs = faulty_mount(&mount, &dir, &["KQvK.tbsb", "KRvK.tbsb"], "KRvK.tbsb");
    let server = TestServer::start(builtin_config(&mount));
    let reference = TestServer::start(builtin_config(&dir));
    let case = FaultCase {
        server: &server,
        reference: &reference,
        affected: "KRvK",
        other: "KQvK",
        file: mount.join("KRvK.tbsb"),
        table: "KRvK.tbsb",
        listed: "KRvK (builtin)",
    };
    case.run_with(56, "failing reads of its second half (EIO)", |_| fs.fail());
    assert!(fs.failed_reads.load(Ordering::Relaxed) > 0);
    drop((server, reference, fs));
    std::fs::remove_dir_all(&dir).ok();
}

/// With `syzygy_io = "read"` the same truncation is a `table_error`.
#[test]
fn truncation_in_place_is_a_table_error_with_read_io() {
    let Some(dir) = copy_tables("truncate-read") else { return };
    let mut config = config(&dir);
    config.syzygy_io = tbserver::config::SyzygyIo::Read;
    let server = TestServer::start(config);
    let (status, body) = probe(&server, KQVKR);
    assert_eq!((status, body["category"].as_str()), (200, Some("win")), "{body}");
    std::fs::OpenOptions::new().write(true).open(dir.join("KQvKR.rtbw")).unwrap().set_len(0).unwrap();
    assert_table_error(probe(&server, KQVKR), "KQvKR.rtbw");
    let (status, _) = probe(&server, KRVK);
    assert_eq!(status, 200);
    std::fs::remove_dir_all(&dir).ok();
}

/// libgtb opens Gaviota files by name itself and crashes (SIGSEGV) on a
/// garbage one, so files failing the block-index check are never handed to
/// it. Syzygy still answers WDL and DTZ, so the answer is a 200 without DTM
/// and with `table_error` naming the Gaviota file.
#[test]
fn broken_gaviota_files_are_refused() {
    let (Some(gaviota), Some(syzygy)) = (common::gaviota_dir(), syzygy_dir()) else { return };
    let dir = std::env::temp_dir().join(format!("tbserver-gaviota-broken-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let read = |name: &str| std::fs::read(gaviota.join(name)).unwrap();
    std::fs::write(dir.join("kqk.gtb.cp4"), read("kqk.gtb.cp4")).unwrap();
    std::fs::write(dir.join("krk.gtb.cp4"), garbage()).unwrap();
    let kpk = read("kpk.gtb.cp4");
    std::fs::write(dir.join("kpk.gtb.cp4"), &kpk[..kpk.len() / 2]).unwrap();
    std::fs::write(dir.join("knk.gtb.cp4"), b"").unwrap();
    // Syzygy (intact) answers WDL and DTZ; Gaviota DTM.
    let mut config = tbserver::config::Config {
        gaviota: vec![dir.clone()],
        syzygy: vec![syzygy],
        cache_entries: 0,
        ..Default::default()
    };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    let server = TestServer::start(config);
    let listed = problems(&server);
    assert_eq!(
        listed.keys().map(String::as_str).collect::<Vec<_>>(),
        ["knk.gtb.cp4", "kpk.gtb.cp4", "krk.gtb.cp4"],
        "{listed:?}"
    );
    assert!(listed["kpk.gtb.cp4"].contains("truncated"), "{}", listed["kpk.gtb.cp4"]);
    for (fen, table) in [(KRVK, "krk.gtb.cp4"), (KPVK, "kpk.gtb.cp4")] {
        let (status, body) = probe(&server, fen);
        assert_eq!((status, &body["dtm"]), (200, &Value::Null), "{body}");
        assert!(body["wdl50"].is_i64(), "Syzygy still answers: {body}");
        assert_eq!(body["table_error"]["table"], table, "{body}");
    }
    let (status, body) = probe(&server, KQVK);
    assert_eq!((status, body["dtm"]["plies"].as_i64()), (200, Some(17)), "{body}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The real binary: a table replaced by rename is served after `kill -HUP`.
#[test]
fn sighup_rescans_the_running_binary() {
    let Some(dir) = copy_tables("sighup") else { return };
    let good = std::fs::read(dir.join("KQvK.rtbw")).unwrap();
    std::fs::write(dir.join("KQvK.rtbw"), garbage()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // Built-in tables off: they would answer in place of the broken file.
    let config = dir.join("tbserver.toml");
    std::fs::write(&config, "[builtin]\nmode = \"off\"\n").unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_tbserver"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--config"])
        .arg(&config)
        .arg("--syzygy")
        .arg(&dir)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Stopped even when an assertion fails.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            self.0.kill().ok();
            self.0.wait().ok();
        }
    }
    let mut child = KillOnDrop(child);
    let url = format!("http://127.0.0.1:{port}/api/v1/probe?fen={}", enc(KQVK));
    let get =
        || reqwest::blocking::get(&url).ok().map(|r| (r.status().as_u16(), r.json::<Value>().unwrap_or(Value::Null)));
    let ready = (0..100).find_map(|_| {
        get().or_else(|| {
            std::thread::sleep(Duration::from_millis(50));
            None
        })
    });
    let (status, body) = ready.expect("server answers");
    assert_eq!((status, body["error"]["table"].as_str()), (503, Some("KQvK.rtbw")), "{body}");

    let tmp = dir.join("KQvK.rtbw.new");
    std::fs::write(&tmp, &good).unwrap();
    std::fs::rename(&tmp, dir.join("KQvK.rtbw")).unwrap();
    let hup = std::process::Command::new("kill").args(["-HUP", &child.0.id().to_string()]).status().unwrap();
    assert!(hup.success());
    // The rescan runs in the background: poll until it is served.
    let served = (0..100).find_map(|_| match get() {
        Some((200, body)) => Some(body),
        _ => {
            std::thread::sleep(Duration::from_millis(50));
            None
        }
    });
    let alive = child.0.try_wait().unwrap().is_none();
    drop(child);
    assert!(alive, "SIGHUP must not stop the server");
    let body = served.expect("new table served after SIGHUP");
    assert_eq!((body["category"].as_str(), body["sources"]["wdl50"].as_str()), (Some("win"), Some("syzygy")), "{body}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A built-in table with one damaged block: the probes that need that block
/// answer `table_error` naming the table and block; other positions of the
/// same table, and other tables, keep answering; `/prometheus` shows the
/// shared block cache at work.
#[test]
fn a_damaged_builtin_block_fails_only_its_own_probes() {
    use tbformat::format;
    use tbserver::builtin::{
        Material, Store,
        store::{board_of, pos_in},
    };
    let dir = std::env::temp_dir().join(format!("tbserver-broken-builtin-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let kqvk = Material::parse("KQvK").unwrap();
    let store = Store::new(&dir, true);
    let table = store.table(&kqvk).unwrap();
    store.table(&Material::parse("KRvK").unwrap()).unwrap();
    let layout = table.layout.clone();
    let block_of = |fen: &str| {
        let pos = tbserver::request::parse_fen(fen).unwrap();
        let b = board_of(&pos).unwrap();
        layout.index(&pos_in(&layout, &b, false)) as usize / format::BLOCK_POSITIONS
    };
    // White to move: their moves lead to Black-to-move positions, another
    // half of the index, so each probe needs its own position's block.
    let (damaged, healthy) = (KQVK, "8/8/8/8/8/k7/2K5/7Q w - - 0 1");
    assert_ne!(block_of(damaged), block_of(healthy));
    let path = dir.join("KQvK.tbsb");
    let mut bytes = std::fs::read(&path).unwrap();
    let (_, blocks) = format::validate_layout(&bytes, &kqvk, layout.size).unwrap();
    let e = blocks.entries[block_of(damaged)];
    assert!(!e.is_empty(), "the block holds values");
    bytes[e.offset + e.len() / 2] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    drop((table, store));

    let mut config = tbserver::config::Config { cache_entries: 0, ..Default::default() };
    config.builtin.dir = dir.clone();
    let server = TestServer::start(config);
    let (status, body) = probe(&server, damaged);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "table_error", "{body}");
    assert!(body.to_string().contains(&format!("KQvK.tbsb block {}: checksum mismatch", block_of(damaged))), "{body}");
    for fen in [healthy, KRVK] {
        let (status, body) = probe(&server, fen);
        assert_eq!((status, body["category"].as_str()), (200, Some("win")), "{fen}: {body}");
    }
    let metrics = reqwest::blocking::get(format!("{}/prometheus", server.base)).unwrap().text().unwrap();
    let misses = metrics.lines().find(|l| l.starts_with("tbserver_block_cache_misses_total{source=\"builtin\"}"));
    assert!(misses.is_some_and(|l| !l.ends_with(" 0")), "{metrics}");
    report!(
        "built-in: one damaged block fails its own probe (table_error), the rest of the table and other tables answer"
    );
    std::fs::remove_dir_all(&dir).ok();
}
