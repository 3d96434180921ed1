//! Decoded blocks of built-in tables, shared by all tables of a store: a
//! [`SetCache`] (which says why), behind the few blocks each thread used
//! last.
//!
//! A miss decodes on the caller's own thread and inserts the result; it
//! never waits for another thread decoding the same block. Two threads
//! that miss the same block at once both decode it (one block's work each)
//! rather than one blocking a thread of the server's or the generator's
//! pool until the other is done.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use tbcache::{Recent, SetCache};
use tbformat::format::{BLOCK_POSITIONS, DecodedBlock, Dtm50Part};

/// Default of `builtin.cache_mib`: room for the blocks a full answer
/// reaches over a few hundred random positions of every 3-4-piece table (a
/// position and its moves touch about 30 blocks). A quarter of this leaves
/// a sizeable share of such lookups decoding a block, and the answers
/// markedly slower (docs/performance.md).
pub(crate) const DEFAULT_CACHE_MIB: u64 = 512;

/// Bytes a slot is budgeted for: a decoded block of all metrics (2 + 2 + 4
/// bytes per position) and DTM50's further change points, which make the
/// 3-4-piece tables' blocks about a fifth larger than that on average.
const SLOT_BYTES: u64 = 10 * BLOCK_POSITIONS as u64;

/// A block of one table: the table's serial number (unique in the process,
/// so that a table regenerated under the same name never meets the old
/// one's blocks) and the block's number in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct BlockKey {
    pub table: u64,
    pub block: u32,
    /// Which part of DTM50 the block holds: a block decoded for clock 0
    /// only is another entry than the whole one.
    pub part: Dtm50Part,
}

/// Counters for `/prometheus`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheCounts {
    pub hits: u64,
    pub misses: u64,
    /// Blocks dropped from their slot for another.
    pub evictions: u64,
    pub bytes: u64,
}

pub(crate) struct BlockCache {
    blocks: SetCache<BlockKey, Arc<DecodedBlock>>,
    hits: Counter,
    misses: AtomicU64,
    evictions: AtomicU64,
    bytes: AtomicU64,
    /// Tells this cache's entries in the per-thread memo from another's.
    id: u64,
}

/// A count that threads add to without sharing a cache line (mostly):
/// hits are counted on every lookup, a generation makes tens of millions of
/// them, and one shared word would bounce between the cores on each.
#[derive(Default)]
struct Counter([Shard; SHARDS]);

const SHARDS: usize = 8;

#[derive(Default)]
#[repr(align(64))]
struct Shard(AtomicU64);

