//! Gaviota DTM tables through `gaviota-sys`.
//!
//! libgtb keeps its state in process-wide globals, so there is one library
//! state per process behind a lock: probes share it, re-initialising with other
//! paths takes it exclusively.

use std::{
    collections::BTreeMap,
    ffi::{CStr, CString, c_char, c_int, c_uchar, c_uint},
    fs,
    path::PathBuf,
    sync::{Mutex, RwLock},
};

use gaviota_sys as gtb;
use shakmaty::{Chess, Color, EnPassantMode, Position, Role};
use tracing::info;

use super::{DiskSnapshot, ProbeResult, TableError, TableInfo, TableKind, TableSource, list_dir};
use crate::domain::Source;

/// The library's global state: which paths it was initialised with.
struct LibState {
    dirs: Vec<PathBuf>,
    cache_bytes: usize,
    paths: *mut *const c_char,
}

// Safety: the raw pointer is only touched while holding `LIB`'s write lock.
unsafe impl Send for LibState {}
unsafe impl Sync for LibState {}

static LIB: RwLock<Option<LibState>> = RwLock::new(None);
/// Serialises (re)initialisation, which must not interleave.
static INIT: Mutex<()> = Mutex::new(());

pub struct GaviotaSource {
    tables: Vec<TableInfo>,
    /// Files that failed the header check, by material (`KRvK`): libgtb opens
    /// files by name itself and crashes (SIGSEGV) on garbage, so
    /// positions of these materials are answered with an error before it
    /// is asked.
    refused: BTreeMap<String, TableError>,
    max_pieces: usize,
    opened_from: DiskSnapshot,
}

impl GaviotaSource {
    /// Initialises libgtb with `dirs` and a cache of `cache_bytes`. Directories
    /// without Gaviota files are reported and ignored.
    pub fn open(dirs: &[PathBuf], cache_bytes: usize) -> GaviotaSource {
        GaviotaSource::open_impl(dirs, cache_bytes, false)
    }

    /// As [`GaviotaSource::open`], but restarts the library even when the
    /// directories are the same, so that it sees files replaced since.
    pub(crate) fn reopen(dirs: &[PathBuf], cache_bytes: usize) -> GaviotaSource {
        GaviotaSource::open_impl(dirs, cache_bytes, true)
    }

    fn open_impl(dirs: &[PathBuf], cache_bytes: usize, restart: bool) -> GaviotaSource {
        let opened_from = DiskSnapshot::take(dirs);
        let mut tables = Vec::new();
        let mut usable_dirs = Vec::new();
        for dir in dirs {
            let mut found = 0;
            for path in list_dir(dir, Source::Gaviota) {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let Some(stem) = name.strip_suffix(".gtb.cp4") else { continue };
                let mut problems = Vec::new();
                let bytes = fs::metadata(&path).map(|m| m.len()).unwrap_or_else(|err| {
                    problems.push(format!("cannot read metadata: {err}"));
                    0
                });
                if problems.is_empty()
                    && let Err(problem) = check_cp4_header(&path, bytes)
                {
                    problems.push(problem);
                }
                if problems.is_empty() {
                    found += 1;
                }
                tables.push(TableInfo {
                    material: gaviota_material(stem),
                    pieces: stem.chars().filter(|c| c.is_ascii_alphabetic()).count(),
                    name,
                    kind: TableKind::Dtm,
                    source: Source::Gaviota,
                    bytes,
                    path: Some(path.display().to_string()),
                    problems,
                    has_stats: false,
                });
            }
            if found > 0 {
                usable_dirs.push(dir.clone());
            }
            info!(dir = %dir.display(), tables = found, "gaviota directory indexed");
        }
        let max_pieces = tables.iter().filter(|t| t.problems.is_empty()).map(|t| t.pieces).max().unwrap_or(0);
        if max_pieces > 0 {
            init_library(&usable_dirs, cache_bytes, restart);
        }
        let refused = tables
            .iter()
            .filter(|t| !t.problems.is_empty())
            .map(|t| (t.material.clone(), TableError { table: t.name.clone(), reason: t.problems.join("; ") }))
            .collect();
        GaviotaSource { tables, refused, max_pieces, opened_from }
    }
}

/// Checks the block index of a compressed (`.cp4`) table, as libgtb reads it
/// (`egtb_loadindexes`): ten u32 LE header words, the 9th the offset of the
/// first block; then one u32 per block boundary, from that offset up to the
/// file's end, never decreasing. Catches empty, truncated and garbage files;
/// not damage inside a block, nor a valid table under another table's name.
pub(crate) fn check_cp4_header(path: &std::path::Path, bytes: u64) -> Result<(), String> {
    if bytes == 0 {
        return Err("empty file".to_owned());
    }
    let data = fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    let word =
        |i: usize| data.get(4 * i..4 * i + 4).map(|w| u64::from(u32::from_le_bytes(w.try_into().expect("4 bytes"))));
    let offset = word(8).ok_or("shorter than the 40-byte header")?;
    if offset < 44 || offset % 4 != 0 || offset > bytes {
        return Err(format!("bad header: first block at {offset} in a file of {bytes} bytes"));
    }
    let index: Option<Vec<u64>> = (10..offset as usize / 4).map(word).collect();
    let index = index.ok_or("block index cut short")?;
    let monotonic = index.windows(2).all(|w| w[0] <= w[1]);
    if index.first() != Some(&offset) || !monotonic {
        return Err("bad block index (not a Gaviota table)".to_owned());
    }
    match index.last() {
        Some(&end) if end == bytes => Ok(()),
        Some(&end) => Err(format!("blocks end at {end} but the file has {bytes} bytes (truncated or padded)")),
        None => Err("no blocks".to_owned()),
    }
}

