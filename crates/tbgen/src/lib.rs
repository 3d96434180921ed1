//! tbserver's generator of built-in tables by retrograde analysis.
//!
//! Given a material's [`Layout`](tbformat::Layout) and a way to look up the
//! tables its captures and promotions lead into, [`generate`] solves every
//! position's DTZ50'', DTM and (optionally) DTM50 and hands back the
//! table's compressed blocks in the format of [`tbformat`]. It reads and
//! writes no table files itself, except the spill of blocks it cannot hold
//! in memory ([`stash`]); the caller owns the directory of tables.
//!
//! - [`moves`]: move generation inside a table's index space;
//! - [`generate`]: the DTZ50'' and DTM analysis, layer by layer;
//! - [`dtm50`]: the same with the half-move clock;
//! - [`budget`]: what a table costs to generate, and the memory there is;
//! - [`stash`]: a generated table's blocks until its file is written;
//! - [`stats`]: positions by category, histograms and longest values.

#![warn(missing_docs)]

pub mod budget;
mod change_points;
pub mod dtm50;
pub mod generate;
mod memory;
pub mod moves;
mod radix;
pub mod stash;
pub mod stats;

use tbformat::{format, index, material, value};

/// Why a generation stopped before its table was complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    /// The caller set the cancel flag (a shutdown).
    #[error("generation cancelled")]
    Cancelled,
    /// A table that captures or promotions lead into could not answer.
    #[error("{0}")]
    Lookup(String),
    /// DTM50's segments outgrew the memory left (see
    /// [`budget::dtm50_memory_check`]).
    #[error(
        "out of memory: DTM50's segments take {log_mib} MiB so far, and {limited_by} has {left_mib} MiB left, less than the {margin_mib} MiB kept free"
    )]
    OutOfMemory {
        /// MiB the segments take.
        log_mib: u64,
        /// What limits the memory, e.g. `MemAvailable`.
        limited_by: String,
        /// MiB left.
        left_mib: u64,
        /// MiB a generation keeps free.
        margin_mib: u64,
    },
}

/// Cache of a store that is not configured (`tbserver generate`, tests)
/// for a generation's lookups into the tables its captures and promotions
/// reach, in MiB: the cache that the generation memory estimates
/// ([`budget`]) are fitted with.
pub const GENERATION_CACHE_MIB: u64 = 160;

// A block's DTM50 segments are read from a layer's log without decoding
// any before them.
const _: () = assert!(change_points::CHECKPOINT_POSITIONS as usize == format::BLOCK_POSITIONS);
