//! `crawlsieve render`: the render stage as a [`Stage`] of the shared runtime
//! ([`crate::stage`]), so it has the same at-least-once discipline (produce, await every
//! report, then remember, then commit).
//!
//! Per batch of fetch events: render the URLs concurrently (one browser, `render.tabs` tabs),
//! extract features, assign each page online (per host; the host's clusters are loaded from
//! their Redis checkpoint the first time the worker sees the host, so a rebalance does not
//! forget them), and stage one cluster-assignment event per page (`schemas/
//! cluster-assignment.v2.json`, keyed by host) for the results topic. Pages also feed the
//! URL-pattern sampler; decided patterns are written to Redis for the gate. Both the
//! checkpoints and the verdicts are written in [`Stage::finish`], after the assignments were
//! delivered.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::events::{now_rfc3339, DeadLetterCode, DecodeError, FetchEvent};
use crate::page::online::OnlineClusterer;
use crate::page::params::{Change, Learner};
use crate::page::pattern_sampler::{Sampler, Verdict};
use crate::page::similarity::{Similarity, Thresholds};
use crate::redis_filter::{LazyConn, RedisFilterError};
use crate::stage::{Batch, Dest, Stage, Staged};
use crate::url::lex::origin;

use super::auto::{Seen, Seer};
use super::metrics::RenderMetrics;
use super::{RenderConfig, Rendered, Renderer};

/// What a staged batch of the render stage carries until its assignments are delivered: the
/// verdicts it decided and the hosts whose clusters it changed, written in [`Stage::finish`].
#[derive(Debug, Default)]
pub struct RenderPending {
    /// (namespace, pattern, samples, similarity) decided in the batch.
    verdicts: Vec<(String, String, u32, f64)>,
    /// Hosts whose cluster checkpoint is to be written.
    touched: BTreeSet<String>,
    /// (namespace, rule learned or revoked) in the batch ([`crate::params`]).
    learned: Vec<(String, Change)>,
}

/// A page's cluster assignment, for the results topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssignmentEvent {
    /// The URL rendered (the fetch event's canonical URL).
    pub url: String,
    /// Where it ended.
    pub final_url: String,
    /// HTTP status of the main document (0 when none).
    pub status: u16,
    /// Cluster id; empty when the page is alone.
    pub cluster_id: String,
    /// The canonical page of the cluster.
    pub canonical_url: String,
    /// Whether this page is the canonical.
    pub is_canonical: bool,
    /// Rule class (`E1`, `E3`, `L1`, `W1`, `M1`, `T1`, `R1`), if any.
    pub rule: Option<String>,
    /// Similarities to the canonical.
    pub similarity: Similarity,
    /// A summary of the page's features.
    pub features: FeatureSummary,
    /// The filter namespace of the fetch event.
    pub namespace: String,
    /// Render error; empty on success.
    pub error: String,
    /// When it was rendered (RFC 3339, UTC).
    pub rendered_at: String,
    /// Whether Chromium rendered it (`false`: fetched over HTTP by `render.mode = "auto"`; no
    /// screenshot hash, no timings). Version 2.
    pub rendered: bool,
}

/// What the assignment carries of the features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureSummary {
    /// Page title.
    pub title: String,
    /// Main text length (characters).
    pub text_chars: usize,
    /// HTML size (bytes).
    pub html_bytes: usize,
    /// Text SimHash, 16 hex digits.
    pub simhash: String,
    /// Screenshot Gradient hash, 16 hex digits.
    pub phash: Option<String>,
    /// Element count.
    pub nodes: u32,
    /// Browser timings; `None` (null) when the page was not rendered: absent, not zero.
    /// Version 2.
    pub timings: Option<crate::page::Timings>,
}

