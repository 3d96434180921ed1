//! Retrograde analysis of one table.
//!
//! Moves that leave the current *layer* (captures and promotions, which change
//! the material, and pawn moves, which change the pawn progress) are resolved
//! up front from tables or layers already generated. What remains is a game on
//! the layer's positions with non-zeroing moves only, solved backwards ply by
//! ply from the mates and the exits: a position is won at n+1 plies as soon as
//! one move reaches a position lost at n; it is lost once all its moves are
//! known to reach won positions (a counter per position), at the largest
//! distance among them. DTZ50'' and DTM are the same game with different exit
//! values: DTZ restarts the count at each zeroing move, DTM keeps counting.
//! DTM50 adds the half-move clock to the game; see [`super::dtm50`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use arrayvec::ArrayVec;
use shakmaty::Role;

use super::dtm50::{self, Dtm50Data};
use super::index::{Layout, NONE, Pos};
use super::memory::filled;
use super::radix;
use super::moves::{Neighbours, Succ, board, for_each_move, for_each_neighbour_prefetched, for_each_zeroing_move, prefetch};
pub use super::moves::Board;
use super::value::{self, DRAW, UNKNOWN};

/// Values of one position, encoded as in [`super::value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Values {
    pub dtz: u16,
    pub dtm: u16,
    /// DTM50 at half-move clock 0 (just after a capture or pawn move).
    pub dtm50: u16,
}

impl Values {
    pub const DRAW: Values = Values { dtz: DRAW, dtm: DRAW, dtm50: DRAW };

    /// The mover's view of a zeroing move into a position of these values.
    #[inline]
    fn back_zeroing(self) -> Values {
        Values {
            dtz: value::back_zeroing(self.dtz),
            dtm: value::back_one_ply(self.dtm),
            dtm50: value::back_one_ply(self.dtm50),
        }
    }

    #[inline]
    fn better(self, o: Values) -> Values {
        Values {
            dtz: value::better(self.dtz, o.dtz),
            dtm: value::better(self.dtm, o.dtm),
            dtm50: value::better(self.dtm50, o.dtm50),
        }
    }
}

/// Values of a position of another table (or a later layer).
pub type Lookup<'a> = dyn Fn(&Board) -> Result<Values, String> + Sync + 'a;

/// Generated values of a table, by index.
pub struct Generated {
    pub dtz: Vec<u16>,
    pub dtm: Vec<u16>,
    /// Absent when generated without DTM50.
    pub dtm50: Option<Dtm50Data>,
    pub legal_positions: u64,
    pub secs: PhaseSecs,
}

/// Where a generation's time went: each part's own wall time, in seconds.
/// Within a layer DTZ50'' and DTM50 are solved side by side, on two threads
/// when one is free, so the parts can add up to more than the whole.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseSecs {
    /// Finding the legal positions and resolving their captures,
    /// promotions and pawn moves.
    pub exits: f64,
    /// Solving DTZ50'' (and, without DTM50, DTM beside it).
    pub dtz: f64,
    /// Solving DTM50 and collecting its segments; DTM is read off it.
    pub dtm50: f64,
}

impl std::ops::AddAssign for PhaseSecs {
    fn add_assign(&mut self, o: PhaseSecs) {
        self.exits += o.exits;
        self.dtz += o.dtz;
        self.dtm50 += o.dtm50;
    }
}

/// What the moves of one position that leave its layer lead to.
#[derive(Clone, Copy)]
enum Exit {
    /// No legal move: mated or stalemated.
    Terminal(u16),
    /// `moves`: non-zeroing moves (weighted by symmetry); `best`: the best
    /// zeroing move for each metric, [`UNKNOWN`] if none.
    Moves { moves: u8, best: Values },
}

/// While generating: the value of an index that is no legal position (stored
/// as [`UNKNOWN`]). Neither a win, a loss, a draw nor unknown.
const ILLEGAL: u16 = 1 << 2;

/// Positions per parallel task of the decoding and exit passes: large enough to amortise
/// scheduling, small enough to balance a layer across cores.
const EXIT_CHUNK: usize = 1 << 14;

