//! Parsing what clients send: FENs and their validation.

use shakmaty::{CastlingMode, Chess, EnPassantMode, Position, PositionError, fen::Fen};

use crate::error::NoAnswer;

/// Longest FEN accepted; a legal FEN is well under 100 bytes.
pub(crate) const MAX_FEN_BYTES: usize = 256;

/// Largest half-move clock accepted: far beyond any game (the 75-move rule
/// ends one at 150), and far from overflowing the clock arithmetic of
/// categories and mate bounds (which a clock of u32::MAX would overflow).
pub(crate) const MAX_HALFMOVE_CLOCK: u32 = 10_000;

/// Parses a FEN (underscores may stand for spaces, as in URLs of the lichess
/// API) into a position tablebases can answer for.
pub fn parse_fen(fen: &str) -> Result<Chess, NoAnswer> {
    let pos = parse_position(fen)?;
    if pos.castles().any() {
        return Err(NoAnswer::CastlingRights);
    }
    Ok(pos)
}

/// Parses a FEN into any legal position, castling rights included (the
/// lichess-compatible endpoints rate the moves of such positions, each of
/// which may lose the rights).
pub fn parse_position(fen: &str) -> Result<Chess, NoAnswer> {
    let fen = fen.trim();
    if fen.is_empty() {
        return Err(NoAnswer::InvalidFen("empty".to_owned()));
    }
    if fen.len() > MAX_FEN_BYTES {
        return Err(NoAnswer::InvalidFen(format!("longer than {MAX_FEN_BYTES} bytes")));
    }
    let fen = fen.replace('_', " ");
    let parsed = Fen::from_ascii(fen.as_bytes()).map_err(|err| NoAnswer::InvalidFen(err.to_string()))?;
    let pos: Chess = parsed
        .into_position(CastlingMode::Standard)
        .or_else(PositionError::ignore_invalid_castling_rights)
        .or_else(PositionError::ignore_invalid_ep_square)
        // Tables hold positions with checks no legal game reaches (e.g. two
        // aligned sliders); they are still well defined, so answer them.
        .or_else(PositionError::ignore_impossible_check)
        // shakmaty's text starts with "illegal position: " already.
        .map_err(|err| {
            NoAnswer::IllegalPosition(err.to_string().trim_start_matches("illegal position: ").to_owned())
        })?;
    if pos.halfmoves() > MAX_HALFMOVE_CLOCK {
        return Err(NoAnswer::InvalidFen(format!(
            "half-move clock {} is larger than {MAX_HALFMOVE_CLOCK}",
            pos.halfmoves()
        )));
    }
    Ok(pos)
}

/// The FEN tbserver reports back: canonical spacing, legal en-passant squares only.
pub fn normalized_fen(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_underscores_and_missing_counters() {
        let pos = parse_fen("4k3/8/8/8/8/8/8/4K2R_w_-_-").unwrap();
        assert_eq!(normalized_fen(&pos), "4k3/8/8/8/8/8/8/4K2R w - - 0 1");
    }

    #[test]
    fn rejects_with_specific_errors() {
        assert!(matches!(parse_fen("not a fen").unwrap_err(), NoAnswer::InvalidFen(_)));
        assert!(matches!(parse_fen("").unwrap_err(), NoAnswer::InvalidFen(_)));
        assert!(matches!(parse_fen("4k3/8/8/8/8/8/8/4K2R w K - 0 1").unwrap_err(), NoAnswer::CastlingRights));
        // Side not to move in check.
        assert!(matches!(parse_fen("4k3/8/8/8/8/8/8/4R2K w - - 0 1").unwrap_err(), NoAnswer::IllegalPosition(_)));
        assert!(matches!(parse_fen("8/8/8/8/8/8/8/8 w - - 0 1").unwrap_err(), NoAnswer::IllegalPosition(_)));
        assert!(matches!(parse_fen("4k3/8/8/8/8/8/8/4K2R w - - 4294967295 1").unwrap_err(), NoAnswer::InvalidFen(_)));
        assert!(parse_fen("4k3/8/8/8/8/8/8/4K2R w - - 10000 1").is_ok());
        // Invalid castling rights are dropped rather than rejected.
        assert!(parse_fen("4k3/8/8/8/8/8/8/4K3 w KQ - 0 1").is_ok());
        // Valid ones are kept where the caller accepts them.
        assert_eq!(
            normalized_fen(&parse_position("4k3/8/8/8/8/8/8/4K2R w KQ - 0 1").unwrap()),
            "4k3/8/8/8/8/8/8/4K2R w K - 0 1"
        );
        // More material than a game can have is illegal, whatever the tables.
        let crowded = "qqqqkqqq/qqqqqqqq/8/8/8/8/QQQQQQQQ/QQQQKQQQ w - - 0 1";
        assert_eq!(parse_position(crowded).unwrap_err().to_string(), "illegal position: too much material");
    }
}
