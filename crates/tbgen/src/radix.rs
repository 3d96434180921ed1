//! Sorting the retrograde passes' work lists by position index.
//!
//! Every distance of every layer sorts its lists of positions (so that
//! un-moves walk memory in order), millions of entries per table; their
//! keys are indexes below the layer's end. A least-significant-digit radix
//! sort does that in two or three linear passes where a comparison sort
//! needs twenty-odd rounds of comparisons.

use std::ops::Range;

/// Widest digit in bits: 4,096 counters, 16 KiB, stay in L1.
const MAX_DIGIT_BITS: u32 = 12;

/// Lists shorter than this are sorted by comparison (the counters of a
/// pass would cost more than the sort).
const SMALL: usize = 1 << 10;

/// Sorts `v` by `key`, stably, where every key is in `keys` (a layer's
/// indexes: two passes up to 2^24 of them). `scratch` is reused between
/// calls (its contents do not matter); `v` and `scratch` may trade buffers.
pub(crate) fn sort_by_index<T: Copy>(
    v: &mut Vec<T>,
    scratch: &mut Vec<T>,
    keys: Range<usize>,
    key: impl Fn(&T) -> u32,
) {
    // One look, which stops at the first key out of order, spares a list
    // in order already its passes: DTM50's losses are found in index order.
    if v.is_sorted_by_key(&key) {
        return;
    }
    if sort_into(v, scratch, keys, key) {
        std::mem::swap(v, scratch);
    }
}

/// Sorts `v` into itself, or after an odd number of passes into `scratch`
/// (then of `v`'s length): true in that case.
fn sort_into<T: Copy>(v: &mut [T], scratch: &mut Vec<T>, keys: Range<usize>, key: impl Fn(&T) -> u32) -> bool {
    debug_assert!(v.iter().all(|e| keys.contains(&(key(e) as usize))), "keys in range");
    if v.len() < SMALL {
        v.sort_by_key(&key);
        return false;
    }
    let digits = Digits::new(&keys);
    // Both buffers hold `v.len()` elements; each pass overwrites all of them.
    scratch.clear();
    scratch.resize(v.len(), v[0]);
    let mut counts = vec![0u32; 1 << digits.bits];
    for pass in 0..digits.passes {
        if pass % 2 == 0 {
            digits.pass(pass, v, scratch, &mut counts, &key);
        } else {
            digits.pass(pass, scratch, v, &mut counts, &key);
        }
    }
    digits.passes % 2 == 1
}

/// How keys in a range are split into digits.
struct Digits {
    /// The smallest key: digits are of the key less this.
    lo: u32,
    /// Bits per digit (at most [`MAX_DIGIT_BITS`]).
    bits: u32,
    /// Digits per key, one pass each, least significant first.
    passes: u32,
}

impl Digits {
    fn new(keys: &Range<usize>) -> Digits {
        let bits = usize::BITS - (keys.len().saturating_sub(1)).leading_zeros();
        let passes = bits.div_ceil(MAX_DIGIT_BITS);
        Digits { lo: keys.start as u32, bits: bits.div_ceil(passes), passes }
    }

    /// One counting pass by digit `pass`, from `src` into `dst`.
    fn pass<T: Copy>(&self, pass: u32, src: &[T], dst: &mut [T], counts: &mut [u32], key: &impl Fn(&T) -> u32) {
        let shift = pass * self.bits;
        let digit = |e: &T| (((key(e) - self.lo) >> shift) & ((1 << self.bits) - 1)) as usize;
        counts.fill(0);
        for e in src {
            counts[digit(e)] += 1;
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for &e in src {
            let d = digit(&e);
            dst[counts[d] as usize] = e;
            counts[d] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal to a stable comparison sort, for lists below and above the
    /// comparison threshold, keys of one, two and three digits, ranges not
    /// starting at 0.
    #[test]
    fn sorts_like_a_stable_sort() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut scratch = Vec::new();
        let cases = [
            (0, 0..1),
            (5, 0..3),
            (1_000, 0..1 << 20),
            (50_000, 7..2_000),
            (50_000, 0..5_000_000),
            (200_000, 3 << 20..(1 << 29) + 5),
        ];
        for (len, keys) in cases {
            let width = (keys.end - keys.start) as u64;
            let mut v: Vec<(u32, u32)> =
                (0..len as u32).map(|i| ((keys.start as u64 + next() % width) as u32, i)).collect();
            let mut expected = v.clone();
            expected.sort_by_key(|e| e.0);
            sort_by_index(&mut v, &mut scratch, keys.clone(), |e| e.0);
            assert_eq!(v, expected, "{len} keys in {keys:?}");
        }
    }
}
