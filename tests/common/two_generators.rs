//! The comparison of chesstb's tables with the built-in tables, position by
//! position, shared by `tests/chesstb_vs_builtin.rs` (3–4 pieces) and
//! `tests/chesstb_five.rs` (5 pieces).
#![allow(dead_code)]

use std::sync::{
    Mutex,
    atomic::{AtomicU64, Ordering},
};

use chesstb_reader::{Chesstb, Class, Conversion};
use rayon::prelude::*;
use shakmaty::{CastlingMode, Chess, FromSetup, Position, PositionError};
use tbformat::{dtm50, value};
use tbserver::builtin::Store;

use crate::common::exhaustive;

/// The legal position of a built-in table's index, `None` for an unused one.
pub fn to_chess(l: &tbformat::index::Layout, p: &tbformat::index::Pos) -> Option<Chess> {
    Chess::from_setup(crate::common::setup_of(l, p), CastlingMode::Standard)
        .or_else(PositionError::ignore_impossible_check)
        .ok()
}

/// Runs `check` in parallel on positions of a built-in table's layout: in
/// the exhaustive tier on every position of this run's share of indexes
/// ([`crate::common::share`], taken before decoding) that `keep` takes (in
/// chunks: a 5-piece table of positions would not fit in memory), else on
/// `sample` random ones that `keep_in_sample` takes.
pub fn for_positions(
    l: &tbformat::index::Layout,
    seed: u64,
    sample: usize,
    keep: impl Fn(&Chess) -> bool + Sync,
    keep_in_sample: impl Fn(&Chess) -> bool,
    check: impl Fn(&Chess) + Sync,
) {
    if exhaustive() {
        let share = crate::common::share();
        let chunk = 1u64 << 20;
        for from in (0..l.size as u64).step_by(chunk as usize) {
            let to = (from + chunk).min(l.size as u64);
            (from..to)
                .into_par_iter()
                .filter(|&i| share.takes(i))
                .filter_map(|i| to_chess(l, &l.decode(i as u32)?))
                .filter(|p| keep(p))
                .for_each(|p| check(&p));
        }
    } else {
        let mut state = seed | 1;
        let mut positions = Vec::new();
        while positions.len() < sample {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if let Some(p) = l.decode((state % l.size as u64) as u32)
                && let Some(c) = to_chess(l, &p)
                && keep_in_sample(&c)
            {
                positions.push(c);
            }
        }
        positions.par_iter().for_each(&check);
    }
}

#[derive(Default)]
pub struct Counts {
    pub positions: AtomicU64,
    pub wdl: AtomicU64,
    pub dtm: AtomicU64,
    pub dtz: AtomicU64,
    pub dtm50_pairs: AtomicU64,
    /// (position, clock) pairs whose DTC class agrees with the built-in DTZ.
    pub dtc_class_pairs: AtomicU64,
    /// Of those, KQvK/KRvK pairs whose DTC equals the built-in DTM50.
    pub dtc_mate_pairs: AtomicU64,
    /// Decisive DTC values with pushes owed.
    pub dtc_pushes: AtomicU64,
    /// Exhaustive run: positions of a side to move chesstb leaves out that
    /// fell outside the sample.
    pub dropped_unchecked: AtomicU64,
    pub disagreements: Mutex<Vec<String>>,
}

impl Counts {
    /// The summary every comparison prints: how many positions agreed in
    /// WDL, DTM and DTZ, and (position, clock) pairs in DTM50.
    pub fn agreement(&self) -> String {
        format!(
            "WDL {} agree, DTM {} agree, DTZ {} agree, DTM50 {} (position, clock) pairs agree",
            self.wdl.load(Ordering::Relaxed),
            self.dtm.load(Ordering::Relaxed),
            self.dtz.load(Ordering::Relaxed),
            self.dtm50_pairs.load(Ordering::Relaxed),
        )
    }

    /// Asserts that positions were compared and every one agreed in WDL,
    /// DTM and DTZ, and in DTM50 at `dtm50_clocks` clocks.
    pub fn assert_every_position_agreed(&self, dtm50_clocks: u64) {
        let positions = self.positions.load(Ordering::Relaxed);
        assert!(positions > 0);
        for c in [&self.wdl, &self.dtm, &self.dtz] {
            assert_eq!(c.load(Ordering::Relaxed), positions);
        }
        assert_eq!(self.dtm50_pairs.load(Ordering::Relaxed), positions * dtm50_clocks);
    }

