//! Clustering precision and recall on real documentation pages (issue 14).
//!
//! The corpus is Debian's documentation packages, fetched by `scripts/fetch-doc-corpus.sh`:
//! rust-doc (`std/` and the books: rustdoc item pages, whose `<main>` is mostly shared trait
//! boilerplate), and two versions each of python-django-doc and postgresql-doc-15 (the versions
//! bookworm and bookworm-security carry). Every page is served as
//! `https://<package>.docs/<version>/<path>`, so twins share a host.
//!
//! The labels come from the pages themselves:
//! - a **merged pair** (two pages in one cluster, content or rule) is *false* when the two share
//!   under half their visible text: |shingles(A) ∩ shingles(B)| / max(|A|, |B|) < 0.5, over word
//!   3-shingles of the visible body text;
//! - a **version twin** is the same path in two versions of a package, both eligible for
//!   content clustering, sharing at least 90% of their visible text: it should be merged.
//!
//! Goal: false merges ≤ 1% of merged pairs; twin recall ≥ 0.95.
//!
//! Run: `scripts/fetch-doc-corpus.sh && cargo bench --bench cluster_quality`
//! (`CRAWLSIEVE_DOC_CORPUS` to read another directory; `CQ_RUST_MAX`, rust pages kept, default
//! all of `std/` and the books; `CQ_EXAMPLES`, false merges printed, default 10).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crawlsieve::page::cluster::{cluster, eligible};
use crawlsieve::page::similarity::Thresholds;
use crawlsieve::page::Page;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            html_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "html") {
            out.push(p);
        }
    }
}

/// The visible body text's word 3-shingles: tags stripped, `head`, `script`, `style`,
/// `noscript` and `template` skipped with their content, the common entities decoded, words
/// lower-cased. (A scan, not a parse: the labels must not share the extractor's blind spots.)
fn shingles(html: &str) -> HashSet<u64> {
    let lower = html.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut text = String::with_capacity(html.len() / 2);
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'<' {
            let skip = ["head", "script", "style", "noscript", "template"]
                .iter()
                .find(|t| lower[i + 1..].starts_with(*t));
            let end = match skip {
                Some(t) => lower[i..]
                    .find(&format!("</{t}"))
                    .map_or(b.len(), |e| i + e + 2 + t.len()),
                None => i,
            };
            i = lower[end..].find('>').map_or(b.len(), |e| end + e + 1);
            text.push(' ');
        } else {
            let next = lower[i..].find('<').map_or(b.len(), |e| i + e);
            text.push_str(&html[i..next]);
            i = next;
        }
    }
    let text = text
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'");
    let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    words
        .windows(3.min(words.len().max(1)))
        .map(|w| xxhash_rust::xxh3::xxh3_64(w.join(" ").as_bytes()))
        .collect()
}

/// Jaccard similarity of two shingle sets.
fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    let i = a.intersection(b).count();
    let u = a.len() + b.len() - i;
    if u == 0 {
        1.0
    } else {
        i as f64 / u as f64
    }
}

fn shared(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    let m = a.len().max(b.len());
    if m == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / m as f64
}

struct Doc {
    package: String,
    version: String,
    path: String,
    page: Page,
    text: HashSet<u64>,
}

