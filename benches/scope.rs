//! Crawl scope's cost (issue 18): the gate's core step — validate, canonicalize, scope,
//! check-and-set — over the real 1.29 M-line candidate corpus, side by side without a scope and
//! with 10,000 allowed domains and 1,000 rules (target: at most 25% of the throughput lost).
//!
//! * `scope/none` — no scope.
//! * `scope/domains_only`, `scope/deny_list_only` — each half alone.
//! * `scope/domains_and_deny_list` — 10,000 `allow_domains` and 1,000 `deny` patterns (one
//!   `RegexSet`, `is_match`).
//! * `scope/domains_and_nutch_file` — the same domains and the 1,000 rules as a Nutch file
//!   (`-pattern` lines then `+.`: first match decides, so the set reports which lines matched).
//!
//! The domains are the corpus' own most frequent hosts (so most URLs pass the domain check and
//! reach the patterns: the expensive case), topped up with synthetic ones. The rules are the
//! kinds users write: per-host path denies, session and tracking parameters, archive and tag
//! pagination, file types.
//!
//! * `scope_gate/{none,domains_and_nutch_file}` — the gate's core itself (`GateCore::stage` +
//!   `finish`: decode the events, sieve, scope, claim and confirm in the Redis-shared filter), on
//!   the first 200,000 candidates as URL events, with and without the same scope. Needs Redis on
//!   127.0.0.1:6379 (`BENCH_REDIS`); skipped without one. Each iteration uses a fresh namespace.
//!
//! `cargo bench --bench scope`; ns per URL = 1e9 / thrpt.

use std::collections::HashMap;
use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use crawlsieve::bloom::BloomFilter;
use crawlsieve::scope::{Scope, ScopeSpec};
use crawlsieve::sieve::{BatchResult, Sieve};
use crawlsieve::url::{Canonicalizer, Validator};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

fn corpus() -> Vec<Vec<u8>> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/urls/candidates.txt.xz");
    let out = Command::new("xz")
        .arg("-dc")
        .arg(&path)
        .output()
        .expect("xz -dc on the corpus (apt-get install xz-utils)");
    out.stdout
        .split(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn host_of(line: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(line).ok()?;
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))?;
    let h = rest
        .split(['/', '?', '#', ':'])
        .next()?
        .to_ascii_lowercase();
    (h.contains('.')
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-'))
    .then_some(h)
}

/// 10,000 domains: the corpus' most frequent hosts first.
fn domains(lines: &[Vec<u8>]) -> Vec<String> {
    let mut freq: HashMap<String, usize> = HashMap::new();
    for l in lines {
        if let Some(h) = host_of(l) {
            *freq.entry(h).or_default() += 1;
        }
    }
    let mut hosts: Vec<(String, usize)> = freq.into_iter().collect();
    hosts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out: Vec<String> = vec!["www.example.com".into()];
    out.extend(
        hosts
            .into_iter()
            .map(|(h, _)| h)
            .filter(|h| psl::suffix(h.as_bytes()).is_none_or(|s| s.as_bytes() != h.as_bytes())),
    );
    out.truncate(10_000);
    let mut i = 0;
    while out.len() < 10_000 {
        out.push(format!("site{i}.example"));
        i += 1;
    }
    out
}

/// 1,000 deny patterns of the kinds users write.
fn rules(domains: &[String]) -> Vec<String> {
    let mut r = Vec::with_capacity(1000);
    for h in domains.iter().take(500) {
        let h = regex_escape(h);
        r.push(format!(
            r"^https?://([a-z0-9-]+\.)*{h}/(admin|login|cart|private)/"
        ));
    }
    for i in 0..200 {
        r.push(format!(r"[?&](sessionid|sid|utm_x{i}|ref{i})="));
    }
    for i in 0..150 {
        r.push(format!(r"/(tag|category|archive)/[^/]+/page/{}/?$", i + 2));
    }
    for i in 0..100 {
        r.push(format!(r"/{}/\d{{2}}/\d{{2}}/.*\?replytocom=", 1990 + i));
    }
    let exts = [
        "gif", "jpg", "png", "ico", "css", "zip", "ppt", "mpg", "xls", "gz", "rpm", "tgz", "mov",
        "exe", "jpeg", "bmp", "js", "mp3", "mp4", "iso", "dmg", "woff", "woff2", "ttf", "svg",
    ];
    let mut i = 0;
    while r.len() < 1000 {
        r.push(format!(
            r"(?i)/[a-z]{{{}}}[^/]*\.{}$",
            i % 7 + 1,
            exts[i % exts.len()]
        ));
        i += 1;
    }
    r
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c == '.' || c == '-' {
                vec!['\\', c]
            } else {
                vec![c]
            }
        })
        .collect()
}