/// The render stage.
pub struct RenderStage {
    rt: tokio::runtime::Runtime,
    renderer: Arc<Renderer>,
    /// How pages are seen (`render.mode`) and what the checks taught.
    seer: Arc<Seer>,
    clusterer: OnlineClusterer,
    sampler: Sampler,
    redis: LazyConn,
    max_bytes: usize,
    metrics: Option<RenderMetrics>,
    launches_seen: u64,
    /// `[scope]`: a fetch event outside it is not loaded (it did not come through this
    /// deployment's gate, or the scope was narrowed since).
    scope: Option<Arc<crate::scope::Scope>>,
    /// `[scopes.NAME]`: a namespace's own scope, replacing `[scope]` for its events.
    scopes: std::collections::BTreeMap<String, Option<Arc<crate::scope::Scope>>>,
    /// Learned parameter rules, per namespace (`patterns.learned_params`; `None`: off).
    learners: Option<std::collections::HashMap<String, Learner>>,
    /// Soft-404 probes (`render.soft_404_probe`; `None`: off).
    probes: Option<super::soft404::Probes>,
    /// `kafka.outcomes_topic` is set: a fetch outcome per page fetched goes there.
    outcomes: bool,
}

fn state_key(host: &str) -> String {
    crate::redis_filter::Keys::render_state(host)
}

