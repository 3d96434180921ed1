//! tbserver's chesstb index against chesstb's own indexing code, at 5 and 6
//! pieces: `tests/data/chesstb-index/` holds 84,000 random legal positions
//! (12,000 of each class) with the table, mirroring, side to move, king
//! slice, symmetry, pawn slice and storage index that chesstb's generator
//! computes for them (and its prober agrees with, position by position; see
//! the PROVENANCE file there); and 24,000 positions with an opposing pawn
//! pair, indexed in their `p` table (`KQpKp`). No table file is needed: 6-piece tables
//! cannot be generated here, so this is how their index is proven.

#[macro_use]
mod common;

use std::{collections::BTreeMap, io::Read};

use chesstb_reader::{index_trace, pair_index_trace};
use shakmaty::{CastlingMode, Chess, Position, fen::Fen};

#[derive(Default)]
struct ClassCount {
    positions: usize,
    five: usize,
    six: usize,
    above_2_32: usize,
    mirrored: usize,
    transformed: usize,
    diagonal_flips: usize,
    en_passant: usize,
    /// Pieces other than 5 or 6 (4: `KpKp`).
    other: usize,
    mismatches: Vec<String>,
}

/// Reads one of the index data files and compares every line with what
/// `trace` computes; returns the counts per class (mismatches included).
fn compare_file(
    file: &str,
    trace: fn(&Chess, u32) -> Option<chesstb_reader::IndexTrace>,
) -> BTreeMap<String, ClassCount> {
    let path = format!("{}/tests/data/chesstb-index/{file}", env!("CARGO_MANIFEST_DIR"));
    let mut text = String::new();
    liblzma::read::XzDecoder::new(std::fs::File::open(&path).expect("index test data"))
        .read_to_string(&mut text)
        .expect("xz");
    let mut classes: BTreeMap<String, ClassCount> = BTreeMap::new();
    let mut tables = std::collections::BTreeSet::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 12, "{line}");
        let (class, fen, table) = (f[0], f[1], f[2]);
        let num = |i: usize| -> u64 { f[i].parse().unwrap_or_else(|_| panic!("{line}")) };
        let pos: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .or_else(shakmaty::PositionError::ignore_impossible_check)
            .unwrap_or_else(|e| panic!("{fen}: {e}"));
        let perm = num(9) as u32;
        let c = classes.entry(class.to_string()).or_default();
        c.positions += 1;
        match pos.board().occupied().count() {
            5 => c.five += 1,
            6 => c.six += 1,
            _ => c.other += 1,
        }
        tables.insert(table.to_string());
        let index = num(10);
        c.above_2_32 += (index >= 1 << 32) as usize;
        c.mirrored += (f[3] == "1") as usize;
        c.transformed += (f[6] != "0") as usize;
        c.diagonal_flips += (f[7] == "1") as usize;
        c.en_passant += (fen.split(' ').nth(3) != Some("-")) as usize;
        let theirs =
            (table.to_string(), f[3] == "1", (f[4] == "b") as usize, num(5), num(6) as u8, f[7] == "1", num(8), index);
        let ours = trace(&pos, perm).map(|t| {
            (
                t.table,
                t.mirrored,
                t.side,
                t.parts.king_slice,
                t.parts.transform,
                t.parts.diagonal_flip,
                t.parts.pawn_slice,
                t.parts.index,
            )
        });
        if ours.as_ref() != Some(&theirs) {
            c.mismatches.push(format!("{fen} perm {perm}: ours {ours:?}, chesstb {theirs:?}"));
        }
    }
    report!(
        "{file} vs chesstb's code: {} positions, {} tables",
        classes.values().map(|c| c.positions).sum::<usize>(),
        tables.len()
    );
    report!(
        "  class                     positions  4-piece  5-piece  6-piece  index>=2^32  mirrored  transformed  diagonal-flip  en-passant  mismatches"
    );
    for (name, c) in &classes {
        report!(
            "  {name:<25} {:>9}  {:>7}  {:>7}  {:>7}  {:>11}  {:>8}  {:>11}  {:>13}  {:>10}  {:>10}",
            c.positions,
            c.other,
            c.five,
            c.six,
            c.above_2_32,
            c.mirrored,
            c.transformed,
            c.diagonal_flips,
            c.en_passant,
            c.mismatches.len()
        );
    }
    let mut failed = 0;
    for (name, c) in &classes {
        for m in c.mismatches.iter().take(5) {
            report!("MISMATCH {name}: {m}");
        }
        failed += c.mismatches.len();
    }
    assert_eq!(failed, 0, "positions whose index differs from chesstb's");
    classes
}

