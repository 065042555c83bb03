use super::*;
use crate::net::Refused;

fn cfg() -> RobotsSection {
    RobotsSection {
        agent: "crawlsieve/1.0".into(),
        ..RobotsSection::default()
    }
}

fn got(status: u16, body: &str) -> Result<Got, GetError> {
    Ok(Got {
        status,
        body: body.as_bytes().to_vec(),
        truncated: false,
        redirects: 0,
        chain: vec!["https://h.example/robots.txt".into()],
        content_type: "text/plain".into(),
    })
}

/// RFC 9309 §2.3.1: 2xx rules, 4xx none, 5xx and unreachable unavailable; the egress
/// policy's refusal of the origin itself, or of a redirect.
#[test]
fn outcomes_follow_the_status_rules() {
    let c = cfg();
    let r = Record::of(got(200, "User-agent: *\nDisallow: /p/\n"), 1_000, &c);
    assert_eq!((r.kind, r.expires_ms), (Kind::Rules, 1_000 + 86_400_000));
    for s in [401, 403, 404, 410] {
        assert_eq!(Record::of(got(s, "x"), 0, &c).kind, Kind::None, "{s}");
    }
    for s in [500, 503, 199] {
        let r = Record::of(got(s, ""), 0, &c);
        assert_eq!((r.kind, r.expires_ms), (Kind::Unavailable, 600_000), "{s}");
    }
    let r = Record::of(Err(GetError::Failed("reset".into())), 0, &c);
    assert_eq!(r.kind, Kind::Unavailable);
    let refused = Refused::Private {
        host: "h".into(),
        ip: "10.0.0.1".parse().unwrap(),
        kind: "private",
    };
    let r = Record::of(
        Err(GetError::Refused {
            why: refused.clone(),
            hop: 0,
        }),
        0,
        &c,
    );
    assert_eq!(r.kind, Kind::Refused);
    let r = Record::of(
        Err(GetError::Refused {
            why: refused,
            hop: 2,
        }),
        0,
        &c,
    );
    assert_eq!(r.kind, Kind::None);
    // A name that does not resolve is a network failure at any hop: held, retried.
    for hop in [0, 2] {
        let why = Refused::Unresolved("h.example".into());
        let r = Record::of(Err(GetError::Refused { why, hop }), 0, &c);
        assert_eq!(r.kind, Kind::Unavailable, "hop {hop}");
    }
    assert_eq!(
        Record::of(Err(GetError::TooManyRedirects(5)), 0, &c).kind,
        Kind::None
    );
}

/// Unknown → ask; after the ask (nothing in Redis yet) → hold; rules learned → judged;
/// expired → still judged by them while asked again.
#[test]
fn judging_from_what_the_worker_knows() {
    let m = FilterMetrics::new(&crate::observe::Metrics::new("test"));
    let mut g = RobotsGate::new(cfg(), "ns", RedisConfig::new("redis://127.0.0.1:1"), m);
    let o = "http://h.example";
    assert_eq!(g.judge(o, "http://h.example/a", 0), Judged::Ask);
    g.cache.insert(
        origin_key(o),
        Entry {
            known: None,
            expires_ms: 0,
            ask_after_ms: 1_000,
        },
    );
    assert_eq!(
        g.judge(o, "http://h.example/a", 10),
        Judged::Hold {
            until_ms: 5_010,
            why: "unknown"
        }
    );
    let rec = Record::of(
        got(
            200,
            "User-agent: crawlsieve\nDisallow: /p/\nCrawl-delay: 2\n",
        ),
        0,
        &cfg(),
    );
    g.learn(o, Some(&rec));
    assert_eq!(g.judge(o, "http://h.example/p/1", 10), Judged::Disallow);
    assert_eq!(
        g.judge(o, "http://h.example/q", 10),
        Judged::Allow(Some(2.0))
    );
    assert!(!g.must_ask());
    let later = rec.expires_ms + 1;
    assert_eq!(g.judge(o, "http://h.example/p/1", later), Judged::Disallow);
    assert!(g.must_ask(), "stale rules are used and asked about again");
    let down = Record::of(got(503, ""), later, &cfg());
    g.learn(o, Some(&down));
    assert_eq!(
        g.judge(o, "http://h.example/q", later),
        Judged::Hold {
            until_ms: down.expires_ms,
            why: "unavailable"
        }
    );
}

