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
use rayon::prelude::*;
use shakmaty::Role;

use super::dtm50::{self, Dtm50Data, Dtm50Layer, Dtm50Slices, MemoryCheck};
use super::format;
use super::index::{Layout, NONE, Pos};
use super::memory::{Members, filled};
pub use super::moves::Board;
use super::moves::{
    Neighbours, Succ, board, for_each_move, for_each_neighbour_prefetched, for_each_quiet_child, for_each_zeroing_move,
    prefetch,
};
use super::radix;
use super::stash::BlockStash;
use super::stats::Tally;
use super::value::{self, DRAW, UNKNOWN};
use crate::GenerateError;

/// Values of one position, encoded as in [`super::value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Values {
    /// DTZ50'' (encoded as in [`tbformat::value`]).
    pub dtz: u16,
    /// DTM.
    pub dtm: u16,
    /// DTM50 at half-move clock 0 (just after a capture or pawn move).
    pub dtm50: u16,
}

impl Values {
    /// A draw in every metric.
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
    /// DTZ50'' by index.
    pub dtz: Vec<u16>,
    /// DTM by index.
    pub dtm: Vec<u16>,
    /// Absent when generated without DTM50.
    pub dtm50: Option<Dtm50Data>,
    /// Legal positions among the indexes.
    pub legal_positions: u64,
    /// Where the time went.
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
    /// Of `dtm50`, the time its work was shared between threads (after
    /// DTZ50'' was done).
    pub dtm50_shared: f64,
    /// Solving DTM the long way, where DTM50 at clock 0 does not give it
    /// (mates beyond 100 plies, wins the 50-move rule draws).
    pub dtm: f64,
    /// Handing each solved layer on: compressing its values into the
    /// file's blocks (and counting its statistics beside that).
    pub encode: f64,
    /// Turning the counted statistics into the table's and storing them
    /// beside it (set by the store).
    pub stats: f64,
}

impl std::ops::AddAssign for PhaseSecs {
    fn add_assign(&mut self, o: PhaseSecs) {
        self.exits += o.exits;
        self.dtz += o.dtz;
        self.dtm50 += o.dtm50;
        self.dtm50_shared += o.dtm50_shared;
        self.dtm += o.dtm;
        self.encode += o.encode;
        self.stats += o.stats;
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
/// Setting `cancel` stops the generation soon after, with an error.
/// The whole table's values are in memory at the end: for tests and
/// benchmarks; the store uses [`generate_blocks`].
pub fn generate(
    l: &Layout,
    lookup: &Lookup,
    with_dtm50: bool,
    cancel: &AtomicBool,
) -> Result<Generated, GenerateError> {
    generate_with(l, lookup, with_dtm50, cancel, Options::STANDARD)
}

/// How [`solve_layers`] goes about its work.
#[derive(Clone, Copy)]
struct Options<'a> {
    /// The longest mate DTM is read off DTM50 for (tests lower it to
    /// exercise the full DTM analysis).
    dtm_limit_plies: u16,
    sharing: Dtm50Threads,
    /// Called after each distance of DTM50's analysis: an error stops the
    /// generation.
    memory: &'a MemoryCheck<'a>,
}

impl Options<'_> {
    const STANDARD: Options<'static> =
        Options { dtm_limit_plies: DTM_FROM_DTM50_MAX_PLIES, sharing: Dtm50Threads::AfterDtz, memory: &|_| Ok(()) };
}

/// When DTM50's analysis shares its work lists between threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtm50Threads {
    /// Once DTZ50'', solved beside it, is done (and a thread would idle).
    AfterDtz,
    /// From its first distance on, lists of any length in small chunks,
    /// and never: tests compare the two.
    #[cfg(test)]
    FromStart,
    #[cfg(test)]
    Never,
}

/// The longest mate DTM is read off DTM50 for (see [`dtm_read_off`]).
const DTM_FROM_DTM50_MAX_PLIES: u16 = 100;

/// [`generate`] with other [`Options`].
fn generate_with(
    l: &Layout,
    lookup: &Lookup,
    with_dtm50: bool,
    cancel: &AtomicBool,
    options: Options,
) -> Result<Generated, GenerateError> {
    let (mut dtz, mut dtm) = (vec![UNKNOWN; l.size], vec![UNKNOWN; l.size]);
    let mut dtm50 = Vec::new();
    let (legal_positions, secs) = solve_layers(l, lookup, with_dtm50, cancel, options, |base, out| {
        dtz[base..base + out.dtz.len()].copy_from_slice(&out.dtz);
        dtm[base..base + out.dtm.len()].copy_from_slice(&out.dtm);
        dtm50.extend(out.dtm50.as_ref().map(|d| (base, d.to_data())));
    })?;
    let dtm50 = with_dtm50.then(|| Dtm50Data::concat(dtm50));
    Ok(Generated { dtz, dtm, dtm50, legal_positions, secs })
}

/// A table generated into its compressed blocks, ready to be written
/// ([`BlockStash::write_to`]).
pub struct GeneratedBlocks {
    /// Every block of the table.
    pub blocks: BlockStash,
    /// Indexes of the table.
    pub positions: usize,
    /// Whether the blocks hold DTM50.
    pub has_dtm50: bool,
    /// Legal positions among the indexes.
    pub legal_positions: u64,
    /// Where the time went.
    pub secs: PhaseSecs,
    /// The statistics' counts of every legal position.
    pub tally: Tally,
}

