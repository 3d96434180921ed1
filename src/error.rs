//! Why a position gets no answer. The HTTP layer maps each case to a stable
//! code and status ([`crate::http::error::ApiError`]); the CLI prints it.

use crate::{builtin::schedule::Progress, sources::TableError};

/// Why a position (given as a FEN) cannot be answered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoAnswer {
    /// The text is not a FEN.
    #[error("invalid FEN: {0}")]
    InvalidFen(String),
    /// A FEN of a position the rules do not allow.
    #[error("illegal position: {0}")]
    IllegalPosition(String),
    /// Endgame tables cover only positions without castling rights.
    #[error("the position has castling rights; endgame tables cover only positions without them")]
    CastlingRights,
    /// More pieces than any configured table covers. `generate` names the
    /// built-in table that would cover it once generated, where the built-in
    /// tables can make it on request.
    #[error("the position has {pieces} pieces; the configured tables cover at most {max}")]
    TooManyPieces {
        /// Men on the board, kings included.
        pieces: usize,
        /// The most men any configured source covers.
        max: usize,
        /// The built-in table that would cover the position.
        generate: Option<String>,
    },
    /// No configured table covers the material.
    #[error("no table covers {material}; missing: {missing}")]
    MissingTable {
        /// The material, stronger side first (`KRvK`).
        material: String,
        /// The files (or built-in tables) that would cover it.
        missing: String,
    },
    /// The material has tables, but none with exact DTM50.
    #[error("no DTM50 table covers {material}")]
    NoDtm50Table {
        /// The material, stronger side first.
        material: String,
    },
    /// A table the answer needs is broken.
    #[error("{0}")]
    Table(TableError),
    /// Only built-in tables could answer, and they are being generated.
    #[error("the built-in tables for {} are being generated", .0.material)]
    Generating(Box<Progress>),
}

impl From<TableError> for NoAnswer {
    fn from(err: TableError) -> NoAnswer {
        NoAnswer::Table(err)
    }
}
