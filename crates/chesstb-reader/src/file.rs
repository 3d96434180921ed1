//! One chesstb table file: header, per-side frames, offset sections and
//! block decoding (LZ4 with a dictionary for WDL, raw LZMA1 for the rest).

use std::{
    ops::Range,
    path::Path,
    sync::{Arc, atomic::AtomicBool},
};

use mapguard::GuardedMap;

use super::{
    cache::{Block, BlockCache, BlockKey, FileResult, LayeredBlock, Record},
    index::{IndexConfig, Layout},
    material::TableMaterial,
};

/// What a file holds, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Win/draw/loss with cursed wins and blessed losses (`wdl/*.lzw`).
    Wdl,
    /// Distance to zeroing in plies (`dtz/*.lzdtz`).
    Dtz,
    /// Distance to conversion under the 50-move rule, pawn endings only (`dtc/*.lzdtc`).
    Dtc,
    /// Distance to mate in plies (`dtm/*.lzdtm`).
    Dtm,
    /// DTM50 at every half-move clock (`dtm50/*.lzdtm50`).
    Dtm50,
}

impl Kind {
    /// Every kind, in the order tables are listed.
    pub const ALL: [Kind; 5] = [Kind::Wdl, Kind::Dtz, Kind::Dtc, Kind::Dtm, Kind::Dtm50];

    /// The file name extension of this kind, without the dot (`lzw`, `lzdtz`, ...).
    pub fn extension(self) -> &'static str {
        match self {
            Kind::Wdl => "lzw",
            Kind::Dtz => "lzdtz",
            Kind::Dtc => "lzdtc",
            Kind::Dtm => "lzdtm",
            Kind::Dtm50 => "lzdtm50",
        }
    }

    pub(crate) fn from_extension(ext: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.extension() == ext)
    }

    fn magic(self) -> u32 {
        match self {
            Kind::Wdl => 0x9bd1_e3a6,
            Kind::Dtz => 0x2ec8_b161,
            Kind::Dtc => 0x2ec8_b17e,
            Kind::Dtm => 0xab57_c134,
            Kind::Dtm50 => 0xab57_c151,
        }
    }

    /// Changepoint packs (one record per position across layers).
    fn layered(self) -> bool {
        matches!(self, Kind::Dtc | Kind::Dtm50)
    }

    /// Layers of a pack: DTM50 has plain DTM and clocks 0–99, DTC the DTZ row
    /// and 29 push budgets.
    pub(crate) fn layers(self) -> usize {
        match self {
            Kind::Dtm50 => 101,
            Kind::Dtc => 30,
            _ => 1,
        }
    }

    fn bitmap_bytes(self) -> usize {
        self.layers().div_ceil(32) * 4
    }
}

const CHECKSUM_SEED: u64 = 0xf0f0_f0f0_f0f0;

/// The check of a chesstb file's trailer, fed the file's bytes in order in
/// pieces of any size: the last 8 bytes must be the XXH64 (seeded with
/// 0xf0f0f0f0f0f0) of everything before them. Streaming, so that files of
/// hundreds of GiB are checked without mapping them.
pub struct TrailerChecksum {
    hasher: xxhash_rust::xxh64::Xxh64,
    /// The last up to 8 bytes seen: not hashed until more bytes follow.
    tail: [u8; 8],
    tail_len: usize,
}

impl Default for TrailerChecksum {
    fn default() -> Self {
        Self::new()
    }
}

impl TrailerChecksum {
    /// A check that has seen no byte yet.
    pub fn new() -> TrailerChecksum {
        TrailerChecksum { hasher: xxhash_rust::xxh64::Xxh64::new(CHECKSUM_SEED), tail: [0; 8], tail_len: 0 }
    }

    /// The next bytes of the file.
    pub fn update(&mut self, bytes: &[u8]) {
        if bytes.len() >= 8 {
            self.hasher.update(&self.tail[..self.tail_len]);
            let (body, tail) = bytes.split_at(bytes.len() - 8);
            self.hasher.update(body);
            self.tail.copy_from_slice(tail);
            self.tail_len = 8;
        } else {
            let spill = (self.tail_len + bytes.len()).saturating_sub(8);
            self.hasher.update(&self.tail[..spill]);
            self.tail.copy_within(spill..self.tail_len, 0);
            self.tail_len -= spill;
            self.tail[self.tail_len..self.tail_len + bytes.len()].copy_from_slice(bytes);
            self.tail_len += bytes.len();
        }
    }