/// Generates the table laid out by `l`; `lookup` answers for other tables
/// (their DTM50 is only read `with_dtm50`). Within a layer the exit pass runs
/// in parallel, then DTZ50'' is solved beside DTM50, and DTM is read off
/// DTM50 (or, without DTM50, solved beside DTZ50'').
/// Setting `cancel` stops the generation at the next layer with an error.
pub fn generate(l: &Layout, lookup: &Lookup, with_dtm50: bool, cancel: &AtomicBool) -> Result<Generated, String> {
    generate_with(l, lookup, with_dtm50, cancel, DTM_FROM_DTM50_MAX_PLIES)
}

/// The longest mate DTM is read off DTM50 for (see [`dtm_from_dtm50`]).
const DTM_FROM_DTM50_MAX_PLIES: u16 = 100;

/// [`generate`], reading DTM off DTM50 up to `dtm_limit_plies` only (tests
/// lower it to exercise the full DTM analysis).
fn generate_with(
    l: &Layout,
    lookup: &Lookup,
    with_dtm50: bool,
    cancel: &AtomicBool,
    dtm_limit_plies: u16,
) -> Result<Generated, String> {
    use rayon::prelude::*;

    // Illegal indexes are marked so that `solve` can skip un-moves into them
    // by the value it reads anyway, without testing for check.
    let mut dtz = filled(l.size, ILLEGAL);
    let mut dtm50 = dtm50::Builder::new(l.size);
    // Working memory for one layer (indexes `base..base + span`), reused:
    // per position its non-zeroing moves (read by each metric's analysis), and
    // its best zeroing move by DTZ50'' and by the mate metric (DTM50 at
    // clock 0, or DTM; see `Mate`).
    let span = l.layer_span();
    let mut counter = filled(span, 0u8);
    let mut exit_dtz = filled(span, UNKNOWN);
    let mut exit_mate = filled(span, UNKNOWN);
    // Without DTM50, DTM is solved beside DTZ50'' for the whole table. With DTM50, the layer's DTM is set here and then
    // kept only where DTM50 does not give it (see `SolvedDtm`).
    let mut dtm_layer: Vec<u16> = if with_dtm50 { filled(span, ILLEGAL) } else { Vec::new() };
    let mut solved_dtm = if with_dtm50 {
        SolvedDtm::ReadOff { limit_plies: dtm_limit_plies, span, kept: vec![Vec::new(); l.size / span] }
    } else {
        SolvedDtm::Dense(filled(l.size, ILLEGAL))
    };
    let mut scratch = dtm50::Scratch::new(if with_dtm50 { span } else { 0 });
    let mut secs = PhaseSecs::default();
    let mut legal_positions = 0;
    let mate = if with_dtm50 { Mate::Dtm50 } else { Mate::Dtm };
    for layer in l.layer_order() {
        if cancel.load(Ordering::Relaxed) {
            return Err("generation cancelled".into());
        }
        let base = layer * span;
        let start = Instant::now();
        let exits = Exits { base, counter: &mut counter, dtz: &mut exit_dtz, mate: &mut exit_mate };
        exits_pass(l, (&dtz, &solved_dtm, &dtm50), lookup, mate, exits)?;
        // The layer's legal positions, in index order: those the exits pass
        // found legal.
        let members: Vec<u32> =
            exit_dtz.iter().enumerate().filter(|&(_, &e)| e != ILLEGAL).map(|(j, _)| (base + j) as u32).collect();
        secs.exits += start.elapsed().as_secs_f64();
        if members.is_empty() {
            continue;
        }
        legal_positions += members.len() as u64;
        let members = &members[..];
        // This layer's DTM: in the whole table's array, or in `dtm_layer`
        // (by index less `values_base`).
        let (dtm, values_base) = match &mut solved_dtm {
            SolvedDtm::Dense(v) => (&mut v[..], 0),
            SolvedDtm::ReadOff { .. } => {
                dtm_layer.fill(ILLEGAL);
                (&mut dtm_layer[..], base)
            }
        };
        // Positions without moves have their value; the others are solved.
        for &idx in members {
            let (i, j) = (idx as usize, idx as usize - base);
            let v = match terminal(exit_dtz[j]) {
                Some(v) => {
                    exit_dtz[j] = UNKNOWN;
                    v
                }
                None => UNKNOWN,
            };
            dtz[i] = v;
            dtm[i - values_base] = v;
        }
        if !with_dtm50 {
            let start = Instant::now();
            rayon::join(
                || solve(l, members, base, &counter, &exit_dtz, (&mut dtz, 0)),
                || solve(l, members, base, &counter, &exit_mate, (dtm, 0)),
            );
            secs.dtz += start.elapsed().as_secs_f64();
            continue;
        }
        // DTM holds only the layer's terminal values here, as DTM50 wants.
        let start = Instant::now();
        let prepared = dtm50::prepare_layer(members, base, &counter, &exit_mate, &dtm_layer, &mut scratch, &mut dtm50);
        let prepare_secs = start.elapsed().as_secs_f64();
        let (dtz_secs, dtm50_secs) = rayon::join(
            || {
                let start = Instant::now();
                solve(l, members, base, &counter, &exit_dtz, (&mut dtz, 0));
                start.elapsed().as_secs_f64()
            },
            || {
                let start = Instant::now();
                dtm50::solve_layer(l, prepared, &mut scratch, &mut dtm50);
                start.elapsed().as_secs_f64()
            },
        );
        secs.dtz += dtz_secs;
        secs.dtm50 += prepare_secs + dtm50_secs;
        if !dtm_from_dtm50(members, base, &dtz, &dtm50, &mut dtm_layer, dtm_limit_plies) {
            // A win or loss beyond 100 plies, or one the 50-move rule turns
            // into a draw: solve DTM the long way, its exits found again
            // (the mate exits were by DTM50).
            let exits = Exits { base, counter: &mut counter, dtz: &mut exit_dtz, mate: &mut exit_mate };
            exits_pass(l, (&dtz, &solved_dtm, &dtm50), lookup, Mate::Dtm, exits)?;
            for &idx in members {
                let j = idx as usize - base;
                dtm_layer[j] = terminal(exit_dtz[j]).unwrap_or(UNKNOWN);
            }
            solve(l, members, base, &counter, &exit_mate, (&mut dtm_layer, base));
            if let SolvedDtm::ReadOff { kept, .. } = &mut solved_dtm {
                kept[layer] = members
                    .iter()
                    .filter(|&&idx| dtm_read_off(dtz[idx as usize], dtm50.at_zero(idx as usize), dtm_limit_plies).is_none())
                    .map(|&idx| (idx, dtm_layer[idx as usize - base]))
                    .collect();
            }
        }
    }
    // The working memory goes before the whole table's DTM is written out.
    drop((counter, exit_dtz, exit_mate, dtm_layer, scratch));
    let mut dtm = match solved_dtm {
        SolvedDtm::Dense(v) => v,
        read_off => (0..l.size)
            .into_par_iter()
            .map(|i| if dtz[i] == ILLEGAL { ILLEGAL } else { read_off.get(i, &dtz, &dtm50) })
            .collect(),
    };
    for v in dtz.iter_mut().chain(dtm.iter_mut()) {
        if *v == ILLEGAL {
            *v = UNKNOWN;
        }
    }
    let start = Instant::now();
    // The analysis's scratch words (4 bytes per index of a layer) are gone:
    // room for as many 8-byte log entries again.
    let dtm50 = with_dtm50.then(|| dtm50.finish(span / 2));
    secs.dtm50 += start.elapsed().as_secs_f64();
    Ok(Generated { dtz, dtm, dtm50, legal_positions, secs })
}

