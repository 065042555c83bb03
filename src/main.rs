//! The `crawlsieve` binary: parse the command line, run, map errors to exit codes (the
//! contract of `crawlsieve::cli::exit`: 0 done, 1 failed, 2 usage, 3 input, 4 unreachable,
//! 5 partial).

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
        let msg = crawlsieve::cli::exit::message(&e);
        if json {
            // Asked for JSON lines (the chart does): the last line is one too.
            tracing::error!(error = msg, "crawlsieve: error: {msg}");
        } else {
            eprintln!("crawlsieve: error: {msg}");
        }
        std::process::exit(crawlsieve::cli::exit::code(&e));
    }
}
