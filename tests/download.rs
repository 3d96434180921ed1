//! `tbserver download` and `tbserver verify --checksums` against a local
//! mirror: an HTTP server inside the test over the shared tables, which can
//! cut transfers half-way, flip a byte, answer 404, ignore `Range`, or go
//! slowly. Files are compared byte for byte with the shared copies and
//! hashed against the published SHA-256 list read here on its own.

#[macro_use]
mod common;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, Method, StatusCode, header},
    response::Response,
};
use sha2::Digest as _;

/// How the test mirror misbehaves.
#[derive(Clone, Default)]
struct Behaviour {
    /// Each file's first GET sends half the body, then drops the connection.
    cut_first: bool,
    /// This file is served with one byte flipped.
    flip: Option<String>,
    /// This file is answered with 404.
    missing: Option<String>,
    /// `Range` is ignored: every answer is the whole file (200).
    ignore_range: bool,
    /// Bytes per second per transfer.
    throttle: Option<u64>,
}

#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    path: String,
    range_from: Option<u64>,
    status: u16,
    /// Body bytes the mirror sent (or meant to, before a cut).
    sent: u64,
}

struct MirrorState {
    root: PathBuf,
    behaviour: Behaviour,
    seen: Mutex<Vec<Seen>>,
}

struct Mirror {
    base: String,
    state: Arc<MirrorState>,
    _runtime: tokio::runtime::Runtime,
}

