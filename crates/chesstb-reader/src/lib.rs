//! A reader of chesstb's shipping format (GitHub `noobpwnftw/chesstb`):
//! WDL, DTZ, DTM and the DTM50 pack (exact DTM50 at every half-move clock
//! 0–99) for up to 6 pieces, read from the files users download, apart from
//! tbserver's own generator. Written from chesstb's README and probe sources;
//! no code was copied.
//!
//! # The format, as this reader understands it
//!
//! **Files.** `wdl/<M>.lzw`, `dtz/<M>.lzdtz`, `dtc/<M>.lzdtc`, `dtm/<M>.lzdtm`,
//! `dtm50/<M>.lzdtm50` (plus `.info` text files, ignored). `<M>` names the
//! material with the stronger side first (`KRKB`, never `KBKR`): strength
//! Q 900, R 500, B 330, N 320, P 100, ties broken by more queens, rooks, …
//! The side named first is "white" inside the table; a position whose colours
//! are the other way round is mirrored (colours swapped, ranks flipped).
//! A file's size is 64·n + 8: the last 8 bytes are XXH64 of everything
//! before, seeded with `0xf0f0f0f0f0f0` (checked by `tbserver verify`).
//!
//! **Header.** `u32` magic per kind; `u32` = material key << 2 | frames,
//! the key being base-9 digits per piece (white Q 9⁴ … P 1, black Q 9⁹ …
//! P 9⁵), the smaller of both orientations. Frames is 2, or 1 for a
//! symmetric material (the second side to move is the first mirrored). Per
//! frame a flag byte: `0x80` one value for the whole frame (the next byte),
//! `0x40` dropped by `shrink` (rebuilt at probe time by a one-ply search
//! over the children), `0x20` losses only (wins rebuilt the same way),
//! `0x10` relaxed WDL (the stored class is a lower bound; the probe takes the
//! max with the best capture or promotion). A stored frame continues with a
//! `u32` permutation of the non-pawn piece classes, then per kind:
//! WDL `u16` tail bytes, `u32` block bytes, `u64` blocks, `u64` data bytes;
//! DTZ/DTM `u8` entry bytes (1 or 2), `u32` tail, `u32` block bytes, `u64`
//! blocks, `u64` data bytes, `u16` n + n `u16` rank→value; DTM50/DTC the same
//! but `u32` positions per block, `u64` blocks, `u32` positions in the last.
//! After all frames: WDL dictionaries (`u16` size + bytes) per stored frame;
//! per stored frame an offset section (`u8` log2 bucket, sample width, delta
//! width, block-size width; samples and deltas bit-packed LSB first: block i
//! spans offsets[i]..offsets[i+1] of the frame's data, an empty span is an
//! all-draw/illegal block); for packs also the bit-packed uncompressed size
//! of each block; then each frame's data, aligned to 64 bytes.
//!
//! **Blocks.** WDL: LZ4 blocks with the frame's dictionary, 4-bit codes two
//! per byte (0 loss, 1 blessed loss, 2 draw, 3 cursed win, 4 win, 5/6 a
//! loss/win at exactly the 50-move edge, 7 illegal). The others: raw LZMA1
//! (no end marker) whose 5 property bytes follow the stream; DTZ/DTM hold
//! ranks (1 or 2 bytes) into the rank table. DTM values are halved (win
//! 2v+1, loss 2v plies); DTZ cursed values are halved in the 1-byte tier.
//!
//! **Index.** King pair first: pawnless tables use the 8 symmetries of the
//! board (white king in a1–d1–d4, 462 placements; with both kings on the
//! long diagonal the smaller of the two diagonal reflections of the pieces
//! counts), tables with pawns the file mirror (1806). Pawns (squares a2–h7)
//! form slices: black placement × white placements disjoint from it. Each
//! other class (colour × role, in the order black N B R Q, white N B R Q,
//! then permuted per frame) is a colex rank over all 64 squares; overlaps
//! stay as unused slots. index = (pawn slice · 1806 + king slice) · Π sizes
//! + Σ rank · weight.
//!
//! **DTM50 pack.** One record per position over 101 layers: layer 0 plain
//! DTM, layer k + 1 DTM50 at clock k. 2-bit states per position (CONST,
//! SINGLE `[h, r0, r1]`, DOUBLE `[h1, h2, r0, r1, r2]`, MULTI `[k, 128-bit
//! changepoint bitmap, k ranks]`), the top bit of the last `h` (or `k`)
//! saying the record ends in DRAW (its last rank left out). The class comes
//! from the WDL file; the layer where a record turns DRAW gives DTZ = 102 − h.
//! DTC packs have the same layout with 30 layers: pack index 0 is the DTZ
//! row, index j the budget of 29 − j pawn pushes. A record's values are plies
//! to the next zeroing move, rising with the index; at a clock the answer is
//! the last segment whose value fits `100 − clock` plies: its budget
//! (29 − the segment's last index) is the pushes the winner owes before a
//! capture or promotion, its value the plies to the next zeroing move (the
//! conversion itself at 0 pushes). None fits, or a cursed class: drawn at
//! that clock. Pawnless materials have no DTC file: DTC is DTZ there.
//!
//! # Supported here
//! All of the above for WDL, DTZ, DTM and DTM50, including dropped frames,
//! loss-only and relaxed frames, en passant, and symmetric materials; DTC at
//! the position's clock, with dropped frames rebuilt the way chesstb's
//! prober does (a win takes the move owing the fewest pushes, a loss the
//! budget its most stubborn defence forces). Opposing-pair tables (`p` in
//! the name, below). Not supported: 7-piece index sizes beyond 64 bits.
//!
//! **Opposing-pair tables.** `KQpKp` holds the positions of `KQPKP` that
//! have an opposing pair (a white pawn below a black one on a file, ranks
//! 2–7). The pair of the lowest file, then white rank, then black rank
//! (chosen after the king symmetry) is indexed as one of 120 placements;
//! the header's material key is that of the other pieces (`KQK`), so the
//! file name tells the tables apart. Pawn cells are numbered pair + 120 ·
//! (free white pawns' rank + C(48, white) · free black pawns' rank); a pawn
//! slice is the rank of its cell among those whose pawns do not collide
//! and whose pair is that lowest one. chesstb's prober answers from the pair
//! table whenever the position has a pair and the table's WDL file exists,
//! at every node of a search too; so does this reader.

