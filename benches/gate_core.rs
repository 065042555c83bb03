//! Criterion benchmarks of the gate's hot paths, on real and realistic data:
//!
//! * `validator/corpus` — `Validator::check` over the real 1.29 M-line candidate corpus
//!   (`../shared/data/urls/candidates.txt.xz`); target ≤ 150 ns per candidate.
//! * `validator/corpus_js` — the same with `Context::Js` (the JavaScript rules too); target
//!   ≤ 1.5 × `corpus`.
//! * `canonicalize/stream` — `Canonicalizer::canonicalize_into` over 100 k lines of
//!   `gen_stream.py --seed 42`.
//! * `sieve/stream` — validate + canonicalize + check-and-set, batched, per line.
//! * `bloom/insert_prehashed` — check-and-set of pre-hashed keys (target ≥ 20 M/s), for a small
//!   (L2-sized) and a large (100 M URLs at p = 1e-4, 229 MiB) filter, beside `HashSet<u128>`.
//!
//! Run: `cargo bench --bench gate_core` (inputs are read from ../shared; see scripts/bench.sh for
//! the end-to-end figures). Throughput is reported in elements/s; ns per element = 1e9 / that.

use std::collections::HashSet;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crawlsieve::bloom::{fingerprint, BloomFilter, CheckAndSet};
use crawlsieve::sieve::{BatchResult, Sieve};
use crawlsieve::url::{Canonicalizer, Context, Validator};
use criterion::{criterion_group, criterion_main, BatchSize, Bencher, Criterion, Throughput};

fn shared(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(rel)
}

