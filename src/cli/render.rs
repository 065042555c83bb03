//! `crawlsieve render`: the render stage (see [`crate::render::stage`]).

use anyhow::Result;
use clap::Args;

use crate::gate::config::{self, GateConfig};
use crate::render::stage::RenderStage;

use super::gate::{run_stage, worker, StageArgs};

/// `crawlsieve render` arguments (the gate's format, with a `[render]` section; by default the
/// stage reads `fetch` and writes `results`).
#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub stage: StageArgs,
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
    let s = &a.stage;
    let cfg = config::load_over(&defaults(), s.config.as_deref(), std::env::vars(), &s.sets)?;
    run_stage(
        &cfg,
        s.print_config,
        s.idle_exit,
        "render",
        |cfg, metrics, stop, id, idle| {
            worker(
                cfg,
                RenderStage::new(cfg, &metrics)?,
                metrics,
                stop,
                id,
                idle,
            )
        },
    )
}