#[test]
fn index_agrees_with_chesstb_code() {
    let classes = compare_file("chesstb-index.tsv.xz", index_trace);
    let expected = [
        "en_passant",
        "four_of_a_kind",
        "pawnless",
        "pawns_both_sides",
        "pawns_one_side",
        "three_of_a_kind",
        "two_of_a_kind",
    ];
    assert_eq!(classes.keys().map(String::as_str).collect::<Vec<_>>(), expected);
    for (name, c) in &classes {
        assert!(c.positions >= 10_000, "{name}: only {} positions", c.positions);
        assert!(c.six > 0, "{name}: no 6-piece position");
    }
    assert!(classes.values().map(|c| c.above_2_32).sum::<usize>() >= 10_000, "too few indexes above 2^32");
    assert!(classes["pawnless"].diagonal_flips > 0 && classes["pawnless"].mirrored > 0);
}

/// Opposing-pair tables (`KQpKp`): their own index of the same positions,
/// a pawn slice being a rank among the surviving (pair, free pawns) cells.
#[test]
fn pair_index_agrees_with_chesstb_code() {
    let classes = compare_file("chesstb-index-pair.tsv.xz", pair_index_trace);
    assert_eq!(classes.keys().map(String::as_str).collect::<Vec<_>>(), ["opposing_pair", "opposing_pair_en_passant"]);
    for (name, c) in &classes {
        assert!(c.positions >= 10_000, "{name}: only {} positions", c.positions);
        assert!(
            c.six > 0 && c.five > 0 && c.mirrored > 0 && c.transformed > 0,
            "{name}: a kind of position is missing"
        );
    }
    assert!(classes["opposing_pair"].other > 0, "no KpKp position");
    assert!(classes["opposing_pair_en_passant"].en_passant >= 10_000);
}

/// Writes `values` as chesstb's monotone offset vector: one full sample per
/// 2^`log2` values, then a fixed-width delta per value, both bit-packed
/// least significant bit first.
fn mono_vec(values: &[u64], log2: u8) -> (Vec<u8>, u8, u8) {
    let width = |v: u64| (64 - v.leading_zeros()) as u8;
    let samples: Vec<u64> = values.iter().step_by(1 << log2).copied().collect();
    let deltas: Vec<u64> = values.iter().enumerate().map(|(i, &v)| v - samples[i >> log2]).collect();
    let sample_width = width(*samples.last().unwrap());
    let delta_width = deltas.iter().map(|&d| width(d)).max().unwrap();
    let mut out = Vec::new();
    for (list, w) in [(&samples, sample_width), (&deltas, delta_width)] {
        let mut bits = vec![0u8; (list.len() * w as usize).div_ceil(8) + 8];
        for (i, &v) in list.iter().enumerate() {
            for b in 0..w as usize {
                if v >> b & 1 == 1 {
                    let at = i * w as usize + b;
                    bits[at / 8] |= 1 << (at % 8);
                }
            }
        }
        bits.truncate((list.len() * w as usize).div_ceil(8));
        out.extend(bits);
    }
    (out, sample_width, delta_width)
}