/// DTM of the positions solved so far.
enum SolvedDtm {
    /// Without DTM50: one value per index.
    Dense(Vec<u16>),
    /// With DTM50, DTM is read off DTM50 at clock 0 wherever that gives it
    /// ([`dtm_read_off`]); only the other decided positions (mates beyond
    /// `limit_plies`, wins the 50-move rule draws at clock 0) keep their
    /// value, in `kept` by layer (`span` indexes each), ascending. Two
    /// bytes per index less while a table is generated.
    ReadOff { limit_plies: u16, span: usize, kept: Vec<Vec<(u32, u16)>> },
}

impl SolvedDtm {
    /// DTM of the solved legal position `i`; `dtz` and `at_zero` are its
    /// DTZ50'' and DTM50 at clock 0.
    #[inline]
    fn get(&self, i: usize, dtz: &[u16], at_zero: &dtm50::Builder) -> u16 {
        match self {
            SolvedDtm::Dense(v) => v[i],
            SolvedDtm::ReadOff { limit_plies, span, kept } => {
                dtm_read_off(dtz[i], at_zero.at_zero(i), *limit_plies).unwrap_or_else(|| {
                    let layer = &kept[i / span];
                    let k = layer.binary_search_by_key(&(i as u32), |&(idx, _)| idx).expect("DTM kept where DTM50 does not give it");
                    layer[k].1
                })
            }
        }
    }
}

