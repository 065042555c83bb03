//! The Redis-shared filter: a partitioned Bloom filter per namespace, shared by every gate and
//! embedded job that attaches to it, with a local first tier, retry safety, an exact-confirm
//! mode, growth generations and recrawl windows. See `docs/redis-filter.md` for the design and
//! the measurements behind it.
//!
//! # Protocols
//! - **Outbox: write ahead, check-and-set, deliver, clear** ([`RedisFilter::take_submit`] /
//!   [`RedisFilter::take_complete`], then [`RedisFilter::delivered`]; `outbox.rs`): what `dedup`
//!   and the gate use. What delivering each URL means (the canonical URL, the gate's fetch
//!   event) is written to the client's outbox in the same pipeline as the check-and-set, and
//!   cleared after delivery; a client whose lease expired has its outbox adopted and delivered
//!   by another. A URL costs about one check-and-set; nobody waits on anyone.
//! - **Claim, deliver, confirm** ([`RedisFilter::claim_as`]; `claims.rs`): the HTTP API's
//!   idempotent requests, whose claims are held under the request's key so that a retry by any
//!   process finds them.
//! - [`RedisFilter::check_and_set`]: atomic `SADD` / `BITFIELD … SET`, writing before the
//!   caller acts (the HTTP API without an idempotency key). A write whose reply was lost is kept
//!   "in doubt" in this process and its URLs reported new on retry; a crash in between loses
//!   the answer.
//! - [`RedisFilter::check`] (read-only) and [`RedisFilter::insert`] (idempotent).
//!
//! The files: `namespace.rs` (create, attach, generations, maintenance, drop), `check.rs`
//! (check-and-set and the pipelines every protocol builds on), `outbox.rs`, `claims.rs`,
//! `forget.rs` (forgetting URLs, taking a budget's surplus back), `tier.rs` (the local first
//! tier), `snapshot.rs` (export and import), `stats.rs`; `layout.rs` names every key,
//! `conn.rs`/`resp.rs` speak to Redis.
//!
//! The fault table (what each component sees under each fault, and why no URL is lost) is in
//! `docs/redis-filter.md`.
//!
//! Owns: the Redis key layout (`cs:{ns}:…`), claims, generations, the local tier. Layer 2: may
//! import `bloom`; never `config`, `stage`, the components or `cli`.

mod check;
mod claims;
mod conn;
mod forget;
pub mod layout;
mod namespace;
mod outbox;
mod resp;
pub mod snapshot;
mod stats;
pub mod tier;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::{Cmd, Value};
use serde::{Deserialize, Serialize};

pub use conn::{Conn, LazyConn, RedisConfig, RedisTls};
pub use layout::{GenSpec, Keys};

/// Whether `ns` is a namespace name (`[A-Za-z0-9._-]{1,64}`).
pub fn valid_namespace(ns: &str) -> bool {
    layout::check_namespace(ns).is_ok()
}
pub use outbox::{Adopted, Payload, Ticket};
pub use stats::{ClientStats, GenStats, NamespaceStats};
pub use tier::LocalTier;

use claims::Inflight;
use namespace::{as_int, parse_field, CREATE_LUA};
pub use namespace::{list_namespaces, scan_keys};
use resp::{Batch, Replies};

use crate::bloom::CheckAndSet;