/// `judge_all` gives `judge`'s verdicts, in order, over origins in every state (never
/// seen, being fetched, rules, none, unavailable, refused, stale), and asks about the same
/// origins again.
#[test]
fn judging_many_at_once_is_judging_each() {
    let m = FilterMetrics::new(&crate::observe::Metrics::new("test"));
    let redis = RedisConfig::new("redis://127.0.0.1:1");
    let mut a = RobotsGate::new(cfg(), "ns", redis.clone(), m.clone());
    let rules = Record::of(
        got(
            200,
            "User-agent: *\nDisallow: /p/\nAllow: /p/ok$\nCrawl-delay: 3\n",
        ),
        0,
        &cfg(),
    );
    let states = [
        ("http://rules.example", Some(rules.clone())),
        (
            "http://none.example",
            Some(Record::of(got(404, ""), 0, &cfg())),
        ),
        (
            "http://down.example",
            Some(Record::of(got(503, ""), 0, &cfg())),
        ),
        (
            "http://refused.example",
            Some(Record::of(
                Err(GetError::Refused {
                    why: crate::net::Refused::Private {
                        host: "h".into(),
                        ip: "10.0.0.1".parse().unwrap(),
                        kind: "private",
                    },
                    hop: 0,
                }),
                0,
                &cfg(),
            )),
        ),
        ("http://fetching.example", None),
    ];
    for (o, r) in &states {
        a.learn(o, r.as_ref()).ask_after_ms = 1_000;
    }
    let mut b = RobotsGate::new(cfg(), "ns", redis, m);
    b.cache = a.cache.clone();
    b.arena = a.arena.clone();
    let mut origins = Vec::new();
    let mut urls = Vec::new();
    for (o, _) in states.iter().chain([("http://never.example", None)].iter()) {
        for path in ["/", "/p/x", "/p/ok", "/p/ok?x", "/robots.txt"] {
            origins.push(*o);
            urls.push(format!("{o}{path}"));
        }
    }
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    for now in [10, 2_000, rules.expires_ms + 1] {
        let each: Vec<Judged> = (0..urls.len())
            .map(|i| a.judge(origins[i], urls[i], now))
            .collect();
        let mut all = Vec::new();
        b.judge_all(&origins, &urls, now, &mut all);
        assert_eq!(all, each, "at {now}");
        assert_eq!(a.to_ask, b.to_ask, "at {now}");
    }
    assert!(
        b.to_ask.contains("http://rules.example"),
        "stale rules asked about again"
    );
    let mut all = Vec::new();
    b.judge_all(&origins[..3], &urls[..3], 10, &mut all);
    assert_eq!(
        all,
        [
            Judged::Allow(Some(3.0)),
            Judged::Disallow,
            Judged::Allow(Some(3.0))
        ]
    );
}

/// Rules replaced again and again (records refetched) leave garbage in the arena; it is
/// compacted, stays within twice what the cache holds, and every origin keeps its own rules.
#[test]
fn the_rules_arena_is_compacted_and_judges_right() {
    let m = FilterMetrics::new(&crate::observe::Metrics::new("test"));
    let mut g = RobotsGate::new(cfg(), "ns", RedisConfig::new("redis://127.0.0.1:1"), m);
    let origin = |i: usize| format!("http://h{i}.example");
    let rec = |i: usize, round: u64| {
        let body = format!(
            "User-agent: *\nDisallow: /only-{i}/\nDisallow: /{}\n",
            "x".repeat(2_000)
        );
        let mut r = Record::of(got(200, &body), round, &cfg());
        r.expires_ms = u64::MAX / 2 + round;
        r
    };
    for round in 0..40 {
        for i in 0..50 {
            g.learn(&origin(i), Some(&rec(i, round)));
        }
    }
    let live: usize = g
        .cache
        .values()
        .map(|e| match &e.known {
            Some(Known::Rules(r)) => r.len,
            _ => 0,
        })
        .sum();
    assert!(
        g.arena.len() <= 2 * live + (1 << 20) + 4_100,
        "{} vs {live}",
        g.arena.len()
    );
    assert!(g.garbage < g.arena.len());
    for i in 0..50 {
        let o = origin(i);
        assert_eq!(
            g.judge(&o, &format!("{o}/only-{i}/p"), 1),
            Judged::Disallow,
            "{i}"
        );
        let other = (i + 1) % 50;
        assert_eq!(
            g.judge(&o, &format!("{o}/only-{other}/p"), 1),
            Judged::Allow(None)
        );
    }
    // Forgetting everything (the cache over its bound) empties the arena.
    g.cfg.cache_entries = 1;
    g.trim(1);
    assert!(g.cache.is_empty() && g.arena.is_empty() && g.garbage == 0);
}
