//! `tbserver verify --checksums DIR...`: every Syzygy file hashed against the
//! published list (BLAKE3), every chesstb file against its XXH64 trailer, in
//! parallel. Catches what the structural checks cannot: damage inside a
//! Syzygy block.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
    time::Instant,
};

use rayon::prelude::*;

use crate::download::{
    catalog::Catalog,
    check::{Expected, check_file},
    progress::Progress,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Matches; the name of the check (`BLAKE3`, `XXH64 trailer`).
    Match(&'static str),
    Mismatch(String),
    /// A Syzygy file the published list does not name: not trusted.
    Unknown,
}

#[derive(Debug, Clone)]
pub struct FileVerdict {
    pub path: PathBuf,
    pub size_bytes: u64,
    pub verdict: Verdict,
}

#[derive(Debug)]
pub struct ChecksumSummary {
    /// By path.
    pub files: Vec<FileVerdict>,
    /// Listed Syzygy files that none of the directories holds.
    pub listed_not_here: usize,
    pub hashed_bytes: u64,
    pub seconds: f64,
    pub threads: usize,
}

impl ChecksumSummary {
    pub fn bad(&self) -> usize {
        self.files.iter().filter(|f| matches!(f.verdict, Verdict::Mismatch(_))).count()
    }
}

const CHESSTB_FOLDERS: [&str; 5] = ["wdl", "dtz", "dtc", "dtm", "dtm50"];

fn is_chesstb(name: &str) -> bool {
    let ext = name.rsplit('.').next().unwrap_or("");
    chesstb_reader::Kind::ALL.iter().any(|k| k.extension() == ext)
}

/// Table files of `dir`: Syzygy directly in it, chesstb in it or in its
/// `wdl/ dtz/ dtc/ dtm/ dtm50/`.
fn table_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut scan = |d: &Path, syzygy: bool| -> std::io::Result<()> {
        for entry in std::fs::read_dir(d)? {
            let path = entry?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let wanted = (syzygy && (name.ends_with(".rtbw") || name.ends_with(".rtbz"))) || is_chesstb(&name);
            if wanted && path.is_file() {
                out.push(path);
            }
        }
        Ok(())
    };
    scan(dir, true)?;
    for sub in CHESSTB_FOLDERS {
        let d = dir.join(sub);
        if d.is_dir() {
            scan(&d, false)?;
        }
    }
    Ok(out)
}

/// Hashes every table file of `dirs` on all cores.
pub fn verify_checksums(dirs: &[PathBuf]) -> std::io::Result<ChecksumSummary> {
    let catalog = Catalog::syzygy();
    let mut paths = Vec::new();
    for dir in dirs {
        paths.extend(table_files(dir).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?);
    }
    paths.sort();
    let total_bytes: u64 = paths.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let progress = Progress::new(total_bytes, "hashing");
    let hashed = AtomicU64::new(0);
    let started = Instant::now();
    let files: Vec<FileVerdict> = paths
        .par_iter()
        .map(|path| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let size_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            let expected = if is_chesstb(&name) {
                Some(Expected::ChesstbTrailer { size_bytes: None })
            } else {
                catalog.get(&name).cloned().map(Expected::Published)
            };
            let verdict = match expected {
                None => Verdict::Unknown,
                Some(expected) => {
                    let count = |n: u64| {
                        hashed.fetch_add(n, Ordering::Relaxed);
                        progress.add(n as i64);
                    };
                    match check_file(path, &expected, &count) {
                        Ok(Ok(())) => Verdict::Match(expected.check_name()),
                        Ok(Err(why)) => Verdict::Mismatch(why),
                        Err(e) => Verdict::Mismatch(format!("cannot read: {e}")),
                    }
                }
            };
            FileVerdict { path: path.clone(), size_bytes, verdict }
        })
        .collect();
    progress.finish();
    let here: BTreeSet<String> =
        paths.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
    let listed_not_here = catalog.iter().filter(|(n, _)| !here.contains(*n)).count();
    Ok(ChecksumSummary {
        files,
        listed_not_here,
        hashed_bytes: hashed.load(Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
        threads: rayon::current_num_threads(),
    })
}
