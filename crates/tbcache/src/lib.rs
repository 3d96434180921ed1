//! Caches shared by tbserver's table readers.
//!
//! - [`SetCache`]: a fixed-size, set-associative cache of decoded values
//!   (least recently used out), each set behind its own lock.
//! - [`Recent`]: the few entries one thread used last, kept in a
//!   `thread_local!` in front of a shared cache.
//!
//! Neither type ever hands out a value stored under another key, and
//! neither holds a lock while the caller computes a missing value.

#![warn(missing_docs)]

mod recent;
mod set_cache;

pub use recent::Recent;
pub use set_cache::{SetCache, WAYS};