#![warn(missing_docs)]

mod cache;
mod file;
mod index;
mod material;
mod probe;
mod rebuilt;

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, OnceLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use rustc_hash::FxHashMap;
use shakmaty::{Chess, Position};

use tbcache::Recent;

pub(crate) use cache::CacheStats;
pub use file::{Kind, TrailerChecksum};
pub(crate) use index::IndexParts;
pub use material::TableMaterial;
pub use probe::{Class, Conversion, Mate, Values};
pub use rebuilt::RebuiltStats;

/// A chesstb table that exists but could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("table {table}: {reason}")]
pub struct ProbeError {
    /// The file, e.g. `dtm50/KQKR.lzdtm50`.
    pub table: String,
    /// What is wrong with it.
    pub reason: String,
}

struct Slot {
    /// Names the file in the open-file and block caches: the same on every
    /// reopening, so blocks decoded before a close are used again.
    id: u32,
    path: PathBuf,
    bytes: u64,
    /// Why the file cannot be read, once an opening found out: it is not
    /// tried again (the file is listed with this problem).
    broken: OnceLock<String>,
    /// Set when a mapping of the file lost pages (truncated in place, a disk
    /// read error): refused from then on, like a broken file, and decoded
    /// blocks of it are never used again.
    lost: Arc<AtomicBool>,
}

#[derive(Default)]
struct OpenStats {
    opened: AtomicU64,
    closed: AtomicU64,
}

/// Counts of opened files (what the bound on open files does).
#[derive(Debug, Clone, Copy)]
pub struct OpenFiles {
    /// Files opened (mapped) since the start.
    pub opened: u64,
    /// Files closed to stay within the open-file budget.
    pub closed: u64,
    /// Files open now.
    pub open_now: u64,
    /// The most files kept open at once.
    pub max_open: u64,
}

/// Open files by slot id (small numbers, not chosen by users: a fast hash).
type OpenFileMap = moka::sync::Cache<u32, Arc<file::TableFile>, rustc_hash::FxBuildHasher>;

fn open_file_cache(max: u64, stats: &Arc<OpenStats>) -> OpenFileMap {
    let stats = Arc::clone(stats);
    moka::sync::Cache::builder()
        .max_capacity(max)
        // Least recently used out: a newly opened file is always kept (the
        // default policy may refuse it and reopen it on every probe).
        .eviction_policy(moka::policy::EvictionPolicy::lru())
        .eviction_listener(move |_, file: Arc<file::TableFile>, _| {
            file.closed.store(true, Ordering::Relaxed);
            stats.closed.fetch_add(1, Ordering::Relaxed);
        })
        .build_with_hasher(rustc_hash::FxBuildHasher)
}

