//! `crawlsieve gate` against a real Kafka-protocol broker (tansu, one per test) and real Redis
//! (the test binary's shared one, `common::shared_redis`, and servers of the tests' own where one is stopped).

mod common;

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::kafka::{committed, create_topics, produce, read_all, read_until, Got, Tansu};
use common::{free_port, http_get, metric, promtool_check, shared_redis, OwnRedis};
use crawlsieve::config::Config as GateConfig;
use crawlsieve::events::{DeadLetter, DeadLetterCode, FetchEvent, RejectedEvent, UrlEvent};
use crawlsieve::gate::{GateCore, GateStaged};
use crawlsieve::observe::FilterMetrics;
use crawlsieve::redis_filter::{RedisConfig, RedisFilter};
use crawlsieve::stage::{Batch, Dest, Stage, Staged};
use crawlsieve::url::Reason;

/// A namespace of this test run's own (dropped by [`Ns`]'s drop).
struct Ns {
    name: String,
    url: String,
}

impl Ns {
    fn new(tag: &str, url: &str) -> Ns {
        let name = format!("gate-{tag}-{}-{}", std::process::id(), free_port());
        let _ = RedisFilter::drop_namespace(&RedisConfig::new(url), &name);
        Ns {
            name,
            url: url.to_string(),
        }
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = RedisFilter::drop_namespace(&RedisConfig::new(&self.url), &self.name);
    }
}

/// Settings every test gate gets: its broker, group, namespace, and a short group session
/// (tansu joins a group in session.timeout/2).
fn base_sets(brokers: &str, group: &str, ns: &str, redis: &str) -> Vec<String> {
    vec![
        format!("kafka.brokers={brokers}"),
        format!("kafka.group_id={group}"),
        format!("redis.namespace={ns}"),
        format!("redis.url={redis}"),
        "redis.fp_rate=1e-9".into(), // 64-bit fingerprints: no false drop in a test
        "redis.timeout=1s".into(),
        "kafka.consumer.\"session.timeout.ms\"=6000".into(),
        "kafka.consumer.\"heartbeat.interval.ms\"=500".into(),
        "kafka.batch_linger_ms=10".into(),
    ]
}

/// A `crawlsieve gate` child process.
struct GateProc {
    child: Option<Child>,
}

impl GateProc {
    fn start(sets: &[String], extra: &[&str]) -> GateProc {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
        cmd.arg("gate");
        for s in sets {
            cmd.arg("--set").arg(s);
        }
        cmd.args(extra).stdout(Stdio::null()).stderr(Stdio::piped());
        // CRAWLSIEVE_TEST_GATE_LOG=DIR: each gate's log (CRAWLSIEVE_LOG as set) in DIR.
        if let Ok(dir) = std::env::var("CRAWLSIEVE_TEST_GATE_LOG") {
            let n = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            cmd.stderr(std::fs::File::create(format!("{dir}/gate-{n}.log")).unwrap());
        }
        GateProc {
            child: Some(cmd.spawn().expect("start crawlsieve gate")),
        }
    }

    fn signal(&self, sig: i32) {
        if let Some(c) = &self.child {
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }

    /// SIGKILL and reap.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Wait for the exit (at most `limit`); returns the status and stderr.
    fn wait(&mut self, limit: Duration) -> (std::process::ExitStatus, String) {
        let mut c = self.child.take().expect("running");
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                let mut err = String::new();
                use std::io::Read;
                if let Some(mut e) = c.stderr.take() {
                    e.read_to_string(&mut err).unwrap();
                }
                return (st, err);
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let out = c.wait_with_output().unwrap();
                panic!(
                    "the gate did not exit within {limit:?}; stderr:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for GateProc {
    fn drop(&mut self) {
        self.kill();
    }
}

fn fetch_events(got: &[Got]) -> Vec<FetchEvent> {
    got.iter()
        .map(|g| serde_json::from_slice::<FetchEvent>(&g.value).expect("a fetch event"))
        .collect()
}

/// Every message of a one-partition topic, checked against `schemas/<schema>.v1.json` and
/// decoded.
fn read_checked<T: serde::de::DeserializeOwned>(b: &str, topic: &str, schema: &str) -> Vec<T> {
    let got = read_all(b, topic, 1, Duration::from_secs(1));
    assert_schema(schema, &got);
    got.iter()
        .map(|g| serde_json::from_slice(&g.value).unwrap())
        .collect()
}

/// Every message of `got` is valid against `schemas/<name>.v1.json`.
fn assert_schema(name: &str, got: &[Got]) {
    let v = common::schema_validator(name);
    for g in got {
        let doc: serde_json::Value = serde_json::from_slice(&g.value).unwrap();
        if let Err(e) = v.validate(&doc) {
            panic!("{name}: {e}: {doc}");
        }
    }
}

/// A realistic input: the first `n` lines of the shared real candidate corpus (junk included),
/// half of them as JSON events with a source page (so relative candidates resolve), repeats as
/// they come, and a poison message (not UTF-8, not JSON, schema-invalid, empty) every 199th.
fn workload(n: usize) -> Vec<Vec<u8>> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "xz -dc {} | head -n {n}",
            common::shared("urls/candidates.txt.xz").display()
        ))
        .output()
        .expect("xz");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut vals = Vec::with_capacity(n);
    for (i, line) in text.lines().enumerate() {
        if vals.len() >= n {
            break;
        }
        if i % 199 == 7 {
            vals.push(match (i / 199) % 4 {
                0 => [&[0xff_u8, b' '][..], format!("poison-{i}").as_bytes()].concat(),
                1 => format!("{{\"url\": \"poison-{i}").into_bytes(),
                2 => format!("{{\"ulr\": \"poison-{i}\"}}").into_bytes(),
                _ => Vec::new(),
            });
        }
        if i % 2 == 0 {
            let ev = serde_json::json!({
                "url": line,
                "source": format!("https://site{}.example/docs/", i % 50),
                "crawl_id": "c1",
            });
            vals.push(ev.to_string().into_bytes());
        } else {
            vals.push(line.as_bytes().to_vec());
        }
    }
    vals.truncate(n);
    vals
}

/// What a correct gate must emit for `vals`: the canonical URL of every message that decodes
/// and passes the sieve (the gate's default rules), and the values that must be dead letters.
fn expected(vals: &[Vec<u8>]) -> (HashSet<String>, usize) {
    use crawlsieve::sieve::Sieve;
    use crawlsieve::url::{Canonicalizer, Validator};
    let mut sieve = Sieve::new(Validator::default(), Canonicalizer::default(), None);
    let mut urls = HashSet::new();
    let mut dead = 0;
    for v in vals {
        match UrlEvent::decode(v, crawlsieve::events::DEFAULT_MAX_MESSAGE_BYTES) {
            Err(_) => dead += 1,
            Ok(ev) => {
                sieve.base = ev.source.as_deref().and_then(|s| url::Url::parse(s).ok());
                if let Ok(c) = sieve.classify(ev.url.as_bytes(), false) {
                    if c.starts_with("https://") || c.starts_with("http://") {
                        urls.insert(c.to_string());
                    }
                }
            }
        }
    }
    (urls, dead)
}

/// Read the fetch topic until every expected URL is there; returns (events, missing).
fn await_fetch(b: &str, want: &HashSet<String>, limit: Duration) -> (Vec<FetchEvent>, Vec<String>) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut parsed = 0;
    let got = read_until(b, "fetch", 4, limit, |got| {
        for g in &got[parsed..] {
            seen.insert(serde_json::from_slice::<FetchEvent>(&g.value).unwrap().url);
        }
        parsed = got.len();
        want.iter().all(|u| seen.contains(u))
    });
    let evs = fetch_events(&got);
    let have: HashSet<&str> = evs.iter().map(|e| e.url.as_str()).collect();
    let mut missing: Vec<String> = want
        .iter()
        .filter(|u| !have.contains(u.as_str()))
        .cloned()
        .collect();
    missing.sort();
    (evs, missing)
}

/// A broker with the usual topics (`urls` and `fetch` with 4 partitions), a namespace, and a
/// workload with what it must produce.
struct Setup {
    _k: Tansu,
    b: String,
    ns: Ns,
    vals: Vec<Vec<u8>>,
    want: HashSet<String>,
    want_dead: usize,
}

fn setup(tag: &str, n: usize, redis: &str) -> Setup {
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(&b, &[("urls", 4), ("fetch", 4), ("urls.dead-letter", 1)]);
    let vals = workload(n);
    let (want, want_dead) = expected(&vals);
    Setup {
        _k: k,
        b,
        ns: Ns::new(tag, redis),
        vals,
        want,
        want_dead,
    }
}

