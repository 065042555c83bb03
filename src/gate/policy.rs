//! The crawl policy between the sieve and the filter, one code for every driver (issue 44): the
//! Kafka gate ([`super::core`]), the HTTP API ([`super::core::GateCore::filter_direct`]) and
//! `dedup --redis` (`cli/dedup.rs`) each call these steps, in this order, on the
//! [`Decision`] of a batch:
//!
//! 1. **robots.txt** ([`Policy::robots`], [`Policy::resolve_deferred`]; `[robots] enabled`):
//!    disallowed → `robots_disallowed`; the origin's host refused by the egress policy →
//!    `private_address`; rules not known yet, or the server failing → **held** (the gate puts
//!    the event on its wait topic; the API answers it `held`; `dedup` reports it `held`). Held
//!    URLs take no place in the filter: asked again later, they are judged again.
//! 2. **URL patterns verified similar** ([`Policy::patterns`]; `[patterns]
//!    enable_url_pattern_dom_dedup`): `pattern_similar`.
//! 3. *(the driver's filter call: check-and-set, outbox take, claims or a read)*
//! 4. **The per-host budget** ([`Policy::budget`]; `[redis] max_new_urls_per_host` > 0): a
//!    host's new URLs beyond its budget for the window are `host_budget`, taken back out of the
//!    filter.
//!
//! The learned parameter rules ([`Policy::learned_rules`]; `[patterns] learned_params`) act in
//! the sieve (they change what a URL is deduplicated by), read from the same Redis keys by
//! every driver.
//!
//! Which parts apply is the configuration's, the same keys for every driver; a URL the filter's
//! local tier already knows as seen is a duplicate whatever the policy says of it (the policy is
//! not asked). The API and `dedup`, which answer a whole batch within one call, run steps 1–2
//! through [`Policy::before_filter`]; the gate runs them one by one, as it stages held events.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::decision::{Candidates, Decision};
use crate::observe::FilterMetrics;
use crate::pattern_verdicts::PatternVerdicts;
use crate::redis_filter::{LazyConn, RedisFilterError};
use crate::url::{LearnedRules, Reason};

use super::budget::{Ask, Budget};
use super::robots::{Judged, RobotsGate};

/// A candidate held for robots.txt ([`Decision::hold`] made).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hold {
    /// The candidate.
    pub j: usize,
    /// When to judge it again (ms since the epoch).
    pub until_ms: u64,
    /// `unknown` (being fetched) or `unavailable` (5xx, unreachable).
    pub why: &'static str,
}

/// Which parts of the policy a driver applies, read from the configuration (the same keys,
/// the same defaults, for every driver).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// `[robots] enabled`.
    pub robots: bool,
    /// `[patterns] enable_url_pattern_dom_dedup`.
    pub patterns: bool,
    /// `[patterns] learned_params`.
    pub learned: bool,
    /// `[redis] max_new_urls_per_host` > 0.
    pub budget: bool,
    /// `[outcomes] enabled`, where outcomes are in use: `kafka.outcomes_topic` set (the gate
    /// reads them, and the API of the same configuration applies what it learned), or `dedup
    /// --outcomes FILE`.
    pub outcomes: bool,
}

impl Parts {
    /// The parts `cfg` turns on.
    pub fn of(cfg: &Config) -> Parts {
        Parts {
            robots: cfg.robots.enabled,
            patterns: cfg.patterns.enable_url_pattern_dom_dedup,
            learned: cfg.patterns.learned_params,
            budget: cfg.redis.max_new_urls_per_host > 0,
            outcomes: cfg.outcomes.enabled && cfg.kafka.outcomes_topic.is_some(),
        }
    }
}

/// One driver's policy state: the robots.txt records it knows, its pattern verdicts and
/// learned rules per namespace, its budget counts.
pub struct Policy {
    parts: Parts,
    robots: Option<RobotsGate>,
    budget: Option<Budget>,
    /// For robots records, pattern verdicts and learned rules (the filter has its own).
    conn: LazyConn,
    /// Per namespace index (attached in order).
    verdicts: Vec<PatternVerdicts>,
    learned: Vec<crate::params::RulesCache>,
    /// Per namespace index: fetch-outcome counts.
    outcomes: Vec<crate::outcomes::OutcomeStore>,
    cfg: Config,
    /// Candidates waiting for their origin's robots.txt record.
    deferred: Vec<usize>,
    /// The batch's held candidates.
    holds: Vec<Hold>,
    metrics: FilterMetrics,
}