/// A listed file, for `/api/v1/tables` and `verify`.
#[derive(Debug, Clone)]
pub struct FileInfo {
    /// The table's file name without its extension, e.g. `KQKR`.
    pub name: String,
    /// Its material.
    pub material: TableMaterial,
    /// Which metric the file holds.
    pub kind: Kind,
    /// Where the file is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Files kept open (memory-mapped) at once unless configured.
pub const DEFAULT_MAX_OPEN_FILES: u64 = 1024;

/// All chesstb tables found in some directories, opened on first use; at
/// most `max_open_files` stay open, the least recently used closed first.
pub struct Chesstb {
    /// Looked up several times per probe: a fast hash, not SipHash.
    slots: FxHashMap<(TableMaterial, Kind), Slot>,
    /// Open files by slot id. A closed file's mapping goes when the last
    /// probe using it ends. moka: concurrent reads, one opening per file at
    /// a time (the others wait for that file only).
    open_files: OpenFileMap,
    max_open_files: u64,
    open_stats: Arc<OpenStats>,
    cache: cache::BlockCache,
    rebuilt: rebuilt::RebuiltCache<probe::Rebuilt>,
    max_pieces: usize,
    /// Whether any opposing-pair table was found: spares every probe the
    /// search for a pair when none can answer.
    has_pair_tables: bool,
}

thread_local! {
    /// The files a thread used last, by slot id. A probe reads a few files
    /// many times (WDL, then the pack, for the position and each child of a
    /// search), and the shared map costs a hash and its bookkeeping on
    /// every read. Entries name their reader by its block cache's id.
    static RECENT: std::cell::RefCell<Recent<u32, Arc<file::TableFile>, 4>> = const { std::cell::RefCell::new(Recent::new()) };
}

impl Chesstb {
    /// Indexes `dirs` (each either holding `wdl/ dtz/ dtc/ dtm/ dtm50/` or
    /// the files themselves; the first file found for a name wins) with
    /// caches of `cache_bytes` in all: seven eighths for decoded blocks, one
    /// eighth for answers rebuilt by search (a dropped side to move).
    pub fn open(dirs: &[PathBuf], cache_bytes: u64) -> Chesstb {
        let rebuilt_bytes = cache_bytes / 8;
        Self::open_with_caches(dirs, cache_bytes - rebuilt_bytes, rebuilt_bytes)
    }

    /// As [`Chesstb::open`] with each cache's size given: `block_bytes` for
    /// decoded blocks, `rebuilt_bytes` for rebuilt answers (0: none kept,
    /// every probe of a dropped side searches; for comparisons).
    pub fn open_with_caches(dirs: &[PathBuf], block_bytes: u64, rebuilt_bytes: u64) -> Chesstb {
        let mut slots = FxHashMap::default();
        let mut next_id = 0u32;
        for dir in dirs {
            let mut candidates = vec![dir.clone()];
            candidates.extend(["wdl", "dtz", "dtc", "dtm", "dtm50"].iter().map(|s| dir.join(s)));
            for d in candidates {
                let Ok(entries) = std::fs::read_dir(&d) else { continue };
                let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
                paths.sort();
                for path in paths {
                    let Some((material, kind)) = Self::classify(&path) else { continue };
                    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                    slots.entry((material, kind)).or_insert_with(|| {
                        next_id += 1;
                        Slot { id: next_id, path, bytes, broken: OnceLock::new(), lost: Arc::default() }
                    });
                }
            }
        }
        let max_pieces = slots.keys().map(|(m, _)| m.pieces()).max().unwrap_or(0);
        let has_pair_tables = slots.keys().any(|(m, _)| m.pair);
        let open_stats = Arc::new(OpenStats::default());
        Chesstb {
            slots,
            open_files: open_file_cache(DEFAULT_MAX_OPEN_FILES, &open_stats),
            max_open_files: DEFAULT_MAX_OPEN_FILES,
            open_stats,
            cache: cache::BlockCache::new(block_bytes),
            rebuilt: rebuilt::RebuiltCache::new(rebuilt_bytes),
            max_pieces,
            has_pair_tables,
        }
    }

    /// Keeps at most `n` files open (at least 1).
    pub fn with_max_open_files(mut self, n: u64) -> Chesstb {
        self.max_open_files = n.max(1);
        self.open_files = open_file_cache(self.max_open_files, &self.open_stats);
        self
    }

    /// Files opened and closed so far, and open now.
    pub fn open_files(&self) -> OpenFiles {
        self.open_files.run_pending_tasks();
        OpenFiles {
            opened: self.open_stats.opened.load(Ordering::Relaxed),
            closed: self.open_stats.closed.load(Ordering::Relaxed),
            open_now: self.open_files.entry_count(),
            max_open: self.max_open_files,
        }
    }

