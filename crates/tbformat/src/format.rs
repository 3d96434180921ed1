//! On-disk format of a built-in table (`<material>.tbsb`): values in
//! independently decodable zstd blocks behind a block index.
//!
//! ```text
//! 0   8  magic "TBSBTIN\0"
//! 8   4  format version (u32 LE) = VERSION
//! 12  4  header length = 64
//! 16 16  material name, e.g. "KQvKR", zero-padded
//! 32  8  index size N (u64): positions per metric, illegal ones included
//! 40  4  metrics: bit 0 DTZ50'', bit 1 DTM, bit 2 DTM50 (optional)
//! 44  4  CRC-32 of the header (this field zero) and the block index
//! 48  8  legal positions (u64)
//! 56  4  positions per block B (u32)
//! 60  4  reserved, zero
//! 64     block index: ceil(N / B) entries of 16 bytes: compressed lengths
//!        of the block's DTZ, DTM and DTM50 frames (u32 LE each), CRC-32 of
//!        the block's bytes
//!        blocks, back to back: each its DTZ, DTM and DTM50 frames
//! ```
//! A frame is one zstd frame of a column of the block, transformed so that
//! the common cases are zeros (see [`Columns`]); a frame of length 0 stands
//! for a column of zeros. Values use the encoding of [`crate::value`], DTM50
//! segments that of [`crate::dtm50::Segment`]. The index is the one of
//! [`crate::index::Layout`].
//!
//! Only [`VERSION`] is read: a file whose version field holds another is
//! refused ([`FormatError::UnsupportedVersion`]), and the store regenerates
//! it. A change to the index or to any column's layout must bump it.

use crate::{
    dtm50::{Dtm50Data, Dtm50Slices, Dtm50View, LAST_MOVE_CLOCK, MORE, Segment},
    material::Material,
    value::{self, DRAW, UNKNOWN},
};

/// The first 8 bytes of every table file.
pub const MAGIC: &[u8; 8] = b"TBSBTIN\0";
/// The format version this crate writes and the only one it reads.
pub const VERSION: u32 = 7;
/// Bytes of the header, before the block index.
pub const HEADER_LEN: usize = 64;
/// Metrics bit: the file holds DTZ50''.
pub const METRIC_DTZ: u32 = 1;
/// Metrics bit: the file holds DTM.
pub const METRIC_DTM: u32 = 2;
/// Metrics bit: the file holds DTM50.
pub const METRIC_DTM50: u32 = 4;
/// Every table has DTZ50'' and DTM; DTM50 may be left out.
const BASE_METRICS: u32 = METRIC_DTZ | METRIC_DTM;
/// Extension of a table file's name (`<material>.tbsb`).
pub const EXTENSION: &str = "tbsb";

/// Positions per block: a cold probe decodes one block of all metrics (64
/// KiB of DTZ50'' and DTM decoded). Larger blocks compress a little better,
/// but each takes more cache and more time to decode.
pub const BLOCK_POSITIONS: usize = 8192;

/// zstd level of the frames ([`Compression::Fast`]): levels above it shrink
/// the files little more for several times the compression time, which
/// generation pays.
const ZSTD_LEVEL: i32 = 7;

/// How hard zstd works on a table's frames (`builtin.compression`). Either
/// is read by the same reader; a table's bytes depend on it, its values
/// do not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// zstd level 7 (DTZ50'' and DTM with a shortest match of 6 bytes).
    #[default]
    Fast,
    /// zstd's optimal parsing, its search sized to a block: a few percent
    /// smaller files for about a third more of the generation's CPU time.
    /// For tables made once and shipped, such as a container image's.
    Small,
}

impl Compression {
    /// The names [`Compression::parse`] takes, as configured.
    pub const NAMES: [&'static str; 2] = ["fast", "small"];

    /// The compression of this name, if one has it.
    pub fn parse(name: &str) -> Option<Compression> {
        match name {
            "fast" => Some(Compression::Fast),
            "small" => Some(Compression::Small),
            _ => None,
        }
    }

    /// The compressors of a block's columns.
    fn compressors(self) -> Compressors {
        use zstd::zstd_safe::CParameter;
        let mut values = self.compressor();
        if self == Compression::Fast {
            // DTZ50'' and DTM are long runs of equal bytes: a match shorter
            // than 6 costs about what its literals would. DTM50's change
            // bytes repeat in short strings, and keep the level's 4.
            values.set_parameter(CParameter::MinMatch(ZSTD_VALUES_MIN_MATCH)).expect("a valid zstd parameter");
        }
        let estimate = zstd::bulk::Compressor::new(ZSTD_ESTIMATE_LEVEL).expect("zstd context");
        Compressors { values, dtm50: self.compressor(), estimate }
    }

    fn compressor(self) -> zstd::bulk::Compressor<'static> {
        use zstd::zstd_safe::{CParameter, Strategy};
        let mut z = zstd::bulk::Compressor::new(ZSTD_LEVEL).expect("zstd context");
        if self == Compression::Small {
            // A frame's input is at most a few tens of KiB: windows and
            // tables larger than that would only cost time.
            for p in [
                CParameter::Strategy(Strategy::ZSTD_btopt),
                CParameter::WindowLog(15),
                CParameter::HashLog(15),
                CParameter::ChainLog(15),
                CParameter::SearchLog(4),
                CParameter::MinMatch(4),
                CParameter::TargetLength(64),
            ] {
                z.set_parameter(p).expect("a valid zstd parameter");
            }
        }
        z
    }
}

/// Shortest match zstd looks for in `fast`'s DTZ50'' and DTM frames (the
/// level's is 4): their frames come out smaller and faster, while DTM50's,
/// whose bytes repeat in short strings, would grow.
const ZSTD_VALUES_MIN_MATCH: u32 = 6;

/// zstd level at which a DTM column's two layouts are compressed to tell
/// which is smaller, before the smaller is compressed for the file.
const ZSTD_ESTIMATE_LEVEL: i32 = -1;

/// One thread's compressors: DTZ50'' and DTM frames, DTM50 frames, and
/// the quick one that picks DTM's layout.
struct Compressors {
    values: zstd::bulk::Compressor<'static>,
    dtm50: zstd::bulk::Compressor<'static>,
    estimate: zstd::bulk::Compressor<'static>,
}

const ENTRY_LEN: usize = 16;

/// Why bytes are not a readable table of the current format.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The file does not start with [`MAGIC`].
    #[error("not a tbserver built-in table (bad magic)")]
    BadMagic,
    /// The version field holds another version than [`VERSION`].
    #[error("format version {found}, expected {VERSION}")]
    UnsupportedVersion {
        /// The version the file says it is.
        found: u32,
    },
    /// The header says it is longer or shorter than [`HEADER_LEN`].
    #[error("header length {found}, expected {HEADER_LEN}")]
    HeaderLength {
        /// The header length the file gives.
        found: u32,
    },
    /// The file holds another material's table.
    #[error("holds {found}, expected {expected}")]
    WrongMaterial {
        /// The material named in the header.
        found: String,
        /// The material asked for.
        expected: String,
    },
    /// The metrics field is neither DTZ50'' and DTM nor these and DTM50.
    #[error("unexpected metrics {0:#x}")]
    UnexpectedMetrics(u32),
    /// The index size or the file's length is not the one the header and
    /// block index call for.
    #[error("size mismatch: {bytes} bytes for {positions} positions")]
    SizeMismatch {
        /// Bytes of the file.
        bytes: usize,
        /// Index positions the header gives.
        positions: u64,
    },
    /// The CRC-32 of the header and block index is not the stored one.
    #[error("header checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    HeaderChecksum {
        /// The CRC-32 in the header.
        stored: u32,
        /// The CRC-32 of the bytes.
        computed: u32,
    },
    /// A block cannot be decoded; the others may be.
    #[error("block {block}: {problem}")]
    DamagedBlock {
        /// The block's number in the block index.
        block: usize,
        /// What is wrong with it.
        problem: BlockProblem,
    },
}

/// What is wrong with a damaged block.
#[derive(Debug, thiserror::Error)]
pub enum BlockProblem {
    /// The block index puts the block past the end of the file.
    #[error("past the end of the file")]
    PastTheEnd,
    /// The CRC-32 of the block's bytes is not the one in the block index.
    #[error("checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    Checksum {
        /// The CRC-32 in the block index.
        stored: u32,
        /// The CRC-32 of the bytes.
        computed: u32,
    },
    /// A frame does not decompress to a column of its size.
    #[error("{column} frame: {problem}")]
    Frame {
        /// The frame's column.
        column: Column,
        /// What zstd or the size check found.
        problem: FrameProblem,
    },
    /// A column decompressed, but its content is not a column's.
    #[error("{column} column {problem}")]
    Column {
        /// The column.
        column: Column,
        /// What is wrong with its content.
        problem: ColumnProblem,
    },
}

/// One of a block's three columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// DTZ50''.
    Dtz,
    /// DTM.
    Dtm,
    /// DTM50.
    Dtm50,
}

impl std::fmt::Display for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Column::Dtz => "DTZ",
            Column::Dtm => "DTM",
            Column::Dtm50 => "DTM50",
        })
    }
}

/// Why a frame does not decompress to its column.
#[derive(Debug, thiserror::Error)]
pub enum FrameProblem {
    /// The bytes are not a zstd frame that records its content size.
    #[error("not a zstd frame")]
    NotZstd,
    /// The frame's content is not the size of its column.
    #[error("frame of {0} bytes, not the size of its column")]
    WrongSize(usize),
    /// zstd failed to decompress it.
    #[error("zstd: {0}")]
    Zstd(#[source] std::io::Error),
    /// It decompressed to fewer bytes than it records.
    #[error("frame shorter than it says")]
    Short,
}

/// What is wrong with a decompressed column's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ColumnProblem {
    /// It ends before its values do.
    #[error("too short")]
    TooShort,
    /// It goes on after its values.
    #[error("longer than its values")]
    TooLong,
    /// Its kind byte is none this format defines.
    #[error("of unknown kind {0}")]
    UnknownKind(u8),
    /// A DTM50 column of kind 0, which stands for zeros, holds other bytes.
    #[error("of zeros with bytes that are not zero")]
    NotZeros,
    /// A position has more DTM50 change points than there are clocks.
    #[error("with more change points than clocks")]
    TooManyChangePoints,
}

/// A file's header, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The material's name, e.g. `KQvKR`.
    pub material: String,
    /// Index positions per metric, illegal ones included.
    pub positions: u64,
    /// The metrics bits ([`METRIC_DTZ`], [`METRIC_DTM`], [`METRIC_DTM50`]).
    pub metrics: u32,
    /// CRC-32 of the header (this field zero) and the block index.
    pub crc32: u32,
    /// Legal positions of the table.
    pub legal_positions: u64,
    /// Positions per block.
    pub block_positions: u32,
}

