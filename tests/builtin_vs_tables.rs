//! The built-in tables against Syzygy (WDL50, DTZ50''), Gaviota (DTM, 3
//! pieces) and an independent one-ply check of every position against its
//! successors (shakmaty move generation, table values of the children).
//!
//! Quick tier (`cargo test --release`): in every table, a uniform random
//! sample of its legal positions (both sides to move; sizes per check below,
//! whole tables where they are not much larger), seeded and printed.
//! Exhaustive tier (`TBSERVER_EXHAUSTIVE=1`, `scripts/verify-all.sh`): every
//! legal position of every table. Same checks either way.
//!
//! Run in release mode: `cargo test --release --test builtin_vs_tables`.

#[macro_use]
mod common;

use std::sync::{
    OnceLock,
    atomic::{AtomicU64, Ordering},
};

use rayon::prelude::*;
use shakmaty::{CastlingMode, Chess, FromSetup, Position, PositionError};
use shakmaty_syzygy::{Dtz, MaybeRounded, Tablebase, Wdl};
use tbformat::{
    dtm50::{self, LAST_MOVE_CLOCK, Segment},
    index::{Layout, Pos},
    value,
};
use tbserver::builtin::{Material, Store, all_materials};
use tbserver::search::{MateSide, NoBound};
use tbserver::sources::{TableSource, gaviota::GaviotaSource};

fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| {
        let dir = common::builtin_test_dir();
        common::sample_seed();
        let store = Store::new(dir, true).with_lazy_max_pieces(5);
        let checked = materials(5);
        let wanted = tbserver::builtin::with_dependencies(&checked);
        let s = tbserver::builtin::generate_in(&store, &wanted, &|_| {}).expect("generate");
        report!("built-in tables: {} tables, {} generated now, {:.1} s", s.tables, s.generated, s.secs);
        let five: Vec<String> = checked.iter().filter(|m| m.pieces() == 5).map(|m| m.name()).collect();
        report!("tables of 5 pieces checked: {}", if five.is_empty() { "none".into() } else { five.join(", ") });
        store
    })
}

/// 4, or less with `TBSERVER_BUILTIN_TEST_PIECES` for a quick run: every
/// table of 3..=that many pieces is checked.
fn max_pieces() -> usize {
    std::env::var("TBSERVER_BUILTIN_TEST_PIECES").ok().and_then(|v| v.parse().ok()).unwrap_or(4)
}

/// Tables of 5 pieces to check (generated with what they depend on, which
/// takes minutes per table): `TBSERVER_BUILTIN_TEST_FIVE` (comma-separated,
/// empty for none, `all` for every one with a Syzygy file in the shared
/// data: 13, which take hours),
/// KNNvKN by default: it has identical men, both sides' minor pieces and a
/// Syzygy file in the shared data.
fn five_piece_tables() -> Vec<Material> {
    let names = std::env::var("TBSERVER_BUILTIN_TEST_FIVE").unwrap_or_else(|_| "KNNvKN".into());
    if names == "all" {
        let dir = common::syzygy_dir().expect("TBSERVER_BUILTIN_TEST_FIVE=all needs the shared Syzygy tables");
        let mut all: Vec<Material> = std::fs::read_dir(&dir)
            .expect("the Syzygy directory")
            .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".rtbw").and_then(Material::parse))
            .filter(|m| m.pieces() == 5)
            .map(|m| m.canonical())
            .collect();
        all.sort_by_key(|m| m.name());
        assert!(!all.is_empty(), "no 5-piece Syzygy table in {}", dir.display());
        return all;
    }
    names
        .split(',')
        .filter(|n| !n.is_empty())
        .map(|n| {
            Material::parse(n)
                .filter(|m| m.pieces() == 5)
                .unwrap_or_else(|| panic!("{n}: not a table of 5 pieces"))
                .canonical()
        })
        .collect()
}

/// The tables to check with up to `max` pieces: every one of 3..=4 (see
/// [`max_pieces`]) and [`five_piece_tables`], or of those only the ones
/// named in `TBSERVER_BUILTIN_TEST_ONLY` (comma-separated, e.g.
/// `KQvKR,KPvKP`) for a quick run.
fn materials(max: usize) -> Vec<Material> {
    let mut all = all_materials(max.min(max_pieces()).min(4));
    if max >= 5 {
        all.extend(five_piece_tables());
    }
    common::only_named(all)
}