/// What can go wrong; [`RedisFilterError::is_retryable`] says whether waiting helps.
#[derive(Debug, thiserror::Error)]
pub enum RedisFilterError {
    /// Bad parameters (fix the command line or config).
    #[error("bad filter parameters: {0}")]
    Params(String),
    /// The namespace exists with other parameters.
    #[error(
        "namespace {ns:?} exists with other parameters: {diff} (use those, or another namespace)"
    )]
    Mismatch {
        /// Namespace name.
        ns: String,
        /// What differs, `field: stored ≠ requested`.
        diff: String,
    },
    /// The namespace does not exist (never created, dropped, or Redis lost its data).
    #[error("namespace {0:?} does not exist in Redis: create it (`crawlsieve bloom create`), or, if Redis lost its data, restore it from a snapshot (`crawlsieve bloom import`)")]
    NotFound(String),
    /// The namespace already exists (create/import without replace).
    #[error("namespace {0:?} already exists: use it as it is, drop it first (`crawlsieve bloom drop {0}`), or choose another name (`bloom import --replace` replaces one from a snapshot)")]
    Exists(String),
    /// Redis holds something this build cannot trust.
    #[error("corrupt namespace data: {0}")]
    Corrupt(String),
    /// Redis is unreachable, timed out, or refused for a transient reason. Retry later; the
    /// filter reconnects by itself. `ambiguous` = a write may have run without its reply.
    #[error("Redis unavailable: {}", describe(source))]
    Unavailable {
        /// The underlying error.
        source: redis::RedisError,
        /// Whether a write was sent and its outcome is unknown.
        ambiguous: bool,
    },
    /// Redis turned this client away for a reason retrying will not fix: a TLS certificate it
    /// does not trust, or a wrong user or password. The message names the fix.
    #[error("{0}")]
    Refused(String),
    /// Redis answered with an error that retrying will not fix (wrong key type, no permission…).
    #[error("Redis error: {}", describe(.0))]
    Server(redis::RedisError),
    /// A snapshot file is unusable.
    #[error("bad filter snapshot: {0}")]
    Snapshot(String),
    /// Reading or writing a snapshot failed.
    #[error("snapshot I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl RedisFilterError {
    /// A retryable error that is not Redis' own (e.g. a namespace Redis lost, being restored).
    pub fn unavailable(detail: String) -> RedisFilterError {
        RedisFilterError::Unavailable {
            source: redis::RedisError::from((redis::ErrorKind::Io, "waiting", detail)),
            ambiguous: false,
        }
    }

    /// Whether the same call may succeed later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, RedisFilterError::Unavailable { .. })
    }

    /// A `-CODE message` reply line of the raw hot path.
    fn from_server_line(line: &str) -> RedisFilterError {
        let code = line.split(' ').next().unwrap_or("");
        if matches!(code, "MOVED" | "ASK") {
            return RedisFilterError::Params(CLUSTER_NODE.into());
        }
        let transient = matches!(
            code,
            "LOADING" | "OOM" | "TRYAGAIN" | "CLUSTERDOWN" | "MASTERDOWN" | "READONLY" | "BUSY"
        );
        let e =
            redis::RedisError::from((redis::ErrorKind::Extension, "Redis error", line.to_string()));
        if transient {
            RedisFilterError::Unavailable {
                source: e,
                ambiguous: false,
            }
        } else {
            RedisFilterError::Server(e)
        }
    }

    /// A connection Redis will never accept as configured: credentials, TLS, a database that
    /// does not exist. Each says its fix in one sentence.
    fn refusal(e: &redis::RedisError) -> Option<RedisFilterError> {
        let text = e.to_string();
        let lower = text.to_ascii_lowercase();
        if matches!(e.kind(), redis::ErrorKind::InvalidClientConfig) {
            return Some(RedisFilterError::Params(text));
        }
        if lower.contains("unable to parse client identity") {
            return Some(RedisFilterError::Params(format!(
                "the client certificate or its key cannot be read ({text}): the key must be \
                 PKCS#8 (`BEGIN PRIVATE KEY`; convert one with `openssl pkcs8 -topk8 -nocrypt -in \
                 key.pem -out key.pk8.pem`)"
            )));
        }
        // (A cluster client reports a node's wrong password inside an I/O error: its text.)
        if matches!(e.kind(), redis::ErrorKind::AuthenticationFailed)
            || e.code().is_some_and(|c| c == "WRONGPASS" || c == "NOAUTH")
            || lower.contains("wrongpass")
            || lower.contains("noauth")
            || lower.contains("authentication failed")
        {
            return Some(RedisFilterError::Refused(format!(
                "Redis refused the credentials ({text}): put the right ones in the URL, \
                 redis://USER:PASSWORD@host:port (or redis://:PASSWORD@host:port for the default \
                 user)"
            )));
        }
        // Only what a certificate or a protocol mismatch says: every handshake error is an
        // "SSL Handshake error", a server closing the connection mid-handshake (restarting,
        // at maxclients) included, and that one must be retried.
        const TLS_REFUSALS: &[&str] = &[
            "certificate verify failed",
            "certificate required",
            "unknown ca",
            "bad certificate",
            "certificate unknown",
            "self-signed certificate",
            "self signed certificate",
            "hostname mismatch",
            "wrong version number",
            "packet length too long",
        ];
        if TLS_REFUSALS.iter().any(|r| lower.contains(r)) {
            return Some(RedisFilterError::Refused(format!(
                "the TLS handshake with Redis failed ({text}): if its certificate is not signed \
                 by a CA this machine trusts, give the CA's PEM file with --redis-ca FILE (or \
                 CRAWLSIEVE_REDIS_CA, redis.tls_ca, SSL_CERT_FILE); a server that speaks plain \
                 TCP wants redis://, not rediss://"
            )));
        }
        if lower.contains("switch database") || lower.contains("db index is out of range") {
            return Some(RedisFilterError::Params(format!(
                "Redis has no such database ({text}): the number after the port in the URL \
                 (redis://host:port/N) must be below the server's `databases` setting (16 by \
                 default); most deployments use /0"
            )));
        }
        None
    }

    pub(crate) fn from_redis(e: redis::RedisError, ambiguous: bool) -> RedisFilterError {
        use redis::{ErrorKind as K, ServerErrorKind as S};
        // A single-node client talking to a cluster node: every key of another node is MOVED.
        // (The cluster client follows MOVED itself.)
        if matches!(e.kind(), K::Server(S::Moved)) || e.to_string().contains("MOVED") {
            return RedisFilterError::Params(CLUSTER_NODE.into());
        }
        if let Some(turned_away) = Self::refusal(&e) {
            return turned_away;
        }
        let transient = e.is_io_error()
            || e.is_timeout()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || matches!(
                e.kind(),
                K::ClusterConnectionNotFound
                    | K::Server(
                        S::BusyLoading
                            | S::TryAgain
                            | S::ClusterDown
                            | S::MasterDown
                            | S::Moved
                            | S::Ask
                            | S::ReadOnly
                    )
            )
            || e.code() == Some("OOM");
        if transient {
            RedisFilterError::Unavailable {
                source: e,
                ambiguous,
            }
        } else {
            RedisFilterError::Server(e)
        }
    }
}

