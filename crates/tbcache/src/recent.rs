//! The few entries a thread used last, for a `thread_local!` in front of a
//! shared cache: a probe (and the searches and generator runs behind it)
//! mostly stays in a few blocks or files, and a scan of a handful of
//! entries spares it the shared cache's hashing and locking.
//!
//! A `thread_local!` cannot be generic, so each user declares its own,
//! initialised by a `const` block with [`Recent::new`]: such a static needs
//! no check of a lazy-initialisation state on each use, which the warm
//! probe would otherwise pay on every lookup.

/// The last `N` entries remembered, each under its owner (the id of the
/// cache it belongs to, unique in the process, so that threads shared by
/// several caches never mix their entries) and its key; a new entry
/// replaces the oldest.
pub struct Recent<K, V, const N: usize> {
    entries: [Option<(u64, K, V)>; N],
    /// Where the next entry goes.
    next: usize,
}

impl<K: PartialEq, V, const N: usize> Default for Recent<K, V, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: PartialEq, V, const N: usize> Recent<K, V, N> {
    /// An empty ring, usable in a `const` initialiser.
    pub const fn new() -> Self {
        Recent { entries: [const { None }; N], next: 0 }
    }

    /// The value of `owner`'s `key`, if remembered.
    #[inline]
    pub fn find(&self, owner: u64, key: &K) -> Option<&V> {
        self.entries.iter().flatten().find(|(o, k, _)| *o == owner && k == key).map(|(_, _, v)| v)
    }

    /// Remembers `value` in place of the oldest entry.
    #[inline]
    pub fn remember(&mut self, owner: u64, key: K, value: V) {
        self.entries[self.next] = Some((owner, key, value));
        self.next = (self.next + 1) % N;
    }

    /// Forgets `owner`'s `key` (a value no longer to be used).
    pub fn forget(&mut self, owner: u64, key: &K) {
        for e in &mut self.entries {
            if e.as_ref().is_some_and(|(o, k, _)| *o == owner && k == key) {
                *e = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_owner_and_key_and_replaces_the_oldest() {
        let mut r = Recent::<u32, &str, 3>::new();
        assert_eq!(r.find(1, &7), None);
        r.remember(1, 7, "a");
        r.remember(2, 7, "b");
        r.remember(1, 8, "c");
        assert_eq!((r.find(1, &7), r.find(2, &7), r.find(1, &8)), (Some(&"a"), Some(&"b"), Some(&"c")));
        assert_eq!((r.find(2, &8), r.find(3, &7)), (None, None));
        // Full: the next replaces the oldest (1, 7), then (2, 7); a find
        // does not count as a use.
        r.remember(1, 9, "d");
        assert_eq!((r.find(1, &7), r.find(2, &7), r.find(1, &9)), (None, Some(&"b"), Some(&"d")));
        r.remember(2, 9, "e");
        assert_eq!((r.find(2, &7), r.find(1, &8), r.find(2, &9)), (None, Some(&"c"), Some(&"e")));
        r.forget(1, &8);
        assert_eq!((r.find(1, &8), r.find(1, &9), r.find(2, &9)), (None, Some(&"d"), Some(&"e")));
    }

    #[test]
    fn serves_a_const_thread_local() {
        thread_local! {
            static R: std::cell::RefCell<Recent<u8, u16, 2>> = const { std::cell::RefCell::new(Recent::new()) };
        }
        R.with_borrow_mut(|r| r.remember(5, 1, 100));
        assert_eq!(R.with_borrow(|r| r.find(5, &1).copied()), Some(100));
        let other = std::thread::spawn(|| R.with_borrow(|r| r.find(5, &1).copied())).join().unwrap();
        assert_eq!(other, None);
    }
}
