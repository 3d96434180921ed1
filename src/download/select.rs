//! Which files a download takes: by piece count, by kind (WDL only, chesstb
//! metrics) and by material, a named table bringing the tables its captures
//! and promotions lead to.

use std::collections::BTreeSet;

use chesstb_reader::{Kind, TableMaterial};

use super::{DownloadError, catalog::Catalog};

/// Piece counts, kings included, e.g. `3-5` or `6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pieces {
    pub min: usize,
    pub max: usize,
}

impl std::str::FromStr for Pieces {
    type Err = String;

    fn from_str(s: &str) -> Result<Pieces, String> {
        let bad = || format!("--pieces {s:?}: a piece count or a range of them from 3 to 7, e.g. 3-5 or 6");
        let (min, max) = s.split_once('-').unwrap_or((s, s));
        let (min, max): (usize, usize) =
            (min.trim().parse().map_err(|_| bad())?, max.trim().parse().map_err(|_| bad())?);
        if !(3..=7).contains(&min) || !(min..=7).contains(&max) {
            return Err(bad());
        }
        Ok(Pieces { min, max })
    }
}

impl Pieces {
    fn contains(&self, n: usize) -> bool {
        (self.min..=self.max).contains(&n)
    }
}

/// Letters of the non-king pieces, strongest first.
const LETTERS: [char; 5] = ['Q', 'R', 'B', 'N', 'P'];

/// A material as counts per side, `[side][Q R B N P]`.
type Counts = [[u8; 5]; 2];

fn parse_material(name: &str) -> Option<Counts> {
    // `KRvKB` (Syzygy, tbserver) or `KRKB` (chesstb).
    let rest = name.trim().strip_prefix('K')?;
    let (white, black) = rest.split_once('v').or_else(|| rest.split_once('K'))?;
    let black = black.strip_prefix('K').unwrap_or(black);
    let mut counts = [[0u8; 5]; 2];
    for (side, letters) in [white, black].into_iter().enumerate() {
        for ch in letters.chars() {
            counts[side][LETTERS.iter().position(|&l| l == ch.to_ascii_uppercase())?] += 1;
        }
    }
    let men: u8 = counts.iter().flatten().sum();
    (1..=5).contains(&men).then_some(counts)
}

/// The materials a position of `counts` can turn into by captures and
/// promotions, `counts` included; none with kings alone.
fn closure(start: &[Counts]) -> BTreeSet<Counts> {
    let mut seen: BTreeSet<Counts> = BTreeSet::new();
    let mut todo: Vec<Counts> = start.to_vec();
    while let Some(m) = todo.pop() {
        if m.iter().flatten().all(|&n| n == 0) || !seen.insert(m) {
            continue;
        }
        for side in 0..2 {
            for role in 0..5 {
                if m[side][role] == 0 {
                    continue;
                }
                let mut captured = m;
                captured[side][role] -= 1;
                todo.push(captured);
                if role == 4 {
                    for promoted in 0..4 {
                        let mut p = captured;
                        p[side][promoted] += 1;
                        todo.push(p);
                    }
                }
            }
        }
    }
    seen
}

fn syzygy_stem(white: &[u8; 5], black: &[u8; 5]) -> String {
    let side = |c: &[u8; 5]| -> String {
        std::iter::once('K').chain((0..5).flat_map(|i| std::iter::repeat_n(LETTERS[i], c[i] as usize))).collect()
    };
    format!("{}v{}", side(white), side(black))
}