/// Read the fetch topic until every expected URL is there; fail naming some that are not.
fn assert_all_fetched(b: &str, want: &HashSet<String>, limit: Duration) -> Vec<FetchEvent> {
    let (evs, missing) = await_fetch(b, want, limit);
    assert!(
        missing.is_empty(),
        "{} of {} URLs lost, e.g. {:?}",
        missing.len(),
        want.len(),
        &missing[..missing.len().min(5)]
    );
    evs
}

/// Produce `vals` in `chunks` pieces, calling `between(i)` after each.
fn produce_in_chunks(b: &str, vals: &[Vec<u8>], chunks: usize, mut between: impl FnMut(usize)) {
    let size = vals.len().div_ceil(chunks);
    for (i, c) in vals.chunks(size).enumerate() {
        produce(b, "urls", 4, c);
        between(i);
    }
}

/// The staged records for `dest`, decoded.
fn staged_events<T: serde::de::DeserializeOwned>(st: &GateStaged, dest: Dest) -> Vec<T> {
    (0..st.len())
        .map(|i| st.get(i))
        .filter(|r| r.0 == dest)
        .map(|r| serde_json::from_slice(r.2).unwrap())
        .collect()
}

/// The outbox protocol in the gate: staging takes the URLs (their fetch events go into the
/// gate's outbox with the check-and-set), so another gate answers them "seen" at once without
/// waiting; a gate that goes away before its batch was delivered leaves the entry, and another
/// gate adopts it (lease gone) and publishes the same fetch events.
#[test]
fn stage_takes_urls_and_a_gone_gates_outbox_is_adopted() {
    let ns = Ns::new("core", shared_redis());
    let gate_cfg = || {
        let mut cfg = GateConfig::default();
        cfg.redis.url = shared_redis().to_string();
        cfg.redis.namespace = ns.name.clone();
        cfg.redis.claim_ttl.0 = Duration::from_secs(1);
        // Were the gate still waiting on claims, it would wait this long.
        cfg.redis.busy_wait.0 = Duration::from_secs(5);
        cfg.kafka.audit_topic = Some("audit".into());
        cfg
    };
    let mut core = GateCore::new(gate_cfg(), FilterMetrics::unregistered());
    let mut batch = Batch::default();
    for (i, v) in [
        "https://a.example/x?utm_source=1",
        "https://A.example/x",
        "javascript:void(0)",
        "{\"url\": 5}",
        "https://b.example/y",
    ]
    .iter()
    .enumerate()
    {
        batch.push(0, i as i64, Some(b"k"), Some(v.as_bytes()));
    }
    let mut st = Staged::default();
    core.stage("in", &batch, &mut st).unwrap();
    assert_eq!(
        st.emitted, 2,
        "a.example/x once (the repeat is in the batch), b.example/y"
    );
    assert_eq!(st.pending.duplicates, 1);
    let (_, key, payload) = (0..st.len())
        .map(|i| st.get(i))
        .find(|r| r.0 == Dest::Output)
        .unwrap();
    assert_eq!(
        key,
        Some(&b"a.example"[..]),
        "fetch events are keyed by host"
    );
    let fe: FetchEvent = serde_json::from_slice(payload).unwrap();
    assert_eq!(fe.url, "https://a.example/x");
    assert_eq!(fe.original, "https://a.example/x?utm_source=1");
    let first: Vec<FetchEvent> = staged_events(&st, Dest::Output);
    let audit: Vec<RejectedEvent> = staged_events(&st, Dest::Audit);
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].reason, Reason::NonFetchableScheme);
    let dead: Vec<DeadLetter> = staged_events(&st, Dest::DeadLetter);
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].error, dead[0].offset),
        (DeadLetterCode::SchemaInvalid, 3)
    );
    // The same worker staging the next batch while this one is in flight does not emit its
    // URLs again (they are on their way).
    let mut next = Staged::default();
    core.stage("in", &batch, &mut next).unwrap();
    assert_eq!((next.emitted, next.pending.duplicates), (0, 3));
    // Another gate answers them "seen" at once: nobody waits on anyone.
    let mut other = GateCore::new(gate_cfg(), FilterMetrics::unregistered());
    let mut st2 = Staged::default();
    let t = Instant::now();
    other.stage("in", &batch, &mut st2).unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "it did not wait");
    assert_eq!((st2.emitted, st2.pending.duplicates), (0, 3));
    // The first gate goes away before its batch was delivered: its entry stays, and the other
    // gate adopts it (at its next look, every half lease) and publishes the same events.
    drop(core);
    std::thread::sleep(Duration::from_millis(600));
    other.stage("in", &Batch::default(), &mut st2).unwrap();
    assert_eq!((st2.emitted, st2.pending.adopted), (2, 2));
    let adopted: Vec<FetchEvent> = staged_events(&st2, Dest::Output);
    assert_eq!(
        adopted, first,
        "the very fetch events the first gate staged"
    );
    // Delivered and settled: nothing is left to adopt, and the URLs stay seen.
    other.finish(&mut st2).unwrap();
    other.idle().unwrap();
    let mut third = GateCore::new(gate_cfg(), FilterMetrics::unregistered());
    let mut st3 = Staged::default();
    third.stage("in", &batch, &mut st3).unwrap();
    assert_eq!(
        (st3.emitted, st3.pending.adopted, st3.pending.duplicates),
        (0, 0, 3)
    );
}

