//! Syzygy WDL50/DTZ50'' tables through `shakmaty-syzygy`, memory-mapped.

use std::{
    collections::BTreeMap,
    fs,
    io::Read,
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use shakmaty::{Chess, Position};
use shakmaty_syzygy::{
    Dtz, MaybeRounded, Metric, ProbeError, SyzygyError, Tablebase, Wdl,
    filesystem::{Filesystem, RandomAccessFile, ReadHint},
};
use tracing::{info, warn};

use super::{BestMove, DiskSnapshot, ProbeResult, TableError, TableInfo, TableKind, TableSource, list_dir};
use crate::{config::SyzygyIo, domain::Source};

const WDL_MAGIC: [u8; 4] = [0x71, 0xe8, 0x23, 0x5d];
const DTZ_MAGIC: [u8; 4] = [0xd7, 0x66, 0x0c, 0xa5];

pub(crate) struct SyzygySource {
    tablebase: Tablebase<Chess>,
    tables: Vec<TableInfo>,
    /// Files present but refused at start-up, by table name: a probe that
    /// needs one is a `table_error`, not a missing table.
    refused: BTreeMap<String, String>,
    /// Problems found by probes (tables are opened on first use), by table
    /// name, so that `/api/v1/tables` lists them too.
    found: Mutex<BTreeMap<String, String>>,
    io: SyzygyIo,
    opened_from: DiskSnapshot,
}

impl SyzygySource {
    /// Indexes every `.rtbw`/`.rtbz` file in `dirs`. Missing directories and
    /// unreadable or malformed files are logged and listed with their problem;
    /// they never stop the others from being served.
    pub fn open(dirs: &[PathBuf], io: SyzygyIo) -> SyzygySource {
        let opened_from = DiskSnapshot::take(dirs);
        let mut tablebase = match io {
            SyzygyIo::Mmap => Tablebase::with_filesystem(Arc::new(GuardedFilesystem)),
            SyzygyIo::Read => Tablebase::new(),
        };
        let mut tables = Vec::new();
        for dir in dirs {
            let mut added = 0;
            for path in list_dir(dir, Source::Syzygy) {
                let Some((kind, exact)) = table_kind(&path) else { continue };
                let mut info = describe(&path, kind);
                if !exact {
                    info.problems.push("extension not lower-case: not used (tables are *.rtbw, *.rtbz)".to_owned());
                }
                if info.problems.is_empty()
                    && let Err(err) = tablebase.add_file(&path)
                {
                    info.problems.push(format!("not added: {err}"));
                }
                if info.problems.is_empty() {
                    added += 1;
                } else {
                    warn!(table = %info.name, problems = ?info.problems, "broken syzygy table");
                }
                tables.push(info);
            }
            info!(dir = %dir.display(), tables = added, "syzygy directory indexed");
        }
        let refused = tables
            .iter()
            .filter(|t| !t.problems.is_empty() && t.material.contains('v'))
            .map(|t| {
                (
                    format!("{}.{}", t.material, if t.kind == TableKind::Wdl { "rtbw" } else { "rtbz" }),
                    t.problems.join("; "),
                )
            })
            .collect();
        SyzygySource { tablebase, tables, refused, found: Mutex::default(), io, opened_from }
    }

    /// Missing tables and too many pieces mean "not covered", unless the
    /// table's file is there but was refused; anything else is a broken table.
    fn covered<T>(&self, result: Result<T, SyzygyError>) -> Result<Option<T>, TableError> {
        match result {
            Ok(v) => Ok(Some(v)),
            Err(SyzygyError::MissingTable { metric, material }) => {
                let table = file_name(&material, metric);
                match self.refused.get(&table) {
                    Some(reason) => Err(TableError { table, reason: reason.clone() }),
                    None => Ok(None),
                }
            }
            Err(SyzygyError::TooManyPieces | SyzygyError::Castling) => Ok(None),
            Err(SyzygyError::ProbeFailed { metric, material, error }) => Err(TableError {
                table: file_name(&material, metric),
                reason: match *error {
                    // Its display carries a backtrace (when enabled); the name says it.
                    ProbeError::CorruptedTable { .. } => "corrupted table (truncated or damaged)".to_owned(),
                    other => other.to_string(),
                },
            }),
        }
    }

    /// Probes through [`SyzygySource::covered`]. A panic inside the table code (a table
    /// corrupted beyond what its checks catch) becomes an error naming the
    /// position's table rather than a lost request. Errors are remembered so
    /// that `/api/v1/tables` lists them.
    fn guarded<T>(
        &self,
        pos: &Chess,
        metric: Metric,
        probe: impl FnOnce() -> Result<T, SyzygyError>,
    ) -> ProbeResult<T> {
        let result = catch_unwind(AssertUnwindSafe(probe)).map_or_else(
            |panic| {
                let what = crate::panics::message(&*panic).unwrap_or_default();
                let material = crate::material::normalized(pos.board());
                Err(TableError { table: file_name(&material, metric), reason: format!("table code panicked: {what}") })
            },
            |result| self.covered(result),
        );
        if let Err(err) = &result
            && !self.refused.contains_key(&err.table)
        {
            self.found.lock().unwrap_or_else(|e| e.into_inner()).insert(err.table.clone(), err.reason.clone());
        }
        result.map_err(Into::into)
    }

    /// One piece more than the largest table can still be answered when a
    /// capture wins (the library resolves captures first, as lichess's
    /// server does); two more never can, so those are not even tried.
    fn beyond_reach(&self, pos: &Chess) -> bool {
        pos.board().occupied().count() > self.tablebase.max_pieces() + 1
    }
}

/// Memory-mapped table files whose lost pages (a file truncated in place, a
/// disk read error) fail the reads that meet them, through [`mapguard`].
pub(crate) struct GuardedFilesystem;

impl Filesystem for GuardedFilesystem {
    fn regular_file_size(&self, path: &Path) -> std::io::Result<u64> {
        let meta = fs::metadata(path)?;
        if !meta.is_file() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
        }
        Ok(meta.len())
    }

    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<PathBuf>> {
        fs::read_dir(path)?.map(|e| e.map(|e| e.path())).collect()
    }

    fn open(&self, path: &Path) -> std::io::Result<Box<dyn RandomAccessFile>> {
        let file = fs::File::open(path)?;
        // SAFETY: table files are opened read-only and are replaced by
        // rename, never rewritten in place; pages lost while mapped (a file
        // truncated in place, a read error) are contained by `mapguard`.
        let map = unsafe { mapguard::GuardedMap::map(&file)? };
        Ok(Box::new(GuardedFile(map)))
    }
}

