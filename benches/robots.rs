//! robots.txt's cost in the gate (issue 25), in its two parts:
//!
//! * `robots/compile_per_origin` — what a worker pays once per origin it meets: the record read
//!   from Redis decoded (JSON) and the file compiled for the agent (`AgentRules::compile_bytes`),
//!   on a 20-line file like a shop's.
//! * `robots/judge_per_url` — what every URL then pays: `AgentRules::allowed` on canonical URLs
//!   of 1,000 paths (a prefix rule, wildcards, a `$`).
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
