//! Answers rebuilt by a one-ply search, remembered.
//!
//! chesstb's `shrink` drops one side to move from most files; a probe of
//! that side searches its ~30 children, each a stored probe, several times
//! the cost of reading the answer back from here (`cargo bench --bench
//! chesstb`, docs/performance.md). The answer depends on the
//! position alone, so it is kept here under a key that *is* the position
//! (two positions never share an entry), beside the decoded blocks and
//! bounded like them.
//!
//! Only complete answers are kept: a rebuild cut short by the depth limit
//! or the rebuild budget answers "unknown", and a later probe with budget
//! to spare must be free to find the real value.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use shakmaty::{Chess, EnPassantMode, Position};

use tbcache::SetCache;

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

/// Hit and miss counts, for `/prometheus`.
#[derive(Debug, Default)]
pub struct RebuiltStats {
    /// Lookups answered from the cache.
    pub hits: AtomicU64,
    /// Lookups that searched.
    pub misses: AtomicU64,
}

/// Rebuilt answers of type `V` (the prober's), by position and [`What`],
/// in a [`SetCache`]: a key is the whole position, so no answer is ever
/// given for another one.
pub(super) struct RebuiltCache<V> {
    /// Empty: keep nothing (a budget under one set).
    answers: SetCache<Key, V>,
    pub stats: Arc<RebuiltStats>,
}

impl<V: Clone> RebuiltCache<V> {
    /// A cache of at most `max_bytes`, counting each set's whole size.
    pub fn new(max_bytes: u64) -> RebuiltCache<V> {
        RebuiltCache { answers: SetCache::with_max_bytes(max_bytes), stats: Arc::default() }
    }

    pub(crate) fn get(&self, pos: &Chess, what: What) -> Option<V> {
        if self.answers.is_empty() {
            return None;
        }
        let key = Key { position: position_key(pos)?, what };
        let hit = self.answers.get(&key);
        let counter = if hit.is_some() { &self.stats.hits } else { &self.stats.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        hit
    }

    pub(crate) fn insert(&self, pos: &Chess, what: What, value: V) {
        if self.answers.is_empty() {
            return;
        }
        let Some(position) = position_key(pos) else { return };
        // Two threads may rebuild the same answer at once: the second
        // replaces the first.
        self.answers.insert(Key { position, what }, value);
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

    /// Five positions in a cache of one set: the least recently used of the
    /// first four gives way to the fifth, a read counting as a use.
    #[test]
    fn a_full_set_drops_its_least_recently_used_answer() {
        let one_set = SetCache::<Key, u16>::SET_BYTES;
        let cache = RebuiltCache::<u16>::new(one_set);
        assert_eq!(cache.answers.sets(), 1);
        let fens = [
            "7k/8/8/8/8/8/8/KR6",
            "7k/8/8/8/8/8/8/K1R5",
            "7k/8/8/8/8/8/8/K2R4",
            "7k/8/8/8/8/8/8/K3R3",
            "7k/8/8/8/8/8/8/K4R2",
        ];
        let ps: Vec<Chess> = fens.iter().map(|f| pos(&format!("{f} w - - 0 1"))).collect();
        for (i, p) in ps[..4].iter().enumerate() {
            cache.insert(p, What::Dtm, i as u16);
        }
        assert_eq!(cache.get(&ps[0], What::Dtm), Some(0));
        cache.insert(&ps[4], What::Dtm, 4);
        let kept: Vec<Option<u16>> = ps.iter().map(|p| cache.get(p, What::Dtm)).collect();
        assert_eq!(kept, [Some(0), None, Some(2), Some(3), Some(4)]);
        // Inserting a key again replaces its entry rather than taking a way.
        cache.insert(&ps[4], What::Dtm, 40);
        assert_eq!(
            ps.iter().map(|p| cache.get(p, What::Dtm)).collect::<Vec<_>>(),
            [Some(0), None, Some(2), Some(3), Some(40)]
        );
        // A budget under one set keeps nothing.
        assert!(RebuiltCache::<u16>::new(one_set - 1).answers.is_empty());
    }

    /// Threads inserting and reading the same keys at once, in a cache
    /// too small for them all, only ever read back the value of the key
    /// they asked for.
    #[test]
    fn concurrent_use_reads_back_only_its_own_answers() {
        use shakmaty::{Board, Color, Piece, Role, Square};
        // A rook on each square of ranks 2-7 off the h-file, the kings on
        // a1 and h8: 42 positions, each its own key; value = the rook's
        // square.
        let ps: Vec<(Chess, u32)> = (8..56u32)
            .filter(|sq| sq % 8 != 7)
            .map(|sq| {
                let mut board = Board::empty();
                board.set_piece_at(Square::A1, Piece { color: Color::White, role: Role::King });
                board.set_piece_at(Square::H8, Piece { color: Color::Black, role: Role::King });
                board.set_piece_at(Square::new(sq), Piece { color: Color::White, role: Role::Rook });
                let fen = format!("{board} w - - 0 1");
                (pos(&fen), sq)
            })
            .collect();
        let set_bytes = SetCache::<Key, u32>::SET_BYTES;
        let cache = RebuiltCache::<u32>::new(4 * set_bytes);
        let (wrong, reads) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|scope| {
            for t in 0..4 {
                let (cache, ps, wrong, reads) = (&cache, &ps, &wrong, &reads);
                scope.spawn(move || {
                    for round in 0..200 {
                        for (i, (p, v)) in ps.iter().enumerate() {
                            if (i + t + round) % 3 == 0 {
                                cache.insert(p, What::Dtm, *v);
                            } else {
                                reads.fetch_add(1, Ordering::Relaxed);
                                if cache.get(p, What::Dtm).is_some_and(|got| got != *v) {
                                    wrong.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(wrong.load(Ordering::Relaxed), 0);
        let (hits, misses) = (cache.stats.hits.load(Ordering::Relaxed), cache.stats.misses.load(Ordering::Relaxed));
        // 16 ways for 42 keys: some reads hit, some miss.
        assert!(hits > 0 && misses > 0, "{hits} hits, {misses} misses");
        assert_eq!(hits + misses, reads.load(Ordering::Relaxed));
    }
}
