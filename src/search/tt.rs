//! Lock-free transposition table shared by all search threads (lazy SMP).
//!
//! Each slot holds `key ^ data` and `data`; a torn write by another thread makes
//! the check `stored_key ^ data == key` fail, so a reader never trusts a mixed
//! entry.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoundKind {
    Exact = 0,
    Lower = 1,
    Upper = 2,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// Packed move (see `engine::pack_move`), 0 for none.
    pub mv: u16,
    pub score: i32,
    pub depth: i32,
    pub bound: BoundKind,
}

pub(crate) struct TranspositionTable {
    slots: Slots,
    mask: u64,
}

/// Zeroed slots in an anonymous mapping of their own. The kernel supplies
/// zero pages as they are first touched, so a 64 MiB table costs only what a
/// short HTTP search writes, and dropping it gives the pages back at once. A
/// zeroed block from the allocator may instead be a reused one that must be
/// cleared whole, and freed blocks stay resident until the allocator
/// purges them: the process's memory then swings by whole tables.
enum Slots {
    Mapped {
        map: memmap2::MmapMut,
        len: usize,
    },
    /// Where no mapping can be made.
    Heap(Vec<[AtomicU64; 2]>),
}

impl Slots {
    fn zeroed(len: usize) -> Slots {
        match memmap2::MmapMut::map_anon((len * size_of::<[AtomicU64; 2]>()).max(1)) {
            Ok(map) => Slots::Mapped { map, len },
            Err(_) => Slots::Heap(zeroed_vec(len)),
        }
    }
}

/// Zeroed slots from the allocator (`calloc`).
fn zeroed_vec(len: usize) -> Vec<[AtomicU64; 2]> {
    let mut raw = std::mem::ManuallyDrop::new(vec![[0u64; 2]; len]);
    let (ptr, len, cap) = (raw.as_mut_ptr(), raw.len(), raw.capacity());
    // SAFETY: `AtomicU64` has the same size, alignment and bit validity as
    // `u64`, and the vector's allocation is handed over exactly once.
    unsafe { Vec::from_raw_parts(ptr.cast::<[AtomicU64; 2]>(), len, cap) }
}

impl std::ops::Deref for Slots {
    type Target = [[AtomicU64; 2]];

    fn deref(&self) -> &Self::Target {
        match self {
            // SAFETY: the mapping is page-aligned, at least `len` slots long,
            // zero-initialized (a valid `AtomicU64` is any bit pattern) and
            // lives as long as `self`; writes go only through the atomics.
            Slots::Mapped { map, len } => unsafe { std::slice::from_raw_parts(map.as_ptr().cast(), *len) },
            Slots::Heap(slots) => slots,
        }
    }
}

impl TranspositionTable {
    pub fn new(hash_mb: usize) -> TranspositionTable {
        let wanted = (hash_mb.max(1) << 20) / 16;
        let len = wanted.next_power_of_two() / if wanted.is_power_of_two() { 1 } else { 2 };
        TranspositionTable { slots: Slots::zeroed(len), mask: len as u64 - 1 }
    }

    pub fn probe(&self, key: u64) -> Option<Entry> {
        let slot = &self.slots[(key & self.mask) as usize];
        let check = slot[0].load(Ordering::Relaxed);
        let data = slot[1].load(Ordering::Relaxed);
        if check ^ data != key || data == 0 {
            return None;
        }
        let bound = match (data >> 40) & 3 {
            0 => BoundKind::Exact,
            1 => BoundKind::Lower,
            _ => BoundKind::Upper,
        };
        Some(Entry {
            mv: data as u16,
            score: i32::from((data >> 16) as u16 as i16),
            depth: i32::from((data >> 32) as u8) - 1,
            bound,
        })
    }

    pub fn store(&self, key: u64, entry: Entry) {
        let slot = &self.slots[(key & self.mask) as usize];
        // Keep a deeper entry of the same position (its move is the better guess).
        let old_data = slot[1].load(Ordering::Relaxed);
        if slot[0].load(Ordering::Relaxed) ^ old_data == key && i32::from((old_data >> 32) as u8) - 1 > entry.depth + 2
        {
            return;
        }
        let data = u64::from(entry.mv)
            | (u64::from(entry.score as i16 as u16) << 16)
            | (u64::from((entry.depth + 1).clamp(0, 255) as u8) << 32)
            | ((entry.bound as u64) << 40)
            | (1 << 48); // never 0, so an empty slot never matches
        slot[0].store(key ^ data, Ordering::Relaxed);
        slot[1].store(data, Ordering::Relaxed);
    }
}

/// Table answers by position (the tables ignore the clock), shared by all
/// threads: a DTZ probe costs far more than a node, and iterative deepening
/// asks for the same positions again and again. Same torn-write check as the TT.
pub(crate) struct ProbeCache {
    slots: Slots,
    mask: u64,
}

/// What one cache slot knows: each field `None` = not probed yet,
/// `Some(None)` = the tables had no answer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Probed {
    pub wdl: Option<Option<i8>>,
    pub dtz: Option<Option<(i16, bool)>>,
    pub dtm: Option<Option<i16>>,
}

impl ProbeCache {
    pub fn new(entries_log2: u32) -> ProbeCache {
        let len = 1usize << entries_log2;
        ProbeCache { slots: Slots::zeroed(len), mask: len as u64 - 1 }
    }

    pub(crate) fn get(&self, key: u64) -> Probed {
        let slot = &self.slots[(key & self.mask) as usize];
        let check = slot[0].load(Ordering::Relaxed);
        let data = slot[1].load(Ordering::Relaxed);
        if data == 0 || check ^ data != key {
            return Probed::default();
        }
        let wdl = match data & 7 {
            0 => None,
            6 => Some(None),
            w => Some(Some(w as i8 - 3)),
        };
        let dtz = match (data >> 3) & 3 {
            0 => None,
            1 => Some(None),
            s => Some(Some(((data >> 8) as u16 as i16, s == 3))),
        };
        let dtm = match (data >> 5) & 3 {
            0 => None,
            1 => Some(None),
            _ => Some(Some((data >> 24) as u16 as i16)),
        };
        Probed { wdl, dtz, dtm }
    }

    pub(crate) fn put(&self, key: u64, p: Probed) {
        let wdl = match p.wdl {
            None => 0,
            Some(None) => 6,
            Some(Some(w)) => (w + 3) as u64,
        };
        let (dtz_state, dtz) = match p.dtz {
            None => (0, 0),
            Some(None) => (1, 0),
            Some(Some((d, rounded))) => (2 + u64::from(rounded), u64::from(d as u16)),
        };
        let (dtm_state, dtm) = match p.dtm {
            None => (0, 0),
            Some(None) => (1, 0),
            Some(Some(d)) => (2, u64::from(d as u16)),
        };
        let data = wdl | (dtz_state << 3) | (dtm_state << 5) | (dtz << 8) | (dtm << 24) | (1 << 63);
        let slot = &self.slots[(key & self.mask) as usize];
        slot[0].store(key ^ data, Ordering::Relaxed);
        slot[1].store(data, Ordering::Relaxed);
    }
}