/// `kqkr` → `KQvKR`.
fn gaviota_material(stem: &str) -> String {
    let upper = stem.to_ascii_uppercase();
    match upper[1..].find('K') {
        Some(i) => format!("{}v{}", &upper[..i + 1], &upper[i + 1..]),
        None => upper,
    }
}

fn init_library(dirs: &[PathBuf], cache_bytes: usize, restart: bool) {
    let _init = INIT.lock().unwrap_or_else(|e| e.into_inner());
    {
        let state = LIB.read().unwrap_or_else(|e| e.into_inner());
        if !restart && state.as_ref().is_some_and(|s| s.dirs == dirs && s.cache_bytes == cache_bytes) {
            return;
        }
    }
    let mut state = LIB.write().unwrap_or_else(|e| e.into_inner());
    // Safety: exclusive access to the library's globals (write lock held, and
    // probes hold the read lock); path strings are copied by tbpaths_add.
    unsafe {
        let mut paths = gtb::tbpaths_init();
        for dir in dirs {
            if let Ok(c) = CString::new(dir.as_os_str().as_encoded_bytes()) {
                paths = gtb::tbpaths_add(paths, c.as_ptr());
            }
        }
        let scheme = gtb::TB_compression_scheme::tb_CP4 as c_int;
        let message = match state.take() {
            None => gtb::tb_init(0, scheme, paths),
            Some(old) => {
                let message = gtb::tb_restart(0, scheme, paths);
                gtb::tbpaths_done(old.paths);
                message
            }
        };
        // Keep 50% of the cache for WDL-only probes we never make: use all for DTM.
        if gtb::tbcache_is_on() != 0 {
            gtb::tbcache_restart(cache_bytes, 0);
        } else {
            gtb::tbcache_init(cache_bytes, 0);
        }
        if !message.is_null() {
            let text = CStr::from_ptr(message).to_string_lossy();
            info!(availability = gtb::tb_availability(), "gaviota initialised: {}", text.trim());
        }
        *state = Some(LibState { dirs: dirs.to_vec(), cache_bytes, paths });
    }
}

impl TableSource for GaviotaSource {
    fn source(&self) -> Source {
        Source::Gaviota
    }

    fn max_pieces(&self) -> usize {
        self.max_pieces
    }

    fn probe_dtm_plies(&self, pos: &Chess) -> ProbeResult<i32> {
        let board = pos.board();
        if self.max_pieces == 0 || board.occupied().count() > self.max_pieces {
            return Ok(None);
        }
        if let Some(refused) = self.refused.get(&crate::material::normalized(board)) {
            return Err(refused.clone().into());
        }
        let mut squares: [[c_uint; 17]; 2] = [[gtb::TB_squares::tb_NOSQUARE as c_uint; 17]; 2];
        let mut pieces: [[c_uchar; 17]; 2] = [[gtb::TB_pieces::tb_NOPIECE as c_uchar; 17]; 2];
        for color in Color::ALL {
            // The king first, as libgtb's piece lists expect.
            let mut n = 0;
            for role in [Role::King, Role::Queen, Role::Rook, Role::Bishop, Role::Knight, Role::Pawn] {
                for sq in board.by_piece(role.of(color)) {
                    squares[color as usize][n] = u32::from(sq) as c_uint;
                    pieces[color as usize][n] = role as c_uchar;
                    n += 1;
                }
            }
        }
        let ep = pos
            .ep_square(EnPassantMode::Legal)
            .map_or(gtb::TB_squares::tb_NOSQUARE as c_uint, |sq| u32::from(sq) as c_uint);
        let stm = match pos.turn() {
            Color::White => gtb::TB_sides::tb_WHITE_TO_MOVE,
            Color::Black => gtb::TB_sides::tb_BLACK_TO_MOVE,
        } as c_uint;
        let (w, b) = (Color::White as usize, Color::Black as usize);
        let mut info: c_uint = 0;
        let mut plies: c_uint = 0;
        let _lib = LIB.read().unwrap_or_else(|e| e.into_inner());
        // Safety: the library is initialised (max_pieces > 0) and not being
        // re-initialised (read lock); the lists are terminated by NOSQUARE/NOPIECE.
        let ok = unsafe {
            gtb::tb_probe_hard(
                stm,
                ep,
                gtb::TB_castling::tb_NOCASTLE.0,
                squares[w].as_ptr(),
                squares[b].as_ptr(),
                pieces[w].as_ptr(),
                pieces[b].as_ptr(),
                &mut info,
                &mut plies,
            )
        };
        if ok == 0 {
            return Ok(None);
        }
        let plies = plies as i32;
        let white_to_move = pos.turn() == Color::White;
        Ok(match info {
            i if i == gtb::TB_return_values::tb_DRAW.0 => Some(0),
            i if i == gtb::TB_return_values::tb_WMATE.0 => Some(if white_to_move { plies } else { -plies }),
            i if i == gtb::TB_return_values::tb_BMATE.0 => Some(if white_to_move { -plies } else { plies }),
            _ => None,
        })
    }

    fn opened_from(&self) -> Option<&DiskSnapshot> {
        Some(&self.opened_from)
    }

    fn tables(&self) -> Vec<TableInfo> {
        self.tables.clone()
    }
}
