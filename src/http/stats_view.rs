//! The statistics of a built-in table as `/api/v1/tables/{material}/stats`
//! answers them: the generator's [`TableStats`], field for field, with the
//! schema the OpenAPI document gives.

use serde::Serialize;
use tbgen::stats::{Bin, Example, Histogram, SideStats, TableStats};

/// Statistics of one table.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = TableStats)]
pub(crate) struct TableStatsBody {
    /// The table, e.g. `KQvKR` (stronger side first: White).
    material: String,
    /// Distinct legal positions under the table's symmetries, both sides to
    /// move.
    legal_positions: u64,
    /// With White to move.
    white_to_move: SideBody,
    /// With Black to move.
    black_to_move: SideBody,
    /// Whether the table has DTM50 (without it the DTM50 fields are empty).
    has_dtm50: bool,
    /// Format of these statistics.
    version: u32,
    /// CRC-32 of the table file the statistics were computed from.
    table_crc32: u32,
}

/// Positions with one side to move, by category at half-move clock 0.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = SideStats)]
struct SideBody {
    positions: u64,
    wins: u64,
    cursed_wins: u64,
    draws: u64,
    blessed_losses: u64,
    losses: u64,
    /// The decisive position farthest from zeroing; absent when none is
    /// decisive.
    longest_dtz50: Option<ExampleBody>,
    /// The decisive position farthest from mate, ignoring the 50-move rule.
    longest_dtm: Option<ExampleBody>,
    /// The longest mate the 50-move rule allows at clock 0.
    longest_dtm50: Option<ExampleBody>,
    dtz50_histogram: HistogramBody,
    dtm_histogram: HistogramBody,
    /// DTM50 at half-move clock 0.
    dtm50_histogram: HistogramBody,
}

/// A position of the table and its value from the side to move's point of
/// view (positive: the side to move wins; 0: it is checkmated).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Example)]
struct ExampleBody {
    plies: i32,
    /// Half-move clock 0.
    fen: String,
}

/// How many positions are won, and lost, in each number of plies; plies
/// without positions are left out.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Histogram)]
struct HistogramBody {
    wins: Vec<BinBody>,
    losses: Vec<BinBody>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Bin)]
struct BinBody {
    plies: u16,
    positions: u64,
}

impl From<&TableStats> for TableStatsBody {
    fn from(s: &TableStats) -> TableStatsBody {
        TableStatsBody {
            material: s.material.clone(),
            legal_positions: s.legal_positions,
            white_to_move: (&s.white_to_move).into(),
            black_to_move: (&s.black_to_move).into(),
            has_dtm50: s.has_dtm50,
            version: s.version,
            table_crc32: s.table_crc32,
        }
    }
}

impl From<&SideStats> for SideBody {
    fn from(s: &SideStats) -> SideBody {
        let example = |e: &Option<Example>| e.as_ref().map(|e| ExampleBody { plies: e.plies, fen: e.fen.clone() });
        SideBody {
            positions: s.positions,
            wins: s.wins,
            cursed_wins: s.cursed_wins,
            draws: s.draws,
            blessed_losses: s.blessed_losses,
            losses: s.losses,
            longest_dtz50: example(&s.longest_dtz50),
            longest_dtm: example(&s.longest_dtm),
            longest_dtm50: example(&s.longest_dtm50),
            dtz50_histogram: (&s.dtz50_histogram).into(),
            dtm_histogram: (&s.dtm_histogram).into(),
            dtm50_histogram: (&s.dtm50_histogram).into(),
        }
    }
}

impl From<&Histogram> for HistogramBody {
    fn from(h: &Histogram) -> HistogramBody {
        let bins = |b: &[Bin]| b.iter().map(|b| BinBody { plies: b.plies, positions: b.positions }).collect();
        HistogramBody { wins: bins(&h.wins), losses: bins(&h.losses) }
    }
}
