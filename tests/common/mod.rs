//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The shared data directory (`../shared` beside the repository, or
/// `$TBSERVER_SHARED_DIR`). Under `CI=true` missing data fails the test; on a
/// developer machine the test says loudly that it skipped and returns `None`.
pub fn shared_dir(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("TBSERVER_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let needed = dir.join(what);
    if needed.exists() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("test data missing under CI=true: {}", needed.display());
    }
    eprintln!("SKIPPED: test data not found at {} (set TBSERVER_SHARED_DIR)", needed.display());
    None
}

pub fn syzygy_dir() -> Option<PathBuf> {
    shared_dir("tables/syzygy").map(|d| d.join("tables/syzygy"))
}

pub fn gaviota_dir() -> Option<PathBuf> {
    shared_dir("tables/gaviota").map(|d| d.join("tables/gaviota"))
}

pub fn reference_file() -> Option<PathBuf> {
    shared_dir("reference/positions.jsonl").map(|d| d.join("reference/positions.jsonl"))
}