/// DTM of a solved position from its DTZ50'' and its DTM50 at clock 0
/// (`z`), where they give it (see [`dtm_from_dtm50`]): a DTM50 mate within
/// `limit_plies` is the DTM mate, and a draw by DTZ50'' is a draw. `None`
/// for the other decided positions.
#[inline]
fn dtm_read_off(dtz: u16, z: u16, limit_plies: u16) -> Option<u16> {
    if (value::is_win(z) || value::is_loss(z)) && value::plies(z) <= limit_plies {
        Some(z)
    } else if value::is_win(dtz) || value::is_loss(dtz) {
        None
    } else {
        Some(DRAW)
    }
}

/// Which mate metric the exits pass finds the best zeroing move by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mate {
    /// DTM50 at clock 0 (the clock restarts after a zeroing move).
    Dtm50,
    Dtm,
}

/// What the exits pass writes, by index less `base` (the first of the layer).
struct Exits<'a> {
    base: usize,
    /// Non-zeroing moves, weighted by symmetry.
    counter: &'a mut [u8],
    /// The best zeroing move by DTZ50'' ([`UNKNOWN`] if none), or for a
    /// position without any move [`MATED`] or [`STALEMATED`].
    dtz: &'a mut [u16],
    /// The best zeroing move by the mate metric ([`UNKNOWN`] if none).
    mate: &'a mut [u16],
}

/// In [`Exits::dtz`]: a position without moves, mated or stalemated. Not
/// values (their kind bits are those of [`UNKNOWN`]).
const MATED: u16 = 2 << 2;
const STALEMATED: u16 = 3 << 2;

/// The value of a position without moves, from its exit marker.
#[inline]
fn terminal(exit_dtz: u16) -> Option<u16> {
    match exit_dtz {
        MATED => Some(value::loss(0)),
        STALEMATED => Some(DRAW),
        _ => None,
    }
}

/// Finds the legal positions of the layer starting at `out.base` and
/// resolves their moves that leave the layer, in parallel, from `solved`
/// (DTZ50'', DTM and DTM50 of later layers) and `lookup` (other tables),
/// into `out`. Illegal indexes get [`ILLEGAL`] in `out.dtz`.
fn exits_pass(
    l: &Layout,
    solved: (&[u16], &SolvedDtm, &dtm50::Builder),
    lookup: &Lookup,
    mate: Mate,
    out: Exits,
) -> Result<(), String> {
    use rayon::prelude::*;
    let (dtz, dtm, at_zero) = solved;
    // Each task owns one range of indexes of the three arrays.
    out.counter
        .par_chunks_mut(EXIT_CHUNK)
        .zip(out.dtz.par_chunks_mut(EXIT_CHUNK))
        .zip(out.mate.par_chunks_mut(EXIT_CHUNK))
        .enumerate()
        .try_for_each(|(c, ((counter, exit_dtz), exit_mate))| {
            let lo = out.base + c * EXIT_CHUNK;
            for j in 0..counter.len() {
                // Illegal: men on one square, a duplicate index, or the side
                // not to move in check (found by the move generation).
                let exit = match l.decode_placement((lo + j) as u32) {
                    Some(p) => exits_of(l, &p, dtz, dtm, at_zero, lookup)?,
                    None => None,
                };
                let Some(exit) = exit else {
                    exit_dtz[j] = ILLEGAL;
                    continue;
                };
                match exit {
                    Exit::Terminal(v) => {
                        counter[j] = 0;
                        exit_dtz[j] = if v == DRAW { STALEMATED } else { MATED };
                        exit_mate[j] = UNKNOWN;
                    }
                    Exit::Moves { moves, best } => {
                        counter[j] = moves;
                        exit_dtz[j] = best.dtz;
                        exit_mate[j] = match mate {
                            Mate::Dtm50 => best.dtm50,
                            Mate::Dtm => best.dtm,
                        };
                    }
                }
            }
            Ok(())
        })
}

