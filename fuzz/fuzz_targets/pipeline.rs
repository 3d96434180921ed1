#![no_main]
//! Fuzz target: see `harness::Pipeline`. Tables from `$TBSERVER_SHARED_DIR`
//! (default `../shared` beside the repository).

#[path = "../harness.rs"]
mod harness;

use std::sync::LazyLock;

static PIPELINE: LazyLock<harness::Pipeline> = LazyLock::new(|| {
    let shared = std::env::var_os("TBSERVER_SHARED_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    harness::Pipeline::new(&shared.join("tables/syzygy"))
});

libfuzzer_sys::fuzz_target!(|data: &[u8]| PIPELINE.run(data));
