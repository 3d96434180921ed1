//! Runs the browser end-to-end tests (`tests/e2e/run.sh`: real headless
//! Chromium driven by playwright-core against this build's server) as part of
//! `cargo test`. Under `CI=true` a missing Chromium or Node fails the test;
//! elsewhere it is skipped with a message.

mod common;

use std::{path::Path, process::Command};

#[test]
fn browser_pages_end_to_end() {
    if common::shared_dir("tables/syzygy").is_none() {
        return;
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    if !Path::new(&chromium).exists() || !node {
        assert!(!ci, "CI=true but Chromium ({chromium}) or node is missing");
        eprintln!("SKIPPED: browser tests need {chromium} and node (apt-get install -y chromium)");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new("bash")
        .arg(root.join("tests/e2e/run.sh"))
        .env("TBSERVER_BIN", env!("CARGO_BIN_EXE_tbserver"))
        .current_dir(root)
        .status()
        .expect("run tests/e2e/run.sh");
    assert!(status.success(), "browser end-to-end tests failed ({status})");
}
