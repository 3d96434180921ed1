//! The cache hit path's front: answers by the request's raw path and query,
//! so that a request asked before is answered without parsing its query or
//! its FEN, normalizing it, or the response cache's bookkeeping (together
//! most of a hit's own cost: see `scripts/bench-cache-hit.sh`).
//! Entries share their bytes with the response cache. Bounded: a shard that
//! fills is emptied, and the response cache behind it answers the next ask.

use std::{hash::BuildHasher, sync::RwLock};

use rustc_hash::{FxBuildHasher, FxHashMap};

use axum::response::Response;

use super::{Encoded, Format};

const SHARDS: usize = 16;

/// Answers by path and query, each with the generation it was computed on.
type Shard = RwLock<FxHashMap<Box<str>, (u64, Encoded)>>;

pub(crate) struct HotAnswers {
    shards: [Shard; SHARDS],
    per_shard: usize,
}

impl HotAnswers {
    /// About `entries` answers in all.
    pub fn new(entries: u64) -> HotAnswers {
        HotAnswers {
            shards: std::array::from_fn(|_| RwLock::default()),
            per_shard: (usize::try_from(entries).unwrap_or(usize::MAX) / SHARDS).max(1),
        }
    }

    fn shard(&self, path_and_query: &str) -> &Shard {
        // Fx's low bits are its weakest.
        &self.shards[(FxBuildHasher.hash_one(path_and_query) >> 32) as usize % SHARDS]
    }

    /// The response stored for this request under `generation`, in
    /// `format` (answers of an earlier index, before a rescan, are never
    /// returned).
    pub(crate) fn get(&self, path_and_query: &str, generation: u64, format: Format) -> Option<Response> {
        let shard = self.shard(path_and_query).read().unwrap_or_else(|e| e.into_inner());
        shard.get(path_and_query).filter(|(g, _)| *g == generation).map(|(_, encoded)| encoded.response(format))
    }

    pub(crate) fn insert(&self, path_and_query: &str, generation: u64, encoded: Encoded) {
        let mut shard = self.shard(path_and_query).write().unwrap_or_else(|e| e.into_inner());
        if shard.len() >= self.per_shard && !shard.contains_key(path_and_query) {
            shard.clear();
        }
        shard.insert(path_and_query.into(), (generation, encoded));
    }

    pub(crate) fn clear(&self) {
        for shard in &self.shards {
            shard.write().unwrap_or_else(|e| e.into_inner()).clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_generation_checked() {
        let hot = HotAnswers::new(32);
        let answer = Encoded::new(&1);
        for i in 0..1000 {
            hot.insert(&format!("/standard?fen={i}"), 0, answer.clone());
        }
        let held: usize = hot.shards.iter().map(|s| s.read().unwrap().len()).sum();
        assert!(held <= 32, "{held} entries held");
        hot.insert("/standard?fen=x", 0, answer.clone());
        assert!(hot.get("/standard?fen=x", 0, Format::Json).is_some());
        assert!(hot.get("/standard?fen=x", 1, Format::Json).is_none(), "an answer from before a rescan");
        hot.clear();
        assert!(hot.get("/standard?fen=x", 0, Format::Json).is_none());
    }
}
