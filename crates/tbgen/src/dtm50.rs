//! DTM50: the fastest mate the 50-move rule allows, at every half-move clock.
//!
//! For a position and a distance `n`, the clocks at which the side to move
//! wins within `n` plies form a down-set `0..=t`: a lower clock never hurts
//! the winner, since every line that mates in time from a higher clock also
//! does from a lower one. The same holds for the clocks at which the side to
//! move is mated within `n` plies. So the analysis runs over distances like
//! DTM does, but keeps one number per position, the largest such clock, and
//! logs every increase as a [`Segment`]: DTM50 at clock `c` is the value of
//! the first segment whose `max_clock` is at least `c`, and a draw beyond the
//! last one. Most positions have one or two segments, not 100 values.
//!
//! Clock rules: a move may be played at clocks 0..=99; a capture or pawn move
//! resets the clock, any other move adds one. A mate delivered by the move
//! that brings the clock to 100 counts; at clock 100 anything else is a draw.

use std::{
    ops::Range,
    sync::atomic::{AtomicBool, AtomicI8, AtomicU32, AtomicUsize, Ordering},
};

use rayon::prelude::*;

use crate::GenerateError;
pub use tbformat::dtm50::{DRAW_CLOCK, Dtm50Data, Dtm50Slices, Dtm50View, LAST_MOVE_CLOCK, MORE, Segment};

use super::{
    change_points::ChangeLog,
    index::Layout,
    memory::{Members, filled},
    moves::{Neighbours, for_each_neighbour_prefetched, prefetch},
    radix,
    value::{self, DRAW, UNKNOWN},
};

/// Collects the segments of one layer while it is generated, in a compact
/// log: each position's first segment and the others alike (the analysis's
/// words for a layer of 242 million indexes take 924 MiB; keeping the
/// first segments in place as well would double that). Indexes are the
/// table's; the layer's start at `base`.
pub struct Builder {
    base: usize,
    span: usize,
    /// Segments, by index less `base`.
    log: ChangeLog,
}

impl Builder {
    /// A builder for the layer of `span` indexes from `base`.
    pub fn new(base: usize, span: usize) -> Builder {
        Builder { base, span, log: ChangeLog::new() }
    }

    /// Logs a segment of `value` for each position of `found` (by
    /// ascending index, each once), up to its clock.
    fn record_run(&mut self, value: u16, found: impl IntoIterator<Item = (u32, i8)>) {
        let base = self.base;
        let points = found
            .into_iter()
            .map(|(idx, max_clock)| ((idx as usize - base) as u32, max_clock.min(LAST_MOVE_CLOCK as i8) as u8));
        self.log.push_run(value, points);
    }

    /// Memory the segments found so far take, in bytes.
    pub(crate) fn log_bytes(&self) -> usize {
        self.log.heap_bytes()
    }

    /// The layer's segments; `members` are the layer's legal positions,
    /// those of them without a segment drawn at every clock.
    pub(crate) fn finish(self, members: &Members) -> Dtm50Layer {
        let mut inline = filled(self.span, UNKNOWN as u32);
        for idx in members.iter() {
            inline[idx as usize - self.base] = DRAW as u32;
        }
        // The log has a position's segments in the order they were found:
        // the first in place, [`MORE`] for the others.
        self.log.for_each_in(0..self.span as u32, |j, value, max_clock| {
            let w = &mut inline[j as usize];
            if *w == DRAW as u32 {
                *w = Segment { value, max_clock }.pack();
            } else {
                debug_assert_ne!(*w, UNKNOWN as u32, "segments of legal positions only");
                *w |= MORE;
            }
        });
        Dtm50Layer { inline, log: self.log }
    }
}

/// DTM50 of one solved layer, by index less its first: each position's
/// first segment in place (with [`MORE`] if it has others), and all its
/// segments in the compact log they were found in. Cut into [`Dtm50Data`]
/// a block at a time, so that the layer's segments are never held
/// uncompressed at once.
pub(crate) struct Dtm50Layer {
    inline: Vec<u32>,
    log: ChangeLog,
}

impl Dtm50Slices for Dtm50Layer {
    fn firsts(&self) -> &[u32] {
        &self.inline
    }

