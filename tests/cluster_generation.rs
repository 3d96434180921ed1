//! Generation spread over processes as the Kubernetes Jobs spread it
//! (deploy/kubernetes/tables-5-wave-*.yaml): per dependency wave, N
//! `tbserver generate --list FILE --wave W --shard I/N` processes at once
//! over one directory make the same files, byte for byte, as one plain
//! `tbserver generate`. A shard run before its earlier waves fails and makes
//! nothing. The manifests agree with the waves the binary computes.
//!
//! Quick tier: the 10 tables KRvKP needs (3 waves, with DTM50, seconds).
//! Exhaustive tier (`TBSERVER_EXHAUSTIVE=1`, scripts/verify-all.sh): all 35
//! tables of 3 and 4 pieces (4 waves, too slow for the quick tier), in
//! share 0 of `TBSERVER_EXHAUSTIVE_SHARE` (the whole set cannot be split:
//! the other shares run the quick tier's 10 tables, so every third CI run
//! has all 35).

#[macro_use]
mod common;

use std::{
    collections::BTreeMap,
    io::Read,
    path::{Path, PathBuf},
    process::{Command, Output},
    time::Instant,
};

/// Processes per wave.
const SHARDS: usize = 3;

/// The binary, run from the repository (config/tbserver.toml: DTM50 on).
fn tbserver() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tbserver"));
    command.current_dir(env!("CARGO_MANIFEST_DIR"));
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeded(what: &str, output: Output) -> String {
    assert!(output.status.success(), "{what}: {}\n{}{}", output.status, text(&output.stdout), text(&output.stderr));
    text(&output.stdout)
}

/// The waves `tbserver generate --waves` prints for `args`.
fn waves(args: &[&str]) -> Vec<Vec<String>> {
    let out = succeeded("--waves", tbserver().arg("generate").args(args).arg("--waves").output().unwrap());
    out.lines()
        .filter(|line| line.starts_with("wave "))
        .enumerate()
        .map(|(i, line)| {
            let (head, names) = line.split_once(": ").unwrap();
            assert!(head.starts_with(&format!("wave {i} (")), "{line}");
            names.split_whitespace().map(str::to_owned).collect()
        })
        .collect()
}

/// Every table file (and statistics file) in `dir` with its size and
/// XXH64, checking that no temporary file was left behind.
fn checksums(dir: &Path) -> BTreeMap<String, (u64, u64)> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // A table and its statistics, written beside it when it is generated.
        assert!(name.ends_with(".tbsb") || name.ends_with(".stats.json"), "left behind in {}: {name}", dir.display());
        let mut hasher = xxhash_rust::xxh64::Xxh64::new(0);
        let mut file = std::fs::File::open(&path).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut bytes = 0u64;
        loop {
            let n = file.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            bytes += n as u64;
        }
        files.insert(name, (bytes, hasher.digest()));
    }
    files
}

