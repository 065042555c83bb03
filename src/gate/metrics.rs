//! The Kafka stages' Prometheus metrics, and a minimal `/metrics`, `/healthz`, `/readyz` listener.
//!
//! Names follow Prometheus conventions: `crawlsieve_<stage>_<noun>_<unit>` (stage `gate` or
//! `render`), counters end in `_total`, durations are in seconds, ratios are 0–1, and labels take
//! values from small fixed sets only: reason codes, dead-letter codes, fixed causes and kinds, the
//! input topic's partition numbers, and filter namespaces (bounded by `redis.max_namespaces`;
//! the label is `filter_namespace`, since Kubernetes service discovery adds its own `namespace`)
//! — never URLs or hosts.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus::{
    Encoder, GaugeVec, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry, TextEncoder,
};

/// Every metric of the stage, registered in [`GateMetrics::registry`].
#[derive(Clone)]
pub struct GateMetrics {
    /// The registry to expose.
    pub registry: Registry,
    /// Messages taken from the input topic and finished (counted once per finished batch).
    pub consumed: IntCounter,
    /// Candidates rejected, by reason code (including `pattern_similar`).
    pub rejected: IntCounterVec,
    /// Candidates whose canonical form was already seen.
    pub duplicates: IntCounter,
    /// Fetch events delivered.
    pub emitted: IntCounter,
    /// Messages sent to the dead-letter topic, by error code.
    pub dead_lettered: IntCounterVec,
    /// Seconds per batch, from the first poll to the commit.
    pub batch_seconds: Histogram,
    /// Seconds spent in Redis filter calls (check + insert) per batch.
    pub filter_seconds: Histogram,
    /// Seconds per Redis round trip of the readiness probe (`PING`).
    pub redis_ping_seconds: Histogram,
    /// 1 while the last Redis probe answered.
    pub redis_up: IntGauge,
    /// 1 while the consumer reaches at least one Kafka broker (librdkafka statistics).
    pub kafka_up: IntGauge,
    /// Messages behind the high watermark, per assigned input partition (librdkafka statistics).
    pub lag: IntGaugeVec,
    /// Bloom filter figures per namespace, refreshed every `metrics.filter_stats_interval`.
    pub filter: FilterGauges,
    /// Namespaces this process has attached (the filter gauges cover these).
    pub namespaces: Arc<Mutex<BTreeSet<String>>>,
    /// Render-stage series (registered by `crawlsieve render` only).
    pub render: Option<RenderMetrics>,
    /// Messages received and not yet finished.
    pub in_flight: IntGauge,
    /// Back-off waits, by cause (`redis`, `kafka`).
    pub retries: IntCounterVec,
    /// 1 while consumption is paused by back-pressure.
    pub paused: IntGauge,
    /// Partitions currently assigned to this process.
    pub assigned_partitions: IntGauge,
    /// Rebalance events, by kind (`assign`, `revoke`).
    pub rebalances: IntCounterVec,
    /// Offset commits that failed (the next commit covers them).
    pub commit_failures: IntCounter,
    /// Records the output cluster refused for good and that could not become dead letters.
    pub undeliverable: IntCounter,
}

/// Per-namespace Bloom filter gauges (`crawlsieve_gate_filter_*{filter_namespace}`).
#[derive(Clone)]
pub struct FilterGauges {
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
}

/// The render stage's own series (`crawlsieve_render_*`).
#[derive(Clone)]
pub struct RenderMetrics {
    /// Pages rendered without an error.
    pub pages: IntCounter,
    /// Pages that failed, by kind (see [`crate::render::Rendered::failure_kind`]).
    pub failures: IntCounterVec,
    /// Seconds per page, successful or not.
    pub page_seconds: Histogram,
    /// Assignments by outcome: `canonical` (a new cluster or a page alone), `duplicate`, `rule`.
    pub assignments: IntCounterVec,
    /// Clusters created (a page became the canonical of a new cluster).
    pub clusters_created: IntCounter,
    /// Subresource and redirect requests the safety policy blocked.
    pub blocked_requests: IntCounter,
    /// Connections the egress proxy refused (any frame, worker, WebSocket, popup).
    pub egress_refused: IntCounter,
    /// Chromium relaunches after it died or stopped opening tabs.
    pub chromium_restarts: IntCounter,
    /// 1 while the browser runs.
    pub chromium_up: IntGauge,
    /// URL-pattern verdicts written back to the gate, by verdict (`similar`, `different`).
    pub verdicts: IntCounterVec,
}

