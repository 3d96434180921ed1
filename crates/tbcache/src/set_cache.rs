//! A fixed-size set-associative cache: a key may sit in one of the
//! [`WAYS`] entries of one set (chosen by a hash of the key), and an entry
//! inserted into a full set replaces the set's least recently used one.
//! Used for the built-in tables' decoded blocks and chesstb's rebuilt
//! answers; each user keeps its own counting and budget.
//!
//! Why not a general-purpose concurrent map: a lookup here costs one
//! uncontended lock, [`WAYS`] key comparisons and a clone of the value. A
//! built-in table's block is found in a fraction of such a map's time, and
//! for chesstb's rebuilt answers the map's keyed hash, frequency sketch and
//! deferred bookkeeping would be a large share of an exhaustive comparison
//! even where every probe rebuilds its value (docs/performance.md). A key
//! crafted to collide only evicts entries of its own set: entries compare
//! whole keys, so no value is ever given for another key.
//!
//! Concurrency: each set is behind its own lock, taken for one scan of its
//! entries; under it run only `K::eq` and `V::clone` (an `Arc` clone or a
//! small copy for the users), never a caller's closure, and no other lock
//! is taken. No lock is held while a missing value is computed: threads
//! that miss the same key meanwhile each compute it, and the later insert
//! replaces the earlier, so none waits on another's work. A value
//! displaced by an insert is handed back and dropped by the caller after
//! the lock is released (it may free a decoded block).
//! A panic under the lock leaves whole entries only, so a poisoned set is
//! used as it is.

use std::{
    hash::{BuildHasher, Hash},
    sync::{Mutex, MutexGuard},
};

/// Entries per set: with 4, sets overflow rarely before the cache is full,
/// and a set is scanned in one or two cache lines.
pub const WAYS: usize = 4;

/// One set: its entries, each with when it was last used (the set's own
/// clock, advanced by every lookup and insert).
struct Set<K, V> {
    ways: [Option<(K, V, u64)>; WAYS],
    clock: u64,
}

impl<K, V> Default for Set<K, V> {
    fn default() -> Self {
        Set { ways: [const { None }; WAYS], clock: 0 }
    }
}

/// Values `V` by key `K` in fixed sets of [`WAYS`] entries (see the module
/// docs).
pub struct SetCache<K, V> {
    /// Empty: keeps nothing.
    sets: Box<[Mutex<Set<K, V>>]>,
}

impl<K: Hash + Eq, V: Clone> SetCache<K, V> {
    /// Bytes of one set, its entries' keys and values inline.
    pub const SET_BYTES: u64 = std::mem::size_of::<Mutex<Set<K, V>>>() as u64;

    /// A cache of `max_entries` entries, rounded down to whole sets:
    /// under one set's worth it keeps nothing. For values that point
    /// elsewhere, budgeted per entry by the caller.
    pub fn with_max_entries(max_entries: u64) -> SetCache<K, V> {
        Self::with_sets((max_entries / WAYS as u64) as usize)
    }

    /// A cache of at most `max_bytes`, counting each set's whole size:
    /// under one set it keeps nothing. For values held inline.
    pub fn with_max_bytes(max_bytes: u64) -> SetCache<K, V> {
        Self::with_sets((max_bytes / Self::SET_BYTES) as usize)
    }

    fn with_sets(sets: usize) -> SetCache<K, V> {
        SetCache { sets: (0..sets).map(|_| Mutex::default()).collect() }
    }

    /// Number of sets ([`WAYS`] entries each).
    pub fn sets(&self) -> usize {
        self.sets.len()
    }

    /// Whether the cache keeps nothing (every lookup misses).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    #[inline]
    fn set(&self, key: &K) -> MutexGuard<'_, Set<K, V>> {
        let h = rustc_hash::FxBuildHasher.hash_one(key);
        // The high bits of a multiplicative hash are the well-mixed ones.
        let set = &self.sets[((h >> 32) as usize * self.sets.len()) >> 32];
        set.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value of `key`, marked as used.
    // Always inlined into the users' lookups: called out of line it adds a
    // call to the hot path of every warm built-in probe.
    #[inline(always)]
    pub fn get(&self, key: &K) -> Option<V> {
        if self.sets.is_empty() {
            return None;
        }
        let mut set = self.set(key);
        set.clock += 1;
        let now = set.clock;
        set.ways.iter_mut().flatten().find(|(k, _, _)| k == key).map(|(_, v, used)| {
            *used = now;
            v.clone()
        })
    }