impl RenderStage {
    /// Launch the browser for `cfg`, counting into `metrics` when given.
    pub fn new(cfg: &Config, metrics: Option<RenderMetrics>) -> anyhow::Result<RenderStage> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .worker_threads(2)
            .build()?;
        let r = &cfg.render;
        let rc = RenderConfig {
            chromium: r.chromium.clone().into(),
            tabs: r.tabs.max(1),
            page_timeout: r.page_timeout.0,
            policy: super::safety::Policy {
                allow: r.allow.clone(),
            },
            ..RenderConfig::default()
        };
        let renderer = Arc::new(rt.block_on(Renderer::new(rc))?);
        if let Some(m) = &metrics {
            m.chromium_up.set(1);
            // Between batches too: /readyz turns 503 when the browser is gone while idle (it
            // is relaunched on the next page).
            let (weak, up) = (Arc::downgrade(&renderer), m.chromium_up.clone());
            std::thread::Builder::new()
                .name("chromium-probe".into())
                .spawn(move || {
                    while let Some(r) = weak.upgrade() {
                        up.set(r.running() as i64);
                        drop(r);
                        std::thread::sleep(std::time::Duration::from_secs(2));
                    }
                })?;
        }
        let redis = LazyConn::new(cfg.redis.client());
        let seer = Arc::new(Seer::new(
            renderer.clone(),
            r.mode,
            r.check_one_in,
            (r.tabs * 4).max(8),
        ));
        Ok(RenderStage {
            outcomes: cfg.kafka.outcomes_topic.is_some(),
            rt,
            renderer,
            seer,
            clusterer: OnlineClusterer::new(Thresholds::default(), r.max_canonicals),
            sampler: Sampler::new(
                cfg.patterns.url_pattern_dom_sample_count as usize,
                cfg.patterns.url_pattern_dom_threshold,
            ),
            redis,
            max_bytes: cfg.kafka.max_message_bytes,
            metrics,
            launches_seen: 1,
            scope: crate::scope::for_component(&cfg.scope),
            scopes: cfg
                .scopes
                .iter()
                .map(|(ns, spec)| (ns.clone(), crate::scope::for_component(spec)))
                .collect(),
            learners: cfg.patterns.learned_params.then(Default::default),
            probes: r
                .soft_404_probe
                .then(|| super::soft404::Probes::new(r.soft_404_ttl.0)),
        })
    }

    /// Which of the batch's pages are soft 404s ([`super::soft404`]): each scope of its 2xx
    /// pages gets its template (memory, Redis, or a probe rendered now), then its pages are
    /// judged together. Redis unreachable: judged with the templates this worker remembers (a
    /// page missed is only a page not classed).
    fn soft_404s(&mut self, rendered: &[Seen]) -> Vec<bool> {
        use crate::page::soft404;
        let mut out = vec![false; rendered.len()];
        let Some(probes) = &mut self.probes else {
            return out;
        };
        let mut by: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
        for (i, Seen { page: r, .. }) in rendered.iter().enumerate() {
            if r.error.is_empty() && (200..300).contains(&r.status) {
                by.entry(soft404::scope_key(&r.url)).or_default().push(i);
            }
        }
        let mut wanted: Vec<(String, String)> = by
            .iter()
            .map(|(s, idx)| (s.clone(), rendered[idx[0]].page.url.clone()))
            .collect();
        // A section's root (`/manual/`) is judged against the origin's answer too (only the
        // pages judged: 2xx, rendered, in scope).
        for &i in by.values().flatten() {
            if let Some((origin, sample)) = soft404::origin_probe_for(&rendered[i].page.url) {
                if !wanted.iter().any(|(s, _)| *s == origin) {
                    wanted.push((origin, sample));
                }
            }
        }
        let (templates, homes) = match probes.templates(
            &self.rt,
            &self.seer,
            &mut self.redis,
            &wanted,
        ) {
            Ok((t, probed, homes)) => {
                for (probe, rec) in &probed {
                    let answer = super::soft404::answer_label(rec.as_ref());
                    tracing::info!(probe, answer, "soft-404 probe");
                    if let Some(m) = &self.metrics {
                        m.soft_404_probes.with_label_values(&[answer]).inc();
                    }
                }
                (t, homes)
            }
            Err(e) => {
                tracing::warn!(error = %e, "soft-404 templates not read from Redis; pages judged with those this worker remembers");
                probes.remembered(&wanted)
            }
        };
        for (scope, idx) in by {
            let Some(t) = templates.get(&scope) else {
                continue;
            };
            let pages: Vec<soft404::Rendered> = idx
                .iter()
                .map(|&i| soft404::Rendered {
                    url: &rendered[i].page.url,
                    final_url: &rendered[i].page.final_url,
                    status: rendered[i].page.status,
                    html: &rendered[i].page.html,
                })
                .collect();
            let origin = soft404::origin_scope(&scope);
            let site = templates.get(origin).filter(|_| !homes.contains(origin));
            for (&i, s) in idx.iter().zip(probes.judge(&scope, t, site, &pages)) {
                out[i] = s;
                if s {
                    if let Some(m) = &self.metrics {
                        m.soft_404_pages.inc();
                    }
                }
            }
        }
        out
    }

    /// Load a host's checkpoint the first time this worker sees the host.
    fn ensure_host(&mut self, host: &str) -> Result<(), RedisFilterError> {
        if self.clusterer.knows(host) {
            return Ok(());
        }
        let got: Option<String> = self.redis.with(|c| {
            c.query(redis::cmd("GET").arg(state_key(host)))
                .map_err(|e| RedisFilterError::from_redis(e, false))
        })?;
        if let Some(json) = got {
            if let Err(e) = self.clusterer.import(host, &json) {
                tracing::warn!(host, error = %e, "unreadable cluster checkpoint; starting afresh");
            }
        }
        Ok(())
    }
}

impl RenderStage {
    /// 1. The batch's fetch events; one too large or not a fetch event is dead-lettered.
    fn decode(
        &self,
        topic: &str,
        batch: &Batch,
        out: &mut Staged<RenderPending>,
    ) -> Vec<(usize, FetchEvent)> {
        let mut events = Vec::new();
        for i in 0..batch.len() {
            let v = batch.value(i);
            let parsed = if v.len() > self.max_bytes {
                Err(DecodeError {
                    code: DeadLetterCode::TooLarge,
                    detail: format!("{} bytes", v.len()),
                })
            } else {
                serde_json::from_slice::<FetchEvent>(v).map_err(|e| DecodeError {
                    code: DeadLetterCode::SchemaInvalid,
                    detail: format!("not a fetch event: {e}"),
                })
            };
            match parsed {
                Ok(ev) => events.push((i, ev)),
                Err(e) => out.dead_letter(&e, topic, batch, i),
            }
        }
        events
    }

