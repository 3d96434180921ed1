#![no_main]
//! Fuzz target: see `harness::fen`.

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::fen(data));
