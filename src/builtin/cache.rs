//! Decoded blocks of built-in tables, shared by all tables of a store and
//! weighed by their bytes.
//!
//! A miss decodes on the caller's own thread and inserts the result; it
//! never waits for another thread decoding the same block. Two threads
//! that miss the same block at once both decode it (a few tens of
//! microseconds each) rather than one blocking a thread of the server's or
//! the generator's pool until the other is done.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use super::format::DecodedBlock;

/// Default of `builtin.cache_mib`.
pub const DEFAULT_CACHE_MIB: u64 = 128;

/// A block of one table: the table's serial number (unique in the process,
/// so that a table regenerated under the same name never meets the old
/// one's blocks) and the block's number in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockKey {
    pub table: u64,
    pub block: u32,
}

/// Counters for `/prometheus`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounts {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub bytes: u64,
}

#[derive(Default)]
struct Stats {
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

pub struct BlockCache {
    cache: moka::sync::Cache<BlockKey, Arc<DecodedBlock>>,
    stats: Arc<Stats>,
    /// Tells this cache's entries in the per-thread memo from another's.
    id: u64,
}

/// The blocks a thread used last: a probe (and the one-ply search behind
/// an en-passant position, or a generator's run of captures) mostly stays
/// in a few blocks, and this spares them the shared map.
const RECENT: usize = 4;
type Recent = [Option<(u64, BlockKey, Arc<DecodedBlock>)>; RECENT];

thread_local! {
    static RECENT_BLOCKS: std::cell::RefCell<(Recent, usize)> = const { std::cell::RefCell::new(([const { None }; RECENT], 0)) };
}

impl BlockCache {
    pub fn new(max_bytes: u64) -> BlockCache {
        let stats = Arc::new(Stats::default());
        let listener = Arc::clone(&stats);
        let cache = moka::sync::Cache::builder()
            .max_capacity(max_bytes)
            .weigher(|_: &BlockKey, v: &Arc<DecodedBlock>| v.bytes().min(u32::MAX as usize) as u32)
            .eviction_listener(move |_, _, cause| {
                if cause == moka::notification::RemovalCause::Size {
                    listener.evictions.fetch_add(1, Ordering::Relaxed);
                }
            })
            .build();
        static NEXT: AtomicU64 = AtomicU64::new(1);
        BlockCache { cache, stats, id: NEXT.fetch_add(1, Ordering::Relaxed) }
    }

    /// The decoded block of `key`, decoded by `decode` on a miss.
    #[inline]
    pub fn get_or_decode(
        &self,
        key: BlockKey,
        decode: impl FnOnce() -> Result<DecodedBlock, String>,
    ) -> Result<Arc<DecodedBlock>, String> {
        let recent = RECENT_BLOCKS.with_borrow(|(r, _)| {
            r.iter().flatten().find(|(id, k, _)| *id == self.id && *k == key).map(|(_, _, b)| Arc::clone(b))
        });
        if let Some(b) = recent {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(b);
        }
        let block = match self.cache.get(&key) {
            Some(b) => {
                self.stats.hits.fetch_add(1, Ordering::Relaxed);
                b
            }
            None => {
                self.stats.misses.fetch_add(1, Ordering::Relaxed);
                let b = Arc::new(decode()?);
                self.cache.insert(key, Arc::clone(&b));
                b
            }
        };
        RECENT_BLOCKS.with_borrow_mut(|(r, next)| {
            r[*next] = Some((self.id, key, Arc::clone(&block)));
            *next = (*next + 1) % RECENT;
        });
        Ok(block)
    }

    pub fn counts(&self) -> CacheCounts {
        self.cache.run_pending_tasks();
        CacheCounts {
            hits: self.stats.hits.load(Ordering::Relaxed),
            misses: self.stats.misses.load(Ordering::Relaxed),
            evictions: self.stats.evictions.load(Ordering::Relaxed),
            bytes: self.cache.weighted_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(n: usize) -> DecodedBlock {
        DecodedBlock { dtz: vec![7; n], dtm: vec![9; n], dtm50: None }
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
                        let key = BlockKey { table: 1, block: (round + t) % 10 };
                        let b = cache
                            .get_or_decode(key, || {
                                decodes.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(std::time::Duration::from_micros(200));
                                Ok(block(key.block as usize + 1))
                            })
                            .unwrap();
                        assert_eq!(b.dtz.len(), key.block as usize + 1);
                    }
                });
            }
        });
        let c = cache.counts();
        assert_eq!(c.hits + c.misses, 8 * 50);
        assert_eq!(c.misses, decodes.load(Ordering::Relaxed));
        assert!((10..=10 * threads as u64).contains(&c.misses), "{c:?}");
        // Inside a rayon pool of 2 threads, 64 jobs on one block: none waits
        // on another's decode, so this ends.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let fresh = BlockCache::new(1 << 20);
        pool.install(|| {
            use rayon::prelude::*;
            (0..64).into_par_iter().for_each(|_| {
                let b = fresh.get_or_decode(BlockKey { table: 2, block: 0 }, || Ok(block(3))).unwrap();
                assert_eq!(b.dtm, [9, 9, 9]);
            })
        });
    }

    #[test]
    fn errors_are_not_cached_and_size_is_bounded() {
        let cache = BlockCache::new(256 << 10);
        let key = BlockKey { table: 3, block: 0 };
        assert_eq!(cache.get_or_decode(key, || Err("checksum mismatch".into())).unwrap_err(), "checksum mismatch");
        assert_eq!(cache.get_or_decode(key, || Ok(block(1))).unwrap().dtz, [7]);
        for b in 1..40 {
            cache.get_or_decode(BlockKey { table: 3, block: b }, || Ok(block(8192))).unwrap();
        }
        let c = cache.counts();
        assert!(c.evictions > 0 && c.bytes <= 256 << 10, "{c:?}");
    }
}
