//! A chesstb directory the size of the published set: the shared tables
//! (symlinked) among thousands of stand-in files for every other material
//! of up to 6 pieces, almost all of them empty and some cut short. The
//! reader must index them without opening any, keep at most the configured
//! number open while probes go through many tables, answer every position
//! of the real tables as a directory of those alone does, list the broken
//! stand-ins as problems, and fail only the probes that need one. It also
//! prints how long the first probe of a file takes (warm in the page cache).

#[macro_use]
mod common;

use std::{
    collections::BTreeMap,
    io::BufRead,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use chesstb_reader::{Chesstb, Kind, TableMaterial};
use shakmaty::{CastlingMode, Chess, fen::Fen};

/// Open files allowed in the test: far fewer than the tables it probes.
const MAX_OPEN: u64 = 16;

/// Reference positions probed per material.
const PER_MATERIAL: usize = 6;

/// Every canonical chesstb material of 3 to `max` pieces.
fn materials(max: usize) -> Vec<TableMaterial> {
    let mut sides = vec![[0u8; 5]];
    for _ in 0..max - 2 {
        let mut more = Vec::new();
        for s in &sides {
            for r in 0..5 {
                let mut t = *s;
                t[r] += 1;
                more.push(t);
            }
        }
        sides.extend(more);
        sides.sort();
        sides.dedup();
    }
    let mut out = Vec::new();
    for a in &sides {
        for b in &sides {
            let m = TableMaterial { counts: [*a, *b], pair: false };
            let n = m.pieces();
            if (3..=max).contains(&n) && m.canonical() == (m, false) {
                out.push(m);
            }
        }
    }
    out
}

/// Lays out `dir`: the shared files as symlinks, stand-ins for the rest.
/// Returns the number of stand-ins and those of them with a plausible size
/// (a problem found only by opening them).
fn lay_out(dir: &Path, shared: &Path) -> (usize, Vec<PathBuf>) {
    let _ = std::fs::remove_dir_all(dir);
    let kinds = ["wdl", "dtz", "dtc", "dtm", "dtm50"];
    for k in kinds {
        std::fs::create_dir_all(dir.join(k)).unwrap();
        for e in std::fs::read_dir(shared.join(k)).unwrap() {
            let e = e.unwrap();
            std::os::unix::fs::symlink(e.path(), dir.join(k).join(e.file_name())).unwrap();
        }
    }
    let real: std::collections::BTreeSet<String> = std::fs::read_dir(shared.join("wdl"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().replace(".lzw", ""))
        .collect();
    // A 64·n + 8-byte head of a real file: the right size rule, the wrong content.
    let head: Vec<u8> = std::fs::read(shared.join("dtm50/KQKR.lzdtm50")).unwrap()[..64 * 64 + 8].to_vec();
    let mut stand_ins = 0;
    let mut plausible = Vec::new();
    let mut files = |path: PathBuf, plausible_size: bool| {
        if plausible_size {
            std::fs::write(&path, &head).unwrap();
            plausible.push(path);
        } else {
            std::fs::write(&path, b"").unwrap();
        }
        stand_ins += 1;
    };
    for (i, m) in materials(6).iter().enumerate() {
        let name = m.name();
        if real.contains(&name) {
            continue;
        }
        for k in kinds {
            if k == "dtc" && !m.has_pawns() {
                continue;
            }
            let ext = Kind::ALL.into_iter().find(|x| format!("{x:?}").to_lowercase() == k).unwrap().extension();
            // One in 97 DTM50 packs cut to a plausible size (and one 5-piece).
            let plausible_size = k == "dtm50" && (i % 97 == 0 || name == "KRRKR");
            files(dir.join(k).join(format!("{name}.{ext}")), plausible_size);
            if k != "wdl" {
                files(dir.join(k).join(format!("{name}.info")), false);
            }
        }
    }
    // chesstb's 7-piece WDL and DTZ (pawnless first) are announced but not
    // published yet: stand-ins for those too bring the count to that of a
    // complete mirror's.
    for m in materials(7).iter().filter(|m| m.pieces() == 7 && !m.has_pawns()) {
        let name = m.name();
        files(dir.join(format!("wdl/{name}.lzw")), false);
        files(dir.join(format!("dtz/{name}.lzdtz")), false);
        files(dir.join(format!("dtz/{name}.info")), false);
    }
    // A broken opposing-pair table: KPKP positions with a pair route to it.
    files(dir.join("wdl/KpKp.lzw"), false);
    (stand_ins, plausible)
}

/// Reference positions of chesstb's own prober, by material.
fn reference(shared: &Path) -> BTreeMap<String, Vec<Chess>> {
    let file = std::fs::File::open(shared.join("reference/chesstb-positions.jsonl")).unwrap();
    let mut out: BTreeMap<String, Vec<Chess>> = BTreeMap::new();
    for line in std::io::BufReader::new(file).lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        let pos: Chess = v["fen"]
            .as_str()
            .unwrap()
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .or_else(shakmaty::PositionError::ignore_impossible_check)
            .unwrap();
        out.entry(v["material"].as_str().unwrap().to_string()).or_default().push(pos);
    }
    out
}

fn quantiles(mut v: Vec<Duration>) -> String {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    format!("median {:.0} µs, 90th percentile {:.0} µs, max {:.0} µs ({} files)", at(0.5), at(0.9), at(1.0), v.len())
}

#[test]
fn a_published_size_directory_opens_lazily_and_stays_bounded() {
    let Some(shared) = common::shared_dir("reference/chesstb-positions.jsonl") else { return };
    let Some(chesstb) = common::chesstb_dir() else { return };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("chesstb-many-files");
    let start = Instant::now();
    let (stand_ins, plausible) = lay_out(&dir, &chesstb);
    report!("laid out in {:.1} s", start.elapsed().as_secs_f64());

    let t0 = Instant::now();
    let tb = Chesstb::open(std::slice::from_ref(&dir), 64 << 20).with_max_open_files(MAX_OPEN);
    let indexed = t0.elapsed();
    let files = tb.files();
    let on_disk = walk_count(&dir);
    report!(
        "directory of {on_disk} files ({stand_ins} stand-ins, {} of a plausible size; the rest symlinks to the shared tables): \
         {} table files indexed in {:.1} ms, {} opened",
        plausible.len(),
        files.len(),
        indexed.as_secs_f64() * 1e3,
        tb.open_files().opened
    );
    assert!(on_disk >= 5_000, "a directory of the published set's size");
    assert_eq!(tb.open_files().opened, 0, "indexing opens no file");
    assert_eq!(tb.max_pieces(), 7);

    // Every reference position through the crowded directory, against the
    // shared directory alone: equal, except those that need the broken
    // pair table, which fail naming it.
    let alone = Chesstb::open(std::slice::from_ref(&chesstb), 64 << 20);
    let (mut equal, mut failed_pair) = (0, 0);
    let reference = reference(&shared);
    for (material, positions) in &reference {
        // A few per material: enough to go through every file of each, many
        // times the bound (tests/chesstb.rs compares all of them).
        // All of KPKP: those with an opposing pair go to the broken KpKp.lzw.
        for pos in positions.iter().take(if material == "KPKP" { usize::MAX } else { PER_MATERIAL }) {
            let clock = shakmaty::Position::halfmoves(pos);
            let ours = tb.probe(pos, Some(clock));
            let theirs = alone.probe(pos, Some(clock)).unwrap().unwrap();
            let fen = Fen::from_position(pos, shakmaty::EnPassantMode::Legal);
            if TableMaterial::pair_of_board(shakmaty::Position::board(pos)).is_some() && material == "KPKP" {
                let e = ours.expect_err("the broken KpKp.lzw answers for pair positions");
                assert_eq!(e.table, "KpKp.lzw", "{fen}: {e}");
                failed_pair += 1;
                continue;
            }
            let ours = ours.unwrap_or_else(|e| panic!("{fen}: {e}")).unwrap();
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{fen}");
            equal += 1;
        }
    }
    let open = tb.open_files();
    report!("({:.1} s)", start.elapsed().as_secs_f64());
    report!(
        "{} materials: {equal} reference positions equal to the shared directory alone, {failed_pair} KPKP positions with an \
         opposing pair failed on the broken KpKp.lzw (and only those); files opened {} times, closed {} times, {} open now (bound {})",
        reference.len(),
        open.opened,
        open.closed,
        open.open_now,
        open.max_open
    );
    assert!(failed_pair > 0 && equal > 4 * reference.len());
    assert!(open.opened > MAX_OPEN, "the probes went through more files than the bound");
    assert!(open.open_now <= MAX_OPEN);

    // Problems known without opening: every empty stand-in; the plausible
    // ones once a probe opened them.
    let problems = |tb: &Chesstb| files.iter().filter(|f| tb.known_problem(&f.material, f.kind).is_some()).count();
    let empty_tables = files.iter().filter(|f| f.bytes == 0).count();
    assert_eq!(problems(&tb), empty_tables);
    let krrkr: Chess =
        "8/8/8/8/8/2k5/8/RR1K2r1 w - - 0 1".parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap();
    let e = tb.probe(&krrkr, Some(0)).expect_err("KRRKR's files are stand-ins");
    assert_eq!(e.table, "KRRKR.lzw");
    // What `tbserver verify` does: open each file; the plausible ones fail then.
    for path in &plausible {
        let f = files.iter().find(|f| f.path == *path).unwrap();
        let e = tb.check(&f.material, f.kind, false).expect_err("a stand-in");
        assert!(e.contains("material key"), "{}: {e}", f.name);
    }
    let listed = problems(&tb);
    report!(
        "problems listed: {empty_tables} empty files without opening any; after opening the {} of a plausible size, {listed} \
         (e.g. {}); probing KRRKR: {e}",
        plausible.len(),
        tb.known_problem(&TableMaterial::parse("KRRKR").unwrap(), Kind::Dtm50).unwrap()
    );
    assert_eq!(listed, empty_tables + plausible.len());

    // Through the service: /api/v1/tables lists them, opening nothing.
    let mut config = tbserver::config::Config {
        chesstb: vec![dir.clone()],
        chesstb_max_open_files: MAX_OPEN,
        cache_entries: 0,
        ..Default::default()
    };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    let server = common::TestServer::start(config);
    let (status, body) = server.get("/api/v1/tables");
    assert_eq!(status, 200);
    let with_problems = body["with_problems"].as_u64().unwrap() as usize;
    let real_with_problems: Vec<_> = body["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["problems"].as_array().unwrap().is_empty())
        .filter(|t| Path::new(t["path"].as_str().unwrap()).is_symlink())
        .map(|t| t["name"].clone())
        .collect();
    report!("/api/v1/tables: {} tables, {with_problems} with problems, none of them a real table", body["count"]);
    assert_eq!(with_problems, empty_tables);
    assert!(real_with_problems.is_empty(), "{real_with_problems:?}");
    drop(server);
    report!("({:.1} s)", start.elapsed().as_secs_f64());

    // First probe of a warm file: one reference position of each material,
    // each through a new reader (nothing open, nothing decoded), the files
    // read once before so that they are in the page cache.
    for f in &files {
        if f.bytes > 0 {
            let _ = std::fs::read(&f.path);
        }
    }
    let (mut wdl_first, mut all_first, mut open_only) = (Vec::new(), Vec::new(), Vec::new());
    for positions in reference.values() {
        // One whose side to move the files store: a first probe, not a
        // search over the children (which opens their files too).
        let Some(pos) = positions.iter().find(|p| alone.stores_side_to_move(p).unwrap() == Some(true)) else {
            continue;
        };
        let fresh = Chesstb::open(std::slice::from_ref(&dir), 64 << 20).with_max_open_files(MAX_OPEN);
        let material = fresh.table_name(pos);
        let t = Instant::now();
        fresh.check(&TableMaterial::parse(&material).unwrap(), Kind::Wdl, false).unwrap();
        open_only.push(t.elapsed());
        let fresh = Chesstb::open(std::slice::from_ref(&dir), 64 << 20).with_max_open_files(MAX_OPEN);
        let t = Instant::now();
        let _ = fresh.probe_wdl(pos);
        wdl_first.push(t.elapsed());
        let fresh = Chesstb::open(std::slice::from_ref(&dir), 64 << 20).with_max_open_files(MAX_OPEN);
        let t = Instant::now();
        let _ = fresh.probe(pos, None);
        all_first.push(t.elapsed());
    }
    report!("opening a warm WDL file (map, read the header): {}", quantiles(open_only));
    report!("first probe of a warm file, WDL (opens the WDL file, decodes one block): {}", quantiles(wdl_first));
    report!(
        "first probe of WDL, DTZ and DTM (opens WDL, DTZ, DTM50; an LZMA block of DTZ and of DTM50 dominates): {}",
        quantiles(all_first)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn walk_count(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() && !p.is_symlink() { walk_count(&p) } else { 1 }
        })
        .sum()
}

/// First use from many threads at once, with fewer files allowed open than
/// the threads need: every thread opens, closes and reopens the same files
/// concurrently, and each answer equals the one-thread answer.
#[test]
fn concurrent_first_use_under_a_small_open_file_bound() {
    let Some(shared) = common::shared_dir("reference/chesstb-positions.jsonl") else { return };
    let Some(chesstb) = common::chesstb_dir() else { return };
    let positions: Vec<Chess> =
        reference(&shared).into_values().flat_map(|v| v.into_iter().take(PER_MATERIAL)).collect();
    let alone = Chesstb::open(std::slice::from_ref(&chesstb), 64 << 20);
    let expected: Vec<String> = positions
        .iter()
        .map(|p| format!("{:?}", alone.probe(p, Some(shakmaty::Position::halfmoves(p))).unwrap().unwrap()))
        .collect();
    let tb = Chesstb::open(std::slice::from_ref(&chesstb), 64 << 20).with_max_open_files(3);
    const THREADS: usize = 8;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (tb, positions, expected) = (&tb, &positions, &expected);
            s.spawn(move || {
                // Each thread in its own order, so that first uses collide.
                for k in 0..positions.len() {
                    let i = (k * (2 * t + 1) + t) % positions.len();
                    let p = &positions[i];
                    let got = tb.probe(p, Some(shakmaty::Position::halfmoves(p))).unwrap().unwrap();
                    assert_eq!(format!("{got:?}"), expected[i], "thread {t}, position {i}");
                }
            });
        }
    });
    let open = tb.open_files();
    report!(
        "{THREADS} threads × {} positions, equal to one thread; files opened {} times, closed {}, {} open now (bound 3)",
        positions.len(),
        open.opened,
        open.closed,
        open.open_now
    );
    assert!(open.open_now <= 3 && open.opened > 3);
}