impl Mirror {
    fn start(root: &Path, behaviour: Behaviour) -> Mirror {
        let state = Arc::new(MirrorState { root: root.to_owned(), behaviour, seen: Mutex::new(Vec::new()) });
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let base = format!("http://{}/tables", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(serve).with_state(Arc::clone(&state));
        runtime.spawn(async move { axum::serve(listener, app).await });
        Mirror { base, state, _runtime: runtime }
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// GET requests by file.
    fn gets(&self) -> BTreeMap<String, Vec<Seen>> {
        let mut by_file: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
        for s in self.seen().into_iter().filter(|s| s.method == Method::GET) {
            by_file.entry(s.path.clone()).or_default().push(s);
        }
        by_file
    }
}

async fn serve(State(state): State<Arc<MirrorState>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().trim_start_matches("/tables/").to_owned();
    let range_from = range_from(request.headers());
    let b = &state.behaviour;
    let log = |status: u16, sent: u64| {
        let seen = Seen { method: method.clone(), path: path.clone(), range_from, status, sent };
        state.seen.lock().unwrap().push(seen);
    };
    let file = state.root.join(&path);
    let readable = !path.split('/').any(|c| c == ".." || c.is_empty()) && file.is_file();
    if !readable || b.missing.as_deref() == Some(path.as_str()) {
        log(404, 0);
        return Response::builder().status(StatusCode::NOT_FOUND).body(Body::empty()).unwrap();
    }
    let mut bytes = std::fs::read(&file).unwrap();
    if b.flip.as_deref() == Some(path.as_str()) {
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x10;
    }
    let len = bytes.len() as u64;
    let first_get =
        method == Method::GET && !state.seen.lock().unwrap().iter().any(|s| s.path == path && s.method == Method::GET);
    let (status, from) = match range_from {
        Some(from) if !b.ignore_range && from >= len => {
            log(416, 0);
            return Response::builder()
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .body(Body::empty())
                .unwrap();
        }
        Some(from) if !b.ignore_range => (StatusCode::PARTIAL_CONTENT, from),
        _ => (StatusCode::OK, 0),
    };
    let body = Bytes::from(bytes).slice(from as usize..);
    let mut response = Response::builder()
        .status(status)
        .header(header::CONTENT_LENGTH, body.len())
        .header(header::ACCEPT_RANGES, if b.ignore_range { "none" } else { "bytes" });
    if status == StatusCode::PARTIAL_CONTENT {
        response = response.header(header::CONTENT_RANGE, format!("bytes {from}-{}/{len}", len - 1));
    }
    if method == Method::HEAD {
        log(status.as_u16(), 0);
        return response.body(Body::empty()).unwrap();
    }
    let cut = (b.cut_first && first_get).then_some(body.len() / 2);
    log(status.as_u16(), cut.unwrap_or(body.len()) as u64);
    let throttle = b.throttle;
    let stream = async_stream(body, cut, throttle);
    response.body(Body::from_stream(stream)).unwrap()
}

/// The body in pieces of 16 KiB; with `cut`, an error after that many bytes
/// (the connection is dropped); with a throttle, paced.
fn async_stream(
    body: Bytes,
    cut: Option<usize>,
    throttle: Option<u64>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    const PIECE: usize = 16 << 10;
    futures_util::stream::unfold(0usize, move |at| {
        let body = body.clone();
        async move {
            let end = cut.unwrap_or(body.len());
            if at == usize::MAX {
                return None;
            }
            if at >= end {
                // Time for the bytes sent to leave before the connection drops,
                // as on a real network.
                tokio::time::sleep(Duration::from_millis(30)).await;
                return cut.map(|_| (Err(std::io::Error::other("cut by the test mirror")), usize::MAX));
            }
            if let Some(rate) = throttle {
                tokio::time::sleep(Duration::from_secs_f64(PIECE as f64 / rate as f64)).await;
            }
            let next = (at + PIECE).min(end);
            Some((Ok(body.slice(at..next)), next))
        }
    })
}

fn range_from(headers: &HeaderMap) -> Option<u64> {
    let v = headers.get(header::RANGE)?.to_str().ok()?;
    v.strip_prefix("bytes=")?.strip_suffix('-')?.parse().ok()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tbserver-download-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tbserver(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbserver")).args(args).output().unwrap()
}

fn download_syzygy(mirror: &Mirror, to: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let to = to.to_str().unwrap();
    let mut args = vec!["download", "syzygy", "--pieces", "3-4", "--to", to, "--mirror", &mirror.base, "--jobs", "3"];
    args.extend_from_slice(extra);
    let out = tbserver(&args);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

/// The 3- and 4-piece Syzygy file names of the shared data.
fn three_four(syzygy: &Path) -> BTreeSet<String> {
    std::fs::read_dir(syzygy)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.split('.').next().unwrap().chars().filter(char::is_ascii_uppercase).count() <= 4)
        .collect()
}

/// The published SHA-256 of each file, read from the shared copy of the list.
fn published_sha256() -> BTreeMap<String, String> {
    let dir = common::shared_dir("data/syzygy-checksums").expect("checked with the tables");
    std::fs::read_to_string(dir.join("data/syzygy-checksums/sha256"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once("  ").map(|(h, n)| (n.to_owned(), h.to_owned())))
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Every file of `names` in `to` is byte-identical to the shared copy and has
/// the published SHA-256; no `.part` is left. Returns the bytes compared.
fn assert_identical(syzygy: &Path, to: &Path, names: &BTreeSet<String>) -> u64 {
    let published = published_sha256();
    let mut bytes = 0;
    for name in names {
        let got = std::fs::read(to.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, std::fs::read(syzygy.join(name)).unwrap(), "{name} differs");
        assert_eq!(sha256_hex(&got), published[name], "{name}: published SHA-256");
        bytes += got.len() as u64;
    }
    let parts: Vec<_> = std::fs::read_dir(to)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "part"))
        .collect();
    assert!(parts.is_empty(), "parts left: {parts:?}");
    bytes
}

#[test]
fn three_and_four_pieces_arrive_intact() {
    let Some(syzygy) = common::syzygy_dir() else { return };
    let names = three_four(&syzygy);
    assert_eq!(names.len(), 70);
    let mirror = Mirror::start(&syzygy, Behaviour::default());
    let to = scratch("all");
    // The plan alone: every file named with its size, nothing asked of the mirror.
    let (code, out) = download_syzygy(&mirror, &to, &["--dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("would fetch ")).count(), 70, "{out}");
    assert!(out.contains("to fetch: 70, 4.1 MiB") && out.contains("would fetch KQvKR.rtbz ("), "{out}");
    assert!(mirror.seen().is_empty() && std::fs::read_dir(&to).unwrap().next().is_none());
    let (code, out) = download_syzygy(&mirror, &to, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("plan: 70 files"), "{out}");
    assert!(out.contains("done: 70 fetched"), "{out}");
    let bytes = assert_identical(&syzygy, &to, &names);
    let in_place: BTreeSet<String> =
        std::fs::read_dir(&to).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(in_place, names);
    // Again: nothing to fetch, nothing asked of the mirror but what it had.
    let before = mirror.seen().len();
    let (code, out) = download_syzygy(&mirror, &to, &["--check-present"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("already in place: 70") && out.contains("to fetch: 0"), "{out}");
    assert_eq!(mirror.seen().len(), before, "a second run fetched again");
    report!(
        "download: 70 of 70 files of 3-4 pieces byte-identical ({bytes} bytes), published SHA-256 matched; rerun fetched 0"
    );
    std::fs::remove_dir_all(&to).ok();
}

#[test]
fn cut_transfers_resume_with_range() {
    let Some(syzygy) = common::syzygy_dir() else { return };
    let names = three_four(&syzygy);
    let mirror = Mirror::start(&syzygy, Behaviour { cut_first: true, ..Default::default() });
    let to = scratch("cut");
    let (code, out) = download_syzygy(&mirror, &to, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert_identical(&syzygy, &to, &names);
    let gets = mirror.gets();
    let mut resumed = 0;
    for name in &names {
        let size = std::fs::metadata(syzygy.join(name)).unwrap().len();
        let requests = &gets[name];
        let whole = requests.iter().filter(|s| s.range_from.unwrap_or(0) == 0).count();
        assert_eq!(whole, 1, "{name} was asked for from the start {whole} times: {requests:?}");
        let sent: u64 = requests.iter().map(|s| s.sent).sum();
        assert_eq!(sent, size, "{name}: the mirror sent {sent} bytes for {size}: {requests:?}");
        if size >= 2 {
            assert!(requests.iter().any(|s| s.status == 206 && s.range_from == Some(size / 2)), "{name}: {requests:?}");
            resumed += 1;
        }
    }
    assert!(resumed >= 60, "{resumed}");
    assert!(out.contains(&format!("{resumed} resumed")), "{out}");
    report!(
        "download: every first transfer cut half-way; {resumed} files resumed with Range from the half, each sent exactly once in all"
    );
    std::fs::remove_dir_all(&to).ok();
}

#[test]
fn a_flipped_byte_is_refused() {
    let Some(syzygy) = common::syzygy_dir() else { return };
    let names = three_four(&syzygy);
    let bad = "KRvKN.rtbw";
    let mirror = Mirror::start(&syzygy, Behaviour { flip: Some(bad.into()), ..Default::default() });
    let to = scratch("flip");
    let (code, out) = download_syzygy(&mirror, &to, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("FAILED {bad}: BLAKE3")), "{out}");
    assert!(out.contains("fetched twice"), "{out}");
    assert!(!to.join(bad).exists() && !to.join(format!("{bad}.part")).exists());
    assert_eq!(mirror.gets()[bad].len(), 2, "fetched once more from the start, then given up");
    let good: BTreeSet<String> = names.iter().filter(|n| *n != bad).cloned().collect();
    assert_identical(&syzygy, &to, &good);
    report!(
        "download: {bad} with a flipped byte refused after two transfers, named, not in place; 69 others intact; exit 1"
    );
    std::fs::remove_dir_all(&to).ok();
}

#[test]
fn a_missing_file_and_a_mirror_without_range() {
    let Some(syzygy) = common::syzygy_dir() else { return };
    let names = three_four(&syzygy);
    let gone = "KQvKB.rtbz";
    let mirror = Mirror::start(&syzygy, Behaviour { missing: Some(gone.into()), ..Default::default() });
    let to = scratch("missing");
    let (code, out) = download_syzygy(&mirror, &to, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("FAILED {gone}:")) && out.contains("not found"), "{out}");
    assert!(!to.join(gone).exists() && !to.join(format!("{gone}.part")).exists());
    assert_identical(&syzygy, &to, &names.iter().filter(|n| *n != gone).cloned().collect());
    std::fs::remove_dir_all(&to).ok();

    // Cut half-way, and the Range request answered with the whole file.
    let mirror = Mirror::start(&syzygy, Behaviour { cut_first: true, ignore_range: true, ..Default::default() });
    let to = scratch("no-range");
    let (code, out) = download_syzygy(&mirror, &to, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert_identical(&syzygy, &to, &names);
    let gets = mirror.gets();
    let restarted = gets.values().filter(|r| r.iter().any(|s| s.range_from.is_some() && s.status == 200)).count();
    assert!(restarted >= 60, "{restarted}");
    assert!(out.contains("the mirror sent the whole file"), "{out}");
    report!(
        "download: a 404 named and exit 1 (69 others intact); a mirror ignoring Range: {restarted} files read again from the start, all 70 intact"
    );
    std::fs::remove_dir_all(&to).ok();
}

#[test]
fn killed_mid_download_then_resumed() {
    let Some(syzygy) = common::syzygy_dir() else { return };
    let names = three_four(&syzygy);
    let slow = Mirror::start(&syzygy, Behaviour { throttle: Some(512 << 10), ..Default::default() });
    let to = scratch("killed");
    let to_str = to.to_str().unwrap().to_owned();
    let args = ["download", "syzygy", "--pieces", "3-4", "--to", &to_str, "--mirror", &slow.base, "--jobs", "2"];
    let mut child =
        Command::new(env!("CARGO_BIN_EXE_tbserver")).args(args).stdout(std::process::Stdio::null()).spawn().unwrap();
    let parts = |to: &Path| -> BTreeMap<String, u64> {
        std::fs::read_dir(to)
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                Some((name.strip_suffix(".part")?.to_owned(), e.metadata().ok()?.len()))
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !parts(&to).values().any(|&b| b >= 64 << 10) {
        assert!(Instant::now() < deadline, "no part grew");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let left = parts(&to);
    let in_place: BTreeSet<String> = std::fs::read_dir(&to)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".part"))
        .collect();
    let mirror = Mirror::start(&syzygy, Behaviour::default());
    let (code, out) = download_syzygy(&mirror, &to, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert_identical(&syzygy, &to, &names);
    let gets = mirror.gets();
    let mut resumed = 0;
    for (name, &have) in &left {
        let size = std::fs::metadata(syzygy.join(name)).unwrap().len();
        if have == 0 || have == size {
            continue; // nothing to resume from, or nothing left to fetch
        }
        assert_eq!(gets[name].len(), 1, "{name}: {:?}", gets[name]);
        assert_eq!(gets[name][0].range_from, Some(have), "{name} resumed from its part");
        resumed += 1;
    }
    assert!(resumed >= 1, "{left:?}");
    assert!(in_place.iter().all(|n| !gets.contains_key(n)), "files in place before the kill were fetched again");
    let done_before = in_place.len();
    report!(
        "download: killed with SIGKILL after {done_before} files; the rerun resumed {resumed} parts with Range from their length, all 70 intact"
    );
    std::fs::remove_dir_all(&to).ok();
}

/// Root only (a tmpfs), as the operator tests: under `CI=true` required.
#[test]
fn a_disk_too_small_is_refused_before_any_transfer() {
    let Some(syzygy) = common::syzygy_dir() else { return };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("a_disk_too_small_is_refused_before_any_transfer needs root (mount) under CI=true");
        }
        eprintln!("SKIPPED: a_disk_too_small_is_refused_before_any_transfer needs root (mount)");
        return;
    }
    let dir = scratch("small-disk");
    let status =
        Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir.to_str().unwrap()]).status().unwrap();
    assert!(status.success());
    let mirror = Mirror::start(&syzygy, Behaviour::default());
    let (code, out) = download_syzygy(&mirror, &dir, &[]);
    let listed = std::fs::read_dir(&dir).unwrap().count();
    let _ = Command::new("umount").arg("-l").arg(&dir).status();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("disk_too_small") && out.contains("nothing was fetched"), "{out}");
    assert!(mirror.seen().is_empty(), "the mirror was asked: {:?}", mirror.seen());
    assert_eq!(listed, 0);
    report!("download: 3-4 pieces (4.1 MiB) onto a 1 MiB tmpfs refused before any request: disk_too_small, exit 1");
}

#[test]
fn chesstb_through_a_mirror() {
    let Some(chesstb) = common::chesstb_dir() else { return };
    let mirror = Mirror::start(&chesstb, Behaviour { cut_first: true, ..Default::default() });
    let to = scratch("chesstb");
    let out = tbserver(&[
        "download",
        "chesstb",
        "--pieces",
        "3-4",
        "--metrics",
        "wdl,dtz,dtc,dtm,dtm50",
        "--to",
        to.to_str().unwrap(),
        "--mirror",
        &mirror.base,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    // chesstb's generator made no DTC for KPKP: the one file the mirror lacks.
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("UNAVAILABLE dtc/KPKP.lzdtc"), "{text}");
    assert!(text.contains("1 failed") && text.contains("FAILED dtc/KPKP.lzdtc"), "{text}");
    let mut files = 0;
    for folder in ["wdl", "dtz", "dtc", "dtm", "dtm50"] {
        for entry in std::fs::read_dir(to.join(folder)).unwrap() {
            let path = entry.unwrap().path();
            let name = format!("{folder}/{}", path.file_name().unwrap().to_string_lossy());
            assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(chesstb.join(&name)).unwrap(), "{name}");
            files += 1;
        }
    }
    assert_eq!(files, 35 * 4 + 10);
    let resumed = mirror.gets().values().filter(|r| r.iter().any(|s| s.status == 206)).count();
    assert!(resumed > 100, "{resumed}");
    report!(
        "download chesstb: {files} files of 3-4 pieces byte-identical (sizes by HEAD, XXH64 trailers checked, {resumed} resumed); KPKP's missing DTC named, exit 1"
    );
    std::fs::remove_dir_all(&to).ok();
}

#[test]
fn verify_checksums_names_a_changed_byte() {
    let (Some(syzygy), Some(chesstb)) = (common::syzygy_dir(), common::chesstb_dir()) else { return };
    let out = tbserver(&["verify", "--checksums", "--quiet", syzygy.to_str().unwrap(), chesstb.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let chesstb_files = ["wdl", "dtz", "dtc", "dtm", "dtm50"]
        .iter()
        .map(|f| {
            std::fs::read_dir(chesstb.join(f))
                .unwrap()
                .filter(|e| !e.as_ref().unwrap().path().to_string_lossy().ends_with(".info"))
                .count()
        })
        .sum::<usize>();
    let total = 96 + chesstb_files;
    assert!(
        text.contains(&format!("{total} files hashed: {total} match, 0 bad, 0 unknown; {} listed", 3022 - 96)),
        "{text}"
    );
    assert!(text.contains("GB/s"), "{text}");

    let dir = scratch("verify");
    for name in ["KQvK.rtbw", "KRvKP.rtbz", "KBNvK.rtbw"] {
        std::fs::copy(syzygy.join(name), dir.join(name)).unwrap();
    }
    let mut bytes = std::fs::read(syzygy.join("KRPvKR.rtbz")).unwrap();
    let at = bytes.len() * 2 / 3;
    bytes[at] ^= 1;
    std::fs::write(dir.join("KRPvKR.rtbz"), &bytes).unwrap();
    std::fs::write(dir.join("KQvKQQ.rtbw"), b"not a published file").unwrap();
    std::fs::create_dir(dir.join("dtm")).unwrap();
    let mut dtm = std::fs::read(chesstb.join("dtm/KRKP.lzdtm")).unwrap();
    dtm[100] ^= 0x80;
    std::fs::write(dir.join("dtm/KRKP.lzdtm"), &dtm).unwrap();
    let out = tbserver(&["verify", "--checksums", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("BAD  {}: BLAKE3", dir.join("KRPvKR.rtbz").display())), "{text}");
    assert!(text.contains(&format!("BAD  {}: XXH64 trailer mismatch", dir.join("dtm/KRKP.lzdtm").display())), "{text}");
    assert!(text.contains(&format!("UNKNOWN {}", dir.join("KQvKQQ.rtbw").display())), "{text}");
    assert!(text.contains("6 files hashed: 3 match, 2 bad, 1 unknown"), "{text}");
    report!(
        "verify --checksums: {total} of {total} shared files match (96 Syzygy by BLAKE3, {chesstb_files} chesstb by trailer); a changed byte named in each kind, an unknown file named, exit 1"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A running server names the command that fetches a missing table, and
/// serves it once downloaded and rescanned (what SIGHUP does).
#[test]
fn a_server_names_the_download_and_serves_it_after_a_rescan() {
    let Some(syzygy) = common::syzygy_dir() else { return };
    let dir = scratch("serve");
    // KQvK only: the server covers 3 pieces, and has no KRvK.
    for name in ["KQvK.rtbw", "KQvK.rtbz"] {
        std::fs::copy(syzygy.join(name), dir.join(name)).unwrap();
    }
    let mut config = tbserver::config::Config { syzygy: vec![dir.clone()], cache_entries: 0, ..Default::default() };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    let server = common::TestServer::start(config);
    let krvk = format!("/api/v1/probe?fen={}", common::enc("8/8/8/4k3/8/8/8/KR6 w - - 0 1"));
    let (status, body) = server.get(&krvk);
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("missing_table")), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    let command = "tbserver download syzygy --material KRvK --to DIR";
    assert!(message.contains(command), "{message}");

    let mirror = Mirror::start(&syzygy, Behaviour::default());
    let out = tbserver(&[
        "download",
        "syzygy",
        "--material",
        "KRvK",
        "--to",
        dir.to_str().unwrap(),
        "--mirror",
        &mirror.base,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let fetched: BTreeSet<String> = mirror.gets().into_keys().collect();
    assert_eq!(fetched, BTreeSet::from(["KRvK.rtbw".to_owned(), "KRvK.rtbz".to_owned()]));
    server.state.rescan();
    let (status, body) = server.get(&krvk);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["category"], "win", "{body}");
    assert_eq!(body["sources"]["dtz50"], "syzygy", "{body}");
    assert!(body["dtz50"]["plies"].as_i64().is_some_and(|d| d > 0), "{body}");
    report!("download: missing_table names `{command}`; after it and a rescan KRvK is served (win)");
    std::fs::remove_dir_all(&dir).ok();
}

/// A rescan (SIGHUP) that finds every file as it was keeps the served index
/// as it is, with its maps and caches; one that finds a file added reopens
/// that source only.
#[test]
fn a_rescan_reopens_only_the_sources_whose_files_changed() {
    let (Some(syzygy), Some(chesstb)) = (common::syzygy_dir(), common::chesstb_dir()) else { return };
    let dir = scratch("unchanged");
    for name in ["KQvK.rtbw", "KQvK.rtbz"] {
        std::fs::copy(syzygy.join(name), dir.join(name)).unwrap();
    }
    let mut config = tbserver::config::Config {
        syzygy: vec![dir.clone()],
        chesstb: vec![chesstb],
        cache_entries: 100,
        ..Default::default()
    };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    let server = common::TestServer::start(config);
    let source_of = |tablebases: &tbserver::tablebase::Tablebases, source: tbserver::domain::Source| {
        tablebases.source_handles().find(|s| s.source() == source).cloned().unwrap()
    };
    let krvk = format!("/api/v1/probe?fen={}", common::enc("8/8/8/4k3/8/8/8/KR6 w - - 0 1"));
    let (status, body) = server.get(&krvk);
    assert_eq!((status, body["sources"]["wdl50"].as_str()), (200, Some("chesstb")), "{body}");

    let before = server.state.tablebases();
    let after = server.state.rescan();
    assert!(std::sync::Arc::ptr_eq(&before, &after), "nothing changed, yet the index was replaced");

    for name in ["KRvK.rtbw", "KRvK.rtbz"] {
        std::fs::copy(syzygy.join(name), dir.join(name)).unwrap();
    }
    let after = server.state.rescan();
    assert!(!std::sync::Arc::ptr_eq(&before, &after), "a table was added, yet the index was kept");
    use tbserver::domain::Source;
    assert!(!std::sync::Arc::ptr_eq(&source_of(&before, Source::Syzygy), &source_of(&after, Source::Syzygy)));
    assert!(std::sync::Arc::ptr_eq(&source_of(&before, Source::Chesstb), &source_of(&after, Source::Chesstb)));
    // The cached answer (WDL from chesstb) is not served any more: Syzygy comes first.
    let (status, body) = server.get(&krvk);
    assert_eq!((status, body["sources"]["wdl50"].as_str()), (200, Some("syzygy")), "{body}");
    report!("rescan: unchanged files keep the index; KRvK added: Syzygy reopened, chesstb kept, answer from Syzygy");
    std::fs::remove_dir_all(&dir).ok();
}