/// A sparse WDL file of a 6-piece material whose block holding a position
/// with an index above 2^32 lies more than 4 GiB into the compressed data:
/// the offsets need 33 bits and more, and every step from index to block to
/// byte must stay in 64 bits. Only the header, the offsets and the one
/// block are written; the rest of the 4.3 GB file is a hole.
#[test]
fn blocks_past_4_gib() {
    use shakmaty::{Board, Color, FromSetup, Piece, Role, Setup, Square};
    use std::io::{Seek, SeekFrom, Write};
    // Find a position of KQRKRB, the queen's side to move, with index > 2^32.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let pieces = [
        (Color::White, Role::King),
        (Color::Black, Role::King),
        (Color::White, Role::Queen),
        (Color::White, Role::Rook),
        (Color::Black, Role::Rook),
        (Color::Black, Role::Bishop),
    ];
    let same_block = |a: u64, b: u64| (a / 2) >> 20 == (b / 2) >> 20;
    let (win, win_idx) = loop {
        let mut board = Board::empty();
        for &(color, role) in &pieces {
            loop {
                let sq = Square::new((next() % 64) as u32);
                if board.piece_at(sq).is_none() {
                    board.set_piece_at(sq, Piece { color, role });
                    break;
                }
            }
        }
        let setup = Setup { board, turn: Color::White, ..Setup::empty() };
        let Ok(pos) = Chess::from_setup(setup, CastlingMode::Standard) else { continue };
        let Some(t) = index_trace(&pos, 0) else { continue };
        assert_eq!((t.table.as_str(), t.side), ("KQRKRB", 0));
        if t.parts.index >= 1 << 32 {
            break (pos, t.parts.index);
        }
    };
    // A second position in the same block: the bishop elsewhere (the
    // bishops' class has weight 1 in class order 0, so the index moves a little).
    let (draw, draw_idx) = Square::ALL
        .into_iter()
        .filter_map(|sq| {
            let mut b = win.board().clone();
            let bishop = (b.bishops() & b.black()).first()?;
            if b.piece_at(sq).is_some() {
                return None;
            }
            b.discard_piece_at(bishop);
            b.set_piece_at(sq, Piece { color: Color::Black, role: Role::Bishop });
            let q = Chess::from_setup(Setup { board: b, turn: Color::White, ..Setup::empty() }, CastlingMode::Standard)
                .ok()?;
            let i = index_trace(&q, 0)?.parts.index;
            (i != win_idx && same_block(i, win_idx)).then_some((q, i))
        })
        .next()
        .expect("a second position in the block");

    // KQRKRB: 462 king slices × 64⁴ = 7,750,336,512 positions, 4-bit codes.
    let positions: u64 = 462 * 64u64.pow(4);
    let units = positions.div_ceil(2);
    let block_bytes: u64 = 1 << 20;
    let blocks = units.div_ceil(block_bytes);
    let tail = units - (blocks - 1) * block_bytes;
    let target = win_idx / 2 / block_bytes;
    assert!(target > 0 && target + 1 < blocks);
    let mut plain = vec![0x22u8; block_bytes as usize]; // all draws
    plain[(win_idx / 2 % block_bytes) as usize] = if win_idx % 2 == 0 { 0x24 } else { 0x42 };
    let compressed = lz4_flex::block::compress(&plain);
    // Block 0 spans the first 4 GiB + 4 KiB (never read), blocks 1..target
    // are empty (all draws), the target block follows, the rest are empty.
    let at: u64 = (1 << 32) + 4096;
    let mut offsets = vec![0u64];
    for b in 0..blocks {
        let end = if b == 0 {
            at
        } else if b == target {
            at + compressed.len() as u64
        } else {
            *offsets.last().unwrap()
        };
        offsets.push(end);
    }
    let data_size = *offsets.last().unwrap();
    let (mono, sample_width, delta_width) = mono_vec(&offsets, 6);
    assert!(sample_width > 32, "offsets must need more than 32 bits");

    let key: u32 = (6561 + 729) + (43_046_721 + 4_782_969); // white Q R, black R B
    let mut h = Vec::new();
    h.extend(0x9bd1_e3a6u32.to_le_bytes());
    h.extend((key << 2 | 2).to_le_bytes());
    // Frame 0 (the queen's side to move): stored, class order 0.
    h.push(0);
    h.extend(0u32.to_le_bytes());
    h.extend((tail as u16).to_le_bytes());
    h.extend((block_bytes as u32).to_le_bytes());
    h.extend(blocks.to_le_bytes());
    h.extend(data_size.to_le_bytes());
    // Frame 1: one value (draw) for every position.
    h.extend([0x80, 2]);
    h.extend(0u16.to_le_bytes()); // no LZ4 dictionary
    h.extend([6, sample_width, delta_width, 0]);
    h.extend(&mono);
    let data_start = h.len().div_ceil(64) as u64 * 64;
    let end = data_start + data_size;
    let file_len = (end + 8).div_ceil(64) * 64 + 8;

    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("chesstb-past-4gib");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("wdl")).unwrap();
    let path = dir.join("wdl/KQRKRB.lzw");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&h).unwrap();
    f.seek(SeekFrom::Start(data_start + at)).unwrap();
    f.write_all(&compressed).unwrap();
    f.set_len(file_len).unwrap();
    drop(f);

    let tb = chesstb_reader::Chesstb::open(std::slice::from_ref(&dir), 16 << 20);
    let wdl = |pos: &Chess| tb.probe_wdl(pos).unwrap_or_else(|e| panic!("{e}")).expect("covered");
    use chesstb_reader::Class;
    report!(
        "past 4 GiB: file {file_len} bytes, block {target} of {blocks} at data offset {at} (offsets {sample_width}-bit samples); \
         index {win_idx} reads {:?}, index {draw_idx} reads {:?}",
        wdl(&win),
        wdl(&draw)
    );
    assert_eq!(wdl(&win), Class::Win);
    assert_eq!(wdl(&draw), Class::Draw);
    // The other side to move is the frame of one value.
    let mut other = win.to_setup(shakmaty::EnPassantMode::Legal);
    other.turn = Color::Black;
    if let Ok(p) = Chess::from_setup(other, CastlingMode::Standard) {
        assert_eq!(wdl(&p), Class::Draw);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