/// "N tables (M generated)" from a run's last line.
fn generated(stdout: &str) -> usize {
    let line =
        stdout.lines().rev().find(|l| l.contains(" generated), ")).unwrap_or_else(|| panic!("no summary in {stdout}"));
    line.split(" tables (").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap()
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cluster-generation-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn sharded_waves_make_the_same_files_as_one_run() {
    let share = common::share();
    let exhaustive = common::exhaustive() && share.takes(0);
    if common::exhaustive() && !exhaustive {
        eprintln!("exhaustive share {share}: the 10 tables KRvKP needs; all 35 in share 0");
    }
    let work = fresh_dir("run");
    // The selection as a list file, as the Job's ConfigMap holds it.
    let plain_args: Vec<String> = if exhaustive { vec!["--pieces".into(), "4".into()] } else { vec!["KRvKP".into()] };
    let selection: Vec<String> = {
        let args: Vec<&str> = plain_args.iter().map(String::as_str).collect();
        // Without names, --waves covers every table of up to --pieces; with
        // one, only it: list it with what it needs for the whole closure.
        let mut all = waves(&args).concat();
        if !exhaustive {
            let out = succeeded("--waves", tbserver().args(["generate", "KRvKP", "--waves"]).output().unwrap());
            let needed = out.lines().find_map(|l| l.strip_prefix("needed first, outside the selection")).unwrap();
            all.extend(needed.split_once(": ").unwrap().1.split_whitespace().map(str::to_owned));
        }
        all
    };
    let list = work.join("tables.txt");
    std::fs::write(&list, format!("# the selection\n{}\n", selection.join("\n"))).unwrap();
    let list_arg = list.to_str().unwrap();
    let waves = waves(&["--list", list_arg]);
    let expected_waves = if exhaustive { vec![4, 21, 8, 2] } else { vec![4, 5, 1] };
    assert_eq!(waves.iter().map(Vec::len).collect::<Vec<_>>(), expected_waves, "{waves:?}");
    assert_eq!(waves.concat().len(), selection.len());

    // One plain run.
    let plain = work.join("plain");
    let start = Instant::now();
    let out =
        succeeded("plain run", tbserver().arg("generate").args(&plain_args).arg("--out").arg(&plain).output().unwrap());
    let plain_secs = start.elapsed().as_secs_f64();
    assert_eq!(generated(&out), selection.len());

    // A later wave before the earlier ones: fails, names what is missing,
    // makes nothing.
    let sharded = work.join("sharded");
    let last = waves.len() - 1;
    let early = tbserver()
        .args(["generate", "--list", list_arg, "--wave", &last.to_string(), "--shard", "0/1", "--out"])
        .arg(&sharded)
        .output()
        .unwrap();
    let stderr = text(&early.stderr);
    assert!(!early.status.success() && stderr.contains("not usable") && stderr.contains("(not found)"), "{stderr}");
    assert!(stderr.contains(&format!("{} (not found)", waves[0][0])), "{stderr}");
    assert!(!sharded.exists() || std::fs::read_dir(&sharded).unwrap().next().is_none(), "a failed shard wrote");

    // Each wave: SHARDS processes at once, one directory.
    let start = Instant::now();
    let mut made = 0;
    for (w, wave) in waves.iter().enumerate() {
        let children: Vec<_> = (0..SHARDS)
            .map(|i| {
                tbserver()
                    .args([
                        "generate",
                        "--list",
                        list_arg,
                        "--wave",
                        &w.to_string(),
                        "--shard",
                        &format!("{i}/{SHARDS}"),
                        "--out",
                    ])
                    .arg(&sharded)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for (i, child) in children.into_iter().enumerate() {
            let out = succeeded(&format!("wave {w} shard {i}/{SHARDS}"), child.wait_with_output().unwrap());
            // Every Nth table of the wave, each made by exactly one process.
            let share = wave.iter().skip(i).step_by(SHARDS).count();
            if share == 0 {
                assert!(out.contains("nothing to generate"), "{out}");
            } else {
                assert_eq!(generated(&out), share, "wave {w} shard {i}: {out}");
                made += share;
            }
        }
    }
    let sharded_secs = start.elapsed().as_secs_f64();
    assert_eq!(made, selection.len());

    let (expected, got) = (checksums(&plain), checksums(&sharded));
    assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
    for (name, sum) in &expected {
        assert_eq!(&got[name], sum, "{name} differs (bytes, xxh64)");
    }
    let bytes: u64 = expected.values().map(|(b, _)| b).sum();
    println!(
        "{} tables in {} waves: {SHARDS} processes per wave made the same {} files as one run ({bytes} bytes compared by size and XXH64); \
         one run {plain_secs:.1} s, sharded {sharded_secs:.1} s",
        selection.len(),
        waves.len(),
        expected.len(),
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// The manifests' numbers: the list in the ConfigMap is the 110 tables of 5
/// pieces, and each wave's Job has one pod per table of that wave, each told
/// its wave and the wave's size.
#[test]
fn kubernetes_wave_jobs_match_the_waves() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes");
    let configmap = std::fs::read_to_string(dir.join("tables-5-list.yaml")).unwrap();
    let list: Vec<&str> = configmap
        .split_once("tables-5.txt: |")
        .unwrap()
        .1
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    let five = fresh_dir("manifests");
    std::fs::write(five.join("tables-5.txt"), list.join("\n")).unwrap();
    let waves = waves(&["--list", five.join("tables-5.txt").to_str().unwrap()]);
    let all: Vec<String> = self::waves(&["--pieces", "5"]).concat().into_iter().filter(|m| m.len() == 6).collect();
    let mut listed: Vec<&str> = list.clone();
    listed.sort_unstable();
    let mut every: Vec<&str> = all.iter().map(String::as_str).collect();
    every.sort_unstable();
    assert_eq!(listed, every, "the ConfigMap lists every 5-piece table once");
    for (w, wave) in waves.iter().enumerate() {
        let job = std::fs::read_to_string(dir.join(format!("tables-5-wave-{w}.yaml"))).unwrap();
        let field = |key: &str| -> String {
            let line =
                job.lines().find(|l| l.trim_start().starts_with(key)).unwrap_or_else(|| panic!("wave {w}: no {key}"));
            line.split_once(':').unwrap().1.trim().to_owned()
        };
        assert_eq!(field("completions:"), wave.len().to_string(), "wave {w}");
        assert!(job.contains(&format!("\"--wave\", \"{w}\"")), "wave {w}");
        assert!(job.contains(&format!("\"--shard\", \"$(SHARD_INDEX)/{}\"", wave.len())), "wave {w}");
        // Each pod checks its table's estimated peak against its cgroup's
        // limit before it starts: every table of the wave must fit.
        let limits = job.split_once("limits:").unwrap_or_else(|| panic!("wave {w}: no limits")).1;
        let gib: u64 = limits
            .lines()
            .find_map(|l| l.trim().strip_prefix("memory:"))
            .and_then(|v| v.trim().strip_suffix("Gi")?.parse().ok())
            .unwrap();
        for table in wave {
            let m = tbserver::builtin::Material::parse(table).unwrap();
            let needed = tbgen::budget::estimate(&m, true).peak_memory_bytes;
            assert!(
                needed <= gib << 30,
                "wave {w}: {table} is estimated at {} MiB, above the Job's {gib} GiB limit",
                needed >> 20
            );
        }
    }
    assert!(!dir.join(format!("tables-5-wave-{}.yaml", waves.len())).exists());
    println!("{} waves of {:?} tables match their Jobs", waves.len(), waves.iter().map(Vec::len).collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&five);
}

/// A replica on the shared volume (`builtin.mode = "readonly"`, as
/// deploy/kubernetes/deployment.yaml sets it) never generates, not even
/// when asked: a missing table is reported, and found once a Job's
/// `tbserver generate` has written it, without a restart.
#[test]
fn a_read_only_replica_never_generates_and_finds_tables_made_later() {
    let dir = fresh_dir("read-only");
    let mut command = tbserver();
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--builtin-dir"])
        .arg(&dir)
        .env("TBSERVER_BUILTIN_MODE", "readonly")
        .env("RUST_LOG", "info");
    let (child, base, log) = common::spawn_listening(command);
    // Killed even when an assertion fails: a live server would hold the
    // test's output open.
    struct Server(std::process::Child);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let server = Server(child);
    let fen = "8/8/8/4k3/8/8/8/KR6_w_-_-_0_1";
    let get = |path: &str| {
        let response = reqwest::blocking::get(format!("{base}{path}")).unwrap();
        (response.status().as_u16(), response.json::<serde_json::Value>().unwrap())
    };
    let (status, body) = get(&format!("/api/v1/probe?fen={fen}"));
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("missing_table")), "{body}");
    let asked =
        reqwest::blocking::Client::new().post(format!("{base}/api/v1/tables/generate?material=KRvK")).send().unwrap();
    let asked_status = asked.status().as_u16();
    let asked: serde_json::Value = asked.json().unwrap();
    assert_eq!((asked_status, asked["error"]["code"].as_str()), (409, Some("read_only")), "{asked}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "the replica wrote into its tables directory");
    succeeded("generate KRvK", tbserver().args(["generate", "KRvK", "--out"]).arg(&dir).output().unwrap());
    // A table found missing is looked for again a second after the miss.
    let written = std::time::Instant::now();
    let (status, body) = loop {
        let (status, body) = get(&format!("/api/v1/probe?fen={fen}"));
        if status == 200 || written.elapsed() > std::time::Duration::from_secs(3) {
            break (status, body);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!((status, body["dtm"]["plies"].as_i64()), (200, Some(29)), "{body}");
    assert!(
        written.elapsed() < std::time::Duration::from_millis(2500),
        "found {:?} after it was written",
        written.elapsed()
    );
    assert_eq!(get("/api/v1/tables/generate?material=KRvK").1["state"], "ready");
    assert!(log.lock().unwrap().iter().all(|l| !l.contains("generated built-in table")));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