/// The corpus, its domains, the rules and the rules as a Nutch file: built once per process
/// (both groups use them).
struct Fixture {
    lines: Vec<Vec<u8>>,
    doms: Vec<String>,
    pats: Vec<String>,
    file: PathBuf,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static F: std::sync::OnceLock<Fixture> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        let lines = corpus();
        let doms = domains(&lines);
        let pats = rules(&doms);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("regex-urlfilter.txt");
        let mut f = std::fs::File::create(&file).unwrap();
        for p in &pats {
            writeln!(f, "-{p}").unwrap();
        }
        writeln!(f, "+.").unwrap();
        Fixture {
            lines,
            doms,
            pats,
            file,
            _dir: dir,
        }
    })
}

fn bench(c: &mut Criterion) {
    let Fixture {
        lines,
        doms,
        pats,
        file,
        ..
    } = fixture();
    let specs = [
        ("none", ScopeSpec::default()),
        (
            "domains_only",
            ScopeSpec {
                allow_domains: doms.clone(),
                ..Default::default()
            },
        ),
        (
            "deny_list_only",
            ScopeSpec {
                deny: pats.clone(),
                ..Default::default()
            },
        ),
        (
            "domains_and_deny_list",
            ScopeSpec {
                allow_domains: doms.clone(),
                deny: pats.clone(),
                ..Default::default()
            },
        ),
        (
            "domains_and_nutch_file",
            ScopeSpec {
                allow_domains: doms.clone(),
                files: vec![file.clone()],
                ..Default::default()
            },
        ),
    ];
    let scopes = specs.map(|(name, spec)| (name, Scope::new(&spec).unwrap().map(Arc::new)));
    let mut g = c.benchmark_group("scope");
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.sample_size(10);
    for (name, scope) in scopes {
        g.bench_function(name, |b| {
            let mut s = Sieve::new(
                Validator::default(),
                Canonicalizer::default(),
                Some("https://www.example.com/dir/page.html".parse().unwrap()),
            );
            s.scope = scope.clone();
            let mut res = BatchResult::default();
            b.iter_batched(
                || BloomFilter::with_capacity(2_000_000, 1e-4).unwrap(),
                |mut f| {
                    for chunk in lines.chunks(512) {
                        let _ = s.process_batch(
                            chunk.iter().map(|l| (&l[..], false)),
                            &mut f,
                            &mut res,
                        );
                    }
                    black_box(f.items())
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn gate(c: &mut Criterion) {
    use crawlsieve::gate::{GateCore, GateStaged};
    use crawlsieve::observe::FilterMetrics;
    use crawlsieve::redis_filter::{RedisConfig, RedisFilter};
    use crawlsieve::stage::{Batch, Stage};

    let redis = std::env::var("BENCH_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    if redis::Client::open(redis.as_str())
        .and_then(|c| c.get_connection_with_timeout(std::time::Duration::from_secs(1)))
        .is_err()
    {
        eprintln!("scope_gate: no Redis at {redis}; skipped");
        return;
    }
    let Fixture {
        lines, doms, file, ..
    } = fixture();
    let events: Vec<Vec<u8>> = lines
        .iter()
        .take(200_000)
        .map(|l| {
            serde_json::to_vec(&serde_json::json!({
                "url": String::from_utf8_lossy(l),
                "source": "https://www.example.com/dir/page.html",
            }))
            .unwrap()
        })
        .collect();
    let batches: Vec<Batch> = events
        .chunks(512)
        .map(|chunk| {
            let mut b = Batch::default();
            for (i, e) in chunk.iter().enumerate() {
                b.push(0, i as i64, None, Some(e));
            }
            b
        })
        .collect();
    let scoped = ScopeSpec {
        allow_domains: doms.clone(),
        files: vec![file.clone()],
        ..Default::default()
    };
    let mut g = c.benchmark_group("scope_gate");
    g.throughput(Throughput::Elements(events.len() as u64));
    g.sample_size(10);
    let mut used = Vec::new();
    for (name, spec) in [
        ("none", ScopeSpec::default()),
        ("domains_and_nutch_file", scoped),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let ns = format!("bench-scope-{}-{}", std::process::id(), used.len());
                    used.push(ns.clone());
                    let mut cfg = crawlsieve::config::Config::default();
                    cfg.redis.url = redis.clone();
                    cfg.redis.namespace = ns;
                    cfg.redis.capacity = 1_000_000;
                    cfg.scope = spec.clone();
                    GateCore::new(cfg, FilterMetrics::unregistered())
                },
                |mut core| {
                    let mut st = GateStaged::default();
                    for b in &batches {
                        core.stage("in", b, &mut st).unwrap();
                        core.finish(&mut st).unwrap();
                    }
                    black_box(st.emitted)
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
    for ns in used {
        let _ = RedisFilter::drop_namespace(&RedisConfig::new(&redis), &ns);
    }
}

criterion_group!(benches, bench, gate);
criterion_main!(benches);
