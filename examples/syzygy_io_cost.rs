//! Cost of `syzygy_io = "read"` against `"mmap"`: full answers (every move
//! probed) for the 5-piece benchmark FENs, page cache warm.
//!
//! cargo run --release --example syzygy_io_cost -- ../shared/tables/syzygy bench/fens-5piece.txt

use std::time::Instant;

use tbserver::{
    config::{BuiltinMode, Config, SyzygyIo},
    probe,
    request::parse_fen,
};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(&args[1]);
    let fens: Vec<_> = std::fs::read_to_string(&args[2]).unwrap().lines().map(|l| parse_fen(l).unwrap()).collect();
    for io in [SyzygyIo::Mmap, SyzygyIo::Read, SyzygyIo::Mmap, SyzygyIo::Read] {
        let mut config = Config { syzygy: vec![dir.clone()], syzygy_io: io, ..Config::default() };
        config.builtin.mode = BuiltinMode::Off;
        let tb = tbserver::app::open_tablebases(&config);
        fens.iter().for_each(|pos| drop(probe::probe(&tb, pos, probe::MoveOrder::Dtm50First)));
        let rounds = 50;
        let start = Instant::now();
        for _ in 0..rounds {
            for pos in &fens {
                probe::probe(&tb, pos, probe::MoveOrder::Dtm50First).unwrap();
            }
        }
        let per = start.elapsed().as_secs_f64() * 1e6 / (rounds * fens.len()) as f64;
        println!("{io:?}: {per:.0} µs per full answer ({} answers)", rounds * fens.len());
    }
}
