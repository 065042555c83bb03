//! Logs: `tracing` events to standard error, as JSON lines (one object per line with
//! `timestamp`, `level`, `target`, `fields` and the spans it happened in — what a log pipeline
//! on Kubernetes reads) or as text for a person at a terminal. Filtered by `CRAWLSIEVE_LOG`,
//! else `RUST_LOG` (`info` when neither is set), in `tracing-subscriber`'s directive syntax:
//! `CRAWLSIEVE_LOG=crawlsieve::stage=debug,info`.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Text on a terminal, JSON otherwise.
    #[default]
    Auto,
    /// One JSON object per line.
    Json,
    /// Human-readable lines.
    Text,
}

impl std::str::FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<LogFormat, String> {
        match s {
            "auto" => Ok(LogFormat::Auto),
            "json" => Ok(LogFormat::Json),
            "text" => Ok(LogFormat::Text),
            _ => Err(format!("{s:?}: expected json, text or auto")),
        }
    }
}

/// The default filter: `info`, but chromiumoxide's handler only at `error`: it warns "WS
/// Invalid message" for every DevTools event its protocol tables do not know (Chromium is newer
/// than chromiumoxide 0.9's tables), which says nothing about the pages; every `similar` run
/// printed one.
const DEFAULT: &str = "info,chromiumoxide::handler=error";

/// The filter: `CRAWLSIEVE_LOG`, else `RUST_LOG`, else [`DEFAULT`]. A directive that does not
/// parse is reported once on standard error and the default used.
fn filter() -> EnvFilter {
    let spec = std::env::var("CRAWLSIEVE_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_default();
    if spec.trim().is_empty() {
        return EnvFilter::new(DEFAULT);
    }
    EnvFilter::try_new(&spec).unwrap_or_else(|e| {
        eprintln!("crawlsieve: ignoring the log filter {spec:?} ({e}); logging at info");
        EnvFilter::new(DEFAULT)
    })
}

/// Install the process's subscriber (once; later calls do nothing).
pub fn init(format: LogFormat) {
    let json = match format {
        LogFormat::Json => true,
        LogFormat::Text => false,
        LogFormat::Auto => !std::io::stderr().is_terminal(),
    };
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr);
    let _ = if json {
        b.json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init()
    } else {
        b.with_ansi(std::io::stderr().is_terminal()).try_init()
    };
}