    /// Whether the bytes fed so far end in the XXH64 of the bytes before.
    pub fn matches(&self) -> bool {
        self.tail_len == 8 && self.hasher.digest() == u64::from_le_bytes(self.tail)
    }
}
const FLAG_SINGULAR: u8 = 0x80;
const FLAG_DROPPED: u8 = 0x40;
const FLAG_LOSS_ONLY: u8 = 0x20;
const FLAG_RELAXED: u8 = 0x10;
/// The largest value a rank table may map to. Values are distances (moves
/// or plies) or clocks; the longest known 7-piece mate is 549 moves, so
/// anything above this is damage, and refusing it keeps the doubling into
/// plies (`2 * moves + 1` in `u16`) from overflowing.
const MAX_RANK_VALUE: u16 = 4095;

/// Reads little-endian fields with bounds checks.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> FileResult<&'a [u8]> {
        let end =
            self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or("header runs past the end of the file")?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> FileResult<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> FileResult<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self) -> FileResult<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> FileResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn align(&mut self, to: usize) {
        self.at = self.at.div_ceil(to) * to;
    }
}

/// `width` bits at bit `pos` of `bytes`, LSB first; bits past the end read 0.
fn read_bits(bytes: &[u8], pos: u64, width: u8) -> u64 {
    if width == 0 {
        return 0;
    }
    let mut v = 0u64;
    let first = (pos / 8) as usize;
    let shift = (pos % 8) as u32;
    for i in 0..9usize {
        let b = bytes.get(first + i).copied().unwrap_or(0) as u64;
        if i == 0 {
            v |= b >> shift;
        } else {
            let at = 8 * i as u32 - shift;
            if at < 64 {
                v |= b << at;
            }
        }
    }
    if width >= 64 { v } else { v & ((1u64 << width) - 1) }
}

/// A monotone sequence stored as one full sample per 2^log2 values plus
/// fixed-width deltas (the cumulative block offsets).
#[derive(Debug, Clone)]
struct MonoVec {
    samples: Range<usize>,
    deltas: Range<usize>,
    log2: u8,
    sample_width: u8,
    delta_width: u8,
}

impl MonoVec {
    fn get(&self, file: &[u8], i: u64) -> u64 {
        let s = read_bits(&file[self.samples.clone()], (i >> self.log2) * self.sample_width as u64, self.sample_width);
        let d = read_bits(&file[self.deltas.clone()], i * self.delta_width as u64, self.delta_width);
        s + d
    }
}

/// One side to move's part of a file.
#[derive(Debug)]
pub(crate) enum FrameData {
    /// One stored value for every position.
    Singular(u8),
    /// Left out by chesstb's `shrink`: rebuilt by a one-ply search.
    Dropped,
    Stored(Box<Stored>),
}

#[derive(Debug)]
pub(crate) struct Frame {
    pub data: FrameData,
    /// Only losses are priced; wins are rebuilt by a one-ply search.
    pub loss_only: bool,
    /// WDL: the stored class is a lower bound, raised by captures and
    /// promotions.
    pub relaxed: bool,
}

#[derive(Debug)]
pub(crate) struct Stored {
    pub layout: Layout,
    entry_bytes: usize,
    /// Bytes per block (WDL, DTZ, DTM) or positions per block (packs).
    block_unit: u64,
    /// The last block's size in the same unit (0: a full block).
    tail: u64,
    block_count: u64,
    data: Range<usize>,
    ranks: Vec<u16>,
    dict: Range<usize>,
    offsets: Option<MonoVec>,
    usizes: Option<(Range<usize>, u8)>,
}