#[test]
fn end_to_end_events_rejections_dead_letters_and_pattern_verdicts() {
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(
        &b,
        &[
            ("urls", 3),
            ("fetch", 3),
            ("audit", 1),
            ("urls.dead-letter", 1),
        ],
    );
    let ns = Ns::new("e2e", shared_redis());
    let ns2 = Ns::new("e2e2", shared_redis());
    // A verdict written as the render stage will: pages of this pattern are near-identical.
    let pat = crawlsieve::url::pattern::pattern("https://tpl.example/p/1");
    {
        let mut conn =
            crawlsieve::redis_filter::Conn::connect(&RedisConfig::new(shared_redis())).unwrap();
        crawlsieve::pattern_verdicts::write(&mut conn, &ns.name, &pat, 3, 0.97).unwrap();
    }
    let big = format!("https://big.example/{}", "a".repeat(5000));
    let mut lines: Vec<String> = vec![
        "https://shop.example/item?id=1&utm_source=x".into(),
        "\"https://shop.example/item?id=1\"".into(),
        r#"{"url":"a.html","source":"https://docs.example/guide/","depth":2,"crawl_id":"c1","metadata":{"k":[1,2]}}"#.into(),
        r#"{"url":"javascript:void(0)"}"#.into(),
        "function(){return 1}".into(),
        "{\"url\": ".into(),
        r#"{"ulr":"https://x.example/"}"#.into(),
        "   ".into(),
        big,
        format!(r#"{{"url":"https://other.example/x","namespace":"{}"}}"#, ns2.name),
        "https://tpl.example/p/7".into(),
        "https://tpl.example/p/8".into(),
        // An entity-encoded loopback address in an attribute (issue 25): private_address.
        r#"{"url":"http://&#x31;27.0.0.1/admin","context":"html_attr"}"#.into(),
        "http://0xa9fea9fe/latest/meta-data/".into(),
        // Spider traps (issue 25): a loop, and a page echoing its own path into a link.
        "https://trap.example/a/b/a/b/a/b/".into(),
        r#"{"url":"/search/all/search/all","source":"https://echo.example/search/all"}"#.into(),
    ];
    for i in 0..300 {
        let j = i % 150; // each generated URL twice
        lines.push(format!("https://h{}.example/page/{j}", j % 7));
    }
    let mut vals: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
    vals.insert(5, b"\xff\xfe not utf-8".to_vec());
    produce(&b, "urls", 3, &vals);

    let mut sets = base_sets(&b, "g1", &ns.name, shared_redis());
    sets.push("kafka.audit_topic=audit".into());
    sets.push("kafka.max_message_bytes=4096".into());
    let mut g = GateProc::start(&sets, &["--idle-exit", "3s"]);
    let (st, err) = g.wait(Duration::from_secs(90));
    assert!(st.success(), "gate failed: {err}");

    let fetch = read_all(&b, "fetch", 3, Duration::from_secs(2));
    assert_schema("fetch-event", &fetch);
    let evs = fetch_events(&fetch);
    let urls: Vec<&str> = evs.iter().map(|e| e.url.as_str()).collect();
    let distinct: HashSet<&str> = urls.iter().copied().collect();
    assert_eq!(
        urls.len(),
        distinct.len(),
        "one gate, no crash: each URL once"
    );
    // 150 generated + shop item + docs page + other.example.
    assert_eq!(distinct.len(), 153, "{err}");
    assert!(distinct.contains("https://shop.example/item?id=1"));
    assert!(
        !urls.iter().any(|u| u.starts_with("https://tpl.example/")),
        "pattern verified similar"
    );
    let docs = evs
        .iter()
        .find(|e| e.url == "https://docs.example/guide/a.html")
        .expect("relative URL resolved against its source");
    assert_eq!(
        (docs.depth, docs.crawl_id.as_deref()),
        (Some(2), Some("c1"))
    );
    assert_eq!(
        docs.metadata.as_ref().unwrap()["k"],
        serde_json::json!([1, 2])
    );
    let other = evs
        .iter()
        .find(|e| e.url == "https://other.example/x")
        .unwrap();
    assert_eq!(other.namespace, ns2.name, "an event may name its namespace");
    // Keyed by host: one host, one partition.
    let mut part_of: HashMap<&str, i32> = HashMap::new();
    for (g, e) in fetch.iter().zip(&evs) {
        assert_eq!(g.key.as_deref(), Some(e.host.as_bytes()));
        assert_eq!(
            *part_of.entry(e.host.as_str()).or_insert(g.partition),
            g.partition
        );
    }

    let audit: Vec<RejectedEvent> = read_checked(&b, "audit", "rejected-event");
    let reasons: HashSet<Reason> = audit.iter().map(|r| r.reason).collect();
    assert!(reasons.contains(&Reason::NonFetchableScheme), "{reasons:?}");
    assert!(reasons.contains(&Reason::PatternSimilar), "{reasons:?}");
    let mut private: Vec<&str> = audit
        .iter()
        .filter(|r| r.reason == Reason::PrivateAddress)
        .map(|r| r.url.as_str())
        .collect();
    private.sort();
    assert_eq!(
        private,
        [
            "http://&#x31;27.0.0.1/admin",
            "http://0xa9fea9fe/latest/meta-data/"
        ]
    );
    assert_eq!(
        audit
            .iter()
            .filter(|r| r.reason == Reason::PatternSimilar)
            .count(),
        2
    );

    let dead: Vec<DeadLetter> = read_checked(&b, "urls.dead-letter", "dead-letter");
    let mut codes: Vec<&str> = dead.iter().map(|d| d.error.code()).collect();
    codes.sort();
    assert_eq!(
        codes,
        [
            "empty",
            "not_json",
            "not_utf8",
            "schema_invalid",
            "too_large"
        ]
    );
    // The offset advanced past every poison message: everything is committed.
    let c = committed(&b, "g1", "urls", 3);
    let total: i64 = c.values().sum();
    assert_eq!(total, vals.len() as i64, "committed offsets {c:?}");
    assert!(err.contains("consumed"), "a closing summary: {err}");
}

/// The at-least-once contract under crashes: two gates in one group, one SIGKILLed four times at
/// pseudo-random moments while input keeps arriving, and restarted. Every distinct valid
/// canonical URL reaches the fetch topic; repeats are counted; every malformed message is a
/// dead letter.
#[test]
fn no_url_lost_when_a_gate_is_killed_repeatedly() {
    let st = setup("kill", 200_000, shared_redis());
    let (b, ns, vals, want, want_dead) = (&st.b, &st.ns, &st.vals, &st.want, st.want_dead);
    let mut sets = base_sets(b, "g-kill", &ns.name, shared_redis());
    sets.push("kafka.batch_size=500".into());
    let mut a = GateProc::start(&sets, &[]);
    let mut bgate = GateProc::start(&sets, &[]);
    // Pseudo-random but reproducible pauses (xorshift).
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = |lo: u64, hi: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Duration::from_millis(lo + x % (hi - lo))
    };
    let mut kills = 0;
    produce_in_chunks(b, vals, 8, |i| {
        if i % 2 == 1 {
            std::thread::sleep(rnd(300, 2500));
            bgate.kill(); // SIGKILL: no commit, no goodbye
            kills += 1;
            std::thread::sleep(rnd(0, 1500));
            bgate = GateProc::start(&sets, &[]);
        }
    });
    assert!(kills >= 3);
    let evs = assert_all_fetched(b, want, Duration::from_secs(300));
    let extra: Vec<&FetchEvent> = evs.iter().filter(|e| !want.contains(&e.url)).collect();
    assert!(
        extra.is_empty(),
        "emitted URLs not in the input: {:?}",
        &extra[..extra.len().min(3)]
    );
    let dead = read_until(b, "urls.dead-letter", 1, Duration::from_secs(120), |g| {
        g.len() >= want_dead
    });
    let dead_at: HashSet<(i32, i64)> = dead
        .iter()
        .map(|g| {
            let d: DeadLetter = serde_json::from_slice(&g.value).unwrap();
            (d.partition, d.offset)
        })
        .collect();
    // Every malformed input message (found by reading the input back) is a dead letter.
    let input = read_all(b, "urls", 4, Duration::from_secs(2));
    let malformed: HashSet<(i32, i64)> = input
        .iter()
        .filter(|g| {
            UrlEvent::decode(&g.value, crawlsieve::events::DEFAULT_MAX_MESSAGE_BYTES).is_err()
        })
        .map(|g| (g.partition, g.offset))
        .collect();
    assert_eq!(malformed.len(), want_dead);
    assert!(
        malformed.is_subset(&dead_at),
        "{} malformed messages not dead-lettered",
        malformed.difference(&dead_at).count()
    );
    println!(
        "kill test: {} input, {} distinct valid URLs, {} fetch events ({} repeats after {kills} SIGKILLs), {} dead letters ({} distinct)",
        vals.len(),
        want.len(),
        evs.len(),
        evs.len() - want.len(),
        dead.len(),
        dead_at.len()
    );
    a.signal(libc::SIGTERM);
    bgate.signal(libc::SIGTERM);
    let (st, err) = a.wait(Duration::from_secs(60));
    assert!(st.success(), "{err}");
    let (st, err) = bgate.wait(Duration::from_secs(60));
    assert!(st.success(), "{err}");
}

/// Issue 13, item 9: the same links arrive on several partitions within milliseconds (a
/// crawler extracting them from several pages at once); two gates of one group each get some
/// of the copies. Claims make the second gate wait for the first: few repeats, none lost.
#[test]
fn two_gates_publish_links_seen_on_several_partitions_once() {
    let st = setup("multi", common::env_or("MULTI_N", 40_000), shared_redis());
    let (b, ns, vals, want) = (&st.b, &st.ns, &st.vals, &st.want);
    let mut sets = base_sets(b, "g-multi", &ns.name, shared_redis());
    sets.push("kafka.batch_size=200".into());
    let ports = [free_port(), free_port()];
    let gates: Vec<GateProc> = ports
        .iter()
        .map(|p| {
            let mut s = sets.clone();
            s.push(format!("metrics.listen=127.0.0.1:{p}"));
            GateProc::start(&s, &[])
        })
        .collect();
    // Both must hold partitions before the stream starts, or one gate does all the work.
    let t = Instant::now();
    let ready = |p: u16| {
        std::net::TcpStream::connect(("127.0.0.1", p)).is_ok()
            && http_get(p, "/readyz").starts_with("HTTP/1.1 200")
    };
    while !ports.iter().all(|&p| ready(p)) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the gates never both got partitions"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Each value three times in a row: produce() puts message i on partition i % 4, so the
    // copies land on three different partitions, moments apart.
    let tripled: Vec<Vec<u8>> = vals
        .iter()
        .flat_map(|v| [v.clone(), v.clone(), v.clone()])
        .collect();
    produce(b, "urls", 4, &tripled);
    let evs = assert_all_fetched(b, want, Duration::from_secs(300));
    let distinct: HashSet<&str> = evs.iter().map(|e| e.url.as_str()).collect();
    let repeats = evs.len() - distinct.len();

    println!(
        "two gates, every link on 3 partitions: {} input messages, {} distinct URLs, {} fetch events, {repeats} repeats ({:.3}%)",
        tripled.len(),
        want.len(),
        evs.len(),
        100.0 * repeats as f64 / want.len() as f64
    );
    // Check-then-insert gave 3.6–5% here; waiting on claims alone 0.2% (two gates each
    // waiting on the other's batch in flight); yielding first: 0.
    assert!(
        repeats * 1000 < want.len(),
        "{repeats} repeats over {} URLs (goal: under 0.1%)",
        want.len()
    );
    for g in &gates {
        g.signal(libc::SIGTERM);
    }
    for mut g in gates {
        let (st, err) = g.wait(Duration::from_secs(60));
        assert!(st.success(), "{err}");
    }
}