/// Syzygy file names of a selection, each in the published list. A named
/// material the list does not know is an error.
pub fn syzygy(
    catalog: &Catalog,
    pieces: Option<Pieces>,
    wdl_only: bool,
    materials: &[String],
) -> Result<Vec<String>, DownloadError> {
    let kind_ok = |name: &str| name.ends_with(".rtbw") || (!wdl_only && name.ends_with(".rtbz"));
    let pieces_ok = |name: &str| pieces.is_none_or(|p| p.contains(super::catalog::syzygy_pieces(name)));
    if materials.is_empty() {
        let Some(_) = pieces else {
            return Err(DownloadError::BadSelection("name --pieces, --material or both".into()));
        };
        return Ok(catalog.iter().map(|(n, _)| n).filter(|n| kind_ok(n) && pieces_ok(n)).map(str::to_owned).collect());
    }
    let mut start = Vec::new();
    for name in materials {
        let counts = parse_material(name).ok_or_else(|| DownloadError::UnknownTable(name.clone()))?;
        let found = [syzygy_stem(&counts[0], &counts[1]), syzygy_stem(&counts[1], &counts[0])]
            .into_iter()
            .any(|stem| catalog.get(&format!("{stem}.rtbw")).is_some());
        if !found {
            return Err(DownloadError::UnknownTable(format!("{name} (not in the published Syzygy list)")));
        }
        start.push(counts);
    }
    let mut names = BTreeSet::new();
    for m in closure(&start) {
        // Syzygy names each material once, one of its two orientations.
        let stem = [syzygy_stem(&m[0], &m[1]), syzygy_stem(&m[1], &m[0])]
            .into_iter()
            .find(|stem| catalog.get(&format!("{stem}.rtbw")).is_some());
        let Some(stem) = stem else {
            // KvK and the like: no file, every position is a draw.
            continue;
        };
        for ext in ["rtbw", "rtbz"] {
            let name = format!("{stem}.{ext}");
            if catalog.get(&name).is_some() && kind_ok(&name) && pieces_ok(&name) {
                names.insert(name);
            }
        }
    }
    Ok(names.into_iter().collect())
}

/// The folder of a chesstb kind within its set.
pub fn chesstb_folder(kind: Kind) -> &'static str {
    match kind {
        Kind::Wdl => "wdl",
        Kind::Dtz => "dtz",
        Kind::Dtc => "dtc",
        Kind::Dtm => "dtm",
        Kind::Dtm50 => "dtm50",
    }
}

/// A `--metrics` name.
pub fn chesstb_kind(name: &str) -> Result<Kind, DownloadError> {
    Kind::ALL
        .into_iter()
        .find(|&k| chesstb_folder(k) == name.trim().to_ascii_lowercase())
        .ok_or_else(|| DownloadError::BadSelection(format!("--metrics {name:?}: one of wdl, dtz, dtc, dtm, dtm50")))
}

fn chesstb_material(m: &Counts) -> TableMaterial {
    TableMaterial { counts: *m, pair: false }.canonical().0
}

/// Every material of `n` pieces, kings included.
fn all_of(n: usize) -> Vec<Counts> {
    let men = n - 2;
    let mut out = Vec::new();
    // Every way to give `men` pieces to the two sides, letter by letter.
    fn fill(at: usize, left: usize, m: &mut Counts, out: &mut Vec<Counts>) {
        if at == 10 {
            if left == 0 {
                out.push(*m);
            }
            return;
        }
        for k in 0..=left {
            m[at / 5][at % 5] = k as u8;
            fill(at + 1, left - k, m, out);
        }
        m[at / 5][at % 5] = 0;
    }
    fill(0, men, &mut [[0; 5]; 2], &mut out);
    out
}