/// Where a block's frames are in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEntry {
    /// Where the block's first frame starts in the file.
    pub offset: usize,
    /// Compressed bytes of the DTZ, DTM and DTM50 frames.
    pub frame_bytes: [u32; 3],
    /// CRC-32 of the block's bytes.
    pub crc32: u32,
}

impl BlockEntry {
    /// Bytes of the block's frames together.
    pub fn len(&self) -> usize {
        self.frame_bytes.iter().map(|&n| n as usize).sum()
    }

    /// Whether all of the block's frames are empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table's block layout, as read from its header and block index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocks {
    /// Index positions of the table.
    pub positions: usize,
    /// Positions per block (the last block may have fewer).
    pub block_positions: usize,
    /// Whether the blocks hold DTM50.
    pub has_dtm50: bool,
    /// Each block's place in the file, in index order.
    pub entries: Vec<BlockEntry>,
}

impl Blocks {
    /// The block holding `idx`, and `idx`'s place in it.
    #[inline]
    pub fn locate(&self, idx: u32) -> (usize, usize) {
        (idx as usize / self.block_positions, idx as usize % self.block_positions)
    }

    /// The indexes of block `b`.
    pub fn range(&self, b: usize) -> std::ops::Range<usize> {
        let lo = b * self.block_positions;
        lo..(lo + self.block_positions).min(self.positions)
    }

    /// Compressed bytes of each metric (DTZ, DTM, DTM50), summed over the blocks.
    pub fn metric_bytes(&self) -> [u64; 3] {
        let mut out = [0u64; 3];
        for e in &self.entries {
            for (o, &n) in out.iter_mut().zip(&e.frame_bytes) {
                *o += n as u64;
            }
        }
        out
    }
}

/// One block decoded: its values by position in the block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodedBlock {
    /// DTZ50'' of the block, by position in the block.
    pub dtz: Vec<u16>,
    /// DTM of the block, by position in the block.
    pub dtm: Vec<u16>,
    /// DTM50 of the block, by position in the block; `None` in a table
    /// without DTM50.
    pub dtm50: Option<Dtm50Data>,
    /// Per 64 positions of the block, how many before them have further
    /// DTM50 segments: a probe finds a position's among them by counting
    /// at most 63 words rather than by a binary search of the block's.
    pub more_rank: Vec<u16>,
    /// What of DTM50 was decoded: [`Dtm50Part::AtZero`] blocks answer at
    /// clock 0 only.
    pub part: Dtm50Part,
}

/// As much of `d` as `part` asks: for clock 0 only, each position's first
/// segment up to clock 0.
fn keep_part(d: Dtm50Data, part: Dtm50Part) -> Dtm50Data {
    match part {
        Dtm50Part::All => d,
        Dtm50Part::AtZero => {
            // `unpack` leaves out the MORE bit.
            let inline = d.inline.iter().map(|&w| Segment { max_clock: 0, ..Segment::unpack(w) }.pack()).collect();
            Dtm50Data { inline, overflow_start: vec![0], ..Dtm50Data::default() }
        }
    }
}

/// How much of a block's DTM50 a decode rebuilds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Dtm50Part {
    /// Every clock.
    #[default]
    All,
    /// The value at clock 0 only, which is all a generation's lookups into
    /// finished tables need (a capture or promotion resets the clock): it
    /// is read off the column's first planes, without its change points.
    AtZero,
}

/// A block's DTM50 with its [`DecodedBlock::more_rank`].
struct Ranked<'a> {
    d: &'a Dtm50Data,
    rank: &'a [u16],
}

impl Dtm50View for Ranked<'_> {
    fn inline(&self, idx: u32) -> u32 {
        self.d.inline[idx as usize]
    }
    fn overflow_len(&self) -> usize {
        self.d.overflow_index.len()
    }
    fn overflow_index(&self, k: usize) -> u32 {
        self.d.overflow_index[k]
    }
    fn overflow_start(&self, k: usize) -> u32 {
        self.d.overflow_start[k]
    }
    fn segment(&self, s: usize) -> u32 {
        self.d.segments[s]
    }
    #[inline]
    fn overflow_slot(&self, idx: u32) -> usize {
        let j = idx as usize;
        self.rank[j / 64] as usize + count_more(&self.d.inline[j & !63..j])
    }
}

/// How many of these inline words have further segments.
#[inline]
fn count_more(inline: &[u32]) -> usize {
    inline.iter().map(|&w| (w & MORE != 0) as usize).sum()
}

impl DecodedBlock {
    /// DTM50 at `clock` (0..=99) of position `j` of the block; `None` in a
    /// table without DTM50.
    #[inline]
    pub fn dtm50_at_clock(&self, j: u32, clock: u32) -> Option<u16> {
        debug_assert!(clock == 0 || self.part == Dtm50Part::All, "a block decoded for clock 0 only");
        self.dtm50.as_ref().map(|d| Ranked { d, rank: &self.more_rank }.at_clock(j, clock))
    }

    /// Appends every DTM50 segment of position `j` to `out`, in clock order.
    pub fn dtm50_segments_into(&self, j: u32, out: &mut Vec<Segment>) {
        debug_assert_eq!(self.part, Dtm50Part::All, "a block decoded for clock 0 only");
        if let Some(d) = &self.dtm50 {
            Ranked { d, rank: &self.more_rank }.segments_into(j, out);
        }
    }

    /// Memory it holds, for the cache's weight.
    pub fn bytes(&self) -> usize {
        let d = self
            .dtm50
            .as_ref()
            .map_or(0, |d| 4 * (d.inline.len() + d.overflow_index.len() + d.overflow_start.len() + d.segments.len()));
        2 * (self.dtz.len() + self.dtm.len() + self.more_rank.len()) + d + std::mem::size_of::<Self>()
    }
}

/// The transformed columns of one block, before compression. Values of
/// two bytes are laid out in byte planes (all low bytes, then all high
/// bytes) and expressed relative to what usually equals them, so that the
/// common cases are runs of zeros. The won and lost positions are those
/// whose DTZ50'' is a win or a loss; DTM and DTM50 are written for them
/// only, a draw's being implied: the zeros of the draws and the repeats of
/// illegal indexes between the values would cost zstd more than they save.
///
/// - DTZ50'' ([`Columns::dtz`]): per index, its value, an illegal index
///   (never probed) as a draw.
/// - DTM ([`Columns::dtm`]): a kind byte ([`DtmColumn`]), then per won or
///   lost position its plies less DTZ50'''s (zig-zag; equal wherever only
///   mate zeroes the clock) or its plies, whichever compresses smaller, in
///   one byte plane if all fit, else two.
/// - DTM50 ([`Columns::dtm50`]): a kind byte ([`Dtm50Column`]), then per won
///   or lost position its value at clock 0 less DTM (equal whenever the
///   50-move rule does not bind at clock 0) and the last clock of its last
///   segment less `100 - DTZ50''` (the clock budget a zeroing move within
///   DTZ50'' plies leaves; mostly exact), then the change points of the
///   positions whose DTM differs from DTZ50'' (elsewhere DTM50 is DTM up to
///   the last clock): ordered by that difference, since positions alike in
///   it change alike, most in one head byte per position, the rest in a
///   tail.
///
/// A block that breaks an assumption of these layouts writes the column
/// for every index instead: DTM where a drawn position's DTM is not a draw
/// or a won or lost position's is of another kind
/// ([`DtmColumn::EveryIndex`]), DTM50 where a drawn position's DTM50 is not
/// a draw or a position whose DTM is DTZ50'' has DTM50 change points
/// ([`Columns::dtm50_every_index`]).
struct Columns;

/// How a DTM column is written: its first byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum DtmColumn {
    /// Per won or lost position, its plies less DTZ50'''s, zig-zag.
    LessDtz = 0,
    /// Per won or lost position, its plies.
    Plies = 1,
    /// Per index, DTM less DTZ50'' (wrapping), in two planes; an illegal
    /// index's is 0.
    EveryIndex = 2,
}

/// How a DTM50 column is written: its first byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum Dtm50Column {
    /// A paired column all of whose bytes after the kind are zero: no
    /// change points, and each first value and last clock as expected.
    /// Written only as an empty frame.
    Zeros = 0,
    /// Every index ([`Columns::dtm50_every_index`]).
    EveryIndex = 1,
    /// Won and lost positions, their change points in order of their DTM
    /// less DTZ50'', a change point in one byte of which 4 bits are the
    /// clocks held ([`pair_byte`]).
    Paired4 = 2,
    /// The same with 3 bits of clocks held.
    Paired3 = 3,
}

impl Dtm50Column {
    /// Bits of clocks held in a pair byte of this kind of column.
    fn held_bits(kind: u8) -> Option<u32> {
        match kind {
            k if k == Self::Paired4 as u8 => Some(4),
            k if k == Self::Paired3 as u8 => Some(3),
            _ => None,
        }
    }
}

#[inline]
fn decisive(v: u16) -> bool {
    value::is_win(v) || value::is_loss(v)
}

#[inline]
fn zigzag(d: i32) -> u16 {
    (if d >= 0 { 2 * d } else { -2 * d - 1 }) as u16
}

#[inline]
fn unzigzag(u: u16) -> i32 {
    let u = u as i32;
    if u & 1 == 0 { u / 2 } else { -(u + 1) / 2 }
}

/// A change point's rise as written: in 8ths (a won or lost position's
/// plies rise by twos, and a value holds its plies above 2 bits of kind),
/// or this and the rise as it is.
const RISE_ESCAPE: u8 = 255;

/// Writes a change point's rise (see [`RISE_ESCAPE`]).
fn write_rise(rise: u16, out: &mut Vec<u8>) {
    if rise.is_multiple_of(8) && rise / 8 < RISE_ESCAPE as u16 {
        out.push((rise / 8) as u8);
    } else {
        out.push(RISE_ESCAPE);
        out.extend_from_slice(&rise.to_le_bytes());
    }
}

/// A rise [`write_rise`] wrote, its bytes taken by `next`.
fn read_rise(mut next: impl FnMut() -> Result<u8, ColumnProblem>) -> Result<u16, ColumnProblem> {
    let code = next()?;
    Ok(if code == RISE_ESCAPE { u16::from_le_bytes([next()?, next()?]) } else { code as u16 * 8 })
}

/// Pair bytes below it hold a change point whole; [`RISE_ESCAPE`] says it
/// is written after the tail.
const PAIRS: u16 = 240;

/// A change point in one byte, if it fits: the rise in moves less one above
/// `held_bits` bits of the clocks held less one. Most rises are a move or a
/// few, most values hold for a few clocks.
#[inline]
fn pair_byte(rise: u16, held: u8, held_bits: u32) -> Option<u8> {
    let moves = rise / 8;
    let fits = rise.is_multiple_of(8)
        && (1..=PAIRS >> held_bits).contains(&moves)
        && (1..=1 << held_bits).contains(&(held as u16));
    fits.then(|| ((moves - 1) << held_bits | (held as u16 - 1)) as u8)
}

