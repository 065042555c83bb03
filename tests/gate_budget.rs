//! Issue 25: per-host budgets, end to end on loopback — a real broker (tansu), a Redis of the
//! test's own, two `crawlsieve gate` processes in one consumer group sharing a namespace.

mod common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use common::kafka::{create_topics, produce, read_all, read_until, Tansu};
use common::{start_gate, stop_gate, url_events, OwnRedis};
use crawlsieve::events::{FetchEvent, RejectedEvent};

/// Published URL → times, and URL → audit reasons.
fn outcome(b: &str) -> (HashMap<String, usize>, HashMap<String, HashSet<String>>) {
    let mut published: HashMap<String, usize> = HashMap::new();
    for g in read_all(b, "fetch", 1, Duration::from_secs(1)) {
        let e: FetchEvent = serde_json::from_slice(&g.value).unwrap();
        *published.entry(e.url).or_default() += 1;
    }
    let mut audit: HashMap<String, HashSet<String>> = HashMap::new();
    for g in read_all(b, "audit", 1, Duration::from_secs(1)) {
        let r: RejectedEvent = serde_json::from_slice(&g.value).unwrap();
        audit
            .entry(r.url)
            .or_default()
            .insert(r.reason.code().to_string());
    }
    (published, audit)
}

/// The done-when of issue 25's budget part: two gates share a host budget of 20 through
/// Redis. A host with 60 new URLs (each sent twice, spread over both gates' partitions in
/// small batches, so the gates race) gets exactly 20 published, once each, the other 40
/// audited `host_budget`; a host under the budget gets everything. The surplus is taken back
/// out of the filter and out of the count: restarted with a budget of 30, the same 40 URLs
/// sent again get exactly 10 more through. Nothing is lost: every URL is published or audited.
#[test]
fn a_host_budget_holds_across_two_gates() {
    let kafka = Tansu::start();
    let b = kafka.brokers();
    let redis = OwnRedis::start(&[]);
    create_topics(
        &b,
        &[
            ("urls", 2),
            ("fetch", 1),
            ("audit", 1),
            ("urls.dead-letter", 1),
        ],
    );
    let big: Vec<String> = (0..60)
        .map(|i| format!("https://www.big-shop.com/item/{i}"))
        .collect();
    let small: Vec<String> = (0..8)
        .map(|i| format!("https://small-blog.net/post/{i}"))
        .collect();
    let mut input = Vec::new();
    for round in 0..2 {
        for (i, u) in big.iter().enumerate() {
            input.push(u.clone());
            if i % 7 == round {
                input.push(small[i % small.len()].clone());
            }
        }
    }
    input.extend(small.iter().cloned());
    produce(&b, "urls", 2, &url_events(&input));

    let sets = |budget: u64, group: &str| -> Vec<String> {
        vec![
            format!("kafka.brokers={b}"),
            format!("kafka.group_id={group}"),
            "kafka.audit_topic=audit".into(),
            "kafka.batch_size=8".into(),
            "kafka.batch_linger_ms=5".into(),
            "kafka.consumer.\"session.timeout.ms\"=6000".into(),
            "kafka.consumer.\"heartbeat.interval.ms\"=500".into(),
            format!("redis.url={}", redis.url()),
            "redis.namespace=budget".into(),
            "redis.fp_rate=1e-9".into(),
            format!("redis.max_new_urls_per_host={budget}"),
        ]
    };
    let gates = [
        start_gate(&sets(20, "budget-1")),
        start_gate(&sets(20, "budget-1")),
    ];
    let want = 20 + small.len();
    read_until(&b, "fetch", 1, Duration::from_secs(60), |got| {
        got.len() >= want
    });
    // Every input message judged: 60 + 60 of the big host audited or published.
    let judged = |b: &str, n: usize| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let (p, a) = outcome(b);
            let big_seen = big
                .iter()
                .filter(|u| p.contains_key(*u) || a.contains_key(*u))
                .count();
            if big_seen >= n || std::time::Instant::now() > deadline {
                return (p, a);
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    };
    let (published, audit) = judged(&b, big.len());
    std::thread::sleep(Duration::from_secs(2)); // the idle gates send their corrections
    for mut g in gates {
        stop_gate(&mut g);
    }
    let big_published: Vec<&String> = big.iter().filter(|u| published.contains_key(*u)).collect();
    assert_eq!(big_published.len(), 20, "exactly the budget gets through");
    for u in &big {
        let times = published.get(u).copied().unwrap_or(0);
        let budgeted = audit.get(u).is_some_and(|r| r.contains("host_budget"));
        assert!(times <= 1, "{u} published {times} times");
        assert!(
            times == 1 || budgeted,
            "{u} lost: neither published nor audited"
        );
        assert!(!(times == 1 && budgeted), "{u} both published and rejected");
    }
    for u in &small {
        assert_eq!(published.get(u), Some(&1), "{u}: a host under budget");
    }
    let first: HashSet<String> = big_published.into_iter().cloned().collect();
    let mut con = redis.con();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("cs:budget:*")
        .query(&mut con)
        .unwrap();
    assert_eq!(keys.len(), 1, "one hash per namespace and window: {keys:?}");
    let count: i64 = redis::cmd("HGET")
        .arg(&keys[0])
        .arg("www.big-shop.com")
        .query(&mut con)
        .unwrap();
    assert_eq!(count, 20, "the counter holds what was published");

    // A raised budget: the surplus is new again, and 10 more fit. A new consumer group reads
    // the whole input again: what was published is a duplicate now, the surplus is new. (The
    // same group restarted at once sometimes got no assignment on tansu within a minute: see
    // the session notes.)
    let surplus: Vec<String> = big
        .iter()
        .filter(|u| !first.contains(*u))
        .cloned()
        .collect();
    assert_eq!(surplus.len(), 40);
    produce(&b, "urls", 2, &url_events(&surplus));
    let gates = [
        start_gate(&sets(30, "budget-2")),
        start_gate(&sets(30, "budget-2")),
    ];
    read_until(&b, "fetch", 1, Duration::from_secs(60), |got| {
        got.len() >= want + 10
    });
    // Every input message judged by the second group (its committed offsets reach the end).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while common::kafka::committed(&b, "budget-2", "urls", 2)
        .values()
        .sum::<i64>()
        < (input.len() + surplus.len()) as i64
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(300));
    }
    for mut g in gates {
        stop_gate(&mut g);
    }
    let (published, _) = outcome(&b);
    let big_now = big.iter().filter(|u| published.contains_key(*u)).count();
    assert_eq!(big_now, 30, "a raised budget lets exactly 10 more in");
    assert!(published.values().all(|&n| n == 1), "no repeats");
}

