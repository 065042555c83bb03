//! `crawlsieve serve`: the HTTP filter API (see [`crate::serve`]).

use anyhow::Result;
use clap::Args;

use crate::config::{self, Component};

/// `crawlsieve serve` arguments: the common configuration file (its `[serve]`, `[redis]`,
/// `[sieve]` and `[patterns]` sections apply).
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The configuration file (TOML; see docs/api.md). Without one the built-in defaults apply.
    #[arg(long, short = 'c', env = "CRAWLSIEVE_CONFIG")]
    pub config: Option<std::path::PathBuf>,
    /// Override one setting (repeatable): `--set serve.listen=0.0.0.0:8080`.
    #[arg(long = "set", env = "CRAWLSIEVE_SET", value_name = "SECTION.KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print the effective configuration (passwords redacted) and exit.
    #[arg(long)]
    pub print_config: bool,
}

/// Serve until SIGTERM/SIGINT.
pub fn serve(a: ServeArgs) -> Result<()> {
    let cfg = config::load(
        Component::Serve,
        a.config.as_deref(),
        std::env::vars(),
        &a.sets,
    )?;
    if super::gate::print_config(&cfg, a.print_config)? {
        return Ok(());
    }
    let stop = crate::stage::signals::install();
    crate::serve::run(&cfg, stop)
}
