//! Opposing-pair tables (`KpKp`, `KQpKp`: chesstb's second index of the
//! positions that hold a white pawn below a black one on a file) against
//! the full tables: every position they cover, or a sample, is read through
//! the pair table (chosen when present, as chesstb's prober does) and
//! compared with tbserver's built-in `KPvKP` / `KQPvKP` (WDL, DTZ, DTM, DTM50
//! at every clock; `tests/common/two_generators.rs`) and, where the shared
//! data has the full chesstb table (`KPKP`), with that table too.
//!
//! Opt-in: chesstb's generator makes pair tables only when asked by name,
//! and the shared data has none. Make them with chesstb's generator and
//! `shrink` outside the repository (docs/verification.md says how) and point
//! `TBSERVER_CHESSTB_PAIR_DIR` at the result. `TBSERVER_EXHAUSTIVE=1`
//! compares every covered position, otherwise [`SAMPLE_PER_TABLE`];
//! `TBSERVER_CHESSTB_PAIR_TABLES` names the pair tables (default `KpKp`).
//! A second test reads positions whose values chesstb's own prober read
//! from the same files (`TBSERVER_CHESSTB_PAIR_REFERENCE`). The index itself
//! is proven without any table in `tests/chesstb_index.rs`.

#[macro_use]
mod common;
#[path = "common/two_generators.rs"]
mod two_generators;

use std::{path::PathBuf, sync::atomic::Ordering};

use chesstb_reader::{Chesstb, Kind, TableMaterial};
use shakmaty::{Board, Chess, Position};
use tbserver::builtin::{Material, Store};
use two_generators::{Counts, check_metrics, for_positions};

/// chesstb's pair table, the built-in table of the same positions, and
/// chesstb's full table where the shared data has it.
const TABLES: [(&str, &str, Option<&str>); 2] = [("KpKp", "KPvKP", Some("KPKP")), ("KQpKp", "KQPvKP", None)];

/// Positions per table without `TBSERVER_EXHAUSTIVE`, each at all 100 clocks.
const SAMPLE_PER_TABLE: usize = 3_000;

fn has_pair(board: &Board) -> bool {
    TableMaterial::pair_of_board(board).is_some()
}

