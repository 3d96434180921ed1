//! Chess boards as SVG, rendered by tbserver itself (`GET /board.svg`).
//!
//! [`render`] is a pure function from a [`Board`] and [`SvgOptions`] to an SVG
//! document. The piece images are the "cburnett" set as shipped (GPL) in the
//! chessground npm package; `web/build.mjs` extracts them into
//! `static/pieces/cburnett/` and they are embedded here at compile time. See
//! `static/LICENSES.md` for their origin and licence.

use std::fmt::Write as _;

use shakmaty::{Board, Color, Piece, Role, Square};

/// Side length of one square in SVG user units (the piece drawings are 45×45).
const SQ: u32 = 45;
/// Default, minimum and maximum rendered size in pixels.
pub(crate) const DEFAULT_SIZE: u32 = 360;
pub(crate) const MIN_SIZE: u32 = 64;
pub(crate) const MAX_SIZE: u32 = 2048;

const LIGHT: &str = "#ecd9b9";
const DARK: &str = "#ae8a68";

/// How to draw the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvgOptions {
    /// Width and height in pixels (clamped to `MIN_SIZE..=MAX_SIZE`).
    pub size: u32,
    /// The side shown at the bottom.
    pub orientation: Color,
    /// Square of a king in check, drawn with a red glow.
    pub check: Option<Square>,
    /// Origin and destination of the last move, highlighted.
    pub lastmove: Option<(Square, Square)>,
    /// Draw file letters and rank numbers inside the edge squares.
    pub coordinates: bool,
}

impl Default for SvgOptions {
    fn default() -> Self {
        SvgOptions { size: DEFAULT_SIZE, orientation: Color::White, check: None, lastmove: None, coordinates: true }
    }
}

/// Clamp a requested pixel size to the supported range.
pub(crate) fn clamp_size(size: u32) -> u32 {
    size.clamp(MIN_SIZE, MAX_SIZE)
}

/// The embedded source SVG of one piece image.
fn piece_source(piece: Piece) -> &'static str {
    use Color::*;
    use Role::*;
    match (piece.color, piece.role) {
        (White, Pawn) => include_str!("../static/pieces/cburnett/wP.svg"),
        (White, Knight) => include_str!("../static/pieces/cburnett/wN.svg"),
        (White, Bishop) => include_str!("../static/pieces/cburnett/wB.svg"),
        (White, Rook) => include_str!("../static/pieces/cburnett/wR.svg"),
        (White, Queen) => include_str!("../static/pieces/cburnett/wQ.svg"),
        (White, King) => include_str!("../static/pieces/cburnett/wK.svg"),
        (Black, Pawn) => include_str!("../static/pieces/cburnett/bP.svg"),
        (Black, Knight) => include_str!("../static/pieces/cburnett/bN.svg"),
        (Black, Bishop) => include_str!("../static/pieces/cburnett/bB.svg"),
        (Black, Rook) => include_str!("../static/pieces/cburnett/bR.svg"),
        (Black, Queen) => include_str!("../static/pieces/cburnett/bQ.svg"),
        (Black, King) => include_str!("../static/pieces/cburnett/bK.svg"),
    }
}

/// Identifier used for a piece's definition, e.g. `wK`, `bp` → `bP`.
fn piece_id(piece: Piece) -> String {
    let c = if piece.color == Color::White { 'w' } else { 'b' };
    format!("{c}{}", piece.role.upper_char())
}

/// The drawing inside a piece image's outer `<svg …>` element.
fn piece_body(piece: Piece) -> &'static str {
    let src = piece_source(piece).trim();
    let start = src.find("<svg").and_then(|i| src[i..].find('>').map(|j| i + j + 1));
    let end = src.rfind("</svg>");
    match (start, end) {
        (Some(s), Some(e)) if s <= e => &src[s..e],
        _ => "",
    }
}

/// Top-left corner (in user units) of a square for the given orientation.
fn square_origin(sq: Square, orientation: Color) -> (u32, u32) {
    let file = sq.file().to_u32();
    let rank = sq.rank().to_u32();
    match orientation {
        Color::White => (file * SQ, (7 - rank) * SQ),
        Color::Black => ((7 - file) * SQ, rank * SQ),
    }
}

fn color_name(color: Color) -> &'static str {
    match color {
        Color::White => "white",
        Color::Black => "black",
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Pawn => "pawn",
        Role::Knight => "knight",
        Role::Bishop => "bishop",
        Role::Rook => "rook",
        Role::Queen => "queen",
        Role::King => "king",
    }
}

