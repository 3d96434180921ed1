//! chesstb tables as a source of truth: exact DTM50 at the position's own
//! clock, DTM, and WDL/DTZ (see [`chesstb_reader`] for the format).

use std::{
    cell::RefCell,
    path::PathBuf,
    sync::atomic::{AtomicU64, Ordering},
};

use shakmaty::{Board, Chess, EnPassantMode, Position};
use shakmaty_syzygy::{Dtz, MaybeRounded, Wdl};

use super::{BlockCacheCounts, DiskSnapshot, ProbeResult, TableError, TableInfo, TableKind, TableSource};
use chesstb_reader::{Chesstb, Class, Kind, ProbeError, TableMaterial, Values};

use crate::domain::{Dtc, Source};

pub struct ChesstbSource {
    tb: Chesstb,
    /// Tells this source's entries of the per-thread memo from another's.
    id: u64,
    opened_from: DiskSnapshot,
}

/// The four metrics of one position are asked one after the other: the
/// answer of the last position probed on this thread is kept.
type Memo = Option<(u64, Board, shakmaty::Color, Option<shakmaty::Square>, u32, Option<Values>)>;

thread_local! {
    static LAST: RefCell<Memo> = const { RefCell::new(None) };
}

/// `KQK`-style name of a board's chesstb material.
pub fn file_stem(board: &Board) -> String {
    TableMaterial::of_board(board).canonical().0.name()
}

fn table_error(e: ProbeError) -> TableError {
    TableError { table: e.table, reason: e.reason }
}

impl ChesstbSource {
    pub fn open(dirs: &[PathBuf], cache_bytes: u64, max_open_files: u64) -> ChesstbSource {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let opened_from = DiskSnapshot::take(dirs);
        let tb = Chesstb::open(dirs, cache_bytes).with_max_open_files(max_open_files);
        tracing::info!(files = tb.files().len(), max_pieces = tb.max_pieces(), "chesstb tables indexed");
        ChesstbSource { tb, id: NEXT.fetch_add(1, Ordering::Relaxed), opened_from }
    }

    pub fn tablebase(&self) -> &Chesstb {
        &self.tb
    }

    /// All values at the position's own clock, memoized per thread.
    fn values(&self, pos: &Chess) -> Result<Option<Values>, TableError> {
        let key = (self.id, pos.board().clone(), pos.turn(), pos.ep_square(EnPassantMode::Legal), pos.halfmoves());
        let hit = LAST.with_borrow(|m| {
            m.as_ref()
                .filter(|(id, b, t, ep, c, _)| (*id, b, *t, *ep, *c) == (key.0, &key.1, key.2, key.3, key.4))
                .map(|e| e.5.clone())
        });
        if let Some(v) = hit {
            return Ok(v);
        }
        let v = self.tb.probe(pos, Some(pos.halfmoves())).map_err(table_error)?;
        LAST.with_borrow_mut(|m| *m = Some((key.0, key.1, key.2, key.3, key.4, v.clone())));
        Ok(v)
    }
}

impl TableSource for ChesstbSource {
    fn source(&self) -> Source {
        Source::Chesstb
    }

    fn max_pieces(&self) -> usize {
        self.tb.max_pieces()
    }

    fn probe_wdl(&self, pos: &Chess) -> ProbeResult<Wdl> {
        Ok(self.tb.probe_wdl(pos).map_err(table_error)?.map(Class::wdl))
    }

    fn probe_dtz(&self, pos: &Chess) -> ProbeResult<MaybeRounded<Dtz>> {
        let Some(v) = self.values(pos)? else { return Ok(None) };
        let Some(plies) = v.signed_dtz() else { return Ok(None) };
        // Cursed distances are stored halved: the true value is |plies| or one more.
        Ok(Some(match v.wdl {
            Some(Class::CursedWin | Class::BlessedLoss) => MaybeRounded::Rounded(Dtz(plies)),
            _ => MaybeRounded::Precise(Dtz(plies)),
        }))
    }

    fn probe_dtm_plies(&self, pos: &Chess) -> ProbeResult<i32> {
        Ok(self.values(pos)?.and_then(|v| v.signed_dtm()))
    }

    fn probe_dtm50_plies(&self, pos: &Chess) -> ProbeResult<i32> {
        let Some(v) = self.values(pos)? else { return Ok(None) };
        Ok(v.dtm50.map(|m| match m.class {
            Class::Win => m.plies as i32,
            Class::Loss => -(m.plies as i32),
            _ => 0,
        }))
    }

    fn probe_dtc(&self, pos: &Chess) -> ProbeResult<Dtc> {
        // Not memoized with the other values: only full answers ask for DTC.
        let Some(v) = self.tb.probe_with_dtc(pos, pos.halfmoves()).map_err(table_error)? else { return Ok(None) };
        Ok(v.dtc.map(|d| {
            let plies = i32::from(d.plies);
            let signed = match d.class {
                Class::Win | Class::CursedWin => plies,
                Class::Loss | Class::BlessedLoss => -plies,
                Class::Draw => 0,
            };
            Dtc::new(signed, if signed == 0 { 0 } else { d.order }, pos.halfmoves())
        }))
    }

    fn block_cache(&self) -> Option<BlockCacheCounts> {
        let s = self.tb.cache_stats();
        let r = self.tb.rebuilt_stats();
        Some(BlockCacheCounts {
            hits: s.hits.load(Ordering::Relaxed),
            misses: s.misses.load(Ordering::Relaxed),
            evictions: s.evictions.load(Ordering::Relaxed),
            bytes: self.tb.cache_bytes(),
            rebuilt_hits: r.hits.load(Ordering::Relaxed),
            rebuilt_misses: r.misses.load(Ordering::Relaxed),
        })
    }

    fn opened_from(&self) -> Option<&DiskSnapshot> {
        Some(&self.opened_from)
    }

    fn tables(&self) -> Vec<TableInfo> {
        self.tb
            .files()
            .into_iter()
            .map(|f| {
                let full = f.material.name();
                let second_king = full[1..].find('K').map_or(full.len(), |i| i + 1);
                let material = format!("{}v{}", &full[..second_king], &full[second_king..]);
                let kind = match f.kind {
                    Kind::Wdl => TableKind::Wdl,
                    Kind::Dtz => TableKind::Dtz,
                    Kind::Dtc => TableKind::Dtc,
                    Kind::Dtm => TableKind::Dtm,
                    Kind::Dtm50 => TableKind::Dtm50,
                };
                TableInfo {
                    name: f.name,
                    material,
                    kind,
                    source: Source::Chesstb,
                    pieces: f.material.pieces(),
                    bytes: f.bytes,
                    path: Some(f.path.display().to_string()),
                    // Without opening the file: a listing of thousands must
                    // neither open them all nor push the open ones out.
                    problems: self.tb.known_problem(&f.material, f.kind).into_iter().collect(),
                    has_stats: false,
                }
            })
            .collect()
    }
}
