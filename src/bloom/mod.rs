//! Bloom filters: sizing ([`math`]), the in-process filter ([`BloomFilter`], `local.rs`, on
//! `storage.rs`' huge-page memory) and its snapshot files ([`snapshot`]).
//!
//! Every filter works on the 128-bit [`fingerprint`] of a canonical URL, so the layers above
//! (the gate, the Redis filter, the exact-confirm store) hash a URL once.
//!
//! Owns: Bloom sizing, the in-process filter, snapshot files. Layer 1 (pure): imports nothing of
//! the crate.

mod local;
pub mod math;
pub mod snapshot;
mod storage;

pub use local::{fingerprint, BloomFilter, BloomParams, BloomStats};

/// What can go wrong with a filter; each variant says what to do in its message.
#[derive(Debug, thiserror::Error)]
pub enum BloomError {
    /// Bad sizing parameters (fix the capacity or FP rate).
    #[error("bad Bloom filter parameters: {0}")]
    Params(String),
    /// A snapshot file is not one this build can trust (restore another copy or start fresh).
    #[error("bad Bloom snapshot: {0}")]
    Snapshot(String),
    /// Reading or writing a snapshot failed.
    #[error("snapshot I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// Batched check-and-set, through shared (`&BloomFilter`, atomic) or exclusive
/// (`&mut BloomFilter`, plain) access: the sieve is generic over it.
/// The Redis filter implements it too (fallibly).
pub trait CheckAndSet {
    /// Why a batch could not be decided (`Infallible` for in-process filters).
    type Error;
    /// `out[i]` = whether `fps[i]` was new; every key is set.
    fn check_and_set_batch(&mut self, fps: &[u128], out: &mut Vec<bool>)
        -> Result<(), Self::Error>;
}

impl CheckAndSet for &BloomFilter {
    type Error = std::convert::Infallible;
    fn check_and_set_batch(
        &mut self,
        fps: &[u128],
        out: &mut Vec<bool>,
    ) -> Result<(), Self::Error> {
        self.insert_batch(fps, out);
        Ok(())
    }
}

impl CheckAndSet for &mut BloomFilter {
    type Error = std::convert::Infallible;
    fn check_and_set_batch(
        &mut self,
        fps: &[u128],
        out: &mut Vec<bool>,
    ) -> Result<(), Self::Error> {
        self.insert_batch_mut(fps, out);
        Ok(())
    }
}