impl GateMetrics {
    /// Fresh metrics for the gate, in their own registry.
    pub fn new() -> GateMetrics {
        GateMetrics::for_stage("gate")
    }

    /// Fresh metrics named `crawlsieve_{stage}_*`; `render` adds [`RenderMetrics`].
    pub fn for_stage(stage: &str) -> GateMetrics {
        let registry = Registry::new();
        let name = |n: &str| n.replacen("crawlsieve_gate_", &format!("crawlsieve_{stage}_"), 1);
        let reg = |m: Box<dyn prometheus::core::Collector>| {
            registry.register(m).expect("unique metric");
        };
        let c = |n: &str, help: &str| {
            let m = IntCounter::new(name(n), help).expect("valid metric");
            reg(Box::new(m.clone()));
            m
        };
        let cv = |n: &str, help: &str, label: &str| {
            let m = IntCounterVec::new(Opts::new(name(n), help), &[label]).expect("valid metric");
            reg(Box::new(m.clone()));
            m
        };
        let g = |n: &str, help: &str| {
            let m = IntGauge::new(name(n), help).expect("valid metric");
            reg(Box::new(m.clone()));
            m
        };
        let gv = |n: &str, help: &str, label: &str| {
            let m = GaugeVec::new(Opts::new(name(n), help), &[label]).expect("valid metric");
            reg(Box::new(m.clone()));
            m
        };
        let igv = |n: &str, help: &str, label: &str| {
            let m = IntGaugeVec::new(Opts::new(name(n), help), &[label]).expect("valid metric");
            reg(Box::new(m.clone()));
            m
        };
        let h = |n: &str, help: &str, buckets: Vec<f64>| {
            let opts = HistogramOpts::new(name(n), help).buckets(buckets);
            let m = Histogram::with_opts(opts).expect("valid metric");
            reg(Box::new(m.clone()));
            m
        };
        let secs = vec![
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            30.0,
        ];
        GateMetrics {
            consumed: c(
                "crawlsieve_gate_messages_consumed_total",
                "Input messages finished (emitted, rejected, duplicate or dead-lettered).",
            ),
            rejected: cv(
                "crawlsieve_gate_urls_rejected_total",
                "URL candidates rejected, by reason code.",
                "reason",
            ),
            duplicates: c(
                "crawlsieve_gate_urls_duplicate_total",
                "URL candidates whose canonical form was already seen.",
            ),
            emitted: c(
                "crawlsieve_gate_urls_emitted_total",
                "Fetch events delivered to the fetch topic.",
            ),
            dead_lettered: cv(
                "crawlsieve_gate_messages_dead_lettered_total",
                "Malformed input messages sent to the dead-letter topic, by error code.",
                "error",
            ),
            batch_seconds: h(
                "crawlsieve_gate_batch_duration_seconds",
                "Time per batch from its first message to its commit.",
                secs.clone(),
            ),
            filter_seconds: h(
                "crawlsieve_gate_filter_duration_seconds",
                "Time per batch spent in Redis filter calls (check and insert).",
                secs.clone(),
            ),
            redis_ping_seconds: h(
                "crawlsieve_gate_redis_ping_duration_seconds",
                "Round trip of the periodic Redis PING (connection included when reconnecting).",
                secs.clone(),
            ),
            redis_up: g(
                "crawlsieve_gate_redis_up",
                "1 while the last Redis probe answered.",
            ),
            kafka_up: {
                let m = g(
                    "crawlsieve_gate_kafka_up",
                    "1 while the consumer reaches at least one Kafka broker (from librdkafka statistics, every 5 s).",
                );
                m.set(1);
                m
            },
            lag: igv(
                "crawlsieve_gate_consumer_lag_messages",
                "Messages between the consumer position and the high watermark, per assigned input partition.",
                "partition",
            ),
            filter: FilterGauges {
                fill: gv(
                    "crawlsieve_gate_filter_fill_ratio",
                    "Fraction of the namespace's Bloom bits set (fingerprint-store load in exact mode).",
                    "filter_namespace",
                ),
                estimated_fp: gv(
                    "crawlsieve_gate_filter_estimated_false_positive_ratio",
                    "False-positive rate at the namespace's current fill (all live generations).",
                    "filter_namespace",
                ),
                target_fp: gv(
                    "crawlsieve_gate_filter_target_false_positive_ratio",
                    "The false-positive rate the namespace was sized for.",
                    "filter_namespace",
                ),
                items: igv(
                    "crawlsieve_gate_filter_items",
                    "New URLs counted into the namespace.",
                    "filter_namespace",
                ),
                capacity: igv(
                    "crawlsieve_gate_filter_capacity_items",
                    "The number of URLs the namespace was sized for.",
                    "filter_namespace",
                ),
                memory_bytes: igv(
                    "crawlsieve_gate_filter_memory_bytes",
                    "Redis memory used by the namespace's keys.",
                    "filter_namespace",
                ),
            },
            namespaces: Arc::default(),
            render: (stage == "render").then(|| RenderMetrics {
                pages: c(
                    "crawlsieve_render_pages_rendered_total",
                    "Pages rendered without an error.",
                ),
                failures: cv(
                    "crawlsieve_render_failures_total",
                    "Pages that failed, by kind (refused, timeout, navigation, browser, other).",
                    "kind",
                ),
                page_seconds: h(
                    "crawlsieve_render_page_duration_seconds",
                    "Time per page from its start to its features, successful or not.",
                    vec![0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0],
                ),
                assignments: cv(
                    "crawlsieve_render_assignments_total",
                    "Cluster assignments published, by outcome (canonical, duplicate, rule).",
                    "outcome",
                ),
                clusters_created: c(
                    "crawlsieve_render_clusters_created_total",
                    "Clusters created: a page became the canonical of a new near-duplicate cluster.",
                ),
                blocked_requests: c(
                    "crawlsieve_render_blocked_requests_total",
                    "Subresource and redirect requests refused by the safety policy.",
                ),
                egress_refused: c(
                    "crawlsieve_render_egress_refused_total",
                    "Connections of the browser the egress proxy refused (any frame, worker, WebSocket, popup).",
                ),
                chromium_restarts: c(
                    "crawlsieve_render_chromium_restarts_total",
                    "Chromium relaunches after the browser died or stopped opening tabs.",
                ),
                chromium_up: g(
                    "crawlsieve_render_chromium_up",
                    "1 while the browser runs.",
                ),
                verdicts: cv(
                    "crawlsieve_render_pattern_verdicts_total",
                    "URL-pattern verdicts written back to the gate, by verdict.",
                    "verdict",
                ),
            }),
            in_flight: g(
                "crawlsieve_gate_messages_in_flight",
                "Messages received and not yet finished.",
            ),
            retries: cv(
                "crawlsieve_gate_backoff_retries_total",
                "Back-off waits while Redis or Kafka was unavailable, by cause.",
                "cause",
            ),
            paused: g(
                "crawlsieve_gate_paused",
                "1 while consumption is paused by back-pressure.",
            ),
            assigned_partitions: g(
                "crawlsieve_gate_assigned_partitions",
                "Input partitions assigned to this process.",
            ),
            rebalances: cv(
                "crawlsieve_gate_rebalances_total",
                "Consumer-group rebalance events, by kind.",
                "kind",
            ),
            commit_failures: c(
                "crawlsieve_gate_commit_failures_total",
                "Offset commits that failed (a later commit covers them).",
            ),
            undeliverable: c(
                "crawlsieve_gate_records_undeliverable_total",
                "Records refused for good by the output cluster that could not be dead-lettered either (dropped).",
            ),
            registry,
        }
    }