impl Counter {
    #[inline]
    fn add(&self) {
        thread_local! {
            // Without lazy initialisation: no check of a TLS state on each use.
            static SHARD: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
        }
        let shard = SHARD.with(|s| {
            if s.get() == usize::MAX {
                static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                s.set(NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS);
            }
            s.get()
        });
        self.0[shard].0.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds one where no thread-local lookup is needed, on the first
    /// shard: for hits found under a set's lock, which are shared anyway.
    #[inline]
    fn add_shared(&self) {
        self.0[0].0.fetch_add(1, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
    }
}

thread_local! {
    /// The blocks a thread used last: a probe (and the one-ply search behind
    /// an en-passant position, or a generator's run of captures) mostly
    /// stays in a few blocks, and this spares them the shared sets.
    static RECENT_BLOCKS: std::cell::RefCell<Recent<BlockKey, Arc<DecodedBlock>, 4>> = const { std::cell::RefCell::new(Recent::new()) };
}

impl BlockCache {
    /// A cache of about `max_bytes` of decoded blocks; less than one set's
    /// worth (four blocks) keeps nothing (every probe decodes).
    pub fn new(max_bytes: u64) -> BlockCache {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        BlockCache {
            blocks: SetCache::with_max_entries(max_bytes / SLOT_BYTES),
            hits: Counter::default(),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            id: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl BlockCache {
    /// `f` of the decoded block of `key`, decoded by `decode` on a miss.
    /// A block the thread used lately is lent to `f` without taking a
    /// reference count; `f` must not look up blocks itself.
    #[inline]
    pub(crate) fn with_block<R>(
        &self,
        key: BlockKey,
        decode: impl FnOnce() -> Result<DecodedBlock, String>,
        f: impl FnOnce(&DecodedBlock) -> R,
    ) -> Result<R, String> {
        let mut f = Some(f);
        if let Some(v) = self.recent(key, |b| f.take().expect("called once")(b)) {
            return Ok(v);
        }
        let b = self.shared_or_decode(key, decode)?;
        Ok(f.take().expect("called once")(&b))
    }

    /// `f` of the block of `key` if it is among the thread's recent ones
    /// (a hit).
    #[inline]
    fn recent<R>(&self, key: BlockKey, f: impl FnOnce(&Arc<DecodedBlock>) -> R) -> Option<R> {
        let r = RECENT_BLOCKS.with_borrow(|r| r.find(self.id, &key).map(f))?;
        self.hits.add();
        Some(r)
    }

    /// The decoded block of `key`, decoded by `decode` on a miss.
    #[cfg(test)]
    pub(crate) fn get_or_decode(
        &self,
        key: BlockKey,
        decode: impl FnOnce() -> Result<DecodedBlock, String>,
    ) -> Result<Arc<DecodedBlock>, String> {
        match self.recent(key, Arc::clone) {
            Some(b) => Ok(b),
            None => self.shared_or_decode(key, decode),
        }
    }

    /// [`BlockCache::get_or_decode`] past the thread's recent blocks: the
    /// shared sets, then `decode`.
    fn shared_or_decode(
        &self,
        key: BlockKey,
        decode: impl FnOnce() -> Result<DecodedBlock, String>,
    ) -> Result<Arc<DecodedBlock>, String> {
        let block = match self.blocks.get(&key) {
            Some(b) => {
                self.hits.add_shared();
                b
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                let b = Arc::new(decode()?);
                if !self.blocks.is_empty() {
                    // Displaced: the block's own entry if another thread
                    // decoded it meanwhile (replaced by the same), else
                    // another block (an eviction).
                    let old = self.blocks.insert(key, Arc::clone(&b));
                    self.bytes.fetch_add(b.bytes() as u64, Ordering::Relaxed);
                    if let Some((k, old)) = old {
                        self.bytes.fetch_sub(old.bytes() as u64, Ordering::Relaxed);
                        if k != key {
                            self.evictions.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                b
            }
        };
        RECENT_BLOCKS.with_borrow_mut(|r| r.remember(self.id, key, Arc::clone(&block)));
        Ok(block)
    }

    pub(crate) fn counts(&self) -> CacheCounts {
        CacheCounts {
            hits: self.hits.get(),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbcache::WAYS;

    fn block(n: usize) -> DecodedBlock {
        DecodedBlock { dtz: vec![7; n], dtm: vec![9; n], dtm50: None, more_rank: Vec::new(), part: Dtm50Part::All }
    }

    /// Many threads asking for the same blocks at once, none decoded yet:
    /// every one gets the right block without waiting for another, and
    /// nothing is decoded more often than there are threads.
    #[test]
    fn concurrent_first_use() {
        let cache = BlockCache::new(64 << 20);
        let decodes = AtomicU64::new(0);
        let threads = 8;
        std::thread::scope(|s| {
            for t in 0..threads {
                let (cache, decodes) = (&cache, &decodes);
                s.spawn(move || {
                    for round in 0..50u32 {
                        let key = BlockKey { table: 1, block: (round + t) % 10, part: Dtm50Part::All };
                        let decode = || {
                            decodes.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(std::time::Duration::from_micros(200));
                            Ok(block(key.block as usize + 1))
                        };
                        // Every other lookup lends the block (a thread's
                        // recent blocks without a reference count).
                        let len = if round % 2 == 0 {
                            cache.get_or_decode(key, decode).unwrap().dtz.len()
                        } else {
                            cache.with_block(key, decode, |b| b.dtz.len()).unwrap()
                        };
                        assert_eq!(len, key.block as usize + 1);
                        // Again at once: the thread's recent block.
                        assert_eq!(cache.with_block(key, || unreachable!("recent"), |b| b.dtm.len()).unwrap(), len);
                    }
                });
            }
        });
        let c = cache.counts();
        assert_eq!(c.hits + c.misses, 8 * 50 * 2);
        assert_eq!(c.misses, decodes.load(Ordering::Relaxed));
        assert!((10..=10 * threads as u64).contains(&c.misses), "{c:?}");
        // Inside a rayon pool of 2 threads, 64 jobs on one block: none waits
        // on another's decode, so this ends.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let fresh = BlockCache::new(16 * SLOT_BYTES);
        pool.install(|| {
            use rayon::prelude::*;
            (0..64).into_par_iter().for_each(|_| {
                let b = fresh
                    .get_or_decode(BlockKey { table: 2, block: 0, part: Dtm50Part::All }, || Ok(block(3)))
                    .unwrap();
                assert_eq!(b.dtm, [9, 9, 9]);
            })
        });
    }

    #[test]
    fn errors_are_not_cached_and_size_is_bounded() {
        let cache = BlockCache::new(8 * SLOT_BYTES);
        let key = BlockKey { table: 3, block: 0, part: Dtm50Part::All };
        assert_eq!(cache.get_or_decode(key, || Err("checksum mismatch".into())).unwrap_err(), "checksum mismatch");
        assert_eq!(cache.get_or_decode(key, || Ok(block(1))).unwrap().dtz, [7]);
        for b in 1..40 {
            cache.get_or_decode(BlockKey { table: 3, block: b, part: Dtm50Part::All }, || Ok(block(8192))).unwrap();
        }
        let c = cache.counts();
        assert!(c.evictions > 0 && c.bytes <= 8 * SLOT_BYTES, "{c:?}");
        // No room for a block: nothing kept, every probe decodes.
        let none = BlockCache::new(WAYS as u64 * SLOT_BYTES - 1);
        none.get_or_decode(key, || Ok(block(1))).unwrap();
        assert_eq!(none.counts().bytes, 0);
    }
}