    /// 3. Every page seen, in order: out-of-scope events become records with their error; the
    ///    others are seen by `render.mode` (rendered, or fetched over HTTP and rendered where it
    ///    could matter).
    fn see(&mut self, events: &[(usize, FetchEvent)]) -> Vec<Seen> {
        let mut seen: Vec<Option<Seen>> = vec![None; events.len()];
        let mut urls: Vec<String> = Vec::new();
        let mut at: Vec<usize> = Vec::new();
        for (k, (_, ev)) in events.iter().enumerate() {
            let out_of_scope = self
                .scopes
                .get(&ev.namespace)
                .unwrap_or(&self.scope)
                .as_ref()
                .and_then(|s| s.check(&ev.url, None).err());
            match out_of_scope {
                Some(reason) => {
                    seen[k] = Some(Seen {
                        page: Rendered {
                            url: ev.url.clone(),
                            final_url: ev.url.clone(),
                            error: format!("out of scope: {reason}"),
                            ..Rendered::default()
                        },
                        why: None,
                        took: std::time::Duration::ZERO,
                    })
                }
                None => {
                    urls.push(ev.url.clone());
                    at.push(k);
                }
            }
        }
        let seer = self.seer.clone();
        let got = self
            .rt
            .block_on(async move { seer.see_all(&urls, &|| {}).await });
        for (k, s) in at.into_iter().zip(got) {
            seen[k] = Some(s);
        }
        seen.into_iter()
            .map(|s| s.expect("every event seen"))
            .collect()
    }

    /// 5a. A page's series: how it was seen, its outcome, its assignment.
    fn count_page(
        &self,
        r: &Rendered,
        why: Option<super::auto::Why>,
        took: std::time::Duration,
        a: &crate::page::online::Online,
    ) {
        let Some(m) = &self.metrics else { return };
        m.page_seconds.observe(took.as_secs_f64());
        match why {
            Some(w) if r.rendered => m
                .pages_seen
                .with_label_values(&["rendered", w.label()])
                .inc(),
            _ => m.pages_seen.with_label_values(&["http", "none"]).inc(),
        }
        match r.failure_kind() {
            Some(kind) => m.failures.with_label_values(&[kind]).inc(),
            None => m.pages.inc(),
        }
        let outcome = if a.rule.is_some() {
            "rule"
        } else if a.is_canonical {
            "canonical"
        } else {
            "duplicate"
        };
        m.assignments.with_label_values(&[outcome]).inc();
        if a.created {
            m.clusters_created.inc();
        }
        m.blocked_requests.inc_by(r.blocked.len() as u64);
        let refused = self
            .renderer
            .egress()
            .stats()
            .refused
            .load(std::sync::atomic::Ordering::Relaxed);
        m.egress_refused
            .inc_by(refused.saturating_sub(m.egress_refused.get()));
    }

    /// 5b. The URL-pattern sampler, until the pattern is decided (its verdict is written once,
    ///     with the batch).
    fn sample_pattern(
        &mut self,
        ev: &FetchEvent,
        r: &Rendered,
        p: &crate::page::Page,
        out: &mut Staged<RenderPending>,
    ) {
        if !self.sampler.wants(&ev.pattern) {
            return;
        }
        if !r.error.is_empty() {
            self.sampler.failed(&ev.pattern);
        } else if (200..300).contains(&r.status) {
            if let Verdict::Similar(sim) | Verdict::Different(sim) =
                self.sampler.sample(&ev.pattern, p.features.clone())
            {
                let samples = self.sampler.sample_count as u32;
                out.pending
                    .verdicts
                    .push((ev.namespace.clone(), ev.pattern.clone(), samples, sim));
            }
        }
    }