fn main() {
    let root = PathBuf::from(
        std::env::var("CRAWLSIEVE_DOC_CORPUS").unwrap_or_else(|_| "target/doc-corpus".into()),
    );
    let rust_max: usize = env("CQ_RUST_MAX", usize::MAX);
    let examples: usize = env("CQ_EXAMPLES", 10);
    let t0 = Instant::now();
    let mut docs: Vec<Doc> = Vec::new();
    let mut packages: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run scripts/fetch-doc-corpus.sh first)",
                root.display()
            )
        })
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.ends_with("debs"))
        .collect();
    packages.sort();
    for pkg in packages {
        let package = pkg.file_name().unwrap().to_string_lossy().into_owned();
        let mut versions: Vec<PathBuf> = std::fs::read_dir(&pkg)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        versions.sort();
        for v in versions {
            let version = v.file_name().unwrap().to_string_lossy().into_owned();
            let html_root = v.join("usr/share/doc").join(&package).join("html");
            let mut files = Vec::new();
            if package == "rust-doc" {
                for sub in ["std", "book"] {
                    html_files(&html_root.join(sub), &mut files);
                }
                files.sort();
                files.truncate(rust_max);
            } else {
                html_files(&html_root, &mut files);
                files.sort();
            }
            for f in files {
                let Ok(bytes) = std::fs::read(&f) else {
                    continue;
                };
                let html = String::from_utf8_lossy(&bytes);
                let path = f
                    .strip_prefix(&html_root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let url = format!("https://{package}.docs/{version}/{path}");
                let (page, refused) = Page::parse(&url, &url, 200, "text/html", &html);
                if refused.is_some() {
                    continue;
                }
                docs.push(Doc {
                    text: shingles(&html),
                    package: package.clone(),
                    version: version.clone(),
                    path,
                    page,
                });
            }
        }
    }
    let load = t0.elapsed().as_secs_f64();
    let pages: Vec<Page> = docs.iter().map(|d| d.page.clone()).collect();
    let t1 = Instant::now();
    let assignments = cluster(&pages, &Thresholds::default());
    let cluster_secs = t1.elapsed().as_secs_f64();

    // Merged pairs, per package and kind.
    let mut by_cluster: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, a) in assignments.iter().enumerate() {
        if !a.cluster_id.is_empty() {
            by_cluster.entry(&a.cluster_id).or_default().push(i);
        }
    }
    // (package, content|rule) → (pairs, false pairs)
    let mut stats: HashMap<(String, &str), (u64, u64)> = HashMap::new();
    let mut jaccard_false = 0u64;
    let mut worst: Vec<(f64, usize, usize)> = Vec::new();
    for members in by_cluster.values() {
        for (x, &i) in members.iter().enumerate() {
            for &j in &members[x + 1..] {
                let s = shared(&docs[i].text, &docs[j].text);
                if jaccard(&docs[i].text, &docs[j].text) < 0.5 {
                    jaccard_false += 1;
                }
                let kind = if assignments[i].rule.is_some() {
                    "rule"
                } else {
                    "content"
                };
                let e = stats.entry((docs[i].package.clone(), kind)).or_default();
                e.0 += 1;
                if s < 0.5 {
                    e.1 += 1;
                    worst.push((s, i, j));
                }
            }
        }
    }
    // Version twins.
    let mut by_path: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, d) in docs.iter().enumerate() {
        by_path.entry((&d.package, &d.path)).or_default().push(i);
    }
    let (mut twins, mut recalled) = (0u64, 0u64);
    let mut missed = Vec::new();
    for ids in by_path.values() {
        for (x, &i) in ids.iter().enumerate() {
            for &j in &ids[x + 1..] {
                if docs[i].version == docs[j].version
                    || !eligible(&pages[i])
                    || !eligible(&pages[j])
                    || shared(&docs[i].text, &docs[j].text) < 0.9
                {
                    continue;
                }
                twins += 1;
                let (a, b) = (&assignments[i], &assignments[j]);
                if !a.cluster_id.is_empty() && a.cluster_id == b.cluster_id {
                    recalled += 1;
                } else {
                    missed.push(i);
                }
            }
        }
    }
    let (pairs, bad) = stats.values().fold((0, 0), |(p, b), (x, y)| (p + x, b + y));
    println!(
        "cluster_quality: {} pages ({:.1} s to read and extract), clustered in {:.2} s, {} clusters",
        docs.len(),
        load,
        cluster_secs,
        by_cluster.len()
    );
    let mut keys: Vec<_> = stats.keys().cloned().collect();
    keys.sort();
    for k in keys {
        let (p, b) = stats[&k];
        println!(
            "  {:<20} {:<8} merged pairs {:>9}, sharing < 1/2 of their text {:>7} ({:.2}%)",
            k.0,
            k.1,
            p,
            b,
            100.0 * b as f64 / p.max(1) as f64
        );
    }
    println!(
        "  all: merged pairs {pairs}, false merges {bad} ({:.2}%; goal ≤ 1%); version twins {twins}, merged {recalled} (recall {:.3}; goal ≥ 0.95)",
        100.0 * bad as f64 / pairs.max(1) as f64,
        recalled as f64 / twins.max(1) as f64
    );
    println!(
        "  stricter label (shingle Jaccard < 0.5): false merges {jaccard_false} ({:.2}%)",
        100.0 * jaccard_false as f64 / pairs.max(1) as f64
    );
    worst.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (s, i, j) in worst.iter().take(examples) {
        println!(
            "  false merge {:.2}: {} + {} ({:?})",
            s, docs[*i].page.url, docs[*j].page.url, assignments[*i].rule
        );
    }
    let mut big: Vec<(&&str, &Vec<usize>)> = by_cluster.iter().collect();
    big.sort_by_key(|(id, m)| (std::cmp::Reverse(m.len()), **id));
    for (id, m) in big.iter().take(examples.min(5)) {
        let sample: Vec<&str> = m.iter().take(3).map(|&i| docs[i].path.as_str()).collect();
        println!("  cluster {id}: {} pages, e.g. {sample:?}", m.len());
    }
    for i in missed.iter().take(examples) {
        println!("  twin not merged: {}", docs[*i].page.url);
    }
}
