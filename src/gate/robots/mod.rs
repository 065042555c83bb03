//! robots.txt in the gate (issue 25; docs/crawl-policy.md "robots.txt in the gate").
//!
//! - **Getting the file.** The first gate worker that needs an origin's rules and finds none in
//!   Redis takes the origin's lease (`SET … NX PX`, so one fetch per origin across all gates)
//!   and hands it to its fetcher thread, which `GET`s `/robots.txt` through the egress policy
//!   ([`crate::net::get`]: the name resolved once, every address checked, the checked address
//!   connected to; ≤ 5 redirects, each checked; `robots.fetch_timeout`; at most
//!   [`crate::robots::MAX_BYTES`] read).
//! - **Sharing.** The outcome is one [`Record`] per origin in Redis
//!   (`cs:robots:{NS}:<origin>`), read by every gate, and kept in each worker's memory with
//!   the file's rules compiled for the agent ([`AgentRules`]).
//! - **RFC 9309 §2.3.1 and §2.4.** 2xx: the rules, for `robots.cache_ttl` (≤ 24 h); 4xx (and
//!   more than 5 redirects, or a redirect the egress policy refuses): no rules, everything
//!   allowed, for `cache_ttl`; 5xx or unreachable: everything disallowed *for now*, for
//!   `robots.error_ttl`, then fetched again (a name that does not resolve counts as
//!   unreachable). An origin whose own host the egress policy refuses (it resolves to a
//!   special-purpose address) gets its URLs rejected as `private_address`: a fetcher would be
//!   pointed at the crawler's network.
//! - **Stale rules are used while they are fetched again** (a record stays in Redis one
//!   `cache_ttl` past its expiry): only an origin never seen holds URLs.
//! - **Never lose a URL for robots' sake.** The gate asks [`RobotsGate::judge`]; a URL whose
//!   origin's rules are unknown, or whose robots.txt answered 5xx, is **held**: staged to the
//!   wait topic (its input offset is committed only once Kafka has it), and put back on the
//!   input topic when due by the mover ([`super::mover`]). Only a definite `Disallow` rejects a
//!   URL (`robots_disallowed`); a held or disallowed URL takes no place in the filter, so rules
//!   that change later let it in.

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::mpsc;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::RobotsSection;
use crate::net::{GetError, GetLimits, Got, Policy};
use crate::observe::FilterMetrics;
use crate::redis_filter::{Conn, LazyConn, RedisConfig, RedisFilterError};
use crate::robots::{AgentRules, RulesAt, MAX_BYTES};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The Redis key of `origin`'s record in namespace `ns` (`cs:robots:{NS}:<origin>`).
pub fn record_key(ns: &str, origin: &str) -> String {
    crate::redis_filter::Keys::robots(ns, origin).0
}

/// The Redis key of the lease on fetching `origin`'s robots.txt.
fn lease_key(ns: &str, origin: &str) -> String {
    crate::redis_filter::Keys::robots(ns, origin).1
}

/// What an origin's robots.txt said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// 2xx: these rules.
    Rules,
    /// 4xx, too many redirects, or a redirect the egress policy refuses: no rules, all allowed.
    None,
    /// 5xx, or unreachable: all disallowed for now.
    Unavailable,
    /// The egress policy refuses the origin's own host: its URLs are `private_address`.
    Refused,
}

impl Kind {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Rules => "rules",
            Kind::None => "none",
            Kind::Unavailable => "unavailable",
            Kind::Refused => "refused",
        }
    }
}

/// An origin's robots.txt as every gate sees it (JSON in Redis).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// What it said.
    pub kind: Kind,
    /// The HTTP status of the final answer, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The file (`rules` only; at most [`MAX_BYTES`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// When it was fetched (ms since the epoch).
    pub fetched_ms: u64,
    /// When it is to be fetched again (ms since the epoch); used until then, and while it is
    /// being fetched again.
    pub expires_ms: u64,
    /// Why, for an operator (an error, a refusal).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