/// The real candidate corpus, decompressed with the `xz` tool.
fn corpus() -> Vec<Vec<u8>> {
    let out = Command::new("xz")
        .arg("-dc")
        .arg(shared("data/urls/candidates.txt.xz"))
        .output()
        .expect("xz -dc on the corpus (apt-get install xz-utils)");
    assert!(out.status.success(), "xz failed");
    out.stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Lines of gen_stream.py (deterministic).
fn stream(n: usize) -> Vec<Vec<u8>> {
    let out = Command::new("python3")
        .arg(shared("tools/gen_stream.py"))
        .args(["--n", &n.to_string(), "--seed", "42"])
        .output()
        .expect("python3 gen_stream.py");
    out.stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Pseudo-random fingerprints (splitmix64), distinct from any URL's.
fn random_fps(n: usize, seed: u64) -> Vec<u128> {
    let mut x = seed;
    let mut next = || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|_| (u128::from(next()) << 64) | u128::from(next()))
        .collect()
}

fn validator(c: &mut Criterion) {
    let lines = corpus();
    let v = Validator::default();
    let mut g = c.benchmark_group("validator");
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.sample_size(10);
    g.bench_function("corpus", |b| {
        b.iter(|| {
            let mut kept = 0usize;
            for l in &lines {
                kept += usize::from(v.check_bytes(l).is_ok());
            }
            black_box(kept)
        })
    });
    // The same corpus judged as JavaScript strings (issue 17: at most 1.5x `corpus`).
    g.bench_function("corpus_js", |b| {
        b.iter(|| {
            let mut kept = 0usize;
            for l in &lines {
                kept += usize::from(v.check_bytes_in(l, Context::Js).is_ok());
            }
            black_box(kept)
        })
    });
    g.finish();
}

fn canonicalize(c: &mut Criterion) {
    let lines = stream(100_000);
    let strs: Vec<&str> = lines
        .iter()
        .map(|l| std::str::from_utf8(l).unwrap())
        .collect();
    let k = Canonicalizer::default();
    let mut g = c.benchmark_group("canonicalize");
    g.throughput(Throughput::Elements(strs.len() as u64));
    g.sample_size(10);
    g.bench_function("stream", |b| {
        let mut buf = String::new();
        b.iter(|| {
            for s in &strs {
                let _ = black_box(k.canonicalize_into(s, None, &mut buf));
            }
        })
    });
    g.finish();
}

fn sieve(c: &mut Criterion) {
    let lines = stream(100_000);
    let mut g = c.benchmark_group("sieve");
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.sample_size(10);
    g.bench_function("stream", |b| {
        let mut s = Sieve::new(Validator::default(), Canonicalizer::default(), None);
        let mut res = BatchResult::default();
        b.iter_batched(
            || BloomFilter::with_capacity(10_000_000, 1e-4).unwrap(),
            |mut f| {
                for chunk in lines.chunks(512) {
                    let _ =
                        s.process_batch(chunk.iter().map(|l| (&l[..], false)), &mut f, &mut res);
                }
                black_box(f.items())
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// Keys per measured batch in the Bloom benches.
const BATCH: usize = 1 << 20;

/// A filter for `n` keys at `p`, half full: a filter is on average half full over its life.
/// (Filled through the exclusive path; the shared path sets the same bits, see the unit tests.)
fn half_full(n: u64, p: f64) -> BloomFilter {
    let mut f = BloomFilter::with_capacity(n, p).unwrap();
    let mut out = Vec::new();
    for chunk in random_fps((n / 2) as usize, 1).chunks(BATCH) {
        f.insert_batch_mut(chunk, &mut out);
    }
    f
}

/// Check-and-set of a fresh batch of pre-hashed keys per iteration, through either access path.
fn bench_insert(b: &mut Bencher, round: &mut u64, mut filter: impl CheckAndSet) {
    let mut out = Vec::new();
    b.iter_batched(
        || {
            *round += 1;
            random_fps(BATCH, 1_000 + *round)
        },
        |fps| {
            let _ = filter.check_and_set_batch(&fps, &mut out);
            black_box(out.len())
        },
        BatchSize::PerIteration,
    )
}

fn bloom(c: &mut Criterion) {
    let mut g = c.benchmark_group("bloom");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.sample_size(10);
    for (name, n, p) in [
        ("small_1M_p1e-2", 1_000_000u64, 1e-2),
        ("large_100M_p1e-4", 100_000_000, 1e-4),
    ] {
        // Built on first use only (a filtered run skips the 229 MiB fill).
        let filter: OnceLock<BloomFilter> = OnceLock::new();
        let get = || filter.get_or_init(|| half_full(n, p));
        let mut round = 0u64;
        g.bench_function(format!("insert_prehashed/{name}"), |b| {
            bench_insert(b, &mut round, get())
        });
        let mut excl: Option<BloomFilter> = None;
        g.bench_function(format!("insert_prehashed_exclusive/{name}"), |b| {
            bench_insert(b, &mut round, excl.get_or_insert_with(|| half_full(n, p)))
        });
        drop(excl);
        g.bench_function(format!("contains_prehashed/{name}"), |b| {
            let f = get();
            let fps = random_fps(BATCH, 7);
            b.iter(|| fps.iter().filter(|&&x| f.contains(x)).count())
        });
    }
    // The exact alternative: a HashSet of 16-byte fingerprints, half full at 1 M.
    let mut round = 0u64;
    g.bench_function("insert_prehashed/hashset_u128_1M", |b| {
        let mut set: HashSet<u128> = HashSet::with_capacity(1_000_000);
        set.extend(random_fps(500_000, 1));
        b.iter_batched(
            || {
                round += 1;
                (set.clone(), random_fps(BATCH, 1_000 + round))
            },
            |(mut s, fps)| {
                let mut new = 0usize;
                for x in fps {
                    new += usize::from(s.insert(x));
                }
                black_box(new)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    // Fingerprinting itself (xxh3-128 of a typical URL).
    let mut g = c.benchmark_group("fingerprint");
    let urls = stream(10_000);
    g.throughput(Throughput::Elements(urls.len() as u64));
    g.bench_function("xxh3_128", |b| {
        b.iter(|| {
            urls.iter()
                .map(|u| fingerprint(u) as u64)
                .fold(0u64, u64::wrapping_add)
        })
    });
    g.finish();
}

criterion_group!(benches, validator, canonicalize, sieve, bloom);
criterion_main!(benches);
