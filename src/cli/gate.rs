//! `crawlsieve gate`: the Kafka stage (see [`crate::gate`]).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use prometheus::core::Collector;

use crate::gate::config::{self, GateConfig};
use crate::gate::core::{GateCore, Passthrough};
use crate::gate::kafka::{Report, Worker};
use crate::gate::metrics::{self, GateMetrics};
use crate::gate::signals::{self, Stop};

use super::Dur;

/// Arguments every Kafka stage takes (`gate`, `render`).
#[derive(Debug, Args)]
pub struct StageArgs {
    /// The configuration file (TOML; see docs/gate.md and docs/render.md). Without one the
    /// built-in defaults apply (Kafka and Redis on 127.0.0.1).
    #[arg(long, short = 'c', env = "CRAWLSIEVE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Override one setting (repeatable): `--set kafka.batch_size=500`,
    /// `--set 'kafka.client."security.protocol"=SASL_SSL'`.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print the effective configuration (defaults, file, environment, --set) and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Exit (after a clean commit) once no message arrived for this long after the first one,
    /// e.g. `5s`: for batch jobs and benchmarks. Default: run until SIGTERM/SIGINT.
    #[arg(long, value_name = "DURATION")]
    pub idle_exit: Option<Dur>,
}

/// `crawlsieve gate` arguments.
#[derive(Debug, Args)]
pub struct GateArgs {
    #[command(flatten)]
    pub stage: StageArgs,
    /// Benchmark baseline: copy input messages to the fetch topic unchanged, with the same
    /// client settings, batching and delivery discipline, and no decoding or filter.
    #[arg(long, hide = true)]
    pub passthrough: bool,
}

/// Run the gate until stopped.
pub fn gate(a: GateArgs) -> Result<()> {
    let s = &a.stage;
    let cfg = config::load(s.config.as_deref(), std::env::vars(), &s.sets)?;
    let passthrough = a.passthrough;
    run_stage(
        &cfg,
        s.print_config,
        s.idle_exit,
        "gate",
        |cfg, metrics, stop, id, idle| {
            if passthrough {
                worker(cfg, Passthrough, metrics, stop, id, idle)
            } else {
                let core = GateCore::new(cfg.clone(), metrics.clone());
                worker(cfg, core, metrics, stop, id, idle)
            }
        },
    )
}

/// The body every Kafka stage shares: print the configuration or install the signal handlers,
/// serve the metrics, run `kafka.workers` workers (`work`), and print the closing summary.
pub(crate) fn run_stage<F>(
    cfg: &GateConfig,
    print_config: bool,
    idle_exit: Option<Dur>,
    name: &str,
    work: F,
) -> Result<()>
where
    F: Fn(&GateConfig, GateMetrics, Stop, usize, Option<Duration>) -> Result<Report> + Sync,
{
    if print_config {
        print!(
            "{}",
            toml::to_string(cfg).context("printing the configuration")?
        );
        return Ok(());
    }
    let stop = signals::install();
    let metrics = GateMetrics::for_stage(name);
    metrics::spawn_probes(cfg, metrics.clone());
    if let Some(addr) = &cfg.metrics.listen {
        let l = std::net::TcpListener::bind(addr)
            .with_context(|| format!("metrics.listen: cannot listen on {addr}"))?;
        metrics::serve(l, std::sync::Arc::new(metrics.clone()));
    }
    let idle = idle_exit.map(|d| d.0);
    let started = std::time::Instant::now();
    let work = &work;
    let results: Vec<Result<Report>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..cfg.kafka.workers)
            .map(|id| {
                let metrics = metrics.clone();
                std::thread::Builder::new()
                    .name(format!("{name}-{id}"))
                    .spawn_scoped(s, move || {
                        let r = work(cfg, metrics, stop, id, idle);
                        if r.is_err() {
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
    });
    let mut report = Report::default();
    let mut first_err = None;
    for r in results {
        match r {
            Ok(r) => report = report.merge(r),
            Err(e) => first_err = first_err.or(Some(e)),
        }
    }
    summary(&metrics, started.elapsed(), report, name);
    first_err.map_or(Ok(()), Err)
}

pub(crate) fn worker<S: crate::gate::core::Stage + Send + 'static>(
    cfg: &GateConfig,
    stage: S,
    metrics: GateMetrics,
    stop: Stop,
    id: usize,
    idle: Option<Duration>,
) -> Result<Report> {
    Worker::new(cfg, stage, metrics, stop, id)?.run(idle)
}

/// One closing line on stderr (the metrics have the details).
fn summary(m: &GateMetrics, elapsed: Duration, report: Report, name: &str) {
    let total = |v: &prometheus::IntCounterVec| -> u64 {
        v.collect()
            .iter()
            .flat_map(|f| f.get_metric())
            .map(|x| x.get_counter().get_value() as u64)
            .sum()
    };
    let (rejected, dead) = (total(&m.rejected), total(&m.dead_lettered));
    let consumed = m.consumed.get();
    let secs = elapsed.as_secs_f64().max(1e-9);
    let active = report
        .active_secs()
        .map(|a| format!(", active {a:.2} s ({:.0}/s)", consumed as f64 / a.max(1e-9)))
        .unwrap_or_default();
    eprintln!(
        "crawlsieve {name}: consumed {consumed} in {secs:.1} s{active}, emitted {}, duplicate {}, rejected {rejected}, dead-lettered {dead}",
        m.emitted.get(),
        m.duplicates.get(),
    );
}