/// [`generate`] into compressed blocks, each layer's as soon as it is
/// solved: the values of a finished layer are then dropped, unless a layer
/// still to solve reads them (pawn pushes), so that a table with pawns
/// never holds all its layers' values at once. The blocks are the same as
/// those of the whole table's values: a block that a layer boundary cuts
/// (a pawn table's layers need not be whole blocks: KQQPvK's are 58.3 M
/// indexes) is put together once the layers on both sides are solved.
/// The blocks go to `blocks` (room for all of the table's, which may
/// spill them to disk) as they are made.
/// `memory` is called after each distance of DTM50's analysis with the
/// further segments found so far in the layer; its error stops the
/// generation (see [`super::budget::dtm50_memory_check`]).
pub fn generate_blocks(
    l: &Layout,
    lookup: &Lookup,
    with_dtm50: bool,
    compression: format::Compression,
    mut blocks: BlockStash,
    memory: &MemoryCheck<'_>,
    cancel: &AtomicBool,
) -> Result<GeneratedBlocks, GenerateError> {
    // Counted while it runs, so that DTM50 shares its work lists only when
    // a thread would otherwise idle (see `dtm50::GENERATING`).
    dtm50::GENERATING.fetch_add(1, Ordering::Relaxed);
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            dtm50::GENERATING.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let _done = Done;
    let mut tally = Tally::new(with_dtm50);
    let mut cut = CutBlocks { parts: Default::default(), compression };
    let options = Options { memory, ..Options::STANDARD };
    let (legal_positions, secs) = solve_layers(l, lookup, with_dtm50, cancel, options, |base, out| {
        let (whole, layer_tally) = rayon::join(
            || encode_whole_blocks(compression, base, &out.dtz, &out.dtm, out.dtm50.as_ref()),
            || tally_values(l, base, &out.dtz, &out.dtm, out.dtm50.as_ref(), with_dtm50),
        );
        for (b, e) in whole.into_iter().chain(cut.add_ends(l.size, base, out)) {
            blocks.put(b, e);
        }
        tally.add_tally(&layer_tally);
    })?;
    assert!(blocks.is_complete(), "every block made whole by its layers");
    Ok(GeneratedBlocks { blocks, positions: l.size, has_dtm50: with_dtm50, legal_positions, secs, tally })
}

/// The blocks that layer boundaries cut (a pawn table's layers need not be
/// a whole number of blocks): each layer's parts of them, kept until the
/// layers on the other side are solved too (layers are solved in pawn
/// order, not index order). At most two parts of a block per layer.
struct CutBlocks {
    /// By block, its parts solved so far, each with its first index.
    parts: std::collections::HashMap<usize, Vec<(usize, Part)>>,
    compression: format::Compression,
}

/// Some positions' values, DTM50 by position less the first.
struct Part {
    dtz: Vec<u16>,
    dtm: Vec<u16>,
    dtm50: Option<Dtm50Data>,
}

impl CutBlocks {
    /// Keeps the parts of cut blocks at either end of the layer at `base`,
    /// and returns the blocks this makes whole, encoded.
    fn add_ends(&mut self, size: usize, base: usize, out: &LayerValues) -> Vec<(usize, format::Encoded)> {
        const B: usize = format::BLOCK_POSITIONS;
        let end = base + out.dtz.len();
        let mut ends = Vec::with_capacity(2);
        ends.push(base..(base.next_multiple_of(B)).min(end));
        if !end.is_multiple_of(B) && end / B * B >= base.next_multiple_of(B) {
            ends.push(end / B * B..end);
        }
        let mut done = Vec::new();
        for range in ends.into_iter().filter(|r| !r.is_empty()) {
            let b = range.start / B;
            let block = b * B..((b + 1) * B).min(size);
            let parts = self.parts.entry(b).or_default();
            parts.push((range.start, Self::part(base, out, range)));
            if parts.iter().map(|(_, p)| p.dtz.len()).sum::<usize>() == block.len() {
                done.push((b, Self::encode(self.compression, self.parts.remove(&b).expect("just added"))));
            }
        }
        done
    }

    /// Positions `range` of the layer at `base`.
    fn part(base: usize, out: &LayerValues, range: std::ops::Range<usize>) -> Part {
        let local = range.start - base..range.end - base;
        Part {
            dtz: out.dtz[local.clone()].to_vec(),
            dtm: out.dtm[local.clone()].to_vec(),
            dtm50: out.dtm50.as_ref().map(|d| d.slice(local)),
        }
    }

    fn encode(compression: format::Compression, mut parts: Vec<(usize, Part)>) -> format::Encoded {
        parts.sort_by_key(|&(start, _)| start);
        let (mut dtz, mut dtm, mut dtm50): (Vec<u16>, Vec<u16>, Option<Dtm50Data>) = (Vec::new(), Vec::new(), None);
        for (_, p) in parts {
            dtz.extend(p.dtz);
            dtm.extend(p.dtm);
            if let Some(d) = p.dtm50 {
                dtm50.get_or_insert_with(Dtm50Data::default).append(d);
            }
        }
        format::encode_one(compression, &dtz, &dtm, dtm50.as_ref())
    }
}

/// The statistics' counts of the values of indexes `base..` (legal where
/// DTZ50'' is known; DTM50 by index less `base`).
fn tally_values<D: Dtm50Slices>(
    l: &Layout,
    base: usize,
    dtz: &[u16],
    dtm: &[u16],
    dtm50: Option<&D>,
    with_dtm50: bool,
) -> Tally {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 20;
    // Pieces of at least 16 chunks: a tally per piece takes 1.5 MB.
    (0..dtz.len().div_ceil(CHUNK))
        .into_par_iter()
        .with_min_len(16)
        .fold(
            || Tally::new(with_dtm50),
            |mut t, c| {
                for j in c * CHUNK..((c + 1) * CHUNK).min(dtz.len()) {
                    if dtz[j] != UNKNOWN {
                        let idx = (base + j) as u32;
                        t.add(idx, l.turn_of(idx), [dtz[j], dtm[j], dtm50.map_or(UNKNOWN, |d| d.at_zero(j))]);
                    }
                }
                t
            },
        )
        .reduce(
            || Tally::new(with_dtm50),
            |mut a, b| {
                a.add_tally(&b);
                a
            },
        )
}

/// The final values of one layer, by index less its first (illegal
/// indexes [`UNKNOWN`]).
struct LayerValues {
    dtz: Vec<u16>,
    dtm: Vec<u16>,
    /// Absent without DTM50.
    dtm50: Option<Dtm50Layer>,
}

/// What the exits of a layer read of the layers solved before it (those
/// its pawn pushes lead to): per layer, while a layer still to solve may
/// read it, DTZ50'', DTM and DTM50 at clock 0 ([`UNKNOWN`] without DTM50).
struct Solved {
    span: usize,
    layers: Vec<Option<[Vec<u16>; 3]>>,
}

