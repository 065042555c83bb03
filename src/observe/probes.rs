//! The Redis probe every component runs (`redis_up`, the PING round trip), and the filter's
//! series (gate and serve), whose per-namespace gauges the probe refreshes.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus::{GaugeVec, Histogram, IntCounter, IntCounterVec, IntGauge, IntGaugeVec};

use super::{names, Metrics, SECONDS};
use crate::config::Config;
use crate::redis_filter::{Expect, LazyConn, NamespaceStats, RedisFilter, RedisFilterError};

/// `redis_up` and the PING round trip.
#[derive(Clone)]
pub struct ProbeMetrics {
    /// 1 while the last Redis probe answered.
    pub redis_up: IntGauge,
    /// Seconds per probe round trip.
    pub redis_ping_seconds: Histogram,
    /// Why the last probe failed (Redis' address and the error's one sentence), while it does.
    last_error: Arc<Mutex<Option<String>>>,
}

impl ProbeMetrics {
    /// Register the probe's series in `m`.
    pub fn new(m: &Metrics) -> ProbeMetrics {
        ProbeMetrics {
            redis_ping_seconds: m.histogram(names::REDIS_PING_SECONDS, SECONDS),
            redis_up: m.gauge(names::REDIS_UP),
            last_error: Arc::default(),
        }
    }

    /// Why Redis makes the component unready, if it does: not ready until the first probe
    /// answers, so a process started against a Redis it cannot use never reports ready.
    pub fn not_ready(&self) -> Option<String> {
        if self.redis_up.get() != 0 {
            return None;
        }
        let why = self.last_error.lock().expect("probe error lock").clone();
        Some(why.unwrap_or_else(|| "Redis has not answered yet".to_string()))
    }

    /// Record one probe's outcome; say so in the log when it changes (the first probe always
    /// does: a process started against a Redis it cannot reach says so at once, in one
    /// sentence naming the fix where there is one, and again when Redis answers).
    fn record(&self, at: &str, ok: Result<(), String>, every: Duration) {
        let was = self.redis_up.get();
        let first = self.last_error.lock().expect("probe error lock").is_none() && was == 0;
        match ok {
            Ok(()) => {
                self.redis_up.set(1);
                *self.last_error.lock().expect("probe error lock") = None;
                if was == 0 {
                    tracing::info!(redis = %at, "Redis answers: ready");
                }
            }
            Err(e) => {
                self.redis_up.set(0);
                let why = format!("Redis at {at} does not answer: {e}");
                let mut last = self.last_error.lock().expect("probe error lock");
                if was == 1 || first || last.as_deref() != Some(why.as_str()) {
                    tracing::error!(
                        redis = %at,
                        error = %e,
                        "Redis does not answer: not ready (/readyz 503) and requests that need \
                         it fail until it does; retrying every {every:?}"
                    );
                }
                *last = Some(why);
            }
        }
    }
}

/// The filter's series: verdicts, time in Redis, and per-namespace Bloom figures.
#[derive(Clone)]
pub struct FilterMetrics {
    /// Candidates rejected, by reason code (including `pattern_similar`).
    pub rejected: IntCounterVec,
    /// Candidates whose canonical form was already seen.
    pub duplicates: IntCounter,
    /// robots.txt fetches, by outcome (the gate with `[robots]` on).
    pub robots_fetches: IntCounterVec,
    /// URLs held on the robots wait topic, by why.
    pub robots_held: IntCounterVec,
    /// Hosts whose per-host budget a batch spent.
    pub budget_hosts_reached: IntCounter,
    /// New URLs published without their budget checked (its exchange failed).
    pub budget_unchecked: IntCounter,
    /// Candidates the fetch outcomes would hold, published as probes.
    pub outcome_probes: IntCounter,
    /// Held candidates put back on the input topic.
    pub outcome_put_back: IntCounter,
    /// Fetch outcomes read, by kind.
    pub outcomes: IntCounterVec,
    /// Seconds spent in Redis filter calls (check + insert) per batch or request.
    pub filter_seconds: Histogram,
    /// Fraction of the filter's bits set (fingerprint-store load in exact mode).
    pub fill: GaugeVec,
    /// False-positive rate at the current fill.
    pub estimated_fp: GaugeVec,
    /// The false-positive rate the namespace was sized for.
    pub target_fp: GaugeVec,
    /// New URLs counted into the namespace.
    pub items: IntGaugeVec,
    /// The item count the namespace was sized for.
    pub capacity: IntGaugeVec,
    /// Redis memory of the namespace's keys.
    pub memory_bytes: IntGaugeVec,
    /// Namespaces this process attached (the gauges cover these).
    pub namespaces: Arc<Mutex<BTreeSet<String>>>,
}