/// A second gate joins mid-stream and later leaves (SIGTERM): the partitions move twice and
/// nothing is lost.
#[test]
fn a_consumer_joining_and_leaving_loses_nothing() {
    let st = setup("rebalance", 40_000, shared_redis());
    let (b, ns, vals, want) = (&st.b, &st.ns, &st.vals, &st.want);
    let mut sets = base_sets(b, "g-rebalance", &ns.name, shared_redis());
    sets.push("kafka.batch_size=200".into());
    let _a = GateProc::start(&sets, &[]);
    let mut second: Option<GateProc> = None;
    produce_in_chunks(b, vals, 4, |i| match i {
        0 => {
            second = Some(GateProc::start(&sets, &[]));
            std::thread::sleep(Duration::from_secs(4)); // joined: partitions split
        }
        1 => {
            std::thread::sleep(Duration::from_secs(3));
            let mut g = second.take().unwrap();
            g.signal(libc::SIGTERM); // leaves the group after committing
            let (st, err) = g.wait(Duration::from_secs(60));
            assert!(st.success(), "{err}");
            let consumed: u64 = err
                .split("consumed ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            assert!(
                consumed > 0,
                "the second gate got partitions and worked: {err}"
            );
        }
        _ => {}
    });
    assert_all_fetched(b, want, Duration::from_secs(180));
}