impl Policy {
    /// The policy `cfg` configures (Redis is connected on first use).
    pub fn new(cfg: &Config, metrics: FilterMetrics) -> Policy {
        Policy::with_redis(cfg, cfg.redis.client(), metrics)
    }

    /// The policy `cfg` configures, its state kept in the Redis `redis` names (`dedup --redis`,
    /// whose Redis is its command line's).
    pub fn with_redis(
        cfg: &Config,
        redis: crate::redis_filter::RedisConfig,
        metrics: FilterMetrics,
    ) -> Policy {
        let parts = Parts::of(cfg);
        let robots = parts.robots.then(|| {
            RobotsGate::new(
                cfg.robots.clone(),
                &cfg.redis.namespace,
                redis.clone(),
                metrics.clone(),
            )
        });
        let budget = parts.budget.then(|| {
            Budget::new(
                cfg.redis.max_new_urls_per_host,
                cfg.redis.budget_window.0,
                LazyConn::new(redis.clone()),
            )
        });
        Policy {
            parts,
            robots,
            budget,
            conn: LazyConn::new(redis),
            verdicts: Vec::new(),
            learned: Vec::new(),
            outcomes: Vec::new(),
            cfg: cfg.clone(),
            deferred: Vec::new(),
            holds: Vec::new(),
            metrics,
        }
    }

    /// The parts applied.
    pub fn parts(&self) -> Parts {
        self.parts
    }

    /// Keep state for namespace `ns` at the next index (the driver's namespace indices are
    /// attached in order: 0, 1, …); its learned rules are read at once.
    pub fn attach(&mut self, ns: &str) {
        self.verdicts
            .push(PatternVerdicts::new(self.cfg.patterns.clone(), ns));
        let mut rules = crate::params::RulesCache::new(
            Duration::from_secs(1),
            self.cfg.patterns.learned_params_verify_one_in,
        );
        if self.parts.learned {
            if let Err(e) = self.conn.with(|c| rules.refresh(c, ns)) {
                tracing::debug!(namespace = ns, error = %e, "learned parameter rules not read yet");
            }
        }
        self.learned.push(rules);
        self.outcomes.push(crate::outcomes::OutcomeStore::new(
            self.cfg.outcomes.clone(),
            ns,
        ));
    }

    /// Count fetch outcomes of namespace index `ns` (keys and kinds; [`crate::outcomes`]) for
    /// a driver that cannot put held candidates back itself (`dedup --outcomes` on a gate's
    /// Redis): keys a hit lifted are listed for a running gate to put theirs back.
    pub fn record_outcomes(
        &mut self,
        ns: usize,
        outcomes: &[(crate::outcomes::GuessKeys, crate::outcomes::Kind)],
    ) -> Result<(), RedisFilterError> {
        let Policy {
            outcomes: stores,
            conn,
            ..
        } = self;
        let store = &mut stores[ns];
        conn.with(|c| {
            let lifted = store.record(c, outcomes)?;
            crate::outcomes::mark_released(c, store.namespace(), &lifted)
        })
    }

    /// Turn the fetch-outcome step on whatever the configuration says (`dedup --outcomes`).
    pub fn use_outcomes(&mut self) {
        self.parts.outcomes = self.cfg.outcomes.enabled;
    }

    /// Namespace `ns`'s learned parameter rules as last read (empty when the part is off).
    pub fn learned_rules(&self, ns: usize) -> &Arc<LearnedRules> {
        self.learned[ns].rules()
    }

    /// Read the learned parameter rules of every namespace (`names`, by index) again where due
    /// ([`crate::params::RulesCache::refresh`]). A failure keeps the rules read before.
    pub fn refresh_learned(&mut self, names: &[String]) {
        if !self.parts.learned {
            return;
        }
        let Policy { learned, conn, .. } = self;
        for (cache, ns) in learned.iter_mut().zip(names) {
            if let Err(e) = conn.with(|c| cache.refresh(c, ns)) {
                tracing::warn!(namespace = ns, error = %e, "learned parameter rules not read; the ones read before stay (asked again in a second)");
            }
        }
    }

    /// Start a batch.
    pub fn clear(&mut self) {
        self.deferred.clear();
        self.holds.clear();
    }

    /// The candidates held for robots.txt in this batch.
    pub fn holds(&self) -> &[Hold] {
        &self.holds
    }