    fn classify(path: &Path) -> Option<(TableMaterial, Kind)> {
        let kind = Kind::from_extension(path.extension()?.to_str()?)?;
        let material = TableMaterial::parse(path.file_stem()?.to_str()?)?;
        Some((material, kind))
    }

    /// The most pieces (kings included) of any table found.
    pub fn max_pieces(&self) -> usize {
        self.max_pieces
    }

    /// Counters of the decoded-block cache.
    pub fn cache_stats(&self) -> &CacheStats {
        &self.cache.stats
    }

    /// Counters of the cache of answers rebuilt by a one-ply search (frames `shrink` dropped).
    pub fn rebuilt_stats(&self) -> &RebuiltStats {
        &self.rebuilt.stats
    }

    /// Bytes the decoded-block cache holds now.
    pub fn cache_bytes(&self) -> u64 {
        self.cache.weighted_bytes()
    }

    /// The files found, sorted by pieces and name.
    pub fn files(&self) -> Vec<FileInfo> {
        let mut out: Vec<FileInfo> = self
            .slots
            .iter()
            .map(|((material, kind), s)| FileInfo {
                name: s.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                material: *material,
                kind: *kind,
                path: s.path.clone(),
                bytes: s.bytes,
            })
            .collect();
        out.sort_by(|a, b| (a.material.pieces(), &a.name).cmp(&(b.material.pieces(), &b.name)));
        out
    }

    /// Opens a file (once) and, with `checksum`, checks its XXH64.
    pub fn check(&self, material: &TableMaterial, kind: Kind, checksum: bool) -> Result<(), String> {
        let f = self.file(material, kind).map_err(|e| e.reason)?.ok_or("not found")?;
        if checksum && !f.checksum_ok() {
            return Err("XXH64 checksum mismatch".into());
        }
        match self.missing_companion(material, kind) {
            Some(problem) => Err(problem),
            None => Ok(()),
        }
    }

    /// A DTZ, DTC, DTM or DTM50 file without the WDL file of its material,
    /// which gives the win/loss class its values need.
    fn missing_companion(&self, material: &TableMaterial, kind: Kind) -> Option<String> {
        (kind != Kind::Wdl && !self.slots.contains_key(&(*material, Kind::Wdl)))
            .then(|| "its WDL companion (which gives the win/loss class) is missing".into())
    }

    /// A problem of a listed file known without opening it: its size, a
    /// missing WDL companion, or what an earlier opening found.
    pub fn known_problem(&self, material: &TableMaterial, kind: Kind) -> Option<String> {
        let slot = self.slots.get(&(*material, kind))?;
        if let Some(reason) = slot.broken.get() {
            return Some(reason.clone());
        }
        if slot.lost.load(Ordering::Acquire) {
            return Some(file::lost_pages());
        }
        file::size_problem(slot.bytes).or_else(|| self.missing_companion(material, kind))
    }

    fn file(&self, material: &TableMaterial, kind: Kind) -> Result<Option<Arc<file::TableFile>>, ProbeError> {
        let Some(slot) = self.slots.get(&(*material, kind)) else { return Ok(None) };
        let error = |reason: String| ProbeError {
            table: slot.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            reason,
        };
        if let Some(reason) = slot.broken.get() {
            return Err(error(reason.clone()));
        }
        if slot.lost.load(Ordering::Acquire) {
            return Err(error(file::lost_pages()));
        }
        if let Some(f) = self.recent_file(slot.id) {
            return Ok(Some(f));
        }
        let opened = self.open_files.try_get_with(slot.id, || {
            let f = file::TableFile::open(slot.id, &slot.path, kind, *material, Arc::clone(&slot.lost))?;
            self.open_stats.opened.fetch_add(1, Ordering::Relaxed);
            Ok::<_, String>(Arc::new(f))
        });
        let f = opened.map_err(|reason| {
            let _ = slot.broken.set(reason.to_string());
            error(reason.to_string())
        })?;
        RECENT.with_borrow_mut(|r| r.remember(self.cache.id, slot.id, Arc::clone(&f)));
        Ok(Some(f))
    }

    /// File `id` from the thread's memo until the open-file map closes
    /// it: a closed file is dropped from the memo rather than used, so
    /// that its mapping goes with the last probe using it. A read through
    /// the memo does not refresh the file in the map's order: a file read
    /// only that way can be closed and opened again, which costs an
    /// opening, never a wrong answer.
    fn recent_file(&self, id: u32) -> Option<Arc<file::TableFile>> {
        RECENT.with_borrow_mut(|r| {
            let f = r.find(self.cache.id, &id)?;
            if !f.closed.load(Ordering::Relaxed) {
                return Some(Arc::clone(f));
            }
            r.forget(self.cache.id, &id);
            None
        })
    }

