#![no_main]
//! Fuzz target: see `harness::ChesstbDamage`. Tables from
//! `$TBSERVER_SHARED_DIR` (default `../shared` beside the repository).

#[path = "../harness.rs"]
mod harness;

use std::sync::LazyLock;

static DAMAGE: LazyLock<harness::ChesstbDamage> = LazyLock::new(|| {
    let shared = std::env::var_os("TBSERVER_SHARED_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    harness::ChesstbDamage::new(&shared.join("tables/chesstb"))
});

libfuzzer_sys::fuzz_target!(|data: &[u8]| DAMAGE.run(data));