impl Solved {
    /// The values of `i`, a legal position of a kept layer.
    #[inline]
    fn values(&self, i: usize) -> Values {
        let (layer, j) = (i / self.span, i % self.span);
        let [dtz, dtm, at_zero] =
            self.layers[layer].as_ref().expect("a layer is kept while a layer pushing into it is solved");
        Values { dtz: dtz[j], dtm: dtm[j], dtm50: at_zero.get(j).copied().unwrap_or(UNKNOWN) }
    }
}

/// By layer, the last layer (by its place in `order`) whose pawn pushes
/// lead into it: its values are kept until that one is solved.
fn last_readers(l: &Layout, order: &[usize]) -> Vec<Option<usize>> {
    let mut last_reader = vec![None; order.len()];
    for (t, &k) in order.iter().enumerate() {
        for c in l.pawn_push_layers(k) {
            last_reader[c] = Some(t);
        }
    }
    last_reader
}

/// The most solved layers [`generate_blocks`] keeps at once while it
/// solves a layer (the layers that layer and later ones push into): 0
/// without pawns, 2 with one pawn.
pub(crate) fn most_kept_layers(l: &Layout) -> usize {
    let order = l.layer_order();
    let last_reader = last_readers(l, &order);
    (0..order.len())
        .map(|t| order[..t].iter().filter(|&&c| last_reader[c].is_some_and(|r| r >= t)).count())
        .max()
        .unwrap_or(0)
}

/// Solves `l`'s layers in order, handing each one's final values to
/// `emit` (with its first index) as soon as it is done. Returns the legal
/// positions and where the time went.
fn solve_layers(
    l: &Layout,
    lookup: &Lookup,
    with_dtm50: bool,
    cancel: &AtomicBool,
    options: Options,
    mut emit: impl FnMut(usize, &LayerValues),
) -> Result<(u64, PhaseSecs), GenerateError> {
    let Options { dtm_limit_plies, sharing, memory } = options;
    let span = l.layer_span();
    let order = l.layer_order();
    let last_reader = last_readers(l, &order);
    let mut solved = Solved { span, layers: (0..order.len()).map(|_| None).collect() };
    let mut secs = PhaseSecs::default();
    let mut legal_positions = 0;
    let mate = if with_dtm50 { Mate::Dtm50 } else { Mate::Dtm };
    for (t, &layer) in order.iter().enumerate() {
        check(cancel)?;
        let base = layer * span;
        let start = Instant::now();
        // Working memory of one layer (indexes `base..base + span`): per
        // position its non-zeroing moves (read by each metric's analysis
        // as it sets up), and its best zeroing move by DTZ50'' and by the
        // mate metric (DTM50 at clock 0, or DTM; see `Mate`). Allocated per
        // layer, so that each array goes as soon as its last reader is done:
        // a table without pawns is one layer, whose solve is the peak.
        let mut counter = filled(span, 0u8);
        let mut exit_dtz = filled(span, 0u8);
        let mut exit_mate = filled(span, UNKNOWN);
        let exits = Exits { base, counter: &mut counter, dtz: &mut exit_dtz, mate: &mut exit_mate };
        exits_pass(l, &solved, lookup, mate, cancel, exits)?;
        // The layer's legal positions: those the exits pass found legal.
        let members = Members::new(base, span, |j| exit_dtz.at(j) != ILLEGAL);
        secs.exits += start.elapsed().as_secs_f64();
        legal_positions += members.len() as u64;
        // Illegal indexes are marked so that `solve` can skip un-moves into
        // them by the value it reads anyway, without testing for check.
        let mut dtz = filled(span, ILLEGAL);
        // Positions without moves have their value (their exit marker stays:
        // nothing reads the exit of a decided position); the others are
        // solved.
        let terminal_at = |j: usize| terminal(exit_dtz.at(j)).unwrap_or(UNKNOWN);
        for idx in members.iter() {
            let j = idx as usize - base;
            dtz[j] = terminal_at(j);
        }
        let (mut dtm, dtm50) = if !with_dtm50 {
            let mut dtm = dtz.clone();
            let start = Instant::now();
            rayon::join(
                || solve(l, &members, base, &counter, &exit_dtz[..], &mut dtz, cancel),
                || solve(l, &members, base, &counter, &exit_mate[..], &mut dtm, cancel),
            );
            secs.dtz += start.elapsed().as_secs_f64();
            check(cancel)?;
            (dtm, None)
        } else {
            // Both analyses copy the move counters into their own words as
            // they set up; then the counters go.
            let start = Instant::now();
            let mut builder = dtm50::Builder::new(base, span);
            let mut scratch = dtm50::Scratch::new(span);
            let ((buckets, setup_secs), prepared) = rayon::join(
                || {
                    let start = Instant::now();
                    (solve_setup(&members, base, &counter, &exit_dtz[..], &mut dtz), start.elapsed().as_secs_f64())
                },
                || dtm50::prepare_layer(&members, base, &counter, &exit_mate, terminal_at, &mut scratch, &mut builder),
            );
            drop(counter);
            let prepare_secs = start.elapsed().as_secs_f64() - setup_secs;
            // The DTZ50'' exits go as soon as DTZ50'' is solved, which is
            // well before DTM50 (whose work lists and segment log grow to
            // the layer's peak meanwhile).
            let mut exit_dtz = Some(exit_dtz);
            // DTM50 takes longer: once DTZ50'' is done, it shares its work
            // between threads rather than leave one idle.
            let dtm50_sharing = match sharing {
                Dtm50Threads::AfterDtz => dtm50::Sharing::long_lists(false),
                #[cfg(test)]
                Dtm50Threads::Never => dtm50::Sharing::long_lists(false),
                #[cfg(test)]
                Dtm50Threads::FromStart => dtm50::Sharing::eager(),
            };
            let (dtz_secs, (dtm50_secs, shared_secs)) = rayon::join(
                || {
                    let start = Instant::now();
                    let exit_dtz = exit_dtz.take().expect("the DTZ50'' exits");
                    solve_propagate(l, &members, base, &exit_dtz[..], &mut dtz, buckets, cancel);
                    drop(exit_dtz);
                    if sharing == Dtm50Threads::AfterDtz {
                        dtm50_sharing.on.store(true, Ordering::Relaxed);
                    }
                    setup_secs + start.elapsed().as_secs_f64()
                },
                || {
                    let start = Instant::now();
                    let shared =
                        dtm50::solve_layer(l, prepared, &mut scratch, &mut builder, &dtm50_sharing, memory, cancel);
                    (start.elapsed().as_secs_f64(), shared)
                },
            );
            drop(scratch);
            check(cancel)?;
            let shared_secs = shared_secs?;
            secs.dtz += dtz_secs;
            secs.dtm50 += prepare_secs + dtm50_secs;
            secs.dtm50_shared += shared_secs;
            drop(exit_mate);
            let start = Instant::now();
            // The analysis's words are gone: room for the first segments.
            let dtm50 = builder.finish(&members);
            secs.dtm50 += start.elapsed().as_secs_f64();
            // DTM: read off DTM50 at clock 0 where that gives it; the
            // positions it does not (mates beyond `dtm_limit_plies`) are
            // solved from the others.
            let mut dtm = filled(span, UNKNOWN);
            let mut beyond = Vec::new();
            for idx in members.iter() {
                let j = idx as usize - base;
                match dtm_read_off(dtz[j], dtm50.at_zero(j), dtm_limit_plies) {
                    Some(v) => dtm[j] = v,
                    None => beyond.push(idx),
                }
            }
            if !beyond.is_empty() {
                let start = Instant::now();
                let known = |i: usize| dtm[i - base];
                let wins = |i: usize| value::is_win(dtz[i - base]);
                let values = dtm_beyond(l, &solved, lookup, &beyond, known, wins, cancel)?;
                for (&idx, v) in beyond.iter().zip(values) {
                    dtm[idx as usize - base] = v;
                }
                secs.dtm += start.elapsed().as_secs_f64();
            }
            (dtm, Some(dtm50))
        };
        for v in dtz.iter_mut().chain(dtm.iter_mut()) {
            if *v == ILLEGAL {
                *v = UNKNOWN;
            }
        }
        let values = LayerValues { dtz, dtm, dtm50 };
        let start = Instant::now();
        emit(base, &values);
        secs.encode += start.elapsed().as_secs_f64();
        // Kept for the layers still to solve that push into this one.
        if last_reader[layer].is_some_and(|r| r > t) {
            let at_zero = values.dtm50.as_ref().map_or_else(Vec::new, |d| (0..d.len()).map(|j| d.at_zero(j)).collect());
            solved.layers[layer] = Some([values.dtz, values.dtm, at_zero]);
        }
        for (c, reader) in last_reader.iter().enumerate() {
            if *reader == Some(t) {
                solved.layers[c] = None;
            }
        }
    }
    Ok((legal_positions, secs))
}

