//! Generation is an operator's action: guarded, budgeted and crash-safe.
//! With real processes, sockets and filesystems: a client in a network
//! namespace of its own (not loopback), tmpfs mounts too small for a table,
//! a disk that fills up during a write, SIGKILL in the middle of a
//! generation. Needs root (mounts, namespaces); under `CI=true` that is a
//! requirement, elsewhere the tests say loudly that they skipped.

#[macro_use]
mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};
use tbformat::format;

use common::{Log, TestServer, generated_builtin_dir, spawn_listening};
use serde_json::Value;
use tbserver::{
    builtin::{Material, budget},
    config::{BuiltinMode, Config},
};

const TOKEN: &str = "s3cret-operator-token-0123456789";

/// Whether this process may mount filesystems and make network namespaces.
fn privileged(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test} needs root (mounts, network namespaces) under CI=true");
    }
    eprintln!("SKIPPED: {test} needs root (mounts, network namespaces)");
    false
}

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program).args(args).status().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(status.success(), "{program} {args:?}: {status}");
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tbserver-operator-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A tmpfs of a given size, unmounted when dropped.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(name: &str, bytes: u64) -> Tmpfs {
        let dir = scratch_dir(name);
        run("mount", &["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs", dir.to_str().unwrap()]);
        Tmpfs { dir }
    }

    fn free_bytes(&self) -> u64 {
        budget::available_disk(&self.dir, None).expect("statvfs").bytes
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A network namespace joined to this one by a veth pair: a client there
/// reaches a server here at `host_ip` from `client_ip`, an address that is
/// not loopback. Removed (with the pair) when dropped.
struct Netns {
    name: String,
    host_ip: String,
}

impl Netns {
    fn create() -> Netns {
        let id = std::process::id();
        let name = format!("tbsrv{id}");
        let (host_if, peer_if) = (format!("tbh{}", id % 100_000), format!("tbp{}", id % 100_000));
        let net = format!("10.254.{}", id % 250);
        let (host_ip, client_ip) = (format!("{net}.1"), format!("{net}.2"));
        let _ = Command::new("ip").args(["netns", "del", &name]).status();
        run("ip", &["netns", "add", &name]);
        let ns = Netns { name: name.clone(), host_ip: host_ip.clone() };
        run("ip", &["link", "add", &host_if, "type", "veth", "peer", "name", &peer_if]);
        run("ip", &["link", "set", &peer_if, "netns", &name]);
        run("ip", &["addr", "add", &format!("{host_ip}/30"), "dev", &host_if]);
        run("ip", &["link", "set", &host_if, "up"]);
        run("ip", &["netns", "exec", &name, "ip", "addr", "add", &format!("{client_ip}/30"), "dev", &peer_if]);
        run("ip", &["netns", "exec", &name, "ip", "link", "set", &peer_if, "up"]);
        ns
    }

    /// `curl` inside the namespace: status, `WWW-Authenticate`, JSON body.
    fn request(&self, method: &str, url: &str, token: Option<&str>) -> (u16, Option<String>, Value) {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name, "curl", "-sS", "-i", "--max-time", "20", "-X", method]);
        if let Some(token) = token {
            command.args(["-H", &format!("Authorization: Bearer {token}")]);
        }
        let out = command.arg(url).output().expect("curl");
        assert!(out.status.success(), "curl {url}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        let authenticate = head.lines().find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
                .map(|(_, v)| v.trim().to_owned())
        });
        (status, authenticate, serde_json::from_str(body).unwrap_or(Value::Null))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace deletes its end of the pair, and so the pair.
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

/// A tbserver process, killed when dropped.
struct Server {
    child: std::process::Child,
    base: String,
    _log: Log,
}