/// The budget under faults: two gates share a budget of 40 per host while one of them is
/// SIGKILLed again and again, Redis is paused (`CLIENT PAUSE` 2 s) and every client connection
/// is cut (`CLIENT KILL TYPE normal`) mid-run. Phase 1: every URL is published or audited
/// `host_budget` (lost = 0; repeats and the budget's overshoot counted and printed — a failed
/// budget exchange publishes, by design). Phase 2, the check that no rejected URL kept a place
/// in the filter (which would lose it for good): a new group with the budget raised to 10,000
/// reads the same input, and every URL not published in phase 1 is published now.
/// `CRAWLSIEVE_FAULT_SEEDS=N` runs N seeds (default 1).
#[test]
fn no_url_lost_for_a_budget_when_gates_are_killed_and_redis_stalls() {
    let seeds: u64 = common::env_or("CRAWLSIEVE_FAULT_SEEDS", 1);
    for seed in 0..seeds {
        budget_faults(seed);
    }
}

fn budget_faults(seed: u64) {
    let kafka = Tansu::start();
    let b = kafka.brokers();
    let redis = OwnRedis::start(&[]);
    create_topics(
        &b,
        &[
            ("urls", 4),
            ("fetch", 1),
            ("audit", 1),
            ("urls.dead-letter", 1),
        ],
    );
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ (seed.wrapping_mul(0xD134_2543_DE82_EF95) | 1);
    let mut rnd = move |lo: u64, hi: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        lo + x % (hi - lo)
    };
    const HOSTS: u64 = 6;
    const BUDGET: usize = 40;
    let urls: Vec<String> = (0..1500)
        .map(|i| format!("https://shop-{}.example.com/item/{i}", rnd(0, HOSTS)))
        .collect();
    // Each URL once, a tenth of them again later (a repeat is a duplicate, not a new URL).
    let mut input = urls.clone();
    input.extend(urls.iter().step_by(10).cloned());
    let sets = |group: &str, budget: usize| -> Vec<String> {
        vec![
            format!("kafka.brokers={b}"),
            format!("kafka.group_id={group}"),
            "kafka.audit_topic=audit".into(),
            "kafka.batch_linger_ms=10".into(),
            "kafka.batch_size=50".into(),
            "kafka.consumer.\"session.timeout.ms\"=6000".into(),
            "kafka.consumer.\"heartbeat.interval.ms\"=500".into(),
            format!("redis.url={}", redis.url()),
            "redis.namespace=budget".into(),
            "redis.fp_rate=1e-9".into(),
            "redis.timeout=1s".into(),
            "redis.claim_ttl=3s".into(),
            format!("redis.max_new_urls_per_host={budget}"),
        ]
    };
    let one = sets("budget-faults", BUDGET);
    let mut a = start_gate(&one);
    let mut g = start_gate(&one);
    let mut kills = 0;
    for (i, chunk) in input.chunks(300).enumerate() {
        produce(&b, "urls", 4, &url_events(chunk));
        std::thread::sleep(Duration::from_millis(rnd(200, 1200)));
        if i % 2 == 0 {
            let _ = g.kill();
            let _ = g.wait();
            kills += 1;
            std::thread::sleep(Duration::from_millis(rnd(0, 800)));
            g = start_gate(&one);
        }
        match i {
            1 => {
                let _: () = redis::cmd("CLIENT")
                    .arg("PAUSE")
                    .arg(2000)
                    .arg("ALL")
                    .query(&mut redis.con())
                    .unwrap();
            }
            3 => {
                let _: redis::Value = redis::cmd("CLIENT")
                    .arg("KILL")
                    .arg("TYPE")
                    .arg("normal")
                    .arg("SKIPME")
                    .arg("yes")
                    .query(&mut redis.con())
                    .unwrap();
            }
            _ => {}
        }
    }
    // Phase 1 ends when every URL is published or audited `host_budget`.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let (published, audit) = loop {
        let (p, au) = outcome(&b);
        let judged = urls
            .iter()
            .all(|u| p.contains_key(u) || au.get(u).is_some_and(|r| r.contains("host_budget")));
        if judged || std::time::Instant::now() > deadline {
            break (p, au);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    std::thread::sleep(Duration::from_secs(2));
    for c in [&mut a, &mut g] {
        stop_gate(c);
    }
    let lost: Vec<&String> = urls
        .iter()
        .filter(|u| {
            !published.contains_key(*u) && !audit.get(*u).is_some_and(|r| r.contains("host_budget"))
        })
        .collect();
    let repeats: usize = published.values().map(|n| n - 1).sum();
    let mut per_host: HashMap<String, usize> = HashMap::new();
    for u in published.keys() {
        *per_host
            .entry(u.split('/').nth(2).unwrap().to_string())
            .or_default() += 1;
    }
    let mut over: Vec<(String, usize)> = per_host.into_iter().collect();
    over.sort();
    println!(
        "budget faults seed {seed}: {} URLs ({} messages), {HOSTS} hosts, budget {BUDGET}, {kills} SIGKILLs, Redis paused 2 s and connections cut: lost {}, repeats {repeats}, published per host {over:?}",
        urls.len(),
        input.len(),
        lost.len()
    );
    assert!(
        lost.is_empty(),
        "lost in phase 1: {:?}",
        &lost[..lost.len().min(5)]
    );
    // The budget held, give or take what a failure lets through (a killed gate's adopted batch,
    // a failed exchange publishing its batch): never near the ~250 URLs per host of no budget.
    // (Fewer than the budget is possible: a correction that failed leaves the count high.)
    for (host, n) in &over {
        assert!(
            *n <= BUDGET + 3 * 50,
            "{host}: {n} published, budget {BUDGET}"
        );
    }

    // Phase 2: what was rejected holds no place in the filter.
    let before: HashMap<String, usize> = published.clone();
    let mut c = start_gate(&sets("budget-faults-2", 10_000));
    let want: Vec<&String> = urls.iter().filter(|u| !before.contains_key(*u)).collect();
    assert!(
        want.len() >= urls.len() - HOSTS as usize * (BUDGET + 3 * 50),
        "most URLs were over budget: {}",
        want.len()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let published = loop {
        let (p, _) = outcome(&b);
        if want.iter().all(|u| p.contains_key(*u)) || std::time::Instant::now() > deadline {
            break p;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    stop_gate(&mut c);
    let lost: Vec<&&String> = want
        .iter()
        .filter(|u| !published.contains_key(**u))
        .collect();
    // Published in phase 1 and again in phase 2 (a repeat, not a loss).
    let again = before
        .iter()
        .filter(|(u, n)| published.get(*u).copied().unwrap_or(0) > **n)
        .count();
    println!(
        "budget faults seed {seed}, phase 2 (budget 10,000, new group): {} rejected before, lost {} (kept a filter place), published again {again}",
        want.len(),
        lost.len()
    );
    assert!(
        lost.is_empty(),
        "rejected host_budget but never published with a raised budget: {:?}",
        &lost[..lost.len().min(5)]
    );
}