/// DTM of a solved position from its DTZ50'' and its DTM50 at clock 0
/// (`z`), where they give it: a DTM50 mate within `limit_plies` (at most
/// 100) is the DTM mate, and a draw by DTZ50'' is a draw. `None` for the
/// other decided positions (a win or loss beyond 100 plies, or one the
/// 50-move rule turns into a draw), left to [`dtm_beyond`].
///
/// A mate within 100 plies is as fast at clock 0 with the 50-move rule as
/// without: the clock cannot reach 100 first. Conversely DTM50 at clock 0
/// is never faster than DTM for the winner (the rule only takes options
/// from the winner) nor slower for the loser (it only gives options to the
/// loser), so a DTM50 value within 100 plies is the DTM value.
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

/// DTM of the positions of a layer that DTM50 at clock 0 does not give
/// (`beyond`, ascending indexes): each is won or lost by DTZ50'' (`wins`
/// tells which) and mated in more plies than [`dtm_read_off`]'s limit;
/// every other position of the layer has its DTM (`known`), and the other
/// layers and tables theirs. A retrograde analysis over `beyond` alone:
/// each position's moves are generated forwards once (its best move out of
/// the layer, and its quiet moves to positions of `known` value or of
/// `beyond`), then the distances are settled in increasing order, as in a
/// shortest-path search: a win at the first distance one of its moves
/// loses at, a loss once every move into `beyond` is settled. Mates beyond
/// 100 plies are a few thousandths of a table (27,185 of KRBvKQ's 139 M
/// positions), so this replaces a second exits pass and a DTM analysis
/// of the whole layer.
fn dtm_beyond(
    l: &Layout,
    solved: &Solved,
    lookup: &Lookup,
    beyond: &[u32],
    known: impl Fn(usize) -> u16 + Sync,
    wins: impl Fn(usize) -> bool + Sync,
    cancel: &AtomicBool,
) -> Result<Vec<u16>, GenerateError> {
    use rayon::prelude::*;
    let slot = |i: usize| beyond.binary_search(&(i as u32)).ok();
    // Per position: the best value of its moves to known positions
    // (`best`), and the positions of `beyond` its quiet moves lead to
    // (`next[next_start[k]..next_start[k + 1]]`), in flat arrays: a few
    // bytes per position and move, however many positions there are.
    let chunks: Vec<(Vec<u16>, Vec<u32>, Vec<u32>)> = beyond
        .par_chunks(1 << 12)
        .map(|chunk| {
            check(cancel)?;
            let (mut best, mut next, mut moves) =
                (Vec::with_capacity(chunk.len()), Vec::new(), Vec::with_capacity(chunk.len()));
            for &idx in chunk {
                let p = l.decode_placement(idx).expect("a legal position");
                let mut b = match exits_of(l, &p, solved, lookup)? {
                    Some(Exit::Moves { best, .. }) => best.dtm,
                    _ => unreachable!("a position mated beyond the limit has moves"),
                };
                let first = next.len();
                for_each_quiet_child(l, &p, |c| match slot(c) {
                    Some(k) => next.push(k as u32),
                    None => b = value::better(b, value::back_one_ply(known(c))),
                });
                best.push(b);
                moves.push((next.len() - first) as u32);
            }
            Ok((best, next, moves))
        })
        .collect::<Result<_, GenerateError>>()?;
    let (mut best, mut next, mut next_start) = (Vec::with_capacity(beyond.len()), Vec::new(), vec![0u32]);
    for (b, n, moves) in chunks {
        best.extend(b);
        next.extend(n);
        for m in moves {
            next_start.push(next_start.last().expect("starts at 0") + m);
        }
    }
    let next_of = |k: usize| &next[next_start[k] as usize..next_start[k + 1] as usize];
    // The reverse edges, flat the same way, and per lost position the
    // moves into `beyond` not yet settled.
    let mut before_start = vec![0u32; beyond.len() + 1];
    for &c in &next {
        before_start[c as usize + 1] += 1;
    }
    for k in 0..beyond.len() {
        before_start[k + 1] += before_start[k];
    }
    let mut before = vec![0u32; next.len()];
    let mut fill = before_start.clone();
    for k in 0..beyond.len() {
        for &c in next_of(k) {
            before[fill[c as usize] as usize] = k as u32;
            fill[c as usize] += 1;
        }
    }
    drop(fill);
    let before_of = |k: usize| &before[before_start[k] as usize..before_start[k + 1] as usize];
    let mut unsettled: Vec<u32> = (0..beyond.len()).map(|k| next_start[k + 1] - next_start[k]).collect();
    let is_win: Vec<bool> = beyond.iter().map(|&idx| wins(idx as usize)).collect();
    let mut queue: std::collections::BTreeMap<u16, Vec<u32>> = Default::default();
    let enqueue = |queue: &mut std::collections::BTreeMap<u16, Vec<u32>>, plies: u16, k: usize| {
        queue.entry(plies).or_default().push(k as u32);
    };
    for (k, &b) in best.iter().enumerate() {
        // A win's best known move is a candidate; a loss waits for its
        // moves into `beyond` unless it has none.
        if (is_win[k] && value::is_win(b)) || (!is_win[k] && unsettled[k] == 0) {
            enqueue(&mut queue, value::plies(b), k);
        }
    }
    let mut values = vec![UNKNOWN; beyond.len()];
    while let Some((plies, ks)) = queue.pop_first() {
        check(cancel)?;
        for k in ks {
            let k = k as usize;
            if values[k] != UNKNOWN {
                continue;
            }
            values[k] = if is_win[k] { value::win(plies) } else { value::loss(plies) };
            for &q in before_of(k) {
                let q = q as usize;
                if values[q] != UNKNOWN {
                    continue;
                }
                if is_win[q] {
                    if !is_win[k] {
                        enqueue(&mut queue, plies + 1, q);
                    }
                } else {
                    // Settled in increasing order: the last is the longest.
                    unsettled[q] -= 1;
                    if unsettled[q] == 0 {
                        let own = best[q];
                        enqueue(
                            &mut queue,
                            (plies + 1).max(if value::is_loss(own) { value::plies(own) } else { 0 }),
                            q,
                        );
                    }
                }
            }
        }
    }
    assert!(values.iter().all(|&v| v != UNKNOWN), "every position decided by DTZ50'' has a DTM");
    Ok(values)
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
    /// position without any move [`MATED`] or [`STALEMATED`], coded by
    /// [`dtz_exit_code`].
    dtz: &'a mut [u8],
    /// The best zeroing move by the mate metric ([`UNKNOWN`] if none).
    mate: &'a mut [u16],
}