/// A thread keeps the files it read last at hand (not through the shared
/// map), but never one the map has closed since: with one file allowed
/// open, reading KQK, then KRK (which closes KQK), then KQK again opens
/// KQK again.
#[test]
fn a_closed_file_is_opened_again_not_read_from_a_threads_memo() {
    let Some(chesstb) = common::chesstb_dir() else { return };
    let tb = Chesstb::open(std::slice::from_ref(&chesstb), 64 << 20).with_max_open_files(1);
    // Of each material, a position whose side to move the WDL file stores:
    // its WDL is one read of that file, no search through other tables.
    let stored = |fens: [&str; 2]| -> Chess {
        fens.iter()
            .map(|f| f.parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap())
            .find(|p: &Chess| tb.stores_side_to_move_in(p, Kind::Wdl).unwrap() == Some(true))
            .expect("one side stored")
    };
    let kqk = stored(["8/8/8/4k3/8/8/8/KQ6 w - - 0 1", "8/8/8/4k3/8/8/8/KQ6 b - - 0 1"]);
    let krk = stored(["8/8/8/4k3/8/8/8/KR6 w - - 0 1", "8/8/8/4k3/8/8/8/KR6 b - - 0 1"]);
    let wdl = |p: &Chess| tb.probe_wdl(p).unwrap().unwrap();
    let counts = || {
        let o = tb.open_files();
        (o.opened, o.closed)
    };
    // The map closes files when its pending work runs, which reading the
    // counts makes it do: here, KQK (choosing the positions opened both).
    counts();
    let first = wdl(&kqk);
    let (opened, closed) = counts();
    assert_eq!(wdl(&kqk), first);
    assert_eq!(counts(), (opened, closed), "KQK read again without opening");
    wdl(&krk);
    assert_eq!(counts(), (opened + 1, closed + 1), "KRK opened, KQK closed");
    assert_eq!(wdl(&kqk), first);
    report!("KQK, KQK, KRK, KQK with one file open: opened {} times, closed {}", counts().0, counts().1);
    assert_eq!(counts(), (opened + 2, closed + 2), "KQK opened again, not read from the memo");
    assert_eq!(tb.open_files().open_now, 1);
}
