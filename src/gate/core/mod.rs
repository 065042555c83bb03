//! The gate's decision for a batch of input messages, without Kafka: decode → reject junk →
//! canonicalize → skip patterns verified similar → take the URLs in the Redis filter → the
//! records to produce. The stage runtime ([`crate::stage`]) produces them, waits for every
//! delivery report, and only then calls [`Stage::finish`](crate::stage::Stage::finish).
//!
//! The filter runs the outbox protocol (`redis_filter/outbox.rs`, docs/redis-filter.md): the
//! fetch events of the URLs a batch takes are written to this gate's outbox in Redis in the same
//! pipeline as their check-and-set, and the entry is cleared only after Kafka acknowledged the
//! batch. A gate killed at any point leaves its undelivered fetch events in its outbox; once its
//! lease expires (`redis.claim_ttl`) another gate of the namespace adopts the entry and produces
//! them. So a crash can repeat a URL but never lose one, and no gate ever waits on another.
//!
//! A fetch event the output cluster refuses for good (its input is dead-lettered `too_large`)
//! stays marked seen: the dead letter is where its URL is found.
//!
//! A batch's steps and the `Stage` implementation are in `steps.rs`; the state is here.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::Config;
use crate::decision::Decision;
use crate::events::{RejectedEvent, UrlEvent};
use crate::observe::FilterMetrics;
use crate::redis_filter::{Adopted, Expect, RedisConfig, RedisFilter, RedisFilterError, Ticket};
use crate::sieve::Sieve;
use crate::stage::{Dest, StageError, Staged};
use crate::url::Reason;

mod steps;

/// What a staged batch of the gate carries until it is finished.
#[derive(Debug, Default)]
pub struct GatePending {
    /// (namespace, outbox entry) of everything the batch publishes: its own take per
    /// namespace, and entries adopted from gates that died. Cleared once delivered.
    tickets: Vec<(String, Ticket)>,
    /// Fetch events published from adopted (or carried) outbox entries.
    pub adopted: u64,
    /// Rejections per reason.
    pub rejected: Vec<(Reason, u64)>,
    /// Duplicates.
    pub duplicates: u64,
    /// URLs held on the robots wait topic: (origin's rules unknown, origin unavailable).
    pub held: (u64, u64),
}

impl GatePending {
    fn count_reject(&mut self, r: Reason) {
        match self.rejected.iter_mut().find(|(x, _)| *x == r) {
            Some((_, n)) => *n += 1,
            None => self.rejected.push((r, 1)),
        }
    }
}

/// A batch as the gate stages it.
pub type GateStaged = Staged<GatePending>;

impl StageError for RedisFilterError {
    fn is_retryable(&self) -> bool {
        RedisFilterError::is_retryable(self)
    }
}

pub(super) struct Namespace {
    pub(super) filter: RedisFilter,
}

/// A URL that passed the sieve, waiting for the filter's answer.
struct Pending {
    /// Index of the input message in its batch.
    idx: usize,
    /// Bytes of the input message (bounds its fetch event's size).
    raw_len: usize,
    /// Its URL pattern, computed only for a URL the local tier does not know (empty until then).
    ns: usize,
    fp: u128,
    canonical: String,
    pattern: String,
    event: UrlEvent,
    /// Its fetch event's JSON in [`GateCore::enc`], once encoded.
    enc: Option<(usize, usize)>,
    /// The `Crawl-delay` of its origin's robots.txt group (`[robots]` on).
    crawl_delay: Option<f64>,
}

/// The gate's stage: decode, sieve, pattern verdicts, the Redis filter.
pub struct GateCore {
    pub(super) cfg: Config,
    pub(super) redis: RedisConfig,
    pub(super) sieve: Sieve,
    pub(super) names: Vec<String>,
    pub(super) namespaces: HashMap<String, Namespace>,
    pending: Vec<Pending>,
    /// The URL decision of the batch being staged (indexed like `pending`).
    pub(super) decision: Decision,
    /// (namespace, fingerprint) of the URLs the batch publishes (one event each).
    pub(super) chosen: rustc_hash::FxHashSet<(usize, u128)>,
    /// Fetch events (JSON) of the batch being staged.
    pub(super) enc: Vec<u8>,
    /// Outbox entries to publish with the next batch: adopted from gates whose lease expired,
    /// or this gate's own takes of a stage that failed after them (namespace index, entry).
    pub(super) carry: Vec<(usize, Adopted)>,
    /// When each namespace (indexed like `names`) last looked for expired outboxes.
    pub(super) adopted_at: Vec<Option<std::time::Instant>>,
    pub(super) metrics: FilterMetrics,
    /// The scope of each namespace in `names` (the sieve's own is `[scope]`'s).
    pub(super) scopes: Vec<Option<Arc<crate::scope::Scope>>>,
    /// `[scope]`, restored after a namespace with a scope of its own.
    pub(super) default_scope: Option<Arc<crate::scope::Scope>>,
    /// The crawl policy (robots.txt, pattern verdicts, learned parameter rules, the per-host
    /// budget), the same steps the API and `dedup` take ([`super::policy`]).
    pub(super) policy: super::policy::Policy,
    /// The API request being judged (reused).
    pub(super) request: crate::sieve::BatchResult,
}