/// Quick-tier sample sizes per table and check (legal positions). With `n`
/// positions drawn, a fault in a fraction `f` of a table's positions goes
/// unseen with probability about `exp(-n f)`. A wrong index or symmetry
/// touches a large share of a table (every position with some king
/// square, say 1/10); a fault confined to 1 position in 2,000 is still
/// seen with probability 1 - 4e-6 at 25,000 and 1 - 1e-11 at 50,000. The
/// Gaviota sample exceeds every 3-piece table: those are checked whole.
const SYZYGY_SAMPLE: usize = 50_000;
const GAVIOTA_SAMPLE: usize = 100_000;
const SUCCESSOR_SAMPLE: usize = 25_000;
const MATE_ONLY_SAMPLE: usize = 100_000;

fn chess(l: &Layout, p: &Pos) -> Chess {
    Chess::from_setup(common::setup_of(l, p), CastlingMode::Standard)
        .or_else(PositionError::ignore_impossible_check)
        .expect("legal table position")
}

/// How many positions of a table a check covered, of how many.
struct Checked {
    n: u64,
    of: u64,
    all: bool,
}

impl std::fmt::Display for Checked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let share = common::share();
        if self.all && share.is_all() {
            write!(f, "{:>9} positions (all)", self.n)
        } else if self.all {
            write!(f, "{:>9} positions (share {share} of {})", self.n, self.of)
        } else {
            write!(f, "{:>9} positions (sample of {})", self.n, self.of)
        }
    }
}

/// The indexes to check in `m`: all of them in the exhaustive tier (those of
/// this run's [`common::share`]); in the quick tier `sample` legal
/// positions drawn uniformly at random (distinct), or all where the table
/// holds fewer than twice that.
fn indexes(t: &tbserver::builtin::Table, check: &str, sample: usize) -> Option<Vec<u32>> {
    if common::exhaustive() || t.legal_positions <= 2 * sample as u64 {
        return None;
    }
    let mut rng = common::rng_for(common::sample_seed(), &format!("{check}/{}", t.material.name()));
    let mut picked = std::collections::BTreeSet::new();
    while picked.len() < sample {
        let idx = rng.below(t.layout.size as u64) as u32;
        if t.layout.decode(idx).is_some() {
            picked.insert(idx);
        }
    }
    Some(picked.into_iter().collect())
}

/// Legal positions of `m` with their stored (DTZ, DTM), in parallel: every
/// one, or a sample of `sample` in the quick tier (see [`indexes`]).
fn for_each_position(m: &Material, check: &str, sample: usize, f: impl Fn(&Chess, u16, u16) + Sync) -> Checked {
    let t = store().table(m).unwrap();
    let l = &t.layout;
    let count = AtomicU64::new(0);
    let visit = |idx: u32| {
        if let Some(p) = l.decode(idx) {
            f(&chess(l, &p), t.dtz(idx), t.dtm(idx));
            count.fetch_add(1, Ordering::Relaxed);
        }
    };
    let sample = indexes(&t, check, sample);
    let all = sample.is_none();
    let share = common::share();
    match sample {
        None => {
            (0..l.size as u32).into_par_iter().with_min_len(4096).filter(|&i| share.takes(i.into())).for_each(visit)
        }
        Some(sample) => sample.into_par_iter().with_min_len(64).for_each(visit),
    }
    let n = count.into_inner();
    if all && share.is_all() {
        assert_eq!(n, t.legal_positions, "{}: legal positions decoded against the header's count", m.name());
    }
    Checked { n, of: t.legal_positions, all }
}

struct Failures(std::sync::Mutex<Vec<String>>);

impl Failures {
    fn new() -> Failures {
        Failures(std::sync::Mutex::new(Vec::new()))
    }
    fn add(&self, s: String) {
        let mut v = self.0.lock().unwrap();
        if v.len() < 20 {
            v.push(s);
        }
    }
    fn check(self, total_bad: u64) {
        let v = self.0.into_inner().unwrap();
        assert!(total_bad == 0, "{total_bad} mismatches, first ones:\n{}", v.join("\n"));
    }
}