    /// Why the stage is not ready (`/readyz`), or `None`: ready means partitions are assigned,
    /// consumption is not paused by an unreachable Redis or Kafka, the last Redis probe
    /// answered, a Kafka broker is reachable (a consumer keeps its partitions for a while after
    /// the cluster went away) and, for render, the browser runs.
    pub fn not_ready(&self) -> Option<&'static str> {
        if self.assigned_partitions.get() == 0 {
            Some("no partitions assigned")
        } else if self.paused.get() != 0 {
            Some("paused: Redis or the output cluster is unavailable")
        } else if self.redis_up.get() == 0 {
            Some("Redis does not answer")
        } else if self.kafka_up.get() == 0 {
            Some("no Kafka broker is reachable")
        } else if self
            .render
            .as_ref()
            .is_some_and(|r| r.chromium_up.get() == 0)
        {
            Some("Chromium is not running")
        } else {
            None
        }
    }

    /// Remember that this process attached namespace `ns` (its filter gauges get refreshed).
    pub fn attached(&self, ns: &str) {
        self.namespaces
            .lock()
            .expect("namespaces lock")
            .insert(ns.to_string());
    }

    /// Set the filter gauges of one namespace from its statistics.
    pub fn set_filter(&self, s: &crate::redis_filter::NamespaceStats) {
        let ns = [s.namespace.as_str()];
        let f = &self.filter;
        // The newest generation is the one filling up; older ones only add to the FP rate.
        let fill = s.generations.last().map_or(0.0, |g| g.fill);
        f.fill.with_label_values(&ns).set(fill);
        f.estimated_fp.with_label_values(&ns).set(s.estimated_fp);
        f.target_fp.with_label_values(&ns).set(s.spec.fp_rate);
        f.items.with_label_values(&ns).set(s.items as i64);
        f.capacity
            .with_label_values(&ns)
            .set(s.spec.capacity as i64);
        f.memory_bytes
            .with_label_values(&ns)
            .set(s.memory_bytes as i64);
    }

    /// The metrics in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding cannot fail");
        String::from_utf8(buf).expect("the text format is UTF-8")
    }
}

