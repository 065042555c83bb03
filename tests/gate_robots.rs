//! Issue 25: robots.txt in the gate, end to end on loopback — a real broker (tansu), a Redis of
//! the test's own, `crawlsieve gate` with `[robots]` on, and one small HTTP server per origin
//! that records every request it gets.

mod common;

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::kafka::{create_topics, produce, read_all, read_until, Tansu};
use common::{start_gate, stop_gate, url_events, OwnRedis};
use crawlsieve::events::{FetchEvent, RejectedEvent};

/// An origin on 127.0.0.1: answers `/robots.txt` with `status` and `body` (a 3xx carries
/// `Location: body`), every other path with 200, and counts the requests it gets.
struct Origin {
    port: u16,
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
}

impl Origin {
    fn start(status: u16, body: &'static str) -> Origin {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let st = Arc::new(AtomicU16::new(status));
        let hits = Arc::new(AtomicUsize::new(0));
        let (s2, h2) = (st.clone(), hits.clone());
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut c) = conn else { continue };
                h2.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let n = c.read(&mut buf).unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]);
                let is_robots = req.starts_with("GET /robots.txt ");
                let status = if is_robots {
                    s2.load(Ordering::SeqCst)
                } else {
                    200
                };
                let (extra, text) = match status {
                    300..=399 => (format!("Location: {body}\r\n"), ""),
                    _ if is_robots => (String::new(), body),
                    _ => (String::new(), "page"),
                };
                let _ = write!(
                    c,
                    "HTTP/1.1 {status} X\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        Origin {
            port,
            status: st,
            hits,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// The done-when of issue 25's robots part, in one run: rules that disallow `/private/` reject
/// those URLs (`robots_disallowed`) and publish the others with the group's `Crawl-delay`; a
/// 404 publishes everything; a 500 publishes nothing until the server recovers, then every
/// URL exactly once; an origin outside the egress allow-list is never connected to (its URLs
/// are `private_address`), nor is it reached by a redirect from an allowed origin's robots.txt.
/// Nothing is lost, nothing repeated.
#[test]
fn the_gate_applies_fetched_robots_rules_and_holds_what_it_cannot_judge_yet() {
    let kafka = Tansu::start();
    let b = kafka.brokers();
    let redis = OwnRedis::start(&[]);
    let rules = Origin::start(
        200,
        "User-agent: *\nDisallow: /\n\nUser-agent: crawlsieve\nDisallow: /private/\nCrawl-delay: 2\n",
    );
    let missing = Origin::start(404, "not found");
    let failing = Origin::start(500, "User-agent: *\nDisallow: /private/\n");
    let forbidden = Origin::start(200, "User-agent: *\nAllow: /\n");
    let forbidden_robots = forbidden.url("/robots.txt");
    let redirecting = Origin::start(302, Box::leak(forbidden_robots.into_boxed_str()));
    create_topics(
        &b,
        &[
            ("urls", 2),
            ("fetch", 1),
            ("audit", 1),
            ("urls.dead-letter", 1),
            ("urls.robots-wait", 1),
        ],
    );
    let origins = [&rules, &missing, &failing, &forbidden, &redirecting];
    let mut urls = Vec::new();
    for o in origins {
        for i in 0..6 {
            urls.push(o.url(&format!("/private/{i}")));
            urls.push(o.url(&format!("/pub/{i}")));
        }
    }
    // Repeats: the second half of the input repeats the first.
    let mut input = urls.clone();
    input.extend(urls.iter().take(10).cloned());
    produce(&b, "urls", 2, &url_events(&input));

    let allow: Vec<String> = [&rules, &missing, &failing, &redirecting]
        .iter()
        .map(|o| format!("\"127.0.0.1:{}\"", o.port))
        .collect();
    let sets = [
        format!("kafka.brokers={b}"),
        "kafka.group_id=robots-gate".into(),
        "kafka.audit_topic=audit".into(),
        "kafka.batch_linger_ms=10".into(),
        "kafka.consumer.\"session.timeout.ms\"=6000".into(),
        "kafka.consumer.\"heartbeat.interval.ms\"=500".into(),
        format!("redis.url={}", redis.url()),
        "redis.namespace=robots".into(),
        "redis.fp_rate=1e-9".into(),
        "sieve.allow_private=[\"127.0.0.1\"]".into(),
        "robots.enabled=true".into(),
        format!("robots.allow=[{}]", allow.join(",")),
        "robots.hold=1s".into(),
        "robots.error_ttl=2s".into(),
        "robots.fetch_timeout=3s".into(),
    ];
    let mut gate = start_gate(&sets);

    let of = |o: &Origin| format!("127.0.0.1:{}", o.port);
    let host_of = |u: &str| u.split('/').nth(2).unwrap_or("").to_string();
    // Everything but the failing origin is decided within the holds.
    let decided: HashSet<String> = [&rules, &missing, &forbidden, &redirecting]
        .iter()
        .map(|o| of(o))
        .collect();
    let want_published = |u: &String| {
        let h = host_of(u);
        (h == of(&missing) || h == of(&redirecting)) || (h == of(&rules) && u.contains("/pub/"))
    };
    let n_first = urls
        .iter()
        .filter(|u| decided.contains(&host_of(u)) && want_published(u))
        .count();
    let fetched = read_until(&b, "fetch", 1, Duration::from_secs(40), |got| {
        got.len() >= n_first
    });
    let events: Vec<FetchEvent> = fetched
        .iter()
        .map(|g| serde_json::from_slice(&g.value).unwrap())
        .collect();
    assert!(
        events.iter().all(|e| host_of(&e.url) != of(&failing)),
        "nothing of an origin whose robots.txt answers 500 is published"
    );
    assert!(
        failing.hits.load(Ordering::SeqCst) >= 1,
        "the failing origin's robots.txt was asked for"
    );
    // The failing origin recovers; its URLs come back from the wait topic.
    failing.status.store(404, Ordering::SeqCst);
    let n_all = urls
        .iter()
        .filter(|u| want_published(u) || host_of(u) == of(&failing))
        .count();
    let fetched = read_until(&b, "fetch", 1, Duration::from_secs(60), |got| {
        got.len() >= n_all
    });
    std::thread::sleep(Duration::from_secs(2)); // stragglers (repeats) would show now
    let fetched_again = read_all(&b, "fetch", 1, Duration::from_secs(1));
    assert!(fetched_again.len() >= fetched.len());
    stop_gate(&mut gate);

    let events: Vec<FetchEvent> = fetched_again
        .iter()
        .map(|g| serde_json::from_slice(&g.value).unwrap())
        .collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for e in &events {
        *count.entry(e.url.as_str()).or_default() += 1;
    }
    let repeats: usize = count.values().map(|n| n - 1).sum();
    let audit: Vec<RejectedEvent> = read_all(&b, "audit", 1, Duration::from_secs(1))
        .iter()
        .map(|g| serde_json::from_slice(&g.value).unwrap())
        .collect();
    let reason: HashMap<&str, &str> = audit
        .iter()
        .map(|r| (r.url.as_str(), r.reason.code()))
        .collect();
    let mut lost = Vec::new();
    for u in &urls {
        let h = host_of(u);
        let ok = if h == of(&rules) && u.contains("/private/") {
            reason.get(u.as_str()) == Some(&"robots_disallowed") && !count.contains_key(u.as_str())
        } else if h == of(&forbidden) {
            reason.get(u.as_str()) == Some(&"private_address") && !count.contains_key(u.as_str())
        } else {
            count.get(u.as_str()) == Some(&1)
        };
        if !ok {
            lost.push(format!(
                "{u}: published {:?}, audit {:?}",
                count.get(u.as_str()),
                reason.get(u.as_str())
            ));
        }
    }
    assert!(lost.is_empty(), "lost or misjudged:\n{}", lost.join("\n"));
    assert_eq!(repeats, 0, "repeats");
    for e in &events {
        let want = (host_of(&e.url) == of(&rules)).then_some(2.0);
        assert_eq!(e.crawl_delay_s, want, "{}", e.url);
    }
    assert_eq!(
        forbidden.hits.load(Ordering::SeqCst),
        0,
        "an origin outside robots.allow was connected to (directly or by a redirect)"
    );
    assert_eq!(
        rules.hits.load(Ordering::SeqCst),
        1,
        "one robots.txt fetch per origin"
    );
    // Held events are what the schema says.
    let held = read_all(&b, "urls.robots-wait", 1, Duration::from_secs(1));
    assert!(!held.is_empty(), "URLs were held");
    let v = common::schema_validator("robots-held");
    let mut whys = HashSet::new();
    for g in &held {
        let doc: serde_json::Value = serde_json::from_slice(&g.value).unwrap();
        assert!(v.is_valid(&doc), "{doc}");
        whys.insert(doc["why"].as_str().unwrap().to_string());
    }
    assert!(
        whys.contains("unknown") && whys.contains("unavailable"),
        "{whys:?}"
    );
}

/// Never lose a URL for robots' sake, under faults: two gates with `[robots]` on, one of them
/// SIGKILLed again and again (its held URLs are on the wait topic, its mover dies mid-move),
/// Redis paused (`CLIENT PAUSE`) for 2 s, and origins whose robots.txt fails (500) for the
/// first seconds. Every allowed URL is published (lost = 0; repeats counted and printed),
/// every disallowed one is audited `robots_disallowed` and never published.
/// `CRAWLSIEVE_FAULT_SEEDS=N` runs N seeds (default 1).
#[test]
fn no_url_lost_for_robots_sake_when_gates_are_killed_and_redis_stalls() {
    let seeds: u64 = common::env_or("CRAWLSIEVE_FAULT_SEEDS", 1);
    for seed in 0..seeds {
        robots_faults(seed);
    }
}

fn robots_faults(seed: u64) {
    let kafka = Tansu::start();
    let b = kafka.brokers();
    let redis = OwnRedis::start(&[]);
    let origins: Vec<Origin> = (0..16)
        .map(|i| {
            Origin::start(
                if i % 4 == 3 { 500 } else { 200 },
                "User-agent: *\nDisallow: /private/\n",
            )
        })
        .collect();
    create_topics(
        &b,
        &[
            ("urls", 4),
            ("fetch", 1),
            ("audit", 1),
            ("urls.dead-letter", 1),
            ("urls.robots-wait", 2),
        ],
    );
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ (seed.wrapping_mul(0xD134_2543_DE82_EF95) | 1);
    let mut rnd = move |lo: u64, hi: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        lo + x % (hi - lo)
    };
    let mut urls = Vec::new();
    for i in 0..3000 {
        let o = &origins[rnd(0, 16) as usize];
        let dir = if i % 3 == 0 { "private" } else { "pub" };
        urls.push(o.url(&format!("/{dir}/{i}")));
    }
    let allow: Vec<String> = origins
        .iter()
        .map(|o| format!("\"127.0.0.1:{}\"", o.port))
        .collect();
    let sets = vec![
        format!("kafka.brokers={b}"),
        "kafka.group_id=robots-faults".into(),
        "kafka.audit_topic=audit".into(),
        "kafka.batch_linger_ms=10".into(),
        "kafka.batch_size=200".into(),
        "kafka.consumer.\"session.timeout.ms\"=6000".into(),
        "kafka.consumer.\"heartbeat.interval.ms\"=500".into(),
        format!("redis.url={}", redis.url()),
        "redis.namespace=robots".into(),
        "redis.fp_rate=1e-9".into(),
        "redis.timeout=1s".into(),
        "redis.claim_ttl=3s".into(),
        "sieve.allow_private=[\"127.0.0.1\"]".into(),
        "robots.enabled=true".into(),
        format!("robots.allow=[{}]", allow.join(",")),
        "robots.hold=2s".into(),
        "robots.error_ttl=3s".into(),
        "robots.fetch_timeout=2s".into(),
    ];
    let mut a = start_gate(&sets);
    let mut g = start_gate(&sets);
    let mut kills = 0;
    for (i, chunk) in urls.chunks(500).enumerate() {
        produce(&b, "urls", 4, &url_events(chunk));
        std::thread::sleep(Duration::from_millis(rnd(200, 1500)));
        if i % 2 == 0 {
            let _ = g.kill();
            let _ = g.wait();
            kills += 1;
            std::thread::sleep(Duration::from_millis(rnd(0, 1000)));
            g = start_gate(&sets);
        }
        if i == 3 {
            let _: () = redis::cmd("CLIENT")
                .arg("PAUSE")
                .arg(2000)
                .arg("ALL")
                .query(&mut redis.con())
                .unwrap();
        }
    }
    // The failing origins recover only once each was asked (and answered 500) at least once.
    let failing: Vec<&Origin> = origins
        .iter()
        .filter(|o| o.status.load(Ordering::SeqCst) == 500)
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while failing.iter().any(|o| o.hits.load(Ordering::SeqCst) == 0) {
        assert!(
            std::time::Instant::now() < deadline,
            "the failing origins were never asked"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(rnd(1000, 3000)));
    let _ = g.kill();
    let _ = g.wait();
    kills += 1;
    g = start_gate(&sets);
    for o in &failing {
        o.status.store(200, Ordering::SeqCst);
    }
    let want: HashSet<&str> = urls
        .iter()
        .filter(|u| u.contains("/pub/"))
        .map(String::as_str)
        .collect();
    let fetched = read_until(&b, "fetch", 1, Duration::from_secs(180), |got| {
        let seen: HashSet<String> = got
            .iter()
            .filter_map(|g| serde_json::from_slice::<FetchEvent>(&g.value).ok())
            .map(|e| e.url)
            .collect();
        want.iter().all(|u| seen.contains(*u))
    });
    let disallowed: HashSet<&str> = urls
        .iter()
        .filter(|u| u.contains("/private/"))
        .map(String::as_str)
        .collect();
    let _ = read_until(&b, "audit", 1, Duration::from_secs(120), |got| {
        let seen: HashSet<String> = got
            .iter()
            .filter_map(|g| serde_json::from_slice::<RejectedEvent>(&g.value).ok())
            .map(|r| r.url)
            .collect();
        disallowed.iter().all(|u| seen.contains(*u))
    });
    for c in [&mut a, &mut g] {
        stop_gate(c);
    }
    let mut count: HashMap<String, usize> = HashMap::new();
    for ev in &fetched {
        let e: FetchEvent = serde_json::from_slice(&ev.value).unwrap();
        *count.entry(e.url).or_default() += 1;
    }
    let lost: Vec<&&str> = want.iter().filter(|u| !count.contains_key(**u)).collect();
    let wrongly: Vec<&String> = count.keys().filter(|u| u.contains("/private/")).collect();
    let audit: HashSet<String> = read_all(&b, "audit", 1, Duration::from_secs(1))
        .iter()
        .filter_map(|g| serde_json::from_slice::<RejectedEvent>(&g.value).ok())
        .filter(|r| r.reason.code() == "robots_disallowed")
        .map(|r| r.url)
        .collect();
    let unaudited = urls
        .iter()
        .filter(|u| u.contains("/private/") && !audit.contains(*u))
        .count();
    let repeats: usize = count.values().map(|n| n - 1).sum();
    let fetches: usize = origins.iter().map(|o| o.hits.load(Ordering::SeqCst)).sum();
    let held = read_all(&b, "urls.robots-wait", 2, Duration::from_secs(1)).len();
    println!(
        "robots faults seed {seed}: {} URLs ({} allowed), {kills} SIGKILLs, Redis paused 2 s: lost {}, published disallowed {}, disallowed not audited {unaudited}, repeats {repeats}, held {held}, robots.txt requests {fetches} for 16 origins (4 answering 500 at first)",
        urls.len(),
        want.len(),
        lost.len(),
        wrongly.len()
    );
    if !lost.is_empty() {
        // Where the lost ones went: the input (first and put back), the wait topic, the audit.
        let find = |topic: &str, parts: i32, u: &str| {
            read_all(&b, topic, parts, Duration::from_secs(1))
                .iter()
                .filter(|g| String::from_utf8_lossy(&g.value).contains(&format!("\"{u}\"")))
                .map(|g| {
                    format!(
                        "{}@{}: {}",
                        g.partition,
                        g.offset,
                        String::from_utf8_lossy(&g.value)
                    )
                })
                .collect::<Vec<_>>()
        };
        for u in lost.iter().take(3) {
            eprintln!(
                "LOST {u}\n input: {:?}\n wait: {:?}\n audit: {:?}",
                find("urls", 4, u),
                find("urls.robots-wait", 2, u),
                find("audit", 1, u)
            );
        }
    }
    assert!(lost.is_empty(), "lost: {:?}", &lost[..lost.len().min(5)]);
    assert!(
        wrongly.is_empty(),
        "published though disallowed: {wrongly:?}"
    );
    assert_eq!(unaudited, 0, "disallowed URLs missing from the audit topic");
}

/// `[robots]` on without its wait topic: the gate refuses to start and says why (held URLs
/// would otherwise stall it).
#[test]
fn a_missing_wait_topic_is_a_clear_error_at_start() {
    let kafka = Tansu::start();
    let b = kafka.brokers();
    let redis = OwnRedis::start(&[]);
    create_topics(&b, &[("urls", 1), ("fetch", 1), ("urls.dead-letter", 1)]);
    let out = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .arg("gate")
        .args(["--set", &format!("kafka.brokers={b}")])
        .args(["--set", &format!("redis.url={}", redis.url())])
        .args(["--set", "robots.enabled=true"])
        .args(["--set", "robots.wait_topic=no-such-topic"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("the robots wait topic \"no-such-topic\" does not exist"),
        "{err}"
    );
}
