//! Sources of truth: one module per kind of table, behind one interface.
//!
//! A source answers for the positions its tables cover and says `Ok(None)` for
//! the others; which source is asked first is decided by [`crate::tablebase`],
//! not here.

pub mod builtin;
pub mod chesstb;
pub mod gaviota;
pub(crate) mod syzygy;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use serde::Serialize;
use shakmaty::{Chess, Move};
use shakmaty_syzygy::{Dtz, MaybeRounded, Wdl};

use tbgen::stats::TableStats;

use crate::domain::{Dtc, Source};

/// The file system Syzygy tables are read through with `syzygy_io =
/// "mmap"`: memory maps whose lost pages fail the reads that meet them
/// (for benchmarks against `shakmaty-syzygy`'s own).
pub fn guarded_syzygy_filesystem() -> Arc<dyn shakmaty_syzygy::filesystem::Filesystem> {
    Arc::new(syzygy::GuardedFilesystem)
}

/// A table that exists but could not be read: broken, truncated, unreadable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[error("table {table}: {reason}")]
pub struct TableError {
    /// The table's name, e.g. `KQvKR.rtbz`.
    pub table: String,
    pub reason: String,
}

/// Why a source that covers a position gives no value for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    /// The table exists but could not be read.
    #[error(transparent)]
    Broken(#[from] TableError),
    /// The table is being generated (built-in tables): the value comes
    /// later, and a request never waits for it inside a probe.
    #[error("built-in table {material} is being generated")]
    Generating { material: String },
}

/// `Ok(None)`: no table of this source covers the position.
pub type ProbeResult<T> = Result<Option<T>, Unanswered>;

/// A move and the DTZ after it.
pub(crate) type BestMove = (Move, MaybeRounded<Dtz>);

/// What a table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TableKind {
    Wdl,
    Dtz,
    Dtm,
    Dtm50,
    /// chesstb's distance to conversion (pawn endings).
    Dtc,
}

/// One table file (or built-in table) as listed by `/api/v1/tables`.
#[derive(Debug, Clone, Serialize)]
pub struct TableInfo {
    /// Material and kind, e.g. `KQvKR.rtbw`, `kqkr.gtb.cp4`, `KQvKR (builtin)`.
    pub name: String,
    pub material: String,
    pub kind: TableKind,
    pub source: Source,
    pub pieces: usize,
    pub bytes: u64,
    pub path: Option<String>,
    /// Problems found while opening or checking the table; empty when healthy.
    pub problems: Vec<String>,
    /// Whether the table has statistics (built-in tables).
    #[serde(skip)]
    pub has_stats: bool,
}

/// The common interface of all table sources.
///
/// Positions handed to a source are legal, have no castling rights, and are
/// not terminal (checkmate and stalemate are decided by the rules before any
/// table is asked).
pub trait TableSource: Send + Sync {
    fn source(&self) -> Source;

    /// Largest number of pieces (kings included) any table of this source has.
    fn max_pieces(&self) -> usize;

    /// Whether a probe only reads memory-mapped tables and does a bounded
    /// amount of work: no file reads, no block decoding, no generation. The
    /// answer for one position may then be computed on the async thread that
    /// has the request (see `Shared::run_probe`); anything else goes to the
    /// blocking threads.
    fn probes_memory_only(&self) -> bool {
        false
    }

    /// Whether probing `pos` and its children (one move on) might wait:
    /// for a file to be read, a table to be opened or generated. `false`
    /// lets the position be answered on the async thread that has the
    /// request. By default: unless [`TableSource::probes_memory_only`],
    /// whenever the position or a child is within this source's reach.
    fn may_block(&self, pos: &Chess) -> bool {
        use shakmaty::Position;
        !self.probes_memory_only() && pos.board().occupied().count() <= self.max_pieces() + 1
    }

    /// WDL50 as if the half-move clock were 0.
    fn probe_wdl(&self, _pos: &Chess) -> ProbeResult<Wdl> {
        Ok(None)
    }

    /// DTZ50'' in plies, possibly rounded.
    fn probe_dtz(&self, _pos: &Chess) -> ProbeResult<MaybeRounded<Dtz>> {
        Ok(None)
    }

    /// Signed plies to mate ignoring the 50-move rule; 0 for a draw.
    fn probe_dtm_plies(&self, _pos: &Chess) -> ProbeResult<i32> {
        Ok(None)
    }

    /// Signed plies to mate under the 50-move rule at the position's own
    /// half-move clock; 0 for a draw at that clock.
    fn probe_dtm50_plies(&self, _pos: &Chess) -> ProbeResult<i32> {
        Ok(None)
    }

    /// DTC at the position's own half-move clock (chesstb).
    fn probe_dtc(&self, _pos: &Chess) -> ProbeResult<Dtc> {
        Ok(None)
    }

