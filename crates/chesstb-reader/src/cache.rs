//! Decoded blocks, shared by every chesstb table, least recently used out.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use arrayvec::ArrayVec;

use tbcache::Recent;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct BlockKey {
    pub file: u32,
    pub side: u8,
    pub block: u64,
}

pub(crate) enum Block {
    /// WDL nibbles, or DTZ/DTM ranks.
    Bytes(Vec<u8>),
    Layered(LayeredBlock),
}

impl Block {
    fn bytes(&self) -> usize {
        match self {
            Block::Bytes(b) => b.len(),
            Block::Layered(l) => l.payload.len() + l.strides.len() * 16,
        }
    }
}

/// How many records of each state precede a stride of positions.
const STRIDE: usize = 64;

/// A decoded block of a changepoint pack: 2-bit states per position (CONST,
/// SINGLE, DOUBLE, MULTI), then one stream per state.
pub(crate) struct LayeredBlock {
    payload: Vec<u8>,
    positions: usize,
    states: usize,
    consts: usize,
    singles: (usize, usize),
    doubles: (usize, usize),
    multi_dir: usize,
    multi_count: usize,
    multi_data: usize,
    /// Per stride: CONST records before it, byte offsets into the SINGLE and
    /// DOUBLE streams, MULTI records before it.
    strides: Vec<[u32; 4]>,
}

fn u32_at(b: &[u8], at: usize) -> FileResult<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| "record outside its block".into())
}

fn byte_at(b: &[u8], at: usize) -> FileResult<u8> {
    b.get(at).copied().ok_or_else(|| "record outside its block".into())
}

impl LayeredBlock {
    pub fn new(payload: Vec<u8>, positions: usize, eb: usize, bitmap_bytes: usize) -> FileResult<LayeredBlock> {
        let _ = bitmap_bytes;
        let h = |i: usize| u32_at(&payload, 4 * i).map(|v| v as usize);
        if h(0)? != positions {
            return Err(format!("block header says {} positions, expected {positions}", h(0)?));
        }
        let (ns, nd, nm) = (h(1)?, h(2)?, h(3)?);
        let (single_bytes, double_bytes) = (h(4)?, h(5)?);
        let nc = positions.checked_sub(ns + nd + nm).ok_or("more records than positions")?;
        let states = 24;
        let consts = states + (positions * 2).div_ceil(8);
        let singles = (consts + nc * eb, single_bytes);
        let doubles = (singles.0 + single_bytes, double_bytes);
        let multi_dir = (doubles.0 + double_bytes).div_ceil(4) * 4;
        let multi_data = multi_dir + (nm + 1) * 4;
        if multi_data > payload.len() {
            return Err("block streams run past the payload".into());
        }
        let mut block = LayeredBlock {
            payload,
            positions,
            states,
            consts,
            singles,
            doubles,
            multi_dir,
            multi_count: nm,
            multi_data,
            strides: Vec::with_capacity(positions.div_ceil(STRIDE)),
        };
        let mut at = [0usize; 4];
        for p in 0..positions {
            if p % STRIDE == 0 {
                block.strides.push(at.map(|v| v as u32));
            }
            block.advance(p, &mut at, eb)?;
        }
        if at != [nc, single_bytes, double_bytes, nm] {
            return Err("record streams do not add up".into());
        }
        Ok(block)
    }

    fn state(&self, p: usize) -> u8 {
        (self.payload[self.states + p / 4] >> ((p % 4) * 2)) & 3
    }

    fn advance(&self, p: usize, at: &mut [usize; 4], eb: usize) -> FileResult<()> {
        match self.state(p) {
            0 => at[0] += 1,
            1 => {
                if at[1] >= self.singles.1 {
                    return Err("SINGLE stream overrun".into());
                }
                at[1] += single_width(byte_at(&self.payload, self.singles.0 + at[1])?, eb);
            }
            2 => {
                if at[2] >= self.doubles.1 {
                    return Err("DOUBLE stream overrun".into());
                }
                at[2] += double_width(byte_at(&self.payload, self.doubles.0 + at[2] + 1)?, eb);
            }
            _ => at[3] += 1,
        }
        Ok(())
    }