struct GuardedFile(mapguard::GuardedMap);

impl RandomAccessFile for GuardedFile {
    #[inline]
    fn read_at(&self, buf: &mut [u8], offset: u64, _hint: ReadHint) -> std::io::Result<usize> {
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|start| self.0.get(start..start.checked_add(buf.len())?))
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(bytes);
        if self.0.faulted() {
            return Err(std::io::Error::other(format!("{}: replace it and rescan", mapguard::LOST_PAGES)));
        }
        Ok(buf.len())
    }
}

/// The kind of table a file name says, and whether its extension is spelled
/// exactly (`KQvK.RTBW` is listed as a problem rather than silently skipped).
fn table_kind(path: &Path) -> Option<(TableKind, bool)> {
    let ext = path.extension()?.to_str()?;
    let kind = match ext.to_ascii_lowercase().as_str() {
        "rtbw" => TableKind::Wdl,
        "rtbz" => TableKind::Dtz,
        _ => return None,
    };
    Some((kind, ext == ext.to_ascii_lowercase()))
}

/// Bytes read at start-up: magic, layout and the first piece list.
const HEADER_PROBE_BYTES: usize = 16;

/// Whether the header's first piece list is the material the file name says
/// (either colour first), so that a table saved under the wrong name is
/// refused at start-up instead of on first use. Layout as in
/// `shakmaty-syzygy`: byte 4 flags (bit 1: pawns), then one order byte (two
/// when both sides have pawns), then one nibble-coded piece per byte.
fn check_header_material(header: &[u8], material: &str) -> Result<(), String> {
    let Some((white, black)) = material.split_once('v') else {
        return Err(format!("file name {material:?} is not a material key"));
    };
    let has_pawns = material.contains('P');
    let both_pawns = white.contains('P') && black.contains('P');
    let start = 6 + usize::from(both_pawns);
    let count = white.len() + black.len();
    let pieces = header.get(start..start + count).ok_or("header shorter than its piece list")?;
    if (header[4] & 2 != 0) != has_pawns {
        return Err(format!("header pawn flag does not match {material}"));
    }
    let sorted = |s: &str| {
        let mut v: Vec<char> = s.chars().collect();
        v.sort_unstable();
        v
    };
    let (mut w, mut b) = (String::new(), String::new());
    for p in pieces {
        let (side, nibble) = if p & 8 == 0 { (&mut w, p & 7) } else { (&mut b, p & 7) };
        side.push(*b"?PNBRQK".get(usize::from(nibble)).unwrap_or(&b'?') as char);
    }
    let (w, b) = (sorted(&w), sorted(&b));
    if (w == sorted(white) && b == sorted(black)) || (w == sorted(black) && b == sorted(white)) {
        Ok(())
    } else {
        Err(format!(
            "holds {}v{}, not {material} (wrongly named)",
            w.iter().collect::<String>(),
            b.iter().collect::<String>()
        ))
    }
}