    /// The move `shakmaty_syzygy::Tablebase::best_move` picks (the
    /// lichess-compatible mainline) and the DTZ after it; `Some(None)` when
    /// there is no legal move. Only Syzygy answers; the other sources leave
    /// it to [`crate::probe::dtz_best_move`], which follows the same rule.
    fn best_move(&self, _pos: &Chess) -> ProbeResult<Option<BestMove>> {
        Ok(None)
    }

    /// The tables of this source, for `/api/v1/tables`.
    fn tables(&self) -> Vec<TableInfo>;

    /// How far the tables of `material` (e.g. `KPPvK`) are from ready, for a
    /// source that generates them; `None` when nothing is pending.
    fn progress(&self, _material: &str) -> Option<crate::builtin::schedule::Progress> {
        None
    }

    /// Asks for the tables of `material` (and every table it converts into)
    /// to be generated when `start` (refused when they would not fit the
    /// budget or the queue), and tells how far they are; `None` for sources
    /// that generate nothing.
    fn generation(
        &self,
        _material: &crate::builtin::Material,
        _start: bool,
    ) -> Option<
        Result<
            (crate::builtin::schedule::GenerationState, crate::builtin::schedule::Progress),
            crate::builtin::budget::Refusal,
        >,
    > {
        None
    }

    /// What a generating source has refused or could not write.
    fn generation_counters(&self) -> Option<crate::builtin::StoreCounters> {
        None
    }

    /// Where this source waits for tables to be generated: changes whenever
    /// one is ready. `None` for sources that generate nothing.
    fn generated(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// Stops background work (shutdown); probes may fail afterwards.
    fn shutdown(&self) {}

    /// The statistics of the table of `material` (canonical), for sources
    /// that keep them (built-in tables); `Ok(None)` when this source has no
    /// such table.
    fn table_stats(&self, _material: &crate::builtin::Material) -> ProbeResult<Arc<TableStats>> {
        Ok(None)
    }

    /// Counters of a decoded-block cache, for sources that keep one.
    fn block_cache(&self) -> Option<BlockCacheCounts> {
        None
    }

    /// What this source's directories held when it was opened, for sources
    /// that read table files: a rescan that finds the same files unchanged
    /// keeps the source (its maps, library state and caches) instead of
    /// opening it again.
    fn opened_from(&self) -> Option<&DiskSnapshot> {
        None
    }
}

/// The files of a list of table directories, and of their immediate
/// subdirectories (chesstb keeps `wdl/`, `dtz/`, ... under its directory),
/// each with its size, identity and modification and change times: enough
/// to tell a file replaced, truncated, rewritten, renamed or with new
/// permissions from the one that was opened.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiskSnapshot(Vec<FileStamp>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    path: PathBuf,
    bytes: u64,
    modified: Option<std::time::SystemTime>,
    /// Device, inode and change time (nanoseconds) on Unix; zeros elsewhere.
    identity: (u64, u64, i64, i64),
}

impl DiskSnapshot {
    /// Reads the directories now. Unreadable entries count as absent.
    pub fn take(dirs: &[PathBuf]) -> DiskSnapshot {
        let mut stamps = Vec::new();
        for dir in dirs {
            stamp_dir(dir, 1, &mut stamps);
        }
        DiskSnapshot(stamps)
    }
}

fn stamp_dir(dir: &Path, subdir_levels: u32, stamps: &mut Vec<FileStamp>) {
    // Unreadable directories were reported when the source opened them.
    let Ok(paths) = sorted_entries(dir) else { return };
    for path in paths {
        // Follows symbolic links, as the sources do when they open a file.
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if meta.is_dir() {
            if subdir_levels > 0 {
                stamp_dir(&path, subdir_levels - 1, stamps);
            }
            continue;
        }
        #[cfg(unix)]
        let identity = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec())
        };
        #[cfg(not(unix))]
        let identity = (0, 0, 0, 0);
        stamps.push(FileStamp { bytes: meta.len(), modified: meta.modified().ok(), identity, path });
    }
}

/// A source's decoded-block cache, as `/prometheus` shows it.
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockCacheCounts {
    pub hits: u64,
    pub misses: u64,
    /// Blocks dropped to stay within the size limit.
    pub evictions: u64,
    pub bytes: u64,
    /// Answers rebuilt by search found in / missing from the source's cache
    /// of them (chesstb's dropped sides to move); 0 where there is none.
    pub rebuilt_hits: u64,
    pub rebuilt_misses: u64,
}

/// The entries of a directory, sorted.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    Ok(paths)
}

/// The entries of a table directory, sorted. A missing or unreadable
/// directory is logged and yields nothing: it never stops the service.
fn list_dir(dir: &Path, source: Source) -> Vec<PathBuf> {
    match sorted_entries(dir) {
        Ok(paths) => paths,
        Err(err) => {
            tracing::warn!(dir = %dir.display(), %err, source = source.as_str(), "table directory not readable");
            Vec::new()
        }
    }
}