    /// Whether a WDL table covers the material of `pos` (an opposing-pair
    /// table's included).
    pub fn covers(&self, pos: &Chess) -> bool {
        let (m, _) = self.routed(pos.board()).canonical();
        self.slots.contains_key(&(m, Kind::Wdl))
    }

    /// The name of the table that answers for `pos` (`KQpKp` when an
    /// opposing-pair table does), whether or not it is there.
    pub fn table_name(&self, pos: &Chess) -> String {
        self.routed(pos.board()).canonical().0.name()
    }

    /// Whether the files store `pos`'s side to move (WDL and DTM50 pack),
    /// rather than leave it to be rebuilt by a one-ply search at probe time
    /// (chesstb's `shrink`). `None` if no table covers the position.
    pub fn stores_side_to_move(&self, pos: &Chess) -> Result<Option<bool>, ProbeError> {
        self.stored(pos)
    }

    /// Whether the `kind` file stores `pos`'s side to move: chesstb's
    /// `shrink` may keep one side in the WDL file and the other in the DTM50
    /// pack. `None` if there is no such file for the material.
    pub fn stores_side_to_move_in(&self, pos: &Chess, kind: Kind) -> Result<Option<bool>, ProbeError> {
        self.stored_in(pos, kind)
    }

    /// WDL at clock 0 (en passant included); `None` if no table covers it.
    pub fn probe_wdl(&self, pos: &Chess) -> Result<Option<Class>, ProbeError> {
        if !self.covers(pos) {
            return Ok(None);
        }
        probe::new_probe();
        self.wdl(pos, 0)
    }

    /// DTM50 at every clock 0–99 (`None` entries: not priced); `None` if no
    /// table covers the position. Equal to [`Chesstb::probe`] clock by
    /// clock, at the cost of about one probe.
    pub fn dtm50_curve(&self, pos: &Chess) -> Result<Option<Vec<Option<Mate>>>, ProbeError> {
        if !self.covers(pos) {
            return Ok(None);
        }
        probe::new_probe();
        self.curve(pos)
    }

    /// WDL, DTZ, DTM and, with `clock`, DTM50 at that half-move clock.
    /// `None` if no table covers the position.
    pub fn probe(&self, pos: &Chess, clock: Option<u32>) -> Result<Option<Values>, ProbeError> {
        if !self.covers(pos) {
            return Ok(None);
        }
        probe::new_probe();
        self.values(pos, clock, 0)
    }

    /// As [`Chesstb::probe`] at `clock`, with DTC (`Values::dtc`) too.
    pub fn probe_with_dtc(&self, pos: &Chess, clock: u32) -> Result<Option<Values>, ProbeError> {
        if !self.covers(pos) {
            return Ok(None);
        }
        probe::new_probe();
        self.values_with(pos, Some(clock), true, 0)
    }
}

/// How chesstb indexes one position, as this reader computes it: the table
/// (stronger side first), whether the board was mirrored to reach it, the
/// side to move in the table's colours, and the index under the class order
/// `perm` (a frame's stored permutation) with what it was composed of.
/// Compared in the tests with chesstb's own indexing code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexTrace {
    /// The table the position is indexed in, e.g. `KQKR`.
    pub table: String,
    /// Whether the position was mirrored (colours swapped) to fit the table.
    pub mirrored: bool,
    /// 0: the side named first is to move.
    pub side: usize,
    /// How the index was composed.
    pub parts: IndexParts,
}

/// [`IndexTrace`] of `pos` under class order `perm` in its full material's
/// table; `None` if the permutation is out of range or the position outside
/// the index.
pub fn index_trace(pos: &Chess, perm: u32) -> Option<IndexTrace> {
    trace_in(pos, TableMaterial::of_board(pos.board()), perm)
}

/// As [`index_trace`], in the opposing-pair table (`p` in the name) of a
/// position with an opposing pair; `None` without one.
pub fn pair_index_trace(pos: &Chess, perm: u32) -> Option<IndexTrace> {
    trace_in(pos, TableMaterial::pair_of_board(pos.board())?, perm)
}

fn trace_in(pos: &Chess, on_board: TableMaterial, perm: u32) -> Option<IndexTrace> {
    let c = probe::canon_in(pos, on_board);
    let config = index::IndexConfig::new(&c.material)?;
    let parts = config.index_parts(&config.layout(perm)?, &c.placement)?;
    let mirrored = on_board.canonical().1;
    Some(IndexTrace { table: c.material.name(), mirrored, side: c.side, parts })
}
