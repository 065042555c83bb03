//! `crawlsieve serve`: the HTTP filter API (see [`crate::serve`]).

use anyhow::{Context, Result};
use clap::Args;

use crate::gate::config;

/// `crawlsieve serve` arguments: the gate's configuration file (its `[redis]`, `[patterns]` and
/// `[serve]` sections apply).
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The configuration file (TOML; see docs/api.md). Without one the built-in defaults apply.
    #[arg(long, short = 'c', env = "CRAWLSIEVE_CONFIG")]
    pub config: Option<std::path::PathBuf>,
    /// Override one setting (repeatable): `--set serve.listen=0.0.0.0:8080`.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print the effective configuration and exit.
    #[arg(long)]
    pub print_config: bool,
}

/// Serve until SIGTERM/SIGINT.
pub fn serve(a: ServeArgs) -> Result<()> {
    let cfg = config::load(a.config.as_deref(), std::env::vars(), &a.sets)?;
    if a.print_config {
        print!(
            "{}",
            toml::to_string(&cfg).context("printing the configuration")?
        );
        return Ok(());
    }
    let stop = crate::gate::signals::install();
    crate::serve::run(&cfg, stop)
}
