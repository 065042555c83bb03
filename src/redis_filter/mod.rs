//! The Redis-shared filter: a partitioned Bloom filter per namespace, shared by every gate and
//! embedded job that attaches to it, with a local first tier, retry safety, an exact-confirm
//! mode, growth generations and recrawl windows. See `docs/redis-filter.md` for the design and
//! the measurements behind it.
//!
//! # Protocols
//! - **Claim, deliver, confirm** ([`RedisFilter::submit`]/[`RedisFilter::complete`] or
//!   [`RedisFilter::claim`], then [`RedisFilter::confirm`]/[`RedisFilter::settle`]): what
//!   `dedup` and the gate use. A new URL is claimed (a lease: `SET … NX GET PX`) and read in
//!   every live generation; the caller delivers it; only then is it inserted and its claim
//!   deleted. Nothing is written to the filter before delivery, so a timeout, a lost connection
//!   or a crash anywhere repeats work and never drops a URL; claims are exclusive, so healthy
//!   concurrent clients see each distinct URL new exactly once.
//! - [`RedisFilter::check_and_set`]: atomic `SADD` / `BITFIELD … SET`, writing before the
//!   caller acts (the HTTP API without an idempotency key). A write whose reply was lost is kept
//!   "in doubt" in this process and its URLs reported new on retry; a crash in between loses
//!   the answer.
//! - [`RedisFilter::check`] (read-only) and [`RedisFilter::insert`] (idempotent).
//!
//! The fault table (what each component sees under each fault, and why no URL is lost) is in
//! `docs/redis-filter.md`.
//!
//! Owns: the Redis key layout (`cs:{ns}:…`), claims, generations, the local tier. Layer 2: may
//! import `bloom`; never `config`, `stage`, the components or `cli`.

mod conn;
pub mod layout;
mod outbox;
mod resp;
pub mod snapshot;
pub mod tier;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::{Cmd, Value};
use serde::{Deserialize, Serialize};

pub use conn::{Conn, LazyConn, RedisConfig};
pub use layout::{GenSpec, Keys};
pub use outbox::{Adopted, Payload, Ticket};
pub use tier::LocalTier;

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
    #[error("namespace {0:?} already exists (drop it first, or use --replace)")]
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
    /// Some URLs are claimed by another client, and this client was asked to yield rather
    /// than wait ([`RedisFilter::set_yield_on_busy`]): what this call claimed was released;
    /// finish what is in flight, then call again.
    #[error("{0} URLs are being published by another client")]
    Claimed(usize),
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
        matches!(
            self,
            RedisFilterError::Unavailable { .. } | RedisFilterError::Claimed(_)
        )
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

    pub(crate) fn from_redis(e: redis::RedisError, ambiguous: bool) -> RedisFilterError {
        use redis::{ErrorKind as K, ServerErrorKind as S};
        // A single-node client talking to a cluster node: every key of another node is MOVED.
        // (The cluster client follows MOVED itself.)
        if matches!(e.kind(), K::Server(S::Moved)) || e.to_string().contains("MOVED") {
            return RedisFilterError::Params(CLUSTER_NODE.into());
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
    let what = if e.is_timeout()
        || matches!(e.kind(), redis::ErrorKind::Io) && e.to_string().contains("os error 11")
    {
        "no reply within the timeout (Redis stalled, or the network is slow)"
    } else if e.is_connection_refusal() {
        "connection refused (is Redis running at that address?)"
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
            d.push(format!("mode: {:?} ≠ {m:?}", s.mode));
        }
        if let Some(w) = self.window.filter(|&w| w != s.window) {
            let show = |w: Option<u64>| w.map_or("none".to_string(), |s| format!("{s}s"));
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

static CREATE_LUA: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'spec', ARGV[1], 'gens', ARGV[2], 'instance', ARGV[3])
return 1";

static INCR_ITEMS_LUA: &str = r"
if redis.call('HEXISTS', KEYS[1], 'spec') == 0 then return 0 end
return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])";

static CAS_GENS_LUA: &str = r"
if redis.call('HGET', KEYS[1], 'gens') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'gens', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'gv', 1)
return 1";

/// Counters of one client (the gate exports them as metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClientStats {
    /// Answered "seen" by the local tier, without a round trip.
    pub tier_hits: u64,
    /// Sent to Redis.
    pub redis_lookups: u64,
    /// Reported new.
    pub new: u64,
    /// Exact mode: Bloom said "maybe", the fingerprint store said new (a false positive caught).
    pub bloom_fp_caught: u64,
    /// Reported new because an earlier attempt of the same URL failed ambiguously
    /// ([`RedisFilter::check_and_set`]).
    pub doubt_rescued: u64,
    /// Claims found already ours: an earlier attempt's reply was lost ([`RedisFilter::submit`]).
    pub reclaimed: u64,
    /// URLs found claimed by another client and waited on.
    pub busy_waits: u64,
    /// Of those, taken as new after waiting `busy_wait` (possible repeats).
    pub busy_taken: u64,
    /// Calls that yielded to another client's claims (released theirs and failed).
    pub yields: u64,
    /// Write pipelines whose outcome was unknown.
    pub ambiguous_failures: u64,
    /// Reconnections.
    pub reconnects: u64,
    /// Outbox entries adopted from clients whose lease expired (the outbox protocol).
    pub adopted: u64,
}

/// Filled and estimated figures of one generation.
#[derive(Debug, Clone, Serialize)]
pub struct GenStats {
    /// The generation's parameters.
    pub spec: GenSpec,
    /// New URLs counted by clients.
    pub items: u64,
    /// Fraction of data bits set.
    pub fill: f64,
    /// Items estimated from the fill.
    pub estimated_items: u64,
    /// FP rate at the current fill.
    pub estimated_fp: f64,
    /// `MEMORY USAGE` of its keys.
    pub memory_bytes: u64,
    /// Exact mode: fingerprints stored.
    pub fingerprints: u64,
}

/// `crawlsieve bloom stats`.
#[derive(Debug, Clone, Serialize)]
pub struct NamespaceStats {
    /// Name.
    pub namespace: String,
    /// Parameters.
    pub spec: NamespaceSpec,
    /// Per live generation.
    pub generations: Vec<GenStats>,
    /// Sum of `items`.
    pub items: u64,
    /// Sum of memory.
    pub memory_bytes: u64,
    /// Memory per counted item.
    pub bytes_per_item: f64,
    /// Union bound of the generations' estimated FP rates.
    pub estimated_fp: f64,
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
    /// On a claim held by another client: release this call's claims and fail with
    /// [`RedisFilterError::Claimed`] instead of waiting.
    yield_on_busy: bool,
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

/// A batch between [`RedisFilter::submit`] and [`RedisFilter::complete`].
struct Inflight {
    fps: Vec<u128>,
    /// Indices of `fps` sent to be claimed: tier misses, first occurrence in the batch.
    todo: Vec<usize>,
    out: Vec<bool>,
    /// Confirmations and releases riding on this exchange.
    carried: Vec<u128>,
    released: Vec<u128>,
    kind: Pending,
}

enum Pending {
    /// Nothing to send (all tier hits, nothing carried).
    Done,
    /// Run synchronously at complete() time (a cluster: two round trips, see `encode_claims`).
    Deferred,
    /// Sent on connection `epoch`; `n` replies to read.
    Sent { plan: Plan, n: usize, epoch: u64 },
}

/// How the replies of one claim exchange are laid out (see `encode_claims`).
struct Plan {
    /// BITFIELD groups of the carried confirmations (bitmap generations).
    confirm_groups: Vec<Vec<usize>>,
    /// One SADD per carried confirmation follows (fingerprint store).
    confirm_store: bool,
    n_release: usize,
    n_unclaim: usize,
    /// Per live generation read: k and its BITFIELD_RO groups (then one SISMEMBER per claim
    /// when the store decides).
    reads: Vec<(usize, Vec<Vec<usize>>)>,
    exact: bool,
    /// A last `HGET meta gv` follows the reads.
    version: bool,
    /// The URLs were claimed before they were read (else read only: claim what looks new).
    claims: bool,
}

impl Plan {
    fn replies(&self, carried: usize, todo: usize) -> usize {
        let confirm = self.confirm_groups.len() + if self.confirm_store { carried } else { 0 };
        let reads: usize = self
            .reads
            .iter()
            .map(|(_, g)| g.len() + if self.exact { todo } else { 0 })
            .sum();
        let claims = if self.claims { todo } else { 0 };
        confirm + claims + self.n_release + self.n_unclaim + reads + self.version as usize
    }
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

impl RedisFilter {
    /// Create `ns` with `spec` (allocating its shards), or attach if it exists with the same
    /// parameters; a different one is [`RedisFilterError::Mismatch`].
    pub fn create(
        cfg: RedisConfig,
        ns: &str,
        spec: &NamespaceSpec,
    ) -> Result<RedisFilter, RedisFilterError> {
        Self::create_inner(cfg, ns, spec, false)
    }

    /// Like [`RedisFilter::create`] but an existing namespace is an error.
    pub fn create_new(
        cfg: RedisConfig,
        ns: &str,
        spec: &NamespaceSpec,
    ) -> Result<RedisFilter, RedisFilterError> {
        Self::create_inner(cfg, ns, spec, true)
    }