    fn slice(&self, range: Range<usize>) -> Dtm50Data {
        let lo = range.start as u32;
        let inline = &self.inline[range];
        // The segments of positions that have more than one: a position's
        // only segment is in place already.
        let mut found: Vec<(u32, u32)> = Vec::new();
        self.log.for_each_in(lo..lo + inline.len() as u32, |j, value, max_clock| {
            if inline[(j - lo) as usize] & MORE != 0 {
                found.push((j - lo, Segment { value, max_clock }.pack()));
            }
        });
        // Stable: a position's segments in the order they were found, which
        // is ascending distance and clock.
        found.sort_by_key(|&(j, _)| j);
        let mut d = Dtm50Data { inline: inline.to_vec(), ..Dtm50Data::default() };
        for (i, &(j, segment)) in found.iter().enumerate() {
            if i == 0 || found[i - 1].0 != j {
                // The first, in place.
                debug_assert_eq!(d.inline[j as usize] & !MORE, segment);
                continue;
            }
            // The second: the first in the overflow.
            if i < 2 || found[i - 2].0 != j {
                debug_assert_ne!(d.inline[j as usize] & MORE, 0);
                d.overflow_index.push(j);
                d.overflow_start.push(d.segments.len() as u32);
            }
            d.segments.push(segment);
        }
        d.overflow_start.push(d.segments.len() as u32);
        d
    }
}

impl Dtm50Layer {
    /// The whole layer's data (tests, and tables small enough to be
    /// generated whole).
    pub(crate) fn to_data(&self) -> Dtm50Data {
        self.slice(0..self.inline.len())
    }
}

/// Largest clock at which nothing is known yet.
const NONE_YET: i8 = -1;
/// A mated position: lost at every clock up to and including 100.
const MATED: i8 = DRAW_CLOCK as i8;

/// Per-position working state of the analysis, reused across layers: one
/// word per position, so that each un-move costs one random memory access
/// rather than one per array (the analysis is bound by those accesses).
pub(crate) struct Scratch {
    state: Vec<State>,
    /// Per lost position, the least clock of its predecessors in play when
    /// it was last un-moved ([`NOT_UNMOVED`] before that): their clocks
    /// never fall, so a later loss that cannot raise that one raises none,
    /// and need not un-move the position again: in tables of 4 pieces that
    /// spares many of the un-moves the losses reach.
    /// Empty for layers above [`LEAST_CLOCK_MAX_SPAN`].
    least_predecessor_clock: Vec<i8>,
}

/// In [`Scratch::least_predecessor_clock`]: never un-moved.
const NOT_UNMOVED: i8 = i8::MIN;

/// Largest layer that keeps [`Scratch::least_predecessor_clock`]: every
/// layer of 4 pieces and those of 5-piece pawn tables. A pawnless 5-piece
/// table is one layer of 335 million indexes or more, where the array's
/// byte per index adds to the peak memory and saves no time.
const LEAST_CLOCK_MAX_SPAN: usize = 64 << 20;

/// What a [`Scratch`] word holds, by bits: 0–7 the largest clock at which
/// the position is won (if it is won at all, without the 50-move rule) or
/// lost (if it is lost) within the current distance, as an `i8`
/// ([`NONE_YET`] exactly while it has no segment); 8–15 its
/// non-zeroing moves not yet known to reach a position won at some clock;
/// 16–29 when it was last queued (deduplication); 30 [`IN_PLAY`].
///
/// The word does not need to know whether a position is won or lost: only
/// a won position can have a move to a lost one, and only a lost one can
/// have all its moves reach won ones (or a loss as its best zeroing move,
/// with all others won). So the analysis can run beside the one that finds
/// out who wins, rather than after it.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct State(u32);

/// A legal position of the layer that has moves or is mated. Illegal
/// indexes and stalemates never have it, so un-moves ignore them.
const IN_PLAY: u32 = 1 << 30;
const STAMP_BITS: u32 = 14;

impl State {
    #[inline]
    fn thr(self) -> i8 {
        self.0 as u8 as i8
    }
    #[inline]
    fn set_thr(&mut self, t: i8) {
        self.0 = self.0 & !0xff | t as u8 as u32;
    }
    #[inline]
    fn counter(self) -> u8 {
        (self.0 >> 8) as u8
    }
    #[inline]
    fn stamped(self, stamp: u32) -> bool {
        (self.0 >> 16) & ((1 << STAMP_BITS) - 1) == stamp
    }
    #[inline]
    fn stamp(&mut self, stamp: u32) {
        self.0 = self.0 & !(((1 << STAMP_BITS) - 1) << 16) | stamp << 16;
    }
    #[inline]
    fn in_play(self) -> bool {
        self.0 & IN_PLAY != 0
    }
}