    /// 1. robots.txt on the candidates `from..d.len()` not `seen`: each judged by what this
    ///    worker knows of its origin; an origin it knows nothing fresh of is deferred to
    ///    [`Policy::resolve_deferred`] (one Redis exchange for the batch).
    pub fn robots<C: Candidates + ?Sized>(
        &mut self,
        d: &mut Decision,
        c: &mut C,
        from: usize,
        seen: impl Fn(usize) -> bool,
    ) {
        let Some(rb) = self.robots.as_mut() else {
            return;
        };
        let now = super::robots::now_ms();
        rb.take_fetched();
        let judged: Vec<usize> = (from..d.len())
            .filter(|&j| d.is_candidate(j) && !seen(j))
            .collect();
        let mut verdicts = Vec::with_capacity(judged.len());
        {
            let origins: Vec<std::borrow::Cow<'_, str>> = judged
                .iter()
                .map(|&j| crate::url::lex::origin(c.url(j)))
                .collect();
            let origins: Vec<&str> = origins.iter().map(|o| o.as_ref()).collect();
            let urls: Vec<&str> = judged.iter().map(|&j| c.url(j)).collect();
            rb.judge_all(&origins, &urls, now, &mut verdicts);
        }
        for (&j, v) in judged.iter().zip(verdicts) {
            if v == Judged::Ask {
                rb.ask_later(&crate::url::lex::origin(c.url(j)));
                d.defer(j);
                self.deferred.push(j);
            } else {
                apply(&mut self.holds, d, c, j, v, now);
            }
        }
    }

