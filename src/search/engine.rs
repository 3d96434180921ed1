//! The alpha-beta core: iterative deepening PVS with a shared transposition
//! table, tablebase probes right after the TT probe, swindle draw scores and
//! the root guarantee.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use arrayvec::ArrayVec;

use shakmaty::san::San;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, Move, MoveList, Position, Role, Square};
use shakmaty_syzygy::{Dtz, MaybeRounded, Wdl};

use super::bounds::{self, MateSide, NoBound};
use super::tt::{BoundKind, Entry, ProbeCache, TranspositionTable};
use super::{Cancel, Limits, MoveText, Oracle, Score, ScoreBound, SearchOptions, SearchResult, StopReason};
use crate::domain::{Category, Dtz50};

pub(crate) const MATE: i32 = 30_000;
pub(crate) const INF: i32 = 31_000;
/// Scores beyond this are mate scores (mate within `MATE - MATE_IN_MAX` plies).
pub(crate) const MATE_IN_MAX: i32 = MATE - 1_000;
const MAX_PLY: usize = 128;
/// DTZ and DTM are probed only with at least this much depth left; nearer
/// the horizon the WDL range must do. A Syzygy DTZ probe costs about 30 WDL
/// probes (the table code searches a ply when the table stores the other
/// side to move), more than searching a shallow node costs. A lower limit
/// probes DTZ where it costs more than it saves; a higher one speeds
/// fixed-depth searches further but slows the proof of mates
/// (`benches/search.rs`, docs/performance.md).
const SLOW_PROBE_DEPTH: i32 = 2;
/// Whether a tablebase-sized node with `depth` plies left at half-move clock
/// `clock` is probed; quiescence nodes ask with depth 0. Above the horizon
/// always; at and beyond it only just after a capture or pawn move
/// (Stockfish's rule): after a quiet move the line stays in its parent's
/// table, whose own probe bounds it already.
#[inline]
fn probes_at(depth: i32, clock: u32) -> bool {
    depth > 0 || clock == 0
}

/// A probed draw is searched on (to improve its swindle score) at this depth.
const SWINDLE_SEARCH_DEPTH: i32 = 16;

/// Draw scores (`dtm50.md`, swindle rule).
const PLAIN_DRAW: (i32, i32) = (-34, 34);
const CURSED_WIN: (i32, i32) = (35, 69);
const BLESSED_LOSS: (i32, i32) = (-69, -35);

fn mate_in(ply: usize) -> i32 {
    MATE - ply as i32
}

fn mated_in(ply: usize) -> i32 {
    -MATE + ply as i32
}

fn to_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_IN_MAX {
        score + ply as i32
    } else if score <= -MATE_IN_MAX {
        score - ply as i32
    } else {
        score
    }
}

fn from_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_IN_MAX {
        score - ply as i32
    } else if score <= -MATE_IN_MAX {
        score + ply as i32
    } else {
        score
    }
}

pub(crate) fn pack_move(m: &Move) -> u16 {
    let from = m.from().map_or(0, |s| s as u16);
    let promo = m.promotion().map_or(0, |r| r as u16);
    from | ((m.to() as u16) << 6) | (promo << 12)
}

