//! `/board.svg` output is valid SVG with the right pieces on the right squares.

use std::collections::BTreeMap;

use shakmaty::{Board, Color, Square, fen::Fen};
use tbserver::board_svg::{SvgOptions, render};

const SQ: f64 = 45.0;

/// Parse the SVG and return square → FEN piece letter, checking each piece's
/// drawn position against its square for the given orientation.
fn pieces(svg: &str, orientation: Color) -> BTreeMap<String, char> {
    let doc = roxmltree::Document::parse(svg).expect("valid XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
    let mut ids = std::collections::HashSet::new();
    for node in doc.descendants().filter(|n| n.is_element()) {
        if let Some(id) = node.attribute("id") {
            assert!(ids.insert(id.to_owned()), "duplicate id {id}");
        }
    }
    let mut out = BTreeMap::new();
    for node in doc.descendants().filter(|n| n.has_tag_name("use")) {
        let square = node.attribute("data-square").expect("data-square");
        let piece = node.attribute("data-piece").expect("data-piece").chars().next().unwrap();
        let href = node.attribute("href").expect("href");
        let target = href.strip_prefix('#').expect("local reference");
        assert!(ids.contains(target), "reference to missing definition {target}");
        let expected_id =
            format!("{}{}", if piece.is_ascii_uppercase() { 'w' } else { 'b' }, piece.to_ascii_uppercase());
        assert_eq!(target, expected_id);

        let x: f64 = node.attribute("x").unwrap().parse().unwrap();
        let y: f64 = node.attribute("y").unwrap().parse().unwrap();
        let (col, row) = ((x / SQ) as u32, (y / SQ) as u32);
        let (file, rank) = match orientation {
            Color::White => (col, 7 - row),
            Color::Black => (7 - col, row),
        };
        let drawn = format!("{}{}", (b'a' + file as u8) as char, rank + 1);
        assert_eq!(drawn, square, "piece drawn on {drawn} but labelled {square}");
        assert!(out.insert(square.to_owned(), piece).is_none(), "two pieces on {square}");
    }
    out
}

fn expected(board: &Board) -> BTreeMap<String, char> {
    board.iter().map(|(sq, p)| (sq.to_string(), p.char())).collect()
}

fn board_of(fen: &str) -> Board {
    fen.parse::<Fen>().unwrap().into_setup().board
}

#[test]
fn start_position_both_orientations() {
    let board = Board::default();
    for orientation in [Color::White, Color::Black] {
        let opts = SvgOptions { orientation, ..SvgOptions::default() };
        let svg = render(&board, &opts);
        assert_eq!(pieces(&svg, orientation), expected(&board));
        assert_eq!(pieces(&svg, orientation).len(), 32);
    }
}

#[test]
fn reference_positions() {
    for fen in
        ["1kb5/8/1KN5/3N4/8/8/8/8 b - - 0 1", "8/8/2N5/8/3k4/7N/p2K4/8 b - - 0 1", "3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1"]
    {
        let board = board_of(fen);
        let svg = render(&board, &SvgOptions::default());
        let got = pieces(&svg, Color::White);
        assert_eq!(got, expected(&board), "{fen}");
    }
    // Spot check by hand: KBNvK.
    let got = pieces(&render(&board_of("3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1"), &SvgOptions::default()), Color::White);
    let want: BTreeMap<String, char> =
        [("d8", 'k'), ("d6", 'K'), ("a2", 'N'), ("b1", 'B')].into_iter().map(|(s, c)| (s.to_owned(), c)).collect();
    assert_eq!(got, want);
}

#[test]
fn highlights_and_size() {
    let board = board_of("4k3/8/8/8/8/8/8/4R1K1 b - - 0 1");
    let opts = SvgOptions {
        size: 200,
        orientation: Color::Black,
        check: Some(Square::E8),
        lastmove: Some((Square::A1, Square::E1)),
        coordinates: true,
    };
    let svg = render(&board, &opts);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let root = doc.root_element();
    assert_eq!(root.attribute("width"), Some("200"));
    assert_eq!(root.attribute("height"), Some("200"));
    let check = doc.descendants().find(|n| n.attribute("class") == Some("check")).expect("check marker");
    assert_eq!(check.attribute("data-square"), Some("e8"));
    // e8 seen from Black is column 3 from the left, bottom row.
    assert_eq!((check.attribute("x"), check.attribute("y")), (Some("135"), Some("315")));
    let last: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("lastmove"))
        .map(|n| n.attribute("data-square").unwrap())
        .collect();
    assert_eq!(last, ["a1", "e1"]);
    assert_eq!(pieces(&svg, Color::Black), expected(&board));
    // 8 file letters and 8 rank numbers.
    assert_eq!(doc.descendants().filter(|n| n.attribute("class") == Some("coord")).count(), 16);
}

#[test]
fn empty_board_is_valid() {
    let svg = render(&Board::empty(), &SvgOptions::default());
    assert!(pieces(&svg, Color::White).is_empty());
}
