//! Running a stage: install the signal handlers, serve `/metrics` `/healthz` `/readyz`, probe
//! Redis, run `kafka.workers` workers on threads of their own, and report.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{Report, Stage, StageMetrics, Stop, Topics, Worker};
use crate::config::{Component, Config};
use crate::observe::{self, FilterMetrics, Metrics, ProbeMetrics, Readiness};

/// A stage's observability: its registry with the runtime's and the Redis probe's series; the
/// component registers its own series in `metrics` before [`run`].
pub struct Observed {
    /// The registry (`crawlsieve_<component>_…`).
    pub metrics: Metrics,
    /// The runtime's series.
    pub stage: StageMetrics,
    /// The Redis probe's series.
    pub probe: ProbeMetrics,
}

impl Observed {
    /// A registry for `component` with the runtime's and the probe's series.
    pub fn new(component: Component) -> Observed {
        let metrics = Metrics::new(component.name());
        Observed {
            stage: StageMetrics::new(&metrics),
            probe: ProbeMetrics::new(&metrics),
            metrics,
        }
    }

    /// Why the stage is not ready by the runtime's and Redis' measure (see
    /// [`StageMetrics::not_ready`]).
    pub fn not_ready(&self) -> Option<String> {
        self.stage.not_ready(&self.probe)
    }
}

/// What [`run`] needs of a component.
pub struct Spec<'a> {
    /// Which component (client ids, log fields, thread names).
    pub component: Component,
    /// The whole configuration (`[kafka]`, `[metrics]`, `[redis]` are read here).
    pub cfg: &'a Config,
    /// Exit once no message arrived for this long after the first one.
    pub idle_exit: Option<Duration>,
    /// The filter's series, for the probe to refresh (the gate).
    pub filter: Option<FilterMetrics>,
    /// The component's readiness (`/readyz`).
    pub ready: Arc<dyn Readiness>,
}

/// Run `make(id)`'s stages, one per worker, until a stop (SIGTERM/SIGINT, `idle_exit`, or one
/// worker's fatal error, which stops the others), then call `summary` with the elapsed time
/// and the workers' merged report. Returns the first fatal error.
pub fn run<S, F>(
    spec: Spec<'_>,
    obs: &Observed,
    make: F,
    summary: impl FnOnce(Duration, Report),
) -> Result<()>
where
    S: Stage + Send + 'static,
    F: Fn(usize) -> Result<S> + Sync,
{
    let Spec {
        component,
        cfg,
        idle_exit,
        filter,
        ready,
    } = spec;
    let name = component.name();
    crate::redis_filter::tier::set_budget(cfg.redis.local_tier_memory);
    let stop = super::signals::install();
    observe::probes::spawn(cfg, obs.probe.clone(), filter);
    if let Some(addr) = &cfg.metrics.listen {
        observe::serve_in_background(addr, obs.metrics.clone(), ready)?;
    }
    let topics = topics_of(cfg, component);
    tracing::info!(
        stage = name,
        input = %topics.input,
        output = %topics.output,
        workers = cfg.kafka.workers,
        "starting"
    );
    super::worker::reach_brokers(&cfg.kafka, &topics.input)?;
    let started = Instant::now();
    let results = run_workers(cfg, name, &obs.stage, &make, &topics, stop, idle_exit);
    let (report, first_err) = merge_results(results);
    summary(started.elapsed(), report);
    first_err.map_or(Ok(()), Err)
}

/// The topics `component` reads and writes.
fn topics_of(cfg: &Config, component: Component) -> Topics {
    Topics {
        input: cfg.kafka.input_topic.clone(),
        output: cfg.output_topic(component).to_string(),
        audit: cfg.kafka.audit_topic.clone(),
        dead_letter: cfg.kafka.dead_letter_topic.clone(),
        held: (component == Component::Gate && cfg.robots.enabled)
            .then(|| cfg.robots.wait_topic(&cfg.kafka.input_topic)),
        outcomes: cfg.kafka.outcomes_topic.clone(),
    }
}

/// Run `kafka.workers` workers of stage `name` on threads of their own until they stop; one
/// worker's fatal error stops the others. Each worker's result, in order.
fn run_workers<S, F>(
    cfg: &Config,
    name: &str,
    stage_metrics: &StageMetrics,
    make: &F,
    topics: &Topics,
    stop: Stop,
    idle_exit: Option<Duration>,
) -> Vec<Result<Report>>
where
    S: Stage + Send + 'static,
    F: Fn(usize) -> Result<S> + Sync,
{
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..cfg.kafka.workers)
            .map(|id| {
                let metrics = stage_metrics.clone();
                std::thread::Builder::new()
                    .name(format!("{name}-{id}"))
                    .spawn_scoped(s, move || {
                        let r = make(id).and_then(|stage| {
                            Worker::new(&cfg.kafka, topics.clone(), name, stage, metrics, stop, id)?
                                .run(idle_exit)
                        });
                        if let Err(e) = &r {
                            tracing::error!(
                                stage = name,
                                worker = id,
                                error = format!("{e:#}"),
                                "worker stopped"
                            );
                            stop.request(); // one worker's fatal error stops the others
                        }
                        r
                    })
                    .expect("spawn a worker")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a worker panicked")))
            })
            .collect()
    })
}

/// The workers' reports merged, and the first fatal error.
fn merge_results(results: Vec<Result<Report>>) -> (Report, Option<anyhow::Error>) {
    let mut report = Report::default();
    let mut first_err = None;
    for r in results {
        match r {
            Ok(r) => report = report.merge(r),
            Err(e) => first_err = first_err.or(Some(e)),
        }
    }
    (report, first_err)
}
