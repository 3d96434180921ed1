//! Exact DTZ where one is known: a DTZ that Syzygy stores rounded is
//! replaced by the exact value of the built-in tables, checked against
//! values computed without them (Gaviota's DTM where DTZ must equal it,
//! chesstb's DTZ from an independent generator), while every value Syzygy
//! stores exactly stays Syzygy's.

#[macro_use]
mod common;

use chesstb_reader::{Chesstb, Class};
use serde_json::Value;
use shakmaty::{Chess, Position, uci::UciMove};
use shakmaty_syzygy::{Dtz, MaybeRounded, Tablebase};
use tbserver::{
    domain::{Rounding, Source},
    probe::position_info,
    tablebase::Tablebases,
};

/// Syzygy, Gaviota and built-in tables (no chesstb: its DTZ is the
/// independent check here).
fn tablebases() -> Option<Tablebases> {
    let mut config = common::shared_tables_config()?;
    config.builtin.mode = tbserver::config::BuiltinMode::Lazy;
    config.builtin.dir = common::generated_builtin_dir();
    Some(tbserver::app::open_tablebases(&config))
}

fn syzygy() -> Option<Tablebase<Chess>> {
    let mut tables = Tablebase::new();
    tables.add_directory(common::syzygy_dir()?).unwrap();
    Some(tables)
}

fn position(fen: &str) -> Chess {
    tbserver::request::parse_position(fen).unwrap()
}

/// In KRvK and KQvK the winner's only zeroing move is mate (the loser has no
/// piece to capture, and a lost position cannot offer the loser a capture of
/// the only piece, which would draw), and no mate there is more than 100
/// plies away: DTZ50'' equals DTM. Gaviota's DTM is computed without either
/// DTZ table, so it is the exact DTZ, independently.
fn assert_exact_dtz_is_gaviota_dtm(tb: &Tablebases, pos: &Chess) -> bool {
    let info = position_info(tb, pos);
    let dtz = info.dtz50.expect("dtz");
    if dtz.plies == 0 {
        return false;
    }
    assert_eq!(info.sources.dtm, Some(Source::Gaviota));
    let dtm = info.dtm.expect("dtm").plies;
    assert_eq!((dtz.plies, dtz.rounding), (dtm, Rounding::Exact), "{}", tbserver::request::normalized_fen(pos));
    true
}

#[test]
fn krvk_rounded_dtz_becomes_exact() {
    let (Some(tb), Some(syzygy)) = (tablebases(), syzygy()) else { return };
    let pos = position("8/8/8/4k3/8/8/8/KR6 w - - 0 1");
    // The case in point: Syzygy stores this DTZ rounded (29 or 30).
    assert!(matches!(syzygy.probe_dtz(&pos).unwrap(), MaybeRounded::Rounded(Dtz(29))));
    let info = position_info(&tb, &pos);
    let dtz = info.dtz50.unwrap();
    assert_eq!((dtz.rounding, dtz.range_plies, dtz.rounded_in), (Rounding::Exact, [29, 29], Some(Source::Syzygy)));
    assert_eq!((info.sources.dtz50, info.sources.wdl50), (Some(Source::Builtin), Some(Source::Syzygy)));
    assert!(assert_exact_dtz_is_gaviota_dtm(&tb, &pos));
    // Every move's DTZ too (the rook captured by the king: a draw).
    for m in pos.legal_moves() {
        let mut after = pos.clone();
        after.play_unchecked(m);
        assert_exact_dtz_is_gaviota_dtm(&tb, &after);
    }

    // A sample of both endings, sides to move at random.
    let mut rng = common::Rng(0x05ee_dd72);
    let (mut decisive, mut rounded) = (0, 0);
    for material in ["KRvK", "KQvK", "KvKR", "KvKQ"] {
        for _ in 0..1500 {
            let pos = common::random_position(&mut rng, material, 0);
            if matches!(syzygy.probe_dtz(&pos).unwrap(), MaybeRounded::Rounded(d) if d.0 != 0) {
                rounded += 1;
            }
            decisive += usize::from(assert_exact_dtz_is_gaviota_dtm(&tb, &pos));
        }
    }
    report!("KRvK/KQvK: {decisive} decisive positions, exact DTZ = Gaviota DTM in all ({rounded} rounded in Syzygy)");
    assert!(rounded > 1000, "too few rounded values to test: {rounded}");
}