/// Size, magic and header material checks, cheap enough for start-up.
fn describe(path: &Path, kind: TableKind) -> TableInfo {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let material = name.split('.').next().unwrap_or_default().to_owned();
    let pieces = material.chars().filter(|c| c.is_ascii_uppercase()).count();
    let mut problems = Vec::new();
    let bytes = match fs::metadata(path) {
        Ok(meta) => meta.len(),
        Err(err) => {
            problems.push(format!("cannot read metadata: {err}"));
            0
        }
    };
    if problems.is_empty() {
        if bytes % 64 != 16 {
            problems.push(format!("unexpected size {bytes} bytes (truncated or not a Syzygy table)"));
        }
        let mut header = Vec::with_capacity(HEADER_PROBE_BYTES);
        match fs::File::open(path).and_then(|f| f.take(HEADER_PROBE_BYTES as u64).read_to_end(&mut header)) {
            Err(err) => problems.push(format!("cannot read: {err}")),
            Ok(_) => {
                let expected = if kind == TableKind::Wdl { WDL_MAGIC } else { DTZ_MAGIC };
                if header.get(..4) != Some(&expected[..]) {
                    problems.push(format!("bad magic bytes {:02x?}", &header[..header.len().min(4)]));
                } else if let Err(problem) = check_header_material(&header, &material) {
                    problems.push(problem);
                }
            }
        }
    }
    TableInfo {
        name,
        material,
        kind,
        source: Source::Syzygy,
        pieces,
        bytes,
        path: Some(path.display().to_string()),
        problems,
        has_stats: false,
    }
}

/// `KQvK.rtbw`
fn file_name(material: &impl std::fmt::Display, metric: Metric) -> String {
    let ext = match metric {
        Metric::Wdl => "rtbw",
        Metric::Dtz => "rtbz",
    };
    format!("{material}.{ext}")
}

impl TableSource for SyzygySource {
    fn source(&self) -> Source {
        Source::Syzygy
    }

    fn max_pieces(&self) -> usize {
        self.tablebase.max_pieces()
    }

    /// Mapped tables are read from the page cache (a table's first probe
    /// opens and maps its file); `syzygy_io = read` reads the file each time.
    fn probes_memory_only(&self) -> bool {
        self.io == SyzygyIo::Mmap
    }

    fn probe_wdl(&self, pos: &Chess) -> ProbeResult<Wdl> {
        if self.beyond_reach(pos) {
            return Ok(None);
        }
        self.guarded(pos, Metric::Wdl, || self.tablebase.probe_wdl_after_zeroing(pos))
    }

    fn probe_dtz(&self, pos: &Chess) -> ProbeResult<MaybeRounded<Dtz>> {
        if self.beyond_reach(pos) {
            return Ok(None);
        }
        self.guarded(pos, Metric::Dtz, || self.tablebase.probe_dtz(pos))
    }

    fn best_move(&self, pos: &Chess) -> ProbeResult<Option<BestMove>> {
        if self.beyond_reach(pos) {
            return Ok(None);
        }
        self.guarded(pos, Metric::Dtz, || self.tablebase.best_move(pos))
    }

    fn opened_from(&self) -> Option<&DiskSnapshot> {
        Some(&self.opened_from)
    }

    fn tables(&self) -> Vec<TableInfo> {
        let found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        let mut tables = self.tables.clone();
        for table in &mut tables {
            if let Some(reason) = found.get(&table.name) {
                table.problems.push(format!("failed when probed: {reason}"));
            }
        }
        tables
    }
}
