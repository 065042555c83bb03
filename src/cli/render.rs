//! `crawlsieve render`: the render stage (see [`crate::render::stage`]).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::gate::config::{self, GateConfig};
use crate::render::stage::RenderStage;

use super::gate::{run_stage, worker};
use super::Dur;

/// `crawlsieve render` arguments.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The configuration file (the gate's format, with a `[render]` section; by default the
    /// stage reads `fetch` and writes `results`).
    #[arg(long, short = 'c', env = "CRAWLSIEVE_RENDER_CONFIG")]
    pub config: Option<PathBuf>,
    /// Override one setting (repeatable), as for `crawlsieve gate`.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print the effective configuration and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Exit after a clean commit once no message arrived for this long after the first one.
    #[arg(long, value_name = "DURATION")]
    pub idle_exit: Option<Dur>,
}

/// The render stage's built-in defaults: the gate's, reading the fetch topic.
pub fn defaults() -> GateConfig {
    let mut d = GateConfig::default();
    d.kafka.input_topic = "fetch".into();
    d.kafka.fetch_topic = "results".into();
    d.kafka.dead_letter_topic = "fetch.dead-letter".into();
    d.kafka.group_id = "crawlsieve-render".into();
    d.kafka.batch_size = 8;
    d.kafka.batch_linger_ms = 200;
    d
}

/// Run the render stage until stopped.
pub fn render(a: RenderArgs) -> Result<()> {
    let cfg = config::load_over(&defaults(), a.config.as_deref(), std::env::vars(), &a.sets)?;
    run_stage(
        &cfg,
        a.print_config,
        a.idle_exit,
        "render",
        |cfg, metrics, stop, id, idle| worker(cfg, RenderStage::new(cfg)?, metrics, stop, id, idle),
    )
}