#[inline]
fn unpair(b: u8, held_bits: u32) -> (u16, u8) {
    (((b >> held_bits) as u16 + 1) * 8, (b & ((1 << held_bits) - 1)) + 1)
}

/// Where a won or lost position whose DTM differs from DTZ50'' goes among a
/// paired DTM50 column's records: by win or loss, then by DTM less DTZ50''
/// (in plies, up to 63), then by DTM (plies mod 32). Positions alike in
/// these have alike change points, which then stand side by side.
#[inline]
fn record_key(z: u16, m: u16) -> u16 {
    let gap = (value::plies(m) as i32 - value::plies(z) as i32).clamp(0, 63) as u16;
    (z & 1) << 11 | gap << 5 | (value::plies(m) & 31)
}
const RECORD_KEYS: usize = 1 << 12;

/// Head byte of a record of a paired DTM50 column: no change point (0), one
/// in its pair byte (1..=240, the byte plus one), so many change points in
/// the tail (241..=254: 2..=15), or their number and them in the tail.
const HEAD_COUNTED: u8 = 255;
const HEAD_IN_TAIL: u8 = 241;

/// One position's DTM50 function: its first segment and its further ones.
struct Function<'a> {
    first: Segment,
    further: &'a [u32],
}

impl Function<'_> {
    /// The last clock of its last segment.
    fn last_clock(&self) -> u8 {
        self.further.last().map_or(self.first.max_clock, |&g| Segment::unpack(g).max_clock)
    }

    /// Its change points in clock order, each the rise of the value and how
    /// many clocks after the previous segment's the new one ends (what
    /// [`push_function`] takes back).
    fn changes(&self) -> impl Iterator<Item = (u16, u8)> + '_ {
        let mut prev = self.first;
        self.further.iter().map(move |&g| {
            let g = Segment::unpack(g);
            let change = (g.value.wrapping_sub(prev.value), g.max_clock.wrapping_sub(prev.max_clock));
            prev = g;
            change
        })
    }
}

/// The DTM50 function of each position of `d`, in order: the overflow is
/// sorted by index, and walked along.
fn functions(d: &Dtm50Data) -> impl Iterator<Item = Function<'_>> {
    let mut k = 0;
    d.inline.iter().enumerate().map(move |(j, &inline)| {
        let further: &[u32] = if inline & MORE != 0 {
            debug_assert_eq!(d.overflow_index[k], j as u32);
            let s = &d.segments[d.overflow_start[k] as usize..d.overflow_start[k + 1] as usize];
            k += 1;
            s
        } else {
            &[]
        };
        Function { first: Segment::unpack(inline & !MORE), further }
    })
}

/// The last clock DTM50 of a won or lost position is expected to hold
/// for, given its DTZ50'': a zeroing move is due within that many plies.
#[inline]
fn expected_last_clock(dtz: u16, first_value: u16) -> u8 {
    if decisive(first_value) { (100 - value::plies(dtz) as i32).clamp(0, LAST_MOVE_CLOCK as i32) as u8 } else { 0 }
}

/// What a paired DTM50 column is made of: per won or lost position (by
/// DTZ50''), its first value less DTM and its last clock less the expected
/// one; the functions of those whose DTM differs from DTZ50'', with their
/// place in the block.
struct Decisive<'a> {
    first: Vec<u16>,
    last_clock: Vec<u8>,
    records: Vec<(usize, Function<'a>)>,
}

impl<'a> Decisive<'a> {
    /// `None` if the block breaks an assumption: a drawn position whose
    /// DTM50 is not a draw, or one whose DTM50 changes though its DTM is
    /// DTZ50''.
    fn of(dtz: &[u16], z: &[u16], dtm: &[u16], d: &'a Dtm50Data) -> Option<Self> {
        let mut parts = Decisive { first: Vec::new(), last_clock: Vec::new(), records: Vec::new() };
        for (j, f) in functions(d).enumerate() {
            if !decisive(z[j]) {
                // A draw's DTM50 is a draw at every clock; an illegal
                // index's is never read.
                let draw = f.further.is_empty() && f.first == Segment { value: DRAW, max_clock: 0 };
                if dtz[j] != UNKNOWN && !draw {
                    return None;
                }
                continue;
            }
            parts.first.push(f.first.value.wrapping_sub(dtm[j]));
            parts.last_clock.push(f.last_clock().wrapping_sub(expected_last_clock(z[j], f.first.value)));
            if dtm[j] == z[j] {
                // DTM is DTZ50'': the mate is the first zeroing move, and
                // it fits the clock wherever the win does.
                if !f.further.is_empty() {
                    return None;
                }
                continue;
            }
            parts.records.push((j, f));
        }
        Some(parts)
    }
}

impl Columns {
    fn planes16(values: impl ExactSizeIterator<Item = u16> + Clone, out: &mut Vec<u8>) {
        out.extend(values.clone().map(|v| v as u8));
        out.extend(values.map(|v| (v >> 8) as u8));
    }

