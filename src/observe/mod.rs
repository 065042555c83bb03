//! Observability for every component: one way to name and register metrics ([`Metrics`], with
//! every name in [`names`]), one `/metrics` `/healthz` `/readyz` server ([`router`],
//! [`serve_in_background`]) whose readiness each component defines once ([`Readiness`]), the
//! shared Redis probe ([`probes`]), and the `tracing` logs ([`log`]).
//!
//! Owns: metric names, registries, the observability HTTP routes, log formats. May import
//! `config` and `redis_filter` (what it probes); never `stage`, `gate`, `render`, `serve` or
//! `cli` — those register their series here.

pub mod log;
pub mod names;
pub mod probes;

use std::sync::Arc;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus::{
    Encoder, GaugeVec, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry, TextEncoder,
};

pub use names::Name;
pub use probes::{FilterMetrics, ProbeMetrics};

/// A component's registry: every series is named `crawlsieve_<component>_<name>`, with the
/// name and help text from [`names`].
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    component: &'static str,
}

impl Metrics {
    /// A registry for `component` (`gate`, `render`, `serve`) with the series every component
    /// has: `crawlsieve_build_info{component, version}` (always 1: what runs where, and what
    /// an `absent()` alert looks for when every pod of a component is gone) and the process
    /// collector's `process_*` (resident and virtual memory, CPU seconds, open files, start
    /// time; Linux).
    pub fn new(component: &'static str) -> Metrics {
        let m = Metrics {
            registry: Registry::new(),
            component,
        };
        let info = IntGaugeVec::new(
            Opts::new(
                "crawlsieve_build_info",
                "Always 1, labelled with the component and the crawlsieve version.",
            ),
            &["component", "version"],
        )
        .expect("a valid metric");
        m.reg(info)
            .with_label_values(&[component, env!("CARGO_PKG_VERSION")])
            .set(1);
        #[cfg(target_os = "linux")]
        m.registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("the process collector is registered once");
        m
    }

    /// The component's name.
    pub fn component(&self) -> &'static str {
        self.component
    }

    /// The full name of `n` in this registry.
    pub fn full_name(&self, n: Name) -> String {
        format!("crawlsieve_{}_{}", self.component, n.name)
    }

    fn reg<C: prometheus::core::Collector + Clone + 'static>(&self, c: C) -> C {
        self.registry
            .register(Box::new(c.clone()))
            .expect("every metric name is registered once");
        c
    }

    /// A counter.
    pub fn counter(&self, n: Name) -> IntCounter {
        self.reg(IntCounter::new(self.full_name(n), n.help).expect("valid metric"))
    }

    /// A counter with one label.
    pub fn counter_vec(&self, n: Name, label: &str) -> IntCounterVec {
        let o = Opts::new(self.full_name(n), n.help);
        self.reg(IntCounterVec::new(o, &[label]).expect("valid metric"))
    }

    /// A counter with two labels.
    pub fn counter_vec2(&self, n: Name, labels: [&str; 2]) -> IntCounterVec {
        let o = Opts::new(self.full_name(n), n.help);
        self.reg(IntCounterVec::new(o, &labels).expect("valid metric"))
    }

    /// An integer gauge.
    pub fn gauge(&self, n: Name) -> IntGauge {
        self.reg(IntGauge::new(self.full_name(n), n.help).expect("valid metric"))
    }

    /// An integer gauge with one label.
    pub fn gauge_vec(&self, n: Name, label: &str) -> IntGaugeVec {
        let o = Opts::new(self.full_name(n), n.help);
        self.reg(IntGaugeVec::new(o, &[label]).expect("valid metric"))
    }

    /// A real-valued gauge with one label.
    pub fn float_gauge_vec(&self, n: Name, label: &str) -> GaugeVec {
        let o = Opts::new(self.full_name(n), n.help);
        self.reg(GaugeVec::new(o, &[label]).expect("valid metric"))
    }

    /// A histogram of seconds with `buckets`.
    pub fn histogram(&self, n: Name, buckets: &[f64]) -> Histogram {
        let o = HistogramOpts::new(self.full_name(n), n.help).buckets(buckets.to_vec());
        self.reg(Histogram::with_opts(o).expect("valid metric"))
    }

    /// Every series in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding cannot fail");
        String::from_utf8(buf).expect("the text format is UTF-8")
    }

    /// The underlying registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}

/// Histogram buckets for operations of a millisecond to half a minute.
pub const SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Whether a component can take work (`/readyz`): `None` = ready, else why not.
pub trait Readiness: Send + Sync + 'static {
    /// Why the component is not ready, or `None`.
    fn not_ready(&self) -> Option<String>;
}

impl<F: Fn() -> Option<String> + Send + Sync + 'static> Readiness for F {
    fn not_ready(&self) -> Option<String> {
        self()
    }
}

fn text(status: StatusCode, ctype: &'static str, body: String) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

/// `GET /metrics` (the registry), `/healthz` (the process answers: `ok`) and `/readyz` (200
/// `ready`, or 503 with the reason): the same three routes for every component.
pub fn router(metrics: Metrics, ready: Arc<dyn Readiness>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let m = metrics.clone();
                async move {
                    text(
                        StatusCode::OK,
                        "text/plain; version=0.0.4; charset=utf-8",
                        m.render(),
                    )
                }
            }),
        )
        .route(
            "/healthz",
            get(|| async { text(StatusCode::OK, "text/plain", "ok\n".into()) }),
        )
        .route(
            "/readyz",
            get(move || {
                let r = ready.clone();
                async move {
                    match r.not_ready() {
                        None => text(StatusCode::OK, "text/plain", "ready\n".into()),
                        Some(why) => text(
                            StatusCode::SERVICE_UNAVAILABLE,
                            "text/plain",
                            format!("{why}\n"),
                        ),
                    }
                }
            }),
        )
}

/// Serve [`router`] on `addr` from a thread of its own (for the Kafka stages, whose workers are
/// threads). Fails at once when `addr` cannot be bound.
pub fn serve_in_background(
    addr: &str,
    metrics: Metrics,
    ready: Arc<dyn Readiness>,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let l = std::net::TcpListener::bind(addr)
        .with_context(|| format!("metrics.listen: cannot listen on {addr}"))?;
    l.set_nonblocking(true)?;
    let app = router(metrics, ready)
        .fallback(|| async { text(StatusCode::NOT_FOUND, "text/plain", "not found\n".into()) });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("the metrics server's runtime")?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            rt.block_on(async move {
                match tokio::net::TcpListener::from_std(l) {
                    Ok(l) => {
                        if let Err(e) = axum::serve(l, app).await {
                            tracing::error!(error = %e, "the metrics server stopped");
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "the metrics listener"),
                }
            })
        })
        .context("spawning the metrics thread")?;
    Ok(())
}