/// A word of the analysis. While another analysis runs beside this one,
/// one thread works on the words and changes them with plain loads and
/// stores. Once this one runs alone, a distance's long work lists are
/// shared between threads ([`Mode::Shared`]): then every change is an
/// atomic read-modify-write that touches only its own field. Within a
/// distance each field has one kind of change (move counters only fall,
/// clocks only rise, a stamp is set once), so any interleaving gives the
/// same words as one thread would.
#[derive(Clone, Copy)]
enum Mode {
    Alone,
    Shared,
}

#[inline]
fn load(a: &AtomicU32) -> State {
    State(a.load(Ordering::Relaxed))
}

/// Applies `f` to the word; the word before, if `f` changed it.
#[inline]
fn update(a: &AtomicU32, mode: Mode, f: impl Fn(State) -> Option<State>) -> Option<State> {
    match mode {
        // Atomic read-modify-writes cost more than the memory accesses
        // they replace: they keep the core from overlapping its misses.
        Mode::Alone => {
            let before = load(a);
            f(before).map(|s| {
                a.store(s.0, Ordering::Relaxed);
                before
            })
        }
        Mode::Shared => {
            a.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| f(State(w)).map(|s| s.0)).ok().map(State)
        }
    }
}

/// Takes one from the word's move counter; the word before.
#[inline]
fn decrement(a: &AtomicU32, mode: Mode) -> State {
    let before = match mode {
        Mode::Alone => {
            let w = a.load(Ordering::Relaxed);
            a.store(w.wrapping_sub(1 << 8), Ordering::Relaxed);
            State(w)
        }
        Mode::Shared => State(a.fetch_sub(1 << 8, Ordering::Relaxed)),
    };
    assert!(before.counter() > 0, "move counter in step with un-moves");
    before
}

/// Stamps the word with `stamp`; whether this call was the one that did.
#[inline]
fn stamp_once(a: &AtomicU32, mode: Mode, stamp: u32) -> bool {
    update(a, mode, |s| {
        (!s.stamped(stamp)).then(|| {
            let mut t = s;
            t.stamp(stamp);
            t
        })
    })
    .is_some()
}

/// Raises the word's clock to `clock` if that is higher, stamping it with
/// `stamp`; the clock it had before this distance if this call was its
/// first raise at this distance.
#[inline]
fn raise(a: &AtomicU32, mode: Mode, clock: i8, stamp: u32) -> Option<i8> {
    let before = update(a, mode, |s| raised(s, clock, stamp))?;
    (!before.stamped(stamp)).then(|| before.thr())
}

/// The word `s` with its clock raised to `clock` and stamped with `stamp`,
/// if `clock` is higher.
#[inline]
fn raised(s: State, clock: i8, stamp: u32) -> Option<State> {
    (clock > s.thr()).then(|| {
        let mut t = s;
        t.stamp(stamp);
        t.set_thr(clock);
        t
    })
}

/// Whether the analysis may go on, given the bytes its segments take so
/// far (see [`super::budget::dtm50_memory_check`]).
pub(crate) type MemoryCheck<'a> = dyn Fn(usize) -> Result<(), GenerateError> + Sync + 'a;

/// Tables being generated in this process (counted by
/// [`super::generate::generate_blocks`]): while there are as many as the
/// thread pool has threads, each keeps a thread busy, and a table's DTM50
/// sharing its work lists would only add atomic changes of words.
pub(crate) static GENERATING: AtomicUsize = AtomicUsize::new(0);

/// When a distance's work lists are shared between threads: once `on` is
/// set, those of at least `min_len` entries, in chunks of `chunk`; with
/// `when_idle`, only while fewer tables are being generated
/// ([`GENERATING`]) than the pool has threads.
pub(crate) struct Sharing {
    pub on: AtomicBool,
    min_len: usize,
    chunk: usize,
    when_idle: bool,
}

impl Sharing {
    /// Long lists only (most are short, and all of small tables'): a
    /// shorter one is not worth the tasks and the atomic changes of words.
    pub(crate) fn long_lists(on: bool) -> Sharing {
        Sharing { on: AtomicBool::new(on), min_len: 1 << 15, chunk: 1 << 13, when_idle: true }
    }