    fn unplanes16(bytes: &[u8], n: usize) -> Result<impl Iterator<Item = u16> + '_, ColumnProblem> {
        if bytes.len() < 2 * n {
            return Err(ColumnProblem::TooShort);
        }
        Ok((0..n).map(move |i| bytes[i] as u16 | (bytes[n + i] as u16) << 8))
    }

    /// Values in one byte plane if all are below 256, else in two.
    fn narrow_planes(values: &[u16], out: &mut Vec<u8>) {
        out.extend(values.iter().map(|&v| v as u8));
        if values.iter().any(|&v| v > 0xff) {
            out.extend(values.iter().map(|&v| (v >> 8) as u8));
        }
    }

    /// The DTZ50'' column of a block, before its planes: an illegal index
    /// is a draw.
    fn dtz(dtz: &[u16]) -> Vec<u16> {
        dtz.iter().map(|&v| if v == UNKNOWN { DRAW } else { v }).collect()
    }

    /// The DTM frame of a block whose DTZ50'' (`dtz`, illegal indexes
    /// unknown; `z` as written) and DTM are given.
    fn dtm(dtz: &[u16], z: &[u16], dtm: &[u16], ctx: &mut Compressors, scratch: &mut Vec<u8>) -> Vec<u8> {
        // A won or lost position's DTM is of its DTZ50'''s kind, and a
        // draw's is a draw.
        let implied = (0..z.len())
            .all(|j| if decisive(z[j]) { dtm[j] & 3 == z[j] & 3 } else { dtz[j] == UNKNOWN || dtm[j] == DRAW });
        let mut raw = Vec::with_capacity(2 * z.len() + 1);
        if !implied {
            raw.push(DtmColumn::EveryIndex as u8);
            Self::planes16(
                (0..z.len()).map(|j| if dtz[j] == UNKNOWN { 0 } else { dtm[j].wrapping_sub(z[j]) }),
                &mut raw,
            );
            return compress(&raw, &mut ctx.values, scratch);
        }
        let won_lost = || z.iter().zip(dtm).filter(|(vz, _)| decisive(**vz));
        let less: Vec<u16> =
            won_lost().map(|(&vz, &vm)| zigzag(value::plies(vm) as i32 - value::plies(vz) as i32)).collect();
        raw.push(DtmColumn::LessDtz as u8);
        Self::narrow_planes(&less, &mut raw);
        if raw.iter().all(|&b| b == 0) {
            return Vec::new();
        }
        let plies: Vec<u16> = won_lost().map(|(_, &vm)| value::plies(vm)).collect();
        let mut other = Vec::with_capacity(raw.len());
        other.push(DtmColumn::Plies as u8);
        Self::narrow_planes(&plies, &mut other);
        // Which layout is smaller, told by a quick pass over both: it
        // nearly always picks the smaller, in a fraction of the time of
        // compressing both for the file.
        if compress(&other, &mut ctx.estimate, scratch).len() < compress(&raw, &mut ctx.estimate, scratch).len() {
            raw = other;
        }
        compress(&raw, &mut ctx.values, scratch)
    }

    /// Zero bytes an empty DTM frame stands for: the kind and a byte per
    /// won or lost position.
    fn dtm_zeros(won_lost: usize) -> usize {
        1 + won_lost
    }

    /// DTM from its column, given DTZ50'' and the positions it says are
    /// won or lost ([`decisive_indexes`]).
    fn undtm(bytes: &[u8], z: &[u16], decisive: &[u32]) -> Result<Vec<u16>, ColumnProblem> {
        let won_lost = decisive.len();
        let (&kind, rest) = bytes.split_first().ok_or(ColumnProblem::TooShort)?;
        if kind == DtmColumn::EveryIndex as u8 {
            return Ok(Self::unplanes16(rest, z.len())?.zip(z).map(|(d, &vz)| d.wrapping_add(vz)).collect());
        }
        let less = match kind {
            k if k == DtmColumn::LessDtz as u8 => true,
            k if k == DtmColumn::Plies as u8 => false,
            k => return Err(ColumnProblem::UnknownKind(k)),
        };
        let high = match rest.len() {
            n if n == won_lost => None,
            n if n == 2 * won_lost => Some(&rest[won_lost..]),
            n if n < won_lost => return Err(ColumnProblem::TooShort),
            _ => return Err(ColumnProblem::TooLong),
        };
        let mut out = vec![DRAW; z.len()];
        for (k, &j) in decisive.iter().enumerate() {
            let vz = z[j as usize];
            let u = rest[k] as u16 | high.map_or(0, |h| (h[k] as u16) << 8);
            let plies = if less { value::plies(vz) as i32 + unzigzag(u) } else { u as i32 };
            out[j as usize] = (plies.clamp(0, value::MAX_PLIES as i32) as u16) << 2 | (vz & 3);
        }
        Ok(out)
    }

    /// The DTM50 column of a block that breaks an assumption of the paired
    /// column, after its kind byte, per index: its value at clock 0 less
    /// DTM, the last clock of its last segment less the expected one, how
    /// many times the value changes over the clocks; then, for each change
    /// point, the value's increase and the number of clocks the previous
    /// value held for. Illegal indexes repeat the previous position's first
    /// value and last clock, with no change points: they cost next to
    /// nothing, and are never read.
    fn dtm50_every_index(dtz: &[u16], dtm: &[u16], d: &Dtm50Data, out: &mut Vec<u8>) {
        out.clear();
        out.push(Dtm50Column::EveryIndex as u8);
        let n = dtz.len();
        let (mut first, mut last_clock, mut changes) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut rise, mut held) = (Vec::new(), Vec::new());
        let (mut prev_first, mut prev_last) = (0u16, 0u8);
        for (j, f) in functions(d).enumerate() {
            if dtz[j] == UNKNOWN {
                first.push(prev_first);
                last_clock.push(prev_last);
                changes.push(0);
                continue;
            }
            prev_first = f.first.value.wrapping_sub(dtm[j]);
            prev_last = f.last_clock().wrapping_sub(expected_last_clock(dtz[j], f.first.value));
            first.push(prev_first);
            last_clock.push(prev_last);
            changes.push(f.further.len() as u8);
            for (r, h) in f.changes() {
                rise.push(r);
                held.push(h);
            }
        }
        Self::planes16(first.iter().copied(), out);
        out.extend_from_slice(&last_clock);
        out.extend_from_slice(&changes);
        Self::planes16(rise.iter().copied(), out);
        out.extend_from_slice(&held);
    }

    /// DTM50 from a [`Columns::dtm50_every_index`] column after its kind
    /// byte.
    fn undtm50_every_index(bytes: &[u8], dtz: &[u16], dtm: &[u16]) -> Result<Dtm50Data, ColumnProblem> {
        let n = dtm.len();
        if bytes.len() < 4 * n {
            return Err(ColumnProblem::TooShort);
        }
        let first = Self::unplanes16(&bytes[..2 * n], n)?;
        let (last_clock, changes) = (&bytes[2 * n..3 * n], &bytes[3 * n..4 * n]);
        let extra: usize = changes.iter().map(|&c| c as usize).sum();
        let rest = &bytes[4 * n..];
        match rest.len().cmp(&(3 * extra)) {
            std::cmp::Ordering::Less => return Err(ColumnProblem::TooShort),
            std::cmp::Ordering::Greater => return Err(ColumnProblem::TooLong),
            std::cmp::Ordering::Equal => {}
        }
        let mut rise = Self::unplanes16(&rest[..2 * extra], extra)?;
        let held = &rest[2 * extra..];
        let mut d = Dtm50Data { inline: vec![0; n], ..Dtm50Data::default() };
        let mut s = 0;
        let mut change = [(0u16, 0u8); 100];
        for (j, f) in first.enumerate() {
            let value = f.wrapping_add(dtm[j]);
            let count = changes[j] as usize;
            if count > change.len() {
                return Err(ColumnProblem::TooManyChangePoints);
            }
            for (c, &h) in change[..count].iter_mut().zip(&held[s..s + count]) {
                *c = (rise.next().expect("counted"), h);
            }
            s += count;
            push_function(
                &mut d,
                j,
                value,
                last_clock[j].wrapping_add(expected_last_clock(dtz[j], value)),
                &change[..count],
            );
        }
        d.overflow_start.push(d.segments.len() as u32);
        Ok(d)
    }

    /// Zero bytes an empty DTM50 frame stands for: the kind, each won or
    /// lost position's first value and last clock, and the head bytes of
    /// those whose DTM differs from DTZ50''.
    fn dtm50_zeros(z: &[u16], dtm: &[u16], won_lost: usize) -> usize {
        let with_points = z.iter().zip(dtm).filter(|&(&vz, &vm)| decisive(vz) && vm != vz).count();
        1 + 3 * won_lost + with_points
    }

    /// The kind of a DTM50 column and what follows it, checked: a
    /// [`Dtm50Column::Zeros`] column reads as a paired one (with no change
    /// points, the width of pair bytes does not matter).
    fn dtm50_kind(bytes: &[u8]) -> Result<(u8, &[u8]), ColumnProblem> {
        let (&kind, rest) = bytes.split_first().ok_or(ColumnProblem::TooShort)?;
        match kind {
            k if k == Dtm50Column::Zeros as u8 => {
                if rest.iter().any(|&b| b != 0) {
                    return Err(ColumnProblem::NotZeros);
                }
                Ok((Dtm50Column::Paired4 as u8, rest))
            }
            k if k == Dtm50Column::EveryIndex as u8 || Dtm50Column::held_bits(k).is_some() => Ok((k, rest)),
            k => Err(ColumnProblem::UnknownKind(k)),
        }
    }

    /// [`Dtm50Part::AtZero`] of a DTM50 column: for a paired column its
    /// first planes only, each won or lost position's value at clock 0 as a
    /// segment up to clock 0 (or its whole function where it has one
    /// segment); the change points after the planes are not read.
    fn dtm50_at_zero(
        bytes: &[u8],
        z: &[u16],
        dtm: &[u16],
        decisive: &[u32],
        records: &mut Records,
    ) -> Result<Dtm50Data, ColumnProblem> {
        let (kind, rest) = Self::dtm50_kind(bytes)?;
        if kind == Dtm50Column::EveryIndex as u8 {
            return Ok(keep_part(Self::undtm50_every_index(rest, z, dtm)?, Dtm50Part::AtZero));
        }
        let planes = rest.get(..3 * decisive.len()).ok_or(ColumnProblem::TooShort)?;
        let firsts = Firsts::new(planes, z, dtm, decisive);
        let mut d = firsts.rebuild(&mut records.kept);
        for &Kept { j, value, .. } in &records.kept {
            d.inline[j as usize] = Segment { value, max_clock: 0 }.pack();
        }
        d.overflow_start.push(0);
        Ok(d)
    }

    /// DTM50 from its column, given DTZ50'' (as written), DTM and the
    /// positions DTZ50'' says are won or lost.
    fn undtm50(
        bytes: &[u8],
        z: &[u16],
        dtm: &[u16],
        decisive: &[u32],
        records: &mut Records,
    ) -> Result<Dtm50Data, ColumnProblem> {
        let (kind, rest) = Self::dtm50_kind(bytes)?;
        match Dtm50Column::held_bits(kind) {
            Some(held_bits) => Self::undtm50_paired(rest, held_bits, z, dtm, decisive, records),
            None => Self::undtm50_every_index(rest, z, dtm),
        }
    }

    /// The DTM50 column of a block whose DTZ50'' (`dtz`, illegal indexes
    /// unknown; `z` as written), DTM and DTM50 are given: paired, or
    /// [`Columns::dtm50_every_index`] if the block breaks an assumption.
    /// A paired column:
    /// ```text
    /// u8   kind: Paired4 or Paired3 (Zeros if all that follows is zero,
    ///      which makes an empty frame)
    /// W    first value less DTM, low bytes    (W: won and lost positions,
    /// W    first value less DTM, high bytes    by DTZ50'', index order)
    /// W    last clock less expected_last_clock
    /// R    head bytes of the records (R: won and lost positions whose DTM
    ///      differs from DTZ50''), in record_key order, ties by index
    /// tail the records whose head is 241..=255, by head byte, then as the
    ///      heads: [their number if head 255] and their pair bytes
    /// esc  per pair byte 255, in tail order: the rise (write_rise), then
    ///      the clocks held
    /// ```
    fn dtm50(dtz: &[u16], z: &[u16], dtm: &[u16], d: &Dtm50Data, out: &mut Vec<u8>) {
        Self::dtm50_held_bits(None, dtz, z, dtm, d, out)
    }

    /// [`Columns::dtm50`] with pair bytes of `held_bits` bits of clocks
    /// held if given, else of whichever width escapes fewer change points.
    fn dtm50_held_bits(held_bits: Option<u32>, dtz: &[u16], z: &[u16], dtm: &[u16], d: &Dtm50Data, out: &mut Vec<u8>) {
        let Some(Decisive { first, last_clock, records: functions }) = Decisive::of(dtz, z, dtm, d) else {
            return Self::dtm50_every_index(dtz, dtm, d, out);
        };
        let (mut records, mut changes) = (Vec::with_capacity(functions.len()), Vec::new());
        for (j, f) in functions {
            let start = changes.len();
            changes.extend(f.changes());
            records.push((record_key(z[j], dtm[j]), start..changes.len()));
        }
        // Stable: records alike in key stay in index order, as the reader
        // sorts them.
        records.sort_by_key(|r| r.0);
        let escapes = |bits| changes.iter().filter(|&&(rise, held)| pair_byte(rise, held, bits).is_none()).count();
        let held_bits = held_bits.unwrap_or_else(|| if escapes(3) < escapes(4) { 3 } else { 4 });
        let kind = if held_bits == 3 { Dtm50Column::Paired3 } else { Dtm50Column::Paired4 };
        let mut heads = Vec::with_capacity(records.len());
        // Per head byte 241..=255, its records' tail bytes and escapes.
        let mut groups: [(Vec<u8>, Vec<u8>); (HEAD_COUNTED - HEAD_IN_TAIL + 1) as usize] = Default::default();
        let mut pairs = Vec::new();
        let mut escaped = Vec::new();
        for (_, range) in &records {
            pairs.clear();
            escaped.clear();
            for &(rise, held) in &changes[range.clone()] {
                if let Some(b) = pair_byte(rise, held, held_bits) {
                    pairs.push(b);
                    continue;
                }
                pairs.push(RISE_ESCAPE);
                write_rise(rise, &mut escaped);
                escaped.push(held);
            }
            let head = match pairs.len() {
                0 => 0,
                1 if pairs[0] != RISE_ESCAPE => pairs[0] + 1,
                n if n < (HEAD_COUNTED - HEAD_IN_TAIL + 2) as usize && n > 1 => HEAD_IN_TAIL + (n - 2) as u8,
                _ => HEAD_COUNTED,
            };
            heads.push(head);
            if head >= HEAD_IN_TAIL {
                let (tail, esc) = &mut groups[(head - HEAD_IN_TAIL) as usize];
                if head == HEAD_COUNTED {
                    tail.push(pairs.len() as u8);
                }
                tail.extend_from_slice(&pairs);
                esc.extend_from_slice(&escaped);
            }
        }
        let start = out.len();
        out.push(kind as u8);
        Self::planes16(first.iter().copied(), out);
        out.extend_from_slice(&last_clock);
        out.extend_from_slice(&heads);
        groups.iter().for_each(|(tail, _)| out.extend_from_slice(tail));
        groups.iter().for_each(|(_, esc)| out.extend_from_slice(esc));
        if out[start + 1..].iter().all(|&b| b == 0) {
            // A column of zeros: an empty frame.
            out[start] = Dtm50Column::Zeros as u8;
        }
    }

    /// DTM50 from a paired column after its kind byte (see
    /// [`Columns::dtm50`]); `held_bits` by the kind.
    fn undtm50_paired(
        bytes: &[u8],
        held_bits: u32,
        z: &[u16],
        dtm: &[u16],
        decisive: &[u32],
        records: &mut Records,
    ) -> Result<Dtm50Data, ColumnProblem> {
        let Records { kept, tail_order, found, changes } = records;
        let won_lost = decisive.len();
        let planes = bytes.get(..3 * won_lost).ok_or(ColumnProblem::TooShort)?;
        let firsts = Firsts::new(planes, z, dtm, decisive);
        let mut d = firsts.rebuild_keyed(kept, record_key);
        // Where each key's records start in key order (a counting sort,
        // stable like the writer's); the records then take their places
        // in index order as they are rebuilt.
        let mut place = [0u16; RECORD_KEYS + 1];
        for r in kept.iter() {
            place[r.key as usize + 1] += 1;
        }
        for k in 1..place.len() {
            place[k] += place[k - 1];
        }
        let r = kept.len();
        if bytes.len() < 3 * won_lost + r {
            return Err(ColumnProblem::TooShort);
        }
        let rest = &bytes[3 * won_lost..];
        let (heads, rest) = rest.split_at(r);
        // The places of the records in the tail, in tail order: by head
        // byte, then key. Counted in the same pass: the records whose one
        // change point is in their head.
        let mut group_start = [0usize; (HEAD_COUNTED - HEAD_IN_TAIL + 2) as usize];
        let mut single = 0;
        for &h in heads {
            if h >= HEAD_IN_TAIL {
                group_start[(h - HEAD_IN_TAIL) as usize + 1] += 1;
            } else if h != 0 {
                single += 1;
            }
        }
        for g in 1..group_start.len() {
            group_start[g] += group_start[g - 1];
        }
        tail_order.clear();
        tail_order.resize(*group_start.last().expect("groups"), 0);
        for (p, &h) in heads.iter().enumerate().filter(|&(_, &h)| h >= HEAD_IN_TAIL) {
            let at = &mut group_start[(h - HEAD_IN_TAIL) as usize];
            tail_order[*at] = p as u16;
            *at += 1;
        }
        // The tail records' change points, in tail order; each place's
        // first one and number.
        found.clear();
        found.resize(if tail_order.is_empty() { 0 } else { r }, (0, 0));
        let (mut t, mut e) = (0usize, 0usize);
        let take = |stream: &[u8], at: &mut usize| -> Result<u8, ColumnProblem> {
            let b = *stream.get(*at).ok_or(ColumnProblem::TooShort)?;
            *at += 1;
            Ok(b)
        };
        // The tail's length: fixed-size records first, then the counted ones.
        let mut tail_len = 0;
        for &p in tail_order.iter() {
            let h = heads[p as usize];
            if h == HEAD_COUNTED {
                tail_len += 1 + *rest.get(tail_len).ok_or(ColumnProblem::TooShort)? as usize;
            } else {
                tail_len += (h - HEAD_IN_TAIL) as usize + 2;
            }
        }
        let (tail, esc) = rest.split_at(tail_len.min(rest.len()));
        // At most a change point per tail byte.
        changes.clear();
        changes.reserve(tail.len());
        for &p in tail_order.iter() {
            let h = heads[p as usize];
            let count = if h == HEAD_COUNTED { take(tail, &mut t)? as usize } else { (h - HEAD_IN_TAIL) as usize + 2 };
            if count > LAST_MOVE_CLOCK as usize + 1 {
                return Err(ColumnProblem::TooManyChangePoints);
            }
            found[p as usize] = (changes.len() as u32, count as u8);
            let pairs = tail.get(t..t + count).ok_or(ColumnProblem::TooShort)?;
            t += count;
            if !pairs.contains(&RISE_ESCAPE) {
                // Most records: one tight pass.
                changes.extend(pairs.iter().map(|&b| unpair(b, held_bits)));
                continue;
            }
            for &b in pairs {
                if b != RISE_ESCAPE {
                    changes.push(unpair(b, held_bits));
                    continue;
                }
                let rise = read_rise(|| take(esc, &mut e))?;
                changes.push((rise, take(esc, &mut e)?));
            }
        }
        if t != tail.len() || e != esc.len() {
            return Err(ColumnProblem::TooLong);
        }
        // How many further segments there are is known before they are
        // rebuilt: a block of a 5-piece table can have tens of thousands,
        // which growing vectors copied over and over.
        let positions = single + tail_order.len();
        d.overflow_index.reserve(positions);
        d.overflow_start.reserve(positions + 1);
        d.segments.reserve(single + changes.len());
        for &Kept { j, value, key, last } in kept.iter() {
            let j = j as usize;
            let p = &mut place[key as usize];
            let here = *p as usize;
            *p += 1;
            match heads[here] {
                // One segment, as `rebuild` wrote it.
                0 => {}
                head @ 1..HEAD_IN_TAIL => {
                    let (rise, held) = unpair(head - 1, held_bits);
                    d.inline[j] = Segment { value, max_clock: last.wrapping_sub(held) }.pack() | MORE;
                    d.overflow_index.push(j as u32);
                    d.overflow_start.push(d.segments.len() as u32);
                    d.segments.push(Segment { value: value.wrapping_add(rise), max_clock: last }.pack());
                }
                _ => {
                    let (at, count) = found[here];
                    push_function(&mut d, j, value, last, &changes[at as usize..at as usize + count as usize]);
                }
            }
        }
        d.overflow_start.push(d.segments.len() as u32);
        Ok(d)
    }
}

