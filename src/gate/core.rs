//! The gate's decision for a batch of input messages, without Kafka: decode → reject junk →
//! canonicalize → skip patterns verified similar → check the Redis filter → the records to
//! produce. The stage runtime ([`crate::stage`]) produces them, waits for every delivery report,
//! and only then calls [`Stage::finish`], which marks the new URLs seen.
//!
//! The split is what makes the stage at-least-once: a URL is written to the filter only after
//! its fetch event is durable in Kafka, so a crash at any point can repeat a URL but never lose
//! one. [`Stage::stage`] only reads Redis and may be repeated as often as needed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use url::Url;

use crate::config::Config;
use crate::events::{
    now_rfc3339, DeadLetterCode, DecodeError, FetchEvent, RejectedEvent, UrlEvent,
};
use crate::observe::FilterMetrics;
use crate::patterns::PatternVerdicts;
use crate::redis_filter::{Expect, LazyConn, RedisConfig, RedisFilter, RedisFilterError};
use crate::sieve::Sieve;
use crate::stage::{Batch, Dest, Stage, StageError, Staged};
use crate::url::Reason;

/// What a staged batch of the gate carries until it is finished.
#[derive(Debug, Default)]
pub struct GatePending {
    /// (namespace, fingerprints of its new URLs): confirmed in the filter after delivery.
    inserts: Vec<(String, Vec<u128>)>,
    /// Fetch records and the URL each carries: (record, index into `inserts`, fingerprint).
    claimed: Vec<(usize, usize, u128)>,
    /// (namespace, fingerprints) whose fetch event was refused for good: their claims are
    /// released, never confirmed, so the URL stays new for a later event.
    releases: Vec<(String, Vec<u128>)>,
    /// Rejections per reason.
    pub rejected: Vec<(Reason, u64)>,
    /// Duplicates.
    pub duplicates: u64,
}

impl GatePending {
    /// Fingerprints [`Stage::finish`] will confirm, per namespace.
    pub fn inserts(&self) -> &[(String, Vec<u128>)] {
        &self.inserts
    }

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
    fn is_busy(&self) -> bool {
        matches!(self, RedisFilterError::Claimed(_))
    }
}

struct Namespace {
    filter: RedisFilter,
    verdicts: PatternVerdicts,
}

/// A URL that passed the sieve, waiting for the filter's answer.
struct Pending {
    /// Index of the input message in its batch.
    idx: usize,
    ns: usize,
    fp: u128,
    canonical: String,
    pattern: String,
    event: UrlEvent,
    skipped: bool,
    new: bool,
}

/// Why [`GateCore::filter_direct`] answered no verdicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirectError {
    /// The namespace is refused (as the gate dead-letters it).
    Refused(String),
    /// The idempotency key was used before for a different request.
    KeyReused,
}

/// An idempotent API request ([`GateCore::filter_direct`]).
#[derive(Debug, Clone)]
pub struct Idem {
    /// Record name: a digest of the client's identity and its key.
    pub name: String,
    /// Claim token derived from the name.
    pub token: i64,
    /// A digest of the request body: the same key with another body is refused.
    pub request: String,
    /// How long the answer is kept.
    pub ttl: std::time::Duration,
}

impl Idem {
    /// The record for `verdicts`: `{"request": digest, "verdicts": ["n:URL" | "d" | "r:code"]}`.
    fn encode(&self, verdicts: &[Direct]) -> String {
        let v: Vec<String> = verdicts
            .iter()
            .map(|d| match d {
                Direct::New(c) => format!("n:{c}"),
                Direct::Duplicate => "d".to_string(),
                Direct::Rejected(r) => format!("r:{}", r.code()),
            })
            .collect();
        serde_json::json!({"request": self.request, "verdicts": v}).to_string()
    }

