//! `tbserver verify DIR`: checks the table files of a directory and reports
//! each bad one with the reason.
//!
//! - Syzygy (`.rtbw`, `.rtbz`): the start-up checks (size, magic, header
//!   material), then the table is opened by probing sample positions of its
//!   material: one by default, many with `--deep` (decoding data blocks).
//!   Syzygy files carry no checksum, so flipped bits inside a block can go
//!   unnoticed. Files are read with system calls, not mapped, so a
//!   truncated file is an error here rather than SIGBUS.
//! - Gaviota (`.gtb.cp4`): the block index (header, offsets up to the file's
//!   end); data inside blocks is not checked (no checksum, and libgtb is
//!   not safe to probe on damaged files).
//! - Built-in (`.tbsb`): header and block index by the store's own reader,
//!   then every block decoded and checked against its CRC-32; each damaged
//!   block is named.
//! - chesstb (`.lzw`, `.lzdtz`, `.lzdtc`, `.lzdtm`, `.lzdtm50`, directly in
//!   the directory or in its `wdl/ dtz/ dtc/ dtm/ dtm50/`): header, frames
//!   and offset sections, the trailing XXH64 of the whole file, and that a
//!   distance table has the WDL companion it takes its classes from.
//!
//! With `--checksums` ([`checksums`]) every byte is judged instead: Syzygy
//! files against the published hashes, chesstb files against their trailer.

pub mod checksums;

use std::{collections::BTreeMap, path::Path};

use shakmaty::{CastlingMode, Chess, Color, FromSetup, Piece, Role, Setup, Square};

use crate::{
    builtin::{Material, Store},
    config::SyzygyIo,
    domain::Source,
    sources::{TableInfo, TableKind, TableSource, syzygy::SyzygySource},
};

/// The verdict on one file.
#[derive(Debug, Clone)]
pub struct FileReport {
    pub name: String,
    pub source: Source,
    /// What was checked, e.g. `1000 positions probed`.
    pub checked: String,
    pub problems: Vec<String>,
}

/// Checks every table file directly in `dir`, sorted by name. `deep_samples`
/// positions are probed per Syzygy table (at least 1).
pub fn verify_dir(dir: &Path, deep_samples: usize) -> std::io::Result<Vec<FileReport>> {
    std::fs::read_dir(dir)?; // an unreadable directory is an error, not an empty report
    let mut reports = verify_syzygy(dir, deep_samples.max(1));
    let builtin = Store::new(dir, false);
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.ends_with(".gtb.cp4") {
            let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let problems = crate::sources::gaviota::check_cp4_header(&path, bytes).err().into_iter().collect();
            reports.push(FileReport { name, source: Source::Gaviota, checked: "block index".to_owned(), problems });
        } else if let Some(stem) = name.strip_suffix(".tbsb") {
            let (problems, checked) = match Material::parse(stem).filter(|m| m.is_canonical()) {
                None => (vec![format!("{stem:?} is not a canonical material name")], "name".to_owned()),
                Some(material) => match builtin.table(&material) {
                    Err(e) => (vec![e], "header and block index".to_owned()),
                    Ok(t) => {
                        (t.damaged_blocks(), format!("header, block index and {} block checksums", t.block_count()))
                    }
                },
            };
            reports.push(FileReport { name, source: Source::Builtin, checked, problems });
        }
    }
    reports.extend(verify_chesstb(dir));
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(reports)
}

fn verify_chesstb(dir: &Path) -> Vec<FileReport> {
    let tb = chesstb_reader::Chesstb::open(&[dir.to_owned()], 1 << 20);
    tb.files()
        .into_iter()
        .map(|f| {
            // Named with its directory when it has one: chesstb lays files out by kind.
            let name = match f.path.parent().filter(|p| *p != dir).and_then(|p| p.file_name()) {
                Some(sub) => format!("{}/{}", sub.to_string_lossy(), f.name),
                None => f.name,
            };
            FileReport {
                name,
                source: Source::Chesstb,
                checked: "header and XXH64".to_owned(),
                problems: tb.check(&f.material, f.kind, true).err().into_iter().collect(),
            }
        })
        .collect()
}

fn verify_syzygy(dir: &Path, samples: usize) -> Vec<FileReport> {
    let source = SyzygySource::open(&[dir.to_owned()], SyzygyIo::Read);
    let tables: Vec<TableInfo> = source.tables();
    // Probing one table may read others (captures lead into them); every
    // failure is charged to the table it names.
    let mut failures: BTreeMap<String, String> = BTreeMap::new();
    let mut probed: BTreeMap<String, usize> = BTreeMap::new();
    for table in tables.iter().filter(|t| t.problems.is_empty()) {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ table.name.len() as u64);
        for pos in sample_positions(&table.material, samples, &mut rng) {
            let result = match table.kind {
                TableKind::Dtz => source.probe_dtz(&pos).map(drop),
                _ => source.probe_wdl(&pos).map(drop),
            };
            *probed.entry(table.name.clone()).or_default() += 1;
            // A Syzygy source generates nothing: every failure is a broken table.
            if let Err(crate::sources::Unanswered::Broken(err)) = result {
                failures.entry(err.table).or_insert(err.reason);
                break;
            }
        }
    }
    tables
        .into_iter()
        .map(|t| {
            let mut problems = t.problems;
            problems.extend(failures.get(&t.name).cloned());
            let n = probed.get(&t.name).copied().unwrap_or(0);
            FileReport { checked: format!("{n} positions probed"), name: t.name, source: Source::Syzygy, problems }
        })
        .collect()
}

/// Small deterministic generator (xorshift64*): verify runs are repeatable.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) % n
    }
}

/// Up to `n` legal positions with the material of a table name such as
/// `KQvKR` (random placements; illegal ones are skipped).
fn sample_positions(material: &str, n: usize, rng: &mut Rng) -> Vec<Chess> {
    let Some((white, black)) = material.split_once('v') else { return Vec::new() };
    let pieces: Option<Vec<Piece>> = white
        .chars()
        .map(|c| (Color::White, c))
        .chain(black.chars().map(|c| (Color::Black, c)))
        .map(|(color, c)| Role::from_char(c.to_ascii_lowercase()).map(|role| Piece { color, role }))
        .collect();
    let Some(pieces) = pieces else { return Vec::new() };
    let mut out = Vec::with_capacity(n);
    for _ in 0..n * 50 {
        if out.len() == n {
            break;
        }
        let mut setup = Setup::empty();
        let mut ok = true;
        for &piece in &pieces {
            let sq = Square::new(rng.below(64) as u32);
            let back_rank = matches!(sq.rank(), shakmaty::Rank::First | shakmaty::Rank::Eighth);
            if setup.board.piece_at(sq).is_some() || (piece.role == Role::Pawn && back_rank) {
                ok = false;
                break;
            }
            setup.board.set_piece_at(sq, piece);
        }
        setup.turn = if rng.below(2) == 0 { Color::White } else { Color::Black };
        if ok && let Ok(pos) = Chess::from_setup(setup, CastlingMode::Standard) {
            out.push(pos);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::Position;

    #[test]
    fn samples_have_the_material() {
        let positions = sample_positions("KRPvKB", 50, &mut Rng(7));
        assert_eq!(positions.len(), 50);
        for pos in &positions {
            assert_eq!(crate::material::normalized(pos.board()), "KRPvKB");
        }
        assert!(sample_positions("foo", 5, &mut Rng(7)).is_empty());
    }
}