/// The places in a block of its won and lost positions by DTZ50'', in
/// index order: the positions whose DTM and DTM50 the columns hold
/// for. Gathered without a branch per position, as are the passes over
/// them, since draws and decisive positions alternate unpredictably.
fn decisive_indexes(z: &[u16], out: &mut Vec<u32>) {
    out.clear();
    out.resize(z.len(), 0);
    let mut k = 0;
    for (j, &v) in z.iter().enumerate() {
        out[k] = j as u32;
        k += decisive(v) as usize;
        // `k <= j + 1`: the next store stays within `out`.
    }
    out.truncate(k);
}

/// Buffers a thread keeps from one block's decoding to the next, so that
/// decoding allocates little more than the block it returns: fresh
/// memory costs page faults on every cold probe.
#[derive(Default)]
struct DecodeScratch {
    /// A column as zstd gives it back.
    raw: Vec<u8>,
    /// [`decisive_indexes`].
    decisive: Vec<u32>,
    records: Records,
}

/// A won or lost position whose DTM differs from DTZ50'': its place in
/// the block, its first value and last clock, and its record's key
/// ([`record_key`], where the reader asks for it).
#[derive(Clone, Copy, Default)]
struct Kept {
    j: u32,
    value: u16,
    key: u16,
    last: u8,
}

/// [`Firsts::rebuild`]'s list, and what a paired DTM50 column's reader
/// gathers from its tail.
#[derive(Default)]
struct Records {
    /// The won and lost positions whose DTM differs from DTZ50''.
    kept: Vec<Kept>,
    /// The records in the tail, by their place among the records.
    tail_order: Vec<u16>,
    /// Per record, where its change points start in `changes`, and how many.
    found: Vec<(u32, u8)>,
    changes: Vec<(u16, u8)>,
}

/// What a paired DTM50 column starts with, per won or lost
/// position (`planes`: the low bytes, then the high bytes of its first
/// value less DTM, then its last clock less the expected one), beside
/// the block's DTZ50'' (as written) and DTM.
struct Firsts<'a> {
    low: &'a [u8],
    high: &'a [u8],
    last_clock: &'a [u8],
    z: &'a [u16],
    dtm: &'a [u16],
    decisive: &'a [u32],
}

impl<'a> Firsts<'a> {
    /// `planes` is three bytes per entry of `decisive`.
    fn new(planes: &'a [u8], z: &'a [u16], dtm: &'a [u16], decisive: &'a [u32]) -> Self {
        let w = decisive.len();
        debug_assert_eq!(planes.len(), 3 * w);
        Firsts { low: &planes[..w], high: &planes[w..2 * w], last_clock: &planes[2 * w..3 * w], z, dtm, decisive }
    }

    /// The `k`th won or lost position: its place in the block, its first
    /// value and the last clock of its last segment.
    #[inline(always)]
    fn at(&self, k: usize) -> (usize, u16, u8) {
        let j = self.decisive[k] as usize;
        let (vz, vm) = (self.z[j], self.dtm[j]);
        let value = (self.low[k] as u16 | (self.high[k] as u16) << 8).wrapping_add(vm);
        (j, value, self.last_clock[k].wrapping_add(expected_last_clock(vz, value)))
    }

    /// The block's DTM50 with one segment per position: a draw for each
    /// position neither won nor lost, the first value up to the last clock
    /// for the others; in `records`, in index order, those of these whose
    /// DTM differs from their DTZ50'', whose whole functions the caller
    /// writes over them (and then closes `overflow_start`).
    fn rebuild(&self, records: &mut Vec<Kept>) -> Dtm50Data {
        self.rebuild_keyed(records, |_, _| 0)
    }

    /// [`Firsts::rebuild`], each record with its `key` (of DTZ50'' and DTM).
    #[inline(always)]
    fn rebuild_keyed(&self, records: &mut Vec<Kept>, key: impl Fn(u16, u16) -> u16) -> Dtm50Data {
        let mut inline = vec![DRAW as u32; self.z.len()];
        records.clear();
        records.resize(self.decisive.len(), Kept::default());
        let mut r = 0;
        for k in 0..self.decisive.len() {
            let (j, value, last) = self.at(k);
            inline[j] = Segment { value, max_clock: last }.pack();
            let (vz, vm) = (self.z[j], self.dtm[j]);
            records[r] = Kept { j: j as u32, value, key: key(vz, vm), last };
            r += (vm != vz) as usize;
        }
        records.truncate(r);
        // The further segments' vectors are empty: a caller that knows
        // how many it writes reserves room for them.
        Dtm50Data { inline, ..Dtm50Data::default() }
    }
}

/// Appends position `j`'s DTM50 to `d`: its first value, the last clock of
/// its last segment, and its change points in clock order, each the rise of
/// the value and how many clocks after the previous segment's the new one
/// ends; `d.inline[j]` is overwritten. The caller closes `d.overflow_start`.
fn push_function(d: &mut Dtm50Data, j: usize, value: u16, last: u8, change: &[(u16, u8)]) {
    // The first segment ends as many clocks before the last as all changes
    // hold together; the others follow from it.
    let mut clock = change.iter().fold(last, |c, &(_, held)| c.wrapping_sub(held));
    let mut packed = Segment { value, max_clock: clock }.pack();
    if !change.is_empty() {
        packed |= MORE;
        d.overflow_index.push(j as u32);
        d.overflow_start.push(d.segments.len() as u32);
        let mut v = value;
        d.segments.extend(change.iter().map(|&(rise, held)| {
            v = v.wrapping_add(rise);
            clock = clock.wrapping_add(held);
            Segment { value: v, max_clock: clock }.pack()
        }));
    }
    d.inline[j] = packed;
}

/// One block compressed: its three frames.
pub struct Encoded {
    frames: [Vec<u8>; 3],
}

impl Encoded {
    /// The block's entry in a file's block index.
    pub fn index_entry(&self) -> IndexEntry {
        let mut crc = crc32fast::Hasher::new();
        self.frames.iter().for_each(|f| crc.update(f));
        IndexEntry { frame_lens: self.frames.each_ref().map(|f| f.len() as u32), crc: crc.finalize() }
    }

    /// Its frames, in the order a file holds them.
    pub fn frames(&self) -> impl Iterator<Item = &[u8]> {
        self.frames.iter().map(Vec::as_slice)
    }
}

/// A block's entry in a file's block index: its frames' lengths and the
/// checksum of their bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    frame_lens: [u32; 3],
    crc: u32,
}

impl IndexEntry {
    /// Bytes of the block's frames together.
    pub fn frames_bytes(&self) -> u64 {
        self.frame_lens.iter().map(|&l| u64::from(l)).sum()
    }
}