/// Render `board` as a standalone SVG document.
///
/// Every piece is a `<use>` element carrying `data-square` (e.g. `e4`) and
/// `data-piece` (FEN letter, e.g. `K` or `p`), so the output is easy to check
/// by machine as well as by eye.
pub fn render(board: &Board, opts: &SvgOptions) -> String {
    let size = clamp_size(opts.size);
    let full = 8 * SQ;
    let mut s = String::with_capacity(16 * 1024);
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.1" width="{size}" height="{size}" viewBox="0 0 {full} {full}" role="img">"##
    );
    let _ = write!(s, "<title>{}</title>", board_description(board));

    // Definitions: only the pieces that occur, plus the check gradient.
    s.push_str("<defs>");
    let mut seen: Vec<Piece> = Vec::new();
    for (_, piece) in board.iter() {
        if !seen.contains(&piece) {
            seen.push(piece);
            let _ = write!(s, r#"<g id="{}">{}</g>"#, piece_id(piece), piece_body(piece));
        }
    }
    if opts.check.is_some() {
        s.push_str(concat!(
            r##"<radialGradient id="check-glow">"##,
            r##"<stop offset="0%" stop-color="#ff0000" stop-opacity="1"/>"##,
            r##"<stop offset="25%" stop-color="#e70000" stop-opacity="1"/>"##,
            r##"<stop offset="90%" stop-color="#a90000" stop-opacity="0"/>"##,
            r##"<stop offset="100%" stop-color="#9e0000" stop-opacity="0"/>"##,
            r##"</radialGradient>"##
        ));
    }
    s.push_str("</defs>");

    // Squares.
    let _ = write!(s, r#"<rect x="0" y="0" width="{full}" height="{full}" fill="{LIGHT}"/>"#);
    for sq in Square::ALL {
        if sq.is_dark() {
            let (x, y) = square_origin(sq, opts.orientation);
            let _ =
                write!(s, r#"<rect x="{x}" y="{y}" width="{SQ}" height="{SQ}" fill="{DARK}" class="square dark"/>"#);
        }
    }

    // Highlights.
    if let Some((from, to)) = opts.lastmove {
        for sq in [from, to] {
            let (x, y) = square_origin(sq, opts.orientation);
            let _ = write!(
                s,
                r##"<rect x="{x}" y="{y}" width="{SQ}" height="{SQ}" fill="#9bc700" fill-opacity="0.45" class="lastmove" data-square="{sq}"/>"##
            );
        }
    }
    if let Some(sq) = opts.check {
        let (x, y) = square_origin(sq, opts.orientation);
        let _ = write!(
            s,
            r#"<rect x="{x}" y="{y}" width="{SQ}" height="{SQ}" fill="url(#check-glow)" class="check" data-square="{sq}"/>"#
        );
    }

    // Coordinates, drawn in the colour of the opposite square for contrast.
    if opts.coordinates {
        for i in 0..8u32 {
            // Bottom row: file letters.
            let file = if opts.orientation == Color::White { i } else { 7 - i };
            let bottom_is_dark = (i + 1) % 2 == 1; // bottom-left square is always dark
            let fill = if bottom_is_dark { LIGHT } else { DARK };
            let letter = (b'a' + file as u8) as char;
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" font-size="10" font-family="sans-serif" font-weight="bold" fill="{fill}" text-anchor="end" class="coord">{letter}</text>"#,
                i * SQ + SQ - 2,
                full - 2
            );
            // Left column: rank numbers (row i from the top).
            let rank = if opts.orientation == Color::White { 8 - i } else { i + 1 };
            let left_is_dark = i % 2 == 1;
            let fill = if left_is_dark { LIGHT } else { DARK };
            let _ = write!(
                s,
                r#"<text x="2" y="{}" font-size="10" font-family="sans-serif" font-weight="bold" fill="{fill}" class="coord">{rank}</text>"#,
                i * SQ + 10
            );
        }
    }

    // Pieces.
    for (sq, piece) in board.iter() {
        let (x, y) = square_origin(sq, opts.orientation);
        let id = piece_id(piece);
        let _ = write!(
            s,
            r##"<use href="#{id}" xlink:href="#{id}" x="{x}" y="{y}" class="piece {} {}" data-square="{sq}" data-piece="{}"/>"##,
            color_name(piece.color),
            role_name(piece.role),
            piece.char()
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A short text description for the `<title>` (accessibility): the board FEN.
fn board_description(board: &Board) -> String {
    format!("Chess position {board}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_piece_image_has_a_body() {
        for color in Color::ALL {
            for role in Role::ALL {
                let body = piece_body(Piece { color, role });
                assert!(body.contains("<path") || body.contains("<g"), "{color:?} {role:?}");
            }
        }
    }

    #[test]
    fn size_is_clamped() {
        assert_eq!(clamp_size(1), MIN_SIZE);
        assert_eq!(clamp_size(1_000_000), MAX_SIZE);
        assert_eq!(clamp_size(400), 400);
    }

    #[test]
    fn origin_depends_on_orientation() {
        assert_eq!(square_origin(Square::A1, Color::White), (0, 7 * SQ));
        assert_eq!(square_origin(Square::A1, Color::Black), (7 * SQ, 0));
        assert_eq!(square_origin(Square::H8, Color::White), (7 * SQ, 0));
    }
}