/// What a namespace stores per URL. The default is `fingerprints` (docs/redis-filter.md has
/// the measurements behind that choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Partitioned Bloom filter: k bits per URL in one shard string (`BITFIELD`). A new URL is
    /// dropped with probability ≈ the FP target. Smallest at low p (3.6 B/URL at 1e-4).
    Bloom,
    /// Bloom filter + every URL's 64-bit fingerprint (seed 002): the store decides, so a Bloom
    /// false positive is caught and no new URL is dropped (up to 2⁻⁶⁴-scale collisions).
    Exact,
    /// Fingerprints only, in small intset buckets (`SADD`, one per URL): ~3× less Redis CPU per
    /// URL than `bloom`, FP 6e-8 at capacity with 32-bit fingerprints (chosen for p < 3.9e-3).
    Fingerprints,
}

impl Mode {
    /// The name the flag and the setting take (`--mode fingerprints`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Bloom => "bloom",
            Mode::Exact => "exact",
            Mode::Fingerprints => "fingerprints",
        }
    }

    fn store(self) -> layout::Store {
        match self {
            Mode::Bloom => layout::Store::Bloom,
            Mode::Exact => layout::Store::BloomAndFingerprints,
            Mode::Fingerprints => layout::Store::Fingerprints,
        }
    }

    /// Whether fingerprints decide (exact and fingerprints modes).
    fn uses_store(self) -> bool {
        self != Mode::Bloom
    }
}

