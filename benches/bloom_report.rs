//! The Bloom filter's end-to-end figures, printed as a table (not criterion: these are one-shot
//! measurements over 10 M URLs). Run: `cargo bench --bench bloom_report` (part of scripts/bench.sh).
//!
//! * sizing: bits and bytes vs the formula, and 100 M URLs at p = 1e-4;
//! * measured FP rate: a filter for 10 M URLs filled with 10 M URLs, queried with 10 M fresh URLs;
//! * check-and-set throughput of pre-hashed keys, shared (atomic) and exclusive paths;
//! * beside it, an exact `HashSet<u128>` of fingerprints: time and resident bytes per URL.

use std::collections::HashSet;
use std::hint::black_box;
use std::time::Instant;

use crawlsieve::bloom::{fingerprint, math, BloomFilter, BloomParams};

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn url(i: u64) -> String {
    format!(
        "https://host{}.example.com/product/{}?id={}",
        i % 60_000,
        i,
        i.wrapping_mul(2_654_435_761) % 1_000_003
    )
}

fn fresh(i: u64) -> String {
    format!("http://other{}.example.org/a/{}/b", i % 977, i)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` asks every bench target for its list
    }
    const N: u64 = 10_000_000;
    println!("== sizing (seed 002 formula: m = -n ln p / (ln 2)^2, k = m/n ln 2)");
    println!(
        "{:>12} {:>8} {:>14} {:>14} {:>7} {:>4} {:>12}",
        "n", "p", "m formula", "m actual", "diff", "k", "bytes"
    );
    for (n, p) in [
        (1_000_000u64, 1e-2),
        (10_000_000, 1e-3),
        (10_000_000, 1e-4),
        (100_000_000, 1e-4),
        (1_000_000_000, 1e-6),
    ] {
        let params = BloomParams::new(n, p).unwrap();
        let f = math::optimal_bits(n, p);
        println!(
            "{:>12} {:>8.0e} {:>14.0} {:>14} {:>6.3}% {:>4} {:>12}",
            n,
            p,
            f,
            params.bits(),
            (params.bits() as f64 / f - 1.0) * 100.0,
            params.k,
            params.bytes()
        );
    }

    println!("\n== measured false-positive rate: filter for {N} URLs, filled with {N}, queried with {N} fresh URLs");
    println!(
        "{:>8} {:>12} {:>12} {:>10} {:>14} {:>14}",
        "p", "hits", "measured", "ratio", "fill", "estimated"
    );
    for p in [1e-2, 1e-3, 1e-4] {
        let mut f = BloomFilter::with_capacity(N, p).unwrap();
        let mut out = Vec::new();
        let mut batch = Vec::with_capacity(4096);
        for i in 0..N {
            batch.push(fingerprint(url(i).as_bytes()));
            if batch.len() == 4096 {
                f.insert_batch_mut(&batch, &mut out);
                batch.clear();
            }
        }
        f.insert_batch_mut(&batch, &mut out);
        let hits = (0..N)
            .filter(|&i| f.contains(fingerprint(fresh(i).as_bytes())))
            .count();
        let measured = hits as f64 / N as f64;
        let s = f.stats();
        println!(
            "{:>8.0e} {:>12} {:>12.3e} {:>9.3}x {:>14.4} {:>14.3e}",
            p,
            hits,
            measured,
            measured / p,
            s.fill_ratio,
            s.estimated_fp
        );
    }

    println!("\n== check-and-set of {N} pre-hashed fresh keys into a filter for 100 M URLs at p = 1e-4 (half full)");
    let fps: Vec<u128> = (0..N)
        .map(|i| fingerprint(&(i + (1 << 40)).to_le_bytes()))
        .collect();
    let prefill: Vec<u128> = (0..50_000_000u64)
        .map(|i| fingerprint(&i.to_le_bytes()))
        .collect();
    for exclusive in [false, true] {
        let mut f = BloomFilter::with_capacity(100_000_000, 1e-4).unwrap();
        let mut out = Vec::new();
        for c in prefill.chunks(1 << 16) {
            f.insert_batch_mut(c, &mut out);
        }
        let t = Instant::now();
        for c in fps.chunks(4096) {
            if exclusive {
                f.insert_batch_mut(c, &mut out);
            } else {
                f.insert_batch(c, &mut out);
            }
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{:<28} {:>8.2} M/s  {:>6.1} ns/key  ({} bytes, {:.2} bytes/URL at capacity)",
            if exclusive {
                "bloom, exclusive (&mut)"
            } else {
                "bloom, shared (atomic)"
            },
            N as f64 / secs / 1e6,
            secs * 1e9 / N as f64,
            f.params().bytes(),
            f.params().bytes() as f64 / 1e8
        );
        black_box(&out);
    }
    drop(prefill);

    println!("\n== exact alternative: HashSet<u128> of the same {N} fingerprints");
    let before = rss_bytes();
    let t = Instant::now();
    let mut set: HashSet<u128> = HashSet::new();
    let mut new = 0u64;
    for &fp in &fps {
        new += u64::from(set.insert(fp));
    }
    let secs = t.elapsed().as_secs_f64();
    let after = rss_bytes();
    println!(
        "{:<28} {:>8.2} M/s  {:>6.1} ns/key  ({} resident bytes, {:.1} bytes/URL)",
        "HashSet<u128>",
        N as f64 / secs / 1e6,
        secs * 1e9 / N as f64,
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / new as f64
    );
    let p4 = BloomParams::new(N, 1e-4).unwrap();
    println!(
        "{:<28} {:>23} ({:.2} bytes/URL)",
        "bloom p=1e-4 for the same N",
        "",
        p4.bytes() as f64 / N as f64
    );
}