/// An opened, memory-mapped table file.
pub(crate) struct TableFile {
    pub id: u32,
    pub kind: Kind,
    pub name: String,
    map: GuardedMap,
    pub index: IndexConfig,
    /// By side to move in the table's colours (0 = the side named first).
    pub frames: [Frame; 2],
    /// Set when the open-file map lets the file go: a thread's memo of
    /// recent files then stops using it (see `Chesstb::file`).
    pub(super) closed: std::sync::atomic::AtomicBool,
}

/// chesstb's 30-bit material key: base-9 digits, white's below black's, the
/// smaller of the two orientations. A pair table's key is that of its free
/// pieces: the pair is not in it (chesstb tells `KQpKp` from `KQK` by name).
fn material_key(m: &TableMaterial) -> u32 {
    const WHITE: [u32; 5] = [6561, 729, 81, 9, 1];
    const BLACK: [u32; 5] = [387_420_489, 43_046_721, 4_782_969, 531_441, 59_049];
    let key = |a: &[u8; 5], b: &[u8; 5]| -> u32 {
        (0..5).map(|i| a[i] as u32 * WHITE[i]).sum::<u32>().wrapping_add((0..5).map(|i| b[i] as u32 * BLACK[i]).sum())
    };
    key(&m.counts[0], &m.counts[1]).min(key(&m.counts[1], &m.counts[0]))
}

