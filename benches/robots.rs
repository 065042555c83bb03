//! robots.txt's cost in the gate (issue 25), in its two parts:
//!
//! * `robots/compile_per_origin` — what a worker pays once per origin it meets: the record read
//!   from Redis decoded (JSON) and the file compiled for the agent (`AgentRules::compile_bytes`),
//!   on a 20-line file like a shop's.
//! * `robots/judge_per_url` — what every URL then pays: `AgentRules::allowed` on canonical URLs
//!   of 1,000 paths (a prefix rule, wildcards, a `$`).
//! * `robots/judge_per_url_66k_origins` — the same with a worker's cache as a long crawl fills
//!   it: 66,264 origins (the gate bench's stream), each with its own compiled rules, looked up
//!   by the origin's 128-bit hash in a random order of URLs — the cache misses a gate pays.
//! * `robots/gate_judge_per_url_66k_origins` and `robots/gate_judge_all_per_url_66k_origins` —
//!   the gate worker's own cache (`RobotsGate`) holding the 66,264 origins' records, judging
//!   the same URLs one call per URL (`judge`), and a chunk of 256 at a time (`judge_all`: every
//!   entry looked up, then every rules buffer touched, then each URL judged — the misses of a
//!   chunk overlap).
//! * `robots/reference_per_url` — the reference matcher (`Robots::check`: the file parsed again
//!   and matched quadratically for every URL), for comparison.
//!
//! `cargo bench --bench robots`.

use std::hint::black_box;

use crawlsieve::gate::robots::{Kind, Record};
use crawlsieve::robots::{AgentRules, Robots};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const BODY: &str = "User-agent: *\nDisallow: /admin/\nAllow: /admin/public/\nDisallow: /cart\nDisallow: /checkout\nDisallow: /*?sessionid=\nDisallow: /search\nDisallow: /*.pdf$\nCrawl-delay: 1\n\nUser-agent: crawlsieve\nDisallow: /admin/\nDisallow: /cart\nDisallow: /checkout\nDisallow: /*?sessionid=\nDisallow: /private/\nAllow: /search/help\nCrawl-delay: 0.5\n\nSitemap: https://shop.example/sitemap.xml\n";

fn urls() -> Vec<String> {
    (0..1000)
        .map(|i| match i % 5 {
            0 => format!("https://shop.example/product/{i}/detail?color=red&size={i}"),
            1 => format!("https://shop.example/category/shoes/page/{i}"),
            2 => format!("https://shop.example/search/help/{i}"),
            3 => format!("https://shop.example/docs/manual-{i}.pdf"),
            _ => format!("https://shop.example/blog/2026/11/post-{i}?sessionid=abc{i}"),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let rec = Record {
        kind: Kind::Rules,
        status: Some(200),
        body: BODY.to_string(),
        fetched_ms: 0,
        expires_ms: 1,
        detail: String::new(),
    };
    let json = serde_json::to_vec(&rec).unwrap();
    let mut g = c.benchmark_group("robots");
    g.throughput(Throughput::Elements(1));
    g.bench_function("compile_per_origin", |b| {
        b.iter(|| {
            let r: Record = serde_json::from_slice(black_box(&json)).unwrap();
            AgentRules::compile_bytes(r.body.as_bytes(), "crawlsieve/1.0")
        })
    });
    let rules = AgentRules::compile_bytes(BODY.as_bytes(), "crawlsieve");
    let urls = urls();
    g.throughput(Throughput::Elements(urls.len() as u64));
    g.bench_function("judge_per_url", |b| {
        b.iter(|| urls.iter().filter(|u| rules.allowed(black_box(u))).count())
    });
    // 66,264 origins, each its own rules (the body varied by a line), URLs across them.
    let n = 66_264;
    let mut cache: rustc_hash::FxHashMap<u128, AgentRules> = Default::default();
    let origins: Vec<String> = (0..n)
        .map(|i| format!("https://shop-{i}.example"))
        .collect();
    for (i, o) in origins.iter().enumerate() {
        let body = format!("{BODY}\nUser-agent: crawlsieve\nDisallow: /only-{i}/\n");
        cache.insert(
            xxhash_rust::xxh3::xxh3_128(o.as_bytes()),
            AgentRules::compile_bytes(body.as_bytes(), "crawlsieve"),
        );
    }
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let spread: Vec<String> = (0..100_000)
        .map(|k| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = &urls[k % urls.len()];
            format!(
                "{}{}",
                origins[(x % n as u64) as usize],
                &u["https://shop.example".len()..]
            )
        })
        .collect();
    g.throughput(Throughput::Elements(spread.len() as u64));
    g.bench_function("judge_per_url_66k_origins", |b| {
        b.iter(|| {
            spread
                .iter()
                .filter(|u| {
                    let origin = crawlsieve::url::lex::origin(u);
                    let key = xxhash_rust::xxh3::xxh3_128(origin.as_bytes());
                    cache.get(&key).is_some_and(|r| r.allowed(black_box(u)))
                })
                .count()
        })
    });
    // The gate worker's cache itself, one call per URL and a chunk at a time.
    let metrics =
        crawlsieve::observe::FilterMetrics::new(&crawlsieve::observe::Metrics::new("bench"));
    let section = crawlsieve::config::RobotsSection {
        agent: "crawlsieve".into(),
        ..Default::default()
    };
    let mut gate = crawlsieve::gate::robots::RobotsGate::new(
        section,
        "bench",
        crawlsieve::redis_filter::RedisConfig::new("redis://127.0.0.1:1"),
        metrics,
    );
    for (i, o) in origins.iter().enumerate() {
        let body = format!("{BODY}\nUser-agent: crawlsieve\nDisallow: /only-{i}/\n");
        let rec = Record {
            kind: Kind::Rules,
            status: Some(200),
            body,
            fetched_ms: 0,
            expires_ms: u64::MAX / 2,
            detail: String::new(),
        };
        gate.learn_record(o, &rec);
    }
    g.bench_function("gate_judge_per_url_66k_origins", |b| {
        b.iter(|| {
            spread
                .iter()
                .filter(|u| {
                    let origin = crawlsieve::url::lex::origin(u);
                    matches!(
                        gate.judge(&origin, black_box(u), 1),
                        crawlsieve::gate::robots::Judged::Allow(_)
                    )
                })
                .count()
        })
    });
    let mut verdicts = Vec::new();
    g.bench_function("gate_judge_all_per_url_66k_origins", |b| {
        b.iter(|| {
            let mut allowed = 0;
            for chunk in spread.chunks(256) {
                let urls: Vec<&str> = chunk.iter().map(String::as_str).collect();
                let origins: Vec<std::borrow::Cow<'_, str>> = urls
                    .iter()
                    .map(|u| crawlsieve::url::lex::origin(u))
                    .collect();
                let origins: Vec<&str> = origins.iter().map(|o| o.as_ref()).collect();
                gate.judge_all(&origins, black_box(&urls), 1, &mut verdicts);
                allowed += verdicts
                    .iter()
                    .filter(|v| matches!(v, crawlsieve::gate::robots::Judged::Allow(_)))
                    .count();
            }
            allowed
        })
    });
    g.throughput(Throughput::Elements(urls.len() as u64));
    let reference = Robots::new(BODY.as_bytes());
    g.bench_function("reference_per_url", |b| {
        b.iter(|| {
            urls.iter()
                .filter(|u| reference.check("crawlsieve", black_box(u)).allowed)
                .count()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
