//! Syzygy WDL50/DTZ50'' tables through `shakmaty-syzygy`, memory-mapped.

use std::{
    fs,
    io::Read,
    path::{Path, PathBuf},
};

use shakmaty::{Chess, Position};
use shakmaty_syzygy::{Dtz, MaybeRounded, Metric, SyzygyError, Tablebase, Wdl};
use tracing::{info, warn};

use super::{ProbeResult, TableError, TableInfo, TableKind, TableSource, list_dir};
use crate::domain::Source;

const WDL_MAGIC: [u8; 4] = [0x71, 0xe8, 0x23, 0x5d];
const DTZ_MAGIC: [u8; 4] = [0xd7, 0x66, 0x0c, 0xa5];

pub struct SyzygySource {
    tablebase: Tablebase<Chess>,
    tables: Vec<TableInfo>,
}

impl SyzygySource {
    /// Indexes every `.rtbw`/`.rtbz` file in `dirs`. Missing directories and
    /// unreadable or malformed files are logged and listed with their problem;
    /// they never stop the others from being served.
    pub fn open(dirs: &[PathBuf]) -> SyzygySource {
        // Safety: table files are opened read-only and must not be modified in
        // place while mapped; the documented update procedure replaces files by
        // rename, which leaves existing maps intact.
        let mut tablebase = unsafe { Tablebase::with_mmap_filesystem() };
        let mut tables = Vec::new();
        for dir in dirs {
            let mut added = 0;
            for path in list_dir(dir, Source::Syzygy) {
                let Some(kind) = table_kind(&path) else { continue };
                let mut info = describe(&path, kind);
                if info.problems.is_empty() {
                    if let Err(err) = tablebase.add_file(&path) {
                        info.problems.push(format!("not added: {err}"));
                    }
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
        SyzygySource { tablebase, tables }
    }

    pub fn tablebase(&self) -> &Tablebase<Chess> {
        &self.tablebase
    }
}

fn table_kind(path: &Path) -> Option<TableKind> {
    match path.extension()?.to_str()? {
        "rtbw" => Some(TableKind::Wdl),
        "rtbz" => Some(TableKind::Dtz),
        _ => None,
    }
}

/// Size and magic checks, cheap enough for start-up.
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
        let mut magic = [0; 4];
        match fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)) {
            Err(err) => problems.push(format!("cannot read: {err}")),
            Ok(()) => {
                let expected = if kind == TableKind::Wdl { WDL_MAGIC } else { DTZ_MAGIC };
                if magic != expected {
                    problems.push(format!("bad magic bytes {magic:02x?}"));
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
    }
}

/// Missing tables and too many pieces mean "not covered"; anything else is a
/// broken table.
fn covered<T>(result: Result<T, SyzygyError>) -> ProbeResult<T> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(SyzygyError::MissingTable { .. } | SyzygyError::TooManyPieces | SyzygyError::Castling) => Ok(None),
        Err(SyzygyError::ProbeFailed { metric, material, error }) => Err(TableError {
            table: format!("{material}.{}", match metric {
                Metric::Wdl => "rtbw",
                Metric::Dtz => "rtbz",
            }),
            reason: error.to_string().lines().next().unwrap_or_default().to_owned(),
        }),
    }
}

impl TableSource for SyzygySource {
    fn source(&self) -> Source {
        Source::Syzygy
    }

    fn max_pieces(&self) -> usize {
        self.tablebase.max_pieces()
    }

    fn probe_wdl(&self, pos: &Chess) -> ProbeResult<Wdl> {
        if pos.board().occupied().count() > self.tablebase.max_pieces() {
            return Ok(None);
        }
        covered(self.tablebase.probe_wdl_after_zeroing(pos))
    }

    fn probe_dtz(&self, pos: &Chess) -> ProbeResult<MaybeRounded<Dtz>> {
        if pos.board().occupied().count() > self.tablebase.max_pieces() {
            return Ok(None);
        }
        covered(self.tablebase.probe_dtz(pos))
    }

    fn tables(&self) -> Vec<TableInfo> {
        self.tables.clone()
    }
}