/// A namespace's parameters, fixed at creation and checked on attach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamespaceSpec {
    /// Format version of the stored metadata.
    pub version: u32,
    /// Design capacity (per window period for windowed namespaces, see [`NamespaceSpec::window`]).
    pub capacity: u64,
    /// FP target of the whole namespace.
    pub fp_rate: f64,
    /// Bits per URL.
    pub k: u32,
    /// Shards per generation (`None`: one per 64 MiB).
    pub shards: Option<u32>,
    /// Bloom only, or Bloom + fingerprint store.
    pub mode: Mode,
    /// Recrawl window in seconds: a URL counts as new again between `window` and
    /// `window × (1 + 1/window_slices)` after it was last reported new.
    pub window: Option<u64>,
    /// Generations per window (rotation period = window / slices).
    pub window_slices: u32,
}

/// Version of [`NamespaceSpec`] and of the `gens` record.
pub const META_VERSION: u32 = 1;
/// Capacity factor of each growth generation (as RedisBloom's scalable filters).
pub const GROWTH: u64 = 2;
/// FP tightening of each growth generation: the union of all stays below 2 × the target.
pub const TIGHTENING: f64 = 0.5;

impl NamespaceSpec {
    /// A spec with defaults for the optional parts.
    pub fn new(capacity: u64, fp_rate: f64) -> NamespaceSpec {
        NamespaceSpec {
            version: META_VERSION,
            capacity,
            fp_rate,
            k: layout::DEFAULT_K,
            shards: None,
            mode: Mode::Fingerprints,
            window: None,
            window_slices: 4,
        }
    }

    fn first_generation(&self, now: u64) -> Result<GenSpec, RedisFilterError> {
        if self.version != META_VERSION {
            return Err(RedisFilterError::Corrupt(format!(
                "metadata version {} (this build reads {META_VERSION})",
                self.version
            )));
        }
        let (cap, p) = match self.window {
            None => (self.capacity, self.fp_rate),
            Some(0) => return Err(RedisFilterError::Params("window must be positive".into())),
            Some(_) => {
                if !(1..=64).contains(&self.window_slices) {
                    return Err(RedisFilterError::Params(
                        "window slices must be 1..=64".into(),
                    ));
                }
                // Up to slices+1 generations are live; each gets its share of p.
                let s = self.window_slices as u64;
                (self.capacity.div_ceil(s), self.fp_rate / (s + 1) as f64)
            }
        };
        GenSpec::new(0, now, cap, p, self.k, self.shards, self.mode.store())
    }
}

const CLUSTER_NODE: &str = "Redis answered MOVED: this is a Redis Cluster node; use \
    --redis-cluster (redis.cluster = true), or give several comma-separated seed URLs";

/// A Redis error as an operator can act on it: what happened in words, the server's own
/// message, cut to 300 characters (a failed pipeline lists every command).
fn describe(e: &redis::RedisError) -> String {
    let text = e.to_string();
    let refused = e.is_connection_refusal()
        || text.contains("Connection refused")
        || text.contains("os error 111");
    let what = if refused {
        // Before the timeout test: a refused connect can also count as "timed out" to redis-rs.
        "connection refused (is Redis running at that address?)"
    } else if e.is_timeout()
        || matches!(e.kind(), redis::ErrorKind::Io) && text.contains("os error 11")
    {
        "no reply within the timeout (Redis stalled, or the network is slow)"
    } else if e.is_connection_dropped() {
        "the connection was closed"
    } else {
        ""
    };
    let mut msg = e.to_string();
    if msg.len() > 300 {
        let mut cut = 300;
        while !msg.is_char_boundary(cut) {
            cut -= 1;
        }
        msg.truncate(cut);
        msg.push('…');
    }
    if what.is_empty() {
        msg
    } else if refused {
        // The OS's "Connection refused (os error 111)" says nothing more.
        what.to_string()
    } else {
        format!("{what}: {msg}")
    }
}

/// What a client may require of an existing namespace when it attaches; `None` = don't care.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// Capacity.
    pub capacity: Option<u64>,
    /// FP target.
    pub fp_rate: Option<f64>,
    /// Bits per URL.
    pub k: Option<u32>,
    /// Mode.
    pub mode: Option<Mode>,
    /// Window (Some(None) = must have none).
    pub window: Option<Option<u64>>,
    /// Shards per generation as requested at creation (`None` in the stored spec = automatic).
    pub shards: Option<u32>,
}