/// Distinct key per half-move clock value, mixed into the hash of
/// tablebase-sized positions so the TT never grafts a line across clocks.
fn clock_key(clock: u32) -> u64 {
    let mut z = u64::from(clock).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn piece_value(role: Role) -> i32 {
    match role {
        Role::Pawn => 100,
        Role::Knight => 310,
        Role::Bishop => 320,
        Role::Rook => 500,
        Role::Queen => 950,
        Role::King => 0,
    }
}

fn center_distance(sq: Square) -> i32 {
    let f = i32::from(u8::from(sq.file()));
    let r = i32::from(u8::from(sq.rank()));
    (2 * f - 7).abs().max((2 * r - 7).abs()) / 2
}

/// Material plus a mop-up term (drive the weaker king to the edge, bring the
/// stronger king close), from the side to move's view. Only guides move choice
/// and swindles; mate scores never depend on it.
fn evaluate(pos: &Chess) -> i32 {
    let board = pos.board();
    let mut white = 0;
    for (sq, piece) in board {
        let v = piece_value(piece.role)
            + if piece.role == Role::Pawn {
                let adv = if piece.color.is_white() { u8::from(sq.rank()) } else { 7 - u8::from(sq.rank()) };
                i32::from(adv) * 8
            } else {
                0
            };
        white += if piece.color.is_white() { v } else { -v };
    }
    if let (Some(wk), Some(bk)) = (board.king_of(Color::White), board.king_of(Color::Black)) {
        let dist = wk.distance(bk) as i32;
        let mop = |loser_king: Square| 10 * center_distance(loser_king) + 4 * (7 - dist);
        if white > 150 {
            white += mop(bk);
        } else if white < -150 {
            white -= mop(wk);
        }
    }
    if pos.turn().is_white() { white } else { -white }
}

/// Squashes an evaluation into `range` with a logarithm-like curve.
fn squash(eval_cp: i32, range: (i32, i32)) -> i32 {
    let half = f64::from(range.1 - range.0) / 2.0;
    let mid = f64::from(range.1 + range.0) / 2.0;
    let x = f64::from(eval_cp);
    let s = x.signum() * (1.0 + x.abs() / 100.0).ln() / (1.0 + 40.0f64).ln();
    (mid + half * s.clamp(-1.0, 1.0)).round() as i32
}

fn wdl_from_i8(w: i8) -> Wdl {
    match w {
        -2 => Wdl::Loss,
        -1 => Wdl::BlessedLoss,
        0 => Wdl::Draw,
        1 => Wdl::CursedWin,
        _ => Wdl::Win,
    }
}

/// What the tables say about a node, as scores from the side to move's view.
#[derive(Clone, Copy, Debug)]
enum TbValue {
    /// Exact score (mate score or swindle draw).
    Exact(i32),
    /// The true score lies in `[lo, hi]`.
    Range(i32, i32),
}

struct Shared<'a> {
    tt: &'a TranspositionTable,
    probes: ProbeCache,
    oracle: &'a dyn Oracle,
    /// External cancellation (client gone).
    cancel: &'a AtomicBool,
    /// Internal stop: limits reached or the main thread finished.
    stop: AtomicBool,
    start: Instant,
    limits: &'a Limits,
    nodes: AtomicU64,
    tb_hits: AtomicU64,
    root_moves: Vec<Move>,
}

struct Worker<'a> {
    shared: &'a Shared<'a>,
    nodes: u64,
    tb_hits: u64,
    unflushed: u64,
    killers: [[u16; 2]; MAX_PLY + 1],
    history: Box<[[i32; 64]; 64]>,
    /// Zobrist keys of the positions on the current line (repetitions).
    line: Vec<u64>,
    max_pieces: usize,
    stopped: bool,
}