    /// The record of position `p` of the block, its ranks resolved.
    pub(crate) fn record(&self, p: usize, eb: usize, bitmap_bytes: usize, ranks: &[u16]) -> FileResult<Record> {
        if p >= self.positions {
            return Err("position outside its block".into());
        }
        let mut at = self.strides[p / STRIDE].map(|v| v as usize);
        for q in (p / STRIDE * STRIDE)..p {
            self.advance(q, &mut at, eb)?;
        }
        let b = &self.payload;
        let rank = |at: usize| -> FileResult<u16> {
            let r = if eb == 1 {
                byte_at(b, at)? as usize
            } else {
                u16::from_le_bytes([byte_at(b, at)?, byte_at(b, at + 1)?]) as usize
            };
            ranks.get(r).copied().ok_or_else(|| format!("rank {r} out of range"))
        };
        let mut rec = Record { starts: ArrayVec::new(), values: ArrayVec::new(), draw_end: false };
        match self.state(p) {
            0 => {
                rec.starts.push(0);
                rec.values.push(rank(self.consts + at[0] * eb)?);
            }
            1 => {
                let e = self.singles.0 + at[1];
                let h = byte_at(b, e)?;
                rec.draw_end = h & 0x80 != 0;
                rec.starts.extend([0, h & 0x7f]);
                rec.values.push(rank(e + 1)?);
                if !rec.draw_end {
                    rec.values.push(rank(e + 1 + eb)?);
                }
            }
            2 => {
                let e = self.doubles.0 + at[2];
                let (h1, h2) = (byte_at(b, e)?, byte_at(b, e + 1)?);
                rec.draw_end = h2 & 0x80 != 0;
                rec.starts.extend([0, h1, h2 & 0x7f]);
                rec.values.push(rank(e + 2)?);
                rec.values.push(rank(e + 2 + eb)?);
                if !rec.draw_end {
                    rec.values.push(rank(e + 2 + 2 * eb)?);
                }
            }
            _ => {
                if at[3] >= self.multi_count {
                    return Err("MULTI record out of range".into());
                }
                let e = self.multi_data + u32_at(b, self.multi_dir + 4 * at[3])? as usize;
                let k = byte_at(b, e)?;
                rec.draw_end = k & 0x80 != 0;
                let k = (k & 0x7f) as usize;
                for byte in 0..bitmap_bytes {
                    let bits = byte_at(b, e + 1 + byte)?;
                    for bit in 0..8 {
                        if bits & (1 << bit) != 0 && rec.starts.len() < rec.starts.capacity() {
                            rec.starts.push((byte * 8 + bit) as u8);
                        }
                    }
                }
                if rec.starts.len() != k || rec.starts.first() != Some(&0) {
                    return Err("MULTI record: changepoints disagree with its count".into());
                }
                let stored = if rec.draw_end { k - 1 } else { k };
                for n in 0..stored {
                    rec.values.push(rank(e + 1 + bitmap_bytes + n * eb)?);
                }
            }
        }
        if rec.starts.windows(2).any(|w| w[0] >= w[1]) {
            return Err("changepoints out of order".into());
        }
        Ok(rec)
    }
}

/// Counters of the block cache, for `/prometheus`.
#[derive(Debug, Default)]
pub struct CacheStats {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub evictions: AtomicU64,
}

/// Decoded blocks of all chesstb tables, weighed by their bytes.
pub(crate) struct BlockCache {
    cache: moka::sync::Cache<BlockKey, Arc<Block>>,
    pub stats: Arc<CacheStats>,
    /// Tells this cache's entries in the per-thread memo from another's;
    /// a reader has one cache for life, so it tells readers apart too.
    pub(super) id: u64,
}

thread_local! {
    /// The blocks a thread used last: a probe and the one-ply searches
    /// behind it mostly stay in a few blocks, and this spares them the
    /// shared map.
    static RECENT_BLOCKS: std::cell::RefCell<Recent<BlockKey, Arc<Block>, 8>> = const { std::cell::RefCell::new(Recent::new()) };
}

impl BlockCache {
    pub fn new(max_bytes: u64) -> BlockCache {
        let stats = Arc::new(CacheStats::default());
        let listener_stats = Arc::clone(&stats);
        let cache = moka::sync::Cache::builder()
            .max_capacity(max_bytes)
            .weigher(|_k: &BlockKey, v: &Arc<Block>| v.bytes().min(u32::MAX as usize) as u32)
            .eviction_listener(move |_k, _v, cause| {
                if cause == moka::notification::RemovalCause::Size {
                    listener_stats.evictions.fetch_add(1, Ordering::Relaxed);
                }
            })
            .build();
        static NEXT: AtomicU64 = AtomicU64::new(1);
        BlockCache { cache, stats, id: NEXT.fetch_add(1, Ordering::Relaxed) }
    }

    pub(crate) fn get(&self, key: &BlockKey) -> Option<Arc<Block>> {
        let recent = RECENT_BLOCKS.with_borrow(|r| r.find(self.id, key).map(Arc::clone));
        let hit = recent.or_else(|| {
            let b = self.cache.get(key)?;
            self.remember(*key, &b);
            Some(b)
        });
        let counter = if hit.is_some() { &self.stats.hits } else { &self.stats.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        hit
    }

    fn remember(&self, key: BlockKey, block: &Arc<Block>) {
        RECENT_BLOCKS.with_borrow_mut(|r| r.remember(self.id, key, Arc::clone(block)));
    }

    pub(crate) fn insert(&self, key: BlockKey, block: Block) -> Arc<Block> {
        let block = Arc::new(block);
        self.cache.insert(key, Arc::clone(&block));
        self.remember(key, &block);
        block
    }

    /// Bytes held now (approximate: moka applies changes in batches).
    pub(crate) fn weighted_bytes(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.weighted_size()
    }
}

/// A problem with a file or one of its blocks.
pub(crate) type FileResult<T> = Result<T, String>;

/// A position's record in a changepoint pack.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// Pack index at which each segment starts (the first at 0), and its
    /// stored value; a trailing DRAW segment has no value.
    pub starts: arrayvec::ArrayVec<u8, 101>,
    pub values: arrayvec::ArrayVec<u16, 101>,
    pub draw_end: bool,
}

impl Record {
    /// The stored value at pack index `layer`, `None` for DRAW.
    pub fn at(&self, layer: usize) -> Option<u16> {
        let seg = self.starts.iter().rposition(|&s| s as usize <= layer)?;
        self.values.get(seg).copied()
    }

    /// Where the record turns DRAW, 0 if it never does.
    pub(crate) fn draw_flip(&self) -> u8 {
        if self.draw_end { *self.starts.last().unwrap_or(&0) } else { 0 }
    }
}

/// Helper for [`LayeredBlock`]: record widths.
pub(super) fn single_width(first: u8, eb: usize) -> usize {
    if first & 0x80 != 0 { 1 + eb } else { 1 + 2 * eb }
}
pub(super) fn double_width(second: u8, eb: usize) -> usize {
    if second & 0x80 != 0 { 2 + 2 * eb } else { 2 + 3 * eb }
}