/// Syzygy may store a loss exactly (in plies) while the successor that
/// decides it is stored rounded (in moves): its generator then counts the
/// successor as the shorter of the two possible distances. True when Syzygy's
/// `dtz` is what its own (ignoring rounding) successor values give and the
/// longest-resisting successor is a rounded one.
fn loss_from_rounded_successor(tb: &Tablebase<Chess>, pos: &Chess, dtz: i32) -> bool {
    let mut longest = 1;
    let mut via_rounded = false;
    for m in pos.legal_moves() {
        if m.is_zeroing() {
            continue;
        }
        let mut child = pos.clone();
        child.play_unchecked(m);
        let (d, r) = match tb.probe_dtz(&child).unwrap() {
            MaybeRounded::Precise(Dtz(d)) => (d, false),
            MaybeRounded::Rounded(Dtz(d)) => (d, true),
        };
        if d + 1 > longest {
            longest = d + 1;
            via_rounded = r;
        } else if d + 1 == longest {
            via_rounded |= r;
        }
    }
    longest == -dtz && via_rounded
}

/// The side to move whose DTZ the Syzygy file of `name` stores, for
/// positions with the first-named side as White; `None` where every
/// position is stored (a symmetric material) or the file's subtables
/// disagree (then every position is probed through the library).
///
/// A `.rtbz` file stores one side to move; the library answers the other by
/// a one-ply search over children, which are all on the stored side or
/// zeroing (their WDL decides). In the exhaustive tier those positions get
/// their WDL checked here, and their DTZ through that same one-ply relation
/// by `every_value_is_consistent_with_its_successors` over every position;
/// probing them here would cost two thirds of this check's time and test the
/// library's search rather than the file. One in 8 of them is still probed
/// ([`in_library_sample`]).
///
/// The header: magic (4 bytes), layout (1), then per subtable (one per
/// leading-pawn file a-d with pawns, else one) an order byte (two when both
/// sides have pawns) and a byte per piece, padded to even; then each
/// subtable's compression header, whose first byte is its flags (bit 0:
/// Black to move stored; bit 7: a single value, two bytes in all). Otherwise
/// 10 bytes, 2 per symbol length, a u16 symbol count and 3 bytes per symbol,
/// padded to even.
fn syzygy_dtz_stored_turn(dir: &std::path::Path, name: &str) -> Option<shakmaty::Color> {
    let (white, black) = name.split_once('v').expect("material name");
    if white == black {
        return None;
    }
    let path = dir.join(format!("{name}.rtbz"));
    let d = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let pawns = d[4] & 2 != 0;
    let both_pawns = white.contains('P') && black.contains('P');
    let subtables = if pawns { 4 } else { 1 };
    let mut at = 5 + subtables * (1 + usize::from(both_pawns) + name.len() - 1);
    at += at & 1;
    let mut black_stored = Vec::new();
    for _ in 0..subtables {
        let flags = d[at];
        black_stored.push(flags & 1 != 0);
        if flags & 0x80 != 0 {
            at += 2;
            continue;
        }
        let lengths = usize::from(d[at + 8] - d[at + 9]) + 1;
        at += 10 + 2 * lengths;
        let symbols = usize::from(u16::from_le_bytes([d[at], d[at + 1]]));
        at += 2 + 3 * symbols + (symbols & 1);
    }
    if black_stored.iter().any(|&b| b != black_stored[0]) {
        return None;
    }
    Some(if black_stored[0] { shakmaty::Color::Black } else { shakmaty::Color::White })
}

/// One in 8 of the positions a `.rtbz` omits, chosen by Zobrist hash, is
/// still checked through the library's one-ply search.
fn in_library_sample(pos: &Chess) -> bool {
    use shakmaty::zobrist::Zobrist64;
    pos.zobrist_hash::<Zobrist64>(shakmaty::EnPassantMode::Legal).0 % 8 == 0
}