#[test]
fn pair_tables_agree_with_full_tables() {
    let Some(pair_dir) = std::env::var_os("TBSERVER_CHESSTB_PAIR_DIR").map(PathBuf::from) else {
        report!(
            "TBSERVER_CHESSTB_PAIR_DIR not set: no opposing-pair table compared (opt-in, see docs/verification.md)"
        );
        return;
    };
    let Some(shared) = common::shared_dir("tables/chesstb/wdl/KPKP.lzw") else { return };
    let shared = shared.join("tables/chesstb");
    // The shared files first: the full tables compared come from there, the
    // pair tables (which the shared data has none of) from `pair_dir`.
    let with_pairs = Chesstb::open(&[shared.clone(), pair_dir.clone()], 512 << 20);
    let full_only = Chesstb::open(&[shared], 256 << 20);
    // KQpKp's built-in counterpart needs 24 more 5-piece tables (over an
    // hour on 2 cores): compared only when named.
    let only = std::env::var("TBSERVER_CHESSTB_PAIR_TABLES").unwrap_or_else(|_| "KpKp".into());
    let present: Vec<_> = TABLES
        .into_iter()
        .filter(|(pair, ..)| only.split(',').any(|n| n == *pair))
        .filter(|(pair, ..)| {
            let found = with_pairs.files().iter().any(|f| f.kind == Kind::Wdl && f.material.name() == *pair);
            if !found {
                report!("{pair}: no WDL file in {}, not compared", pair_dir.display());
            }
            found
        })
        .collect();
    assert!(!present.is_empty(), "TBSERVER_CHESSTB_PAIR_DIR={} holds none of the pair tables", pair_dir.display());

    let store = Store::new(common::generated_builtin_dir(), true).with_lazy_max_pieces(5);
    let materials: Vec<Material> = present.iter().map(|(_, b, _)| Material::parse(b).unwrap()).collect();
    let s = tbserver::builtin::generate_in(&store, &tbserver::builtin::with_dependencies(&materials), &|_| {})
        .expect("generate");
    report!("built-in tables: {} tables, {} generated now, {:.1} s", s.tables, s.generated, s.secs);

    // A side counts as stored where the DTM50 pack (else the DTM file) stores it.
    let stored = |p: &Chess| {
        let kind = if with_pairs.stores_side_to_move_in(p, Kind::Dtm50).expect("chesstb").is_some() {
            Kind::Dtm50
        } else {
            Kind::Dtm
        };
        with_pairs.stores_side_to_move_in(p, kind).expect("chesstb").expect("covered")
    };
    let mut total_positions = 0;
    for ((pair, builtin, full), m) in present.iter().zip(&materials) {
        // Without a DTM50 pack (made with `--builddtm` only) the rest is compared.
        let has_dtm50 = with_pairs.files().iter().any(|f| f.kind == Kind::Dtm50 && f.material.name() == *pair);
        let t = store.table(m).unwrap();
        let l = &t.layout;
        let counts = Counts::default();
        let vs_full = std::sync::atomic::AtomicU64::new(0);
        let not_routed = std::sync::atomic::AtomicU64::new(0);
        let t0 = std::time::Instant::now();
        let check = |p: &Chess| {
            if with_pairs.table_name(p) != *pair {
                not_routed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            check_metrics(&with_pairs, &store, p, &counts, stored, has_dtm50);
            if full.is_some() {
                let fen = shakmaty::fen::Fen::from_position(p, shakmaty::EnPassantMode::Legal);
                let public = |v: chesstb_reader::Values| (v.wdl, v.dtz_plies, v.dtm_plies, v.dtm50);
                let a = public(with_pairs.probe(p, None).expect("pair table").expect("covered"));
                let b = public(full_only.probe(p, None).expect("full table").expect("covered"));
                let ca = with_pairs.dtm50_curve(p).expect("pair table");
                let cb = full_only.dtm50_curve(p).expect("full table");
                if a == b && ca == cb {
                    vs_full.fetch_add(1, Ordering::Relaxed);
                } else {
                    counts.disagree(format!("{fen}: {pair} {a:?} / {ca:?}, full {b:?} / {cb:?}"));
                }
            }
        };
        for_positions(
            l,
            common::sample_seed() ^ m.id() as u64,
            SAMPLE_PER_TABLE,
            |p| has_pair(p.board()),
            |p| has_pair(p.board()),
            check,
        );
        let positions = counts.positions.load(Ordering::Relaxed);
        report!(
            "{pair} vs built-in {builtin}{} ({}): {positions} positions with an opposing pair in {:.1} s; {}; \
             {} of the side to move chesstb leaves out not in the sample; {} disagreements",
            full.map(|f| format!(
                " and chesstb's {f}: {} positions agree in WDL, DTZ, DTM and DTM50 at every clock",
                vs_full.load(Ordering::Relaxed)
            ))
            .unwrap_or_default(),
            if common::exhaustive() { "every position" } else { "sample" },
            t0.elapsed().as_secs_f64(),
            counts.agreement(),
            counts.dropped_unchecked.load(Ordering::Relaxed),
            counts.disagreements.lock().unwrap().len(),
        );
        assert!(counts.disagreements.lock().unwrap().is_empty(), "{pair} disagrees with the full tables");
        assert_eq!(not_routed.load(Ordering::Relaxed), 0, "positions with an opposing pair not answered by {pair}");
        counts.assert_every_position_agreed(if has_dtm50 { 100 } else { 0 });
        if full.is_some() {
            // The full table is compared at every position, those of a
            // dropped side to move outside the built-in check's sample too.
            assert_eq!(vs_full.load(Ordering::Relaxed), positions + counts.dropped_unchecked.load(Ordering::Relaxed));
        }
        total_positions += positions;
    }
    report!("opposing-pair tables: {total_positions} positions compared, 0 disagreements");
}

/// Positions of a pair table with the values chesstb's own prober read from
/// the same files (`TBSERVER_CHESSTB_PAIR_REFERENCE`: lines of FEN, WDL class
/// 0–4, DTZ and DTM plies or `-`; made by the harness described in
/// docs/verification.md), read through tbserver with the pair tables in
/// `TBSERVER_CHESSTB_PAIR_DIR`. For a pair table whose full material neither
/// the shared data nor the built-in tables here have (`KQpKp`: the built-in
/// KQPvKP and its 24 dependencies take over an hour to generate).
#[test]
fn pair_tables_read_as_chesstbs_prober_reads_them() {
    let (Some(dir), Some(reference)) =
        (std::env::var_os("TBSERVER_CHESSTB_PAIR_DIR"), std::env::var_os("TBSERVER_CHESSTB_PAIR_REFERENCE"))
    else {
        report!("TBSERVER_CHESSTB_PAIR_DIR or TBSERVER_CHESSTB_PAIR_REFERENCE not set: not compared (opt-in)");
        return;
    };
    let Some(shared) = common::chesstb_dir() else { return };
    let tb = Chesstb::open(&[shared, PathBuf::from(dir)], 256 << 20);
    let text = std::fs::read_to_string(&reference).expect("the reference file");
    let (mut compared, mut skipped, mut bad) = (0, 0, Vec::new());
    let mut tables = std::collections::BTreeMap::<String, usize>::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 4, "{line}");
        let Ok(pos) =
            f[0].parse::<shakmaty::fen::Fen>().unwrap().into_position::<Chess>(shakmaty::CastlingMode::Standard)
        else {
            skipped += 1;
            continue;
        };
        let num = |s: &str| (s != "-").then(|| s.parse::<u16>().unwrap());
        let theirs = (f[1].parse::<u8>().unwrap(), num(f[2]), num(f[3]));
        let v = tb.probe(&pos, None).unwrap_or_else(|e| panic!("{}: {e}", f[0])).expect("covered");
        let ours = (v.wdl.map_or(7, |c| c as u8), v.dtz_plies, v.dtm_plies);
        *tables.entry(tb.table_name(&pos)).or_default() += 1;
        if ours != theirs {
            if bad.len() < 10 {
                report!("DISAGREE {}: tbserver {ours:?}, chesstb's prober {theirs:?}", f[0]);
            }
            bad.push(f[0].to_string());
        }
        compared += 1;
    }
    report!(
        "pair tables against chesstb's prober: {compared} positions (tables {tables:?}), WDL, DTZ and DTM; {} disagree; \
         {skipped} FENs shakmaty refuses",
        bad.len()
    );
    assert!(compared > 0 && bad.is_empty());
}
