//! Statistics of a built-in table: positions by category for each side to
//! move, histograms of DTZ50'', DTM and DTM50 (clock 0), and the longest of
//! each with an example position.
//!
//! Computed once, when the table is generated (or the first time they are
//! asked for, for a table on disk without them), and kept beside it as
//! `<material>.stats.json`, written by rename like the table itself: serving
//! them never reads the table again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shakmaty::{Color, Piece, Square};

use super::{format, index::Layout, material::Material, value};

/// What the statistics are computed from: a table as the store serves it.
pub trait Scan {
    /// The table's material.
    fn material(&self) -> &Material;
    /// The table's index layout.
    fn layout(&self) -> &Layout;
    /// DTZ50'' at `idx`, a legal position's index.
    fn dtz(&self, idx: u32) -> u16;
    /// DTM of index `idx`.
    fn dtm(&self, idx: u32) -> u16;
    /// DTM50 at `idx` and half-move clock `clock`.
    fn at_clock(&self, idx: u32, clock: u32) -> u16;
    /// DTZ50'', DTM and DTM50 at clock 0 of `idx` at once: a table in
    /// blocks finds the block once instead of three times.
    fn values(&self, idx: u32) -> [u16; 3] {
        [self.dtz(idx), self.dtm(idx), if self.has_dtm50() { self.at_clock(idx, 0) } else { value::UNKNOWN }]
    }
    /// Whether the table has DTM50.
    fn has_dtm50(&self) -> bool;
    /// Legal positions of the table.
    fn legal_positions(&self) -> u64;
    /// CRC-32 of the table file's header and block index.
    fn crc32(&self) -> u32;
    /// The table's file, if it has one.
    fn path(&self) -> Option<&Path>;
    /// Called when the scan is done: a mapped table lets go of the pages
    /// the scan read, so that the process keeps only those probes touch.
    fn scanned(&self) {}
}

/// Bumped when the meaning or shape of the statistics changes: a sidecar of
/// another version is computed again.
pub(crate) const STATS_VERSION: u32 = 1;

/// Statistics of one table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableStats {
    /// The table, e.g. `KQvKR` (stronger side first: White).
    pub material: String,
    /// Distinct legal positions under the table's symmetries, both sides to
    /// move (the number the table's header records).
    pub legal_positions: u64,
    /// With White to move.
    pub white_to_move: SideStats,
    /// With Black to move.
    pub black_to_move: SideStats,
    /// Whether the table has DTM50 (without it the DTM50 fields are empty).
    pub has_dtm50: bool,
    /// Format of these statistics (see `STATS_VERSION`).
    pub version: u32,
    /// CRC-32 of the table file the statistics were computed from: a table
    /// generated again gets new statistics.
    pub table_crc32: u32,
}

/// Positions with one side to move, by category at half-move clock 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideStats {
    /// Legal positions with this side to move.
    pub positions: u64,
    /// Won within the 50-move rule.
    pub wins: u64,
    /// Won only without the 50-move rule.
    pub cursed_wins: u64,
    /// Drawn.
    pub draws: u64,
    /// Lost only without the 50-move rule.
    pub blessed_losses: u64,
    /// Lost within the 50-move rule.
    pub losses: u64,
    /// The decisive position farthest from zeroing (win or loss of the side
    /// to move); absent when none is decisive.
    pub longest_dtz50: Option<Example>,
    /// The decisive position farthest from mate, ignoring the 50-move rule.
    pub longest_dtm: Option<Example>,
    /// The longest mate the 50-move rule allows at clock 0.
    pub longest_dtm50: Option<Example>,
    /// DTZ50''.
    pub dtz50_histogram: Histogram,
    /// DTM.
    pub dtm_histogram: Histogram,
    /// DTM50 at half-move clock 0.
    pub dtm50_histogram: Histogram,
}

/// A position of the table and its value, from the side to move's point of
/// view (positive: the side to move wins; 0: it is checkmated, the longest
/// only where every decisive position is a mate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    /// Signed plies: positive when the side to move wins.
    pub plies: i32,
    /// Half-move clock 0.
    pub fen: String,
}

/// How many positions are won, and lost, in each number of plies (a
/// checkmated side loses in 0); plies without positions are left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// Won positions by plies, ascending.
    pub wins: Vec<Bin>,
    /// Lost positions by plies, ascending.
    pub losses: Vec<Bin>,
}

/// Positions at one number of plies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bin {
    /// Plies.
    pub plies: u16,
    /// Positions.
    pub positions: u64,
}

/// Counts by plies while scanning, won and lost.
struct Dense {
    wins: Vec<u64>,
    losses: Vec<u64>,
    /// Largest plies seen and the lowest index with them (whatever the
    /// order the positions come in).
    longest: Option<(u16, u32)>,
}