    /// 5c. Learned parameters: only pages that are themselves (2xx, not a rule page: an error,
    ///     login or WAF page looks the same whatever the URL), as requested, of a scope whose
    ///     answer to unknown URLs is known (with probes on: a soft 404 not yet classed would
    ///     look the same whatever the parameter).
    fn learn_params(
        &mut self,
        ev: &FetchEvent,
        r: &Rendered,
        p: &crate::page::Page,
        a: &crate::page::online::Online,
        out: &mut Staged<RenderPending>,
    ) {
        let scope_known = self.probes.as_ref().is_none_or(|pr| {
            use crate::page::soft404;
            pr.knows(&soft404::scope_key(&ev.url))
                && (!soft404::is_section_root(&ev.url) || pr.knows(soft404::origin_scope(&ev.url)))
        });
        let Some(learners) = &mut self.learners else {
            return;
        };
        if r.error.is_empty()
            && (200..300).contains(&r.status)
            && a.rule.is_none()
            && p.final_url == ev.url
            && scope_known
        {
            let l = learners.entry(ev.namespace.clone()).or_default();
            for c in l.observe(&ev.url, &p.features) {
                out.pending.learned.push((ev.namespace.clone(), c));
            }
        }
    }

    /// The browser's series, once per batch: restarts and whether it is up.
    fn count_browser(&mut self) {
        let Some(m) = &self.metrics else { return };
        let launches = self
            .renderer
            .launches
            .load(std::sync::atomic::Ordering::Relaxed);
        m.chromium_restarts
            .inc_by(launches.saturating_sub(self.launches_seen));
        self.launches_seen = launches;
        m.chromium_up.set(self.renderer.running() as i64);
    }
}

/// 5d. A page's assignment event (`schemas/cluster-assignment.v2.json`).
fn assignment_event(
    ev: &FetchEvent,
    r: Rendered,
    p: &crate::page::Page,
    a: crate::page::online::Online,
    now: &str,
) -> AssignmentEvent {
    let f = &p.features;
    AssignmentEvent {
        url: ev.url.clone(),
        final_url: p.final_url.clone(),
        status: p.status,
        cluster_id: a.cluster_id,
        canonical_url: a.canonical_url,
        is_canonical: a.is_canonical,
        rule: a.rule.map(|r| r.code().to_string()),
        similarity: a.sim,
        features: FeatureSummary {
            title: f.title.clone(),
            text_chars: f.text_chars,
            html_bytes: f.html_bytes,
            simhash: format!("{:016x}", f.simhash),
            phash: f.phash.map(|h| format!("{h:016x}")),
            nodes: f.nodes,
            timings: f.timings,
        },
        namespace: ev.namespace.clone(),
        error: r.error,
        rendered_at: now.to_string(),
        rendered: r.rendered,
    }
}

impl Stage for RenderStage {
    type Error = RedisFilterError;
    type Pending = RenderPending;

