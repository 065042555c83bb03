//! The local first tier: an exact, direct-mapped cache of fingerprints Redis confirmed.
//!
//! A Bloom filter here would be cheaper per entry, but its false positives would say "seen" for
//! URLs Redis never got — the tier may only ever answer "seen" for URLs Redis has. So it stores
//! whole 128-bit fingerprints: a hit is exact (up to a 2⁻¹²⁸ collision), a miss just costs the
//! round trip. Hot duplicates (most of a crawl stream) stay resident because every hit is a
//! repeat of a recent insert; a colliding newcomer evicts the older entry.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes every local tier of this process may use together (`redis.local_tier_memory`, set
/// once by the gate, render and serve at start; unlimited until set, as in the CLI). A tier
/// takes the largest power of two of slots that still fits, down to none; its bytes come back
/// when it is dropped. So any number of namespaces and filter clients costs at most this much.
static BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Smallest tier worth having (64 KiB); below it a tier is off.
const MIN_SLOTS: usize = 4096;

/// Set the process's local-tier budget in bytes (tiers made before keep what they took).
pub fn set_budget(bytes: usize) {
    BUDGET.store(bytes, Ordering::SeqCst);
}

/// Bytes of the budget not taken.
pub fn budget_left() -> usize {
    BUDGET.load(Ordering::SeqCst)
}

/// Take up to `want` slots (a power of two) from the budget: the largest power of two that
/// fits, or 0.
fn reserve(want: usize) -> usize {
    let mut n = want;
    while n >= MIN_SLOTS.min(want) && n > 0 {
        let bytes = n * 16;
        let taken = BUDGET.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            left.checked_sub(bytes)
        });
        if taken.is_ok() {
            return n;
        }
        n /= 2;
    }
    0
}

/// Ask the kernel to back `slots` with transparent huge pages where it can (a hint; ignored
/// where THP is off). Every lookup lands on a random slot of a table of up to tens of MiB: with
/// 4 KiB pages nearly each one is a TLB miss as well as a cache miss (the tier's inserts were
/// ~4% of the gate's CPU before).
fn huge_pages(slots: &[u128]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = std::mem::size_of_val(slots);
        if bytes < 2 * HUGE {
            return;
        }
        let start = slots.as_ptr() as usize;
        let page = 4096;
        let aligned = (start + page - 1) & !(page - 1);
        let len = (start + bytes - aligned) & !(page - 1);
        // SAFETY: the range lies inside `slots`' allocation and madvise only advises.
        unsafe {
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
}

/// See the module docs.
pub struct LocalTier {
    slots: Vec<u128>,
    mask: usize,
    len: usize,
}

impl Drop for LocalTier {
    fn drop(&mut self) {
        if !self.slots.is_empty() {
            BUDGET.fetch_add(self.slots.len() * 16, Ordering::SeqCst);
        }
    }
}

impl LocalTier {
    /// A tier of `slots` entries rounded up to a power of two, or fewer when the process's
    /// budget ([`set_budget`]) has less room; 0 disables it.
    pub fn new(slots: usize) -> LocalTier {
        let n = if slots == 0 {
            0
        } else {
            reserve(slots.next_power_of_two())
        };
        let slots = vec![0; n];
        huge_pages(&slots);
        LocalTier {
            slots,
            mask: n.saturating_sub(1),
            len: 0,
        }
    }

    /// Slots this tier has (after the budget).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn slot(&self, fp: u128) -> usize {
        (fp as u64 as usize) & self.mask
    }

    /// Whether Redis confirmed `fp` (as far as this tier remembers).
    #[inline]
    pub fn contains(&self, fp: u128) -> bool {
        !self.slots.is_empty() && fp != 0 && self.slots[self.slot(fp)] == fp
    }

    /// Remember that Redis holds `fp`.
    #[inline]
    pub fn insert(&mut self, fp: u128) {
        if self.slots.is_empty() || fp == 0 {
            return;
        }
        let i = self.slot(fp);
        if self.slots[i] == 0 {
            self.len += 1;
        }
        self.slots[i] = fp;
    }

    /// Forget `fp` (its URL was taken back out of the filter).
    #[inline]
    pub fn remove(&mut self, fp: u128) {
        if self.contains(fp) {
            let i = self.slot(fp);
            self.slots[i] = 0;
            self.len -= 1;
        }
    }

    /// Forget everything (Redis restarted, the namespace was replaced or a generation retired).
    pub fn clear(&mut self) {
        if self.len > 0 {
            self.slots.fill(0);
            self.len = 0;
        }
    }

    /// Occupied slots.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_hits_only() {
        let mut t = LocalTier::new(1000);
        assert_eq!(t.slots.len(), 1024);
        t.insert(5);
        assert!(t.contains(5));
        // Same slot, different fingerprint: never a hit.
        assert!(!t.contains(5 + (1u128 << 64)));
        t.insert(5 + 1024);
        assert!(!t.contains(5), "evicted by a collider");
        assert!(t.contains(5 + 1024));
        t.clear();
        assert!(t.is_empty() && !t.contains(5 + 1024));
        let off = LocalTier::new(0);
        assert!(!off.contains(5));
    }
}