    /// Every list of more than a few entries, in small chunks: for tests of
    /// words changed by several threads at once.
    #[cfg(test)]
    pub(crate) fn eager() -> Sharing {
        Sharing { on: AtomicBool::new(true), min_len: 64, chunk: 32, when_idle: false }
    }

    /// Whether a list of `len` entries is shared now.
    fn shares(&self, len: usize) -> bool {
        len >= self.min_len
            && self.on.load(Ordering::Relaxed)
            && (!self.when_idle || GENERATING.load(Ordering::Relaxed) < rayon::current_num_threads())
    }

    /// `f` over `items` in chunks, in parallel when on and there are many
    /// (then with [`Mode::Shared`], the wall time added to `shared_secs`);
    /// what the chunks give, in the order of `items`.
    fn chunked<E: Sync, R: Send>(
        &self,
        items: &[E],
        shared_secs: &mut f64,
        f: impl Fn(&[E], Mode, &mut Vec<R>) + Sync,
    ) -> Vec<R> {
        if !self.shares(items.len()) {
            let mut out = Vec::new();
            f(items, Mode::Alone, &mut out);
            return out;
        }
        let start = std::time::Instant::now();
        let parts: Vec<Vec<R>> = items
            .par_chunks(self.chunk)
            .map(|c| {
                let mut out = Vec::new();
                f(c, Mode::Shared, &mut out);
                out
            })
            .collect();
        // Each part freed as soon as it is copied.
        let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for part in parts {
            out.extend(part);
        }
        *shared_secs += start.elapsed().as_secs_f64();
        out
    }
}

impl Scratch {
    /// Fresh words for one layer of `size` indexes (a layer's words are
    /// dropped after its solve, before anything else takes memory).
    pub fn new(size: usize) -> Scratch {
        let least = if size <= LEAST_CLOCK_MAX_SPAN { size } else { 0 };
        Scratch { state: filled(size, State(0)), least_predecessor_clock: filled(least, NOT_UNMOVED) }
    }
}

/// A layer ready to be solved: its members' working state is set up, and
/// the move counters it was set up from may be reused.
pub(crate) struct Prepared<'a> {
    /// The layer's first index: the scratch words and `exit` are by index
    /// less `base`.
    base: usize,
    exit: &'a [u16],
    /// Members by the distance of their winning (losing) best zeroing move.
    win_exits: Vec<Vec<u32>>,
    loss_exits: Vec<Vec<u32>>,
    /// The mated members.
    mated: Vec<(u32, i8)>,
}

/// Sets up one layer in a fresh `scratch`. `terminal` gives the value of
/// each member without moves (mated or stalemated), [`UNKNOWN`] for the
/// others; `exit` holds each position's best zeroing
/// move by DTM50 at clock 0 (one ply added), [`UNKNOWN`] if it has none;
/// `counter` its non-zeroing moves, weighted as for the other metrics
/// (copied into the working state). `terminal`, `exit`,
/// `counter` and the scratch words are by index less `base`, the layer's
/// first.
pub(crate) fn prepare_layer<'a>(
    members: &'a Members,
    base: usize,
    counter: &[u8],
    exit: &'a [u16],
    terminal: impl Fn(usize) -> u16,
    scratch: &mut Scratch,
    out: &mut Builder,
) -> Prepared<'a> {
    let state = &mut scratch.state[..];
    let mut p = Prepared { base, exit, win_exits: Vec::new(), loss_exits: Vec::new(), mated: Vec::new() };
    let at = |v: &mut Vec<Vec<u32>>, n: usize, idx: u32| {
        if v.len() <= n {
            v.resize_with(n + 1, Vec::new);
        }
        v[n].push(idx);
    };
    for idx in members.iter() {
        let j = idx as usize - base;
        let (t, e) = (terminal(j), exit[j]);
        let mut st = State(if t == DRAW { 0 } else { IN_PLAY } | (counter[j] as u32) << 8);
        st.set_thr(NONE_YET);
        if t == value::loss(0) {
            st.set_thr(MATED);
            p.mated.push((idx, MATED));
        } else if value::is_win(e) {
            at(&mut p.win_exits, value::plies(e) as usize, idx);
        } else if value::is_loss(e) {
            at(&mut p.loss_exits, value::plies(e) as usize, idx);
        }
        state[j] = st;
    }
    out.record_run(value::loss(0), p.mated.iter().copied());
    p
}