/// Redis goes away mid-stream: the gate pauses (metrics say so), commits nothing, drops
/// nothing, and resumes when Redis is back.
#[test]
fn redis_outage_pauses_and_resumes_without_loss() {
    let mut redis = OwnRedis::start(&["--appendonly", "yes"]);
    let st = setup("outage", 30_000, &redis.url());
    let (b, ns, vals, want) = (&st.b, &st.ns, &st.vals, &st.want);
    let mport = free_port();
    let mut sets = base_sets(b, "g-outage", &ns.name, &redis.url());
    sets.push(format!("metrics.listen=127.0.0.1:{mport}"));
    let _g = GateProc::start(&sets, &[]);
    let third = vals.len() / 3;
    produce(b, "urls", 4, &vals[..third]);
    let first = read_until(b, "fetch", 4, Duration::from_secs(60), |g| !g.is_empty());
    assert!(!first.is_empty(), "the gate emits before the outage");
    redis.kill();
    produce(b, "urls", 4, &vals[third..2 * third]);
    std::thread::sleep(Duration::from_secs(4));
    let m = http_get(mport, "/metrics");
    assert_eq!(metric(&m, "crawlsieve_gate_paused", ""), 1.0, "{m}");
    assert!(
        metric(
            &m,
            "crawlsieve_gate_backoff_retries_total",
            "cause=\"redis\""
        ) > 0.0
    );
    assert!(
        http_get(mport, "/readyz").starts_with("HTTP/1.1 503"),
        "not ready while paused"
    );
    let before = committed(b, "g-outage", "urls", 4);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        committed(b, "g-outage", "urls", 4),
        before,
        "nothing committed while Redis is away"
    );
    redis.restart();
    produce(b, "urls", 4, &vals[2 * third..]);
    assert_all_fetched(b, want, Duration::from_secs(180));
    let m = http_get(mport, "/metrics");
    assert_eq!(metric(&m, "crawlsieve_gate_paused", ""), 0.0);
    promtool_check(&m);
    assert!(http_get(mport, "/healthz").contains("ok"));
    assert!(
        http_get(mport, "/readyz").starts_with("HTTP/1.1 200"),
        "ready again"
    );
    // The final batch is emitted before it is committed: wait for the commit to catch up.
    let deadline = Instant::now() + Duration::from_secs(30);
    while committed(b, "g-outage", "urls", 4).values().sum::<i64>() < vals.len() as i64 {
        assert!(
            Instant::now() < deadline,
            "offsets did not catch up after the outage"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Issue 13, item 10: Redis restarts without its data mid-stream under two gates: the
/// namespace is created again (redis.create_missing), both gates go on and exit 0 at SIGTERM,
/// nothing is lost (what the lost filter had seen is published again: repeats, counted).
#[test]
fn redis_restarted_empty_under_two_gates_loses_nothing() {
    let mut redis = OwnRedis::start(&[]);
    let st = setup("wipe", 30_000, &redis.url());
    let (b, ns, vals, want) = (&st.b, &st.ns, &st.vals, &st.want);
    let sets = base_sets(b, "g-wipe", &ns.name, &redis.url());
    let mut gates = vec![GateProc::start(&sets, &[]), GateProc::start(&sets, &[])];
    let third = vals.len() / 3;
    produce(b, "urls", 4, &vals[..third]);
    let first = read_until(b, "fetch", 4, Duration::from_secs(60), |g| !g.is_empty());
    assert!(!first.is_empty(), "the gates emit before the wipe");
    redis.kill();
    std::thread::sleep(Duration::from_millis(500));
    redis.restart(); // empty: no persistence
    produce(b, "urls", 4, &vals[third..]);
    let evs = assert_all_fetched(b, want, Duration::from_secs(180));
    println!(
        "Redis wiped under two gates: {} distinct URLs, {} fetch events ({} repeats)",
        want.len(),
        evs.len(),
        evs.len() - want.len()
    );
    for g in &gates {
        g.signal(libc::SIGTERM);
    }
    for g in gates.iter_mut() {
        let (st, err) = g.wait(Duration::from_secs(60));
        assert!(st.success(), "a gate exited with an error: {err}");
    }
}

/// Issue 13, item 11: /readyz turns 503 when the Kafka cluster goes away, though the consumer
/// still believes it holds its partitions.
#[test]
fn readyz_fails_while_kafka_is_unreachable() {
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(&b, &[("urls", 1), ("fetch", 1), ("urls.dead-letter", 1)]);
    let ns = Ns::new("kready", shared_redis());
    let mport = free_port();
    let mut sets = base_sets(&b, "g-kready", &ns.name, shared_redis());
    sets.push(format!("metrics.listen=127.0.0.1:{mport}"));
    let mut g = GateProc::start(&sets, &[]);
    let ready = |want: &str| {
        std::net::TcpStream::connect(("127.0.0.1", mport)).is_ok()
            && http_get(mport, "/readyz").starts_with(want)
    };
    let t = Instant::now();
    while !ready("HTTP/1.1 200") {
        assert!(t.elapsed() < Duration::from_secs(60), "never ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(k); // the broker is gone
    let t = Instant::now();
    while !ready("HTTP/1.1 503") {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "readyz stays 200 without Kafka"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(http_get(mport, "/readyz").contains("Kafka"), "says why");
    let m = http_get(mport, "/metrics");
    assert_eq!(metric(&m, "crawlsieve_gate_kafka_up", ""), 0.0);
    g.kill();
}

/// SIGTERM: the gate finishes, commits what was delivered, and exits 0; a gate started later
/// in the same group (with an empty filter) re-reads nothing.
#[test]
fn graceful_shutdown_commits_what_was_delivered() {
    let st = setup("term", 5_000, shared_redis());
    let (b, ns, vals, want) = (&st.b, &st.ns, &st.vals, &st.want);
    produce(b, "urls", 4, vals);
    let sets = base_sets(b, "g-term", &ns.name, shared_redis());
    let mut g = GateProc::start(&sets, &[]);
    assert_all_fetched(b, want, Duration::from_secs(120));
    g.signal(libc::SIGTERM);
    let (st, err) = g.wait(Duration::from_secs(30));
    assert!(st.success(), "{err}");
    let c = committed(b, "g-term", "urls", 4);
    assert_eq!(c.values().sum::<i64>(), vals.len() as i64, "{c:?}");
    // Same group, a fresh namespace: only what arrives now is emitted.
    let ns2 = Ns::new("term2", shared_redis());
    produce(b, "urls", 4, &[b"https://after.example/restart".to_vec()]);
    let sets = base_sets(b, "g-term", &ns2.name, shared_redis());
    let mut g = GateProc::start(&sets, &["--idle-exit", "2s"]);
    let (st, err) = g.wait(Duration::from_secs(60));
    assert!(st.success(), "{err}");
    assert!(err.contains("consumed 1 "), "{err}");
    let all = fetch_events(&read_all(b, "fetch", 4, Duration::from_secs(1)));
    assert_eq!(all.len(), want.len() + 1);
}

/// The output cluster is down (the producer may use other brokers than the consumer:
/// `kafka.producer."bootstrap.servers"`): deliveries fail, the gate pauses and commits nothing;
/// once the cluster is up everything arrives.
#[test]
fn output_cluster_down_pauses_without_commit_or_loss() {
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(&b, &[("urls", 4), ("urls.dead-letter", 1)]);
    let out_port = free_port();
    let ns = Ns::new("outdown", shared_redis());
    let vals = workload(3_000);
    let (want, _) = expected(&vals);
    produce(&b, "urls", 4, &vals);
    let mport = free_port();
    let mut sets = base_sets(&b, "g-outdown", &ns.name, shared_redis());
    sets.push(format!("metrics.listen=127.0.0.1:{mport}"));
    sets.push(format!(
        "kafka.producer.\"bootstrap.servers\"=127.0.0.1:{out_port}"
    ));
    sets.push("kafka.producer.\"message.timeout.ms\"=2000".into());
    sets.push("kafka.producer.\"allow.auto.create.topics\"=false".into());
    let _g = GateProc::start(&sets, &[]);
    std::thread::sleep(Duration::from_secs(8));
    let m = http_get(mport, "/metrics");
    assert!(
        metric(
            &m,
            "crawlsieve_gate_backoff_retries_total",
            "cause=\"kafka\""
        ) > 0.0,
        "{m}"
    );
    assert_eq!(metric(&m, "crawlsieve_gate_paused", ""), 1.0);
    assert_eq!(metric(&m, "crawlsieve_gate_urls_emitted_total", ""), 0.0);
    assert!(committed(&b, "g-outdown", "urls", 4)
        .values()
        .all(|&o| o == 0));
    let out = Tansu::start_on(out_port);
    let ob = out.brokers();
    create_topics(&ob, &[("fetch", 4), ("urls.dead-letter", 1)]);
    assert_all_fetched(&ob, &want, Duration::from_secs(120));
}

/// A fetch event larger than the output cluster takes (here the producer's own
/// `message.max.bytes`) is refused for good: its input message becomes a `too_large` dead
/// letter, the rest of the batch is delivered, offsets are committed, and the gate does not
/// stall retrying it forever.
#[test]
fn an_undeliverable_fetch_event_becomes_a_dead_letter() {
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(&b, &[("urls", 1), ("fetch", 1), ("urls.dead-letter", 1)]);
    let ns = Ns::new("toolarge", shared_redis());
    let blob = "x".repeat(3000);
    let vals: Vec<Vec<u8>> = vec![
        b"https://small.example/1".to_vec(),
        format!(r#"{{"url": "https://big.example/1", "metadata": {{"blob": "{blob}"}}}}"#)
            .into_bytes(),
        b"https://small.example/2".to_vec(),
        // The same URL again, small: the refused event must not have marked it seen.
        b"https://big.example/1".to_vec(),
    ];
    produce(&b, "urls", 1, &vals);
    let mport = free_port();
    let mut sets = base_sets(&b, "g-toolarge", &ns.name, shared_redis());
    sets.push(format!("metrics.listen=127.0.0.1:{mport}"));
    sets.push("kafka.producer.\"message.max.bytes\"=2000".into());
    let mut g = GateProc::start(&sets, &["--idle-exit", "3s"]);
    let (st, err) = g.wait(Duration::from_secs(60));
    assert!(st.success(), "{err}");
    assert!(
        err.contains("consumed 4 ") && err.contains("emitted 3"),
        "{err}"
    );
    assert!(err.contains("dead-lettered 1"), "{err}");
    let fetched: Vec<String> = fetch_events(&read_all(&b, "fetch", 1, Duration::from_secs(1)))
        .into_iter()
        .map(|f| f.url)
        .collect();
    assert_eq!(
        fetched,
        [
            "https://small.example/1",
            "https://small.example/2",
            "https://big.example/1"
        ]
    );
    let dead: Vec<DeadLetter> = read_checked(&b, "urls.dead-letter", "dead-letter");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].error, DeadLetterCode::TooLarge);
    assert_eq!((dead[0].partition, dead[0].offset), (0, 1));
    assert!(
        dead[0].detail.contains("over the output limit of 2000"),
        "{}",
        dead[0].detail
    );
    assert!(dead[0].value_prefix.contains("https://big.example/1"));
    assert_eq!(committed(&b, "g-toolarge", "urls", 1)[&0], 4);
}

/// Issue 17: the gate decodes each event by its own `context` (absent: nothing decoded).
#[test]
fn each_event_is_decoded_by_its_context() {
    let ns = Ns::new("ctx", shared_redis());
    let mut cfg = GateConfig::default();
    cfg.redis.url = shared_redis().to_string();
    cfg.redis.namespace = ns.name.clone();
    let mut core = GateCore::new(cfg, FilterMetrics::unregistered());
    let mut batch = Batch::default();
    for (i, v) in [
        r#"{"url": "\\/api\\/v2\\/users", "source": "https://s.example/", "context": "js"}"#,
        r#"{"url": "/p?code=x&amp;edition=2021", "source": "https://s.example/", "context": "html_attr"}"#,
        r#"{"url": "/q?a=1&amp;b=2", "source": "https://s.example/"}"#,
    ]
    .iter()
    .enumerate()
    {
        batch.push(0, i as i64, None, Some(v.as_bytes()));
    }
    let mut st = GateStaged::default();
    core.stage("in", &batch, &mut st).unwrap();
    let urls: Vec<String> = staged_events::<FetchEvent>(&st, Dest::Output)
        .into_iter()
        .map(|e| e.url)
        .collect();
    assert_eq!(
        urls,
        [
            "https://s.example/api/v2/users",
            "https://s.example/p?code=x&edition=2021",
            // No context: nothing decoded, but canonicalization still drops the escaped `&amp;`.
            "https://s.example/q?a=1&b=2",
        ]
    );
}

/// Issue 18: the gate judges scope after canonicalization and before the filter: an
/// out-of-scope URL goes to the audit topic with its reason and never takes a place in the
/// filter; `same_site_as_source` reads each event's `source`; a namespace's own scope replaces
/// `[scope]` for its events.
#[test]
fn scope_rejects_before_the_filter_with_a_reason() {
    let ns = Ns::new("scope", shared_redis());
    let other = Ns::new("scope-own", shared_redis());
    let mut cfg = GateConfig::default();
    cfg.redis.url = shared_redis().to_string();
    cfg.redis.namespace = ns.name.clone();
    cfg.kafka.audit_topic = Some("audit".into());
    cfg.scope.allow_domains = vec!["s.example".into(), "t.example".into()];
    cfg.scope.same_site_as_source = true;
    cfg.scopes.insert(
        other.name.clone(),
        crawlsieve::scope::ScopeSpec {
            allow_domains: vec!["u.example".into()],
            ..Default::default()
        },
    );
    let mut core = GateCore::new(cfg, FilterMetrics::unregistered());
    let mut batch = Batch::default();
    let own = format!(
        r#"{{"url": "https://u.example/x", "namespace": "{}"}}"#,
        other.name
    );
    for (i, v) in [
        r#"{"url": "https://elsewhere.example/", "source": "https://s.example/"}"#,
        r#"{"url": "https://t.example/a", "source": "https://s.example/"}"#,
        r#"{"url": "https://t.example/b"}"#,
        r#"{"url": "/in", "source": "https://s.example/"}"#,
        &own,
    ]
    .iter()
    .enumerate()
    {
        batch.push(0, i as i64, None, Some(v.as_bytes()));
    }
    let mut st = GateStaged::default();
    core.stage("in", &batch, &mut st).unwrap();
    let urls: Vec<String> = staged_events::<FetchEvent>(&st, Dest::Output)
        .into_iter()
        .map(|e| e.url)
        .collect();
    assert_eq!(
        urls,
        [
            "https://t.example/b",
            "https://s.example/in",
            "https://u.example/x"
        ]
    );
    let rejected: Vec<(String, String)> = staged_events::<RejectedEvent>(&st, Dest::Audit)
        .into_iter()
        .map(|e| (e.url, e.reason.code().to_string()))
        .collect();
    assert_eq!(
        rejected,
        [
            (
                "https://elsewhere.example/".to_string(),
                "out_of_scope_domain".to_string()
            ),
            ("https://t.example/a".to_string(), "off_site".to_string()),
        ]
    );
}

/// Issue 24: a batch is judged in chunks (256 messages), each chunk's exchange sent before the
/// next is decoded. A URL in two chunks is published once, by its first event; a URL taken in an
/// earlier chunk is a duplicate in a later one even though both exchanges were in flight at once.
#[test]
fn a_batch_judged_in_chunks_publishes_each_url_once() {
    let ns = Ns::new("chunks", shared_redis());
    let mut cfg = GateConfig::default();
    cfg.redis.url = shared_redis().to_string();
    cfg.redis.namespace = ns.name.clone();
    let mut core = GateCore::new(cfg, FilterMetrics::unregistered());
    let mut batch = Batch::default();
    for i in 0..900usize {
        // Messages i and i + 300 and i + 600 carry the same URL (different spellings).
        let k = i % 300;
        let u = match i / 300 {
            0 => format!("https://c{}.example/p/{k}", k % 7),
            1 => format!("HTTPS://C{}.EXAMPLE:443/p/{k}?utm_source=x", k % 7),
            _ => format!("https://c{}.example/p/{k}#f", k % 7),
        };
        batch.push(0, i as i64, None, Some(u.as_bytes()));
    }
    let mut st = GateStaged::default();
    core.stage("in", &batch, &mut st).unwrap();
    assert_eq!((st.emitted, st.pending.duplicates), (300, 600));
    let evs: Vec<FetchEvent> = staged_events(&st, Dest::Output);
    let distinct: HashSet<&str> = evs.iter().map(|e| e.url.as_str()).collect();
    assert_eq!(distinct.len(), 300);
    assert!(
        evs.iter().all(|e| !e.original.contains("utm_source")),
        "each URL is published by its first event"
    );
    core.finish(&mut st).unwrap();
    core.idle().unwrap();
    // A second gate, cold tier: all seen.
    let mut cfg = GateConfig::default();
    cfg.redis.url = shared_redis().to_string();
    cfg.redis.namespace = ns.name.clone();
    let mut other = GateCore::new(cfg, FilterMetrics::unregistered());
    let mut st2 = GateStaged::default();
    other.stage("in", &batch, &mut st2).unwrap();
    assert_eq!((st2.emitted, st2.pending.duplicates), (0, 900));
}

/// The gate over TLS: a `redis-server` with a TLS port and a test-made CA; the gate gets
/// `rediss://` and `redis.tls_ca` and publishes every URL once, as over plain TCP.
#[test]
fn the_gate_works_over_tls() {
    let tls = common::TlsRedis::start(false);
    let plain = tls.redis.url();
    let st = setup("tls", 300, &plain);
    let (b, ns, want) = (&st.b, &st.ns, &st.want);
    let mut sets = base_sets(b, "g-tls", &ns.name, &tls.url());
    sets.push(format!("redis.tls_ca={}", tls.certs.path("ca.crt")));
    let mut gate = GateProc::start(&sets, &[]);
    produce(b, "urls", 4, &st.vals);
    let evs = assert_all_fetched(b, want, Duration::from_secs(120));
    let distinct: HashSet<&str> = evs.iter().map(|e| e.url.as_str()).collect();
    assert_eq!(distinct.len(), want.len());
    // What the gate wrote is in the TLS server's namespace (read over the plain port).
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("cs:{{{}}}:meta", ns.name))
        .query(&mut tls.redis.con())
        .unwrap();
    assert_eq!(keys.len(), 1, "the namespace lives on the TLS server");
    gate.signal(libc::SIGTERM);
    let (status, err) = gate.wait(Duration::from_secs(60));
    assert!(status.success(), "{err}");
}

/// Issue 46: fetch outcomes on `kafka.outcomes_topic` teach the gate. Guesses from a script
/// whose guesses 404 are held (`fetch_misses`, on the audit topic, not published), others flow;
/// the counts live in Redis (a second gate process holds as the first did); a held candidate is
/// kept in Redis under its keys, and comes back by itself — published without being sent again —
/// when a hit is counted in its directory, or when `crawlsieve rules release` lifts its source's
/// key; a bad outcome is a dead letter.
#[test]
fn fetch_outcomes_hold_guesses_where_they_miss_and_a_hit_lifts_them() {
    let redis = OwnRedis::start(&[]);
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(
        &b,
        &[
            ("urls", 1),
            ("fetch", 1),
            ("audit", 1),
            ("outcomes", 1),
            ("urls.dead-letter", 1),
        ],
    );
    let ns = Ns::new("outcomes", &redis.url());
    let mut sets = base_sets(&b, "g-outcomes", &ns.name, &redis.url());
    sets.extend([
        "kafka.outcomes_topic=outcomes".to_string(),
        "kafka.audit_topic=audit".to_string(),
        "outcomes.probe_one_in=0".to_string(),
        "outcomes.cache_ms=0".to_string(),
    ]);
    let site = "https://shop.example";
    let ev = |url: &str, src: &str| {
        serde_json::json!({"url": url, "source": format!("{site}/{src}"), "context": "js"})
            .to_string()
            .into_bytes()
    };
    let fetched = |n: usize| {
        fetch_events(&read_until(&b, "fetch", 1, Duration::from_secs(60), |g| {
            g.len() >= n
        }))
    };
    let mut gate = GateProc::start(&sets, &[]);
    // Wave 1: two guesses of app.js, one of lib.js.
    produce(
        &b,
        "urls",
        1,
        &[
            ev("ui/a.css", "app.js"),
            ev("ui/b.css", "app.js"),
            ev("js/real.js", "lib.js"),
        ],
    );
    let evs = fetched(3);
    assert_eq!(evs.len(), 3);
    assert!(
        evs.iter()
            .all(|e| e.context == Some(crawlsieve::url::Context::Js)),
        "context passed through"
    );
    // Their outcomes: app.js's guesses 404, lib.js's lands; one message is no outcome.
    let outcome = |url: &str, src: &str, status: u16| {
        serde_json::json!({"url": format!("{site}/{url}"), "status": status, "source": format!("{site}/{src}"), "context": "js"})
            .to_string()
            .into_bytes()
    };
    produce(
        &b,
        "outcomes",
        1,
        &[
            outcome("ui/a.css", "app.js", 404),
            outcome("ui/b.css", "app.js", 404),
            outcome("js/real.js", "lib.js", 200),
            b"{\"url\": 5}".to_vec(),
        ],
    );
    let dead = read_until(&b, "urls.dead-letter", 1, Duration::from_secs(30), |g| {
        !g.is_empty()
    });
    assert_eq!(dead.len(), 1, "the bad outcome is a dead letter");
    assert_schema("dead-letter", &dead);
    // Wait until the counts are in Redis.
    let t = Instant::now();
    loop {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("cs:fo:*")
            .query(&mut redis.con())
            .unwrap();
        if keys.len() >= 4 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "outcomes not counted: {keys:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Wave 2, by a new gate process (the counts are Redis'): app.js's next guess is held;
    // lib.js's, and a guess into js/ where one landed, pass.
    gate.signal(libc::SIGTERM);
    let (st, err) = gate.wait(Duration::from_secs(60));
    assert!(st.success(), "{err}");
    let mut gate = GateProc::start(&sets, &[]);
    produce(
        &b,
        "urls",
        1,
        &[
            ev("ui/c.css", "app.js"),
            ev("js/more.js", "lib.js"),
            ev("js/x.js", "app.js"),
            ev("img/q.png", "app.js"),
        ],
    );
    let evs = fetched(5);
    let urls: Vec<&str> = evs.iter().map(|e| e.url.as_str()).collect();
    assert!(!urls.contains(&"https://shop.example/ui/c.css"), "{urls:?}");
    assert!(
        !urls.contains(&"https://shop.example/img/q.png"),
        "{urls:?}"
    );
    assert!(
        urls.contains(&"https://shop.example/js/more.js"),
        "{urls:?}"
    );
    assert!(
        urls.contains(&"https://shop.example/js/x.js"),
        "a hit in js/ lifts app.js's hold there: {urls:?}"
    );
    let audit: Vec<RejectedEvent> = read_checked(&b, "audit", "rejected-event");
    let held: Vec<&RejectedEvent> = audit
        .iter()
        .filter(|r| r.reason == Reason::FetchMisses)
        .collect();
    assert_eq!(held.len(), 2, "{audit:?}");
    // Each is kept under its source's key and its directory's.
    let kept = |key: &str| -> u64 {
        redis::cmd("HLEN")
            .arg(crawlsieve::redis_filter::Keys::fetch_held(&ns.name, key))
            .query(&mut redis.con())
            .unwrap()
    };
    let app_key = format!("s|js|{site}/app.js|{site}");
    assert_eq!(kept(&app_key), 2);
    assert_eq!(kept(&format!("d|js|{site}/ui/")), 1);
    assert_eq!(kept(&format!("d|js|{site}/img/")), 1);
    // Kept with its namespace written out (a gate whose default differs may read it back).
    let values: Vec<String> = redis::cmd("HVALS")
        .arg(crawlsieve::redis_filter::Keys::fetch_held(
            &ns.name, &app_key,
        ))
        .query(&mut redis.con())
        .unwrap();
    assert!(
        values
            .iter()
            .all(|v| v.contains(&format!("\"namespace\":\"{}\"", ns.name))),
        "{values:?}"
    );
    // A hit in ui/ lifts the hold: the held URL comes back by itself and is published.
    produce(
        &b,
        "outcomes",
        1,
        &[outcome("ui/logo.png", "index.html", 200)],
    );
    // Counted by the second gate's outcome reader once its group has the partition (a
    // rebalance after the first gate left: seconds on a loaded machine).
    let hit_key =
        crawlsieve::redis_filter::Keys::fetch_outcomes(&ns.name, &format!("d|js|{site}/ui/"));
    let t = Instant::now();
    loop {
        let h: Option<u64> = redis::cmd("HGET")
            .arg(&hit_key)
            .arg("h")
            .query(&mut redis.con())
            .unwrap();
        if h.unwrap_or(0) >= 1 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the hit was not counted"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Put back on the input topic by the gate's outcome reader and published, not sent again.
    // (Read until seen: a fresh reader of tansu with a short idle limit can pass the newest
    // record batch.)
    let comes_back = |gate: &mut GateProc, url: &str| {
        let got = fetch_events(&read_until(&b, "fetch", 1, Duration::from_secs(90), |g| {
            fetch_events(g).iter().any(|e| e.url == url)
        }));
        if !got.iter().any(|e| e.url == url) {
            let audit: Vec<RejectedEvent> = read_checked(&b, "audit", "rejected-event");
            gate.signal(libc::SIGTERM);
            let (_, err) = gate.wait(Duration::from_secs(60));
            panic!("{url} did not come back; audit: {audit:?}\ngate: {err}");
        }
    };
    comes_back(&mut gate, "https://shop.example/ui/c.css");
    assert_eq!(
        kept(&format!("d|js|{site}/ui/")),
        0,
        "taken out once put back"
    );
    // `rules release` of app.js's key: img/q.png comes back too (and ui/c.css's copy under the
    // key, a duplicate the filter answers).
    let out = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["rules", "--redis", &redis.url(), "--namespace", &ns.name])
        .args(["release", &app_key])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (said["released"].as_bool(), said["held"].as_u64()),
        (Some(true), Some(2))
    );
    comes_back(&mut gate, "https://shop.example/img/q.png");
    let t = Instant::now();
    while kept(&app_key) > 0 {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "released candidates left behind"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let evs = fetch_events(&read_all(&b, "fetch", 1, Duration::from_secs(2)));
    let c_css = evs
        .iter()
        .filter(|e| e.url == "https://shop.example/ui/c.css")
        .count();
    assert_eq!(c_css, 1, "a copy put back twice is published once");
    gate.signal(libc::SIGTERM);
    let (st, err) = gate.wait(Duration::from_secs(60));
    assert!(st.success(), "{err}");
}

/// Issue 46, faults: outcomes are counted at least once when the gate is SIGKILLed while it
/// counts and when Redis stalls (`DEBUG SLEEP`) under it; every outcome's directory ends with at
/// least its misses (repeats allowed, none lost).
///
/// Ignored for a session after one run beside the other gate tests (2026-11-28) ended with a
/// contiguous range of ~150 outcomes never counted within 90 s; 6 of 6 runs passed since
/// (2026-11-29: alone, under a release build, beside every gate test), and the gate that
/// "stopped consuming" then was another test's reader with a 500 ms idle limit. Back in the
/// test command: a failure here prints the missing range (see the assertion).
#[test]
fn fetch_outcomes_are_counted_at_least_once_under_kill_and_stall() {
    let redis = OwnRedis::start(&["--enable-debug-command", "yes"]);
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(
        &b,
        &[
            ("urls", 1),
            ("fetch", 1),
            ("outcomes", 1),
            ("urls.dead-letter", 1),
        ],
    );
    let ns = Ns::new("outcome-faults", &redis.url());
    let mut sets = base_sets(&b, "g-outcome-faults", &ns.name, &redis.url());
    sets.push("kafka.outcomes_topic=outcomes".into());
    let dirs = 100;
    let per = 40;
    let outcomes: Vec<Vec<u8>> = (0..dirs * per)
        .map(|i| {
            serde_json::json!({"url": format!("https://s.example/d{}/f{i}.css", i % dirs), "status": 404})
                .to_string()
                .into_bytes()
        })
        .collect();
    let counted = |con: &mut redis::Connection| -> Vec<u64> {
        (0..dirs)
            .map(|d| {
                let key = crawlsieve::redis_filter::Keys::fetch_outcomes(
                    &ns.name,
                    &format!("d|unknown|https://s.example/d{d}/"),
                );
                let m: Option<u64> = redis::cmd("HGET").arg(key).arg("m").query(con).unwrap();
                m.unwrap_or(0)
            })
            .collect()
    };
    // 1. Gates SIGKILLed just after they started counting (between a batch's counts and its
    //    commit, or in the middle of a pipeline), then one left to finish.
    let mut con = redis.con();
    produce(&b, "outcomes", 1, &outcomes);
    let mut last = 0;
    for _ in 0..3 {
        let mut g = GateProc::start(&sets, &[]);
        let t = Instant::now();
        loop {
            let total: u64 = counted(&mut con).iter().sum();
            if total > last || t.elapsed() > Duration::from_secs(30) {
                last = total;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        g.kill();
    }
    // 2. Redis stalls under the last gate.
    let mut g = GateProc::start(&sets, &[]);
    std::thread::sleep(Duration::from_millis(500));
    let _: Result<(), _> = redis::cmd("DEBUG")
        .arg("SLEEP")
        .arg("3")
        .query::<()>(&mut redis.con());
    let t = Instant::now();
    loop {
        let c = counted(&mut con);
        if c.iter().all(|&m| m >= per as u64) {
            let total: u64 = c.iter().sum();
            println!(
                "outcomes: {} sent, {total} counted ({} repeats), none lost",
                dirs * per,
                total - (dirs * per) as u64
            );
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(90),
            "outcomes lost: per directory {c:?}, want {per} each"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    g.signal(libc::SIGTERM);
    let (st, err) = g.wait(Duration::from_secs(60));
    assert!(st.success(), "{err}");
}

/// Issue 46, faults on the way back: candidates held for fetch misses come back when hits are
/// counted in their directories, also when the gates putting them back are SIGKILLed in the
/// middle and Redis stalls (`DEBUG SLEEP`) under them: every held URL is published in the end
/// (lost = 0; repeats counted), against the set of held URLs computed here.
#[test]
fn held_candidates_come_back_under_kill_and_stall() {
    let redis = OwnRedis::start(&["--enable-debug-command", "yes"]);
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(
        &b,
        &[
            ("urls", 1),
            ("fetch", 1),
            ("outcomes", 1),
            ("audit", 1),
            ("urls.dead-letter", 1),
        ],
    );
    let ns = Ns::new("held-faults", &redis.url());
    let mut sets = base_sets(&b, "g-held-faults", &ns.name, &redis.url());
    sets.extend([
        "kafka.outcomes_topic=outcomes".to_string(),
        "kafka.audit_topic=audit".to_string(),
        "outcomes.probe_one_in=0".to_string(),
        "outcomes.cache_ms=0".to_string(),
    ]);
    let (dirs, per) = (20, 25);
    let url = |d: usize, i: usize| format!("https://s.example/d{d}/f{i}.css");
    let outcome = |u: &str, status: u16| {
        serde_json::json!({"url": u, "status": status})
            .to_string()
            .into_bytes()
    };
    // 1. Three misses in each directory, counted; then the candidates, all held.
    let misses: Vec<Vec<u8>> = (0..dirs)
        .flat_map(|d| (0..3).map(move |i| (d, i)))
        .map(|(d, i)| outcome(&format!("https://s.example/d{d}/miss{i}.css"), 404))
        .collect();
    produce(&b, "outcomes", 1, &misses);
    let mut con = redis.con();
    let held_in = |con: &mut redis::Connection, d: usize| -> u64 {
        redis::cmd("HLEN")
            .arg(crawlsieve::redis_filter::Keys::fetch_held(
                &ns.name,
                &format!("d|unknown|https://s.example/d{d}/"),
            ))
            .query(con)
            .unwrap()
    };
    let mut gate = GateProc::start(&sets, &[]);
    let t = Instant::now();
    loop {
        let m: Vec<Option<u64>> = (0..dirs)
            .map(|d| {
                let key = crawlsieve::redis_filter::Keys::fetch_outcomes(
                    &ns.name,
                    &format!("d|unknown|https://s.example/d{d}/"),
                );
                redis::cmd("HGET")
                    .arg(key)
                    .arg("m")
                    .query(&mut con)
                    .unwrap()
            })
            .collect();
        if m.iter().all(|m| m.unwrap_or(0) >= 3) {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "misses not counted: {m:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let want: HashSet<String> = (0..dirs)
        .flat_map(|d| (0..per).map(move |i| url(d, i)))
        .collect();
    let events: Vec<Vec<u8>> = want
        .iter()
        .map(|u| serde_json::json!({"url": u}).to_string().into_bytes())
        .collect();
    produce(&b, "urls", 1, &events);
    let t = Instant::now();
    while (0..dirs).map(|d| held_in(&mut con, d)).sum::<u64>() < want.len() as u64 {
        assert!(t.elapsed() < Duration::from_secs(60), "not all held");
        std::thread::sleep(Duration::from_millis(100));
    }
    let audit: Vec<RejectedEvent> = read_checked(&b, "audit", "rejected-event");
    assert_eq!(
        audit
            .iter()
            .filter(|r| r.reason == Reason::FetchMisses)
            .count(),
        want.len(),
        "each held URL audited"
    );
    // 2. A hit in each directory; gates killed while they put the candidates back.
    let hits: Vec<Vec<u8>> = (0..dirs)
        .map(|d| outcome(&format!("https://s.example/d{d}/index.css"), 200))
        .collect();
    gate.kill();
    produce(&b, "outcomes", 1, &hits);
    for _ in 0..3 {
        let before: u64 = (0..dirs).map(|d| held_in(&mut con, d)).sum();
        if before == 0 {
            break;
        }
        let mut g = GateProc::start(&sets, &[]);
        let t = Instant::now();
        while (0..dirs).map(|d| held_in(&mut con, d)).sum::<u64>() == before
            && t.elapsed() < Duration::from_secs(30)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        g.kill();
    }
    // 3. Redis stalls under the last gate, which finishes.
    let mut g = GateProc::start(&sets, &[]);
    let _: Result<(), _> = redis::cmd("DEBUG")
        .arg("SLEEP")
        .arg("2")
        .query::<()>(&mut redis.con());
    let got = read_until(&b, "fetch", 1, Duration::from_secs(120), |g| {
        let seen: HashSet<String> = fetch_events(g).into_iter().map(|e| e.url).collect();
        want.iter().all(|u| seen.contains(u))
    });
    let evs = fetch_events(&got);
    let seen: HashSet<&str> = evs.iter().map(|e| e.url.as_str()).collect();
    let lost: Vec<&String> = want.iter().filter(|u| !seen.contains(u.as_str())).collect();
    println!(
        "held {}, published {} ({} repeats), lost {}",
        want.len(),
        evs.len(),
        evs.len() - seen.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "held URLs lost: {lost:?}");
    g.signal(libc::SIGTERM);
    let (st, err) = g.wait(Duration::from_secs(60));
    assert!(st.success(), "{err}");
}

/// Issue 46, review: putting kept candidates back takes out exactly the holds it delivered (a
/// newer hold of the same URL written meanwhile stays, so it can come back too); a source key
/// does not keep what its directory holds; kept candidates whose counts are gone (expired) are
/// found by the sweep.
#[test]
fn kept_candidates_are_taken_out_only_as_delivered() {
    use crawlsieve::outcomes::{self, Counts, Kind, OutcomeConfig, OutcomeStore};
    use crawlsieve::redis_filter::{Conn, Keys};
    let redis = OwnRedis::start(&[]);
    let rc = RedisConfig::new(&redis.url());
    let mut conn = Conn::connect(&rc).unwrap();
    let mut store = OutcomeStore::new(OutcomeConfig::default(), "kept");
    let src = "https://a.example/app.js";
    let k = |u: &str| outcomes::keys(u, Some(src), Some(crawlsieve::url::Context::Js));
    // The source missed once (its rule holds); `gone/` had three misses (the directory holds).
    let mut misses = vec![(k("https://a.example/ui/x.css"), Kind::Miss)];
    for i in 0..3 {
        misses.push((k(&format!("https://a.example/gone/m{i}.css")), Kind::Miss));
    }
    store.record(&mut conn, &misses).unwrap();
    let (ui, gone) = (
        k("https://a.example/ui/y.css"),
        k("https://a.example/gone/z.css"),
    );
    let fresh = store
        .hold_fresh(
            &mut conn,
            &[
                (&ui, 1, Some(b"{\"url\":\"ui/y.css\"}".to_vec())),
                (&gone, 2, Some(b"{\"url\":\"gone/z.css\"}".to_vec())),
            ],
        )
        .unwrap();
    assert_eq!(fresh[0].0, Counts { hits: 0, misses: 4 });
    assert_eq!(fresh[1].1, Counts { hits: 0, misses: 3 });
    let hlen = |conn: &mut Conn, key: &str| -> u64 {
        conn.query(redis::cmd("HLEN").arg(Keys::fetch_held("kept", key)))
            .unwrap()
    };
    let source_key = ui.source.clone().unwrap();
    assert_eq!(
        hlen(&mut conn, &source_key),
        1,
        "gone/z.css is its directory's to lift"
    );
    assert_eq!(hlen(&mut conn, &gone.dir), 1);
    // Put back while a gate holds ui/y.css again (same fingerprint, a new value).
    let mut other = Conn::connect(&rc).unwrap();
    let mut again = OutcomeStore::new(OutcomeConfig::default(), "kept");
    let mut delivered = Vec::new();
    let moved = outcomes::move_held(&mut conn, "kept", &source_key, |events| {
        delivered.extend(events.iter().cloned());
        again
            .hold_fresh(
                &mut other,
                &[(&ui, 1, Some(b"{\"url\":\"ui/y.css\"}".to_vec()))],
            )
            .unwrap();
        true
    })
    .unwrap();
    assert_eq!(moved, Some(1));
    assert_eq!(
        delivered,
        vec![b"{\"url\":\"ui/y.css\"}".to_vec()],
        "the event, not its nonce"
    );
    assert_eq!(hlen(&mut conn, &source_key), 1, "the newer hold stays kept");
    // Nothing delivered: nothing taken out.
    assert_eq!(
        outcomes::move_held(&mut conn, "kept", &source_key, |_| false).unwrap(),
        None
    );
    assert_eq!(hlen(&mut conn, &source_key), 1);
    // A candidate its source holds, in a directory with no outcome yet: kept under both, and
    // the directory given counts (its name, expiring after `ttl`), so that the sweep does not
    // put it back at once, only to be held again, every sweep.
    let new_dir = k("https://a.example/new/w.css");
    let fresh = store
        .hold_fresh(
            &mut conn,
            &[(&new_dir, 3, Some(b"{\"url\":\"new/w.css\"}".to_vec()))],
        )
        .unwrap();
    assert_eq!(fresh[0], (Counts { hits: 0, misses: 4 }, Counts::default()));
    assert_eq!(hlen(&mut conn, &new_dir.dir), 1);
    let ttl =
        |conn: &mut Conn, rk: String| -> i64 { conn.query(redis::cmd("TTL").arg(rk)).unwrap() };
    let day = 24 * 3600;
    let counts_ttl = ttl(&mut conn, Keys::fetch_outcomes("kept", &new_dir.dir));
    assert!((1..=7 * day).contains(&counts_ttl), "{counts_ttl}");
    // Kept twice the counts' ttl and two sweeps; an outcome under the key renews it.
    let kept = Keys::fetch_held("kept", &gone.dir);
    assert!(ttl(&mut conn, kept.clone()) > 14 * day);
    let _: u64 = conn
        .query(redis::cmd("EXPIRE").arg(&kept).arg(100))
        .unwrap();
    store
        .record(
            &mut conn,
            &[(k("https://a.example/gone/m9.css"), Kind::Miss)],
        )
        .unwrap();
    assert!(
        ttl(&mut conn, kept.clone()) > 14 * day,
        "an outcome under the key keeps what it keeps alive"
    );
    // The sweep finds kept candidates whose counts are gone, and only those, in every
    // namespace.
    assert!(outcomes::orphaned(&rc, &mut conn).unwrap().is_empty());
    let _: u64 = conn
        .query(redis::cmd("DEL").arg(Keys::fetch_outcomes("kept", &gone.dir)))
        .unwrap();
    let mut elsewhere = OutcomeStore::new(OutcomeConfig::default(), "other");
    elsewhere
        .hold_fresh(
            &mut conn,
            &[(&gone, 2, Some(b"{\"url\":\"gone/z.css\"}".to_vec()))],
        )
        .unwrap();
    let _: u64 = conn
        .query(redis::cmd("DEL").arg(Keys::fetch_outcomes("other", &gone.dir)))
        .unwrap();
    let mut found = outcomes::orphaned(&rc, &mut conn).unwrap();
    found.sort();
    let mut want = vec![kept, Keys::fetch_held("other", &gone.dir)];
    want.sort();
    assert_eq!(found, want);
}