#[test]
fn wdl_and_dtz_equal_syzygy() {
    let Some(dir) = common::syzygy_dir() else { return };
    // Memory-mapped, as the service reads them: with plain reads, a third
    // of this check's time went to pread system calls.
    // SAFETY: the shared table files are not modified while the test runs.
    let mut tb = unsafe { Tablebase::<Chess>::with_mmap_filesystem() };
    tb.add_directory(&dir).expect("syzygy directory");
    let (mut total, mut total_of, mut total_rounded, mut total_explained) = (0, 0, 0, 0);
    let failures = Failures::new();
    let bad = AtomicU64::new(0);
    let (mut total_direct, mut total_wdl_only, mut total_bounded) = (0, 0, 0);
    // Tables with pawns first: promotions, en passant and cursed results live there.
    for m in materials(5).into_iter().rev() {
        let rounded = AtomicU64::new(0);
        let explained = AtomicU64::new(0);
        let wdl_only = AtomicU64::new(0);
        let bounded = AtomicU64::new(0);
        let bad_before = bad.load(Ordering::Relaxed);
        let stored = syzygy_dtz_stored_turn(&dir, &m.name());
        let c = for_each_position(&m, "syzygy", SYZYGY_SAMPLE, |pos, dtz, _| {
            if pos.is_checkmate() || pos.is_stalemate() {
                // Decided by the rules before any table is asked; the table
                // still stores them, as lost in 0 plies and drawn.
                let expect = if pos.is_checkmate() { value::loss(0) } else { value::DRAW };
                if dtz != expect {
                    bad.fetch_add(1, Ordering::Relaxed);
                    failures.add(format!(
                        "{}: terminal stored as {dtz}",
                        shakmaty::fen::Epd::from_position(pos, shakmaty::EnPassantMode::Legal)
                    ));
                }
                return;
            }
            let fen = || shakmaty::fen::Epd::from_position(pos, shakmaty::EnPassantMode::Legal).to_string();
            if common::exhaustive() && stored.is_some_and(|turn| turn != pos.turn()) && !in_library_sample(pos) {
                // Not in the .rtbz file: the library would derive it by a
                // one-ply search over children that are (see above).
                wdl_only.fetch_add(1, Ordering::Relaxed);
                let wdl = tb.probe_wdl_after_zeroing(pos).expect("syzygy wdl");
                if wdl != value::wdl50(dtz) {
                    bad.fetch_add(1, Ordering::Relaxed);
                    failures.add(format!("{}: wdl syzygy {wdl:?} builtin {}", fen(), value::signed_plies(dtz)));
                }
                return;
            }
            // Syzygy's DTZ carries its WDL (read from the WDL table while
            // probing) except a rounded ±100, where it may be either side of
            // the 50-move line: only then is the WDL table asked again, which
            // halves the cost of this check over whole tables.
            let syzygy_dtz = tb.probe_dtz(pos).expect("syzygy dtz");
            let wdl = match syzygy_dtz {
                MaybeRounded::Rounded(Dtz(100 | -100)) => tb.probe_wdl_after_zeroing(pos).expect("syzygy wdl"),
                d => Wdl::from_dtz_after_zeroing(d),
            };
            let ours = value::signed_plies(dtz);
            if wdl != value::wdl50(dtz) {
                bad.fetch_add(1, Ordering::Relaxed);
                failures.add(format!("{}: wdl syzygy {wdl:?} builtin {ours}", fen()));
                return;
            }
            // The mate bound the search derives from Syzygy's WDL50 and
            // DTZ50'' alone must contain the exact DTM50 (clock 0).
            let dtm50 = store().probe_dtm50(pos, 0).unwrap().unwrap();
            let contained = match tbserver::search::mate_bound(pos, 0, Some(wdl), Some(syzygy_dtz), None) {
                Ok(b) => {
                    let plies = value::signed_plies(dtm50);
                    plies != 0
                        && (plies > 0) == (b.side == MateSide::Win)
                        && (b.min_plies..=b.max_plies).contains(&plies.unsigned_abs())
                }
                Err(NoBound::Draw | NoBound::FiftyMoveRule) => dtm50 == value::DRAW,
                Err(NoBound::UnusableAtClock | NoBound::Unknown) => false,
            };
            bounded.fetch_add(1, Ordering::Relaxed);
            if !contained {
                bad.fetch_add(1, Ordering::Relaxed);
                failures.add(format!(
                    "{}: dtm50 {} outside the mate bound from Syzygy (dtz {syzygy_dtz:?}, {wdl:?})",
                    fen(),
                    value::signed_plies(dtm50)
                ));
            }
            match syzygy_dtz {
                MaybeRounded::Precise(Dtz(d)) => {
                    if d != ours && d < 0 && ours == d - 1 && loss_from_rounded_successor(&tb, pos, d) {
                        // Syzygy's loss value was computed from a successor it
                        // stores rounded (in moves); ours is one ply longer.
                        explained.fetch_add(1, Ordering::Relaxed);
                    } else if d != ours {
                        bad.fetch_add(1, Ordering::Relaxed);
                        failures.add(format!("{}: dtz syzygy {d} builtin {ours}", fen()));
                    }
                }
                MaybeRounded::Rounded(Dtz(d)) => {
                    rounded.fetch_add(1, Ordering::Relaxed);
                    if ours != d && ours != d + d.signum() {
                        bad.fetch_add(1, Ordering::Relaxed);
                        failures.add(format!("{}: dtz syzygy {d} (rounded) builtin {ours}", fen()));
                    }
                }
            }
        });
        let r = rounded.into_inner();
        let bad_here = bad.load(Ordering::Relaxed) - bad_before;
        let e = explained.into_inner();
        let w = wdl_only.into_inner();
        let b = bounded.into_inner();
        report!(
            "{:<8} {c} vs Syzygy: DTZ of {} ({r} rounded, {e} losses one ply longer than Syzygy's \
             via a rounded successor; DTM50 within Syzygy's mate bound for {b}), WDL only of {w} \
             (the side to move the .rtbz omits), {bad_here} mismatches",
            m.name(),
            c.n - w
        );
        total_bounded += b;
        total_direct += c.n - w;
        total_wdl_only += w;
        total_explained += e;
        total += c.n;
        total_of += c.of;
        total_rounded += r;
    }
    report!(
        "total    {total:>9} of {total_of} positions vs Syzygy: DTZ of {total_direct} ({total_rounded} rounded, \
         {total_explained} losses explained by a rounded successor, DTM50 within Syzygy's mate bound for \
         {total_bounded}), WDL only of {total_wdl_only}"
    );
    failures.check(bad.into_inner());
}

