//! Replays every committed fuzz corpus file (`fuzz/corpus/<target>/`)
//! through the checks the fuzz targets run, so that every `cargo test`
//! exercises what fuzzing found.

#[macro_use]
mod common;

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {}", dir.display());
    files
}

fn replay(target: &str, check: impl Fn(&[u8])) {
    let files = corpus(target);
    for file in &files {
        let data = std::fs::read(file).unwrap();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&data)));
        assert!(outcome.is_ok(), "{} fails the {target} check", file.display());
    }
    report!("fuzz corpus {target}: {} inputs replayed", files.len());
}

#[test]
fn fen_corpus() {
    replay("fen", harness::fen);
}

#[test]
fn query_corpus() {
    replay("query", harness::query);
}

#[test]
fn pipeline_corpus() {
    let Some(syzygy) = common::syzygy_dir() else { return };
    let pipeline = harness::Pipeline::new(&syzygy);
    replay("pipeline", |data| pipeline.run(data));
}

#[test]
fn chesstb_corpus() {
    let Some(chesstb) = common::chesstb_dir() else { return };
    let damage = harness::ChesstbDamage::new(&chesstb);
    replay("chesstb", |data| damage.run(data));
}
