//! Cost of `syzygy_io = "read"` against `"mmap"`: full answers (every move
//! probed) for the 5-piece benchmark FENs, page cache warm. Then the cost of
//! the guard on mapped files (a fault flag read after each read): raw DTZ
//! probes of every move through `shakmaty-syzygy`'s own memory maps and
//! through tbserver's guarded ones, alternated, the thread's CPU time per
//! probe, median of the rounds.
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

    guard_cost(&dir, &fens);
}

fn guard_cost(dir: &std::path::Path, fens: &[shakmaty::Chess]) {
    use shakmaty::{Chess, Position};
    use shakmaty_syzygy::Tablebase;
    // SAFETY: the table files are not modified while the example runs.
    let mut plain = unsafe { Tablebase::<Chess>::with_mmap_filesystem() };
    let mut guarded = Tablebase::<Chess>::with_filesystem(tbserver::sources::guarded_syzygy_filesystem());
    plain.add_directory(dir).unwrap();
    guarded.add_directory(dir).unwrap();
    let children: Vec<Chess> = fens
        .iter()
        .flat_map(|pos| {
            pos.legal_moves().into_iter().map(|m| {
                let mut after = pos.clone();
                after.play_unchecked(m);
                after
            })
        })
        .collect();
    // CPU time of this thread: a shared machine's preemptions are not counted.
    let cpu_ns = || {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid timespec to write into.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
    };
    let passes = 4;
    let round = |tb: &Tablebase<Chess>| {
        let start = cpu_ns();
        for _ in 0..passes {
            for pos in &children {
                std::hint::black_box(tb.probe_dtz(pos).ok());
            }
        }
        (cpu_ns() - start) / (passes * children.len()) as f64
    };
    round(&plain);
    round(&guarded);
    let rounds = 60;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        // ABBA: the machine's drift falls on both alike.
        if i % 2 == 0 {
            a.push(round(&plain));
            b.push(round(&guarded));
        } else {
            b.push(round(&guarded));
            a.push(round(&plain));
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    let (a, b) = (median(&mut a), median(&mut b));
    println!(
        "raw DTZ probe, CPU time, median of {rounds} rounds of {passes} × {} positions: shakmaty-syzygy maps {a:.0} ns, guarded maps {b:.0} ns ({:+.1}%)",
        children.len(),
        (b / a - 1.0) * 100.0
    );
}