/// Solves a layer set up by [`prepare_layer`]; returns early, the layer
/// unfinished, once `cancel` is set. Once `sharing` is on (set when
/// nothing else runs beside it), each distance's long lists of un-moves and
/// loss tests are shared between threads (see [`Mode`]); what they find is
/// recorded in one thread. Returns the seconds spent on shared lists, or
/// the error `memory` gives (called after each distance with the bytes of
/// the segments found so far).
pub(crate) fn solve_layer(
    l: &Layout,
    prepared: Prepared,
    scratch: &mut Scratch,
    out: &mut Builder,
    sharing: &Sharing,
    memory: &MemoryCheck<'_>,
    cancel: &AtomicBool,
) -> Result<f64, GenerateError> {
    let Prepared { base, exit, mut win_exits, mut loss_exits, mated } = prepared;
    // SAFETY: `State` is a transparent `u32`, which has the size, alignment
    // and bit validity of `AtomicU32` (and `i8` those of `AtomicI8`); the
    // exclusive borrows are held for as long as the shared views live.
    let state: &[AtomicU32] = unsafe { &*(&mut scratch.state[..] as *mut [State] as *const [AtomicU32]) };
    let least: &[AtomicI8] = unsafe { &*(&mut scratch.least_predecessor_clock[..] as *mut [i8] as *const [AtomicI8]) };
    let word = |idx: u32| &state[idx as usize - base];
    // Losses found at the previous distance, with their new clock.
    let mut lost: Vec<(u32, i8)> = mated;
    // Wins found at the previous distance, with their clock before.
    let mut won: Vec<(u32, i8)> = Vec::new();

    // Whether `p`'s best zeroing move lets it be lost within `n` plies: it
    // has none, or it loses in time.
    let may_be_lost = |p: u32, n: usize| {
        let e = exit[p as usize - base];
        e == UNKNOWN || (value::is_loss(e) && value::plies(e) as usize <= n)
    };
    // An address, not a pointer, so that the closure can go to other threads.
    let at = state.as_ptr() as usize;
    let ahead = |qi: usize| prefetch(at.wrapping_add(qi.wrapping_sub(base).wrapping_mul(4)) as *const u32);

    let mut n = 1usize;
    let mut shared_secs = 0.0;
    let (mut pairs_scratch, mut index_scratch) = (Vec::new(), Vec::new());
    while !lost.is_empty() || !won.is_empty() || n < win_exits.len() || n < loss_exits.len() {
        if cancel.load(Ordering::Relaxed) {
            return Ok(shared_secs);
        }
        memory(out.log_bytes())?;
        assert!(2 * n + 1 < 1 << STAMP_BITS, "distance beyond the deduplication stamp");
        // A won position may be queued for the loss test too (and found not
        // lost): the two queues of a distance need their own stamps.
        let (loss_stamp, win_stamp) = (2 * n as u32, 2 * n as u32 + 1);
        // Walked in index order for memory locality, as in `generate::solve`.
        let layer = base..base + state.len();
        radix::sort_by_index(&mut won, &mut pairs_scratch, layer.clone(), |&(idx, _)| idx);
        radix::sort_by_index(&mut lost, &mut pairs_scratch, layer.clone(), |&(idx, _)| idx);
        // The wins of the previous distance, now in index order, as the log
        // takes them (their clocks have not changed since).
        if !won.is_empty() {
            out.record_run(value::win(n as u16 - 1), won.iter().map(|&(p, _)| (p, load(word(p)).thr())));
        }
        // Losses at n: positions whose replies changed at n - 1.
        let mut recompute: Vec<u32> = sharing.chunked(&won, &mut shared_secs, |chunk, mode, found| {
            for_each_neighbour_prefetched(
                l,
                Neighbours::Unmoves,
                chunk.iter().copied(),
                |(r, _)| r,
                ahead,
                |(r, t_old), preds| {
                    let t_new = load(word(r)).thr();
                    for &qi in preds {
                        let a = word(qi);
                        let q = load(a);
                        if !q.in_play() {
                            continue;
                        }
                        let again = if t_old <= 0 {
                            // This reply was drawn for the winner at every clock the
                            // loser can reach it with; now it is won at some.
                            if t_new < 1 {
                                continue;
                            }
                            decrement(a, mode).counter() == 1
                        } else {
                            // Only the tightest reply bounds the loser's clock.
                            q.counter() == 0 && t_old - 1 == q.thr()
                        };
                        if again && stamp_once(a, mode, loss_stamp) {
                            found.push(qi);
                        }
                    }
                },
            );
        });
        if let Some(v) = loss_exits.get_mut(n) {
            for idx in std::mem::take(v) {
                if load(word(idx)).counter() == 0 && stamp_once(word(idx), Mode::Alone, loss_stamp) {
                    recompute.push(idx);
                }
            }
        }
        // Each of them whose non-zeroing moves all reach positions won at
        // some clock ≥ 1 is lost within n plies up to the tightest of them.
        // Only these positions' clocks change here, and none of them is
        // another's child (those are won), so the tests are independent.
        recompute.retain(|&p| may_be_lost(p, n));
        radix::sort_by_index(&mut recompute, &mut index_scratch, layer, |&idx| idx);
        // Only its own test changes a position's word here (the list has
        // each position once): plain stores, whether shared or not.
        let lost_now: Vec<(u32, i8)> = sharing.chunked(&recompute, &mut shared_secs, |chunk, _mode, found| {
            for_each_neighbour_prefetched(
                l,
                Neighbours::QuietChildren,
                chunk.iter().copied(),
                |p| p,
                ahead,
                |p, children| {
                    let mut u = LAST_MOVE_CLOCK as i8;
                    for &qi in children {
                        // Children are legal positions, whose words are never
                        // empty; the test only guards against an index outside them.
                        let q = load(word(qi));
                        if q.0 != 0 {
                            u = u.min((q.thr() - 1).max(NONE_YET));
                        }
                    }
                    let w = load(word(p));
                    if u > w.thr() {
                        let mut t = w;
                        t.set_thr(u);
                        word(p).store(t.0, Ordering::Relaxed);
                        found.push((p, u));
                    }
                },
            );
        });
        // In index order, as `recompute` is.
        out.record_run(value::loss(n as u16), lost_now.iter().copied());

        // Wins at n: one move to a position lost at n - 1. A predecessor is
        // raised to the loss's clock less one.
        let raised_clock = |u: i8| (u - 1).min(LAST_MOVE_CLOCK as i8);
        if !least.is_empty() {
            lost.retain(|&(q, u)| raised_clock(u) > least[q as usize - base].load(Ordering::Relaxed));
        }
        let mut won_now: Vec<(u32, i8)> = sharing.chunked(&lost, &mut shared_secs, |chunk, mode, found| {
            for_each_neighbour_prefetched(
                l,
                Neighbours::Unmoves,
                chunk.iter().copied(),
                |(q, _)| q,
                ahead,
                |(q, u), preds| {
                    let clock = raised_clock(u);
                    let mut least_clock = i8::MAX;
                    for &pi in preds {
                        let a = word(pi);
                        let w = load(a);
                        if !w.in_play() {
                            continue;
                        }
                        if matches!(mode, Mode::Alone) {
                            // One read of the word: `raise` and the read after it
                            // in one.
                            if let Some(t) = raised(w, clock, win_stamp) {
                                a.store(t.0, Ordering::Relaxed);
                                if !w.stamped(win_stamp) {
                                    found.push((pi, w.thr()));
                                }
                            }
                            least_clock = least_clock.min(clock.max(w.thr()));
                            continue;
                        }
                        if let Some(before) = raise(a, mode, clock, win_stamp) {
                            found.push((pi, before));
                        }
                        // Read after the raise: at least `clock`, maybe more
                        // if another thread raised it too; a lower bound
                        // of its clock from now on either way.
                        least_clock = least_clock.min(load(a).thr());
                    }
                    if let Some(slot) = least.get(q as usize - base) {
                        slot.store(least_clock, Ordering::Relaxed);
                    }
                },
            );
        });
        if let Some(v) = win_exits.get_mut(n) {
            for idx in std::mem::take(v) {
                if let Some(before) = raise(word(idx), Mode::Alone, LAST_MOVE_CLOCK as i8, win_stamp) {
                    won_now.push((idx, before));
                }
            }
        }
        // Logged once sorted, at the next distance (there is one as long as
        // they are not empty).
        won = won_now;
        lost = lost_now;
        n += 1;
    }
    Ok(shared_secs)
}