impl FilterMetrics {
    /// Register the filter's series in `m`.
    pub fn new(m: &Metrics) -> FilterMetrics {
        let ns = "filter_namespace";
        let outcomes = m.counter_vec(names::OUTCOMES, "kind");
        // Exported at 0 from the start (a dashboard's increase() has data before the first).
        for kind in ["hit", "miss", "none"] {
            outcomes.with_label_values(&[kind]);
        }
        FilterMetrics {
            rejected: m.counter_vec(names::REJECTED, "reason"),
            duplicates: m.counter(names::DUPLICATES),
            robots_fetches: m.counter_vec(names::ROBOTS_FETCHES, "outcome"),
            robots_held: m.counter_vec(names::ROBOTS_HELD, "why"),
            budget_hosts_reached: m.counter(names::BUDGET_HOSTS_REACHED),
            budget_unchecked: m.counter(names::BUDGET_UNCHECKED),
            outcome_probes: m.counter(names::OUTCOME_PROBES),
            outcome_put_back: m.counter(names::OUTCOME_PUT_BACK),
            outcomes,
            filter_seconds: m.histogram(names::FILTER_SECONDS, SECONDS),
            fill: m.float_gauge_vec(names::FILTER_FILL, ns),
            estimated_fp: m.float_gauge_vec(names::FILTER_ESTIMATED_FP, ns),
            target_fp: m.float_gauge_vec(names::FILTER_TARGET_FP, ns),
            items: m.gauge_vec(names::FILTER_ITEMS, ns),
            capacity: m.gauge_vec(names::FILTER_CAPACITY, ns),
            memory_bytes: m.gauge_vec(names::FILTER_MEMORY, ns),
            namespaces: Arc::default(),
        }
    }

    /// Series for tests and tools that do not export them.
    pub fn unregistered() -> FilterMetrics {
        FilterMetrics::new(&Metrics::new("gate"))
    }

    /// Remember that this process attached namespace `ns` (its gauges get refreshed).
    pub fn attached(&self, ns: &str) {
        self.namespaces
            .lock()
            .expect("namespaces lock")
            .insert(ns.to_string());
    }

    /// Set the gauges of one namespace from its statistics.
    pub fn set(&self, s: &NamespaceStats) {
        let ns = [s.namespace.as_str()];
        // The newest generation is the one filling up; older ones only add to the FP rate.
        let fill = s.generations.last().map_or(0.0, |g| g.fill);
        self.fill.with_label_values(&ns).set(fill);
        self.estimated_fp.with_label_values(&ns).set(s.estimated_fp);
        self.target_fp.with_label_values(&ns).set(s.spec.fp_rate);
        self.items.with_label_values(&ns).set(s.items as i64);
        self.capacity
            .with_label_values(&ns)
            .set(s.spec.capacity as i64);
        self.memory_bytes
            .with_label_values(&ns)
            .set(s.memory_bytes as i64);
    }
}

/// Probe Redis for the life of the process, from a thread of its own: a `PING` every
/// `metrics.probe_interval`, and (with `filter`) the statistics of every namespace this process
/// attached every `metrics.filter_stats_interval`.
pub fn spawn(cfg: &Config, probe: ProbeMetrics, filter: Option<FilterMetrics>) {
    let mut redis = cfg.redis.client();
    redis.local_tier_slots = 0; // statistics only: no lookups to cache
    let every = cfg.metrics.probe_interval.0.max(Duration::from_millis(100));
    let stats_every = cfg.metrics.filter_stats_interval.0;
    let at = redis.address();
    std::thread::Builder::new()
        .name("probes".into())
        .spawn(move || {
            let mut conn = LazyConn::new(redis.clone());
            let mut filters: std::collections::HashMap<String, RedisFilter> = Default::default();
            let mut last_stats: Option<Instant> = None;
            loop {
                let t = Instant::now();
                let ok = conn.with(|c| {
                    c.query::<String>(&redis::cmd("PING"))
                        .map_err(|e| RedisFilterError::from_redis(e, false))
                });
                probe.redis_ping_seconds.observe(t.elapsed().as_secs_f64());
                let outcome = ok.as_ref().map(|_| ()).map_err(|e| e.to_string());
                probe.record(&at, outcome, every);
                let due = last_stats.is_none_or(|l| l.elapsed() >= stats_every);
                if let Some(fm) = filter.as_ref().filter(|_| ok.is_ok()) {
                    if !stats_every.is_zero() && due {
                        last_stats = Some(Instant::now());
                        let names: Vec<String> = fm
                            .namespaces
                            .lock()
                            .expect("namespaces lock")
                            .iter()
                            .cloned()
                            .collect();
                        for ns in names {
                            if !filters.contains_key(&ns) {
                                match RedisFilter::attach(redis.clone(), &ns, &Expect::default()) {
                                    Ok(f) => {
                                        filters.insert(ns.clone(), f);
                                    }
                                    Err(_) => continue,
                                }
                            }
                            let f = filters.get_mut(&ns).expect("attached above");
                            match f.stats() {
                                Ok(s) => fm.set(&s),
                                Err(_) => {
                                    filters.remove(&ns);
                                }
                            }
                        }
                    }
                }
                std::thread::sleep(every);
            }
        })
        .expect("spawn the probe thread");
}