/// In [`Exits::dtz`]: a position without moves, mated or stalemated. Not
/// values (their kind bits are those of [`UNKNOWN`]).
const MATED: u16 = 2 << 2;
const STALEMATED: u16 = 3 << 2;

/// The best zeroing move by DTZ50'' of a position, in one byte: a zeroing
/// move restarts the count, so it is a win or loss in 1 or 101 plies
/// ([`value::back_zeroing`]), a draw or none; or a marker ([`ILLEGAL`],
/// [`MATED`], [`STALEMATED`]). A byte per index of the layer rather than a
/// whole value's two (242 MB less for KRBvKQ).
const DTZ_EXITS: [u16; 9] =
    [UNKNOWN, DRAW, value::win(1), value::win(101), value::loss(1), value::loss(101), ILLEGAL, MATED, STALEMATED];

#[inline]
fn dtz_exit_code(v: u16) -> u8 {
    DTZ_EXITS.iter().position(|&e| e == v).expect("a DTZ50'' exit is ±1 or ±101 plies, a draw, none or a marker") as u8
}

/// Best zeroing moves of a layer's positions, by index less its first.
trait ExitValues: Sync {
    fn at(&self, j: usize) -> u16;
}

impl ExitValues for [u16] {
    #[inline]
    fn at(&self, j: usize) -> u16 {
        self[j]
    }
}