impl Dense {
    fn new() -> Dense {
        let len = value::MAX_PLIES as usize + 1;
        Dense { wins: vec![0; len], losses: vec![0; len], longest: None }
    }

    #[inline]
    fn add(&mut self, v: u16, idx: u32) {
        let plies = value::plies(v);
        if value::is_win(v) {
            self.wins[plies as usize] += 1;
        } else if value::is_loss(v) {
            self.losses[plies as usize] += 1;
        } else {
            return;
        }
        self.keep_longest(plies, idx);
    }

    /// Keeps `(plies, idx)` if it is longer, or as long at a lower index.
    #[inline]
    fn keep_longest(&mut self, plies: u16, idx: u32) {
        if self.longest.is_none_or(|(p, i)| plies > p || (plies == p && idx < i)) {
            self.longest = Some((plies, idx));
        }
    }

    fn add_dense(&mut self, o: &Dense) {
        for (a, b) in self.wins.iter_mut().zip(&o.wins).chain(self.losses.iter_mut().zip(&o.losses)) {
            *a += b;
        }
        if let Some((plies, idx)) = o.longest {
            self.keep_longest(plies, idx);
        }
    }

    fn histogram(&self) -> Histogram {
        let bins = |counts: &[u64]| {
            counts
                .iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(|(plies, &positions)| Bin { plies: plies as u16, positions })
                .collect()
        };
        Histogram { wins: bins(&self.wins), losses: bins(&self.losses) }
    }
}

/// One side to move's counters while scanning.
struct Side {
    categories: [u64; 5],
    dtz: Dense,
    dtm: Dense,
    dtm50: Dense,
}

impl Side {
    fn new() -> Side {
        Side { categories: [0; 5], dtz: Dense::new(), dtm: Dense::new(), dtm50: Dense::new() }
    }
}

/// The statistics' counts, added up position by position in any order:
/// by [`compute`] from a table, or by the generator from the values it
/// has just solved, which spares reading the table back.
pub struct Tally {
    sides: [Side; 2],
    has_dtm50: bool,
}

impl Tally {
    /// An empty tally (with DTM50 histograms if `has_dtm50`).
    pub fn new(has_dtm50: bool) -> Tally {
        Tally { sides: [Side::new(), Side::new()], has_dtm50 }
    }

    /// Counts the legal position `idx`, `turn` to move, with its DTZ50'',
    /// DTM and DTM50 at clock 0 (ignored without DTM50).
    #[inline]
    pub(crate) fn add(&mut self, idx: u32, turn: Color, [dtz, dtm, dtm50]: [u16; 3]) {
        let side = &mut self.sides[side_index(turn)];
        side.categories[category(dtz)] += 1;
        side.dtz.add(dtz, idx);
        side.dtm.add(dtm, idx);
        if self.has_dtm50 {
            side.dtm50.add(dtm50, idx);
        }
    }

    /// Adds the counts of `o` (other positions of the same table).
    pub(crate) fn add_tally(&mut self, o: &Tally) {
        for (a, b) in self.sides.iter_mut().zip(&o.sides) {
            for (x, y) in a.categories.iter_mut().zip(&b.categories) {
                *x += y;
            }
            a.dtz.add_dense(&b.dtz);
            a.dtm.add_dense(&b.dtm);
            a.dtm50.add_dense(&b.dtm50);
        }
    }

    /// The statistics of `table`, whose every legal position was added.
    pub fn into_stats(self, table: &impl Scan) -> TableStats {
        let example = |dense: &Dense, of: &dyn Fn(u32) -> u16| {
            dense.longest.map(|(_, idx)| Example { plies: value::signed_plies(of(idx)), fen: fen_of(table, idx) })
        };
        let side_stats = |s: &Side| {
            let [losses, blessed_losses, draws, cursed_wins, wins] = s.categories;
            SideStats {
                positions: s.categories.iter().sum(),
                wins,
                cursed_wins,
                draws,
                blessed_losses,
                losses,
                longest_dtz50: example(&s.dtz, &|i| table.dtz(i)),
                longest_dtm: example(&s.dtm, &|i| table.dtm(i)),
                longest_dtm50: example(&s.dtm50, &|i| table.at_clock(i, 0)),
                dtz50_histogram: s.dtz.histogram(),
                dtm_histogram: s.dtm.histogram(),
                dtm50_histogram: s.dtm50.histogram(),
            }
        };
        TableStats {
            material: table.material().name(),
            legal_positions: table.legal_positions(),
            white_to_move: side_stats(&self.sides[side_index(Color::White)]),
            black_to_move: side_stats(&self.sides[side_index(Color::Black)]),
            has_dtm50: self.has_dtm50,
            version: STATS_VERSION,
            table_crc32: table.crc32(),
        }
    }
}