impl Record {
    /// The record of a fetch that ended with `got`, at `now`.
    pub fn of(got: Result<Got, GetError>, now: u64, cfg: &RobotsSection) -> Record {
        let ok_ttl = cfg.cache_ttl.0.as_millis() as u64;
        let err_ttl = cfg.error_ttl.0.as_millis() as u64;
        let mut r = Record {
            kind: Kind::Unavailable,
            status: None,
            body: String::new(),
            fetched_ms: now,
            expires_ms: now + err_ttl,
            detail: String::new(),
        };
        match got {
            Ok(g) => {
                r.status = Some(g.status);
                match g.status {
                    200..=299 => {
                        r.kind = Kind::Rules;
                        let cut = &g.body[..g.body.len().min(MAX_BYTES)];
                        r.body = String::from_utf8_lossy(cut).into_owned();
                    }
                    400..=499 => r.kind = Kind::None,
                    s => r.detail = format!("answered {s}"),
                }
            }
            // A name that did not resolve (now) is a network failure, not a refusal: held and
            // retried like a 5xx, never judged from it (review: a passing DNS failure made the
            // origin `private_address`, or a redirect's target "allow everything").
            Err(GetError::Refused {
                why: why @ crate::net::Refused::Unresolved(_),
                ..
            }) => r.detail = why.to_string(),
            Err(GetError::Refused { why, hop: 0 }) => {
                r.kind = Kind::Refused;
                r.detail = why.to_string();
            }
            Err(e @ (GetError::Refused { .. } | GetError::TooManyRedirects(_))) => {
                r.kind = Kind::None;
                r.detail = e.to_string();
            }
            Err(GetError::Failed(why)) => r.detail = why,
        }
        if matches!(r.kind, Kind::Rules | Kind::None) {
            r.expires_ms = now + ok_ttl;
        }
        r
    }
}

/// What the gate does with a URL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Judged {
    /// Allowed, with the `Crawl-delay` of the group that applies.
    Allow(Option<f64>),
    /// A rule disallows it: `robots_disallowed`.
    Disallow,
    /// The origin's host is refused by the egress policy: `private_address`.
    Refused,
    /// Hold it until `until_ms`.
    Hold {
        /// When to judge it again (ms since the epoch).
        until_ms: u64,
        /// `unknown` (being fetched) or `unavailable` (5xx, unreachable).
        why: &'static str,
    },
    /// The origin must be asked in Redis first ([`RobotsGate::ask`]).
    Ask,
}

/// An origin's rules as a worker keeps them (inline: judging a URL reads the cache entry and
/// the rules' one buffer, nothing between).
#[derive(Debug, Clone)]
enum Known {
    /// In the worker's arena ([`RobotsGate::arena`]).
    Rules(RulesAt),
    AllowAll,
    Unavailable,
    Refused,
}

#[derive(Debug, Clone)]
struct Entry {
    known: Option<Known>,
    /// Until when `known` holds (ms).
    expires_ms: u64,
    /// Not asked in Redis again before this (ms).
    ask_after_ms: u64,
}

/// An origin's key in a worker's cache: xxh3-128 of its text (two origins colliding — odds of
/// about 1e-29 among 100,000 — would share a record; no string is kept or compared).
fn origin_key(origin: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(origin.as_bytes())
}

/// The verdict on `url` from its origin's entry `e` (none: never asked) at `now`, and whether
/// the origin is to be asked about again (its record went stale; the stale rules judge
/// meanwhile). `hold_ms`: how long a URL of an origin being fetched is held.
fn verdict(e: Option<&Entry>, arena: &[u8], url: &str, now: u64, hold_ms: u64) -> (Judged, bool) {
    let Some(e) = e else {
        return (Judged::Ask, false);
    };
    let (stale, ask) = (now >= e.expires_ms, now >= e.ask_after_ms);
    let v = match &e.known {
        None if ask => return (Judged::Ask, false),
        None => {
            let until_ms = now + hold_ms;
            return (
                Judged::Hold {
                    until_ms,
                    why: "unknown",
                },
                false,
            );
        }
        Some(Known::Rules(r)) => {
            if r.allowed(arena, url) {
                Judged::Allow(r.crawl_delay())
            } else {
                Judged::Disallow
            }
        }
        Some(Known::AllowAll) => Judged::Allow(None),
        Some(Known::Refused) => Judged::Refused,
        Some(Known::Unavailable) => Judged::Hold {
            // Until the record expires and the file is fetched again (at least `hold`).
            until_ms: e.expires_ms.max(now + hold_ms),
            why: "unavailable",
        },
    };
    (v, stale && ask)
}

/// How often a worker asks Redis about an origin it has no fresh record of.
const ASK_EVERY_MS: u64 = 1_000;