impl Default for GateMetrics {
    fn default() -> Self {
        GateMetrics::new()
    }
}

/// Serve `GET /metrics`, `/healthz` (the process answers) and `/readyz` (see
/// [`GateMetrics::not_ready`]) on `listener` in a background thread.
pub fn serve(listener: TcpListener, metrics: Arc<GateMetrics>) {
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = answer(stream, &metrics);
            }
        })
        .expect("spawn the metrics thread");
}

fn answer(stream: TcpStream, metrics: &GateMetrics) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    // Drain the headers (bounded: a client may not make the thread read forever).
    let mut header = String::new();
    for _ in 0..100 {
        header.clear();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    let path = line.split_whitespace().nth(1).unwrap_or("");
    let (status, ctype, body) = match path {
        "/metrics" => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            metrics.render(),
        ),
        "/healthz" => ("200 OK", "text/plain", "ok\n".to_string()),
        "/readyz" => match metrics.not_ready() {
            None => ("200 OK", "text/plain", "ready\n".to_string()),
            Some(why) => ("503 Service Unavailable", "text/plain", format!("{why}\n")),
        },
        _ => ("404 Not Found", "text/plain", "not found\n".to_string()),
    };
    let mut w = stream;
    write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Background probes for the life of the process: a Redis `PING` every
/// `metrics.probe_interval` (`redis_up`, `redis_ping_seconds`), and the filter statistics of
/// every namespace this process attached every `metrics.filter_stats_interval`.
pub fn spawn_probes(cfg: &crate::gate::config::GateConfig, metrics: GateMetrics) {
    use crate::redis_filter::{Conn, Expect, RedisFilter};
    let mut redis = cfg.redis_config();
    redis.local_tier_slots = 0; // statistics only: no lookups to cache

    let every = |s: &str| {
        s.parse::<crate::config::Dur>()
            .map(|d| d.0)
            .unwrap_or_default()
    };
    let probe = every(&cfg.metrics.probe_interval).max(Duration::from_millis(100));
    let stats_every = every(&cfg.metrics.filter_stats_interval);
    std::thread::Builder::new()
        .name("probes".into())
        .spawn(move || {
            let mut conn: Option<Conn> = None;
            let mut filters: std::collections::HashMap<String, RedisFilter> = Default::default();
            let mut last_stats: Option<std::time::Instant> = None;
            loop {
                let t = std::time::Instant::now();
                let ok = conn
                    .take()
                    .map_or_else(|| Conn::connect(&redis), Ok)
                    .and_then(|mut c| {
                        c.query::<String>(&redis::cmd("PING"))?;
                        Ok(c)
                    });
                metrics
                    .redis_ping_seconds
                    .observe(t.elapsed().as_secs_f64());
                metrics.redis_up.set(ok.is_ok() as i64);
                conn = ok.ok();
                let due = last_stats.map_or(true, |l| l.elapsed() >= stats_every);
                if conn.is_some() && !stats_every.is_zero() && due {
                    last_stats = Some(std::time::Instant::now());
                    let names: Vec<String> = metrics
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
                            Ok(s) => metrics.set_filter(&s),
                            Err(_) => {
                                filters.remove(&ns);
                            }
                        }
                    }
                }
                std::thread::sleep(probe);
            }
        })
        .expect("spawn the probe thread");
}