impl Server {
    /// The real binary listening on `ip` (port chosen by the system), with
    /// built-in tables in `dir`; `config` is added to the config file.
    fn start(ip: &str, dir: &Path, config: &str, env: &[(&str, &str)]) -> Server {
        let file = dir.with_extension("toml");
        std::fs::write(
            &file,
            format!("cache_entries = 0\n{config}\n[builtin]\ndir = {:?}\nwait_ms = 0\n", dir.to_str().unwrap()),
        )
        .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_tbserver"));
        command.args(["serve", "--config"]).arg(&file).args(["--listen", &format!("{ip}:0")]).env("RUST_LOG", "info");
        command
            .env_remove("TBSERVER_ADMIN_TOKEN")
            .env_remove("TBSERVER_ADMIN_TOKEN_FILE")
            .env_remove("TBSERVER_BUILTIN_DIR");
        for (k, v) in env {
            command.env(k, v);
        }
        let (child, base, log) = spawn_listening(command);
        Server { child, base, _log: log }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn get(url: &str) -> (u16, Value) {
    let response = reqwest::blocking::get(url).unwrap();
    (response.status().as_u16(), response.json().unwrap_or(Value::Null))
}

fn post(url: &str) -> (u16, Option<String>, Value) {
    let response = reqwest::blocking::Client::new().post(url).send().unwrap();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), retry_after, response.json().unwrap_or(Value::Null))
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// The `/prometheus` sample `name{labels}` (0 when absent).
fn metric(base: &str, sample: &str) -> f64 {
    let text = reqwest::blocking::get(format!("{base}/prometheus")).unwrap().text().unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(sample).and_then(|rest| rest.strip_prefix(' ')))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// Table files (finished or being written) in `dir`.
fn table_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(&format!(".{}", format::EXTENSION)))
        .collect();
    names.sort();
    names
}

/// Copies the generated tables `materials` need (not the materials
/// themselves) from the tests' shared built-in directory into `dir`.
fn copy_dependencies(materials: &[&Material], dir: &Path) {
    let source = generated_builtin_dir();
    for m in materials {
        for d in m.dependencies() {
            let name = format!("{}.{}", d.name(), format::EXTENSION);
            if !dir.join(&name).exists() {
                std::fs::copy(source.join(&name), dir.join(&name)).unwrap();
            }
        }
    }
}

/// Bytes of the generated tables `material` converts into.
fn dependencies_bytes(material: &Material) -> u64 {
    let source = generated_builtin_dir();
    material
        .dependencies()
        .iter()
        .map(|d| std::fs::metadata(source.join(format!("{}.{}", d.name(), format::EXTENSION))).unwrap().len())
        .sum()
}

