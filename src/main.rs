//! The `crawlsieve` binary: parse the command line, run, map errors to exit codes
//! (0 ok, 1 runtime error, 2 usage error — clap's own).

use clap::Parser;

fn main() {
    let args = crawlsieve::cli::normalize_args(std::env::args().collect());
    let cli = crawlsieve::cli::Cli::parse_from(args);
    let json = cli.log_format == crawlsieve::observe::log::LogFormat::Json;
    if let Err(e) = crawlsieve::cli::run(cli) {
        // A closed stdout (`| head`) is not an error worth a message, but it still fails the
        // run: what was not written was not delivered, so no state was saved.
        if e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        }) {
            std::process::exit(1);
        }
        if json {
            // Asked for JSON lines (the chart does): the last line is one too.
            tracing::error!(error = format!("{e:#}"), "crawlsieve: error: {e:#}");
        } else {
            eprintln!("crawlsieve: error: {e:#}");
        }
        std::process::exit(1);
    }
}