/// chesstb file names (`wdl/KQK.lzw`) of a selection. DTC exists for
/// materials with pawns only.
pub fn chesstb(pieces: Option<Pieces>, metrics: &[Kind], materials: &[String]) -> Result<Vec<String>, DownloadError> {
    if metrics.is_empty() {
        return Err(DownloadError::BadSelection("--metrics names none".into()));
    }
    let selected: BTreeSet<Counts> = if materials.is_empty() {
        let Some(p) = pieces else {
            return Err(DownloadError::BadSelection("name --pieces, --material or both".into()));
        };
        (p.min..=p.max).flat_map(all_of).collect()
    } else {
        let start = materials
            .iter()
            .map(|name| parse_material(name).ok_or_else(|| DownloadError::UnknownTable(name.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        closure(&start)
    };
    let materials: BTreeSet<(usize, String, bool)> = selected
        .iter()
        .map(chesstb_material)
        .filter(|m| pieces.is_none_or(|p| p.contains(m.pieces())))
        .map(|m| (m.pieces(), m.name(), m.has_pawns()))
        .collect();
    let mut names = Vec::new();
    for (_, name, pawns) in materials {
        for &kind in metrics {
            if kind != Kind::Dtc || pawns {
                names.push(format!("{}/{name}.{}", chesstb_folder(kind), kind.extension()));
            }
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syzygy_selections() {
        let catalog = Catalog::syzygy();
        let three_four = syzygy(catalog, Some("3-4".parse().unwrap()), false, &[]).unwrap();
        assert_eq!(three_four.len(), 70);
        assert_eq!(syzygy(catalog, Some("3-5".parse().unwrap()), false, &[]).unwrap().len(), 290);
        assert_eq!(syzygy(catalog, Some("6".parse().unwrap()), true, &[]).unwrap().len(), 365);
        assert_eq!(syzygy(catalog, Some("7".parse().unwrap()), false, &[]).unwrap().len(), 2002);
        // A table with what its captures and promotions lead to: KPvK
        // promotes into all four 3-piece tables with a piece.
        let kpvk = syzygy(catalog, None, true, &["KPvK".into()]).unwrap();
        assert_eq!(kpvk, ["KBvK.rtbw", "KNvK.rtbw", "KPvK.rtbw", "KQvK.rtbw", "KRvK.rtbw"]);
        // Named the other way round, or chesstb's way, it is the same table.
        assert_eq!(
            syzygy(catalog, None, true, &["KBvKRP".into()]).unwrap(),
            syzygy(catalog, None, true, &["KRPKB".into()]).unwrap()
        );
        // Within 5 pieces: the table and its four promotions.
        let krpvkb = syzygy(catalog, Some("5".parse().unwrap()), true, &["KBvKRP".into()]).unwrap();
        assert_eq!(krpvkb, ["KQRvKB.rtbw", "KRBvKB.rtbw", "KRNvKB.rtbw", "KRPvKB.rtbw", "KRRvKB.rtbw"]);
        let with_deps = syzygy(catalog, None, false, &["KRPvKB".into()]).unwrap();
        for name in ["KQvKB.rtbz", "KRvKB.rtbw", "KRPvK.rtbw", "KBvKP.rtbw", "KQRvK.rtbw", "KRvK.rtbz", "KRRvK.rtbw"] {
            assert!(with_deps.contains(&name.to_owned()), "{name}: {with_deps:?}");
        }
        assert!(!with_deps.iter().any(|n| n.starts_with("KQQ") || n.contains("vKQ")), "one pawn, one queen at most");
        assert!(matches!(syzygy(catalog, None, false, &["KXvK".into()]), Err(DownloadError::UnknownTable(_))));
        assert!(matches!(syzygy(catalog, None, false, &[]), Err(DownloadError::BadSelection(_))));
        assert!("2-4".parse::<Pieces>().is_err() && "5-4".parse::<Pieces>().is_err() && "8".parse::<Pieces>().is_err());
    }

    /// The 35 materials of 3 and 4 pieces in chesstb's names, as in the
    /// shared data's list of chesstb's own output.
    #[test]
    fn chesstb_selections() {
        let wdl = chesstb(Some("3-4".parse().unwrap()), &[Kind::Wdl], &[]).unwrap();
        assert_eq!(wdl.len(), 35);
        for name in ["wdl/KQK.lzw", "wdl/KRKB.lzw", "wdl/KPKP.lzw", "wdl/KBBK.lzw"] {
            assert!(wdl.contains(&name.to_owned()), "{name}");
        }
        let dtc = chesstb(Some("3-4".parse().unwrap()), &[Kind::Dtc], &[]).unwrap();
        assert_eq!(dtc.len(), 11, "{dtc:?}");
        assert!(dtc.iter().all(|n| n.contains('P')));
        assert_eq!(chesstb(Some("5".parse().unwrap()), &[Kind::Wdl], &[]).unwrap().len(), 110);
        let krbkq = chesstb(Some("5".parse().unwrap()), &[Kind::Dtm50], &["KRBvKQ".into()]).unwrap();
        assert_eq!(krbkq, ["dtm50/KQKRB.lzdtm50"]);
        assert!(chesstb_kind("DTM50").is_ok() && chesstb_kind("dtx").is_err());
    }
}