    fn create_inner(
        cfg: RedisConfig,
        ns: &str,
        spec: &NamespaceSpec,
        must_be_new: bool,
    ) -> Result<RedisFilter, RedisFilterError> {
        layout::check_namespace(ns)?;
        let g0 = spec.first_generation(now_secs())?;
        // Everything is validated before anything is written.
        g0.check()
            .map_err(|e| RedisFilterError::Params(e.to_string()))?;
        let mut conn = Conn::connect(&cfg).map_err(|e| RedisFilterError::from_redis(e, false))?;
        let meta_key = Keys::meta(ns);
        let exists: bool = conn
            .query(redis::cmd("EXISTS").arg(&meta_key))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        if !exists {
            if let Err(e) = allocate(&mut conn, ns, &g0) {
                // Leave nothing behind: a partial allocation is nobody's.
                let _ = unlink_generation(&mut conn, ns, &g0);
                return Err(e);
            }
            let gens = Generations {
                live: vec![g0.clone()],
                retired: vec![],
            };
            let spec_json = serde_json::to_string(spec).expect("spec serializes");
            let gens_json = serde_json::to_string(&gens).expect("gens serialize");
            let created: i64 = conn
                .script(
                    &redis::Script::new(CREATE_LUA),
                    &meta_key,
                    &[&spec_json, &gens_json, &new_instance_id()],
                )
                .map_err(|e| RedisFilterError::from_redis(e, false))?;
            if created != 1 {
                // Another client created it first: our allocation is nobody's.
                unlink_generation(&mut conn, ns, &g0)?;
                if must_be_new {
                    return Err(RedisFilterError::Exists(ns.to_string()));
                }
            }
        } else if must_be_new {
            return Err(RedisFilterError::Exists(ns.to_string()));
        }
        let expect = Expect {
            capacity: Some(spec.capacity),
            fp_rate: Some(spec.fp_rate),
            k: Some(spec.k),
            mode: Some(spec.mode),
            window: Some(spec.window),
            shards: spec.shards,
        };
        Self::attach_with(cfg, ns, &expect, Some(conn))
    }

    /// Attach to an existing namespace, checking the parameters `expect` names.
    pub fn attach(
        cfg: RedisConfig,
        ns: &str,
        expect: &Expect,
    ) -> Result<RedisFilter, RedisFilterError> {
        layout::check_namespace(ns)?;
        Self::attach_with(cfg, ns, expect, None)
    }

    fn attach_with(
        cfg: RedisConfig,
        ns: &str,
        expect: &Expect,
        conn: Option<Conn>,
    ) -> Result<RedisFilter, RedisFilterError> {
        let conn = match conn {
            Some(c) => c,
            None => Conn::connect(&cfg).map_err(|e| RedisFilterError::from_redis(e, false))?,
        };
        let tier = LocalTier::new(cfg.local_tier_slots);
        let mut f = RedisFilter {
            meta_key: Keys::meta(ns),
            ns: ns.to_string(),
            conn: Some(conn),
            mconn: None,
            token: (layout::unique_u64() >> 2).max(1) as i64,
            held: HashMap::new(),
            confirm_q: Vec::new(),
            release_q: Vec::new(),
            force_refresh: false,
            yield_on_busy: false,
            seen_share: 0.0,
            spec: NamespaceSpec::new(1, 0.5),
            gens: Generations {
                live: vec![],
                retired: vec![],
            },
            gens_raw: String::new(),
            gens_version: 0,
            instance: String::new(),
            items: HashMap::new(),
            pending_items: 0,
            last_refresh: Instant::now(),
            tier,
            doubt: HashSet::new(),
            stats: ClientStats::default(),
            todo: Vec::new(),
            order: Vec::new(),
            seen: Vec::new(),
            spare: Batch::new(false),
            replies: Replies::default(),
            inflight: std::collections::VecDeque::new(),
            epoch: 0,
            warnings: Vec::new(),
            ob: None,
            known: None,
            cfg,
        };
        f.refresh()?;
        let diff = expect.diff(&f.spec);
        if !diff.is_empty() {
            return Err(RedisFilterError::Mismatch {
                ns: ns.to_string(),
                diff: diff.join(", "),
            });
        }
        f.check_server();
        Ok(f)
    }

    /// The namespace's parameters as stored in Redis.
    pub fn spec(&self) -> &NamespaceSpec {
        &self.spec
    }

    /// The live generations as last read.
    pub fn generations(&self) -> &Generations {
        &self.gens
    }

    /// Server settings that defeat this namespace's sizing, found on attach (CONFIG GET may be
    /// refused on managed Redis; then nothing is reported).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn check_server(&mut self) {
        if self.spec.mode == Mode::Bloom {
            return;
        }
        let r: redis::RedisResult<Vec<String>> = match self.conn() {
            Ok(c) => c.query(
                redis::cmd("CONFIG")
                    .arg("GET")
                    .arg("set-max-intset-entries"),
            ),
            Err(_) => return,
        };
        if let Some(limit) = r
            .ok()
            .and_then(|v| v.get(1).and_then(|x| x.parse::<u64>().ok()))
        {
            if limit < 2 * layout::BUCKET_TARGET {
                self.warnings.push(format!(
                    "Redis set-max-intset-entries is {limit}: fingerprint buckets hold ~{} entries \
                     and past {limit} each becomes a hash table (~10× the memory); set it to 512 \
                     or more",
                    layout::BUCKET_TARGET
                ));
            }
        }
    }

    /// This client's counters.
    pub fn client_stats(&self) -> ClientStats {
        self.stats
    }

    /// The namespace name.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// Where Redis is (the configured URLs without credentials), for messages.
    pub fn address(&self) -> String {
        self.cfg.address()
    }

    fn conn(&mut self) -> Result<&mut Conn, RedisFilterError> {
        if self.conn.is_none() {
            let c = Conn::connect(&self.cfg).map_err(|e| RedisFilterError::from_redis(e, false))?;
            self.stats.reconnects += 1;
            self.epoch += 1;
            self.conn = Some(c);
            // Redis may have restarted and lost what the tier remembers.
            self.tier.clear();
            self.last_refresh = Instant::now() - self.cfg.refresh_interval * 2;
        }
        Ok(self.conn.as_mut().expect("just connected"))
    }

    /// The maintenance connection (refreshes, counters, generations, waiting on claims).
    fn mconn(&mut self) -> Result<&mut Conn, RedisFilterError> {
        if self.mconn.is_none() {
            let c = Conn::connect(&self.cfg).map_err(|e| RedisFilterError::from_redis(e, false))?;
            self.mconn = Some(c);
        }
        Ok(self.mconn.as_mut().expect("just connected"))
    }

    /// A failure on the maintenance connection: drop it if retrying may help.
    fn mfail(&mut self, e: redis::RedisError) -> RedisFilterError {
        let err = RedisFilterError::from_redis(e, false);
        if err.is_retryable() {
            self.mconn = None;
        }
        err
    }

    fn fail(&mut self, e: redis::RedisError, ambiguous: bool) -> RedisFilterError {
        let err = RedisFilterError::from_redis(e, ambiguous);
        if err.is_retryable() {
            // Drop the connection: its stream may hold a late reply.
            self.conn = None;
            self.tier.clear();
        }
        err
    }

    fn pipeline(&mut self, cmds: Vec<Cmd>, write: bool) -> Result<Vec<Value>, RedisFilterError> {
        let r = self.conn()?.pipeline(cmds);
        r.map_err(|e| self.fail(e, write))
    }

    /// Re-read the generations now if the refresh interval passed; run growth, rotation and
    /// retirement if due.
    fn maybe_refresh(&mut self) -> Result<(), RedisFilterError> {
        if self.growth_near() {
            self.force_refresh = true;
        }
        if self.force_refresh
            || self.last_refresh.elapsed() >= self.cfg.refresh_interval
            || self.conn.is_none()
        {
            self.refresh()?;
        }
        Ok(())
    }

    /// Count `n` URLs newly inserted into the current generation; refresh (and so grow) at the
    /// next call once this client's share could fill it, so a generation never overshoots its
    /// capacity by more than a batch or two, however fast the inserts come.
    fn count_items(&mut self, n: u64) {
        self.pending_items += n;
        if self.growth_near() {
            self.force_refresh = true;
        }
    }

    /// Confirmations queued or in flight: inserts the current generation is about to receive.
    fn unconfirmed(&self) -> u64 {
        (self.confirm_q.len() + self.inflight.iter().map(|i| i.carried.len()).sum::<usize>()) as u64
    }

    /// Whether the current generation could be full once what this client counted and is
    /// about to insert lands (or this client's uncounted share is 1/32 of it): refresh now.
    fn growth_near(&self) -> bool {
        let Some(cur) = self.gens.live.last() else {
            return false;
        };
        let stored = self.items.get(&cur.id).copied().unwrap_or(0);
        stored + self.pending_items + self.unconfirmed() >= cur.capacity
            || self.pending_items.saturating_mul(32) >= cur.capacity
    }

