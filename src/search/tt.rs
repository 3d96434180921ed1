//! Lock-free transposition table shared by all search threads (lazy SMP).
//!
//! Each slot holds `key ^ data` and `data`; a torn write by another thread makes
//! the check `stored_key ^ data == key` fail, so a reader never trusts a mixed
//! entry.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundKind {
    Exact = 0,
    Lower = 1,
    Upper = 2,
}

#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Packed move (see `engine::pack_move`), 0 for none.
    pub mv: u16,
    pub score: i32,
    pub depth: i32,
    pub bound: BoundKind,
}

pub struct TranspositionTable {
    slots: Vec<[AtomicU64; 2]>,
    mask: u64,
}

impl TranspositionTable {
    pub fn new(hash_mb: usize) -> TranspositionTable {
        let wanted = (hash_mb.max(1) << 20) / 16;
        let len = wanted.next_power_of_two() / if wanted.is_power_of_two() { 1 } else { 2 };
        TranspositionTable {
            slots: (0..len).map(|_| [AtomicU64::new(0), AtomicU64::new(0)]).collect(),
            mask: len as u64 - 1,
        }
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
        if slot[0].load(Ordering::Relaxed) ^ old_data == key
            && i32::from((old_data >> 32) as u8) - 1 > entry.depth + 2
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
