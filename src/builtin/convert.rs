//! Rewriting a built-in table in the current format version, or with
//! another compression, from the values of its own file: no generation
//! (`tbserver convert`). The new file is checked against the old one, value
//! by value, before it takes the old one's name; the statistics beside it
//! stay valid, since the values do not change.

use std::path::Path;

use rayon::prelude::*;

use super::dtm50::{Dtm50View, Segment};
use super::format::{self, Compression};
use super::index::Layout;
use super::material::Material;
use super::{stats, value};

/// What [`convert_file`] did with a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Written again: the file's size before and after, and how many legal
    /// positions were checked equal (DTZ50'', DTM, DTM50's segments).
    Converted { from_version: u32, bytes_before: u64, bytes_after: u64, checked_positions: u64 },
    /// Already in the current version, and no compression was asked for.
    Current,
}

/// Converts the table of `material` at `path` in place. A file already in
/// the current version is left as it is unless `recompress`. Fails, leaving
/// the file as it was, if the file cannot be read (version 3 or 4, a
/// damaged block) or the new file would not read back the same values.
pub fn convert_file(
    path: &Path,
    material: &Material,
    compression: Compression,
    recompress: bool,
) -> Result<Outcome, String> {
    let layout = Layout::new(material);
    let old = std::fs::read(path).map_err(|e| e.to_string())?;
    let (header, blocks) = format::validate_layout(&old, material, layout.size).map_err(|e| {
        if e.contains("format version") {
            format!(
                "{e}: only versions {} and later convert; delete the file to generate it again",
                format::OLDEST_READ_VERSION
            )
        } else {
            e
        }
    })?;
    if blocks.version == format::VERSION && !recompress {
        return Ok(Outcome::Current);
    }
    let encoded = (0..blocks.entries.len())
        .into_par_iter()
        .map(|b| {
            let mut d = format::decode_block(&old, &blocks, b).map_err(|e| format!("block {b}: {e}"))?;
            leave_out_illegal(&layout, blocks.range(b), &mut d);
            Ok(format::encode_one(compression, &d.dtz, &d.dtm, d.dtm50.as_ref()))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let new = format::assemble(material, layout.size, blocks.has_dtm50, header.legal_positions, &encoded);
    let (new_header, new_blocks) =
        format::validate_layout(&new, material, layout.size).map_err(|e| format!("the new file does not read: {e}"))?;
    let checked_positions = (0..blocks.entries.len())
        .into_par_iter()
        .map(|b| same_values(&layout, &old, &blocks, &new, &new_blocks, b).map_err(|e| format!("block {b}: {e}")))
        .sum::<Result<u64, String>>()?;
    replace(path, &new)?;
    stats::carry_over(path, material, header.crc32, new_header.crc32);
    Ok(Outcome::Converted {
        from_version: blocks.version,
        bytes_before: old.len() as u64,
        bytes_after: new.len() as u64,
        checked_positions,
    })
}

/// Marks the illegal indexes of a decoded block (indexes `range`) unknown,
/// as the generator leaves them: older versions fill one with a
/// neighbour's value, and the current version writes an unknown one as a
/// draw with no DTM or DTM50.
fn leave_out_illegal(layout: &Layout, range: std::ops::Range<usize>, d: &mut format::DecodedBlock) {
    for (j, idx) in range.enumerate() {
        if layout.decode(idx as u32).is_none() {
            (d.dtz[j], d.dtm[j]) = (value::UNKNOWN, value::UNKNOWN);
            if let Some(x) = d.dtm50.as_mut() {
                x.inline[j] = value::UNKNOWN as u32;
            }
        }
    }
}

/// Compares block `b`'s legal positions in two files; returns how many.
fn same_values(
    layout: &Layout,
    old: &[u8],
    old_blocks: &format::Blocks,
    new: &[u8],
    new_blocks: &format::Blocks,
    b: usize,
) -> Result<u64, String> {
    let (x, y) = (format::decode_block(old, old_blocks, b)?, format::decode_block(new, new_blocks, b)?);
    let (mut sx, mut sy) = (Vec::<Segment>::new(), Vec::<Segment>::new());
    let mut checked = 0;
    for (j, idx) in old_blocks.range(b).enumerate() {
        if layout.decode(idx as u32).is_none() {
            continue;
        }
        if (x.dtz[j], x.dtm[j]) != (y.dtz[j], y.dtm[j]) {
            return Err(format!(
                "index {idx}: DTZ50'' and DTM {:?} became {:?}",
                (x.dtz[j], x.dtm[j]),
                (y.dtz[j], y.dtm[j])
            ));
        }
        if let (Some(dx), Some(dy)) = (&x.dtm50, &y.dtm50) {
            (sx.clear(), sy.clear());
            dx.segments_into(j as u32, &mut sx);
            dy.segments_into(j as u32, &mut sy);
            if sx != sy {
                return Err(format!("index {idx}: DTM50 {sx:?} became {sy:?}"));
            }
        }
        checked += 1;
    }
    Ok(checked)
}

/// Puts `bytes` at `path` whole: a server that has the old file mapped
/// keeps reading the old file until it opens the table again.
fn replace(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension(format!("tbsb.convert{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        std::io::Write::write_all(&mut f, bytes)?;
        f.sync_all()
    });
    written.and_then(|()| std::fs::rename(&tmp, path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::dtm50::Dtm50Data;
    use crate::builtin::store::Store;

    /// KQvKR, generated, then written in versions 5 and 6 from its own
    /// values: each converts to the very file the generator wrote, and
    /// with `small` to a smaller one with the same values.
    #[test]
    fn older_versions_convert_to_the_file_the_generator_writes() {
        let dir = std::env::temp_dir().join(format!("tbserver-convert-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let kqkr = Material::parse("KQvKR").unwrap();
        let table = Store::new(&dir, true).table(&kqkr).unwrap();
        let path = table.path.clone().unwrap();
        let generated = std::fs::read(&path).unwrap();
        let stats_before = std::fs::read(stats::sidecar_path(&path)).expect("statistics written with the table");
        let layout = Layout::new(&kqkr);
        let (header, blocks) = format::validate_layout(&generated, &kqkr, layout.size).unwrap();
        // The whole table's values, illegal indexes unknown, as generated.
        let (mut dtz, mut dtm, mut layers) = (Vec::new(), Vec::new(), Vec::new());
        for b in 0..blocks.entries.len() {
            let mut d = format::decode_block(&generated, &blocks, b).unwrap();
            leave_out_illegal(&layout, blocks.range(b), &mut d);
            dtz.extend_from_slice(&d.dtz);
            dtm.extend_from_slice(&d.dtm);
            layers.push((blocks.range(b).start, d.dtm50.unwrap()));
        }
        let dtm50 = Dtm50Data::concat(layers);
        for version in [5, 6] {
            let old = format::encode_version(version, &kqkr, &dtz, &dtm, Some(&dtm50), header.legal_positions);
            assert_ne!(old, generated);
            std::fs::write(&path, &old).unwrap();
            let outcome = convert_file(&path, &kqkr, Compression::Fast, false).unwrap();
            assert_eq!(
                outcome,
                Outcome::Converted {
                    from_version: version,
                    bytes_before: old.len() as u64,
                    bytes_after: generated.len() as u64,
                    checked_positions: header.legal_positions
                }
            );
            assert!(std::fs::read(&path).unwrap() == generated, "version {version}: not the generated file");
        }
        assert_eq!(convert_file(&path, &kqkr, Compression::Fast, false), Ok(Outcome::Current));
        let Outcome::Converted { bytes_after, .. } = convert_file(&path, &kqkr, Compression::Small, true).unwrap()
        else {
            panic!("not converted")
        };
        assert!(bytes_after < generated.len() as u64, "{bytes_after}");
        // The statistics still belong to the file: a store reads them
        // rather than computing them again.
        let after: stats::TableStats =
            serde_json::from_slice(&std::fs::read(stats::sidecar_path(&path)).unwrap()).unwrap();
        let before: stats::TableStats = serde_json::from_slice(&stats_before).unwrap();
        assert_eq!(after, stats::TableStats { table_crc32: after.table_crc32, ..before.clone() });
        assert_ne!(after.table_crc32, before.table_crc32);
        let reopened = Store::new(&dir, false).table(&kqkr).unwrap();
        assert_eq!(reopened.file_size(), bytes_after);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A damaged block stops the conversion and leaves the file alone.
    #[test]
    fn a_damaged_file_is_left_as_it_was() {
        let dir = std::env::temp_dir().join(format!("tbserver-convert-damaged-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let krk = Material::parse("KRvK").unwrap();
        let path = Store::new(&dir, true).table(&krk).unwrap().path.clone().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 10;
        bytes[last] ^= 0x55;
        std::fs::write(&path, &bytes).unwrap();
        let err = convert_file(&path, &krk, Compression::Small, true).unwrap_err();
        assert!(err.starts_with("block ") && err.contains("checksum"), "{err}");
        assert!(std::fs::read(&path).unwrap() == bytes);
        assert!(
            std::fs::read_dir(&dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("convert")),
            "a temporary file left"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