    /// Re-read the namespace from Redis and run maintenance. Called on attach, after a
    /// reconnect and every refresh interval.
    pub fn refresh(&mut self) -> Result<(), RedisFilterError> {
        self.flush_items()?;
        let key = self.meta_key.clone();
        let r: redis::RedisResult<HashMap<String, String>> =
            self.mconn()?.query(redis::cmd("HGETALL").arg(&key));
        let meta = r.map_err(|e| self.mfail(e))?;
        self.last_refresh = Instant::now();
        self.force_refresh = false;
        // Claims never confirmed (a caller that gave up on them) are void after the TTL.
        let ttl = self.cfg.claim_ttl;
        self.held.retain(|_, t| t.elapsed() < ttl);
        if meta.is_empty() || meta.contains_key("dropping") {
            self.tier.clear();
            return Err(RedisFilterError::NotFound(self.ns.clone()));
        }
        let spec: NamespaceSpec = parse_field(&meta, "spec")?;
        let raw = meta.get("gens").cloned().unwrap_or_default();
        let gens: Generations = parse_field(&meta, "gens")?;
        if gens.live.is_empty() {
            return Err(RedisFilterError::Corrupt("no live generation".into()));
        }
        for g in gens.live.iter().chain(gens.retired.iter().map(|r| &r.gen)) {
            g.check()?;
        }
        let instance = meta.get("instance").cloned().unwrap_or_default();
        if instance != self.instance || self.gens.retires_into(&gens) {
            // Another filter, or a generation left the live set: what the tiers hold may
            // belong to it.
            self.tier.clear();
            if let Some(k) = self.known.as_mut() {
                k.clear();
            }
        }
        if instance != self.instance {
            self.doubt.clear();
        }
        self.items = meta
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("items:")?.parse().ok()?, v.parse().ok()?)))
            .collect();
        self.spec = spec;
        self.gens = gens;
        self.gens_raw = raw;
        self.gens_version = meta.get("gv").and_then(|v| v.parse().ok()).unwrap_or(0);
        self.instance = instance;
        self.maintain()
    }

    fn flush_items(&mut self) -> Result<(), RedisFilterError> {
        if self.pending_items == 0 || self.gens.live.is_empty() {
            return Ok(());
        }
        let field = format!("items:{}", self.gens.current().id);
        let n = std::mem::take(&mut self.pending_items);
        let key = self.meta_key.clone();
        // Not idempotent; a lost increment only delays growth by that many items. Never
        // recreates a dropped namespace's metadata.
        let n_s = n.to_string();
        let r: redis::RedisResult<i64> =
            self.mconn()?
                .script(&redis::Script::new(INCR_ITEMS_LUA), &key, &[&field, &n_s]);
        match r {
            Ok(_) => Ok(()),
            Err(e) => {
                // Not sent, or maybe not: count it again (growth a little early beats late).
                self.pending_items += n;
                Err(self.mfail(e))
            }
        }
    }

    /// Growth, window rotation, retirement and unlinking, agreed through a compare-and-set on
    /// the `gens` field: whoever wins applies it, the others re-read.
    fn maintain(&mut self) -> Result<(), RedisFilterError> {
        let now = now_secs();
        let mut next = self.gens.clone();
        let cur = next.current().clone();
        // What Redis counted, plus the confirmations this client has queued or in flight (they
        // land in the current generation): growing a little early keeps a generation from
        // overshooting its capacity by a whole pipeline of inserts.
        let items = self.items.get(&cur.id).copied().unwrap_or(0) + self.unconfirmed();
        let rotate = self
            .spec
            .window
            .map(|w| now.saturating_sub(cur.created) >= (w / self.spec.window_slices as u64).max(1))
            .unwrap_or(false);
        let mut added = None;
        if items >= cur.capacity || rotate {
            let (cap, p) = if items >= cur.capacity {
                (
                    cur.capacity.saturating_mul(GROWTH),
                    cur.fp_rate * TIGHTENING,
                )
            } else {
                (cur.capacity, cur.fp_rate)
            };
            let g = GenSpec::new(
                cur.id + 1,
                now,
                cap,
                p,
                cur.k,
                Some(cur.shards),
                self.spec.mode.store(),
            )?;
            next.live.last_mut().expect("live").sealed = Some(now);
            next.live.push(g.clone());
            added = Some(g);
        }
        if let Some(w) = self.spec.window {
            let (keep, gone): (Vec<_>, Vec<_>) = next
                .live
                .drain(..)
                .partition(|g| g.sealed.map(|s| now.saturating_sub(s) < w).unwrap_or(true));
            next.live = keep;
            next.retired
                .extend(gone.into_iter().map(|gen| Retired { gen, retired: now }));
        }
        let (unlink, keep): (Vec<_>, Vec<_>) = next
            .retired
            .drain(..)
            .partition(|r| now.saturating_sub(r.retired) >= RETIRE_GRACE_SECS);
        next.retired = keep;
        if next == self.gens {
            return Ok(());
        }
        if let Some(g) = &added {
            let ns = self.ns.clone();
            let conn = self.mconn()?;
            allocate(conn, &ns, g)?;
        }
        let raw = serde_json::to_string(&next).expect("gens serialize");
        let old = self.gens_raw.clone();
        let key = self.meta_key.clone();
        let r: redis::RedisResult<i64> =
            self.mconn()?
                .script(&redis::Script::new(CAS_GENS_LUA), &key, &[&old, &raw]);
        let won = r.map_err(|e| self.mfail(e))? == 1;
        if won {
            // Retirement changes what "seen" means (growth does not).
            if self.gens.retires_into(&next) {
                self.tier.clear();
            }
            self.gens = next;
            self.gens_raw = raw;
            self.gens_version += 1;
            let ns = self.ns.clone();
            let conn = self.mconn()?;
            for r in &unlink {
                unlink_generation(conn, &ns, &r.gen)?;
            }
        } else {
            // Someone else changed it first: take theirs on the next refresh, and drop the
            // generation we allocated for nothing (its nonce makes its keys ours alone).
            self.last_refresh = Instant::now() - self.cfg.refresh_interval * 2;
            if let Some(g) = &added {
                let ns = self.ns.clone();
                let conn = self.mconn()?;
                unlink_generation(conn, &ns, g)?;
            }
        }
        Ok(())
    }

    /// Atomic batched check-and-set: `out[i]` = whether `fps[i]` was new; all are inserted.
    /// Duplicates inside the batch are answered in order (the first is new).
    ///
    /// Unlike the claim protocol ([`RedisFilter::submit`]) this writes before the caller acts,
    /// so only this process can tell a lost reply from a real duplicate: a write whose outcome
    /// is unknown is kept "in doubt" and its URLs are reported new when the batch is retried
    /// by this client. A crash between the write and the caller's use of the answer loses it;
    /// callers that must survive that (dedup, the gate) claim instead.
    pub fn check_and_set(
        &mut self,
        fps: &[u128],
        out: &mut Vec<bool>,
    ) -> Result<(), RedisFilterError> {
        self.idle()?;
        self.maybe_refresh()?;
        out.clear();
        out.resize(fps.len(), false);
        let mut todo = std::mem::take(&mut self.todo);
        self.tier_misses(fps, &mut todo);
        let r = self.redis_check_and_set(fps, &mut todo, out);
        self.todo = todo;
        r
    }

    /// Indices of `fps` the local tier cannot answer (counting the hits).
    fn tier_misses(&mut self, fps: &[u128], todo: &mut Vec<usize>) {
        todo.clear();
        for (i, &fp) in fps.iter().enumerate() {
            if self.tier.contains(fp) {
                self.stats.tier_hits += 1;
            } else {
                todo.push(i);
            }
        }
    }

    fn redis_check_and_set(
        &mut self,
        fps: &[u128],
        todo: &mut Vec<usize>,
        out: &mut [bool],
    ) -> Result<(), RedisFilterError> {
        if todo.is_empty() {
            return Ok(());
        }
        self.stats.redis_lookups += todo.len() as u64;
        // Older generations first, read-only: a URL they hold is seen and not re-inserted
        // (so a recrawl window counts from when the URL was last new).
        if self.gens.live.len() > 1 {
            let mut seen = std::mem::take(&mut self.seen);
            let older: Vec<GenSpec> = self.gens.live[..self.gens.live.len() - 1].to_vec();
            let r = self.lookup(&older, fps, todo, &mut seen);
            if let Err(e) = r {
                self.seen = seen;
                return Err(e);
            }
            let mut j = 0;
            // A URL in doubt may be in an older generation because of our own lost write
            // (the generation rotated since): the current one decides, and the doubt rescues.
            todo.retain(|&i| {
                let s = seen[j] && !self.doubt.contains(&fps[i]);
                j += 1;
                if s {
                    self.tier.insert(fps[i]);
                    if let Some(k) = self.known.as_mut() {
                        k.insert(fps[i]);
                    }
                }
                !s
            });
            self.seen = seen;
            if todo.is_empty() {
                return Ok(());
            }
        }
        let cur = self.gens.current().clone();
        let mut batch = self.batch()?;
        let groups = self.write_cmds(&cur, fps, todo, true, &mut batch);
        let mut replies = std::mem::take(&mut self.replies);
        let r = self.exec(&mut batch, &mut replies, true);
        self.spare = batch;
        let r = match r {
            Ok(()) => self.apply_at(0, fps, todo, out, &groups, &cur, &replies),
            Err(e) => {
                self.stats.ambiguous_failures += 1;
                self.doubt.extend(todo.iter().map(|&i| fps[i]));
                Err(e)
            }
        };
        self.replies = replies;
        r
    }

    /// Turn the replies of a check-and-set into answers: old bits / `SADD` results, the doubt
    /// set, the tier and the counters.
    #[allow(clippy::too_many_arguments)]
    fn apply_at(
        &mut self,
        base: usize,
        fps: &[u128],
        todo: &[usize],
        out: &mut [bool],
        groups: &[Vec<usize>],
        cur: &GenSpec,
        replies: &Replies,
    ) -> Result<(), RedisFilterError> {
        let exact = self.spec.mode.uses_store();
        // Bloom answers per URL, from the old bits.
        let k = cur.k as usize;
        let mut bloom_new = std::mem::take(&mut self.seen);
        bloom_new.clear();
        bloom_new.resize(fps.len(), false);
        let mut bad = None;
        if replies.len() != base + groups.len() + if exact { todo.len() } else { 0 } {
            self.seen = bloom_new;
            return Err(RedisFilterError::Corrupt(format!(
                "a check-and-set got {} replies",
                replies.len()
            )));
        }
        for (c, g) in groups.iter().enumerate() {
            let bits = replies.get(base + c);
            if bits.len() != g.len() * k {
                bad = Some((bits.len(), g.len()));
                break;
            }
            for (n, &i) in g.iter().enumerate() {
                bloom_new[i] = bits[n * k..(n + 1) * k].contains(&0);
            }
        }
        if let Some((got, urls)) = bad {
            self.seen = bloom_new;
            return Err(RedisFilterError::Corrupt(format!(
                "BITFIELD returned {got} values for {urls} URLs"
            )));
        }
        for (n, &i) in todo.iter().enumerate() {
            let mut new = if exact {
                let added = replies.int(base + groups.len() + n) == 1;
                if added && cur.bitmap && !bloom_new[i] {
                    self.stats.bloom_fp_caught += 1;
                }
                added
            } else {
                bloom_new[i]
            };
            if !new && self.doubt.remove(&fps[i]) {
                self.stats.doubt_rescued += 1;
                new = true;
            }
            out[i] = new;
            if new {
                self.stats.new += 1;
                self.count_items(1);
            }
            self.tier.insert(fps[i]);
            if let Some(k) = self.known.as_mut() {
                k.insert(fps[i]);
            }
        }
        if !self.doubt.is_empty() {
            for &i in todo.iter() {
                self.doubt.remove(&fps[i]);
            }
        }
        self.seen = bloom_new;
        Ok(())
    }

    /// Claim a batch, first half: answer what the tier can and send the rest to Redis without
    /// waiting. Up to a few batches may be in flight; [`RedisFilter::complete`] returns their
    /// answers in submission order. Keeping the next batch queued while Redis works on this one
    /// is what saturates a Redis core from one client (docs/redis-filter.md).
    ///
    /// # The claim protocol (never lose a URL, whatever fails)
    /// A URL answered new is **claimed**, not inserted: `SET cs:{NS:c:FP} TOKEN NX GET PX ttl`,
    /// then a read of every live generation, in that order. It is new for this client iff no
    /// generation holds it and the claim is this client's (just taken, or taken by an earlier
    /// attempt whose reply was lost: `GET` returns our own token). A claim held by another
    /// client is waited on until it is confirmed (then the URL is seen) or expires (then it is
    /// ours). The caller delivers the new URLs, then [`RedisFilter::confirm`]s them: insert
    /// into the current generation, then delete the claim.
    ///
    /// So nothing is written to the filter before the URL was delivered: a timeout, a lost
    /// connection or a crash anywhere repeats work (a claim expires after
    /// [`RedisConfig::claim_ttl`] and the URL is someone's to deliver again) and never drops a
    /// URL; and since claims are exclusive, healthy concurrent clients still see each distinct
    /// URL new exactly once.
    ///
    /// Other calls (`check`, `insert`, `stats`, …) refuse to run while batches are in flight;
    /// refreshes and maintenance run on a second connection, on time.
    pub fn submit(&mut self, fps: &[u128]) -> Result<(), RedisFilterError> {
        self.maybe_refresh()?;
        let mut it = Inflight {
            fps: fps.to_vec(),
            todo: Vec::new(),
            out: vec![false; fps.len()],
            carried: std::mem::take(&mut self.confirm_q),
            released: std::mem::take(&mut self.release_q),
            kind: Pending::Deferred,
        };
        self.claim_todo(fps, &mut it.todo);
        // Sent batches must not overtake a deferred one: both would read the same socket.
        let raw = self.conn()?.is_raw()
            && !self
                .inflight
                .iter()
                .any(|i| matches!(i.kind, Pending::Deferred));
        if it.todo.is_empty() && it.carried.is_empty() && it.released.is_empty() {
            it.kind = Pending::Done;
        } else if raw {
            self.stats.redis_lookups += it.todo.len() as u64;
            let claim_first = self.seen_share < 0.5;
            let (p1, p2, plan) = self.encode_claims(
                &it.fps,
                &it.todo,
                &it.carried,
                &it.released,
                true,
                claim_first,
            );
            let n = p1.len() + p2.len();
            let r = self.conn().and_then(|c| {
                c.send(&p1)?;
                c.send(&p2)
            });
            if let Err(e) = r {
                self.lose_connection(&e);
                self.requeue(&mut it);
                return Err(e);
            }
            it.kind = Pending::Sent {
                plan,
                n,
                epoch: self.epoch,
            };
        }
        self.inflight.push_back(it);
        Ok(())
    }

    /// Claim a batch, second half: the answers of the oldest submitted batch (`out[i]` = new,
    /// claimed by this client: deliver it, then [`RedisFilter::confirm`] it). Claims held by
    /// other clients are waited on here. On error nothing of the batch is answered; resubmit
    /// it (after [`RedisFilter::abandon`] if others are in flight): its claims are still ours,
    /// so the retry answers as if the first attempt had never been made.
    pub fn complete(&mut self, out: &mut Vec<bool>) -> Result<(), RedisFilterError> {
        let mut it = self.inflight.pop_front().ok_or_else(|| {
            RedisFilterError::Params("complete() without a submitted batch".into())
        })?;
        let r = self.complete_one(&mut it);
        if r.is_err() {
            self.requeue(&mut it);
        }
        out.clear();
        out.extend_from_slice(&it.out);
        r
    }

    fn complete_one(&mut self, it: &mut Inflight) -> Result<(), RedisFilterError> {
        let mut replies = std::mem::take(&mut self.replies);
        let plan = match std::mem::replace(&mut it.kind, Pending::Done) {
            Pending::Done => None,
            Pending::Deferred => {
                self.stats.redis_lookups += it.todo.len() as u64;
                let raw = self.conn()?.is_raw();
                let claim_first = self.seen_share < 0.5;
                let (mut p1, mut p2, plan) = self.encode_claims(
                    &it.fps,
                    &it.todo,
                    &it.carried,
                    &it.released,
                    raw,
                    claim_first,
                );
                let r = self.exec2(&mut p1, &mut p2, &mut replies);
                if let Err(e) = r {
                    self.replies = replies;
                    return Err(e);
                }
                Some(plan)
            }
            Pending::Sent { plan, n, epoch } => {
                if let Err(e) = self.recv_sent(n, epoch, false, &mut replies) {
                    self.replies = replies;
                    return Err(e);
                }
                Some(plan)
            }
        };
        let mut answers = vec![None; it.todo.len()];
        let plan_read_only = plan.as_ref().is_some_and(|p| !p.claims);
        if let Some(plan) = plan {
            let r = self.decode_claims(
                &plan,
                &it.fps,
                &it.todo,
                &it.carried,
                &replies,
                &mut answers,
            );
            self.replies = replies;
            if let Err(e) = r {
                self.lose_connection(&e);
                return Err(e);
            }
        } else {
            self.replies = replies;
        }
        // The carried confirmations and releases ran.
        it.carried.clear();
        it.released.clear();
        if plan_read_only {
            self.claim_unclaimed(&it.fps, &it.todo, &mut answers)?;
        }
        self.resolve_busy(&it.fps, &it.todo, &mut answers)?;
        // Only now, when nothing can fail any more, do the new URLs become held.
        let now = Instant::now();
        for (j, &i) in it.todo.iter().enumerate() {
            let new = answers[j] == Some(true);
            it.out[i] = new;
            if new {
                self.held.insert(it.fps[i], now);
                self.stats.new += 1;
            }
        }
        Ok(())
    }

    /// Yield instead of waiting when a URL is claimed by another client (see
    /// [`RedisFilterError::Claimed`]). A caller that holds claims it cannot confirm before the
    /// call returns (a gate with a batch in flight) would otherwise wait on a client that may
    /// be waiting on it.
    pub fn set_yield_on_busy(&mut self, on: bool) {
        self.yield_on_busy = on;
    }

    /// [`RedisFilter::claim`] under `token` instead of this client's own: a request id that
    /// outlives this process (the HTTP API's `Idempotency-Key`), so a retry of the same
    /// request, by any process, finds the claims its first attempt took and answers the same.
    pub fn claim_as(
        &mut self,
        token: i64,
        fps: &[u128],
        out: &mut Vec<bool>,
    ) -> Result<(), RedisFilterError> {
        // An earlier attempt with this token in this process counts as ours, not as held.
        self.forget(fps);
        let own = std::mem::replace(&mut self.token, token.max(1));
        let r = self.claim(fps, out);
        self.token = own;
        r
    }

    /// A small record next to the namespace (`cs:{NS}:rec:NAME`), e.g. an idempotent answer:
    /// its value, if it is there.
    pub fn record(&mut self, name: &str) -> Result<Option<String>, RedisFilterError> {
        self.idle()?;
        let key = Keys::record(&self.ns, name);
        let r: redis::RedisResult<Option<String>> = self.conn()?.query(redis::cmd("GET").arg(&key));
        r.map_err(|e| self.fail(e, false))
    }

    /// Store a record unless one is there (`SET NX PX`); returns the value that is there now
    /// (ours, or the one stored first).
    pub fn put_record(
        &mut self,
        name: &str,
        value: &str,
        ttl: Duration,
    ) -> Result<String, RedisFilterError> {
        self.idle()?;
        let key = Keys::record(&self.ns, name);
        let ms = ttl.as_millis().clamp(1, i64::MAX as u128) as i64;
        let r: redis::RedisResult<Option<String>> = self.conn()?.query(
            redis::cmd("SET")
                .arg(&key)
                .arg(value)
                .arg("NX")
                .arg("GET")
                .arg("PX")
                .arg(ms),
        );
        let old = r.map_err(|e| self.fail(e, false))?;
        Ok(old.unwrap_or_else(|| value.to_string()))
    }

    /// Claim `fps` synchronously: [`RedisFilter::submit`] + [`RedisFilter::complete`].
    pub fn claim(&mut self, fps: &[u128], out: &mut Vec<bool>) -> Result<(), RedisFilterError> {
        self.idle()?;
        self.submit(fps)?;
        self.complete(out)
    }

    /// The URLs of `fps` were delivered: insert them into the current generation and delete
    /// their claims. Queued: sent with the next [`RedisFilter::submit`] (or by
    /// [`RedisFilter::settle`]); idempotent, so a failed exchange simply sends it again.
    pub fn confirm(&mut self, fps: &[u128]) {
        self.confirm_q.extend_from_slice(fps);
    }

    /// The URLs of `fps` will not be delivered (refused for good): delete their claims without
    /// inserting them, so they are new again to anyone. Queued like [`RedisFilter::confirm`].
    pub fn release(&mut self, fps: &[u128]) {
        for fp in fps {
            self.held.remove(fp);
        }
        self.release_q.extend_from_slice(fps);
    }

    /// Forget that this client is publishing `fps` (a caller that failed after claiming them
    /// and will claim them again): their claims stay ours in Redis, so the next claim answers
    /// them new, not as repeats of our own.
    pub fn forget(&mut self, fps: &[u128]) {
        for fp in fps {
            self.held.remove(fp);
        }
    }

    /// Send the queued confirmations and releases now, and the item counters (at the end of a
    /// run, or after each batch where nothing else would carry them). Safe to retry.
    pub fn settle(&mut self) -> Result<(), RedisFilterError> {
        self.idle()?;
        for q in [&mut self.confirm_q, &mut self.release_q] {
            q.sort_unstable();
            q.dedup();
        }
        if !self.confirm_q.is_empty() || !self.release_q.is_empty() {
            let mut it = Inflight {
                fps: Vec::new(),
                todo: Vec::new(),
                out: Vec::new(),
                carried: std::mem::take(&mut self.confirm_q),
                released: std::mem::take(&mut self.release_q),
                kind: Pending::Deferred,
            };
            if let Err(e) = self.complete_one(&mut it) {
                self.requeue(&mut it);
                return Err(e);
            }
        }
        self.flush_items()
    }

    /// Forget every submitted batch without answering it (after a failure, before the batches
    /// are submitted again): their claims stay ours, so the resubmission is answered as if
    /// they had never been sent; what they carried is queued again.
    pub fn abandon(&mut self) {
        let mut sent = false;
        while let Some(mut it) = self.inflight.pop_front() {
            sent |= matches!(it.kind, Pending::Sent { .. });
            self.requeue(&mut it);
        }
        if sent {
            // Their replies are still in the socket.
            self.conn = None;
        }
    }

    /// Confirmations and releases a failed exchange carried go back to the queues.
    fn requeue(&mut self, it: &mut Inflight) {
        self.confirm_q.append(&mut it.carried);
        self.release_q.append(&mut it.released);
    }

    /// Indices of `fps` to claim in Redis: not answered by the tier, first in the batch.
    fn claim_todo(&mut self, fps: &[u128], todo: &mut Vec<usize>) {
        self.tier_misses(fps, todo);
        if todo.len() > 1 {
            let mut first = HashSet::with_capacity(todo.len());
            todo.retain(|&i| first.insert(fps[i]));
        }
    }

    /// Whether this client holds a live claim on `fp` for a URL it answered new.
    fn holds(&self, fp: u128) -> bool {
        self.held
            .get(&fp)
            .is_some_and(|t| t.elapsed() < self.cfg.claim_ttl)
    }

    /// DEL `keys`' claims: one variadic command on a single node, one per key on a cluster
    /// (claims live in different slots). Returns the number of commands.
    fn del_claims(&self, fps: &[u128], batch: &mut Batch) -> usize {
        if fps.is_empty() {
            return 0;
        }
        let mut key = String::new();
        if batch.is_raw() {
            batch.cmd("DEL", 1 + fps.len());
            for &fp in fps {
                key.clear();
                Keys::write_claim(&mut key, &self.ns, fp);
                batch.arg(key.as_bytes());
            }
            1
        } else {
            for &fp in fps {
                key.clear();
                Keys::write_claim(&mut key, &self.ns, fp);
                batch.cmd("DEL", 2);
                batch.arg(key.as_bytes());
            }
            fps.len()
        }
    }

    /// Encode one claim exchange in two phases. Phase 1: insert the `carried` confirmations
    /// into the current generation, delete the `released` claims, claim `todo`. Phase 2:
    /// delete the confirmed URLs' claims, read `todo` in every live generation. On one node
    /// both phases go in one pipeline (Redis runs a connection's commands in order); on a
    /// cluster phase 2 is sent after phase 1 answered, so on every node an insert comes before
    /// its claim's deletion and a claim before its read.
    fn encode_claims(
        &mut self,
        fps: &[u128],
        todo: &[usize],
        carried: &[u128],
        released: &[u128],
        raw: bool,
        claim: bool,
    ) -> (Batch, Batch, Plan) {
        let mut p1 = Batch::new(raw);
        let mut p2 = Batch::new(raw);
        let cur = self.gens.current().clone();
        let confirm_groups = if carried.is_empty() {
            Vec::new()
        } else {
            let all: Vec<usize> = (0..carried.len()).collect();
            self.write_cmds(&cur, carried, &all, true, &mut p1)
        };
        // Releases before claims: a URL released and claimed again in one exchange stays
        // claimed.
        let n_release = self.del_claims(released, &mut p1);
        let ttl = self.cfg.claim_ttl.as_millis().clamp(1, i64::MAX as u128) as i64;
        let mut key = String::new();
        for &i in todo.iter().filter(|_| claim) {
            key.clear();
            Keys::write_claim(&mut key, &self.ns, fps[i]);
            p1.cmd("SET", 7);
            p1.arg(key.as_bytes());
            p1.int(self.token);
            p1.arg(b"NX");
            p1.arg(b"GET");
            p1.arg(b"PX");
            p1.int(ttl);
        }
        let n_unclaim = self.del_claims(carried, &mut p2);
        let mut reads = Vec::new();
        if !todo.is_empty() {
            let gens = self.gens.live.clone();
            for g in &gens {
                let groups = self.write_cmds(g, fps, todo, false, &mut p2);
                reads.push((g.k as usize, groups));
            }
            p2.cmd("HGET", 3);
            p2.arg(self.meta_key.as_bytes());
            p2.arg(b"gv");
        }
        let plan = Plan {
            confirm_groups,
            confirm_store: !carried.is_empty() && self.spec.mode.uses_store(),
            n_release,
            n_unclaim,
            version: !todo.is_empty(),
            claims: claim,
            reads,
            exact: self.spec.mode.uses_store(),
        };
        (p1, p2, plan)
    }

    /// Run both phases of an exchange on the hot connection (see `encode_claims`).
    fn exec2(
        &mut self,
        p1: &mut Batch,
        p2: &mut Batch,
        out: &mut Replies,
    ) -> Result<(), RedisFilterError> {
        self.exec(p1, out, false)?;
        let mut second = Replies::default();
        self.exec(p2, &mut second, false)?;
        out.append(&second);
        Ok(())
    }

    /// Read the replies of a claim exchange: apply the carried confirmations (counters, tier,
    /// held) and answer each claim: `Some(true)` new and ours, `Some(false)` seen, `None` held
    /// by another client.
    fn decode_claims(
        &mut self,
        plan: &Plan,
        fps: &[u128],
        todo: &[usize],
        carried: &[u128],
        replies: &Replies,
        answers: &mut [Option<bool>],
    ) -> Result<(), RedisFilterError> {
        let want = plan.replies(carried.len(), todo.len());
        if replies.len() != want {
            return Err(RedisFilterError::Corrupt(format!(
                "a claim exchange got {} replies for {want} commands",
                replies.len()
            )));
        }
        let mut at = 0;
        let cur_k = self.gens.current().k as usize;
        let mut inserted = 0u64;
        if plan.confirm_store {
            at += plan.confirm_groups.len();
            inserted += (0..carried.len())
                .filter(|&n| replies.int(at + n) == 1)
                .count() as u64;
            at += carried.len();
        } else {
            for g in &plan.confirm_groups {
                let bits = replies.get(at);
                at += 1;
                inserted += (0..g.len())
                    .filter(|&n| {
                        bits.get(n * cur_k..(n + 1) * cur_k)
                            .is_some_and(|b| b.contains(&0))
                    })
                    .count() as u64;
            }
        }
        self.count_items(inserted);
        for fp in carried {
            self.held.remove(fp);
            self.tier.insert(*fp);
        }
        at += plan.n_release;
        let claims_at = at;
        if plan.claims {
            at += todo.len();
        }
        at += plan.n_unclaim;
        let mut seen = vec![false; todo.len()];
        let pos_of: HashMap<usize, usize> = todo.iter().enumerate().map(|(j, &i)| (i, j)).collect();
        for (k, groups) in &plan.reads {
            for g in groups {
                let bits = replies.get(at);
                at += 1;
                for (n, i) in g.iter().enumerate() {
                    if bits
                        .get(n * k..(n + 1) * k)
                        .is_some_and(|b| b.iter().all(|&x| x == 1))
                    {
                        seen[pos_of[i]] = true;
                    }
                }
            }
            if plan.exact {
                for s in seen.iter_mut() {
                    if replies.int(at) == 1 {
                        *s = true;
                    }
                    at += 1;
                }
            }
        }
        // The generations changed since we read them: a URL another client inserted into a
        // generation we do not know yet would read as new. Re-read what looked new, with the
        // generations refreshed (the claims stay ours meanwhile).
        let stale = plan.version && replies.int(at) != self.gens_version;
        if stale {
            self.force_refresh = true;
        }
        if !todo.is_empty() && !plan.reads.is_empty() {
            let share = seen.iter().filter(|&&x| x).count() as f64 / todo.len() as f64;
            self.seen_share = 0.8 * self.seen_share + 0.2 * share;
        }
        if !plan.claims {
            // Read only: what is seen is answered; the rest is claimed next
            // (`claim_unclaimed`).
            for (j, &i) in todo.iter().enumerate() {
                answers[j] = if seen[j] {
                    self.tier.insert(fps[i]);
                    Some(false)
                } else {
                    None
                };
            }
            return Ok(());
        }
        for (j, &i) in todo.iter().enumerate() {
            let fp = fps[i];
            let claim = replies.get(claims_at + j);
            let mine = claim.is_empty() || claim[0] == self.token;
            answers[j] = if seen[j] {
                if mine && !self.holds(fp) {
                    self.release_q.push(fp);
                }
                self.tier.insert(fp);
                Some(false)
            } else if mine && stale {
                None
            } else if mine {
                if claim.is_empty() {
                    Some(!self.holds(fp))
                } else {
                    // Our own claim from an attempt whose answer was lost.
                    if !self.holds(fp) {
                        self.stats.reclaimed += 1;
                    }
                    Some(!self.holds(fp))
                }
            } else {
                None
            };
        }
        Ok(())
    }

    /// Claim the open answers (`None`: unseen by a read-only exchange, or busy at the last
    /// poll) on the maintenance connection, refreshing first if the generations changed: each
    /// becomes new (ours), seen (someone confirmed it meanwhile) or stays busy.
    fn claim_unclaimed(
        &mut self,
        fps: &[u128],
        todo: &[usize],
        answers: &mut [Option<bool>],
    ) -> Result<(), RedisFilterError> {
        let open: Vec<usize> = todo
            .iter()
            .zip(answers.iter())
            .filter(|(_, a)| a.is_none())
            .map(|(&i, _)| i)
            .collect();
        if open.is_empty() {
            return Ok(());
        }
        if self.force_refresh {
            self.refresh()?;
        }
        let raw = self.mconn()?.is_raw();
        let (p1, p2, plan) = self.encode_claims(fps, &open, &[], &[], raw, true);
        let replies = self.mexec2(p1, p2)?;
        let mut sub = vec![None; open.len()];
        self.decode_claims(&plan, fps, &open, &[], &replies, &mut sub)?;
        for (a, s) in answers.iter_mut().filter(|a| a.is_none()).zip(sub) {
            *a = s;
        }
        Ok(())
    }

    /// Wait for the claims other clients hold on some of `todo` (the `None` answers): each is
    /// either confirmed (the URL is seen) or deleted or expired (the URL becomes ours). Polls on
    /// the maintenance connection, backing off from 2 ms to 50 ms. Before waiting, this
    /// client's own queued confirmations are sent, so a client waiting on us is not waiting on
    /// our wait. A claim still held after [`RedisConfig::busy_wait`] is taken as new anyway:
    /// its holder may be waiting on claims of ours that cannot be confirmed before this call
    /// returns (two gates, each with a batch in flight), or may be dead. That is a repeat,
    /// never a loss.
    fn resolve_busy(
        &mut self,
        fps: &[u128],
        todo: &[usize],
        answers: &mut [Option<bool>],
    ) -> Result<(), RedisFilterError> {
        let start = Instant::now();
        let mut wait = Duration::from_millis(2);
        let mut first = true;
        loop {
            let busy: Vec<usize> = todo
                .iter()
                .zip(answers.iter())
                .filter(|(_, a)| a.is_none())
                .map(|(&i, _)| i)
                .collect();
            if busy.is_empty() {
                return Ok(());
            }
            if first && self.yield_on_busy {
                // Release what this call took (nothing of it is delivered), so whoever holds
                // the busy ones is not waiting on us, and let the caller finish its own work.
                let mine: Vec<u128> = todo
                    .iter()
                    .zip(answers.iter())
                    .filter(|(_, a)| **a == Some(true))
                    .map(|(&i, _)| fps[i])
                    .collect();
                self.release_q.extend(mine);
                self.settle_on_mconn()?;
                self.stats.yields += 1;
                return Err(RedisFilterError::Claimed(busy.len()));
            }
            if first {
                self.stats.busy_waits += busy.len() as u64;
                first = false;
                self.settle_on_mconn()?;
            }
            if !self.force_refresh && start.elapsed() >= self.cfg.busy_wait {
                // Taken over: new for us (a repeat if the holder publishes it too).
                self.stats.busy_taken += busy.len() as u64;
                for a in answers.iter_mut().filter(|a| a.is_none()) {
                    *a = Some(true);
                }
                return Ok(());
            }
            if !self.force_refresh {
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_millis(50));
            }
            // Poll: claim the open ones again (refreshing first if the generations changed).
            self.claim_unclaimed(fps, todo, answers)?;
        }
    }

    /// Send the queued confirmations and releases on the maintenance connection (they are
    /// idempotent and independent of what is in flight on the hot one).
    fn settle_on_mconn(&mut self) -> Result<(), RedisFilterError> {
        if self.confirm_q.is_empty() && self.release_q.is_empty() {
            return Ok(());
        }
        let carried = std::mem::take(&mut self.confirm_q);
        let released = std::mem::take(&mut self.release_q);
        let raw = match self.mconn() {
            Ok(c) => c.is_raw(),
            Err(e) => {
                self.confirm_q = carried;
                self.release_q = released;
                return Err(e);
            }
        };
        let (p1, p2, plan) = self.encode_claims(&[], &[], &carried, &released, raw, true);
        match self.mexec2(p1, p2) {
            Ok(replies) => self.decode_claims(&plan, &[], &[], &carried, &replies, &mut []),
            Err(e) => {
                self.confirm_q = carried;
                self.release_q = released;
                Err(e)
            }
        }
    }

    /// Both phases of an exchange on the maintenance connection (see `encode_claims`).
    fn mexec2(&mut self, mut p1: Batch, mut p2: Batch) -> Result<Replies, RedisFilterError> {
        let mut replies = Replies::default();
        let mut second = Replies::default();
        let c = self.mconn()?;
        let r = c
            .exec(&mut p1, &mut replies)
            .and_then(|()| c.exec(&mut p2, &mut second));
        if let Err(e) = r {
            if e.is_retryable() {
                self.mconn = None;
            }
            return Err(e);
        }
        replies.append(&second);
        Ok(replies)
    }

    /// Receive the `n` replies of a batch sent on connection `epoch` (an error if that
    /// connection was lost meanwhile, `ambiguous` if the batch wrote); a failure drops the
    /// connection.
    fn recv_sent(
        &mut self,
        n: usize,
        epoch: u64,
        ambiguous: bool,
        replies: &mut Replies,
    ) -> Result<(), RedisFilterError> {
        let r = match self.conn.as_mut() {
            Some(c) if epoch == self.epoch => c.recv(n, replies),
            _ => Err(RedisFilterError::from_redis(
                std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "the connection was lost with this batch in flight",
                )
                .into(),
                ambiguous,
            )),
        };
        if let Err(e) = &r {
            self.lose_connection(e);
        }
        r
    }

    /// Batches submitted and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    fn lose_connection(&mut self, e: &RedisFilterError) {
        if e.is_retryable() || matches!(e, RedisFilterError::Corrupt(_)) {
            self.conn = None;
            self.tier.clear();
        }
    }

    fn idle(&self) -> Result<(), RedisFilterError> {
        if self.inflight.is_empty() && self.takes_in_flight() == 0 {
            Ok(())
        } else {
            Err(RedisFilterError::Params(
                "complete() the submitted batches first".into(),
            ))
        }
    }

    /// An empty batch of the right kind for the connection (connecting first, so the kind is
    /// the one the batch will be sent on).
    fn batch(&mut self) -> Result<Batch, RedisFilterError> {
        let raw = self.conn()?.is_raw();
        let mut b = std::mem::replace(&mut self.spare, Batch::new(false));
        if b.is_raw() != raw {
            b = Batch::new(raw);
        }
        b.clear();
        Ok(b)
    }

    fn exec(
        &mut self,
        batch: &mut Batch,
        out: &mut Replies,
        write: bool,
    ) -> Result<(), RedisFilterError> {
        let r = self.conn()?.exec(batch, out);
        match r {
            Ok(()) => Ok(()),
            Err(e) => {
                if e.is_retryable() {
                    self.conn = None;
                    self.tier.clear();
                }
                Err(match e {
                    RedisFilterError::Unavailable { source, .. } => RedisFilterError::Unavailable {
                        source,
                        ambiguous: write,
                    },
                    other => other,
                })
            }
        }
    }

    /// Encode the commands for `todo` in generation `g` into `batch`: one `BITFIELD` (`set`) or
    /// `BITFIELD_RO` per shard and, in exact mode, one `SADD`/`SISMEMBER` per URL after them in
    /// `todo` order. Returns the batch indices of each BITFIELD, in order. Exact-mode reads go
    /// straight to the fingerprint store: SISMEMBER costs Redis what a BITFIELD_RO costs, so
    /// screening with the Bloom bits first would only add work.
    fn write_cmds(
        &mut self,
        g: &GenSpec,
        fps: &[u128],
        todo: &[usize],
        set: bool,
        batch: &mut Batch,
    ) -> Vec<Vec<usize>> {
        let exact = self.spec.mode.uses_store();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        if g.bitmap && (set || !exact) {
            let mut order = std::mem::take(&mut self.order);
            order.clear();
            order.extend(todo.iter().map(|&i| (g.shard_of(fps[i]), i)));
            order.sort_by_key(|&(s, _)| s); // stable: batch order inside a shard
            let mut pos = [0u64; 32];
            let k = g.k as usize;
            let (name, op, per) = if set {
                ("BITFIELD", &b"SET"[..], 4)
            } else {
                ("BITFIELD_RO", &b"GET"[..], 3)
            };
            let mut key = String::new();
            let mut start = 0;
            while start < order.len() {
                let shard = order[start].0;
                let end = start
                    + order[start..]
                        .iter()
                        .take_while(|&&(s, _)| s == shard)
                        .count();
                batch.cmd(name, 2 + per * k * (end - start));
                key.clear();
                Keys::write_shard(&mut key, &self.ns, g, shard);
                batch.arg(key.as_bytes());
                let mut idx = Vec::with_capacity(end - start);
                for &(_, i) in &order[start..end] {
                    let n = g.positions(fps[i], &mut pos);
                    for &p in &pos[..n] {
                        batch.arg(op);
                        batch.arg(b"u1");
                        batch.int(p as i64);
                        if set {
                            batch.arg(b"1");
                        }
                    }
                    idx.push(i);
                }
                groups.push(idx);
                start = end;
            }
            self.order = order;
        }
        if exact {
            let name = if set { "SADD" } else { "SISMEMBER" };
            for &i in todo {
                let (b, member) = g.bucket_of(fps[i]);
                batch.cmd(name, 3);
                batch.arg(Keys::bucket(&self.ns, g, g.shard_of(fps[i]), b).as_bytes());
                batch.int(member);
            }
        }
        groups
    }

    /// Read-only lookup of `todo` in `gens`: `seen[j]` for `todo[j]` = held by any of them.
    fn lookup(
        &mut self,
        gens: &[GenSpec],
        fps: &[u128],
        todo: &[usize],
        seen: &mut Vec<bool>,
    ) -> Result<(), RedisFilterError> {
        seen.clear();
        seen.resize(todo.len(), false);
        let mut pos_of = HashMap::with_capacity(todo.len());
        for (j, &i) in todo.iter().enumerate() {
            pos_of.entry(i).or_insert(j);
        }
        let exact = self.spec.mode.uses_store();
        let mut batch = self.batch()?;
        let mut plan = Vec::new();
        for g in gens {
            let groups = self.write_cmds(g, fps, todo, false, &mut batch);
            plan.push((g.k as usize, groups));
        }
        let replies = self.run_plain(batch)?;
        let mut at = 0;
        for (k, groups) in plan {
            for g in &groups {
                let bits = replies.get(at);
                at += 1;
                for (n, &i) in g.iter().enumerate() {
                    let all = bits
                        .get(n * k..(n + 1) * k)
                        .is_some_and(|b| b.iter().all(|&x| x == 1));
                    if all {
                        seen[pos_of[&i]] = true;
                    }
                }
            }
            if exact {
                for s in seen.iter_mut() {
                    if replies.int(at) == 1 {
                        *s = true;
                    }
                    at += 1;
                }
            }
        }
        self.replies = replies;
        Ok(())
    }

    /// Execute `batch` (a read or an idempotent write: no doubt bookkeeping) and hand back the
    /// replies buffer; the batch returns to the spare slot, the buffer to `self` on error.
    fn run_plain(&mut self, mut batch: Batch) -> Result<Replies, RedisFilterError> {
        let mut replies = std::mem::take(&mut self.replies);
        let r = self.exec(&mut batch, &mut replies, false);
        self.spare = batch;
        match r {
            Ok(()) => Ok(replies),
            Err(e) => {
                self.replies = replies;
                Err(e)
            }
        }
    }

    /// Read-only check: `out[i]` = whether `fps[i]` is new (not in any live generation).
    /// Safe to retry; pair with [`RedisFilter::insert`] once the URL was acted on.
    pub fn check(&mut self, fps: &[u128], out: &mut Vec<bool>) -> Result<(), RedisFilterError> {
        self.idle()?;
        out.clear();
        out.resize(fps.len(), true);
        self.maybe_refresh()?;
        let mut todo = std::mem::take(&mut self.todo);
        self.tier_misses(fps, &mut todo);
        let mut j = 0;
        for (i, o) in out.iter_mut().enumerate() {
            if todo.get(j) == Some(&i) {
                j += 1;
            } else {
                *o = false; // a tier hit
            }
        }
        let mut seen = std::mem::take(&mut self.seen);
        let gens = self.gens.live.clone();
        let r = if todo.is_empty() {
            Ok(())
        } else {
            self.stats.redis_lookups += todo.len() as u64;
            self.lookup(&gens, fps, &todo, &mut seen)
        };
        if r.is_ok() {
            for (j, &i) in todo.iter().enumerate() {
                if seen[j] {
                    out[i] = false;
                    self.tier.insert(fps[i]);
                }
            }
        }
        self.seen = seen;
        self.todo = todo;
        r
    }

    /// Insert `fps` into the current generation (idempotent: safe to retry).
    pub fn insert(&mut self, fps: &[u128]) -> Result<(), RedisFilterError> {
        self.idle()?;
        self.maybe_refresh()?;
        let todo: Vec<usize> = (0..fps.len())
            .filter(|&i| !self.tier.contains(fps[i]))
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        let cur = self.gens.current().clone();
        let mut batch = self.batch()?;
        let groups = self.write_cmds(&cur, fps, &todo, true, &mut batch);
        let replies = self.run_plain(batch)?;
        // Count what was new (the fingerprint store's answer where there is one), for growth.
        let k = cur.k as usize;
        if self.spec.mode.uses_store() {
            let n = (0..todo.len())
                .filter(|&n| replies.int(groups.len() + n) == 1)
                .count() as u64;
            self.count_items(n);
        } else {
            for (c, g) in groups.iter().enumerate() {
                let bits = replies.get(c);
                for n in 0..g.len() {
                    if bits.get(n * k..(n + 1) * k).is_some_and(|b| b.contains(&0)) {
                        self.count_items(1);
                    }
                }
            }
        }
        for &i in &todo {
            self.tier.insert(fps[i]);
        }
        self.replies = replies;
        Ok(())
    }

    /// Push buffered counters to Redis (also done on every refresh and on drop).
    pub fn flush(&mut self) -> Result<(), RedisFilterError> {
        self.idle()?;
        self.flush_items()
    }

    /// Fill, estimated FP and memory of every live generation.
    pub fn stats(&mut self) -> Result<NamespaceStats, RedisFilterError> {
        self.idle()?;
        self.refresh()?;
        let gens = self.gens.live.clone();
        let ns = self.ns.clone();
        let mut out = Vec::new();
        for g in &gens {
            let mut cmds = Vec::new();
            let usage = |key: &str| {
                redis::cmd("MEMORY")
                    .arg("USAGE")
                    .arg(key)
                    .arg("SAMPLES")
                    .arg(0)
                    .clone()
            };
            for s in 0..g.shards {
                if g.bitmap {
                    let key = Keys::shard(&ns, g, s);
                    cmds.push(redis::cmd("BITCOUNT").arg(&key).clone());
                    cmds.push(usage(&key));
                }
            }
            // Fingerprint buckets: all of them up to STATS_SAMPLE, else an even sample (a
            // namespace of 10⁹ URLs has ~4 M buckets), scaled up.
            let total = g.buckets as u64 * g.shards as u64;
            let step = total.div_ceil(STATS_SAMPLE).max(1);
            let mut sampled = 0u64;
            let mut i = 0;
            while i < total {
                let bk = Keys::bucket(
                    &ns,
                    g,
                    (i / g.buckets as u64) as u32,
                    (i % g.buckets as u64) as u32,
                );
                cmds.push(redis::cmd("SCARD").arg(&bk).clone());
                cmds.push(usage(&bk));
                sampled += 1;
                i += step;
            }
            let scale = if sampled > 0 {
                total as f64 / sampled as f64
            } else {
                1.0
            };
            let mut ones = 0u64;
            let mut bits_mem = 0u64;
            let mut fp_mem = 0u64;
            let mut fps_sampled = 0u64;
            for chunk in cmds.chunks(2000) {
                let replies = self.pipeline(chunk.to_vec(), false)?;
                let mut last = "";
                for (c, r) in chunk.iter().zip(replies) {
                    let v = as_int(&r).unwrap_or(0).max(0) as u64;
                    match c.args_iter().next() {
                        Some(redis::Arg::Simple(b"BITCOUNT")) => {
                            ones += v;
                            last = "bits";
                        }
                        Some(redis::Arg::Simple(b"SCARD")) => {
                            fps_sampled += v;
                            last = "fp";
                        }
                        _ if last == "bits" => bits_mem += v,
                        _ => fp_mem += v,
                    }
                }
            }
            let mem = bits_mem + (fp_mem as f64 * scale) as u64;
            let fps_stored = (fps_sampled as f64 * scale).round() as u64;
            let (fill, est, fp) = if g.bitmap {
                let m = (g.data_bits() * g.shards as u64) as f64;
                let fill = ones as f64 / m;
                let est = if fill < 1.0 {
                    (-(m / g.k as f64) * (1.0 - fill).ln()) as u64
                } else {
                    u64::MAX
                };
                (fill, est, fill.powi(g.k as i32))
            } else {
                let load = fps_stored as f64 / (g.buckets as f64 * g.shards as f64);
                (
                    fps_stored as f64 / g.capacity as f64,
                    fps_stored,
                    g.fingerprint_fp(load),
                )
            };
            out.push(GenStats {
                spec: g.clone(),
                items: self.items.get(&g.id).copied().unwrap_or(0),
                fill,
                estimated_items: est,
                estimated_fp: fp,
                memory_bytes: mem,
                fingerprints: fps_stored,
            });
        }
        let items: u64 = out.iter().map(|g| g.items).sum();
        let memory: u64 = out.iter().map(|g| g.memory_bytes).sum();
        Ok(NamespaceStats {
            namespace: ns,
            spec: self.spec.clone(),
            estimated_fp: out.iter().map(|g| g.estimated_fp).sum::<f64>().min(1.0),
            items,
            memory_bytes: memory,
            bytes_per_item: if items > 0 {
                memory as f64 / items as f64
            } else {
                0.0
            },
            generations: out,
        })
    }

    /// Delete a namespace: mark it as being dropped, wait two refresh intervals (attached
    /// clients see the mark at their next refresh and stop, so none writes a key after the
    /// unlinking), then unlink every generation's keys and the metadata. Claims expire by
    /// themselves. Returns whether it existed.
    pub fn drop_namespace(cfg: &RedisConfig, ns: &str) -> Result<bool, RedisFilterError> {
        layout::check_namespace(ns)?;
        let mut conn = Conn::connect(cfg).map_err(|e| RedisFilterError::from_redis(e, false))?;
        let key = Keys::meta(ns);
        let exists: bool = conn
            .query(redis::cmd("EXISTS").arg(&key))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        if !exists {
            return Ok(false);
        }
        let _: i64 = conn
            .query(redis::cmd("HSET").arg(&key).arg("dropping").arg(now_secs()))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        std::thread::sleep(cfg.refresh_interval * 2 + Duration::from_millis(200));
        // Read the generations after the wait: growth may have added one meanwhile.
        let meta: HashMap<String, String> = conn
            .query(redis::cmd("HGETALL").arg(&key))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        // A damaged record (no generations) is dropped too: there is nothing else to unlink.
        if let Ok(gens) = parse_field::<Generations>(&meta, "gens") {
            for g in gens.live.iter().chain(gens.retired.iter().map(|r| &r.gen)) {
                unlink_generation(&mut conn, ns, g)?;
            }
        }
        // The outbox protocol's keys: every client's lease and outbox, then the list.
        let clients = Keys::outbox_clients(ns);
        let ids: Vec<String> = conn
            .query(redis::cmd("SMEMBERS").arg(&clients))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        for id in &ids {
            let _: i64 = conn
                .query(
                    redis::cmd("UNLINK")
                        .arg(Keys::lease(ns, id))
                        .arg(Keys::outbox(ns, id)),
                )
                .map_err(|e| RedisFilterError::from_redis(e, false))?;
        }
        let _: i64 = conn
            .query(redis::cmd("UNLINK").arg(&clients))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        let _: i64 = conn
            .query(redis::cmd("UNLINK").arg(&key))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        Ok(true)
    }
}

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