/// Computes the statistics of `table` by reading every position once.
pub fn compute(table: &impl Scan) -> TableStats {
    let layout = table.layout();
    let mut tally = Tally::new(table.has_dtm50());
    for idx in 0..layout.size as u32 {
        // Asked of the index, not the values: a file holds values at indexes
        // no legal position has (whatever compresses best), so the values
        // cannot tell an illegal index.
        let Some(pos) = layout.decode(idx) else { continue };
        tally.add(idx, pos.turn, table.values(idx));
    }
    table.scanned();
    tally.into_stats(table)
}

#[inline]
fn side_index(turn: Color) -> usize {
    match turn {
        Color::White => 0,
        Color::Black => 1,
    }
}

/// Index into `Side::categories`, loss first.
#[inline]
fn category(dtz: u16) -> usize {
    use shakmaty_syzygy::Wdl;
    match value::wdl50(dtz) {
        Wdl::Loss => 0,
        Wdl::BlessedLoss => 1,
        Wdl::Draw => 2,
        Wdl::CursedWin => 3,
        Wdl::Win => 4,
    }
}

/// The FEN of the legal position at `idx` (clock 0, no castling or en passant).
fn fen_of(table: &impl Scan, idx: u32) -> String {
    let layout = table.layout();
    let pos = layout.unchecked_pos(idx);
    let mut board = shakmaty::Board::empty();
    for (&(color, role), &sq) in layout.men.iter().zip(&pos.sq[..layout.n]) {
        board.set_piece_at(Square::new(u32::from(sq)), Piece { color, role });
    }
    format!("{} {} - - 0 1", board.board_fen(), pos.turn.char())
}

/// Where the statistics of the table at `table_path` are kept.
pub(crate) fn sidecar_path(table_path: &Path) -> PathBuf {
    table_path.with_extension("stats.json")
}

/// The statistics stored beside `table`, if they are there and belong to
/// this very file.
pub fn read_sidecar(table: &impl Scan) -> Option<TableStats> {
    read_sidecar_of(table.path()?, table.material(), table.crc32())
}

/// The statistics stored beside `material`'s table file at `table_path`,
/// if they belong to that very file: read from the sidecar and the file's
/// header alone, without opening the table.
pub fn read_sidecar_beside(table_path: &Path, material: &Material) -> Option<TableStats> {
    use std::io::Read;
    let mut head = [0; format::HEADER_LEN];
    std::fs::File::open(table_path).ok()?.read_exact(&mut head).ok()?;
    let header = format::read_header(&head, material).ok()?;
    read_sidecar_of(table_path, material, header.crc32)
}

/// The statistics stored beside the table file at `table_path`, if they are
/// of `material`'s file with header checksum `crc32`.
fn read_sidecar_of(table_path: &Path, material: &Material, crc32: u32) -> Option<TableStats> {
    let bytes = std::fs::read(sidecar_path(table_path)).ok()?;
    let stats: TableStats = serde_json::from_slice(&bytes).ok()?;
    (stats.version == STATS_VERSION && stats.table_crc32 == crc32 && stats.material == material.name()).then_some(stats)
}

/// Computes the statistics of `table` and stores them beside it (when the
/// table is a file).
pub fn compute_and_store(table: &impl Scan) -> TableStats {
    store(table, compute(table))
}

/// Stores `stats`, those of `table`, beside it (when the table is a file).
pub fn store(table: &impl Scan, stats: TableStats) -> TableStats {
    if let Some(path) = table.path() {
        write_sidecar(path, &stats);
    }
    stats
}

/// Writes `stats` beside the table file at `table_path`; a failure is
/// logged, not returned: statistics can be computed again.
fn write_sidecar(table_path: &Path, stats: &TableStats) {
    let json = serde_json::to_vec(stats).expect("statistics serialize");
    if let Err(e) = replace_file(&sidecar_path(table_path), &json) {
        tracing::warn!(table = %stats.material, "could not store the table's statistics: {e}");
    }
}

/// Writes `path` so that readers see the old file or the whole new one:
/// two processes may compute the same statistics at once, each through a
/// temporary name of its own.
fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("json.tmp{}.{n}", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| drop(std::fs::remove_file(&tmp)))
}

/// The stored statistics, or computed (and stored) if there are none.
pub fn load_or_compute(table: &impl Scan) -> TableStats {
    read_sidecar(table).unwrap_or_else(|| compute_and_store(table))
}