/// Sets DTM of the layer `members` from DTM50 at clock 0 (`at_zero`), up
/// to `limit_plies` (at most 100), and tells whether that was enough. A
/// mate within 100 plies is as fast at clock 0 with the 50-move rule as
/// without: the clock cannot reach 100 first. Conversely DTM50 at clock 0 is never faster than DTM for the
/// winner (the rule only takes options from the winner) nor slower for the
/// loser (it only gives options to the loser), so a DTM50 value within 100
/// plies is the DTM value. Positions drawn at clock 0 but not drawn by
/// `dtz` (which ignores the rule), or decided in more than 100 plies, are
/// left to the full DTM analysis: then this answers false.
fn dtm_from_dtm50(
    members: &[u32],
    base: usize,
    dtz: &[u16],
    at_zero: &dtm50::Builder,
    dtm: &mut [u16],
    limit_plies: u16,
) -> bool {
    debug_assert!(limit_plies <= 100);
    let mut enough = true;
    for &idx in members {
        let i = idx as usize;
        let z = at_zero.at_zero(i);
        match dtm_read_off(dtz[i], z, limit_plies) {
            Some(v) => {
                debug_assert!(v == DRAW || value::is_win(v) == value::is_win(dtz[i]));
                dtm[i - base] = v;
            }
            // Left UNKNOWN: the full analysis sets it.
            None => enough = false,
        }
    }
    enough
}

/// The exits of `p`: its moves out of the layer resolved from `dtz`, `dtm`
/// and `at_zero` (later layers, already solved) or `lookup` (other tables).
/// `None` if `p` is illegal (the side not to move in check).
fn exits_of(
    l: &Layout,
    p: &Pos,
    dtz: &[u16],
    dtm: &SolvedDtm,
    at_zero: &dtm50::Builder,
    lookup: &Lookup,
) -> Result<Option<Exit>, String> {
    let mut zeroing = false;
    let mut best = Values { dtz: UNKNOWN, dtm: UNKNOWN, dtm50: UNKNOWN };
    let mut err = None;
    let Some(weight) = for_each_zeroing_move(l, p, |s| {
        zeroing = true;
        let child = match s {
            Succ::Quiet => unreachable!("non-zeroing moves are counted"),
            Succ::Push { sq, double } => {
                let c = Pos { sq, turn: !p.turn };
                let ci = l.index(&c) as usize;
                let v = Values { dtz: dtz[ci], dtm: dtm.get(ci, dtz, at_zero), dtm50: at_zero.at_zero(ci) };
                if double {
                    match with_en_passant(l, &c, v, lookup) {
                        Ok(v) => v,
                        Err(e) => {
                            err = Some(e);
                            return;
                        }
                    }
                } else {
                    v
                }
            }
            Succ::Exit(b) => match lookup(&b) {
                Ok(v) => v,
                Err(e) => {
                    err = Some(e);
                    return;
                }
            },
        };
        best = best.better(child.back_zeroing());
    }) else {
        return Ok(None);
    };
    if let Some(e) = err {
        return Err(e);
    }
    if !zeroing && weight == 0 {
        return Ok(Some(Exit::Terminal(if l.in_check(&p.sq, p.turn) { value::loss(0) } else { DRAW })));
    }
    let symmetric = l.symmetry_count(&p.sq);
    debug_assert_eq!(weight % symmetric, 0);
    Ok(Some(Exit::Moves { moves: (weight / symmetric) as u8, best }))
}

