//! On-disk format of a built-in table (`<material>.tbsb`).
//!
//! ```text
//! 0   8  magic "TBSBTIN\0"
//! 8   4  format version (u32 LE)
//! 12  4  header length = 64
//! 16 16  material name, e.g. "KQvKR", zero-padded
//! 32  8  index size N (u64): positions per metric, illegal ones included
//! 40  4  metrics: bit 0 DTZ50'', bit 1 DTM, bit 2 DTM50 (optional: without
//!        it the file ends after the DTM values)
//! 44  4  CRC-32 of everything after the header
//! 48  8  legal positions (u64)
//! 56  8  reserved, zero
//! 64     DTZ50'' values: N × u16 LE, then DTM values: N × u16 LE
//!        DTM50 first segments: N × u32 LE
//!        K, the positions with more DTM50 segments (u64), S, their count (u64)
//!        K × u32 their indexes (ascending), K + 1 × u32 segment starts,
//!        S × u32 segments
//! ```
//! Values use the encoding of [`super::value`], DTM50 segments that of
//! [`super::dtm50::Segment`]. The index is the one of
//! [`super::index::Layout`]; a change to it must bump the version.

use std::io::{self, Cursor, Seek, SeekFrom, Write};

use super::{dtm50::Dtm50Data, material::Material};

pub const MAGIC: &[u8; 8] = b"TBSBTIN\0";
pub const VERSION: u32 = 3;
pub const HEADER_LEN: usize = 64;
pub const METRIC_DTZ: u32 = 1;
pub const METRIC_DTM: u32 = 2;
pub const METRIC_DTM50: u32 = 4;
/// Every table has DTZ50'' and DTM; DTM50 may be left out.
const BASE_METRICS: u32 = METRIC_DTZ | METRIC_DTM;
pub const EXTENSION: &str = "tbsb";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub material: String,
    pub positions: u64,
    pub metrics: u32,
    pub crc32: u32,
    pub legal_positions: u64,
}

/// Byte offsets of the sections after the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sections {
    pub dtz: usize,
    pub dtm: usize,
    /// Whether the DTM50 sections (all that follow) exist.
    pub has_dtm50: bool,
    pub dtm50_inline: usize,
    pub overflow_len: usize,
    pub overflow_index: usize,
    pub overflow_start: usize,
    pub segments: usize,
    pub end: usize,
}

impl Sections {
    fn without_dtm50(positions: usize) -> Sections {
        let dtz = HEADER_LEN;
        let dtm = dtz + 2 * positions;
        let end = dtm + 2 * positions;
        Sections {
            dtz,
            dtm,
            has_dtm50: false,
            dtm50_inline: end,
            overflow_len: 0,
            overflow_index: end,
            overflow_start: end,
            segments: end,
            end,
        }
    }

    fn new(positions: usize, overflow_len: usize, segments: usize) -> Sections {
        let dtz = HEADER_LEN;
        let dtm = dtz + 2 * positions;
        let dtm50_inline = dtm + 2 * positions;
        let counts = dtm50_inline + 4 * positions;
        let overflow_index = counts + 16;
        let overflow_start = overflow_index + 4 * overflow_len;
        let segments_at = overflow_start + 4 * (overflow_len + 1);
        Sections {
            dtz,
            dtm,
            has_dtm50: true,
            dtm50_inline,
            overflow_len,
            overflow_index,
            overflow_start,
            segments: segments_at,
            end: segments_at + 4 * segments,
        }
    }
}

/// Writes a whole table to `w`, streaming: nothing is copied in memory but
/// one small buffer at a time. The header goes first with a zero checksum
/// and is written again, checksum included, once the body is out; it is
/// also returned.
pub fn write(
    w: &mut (impl Write + Seek),
    material: &Material,
    dtz: &[u16],
    dtm: &[u16],
    dtm50: Option<&Dtm50Data>,
    legal_positions: u64,
) -> io::Result<[u8; HEADER_LEN]> {
    assert_eq!(dtz.len(), dtm.len());
    let sections = match dtm50 {
        Some(d) => {
            assert_eq!(dtz.len(), d.inline.len());
            Sections::new(dtz.len(), d.overflow_index.len(), d.segments.len())
        }
        None => Sections::without_dtm50(dtz.len()),
    };
    w.write_all(&[0; HEADER_LEN])?;
    let mut body = Body { w, crc: crc32fast::Hasher::new(), buf: Vec::with_capacity(BUF_BYTES), written: HEADER_LEN };
    body.put(dtz, u16::to_le_bytes)?;
    body.put(dtm, u16::to_le_bytes)?;
    if let Some(dtm50) = dtm50 {
        body.put(&dtm50.inline, u32::to_le_bytes)?;
        body.put(&[dtm50.overflow_index.len() as u64, dtm50.segments.len() as u64], u64::to_le_bytes)?;
        for part in [&dtm50.overflow_index, &dtm50.overflow_start, &dtm50.segments] {
            body.put(part, u32::to_le_bytes)?;
        }
    }
    body.flush()?;
    assert_eq!(body.written, sections.end);
    let metrics = if dtm50.is_some() { BASE_METRICS | METRIC_DTM50 } else { BASE_METRICS };
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    let name = material.name();
    header[16..16 + name.len()].copy_from_slice(name.as_bytes());
    header[32..40].copy_from_slice(&(dtz.len() as u64).to_le_bytes());
    header[40..44].copy_from_slice(&metrics.to_le_bytes());
    header[44..48].copy_from_slice(&body.crc.finalize().to_le_bytes());
    header[48..56].copy_from_slice(&legal_positions.to_le_bytes());
    w.seek(SeekFrom::Start(0))?;
    w.write_all(&header)?;
    Ok(header)
}