impl<'a> Worker<'a> {
    fn new(shared: &'a Shared<'a>) -> Worker<'a> {
        Worker {
            shared,
            nodes: 0,
            tb_hits: 0,
            unflushed: 0,
            killers: [[0; 2]; MAX_PLY + 1],
            history: Box::new([[0; 64]; 64]),
            line: Vec::with_capacity(256),
            max_pieces: shared.oracle.max_pieces(),
            stopped: false,
        }
    }

    fn flush(&mut self) {
        self.shared.nodes.fetch_add(self.unflushed, Ordering::Relaxed);
        self.unflushed = 0;
        self.shared.tb_hits.fetch_add(self.tb_hits, Ordering::Relaxed);
        self.tb_hits = 0;
    }

    /// Checks limits every 1024 nodes; sets `stopped`.
    fn tick(&mut self) {
        self.nodes += 1;
        self.unflushed += 1;
        if self.unflushed < 1024 {
            return;
        }
        self.flush();
        let s = self.shared;
        let total = s.nodes.load(Ordering::Relaxed);
        if s.cancel.load(Ordering::Relaxed)
            || s.limits.nodes.is_some_and(|n| total >= n)
            || s.limits.movetime.is_some_and(|t| s.start.elapsed() >= t)
        {
            s.stop.store(true, Ordering::Relaxed);
        }
        if s.stop.load(Ordering::Relaxed) {
            self.stopped = true;
        }
    }

    fn is_tb_sized(&self, pos: &Chess) -> bool {
        pos.board().occupied().count() <= self.max_pieces && pos.castles().is_empty()
    }

    fn tt_key(&self, pos: &Chess, hash: u64) -> u64 {
        if self.is_tb_sized(pos) { hash ^ clock_key(pos.halfmoves()) } else { hash }
    }

    /// Table probes for a non-terminal tablebase-sized node at `ply`, cheapest
    /// first: WDL, then (only if that does not settle the window and the node
    /// is not `shallow`) DTM50, DTZ and DTM.
    fn probe(&mut self, pos: &Chess, hash: u64, ply: usize, alpha: i32, beta: i32, shallow: bool) -> Option<TbValue> {
        let oracle = self.shared.oracle;
        let cache = &self.shared.probes;
        let mut cached = cache.get(hash);
        let wdl = match cached.wdl {
            Some(w) => w.map(wdl_from_i8),
            None => {
                let w = oracle.wdl(pos);
                cached.wdl = Some(w.map(|w| w as i8));
                cache.put(hash, cached);
                w
            }
        }?;
        self.tb_hits += 1;
        let clock = pos.halfmoves();
        let side = match wdl {
            Wdl::Draw => return Some(TbValue::Exact(squash(evaluate(pos), PLAIN_DRAW))),
            Wdl::CursedWin => return Some(TbValue::Exact(squash(evaluate(pos), CURSED_WIN))),
            Wdl::BlessedLoss => return Some(TbValue::Exact(squash(evaluate(pos), BLESSED_LOSS))),
            Wdl::Win => MateSide::Win,
            Wdl::Loss => MateSide::Loss,
        };
        let to_range = |b: &bounds::MateBound| {
            // The winner mates on odd plies, the loser is mated on even ones.
            let max = |odd: bool| {
                let m = b.max_plies.max(b.min_plies) as usize;
                if (m % 2 == 1) == odd || m == b.min_plies as usize { m } else { m - 1 }
            };
            match b.side {
                MateSide::Win => (mate_in(ply + max(true)), mate_in(ply + b.min_plies as usize)),
                MateSide::Loss => (mated_in(ply + b.min_plies as usize), mated_in(ply + max(false))),
            }
        };
        // WDL alone: a mate bound if the clock cannot spoil it, else "at least
        // a draw" for the winner.
        let (lo, hi) = match bounds::live_mate_bound(pos, clock, Some(wdl), None, None) {
            Ok(b) => to_range(&b),
            Err(_) => match side {
                MateSide::Win => (0, mate_in(ply + 1)),
                MateSide::Loss => (mated_in(ply + 2), 0),
            },
        };
        // Near the horizon (most nodes) the WDL range is the value.
        if lo >= beta || hi <= alpha || shallow {
            return Some(TbValue::Range(lo, hi));
        }
        if let Some(p) = oracle.dtm50_plies(pos, clock) {
            self.tb_hits += 1;
            return Some(TbValue::Exact(match p {
                0 => squash(evaluate(pos), if side == MateSide::Win { CURSED_WIN } else { BLESSED_LOSS }),
                p if p > 0 => mate_in(ply + p as usize),
                p => mated_in(ply + p.unsigned_abs() as usize),
            }));
        }
        let dtz = match cached.dtz {
            Some(d) => d.map(|(d, rounded)| {
                if rounded {
                    MaybeRounded::Rounded(Dtz(i32::from(d)))
                } else {
                    MaybeRounded::Precise(Dtz(i32::from(d)))
                }
            }),
            None => {
                let d = oracle.dtz(pos);
                cached.dtz = Some(d.map(|d| match d {
                    MaybeRounded::Precise(Dtz(n)) => (n as i16, false),
                    MaybeRounded::Rounded(Dtz(n)) => (n as i16, true),
                }));
                d
            }
        };
        let dtm = match cached.dtm {
            Some(d) => d.map(i32::from),
            None => {
                let d = oracle.dtm_plies(pos);
                cached.dtm = Some(d.map(|d| d as i16));
                d
            }
        };
        cache.put(hash, cached);
        self.tb_hits += u64::from(dtz.is_some()) + u64::from(dtm.is_some());
        match bounds::live_mate_bound(pos, clock, Some(wdl), dtz, dtm) {
            Ok(b) if b.exact => {
                let (lo, _) = to_range(&b);
                Some(TbValue::Exact(lo))
            }
            Ok(b) => {
                let (lo, hi) = to_range(&b);
                Some(TbValue::Range(lo, hi))
            }
            Err(NoBound::FiftyMoveRule) => {
                // The 50-move rule decides: a draw, the closer to a real win the better.
                let over = dtz.map_or(34, |d| (clock + d.ignore_rounding().0.unsigned_abs()).saturating_sub(100));
                let v = 69 - over.min(34) as i32;
                Some(TbValue::Exact(if side == MateSide::Win { v } else { -v }))
            }
            Err(_) => Some(TbValue::Range(lo, hi)),
        }
    }

    /// Best guess first: TT move, captures (most valuable victim), promotions,
    /// killers, then history. A stable insertion sort in place: move lists
    /// are short here, and no node allocates.
    fn order_moves(&self, moves: &mut MoveList, tt_move: u16, ply: usize) {
        let killers = self.killers[ply];
        let score = |m: &Move| {
            let packed = pack_move(m);
            if packed == tt_move {
                1 << 30
            } else if let Some(victim) = m.capture() {
                (1 << 24) + 16 * piece_value(victim) - piece_value(m.role()) / 10
            } else if let Some(promo) = m.promotion() {
                (1 << 24) + piece_value(promo)
            } else if killers.contains(&packed) {
                1 << 22
            } else {
                self.history[m.from().map_or(0, |s| s as usize)][m.to() as usize]
            }
        };
        let mut keys: ArrayVec<i32, 256> = moves.iter().map(score).collect();
        for i in 1..moves.len() {
            let (key, m) = (keys[i], moves[i]);
            let mut j = i;
            while j > 0 && keys[j - 1] < key {
                keys[j] = keys[j - 1];
                moves[j] = moves[j - 1];
                j -= 1;
            }
            keys[j] = key;
            moves[j] = m;
        }
    }

    fn is_repetition(&self, hash: u64, clock: u32) -> bool {
        // Only positions since the last zeroing move can repeat.
        let n = self.line.len();
        let back = (clock as usize).min(n);
        (2..=back).step_by(2).any(|i| self.line[n - i] == hash)
    }

    fn child(pos: &Chess, hash: u64, m: &Move) -> (Chess, u64) {
        let h = pos.update_zobrist_hash::<Zobrist64>(Zobrist64(hash), *m, EnPassantMode::Legal);
        let mut next = pos.clone();
        next.play_unchecked(*m);
        let h = h.unwrap_or_else(|| next.zobrist_hash::<Zobrist64>(EnPassantMode::Legal));
        (next, h.0)
    }

    /// Negamax PVS. `pv` receives the principal variation of this node.
    #[allow(clippy::too_many_arguments)]
    fn search(
        &mut self,
        pos: &Chess,
        hash: u64,
        mut alpha: i32,
        mut beta: i32,
        mut depth: i32,
        ply: usize,
        pv: &mut Vec<Move>,
    ) -> i32 {
        pv.clear();
        self.tick();
        if self.stopped {
            return 0;
        }
        let mut moves = if ply == 0 { self.shared.root_moves.iter().cloned().collect() } else { pos.legal_moves() };
        if moves.is_empty() {
            return if pos.is_check() { mated_in(ply) } else { 0 };
        }
        let clock = pos.halfmoves();
        if ply > 0 {
            if clock >= 100 || pos.is_insufficient_material() || self.is_repetition(hash, clock) {
                return 0;
            }
            // Mate distance pruning.
            alpha = alpha.max(mated_in(ply));
            beta = beta.min(mate_in(ply + 1));
            if alpha >= beta {
                return alpha;
            }
        }
        if ply >= MAX_PLY {
            return evaluate(pos);
        }
        let pv_node = beta - alpha > 1;
        let key = self.tt_key(pos, hash);
        let mut tt_move = 0;
        if let Some(e) = self.shared.tt.probe(key) {
            tt_move = e.mv;
            let s = from_tt(e.score, ply);
            if ply > 0
                && !pv_node
                && e.depth >= depth
                && match e.bound {
                    BoundKind::Exact => true,
                    BoundKind::Lower => s >= beta,
                    BoundKind::Upper => s <= alpha,
                }
            {
                return s;
            }
        }
        // Table probes behave like TT hits of infinite depth.
        let (mut lo, mut hi) = (-INF, INF);
        if ply > 0 && probes_at(depth, clock) && self.is_tb_sized(pos) {
            match self.probe(pos, hash, ply, alpha, beta, depth < SLOW_PROBE_DEPTH) {
                Some(TbValue::Exact(v)) => {
                    let is_draw = v.abs() < MATE_IN_MAX;
                    if !(is_draw && depth >= SWINDLE_SEARCH_DEPTH) {
                        return v;
                    }
                    // Keep searching a draw to improve the swindle score, but
                    // within its draw band.
                    (lo, hi) = if v >= CURSED_WIN.0 {
                        CURSED_WIN
                    } else if v <= BLESSED_LOSS.1 {
                        BLESSED_LOSS
                    } else {
                        PLAIN_DRAW
                    };
                }
                Some(TbValue::Range(l, h)) => {
                    if l >= beta {
                        return l;
                    }
                    if h <= alpha {
                        return h;
                    }
                    (lo, hi) = (l, h);
                }
                None => {}
            }
        }
        if depth <= 0 {
            if lo > -INF || hi < INF {
                // A table position at the horizon: its proven range is its value.
                return evaluate(pos).clamp(lo, hi);
            }
            return self.quiesce(pos, hash, alpha, beta, ply, 0);
        }
        let in_check = pos.is_check();
        if in_check {
            depth += 1;
        }
        self.order_moves(&mut moves, tt_move, ply);
        let original_alpha = alpha;
        let mut best = -INF;
        let mut best_move = 0;
        let mut child_pv = Vec::new();
        self.line.push(hash);
        for (i, m) in moves.iter().enumerate() {
            let (next, next_hash) = Self::child(pos, hash, m);
            let mut score;
            if i == 0 {
                score = -self.search(&next, next_hash, -beta, -alpha, depth - 1, ply + 1, &mut child_pv);
            } else {
                score = -self.search(&next, next_hash, -alpha - 1, -alpha, depth - 1, ply + 1, &mut child_pv);
                if score > alpha && score < beta && !self.stopped {
                    score = -self.search(&next, next_hash, -beta, -alpha, depth - 1, ply + 1, &mut child_pv);
                }
            }
            if self.stopped {
                self.line.pop();
                return 0;
            }
            if score > best {
                best = score;
                best_move = pack_move(m);
                if score > alpha {
                    alpha = score;
                    pv.clear();
                    pv.push(*m);
                    pv.extend(child_pv.iter().cloned());
                    if score >= beta {
                        if !m.is_capture() && !m.is_promotion() {
                            let k = &mut self.killers[ply];
                            if k[0] != best_move {
                                k[1] = k[0];
                                k[0] = best_move;
                            }
                            let from = m.from().map_or(0, |s| s as usize);
                            let h = &mut self.history[from][m.to() as usize];
                            *h = (*h + depth * depth).min(1 << 20);
                        }
                        break;
                    }
                }
            }
        }
        self.line.pop();
        // A table's bound is the truth: the search can tighten it, never leave it.
        let best = best.clamp(lo, hi);
        let bound = if best >= beta {
            BoundKind::Lower
        } else if best > original_alpha {
            BoundKind::Exact
        } else {
            BoundKind::Upper
        };
        self.shared.tt.store(key, Entry { mv: best_move, score: to_tt(best, ply), depth, bound });
        best
    }

    fn quiesce(&mut self, pos: &Chess, hash: u64, mut alpha: i32, beta: i32, ply: usize, qply: u32) -> i32 {
        self.tick();
        if self.stopped {
            return 0;
        }
        let in_check = pos.is_check();
        let tb_sized = self.is_tb_sized(pos);
        // A table node needs every legal move (is it stalemate?), so one
        // generation serves both that test and the captures.
        let mut moves = if in_check || tb_sized { pos.legal_moves() } else { pos.capture_moves() };
        if in_check && moves.is_empty() {
            return mated_in(ply);
        }
        if pos.is_insufficient_material() || ply >= MAX_PLY {
            return 0;
        }
        if tb_sized {
            if moves.is_empty() {
                return 0;
            }
            // Beyond the horizon a table value beats any capture sequence.
            if probes_at(0, pos.halfmoves()) {
                match self.probe(pos, hash, ply, alpha, beta, true) {
                    Some(TbValue::Exact(v)) => return v,
                    Some(TbValue::Range(l, h)) => return evaluate(pos).clamp(l, h),
                    None => {}
                }
            }
            if !in_check {
                moves.retain(|m| m.is_capture());
            }
        }
        let stand_pat = if in_check { -INF } else { evaluate(pos) };
        if stand_pat >= beta {
            return stand_pat;
        }
        alpha = alpha.max(stand_pat);
        if in_check && qply > 6 {
            return evaluate(pos);
        }
        self.order_moves(&mut moves, 0, ply.min(MAX_PLY));
        let mut best = stand_pat;
        for m in &moves {
            let (next, next_hash) = Self::child(pos, hash, m);
            let score = -self.quiesce(&next, next_hash, -beta, -alpha, ply + 1, qply + 1);
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        best
    }
}

