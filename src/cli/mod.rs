//! Command-line interface: arguments are parsed into validated objects before anything runs,
//! then each subcommand streams its input once. Every flag has a `CRAWLSIEVE_*` env var.
//!
//! Owns: flags, their parsing and the user-facing summaries. The top layer: imports everything;
//! nothing imports it (`tests/layers.rs`).
//!
//! This file holds the command line itself ([`Cli`], [`Command`]) and [`run`]'s dispatch; the
//! rest is one concern a file:
//!
//! * `args.rs` — the argument structs the line commands share (input, junk rules, scope,
//!   output, crawl policy) and those of `dedup`, `check`, `canon`, `pattern`; their value
//!   parsers; the sieve, scope and policy configuration built from them.
//! * `lines.rs` — line I/O: inputs read line by line or in batches, the output file, JSON
//!   lines, the progress bar, `dedup`'s emitter and summary.
//! * `url_commands.rs` — the bodies of `dedup`, `check`, `canon` and `pattern`.
//! * `dedup.rs` — `dedup --redis`: the driver of the shared filter's outbox protocol.
//! * `docs.rs` — the help's examples and exit codes; `man` and `completions`.
//! * `exit.rs` — the exit-code contract of every command.
//! * `redis.rs` — the `--redis` options, and `bloom`: the Redis-shared filters.
//! * `gate.rs` — `gate`: the gate on the Kafka stage runtime; the arguments every stage takes.
//! * `render.rs` — `render`: the render stage.
//! * `serve.rs` — `serve`: the HTTP filter API.
//! * `cluster.rs` — `cluster`: clusters of pages already fetched, and their report.
//! * `report_html.rs` — the cluster report as one self-contained HTML file.
//! * `report_format.rs` — which report `-o FILE` writes, by its extension.
//! * `similar.rs` — `similar`: URLs rendered in headless Chromium, then clustered.
//! * `robots.rs` — `robots`: URLs judged against a robots.txt file.
//! * `learned_rules.rs` — `rules`: a namespace's learned parameter rules.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod args;
mod cluster;
mod dedup;
mod docs;
pub mod exit;
mod gate;
mod learned_rules;
mod lines;
mod redis;
mod render;
mod report_format;
pub mod report_html;
mod robots;
mod serve;
mod similar;
mod url_commands;

pub use similar::normalize_args;

pub use crate::config::{Dur, DEFAULT_CAPACITY, DEFAULT_FP_RATE};
pub use args::{
    CanonArgs, CheckArgs, DedupArgs, Format, InputArgs, OutputArgs, PatternArgs, PolicyArgs,
    ScopeArgs, SieveArgs,
};
pub use docs::{CompletionsArgs, ManArgs};
pub use lines::Summary;
pub use redis::{BloomArgs, RedisArgs};

use docs::{CHECK_EXAMPLES, CLUSTER_EXAMPLES, DEDUP_EXAMPLES, EXIT_CODES, SIMILAR_EXAMPLES};

/// crawlsieve: reject junk URL candidates, canonicalize, and drop what was seen before.
#[derive(Debug, Parser)]
#[command(name = "crawlsieve", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Log lines on stderr: `json` (one object per line: level, target, fields, spans), `text`,
    /// or `auto` (text on a terminal, JSON otherwise). Filter with `CRAWLSIEVE_LOG` or
    /// `RUST_LOG` (default `info`).
    #[arg(
        long,
        global = true,
        env = "CRAWLSIEVE_LOG_FORMAT",
        default_value = "auto",
        value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::observe::log::LogFormat>())
    )]
    pub log_format: crate::observe::log::LogFormat,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Command {
    /// The embedded main job: junk out, canonicalize, emit each new URL once.
    #[command(after_help = DEDUP_EXAMPLES)]
    Dedup(DedupArgs),
    /// Judge each candidate: one JSON object per input line.
    #[command(after_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// Print the canonical form of each line, through the same junk rules as `check` (an empty
    /// line where a rule rejects it; `check` says which).
    Canon(CanonArgs),
    /// Print the URL pattern of each line, through the same junk rules as `check` (an empty line
    /// where a rule rejects it).
    Pattern(PatternArgs),
    /// Manage Redis-shared filters: create, stats, export, import, drop, forget.
    Bloom(BloomArgs),
    /// The Kafka stage: URL events in, new URLs to the fetch topic (at least once).
    Gate(gate::GateArgs),
    /// Near-duplicate and rule clusters of pages already fetched (JSON Lines or WARC in; a JSON, CSV or HTML report out).
    #[command(after_help = docs::with_legend(CLUSTER_EXAMPLES))]
    Cluster(cluster::ClusterArgs),
    /// Render URLs in headless Chromium and cluster them (the seed's `-l urls.txt -o out.json`).
    #[command(after_help = docs::with_legend(SIMILAR_EXAMPLES))]
    Similar(similar::SimilarArgs),
    /// The render stage: fetch events in, cluster assignments to the results topic.
    Render(render::RenderArgs),
    /// The HTTP filter API: `POST /v1/filter` (namespace, URLs) → new, rejected, duplicates.
    Serve(serve::ServeArgs),
    /// Judge URLs against a robots.txt file (RFC 9309): one JSON object per URL with
    /// `allowed` and the rule that decided.
    Robots(robots::RobotsArgs),
    /// Learned parameter rules of a namespace (the render stage learns, the gate applies):
    /// list, export, revoke.
    Rules(learned_rules::LearnedRulesArgs),
    /// Print a shell completion script (`crawlsieve completions bash > /etc/bash_completion.d/crawlsieve`).
    Completions(CompletionsArgs),
    /// Print the man page (roff), or write one page per command into a directory.
    Man(ManArgs),
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    crate::observe::log::init(cli.log_format);
    match cli.command {
        Command::Dedup(a) => url_commands::dedup(a),
        Command::Check(a) => url_commands::check(a),
        Command::Canon(a) => url_commands::canon(a),
        Command::Completions(a) => docs::completions(a),
        Command::Man(a) => docs::man(a),
        Command::Pattern(a) => url_commands::pattern_cmd(a),
        Command::Bloom(a) => redis::bloom(a),
        Command::Gate(a) => gate::gate(a),
        Command::Cluster(a) => cluster::run(a),
        Command::Robots(a) => robots::run(a),
        Command::Rules(a) => learned_rules::run(a),
        Command::Similar(a) => similar::run(a),
        Command::Render(a) => render::render(a),
        Command::Serve(a) => serve::serve(a),
    }
}

#[cfg(test)]
mod env_promise {
    /// The README's promise: every flag of every command that sets something has an
    /// environment variable (so a container is configured without a command line); the one
    /// action flag, `--print-config`, has none. Found broken (issue 28): `--allow`, `--deny`,
    /// `--scheme`, `--port`, `--same-site` and 30 more had none.
    #[test]
    fn every_flag_has_an_environment_variable() {
        use clap::CommandFactory;
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                // `bloom export -o FILE` is its positional FILE spelled as a flag: positionals
                // have no variable (one set in the environment would turn the documented
                // `bloom export NS FILE` into a conflict: review).
                if a.is_positional()
                    || matches!(id, "help" | "version" | "print_config" | "export_output")
                {
                    continue;
                }
                if a.get_env().is_none() {
                    missing.push(format!("{path} --{}", a.get_long().unwrap_or(id)));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "crawlsieve", &mut missing);
        assert!(
            missing.is_empty(),
            "flags without an env variable:\n{}",
            missing.join("\n")
        );
    }
}