/// One gate worker's robots.txt state: the records it knows, its fetcher.
pub struct RobotsGate {
    cfg: RobotsSection,
    /// The namespace the records are kept under (`redis.namespace`).
    ns: String,
    /// By the origin's 128-bit hash ([`origin_key`]): a lookup per URL reads no key string.
    cache: FxHashMap<u128, Entry>,
    /// Every cached origin's compiled rules, back to back ([`Known::Rules`] says where): one
    /// allocation, not one per origin (66 k small long-lived blocks fragmented glibc's heap:
    /// `malloc`/`free` of the whole gate cost ~2.5× as much with them).
    arena: Vec<u8>,
    /// Bytes of `arena` no entry points at any more (rules replaced or forgotten).
    garbage: usize,
    /// Origins to ask Redis about with the batch.
    to_ask: FxHashSet<String>,
    fetcher: Option<Fetcher>,
    redis: RedisConfig,
    /// Who holds a lease (for an operator reading Redis).
    owner: String,
    metrics: FilterMetrics,
}

impl RobotsGate {
    /// The state of a worker of a gate configured with `cfg` (`[robots]` on).
    pub fn new(cfg: RobotsSection, ns: &str, redis: RedisConfig, metrics: FilterMetrics) -> Self {
        RobotsGate {
            cfg,
            ns: ns.to_string(),
            cache: FxHashMap::default(),
            arena: Vec::new(),
            garbage: 0,
            to_ask: FxHashSet::default(),
            fetcher: None,
            redis,
            owner: format!("{}:{}", std::process::id(), now_ms()),
            metrics,
        }
    }

    /// Judge `url` (canonical) of `origin` at `now`, from what this worker knows (with what
    /// its fetcher finished as of the last [`RobotsGate::take_fetched`]); no I/O.
    pub fn judge(&mut self, origin: &str, url: &str, now: u64) -> Judged {
        let e = self.cache.get(&origin_key(origin));
        let hold_ms = self.cfg.hold.0.as_millis() as u64;
        let (verdict, ask_again) = verdict(e, &self.arena, url, now, hold_ms);
        if ask_again {
            self.to_ask.insert(origin.to_string());
        }
        verdict
    }

    /// [`RobotsGate::judge`] for many URLs at once: `urls[i]` of `origins[i]`, verdicts in
    /// order into `out` (cleared first).
    ///
    /// The same verdicts, in three passes over the URLs: every origin's entry is looked up
    /// first, then every entry's rules are touched, then each URL is judged. A gate that has
    /// met tens of thousands of origins holds more rules than a CPU cache does, and a page's
    /// links lead everywhere, so each URL's entry and rules are memory reads that miss; in a
    /// pass that does nothing else, the reads of successive URLs are independent and the CPU
    /// overlaps their misses, instead of waiting for each in turn inside one long loop body
    /// (issue 25: robots.txt's cost in the gate).
    pub fn judge_all(&mut self, origins: &[&str], urls: &[&str], now: u64, out: &mut Vec<Judged>) {
        debug_assert_eq!(origins.len(), urls.len());
        out.clear();
        let hold_ms = self.cfg.hold.0.as_millis() as u64;
        let entries: Vec<Option<&Entry>> = origins
            .iter()
            .map(|o| self.cache.get(&origin_key(o)))
            .collect();
        let mut touched = 0u8;
        for e in entries.iter().flatten() {
            if let Some(Known::Rules(r)) = &e.known {
                touched ^= r.first_byte(&self.arena);
            }
        }
        std::hint::black_box(touched);
        let mut ask_again = Vec::new();
        for (i, e) in entries.into_iter().enumerate() {
            let (v, again) = verdict(e, &self.arena, urls[i], now, hold_ms);
            if again {
                ask_again.push(i);
            }
            out.push(v);
        }
        for i in ask_again {
            self.to_ask.insert(origins[i].to_string());
        }
    }

    /// Whether [`RobotsGate::ask`] has origins to ask about.
    pub fn must_ask(&self) -> bool {
        !self.to_ask.is_empty()
    }

    /// Note `origin` to be asked with the next [`RobotsGate::ask`].
    pub fn ask_later(&mut self, origin: &str) {
        self.to_ask.insert(origin.to_string());
    }