impl TableFile {
    /// Opens and maps `path`; `lost` is set if the mapping loses pages.
    pub fn open(
        id: u32,
        path: &Path,
        kind: Kind,
        material: TableMaterial,
        lost: Arc<AtomicBool>,
    ) -> FileResult<TableFile> {
        let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
        // SAFETY: table files are read-only inputs, replaced by rename, never
        // rewritten in place; pages lost while mapped (truncated in place, a
        // read error) are contained by `mapguard` and flagged in `lost`.
        let map = unsafe { GuardedMap::map_flagged(&file, lost) }.map_err(|e| format!("cannot map: {e}"))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let index = IndexConfig::new(&material).ok_or("too many pawn slices for an opposing-pair table")?;
        let frames = parse(&map, kind, &material, &index)?;
        if map.faulted() {
            return Err(lost_pages());
        }
        Ok(TableFile { id, kind, name, map, index, frames, closed: Default::default() })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Bytes per stored rank of a frame (1 for singular or dropped frames).
    pub(crate) fn entry_bytes(&self, side: usize) -> usize {
        match &self.frames[side].data {
            FrameData::Stored(s) => s.entry_bytes,
            _ => 1,
        }
    }

    /// Whether the trailing XXH64 matches (chesstb seeds it with 0xf0f0f0f0f0f0).
    pub(crate) fn checksum_ok(&self) -> bool {
        let mut check = TrailerChecksum::new();
        check.update(self.bytes());
        check.matches() && !self.map.faulted()
    }

    /// The raw stored code (WDL) or rank value (others) of a non-layered
    /// frame at `idx`. `None`: the position is in a skipped (all-draw or
    /// illegal) block.
    pub(crate) fn read_plain(&self, cache: &BlockCache, side: usize, idx: u64) -> FileResult<Option<u16>> {
        let s = match &self.frames[side].data {
            FrameData::Singular(v) => return Ok(Some(*v as u16)),
            FrameData::Dropped => return Err("read from a dropped frame".into()),
            FrameData::Stored(s) => s,
        };
        let (block, within) = if self.kind == Kind::Wdl {
            let byte = idx / 2;
            (byte / s.block_unit, (byte % s.block_unit) as usize)
        } else {
            let per_block = s.block_unit / s.entry_bytes as u64;
            (idx / per_block, (idx % per_block) as usize * s.entry_bytes)
        };
        let Some(data) = self.block(cache, side, s, block)? else { return Ok(None) };
        let Block::Bytes(bytes) = &*data else { return Err("unexpected block type".into()) };
        if self.kind == Kind::Wdl {
            let b = *bytes.get(within).ok_or("position outside its block")?;
            return Ok(Some(((b >> ((idx % 2) * 4)) & 0xf) as u16));
        }
        let rank = if s.entry_bytes == 1 {
            *bytes.get(within).ok_or("position outside its block")? as usize
        } else {
            let b = bytes.get(within..within + 2).ok_or("position outside its block")?;
            u16::from_le_bytes([b[0], b[1]]) as usize
        };
        s.ranks.get(rank).copied().map(Some).ok_or_else(|| format!("rank {rank} out of range"))
    }

    /// A changepoint record of a pack at `idx`; `None` for a skipped block
    /// or a singular (all-draw) frame.
    pub(crate) fn read_record(&self, cache: &BlockCache, side: usize, idx: u64) -> FileResult<Option<Record>> {
        let s = match &self.frames[side].data {
            FrameData::Singular(_) => return Ok(None),
            FrameData::Dropped => return Err("read from a dropped frame".into()),
            FrameData::Stored(s) => s,
        };
        let block = idx / s.block_unit;
        let Some(data) = self.block(cache, side, s, block)? else { return Ok(None) };
        let Block::Layered(lb) = &*data else { return Err("unexpected block type".into()) };
        let record = lb.record((idx % s.block_unit) as usize, s.entry_bytes, self.kind.bitmap_bytes(), &s.ranks)?;
        within_layers(record, self.kind).map(Some)
    }

    /// The decoded `block`, cached; fails once the mapping lost pages: what
    /// was read from it (offsets, compressed bytes) may then be zeros.
    fn block(&self, cache: &BlockCache, side: usize, s: &Stored, block: u64) -> FileResult<Option<Arc<Block>>> {
        let result = self.block_unchecked(cache, side, s, block);
        if self.map.faulted() {
            return Err(lost_pages());
        }
        result
    }

    fn block_unchecked(
        &self,
        cache: &BlockCache,
        side: usize,
        s: &Stored,
        block: u64,
    ) -> FileResult<Option<Arc<Block>>> {
        if block >= s.block_count {
            return Err(format!("block {block} beyond the {} of the frame", s.block_count));
        }
        let offsets = s.offsets.as_ref().ok_or("no offsets")?;
        let bytes = self.bytes();
        let (start, end) = (offsets.get(bytes, block), offsets.get(bytes, block + 1));
        if start == end {
            return Ok(None);
        }
        if start > end || end > (s.data.end - s.data.start) as u64 {
            return Err(format!("block {block}: offsets {start}..{end} outside the data"));
        }
        let key = BlockKey { file: self.id, side: side as u8, block };
        if let Some(b) = cache.get(&key) {
            return Ok(Some(b));
        }
        let compressed = &bytes[s.data.start + start as usize..s.data.start + end as usize];
        let last = block + 1 == s.block_count && s.tail != 0;
        let decoded = match self.kind {
            Kind::Wdl => {
                let size = if last { s.tail } else { s.block_unit } as usize;
                Block::Bytes(
                    lz4_block(compressed, size, &bytes[s.dict.clone()]).map_err(|e| format!("block {block}: {e}"))?,
                )
            }
            Kind::Dtz | Kind::Dtm => {
                let size = if last { s.tail } else { s.block_unit } as usize;
                Block::Bytes(lzma_block(compressed, size).map_err(|e| format!("block {block}: {e}"))?)
            }
            Kind::Dtc | Kind::Dtm50 => {
                let positions = if last { s.tail } else { s.block_unit } as usize;
                let (range, width) = s.usizes.as_ref().ok_or("no block sizes")?;
                let usize = read_bits(&bytes[range.clone()], block * *width as u64, *width) as usize;
                let payload = lzma_block(compressed, usize).map_err(|e| format!("block {block}: {e}"))?;
                Block::Layered(
                    LayeredBlock::new(payload, positions, s.entry_bytes, self.kind.bitmap_bytes())
                        .map_err(|e| format!("block {block}: {e}"))?,
                )
            }
        };
        Ok(Some(cache.insert(key, decoded)))
    }
}

fn lz4_block(compressed: &[u8], size: usize, dict: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8; size];
    let n = lz4_flex::block::decompress_into_with_dict(compressed, &mut out, dict).map_err(|e| format!("LZ4: {e}"))?;
    if n != size {
        return Err(format!("LZ4: {n} bytes instead of {size}"));
    }
    Ok(out)
}