#[test]
fn dtm_equals_gaviota_for_three_pieces() {
    let Some(dir) = common::gaviota_dir() else { return };
    // The service's own Gaviota source: one binding of libgtb, tested here too.
    let gaviota = GaviotaSource::open(&[dir], 32 << 20);
    let failures = Failures::new();
    let bad = AtomicU64::new(0);
    let (mut total, mut total_of) = (0, 0);
    for m in materials(3) {
        let c = for_each_position(&m, "gaviota", GAVIOTA_SAMPLE, |pos, _, dtm| {
            let theirs = gaviota.probe_dtm_plies(pos).expect("gaviota probe").expect("3-piece table present");
            let ours = value::signed_plies(dtm);
            if theirs != ours {
                bad.fetch_add(1, Ordering::Relaxed);
                failures.add(format!(
                    "{}: dtm gaviota {theirs} builtin {ours}",
                    shakmaty::fen::Epd::from_position(pos, shakmaty::EnPassantMode::Legal)
                ));
            }
        });
        report!("{:<8} {c} vs Gaviota DTM", m.name());
        total += c.n;
        total_of += c.of;
    }
    report!("total    {total:>9} of {total_of} positions vs Gaviota DTM");
    failures.check(bad.into_inner());
}

/// Every position's DTM and DTZ follow from its successors' (a fixed point
/// with strictly decreasing distances along best lines is the true value),
/// and so does its DTM50 at every half-move clock 0..=99.
#[test]
fn every_value_is_consistent_with_its_successors() {
    let s = store();
    let failures = Failures::new();
    let bad = AtomicU64::new(0);
    let (mut total, mut total_of) = (0, 0);
    let mut total_clocks = 0;
    for m in materials(5) {
        let clocks = AtomicU64::new(0);
        let c = for_each_position(&m, "successors", SUCCESSOR_SAMPLE, |pos, dtz, dtm| {
            let fen = || shakmaty::fen::Epd::from_position(pos, shakmaty::EnPassantMode::Legal).to_string();
            // Segments of this position, then of each quiet reply (`quiet`
            // holds their ranges).
            let mut segs: Vec<Segment> = Vec::new();
            s.probe_function(pos, &mut segs).unwrap().unwrap();
            let own_len = segs.len();
            // DTM50 as a function of the clock: the breakpoints (last clock
            // of each constant run) of this position and of every reply.
            let mut breakpoints = vec![LAST_MOVE_CLOCK];
            breakpoints.extend(segs.iter().map(|g| g.max_clock));
            let moves = pos.legal_moves();
            let (mut ez, mut em) = (value::UNKNOWN, value::UNKNOWN);
            if moves.is_empty() {
                let v = if pos.is_check() { value::loss(0) } else { value::DRAW };
                (ez, em) = (v, v);
            }
            // Replies by their DTM50: fixed after a zeroing move (the clock
            // restarts), or the reply's own segments one clock later.
            let mut fixed = value::UNKNOWN;
            let mut quiet: Vec<std::ops::Range<usize>> = Vec::new();
            for mv in moves {
                let zeroing = mv.is_zeroing();
                let mut child = pos.clone();
                child.play_unchecked(mv);
                let mated = child.is_checkmate();
                let start = segs.len();
                let (cz, cm, c50) = if mated {
                    // A mate counts up to clock 100, so at every clock.
                    (value::loss(0), value::loss(0), value::loss(0))
                } else if child.board().occupied().count() == 2 {
                    (value::DRAW, value::DRAW, value::DRAW)
                } else if zeroing {
                    let (z, m) = s.probe(&child).unwrap().unwrap();
                    (z, m, s.probe_dtm50(&child, 0).unwrap().unwrap())
                } else {
                    let v = s.probe_function(&child, &mut segs).unwrap().unwrap();
                    (v.dtz, v.dtm, value::UNKNOWN)
                };
                ez = value::better(ez, if zeroing { value::back_zeroing(cz) } else { value::back_one_ply(cz) });
                em = value::better(em, value::back_one_ply(cm));
                if c50 != value::UNKNOWN {
                    fixed = value::better(fixed, value::back_one_ply(c50));
                } else {
                    breakpoints.extend(segs[start..].iter().filter(|g| g.max_clock > 0).map(|g| g.max_clock - 1));
                    quiet.push(start..segs.len());
                }
            }
            if (ez, em) != (dtz, dtm) {
                bad.fetch_add(1, Ordering::Relaxed);
                failures.add(format!(
                    "{}: stored dtz {} dtm {}, successors say dtz {} dtm {}",
                    fen(),
                    value::signed_plies(dtz),
                    value::signed_plies(dtm),
                    value::signed_plies(ez),
                    value::signed_plies(em)
                ));
            }
            breakpoints.sort_unstable();
            breakpoints.dedup();
            for &c in &breakpoints {
                let c = c as u32;
                let mut expect = fixed;
                for r in &quiet {
                    expect = value::better(expect, value::back_one_ply(dtm50::value_at(&segs[r.clone()], c + 1)));
                }
                if ez == value::loss(0)
                    || ez == value::DRAW && em == value::DRAW && quiet.is_empty() && fixed == value::UNKNOWN
                {
                    // Mated or stalemated: the rules decide at every clock.
                    expect = ez;
                }
                let stored = dtm50::value_at(&segs[..own_len], c);
                if stored != expect {
                    bad.fetch_add(1, Ordering::Relaxed);
                    failures.add(format!(
                        "{} clock {c}: stored dtm50 {}, successors say {}",
                        fen(),
                        value::signed_plies(stored),
                        value::signed_plies(expect)
                    ));
                }
            }
            clocks.fetch_add(breakpoints.len() as u64, Ordering::Relaxed);
            if let Err(e) = dtm50_agrees_with_dtm_and_wdl(&segs[..own_len], dtz, dtm) {
                bad.fetch_add(1, Ordering::Relaxed);
                failures.add(format!("{}: {e}", fen()));
            }
        });
        let runs = clocks.into_inner();
        report!("{:<8} {c} checked against their successors (DTM50 at all 100 clocks, {runs} constant runs)", m.name());
        total += c.n;
        total_of += c.of;
        total_clocks += runs;
    }
    report!(
        "total    {total:>9} of {total_of} positions checked against their successors, DTM50 in {total_clocks} constant runs"
    );
    failures.check(bad.into_inner());
}

