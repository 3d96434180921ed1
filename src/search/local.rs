//! A plain [`Oracle`] over Syzygy files (shakmaty-syzygy) and optionally the
//! 3-piece Gaviota DTM files, for tests, benchmarks and the CLI before the
//! service's multi-source policy is wired in.

use std::ffi::CString;
use std::os::raw::{c_int, c_uchar, c_uint};
use std::path::Path;
use std::sync::OnceLock;

use shakmaty::{Chess, Color, Position, Role};
use shakmaty_syzygy::{Dtz, MaybeRounded, Tablebase, Wdl};

use super::Oracle;

pub struct LocalTables {
    syzygy: Tablebase<Chess>,
    gaviota: bool,
}

static GAVIOTA_INIT: OnceLock<bool> = OnceLock::new();

impl LocalTables {
    pub fn new(syzygy_dir: &Path, gaviota_dir: Option<&Path>) -> std::io::Result<LocalTables> {
        // SAFETY: the table files are read-only data that nobody modifies
        // while the process runs (shared, immutable test/bench data).
        let mut syzygy = unsafe { Tablebase::with_mmap_filesystem() };
        syzygy.add_directory(syzygy_dir)?;
        let gaviota = gaviota_dir.is_some_and(|dir| *GAVIOTA_INIT.get_or_init(|| init_gaviota(dir)));
        Ok(LocalTables { syzygy, gaviota })
    }
}

/// libgtb keeps global state: initialise once per process.
fn init_gaviota(dir: &Path) -> bool {
    let Ok(path) = CString::new(dir.to_string_lossy().as_bytes()) else { return false };
    // SAFETY: plain C initialisation calls; the path is copied by tbpaths_add.
    unsafe {
        let paths = gaviota_sys::tbpaths_init();
        let paths = gaviota_sys::tbpaths_add(paths, path.as_ptr());
        // With verbosity 0 libgtb returns no info string (NULL) even on success.
        gaviota_sys::tb_init(0, gaviota_sys::TB_compression_scheme::tb_CP4 as c_int, paths);
        gaviota_sys::tbcache_init(32 << 20, 10);
        gaviota_sys::tbstats_reset();
        gaviota_sys::tb_is_initialized() != 0
    }
}

fn gaviota_dtm(pos: &Chess) -> Option<i32> {
    let board = pos.board();
    if board.occupied().count() > 3 {
        return None;
    }
    let side = |c: Color| {
        let mut sq: Vec<c_uint> = Vec::new();
        let mut pc: Vec<c_uchar> = Vec::new();
        for s in board.by_color(c) {
            let role = board.role_at(s).expect("occupied");
            sq.push(s as c_uint);
            pc.push(match role {
                Role::Pawn => 1,
                Role::Knight => 2,
                Role::Bishop => 3,
                Role::Rook => 4,
                Role::Queen => 5,
                Role::King => 6,
            });
        }
        sq.push(64);
        pc.push(0);
        (sq, pc)
    };
    let (ws, wp) = side(Color::White);
    let (bs, bp) = side(Color::Black);
    let ep = pos.ep_square(shakmaty::EnPassantMode::Legal).map_or(64, |s| s as c_uint);
    let (mut info, mut plies): (c_uint, c_uint) = (0, 0);
    // SAFETY: arrays are terminated as libgtb expects and outlive the call.
    let ok = unsafe {
        gaviota_sys::tb_probe_hard(
            if pos.turn().is_white() { 0 } else { 1 },
            ep,
            0,
            ws.as_ptr(),
            bs.as_ptr(),
            wp.as_ptr(),
            bp.as_ptr(),
            &mut info,
            &mut plies,
        )
    };
    if ok == 0 {
        return None;
    }
    let plies = plies as i32;
    let white_mates = match info {
        0 => return Some(0),
        1 => true,
        2 => false,
        _ => return None,
    };
    Some(if white_mates == pos.turn().is_white() { plies } else { -plies })
}

impl Oracle for LocalTables {
    fn max_pieces(&self) -> usize {
        self.syzygy.max_pieces()
    }

    fn wdl(&self, pos: &Chess) -> Option<Wdl> {
        self.syzygy.probe_wdl_after_zeroing(pos).ok()
    }

    fn dtz(&self, pos: &Chess) -> Option<MaybeRounded<Dtz>> {
        self.syzygy.probe_dtz(pos).ok()
    }

    fn dtm_plies(&self, pos: &Chess) -> Option<i32> {
        if self.gaviota { gaviota_dtm(pos) } else { None }
    }
}

/// The same tables without DTM, to test what the search alone can prove.
pub struct SyzygyOnly(pub LocalTables);

impl Oracle for SyzygyOnly {
    fn max_pieces(&self) -> usize {
        self.0.max_pieces()
    }
    fn wdl(&self, pos: &Chess) -> Option<Wdl> {
        self.0.wdl(pos)
    }
    fn dtz(&self, pos: &Chess) -> Option<MaybeRounded<Dtz>> {
        self.0.dtz(pos)
    }
}
