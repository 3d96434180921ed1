//! The sizes and hashes syzygy-tables.info publishes for every Syzygy file of
//! 3 to 7 pieces, shipped with tbserver (`data/syzygy-checksums/`, copied
//! unchanged): a download is judged against them, never against the mirror.

use std::{collections::BTreeMap, sync::OnceLock};

/// Where the shipped lists come from.
pub const SOURCE: &str = "niklasf/syzygy-tables.info (GitHub), folder checksums/, commit 1202ea4";

const BYTES_TSV: &str = include_str!("../../data/syzygy-checksums/bytes.tsv");
const SHA256: &str = include_str!("../../data/syzygy-checksums/sha256");
const BLAKE3: &str = include_str!("../../data/syzygy-checksums/b3");

/// What is published about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub size_bytes: u64,
    /// Lower-case hex.
    pub blake3: Option<String>,
    /// Lower-case hex.
    pub sha256: Option<String>,
}

/// The published list: file name (`KQvKR.rtbw`) to its size and hashes.
#[derive(Debug)]
pub struct Catalog {
    files: BTreeMap<String, Published>,
}

impl Catalog {
    /// The list shipped with tbserver.
    pub fn syzygy() -> &'static Catalog {
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(|| Catalog::parse(BYTES_TSV, SHA256, BLAKE3).expect("the shipped checksum lists parse"))
    }

    /// Reads `<size>\t<name>` lines and `<hex>  <name>` lines. Every hashed
    /// file must have a size; a file without any hash is refused.
    pub fn parse(bytes_tsv: &str, sha256: &str, blake3: &str) -> Result<Catalog, String> {
        let mut files = BTreeMap::new();
        for (i, line) in bytes_tsv.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let (size, name) = line.split_once('\t').ok_or_else(|| format!("bytes.tsv line {}: no tab", i + 1))?;
            let size_bytes = size.trim().parse().map_err(|_| format!("bytes.tsv line {}: size {size:?}", i + 1))?;
            files.insert(name.trim().to_owned(), Published { size_bytes, blake3: None, sha256: None });
        }
        for (list, text, digits) in [("sha256", sha256, 64), ("b3", blake3, 64)] {
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                let (hex, name) = line.split_once("  ").ok_or_else(|| format!("{list} line {}: no name", i + 1))?;
                if hex.len() != digits || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(format!("{list} line {}: {hex:?} is not {digits} hex digits", i + 1));
                }
                let entry =
                    files.get_mut(name.trim()).ok_or_else(|| format!("{list} line {}: {name} has no size", i + 1))?;
                let slot = if list == "sha256" { &mut entry.sha256 } else { &mut entry.blake3 };
                *slot = Some(hex.to_ascii_lowercase());
            }
        }
        if let Some((name, _)) = files.iter().find(|(_, p)| p.blake3.is_none() && p.sha256.is_none()) {
            return Err(format!("{name} has a size but no hash"));
        }
        Ok(Catalog { files })
    }

    pub fn get(&self, name: &str) -> Option<&Published> {
        self.files.get(name)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Every listed file, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Published)> {
        self.files.iter().map(|(n, p)| (n.as_str(), p))
    }
}

/// Pieces on the board of a Syzygy file name (`KRPvKR.rtbz`: 5), kings included.
pub fn syzygy_pieces(name: &str) -> usize {
    let stem = name.split('.').next().unwrap_or(name);
    stem.chars().filter(|c| c.is_ascii_uppercase()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_lists() {
        let catalog = Catalog::syzygy();
        assert_eq!(catalog.len(), 3022);
        assert!(catalog.iter().all(|(_, p)| p.blake3.is_some() && p.sha256.is_some()));
        let kqvk = catalog.get("KQvK.rtbw").unwrap();
        assert_eq!(syzygy_pieces("KQvK.rtbw"), 3);
        assert!(kqvk.size_bytes > 0);
        // syzygy-tables.info's front page gives the set sizes in KiB (du -k):
        // the sums of the listed sizes land on the same KiB.
        let kib = |pieces: std::ops::RangeInclusive<usize>| -> u64 {
            catalog.iter().filter(|(n, _)| pieces.contains(&syzygy_pieces(n))).map(|(_, p)| p.size_bytes).sum::<u64>()
                / 1024
        };
        for (pieces, published_kib) in [(3..=5, 961_508), (6..=6, 156_472_140), (7..=7, 17_957_925_040)] {
            let sum = kib(pieces.clone());
            assert!(sum.abs_diff(published_kib) * 1000 < published_kib, "{pieces:?}: {sum} KiB vs {published_kib}");
        }
    }

    #[test]
    fn bad_lists_are_refused() {
        assert!(Catalog::parse("12\tA.rtbw\n", "", "").is_err(), "no hash");
        assert!(Catalog::parse("x\tA.rtbw\n", "", "").is_err(), "size");
        assert!(Catalog::parse("12\tA.rtbw\n", &format!("{}  B.rtbw\n", "0".repeat(64)), "").is_err(), "no size");
        assert!(Catalog::parse("12\tA.rtbw\n", "abc  A.rtbw\n", "").is_err(), "short hash");
        let ok = Catalog::parse("12\tA.rtbw\n", "", &format!("{}  A.rtbw\n", "AB".repeat(32))).unwrap();
        assert_eq!(ok.get("A.rtbw").unwrap().blake3.as_deref(), Some("ab".repeat(32).as_str()));
    }
}
