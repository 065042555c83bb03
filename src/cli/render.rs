//! `crawlsieve render`: the render stage's decision ([`crate::render::stage`]) on the stage
//! runtime ([`crate::stage`]).

use std::sync::Arc;

use anyhow::Result;
use clap::Args;

use crate::config::Component;
use crate::observe::FilterMetrics;
use crate::render::metrics::RenderMetrics;
use crate::render::stage::RenderStage;
use crate::stage::run::{self, Observed, Spec};

use super::gate::{summary, StageArgs};

/// `crawlsieve render` arguments (the gate's format, with a `[render]` section; by default the
/// stage reads `fetch` and writes `results`).
#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub stage: StageArgs,
}

/// Run the render stage until stopped.
pub fn render(a: RenderArgs) -> Result<()> {
    let Some(cfg) = a.stage.load(Component::Render)? else {
        return Ok(());
    };
    let obs = Arc::new(Observed::new(Component::Render));
    let rm = RenderMetrics::new(&obs.metrics);
    let ready = {
        let (obs, rm) = (obs.clone(), rm.clone());
        Arc::new(move || obs.not_ready().or_else(|| rm.not_ready()))
    };
    let spec = Spec {
        component: Component::Render,
        cfg: &cfg,
        idle_exit: a.stage.idle_exit.map(|d| d.0),
        filter: None,
        ready,
    };
    // The summary's rejected/duplicate counts are the gate's: zero here.
    let none = FilterMetrics::unregistered();
    run::run(
        spec,
        &obs,
        |_| RenderStage::new(&cfg, Some(rm.clone())),
        |elapsed, report| summary(&obs, &none, elapsed, report, "render"),
    )
}
