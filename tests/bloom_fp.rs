//! The measured false-positive rate of a filter filled to capacity stays within [0.8p, 1.25p].
//! (The benchmark measures p = 1e-4 on 10 M fresh URLs in release mode; here p = 1e-2 and 1e-3
//! with enough queries for the bound to be many standard deviations wide.)

use crawlsieve::bloom::{fingerprint, BloomFilter};

fn measured_fp(n: u64, p: f64, queries: u64) -> f64 {
    let f = BloomFilter::with_capacity(n, p).unwrap();
    for i in 0..n {
        f.insert(fingerprint(
            format!("https://example.com/item/{i}").as_bytes(),
        ));
    }
    let hits = (0..queries)
        .filter(|i| {
            f.contains(fingerprint(
                format!("https://other.example.org/x/{i}?q=1").as_bytes(),
            ))
        })
        .count();
    hits as f64 / queries as f64
}

#[test]
fn fp_rate_within_band_at_one_percent() {
    let fp = measured_fp(200_000, 0.01, 400_000); // ~4000 expected hits, σ ≈ 63
    assert!((0.008..=0.0125).contains(&fp), "measured {fp}");
}

#[test]
fn fp_rate_within_band_at_one_per_mille() {
    let fp = measured_fp(300_000, 0.001, 2_000_000); // ~2000 expected hits, σ ≈ 45
    assert!((0.0008..=0.00125).contains(&fp), "measured {fp}");
}