    pub fn disagree(&self, what: String) {
        let mut d = self.disagreements.lock().unwrap();
        if d.len() < 50 {
            report!("  DISAGREE {what}");
            d.push(what);
        }
    }
}

/// In the exhaustive run, one position in this many of the side to move
/// that chesstb leaves out is checked (and DTC, on both sides). chesstb never
/// stored those values: a probe rebuilds them by a one-ply search over the
/// stored side, and the built-in tables obey the same one-ply relation at
/// every position (tests/builtin_vs_tables.rs, exhaustive). So with the
/// stored side equal everywhere, the sample checks our rebuild code.
pub const DROPPED_SIDE_SAMPLE: u64 = 8;

fn sampled(pos: &Chess) -> bool {
    let h: shakmaty::zobrist::Zobrist64 = pos.zobrist_hash(shakmaty::EnPassantMode::Legal);
    u64::from(h) % DROPPED_SIDE_SAMPLE == 0
}

/// The built-in DTM50 (signed plies) at clocks 0–99, from the stored
/// segments in one lookup (clock by clock where en passant needs a search).
fn builtin_curve(store: &Store, pos: &Chess) -> Vec<i32> {
    if pos.ep_square(shakmaty::EnPassantMode::Legal).is_some() {
        return (0..100).map(|c| value::signed_plies(store.probe_dtm50(pos, c).unwrap().unwrap())).collect();
    }
    let mut segments = Vec::new();
    store.probe_function(pos, &mut segments).expect("built-in").expect("covered");
    (0..100).map(|clock| value::signed_plies(dtm50::value_at(&segments, clock))).collect()
}

pub fn check(tb: &Chesstb, store: &Store, pos: &Chess, counts: &Counts) {
    check_where(tb, store, pos, counts, |pos| tb.stores_side_to_move(pos).expect("chesstb").expect("covered"))
}

/// [`check`], with the exhaustive run's test of whether the files store a
/// position's side to move (checked always) or leave it to a rebuild
/// (checked 1 in [`DROPPED_SIDE_SAMPLE`]) given.
pub fn check_where(tb: &Chesstb, store: &Store, pos: &Chess, counts: &Counts, stored: impl Fn(&Chess) -> bool) {
    check_metrics(tb, store, pos, counts, stored, true)
}