/// Polls `GET /api/v1/tables/generate` until `done` holds for its answer.
fn wait_for_generation(base: &str, material: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (status, body) = get(&format!("{base}/api/v1/tables/generate?material={material}"));
        assert_eq!(status, 200, "{body}");
        if done(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "{material}: still {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The probe answer of `fen` from the tests' shared built-in tables, for
/// comparison.
fn reference_answer(fen: &str) -> Value {
    let mut config = Config::default();
    config.builtin.dir = generated_builtin_dir();
    config.cache_entries = 0;
    let server = TestServer::start(config);
    let (status, body) = server.get(&format!("/api/v1/probe?fen={}", fen.replace(' ', "_")));
    assert_eq!(status, 200, "{body}");
    body
}

#[test]
fn operator_actions_need_the_token_from_another_machine() {
    if !privileged("operator_actions_need_the_token_from_another_machine") {
        return;
    }
    let ns = Netns::create();
    let dir = scratch_dir("token");
    let token_file = dir.with_extension("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let guarded = Server::start(&ns.host_ip, &dir, "", &[("TBSERVER_ADMIN_TOKEN_FILE", token_file.to_str().unwrap())]);
    let url = format!("{}/api/v1/tables/generate?material=KRvK", guarded.base);

    let (status, authenticate, body) = ns.request("POST", &url, None);
    assert_eq!((status, code(&body)), (401, "unauthorized"), "{body}");
    assert!(authenticate.is_some_and(|a| a.starts_with("Bearer")), "401 names the scheme");
    let (status, _, body) = ns.request("POST", &url, Some("not-the-token-0123456789"));
    assert_eq!((status, code(&body)), (403, "forbidden"), "{body}");
    let (status, _, body) = ns.request("GET", &url, None);
    assert_eq!((status, body["access"].as_str()), (200, Some("token")), "reading progress stays public: {body}");
    assert!(table_files(&dir).is_empty(), "nothing generated for refused requests");

    let (status, _, body) = ns.request("POST", &url, Some(TOKEN));
    assert!(status == 202 || status == 200, "{status} {body}");
    let (_, _, body) = ns.request("GET", &url, Some(TOKEN));
    assert_eq!(body["access"], "open", "{body}");
    wait_for_generation(&guarded.base, "KRvK", |b| b["state"] == "ready");
    report!("token: 401 without, 403 wrong, 202 with; KRvK generated from {}", ns.host_ip);

    // No token configured: only loopback clients may start the work.
    let open_dir = scratch_dir("no-token");
    let open = Server::start(&ns.host_ip, &open_dir, "", &[]);
    let url = format!("{}/api/v1/tables/generate?material=KRvK", open.base);
    let (status, _, body) = ns.request("POST", &url, Some(TOKEN));
    assert_eq!((status, code(&body)), (403, "forbidden"), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("admin_token_file"), "{body}");
    let (_, _, body) = ns.request("GET", &url, None);
    assert_eq!(body["access"], "closed", "{body}");
    assert!(table_files(&open_dir).is_empty());
    for d in [&dir, &open_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
    let _ = std::fs::remove_file(token_file);
}

#[test]
fn a_token_too_short_or_unreadable_stops_the_server() {
    let dir = scratch_dir("bad-token");
    let short = dir.join("short");
    std::fs::write(&short, "short\n").unwrap();
    for (file, expected) in [(short.clone(), "shorter than 16"), (dir.join("missing"), "cannot read")] {
        let out = Command::new(env!("CARGO_BIN_EXE_tbserver"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("TBSERVER_ADMIN_TOKEN_FILE", &file)
            .env("TBSERVER_BUILTIN_DIR", &dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(expected), "{}: {stderr}", file.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The accepted requests pass the real budget checks first: this needs
/// the memory and disk their tables are estimated to take (about 6.4 GiB
/// and 3 GB; a machine short of either answers 503 or 507 instead).
#[test]
fn requests_by_name_are_bounded() {
    let dir = scratch_dir("queue");
    let mut config = Config::default();
    config.builtin.dir = dir.clone();
    config.builtin.max_queued_tables = 4;
    let server = TestServer::start(config);
    let materials: Vec<String> =
        tbserver::builtin::all_materials(5).iter().filter(|m| m.pieces() == 5).take(100).map(|m| m.name()).collect();
    assert_eq!(materials.len(), 100);
    let (mut accepted, mut refused) = (Vec::new(), 0);
    for m in &materials {
        let (status, retry_after, body) = post(&format!("{}/api/v1/tables/generate?material={m}", server.base));
        match status {
            202 => accepted.push(m.clone()),
            503 => {
                assert_eq!(code(&body), "queue_full", "{body}");
                assert!(retry_after.is_some_and(|s| s.parse::<u64>().unwrap() > 0), "Retry-After");
                refused += 1;
            }
            _ => panic!("{m}: {status} {body}"),
        }
    }
    assert_eq!((accepted.len(), refused), (4, 96));
    // Stop the accepted work now: their 4-piece dependencies take seconds,
    // so none of the 5-piece tables (minutes, GiB each) has started, and a
    // generation that has started only stops at its next layer.
    server.state.tablebases().shutdown();
    // Asking again for a pending table is accepted, and counts once.
    let (status, _, body) = post(&format!("{}/api/v1/tables/generate?material={}", server.base, accepted[0]));
    assert_eq!(status, 202, "{body}");
    assert_eq!(metric(&server.base, "tbserver_generations_refused_total{reason=\"queue\"}"), 96.0);
    report!(
        "100 POSTs of different 5-piece tables: {} accepted ({}), {refused} refused with queue_full",
        accepted.len(),
        accepted.join(" ")
    );
    for m in &accepted {
        let (_, body) = get(&format!("{}/api/v1/tables/generate?material={m}", server.base));
        let target =
            body["progress"]["tables"].as_array().unwrap().iter().find(|t| t["material"] == m.as_str()).cloned();
        assert!(target.is_some_and(|t| t["state"] != "generating"), "{m} never started: {body}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn budgets_are_checked_before_any_work() {
    if !privileged("budgets_are_checked_before_any_work") {
        return;
    }
    // A real small filesystem: 16 MiB, where KRBvKQ needs about 2.8 GB.
    let fs = Tmpfs::mount("small-disk", 16 << 20);
    let mut config = Config::default();
    config.builtin.dir = fs.dir.clone();
    let server = TestServer::start(config);
    let (status, _, body) = post(&format!("{}/api/v1/tables/generate?material=KRBvKQ", server.base));
    assert_eq!((status, code(&body)), (507, "insufficient_storage"), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("MiB of disk") && message.contains(fs.dir.to_str().unwrap()), "{message}");
    assert!(table_files(&fs.dir).is_empty(), "refused before any work");
    drop(server);

    // The operator's caps: disk and memory.
    let dir = scratch_dir("caps");
    let mut config = Config::default();
    config.builtin.dir = dir.clone();
    config.builtin.max_disk_mib = 1;
    config.builtin.max_memory_mib = 500;
    let server = TestServer::start(config);
    let (status, _, body) = post(&format!("{}/api/v1/tables/generate?material=KRBvKQ", server.base));
    assert_eq!((status, code(&body)), (503, "insufficient_memory"), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("builtin.max_memory_mib = 500"), "{body}");
    let (status, _, body) = post(&format!("{}/api/v1/tables/generate?material=KQvKR", server.base));
    assert_eq!((status, code(&body)), (507, "insufficient_storage"), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("builtin.max_disk_mib = 1"), "{body}");
    assert!(table_files(&dir).is_empty(), "refused before any work");
    assert_eq!(metric(&server.base, "tbserver_generations_refused_total{reason=\"memory\"}"), 1.0);
    assert_eq!(metric(&server.base, "tbserver_generations_refused_total{reason=\"disk\"}"), 1.0);
    report!(
        "refused before any work: KRBvKQ on 16 MiB of tmpfs (507), over a 500 MiB memory cap (503); KQvKR over a 1 MiB disk cap (507)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A disk that fills up while a table is being generated: the file is not
/// written (the check of its exact size against the disk left refuses it
/// before the write, or the write fails with ENOSPC if the disk fills in
/// between), nothing partial is left, nothing is kept in memory (the
/// allowance is 0), the failure shows; once space is freed, asking again
/// makes the table.
#[test]
fn a_write_that_fails_leaves_nothing_and_a_retry_works() {
    if !privileged("a_write_that_fails_leaves_nothing_and_a_retry_works") {
        return;
    }
    let target = Material::parse("KQPvK").unwrap();
    let fen = "k7/8/8/8/8/8/4P3/3Q3K w - - 0 1";
    let expected = reference_answer(fen);
    let needed = tbgen::budget::estimate(&target, true).disk_bytes;
    // The file the shared directory holds: what the write below must not fit.
    let target_bytes =
        std::fs::metadata(generated_builtin_dir().join(format!("KQPvK.{}", format::EXTENSION))).unwrap().len();
    let mut outcome = String::new();
    // The disk must fill after the check at the job's start and before the
    // write, a window of the generation's length (hundreds of ms); a slow
    // machine may miss it once, so a few attempts.
    for attempt in 0..4 {
        let fs = Tmpfs::mount("enospc", dependencies_bytes(&target) + 2 * needed + (16 << 20));
        copy_dependencies(&[&target], &fs.dir);
        let mut config = Config::default();
        config.builtin.dir = fs.dir.clone();
        config.builtin.wait_ms = 0;
        config.builtin.max_unwritten_mib = 0;
        config.cache_entries = 0;
        let server = TestServer::start(config);
        let before = table_files(&fs.dir);
        let (status, _) = server.get(&format!("/api/v1/probe?fen={}", fen.replace(' ', "_")));
        assert_eq!(status, 503, "the table is being generated");
        std::thread::sleep(Duration::from_millis(20 << attempt));
        // Fill the disk but for 64 KiB: KQPvK's file takes a few MB, so the
        // margin stays well below the file to be written.
        let left_bytes: u64 = 64 << 10;
        assert!(target_bytes > 4 * left_bytes, "KQPvK takes {target_bytes} bytes: the disk would not fill");
        let filler = fs.dir.join("filler");
        let fill = fs.free_bytes().saturating_sub(left_bytes);
        std::fs::write(&filler, vec![1u8; fill as usize]).unwrap();
        let body = wait_for_generation(&server.base, "KQPvK", |b| b["state"] != "pending");
        let error = body["progress"]["tables"][0]["error"].as_str().unwrap_or_default().to_owned();
        if body["state"] == "ready" || !error.contains("could not write") {
            outcome = format!("attempt {attempt}: {body}");
            continue;
        }
        assert_eq!(body["state"], "failed", "{body}");
        assert!(error.contains("No space left") || error.contains("MiB of disk;"), "{error}");
        assert_eq!(table_files(&fs.dir), before, "no partial file left");
        let (_, tables) = server.get("/api/v1/tables");
        let listed = tables["tables"].as_array().unwrap().iter().find(|t| t["material"] == "KQPvK").expect("listed");
        assert!(listed["problems"][0].as_str().unwrap().contains("could not write"), "{listed}");
        assert_eq!(metric(&server.base, "tbserver_builtin_write_failures_total"), 1.0);
        assert_eq!(metric(&server.base, "tbserver_builtin_unwritten_size_bytes"), 0.0);
        assert_eq!(metric(&server.base, "tbserver_builtin_failed_tables"), 1.0);
        // Free the space; asking by name tries again at once.
        std::fs::remove_file(&filler).unwrap();
        let (status, _, body) = post(&format!("{}/api/v1/tables/generate?material=KQPvK", server.base));
        assert_eq!(status, 202, "{body}");
        wait_for_generation(&server.base, "KQPvK", |b| b["state"] == "ready");
        let (status, answer) = server.get(&format!("/api/v1/probe?fen={}", fen.replace(' ', "_")));
        assert_eq!((status, &answer), (200, &expected));
        assert!(table_files(&fs.dir).contains(&"KQPvK.tbsb".to_owned()));
        assert_eq!(metric(&server.base, "tbserver_builtin_failed_tables"), 0.0);
        report!(
            "disk full while generating KQPvK (attempt {attempt}): {error}; nothing left; written and answering after space was freed"
        );
        return;
    }
    panic!("the disk never filled inside the generation's window: {outcome}");
}

/// SIGKILL in the middle of a generation, then a restart on the same
/// directory: nothing of the killed run is used (a temporary file it left
/// is removed), the table is made again on demand, and answers correctly.
#[test]
fn sigkill_during_generation_then_restart_answers_correctly() {
    let target = Material::parse("KQPvK").unwrap();
    let fen = "k7/8/8/8/8/8/4P3/3Q3K w - - 0 1";
    let expected = reference_answer(fen);
    let dir = scratch_dir("sigkill");
    copy_dependencies(&[&target], &dir);
    let mut server = Server::start("127.0.0.1", &dir, "", &[]);
    let probe_url = format!("{}/api/v1/probe?fen={}", server.base, fen.replace(' ', "_"));
    assert_eq!(get(&probe_url).0, 503, "generation started by the probe");
    wait_for_generation(&server.base, "KQPvK", |b| b["progress"]["tables"][0]["state"] == "generating");
    server.kill();
    assert!(!dir.join("KQPvK.tbsb").exists(), "killed before the table was written");
    // What a writer killed in the middle of its write leaves behind.
    let stale = dir.join(format!("KQPvK.{}.tmp999999.0", format::EXTENSION));
    std::fs::write(&stale, vec![7u8; 4096]).unwrap();
    run("touch", &["-d", "2 hours ago", stale.to_str().unwrap()]);

    let server = Server::start("127.0.0.1", &dir, "", &[]);
    let deadline = Instant::now() + Duration::from_secs(120);
    let answer = loop {
        let (status, body) = get(&format!("{}/api/v1/probe?fen={}", server.base, fen.replace(' ', "_")));
        if status == 200 {
            break body;
        }
        assert_eq!(code(&body), "generating", "{body}");
        assert!(Instant::now() < deadline, "{body}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(answer, expected);
    assert!(!stale.exists(), "the killed writer's temporary file is removed");
    assert!(dir.join("KQPvK.tbsb").exists());
    report!(
        "SIGKILL while generating KQPvK, restart: generated again, the same answer, the stale temporary file removed"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn builtin_off_refuses_generation() {
    let mut config = Config::default();
    config.builtin.mode = BuiltinMode::Off;
    let server = TestServer::start(config);
    let (status, _, body) = post(&format!("{}/api/v1/tables/generate?material=KRvK", server.base));
    assert_eq!((status, code(&body)), (409, "builtin_off"), "{body}");
}