/// The category of `pos` at its own clock from the oracle, for the root
/// guarantee; `None` when the tables do not answer.
fn category(oracle: &dyn Oracle, pos: &Chess) -> Option<Category> {
    if pos.is_checkmate() {
        return Some(Category::Loss);
    }
    if pos.is_stalemate() || pos.is_insufficient_material() {
        return Some(Category::Draw);
    }
    if pos.board().occupied().count() > oracle.max_pieces() || !pos.castles().is_empty() {
        return None;
    }
    if let Some(p) = oracle.dtm50_plies(pos, pos.halfmoves()) {
        return Some(match p.signum() {
            1 => Category::Win,
            -1 => Category::Loss,
            _ => Category::Draw,
        });
    }
    let wdl = oracle.wdl(pos)?;
    if matches!(wdl, Wdl::Draw) {
        return Some(Category::Draw);
    }
    let dtz = oracle.dtz(pos)?;
    Some(Category::at_clock(wdl, Dtz50::from_syzygy(dtz), pos.halfmoves()))
}

/// Root guarantee: the moves that keep the best verdict reachable at the real
/// clock (win stays win, draw stays draw). All moves when the tables cannot
/// judge every one of them.
fn guaranteed_root_moves(oracle: &dyn Oracle, pos: &Chess) -> Vec<Move> {
    let moves: Vec<Move> = pos.legal_moves().into_iter().collect();
    let verdicts: Option<Vec<Category>> = moves
        .iter()
        .map(|m| {
            let mut next = pos.clone();
            next.play_unchecked(*m);
            category(oracle, &next).map(Category::flip)
        })
        .collect();
    // No legal move (mate or stalemate): `analyse` answers such a root itself.
    match verdicts {
        Some(v) if !v.contains(&Category::Unknown) => match v.iter().max() {
            Some(&best) => moves.into_iter().zip(v).filter(|(_, c)| *c == best).map(|(m, _)| m).collect(),
            None => moves,
        },
        _ => moves,
    }
}