/// A block's column compressed, in a vector of its own length: zstd's
/// `compress` returns one with room for the worst case (the raw column's
/// size), which, kept for every block until the table is written, would
/// hold about the raw table's size in memory.
fn compress(raw: &[u8], z: &mut zstd::bulk::Compressor<'_>, scratch: &mut Vec<u8>) -> Vec<u8> {
    if raw.iter().all(|&b| b == 0) {
        return Vec::new();
    }
    scratch.clear();
    scratch.reserve(zstd::zstd_safe::compress_bound(raw.len()));
    z.compress_to_buffer(raw, scratch).expect("zstd compresses any input in memory");
    scratch.as_slice().to_vec()
}

/// Block `range` of a table's values (DTZ50'', DTM and, if given, DTM50
/// by index), compressed as [`Compression`] says: its three frames.
pub fn encode_block<D: Dtm50Slices>(
    compression: Compression,
    dtz: &[u16],
    dtm: &[u16],
    dtm50: Option<&D>,
    range: std::ops::Range<usize>,
) -> Encoded {
    thread_local! {
        static COMPRESSORS: std::cell::RefCell<Option<(Compression, Compressors)>> = const { std::cell::RefCell::new(None) };
    }
    COMPRESSORS.with_borrow_mut(|slot| {
        if slot.as_ref().is_none_or(|(c, _)| *c != compression) {
            *slot = Some((compression, compression.compressors()));
        }
        let z = &mut slot.as_mut().expect("just made").1;
        let (dtz, dtm) = (&dtz[range.clone()], &dtm[range.clone()]);
        let z_column = Columns::dtz(dtz);
        let mut raw = Vec::with_capacity(4 * range.len());
        let mut scratch = Vec::new();
        Columns::planes16(z_column.iter().copied(), &mut raw);
        let dtz_frame = compress(&raw, &mut z.values, &mut scratch);
        let dtm_frame = Columns::dtm(dtz, &z_column, dtm, z, &mut scratch);
        let dtm50_frame = dtm50.map_or_else(Vec::new, |d| {
            raw.clear();
            Columns::dtm50(dtz, &z_column, dtm, &d.slice(range), &mut raw);
            compress(&raw, &mut z.dtm50, &mut scratch)
        });
        Encoded { frames: [dtz_frame, dtm_frame, dtm50_frame] }
    })
}

/// Decompresses `frame` into `out`, checking that its content is
/// `expected` bytes if that is known.
fn decompress(frame: &[u8], expected: Option<usize>, out: &mut Vec<u8>) -> Result<(), FrameProblem> {
    thread_local! {
        static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
    }
    out.clear();
    let size = zstd::zstd_safe::get_frame_content_size(frame).ok().flatten().ok_or(FrameProblem::NotZstd)? as usize;
    if expected.is_some_and(|e| e != size) || size > 1 << 28 {
        return Err(FrameProblem::WrongSize(size));
    }
    DECOMPRESSOR.with_borrow_mut(|d| {
        let d = d.get_or_insert_with(|| zstd::bulk::Decompressor::new().expect("zstd context"));
        out.reserve(size);
        let n = d.decompress_to_buffer(frame, out).map_err(FrameProblem::Zstd)?;
        if n != size {
            return Err(FrameProblem::Short);
        }
        Ok(())
    })
}

/// Decodes block `b` of a table held in `bytes`, checksum first.
pub fn decode_block(bytes: &[u8], blocks: &Blocks, b: usize) -> Result<DecodedBlock, FormatError> {
    decode_block_part(bytes, blocks, b, Dtm50Part::All)
}

/// [`decode_block`], DTM50 only as far as `part` asks.
pub fn decode_block_part(
    bytes: &[u8],
    blocks: &Blocks,
    b: usize,
    part: Dtm50Part,
) -> Result<DecodedBlock, FormatError> {
    decode(bytes, blocks, b, part).map_err(|problem| FormatError::DamagedBlock { block: b, problem })
}

fn decode(bytes: &[u8], blocks: &Blocks, b: usize, part: Dtm50Part) -> Result<DecodedBlock, BlockProblem> {
    let e = blocks.entries[b];
    let n = blocks.range(b).len();
    let data = bytes.get(e.offset..e.offset + e.len()).ok_or(BlockProblem::PastTheEnd)?;
    let crc = crc32fast::hash(data);
    if crc != e.crc32 {
        return Err(BlockProblem::Checksum { stored: e.crc32, computed: crc });
    }
    let [dtz_len, dtm_len, _] = e.frame_bytes.map(|n| n as usize);
    let frames = [&data[..dtz_len], &data[dtz_len..dtz_len + dtm_len], &data[dtz_len + dtm_len..]];
    thread_local! {
        static SCRATCH: std::cell::Cell<DecodeScratch> = std::cell::Cell::default();
    }
    // Taken, not borrowed: an error drops it, and the next decode starts
    // afresh.
    let DecodeScratch { mut raw, mut decisive, mut records } = SCRATCH.take();
    // Column `c`'s bytes into `raw`: `zeros` zeros if its frame is empty,
    // else the frame's content (of `size` bytes, where that is known).
    let column = |c: Column, zeros: usize, size: Option<usize>, raw: &mut Vec<u8>| -> Result<(), BlockProblem> {
        let frame = frames[c as usize];
        if frame.is_empty() {
            raw.clear();
            raw.resize(zeros, 0);
            Ok(())
        } else {
            decompress(frame, size, raw).map_err(|problem| BlockProblem::Frame { column: c, problem })
        }
    };
    let content = |column| move |problem| BlockProblem::Column { column, problem };
    column(Column::Dtz, 2 * n, Some(2 * n), &mut raw)?;
    let dtz: Vec<u16> = Columns::unplanes16(&raw, n).map_err(content(Column::Dtz))?.collect();
    decisive_indexes(&dtz, &mut decisive);
    let won_lost = decisive.len();
    column(Column::Dtm, Columns::dtm_zeros(won_lost), None, &mut raw)?;
    let dtm = Columns::undtm(&raw, &dtz, &decisive).map_err(content(Column::Dtm))?;
    let dtm50 = if blocks.has_dtm50 {
        column(Column::Dtm50, Columns::dtm50_zeros(&dtz, &dtm, won_lost), None, &mut raw)?;
        Some(
            match part {
                Dtm50Part::All => Columns::undtm50(&raw, &dtz, &dtm, &decisive, &mut records),
                Dtm50Part::AtZero => Columns::dtm50_at_zero(&raw, &dtz, &dtm, &decisive, &mut records),
            }
            .map_err(content(Column::Dtm50))?,
        )
    } else {
        None
    };
    let more_rank = dtm50.as_ref().map_or_else(Vec::new, |d| {
        let mut rank = Vec::with_capacity(n.div_ceil(64));
        let mut count = 0u16;
        for chunk in d.inline.chunks(64) {
            rank.push(count);
            count += count_more(chunk) as u16;
        }
        rank
    });
    SCRATCH.set(DecodeScratch { raw, decisive, records });
    Ok(DecodedBlock { dtz, dtm, dtm50, more_rank, part })
}

/// Bytes of the header and block index of a table of `positions` index
/// positions: the part of a file that does not depend on its values.
pub fn index_bytes(positions: usize) -> u64 {
    (HEADER_LEN + ENTRY_LEN * positions.div_ceil(BLOCK_POSITIONS)) as u64
}

/// A whole table in memory, as a file of it holds it
/// ([`Compression::Fast`]).
pub fn encode(
    material: &Material,
    dtz: &[u16],
    dtm: &[u16],
    dtm50: Option<&Dtm50Data>,
    legal_positions: u64,
) -> Vec<u8> {
    let encoded = encode_blocks(Compression::Fast, dtz, dtm, dtm50);
    assemble(material, dtz.len(), dtm50.is_some(), legal_positions, &encoded)
}

/// The blocks of values given from a block boundary on (a whole table, or
/// a part of one that starts and, unless it is the table's end, ends on a
/// block boundary), compressed in index order. DTM50 is by index less the
/// first; a block's bytes do not depend on where it is.
pub fn encode_blocks<D: Dtm50Slices>(
    compression: Compression,
    dtz: &[u16],
    dtm: &[u16],
    dtm50: Option<&D>,
) -> Vec<Encoded> {
    assert_eq!(dtz.len(), dtm.len());
    if let Some(d) = dtm50 {
        assert_eq!(dtz.len(), d.len());
    }
    let positions = dtz.len();
    (0..positions.div_ceil(BLOCK_POSITIONS))
        .map(|b| {
            encode_block(compression, dtz, dtm, dtm50, b * BLOCK_POSITIONS..((b + 1) * BLOCK_POSITIONS).min(positions))
        })
        .collect()
}

/// One block from its values (at most [`BLOCK_POSITIONS`] of them).
pub fn encode_one<D: Dtm50Slices>(compression: Compression, dtz: &[u16], dtm: &[u16], dtm50: Option<&D>) -> Encoded {
    assert!(dtz.len() <= BLOCK_POSITIONS);
    encode_block(compression, dtz, dtm, dtm50, 0..dtz.len())
}

/// Bytes of the file [`assemble`] makes of blocks with these index entries.
pub fn file_bytes(positions: usize, entries: &[IndexEntry]) -> u64 {
    index_bytes(positions) + entries.iter().map(IndexEntry::frames_bytes).sum::<u64>()
}

/// A whole table in memory from its blocks, in index order.
pub fn assemble(
    material: &Material,
    positions: usize,
    has_dtm50: bool,
    legal_positions: u64,
    encoded: &[Encoded],
) -> Vec<u8> {
    let entries: Vec<IndexEntry> = encoded.iter().map(Encoded::index_entry).collect();
    let mut out = header_and_index(material, positions, has_dtm50, legal_positions, &entries);
    out.reserve_exact(file_bytes(positions, &entries) as usize - out.len());
    for e in encoded {
        e.frames().for_each(|f| out.extend_from_slice(f));
    }
    out
}