/// The rules DTM50 must obey whatever the successors say: it is DTM where
/// the clock leaves room for DTM's mate, never shorter than DTM, drawn at
/// every clock above one where it is drawn, and at clock 0 it has the
/// WDL50 verdict (cursed wins and blessed losses are drawn there).
fn dtm50_agrees_with_dtm_and_wdl(own: &[Segment], dtz: u16, dtm: u16) -> Result<(), String> {
    use shakmaty_syzygy::Wdl;
    let at = |clock: u32| dtm50::value_at(own, clock);
    for w in own.windows(2) {
        if w[0].max_clock >= w[1].max_clock || value::plies(w[0].value) >= value::plies(w[1].value) {
            return Err(format!("segments not increasing: {own:?}"));
        }
    }
    for g in own {
        let same_side =
            (value::is_win(g.value) && value::is_win(dtm)) || (value::is_loss(g.value) && value::is_loss(dtm));
        if !same_side || value::plies(g.value) < value::plies(dtm) {
            return Err(format!("dtm50 {} against dtm {}", value::signed_plies(g.value), value::signed_plies(dtm)));
        }
    }
    // A mate beyond 100 plies fits at no clock: the rule may draw it even
    // at clock 0 (KRBvKR has such positions).
    if (value::is_win(dtm) || value::is_loss(dtm)) && value::plies(dtm) <= 100 {
        for clock in 0..=(100 - value::plies(dtm) as u32).min(LAST_MOVE_CLOCK as u32) {
            if at(clock) != dtm {
                return Err(format!(
                    "clock {clock}: dtm50 {} but dtm {} fits",
                    value::signed_plies(at(clock)),
                    value::signed_plies(dtm)
                ));
            }
        }
    }
    let at_zero = at(0);
    let consistent = match value::wdl50(dtz) {
        Wdl::Win => value::is_win(at_zero),
        Wdl::Loss => value::is_loss(at_zero),
        Wdl::CursedWin => at_zero == value::DRAW && value::is_win(dtm),
        Wdl::BlessedLoss => at_zero == value::DRAW && value::is_loss(dtm),
        Wdl::Draw => at_zero == value::DRAW && !value::is_win(dtm) && !value::is_loss(dtm) || dtm == value::loss(0),
    };
    if !consistent {
        return Err(format!(
            "wdl50 {:?} but dtm50 at clock 0 {} (dtm {})",
            value::wdl50(dtz),
            value::signed_plies(at_zero),
            value::signed_plies(dtm)
        ));
    }
    Ok(())
}

/// Where the winner's only zeroing move is mate (captures by the loser draw),
/// DTZ and DTM must agree.
#[test]
fn dtz_equals_dtm_where_only_mate_zeroes() {
    let failures = Failures::new();
    let bad = AtomicU64::new(0);
    for name in ["KQvK", "KRvK", "KBNvK", "KBBvK", "KNNvK"] {
        let m = Material::parse(name).unwrap();
        if !materials(5).contains(&m) {
            continue;
        }
        let c = for_each_position(&m, "mate-only", MATE_ONLY_SAMPLE, |pos, dtz, dtm| {
            if dtz != dtm {
                bad.fetch_add(1, Ordering::Relaxed);
                failures.add(format!(
                    "{name} {}: dtz {dtz} dtm {dtm}",
                    shakmaty::fen::Epd::from_position(pos, shakmaty::EnPassantMode::Legal)
                ));
            }
        });
        report!("{name:<8} {c} with DTZ == DTM");
    }
    failures.check(bad.into_inner());
}