impl Expect {
    fn diff(&self, s: &NamespaceSpec) -> Vec<String> {
        let mut d = Vec::new();
        if let Some(c) = self.capacity.filter(|&c| c != s.capacity) {
            d.push(format!("capacity: {} ≠ {c}", s.capacity));
        }
        if let Some(p) = self
            .fp_rate
            .filter(|&p| (p - s.fp_rate).abs() > s.fp_rate * 1e-9)
        {
            d.push(format!("fp-rate: {} ≠ {p}", s.fp_rate));
        }
        if let Some(k) = self.k.filter(|&k| k != s.k) {
            d.push(format!("hashes: {} ≠ {k}", s.k));
        }
        if let Some(m) = self.mode.filter(|&m| m != s.mode) {
            d.push(format!("mode: {} ≠ {}", s.mode.name(), m.name()));
        }
        if let Some(w) = self.window.filter(|&w| w != s.window) {
            let show = |w: Option<u64>| {
                w.map_or("none".to_string(), |s| {
                    humantime::format_duration(std::time::Duration::from_secs(s)).to_string()
                })
            };
            d.push(format!("window: {} ≠ {}", show(s.window), show(w)));
        }
        if let Some(n) = self.shards.filter(|&n| Some(n) != s.shards) {
            let stored = s.shards.map_or("automatic".to_string(), |n| n.to_string());
            d.push(format!("shards: {stored} ≠ {n}"));
        }
        d
    }
}

/// A generation waiting to be unlinked (clients may still hold it for one refresh interval).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retired {
    /// The generation.
    pub gen: GenSpec,
    /// Unix seconds when it left the live set.
    pub retired: u64,
}

/// The live generations (oldest first; the last is current) and those being retired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generations {
    /// Live generations, oldest first.
    pub live: Vec<GenSpec>,
    /// Retired, not yet unlinked.
    #[serde(default)]
    pub retired: Vec<Retired>,
}

impl Generations {
    /// Whether going from `self` to `next` removes a live generation.
    fn retires_into(&self, next: &Generations) -> bool {
        self.live
            .iter()
            .any(|g| !next.live.iter().any(|h| h.id == g.id))
    }

    /// The generation that receives inserts.
    pub fn current(&self) -> &GenSpec {
        self.live
            .last()
            .expect("a namespace always has a live generation")
    }
}

/// Most fingerprint buckets `stats` reads per generation (more are sampled evenly).
const STATS_SAMPLE: u64 = 20_000;

/// Seconds a retired generation is kept before its keys are unlinked.
const RETIRE_GRACE_SECS: u64 = 30;

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn new_instance_id() -> String {
    format!("{:016x}", layout::unique_u64())
}