#[derive(Default, Debug)]
struct Counts {
    precise: usize,
    made_exact: usize,
    checked_by_chesstb: usize,
    left_rounded: usize,
}

#[test]
fn syzygy_precise_values_stand_and_rounded_ones_are_chesstb_s() {
    let (Some(tb), Some(syzygy), Some(reference), Some(chesstb_dir)) =
        (tablebases(), syzygy(), common::reference_file(), common::chesstb_dir())
    else {
        return;
    };
    let chesstb = Chesstb::open(&[chesstb_dir], 64 << 20);
    let builtin_dir = common::generated_builtin_dir();
    // A file of another format version (left by an earlier run) is no
    // table the service reads.
    let builtin_five = |pos: &Chess| {
        pos.board().occupied().count() == 5
            && common::builtin_file_version(
                &builtin_dir.join(format!("{}.tbsb", tbserver::material::normalized(pos.board()))),
            )
            .is_some_and(|v| v == tbformat::format::VERSION)
    };
    let mut counts = Counts::default();
    let mut check = |pos: &Chess| {
        if pos.legal_moves().is_empty() || pos.is_insufficient_material() {
            return;
        }
        let fen = tbserver::request::normalized_fen(pos);
        let info = position_info(&tb, pos);
        let ours = info.dtz50.unwrap_or_else(|| panic!("{fen}: no DTZ"));
        match syzygy.probe_dtz(pos).unwrap() {
            MaybeRounded::Precise(Dtz(d)) => {
                counts.precise += 1;
                assert_eq!((ours.plies, ours.rounding, ours.rounded_in), (d, Rounding::Exact, None), "{fen}");
                assert_eq!(info.sources.dtz50, Some(Source::Syzygy), "{fen}");
            }
            // Up to 4 pieces, and 5 where other tests keep a built-in table
            // (KRBvKQ, KNNvKN, ...) in the directory shared with them.
            MaybeRounded::Rounded(Dtz(d)) if pos.board().occupied().count() <= 4 || builtin_five(pos) => {
                counts.made_exact += 1;
                assert_eq!(
                    (ours.rounding, ours.rounded_in, info.sources.dtz50),
                    (Rounding::Exact, Some(Source::Syzygy), Some(Source::Builtin)),
                    "{fen}"
                );
                assert!(
                    ours.plies == d || ours.plies == d + d.signum(),
                    "{fen}: exact {} outside rounded {d}",
                    ours.plies
                );
                let theirs = chesstb.probe(pos, Some(0)).unwrap();
                assert!(
                    theirs.is_some() || pos.board().occupied().count() == 5,
                    "{fen}: chesstb covers every 3-4-piece table"
                );
                // chesstb halves cursed distances: only its wins and losses are exact.
                if let Some(theirs) = theirs
                    && matches!(theirs.wdl, Some(Class::Win | Class::Loss))
                {
                    counts.checked_by_chesstb += 1;
                    assert_eq!(Some(ours.plies), theirs.signed_dtz(), "{fen}: exact DTZ against chesstb's");
                }
            }
            MaybeRounded::Rounded(Dtz(d)) => {
                counts.left_rounded += 1;
                assert_eq!(
                    (ours.plies, ours.rounding, info.sources.dtz50),
                    (d, Rounding::MaybeRounded, Some(Source::Syzygy)),
                    "{fen}"
                );
            }
        }
    };
    let text = std::fs::read_to_string(reference).unwrap();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let r: Value = serde_json::from_str(line).unwrap();
        let pos = position(r["fen"].as_str().unwrap());
        check(&pos);
        for uci in r["moves"].as_object().unwrap().keys() {
            let m = uci.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
            let mut after = pos.clone();
            after.play_unchecked(m);
            check(&after);
        }
    }
    report!(
        "reference positions and their moves: {} precise in Syzygy (unchanged), {} rounded made exact ({} of them checked against chesstb's DTZ), {} rounded left (5 pieces)",
        counts.precise,
        counts.made_exact,
        counts.checked_by_chesstb,
        counts.left_rounded
    );
    assert!(counts.made_exact >= 1000 && counts.checked_by_chesstb >= 1000 && counts.left_rounded > 0, "{counts:?}");
}
