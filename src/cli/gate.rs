//! `crawlsieve gate`: the gate's decision ([`crate::gate`]) on the stage runtime
//! ([`crate::stage`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use prometheus::core::Collector;

use crate::config::{self, Component, Config};
use crate::gate::GateCore;
use crate::observe::FilterMetrics;
use crate::stage::run::{self, Observed, Spec};
use crate::stage::{Passthrough, Report};

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
    #[arg(long = "set", env = "CRAWLSIEVE_SET", value_name = "SECTION.KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print the effective configuration (defaults, file, environment, --set; passwords
    /// redacted) and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Exit (after a clean commit) once no message arrived for this long after the first one,
    /// e.g. `5s`: for batch jobs and benchmarks. Default: run until SIGTERM/SIGINT.
    #[arg(long, env = "CRAWLSIEVE_IDLE_EXIT", value_name = "DURATION")]
    pub idle_exit: Option<Dur>,
}

impl StageArgs {
    /// The configuration of `component`, or `None` after printing it (`--print-config`).
    pub fn load(&self, component: Component) -> Result<Option<Config>> {
        let cfg = config::load(
            component,
            self.config.as_deref(),
            std::env::vars(),
            &self.sets,
        )?;
        print_config(&cfg, self.print_config).map(|printed| (!printed).then_some(cfg))
    }
}

/// Print `cfg` with its secrets redacted when asked; whether it was.
pub fn print_config(cfg: &Config, asked: bool) -> Result<bool> {
    if asked {
        let text = toml::to_string(&cfg.redacted()).context("printing the configuration")?;
        super::lines::out_line(text.trim_end())?;
    }
    Ok(asked)
}

/// `crawlsieve gate` arguments.
#[derive(Debug, Args)]
pub struct GateArgs {
    #[command(flatten)]
    pub stage: StageArgs,
    /// Benchmark baseline: copy input messages to the fetch topic unchanged, with the same
    /// client settings, batching and delivery discipline, and no decoding or filter (what the
    /// gate's throughput is compared with; never for production).
    #[arg(long, env = "CRAWLSIEVE_PASSTHROUGH", value_parser = clap::builder::BoolishValueParser::new())]
    pub passthrough: bool,
}

/// Run the gate until stopped.
pub fn gate(a: GateArgs) -> Result<()> {
    let Some(cfg) = a.stage.load(Component::Gate)? else {
        return Ok(());
    };
    let obs = Arc::new(Observed::new(Component::Gate));
    let filter = FilterMetrics::new(&obs.metrics);
    let ready = {
        let obs = obs.clone();
        Arc::new(move || obs.not_ready())
    };
    let spec = Spec {
        component: Component::Gate,
        cfg: &cfg,
        idle_exit: a.stage.idle_exit.map(|d| d.0),
        filter: Some(filter.clone()),
        ready,
    };
    let done = |elapsed, report| summary(&obs, &filter, elapsed, report, "gate");
    if a.passthrough {
        run::run(spec, &obs, |_| Ok(Passthrough), done)
    } else {
        // With `[robots]` on, URLs held on the wait topic come back through the mover.
        let mover = if cfg.robots.enabled {
            Some(crate::gate::mover::Mover::start(&cfg)?)
        } else {
            None
        };
        // With `kafka.outcomes_topic` set, fetch outcomes are counted beside the input.
        let outcomes = match cfg.kafka.outcomes_topic {
            Some(_) => Some(crate::gate::outcomes_reader::OutcomeReader::start(
                &cfg,
                filter.clone(),
            )?),
            None => None,
        };
        let make = |_| Ok(GateCore::new(cfg.clone(), filter.clone()));
        let r = run::run(spec, &obs, make, done);
        let m = mover.map_or(Ok(()), |m| m.stop());
        let o = outcomes.map_or(Ok(()), |o| o.stop());
        r.and(m).and(o)
    }
}

/// One closing log event (the metrics have the details): fields for a log pipeline, and the
/// same figures in its message for a person (`consumed N in T s, …`).
pub(super) fn summary(
    obs: &Observed,
    filter: &FilterMetrics,
    elapsed: Duration,
    report: Report,
    name: &str,
) {
    let total = |v: &prometheus::IntCounterVec| -> u64 {
        v.collect()
            .iter()
            .flat_map(|f| f.get_metric())
            .map(|x| x.get_counter().get_value() as u64)
            .sum()
    };
    let m = &obs.stage;
    let (rejected, dead) = (total(&filter.rejected), total(&m.dead_lettered));
    let (consumed, emitted, duplicates) =
        (m.consumed.get(), m.emitted.get(), filter.duplicates.get());
    let secs = elapsed.as_secs_f64().max(1e-9);
    // Time the stage spent on pattern verdicts and the filter (Redis round trips included).
    let filter_secs = filter.filter_seconds.get_sample_sum();
    let active = report
        .active_secs()
        .map(|a| format!(", active {a:.2} s ({:.0}/s)", consumed as f64 / a.max(1e-9)))
        .unwrap_or_default();
    tracing::info!(
        stage = name,
        consumed,
        emitted,
        duplicates,
        rejected,
        dead_lettered = dead,
        elapsed_secs = secs,
        active_secs = report.active_secs(),
        filter_secs,
        "crawlsieve {name}: consumed {consumed} in {secs:.1} s{active}, filter {filter_secs:.2} s, emitted {emitted}, duplicate {duplicates}, rejected {rejected}, dead-lettered {dead}",
    );
}
