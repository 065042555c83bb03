//! The gate's Prometheus metrics, and a minimal `/metrics`, `/healthz`, `/readyz` listener.
//!
//! Names follow Prometheus conventions: `crawlsieve_gate_<noun>_<unit>`, counters end in
//! `_total`, durations are in seconds, and labels take values from small fixed sets only (reason
//! codes, dead-letter codes, fixed causes) — never URLs, hosts or namespaces.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
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
}

impl GateMetrics {
    /// Fresh metrics in their own registry.
    pub fn new() -> GateMetrics {
        let registry = Registry::new();
        let c = |name: &str, help: &str| {
            let m = IntCounter::new(name, help).expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        let cv = |name: &str, help: &str, label: &str| {
            let m = IntCounterVec::new(Opts::new(name, help), &[label]).expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        let g = |name: &str, help: &str| {
            let m = IntGauge::new(name, help).expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
            m
        };
        let h = |name: &str, help: &str, buckets: Vec<f64>| {
            let m = Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))
                .expect("valid metric");
            registry
                .register(Box::new(m.clone()))
                .expect("unique metric");
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
                secs,
            ),
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
            registry,
        }
    }

    /// Why the stage is not ready (`/readyz`), or `None`: ready means partitions are assigned
    /// and consumption is not paused by an unreachable Redis or Kafka.
    pub fn not_ready(&self) -> Option<&'static str> {
        if self.assigned_partitions.get() == 0 {
            Some("no partitions assigned")
        } else if self.paused.get() != 0 {
            Some("paused: Redis or the output cluster is unavailable")
        } else {
            None
        }
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