/// Raw LZMA1 without an end marker, its 5 property bytes stored after it.
fn lzma_block(compressed: &[u8], size: usize) -> Result<Vec<u8>, String> {
    if compressed.len() < 5 {
        return Err("LZMA block shorter than its properties".into());
    }
    use liblzma::stream::{Action, Filters, LzmaOptions, Status, Stream};
    let (stream, props) = compressed.split_at(compressed.len() - 5);
    // Properties: (pb · 5 + lp) · 9 + lc, then the dictionary size.
    let lclppb = props[0] as u32;
    if lclppb >= 9 * 5 * 5 {
        return Err(format!("LZMA: bad properties byte {lclppb}"));
    }
    let dict = u32::from_le_bytes(props[1..5].try_into().expect("4 bytes")).clamp(4096, 1 << 30);
    let mut options = LzmaOptions::new_preset(6).map_err(|e| format!("LZMA: {e}"))?;
    options
        .literal_context_bits(lclppb % 9)
        .literal_position_bits(lclppb / 9 % 5)
        .position_bits(lclppb / 45)
        .dict_size(dict);
    let mut filters = Filters::new();
    filters.lzma1(&options);
    let mut decoder = Stream::new_raw_decoder(&filters).map_err(|e| format!("LZMA: {e}"))?;
    // No end marker: decoding stops when the known size is out.
    let mut out = Vec::with_capacity(size);
    while out.len() < size {
        let (read, written) = (decoder.total_in(), out.len());
        let status =
            decoder.process_vec(&stream[read as usize..], &mut out, Action::Run).map_err(|e| format!("LZMA: {e}"))?;
        let stuck = decoder.total_in() == read && out.len() == written;
        if out.len() < size && (status == Status::StreamEnd || stuck) {
            return Err(format!("LZMA: {} bytes instead of {size}", out.len()));
        }
    }
    Ok(out)
}

fn get(frames: &mut [Frame], i: usize) -> &mut Stored {
    match &mut frames[i].data {
        FrameData::Stored(s) => s,
        _ => unreachable!("only stored frames are looked up"),
    }
}

/// `record` if its changepoints index layers of a `kind` pack (they come in
/// order, so the last is the largest); one beyond them is damage, and the
/// distances derived from changepoints assume they are in range.
fn within_layers(record: Record, kind: Kind) -> FileResult<Record> {
    match record.starts.last() {
        Some(&last) if usize::from(last) >= kind.layers() => {
            Err(format!("changepoint {last} beyond the pack's {} layers", kind.layers()))
        }
        _ => Ok(record),
    }
}

/// Why a file whose mapping lost pages is refused, and what to do.
pub(crate) fn lost_pages() -> String {
    format!("{}: replace it and rescan", mapguard::LOST_PAGES)
}

/// What is wrong with a file of `bytes` bytes by its size alone: every
/// chesstb file is 64-byte blocks and an 8-byte XXH64.
pub(super) fn size_problem(bytes: u64) -> Option<String> {
    (bytes % 64 != 8).then(|| format!("size {bytes} is not 64·n + 8 bytes (truncated or not a chesstb file)"))
}

