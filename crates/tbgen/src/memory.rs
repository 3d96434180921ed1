//! Large working arrays of the generator.
//!
//! Retrograde analysis reads and writes its per-position arrays (tens of
//! MiB each) at random: with 4 KiB pages nearly every access misses the TLB.
//! Asking the kernel for transparent huge pages on these arrays (Linux;
//! `madvise` mode is the common default) removes most of those misses.

/// A vector of `len` copies of `value`, backed by huge pages where the
/// system offers them (elsewhere an ordinary vector).
pub(crate) fn filled<T: Copy>(len: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    advise_huge_pages(v.as_mut_ptr() as *mut u8, len * size_of::<T>());
    v.resize(len, value);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    // Only whole huge pages inside the allocation; smaller arrays gain nothing.
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + bytes) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside an allocation we own and have not
        // touched yet; MADV_HUGEPAGE only changes how it is backed. Failure
        // (no THP support) leaves ordinary pages, which is fine.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut u8, _bytes: usize) {}

/// The legal positions of a layer, as one bit per index of the layer: an
/// eighth of a byte per index rather than a list's four bytes per legal
/// position (557 MB for KRBvKQ), walked in ascending index order.
pub(crate) struct Members {
    base: usize,
    words: Vec<u64>,
    count: usize,
}

impl Members {
    /// The indexes `base + j` of the layer for which `legal(j)` holds, `j`
    /// below `span`.
    pub fn new(base: usize, span: usize, legal: impl Fn(usize) -> bool) -> Members {
        let mut words = filled(span.div_ceil(64), 0u64);
        let mut count = 0;
        for (w, word) in words.iter_mut().enumerate() {
            for b in 0..64.min(span - 64 * w) {
                if legal(64 * w + b) {
                    *word |= 1 << b;
                    count += 1;
                }
            }
        }
        Members { base, words, count }
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The members, ascending.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let base = self.base;
        self.words.iter().enumerate().flat_map(move |(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let b = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    (base + 64 * w + b) as u32
                })
            })
        })
    }
}