fn move_text(pos: &Chess, m: &Move) -> MoveText {
    MoveText { uci: m.to_uci(CastlingMode::Standard).to_string(), san: San::from_move(pos, *m).to_string() }
}

fn pv_text(pos: &Chess, pv: &[Move]) -> Vec<MoveText> {
    let mut p = pos.clone();
    let mut out = Vec::new();
    for m in pv {
        if !p.is_legal(*m) {
            break;
        }
        out.push(move_text(&p, m));
        p.play_unchecked(*m);
    }
    out
}

/// Analyses `pos` (its half-move clock included) until a limit is reached,
/// the mate is proven exact, or `cancel` is set. `on_depth` is called after
/// every completed iteration (from the calling thread), e.g. to stream events.
pub fn analyse(
    pos: &Chess,
    oracle: &dyn Oracle,
    limits: &Limits,
    options: &SearchOptions,
    cancel: &Cancel,
    on_depth: &mut dyn FnMut(&SearchResult),
) -> SearchResult {
    let start = Instant::now();
    let tt = TranspositionTable::new(options.hash_mb);
    let root_moves = guaranteed_root_moves(oracle, pos);
    let root_bound = root_mate_bound(oracle, pos);
    let shared = Shared {
        tt: &tt,
        probes: ProbeCache::new(20),
        oracle,
        cancel: cancel.as_ref(),
        stop: AtomicBool::new(false),
        start,
        limits,
        nodes: AtomicU64::new(0),
        tb_hits: AtomicU64::new(0),
        root_moves,
    };
    let root_is_draw =
        matches!(category(oracle, pos), Some(Category::Draw | Category::CursedWin | Category::BlessedLoss));
    let make = |best: &[Move], score: i32, depth: u32, stop: Option<StopReason>| SearchResult {
        best_move: best.first().map(|m| move_text(pos, m)),
        score: to_score(score, depth, root_is_draw, root_bound.as_ref()),
        pv: pv_text(pos, best),
        depth,
        nodes: shared.nodes.load(Ordering::Relaxed),
        tb_hits: shared.tb_hits.load(Ordering::Relaxed),
        elapsed_ms: start.elapsed().as_millis() as u64,
        stop,
        root_bound,
    };
    if shared.root_moves.is_empty() {
        let score = if pos.is_check() { -MATE } else { 0 };
        return make(&[], score, 0, Some(StopReason::Terminal));
    }
    if let Some(exact) = super::exact::dtm50_line(oracle, pos) {
        let plies = exact.root_plies;
        let mut result = SearchResult {
            best_move: exact.line.first().map(|m| move_text(pos, m)),
            score: Score::Mate {
                mate_in_moves: plies.signum() * ((plies.abs() + 1) / 2),
                mate_in_plies: plies,
                bound: ScoreBound::Exact,
            },
            pv: pv_text(pos, &exact.line),
            depth: 0,
            nodes: 0,
            tb_hits: exact.probes,
            elapsed_ms: start.elapsed().as_millis() as u64,
            stop: None,
            root_bound,
        };
        on_depth(&result);
        result.stop = Some(StopReason::TableExact);
        return result;
    }
    let max_depth = limits.depth.unwrap_or(MAX_PLY as u32 - 8).clamp(1, MAX_PLY as u32 - 8) as i32;
    let root_hash = pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0;

    let (best_pv, best_score, completed, reason) = std::thread::scope(|scope| {
        // Lazy SMP helpers: same iterative deepening, shared TT, staggered depths.
        for t in 1..options.threads.max(1) {
            let shared = &shared;
            scope.spawn(move || {
                let mut w = Worker::new(shared);
                let mut pv = Vec::new();
                let mut d = 1 + (t as i32 % 2);
                while d <= max_depth && !w.stopped {
                    w.search(pos, root_hash, -INF, INF, d, 0, &mut pv);
                    d += 1;
                }
                w.flush();
            });
        }
        let mut w = Worker::new(&shared);
        let mut best_pv: Vec<Move> = vec![shared.root_moves[0]];
        let mut best_score = 0;
        let mut completed = 0;
        let mut reason = StopReason::Depth;
        let mut pv = Vec::new();
        for d in 1..=max_depth {
            let score = w.search(pos, root_hash, -INF, INF, d, 0, &mut pv);
            if w.stopped {
                reason = if cancel.load(Ordering::Relaxed) {
                    StopReason::Cancelled
                } else if limits.nodes.is_some_and(|n| shared.nodes.load(Ordering::Relaxed) >= n) {
                    StopReason::Nodes
                } else {
                    StopReason::Time
                };
                break;
            }
            w.flush();
            completed = d as u32;
            best_score = score;
            if !pv.is_empty() {
                best_pv = pv.clone();
            }
            let info = make(&best_pv, best_score, completed, None);
            on_depth(&info);
            if matches!(info.score, Score::Mate { bound: ScoreBound::Exact, .. }) {
                reason = StopReason::MateProven;
                break;
            }
            if shared.root_moves.len() == 1 && root_is_draw && d >= 2 {
                reason = StopReason::Terminal;
                break;
            }
        }
        // Helpers stop at their next node check; the scope joins them.
        shared.stop.store(true, Ordering::Relaxed);
        w.flush();
        (best_pv, best_score, completed, reason)
    });
    make(&best_pv, best_score, completed, Some(reason))
}

