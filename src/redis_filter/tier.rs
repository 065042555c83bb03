//! The local first tier: an exact, direct-mapped cache of fingerprints Redis confirmed.
//!
//! A Bloom filter here would be cheaper per entry, but its false positives would say "seen" for
//! URLs Redis never got — the tier may only ever answer "seen" for URLs Redis has. So it stores
//! whole 128-bit fingerprints: a hit is exact (up to a 2⁻¹²⁸ collision), a miss just costs the
//! round trip. Hot duplicates (most of a crawl stream) stay resident because every hit is a
//! repeat of a recent insert; a colliding newcomer evicts the older entry.

/// See the module docs.
pub struct LocalTier {
    slots: Vec<u128>,
    mask: usize,
    len: usize,
}

impl LocalTier {
    /// A tier of `slots` entries rounded up to a power of two; 0 disables it.
    pub fn new(slots: usize) -> LocalTier {
        let n = if slots == 0 {
            0
        } else {
            slots.next_power_of_two()
        };
        LocalTier {
            slots: vec![0; n],
            mask: n.saturating_sub(1),
            len: 0,
        }
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
