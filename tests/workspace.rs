//! The workspace's crates depend on each other in one direction, and the
//! lower ones stay free of the service's machinery, as `cargo metadata`
//! reports them (normal dependencies; dev-dependencies may differ):
//!
//! - `mapguard`, `tbcache` and `tbformat` depend on no crate of the workspace;
//! - `tbgen` on `tbformat` only, `chesstb-reader` on `mapguard` and `tbcache` only;
//! - the format (`tbformat`) pulls in none of tokio, rayon, axum, utoipa or
//!   hyper, the generator (`tbgen`) none of axum, utoipa, hyper or tokio,
//!   and the chesstb reader, the caches and the guarded maps none of tokio,
//!   axum, utoipa or hyper, directly or through another crate.
//!
//! Plain Rust, no shared data needed: `cargo test --release --test workspace`.

use std::{
    collections::{BTreeMap, BTreeSet},
    process::Command,
};

use serde_json::Value;

/// The platform the tests run on, as rustc names it.
fn host_triple() -> String {
    let out = Command::new("rustc").arg("-vV").output().expect("rustc -vV runs");
    let text = String::from_utf8(out.stdout).expect("rustc prints UTF-8");
    text.lines().find_map(|l| l.strip_prefix("host: ")).expect("rustc -vV names the host").to_owned()
}

/// Each package of the resolved graph for this platform with the packages
/// its normal dependencies resolve to, by name. Offline, and for the host
/// only: a build downloads no other platform's crates, so on a machine that
/// has only built, the full graph could not be read.
fn graph() -> (BTreeMap<String, BTreeSet<String>>, BTreeSet<String>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
            &host_triple(),
            "--manifest-path",
        ])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let name_of: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let members: BTreeSet<String> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| name_of[id.as_str().unwrap()].to_owned())
        .collect();
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let name = name_of[node["id"].as_str().unwrap()].to_owned();
        let normal =
            node["deps"].as_array().unwrap().iter().filter(|d| {
                d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null() || k["kind"] == "build")
            });
        let entry = deps.entry(name).or_default();
        entry.extend(normal.map(|d| name_of[d["pkg"].as_str().unwrap()].to_owned()));
    }
    (deps, members)
}

/// Every package `name` depends on, directly or not.
fn closure(deps: &BTreeMap<String, BTreeSet<String>>, name: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_owned()];
    while let Some(n) = todo.pop() {
        for d in deps.get(&n).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn workspace_crates_depend_on_each_other_in_one_direction() {
    let (deps, members) = graph();
    let expected: [(&str, &[&str]); 6] = [
        ("mapguard", &[]),
        ("tbcache", &[]),
        ("tbformat", &[]),
        ("tbgen", &["tbformat"]),
        ("chesstb-reader", &["mapguard", "tbcache"]),
        ("tbserver", &["chesstb-reader", "mapguard", "tbcache", "tbformat", "tbgen"]),
    ];
    assert_eq!(members, expected.iter().map(|(n, _)| n.to_string()).collect(), "the workspace's members");
    for (name, within) in expected {
        let direct: BTreeSet<&str> = deps[name].iter().map(String::as_str).filter(|d| members.contains(*d)).collect();
        assert_eq!(direct, within.iter().copied().collect(), "{name}'s dependencies inside the workspace");
    }
    println!("{} workspace crates, dependencies one way", members.len());
}

#[test]
fn lower_crates_pull_in_none_of_the_service_machinery() {
    let (deps, _) = graph();
    let forbidden: [(&str, &[&str]); 5] = [
        ("mapguard", &["tokio", "rayon", "axum", "utoipa", "hyper"]),
        ("tbformat", &["tokio", "rayon", "axum", "utoipa", "hyper"]),
        ("tbgen", &["axum", "utoipa", "hyper", "tokio"]),
        ("chesstb-reader", &["tokio", "axum", "utoipa", "hyper"]),
        ("tbcache", &["tokio", "rayon", "axum", "utoipa", "hyper"]),
    ];
    for (name, names) in forbidden {
        let all = closure(&deps, name);
        let found: Vec<&&str> = names.iter().filter(|n| all.contains(**n)).collect();
        assert!(found.is_empty(), "{name} depends on {found:?} (directly or through {all:?})");
        println!("{name}: {} crates below it, none of {names:?}", all.len());
    }
    // The check can fail: the service does pull them in.
    let service = closure(&deps, "tbserver");
    assert!(["tokio", "axum", "utoipa", "hyper", "rayon"].iter().all(|n| service.contains(*n)));
}

/// Inside the service crate, HTTP lives at the top: no module outside
/// `src/http/` (and the binary, `src/main.rs`) names the web framework, the
/// OpenAPI derive, the HTTP error type or an API URL in code. Comments may
/// mention endpoints.
#[test]
fn http_stays_in_the_http_layer() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![root.clone()];
    let (mut files, mut lines) = (0, 0);
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path != root.join("http") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path == root.join("main.rs") {
                continue;
            }
            files += 1;
            for (n, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
                let code = line.split("//").next().unwrap();
                lines += 1;
                for word in ["utoipa", "axum", "crate::http", "ApiError", "\"/api/", "\"/tables/"] {
                    assert!(
                        !code.contains(word),
                        "{}:{}: `{word}` below the HTTP layer: {line}",
                        path.display(),
                        n + 1
                    );
                }
            }
        }
    }
    println!("{files} files, {lines} lines outside src/http: no HTTP in code");
    assert!(files > 20);
}