/// What the tables alone prove about the root.
fn root_mate_bound(oracle: &dyn Oracle, pos: &Chess) -> Option<bounds::MateBound> {
    if pos.is_checkmate() {
        return bounds::mate_bound(pos, 0, None, None, None).ok();
    }
    if pos.board().occupied().count() > oracle.max_pieces() || !pos.castles().is_empty() || pos.legal_moves().is_empty()
    {
        return None;
    }
    if let Some(p) = oracle.dtm50_plies(pos, pos.halfmoves()) {
        return bounds::MateBound::from_dtm50(pos, p).ok();
    }
    let wdl = oracle.wdl(pos);
    let dtz: Option<MaybeRounded<Dtz>> = oracle.dtz(pos);
    bounds::mate_bound(pos, pos.halfmoves(), wdl, dtz, oracle.dtm_plies(pos)).ok()
}

/// The reported score: a mate found within the fully searched depth is exact
/// (full-width search, no reductions), or exact when the tables prove the same
/// distance; otherwise the search proved "at most".
fn to_score(score: i32, depth: u32, root_is_draw: bool, root_bound: Option<&bounds::MateBound>) -> Score {
    if root_is_draw {
        // The tables' verdict at the real clock wins over the search: e.g. at
        // clock 100 a draw can be claimed before any mate, which the search
        // (that never stops at its root) would not see.
        let swindle = if score >= MATE_IN_MAX {
            CURSED_WIN.1
        } else if score <= -MATE_IN_MAX {
            BLESSED_LOSS.0
        } else {
            score.clamp(BLESSED_LOSS.0, CURSED_WIN.1)
        };
        return Score::Draw { swindle_cp: swindle };
    }
    if score.abs() >= MATE_IN_MAX {
        let plies = MATE - score.abs();
        let exact = plies as u32 <= depth || root_bound.is_some_and(|b| b.min_plies == plies as u32);
        let moves = if score > 0 { (plies + 1) / 2 } else { -(plies / 2) };
        return Score::Mate {
            mate_in_moves: moves,
            mate_in_plies: if score > 0 { plies } else { -plies },
            bound: if exact { ScoreBound::Exact } else { ScoreBound::AtMost },
        };
    }
    Score::Cp { cp: score }
}
