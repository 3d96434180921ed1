//! On-disk format of a built-in table (`<material>.tbsb`).
//!
//! ```text
//! 0   8  magic "TBSBTIN\0"
//! 8   4  format version (u32 LE)
//! 12  4  header length = 64
//! 16 16  material name, e.g. "KQvKR", zero-padded
//! 32  8  index size N (u64): positions per metric, illegal ones included
//! 40  4  metrics: bit 0 DTZ50'', bit 1 DTM
//! 44  4  CRC-32 of everything after the header
//! 48  8  legal positions (u64)
//! 56  8  reserved, zero
//! 64     DTZ50'' values: N × u16 LE, then DTM values: N × u16 LE
//! ```
//! Values use the encoding of [`super::value`]. The index is the one of
//! [`super::index::Layout`]; a change to it must bump the version.

use super::material::Material;

pub const MAGIC: &[u8; 8] = b"TBSBTIN\0";
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 64;
pub const METRIC_DTZ: u32 = 1;
pub const METRIC_DTM: u32 = 2;
pub const EXTENSION: &str = "tbsb";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub material: String,
    pub positions: u64,
    pub metrics: u32,
    pub crc32: u32,
    pub legal_positions: u64,
}

pub fn encode(material: &Material, dtz: &[u16], dtm: &[u16], legal_positions: u64) -> Vec<u8> {
    assert_eq!(dtz.len(), dtm.len());
    let mut out = vec![0u8; HEADER_LEN + 4 * dtz.len()];
    for (chunk, v) in out[HEADER_LEN..].chunks_exact_mut(2).zip(dtz.iter().chain(dtm)) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    let crc = crc32fast::hash(&out[HEADER_LEN..]);
    out[..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    let name = material.name();
    out[16..16 + name.len()].copy_from_slice(name.as_bytes());
    out[32..40].copy_from_slice(&(dtz.len() as u64).to_le_bytes());
    out[40..44].copy_from_slice(&(METRIC_DTZ | METRIC_DTM).to_le_bytes());
    out[44..48].copy_from_slice(&crc.to_le_bytes());
    out[48..56].copy_from_slice(&legal_positions.to_le_bytes());
    out
}

/// Checks a whole file (header and checksum) against what `material` needs.
pub fn validate(bytes: &[u8], material: &Material, positions: usize) -> Result<Header, String> {
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
    if header.positions != positions as u64 || bytes.len() != HEADER_LEN + 4 * positions {
        return Err(format!("size mismatch: {} bytes for {} positions", bytes.len(), header.positions));
    }
    if header.metrics != METRIC_DTZ | METRIC_DTM {
        return Err(format!("unexpected metrics {:#x}", header.metrics));
    }
    let crc = crc32fast::hash(&bytes[HEADER_LEN..]);
    if crc != header.crc32 {
        return Err(format!("checksum mismatch: stored {:08x}, computed {crc:08x}", header.crc32));
    }
    Ok(header)
}
