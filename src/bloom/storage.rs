//! The bit array's memory: zeroed, 64-byte aligned words; large arrays on transparent huge pages.
//!
//! A 229 MiB filter (100 M URLs at p = 1e-4) spans 58 k 4-KiB pages, far beyond the TLB's reach,
//! so with ordinary pages every lookup pays a page walk on top of its cache miss. Arrays of 4 MiB
//! and more are therefore mapped anonymously (zero pages until touched, nothing reserved up front)
//! with `MADV_HUGEPAGE`, aligned to 2 MiB; measured in `benches/gate_core.rs`
//! (`bloom/insert_prehashed/large_100M_p1e-4`). Where huge pages are disabled the hint is ignored.

use std::sync::atomic::AtomicU64;

const HUGE: usize = 2 << 20;
const MAP_THRESHOLD: usize = 4 << 20;

/// Zero-initialised atomic words, 64-byte aligned so that a 512-bit block is one cache line.
pub(crate) enum Storage {
    /// From the allocator, with this layout (`len == 0` uses a dangling, aligned pointer).
    Heap {
        words: *mut AtomicU64,
        len: usize,
        layout: std::alloc::Layout,
    },
    #[cfg(unix)]
    Mapped {
        base: *mut libc::c_void,
        map_len: usize,
        words: *mut AtomicU64,
        len: usize,
    },
}

// SAFETY: the mapping is owned exclusively by this value and only accessed through atomics (or
// through `&mut self`), exactly like the `Box<[AtomicU64]>` variant.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    /// `len` zeroed words; `None` when the memory cannot be had (a size no layout or mapping
    /// takes, or the allocator refused it): the caller says so, the process does not abort.
    pub(crate) fn zeroed(len: usize) -> Option<Storage> {
        #[cfg(unix)]
        if len.saturating_mul(8) >= MAP_THRESHOLD {
            if let Some(s) = Self::mapped(len) {
                return Some(s);
            }
        }
        let layout = std::alloc::Layout::from_size_align(len.max(1).checked_mul(8)?, 64).ok()?;
        // SAFETY: the layout has a non-zero size; a null result is handled.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return None;
        }
        Some(Storage::Heap {
            words: ptr as *mut AtomicU64,
            len,
            layout,
        })
    }

    #[cfg(unix)]
    fn mapped(len: usize) -> Option<Storage> {
        let bytes = len.checked_mul(8)?;
        let map_len = bytes.checked_add(HUGE)?;
        // SAFETY: an anonymous private mapping with no address hint; checked for failure.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let aligned = (base as usize).div_ceil(HUGE) * HUGE;
        // SAFETY: `aligned..aligned + bytes` lies inside the mapping (we mapped HUGE extra bytes).
        // The advice is a hint; failure only means ordinary pages.
        unsafe { libc::madvise(aligned as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE) };
        Some(Storage::Mapped {
            base,
            map_len,
            words: aligned as *mut AtomicU64,
            len,
        })
    }

    /// The words, shared.
    #[inline]
    pub(crate) fn words(&self) -> &[AtomicU64] {
        let (words, len) = match self {
            Storage::Heap { words, len, .. } => (*words, *len),
            #[cfg(unix)]
            Storage::Mapped { words, len, .. } => (*words, *len),
        };
        // SAFETY: `words` points to `len` zero-initialised, 64-byte aligned words in memory we
        // own until drop; AtomicU64 is valid for any bit pattern.
        unsafe { std::slice::from_raw_parts(words, len) }
    }

    /// The words as plain integers, for filling from a snapshot before the filter is shared.
    pub(crate) fn as_mut_u64(&mut self) -> &mut [u64] {
        let w: &[AtomicU64] = self.words();
        // SAFETY: `&mut self` guarantees exclusive access; AtomicU64 and u64 have the same size,
        // alignment and bit validity.
        unsafe { std::slice::from_raw_parts_mut(w.as_ptr() as *mut u64, w.len()) }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        match *self {
            // SAFETY: freeing exactly what `alloc_zeroed` gave us, with its layout, once.
            Storage::Heap { words, layout, .. } => unsafe {
                std::alloc::dealloc(words as *mut u8, layout)
            },
            // SAFETY: unmapping exactly the mapping we created, once.
            #[cfg(unix)]
            Storage::Mapped { base, map_len, .. } => unsafe {
                libc::munmap(base, map_len);
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn both_kinds_are_zeroed_writable_and_aligned() {
        for len in [16usize, 1, 1000, (MAP_THRESHOLD / 8) + 3] {
            let mut s = Storage::zeroed(len).unwrap();
            assert_eq!(s.words().len(), len);
            assert!(s.words().iter().all(|w| w.load(Ordering::Relaxed) == 0));
            assert_eq!(s.words().as_ptr() as usize % 64, 0);
            s.words()[len - 1].fetch_or(5, Ordering::Relaxed);
            assert_eq!(s.as_mut_u64()[len - 1], 5);
            s.as_mut_u64()[0] = 9;
            assert_eq!(s.words()[0].load(Ordering::Relaxed), 9);
        }
    }

    #[test]
    fn an_impossible_size_is_none_not_an_abort() {
        assert!(Storage::zeroed(usize::MAX / 4).is_none());
        assert!(Storage::zeroed(usize::MAX).is_none());
    }
}