impl GateCore {
    /// A stage for `cfg`; Redis is connected on first use.
    pub fn new(cfg: Config, metrics: FilterMetrics) -> GateCore {
        let redis = cfg.redis.client();
        let mut sieve = Sieve::new(
            cfg.sieve.validator().unwrap_or_default(), // checked when the config loaded
            cfg.sieve.canonicalizer(),
            None,
        );
        // Checked when the config loaded too (`Config::problems`), and compiled once per process.
        sieve.scope = crate::scope::for_component(&cfg.scope);
        sieve.address = cfg.sieve.address_policy().unwrap_or_default(); // checked at load
        sieve.traps = cfg.sieve.traps.clone();
        let default_scope = sieve.scope.clone();
        GateCore {
            policy: super::policy::Policy::new(&cfg, metrics.clone()),
            cfg,
            redis,
            sieve,
            names: Vec::new(),
            namespaces: HashMap::new(),
            pending: Vec::new(),
            decision: Decision::default(),
            chosen: Default::default(),
            enc: Vec::new(),
            carry: Vec::new(),
            adopted_at: Vec::new(),
            metrics,
            scopes: Vec::new(),
            default_scope,
            request: Default::default(),
        }
    }

    /// Judge the next candidates by namespace `ns`'s scope.
    pub(super) fn use_scope_of(&mut self, ns: usize) {
        let s = self.scopes.get(ns).unwrap_or(&self.default_scope);
        let same = match (&self.sieve.scope, s) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            self.sieve.scope = s.clone();
        }
        let l = self.policy.learned_rules(ns);
        let same = match &self.sieve.learned {
            Some(a) => Arc::ptr_eq(a, l),
            None => l.is_empty(),
        };
        if !same {
            self.sieve.learned = (!l.is_empty()).then(|| l.clone());
        }
    }

    /// Read the learned parameter rules of every namespace again where due.
    pub(super) fn refresh_learned(&mut self) {
        self.policy.refresh_learned(&self.names);
    }

    /// Index of namespace `ns`, attaching (or creating) its filter on first use; `Err(detail)`
    /// inside `Ok` when the gate refuses it (limit reached, or missing and not to be created).
    pub(super) fn namespace(
        &mut self,
        ns: &str,
    ) -> Result<Result<usize, String>, RedisFilterError> {
        if let Some(i) = self.names.iter().position(|n| n == ns) {
            return Ok(Ok(i));
        }
        let r = &self.cfg.redis;
        if self.names.len() >= r.max_namespaces {
            return Ok(Err(format!(
                "namespace {ns:?} is beyond redis.max_namespaces ({})",
                r.max_namespaces
            )));
        }
        let filter = match RedisFilter::attach(self.redis.clone(), ns, &Expect::default()) {
            Err(RedisFilterError::NotFound(_)) if r.create_missing => {
                RedisFilter::create(self.redis.clone(), ns, &r.new_namespace())?
            }
            Err(RedisFilterError::NotFound(_)) => {
                return Ok(Err(format!(
                    "namespace {ns:?} does not exist and redis.create_missing is off"
                )))
            }
            other => other?,
        };
        for w in filter.warnings() {
            tracing::warn!(namespace = ns, "{w}");
        }
        self.metrics.attached(ns);
        self.namespaces.insert(ns.to_string(), Namespace { filter });
        self.names.push(ns.to_string());
        self.adopted_at.push(None);
        self.policy.attach(ns);
        // The namespace's own `[scopes.NAME]`, else `[scope]`; compiled once per process.
        self.scopes.push(match self.cfg.scopes.get(ns) {
            Some(spec) => crate::scope::for_component(spec),
            // `[scope]` (not the sieve's current one: that may be another namespace's).
            None => self.default_scope.clone(),
        });
        Ok(Ok(self.names.len() - 1))
    }

    /// Sieve one candidate (against the current source): its canonical form, or why not (a
    /// relative candidate that no source resolved is `no_base`, the sieve's own verdict).
    /// [`Sieve::dedup_fingerprint`] then works on the candidate.
    fn sieve_url(&mut self, url: &str) -> Result<String, Reason> {
        self.sieve.classify(url.as_bytes(), false).map(String::from)
    }

    /// A namespace Redis no longer has (Redis restarted without its data, or it was dropped):
    /// with `redis.create_missing` it is created again at once; either way the stage waits and
    /// retries (a retryable error pauses the partitions), it does not exit.
    pub(super) fn namespace_lost(&mut self, ns: &str, e: RedisFilterError) -> RedisFilterError {
        if !matches!(e, RedisFilterError::NotFound(_)) {
            return e;
        }
        let r = &self.cfg.redis;
        let detail = if r.create_missing {
            match RedisFilter::create(self.redis.clone(), ns, &r.new_namespace()) {
                Ok(f) => {
                    tracing::warn!(
                        namespace = ns,
                        "the namespace was missing from Redis (restarted without its data?); created it again: its URLs are new again"
                    );
                    if let Some(state) = self.namespaces.get_mut(ns) {
                        state.filter = f;
                    }
                    format!("namespace {ns:?} was missing from Redis and was created again")
                }
                Err(e) => {
                    format!("namespace {ns:?} is missing from Redis and could not be created: {e}")
                }
            }
        } else {
            format!(
                "namespace {ns:?} is missing from Redis and redis.create_missing is off: restore it (`crawlsieve bloom import`) or create it; waiting"
            )
        };
        RedisFilterError::unavailable(detail)
    }

    fn reject(&self, out: &mut GateStaged, ev: &UrlEvent, reason: Reason, now: &str) {
        out.pending.count_reject(reason);
        if self.cfg.kafka.audit_topic.is_some() {
            let r = RejectedEvent {
                url: ev.url.clone(),
                reason,
                namespace: ev.namespace.clone(),
                source: ev.source.clone(),
                crawl_id: ev.crawl_id.clone(),
                gated_at: now.to_string(),
            };
            out.json(Dest::Audit, None, &r);
        }
    }
}
