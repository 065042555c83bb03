//! Page features on real HTML, and near-duplicate clustering at scale.
//!
//! * `features/python-doc` (criterion) — [`crawlsieve::page::features::extract`] over the HTML
//!   of Debian's python3.11-doc (530 pages, ~50 MB; `scripts/bench-page.sh` fetches it);
//!   throughput in bytes/s, target ≥ 25 MB/s per core.
//! * `cluster/1M` (run once, printed) — 1 M synthetic feature records (100 hosts; SimHashes with
//!   planted near-duplicate groups at distance 1–3; text lengths spread across 1000-character
//!   boundaries) through [`crawlsieve::page::cluster::cluster`], beside the reference's approach
//!   (buckets by host + top 16 SimHash bits + text length / 1000, all pairs compared inside a
//!   bucket) in the same run: seconds, and recall of the planted pairs (a pair is found when
//!   both pages end in one cluster). Target < 60 s on one core, recall 100%.
//!
//! Run: `scripts/bench-page.sh` (or `PAGE_HTML_DIR=… cargo bench --bench page`).

use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use crawlsieve::page::cluster::cluster;
use crawlsieve::page::similarity::{compare, Thresholds};
use crawlsieve::page::{features, Features, Page};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn html_files() -> Vec<String> {
    let dir = std::env::var("PAGE_HTML_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/bench-data/pydoc/usr/share/doc/python3.11/html")
        });
    let mut out = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "html") {
                if let Ok(s) = std::fs::read_to_string(&p) {
                    out.push(s);
                }
            }
        }
    }
    assert!(
        !out.is_empty(),
        "no HTML under {} (scripts/bench-page.sh fetches python3.11-doc)",
        dir.display()
    );
    out
}

fn bench_features(c: &mut Criterion) {
    let pages = html_files();
    let bytes: usize = pages.iter().map(String::len).sum();
    let mut g = c.benchmark_group("features");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("python-doc", |b| {
        b.iter(|| {
            for p in &pages {
                black_box(features::extract(p));
            }
        })
    });
    g.finish();
}

/// xorshift64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `n` synthetic pages in groups of 1–4 near-duplicates; returns the pages and the planted
/// pairs (index pairs that must end in one cluster).
fn synthetic(n: usize) -> (Vec<Page>, Vec<(usize, usize)>) {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let template = features::extract(&format!(
        "<html><body><div><article>{}</article></div></body></html>",
        "<p>text</p>".repeat(30)
    ));
    let mut pages = Vec::with_capacity(n);
    let mut pairs = Vec::new();
    while pages.len() < n {
        let host = rng.next() % 100;
        let base = rng.next();
        let len = 1500 + (rng.next() % 2000) as usize;
        let group = 1 + (rng.next() % 4) as usize;
        let first = pages.len();
        // Every two members of a group are within distance 3: a pair differs by 1–3 bits, a
        // larger group by one distinct bit per member (so any canonical can take all).
        let pair_flips = 1 + rng.next() % 3;
        for g in 0..group.min(n - pages.len()) {
            let mut h = base;
            if g > 0 && group == 2 {
                let mut flipped = 0;
                while flipped < pair_flips {
                    let b = 1u64 << (rng.next() % 64);
                    if (h ^ base) & b == 0 {
                        h ^= b;
                        flipped += 1;
                    }
                }
            } else if g > 0 {
                h ^= 1 << ((base % 64 + 7 * g as u64) % 64);
            }
            let mut f: Features = template.clone();
            f.simhash = h;
            f.html_bytes = 20_000; // eligible: not thin
            f.visible_fp = rng.next();
            // Near-duplicates differ a little in length, across 1000-character edges too.
            f.text_chars = len + (rng.next() % 40) as usize;
            let url = format!("https://h{host}.example/p/{}", pages.len());
            pages.push(Page {
                url: url.clone(),
                final_url: url,
                status: 200,
                content_type: "text/html".into(),
                redirect_chain: Vec::new(),
                features: f,
            });
            if g > 0 {
                pairs.push((first, pages.len() - 1));
            }
        }
    }
    (pages, pairs)
}