/// The value of `c`, just after a double pawn push, if the opponent may
/// capture en passant: the better of the table value (without that right)
/// and the en-passant captures.
fn with_en_passant(l: &Layout, c: &Pos, table: Values, lookup: &Lookup) -> Result<Values, String> {
    let them = c.turn;
    let pushed = !them;
    let Some(pi) = (0..l.n).find(|&i| {
        l.men[i] == (pushed, Role::Pawn) && c.sq[i] >> 3 == pushed.fold_wb(3, 4)
    }) else {
        return Ok(table);
    };
    let to = c.sq[pi];
    let skipped = (to as i32 + pushed.fold_wb(-8, 8)) as u8;
    let mut best: Option<Values> = None;
    for j in 0..l.n {
        let s = c.sq[j];
        if l.men[j] != (them, Role::Pawn) || s >> 3 != to >> 3 || (s & 7).abs_diff(to & 7) != 1 {
            continue;
        }
        let mut after = c.sq;
        after[j] = skipped;
        after[pi] = NONE;
        if l.in_check(&after, them) {
            continue;
        }
        let v = lookup(&board(l, &after, pushed, None))?.back_zeroing();
        best = Some(best.map_or(v, |b| b.better(v)));
    }
    let Some(ep) = best else { return Ok(table) };
    let mut has_other_moves = false;
    for_each_move(l, c, |_| has_other_moves = true);
    Ok(if has_other_moves { table.better(ep) } else { ep })
}

/// While [`solve`] runs: an undecided position waiting for `c` more of its
/// non-zeroing moves to be known to reach won positions, kept in its value
/// word (kind bits of [`UNKNOWN`], above the markers) so that an un-move
/// touches one word, not a value and a counter.
const PENDING: u16 = 4 << 2;

#[inline]
const fn pending(c: u8) -> u16 {
    PENDING + ((c as u16) << 2)
}

#[inline]
const fn is_pending(v: u16) -> bool {
    v & 3 == UNKNOWN && v >= PENDING
}

