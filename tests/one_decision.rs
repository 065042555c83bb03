//! Issue 44: one decision for every driver. The same candidates, with robots.txt records,
//! a per-host budget, a pattern verdict, a learned parameter rule and fetch outcomes (issue
//! 46) present in Redis, through
//! the gate's core (the Kafka stage's decision, in process), the HTTP API (`crawlsieve serve`,
//! a real process) and `dedup --redis` (a real process) give the same verdicts, reasons and
//! canonical URLs — and a driver that skips one part of the policy is caught by the comparison.
//! Each driver works in a namespace of its own (same records in each) of one Redis of the
//! test's own; nothing is fetched but from loopback origins the test runs.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{free_port, http_request, OwnRedis};
use crawlsieve::config::{Component, Config};
use crawlsieve::gate::robots::{record_key, Kind, Record};
use crawlsieve::gate::GateCore;
use crawlsieve::observe::FilterMetrics;
use crawlsieve::stage::{Batch, Dest, Stage, Staged};
use serde_json::{json, Value};

/// One candidate's outcome as a driver states it: (verdict, reason, canonical when new).
type Outcome = (String, Option<String>, Option<String>);

const BUDGET: u64 = 3;

/// The candidates: every part of the policy has work here.
fn candidates() -> Vec<String> {
    let mut c: Vec<String> = [
        "https://shop.example/item/1",
        "https://shop.example/item/1#reviews", // the same page
        "https://shop.example/private/orders", // robots.txt disallows /private/
        "function(){return location.href}",    // junk
        "https://shop.example/list?page=2&sid=a1", // `sid` is a learned rule on shop.example
        "https://shop.example/list?page=2&sid=b2", //   … so this is the same page
        "https://shop.example/list?page=3&sid=a1", // another page
        "https://news.example/story/1001",     // pattern verified similar
        "https://news.example/about",          // another pattern
        "http://127.0.0.1/admin",              // a loopback address
        "https://walled.example/x",            // its robots.txt record: refused host
        "https://open.example/anything",       // robots.txt 404: all allowed
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Five new URLs of one host: the last two are over its budget.
    for i in 0..5 {
        c.push(format!("https://blog.example/post/{i}"));
    }
    c.push("https://shop.example/item/1".into()); // a repeat at the end
                                                  // Fetch outcomes (issue 46): guesses into docs.example/guess/ all 404ed.
    c.push("https://docs.example/guess/x.css".into());
    c.push("https://docs.example/real/y.css".into()); // a directory with no outcomes
    c
}

/// The records, verdicts and rules every driver's namespace holds.
fn prepare(redis: &OwnRedis, ns: &str) {
    let mut con = redis.con();
    let now = crawlsieve::gate::robots::now_ms();
    let rec = |kind: Kind, body: &str| Record {
        kind,
        status: Some(200),
        body: body.into(),
        fetched_ms: now,
        expires_ms: now + 3_600_000,
        detail: String::new(),
    };
    let records = [
        (
            "https://shop.example",
            rec(Kind::Rules, "User-agent: *\nDisallow: /private/\n"),
        ),
        (
            "https://news.example",
            rec(Kind::Rules, "User-agent: *\nAllow: /\n"),
        ),
        (
            "https://blog.example",
            rec(Kind::Rules, "User-agent: *\nDisallow: /admin\n"),
        ),
        ("https://walled.example", rec(Kind::Refused, "")),
        ("https://open.example", rec(Kind::None, "")),
        ("https://docs.example", rec(Kind::None, "")),
    ];
    for (origin, r) in records {
        let _: () = redis::cmd("SET")
            .arg(record_key(ns, origin))
            .arg(serde_json::to_string(&r).unwrap())
            .query(&mut con)
            .unwrap();
    }
    let mut c = crawlsieve::redis_filter::Conn::connect(
        &crawlsieve::redis_filter::RedisConfig::new(&redis.url()),
    )
    .unwrap();
    let pattern = crawlsieve::url::pattern::pattern("https://news.example/story/1001");
    crawlsieve::pattern_verdicts::write(&mut c, ns, &pattern, 5, 0.99).unwrap();
    let rule = crawlsieve::page::params::Learned {
        host: "shop.example".into(),
        param: "sid".into(),
        values: 5,
        paths: 3,
        samples: 5,
        example: "https://shop.example/list?page=2&sid=a1".into(),
    };
    crawlsieve::params::publish(&mut c, ns, &rule).unwrap();
    let mut store =
        crawlsieve::outcomes::OutcomeStore::new(crawlsieve::outcomes::OutcomeConfig::default(), ns);
    let misses: Vec<_> = (0..3)
        .map(|i| {
            let url = format!("https://docs.example/guess/{i}.css");
            (
                crawlsieve::outcomes::keys(&url, None, None),
                crawlsieve::outcomes::Kind::Miss,
            )
        })
        .collect();
    store.record(&mut c, &misses).unwrap();
}

/// The configuration every driver gets (as `--set` lines for the processes).
fn sets(redis: &OwnRedis, ns: &str) -> Vec<String> {
    vec![
        format!("redis.url={}", redis.url()),
        format!("redis.namespace={ns}"),
        "redis.fp_rate=1e-9".into(),
        format!("redis.max_new_urls_per_host={BUDGET}"),
        "robots.enabled=true".into(),
        "robots.fetch_timeout=2s".into(),
        "kafka.outcomes_topic=outcomes".into(),
    ]
}

fn config(redis: &OwnRedis, ns: &str) -> Config {
    let mut sets = sets(redis, ns);
    sets.push("kafka.audit_topic=audit".into());
    crawlsieve::config::load(Component::Gate, None, [], &sets).unwrap()
}

/// The gate's core, one candidate per batch: a fetch event is `keep`, an audit record
/// `reject`, a record on the wait topic `held`, nothing at all `duplicate`.
fn through_gate(redis: &OwnRedis, ns: &str, urls: &[String]) -> Vec<Outcome> {
    let mut core = GateCore::new(config(redis, ns), FilterMetrics::unregistered());
    let mut out = Vec::new();
    for (i, u) in urls.iter().enumerate() {
        let mut batch = Batch::default();
        let ev = json!({"url": u}).to_string();
        batch.push(0, i as i64, None, Some(ev.as_bytes()));
        let mut st = Staged::default();
        core.stage("urls", &batch, &mut st).unwrap();
        let mut o: Outcome = ("duplicate".into(), None, None);
        for r in 0..st.len() {
            let (dest, _, payload) = st.get(r);
            let v: Value = serde_json::from_slice(payload).unwrap();
            o = match dest {
                Dest::Output => ("keep".into(), None, Some(v["url"].as_str().unwrap().into())),
                Dest::Audit => (
                    "reject".into(),
                    Some(v["reason"].as_str().unwrap().into()),
                    None,
                ),
                Dest::Held => ("held".into(), None, None),
                other => panic!("unexpected record for {u}: {other:?}"),
            };
        }
        core.finish(&mut st).unwrap();
        out.push(o);
    }
    out
}

/// A `crawlsieve serve` child, stopped on drop.
struct Api {
    child: Child,
    port: u16,
}

impl Api {
    fn start(sets: &[String]) -> Api {
        let port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
        cmd.args(["serve", "--set", &format!("serve.listen=127.0.0.1:{port}")])
            .args(["--set", "serve.allow_anonymous=true"])
            .env_remove("CRAWLSIEVE_CONFIG")
            .env_remove("CRAWLSIEVE_API_TOKENS")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for s in sets {
            cmd.arg("--set").arg(s);
        }
        let child = cmd.spawn().unwrap();
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "serve did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Api { child, port }
    }

    fn filter(&self, body: &Value) -> Value {
        let body = body.to_string();
        let req = format!(
            "POST /v1/filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let raw = http_request(self.port, req.as_bytes());
        let (head, json) = raw.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{raw}");
        serde_json::from_str(json).unwrap()
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// The API's answer, per candidate.
fn outcomes_of_api(resp: &Value, n: usize) -> Vec<Outcome> {
    let mut out: Vec<Outcome> = vec![("duplicate".into(), None, None); n];
    let new = resp["new"].as_array().unwrap();
    for (k, i) in resp["new_index"].as_array().unwrap().iter().enumerate() {
        out[i.as_u64().unwrap() as usize] =
            ("keep".into(), None, Some(new[k].as_str().unwrap().into()));
    }
    for r in resp["rejected"].as_array().unwrap() {
        out[r["index"].as_u64().unwrap() as usize] = (
            "reject".into(),
            Some(r["reason"].as_str().unwrap().into()),
            None,
        );
    }
    for h in resp["held"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        out[h["index"].as_u64().unwrap() as usize] = ("held".into(), None, None);
    }
    out
}

fn through_api(redis: &OwnRedis, ns: &str, urls: &[String]) -> Vec<Outcome> {
    let api = Api::start(&sets(redis, ns));
    outcomes_of_api(&api.filter(&json!({ "urls": urls })), urls.len())
}

/// `dedup --redis` with the same policy from its flags.
fn through_dedup(redis: &OwnRedis, ns: &str, urls: &[String], extra: &[&str]) -> Vec<Outcome> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["dedup", "--quiet", "--format", "jsonl", "--robots"])
        .args(["--redis", &redis.url(), "--namespace", ns])
        .args([
            "--max-new-urls-per-host",
            &BUDGET.to_string(),
            "--robots-timeout",
            "2s",
        ])
        .args(extra)
        .env_remove("CRAWLSIEVE_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = urls.join("\n");
    input.push('\n');
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let verdict = v["verdict"].as_str().unwrap().to_string();
            let canonical = (verdict == "keep").then(|| v["canonical"].as_str().unwrap().into());
            (verdict, v["reason"].as_str().map(String::from), canonical)
        })
        .collect()
}

#[test]
fn the_gate_the_api_and_dedup_give_the_same_verdicts() {
    let redis = OwnRedis::start(&[]);
    let urls = candidates();
    for ns in ["eq-gate", "eq-api", "eq-dedup", "eq-skip", "eq-skip2"] {
        prepare(&redis, ns);
    }
    let gate = through_gate(&redis, "eq-gate", &urls);
    let api = through_api(&redis, "eq-api", &urls);
    // `dedup` applies the fetch outcomes with --outcomes (an empty file: the namespace's counts).
    let none = tempfile::NamedTempFile::new().unwrap();
    let outcomes = ["--outcomes", none.path().to_str().unwrap()];
    let dedup = through_dedup(&redis, "eq-dedup", &urls, &outcomes);
    let table: String = urls
        .iter()
        .zip(gate.iter().zip(api.iter().zip(&dedup)))
        .map(|(u, (g, (a, d)))| format!("{u}\n  gate {g:?}\n  api  {a:?}\n  dedup {d:?}\n"))
        .collect();
    assert_eq!(gate, api, "the gate and the API differ:\n{table}");
    assert_eq!(gate, dedup, "the gate and dedup differ:\n{table}");

    // Every part of the policy had its say (the same in each driver, as compared above).
    let reason = |i: usize| gate[i].1.as_deref();
    assert_eq!(gate[0].0, "keep");
    assert_eq!(gate[1].0, "duplicate");
    assert_eq!(reason(2), Some("robots_disallowed"));
    assert_eq!(gate[3].0, "reject");
    assert_eq!(gate[4].0, "keep");
    assert_eq!(
        gate[5].0, "duplicate",
        "the learned rule makes sid irrelevant"
    );
    assert_eq!(gate[6].0, "keep");
    assert_eq!(reason(7), Some("pattern_similar"));
    assert_eq!(gate[8].0, "keep");
    assert_eq!(reason(9), Some("private_address"));
    assert_eq!(
        reason(10),
        Some("private_address"),
        "a refused robots.txt host"
    );
    assert_eq!(gate[11].0, "keep");
    let blog: Vec<&Outcome> = gate[12..17].iter().collect();
    assert!(blog[..3].iter().all(|o| o.0 == "keep"));
    assert!(blog[3..]
        .iter()
        .all(|o| o.1.as_deref() == Some("host_budget")));
    assert_eq!(gate[17].0, "duplicate");
    assert_eq!(reason(18), Some("fetch_misses"));
    assert_eq!(gate[19].0, "keep");

    // A driver that skips a part is caught: `dedup` without the pattern verdicts differs.
    let mut skip = vec!["--no-patterns"];
    skip.extend(outcomes);
    let skipping = through_dedup(&redis, "eq-skip", &urls, &skip);
    assert_ne!(gate, skipping, "the comparison must see a skipped part");
    assert_eq!(skipping[7].0, "keep");
    // … and so does `dedup` without the fetch outcomes.
    let unaware = through_dedup(&redis, "eq-skip2", &urls, &[]);
    assert_eq!(unaware[18].0, "keep", "without --outcomes");
}

/// An origin on 127.0.0.1 whose `/robots.txt` answers `status` (every other path 200), counting
/// its requests.
struct Origin {
    port: u16,
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
}

impl Origin {
    fn start(status: u16) -> Origin {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (status, hits) = (
            Arc::new(AtomicU16::new(status)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (s2, h2) = (status.clone(), hits.clone());
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut c) = conn else { continue };
                h2.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = c.read(&mut buf);
                let st = s2.load(Ordering::SeqCst);
                let body = "User-agent: *\nDisallow: /private/\n";
                let _ = write!(
                    c,
                    "HTTP/1.1 {st} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Origin { port, status, hits }
    }
}

/// The API fetches an origin's robots.txt itself when no record is there (once, shared through
/// Redis), and answers within the request; an origin whose robots.txt fails is `held`, not
/// marked seen, and its URLs come back new once it answers. `dedup --redis --robots` alike.
#[test]
fn the_api_and_dedup_fetch_robots_txt_and_hold_what_they_cannot_judge() {
    let redis = OwnRedis::start(&[]);
    let good = Origin::start(200);
    let failing = Origin::start(500);
    let url = |o: &Origin, p: &str| format!("http://127.0.0.1:{}{p}", o.port);
    let urls = vec![
        url(&good, "/private/1"),
        url(&good, "/pub/1"),
        url(&failing, "/pub/2"),
    ];
    let mut s = sets(&redis, "fetch-api");
    s.push("sieve.allow_private=[\"127.0.0.1\"]".into());
    s.push(format!(
        "robots.allow=[\"127.0.0.1:{}\",\"127.0.0.1:{}\"]",
        good.port, failing.port
    ));
    s.push("robots.error_ttl=1s".into());
    let api = Api::start(&s);
    let first = outcomes_of_api(&api.filter(&json!({ "urls": urls })), 3);
    assert_eq!(first[0].1.as_deref(), Some("robots_disallowed"));
    assert_eq!(first[1].0, "keep");
    assert_eq!(first[2].0, "held", "{first:?}");
    assert_eq!(
        good.hits.load(Ordering::SeqCst),
        1,
        "robots.txt fetched once"
    );
    // The failing origin recovers: its URL is judged again, and is new (it was never marked).
    failing.status.store(404, Ordering::SeqCst);
    let t = Instant::now();
    loop {
        let again = outcomes_of_api(&api.filter(&json!({ "urls": [urls[2]] })), 1);
        if again[0].0 == "keep" {
            break;
        }
        assert_eq!(again[0].0, "held");
        assert!(t.elapsed() < Duration::from_secs(20), "never let through");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(api);

    // dedup: the same, from its flags.
    failing.status.store(500, Ordering::SeqCst);
    let allow = format!("127.0.0.1:{},127.0.0.1:{}", good.port, failing.port);
    let d = through_dedup(
        &redis,
        "fetch-dedup",
        &urls,
        &["--allow-private", "127.0.0.1", "--robots-allow", &allow],
    );
    assert_eq!(d, first, "dedup answers as the API did");
}

/// `POST /v1/filter` with an `Idempotency-Key`: (status, body as JSON or null).
fn filter_with_key(port: u16, key: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let req = format!(
        "POST /v1/filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let raw = http_request(port, req.as_bytes());
    let (head, json) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

/// Never lose a URL: the API waits for new sites' robots.txt within the request while Redis
/// stalls (`DEBUG SLEEP`, longer than the request timeout) in the middle of it. A client that
/// retries an error with the same `Idempotency-Key`, and sends `held` URLs again (a new request,
/// a new key), must get every allowed URL `new` — exactly once over the final answers — and
/// every disallowed one `robots_disallowed`. Several seeds move the stall across the request.
#[test]
fn the_api_loses_nothing_when_redis_stalls_during_a_robots_wait() {
    let redis = OwnRedis::start(&["--enable-debug-command", "yes"]);
    let origins: Vec<Origin> = (0..4).map(|_| Origin::start(200)).collect();
    let mut s = sets(&redis, "stall-api");
    s.retain(|l| !l.starts_with("redis.max_new_urls_per_host"));
    s.push("redis.timeout=300ms".into());
    s.push("sieve.allow_private=[\"127.0.0.1\"]".into());
    let allow: Vec<String> = origins
        .iter()
        .map(|o| format!("\"127.0.0.1:{}\"", o.port))
        .collect();
    s.push(format!("robots.allow=[{}]", allow.join(",")));
    let api = Api::start(&s);
    let mut hit = 0;
    for seed in 0..4u64 {
        // Fresh paths per seed (the sites' robots.txt records stay: later seeds stall on the
        // filter and the records' reads rather than on the fetches).
        let mut urls = Vec::new();
        let (mut allowed, mut disallowed) = (Vec::new(), Vec::new());
        for o in &origins {
            for i in 0..5 {
                let u = format!("http://127.0.0.1:{}/pub/{seed}/{i}", o.port);
                allowed.push(u.clone());
                urls.push(u);
            }
            let u = format!("http://127.0.0.1:{}/private/{seed}", o.port);
            disallowed.push(u.clone());
            urls.push(u);
        }
        let mut con = redis.con();
        let stall = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20 + 60 * seed));
            let _: () = redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg(1.5)
                .query(&mut con)
                .unwrap();
        });
        let (mut new, mut rejected) = (Vec::<String>::new(), Vec::<(String, String)>::new());
        let mut pending = urls.clone();
        let started = Instant::now();
        let mut round = 0;
        while !pending.is_empty() {
            round += 1;
            assert!(round < 100, "seed {seed}: never settled: {pending:?}");
            let key = format!("stall-{seed}-{round}");
            let body = json!({ "urls": pending });
            // Retried with the same key until answered (a 5xx, or a reply lost in the stall).
            let resp = loop {
                let (status, v) = filter_with_key(api.port, &key, &body);
                if status == 200 {
                    break v;
                }
                hit += 1;
                assert!(
                    status >= 500 || status == 409 || status == 429,
                    "seed {seed}: {status} {v}"
                );
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "seed {seed}: no answer"
                );
                std::thread::sleep(Duration::from_millis(100));
            };
            let answer = outcomes_of_api(&resp, pending.len());
            let mut held = Vec::new();
            for (u, (verdict, reason, canonical)) in pending.iter().zip(answer) {
                match verdict.as_str() {
                    "keep" => new.push(canonical.unwrap()),
                    "reject" => rejected.push((u.clone(), reason.unwrap())),
                    "held" => held.push(u.clone()),
                    other => panic!("seed {seed}: {u} answered {other}: lost"),
                }
            }
            if !held.is_empty() {
                hit += 1;
            }
            pending = held;
        }
        stall.join().unwrap();
        let mut got = new.clone();
        got.sort();
        got.dedup();
        assert_eq!(
            got.len(),
            new.len(),
            "seed {seed}: a URL answered new twice"
        );
        let mut want = allowed.clone();
        want.sort();
        assert_eq!(got, want, "seed {seed}: every allowed URL new, once");
        for (u, r) in &rejected {
            assert!(disallowed.contains(u), "seed {seed}: {u} rejected {r}");
            assert_eq!(r, "robots_disallowed");
        }
        assert_eq!(rejected.len(), disallowed.len(), "seed {seed}");
        if started.elapsed() > Duration::from_millis(1000) {
            hit += 1;
        }
        println!(
            "seed {seed}: {} new, {} rejected, {round} request(s), {:.2} s, faults seen so far {hit}",
            new.len(),
            rejected.len(),
            started.elapsed().as_secs_f64()
        );
    }
    assert!(hit > 0, "the stall never reached a request");
}