/// The reference: bucket by host + top 16 bits + length/1000; compare every pair in a bucket;
/// union the duplicates. Returns a cluster label per page.
fn reference(pages: &[Page], t: &Thresholds) -> Vec<usize> {
    let mut buckets: HashMap<(std::borrow::Cow<str>, u64, usize), Vec<usize>> = HashMap::new();
    for (i, p) in pages.iter().enumerate() {
        let host = crawlsieve::url::lex::origin(&p.final_url);
        buckets
            .entry((host, p.features.simhash >> 48, p.features.text_chars / 1000))
            .or_default()
            .push(i);
    }
    // The same canonical-centred assignment as crawlsieve's, with every pair of a bucket as
    // candidates (the reference's O(n²) per bucket): only the candidate generation differs.
    let mut label: Vec<usize> = (0..pages.len()).collect();
    for members in buckets.values() {
        let mut order = members.clone();
        order.sort_by_key(|&i| (std::cmp::Reverse(pages[i].features.text_chars), i));
        let mut done = vec![false; order.len()];
        for a in 0..order.len() {
            if done[a] {
                continue;
            }
            done[a] = true;
            let c = order[a];
            for b in a + 1..order.len() {
                let m = order[b];
                if done[b]
                    || (pages[c].features.simhash ^ pages[m].features.simhash).count_ones() > 8
                {
                    continue;
                }
                if compare(&pages[c].features, &pages[m].features, t).is_duplicate(t) {
                    done[b] = true;
                    label[m] = c;
                }
            }
        }
    }
    label
}

/// Candidate recall of the index against a brute-force scan, for `queries` pages.
fn index_recall(pages: &[Page], k: u32, queries: usize) -> (usize, usize) {
    use crawlsieve::page::cluster::HammingIndex;
    let mut idx = HammingIndex::new(k);
    for p in pages {
        idx.insert(p.features.simhash);
    }
    let (mut want_total, mut got_total) = (0, 0);
    let mut got = Vec::new();
    let step = (pages.len() / queries).max(1);
    for q in (0..pages.len()).step_by(step).take(queries) {
        let key = pages[q].features.simhash;
        idx.query(key, &mut got);
        let want: Vec<u32> = (0..pages.len() as u32)
            .filter(|&j| (pages[j as usize].features.simhash ^ key).count_ones() <= k)
            .collect();
        want_total += want.len();
        got_total += want.iter().filter(|w| got.binary_search(w).is_ok()).count();
        assert_eq!(
            got, want,
            "the index and the brute-force scan disagree for page {q}"
        );
    }
    (got_total, want_total)
}

fn bench_cluster(_: &mut Criterion) {
    let n: usize = std::env::var("CLUSTER_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let (pages, pairs) = synthetic(n);
    let t = Thresholds::default();
    let start = Instant::now();
    let a = cluster(&pages, &t);
    let ours = start.elapsed().as_secs_f64();
    let ruled = a.iter().filter(|x| x.rule.is_some()).count();
    assert_eq!(
        ruled, 0,
        "synthetic pages must all be eligible for content clustering"
    );
    let found = pairs
        .iter()
        .filter(|&&(i, j)| !a[i].cluster_id.is_empty() && a[i].cluster_id == a[j].cluster_id)
        .count();
    let start = Instant::now();
    let r = reference(&pages, &t);
    let theirs = start.elapsed().as_secs_f64();
    let found_ref = pairs.iter().filter(|&&(i, j)| r[i] == r[j]).count();
    let (hit, all) = index_recall(&pages, t.max_content_distance().max(3), 200);
    println!(
        "cluster/{n}: crawlsieve {ours:.1} s, planted pairs clustered {found}/{} = {:.2}%; reference buckets {theirs:.1} s, {found_ref}/{} = {:.2}%; index candidates vs brute force (200 queries over all {n}): {hit}/{all}",
        pairs.len(),
        100.0 * found as f64 / pairs.len() as f64,
        pairs.len(),
        100.0 * found_ref as f64 / pairs.len() as f64,
    );
}

criterion_group!(benches, bench_features, bench_cluster);
criterion_main!(benches);