/// Solves one layer for one metric. `exit` holds each position's best move
/// out of the layer, `counter` its non-zeroing moves (its un-moves stay
/// inside the layer), both by index less `base`; terminal positions are
/// already set in `values` (by index less its second member), illegal ones
/// are [`ILLEGAL`], the others [`UNKNOWN`].
fn solve(l: &Layout, members: &[u32], base: usize, counter: &[u8], exit: &[u16], values: (&mut [u16], usize)) {
    let (values, values_base) = values;
    // buckets[n]: positions decided at n plies, with their value; the high
    // bit marks entries whose value is already stored.
    const STORED: u32 = 1 << 31;
    let mut buckets: Vec<Vec<(u32, u16)>> = vec![Vec::new(); 2];
    let push = |buckets: &mut Vec<Vec<(u32, u16)>>, n: usize, e: (u32, u16)| {
        if buckets.len() <= n {
            buckets.resize_with(n + 1, Vec::new);
        }
        buckets[n].push(e);
    };
    for &idx in members {
        let i = idx as usize;
        if values[i - values_base] != UNKNOWN {
            if value::is_loss(values[i - values_base]) {
                push(&mut buckets, 0, (idx | STORED, values[i - values_base]));
            }
            continue;
        }
        let (e, c) = (exit[i - base], counter[i - base]);
        values[i - values_base] = pending(c);
        if value::is_win(e) {
            push(&mut buckets, value::plies(e) as usize, (idx, e));
        } else if c == 0 {
            if value::is_loss(e) {
                push(&mut buckets, value::plies(e) as usize, (idx, e));
            } else {
                values[i - values_base] = DRAW;
            }
        }
    }
    let mut scratch = Vec::new();
    let mut n = 0;
    while n < buckets.len() {
        let mut bucket = std::mem::take(&mut buckets[n]);
        let next = n + 1;
        // Store every value decided at n before propagating any of them, or
        // a win at n + 1 found here could shadow an exit win at n.
        bucket.retain(|&(e, v)| {
            let i = (e & !STORED) as usize;
            if e & STORED != 0 {
                return true;
            }
            if !is_pending(values[i - values_base]) {
                return false;
            }
            values[i - values_base] = v;
            true
        });
        // In index order, the predecessors of neighbouring entries are
        // neighbours too: far fewer cache and TLB misses than in the order
        // they were found.
        radix::sort_by_index(&mut bucket, &mut scratch, base..base + counter.len(), |&(e, _)| e & !STORED);
        let values_at = values.as_ptr();
        let ahead = |qi: usize| prefetch(values_at.wrapping_add(qi.wrapping_sub(values_base)));
        for_each_neighbour_prefetched(l, Neighbours::Unmoves, bucket, |(e, _)| e & !STORED, ahead, |(_, v), preds| {
            let lost = value::is_loss(v);
            let mut found: ArrayVec<(u32, u16), 128> = ArrayVec::new();
            let mut later: Vec<(usize, (u32, u16))> = Vec::new();
            // Un-moves reach legal positions only; those decided already
            // (or stalemated) are not pending.
            for &qi in preds {
                let qi = qi as usize;
                let w = &mut values[qi - values_base];
                if !is_pending(*w) {
                    continue;
                }
                if lost {
                    *w = value::win(next as u16);
                    found.push((qi as u32 | STORED, *w));
                    continue;
                }
                assert!(*w > PENDING, "move counter in step with un-moves");
                *w -= 1 << 2;
                if *w > PENDING {
                    continue;
                }
                let e = exit[qi - base];
                if value::is_loss(e) && value::plies(e) as usize > next {
                    later.push((value::plies(e) as usize, (qi as u32, e)));
                } else if e == UNKNOWN || value::is_loss(e) {
                    *w = value::loss(next as u16);
                    found.push((qi as u32 | STORED, *w));
                } else if e == DRAW {
                    *w = DRAW;
                }
                // A win out of the layer is already waiting in its bucket.
            }
            for &e in &found {
                push(&mut buckets, next, e);
            }
            for &(m, e) in &later {
                push(&mut buckets, m, e);
            }
        });
        n += 1;
    }
    for &idx in members {
        if is_pending(values[idx as usize - values_base]) {
            values[idx as usize - values_base] = DRAW;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::{Material, dtm50::Dtm50View};
    use shakmaty::Color;

    fn layout(name: &str) -> Layout {
        Layout::new(&Material::parse(name).unwrap().canonical())
    }

    /// DTM read off DTM50 equals DTM solved on its own, and the full DTM
    /// analysis that takes over where DTM50 is not enough (forced here by a
    /// lower limit: at the real limit no 3–4-piece table needs it) gives
    /// the same values too, with the other metrics untouched. KPvK has six
    /// layers; its promotions are looked up in KQvK and KRvK generated here
    /// (a minor piece and a king draw, and so do bare kings).
    #[test]
    fn dtm_read_off_dtm50_equals_dtm_solved_on_its_own() {
        let never = AtomicBool::new(false);
        let draws = |_: &Board| Ok(Values::DRAW);
        let (kq, kr) = (layout("KQvK"), layout("KRvK"));
        let (q, r) = (generate(&kq, &draws, true, &never).unwrap(), generate(&kr, &draws, true, &never).unwrap());
        let promotions = |b: &Board| -> Result<Values, String> {
            let (l, g) = match b.men.iter().map(|m| m.1).collect::<Vec<_>>()[..] {
                [_, _, Role::Queen] => (&kq, &q),
                [_, _, Role::Rook] => (&kr, &r),
                _ => return Ok(Values::DRAW),
            };
            assert!(b.men.iter().map(|m| m.0).eq([Color::White, Color::Black, Color::White]));
            let i = l.index(&Pos { sq: [b.men[0].2, b.men[1].2, b.men[2].2, NONE, NONE], turn: b.turn });
            Ok(Values { dtz: g.dtz[i as usize], dtm: g.dtm[i as usize], dtm50: g.dtm50.as_ref().unwrap().at_clock(i, 0) })
        };
        for (name, lookup) in [("KRvK", &draws as &Lookup), ("KQvK", &draws), ("KPvK", &promotions)] {
            let l = layout(name);
            let alone = generate(&l, lookup, false, &never).unwrap();
            let read_off = generate(&l, lookup, true, &never).unwrap();
            assert_eq!(read_off.dtm, alone.dtm, "{name}");
            assert_eq!(read_off.dtz, alone.dtz, "{name}");
            let decided = |v: u16| value::is_win(v) || value::is_loss(v);
            let all = alone.dtm.iter().filter(|&&v| decided(v)).count();
            let longer = alone.dtm.iter().filter(|&&v| decided(v) && value::plies(v) > 9).count();
            assert!(longer > 1000 && longer < all, "{name}: {longer} of {all} beyond 9 plies");
            for limit in [0, 9] {
                let full = generate_with(&l, lookup, true, &never, limit).unwrap();
                assert_eq!(full.dtm, alone.dtm, "{name}, limit {limit}");
                assert_eq!(full.dtz, alone.dtz, "{name}, limit {limit}");
                assert_eq!(full.dtm50, read_off.dtm50, "{name}, limit {limit}");
            }
        }
    }
}