/// [`check_where`], DTM50 left out with `dtm50` false (tables made
/// without it).
pub fn check_metrics(
    tb: &Chesstb,
    store: &Store,
    pos: &Chess,
    counts: &Counts,
    stored: impl Fn(&Chess) -> bool,
    dtm50: bool,
) {
    let sample = sampled(pos);
    if exhaustive() && !sample && !stored(pos) {
        counts.dropped_unchecked.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let fen = FenOf(pos);
    let (dtz, dtm) = store.probe(pos).expect("built-in").expect("covered");
    let v = tb.probe(pos, None).unwrap_or_else(|e| panic!("{fen}: {e}")).expect("chesstb covers it");
    counts.positions.fetch_add(1, Ordering::Relaxed);
    let ours = v.wdl.map(Class::wdl);
    if ours == Some(value::wdl50(dtz)) {
        counts.wdl.fetch_add(1, Ordering::Relaxed);
    } else {
        counts.disagree(format!("{fen}: WDL chesstb {ours:?}, built-in {:?}", value::wdl50(dtz)));
    }
    if v.signed_dtm() == Some(value::signed_plies(dtm)) {
        counts.dtm.fetch_add(1, Ordering::Relaxed);
    } else {
        counts.disagree(format!("{fen}: DTM chesstb {:?}, built-in {}", v.signed_dtm(), value::signed_plies(dtm)));
    }
    // Both know DTZ exactly (no rounding up to 4 pieces).
    if v.signed_dtz() == Some(value::signed_plies(dtz)) {
        counts.dtz.fetch_add(1, Ordering::Relaxed);
    } else {
        counts.disagree(format!("{fen}: DTZ chesstb {:?}, built-in {}", v.signed_dtz(), value::signed_plies(dtz)));
    }
    if !dtm50 {
        return;
    }
    // The whole curve at once (what the exhaustive run uses), and in the
    // sample also clock by clock as the service probes it: both must agree.
    let curve = tb.dtm50_curve(pos).unwrap_or_else(|e| panic!("{fen}: {e}")).expect("covered");
    let builtin = exhaustive().then(|| builtin_curve(store, pos));
    for clock in 0..100u32 {
        let theirs = match &builtin {
            Some(b) => b[clock as usize],
            None => value::signed_plies(store.probe_dtm50(pos, clock).expect("built-in").expect("DTM50")),
        };
        let at_clock = (!exhaustive() || (sample && matches!(clock, 0 | 50 | 99)))
            .then(|| tb.probe_with_dtc(pos, clock).unwrap_or_else(|e| panic!("{fen} @{clock}: {e}")).expect("covered"));
        if let Some(dtc) = at_clock.as_ref().and_then(|v| v.dtc) {
            check_dtc(pos, &fen, clock, dtc, value::signed_plies(dtz), theirs, counts);
        }
        let mate = if exhaustive() {
            curve[clock as usize]
        } else {
            let m = at_clock.and_then(|v| v.dtm50);
            if m != curve[clock as usize] {
                counts.disagree(format!("{fen} clock {clock}: probe {m:?}, curve {:?}", curve[clock as usize]));
            }
            m
        };
        let ours = mate.map(|m| match m.class {
            Class::Win => m.plies as i32,
            Class::Loss => -(m.plies as i32),
            _ => 0,
        });
        if ours == Some(theirs) {
            counts.dtm50_pairs.fetch_add(1, Ordering::Relaxed);
        } else {
            counts.disagree(format!("{fen} clock {clock}: DTM50 chesstb {ours:?}, built-in {theirs}"));
        }
    }
}

/// A position's FEN, written only when a message needs it: an exhaustive
/// run compares tens of millions of positions that all agree.
pub struct FenOf<'a>(pub &'a Chess);

impl std::fmt::Display for FenOf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        shakmaty::fen::Fen::from_position(self.0, shakmaty::EnPassantMode::Legal).fmt(f)
    }
}

/// chesstb's DTC at `clock` against what the built-in tables imply:
/// - it is decisive exactly when the position is a win or loss that the
///   clock still allows (`|DTZ| + clock ≤ 100`, chesstb's widest budget
///   being DTZ itself), with the same sign;
/// - a win's next zeroing move is never nearer than DTZ, the nearest one;
/// - in KQvK and KRvK the winner cannot capture or promote and the loser's
///   only capture draws, so the only conversion is mate: DTC is the
///   distance to mate that fits the clock, which is DTM50.
fn check_dtc(pos: &Chess, fen: &FenOf, clock: u32, dtc: Conversion, dtz: i32, dtm50: i32, counts: &Counts) {
    let signed = match dtc.class {
        Class::Win => dtc.plies as i32,
        Class::Loss => -(dtc.plies as i32),
        _ => 0,
    };
    // A mated side is lost in 0 plies, which reads as a signed 0 (only the
    // exhaustive run meets mates: the sample skips finished games).
    let decisive = pos.is_checkmate() || (dtz != 0 && dtz.unsigned_abs() + clock <= 100);
    let material = tbserver::material::normalized(pos.board());
    if decisive != (dtc.class != Class::Draw) || (decisive && signed.signum() != dtz.signum()) {
        counts.disagree(format!("{fen} clock {clock}: DTC {dtc:?}, built-in DTZ {dtz}"));
        return;
    }
    if signed > 0 && signed < dtz {
        counts.disagree(format!("{fen} clock {clock}: DTC {dtc:?} nearer than DTZ {dtz}"));
        return;
    }
    counts.dtc_class_pairs.fetch_add(1, Ordering::Relaxed);
    if dtc.order > 0 {
        counts.dtc_pushes.fetch_add(1, Ordering::Relaxed);
    }
    if matches!(material.as_str(), "KQvK" | "KRvK") {
        if signed == dtm50 {
            counts.dtc_mate_pairs.fetch_add(1, Ordering::Relaxed);
        } else {
            counts.disagree(format!("{fen} clock {clock}: DTC {dtc:?}, built-in DTM50 {dtm50}"));
        }
    }
}