    /// The verdicts of a stored record, if it answers `request`.
    fn replay(record: &str, request: &str) -> Result<Vec<Direct>, DirectError> {
        let v: serde_json::Value = serde_json::from_str(record).unwrap_or_default();
        if v["request"].as_str() != Some(request) {
            return Err(DirectError::KeyReused);
        }
        let verdicts = v["verdicts"].as_array().cloned().unwrap_or_default();
        Ok(verdicts
            .iter()
            .map(|x| {
                let s = x.as_str().unwrap_or("d");
                if let Some(c) = s.strip_prefix("n:") {
                    Direct::New(c.to_string())
                } else if let Some(code) = s.strip_prefix("r:") {
                    Reason::ALL
                        .iter()
                        .find(|r| r.code() == code)
                        .map_or(Direct::Duplicate, |r| Direct::Rejected(*r))
                } else {
                    Direct::Duplicate
                }
            })
            .collect())
    }
}

/// One URL's verdict from [`GateCore::filter_direct`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Direct {
    /// New: its canonical form.
    New(String),
    /// Seen before (or earlier in the same request).
    Duplicate,
    /// Rejected, with the reason code.
    Rejected(Reason),
}

/// The gate's stage: decode, sieve, pattern verdicts, the Redis filter.
pub struct GateCore {
    cfg: Config,
    redis: RedisConfig,
    sieve: Sieve,
    source: Option<String>,
    names: Vec<String>,
    namespaces: HashMap<String, Namespace>,
    patterns_conn: LazyConn,
    pending: Vec<Pending>,
    seen: HashSet<(usize, u128)>,
    /// URLs of batches staged and not yet finished (their fetch events are on their way): a
    /// later batch staged meanwhile counts them as duplicates instead of emitting them again.
    unfinished: HashSet<(usize, u128)>,
    metrics: FilterMetrics,
    yield_on_busy: bool,
    /// The scope of each namespace in `names` (the sieve's own is `[scope]`'s).
    scopes: Vec<Option<Arc<crate::scope::Scope>>>,
    /// `[scope]`, restored after a namespace with a scope of its own.
    default_scope: Option<Arc<crate::scope::Scope>>,
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
        let default_scope = sieve.scope.clone();
        GateCore {
            patterns_conn: LazyConn::new(redis.clone()),
            cfg,
            redis,
            sieve,
            source: None,
            names: Vec::new(),
            namespaces: HashMap::new(),
            pending: Vec::new(),
            seen: HashSet::new(),
            unfinished: HashSet::new(),
            metrics,
            yield_on_busy: false,
            scopes: Vec::new(),
            default_scope,
        }
    }

    /// Judge the next candidates by namespace `ns`'s scope.
    fn use_scope_of(&mut self, ns: usize) {
        let s = self.scopes.get(ns).unwrap_or(&self.default_scope);
        let same = match (&self.sieve.scope, s) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            self.sieve.scope = s.clone();
        }
    }

    /// Index of namespace `ns`, attaching (or creating) its filter on first use; `Err(detail)`
    /// inside `Ok` when the gate refuses it (limit reached, or missing and not to be created).
    fn namespace(&mut self, ns: &str) -> Result<Result<usize, String>, RedisFilterError> {
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
        let mut filter = match RedisFilter::attach(self.redis.clone(), ns, &Expect::default()) {
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
        filter.set_yield_on_busy(self.yield_on_busy);
        for w in filter.warnings() {
            tracing::warn!(namespace = ns, "{w}");
        }
        self.metrics.attached(ns);
        self.namespaces.insert(
            ns.to_string(),
            Namespace {
                filter,
                verdicts: PatternVerdicts::new(self.cfg.patterns.clone(), ns),
            },
        );
        self.names.push(ns.to_string());
        // The namespace's own `[scopes.NAME]`, else `[scope]`; compiled once per process.
        self.scopes.push(match self.cfg.scopes.get(ns) {
            Some(spec) => crate::scope::for_component(spec),
            None => self.sieve.scope.clone(),
        });
        Ok(Ok(self.names.len() - 1))
    }

    /// Sieve one candidate (against the current source): its canonical form, or why not. A
    /// relative candidate that no source resolved is `no_base`: a fetcher cannot fetch it.
    /// [`Sieve::dedup_fingerprint`] then works on the candidate.
    fn sieve_url(&mut self, url: &str) -> Result<String, Reason> {
        let c = self.sieve.classify(url.as_bytes(), false)?;
        if c.starts_with("https://") || c.starts_with("http://") {
            Ok(c.to_string())
        } else {
            Err(Reason::NoBase)
        }
    }

    /// `skip[i]` = whether `patterns[i]` was verified similar in namespace `ns` (all false when
    /// the feature is off). Connects on first use; a failed call reconnects on the next.
    fn pattern_skips(
        &mut self,
        ns: &str,
        patterns: &[&str],
        skip: &mut Vec<bool>,
    ) -> Result<(), RedisFilterError> {
        skip.clear();
        skip.resize(patterns.len(), false);
        if !self.cfg.patterns.enable_url_pattern_dom_dedup || patterns.is_empty() {
            return Ok(());
        }
        let state = self.namespaces.get_mut(ns).expect("an attached namespace");
        self.patterns_conn
            .with(|conn| state.verdicts.skip_batch(conn, patterns, skip))
    }

    /// Where the candidates of the next [`GateCore::filter_direct`] calls were found (the API's
    /// `context`; the Kafka path takes each event's own).
    pub fn set_context(&mut self, context: crate::url::Context) {
        self.sieve.context = context;
    }

    /// The HTTP filter API's path ([`crate::serve`]): sieve `urls` for namespace `ns` (relative
    /// ones against `source`), skip URL patterns verified similar, and check-and-set the rest
    /// atomically (`check_only`: check without inserting). One verdict per input, in order.
    /// `Ok(Err(DirectError::Refused(detail)))` when the namespace is refused (as the gate
    /// dead-letters it); `Ok(Ok((verdicts, replayed)))` otherwise.
    ///
    /// With `idem` (an `Idempotency-Key`), the request is idempotent: its URLs are claimed
    /// under the key's token, its verdicts stored (for `idem.ttl`) before they are confirmed
    /// and returned, and a retry of the same request — by this process or another, after a
    /// timeout, a cut connection or a crash — gets the first answer (`replayed`).
    pub fn filter_direct(
        &mut self,
        ns: &str,
        source: Option<&str>,
        urls: &[String],
        check_only: bool,
        idem: Option<&Idem>,
    ) -> Result<Result<(Vec<Direct>, bool), DirectError>, RedisFilterError> {
        let ns = match self.namespace(ns)? {
            Ok(i) => {
                self.use_scope_of(i);
                self.names[i].clone()
            }
            Err(detail) => return Ok(Err(DirectError::Refused(detail))),
        };
        let idem = idem.filter(|_| !check_only);
        if let Some(k) = idem {
            let state = self.namespaces.get_mut(&ns).expect("attached above");
            if let Some(rec) = state.filter.record(&k.name)? {
                return Ok(Idem::replay(&rec, &k.request).map(|v| (v, true)));
            }
        }
        self.set_source(source);
        let mut out = Vec::with_capacity(urls.len());
        let mut todo: Vec<(usize, u128, String)> = Vec::new();
        for (i, u) in urls.iter().enumerate() {
            match self.sieve_url(u) {
                Err(r) => out.push(Direct::Rejected(r)),
                Ok(c) => {
                    out.push(Direct::Duplicate);
                    todo.push((i, self.sieve.dedup_fingerprint(), c));
                }
            }
        }
        let pats: Vec<String> = todo
            .iter()
            .map(|(_, _, c)| crate::url::pattern::pattern(c))
            .collect();
        let refs: Vec<&str> = pats.iter().map(String::as_str).collect();
        let mut skip = Vec::new();
        self.pattern_skips(&ns, &refs, &mut skip)?;
        let mut k = 0;
        todo.retain(|(i, ..)| {
            let s = skip[k];
            k += 1;
            if s {
                out[*i] = Direct::Rejected(Reason::PatternSimilar);
            }
            !s
        });
        let fps: Vec<u128> = todo.iter().map(|t| t.1).collect();
        let mut news = Vec::new();
        let t = std::time::Instant::now();
        // A namespace Redis lost is created again (create_missing) and the call made once more.
        let mut attempt = 0;
        loop {
            let state = self.namespaces.get_mut(&ns).expect("attached above");
            let r = match (check_only, idem) {
                (true, _) => state.filter.check(&fps, &mut news),
                (false, Some(k)) => state.filter.claim_as(k.token, &fps, &mut news),
                (false, None) => state.filter.check_and_set(&fps, &mut news),
            };
            match r {
                Ok(()) => break,
                Err(e @ RedisFilterError::NotFound(_))
                    if attempt == 0 && self.cfg.redis.create_missing =>
                {
                    attempt += 1;
                    let _ = self.namespace_lost(&ns, e);
                }
                Err(e) => return Err(self.namespace_lost(&ns, e)),
            }
        }
        if check_only {
            // Repeats inside the request: only the first is new.
            let mut seen = HashSet::new();
            for (n, fp) in news.iter_mut().zip(&fps) {
                *n &= seen.insert(*fp);
            }
        }
        self.metrics
            .filter_seconds
            .observe(t.elapsed().as_secs_f64());
        let mut delivered = Vec::new();
        for ((i, fp, c), n) in todo.into_iter().zip(news) {
            if n {
                out[i] = Direct::New(c);
                delivered.push(fp);
            }
        }
        if let Some(k) = idem {
            // Remember the answer before the URLs are confirmed: a retry after this point
            // replays it; a retry before finds the claims still under the key's token.
            let state = self.namespaces.get_mut(&ns).expect("attached above");
            let stored = state.filter.put_record(&k.name, &k.encode(&out), k.ttl)?;
            state.filter.confirm(&delivered);
            state.filter.settle()?;
            // Two attempts racing: both answer what was stored first.
            return Ok(Idem::replay(&stored, &k.request).map(|v| (v, false)));
        }
        Ok(Ok((out, false)))
    }

    /// A stage that failed after claiming: the claims stay ours in Redis (the retry finds them
    /// ours), but this client must not take them for URLs it is already publishing.
    fn unclaim(&mut self, claimed: &[(String, Vec<u128>)]) {
        for (ns, fps) in claimed {
            if let Some(state) = self.namespaces.get_mut(ns) {
                state.filter.forget(fps);
            }
        }
    }

    /// A namespace Redis no longer has (Redis restarted without its data, or it was dropped):
    /// with `redis.create_missing` it is created again at once; either way the stage waits and
    /// retries (a retryable error pauses the partitions), it does not exit.
    fn namespace_lost(&mut self, ns: &str, e: RedisFilterError) -> RedisFilterError {
        if !matches!(e, RedisFilterError::NotFound(_)) {
            return e;
        }
        let r = &self.cfg.redis;
        let detail = if r.create_missing {
            match RedisFilter::create(self.redis.clone(), ns, &r.new_namespace()) {
                Ok(mut f) => {
                    f.set_yield_on_busy(self.yield_on_busy);
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

    /// Use `source` as the base of relative candidates (parsed once per distinct source).
    fn set_source(&mut self, source: Option<&str>) {
        if self.source.as_deref() == source {
            return;
        }
        self.sieve.base = source.and_then(|s| Url::parse(s).ok());
        self.source = source.map(String::from);
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

impl Stage for GateCore {
    type Error = RedisFilterError;
    type Pending = GatePending;

    fn stage(
        &mut self,
        topic: &str,
        batch: &Batch,
        out: &mut GateStaged,
    ) -> Result<(), RedisFilterError> {
        out.clear();
        self.pending.clear();
        out.consumed = batch.len() as u64;
        let now = now_rfc3339();
        let max = self.cfg.kafka.max_message_bytes;
        let default_ns = self.cfg.redis.namespace.clone();
        // 1. Decode and sieve; dead letters and rejections are staged at once.
        for i in 0..batch.len() {
            let ev = match UrlEvent::decode(batch.value(i), max) {
                Ok(ev) => ev,
                Err(e) => {
                    out.dead_letter(&e, topic, batch, i);
                    continue;
                }
            };
            let ns_name = ev.namespace.as_deref().unwrap_or(&default_ns);
            let ns = match self.namespace(ns_name)? {
                Ok(ns) => ns,
                Err(detail) => {
                    let e = DecodeError {
                        code: DeadLetterCode::NamespaceRefused,
                        detail,
                    };
                    out.dead_letter(&e, topic, batch, i);
                    continue;
                }
            };
            self.set_source(ev.source.as_deref());
            self.sieve.context = ev.context.unwrap_or_default();
            self.use_scope_of(ns);
            match self.sieve_url(&ev.url) {
                Err(reason) => self.reject(out, &ev, reason, &now),
                Ok(canonical) => {
                    let fp = self.sieve.dedup_fingerprint();
                    let pattern = crate::url::pattern::pattern(&canonical);
                    self.pending.push(Pending {
                        idx: i,
                        ns,
                        fp,
                        canonical,
                        pattern,
                        event: ev,
                        skipped: false,
                        new: false,
                    });
                }
            }
        }
        // 2. Per namespace: pattern verdicts, then one filter check for the rest.
        let t = std::time::Instant::now();
        let mut pending = std::mem::take(&mut self.pending);
        let mut skip = Vec::new();
        let mut fps = Vec::new();
        let mut idx = Vec::new();
        let mut news = Vec::new();
        let mut claimed: Vec<(String, Vec<u128>)> = Vec::new();
        for ns in 0..self.names.len() {
            idx.clear();
            idx.extend((0..pending.len()).filter(|&j| pending[j].ns == ns));
            if idx.is_empty() {
                continue;
            }
            let name = self.names[ns].clone();
            let pats: Vec<&str> = idx.iter().map(|&j| pending[j].pattern.as_str()).collect();
            if let Err(e) = self.pattern_skips(&name, &pats, &mut skip) {
                self.pending = pending;
                self.unclaim(&claimed);
                return Err(e);
            }
            let mut k = 0;
            idx.retain(|&j| {
                let s = skip[k];
                k += 1;
                pending[j].skipped = s;
                !s
            });
            let state = self
                .namespaces
                .get_mut(&name)
                .expect("every name has its state");
            fps.clear();
            fps.extend(idx.iter().map(|&j| pending[j].fp));
            // Claim (docs/redis-filter.md): new = ours to publish; confirmed in finish() after
            // the delivery report, so nothing is marked seen that was not delivered, and a
            // second gate seeing the same link meanwhile waits for our claim.
            if let Err(e) = state.filter.claim(&fps, &mut news) {
                self.pending = pending;
                self.unclaim(&claimed);
                return Err(self.namespace_lost(&name, e));
            }
            for (&j, &n) in idx.iter().zip(&news) {
                pending[j].new = n;
            }
            claimed.push((
                name,
                fps.iter()
                    .zip(&news)
                    .filter(|(_, &n)| n)
                    .map(|(f, _)| *f)
                    .collect(),
            ));
        }
        self.metrics
            .filter_seconds
            .observe(t.elapsed().as_secs_f64());
        // 3. In input order: skipped patterns are rejected, repeats within the batch are
        //    duplicates, the rest become fetch events.
        //    A URL is new for the batch if its claim said so; its first event whose fetch event
        //    fits the output limit publishes it (an event too large for it is dead-lettered
        //    and the next event of the same URL, if any, publishes it instead).
        self.seen.clear();
        let new_fps: HashSet<(usize, u128)> = pending
            .iter()
            .filter(|p| p.new)
            .map(|p| (p.ns, p.fp))
            .collect();
        let limit = self.cfg.kafka.producer_max_bytes();
        let mut inserts: Vec<Vec<u128>> = vec![Vec::new(); self.names.len()];
        for p in pending.drain(..) {
            if p.skipped {
                self.reject(out, &p.event, Reason::PatternSimilar, &now);
                continue;
            }
            if !new_fps.contains(&(p.ns, p.fp))
                || self.unfinished.contains(&(p.ns, p.fp))
                || self.seen.contains(&(p.ns, p.fp))
            {
                out.pending.duplicates += 1;
                continue;
            }
            let host = crate::url::lex::host_port(&p.canonical).to_string();
            let ev = p.event;
            let fe = FetchEvent {
                url: p.canonical,
                original: ev.url,
                pattern: p.pattern,
                host,
                namespace: self.names[p.ns].clone(),
                source: ev.source,
                depth: ev.depth,
                discovered_at: ev.discovered_at,
                crawl_id: ev.crawl_id,
                method: ev.method,
                metadata: ev.metadata,
                gated_at: now.clone(),
            };
            let key = fe.host.clone();
            out.json_from(p.idx, Dest::Output, Some(key.as_bytes()), &fe);
            let size = out.record_bytes(out.len() - 1);
            if size > limit {
                out.pop();
                let e = DecodeError {
                    code: DeadLetterCode::TooLarge,
                    detail: format!(
                        "its fetch event would be {size} bytes, over the output limit of {limit} (the producer's message.max.bytes)"
                    ),
                };
                out.dead_letter(&e, topic, batch, p.idx);
                continue;
            }
            out.emitted += 1;
            self.seen.insert((p.ns, p.fp));
            inserts[p.ns].push(p.fp);
            let rec = out.len() - 1;
            out.pending.claimed.push((rec, p.ns, p.fp));
        }
        // Claimed URLs no event of the batch could publish: released, never marked seen.
        let mut releases: Vec<Vec<u128>> = vec![Vec::new(); self.names.len()];
        for &(ns, fp) in &new_fps {
            if !self.seen.contains(&(ns, fp)) {
                releases[ns].push(fp);
            }
        }
        out.pending.releases = self
            .names
            .iter()
            .cloned()
            .zip(releases)
            .filter(|(_, v)| !v.is_empty())
            .collect();
        self.pending = pending;
        // Only now, when nothing can fail any more: a failed stage is repeated from scratch.
        self.unfinished.extend(self.seen.iter().copied());
        // One entry per attached namespace (indexed like `names`), so `claimed` can point in.
        out.pending.inserts = self.names.iter().cloned().zip(inserts).collect();
        Ok(())
    }

    fn finish(&mut self, out: &mut GateStaged) -> Result<(), RedisFilterError> {
        let out = &out.pending;
        let t = std::time::Instant::now();
        // Queue the confirmations (delivered) and releases (refused for good) in each
        // namespace's filter, then send them. A failed settle leaves them queued (settle drops
        // repeats) and finish() is called again.
        let mut touched: Vec<&str> = Vec::new();
        for ((ns, fps), release) in out
            .inserts
            .iter()
            .map(|x| (x, false))
            .chain(out.releases.iter().map(|x| (x, true)))
        {
            if fps.is_empty() {
                continue;
            }
            let state = self
                .namespaces
                .get_mut(ns)
                .expect("staged namespaces are attached");
            if release {
                state.filter.release(fps);
            } else {
                state.filter.confirm(fps);
            }
            if !touched.contains(&ns.as_str()) {
                touched.push(ns);
            }
        }
        for ns in touched {
            let state = self.namespaces.get_mut(ns).expect("attached");
            if let Err(e) = state.filter.settle() {
                return Err(self.namespace_lost(ns, e));
            }
        }
        for (ns, fps) in &out.inserts {
            let i = self
                .names
                .iter()
                .position(|n| n == ns)
                .expect("a known name");
            for fp in fps {
                self.unfinished.remove(&(i, *fp));
            }
        }
        self.metrics
            .filter_seconds
            .observe(t.elapsed().as_secs_f64());
        Ok(())
    }

    /// Fetch record `i` will not be delivered (the output cluster refused it for good): its
    /// URL is released, never marked seen.
    fn withdraw(&mut self, out: &mut GateStaged, i: usize) {
        let p = &mut out.pending;
        let Some(pos) = p.claimed.iter().position(|c| c.0 == i) else {
            return;
        };
        let (_, ns, fp) = p.claimed.swap_remove(pos);
        let (name, fps) = &mut p.inserts[ns];
        fps.retain(|&f| f != fp);
        match p.releases.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => v.push(fp),
            None => p.releases.push((name.clone(), vec![fp])),
        }
    }

    fn account(&self, out: &GateStaged) {
        for (r, n) in &out.pending.rejected {
            self.metrics
                .rejected
                .with_label_values(&[r.code()])
                .inc_by(*n);
        }
        self.metrics.duplicates.inc_by(out.pending.duplicates);
    }

    fn set_yield_on_busy(&mut self, on: bool) {
        self.yield_on_busy = on;
        for state in self.namespaces.values_mut() {
            state.filter.set_yield_on_busy(on);
        }
    }
}
