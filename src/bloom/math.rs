//! Bloom filter sizing (seed 002): m = −n·ln p / (ln 2)², k = (m/n)·ln 2, p ≈ (1 − e^(−k·n/m))^k.

use std::f64::consts::LN_2;

/// Bits in one block: one 64-byte cache line.
pub const BLOCK_BITS: u64 = 512;
/// Most bits a key sets in one block. With at most 4 bits per cache line the block-load variance
/// costs ~1.05× the textbook FP rate at p = 1e-4 (one 512-bit block for all 13 bits would cost
/// 2.8×); see `DESIGN` in the module docs of [`super`].
pub const MAX_BITS_PER_BLOCK: u32 = 4;
/// Largest k accepted (p = 1e-19 needs 63).
pub const MAX_K: u32 = 64;

/// Optimal number of bits for `n` items at false-positive rate `p` (not rounded to blocks).
pub fn optimal_bits(n: u64, p: f64) -> f64 {
    -(n as f64) * p.ln() / (LN_2 * LN_2)
}

/// Optimal number of hash functions for `m` bits and `n` items, at least 1.
pub fn optimal_k(m: u64, n: u64) -> u32 {
    (((m as f64) / (n as f64)) * LN_2)
        .round()
        .clamp(1.0, MAX_K as f64) as u32
}

/// Textbook false-positive rate of a filter of `m` bits with `k` functions after `n` insertions.
pub fn expected_fp(m: u64, n: u64, k: u32) -> f64 {
    (1.0 - (-(k as f64) * (n as f64) / (m as f64)).exp()).powi(k as i32)
}

/// Number of cache-line blocks a key touches.
pub fn groups(k: u32) -> u32 {
    k.div_ceil(MAX_BITS_PER_BLOCK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_formulas() {
        // n = 1e6, p = 1% → m ≈ 9.585 Mbit, k = 7.
        let m = optimal_bits(1_000_000, 0.01);
        assert!((m - 9_585_058.4).abs() < 1.0, "{m}");
        assert_eq!(optimal_k(m as u64, 1_000_000), 7);
        let p = expected_fp(m as u64, 1_000_000, 7);
        assert!((p - 0.01).abs() < 0.0002, "{p}");
        assert_eq!(
            optimal_k(optimal_bits(1, 1e-4) as u64 * 1_000_000, 1_000_000),
            13
        );
        assert_eq!(groups(13), 4);
        assert_eq!(groups(7), 2);
        assert_eq!(groups(1), 1);
    }
}