    /// Ask Redis about the origins noted (one pipeline of `GET`s), take the lease of those it
    /// has no fresh record of (one pipeline of `SET NX`), and hand the leased ones to the
    /// fetcher. A Redis error is retryable: the gate retries the batch.
    pub fn ask(&mut self, conn: &mut Conn, now: u64) -> Result<(), RedisFilterError> {
        if self.to_ask.is_empty() {
            return Ok(());
        }
        let origins: Vec<String> = self.to_ask.iter().cloned().collect();
        let cmds = origins
            .iter()
            .map(|o| redis::cmd("GET").arg(record_key(&self.ns, o)).clone())
            .collect();
        let replies = conn
            .pipeline(cmds)
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        let mut fetch = Vec::new();
        for (o, v) in origins.iter().zip(replies) {
            let rec: Option<Record> = match v {
                redis::Value::BulkString(b) => serde_json::from_slice(&b).ok(),
                _ => None,
            };
            let fresh = rec.as_ref().is_some_and(|r| now < r.expires_ms);
            let e = self.learn(o, rec.as_ref());
            e.ask_after_ms = now + ASK_EVERY_MS;
            if !fresh {
                fetch.push(o.clone());
            }
        }
        if !fetch.is_empty() {
            let lease_ms = 2 * self.cfg.fetch_timeout.0.as_millis() as u64 + 1_000;
            let cmds = fetch
                .iter()
                .map(|o| {
                    redis::cmd("SET")
                        .arg(lease_key(&self.ns, o))
                        .arg(&self.owner)
                        .arg("NX")
                        .arg("PX")
                        .arg(lease_ms)
                        .clone()
                })
                .collect();
            let replies = conn
                .pipeline(cmds)
                .map_err(|e| RedisFilterError::from_redis(e, false))?;
            for (o, v) in fetch.into_iter().zip(replies) {
                if matches!(v, redis::Value::Okay) {
                    self.fetcher().request(o);
                }
            }
        }
        self.to_ask.clear();
        self.trim(now);
        Ok(())
    }

    /// Keep `r` as `origin`'s record, as if read from Redis (benches, tests).
    pub fn learn_record(&mut self, origin: &str, r: &Record) {
        self.learn(origin, Some(r));
    }

    /// Keep `r` as `origin`'s record (none: only the entry); its entry.
    fn learn(&mut self, origin: &str, r: Option<&Record>) -> &mut Entry {
        // Garbage of earlier records first: the entry below is returned, so not after it.
        self.compact_if_wasteful();
        let e = self.cache.entry(origin_key(origin)).or_insert(Entry {
            known: None,
            expires_ms: 0,
            ask_after_ms: 0,
        });
        let Some(r) = r else { return e };
        // A newer record wins (a stale one read from Redis never replaces a fresh fetch).
        if e.known.is_none() || r.expires_ms >= e.expires_ms {
            let known = match r.kind {
                Kind::Rules => Known::Rules(
                    AgentRules::compile_bytes(r.body.as_bytes(), &self.cfg.agent)
                        .store(&mut self.arena),
                ),
                Kind::None => Known::AllowAll,
                Kind::Unavailable => Known::Unavailable,
                Kind::Refused => Known::Refused,
            };
            if let Some(Known::Rules(old)) = e.known.replace(known) {
                self.garbage += old.len;
            }
            e.expires_ms = r.expires_ms;
        }
        e
    }

    /// Copy the live rules to a new arena once more than half of it (and over 1 MiB) is
    /// garbage: the arena stays within twice what the cache holds.
    fn compact_if_wasteful(&mut self) {
        if self.garbage > (1 << 20) && 2 * self.garbage > self.arena.len() {
            self.compact();
        }
    }

    fn compact(&mut self) {
        let mut arena = Vec::with_capacity(self.arena.len() - self.garbage);
        for e in self.cache.values_mut() {
            if let Some(Known::Rules(r)) = &mut e.known {
                let at = arena.len();
                arena.extend_from_slice(&self.arena[r.at..r.at + r.len]);
                r.at = at;
            }
        }
        self.arena = arena;
        self.garbage = 0;
    }

    /// Learn what this worker's fetcher finished since last asked (once per chunk, not per URL).
    pub fn take_fetched(&mut self) {
        let Some(f) = &self.fetcher else { return };
        let done: Vec<(String, Record)> = f.done.try_iter().collect();
        for (o, r) in done {
            self.learn(&o, Some(&r));
        }
    }

    /// Bound the cache: forget records long expired, then everything if still over.
    fn trim(&mut self, now: u64) {
        if self.cache.len() <= self.cfg.cache_entries {
            return;
        }
        let keep = self.cfg.cache_ttl.0.as_millis() as u64;
        self.cache.retain(|_, e| e.expires_ms + keep > now);
        if self.cache.len() > self.cfg.cache_entries {
            self.cache.clear();
        }
        // What was forgotten is garbage now: keep only what the cache still holds.
        self.compact();
    }

    fn fetcher(&mut self) -> &Fetcher {
        if self.fetcher.is_none() {
            self.fetcher = Some(Fetcher::start(
                self.cfg.clone(),
                self.ns.clone(),
                self.redis.clone(),
                self.metrics.clone(),
            ));
        }
        self.fetcher.as_ref().expect("started above")
    }
}