/// The start of a table file, up to its first block: the header and the
/// index of blocks with `entries` (one per [`BLOCK_POSITIONS`] positions,
/// in index order). The blocks' frames follow it, in the same order.
pub fn header_and_index(
    material: &Material,
    positions: usize,
    has_dtm50: bool,
    legal_positions: u64,
    entries: &[IndexEntry],
) -> Vec<u8> {
    let count = positions.div_ceil(BLOCK_POSITIONS);
    assert_eq!(entries.len(), count, "one block per {BLOCK_POSITIONS} positions");
    let mut out = Vec::with_capacity(index_bytes(positions) as usize);
    let metrics = if has_dtm50 { BASE_METRICS | METRIC_DTM50 } else { BASE_METRICS };
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    let mut name = [0u8; 16];
    name[..material.name().len()].copy_from_slice(material.name().as_bytes());
    out.extend_from_slice(&name);
    out.extend_from_slice(&(positions as u64).to_le_bytes());
    out.extend_from_slice(&metrics.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&legal_positions.to_le_bytes());
    out.extend_from_slice(&(BLOCK_POSITIONS as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    debug_assert_eq!(out.len(), HEADER_LEN);
    for e in entries {
        for len in e.frame_lens {
            out.extend_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(&e.crc.to_le_bytes());
    }
    let crc = crc32fast::hash(&out);
    out[44..48].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The header of `material`'s file from its first [`HEADER_LEN`] bytes (or
/// more), checked for magic, version, length and material, not against the
/// rest of the file: enough to name the file's content by its checksum
/// without reading it.
pub fn read_header(bytes: &[u8], material: &Material) -> Result<Header, FormatError> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err(FormatError::BadMagic);
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let version = u32_at(8);
    if version != VERSION {
        return Err(FormatError::UnsupportedVersion { found: version });
    }
    if u32_at(12) as usize != HEADER_LEN {
        return Err(FormatError::HeaderLength { found: u32_at(12) });
    }
    let name = String::from_utf8_lossy(&bytes[16..32]).trim_end_matches('\0').to_string();
    if name != material.name() {
        return Err(FormatError::WrongMaterial { found: name, expected: material.name() });
    }
    Ok(Header {
        material: name,
        positions: u64_at(32),
        metrics: u32_at(40),
        crc32: u32_at(44),
        legal_positions: u64_at(48),
        block_positions: u32_at(56),
    })
}

/// Checks a file's header and block index (not its blocks) against what
/// `material` needs, and says where its blocks are.
pub fn validate_layout(bytes: &[u8], material: &Material, positions: usize) -> Result<(Header, Blocks), FormatError> {
    let header = read_header(bytes, material)?;
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    if header.metrics != BASE_METRICS && header.metrics != BASE_METRICS | METRIC_DTM50 {
        return Err(FormatError::UnexpectedMetrics(header.metrics));
    }
    let size_error = || FormatError::SizeMismatch { bytes: bytes.len(), positions: header.positions };
    if header.positions != positions as u64 || header.block_positions == 0 {
        return Err(size_error());
    }
    let block_positions = header.block_positions as usize;
    let count = positions.div_ceil(block_positions);
    let index_end = HEADER_LEN + ENTRY_LEN * count;
    if bytes.len() < index_end {
        return Err(size_error());
    }
    let mut crc = crc32fast::Hasher::new();
    crc.update(&bytes[..44]);
    crc.update(&[0; 4]);
    crc.update(&bytes[48..index_end]);
    let computed = crc.finalize();
    if computed != header.crc32 {
        return Err(FormatError::HeaderChecksum { stored: header.crc32, computed });
    }
    let mut offset = index_end;
    let mut entries = Vec::with_capacity(count);
    for b in 0..count {
        let at = HEADER_LEN + ENTRY_LEN * b;
        let e =
            BlockEntry { offset, frame_bytes: [u32_at(at), u32_at(at + 4), u32_at(at + 8)], crc32: u32_at(at + 12) };
        offset += e.len();
        entries.push(e);
    }
    if bytes.len() != offset {
        return Err(size_error());
    }
    let has_dtm50 = header.metrics & METRIC_DTM50 != 0;
    Ok((header, Blocks { positions, block_positions, has_dtm50, entries }))
}

/// The blocks of a file whose checksum or content is wrong, each named
/// with its indexes and what is wrong.
pub fn damaged_blocks(bytes: &[u8], blocks: &Blocks) -> Vec<String> {
    (0..blocks.entries.len())
        .filter_map(|b| match decode(bytes, blocks, b, Dtm50Part::All) {
            Ok(_) => None,
            Err(problem) => Some(format!("block {b} (indexes {:?}): {problem}", blocks.range(b))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtm50::Dtm50View;

    /// A decoded block finds each position's further DTM50 segments by its
    /// rank table, and answers every clock as the data it was written from
    /// (found by a binary search): two blocks of made-up values, two thirds
    /// of the positions with one to four further segments.
    #[test]
    fn decoded_dtm50_answers_every_clock_as_written() {
        let n = BLOCK_POSITIONS + 1000;
        let (mut dtz, mut dtm) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut d = Dtm50Data::default();
        for j in 0..n {
            let plies = 1 + (j % 50) as u16;
            dtz.push(value::win(plies));
            dtm.push(value::win(plies + 2 * (j % 3) as u16));
            let mut clock = (j % 40) as u8;
            let first = Segment { value: dtm[j], max_clock: clock };
            let further = if j % 3 == 0 { 0 } else { 1 + j % 4 };
            if further == 0 {
                d.inline.push(first.pack());
                continue;
            }
            d.inline.push(first.pack() | MORE);
            d.overflow_index.push(j as u32);
            d.overflow_start.push(d.segments.len() as u32);
            for i in 1..=further {
                clock = (clock + 5 + i as u8).min(LAST_MOVE_CLOCK);
                d.segments
                    .push(Segment { value: value::win(value::plies(dtm[j]) + 2 * i as u16), max_clock: clock }.pack());
            }
        }
        d.overflow_start.push(d.segments.len() as u32);
        let (checked, further_checked) = reads_back(&dtz, &dtm, &d);
        assert_eq!(checked, n * 100);
        assert!(further_checked > n, "{further_checked} further segments");
    }

    /// Encodes the values and reads every block back: DTZ50'', DTM and
    /// DTM50 at every clock of every legal index (DTZ50'' known) as given.
    /// Returns the (index, clock) pairs checked and the further DTM50
    /// segments among them.
    fn reads_back(dtz: &[u16], dtm: &[u16], d: &Dtm50Data) -> (usize, usize) {
        let n = dtz.len();
        let material = Material::parse("KQvK").unwrap();
        let legal = dtz.iter().filter(|&&v| v != UNKNOWN).count() as u64;
        let bytes = encode(&material, dtz, dtm, Some(d), legal);
        let (header, blocks) = validate_layout(&bytes, &material, n).unwrap();
        assert_eq!(header.legal_positions, legal);
        assert!(damaged_blocks(&bytes, &blocks).is_empty());
        let (mut checked, mut further_checked) = (0, 0);
        for b in 0..blocks.entries.len() {
            let block = decode_block(&bytes, &blocks, b).unwrap();
            // The same block decoded for clock 0 only (a generation's
            // lookups): the same DTZ50'', DTM and DTM50 at clock 0.
            let at_zero = decode_block_part(&bytes, &blocks, b, Dtm50Part::AtZero).unwrap();
            assert_eq!((&at_zero.dtz, &at_zero.dtm), (&block.dtz, &block.dtm));
            for (j, idx) in blocks.range(b).enumerate() {
                if dtz[idx] == UNKNOWN {
                    continue;
                }
                assert_eq!(
                    at_zero.dtm50_at_clock(j as u32, 0),
                    Some(d.at_clock(idx as u32, 0)),
                    "index {idx}, clock 0 only"
                );
                assert_eq!((block.dtz[j], block.dtm[j]), (dtz[idx], dtm[idx]), "index {idx}");
                let (mut got, mut want) = (Vec::new(), Vec::new());
                block.dtm50_segments_into(j as u32, &mut got);
                d.segments_into(idx as u32, &mut want);
                assert_eq!(got, want, "index {idx}");
                further_checked += want.len().saturating_sub(1);
                for clock in 0..=LAST_MOVE_CLOCK as u32 {
                    assert_eq!(
                        block.dtm50_at_clock(j as u32, clock),
                        Some(d.at_clock(idx as u32, clock)),
                        "index {idx}, clock {clock}"
                    );
                    checked += 1;
                }
            }
        }
        (checked, further_checked)
    }

    /// The kind byte of block `b`'s column `k` (1 DTM, 2 DTM50); `None` for
    /// an empty frame.
    fn column_kind(bytes: &[u8], blocks: &Blocks, b: usize, k: usize) -> Option<u8> {
        let e = blocks.entries[b];
        let start = e.offset + e.frame_bytes[..k].iter().map(|&l| l as usize).sum::<usize>();
        let frame = &bytes[start..start + e.frame_bytes[k] as usize];
        let mut raw = Vec::new();
        (!frame.is_empty()).then(|| {
            decompress(frame, None, &mut raw).unwrap();
            raw[0]
        })
    }

    /// Values the columns hold compactly and values that break their
    /// assumptions, read back exactly: illegal indexes
    /// and draws between won and lost positions, distances past 255 plies,
    /// rises that are not whole moves or past the one-byte code, a block
    /// with a position whose DTM is DTZ50'' but DTM50 changes (DTM50 of
    /// every index), a block with a drawn position whose DTM is a win (DTM
    /// and DTM50 of every index).
    #[test]
    fn awkward_values_read_back() {
        let (dtz, dtm, d) = awkward_values();
        let n = dtz.len();
        let (checked, further_checked) = reads_back(&dtz, &dtm, &d);
        assert_eq!(checked, 100 * dtz.iter().filter(|&&v| v != UNKNOWN).count());
        assert!(further_checked > n / 10, "{further_checked}");
        let material = Material::parse("KQvK").unwrap();
        let bytes = encode(&material, &dtz, &dtm, Some(&d), 0);
        let (_, blocks) = validate_layout(&bytes, &material, n).unwrap();
        let kinds = |b| (column_kind(&bytes, &blocks, b, 1), column_kind(&bytes, &blocks, b, 2));
        assert!(matches!(kinds(0), (Some(0 | 1), Some(2 | 3))), "{:?}", kinds(0));
        assert!(matches!(kinds(1), (Some(0 | 1), Some(1))), "{:?}", kinds(1));
        assert_eq!(kinds(2), (Some(DtmColumn::EveryIndex as u8), Some(Dtm50Column::EveryIndex as u8)));
        assert!(matches!(kinds(3), (Some(0 | 1), Some(2 | 3))), "{:?}", kinds(3));
    }

    /// A paired DTM50 column reads back the same with either width of pair
    /// bytes, and its writer picks the width that escapes fewer change
    /// points (3 bits of clocks held in the block with many rises of 20
    /// moves, which 4 bits would escape; 4 in the other); every pair byte
    /// reads back as the change point it was made from.
    #[test]
    fn paired_dtm50_columns_read_back_with_either_width() {
        for bits in [3, 4] {
            for b in 0..PAIRS as u8 {
                let (rise, held) = unpair(b, bits);
                assert_eq!(pair_byte(rise, held, bits), Some(b));
            }
            assert_eq!(pair_byte(8 * ((PAIRS >> bits) + 1), 1, bits), None);
            assert_eq!(pair_byte(8, (1 << bits) + 1, bits), None);
            assert_eq!(pair_byte(12, 1, bits), None);
        }
        let (dtz, dtm, d) = awkward_values();
        for (b, chosen) in [(0, 3), (3, 4)] {
            let range = b * BLOCK_POSITIONS..((b + 1) * BLOCK_POSITIONS).min(dtz.len());
            let (dtz, dtm, d) = (&dtz[range.clone()], &dtm[range.clone()], d.slice(range));
            let z = Columns::dtz(dtz);
            let (mut decisive, mut records) = (Vec::new(), Records::default());
            decisive_indexes(&z, &mut decisive);
            let (mut columns, mut decoded) = (Vec::new(), Vec::new());
            for held_bits in [None, Some(3), Some(4)] {
                let mut column = Vec::new();
                Columns::dtm50_held_bits(held_bits, dtz, &z, dtm, &d, &mut column);
                assert_eq!(
                    Dtm50Column::held_bits(column[0]),
                    Some(held_bits.unwrap_or(chosen)),
                    "block {b}, {held_bits:?}"
                );
                let got = Columns::undtm50(&column, &z, dtm, &decisive, &mut records).unwrap();
                let (mut segments, mut want) = (Vec::new(), Vec::new());
                for j in (0..dtz.len()).filter(|&j| dtz[j] != UNKNOWN) {
                    segments.clear();
                    want.clear();
                    got.segments_into(j as u32, &mut segments);
                    d.segments_into(j as u32, &mut want);
                    assert_eq!(segments, want, "block {b}, {held_bits:?}, position {j}");
                }
                columns.push(column);
                decoded.push(got);
            }
            assert_eq!(columns[0], columns[if chosen == 3 { 1 } else { 2 }], "block {b}");
            assert!(decoded.iter().all(|got| *got == decoded[0]), "block {b}");
        }
    }

    /// A block whose DTM is DTZ50'' wherever it is won or lost, and whose
    /// DTM50 is DTM up to the clock DTZ50'' leaves, writes empty DTM and
    /// DTM50 frames (a DTM50 column of kind [`Dtm50Column::Zeros`]), and
    /// reads back. A column of that kind with other bytes than zeros, or of
    /// a kind not defined, is refused.
    #[test]
    fn columns_of_zeros_are_empty_frames() {
        let n = 1000;
        let (mut dtz, mut d) = (Vec::with_capacity(n), Dtm50Data::default());
        for j in 0..n {
            let plies = 1 + (j % 150) as u16;
            let v = match j % 5 {
                0 => UNKNOWN,
                1 => DRAW,
                2 => value::loss(plies + 1),
                _ => value::win(plies),
            };
            dtz.push(v);
            d.inline.push(if decisive(v) {
                Segment { value: v, max_clock: expected_last_clock(v, v) }.pack()
            } else {
                v as u32
            });
        }
        d.overflow_start.push(0);
        let material = Material::parse("KQvK").unwrap();
        let bytes = encode(&material, &dtz, &dtz, Some(&d), 0);
        let (_, blocks) = validate_layout(&bytes, &material, n).unwrap();
        assert_eq!(blocks.entries[0].frame_bytes[1..], [0, 0]);
        let (checked, _) = reads_back(&dtz, &dtz, &d);
        assert_eq!(checked, 100 * dtz.iter().filter(|&&v| v != UNKNOWN).count());

        let z = Columns::dtz(&dtz);
        let (mut decisive, mut records) = (Vec::new(), Records::default());
        decisive_indexes(&z, &mut decisive);
        let mut column = vec![0; Columns::dtm50_zeros(&z, &dtz, decisive.len())];
        assert!(Columns::undtm50(&column, &z, &dtz, &decisive, &mut records).is_ok());
        column[5] = 1;
        let err = Columns::undtm50(&column, &z, &dtz, &decisive, &mut records).unwrap_err();
        assert_eq!(err, ColumnProblem::NotZeros);
        column[0] = 9;
        let err = Columns::undtm50(&column, &z, &dtz, &decisive, &mut records).unwrap_err();
        assert_eq!(err, ColumnProblem::UnknownKind(9));
    }

    /// A file of another format version is refused by its version field,
    /// whatever follows it; other damage to the header is named.
    #[test]
    fn other_versions_are_refused() {
        let (dtz, dtm, d) = awkward_values();
        let material = Material::parse("KQvK").unwrap();
        let bytes = encode(&material, &dtz, &dtm, Some(&d), 0);
        for version in [0, 3, 6, VERSION + 1] {
            let mut other = bytes.clone();
            other[8..12].copy_from_slice(&version.to_le_bytes());
            let err = validate_layout(&other, &material, dtz.len()).unwrap_err();
            assert!(matches!(err, FormatError::UnsupportedVersion { found } if found == version), "{err:?}");
            assert_eq!(err.to_string(), format!("format version {version}, expected {VERSION}"));
        }
        let mut bad = bytes.clone();
        bad[0] ^= 1;
        assert!(matches!(validate_layout(&bad, &material, dtz.len()), Err(FormatError::BadMagic)));
        let mut bad = bytes.clone();
        bad[50] ^= 1;
        assert!(matches!(validate_layout(&bad, &material, dtz.len()), Err(FormatError::HeaderChecksum { .. })));
        let krk = Material::parse("KRvK").unwrap();
        let err = validate_layout(&bytes, &krk, dtz.len()).unwrap_err();
        assert_eq!(err.to_string(), "holds KQvK, expected KRvK");
        let err = validate_layout(&bytes[..bytes.len() - 1], &material, dtz.len()).unwrap_err();
        assert!(matches!(err, FormatError::SizeMismatch { .. }), "{err:?}");
        let mut bad = bytes.clone();
        let e = validate_layout(&bytes, &material, dtz.len()).unwrap().1.entries[1];
        bad[e.offset] ^= 1;
        let (_, blocks) = validate_layout(&bad, &material, dtz.len()).unwrap();
        let err = decode_block(&bad, &blocks, 1).unwrap_err();
        assert!(
            matches!(err, FormatError::DamagedBlock { block: 1, problem: BlockProblem::Checksum { .. } }),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("block 1: checksum mismatch: stored "), "{err}");
    }

    /// Compressed harder, the same columns: each block decodes to the same
    /// values, from other bytes.
    #[test]
    fn small_compression_reads_back_the_same() {
        let (dtz, dtm, d) = awkward_values();
        let material = Material::parse("KQvK").unwrap();
        let [fast, small] = [Compression::Fast, Compression::Small]
            .map(|c| assemble(&material, dtz.len(), true, 0, &encode_blocks(c, &dtz, &dtm, Some(&d))));
        assert_ne!(fast, small);
        let (_, fast_blocks) = validate_layout(&fast, &material, dtz.len()).unwrap();
        let (_, small_blocks) = validate_layout(&small, &material, dtz.len()).unwrap();
        for b in 0..fast_blocks.entries.len() {
            assert_eq!(
                decode_block(&small, &small_blocks, b).unwrap(),
                decode_block(&fast, &fast_blocks, b).unwrap(),
                "block {b}"
            );
        }
        assert_eq!(Compression::NAMES.map(Compression::parse), [Some(Compression::Fast), Some(Compression::Small)]);
    }

    /// Made-up values of four blocks that exercise every path of the
    /// writers: see [`awkward_values_read_back`].
    fn awkward_values() -> (Vec<u16>, Vec<u16>, Dtm50Data) {
        let n = 3 * BLOCK_POSITIONS + 77;
        let (mut dtz, mut dtm) = (vec![UNKNOWN; n], vec![UNKNOWN; n]);
        // Each index's DTM50 segments; none for an illegal index or a draw.
        let mut functions: Vec<Vec<Segment>> = vec![Vec::new(); n];
        let seg = |value, max_clock| Segment { value, max_clock };
        for j in 0..n {
            let r = (j * 7919) % 97;
            let plies = 1 + (j % 61) as u16 * 2 + if r < 5 { 300 } else { 0 };
            let (win, loss) = (value::win(plies), value::loss(plies + 1));
            match r {
                0..=9 => {}
                10..=29 => (dtz[j], dtm[j]) = (DRAW, DRAW),
                30..=49 => {
                    // DTM is DTZ50'': DTM50 is DTM up to the last clock.
                    (dtz[j], dtm[j]) = (win, win);
                    functions[j] = vec![seg(win, 99 - (plies % 99) as u8)];
                }
                50..=69 => {
                    (dtz[j], dtm[j]) = (loss, value::loss(plies + 9));
                    let last = (100 - (plies + 1).min(100)) as u8;
                    functions[j] = vec![
                        seg(dtm[j], last / 3),
                        seg(value::loss(plies + 13), last / 2),
                        seg(value::loss(plies + 21), last),
                    ];
                }
                70..=79 => {
                    // Rises of 3 plies (not whole moves) and of 700 (past
                    // the one-byte code).
                    (dtz[j], dtm[j]) = (win, value::win(plies + 4));
                    functions[j] =
                        vec![seg(dtm[j], 10), seg(value::win(plies + 7), 20), seg(value::win(plies + 707), 40)];
                }
                80..=83 => {
                    // 20 change points of 4 clocks each, a move each, or
                    // 20 moves in the first block (a pair byte with 3 bits
                    // of clocks held).
                    let moves = if j < BLOCK_POSITIONS { 20 } else { 1 };
                    (dtz[j], dtm[j]) = (win, value::win(plies + 4));
                    functions[j] =
                        (0..20).map(|i| seg(value::win(plies + 4 + 2 * moves * i), 3 + 4 * i as u8)).collect();
                }
                84..=87 => {
                    // One change point: a rise of 20 moves, or of 70 in
                    // every other block (escaped in both widths).
                    let moves = if (j / BLOCK_POSITIONS).is_multiple_of(2) { 20 } else { 70 };
                    (dtz[j], dtm[j]) = (win, value::win(plies + 4));
                    functions[j] = vec![seg(dtm[j], 10), seg(value::win(plies + 4 + 2 * moves), 15)];
                }
                _ => {
                    // A cursed win: DTM50 a draw at every clock.
                    (dtz[j], dtm[j]) = (value::win(plies + 150), value::win(plies + 200));
                    functions[j] = vec![seg(DRAW, 0)];
                }
            }
        }
        // Block 1: a position whose DTM is DTZ50'' but whose DTM50 changes.
        let j = BLOCK_POSITIONS + 100;
        (dtz[j], dtm[j]) = (value::win(7), value::win(7));
        functions[j] = vec![seg(value::win(7), 30), seg(value::win(9), 93)];
        // Block 2: a drawn position whose DTM is a win.
        let j = 2 * BLOCK_POSITIONS + 5;
        (dtz[j], dtm[j]) = (DRAW, value::win(41));
        functions[j] = vec![seg(value::win(41), 59)];
        let mut d = Dtm50Data::default();
        for (j, list) in functions.iter().enumerate() {
            match list.as_slice() {
                [] => d.inline.push(if dtz[j] == UNKNOWN { UNKNOWN as u32 } else { DRAW as u32 }),
                [only] => d.inline.push(only.pack()),
                [first, further @ ..] => {
                    d.inline.push(first.pack() | MORE);
                    d.overflow_index.push(j as u32);
                    d.overflow_start.push(d.segments.len() as u32);
                    d.segments.extend(further.iter().map(|g| g.pack()));
                }
            }
        }
        d.overflow_start.push(d.segments.len() as u32);
        (dtz, dtm, d)
    }
}