    /// A batch of fetch events: 1. decoded (bad ones dead-lettered); 2. each new host's
    /// clusters loaded; 3. every page seen (`render.mode`), out-of-scope ones recorded as such;
    /// 4. soft 404s classed; 5. per page: assigned to a cluster, counted, sampled for its URL
    /// pattern, shown to the parameter learner, and staged as an assignment event.
    fn stage(
        &mut self,
        topic: &str,
        batch: &Batch,
        out: &mut Staged<RenderPending>,
    ) -> Result<(), RedisFilterError> {
        out.clear();
        out.consumed = batch.len() as u64;
        let events = self.decode(topic, batch, out);
        // One checkpoint read per new host (not per event: a host is known only once assigned).
        let hosts: BTreeSet<String> = events
            .iter()
            .map(|(_, ev)| origin(&ev.url).into_owned())
            .collect();
        for host in &hosts {
            self.ensure_host(host)?;
        }
        let seen = self.see(&events);
        let soft = self.soft_404s(&seen);
        let now = now_rfc3339();
        for (((idx, ev), seen), soft) in events.iter().zip(seen).zip(soft) {
            let Seen { page: r, why, took } = seen;
            let mut p = r.to_page();
            p.features.soft_404 = soft;
            let a = if r.error.is_empty() {
                self.clusterer.assign(&p)
            } else {
                crate::page::online::Online::alone(&p)
            };
            self.count_page(&r, why, took, &a);
            out.pending
                .touched
                .insert(origin(&p.final_url).into_owned());
            self.sample_pattern(ev, &r, &p, out);
            self.learn_params(ev, &r, &p, &a, out);
            if self.outcomes {
                // What fetching it returned, for the gate's fetch outcomes (issue 46).
                let o = crate::events::FetchOutcome {
                    url: ev.url.clone(),
                    // The status received, even for a page it then could not use (too large,
                    // unparsable); 0 only when nothing answered.
                    status: r.status,
                    final_url: Some(r.final_url.clone()).filter(|f| !f.is_empty() && *f != ev.url),
                    soft_404: Some(soft),
                    source: ev.source.clone(),
                    context: ev.context,
                    namespace: Some(ev.namespace.clone()),
                    fetched_at: Some(now.clone()),
                };
                out.json_from(*idx, Dest::Outcome, Some(ev.host.as_bytes()), &o);
            }
            let event = assignment_event(ev, r, &p, a, &now);
            out.emitted += 1;
            out.json_from(*idx, Dest::Output, Some(ev.host.as_bytes()), &event);
        }
        self.count_browser();
        Ok(())
    }

    /// Write the batch's verdicts and cluster checkpoints; on an error what was written is
    /// taken off the batch and the rest written on the next call.
    fn finish(&mut self, out: &mut Staged<RenderPending>) -> Result<(), RedisFilterError> {
        let p = &mut out.pending;
        while let Some((ns, pattern, samples, sim)) = p.verdicts.first().cloned() {
            self.redis
                .with(|c| crate::pattern_verdicts::write(c, &ns, &pattern, samples, sim))?;
            p.verdicts.remove(0);
            if let Some(m) = &self.metrics {
                let v = if sim >= self.sampler.threshold {
                    "similar"
                } else {
                    "different"
                };
                m.verdicts.with_label_values(&[v]).inc();
            }
        }
        while let Some((ns, change)) = p.learned.first().cloned() {
            let outcome = match &change {
                Change::Learned(l) => {
                    match self.redis.with(|c| crate::params::publish(c, &ns, l))? {
                        crate::params::Published::Written => {
                            tracing::info!(
                                namespace = ns,
                                host = l.host,
                                param = l.param,
                                values = l.values,
                                paths = l.paths,
                                "learned parameter rule published"
                            );
                            "learned"
                        }
                        crate::params::Published::AlreadyInForce => "learned",
                        crate::params::Published::Revoked => "refused",
                    }
                }
                Change::Refuted { host, param, a, b } => {
                    // Recorded whether or not a rule is in force: no worker publishes it later.
                    let why = format!("counter-example: {a} | {b}");
                    let had = self
                        .redis
                        .with(|c| crate::params::revoke(c, &ns, host, param, &why))?;
                    if had {
                        tracing::warn!(
                            namespace = ns,
                            host,
                            param,
                            a,
                            b,
                            "learned parameter rule revoked: a counter-example"
                        );
                        "revoked"
                    } else {
                        "refuted"
                    }
                }
            };
            p.learned.remove(0);
            if let Some(m) = &self.metrics {
                m.param_rules.with_label_values(&[outcome]).inc();
            }
        }
        while let Some(host) = p.touched.first().cloned() {
            if let Some(json) = self.clusterer.export(&host) {
                let cmd = redis::cmd("SET").arg(state_key(&host)).arg(json).clone();
                self.redis.with(|c| {
                    c.query::<()>(&cmd)
                        .map_err(|e| RedisFilterError::from_redis(e, false))
                })?;
            }
            p.touched.remove(&host);
        }
        Ok(())
    }
}