/// A client attached to one namespace. Not `Sync`: give each thread or task its own.
pub struct RedisFilter {
    cfg: RedisConfig,
    ns: String,
    meta_key: String,
    conn: Option<Conn>,
    /// A second connection for refreshes and maintenance, so they run on time while batches
    /// are in flight on `conn`, and for waiting on claims other clients hold.
    mconn: Option<Conn>,
    /// This client's claim value (a random positive integer).
    token: i64,
    /// URLs this client answered new and has not confirmed yet, with when it claimed them
    /// (a claim older than the claim TTL is void).
    held: HashMap<u128, Instant>,
    /// Confirmations (insert + release) and releases waiting to ride on the next exchange.
    confirm_q: Vec<u128>,
    release_q: Vec<u128>,
    /// Refresh at the next call (counters near the generation's capacity).
    force_refresh: bool,
    /// Moving average of the share of URLs sent to Redis that were already seen: above one
    /// half, a batch is read first and only what looks new is claimed (a repeat then costs
    /// one read instead of a claim, a read and a release).
    seen_share: f64,
    spec: NamespaceSpec,
    gens: Generations,
    gens_raw: String,
    /// The `gv` field of the metadata when `gens` was read: every change of the generations
    /// increments it, and every claim exchange reads it back (see `decode_claims`).
    gens_version: i64,
    /// The namespace's `forgets` counter when last read ([`RedisFilter::forget_urls`]).
    forgets: u64,
    /// A `bloom` namespace's re-admit set is not empty (as of the last refresh, or this
    /// client's own forget): every check-and-set consults it (`forget.rs`).
    readmit: bool,
    /// Fingerprints the last [`RedisFilter::lookup`] found in the re-admit set: the
    /// check-and-set that follows answers them by its `SREM` alone (their bits in the current
    /// generation say nothing: another client may have taken the re-admission first).
    readmit_seen: HashSet<u128>,
    instance: String,
    items: HashMap<u32, u64>,
    pending_items: u64,
    last_refresh: Instant,
    tier: LocalTier,
    doubt: HashSet<u128>,
    stats: ClientStats,
    // Scratch, reused across batches.
    todo: Vec<usize>,
    order: Vec<(u32, usize)>,
    seen: Vec<bool>,
    spare: Batch,
    replies: Replies,
    inflight: std::collections::VecDeque<Inflight>,
    epoch: u64,
    warnings: Vec<String>,
    /// The outbox protocol's state (`outbox.rs`), made on first use.
    ob: Option<outbox::Outbox>,
    /// URLs Redis answered for this client (seen, or inserted with its reply): the local
    /// tier's twin that a lost connection does not clear. A URL in it was present before any
    /// later attempt, so a failed later attempt cannot have been its inserter: it is never put
    /// in doubt (the outbox protocol; made with it).
    known: Option<LocalTier>,
}

impl std::fmt::Debug for RedisFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFilter")
            .field("ns", &self.ns)
            .field("spec", &self.spec)
            .field("generations", &self.gens.live.len())
            .finish()
    }
}

impl RedisFilter {}

impl Drop for RedisFilter {
    fn drop(&mut self) {
        if self.mconn.is_some() {
            let _ = self.flush_items();
        }
        // A client that did not leave (it failed) gives its lease up: its outbox entries are
        // then adopted at once by the next client.
        let _ = self.leave();
    }
}

/// Retry `op` while it fails with a retryable error, backing off from 50 ms to 5 s, for at most
/// `budget` (the last wait shortened to end at the budget, so `--redis-retry-for 3s` tries for
/// 3 s, not until the next doubling would pass it). The error of the last attempt is returned
/// when the budget is spent.
pub fn with_retry<T>(
    budget: Duration,
    mut on_retry: impl FnMut(&RedisFilterError, Duration),
    mut op: impl FnMut() -> Result<T, RedisFilterError>,
) -> Result<T, RedisFilterError> {
    let start = Instant::now();
    let mut wait = Duration::from_millis(50);
    loop {
        match op() {
            Err(e) if e.is_retryable() && start.elapsed() < budget => {
                let w = wait.min(budget.saturating_sub(start.elapsed()));
                on_retry(&e, w);
                std::thread::sleep(w);
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            r => return r,
        }
    }
}

/// One Redis URL, or comma-separated cluster seeds, each `redis://host:port[/db]` (`rediss://`
/// for TLS, `redis+unix:///path` or `unix:///path` for a socket): checked where it is given
/// (`--redis`, `redis.url`), so a bare `host:port` is said plainly, not passed on to fail later
/// as "did not parse".
pub fn check_urls(s: &str) -> Result<(), String> {
    for u in s.split(',').map(str::trim) {
        let scheme = u.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("redis" | "rediss" | "redis+unix" | "unix") => {
                if redis::IntoConnectionInfo::into_connection_info(u).is_err() {
                    return Err(format!("{u:?} is not a Redis URL (redis://host:port[/db])"));
                }
            }
            _ => {
                return Err(format!(
                    "{u:?} is not a Redis URL: write redis://{} (rediss:// for TLS)",
                    u.split_once("://").map_or(u, |(_, rest)| rest)
                ))
            }
        }
    }
    Ok(())
}