fn parse(bytes: &[u8], kind: Kind, material: &TableMaterial, index: &IndexConfig) -> FileResult<[Frame; 2]> {
    if let Some(problem) = size_problem(bytes.len() as u64) {
        return Err(problem);
    }
    let mut r = Reader { bytes, at: 0 };
    let magic = r.u32()?;
    if magic != kind.magic() {
        return Err(format!("wrong magic {magic:#010x} for .{}", kind.extension()));
    }
    let key_and_count = r.u32()?;
    if key_and_count >> 2 != material_key(material) {
        return Err("material key does not match the file name".into());
    }
    let stored_sides = match key_and_count & 3 {
        1 if material.is_symmetric() => 1,
        2 => 2,
        n => return Err(format!("bad frame count {n}")),
    };
    let mut frames: Vec<Frame> = Vec::new();
    for _ in 0..stored_sides {
        let flag = r.u8()?;
        let data = if flag & FLAG_SINGULAR != 0 {
            FrameData::Singular(r.u8()?)
        } else if flag & FLAG_DROPPED != 0 {
            FrameData::Dropped
        } else {
            let perm = r.u32()?;
            let layout = index.layout(perm).ok_or_else(|| format!("bad index permutation {perm}"))?;
            let mut s = Stored {
                layout,
                entry_bytes: 1,
                block_unit: 0,
                tail: 0,
                block_count: 0,
                data: 0..0,
                ranks: Vec::new(),
                dict: 0..0,
                offsets: None,
                usizes: None,
            };
            let data_size;
            if kind == Kind::Wdl {
                s.tail = r.u16()? as u64;
                s.block_unit = r.u32()? as u64;
                s.block_count = r.u64()?;
                data_size = r.u64()?;
            } else {
                s.entry_bytes = r.u8()? as usize;
                if s.entry_bytes != 1 && s.entry_bytes != 2 {
                    return Err(format!("bad entry size {}", s.entry_bytes));
                }
                if kind.layered() {
                    s.block_unit = r.u32()? as u64;
                    s.block_count = r.u64()?;
                    s.tail = r.u32()? as u64;
                } else {
                    s.tail = r.u32()? as u64;
                    s.block_unit = r.u32()? as u64;
                    s.block_count = r.u64()?;
                }
                data_size = r.u64()?;
                let n = r.u16()? as usize;
                s.ranks = (0..n).map(|_| r.u16()).collect::<FileResult<_>>()?;
                if let Some(v) = s.ranks.iter().find(|&&v| v > MAX_RANK_VALUE) {
                    return Err(format!("rank table value {v} is beyond any distance a chess table holds"));
                }
            }
            if s.block_unit == 0
                || s.block_count == 0
                || s.block_count > 1 << 40
                || !s.block_unit.is_multiple_of(s.entry_bytes as u64)
            {
                return Err("bad block geometry".into());
            }
            // The frame's blocks must cover its index exactly.
            let units = if kind == Kind::Wdl {
                index.num_positions.div_ceil(2)
            } else if kind.layered() {
                index.num_positions
            } else {
                index.num_positions * s.entry_bytes as u64
            };
            let covered = (s.block_count - 1) * s.block_unit + if s.tail == 0 { s.block_unit } else { s.tail };
            if covered != units {
                return Err(format!("blocks cover {covered} units, the index {units}"));
            }
            s.data = 0..data_size as usize;
            FrameData::Stored(Box::new(s))
        };
        frames.push(Frame { data, loss_only: flag & FLAG_LOSS_ONLY != 0, relaxed: flag & FLAG_RELAXED != 0 });
    }
    let stored_ids: Vec<usize> =
        (0..frames.len()).filter(|&i| matches!(frames[i].data, FrameData::Stored(_))).collect();
    if kind == Kind::Wdl {
        for &i in &stored_ids {
            let n = r.u16()? as usize;
            let start = r.at;
            r.take(n)?;
            get(&mut frames, i).dict = start..start + n;
        }
    }
    for &i in &stored_ids {
        let log2 = r.u8()?;
        let sample_width = r.u8()?;
        let delta_width = r.u8()?;
        let usz_width = r.u8()?;
        if log2 > 32 || sample_width > 64 || delta_width > 64 || usz_width > 64 {
            return Err("bad offset section".into());
        }
        let s = get(&mut frames, i);
        let values = s.block_count + 1;
        let samples = values.div_ceil(1 << log2);
        let sample_bytes = (samples * sample_width as u64).div_ceil(8) as usize;
        let delta_bytes = (values * delta_width as u64).div_ceil(8) as usize;
        let start = r.at;
        r.take(sample_bytes + delta_bytes)?;
        s.offsets = Some(MonoVec {
            samples: start..start + sample_bytes,
            deltas: start + sample_bytes..start + sample_bytes + delta_bytes,
            log2,
            sample_width,
            delta_width,
        });
        if kind.layered() {
            let n = (s.block_count * usz_width as u64).div_ceil(8) as usize;
            let start = r.at;
            r.take(n)?;
            s.usizes = Some((start..start + n, usz_width));
        }
    }
    for &i in &stored_ids {
        r.align(64);
        let s = get(&mut frames, i);
        let size = s.data.end;
        let start = r.at;
        if start.checked_add(size).is_none_or(|e| e > bytes.len() - 8) {
            return Err("compressed data runs past the end of the file (truncated?)".into());
        }
        r.at += size;
        s.data = start..start + size;
    }
    let mut it = frames.into_iter();
    let white = it.next().ok_or("no frames")?;
    let black =
        it.next().unwrap_or(Frame { data: FrameData::Dropped, loss_only: white.loss_only, relaxed: white.relaxed });
    Ok([white, black])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_read_across_bytes() {
        let bytes = [0b1010_1100u8, 0xff, 0x01];
        assert_eq!(read_bits(&bytes, 2, 4), 0b1011);
        assert_eq!(read_bits(&bytes, 6, 10), 0b11_1111_1110);
        assert_eq!(read_bits(&bytes, 16, 8), 1);
        assert_eq!(read_bits(&bytes, 20, 8), 0);
    }

    /// One position whose record is a SINGLE turning DRAW at `changepoint`.
    fn single_record(changepoint: u8) -> Record {
        let mut payload = Vec::new();
        // Positions, SINGLE, DOUBLE and MULTI records, SINGLE and DOUBLE bytes.
        for v in [1u32, 1, 0, 0, 2, 0] {
            payload.extend(v.to_le_bytes());
        }
        payload.push(0b01); // state: SINGLE
        payload.extend([0x80 | changepoint, 0]); // DRAW from `changepoint` on; rank 0
        payload.resize(32, 0); // the (empty) MULTI directory, 4-byte aligned
        let block = LayeredBlock::new(payload, 1, 1, Kind::Dtm50.bitmap_bytes()).unwrap();
        block.record(0, 1, Kind::Dtm50.bitmap_bytes(), &[7]).unwrap()
    }

    #[test]
    fn changepoints_beyond_the_layers_are_damage() {
        let last = |k: Kind| u8::try_from(k.layers() - 1).unwrap();
        let r = within_layers(single_record(last(Kind::Dtm50)), Kind::Dtm50).unwrap();
        assert_eq!((r.draw_flip(), r.at(0), r.at(100)), (100, Some(7), None));
        assert!(within_layers(single_record(last(Kind::Dtm50) + 1), Kind::Dtm50).unwrap_err().contains("beyond"));
        assert!(within_layers(single_record(last(Kind::Dtc)), Kind::Dtc).is_ok());
        assert!(within_layers(single_record(last(Kind::Dtc) + 1), Kind::Dtc).is_err());
    }

    #[test]
    fn garbage_blocks_fail_cleanly() {
        let mut seed = 0x1234_5678u32;
        for len in [0usize, 3, 5, 6, 17, 200, 4096] {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    seed as u8
                })
                .collect();
            let _ = lzma_block(&data, 1000);
            let _ = lz4_block(&data, 1000, &[]);
            if let Ok(p) = lzma_block(&data, 64) {
                let _ = LayeredBlock::new(p, 100, 1, 16);
            }
            let _ = LayeredBlock::new(data.clone(), 1000, 1, 16);
            let _ = LayeredBlock::new(data, 7, 2, 4);
        }
    }

    /// Fed in pieces of any size, the trailer check agrees with one XXH64
    /// over the body; a changed byte anywhere, or a file under 8 bytes, fails.
    #[test]
    fn trailer_checksum_in_pieces() {
        let body: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut file = body.clone();
        file.extend(xxhash_rust::xxh64::xxh64(&body, CHECKSUM_SEED).to_le_bytes());
        for piece in [1, 3, 7, 8, 9, 64, 1000, 2000] {
            let mut check = TrailerChecksum::new();
            file.chunks(piece).for_each(|c| check.update(c));
            assert!(check.matches(), "pieces of {piece}");
        }
        for at in [0, 500, file.len() - 9, file.len() - 1] {
            let mut bad = file.clone();
            bad[at] ^= 1;
            let mut check = TrailerChecksum::new();
            bad.chunks(5).for_each(|c| check.update(c));
            assert!(!check.matches(), "byte {at} changed");
        }
        let mut short = TrailerChecksum::new();
        short.update(&[0; 7]);
        assert!(!short.matches());
    }
}
