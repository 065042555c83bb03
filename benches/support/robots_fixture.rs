//! What the robots.txt benchmarks share (`gate_kafka` with `BENCH_ROBOTS`, `robots_gate`): URL
//! events as a link extractor emits them, the origins the gate will judge, and every origin's
//! robots.txt record preloaded into Redis as a gate that fetched it would have written it.

#![allow(dead_code)]

/// A url-event for `line` as a link extractor emits it: found on a page of its host, every
/// other one written relative to that page.
pub fn as_event(i: usize, line: &str) -> Vec<u8> {
    let (origin, rest) = match line.find("://").map(|s| s + 3) {
        Some(s) => match line[s..].find('/') {
            Some(p) => line.split_at(s + p),
            None => (line, "/"),
        },
        None => ("https://unknown.example", line),
    };
    let url = if i.is_multiple_of(2) { line } else { rest };
    let ev = serde_json::json!({
        "url": url,
        "source": format!("{origin}/page/{}", i % 97),
        "depth": i % 5,
        "discovered_at": "2026-11-26T00:00:00Z",
    });
    ev.to_string().into_bytes()
}

/// The origins of the canonical URLs the gate will judge in `events`, found as the gate finds
/// them (sorted, once each).
pub fn origins(events: &[Vec<u8>]) -> Vec<String> {
    let sec = crawlsieve::config::SieveSection::default();
    let mut sieve =
        crawlsieve::sieve::Sieve::new(sec.validator().unwrap(), sec.canonicalizer(), None);
    let mut set = std::collections::BTreeSet::new();
    for v in events {
        let ev = crawlsieve::events::UrlEvent::decode(v, usize::MAX).ok();
        let Some(ev) = ev else { continue };
        sieve.set_source(ev.source.as_deref());
        if let Ok(c) = sieve.classify(ev.url.as_bytes(), false) {
            if c.starts_with("http://") || c.starts_with("https://") {
                set.insert(crawlsieve::url::lex::origin(c).into_owned());
            }
        }
    }
    set.into_iter().collect()
}

/// One event per origin (`{origin}/`, found on itself): a gate that stages them meets every
/// origin, and its robots.txt rules are in the worker's memory after.
pub fn warm_events(origins: &[String]) -> Vec<Vec<u8>> {
    origins
        .iter()
        .map(|o| {
            serde_json::json!({"url": format!("{o}/"), "source": format!("{o}/"), "depth": 0})
                .to_string()
                .into_bytes()
        })
        .collect()
}

/// A robots.txt like a shop's: a few disallows, an allow inside one, a wildcard, a group of its
/// own for the agent, a Crawl-delay.
pub const BENCH_ROBOTS_TXT: &str = "User-agent: *\nDisallow: /admin/\nAllow: /admin/public/\nDisallow: /cart\nDisallow: /checkout\nDisallow: /*?sessionid=\nDisallow: /search\nDisallow: /*.pdf$\nCrawl-delay: 1\n\nUser-agent: crawlsieve\nDisallow: /admin/\nDisallow: /cart\nDisallow: /checkout\nDisallow: /*?sessionid=\nDisallow: /private/\nAllow: /search/help\nCrawl-delay: 0.5\n\nSitemap: https://example.org/sitemap.xml\n";

/// Every origin's robots.txt record, as a gate that fetched it would have written it.
pub fn preload_robots(redis: &str, ns: &str, origins: &[String]) {
    use crawlsieve::gate::robots::{now_ms, record_key, Kind, Record};
    let now = now_ms();
    let rec = Record {
        kind: Kind::Rules,
        status: Some(200),
        body: BENCH_ROBOTS_TXT.to_string(),
        fetched_ms: now,
        expires_ms: now + 3_600_000,
        detail: String::new(),
    };
    let json = serde_json::to_string(&rec).unwrap();
    let mut con = redis::Client::open(redis)
        .and_then(|c| c.get_connection())
        .expect("connect to BENCH_REDIS");
    for chunk in origins.chunks(1000) {
        let mut p = redis::pipe();
        for o in chunk {
            p.cmd("SET")
                .arg(record_key(ns, o))
                .arg(&json)
                .arg("EX")
                .arg(7200)
                .ignore();
        }
        let _: () = p.query(&mut con).expect("preload robots records");
    }
}

/// Remove what [`preload_robots`] wrote (the records would otherwise stay two hours in a shared
/// Redis).
pub fn drop_robots(redis: &str, ns: &str, origins: &[String]) {
    use crawlsieve::gate::robots::record_key;
    let Ok(mut con) = redis::Client::open(redis).and_then(|c| c.get_connection()) else {
        return;
    };
    for chunk in origins.chunks(1000) {
        let mut p = redis::pipe();
        for o in chunk {
            p.cmd("UNLINK").arg(record_key(ns, o)).ignore();
        }
        let _: Result<(), _> = p.query(&mut con);
    }
}