    /// Keeps `value` under `key`, in place of the key's entry if there is
    /// one (two threads may compute the same value at once), else in a free
    /// entry, else in the least recently used. Returns the entry displaced:
    /// the key's own, or another key's (an eviction). Keeps nothing in an
    /// empty cache.
    pub fn insert(&self, key: K, value: V) -> Option<(K, V)> {
        if self.sets.is_empty() {
            return None;
        }
        let mut set = self.set(&key);
        set.clock += 1;
        let now = set.clock;
        let way = match set.ways.iter().position(|w| w.as_ref().is_some_and(|(k, _, _)| *k == key)) {
            Some(w) => w,
            None => (0..WAYS).min_by_key(|&w| set.ways[w].as_ref().map_or(0, |(_, _, used)| *used)).expect("ways"),
        };
        set.ways[way].replace((key, value, now)).map(|(k, v, _)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// Five keys in one set: the least recently used of the first four
    /// gives way to the fifth, a read counting as a use.
    #[test]
    fn a_full_set_drops_its_least_recently_used_entry() {
        let cache = SetCache::<u32, u32>::with_sets(1);
        for k in 0..4 {
            assert_eq!(cache.insert(k, 10 * k), None);
        }
        assert_eq!(cache.get(&0), Some(0));
        // 1 is now the least recently used: 0 was read after it was inserted.
        assert_eq!(cache.insert(4, 40), Some((1, 10)));
        let kept: Vec<Option<u32>> = (0..5).map(|k| cache.get(&k)).collect();
        assert_eq!(kept, [Some(0), None, Some(20), Some(30), Some(40)]);
        // Those reads used 0 first, and a miss marks nothing: 0 goes next.
        assert_eq!(cache.get(&1), None);
        assert_eq!(cache.insert(5, 50), Some((0, 0)));
    }

    #[test]
    fn inserting_a_key_again_replaces_its_entry() {
        let cache = SetCache::<u32, u32>::with_sets(1);
        for k in 0..4 {
            cache.insert(k, k);
        }
        // The key's own entry is displaced, not the least recently used (0).
        assert_eq!(cache.insert(3, 33), Some((3, 3)));
        assert_eq!((0..4).map(|k| cache.get(&k)).collect::<Vec<_>>(), [Some(0), Some(1), Some(2), Some(33)]);
    }

    #[test]
    fn a_budget_under_one_set_keeps_nothing() {
        type Cache = SetCache<u128, u16>;
        let one_set = Cache::SET_BYTES;
        // Four keys, values and clocks, and the set's own clock and lock.
        assert!(one_set >= 4 * (16 + 2 + 8) + 8, "{one_set}");
        for none in
            [Cache::with_max_bytes(one_set - 1), Cache::with_max_entries(WAYS as u64 - 1), Cache::with_max_bytes(0)]
        {
            assert!(none.is_empty());
            assert_eq!(none.insert(7, 1), None);
            assert_eq!(none.get(&7), None);
        }
        for one in [Cache::with_max_bytes(2 * one_set - 1), Cache::with_max_entries(2 * WAYS as u64 - 1)] {
            assert_eq!(one.sets(), 1);
            one.insert(7, 1);
            assert_eq!(one.get(&7), Some(1));
        }
        assert_eq!(Cache::with_max_bytes(5 * one_set).sets(), 5);
        assert_eq!(Cache::with_max_entries(5 * WAYS as u64).sets(), 5);
    }

    /// Threads inserting and reading the same keys at once, in a cache too
    /// small for them all, only ever read back the value of the key they
    /// asked for; afterwards every set is full, of its own keys' values.
    #[test]
    fn concurrent_use_reads_back_only_its_own_values() {
        let cache = SetCache::<u64, (u64, u64)>::with_max_entries(4 * WAYS as u64);
        let keys = 0..42u64;
        let value = |k: u64| (k, k * 1_000_003);
        let (hits, misses, wrong, reads) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|scope| {
            for t in 0..4 {
                let (cache, keys, hits, misses, wrong, reads) = (&cache, keys.clone(), &hits, &misses, &wrong, &reads);
                scope.spawn(move || {
                    for round in 0..500 {
                        for k in keys.clone() {
                            if (k as usize + t + round).is_multiple_of(3) {
                                cache.insert(k, value(k));
                                continue;
                            }
                            reads.fetch_add(1, Ordering::Relaxed);
                            let counter = match cache.get(&k) {
                                Some(v) if v == value(k) => &hits,
                                Some(_) => &wrong,
                                None => &misses,
                            };
                            counter.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(wrong.load(Ordering::Relaxed), 0);
        let (hits, misses) = (hits.load(Ordering::Relaxed), misses.load(Ordering::Relaxed));
        // 16 ways for 42 keys: some reads hit, some miss.
        assert!(hits > 0 && misses > 0, "{hits} hits, {misses} misses");
        assert_eq!(hits + misses, reads.load(Ordering::Relaxed));
        // Two of three reads of each key by each thread in each round.
        assert_eq!(reads.load(Ordering::Relaxed), 4 * 500 * 28);
        // Every key was inserted, and every set was offered more keys than
        // it has ways: all 16 ways hold a key, each with its own value.
        let mut per_set = [0usize; 4];
        for k in keys.clone() {
            let h = rustc_hash::FxBuildHasher.hash_one(k);
            per_set[((h >> 32) as usize * 4) >> 32] += 1;
        }
        assert!(per_set.iter().all(|&n| n > WAYS), "{per_set:?}");
        let held: Vec<(u64, (u64, u64))> = keys.filter_map(|k| Some((k, cache.get(&k)?))).collect();
        assert_eq!(held.len(), 4 * WAYS);
        assert!(held.iter().all(|&(k, v)| v == value(k)), "{held:?}");
    }
}