    /// 1b. The deferred candidates: the records of their origins (and of origins whose record
    ///    went stale) read from Redis in one exchange, and judged; an origin nobody has fetched
    ///    yet is fetched (one fetch per origin across every driver). With `wait`, a candidate
    ///    whose rules are still being fetched is judged again until they arrive or `wait` has
    ///    passed (the API and `dedup`, which answer at once; the gate holds it on its wait
    ///    topic instead). Returns whether any candidate was let on to the lookups.
    pub fn resolve_deferred<C: Candidates + ?Sized>(
        &mut self,
        d: &mut Decision,
        c: &mut C,
        wait: Option<Duration>,
    ) -> Result<bool, RedisFilterError> {
        let Some(rb) = self.robots.as_mut() else {
            return Ok(false);
        };
        let until = Instant::now() + wait.unwrap_or_default();
        let mut undeferred = false;
        loop {
            let at = super::robots::now_ms();
            if rb.must_ask() {
                self.conn.with(|conn| rb.ask(conn, at))?;
            }
            rb.take_fetched();
            let waiting = Instant::now() < until;
            let mut still = Vec::new();
            for j in self.deferred.drain(..) {
                let origin = crate::url::lex::origin(c.url(j));
                match rb.judge(&origin, c.url(j), at) {
                    Judged::Allow(delay) => {
                        c.set_crawl_delay(j, delay);
                        d.undefer(j);
                        undeferred = true;
                    }
                    Judged::Ask if waiting => {
                        rb.ask_later(&origin);
                        still.push(j);
                    }
                    Judged::Hold { why: "unknown", .. } if waiting => still.push(j),
                    v => apply(&mut self.holds, d, c, j, v, at),
                }
            }
            self.deferred = still;
            if self.deferred.is_empty() {
                return Ok(undeferred);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Steps 1–3 for a driver that answers a whole batch within one call (the HTTP API,
    /// `dedup --redis`; the Kafka gate stages its holds instead, `GateCore::judge`): robots.txt,
    /// waiting up to `wait` for sites whose rules are unknown, then the pattern verdicts — the
    /// known-seen flags (`known_seen` of a fingerprint) read once for both. `attempt` runs each
    /// step that talks to Redis as the driver retries (the API once: its client retries;
    /// `dedup` within its retry budget); a failed step is run again whole, the deferred origins
    /// kept.
    pub fn before_filter<C: Candidates + ?Sized>(
        &mut self,
        d: &mut Decision,
        c: &mut C,
        (names, wait): (&[String], Duration),
        known_seen: impl Fn(u128) -> bool,
        mut attempt: impl FnMut(
            &mut dyn FnMut() -> Result<(), RedisFilterError>,
        ) -> Result<(), RedisFilterError>,
    ) -> Result<(), RedisFilterError> {
        let seen: Vec<bool> = (0..d.len())
            .map(|j| d.is_candidate(j) && known_seen(d.fp(j)))
            .collect();
        self.clear();
        self.robots(d, c, 0, |j| seen[j]);
        attempt(&mut || self.resolve_deferred(d, c, Some(wait)).map(drop))?;
        attempt(&mut || self.patterns(d, c, 0, names, |j| seen[j]))?;
        attempt(&mut || self.outcomes(d, c, 0, |j| seen[j]))
    }

    /// 2b. Fetch outcomes of the candidates `from..d.len()` not `seen` ([`crate::outcomes`]):
    ///    where the keys say guesses miss, `fetch_misses` (a probe passes, counted).
    pub fn outcomes<C: Candidates + ?Sized>(
        &mut self,
        d: &mut Decision,
        c: &mut C,
        from: usize,
        seen: impl Fn(usize) -> bool,
    ) -> Result<(), RedisFilterError> {
        if !self.parts.outcomes {
            return Ok(());
        }
        for ns in 0..self.outcomes.len() {
            let cfg = self.outcomes[ns].config();
            let idx: Vec<usize> = (from..d.len())
                .filter(|&j| c.ns(j) == ns && d.is_candidate(j) && !seen(j))
                .filter(|&j| crate::outcomes::holds_in(cfg, c.context(j)) && !c.module_path(j))
                .collect();
            if idx.is_empty() {
                continue;
            }
            // The origins first (a few keys, mostly cached): only a candidate on an origin
            // where something missed can be held, and only its keys are asked.
            let origins: Vec<String> = idx
                .iter()
                .map(|&j| crate::outcomes::origin_key(c.url(j)))
                .collect();
            let flat: Vec<&str> = origins.iter().map(String::as_str).collect();
            let store = &mut self.outcomes[ns];
            let oc = self.conn.with(|conn| store.lookup(conn, &flat))?;
            let idx: Vec<usize> = idx
                .into_iter()
                .zip(&oc)
                .filter(|(_, o)| o.misses > 0)
                .map(|(j, _)| j)
                .collect();
            if idx.is_empty() {
                continue;
            }
            let keys: Vec<crate::outcomes::GuessKeys> = idx
                .iter()
                .map(|&j| crate::outcomes::keys(c.url(j), c.source(j), c.context(j)))
                .collect();
            let mut flat: Vec<&str> = Vec::with_capacity(2 * keys.len());
            for k in &keys {
                flat.extend(k.source.as_deref());
                flat.push(&k.dir);
            }
            let store = &mut self.outcomes[ns];
            let counts = self.conn.with(|conn| store.lookup(conn, &flat))?;
            let mut at = 0;
            // The candidates the cached counts would hold, with their keys.
            let mut hold: Vec<(usize, &crate::outcomes::GuessKeys)> = Vec::new();
            for (&j, k) in idx.iter().zip(&keys) {
                let src = if k.source.is_some() {
                    at += 1;
                    counts[at - 1]
                } else {
                    Default::default()
                };
                let dir = counts[at];
                at += 1;
                match crate::outcomes::judge(store.config(), src, dir, d.fp(j)) {
                    crate::outcomes::Judgement::Pass => {}
                    crate::outcomes::Judgement::Probe => self.metrics.outcome_probes.inc(),
                    crate::outcomes::Judgement::Hold => hold.push((j, k)),
                }
            }
            if hold.is_empty() {
                continue;
            }
            // Held on counts read now, after the candidate was kept (where the driver keeps).
            let items: Vec<_> = hold
                .iter()
                .map(|&(j, k)| (k, d.fp(j), c.held_event(j, store.namespace())))
                .collect();
            let fresh = self.conn.with(|conn| store.hold_fresh(conn, &items))?;
            for (&(j, _), (src, dir)) in hold.iter().zip(fresh) {
                match crate::outcomes::judge(store.config(), src, dir, d.fp(j)) {
                    crate::outcomes::Judgement::Pass => {}
                    crate::outcomes::Judgement::Probe => self.metrics.outcome_probes.inc(),
                    crate::outcomes::Judgement::Hold => d.reject_at(j, Reason::FetchMisses),
                }
            }
        }
        Ok(())
    }

    /// 2. Pattern verdicts of the candidates `from..d.len()` not `seen`, for namespaces
    ///    `names` (by index): a pattern verified similar is `pattern_similar`.
    pub fn patterns<C: Candidates + ?Sized>(
        &mut self,
        d: &mut Decision,
        c: &mut C,
        from: usize,
        names: &[String],
        seen: impl Fn(usize) -> bool,
    ) -> Result<(), RedisFilterError> {
        if !self.parts.patterns {
            return Ok(());
        }
        let mut skip = Vec::new();
        for ns in 0..names.len() {
            let idx: Vec<usize> = (from..d.len())
                .filter(|&j| c.ns(j) == ns && d.is_candidate(j) && !seen(j))
                .collect();
            if idx.is_empty() {
                continue;
            }
            for &j in &idx {
                c.compute_pattern(j);
            }
            let pats: Vec<&str> = idx.iter().map(|&j| c.pattern(j)).collect();
            let verdicts = &mut self.verdicts[ns];
            self.conn
                .with(|conn| verdicts.skip_batch(conn, &pats, &mut skip))?;
            for (&j, &s) in idx.iter().zip(&skip) {
                if s {
                    d.reject_at(j, Reason::PatternSimilar);
                }
            }
        }
        Ok(())
    }

    /// 4. The per-host budget on the batch's new URLs (`names` by namespace index): counted
    ///    across every driver of the namespace; a host's surplus (its last new URLs in input
    ///    order) is `host_budget`, once `untake(ns, fps)` took it back out of the filter. Any
    ///    failure lets everything through (over budget, never lost).
    pub fn budget<C: Candidates + ?Sized>(
        &mut self,
        d: &mut Decision,
        c: &C,
        names: &[String],
        mut untake: impl FnMut(usize, &[u128]) -> Result<u64, RedisFilterError>,
    ) {
        let Some(budget) = self.budget.as_mut() else {
            return;
        };
        let mut at: rustc_hash::FxHashMap<(usize, &str), usize> = Default::default();
        let mut asks: Vec<Ask> = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        for j in d.news() {
            let host = crate::url::lex::host_port(c.url(j));
            let k = *at.entry((c.ns(j), host)).or_insert_with(|| {
                asks.push(Ask {
                    ns: names[c.ns(j)].clone(),
                    host: host.to_string(),
                    n: 0,
                });
                members.push(Vec::new());
                asks.len() - 1
            });
            asks[k].n += 1;
            members[k].push(j);
        }
        if asks.is_empty() {
            return;
        }
        let granted = match budget.grant(&asks) {
            Ok(g) => g,
            Err(e) => {
                let n: u64 = asks.iter().map(|a| a.n).sum();
                self.metrics.budget_unchecked.inc_by(n);
                tracing::warn!(error = %e, urls = n, "the per-host budget could not be counted: publishing this batch's new URLs without it");
                return;
            }
        };
        let mut surplus: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
        for ((a, g), m) in asks.iter().zip(&granted).zip(&members) {
            if g.reached {
                self.metrics.budget_hosts_reached.inc();
                tracing::info!(
                    namespace = a.ns,
                    host = a.host,
                    "per-host budget spent for this window"
                );
            }
            surplus[c.ns(m[0])].extend_from_slice(&m[g.admitted as usize..]);
        }
        // Whether each namespace's surplus left the filter (and is rejected).
        let mut untaken = vec![false; names.len()];
        for (ns, over) in surplus.iter().enumerate() {
            if over.is_empty() {
                continue;
            }
            let fps: Vec<u128> = over.iter().map(|&j| d.fp(j)).collect();
            match untake(ns, &fps) {
                Ok(_) => {
                    for &j in over {
                        d.reject_at(j, Reason::HostBudget);
                    }
                    untaken[ns] = true;
                }
                Err(e) => {
                    self.metrics.budget_unchecked.inc_by(over.len() as u64);
                    tracing::warn!(error = %e, urls = over.len(), "the surplus of a per-host budget could not be taken back out of the filter: publishing it");
                }
            }
        }
        // What was not published leaves the counters (with the next exchange).
        for ((a, g), m) in asks.iter().zip(&granted).zip(&members) {
            if untaken[c.ns(m[0])] {
                budget.correct(a, m.len() as u64 - g.admitted);
            }
        }
    }

    /// Count new URLs that were published without the budget (a failed batch's carried news).
    pub fn unbudgeted(&self, n: u64) {
        if self.budget.is_some() {
            self.metrics.budget_unchecked.inc_by(n);
        }
    }

    /// While idle: send the budget's pending corrections.
    pub fn idle(&mut self) -> Result<(), RedisFilterError> {
        match self.budget.as_mut() {
            Some(b) => b.flush(),
            None => Ok(()),
        }
    }
}

/// What robots.txt's verdict `v` on candidate `j` does: a rejection, a hold (`Ask` here: the
/// origin is still unknown after asking), or the `Crawl-delay` of an allowed URL.
fn apply<C: Candidates + ?Sized>(
    holds: &mut Vec<Hold>,
    d: &mut Decision,
    c: &mut C,
    j: usize,
    v: Judged,
    now: u64,
) {
    let (until_ms, why) = match v {
        Judged::Allow(delay) => return c.set_crawl_delay(j, delay),
        Judged::Disallow => return d.reject_at(j, Reason::RobotsDisallowed),
        Judged::Refused => return d.reject_at(j, Reason::PrivateAddress),
        Judged::Hold { until_ms, why } => (until_ms, why),
        Judged::Ask => (now, "unknown"),
    };
    d.hold(j);
    holds.push(Hold { j, until_ms, why });
}