/// A thread that fetches robots.txt files and writes their records to Redis.
struct Fetcher {
    tx: tokio::sync::mpsc::UnboundedSender<String>,
    done: mpsc::Receiver<(String, Record)>,
}

impl Fetcher {
    fn start(cfg: RobotsSection, ns: String, redis: RedisConfig, metrics: FilterMetrics) -> Self {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let (done_tx, done) = mpsc::channel();
        std::thread::Builder::new()
            .name("robots-fetch".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        tracing::error!(error = %e, "robots.txt fetcher: no runtime; origins wait for their lease to expire");
                        return;
                    }
                };
                let policy = Policy {
                    allow: cfg.allow.clone(),
                };
                let lookup = crate::net::system_lookup();
                let lim = GetLimits {
                    timeout: cfg.fetch_timeout.0,
                    max_bytes: MAX_BYTES,
                    max_redirects: 5,
                    user_agent: cfg.agent.clone(),
                    accept: "text/plain, */*;q=0.5",
                };
                let conn = Arc::new(std::sync::Mutex::new(LazyConn::new(redis)));
                let sem = Arc::new(tokio::sync::Semaphore::new(cfg.fetch_concurrency));
                rt.block_on(async move {
                    while let Some(origin) = rx.recv().await {
                        let Ok(permit) = sem.clone().acquire_owned().await else {
                            return;
                        };
                        let (policy, lookup, lim, cfg) =
                            (policy.clone(), lookup.clone(), lim.clone(), cfg.clone());
                        let (conn, ns, done_tx, metrics) =
                            (conn.clone(), ns.clone(), done_tx.clone(), metrics.clone());
                        tokio::spawn(async move {
                            let url = format!("{origin}/robots.txt");
                            let got = crate::net::get(&url, &policy, &lookup, &lim).await;
                            let rec = Record::of(got, now_ms(), &cfg);
                            metrics
                                .robots_fetches
                                .with_label_values(&[rec.kind.label()])
                                .inc();
                            if rec.kind != Kind::Rules {
                                tracing::info!(origin, outcome = rec.kind.label(), status = ?rec.status, detail = %rec.detail, "robots.txt");
                            }
                            let _ = done_tx.send((origin.clone(), rec.clone()));
                            let keep = cfg.cache_ttl.0.as_millis() as u64;
                            let stored = tokio::task::spawn_blocking(move || {
                                store(&conn, &ns, &origin, &rec, keep)
                            })
                            .await;
                            if let Ok(Err(e)) = stored {
                                tracing::warn!(error = %e, "robots.txt record not stored in Redis (its lease expires; it is fetched again)");
                            }
                            drop(permit);
                        });
                    }
                });
            })
            .expect("spawn the robots.txt fetcher");
        Fetcher { tx, done }
    }

    fn request(&self, origin: String) {
        let _ = self.tx.send(origin);
    }
}

/// Write `rec` as `origin`'s record (kept `keep` ms past its expiry, to be used while it is
/// fetched again) and release the lease.
fn store(
    conn: &std::sync::Mutex<LazyConn>,
    ns: &str,
    origin: &str,
    rec: &Record,
    keep: u64,
) -> Result<(), RedisFilterError> {
    let json = serde_json::to_string(rec).expect("a record serializes");
    let ttl = rec.expires_ms.saturating_sub(now_ms()) + keep;
    let mut c = conn.lock().unwrap_or_else(|p| p.into_inner());
    c.with(|conn| {
        conn.pipeline(vec![
            redis::cmd("SET")
                .arg(record_key(ns, origin))
                .arg(json)
                .arg("PX")
                .arg(ttl.max(1_000))
                .clone(),
            redis::cmd("DEL").arg(lease_key(ns, origin)).clone(),
        ])
        .map(|_| ())
        .map_err(|e| RedisFilterError::from_redis(e, false))
    })
}

/// The held form of a URL event on the wait topic.
#[derive(Debug, Serialize, Deserialize)]
pub struct Held<'a> {
    /// When to put it back on the input topic (ms since the epoch).
    pub held_until_ms: u64,
    /// The origin whose robots.txt it waits for.
    #[serde(borrow)]
    pub origin: std::borrow::Cow<'a, str>,
    /// `unknown` or `unavailable`.
    #[serde(borrow)]
    pub why: std::borrow::Cow<'a, str>,
    /// The URL event, as the gate read it.
    #[serde(borrow)]
    pub event: &'a serde_json::value::RawValue,
}

#[cfg(test)]
mod tests;