impl CheckAndSet for &mut RedisFilter {
    type Error = RedisFilterError;
    fn check_and_set_batch(
        &mut self,
        fps: &[u128],
        out: &mut Vec<bool>,
    ) -> Result<(), Self::Error> {
        self.check_and_set(fps, out)
    }
}

fn parse_field<T: serde::de::DeserializeOwned>(
    meta: &HashMap<String, String>,
    field: &str,
) -> Result<T, RedisFilterError> {
    let raw = meta
        .get(field)
        .ok_or_else(|| RedisFilterError::Corrupt(format!("metadata has no {field:?} field")))?;
    serde_json::from_str(raw)
        .map_err(|e| RedisFilterError::Corrupt(format!("metadata field {field:?}: {e}")))
}

fn as_int(v: &Value) -> Result<i64, RedisFilterError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Nil => Ok(0),
        other => Err(RedisFilterError::Corrupt(format!(
            "expected an integer reply, got {other:?}"
        ))),
    }
}

/// Create a generation's shard strings at full size (idempotent: writes only the reserved
/// last byte), so the hot path never grows a string.
fn allocate(conn: &mut Conn, ns: &str, g: &GenSpec) -> Result<(), RedisFilterError> {
    if !g.bitmap {
        return Ok(()); // intset buckets are created by their first SADD
    }
    check_room(conn, g.allocated_bytes())?;
    let cmds: Vec<Cmd> = (0..g.shards)
        .map(|s| {
            redis::cmd("SETRANGE")
                .arg(Keys::shard(ns, g, s))
                .arg(g.shard_bytes - 1)
                .arg(&b"\0"[..])
                .clone()
        })
        .collect();
    for chunk in cmds.chunks(1000) {
        conn.pipeline(chunk.to_vec())
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
    }
    Ok(())
}

