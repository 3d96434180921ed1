//! Answers rebuilt by a one-ply search, remembered.
//!
//! chesstb's `shrink` drops one side to move from most files; a probe of
//! that side searches its ~30 children, each a stored probe (4.3 µs for
//! WDL, DTZ, DTM and DTM50 together with warm blocks, against 0.55 µs read
//! back from here: `cargo bench --bench chesstb`). The answer depends on the
//! position alone, so it is kept here under a key that *is* the position
//! (no hash: two positions never share an entry), beside the decoded
//! blocks and bounded like them.
//!
//! Only complete answers are kept: a rebuild cut short by the depth limit
//! or the rebuild budget answers "unknown", and a later probe with budget
//! to spare must be free to find the real value.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use shakmaty::{Chess, EnPassantMode, Position};

/// Which rebuilt value an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum What {
    Wdl,
    /// DTM50 layer 0 (plain DTM) with the DTZ beside it.
    Flat,
    /// DTM50 at a half-move clock (0–99).
    Layer(u8),
    /// DTM from a `dtm/` file.
    Dtm,
    /// DTZ from a `dtz/` file.
    Dtz,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    position: u128,
    what: What,
}

/// The position itself in 128 bits: occupied squares (64), then 4 bits of
/// colour and role per occupied square from a1 up (at most 8 pieces: 32),
/// the side to move (1) and the legal en-passant square plus one (7).
/// `None` past 8 pieces (no chesstb table has that many).
fn position_key(pos: &Chess) -> Option<u128> {
    let board = pos.board();
    let occupied = board.occupied();
    if occupied.count() > 8 {
        return None;
    }
    let mut key = u64::from(occupied) as u128;
    for (i, (_, piece)) in board.iter().enumerate() {
        let code = (piece.color.is_white() as u128) << 3 | piece.role as u128;
        key |= code << (64 + 4 * i);
    }
    key |= (pos.turn().is_white() as u128) << 96;
    let ep = pos.ep_square(EnPassantMode::Legal).map_or(0, |sq| sq as u128 + 1);
    Some(key | ep << 97)
}

/// Rough bytes one entry costs in the map (key, value, the map's own
/// bookkeeping), for turning a byte budget into a count.
const ENTRY_BYTES: u64 = 128;

/// Hit and miss counts, for `/prometheus`.
#[derive(Debug, Default)]
pub struct RebuiltStats {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

/// Rebuilt answers of type `V` (the prober's), by position and [`What`].
pub(super) struct RebuiltCache<V> {
    /// `None`: keep nothing (a budget under one entry).
    map: Option<moka::sync::Cache<Key, V>>,
    pub stats: Arc<RebuiltStats>,
}

impl<V: Clone + Send + Sync + 'static> RebuiltCache<V> {
    /// A cache holding at most `max_bytes` (by [`ENTRY_BYTES`] an entry).
    pub fn new(max_bytes: u64) -> RebuiltCache<V> {
        let entries = max_bytes / ENTRY_BYTES;
        let map = (entries > 0).then(|| moka::sync::Cache::builder().max_capacity(entries).build());
        RebuiltCache { map, stats: Arc::default() }
    }

    pub fn get(&self, pos: &Chess, what: What) -> Option<V> {
        let map = self.map.as_ref()?;
        let position = position_key(pos)?;
        let hit = map.get(&Key { position, what });
        let counter = if hit.is_some() { &self.stats.hits } else { &self.stats.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        hit
    }

    pub fn insert(&self, pos: &Chess, what: What, value: V) {
        if let (Some(map), Some(position)) = (&self.map, position_key(pos)) {
            map.insert(Key { position, what }, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use shakmaty::{CastlingMode, fen::Fen};

    use super::*;

    fn pos(fen: &str) -> Chess {
        fen.parse::<Fen>().unwrap().into_position(CastlingMode::Standard).unwrap()
    }

    #[test]
    fn keys_tell_positions_apart() {
        let fens = [
            "8/8/8/4k3/8/8/8/KR6 w - - 0 1",
            "8/8/8/4k3/8/8/8/KR6 b - - 0 1",
            "8/8/8/4k3/8/8/8/Kr6 w - - 0 1",
            "8/8/8/4k3/8/8/8/KQ6 w - - 0 1",
            "8/8/8/4k3/8/8/8/K1R5 w - - 0 1",
            "8/8/8/8/3Pp3/8/8/K3k3 b - d3 0 1",
            "8/8/8/8/3Pp3/8/8/K3k3 b - - 0 1",
        ];
        let keys: Vec<u128> = fens.iter().map(|f| position_key(&pos(f)).unwrap()).collect();
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // The clock is not part of a position's rebuilt answers.
        assert_eq!(position_key(&pos("8/8/8/4k3/8/8/8/KR6 w - - 37 1")), Some(keys[0]));
    }

    #[test]
    fn only_complete_entries_come_back() {
        let cache = RebuiltCache::<u16>::new(1 << 20);
        let p = pos("8/8/8/4k3/8/8/8/KR6 w - - 0 1");
        assert_eq!(cache.get(&p, What::Wdl), None);
        cache.insert(&p, What::Wdl, 4);
        assert_eq!(cache.get(&p, What::Wdl), Some(4));
        assert_eq!(cache.get(&p, What::Layer(3)), None);
        assert_eq!(cache.stats.hits.load(Ordering::Relaxed), 1);
        assert_eq!(cache.stats.misses.load(Ordering::Relaxed), 2);
        let off = RebuiltCache::<u16>::new(0);
        off.insert(&p, What::Wdl, 4);
        assert_eq!(off.get(&p, What::Wdl), None);
    }
}