/// A whole table in memory, as [`write`] writes it to a file.
/// The size of the file [`write`] writes, in bytes.
pub fn encoded_len(positions: usize, dtm50: Option<&Dtm50Data>) -> usize {
    match dtm50 {
        Some(d) => Sections::new(positions, d.overflow_index.len(), d.segments.len()).end,
        None => Sections::without_dtm50(positions).end,
    }
}

pub fn encode(material: &Material, dtz: &[u16], dtm: &[u16], dtm50: Option<&Dtm50Data>, legal_positions: u64) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    write(&mut out, material, dtz, dtm, dtm50, legal_positions).expect("writing to memory cannot fail");
    out.into_inner()
}

/// Bytes [`write`] gathers before it checksums and writes them.
const BUF_BYTES: usize = 1 << 16;

/// The body of a table on its way out, checksummed as it goes.
struct Body<'a, W: Write> {
    w: &'a mut W,
    crc: crc32fast::Hasher,
    buf: Vec<u8>,
    written: usize,
}

impl<W: Write> Body<'_, W> {
    fn put<T: Copy, const N: usize>(&mut self, values: &[T], to_le: fn(T) -> [u8; N]) -> io::Result<()> {
        for chunk in values.chunks(BUF_BYTES / N) {
            let start = self.buf.len();
            self.buf.resize(start + chunk.len() * N, 0);
            for (out, &v) in self.buf[start..].chunks_exact_mut(N).zip(chunk) {
                out.copy_from_slice(&to_le(v));
            }
            if self.buf.len() >= BUF_BYTES {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.crc.update(&self.buf);
        self.w.write_all(&self.buf)?;
        self.written += self.buf.len();
        self.buf.clear();
        Ok(())
    }
}

/// Checks a file's header and section sizes (not its checksum) against what
/// `material` needs, and says where its sections are.
pub fn validate_layout(bytes: &[u8], material: &Material, positions: usize) -> Result<(Header, Sections), String> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err("not a tbserver built-in table (bad magic)".into());
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let version = u32_at(8);
    if version != VERSION || u32_at(12) as usize != HEADER_LEN {
        return Err(format!("format version {version}, expected {VERSION}"));
    }
    let name = String::from_utf8_lossy(&bytes[16..32]).trim_end_matches('\0').to_string();
    if name != material.name() {
        return Err(format!("holds {name}, expected {}", material.name()));
    }
    let header = Header {
        material: name,
        positions: u64_at(32),
        metrics: u32_at(40),
        crc32: u32_at(44),
        legal_positions: u64_at(48),
    };
    if header.metrics != BASE_METRICS && header.metrics != BASE_METRICS | METRIC_DTM50 {
        return Err(format!("unexpected metrics {:#x}", header.metrics));
    }
    let size_error = || format!("size mismatch: {} bytes for {} positions", bytes.len(), header.positions);
    if header.positions != positions as u64 {
        return Err(size_error());
    }
    let sections = if header.metrics & METRIC_DTM50 == 0 {
        Sections::without_dtm50(positions)
    } else {
        let counts = Sections::new(positions, 0, 0).overflow_index - 16;
        if bytes.len() < counts + 16 {
            return Err(size_error());
        }
        let (k, n) = (u64_at(counts), u64_at(counts + 8));
        if k > positions as u64 || n > 100 * positions as u64 {
            return Err(size_error());
        }
        Sections::new(positions, k as usize, n as usize)
    };
    if bytes.len() != sections.end {
        return Err(size_error());
    }
    Ok((header, sections))
}

/// Checks a whole file like [`validate_layout`], and its checksum.
pub fn validate(bytes: &[u8], material: &Material, positions: usize) -> Result<(Header, Sections), String> {
    let (header, sections) = validate_layout(bytes, material, positions)?;
    let crc = crc32fast::hash(&bytes[HEADER_LEN..]);
    if crc != header.crc32 {
        return Err(format!("checksum mismatch: stored {:08x}, computed {crc:08x}", header.crc32));
    }
    Ok((header, sections))
}