/// Refuse to allocate `bytes` where Redis has not got them: above its `maxmemory` (or, without
/// one, its machine's memory) minus what it uses, Redis would evict keys or be killed. Where
/// `INFO` is refused (some managed Redis) nothing is checked.
fn check_room(conn: &mut Conn, bytes: u64) -> Result<(), RedisFilterError> {
    let Ok(info) = conn.query::<String>(redis::cmd("INFO").arg("memory")) else {
        return Ok(());
    };
    let field = |name: &str| -> Option<u64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
    };
    let used = field("used_memory").unwrap_or(0);
    let limit = match field("maxmemory") {
        Some(m) if m > 0 => m,
        _ => field("total_system_memory").unwrap_or(u64::MAX),
    };
    let room = limit.saturating_sub(used);
    if bytes > room / 10 * 9 {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        return Err(RedisFilterError::Params(format!(
            "this generation needs {:.2} GiB of Redis memory at creation, and Redis has {:.2} GiB \
             free (limit {:.2} GiB, used {:.2} GiB): lower the capacity, raise the FP rate, use \
             fingerprints mode (it grows as it fills), or give Redis more memory",
            gib(bytes),
            gib(room),
            gib(limit),
            gib(used)
        )));
    }
    Ok(())
}

/// UNLINK every key of a generation (one key per command: keys live in different slots).
fn unlink_generation(conn: &mut Conn, ns: &str, g: &GenSpec) -> Result<(), RedisFilterError> {
    let mut keys = Vec::new();
    for s in 0..g.shards {
        if g.bitmap {
            keys.push(Keys::shard(ns, g, s));
        }
        for b in 0..g.buckets {
            keys.push(Keys::bucket(ns, g, s, b));
        }
    }
    for chunk in keys.chunks(1000) {
        let cmds = chunk
            .iter()
            .map(|k| redis::cmd("UNLINK").arg(k).clone())
            .collect();
        conn.pipeline(cmds)
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
    }
    Ok(())
}

/// Retry `op` while it fails with a retryable error, backing off from 50 ms to 5 s, for at most
/// `budget`. The error of the last attempt is returned when the budget is spent.
pub fn with_retry<T>(
    budget: Duration,
    mut on_retry: impl FnMut(&RedisFilterError, Duration),
    mut op: impl FnMut() -> Result<T, RedisFilterError>,
) -> Result<T, RedisFilterError> {
    let start = Instant::now();
    let mut wait = Duration::from_millis(50);
    loop {
        match op() {
            Err(e) if e.is_retryable() && start.elapsed() + wait <= budget => {
                on_retry(&e, wait);
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            r => return r,
        }
    }
}