/// By DTZ50'', coded by [`dtz_exit_code`].
impl ExitValues for [u8] {
    #[inline]
    fn at(&self, j: usize) -> u16 {
        DTZ_EXITS[self[j] as usize]
    }
}

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
    solved: &Solved,
    lookup: &Lookup,
    mate: Mate,
    cancel: &AtomicBool,
    out: Exits,
) -> Result<(), GenerateError> {
    use rayon::prelude::*;
    // Each task owns one range of indexes of the three arrays.
    out.counter
        .par_chunks_mut(EXIT_CHUNK)
        .zip(out.dtz.par_chunks_mut(EXIT_CHUNK))
        .zip(out.mate.par_chunks_mut(EXIT_CHUNK))
        .enumerate()
        .try_for_each(|(c, ((counter, exit_dtz), exit_mate))| {
            check(cancel)?;
            let lo = out.base + c * EXIT_CHUNK;
            for j in 0..counter.len() {
                // Illegal: men on one square, a duplicate index, or the side
                // not to move in check (found by the move generation).
                let exit = match l.decode_placement((lo + j) as u32) {
                    Some(p) => exits_of(l, &p, solved, lookup)?,
                    None => None,
                };
                let Some(exit) = exit else {
                    exit_dtz[j] = dtz_exit_code(ILLEGAL);
                    continue;
                };
                match exit {
                    Exit::Terminal(v) => {
                        counter[j] = 0;
                        exit_dtz[j] = dtz_exit_code(if v == DRAW { STALEMATED } else { MATED });
                        exit_mate[j] = UNKNOWN;
                    }
                    Exit::Moves { moves, best } => {
                        counter[j] = moves;
                        exit_dtz[j] = dtz_exit_code(best.dtz);
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

/// The exits of `p`: its moves out of the layer resolved from `solved`
/// (layers its pawn pushes lead to, already solved) or `lookup` (other
/// tables).
/// `None` if `p` is illegal (the side not to move in check).
fn exits_of(l: &Layout, p: &Pos, solved: &Solved, lookup: &Lookup) -> Result<Option<Exit>, GenerateError> {
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
                let v = solved.values(ci);
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
                    err = Some(GenerateError::Lookup(e));
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
    // 1 or 2: no division in the hot loop.
    Ok(Some(Exit::Moves { moves: (if symmetric == 2 { weight / 2 } else { weight }) as u8, best }))
}

/// The value of `c`, just after a double pawn push, if the opponent may
/// capture en passant: the better of the table value (without that right)
/// and the en-passant captures.
fn with_en_passant(l: &Layout, c: &Pos, table: Values, lookup: &Lookup) -> Result<Values, GenerateError> {
    let them = c.turn;
    let pushed = !them;
    let Some(pi) = (0..l.n).find(|&i| l.men[i] == (pushed, Role::Pawn) && c.sq[i] >> 3 == pushed.fold_wb(3, 4)) else {
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
        let v = lookup(&board(l, &after, pushed, None)).map_err(GenerateError::Lookup)?.back_zeroing();
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
/// already set in `values` (by index less `base` too), illegal ones are
/// [`ILLEGAL`], the others [`UNKNOWN`].
/// Returns early, the values unfinished, once `cancel` is set.
fn solve(
    l: &Layout,
    members: &Members,
    base: usize,
    counter: &[u8],
    exit: &(impl ExitValues + ?Sized),
    values: &mut [u16],
    cancel: &AtomicBool,
) {
    let buckets = solve_setup(members, base, counter, exit, values);
    solve_propagate(l, members, base, exit, values, buckets, cancel);
}

/// An error once `cancel` is set: checked between layers and, inside one,
/// between chunks of the exits pass and between the analyses' distances,
/// so that a shutdown does not wait for a whole 5-piece layer.
#[inline]
fn check(cancel: &AtomicBool) -> Result<(), GenerateError> {
    if cancel.load(Ordering::Relaxed) { Err(GenerateError::Cancelled) } else { Ok(()) }
}

/// Positions decided at each distance n, by index; the high bit
/// ([`STORED`]) marks entries whose value is already stored, the others'
/// value is their exit. Every value of bucket n is a win or a loss in n
/// plies. Four bytes per entry, not eight with the value: the first
/// buckets hold every position with a winning capture (58 million in
/// KRBvKQ), twice while they are sorted.
type Buckets = Vec<Vec<u32>>;
const STORED: u32 = 1 << 31;

#[inline]
fn push(buckets: &mut Buckets, n: usize, e: u32) {
    if buckets.len() <= n {
        buckets.resize_with(n + 1, Vec::new);
    }
    buckets[n].push(e);
}

/// The first part of [`solve`]: each undecided member's counter goes into
/// its value word, and the positions decided by their exits or by mate go
/// into their buckets. After it the counters are not read again.
fn solve_setup(
    members: &Members,
    base: usize,
    counter: &[u8],
    exit: &(impl ExitValues + ?Sized),
    values: &mut [u16],
) -> Buckets {
    let mut buckets: Buckets = vec![Vec::new(); 2];
    for idx in members.iter() {
        let i = idx as usize;
        if values[i - base] != UNKNOWN {
            if value::is_loss(values[i - base]) {
                push(&mut buckets, 0, idx | STORED);
            }
            continue;
        }
        let (e, c) = (exit.at(i - base), counter[i - base]);
        values[i - base] = pending(c);
        if value::is_win(e) {
            push(&mut buckets, value::plies(e) as usize, idx);
        } else if c == 0 {
            if value::is_loss(e) {
                push(&mut buckets, value::plies(e) as usize, idx);
            } else {
                values[i - base] = DRAW;
            }
        }
    }
    buckets
}

/// The rest of [`solve`], from the buckets [`solve_setup`] filled; the
/// layer's indexes are `base..base + values.len()`.
fn solve_propagate(
    l: &Layout,
    members: &Members,
    base: usize,
    exit: &(impl ExitValues + ?Sized),
    values: &mut [u16],
    mut buckets: Buckets,
    cancel: &AtomicBool,
) {
    let span = values.len();
    let mut scratch = Vec::new();
    let mut n = 0;
    while n < buckets.len() {
        if cancel.load(Ordering::Relaxed) {
            return;
        }
        let mut bucket = std::mem::take(&mut buckets[n]);
        let next = n + 1;
        // In index order, the predecessors of neighbouring entries are
        // neighbours too: far fewer cache and TLB misses than in the order
        // they were found.
        radix::sort_by_index(&mut bucket, &mut scratch, base..base + span, |&e| e & !STORED);
        // The scratch of a large bucket is not held through the rest.
        if scratch.capacity() > 2 * buckets.get(next).map_or(0, Vec::len) + (1 << 16) {
            scratch = Vec::new();
        }
        // Store every value decided at n before propagating any of them, or
        // a win at n + 1 found here could shadow an exit win at n.
        bucket.retain(|&e| {
            let i = (e & !STORED) as usize;
            if e & STORED != 0 {
                return true;
            }
            if !is_pending(values[i - base]) {
                return false;
            }
            values[i - base] = exit.at(i - base);
            true
        });
        let values_at = values.as_ptr();
        let ahead = |qi: usize| prefetch(values_at.wrapping_add(qi.wrapping_sub(base)));
        for_each_neighbour_prefetched(
            l,
            Neighbours::Unmoves,
            bucket,
            |e| e & !STORED,
            ahead,
            |e, preds| {
                let lost = value::is_loss(values[(e & !STORED) as usize - base]);
                let mut found: ArrayVec<u32, 128> = ArrayVec::new();
                let mut later: Vec<(usize, u32)> = Vec::new();
                // Un-moves reach legal positions only; those decided already
                // (or stalemated) are not pending.
                for &qi in preds {
                    let qi = qi as usize;
                    let w = &mut values[qi - base];
                    if !is_pending(*w) {
                        continue;
                    }
                    if lost {
                        *w = value::win(next as u16);
                        found.push(qi as u32 | STORED);
                        continue;
                    }
                    assert!(*w > PENDING, "move counter in step with un-moves");
                    *w -= 1 << 2;
                    if *w > PENDING {
                        continue;
                    }
                    let e = exit.at(qi - base);
                    if value::is_loss(e) && value::plies(e) as usize > next {
                        later.push((value::plies(e) as usize, qi as u32));
                    } else if e == UNKNOWN || value::is_loss(e) {
                        *w = value::loss(next as u16);
                        found.push(qi as u32 | STORED);
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
            },
        );
        n += 1;
    }
    for idx in members.iter() {
        if is_pending(values[idx as usize - base]) {
            values[idx as usize - base] = DRAW;
        }
    }
}

/// The blocks that lie wholly in indexes `first..first + dtz.len()`
/// (values by index less `first`, e.g. one layer of a table), each with
/// its number, compressed in parallel; the parts of blocks that either end
/// cuts are left to the caller ([`format::encode_one`] once they are whole).
fn encode_whole_blocks<D: Dtm50Slices>(
    compression: format::Compression,
    first: usize,
    dtz: &[u16],
    dtm: &[u16],
    dtm50: Option<&D>,
) -> Vec<(usize, format::Encoded)> {
    let end = first + dtz.len();
    (first.div_ceil(format::BLOCK_POSITIONS)..end / format::BLOCK_POSITIONS)
        .into_par_iter()
        .map(|b| {
            (
                b,
                format::encode_block(
                    compression,
                    dtz,
                    dtm,
                    dtm50,
                    b * format::BLOCK_POSITIONS - first..(b + 1) * format::BLOCK_POSITIONS - first,
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::Color;
    use tbformat::{Material, dtm50::Dtm50View};

    fn layout(name: &str) -> Layout {
        Layout::new(&Material::parse(name).unwrap().canonical())
    }

    /// A cancel set in the middle of a layer (KQvKR is one) stops the
    /// generation there with an error: the exits pass starts no chunk
    /// after it, so only a small share of the lookups a whole pass makes
    /// happen. The cancel is set by the first lookup, which makes the test
    /// independent of timing.
    #[test]
    fn a_cancel_stops_a_layer_in_its_middle() {
        use std::sync::atomic::AtomicUsize;
        let l = layout("KQvKR");
        let lookups = |cancel: Option<&AtomicBool>| {
            let (flag, calls) = (AtomicBool::new(false), AtomicUsize::new(0));
            let lookup = |_: &Board| {
                calls.fetch_add(1, Ordering::Relaxed);
                if let Some(c) = cancel {
                    c.store(true, Ordering::Relaxed);
                }
                Ok(Values::DRAW)
            };
            let result = generate(&l, &lookup, true, cancel.unwrap_or(&flag)).map(|g| g.legal_positions);
            (result, calls.load(Ordering::Relaxed))
        };
        let (whole, all_calls) = lookups(None);
        assert!(whole.is_ok());
        let cancel = AtomicBool::new(false);
        let (cancelled, calls) = lookups(Some(&cancel));
        assert_eq!(cancelled, Err(GenerateError::Cancelled));
        assert!(calls * 20 < all_calls, "{calls} of {all_calls} lookups after a cancel at the first");
    }

    /// KQvK and KRvK generated here (their captures leave bare kings), for
    /// the lookups of tables that capture or promote into them.
    struct KqkrSubtables {
        kq: (Layout, Generated),
        kr: (Layout, Generated),
    }

    impl KqkrSubtables {
        fn new() -> KqkrSubtables {
            let never = AtomicBool::new(false);
            let draws = |_: &Board| Ok(Values::DRAW);
            let solved = |name: &str| {
                let l = layout(name);
                let g = generate(&l, &draws, true, &never).unwrap();
                (l, g)
            };
            KqkrSubtables { kq: solved("KQvK"), kr: solved("KRvK") }
        }

        /// The values of `table`'s position with White's king, Black's king
        /// and White's piece on `sq`.
        fn at(table: &(Layout, Generated), sq: [u8; 3], turn: Color) -> Values {
            let (l, g) = table;
            let mut all = [NONE; crate::index::MAX_MEN];
            all[..3].copy_from_slice(&sq);
            let i = l.index(&Pos { sq: all, turn });
            Values { dtz: g.dtz[i as usize], dtm: g.dtm[i as usize], dtm50: g.dtm50.as_ref().unwrap().at_clock(i, 0) }
        }

        /// The values after a capture in KQvKR.
        fn capture(&self, b: &Board) -> Result<Values, String> {
            // Black's rook alone against the king is White's KRvK with
            // colours and ranks swapped.
            let (table, sq, turn) = match b.men[..] {
                [(Color::White, Role::King, wk), (Color::Black, Role::King, bk), (Color::White, Role::Queen, x)] => {
                    (&self.kq, [wk, bk, x], b.turn)
                }
                [(Color::White, Role::King, wk), (Color::Black, Role::King, bk), (Color::Black, Role::Rook, x)] => {
                    (&self.kr, [bk ^ 56, wk ^ 56, x ^ 56], b.turn.other())
                }
                _ => panic!("a capture in KQvKR leaves KQvK or KvKR"),
            };
            Ok(Self::at(table, sq, turn))
        }
    }

    /// DTM50's analysis gives the same segments whether its work lists are
    /// shared between threads from the start or never: a position's words
    /// may then be changed by two threads at once. KQvKR is one layer of
    /// 3.8 million indexes; its captures are looked up in KQvK and KRvK
    /// generated here, so that mates through a capture give positions
    /// several segments.
    #[test]
    fn dtm50_shared_between_threads_equals_dtm50_solved_by_one() {
        let never = AtomicBool::new(false);
        let subtables = KqkrSubtables::new();
        let captures = |b: &Board| subtables.capture(b);
        let l = layout("KQvKR");
        let one =
            generate_with(&l, &captures, true, &never, Options { sharing: Dtm50Threads::Never, ..Options::STANDARD })
                .unwrap();
        let shared = generate_with(
            &l,
            &captures,
            true,
            &never,
            Options { sharing: Dtm50Threads::FromStart, ..Options::STANDARD },
        )
        .unwrap();
        assert_eq!(one.secs.dtm50_shared, 0.0);
        assert!(shared.secs.dtm50_shared > 0.0, "no list was shared");
        let (a, b) = (one.dtm50.unwrap(), shared.dtm50.unwrap());
        assert!(a.segments.len() > 10_000, "{} further segments", a.segments.len());
        assert_eq!(a, b);
        assert_eq!(one.dtm, shared.dtm);
        assert_eq!(one.dtz, shared.dtz);
    }

    /// A pawn table's layers need not be whole blocks (KPvK's are 28,896
    /// indexes, its blocks 8,192): the blocks they cut are put together
    /// from both layers' parts, and the file made layer by layer is the
    /// file of the whole table encoded at once, byte for byte. Promotions
    /// to a queen or rook are looked up in KQvK and KRvK generated here.
    #[test]
    fn blocks_cut_by_layers_equal_the_whole_table() {
        let never = AtomicBool::new(false);
        let sub = KqkrSubtables::new();
        let promotions = |b: &Board| match b.men[..] {
            [(Color::White, Role::King, wk), (Color::Black, Role::King, bk), (Color::White, Role::Queen, x)] => {
                Ok(KqkrSubtables::at(&sub.kq, [wk, bk, x], b.turn))
            }
            [(Color::White, Role::King, wk), (Color::Black, Role::King, bk), (Color::White, Role::Rook, x)] => {
                Ok(KqkrSubtables::at(&sub.kr, [wk, bk, x], b.turn))
            }
            _ => Ok(Values::DRAW),
        };
        let l = layout("KPvK");
        assert!(!l.layer_span().is_multiple_of(format::BLOCK_POSITIONS));
        let m = Material::parse("KPvK").unwrap();
        let whole = generate(&l, &promotions, true, &never).unwrap();
        let d = whole.dtm50.as_ref().unwrap();
        assert!(!d.segments.is_empty(), "no position with a second DTM50 segment");
        let expected = format::encode(&m, &whole.dtz, &whole.dtm, Some(d), whole.legal_positions);
        // Held in memory, and every block spilled to disk as it is made.
        let dir = std::env::temp_dir().join(format!("tbserver-layers-spill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let count = l.size.div_ceil(format::BLOCK_POSITIONS);
        for blocks in [BlockStash::in_memory(count), BlockStash::spilling(count, 0, dir.join("KPvK.blocks"))] {
            let mut by_layers =
                generate_blocks(&l, &promotions, true, format::Compression::Fast, blocks, &|_| Ok(()), &never).unwrap();
            let file = by_layers.blocks.assemble(&m, l.size, true, by_layers.legal_positions).unwrap();
            assert!(file == expected);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The memory check stops a generation whose DTM50 segments outgrow
    /// what it allows, with its error, in the middle of the layer: KQvKR
    /// (captures looked up as above) logs about 3 MB of segments, the
    /// check allows 200,000 bytes.
    #[test]
    fn a_memory_check_stops_dtm50_that_outgrows_it() {
        use std::sync::atomic::AtomicUsize;
        let never = AtomicBool::new(false);
        let subtables = KqkrSubtables::new();
        let captures = |b: &Board| subtables.capture(b);
        let (largest, calls) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let memory = |log_bytes: usize| {
            calls.fetch_add(1, Ordering::Relaxed);
            largest.fetch_max(log_bytes, Ordering::Relaxed);
            if log_bytes > 200_000 {
                Err(GenerateError::Lookup(format!("out of memory at {log_bytes}")))
            } else {
                Ok(())
            }
        };
        let l = layout("KQvKR");
        let result = generate_with(&l, &captures, true, &never, Options { memory: &memory, ..Options::STANDARD });
        let err = result.map(|g| g.legal_positions).unwrap_err();
        assert!(err.to_string().starts_with("out of memory at "), "{err}");
        let seen = largest.load(Ordering::Relaxed);
        assert!(seen > 200_000 && seen < 2_000_000, "stopped at {seen} bytes, of about 3 million");
        assert!(calls.load(Ordering::Relaxed) > 2);
    }

    /// DTM read off DTM50 equals DTM solved on its own, and the analysis
    /// of the positions beyond the limit that takes over where DTM50 is
    /// not enough ([`dtm_beyond`]; forced here by lower limits, 0 leaving
    /// it every decided position: at the real limit no 3–4-piece table
    /// needs it) gives the same values too, with the other metrics
    /// untouched. KPvK has six
    /// layers; its promotions are looked up in KQvK and KRvK generated here
    /// (a minor piece and a king draw, and so do bare kings).
    #[test]
    fn dtm_read_off_dtm50_equals_dtm_solved_on_its_own() {
        let never = AtomicBool::new(false);
        let draws = |_: &Board| Ok(Values::DRAW);
        let subtables = KqkrSubtables::new();
        let promotions = |b: &Board| -> Result<Values, String> {
            let table = match b.men.iter().map(|m| m.1).collect::<Vec<_>>()[..] {
                [_, _, Role::Queen] => &subtables.kq,
                [_, _, Role::Rook] => &subtables.kr,
                _ => return Ok(Values::DRAW),
            };
            assert!(b.men.iter().map(|m| m.0).eq([Color::White, Color::Black, Color::White]));
            Ok(KqkrSubtables::at(table, [b.men[0].2, b.men[1].2, b.men[2].2], b.turn))
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
                let full =
                    generate_with(&l, lookup, true, &never, Options { dtm_limit_plies: limit, ..Options::STANDARD })
                        .unwrap();
                assert_eq!(full.dtm, alone.dtm, "{name}, limit {limit}");
                assert_eq!(full.dtz, alone.dtz, "{name}, limit {limit}");
                assert_eq!(full.dtm50, read_off.dtm50, "{name}, limit {limit}");
            }
        }
    }
}
