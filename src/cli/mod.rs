//! Command-line interface: arguments are parsed into validated objects before anything runs,
//! then each subcommand streams its input once. Every flag has a `CRAWLSIEVE_*` env var.
//!
//! Owns: flags, their parsing and the user-facing summaries. The top layer: imports everything;
//! nothing imports it (`tests/layers.rs`).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use url::Url;

mod cluster;
mod dedup;
pub mod exit;
mod gate;
mod redis;
mod render;
pub mod report_html;
mod robots;
mod rules;
mod serve;
mod similar;

pub use similar::normalize_args;

pub use crate::config::{Dur, DEFAULT_CAPACITY, DEFAULT_FP_RATE};
pub use redis::{BloomArgs, RedisArgs};

use crate::bloom::{snapshot, BloomFilter, BloomParams};
use crate::input::{Line, LineReader};
use crate::sieve::{BatchResult, Sieve, Verdict};
use crate::url::{pattern, Canonicalizer, Merge, Profile, Reason, Validator};

/// `dedup --help`'s examples.
const DEDUP_EXAMPLES: &str = "Examples:
  crawlsieve dedup --base https://docs.example.org/guide/ candidates.txt > new.txt
  crawlsieve dedup --state seen.bloom --capacity 1000000 day1.txt      # remembered across runs
  crawlsieve dedup --redis redis://127.0.0.1:6379 --namespace crawl1 -  # shared through Redis
  crawlsieve dedup --format jsonl --context js strings.txt              # one verdict per line";

/// `check --help`'s examples.
const CHECK_EXAMPLES: &str = "Examples:
  echo 'function(){return 1}' | crawlsieve check
  crawlsieve check --base https://h.example/a/ --allow-domain h.example links.txt
  crawlsieve check --context html_attr --scope-file regex-urlfilter.txt hrefs.txt";

/// `cluster --help`'s examples.
const CLUSTER_EXAMPLES: &str =
    "Input: JSON Lines, one fetched page a line: url, final_url, status, content_type, html
(optional: redirect_chain, timings, phash, thumbnail, error); a record needs status, html or error.
Or --warc FILE: the response records of a WARC (wget --warc-file).

Examples:
  crawlsieve cluster pages.jsonl -o report.json
  crawlsieve cluster --warc crawl.warc.gz -o report.html";

/// `similar --help`'s examples.
const SIMILAR_EXAMPLES: &str = "Examples:
  crawlsieve similar -l urls.txt -o result.json
  crawlsieve similar -l https://a.example/,https://a.example/x -o report.html
  crawlsieve similar -l local.txt -o r.csv --allow 127.0.0.1:8080   # a loopback test site";

/// The exit-code contract ([`exit`]), as `--help` shows it.
const EXIT_CODES: &str = "Exit codes: 0 done; 1 failed while running; 2 usage (a flag or value is wrong, nothing done); \
3 input (a file, state file or record cannot be read or is malformed); 4 unreachable (Redis, Kafka or \
Chromium); 5 partial (finished, but some items not done: the summary says how many).";

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
    #[command(after_help = CLUSTER_EXAMPLES)]
    Cluster(cluster::ClusterArgs),
    /// Render URLs in headless Chromium and cluster them (the seed's `-l urls.txt -o out.json`).
    #[command(after_help = SIMILAR_EXAMPLES)]
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
    Rules(rules::RulesArgs),
    /// Print a shell completion script (`crawlsieve completions bash > /etc/bash_completion.d/crawlsieve`).
    Completions(CompletionsArgs),
    /// Print the man page (roff), or write one page per command into a directory.
    Man(ManArgs),
}

/// `crawlsieve completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `crawlsieve man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `crawlsieve.1` and `crawlsieve-COMMAND.1` for every command into DIR instead of
    /// printing the main page.
    #[arg(long, env = "CRAWLSIEVE_MAN_DIR", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `crawlsieve man`: pages generated from the same definitions as `--help`.
fn man(a: ManArgs) -> Result<()> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let Some(dir) = a.dir else {
        let mut out = io::stdout().lock();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        return Ok(out.flush()?);
    };
    if dir.exists() && !dir.is_dir() {
        return Err(exit::input(format!(
            "man --dir {}: is a file, not a directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the directory {}", dir.display()))?;
    let write = |name: &str, c: clap::Command| -> Result<()> {
        let path = dir.join(format!("{name}.1"));
        let mut f = BufWriter::new(
            File::create(&path).with_context(|| format!("cannot create {}", path.display()))?,
        );
        clap_mangen::Man::new(c)
            .render(&mut f)
            .and_then(|_| f.flush())
            .with_context(|| format!("writing {}", path.display()))
    };
    // Every command and sub-command (`crawlsieve-bloom-create.1`): the pages refer to each
    // other by these names. clap wants a 'static name: the few page names are leaked once per
    // run of this command.
    fn pages(prefix: &str, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands() {
            let name = format!("{prefix}-{}", sub.get_name());
            let title: &'static str = Box::leak(name.clone().into_boxed_str());
            out.push((name.clone(), sub.clone().name(title)));
            pages(&name, sub, out);
        }
    }
    let mut all = Vec::new();
    pages("crawlsieve", &cmd, &mut all);
    for (name, c) in all {
        write(&name, c)?;
    }
    write("crawlsieve", cmd)?;
    Ok(())
}

/// Input files and the line cap.
#[derive(Debug, Args)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// Input files, one candidate a line; `-` or nothing reads stdin.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Bytes kept of one input line; longer lines are rejected as `too_long`.
    #[arg(
        long,
        env = "CRAWLSIEVE_MAX_LINE_BYTES",
        default_value_t = 1 << 20,
        value_parser = at_least_one_byte
    )]
    pub max_line_bytes: usize,
}

/// Validator and canonicalization settings.
#[derive(Debug, Args)]
#[command(next_help_heading = "Junk rules and canonicalization")]
pub struct RuleArgs {
    /// Threshold profile.
    #[arg(long, env = "CRAWLSIEVE_PROFILE", value_enum, default_value_t = Profile::Standard)]
    pub profile: Profile,
    /// Override the profile's maximum candidate length (bytes).
    #[arg(long, env = "CRAWLSIEVE_MAX_LEN")]
    pub max_len: Option<usize>,
    /// Override the profile's maximum share of needless %XX escapes (0–1].
    #[arg(long, env = "CRAWLSIEVE_ENCODING_RATIO")]
    pub encoding_ratio: Option<f64>,
    /// Base URL that relative candidates are resolved against (absolute, http or https).
    /// Without it, a relative candidate is `no_base`, as in the gate and the API.
    #[arg(long, env = "CRAWLSIEVE_BASE", value_parser = parse_base, value_name = "URL")]
    pub base: Option<Url>,
    /// Extra query parameters to drop (repeatable; `name` or `prefix*`).
    #[arg(
        long = "strip-param",
        env = "CRAWLSIEVE_STRIP_PARAMS",
        value_delimiter = ','
    )]
    pub strip_params: Vec<String>,
    /// Keep tracking parameters (utm_*, gclid, ...) and session ids.
    #[arg(long, env = "CRAWLSIEVE_KEEP_TRACKING", value_parser = clap::builder::BoolishValueParser::new())]
    pub keep_tracking: bool,
    /// Keep query parameters in their original order.
    #[arg(long, env = "CRAWLSIEVE_NO_SORT_QUERY", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_sort_query: bool,
    /// Opt-in equivalences for deduplication only (the emitted URL is unchanged), comma-separated:
    /// scheme, www, trailing-slash, index, slashes. Each may merge pages a server tells apart.
    #[arg(long, env = "CRAWLSIEVE_MERGE", value_enum, value_delimiter = ',')]
    pub merge: Vec<Merge>,
    /// Keep XML namespace and DTD identifiers (`http://www.w3.org/2000/svg`); the loose profile
    /// keeps them too. Otherwise they are rejected as `xml_namespace`.
    #[arg(long, env = "CRAWLSIEVE_KEEP_XML_NAMESPACES", value_parser = clap::builder::BoolishValueParser::new())]
    pub keep_xml_namespaces: bool,
    /// Keep URLs written in text or scripts (`--context text|html_text|js`) with a reserved host
    /// (`example.com`, `.test`), a single-label one (`http://server/`) or an undelegated
    /// top-level name (`nas.lan`), as an intranet crawl wants; the loose profile keeps them too.
    /// Otherwise: `reserved_host`, `single_label_host`, `unknown_tld`.
    #[arg(long, env = "CRAWLSIEVE_KEEP_PLACEHOLDER_HOSTS", value_parser = clap::builder::BoolishValueParser::new())]
    pub keep_placeholder_hosts: bool,
    /// Where the input's candidates were found, decoded accordingly before they are judged:
    /// html_attr (raw attribute values: `&amp;` is `&`), html_text, js (string literals:
    /// `\/` is `/`; module specifiers, dotted identifiers, version and format strings are
    /// rejected), css (`url()` values), text, or unknown (nothing decoded).
    #[arg(long, env = "CRAWLSIEVE_CONTEXT", value_enum, default_value_t = crate::url::Context::Unknown)]
    pub context: crate::url::Context,
    /// Let candidates name these special-purpose hosts (intranet crawls; repeatable or
    /// comma-separated): an address or CIDR range (`10.0.0.0/8`, `::1`), a localhost name, or `*`
    /// for all. Otherwise a loopback, private, link-local or metadata IP literal (any spelling)
    /// or a localhost name is rejected as `private_address`.
    #[arg(
        long = "allow-private",
        env = "CRAWLSIEVE_ALLOW_PRIVATE",
        value_delimiter = ',',
        value_name = "RANGE"
    )]
    pub allow_private: Vec<String>,
    /// Turn the spider-trap rules off (`trap_repeated_path`, `trap_too_deep`, `trap_echo`,
    /// `trap_calendar`; a gate's `[sieve.traps]` sets each).
    #[arg(long, env = "CRAWLSIEVE_NO_TRAPS", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_traps: bool,
    /// robots.txt files already fetched: `DIR/<host>/robots.txt` (`DIR/<host>:<port>/…` for a
    /// non-default port). A URL its host's file disallows for `--robots-agent` is
    /// `robots_disallowed`; a host without a file passes.
    #[arg(long, env = "CRAWLSIEVE_ROBOTS_DIR", value_name = "DIR")]
    pub robots_dir: Option<PathBuf>,
    /// The crawler's user agent for `--robots-dir` (its product token picks the group).
    #[arg(
        long,
        env = "CRAWLSIEVE_ROBOTS_AGENT",
        default_value = "crawlsieve",
        value_name = "AGENT"
    )]
    pub robots_agent: String,
}

/// `--redis`: one Redis URL, or comma-separated cluster seeds ([`crate::redis_filter::check_urls`]).
pub(crate) fn redis_urls(s: &str) -> std::result::Result<String, String> {
    crate::redis_filter::check_urls(s).map(|_| s.to_string())
}

/// `--max-line-bytes`: at least 1 (0 made every line `too_long`).
fn at_least_one_byte(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("0 would make every line too_long: give at least 1 (default 1048576)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{s:?}: {e}")),
    }
}

/// `--base`: an absolute http(s) URL, said plainly when it is not one.
fn parse_base(s: &str) -> std::result::Result<Url, String> {
    match Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => Ok(u),
        Ok(u) => Err(format!(
            "{s:?} is a {} URL; the base must be an http or https page URL (https://host/path)",
            u.scheme()
        )),
        Err(url::ParseError::RelativeUrlWithoutBase) if s.starts_with('/') || s.starts_with('.') => {
            Err(format!(
                "{s:?} is a path: the base is the full URL of the page the candidates were found on (https://host{})",
                if s.starts_with('/') { s } else { "/page.html" }
            ))
        }
        Err(url::ParseError::RelativeUrlWithoutBase) => Err(format!(
            "{s:?} has no scheme: write the page's full URL, e.g. https://{s}"
        )),
        Err(e) => Err(format!("{s:?} is not a URL ({e})")),
    }
}

impl RuleArgs {
    /// The same settings as a gate configuration's `[sieve]` (one builder for both).
    fn section(&self) -> crate::config::SieveSection {
        crate::config::SieveSection {
            profile: self.profile,
            max_len: self.max_len,
            encoding_ratio: self.encoding_ratio,
            keep_xml_namespaces: self.keep_xml_namespaces.then_some(true),
            keep_placeholder_hosts: self.keep_placeholder_hosts.then_some(true),
            strip_params: self.strip_params.clone(),
            keep_tracking: self.keep_tracking,
            sort_query: !self.no_sort_query,
            merge: self.merge.clone(),
            allow_private: self.allow_private.clone(),
            traps: if self.no_traps {
                crate::url::TrapConfig::off()
            } else {
                crate::url::TrapConfig::default()
            },
        }
    }

    fn validator(&self) -> Result<Validator> {
        // The settings' own words name keys (`max_len`); on the command line, name the flags.
        self.section().validator().map_err(|e| {
            exit::usage(
                e.replace("invalid validator settings: ", "")
                    .replace("max_len", "--max-len")
                    .replace("encoding_ratio", "--encoding-ratio"),
            )
        })
    }

    fn canonicalizer(&self) -> Canonicalizer {
        self.section().canonicalizer()
    }

    pub(super) fn sieve(&self) -> Result<Sieve> {
        let mut s = Sieve::new(self.validator()?, self.canonicalizer(), self.base.clone());
        s.context = self.context;
        let section = self.section();
        s.address = section
            .address_policy()
            .map_err(|e| exit::usage(e.replace("allow_private entry", "--allow-private")))?;
        s.traps = section.traps;
        if let Some(dir) = &self.robots_dir {
            if !dir.is_dir() {
                return Err(exit::input(format!(
                    "--robots-dir {}: not a directory (expected DIR/<host>/robots.txt files)",
                    dir.display()
                )));
            }
            if dir.join("robots.txt").is_file() {
                // One file at the top is a mistake to say: every host passes otherwise.
                return Err(exit::usage(format!(
                    "--robots-dir {}: holds robots.txt itself; the files go one directory per host (DIR/<host>/robots.txt, DIR/<host>:<port>/robots.txt)",
                    dir.display()
                )));
            }
            // A host's robots.txt that cannot be read (a directory, no permission) would let
            // every URL of the host pass: said before anything is judged, every one of them.
            let mut unreadable = Vec::new();
            if let Ok(hosts) = std::fs::read_dir(dir) {
                for h in hosts.flatten() {
                    let f = h.path().join("robots.txt");
                    if f.symlink_metadata().is_err() {
                        continue; // no file: the host passes, as documented
                    }
                    if let Err(e) = File::open(&f)
                        .and_then(|mut x| io::Read::read(&mut x, &mut [0u8; 1]).map(drop))
                    {
                        unreadable.push(format!("{}: {e}", f.display()));
                    }
                }
            }
            if !unreadable.is_empty() {
                unreadable.sort();
                return Err(exit::input(format!(
                    "--robots-dir: {} robots.txt file(s) cannot be read (their hosts' URLs would all pass): {}",
                    unreadable.len(),
                    unreadable.join("; ")
                )));
            }
            if crate::robots::product_token(&self.robots_agent).is_empty() {
                return Err(exit::usage(format!(
                    "--robots-agent {:?} has no product token (letters, `-` and `_`)",
                    self.robots_agent
                )));
            }
            s.robots = Some(crate::input::RobotsDir::new(dir, &self.robots_agent));
        }
        Ok(s)
    }
}

/// Crawl scope (`check` and `dedup`): the same as a configuration's `[scope]`. Nothing given:
/// every URL is in scope; an empty allow list (domains or patterns) means "everything".
#[derive(Debug, Args)]
#[command(next_help_heading = "Crawl scope")]
pub struct ScopeArgs {
    /// Admit only this domain and its subdomains (repeatable or comma-separated; IDN in either
    /// form). None given: every domain.
    #[arg(
        long = "allow-domain",
        env = "CRAWLSIEVE_ALLOW_DOMAINS",
        value_delimiter = ',',
        value_name = "DOMAIN"
    )]
    pub allow_domains: Vec<String>,
    /// Reject this domain and its subdomains (checked before --allow-domain).
    #[arg(
        long = "deny-domain",
        env = "CRAWLSIEVE_DENY_DOMAINS",
        value_delimiter = ',',
        value_name = "DOMAIN"
    )]
    pub deny_domains: Vec<String>,
    /// A regular expression one of which must match the canonical URL (repeatable). None given:
    /// everything.
    #[arg(long = "allow", env = "CRAWLSIEVE_ALLOW", value_name = "REGEX")]
    pub allow: Vec<String>,
    /// A regular expression that rejects a canonical URL it matches (repeatable; before --allow).
    #[arg(long = "deny", env = "CRAWLSIEVE_DENY", value_name = "REGEX")]
    pub deny: Vec<String>,
    /// A Nutch regex-urlfilter.txt style file: `+regex` / `-regex` lines, first match decides,
    /// no match rejects (repeatable; read as one list).
    #[arg(
        long = "scope-file",
        env = "CRAWLSIEVE_SCOPE_FILE",
        value_name = "FILE"
    )]
    pub scope_files: Vec<PathBuf>,
    /// Most path segments a URL may have (`/a/b/c` has 3).
    #[arg(long, env = "CRAWLSIEVE_MAX_DEPTH")]
    pub max_depth: Option<usize>,
    /// Most query parameters a URL may have.
    #[arg(long, env = "CRAWLSIEVE_MAX_QUERY_PARAMS")]
    pub max_query_params: Option<usize>,
    /// Schemes allowed (comma-separated; default http,https).
    #[arg(
        long = "scheme",
        env = "CRAWLSIEVE_SCHEMES",
        value_delimiter = ',',
        value_name = "SCHEME"
    )]
    pub schemes: Vec<String>,
    /// Ports allowed (comma-separated; default any; a URL without one has its scheme's).
    #[arg(
        long = "port",
        env = "CRAWLSIEVE_PORTS",
        value_delimiter = ',',
        value_name = "PORT"
    )]
    pub ports: Vec<u16>,
    /// Admit only URLs of the same site (registrable domain) as --base.
    #[arg(long, env = "CRAWLSIEVE_SAME_SITE", value_parser = clap::builder::BoolishValueParser::new())]
    pub same_site: bool,
}

impl ScopeArgs {
    /// The scope these flags describe.
    pub fn spec(&self) -> crate::scope::ScopeSpec {
        crate::scope::ScopeSpec {
            allow_domains: self.allow_domains.clone(),
            deny_domains: self.deny_domains.clone(),
            allow: self.allow.clone(),
            deny: self.deny.clone(),
            files: self.scope_files.clone(),
            max_depth: self.max_depth,
            max_query_params: self.max_query_params,
            schemes: self.schemes.clone(),
            ports: self.ports.clone(),
            same_site_as_source: self.same_site,
        }
    }

    fn apply(&self, sieve: &mut Sieve) -> Result<()> {
        if self.same_site && sieve.base.is_none() {
            return Err(exit::usage(
                "--same-site needs --base URL: the site whose URLs are admitted",
            ));
        }
        sieve.scope = crate::scope::Scope::new(&self.spec())
            .map_err(|e| {
                // A scope file that cannot be read, or rules in one that are wrong: input. A
                // flag's own value: usage, named as the flag (`--allow`, not `allow[0]`).
                if e.is_input() {
                    exit::input(e.to_string())
                } else {
                    exit::usage(flag_names(&e.to_string()))
                }
            })?
            .map(std::sync::Arc::new);
        Ok(())
    }
}

/// Write `s` and a newline to standard output. A closed pipe (`| head`) is an error (the run
/// exits 1, quietly: see `main`), never a panic as `println!` makes it.
pub(crate) fn out_line(s: &str) -> Result<()> {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    o.write_all(s.as_bytes())
        .and_then(|()| o.write_all(b"\n"))
        .and_then(|()| o.flush())
        .context("writing to standard output")
}

/// A scope error's message with the settings' names (`allow[0]`, `deny_domains`) written as
/// the flags that set them (`--allow`, `--deny-domain`).
fn flag_names(m: &str) -> String {
    let re = regex::Regex::new(r"\b(allow|deny)\[\d+\]").expect("a valid pattern");
    re.replace_all(m, "--$1")
        .replace("allow_domains:", "--allow-domain")
        .replace("deny_domains:", "--deny-domain")
        .replace("schemes:", "--scheme")
        .replace("ports:", "--port")
}

/// Output destination.
#[derive(Debug, Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Write to FILE instead of stdout.
    #[arg(
        short = 'o',
        long = "output",
        env = "CRAWLSIEVE_OUTPUT",
        value_name = "FILE"
    )]
    pub output: Option<PathBuf>,
}

/// `dedup` output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One new canonical URL a line.
    Plain,
    /// One JSON object per input line: input, verdict, reason, canonical.
    Jsonl,
}

/// `crawlsieve dedup`.
#[derive(Debug, Args)]
pub struct DedupArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Output format.
    #[arg(long, env = "CRAWLSIEVE_FORMAT", value_enum, default_value_t = Format::Plain)]
    pub format: Format,
    /// Keep the filter in FILE across runs (loaded if present, saved after the output is flushed).
    #[arg(
        long,
        help_heading = "In-process filter",
        env = "CRAWLSIEVE_STATE",
        value_name = "FILE",
        conflicts_with = "redis"
    )]
    pub state: Option<PathBuf>,
    /// Expected number of distinct URLs (sizes a new filter) [default: 10000000].
    #[arg(long, help_heading = "In-process filter", env = "CRAWLSIEVE_CAPACITY")]
    pub capacity: Option<u64>,
    /// Target false-positive rate at capacity (sizes a new filter) [default: 1e-4].
    #[arg(long, help_heading = "In-process filter", env = "CRAWLSIEVE_FP_RATE")]
    pub fp_rate: Option<f64>,
    #[command(flatten)]
    pub redis: RedisArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// No summary on stderr.
    #[arg(short, long, help_heading = "Output", env = "CRAWLSIEVE_QUIET", value_parser = clap::builder::BoolishValueParser::new())]
    pub quiet: bool,
}

/// The crawl policy `dedup --redis` applies between the sieve and the filter, as the gate and
/// the API do (`gate::policy`): the same parts, the same Redis keys, the same defaults as the
/// configuration file's.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// Judge URLs by their site's robots.txt, fetched once per origin and shared through Redis
    /// with every gate and API of the namespace (`[robots] enabled`); its agent is
    /// --robots-agent. A URL whose site's rules cannot be read within 10 s is `held`: not
    /// marked seen, judged when the input is run again.
    #[arg(long, help_heading = "Crawl policy (--redis)", env = "CRAWLSIEVE_ROBOTS", value_parser = clap::builder::BoolishValueParser::new(), requires = "redis")]
    pub robots: bool,
    /// Hosts (`HOST` or `HOST:PORT`) the robots.txt fetch may reach although they resolve to
    /// special-purpose addresses (`[robots] allow`; none by default).
    #[arg(
        long,
        help_heading = "Crawl policy (--redis)",
        env = "CRAWLSIEVE_ROBOTS_ALLOW",
        value_delimiter = ',',
        value_name = "HOST"
    )]
    pub robots_allow: Vec<String>,
    /// How long to wait for a site's robots.txt (`[robots] fetch_timeout`); a URL whose site's
    /// rules are still unknown a second after it is `held`.
    #[arg(
        long,
        help_heading = "Crawl policy (--redis)",
        env = "CRAWLSIEVE_ROBOTS_TIMEOUT",
        default_value = "10s"
    )]
    pub robots_timeout: Dur,
    /// At most N new URLs per host and --budget-window, counted with every gate and API of the
    /// namespace (`[redis] max_new_urls_per_host`; 0: no budget); the rest are `host_budget`.
    #[arg(
        long,
        help_heading = "Crawl policy (--redis)",
        env = "CRAWLSIEVE_MAX_NEW_URLS_PER_HOST",
        default_value_t = 0,
        requires = "redis"
    )]
    pub max_new_urls_per_host: u64,
    /// The window of --max-new-urls-per-host.
    #[arg(
        long,
        help_heading = "Crawl policy (--redis)",
        env = "CRAWLSIEVE_BUDGET_WINDOW",
        default_value = "24h"
    )]
    pub budget_window: Dur,
    /// Do not skip URL patterns the render stage verified similar (`[patterns]
    /// enable_url_pattern_dom_dedup = false`; applied by default with --redis).
    #[arg(long, help_heading = "Crawl policy (--redis)", env = "CRAWLSIEVE_NO_PATTERNS", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_patterns: bool,
    /// Do not apply the namespace's learned parameter rules (`[patterns] learned_params =
    /// false`; applied by default with --redis).
    #[arg(long, help_heading = "Crawl policy (--redis)", env = "CRAWLSIEVE_NO_LEARNED_PARAMS", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_learned_params: bool,
}

impl PolicyArgs {
    /// The configuration sections these flags stand for (namespace `ns`, robots agent `agent`).
    pub fn config(&self, ns: &str, agent: &str) -> crate::config::Config {
        let mut cfg = crate::config::Config::default();
        cfg.redis.namespace = ns.to_string();
        cfg.redis.max_new_urls_per_host = self.max_new_urls_per_host;
        cfg.redis.budget_window = self.budget_window;
        cfg.robots.enabled = self.robots;
        cfg.robots.agent = agent.to_string();
        cfg.robots.allow = self.robots_allow.clone();
        cfg.robots.fetch_timeout = self.robots_timeout;
        cfg.patterns.enable_url_pattern_dom_dedup = !self.no_patterns;
        cfg.patterns.learned_params = !self.no_learned_params;
        cfg
    }
}

/// `crawlsieve check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `crawlsieve canon`.
#[derive(Debug, Args)]
pub struct CanonArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `crawlsieve pattern`.
#[derive(Debug, Args)]
pub struct PatternArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Prefix each pattern with this HTTP method (`GET`, `POST`, ...).
    #[arg(long, env = "CRAWLSIEVE_METHOD")]
    pub method: Option<String>,
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    crate::observe::log::init(cli.log_format);
    match cli.command {
        Command::Dedup(a) => dedup(a),
        Command::Check(a) => check(a),
        Command::Canon(a) => canon(a),
        Command::Completions(a) => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            // Into a buffer first: clap_complete panics on a closed pipe (`| head`).
            let mut buf = Vec::new();
            clap_complete::generate(a.shell, &mut cmd, "crawlsieve", &mut buf);
            let mut out = io::stdout().lock();
            out.write_all(&buf)?;
            Ok(out.flush()?)
        }
        Command::Man(a) => man(a),
        Command::Pattern(a) => pattern_cmd(a),
        Command::Bloom(a) => redis::bloom(a),
        Command::Gate(a) => gate::gate(a),
        Command::Cluster(a) => cluster::run(a),
        Command::Robots(a) => robots::run(a),
        Command::Rules(a) => rules::run(a),
        Command::Similar(a) => similar::run(a),
        Command::Render(a) => render::render(a),
        Command::Serve(a) => serve::serve(a),
    }
}

// ---- input and output plumbing ------------------------------------------------------------------

/// The inputs in order: `None` is stdin.
fn sources(input: &InputArgs) -> Vec<Option<&Path>> {
    if input.files.is_empty() {
        vec![None]
    } else {
        input
            .files
            .iter()
            .map(|p| (p.as_os_str() != "-").then_some(p.as_path()))
            .collect()
    }
}

fn source_name(src: Option<&Path>) -> String {
    src.map_or("stdin".into(), |p| p.display().to_string())
}

/// An input and its file descriptor (to ask whether a read would wait: [`would_wait`]).
struct Source {
    reader: BufReader<Box<dyn io::Read>>,
    fd: std::os::fd::RawFd,
}

fn open_source(src: Option<&Path>) -> Result<Source> {
    use std::os::fd::AsRawFd;
    Ok(match src {
        None => Source {
            reader: BufReader::with_capacity(1 << 16, Box::new(io::stdin().lock())),
            fd: io::stdin().as_raw_fd(),
        },
        Some(p) => {
            let f = File::open(p)
                .map_err(|e| exit::input(format!("cannot open {}: {e}", p.display())))?;
            let fd = f.as_raw_fd();
            Source {
                reader: BufReader::with_capacity(1 << 16, Box::new(f)),
                fd,
            }
        }
    })
}

/// Whether reading the next line from `r` may wait for its writer: nothing left in its buffer
/// and nothing ready on the descriptor (a pipe whose writer is quiet: `tail -f log | crawlsieve
/// dedup`). A regular file is always ready; the check is one `poll` per buffer of 64 KiB.
fn would_wait(r: &LineReader<BufReader<Box<dyn io::Read>>>, fd: std::os::fd::RawFd) -> bool {
    // A whole line is buffered: no wait. (Part of one, `url1\nur` then a pause from a
    // block-buffered writer: the read of its rest may wait — found by review.) 4 KiB left hold
    // a line end unless a line is that long: the scan runs only near a buffer's end (it cost
    // `check` 3% on every line).
    let buf = r.get_ref().buffer();
    if buf.len() >= 4096 || memchr::memchr(b'\n', buf).is_some() {
        return false;
    }
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 0
}

/// Iterate over every line of every input, in order: `f(Some(line))`; `f(None)` when the
/// input is quiet and the next read would wait for its writer — write out what is held, so a
/// pipe's results come out as its lines do, not at its end.
fn for_each_line(
    input: &InputArgs,
    progress: Option<&Progress>,
    mut f: impl FnMut(Option<&Line>) -> Result<()>,
) -> Result<()> {
    let mut line = Line::default();
    for src in sources(input) {
        let s = open_source(src)?;
        let mut r = LineReader::new(s.reader, input.max_line_bytes);
        let mut first = true;
        loop {
            if would_wait(&r, s.fd) {
                f(None)?;
            }
            if !r
                .read_line(&mut line)
                .with_context(|| format!("reading {}", source_name(src)))?
            {
                break;
            }
            if std::mem::take(&mut first) {
                strip_bom(&mut line);
            }
            f(Some(&line))?;
            if let Some(p) = progress {
                p.tick(line.bytes.len() as u64 + 1);
            }
        }
    }
    Ok(())
}

/// A UTF-8 byte-order mark at the start of a file (Windows editors write one) is no part of
/// the first candidate (it became `%EF%BB%BFhttps://…`).
fn strip_bom(line: &mut Line) {
    if line.bytes.starts_with(b"\xEF\xBB\xBF") {
        line.bytes.drain(..3);
    }
}

/// Lines a `dedup` batch holds: enough to overlap the filter's cache misses, small enough to
/// stay in L2 with their canonical forms.
const BATCH_LINES: usize = 512;

/// Iterate over the input in batches of up to [`BATCH_LINES`] lines, in order. Lines are read
/// straight into reused slots. `f(lines, quiet)`: `quiet` when the input is quiet and the next
/// read would wait for its writer (the batch is then short, possibly empty): deliver everything
/// held, so a pipe's new URLs come out as its lines do, not at its end.
///
/// With `stop` (a handler installed by [`crate::stage::signals::install_interrupting`]), a
/// SIGTERM/SIGINT ends the input early: the lines read so far are delivered, then `Ok(true)`;
/// a read waiting on a quiet pipe is interrupted for it. `Ok(false)`: the input ended.
fn for_each_batch(
    input: &InputArgs,
    progress: Option<&Progress>,
    stop: Option<crate::stage::Stop>,
    mut f: impl FnMut(&[Line], bool) -> Result<()>,
) -> Result<bool> {
    let mut batch: Vec<Line> = (0..BATCH_LINES).map(|_| Line::default()).collect();
    let mut filled = 0;
    for src in sources(input) {
        let s = open_source(src)?;
        let mut r = LineReader::new(s.reader, input.max_line_bytes).interruptible(stop.is_some());
        let mut first = true;
        loop {
            if stop.is_some_and(|s| s.requested()) {
                f(&batch[..filled], false)?;
                return Ok(true);
            }
            if would_wait(&r, s.fd) {
                f(&batch[..filled], true)?;
                filled = 0;
                // Wait for input in slices, looking at the stop between them: a signal that
                // came after the look above and before the read would not interrupt it.
                if let Some(stop) = stop {
                    while would_wait(&r, s.fd) {
                        if stop.requested() {
                            return Ok(true);
                        }
                        let mut p = libc::pollfd {
                            fd: s.fd,
                            events: libc::POLLIN,
                            revents: 0,
                        };
                        // SAFETY: one valid pollfd; a signal may end the wait early (EINTR).
                        unsafe { libc::poll(&mut p, 1, 100) };
                    }
                }
            }
            let more = match r.read_line(&mut batch[filled]) {
                // Only with `stop`, before any byte of a line: the loop's top decides.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                read => read.with_context(|| format!("reading {}", source_name(src)))?,
            };
            if more && std::mem::take(&mut first) {
                strip_bom(&mut batch[filled]);
            }
            if more {
                if let Some(p) = progress {
                    p.tick(batch[filled].bytes.len() as u64 + 1);
                }
                filled += 1;
            }
            if filled == BATCH_LINES || (!more && filled > 0) {
                f(&batch[..filled], false)?;
                filled = 0;
            }
            if !more {
                break;
            }
        }
    }
    Ok(false)
}

/// Before anything is written: every input file can be opened, and `-o` is none of them (the
/// output is created, so emptied, before the inputs are read: `check -o in.txt in.txt` lost
/// the input, and a missing input was found only after `-o keep.txt` had emptied keep.txt).
fn check_io(input: &InputArgs, o: &OutputArgs) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    // The output file, if it exists already (by device and inode: a hard link or another
    // spelling of the same path is the same file).
    let out_id = o
        .output
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .filter(|m| m.is_file())
        .map(|m| (m.dev(), m.ino()));
    let clash = |what: &str| {
        exit::usage(format!(
            "-o {} is also the input ({what}): it would be emptied before it is read (write to another file)",
            o.output.as_deref().unwrap_or(Path::new("")).display()
        ))
    };
    if let Some(id) = out_id {
        // `check -o urls.txt < urls.txt`: standard input is that very file.
        let stdin_id = std::fs::metadata("/proc/self/fd/0")
            .ok()
            .map(|m| (m.dev(), m.ino()));
        if sources(input).contains(&None) && stdin_id == Some(id) {
            return Err(clash("standard input"));
        }
    }
    for src in sources(input).into_iter().flatten() {
        let m = std::fs::metadata(src)
            .map_err(|e| exit::input(format!("cannot open {}: {e}", src.display())))?;
        if m.is_dir() {
            return Err(exit::input(format!(
                "{} is a directory: give the files in it (one candidate a line)",
                src.display()
            )));
        }
        if out_id == Some((m.dev(), m.ino())) {
            return Err(clash(&src.display().to_string()));
        }
    }
    Ok(())
}

fn open_output(o: &OutputArgs) -> Result<Box<dyn Write>> {
    Ok(match &o.output {
        Some(p) => Box::new(Named {
            inner: BufWriter::with_capacity(
                1 << 16,
                File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
            ),
            name: p.display().to_string(),
        }),
        None => Box::new(Named {
            inner: BufWriter::with_capacity(1 << 16, io::stdout().lock()),
            name: "standard output".into(),
        }),
    })
}

/// A writer whose errors name the file (`writing out.jsonl: No space left on device`), of the
/// same kind (a closed pipe stays a closed pipe).
struct Named<W> {
    inner: W,
    name: String,
}

impl<W: Write> Named<W> {
    fn named(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("writing {}: {e}", self.name))
    }
}

impl<W: Write> Write for Named<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.named(e))
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf).map_err(|e| self.named(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.named(e))
    }
}

/// `{"input": ..., "verdict": ..., "reason": ..., "canonical": ...}` + newline, appended to `out`
/// (callers write the buffer out in large chunks: one `write` per line through `dyn Write` cost
/// more than the rules).
fn write_json_line(
    out: &mut Vec<u8>,
    input: &[u8],
    verdict: &str,
    reason: Option<Reason>,
    canonical: Option<&str>,
) {
    out.extend_from_slice(b"{\"input\":");
    match std::str::from_utf8(input) {
        Ok(s) => push_json_str(out, s),
        Err(_) => push_json_str(out, &String::from_utf8_lossy(input)),
    }
    out.extend_from_slice(b",\"verdict\":\"");
    out.extend_from_slice(verdict.as_bytes());
    out.extend_from_slice(b"\",\"reason\":");
    match reason {
        Some(r) => {
            out.push(b'"');
            out.extend_from_slice(r.code().as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"canonical\":");
    match canonical {
        Some(c) => push_json_str(out, c),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b"}\n");
}

/// Bytes a JSON string must escape (RFC 8259: `"`, `\\`, U+0000–U+001F).
static JSON_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// `s` as a JSON string, byte for byte what `serde_json` writes (short escapes for `\n`, `\r`,
/// `\t`, `\b`, `\f`; `\u00xx` for the other controls; everything else verbatim).
fn push_json_str(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if !JSON_ESCAPE[c as usize] {
            continue;
        }
        out.extend_from_slice(&b[start..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// Output buffered by the caller is written out once it holds this much.
const OUT_CHUNK: usize = 1 << 16;

/// A progress bar on stderr, only when it is a terminal and the input is large.
struct Progress {
    bar: indicatif::ProgressBar,
    pending: std::cell::Cell<u64>,
}

impl Progress {
    fn maybe(input: &InputArgs, quiet: bool) -> Option<Progress> {
        if quiet || !io::stderr().is_terminal() {
            return None;
        }
        let total: Option<u64> =
            if input.files.is_empty() || input.files.iter().any(|p| p.as_os_str() == "-") {
                None
            } else {
                Some(
                    input
                        .files
                        .iter()
                        .filter_map(|p| std::fs::metadata(p).ok())
                        .map(|m| m.len())
                        .sum(),
                )
            };
        let bar = match total {
            Some(t) if t >= 8 << 20 => indicatif::ProgressBar::new(t).with_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .ok()?,
            ),
            Some(_) => return None,
            None => indicatif::ProgressBar::new_spinner().with_style(
                indicatif::ProgressStyle::with_template("{spinner} {bytes} read, {bytes_per_sec}")
                    .ok()?,
            ),
        };
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
        Some(Progress {
            bar,
            pending: std::cell::Cell::new(0),
        })
    }

    fn tick(&self, bytes: u64) {
        let p = self.pending.get() + bytes;
        if p >= 1 << 20 {
            self.bar.inc(p);
            self.pending.set(0);
        } else {
            self.pending.set(p);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

// ---- subcommands --------------------------------------------------------------------------------

/// Counts for the `dedup` summary.
#[derive(Debug)]
pub struct Summary {
    /// Lines read.
    pub lines: u64,
    /// New URLs emitted.
    pub new: u64,
    /// Canonical duplicates.
    pub duplicates: u64,
    /// Of the new URLs, those adopted from an ended run's outbox (`dedup --redis`).
    pub adopted: u64,
    /// Held for robots.txt (`dedup --redis` with `--robots`): not marked seen, judged again
    /// when run again.
    pub held: u64,
    /// Rejections, indexed by [`Reason::index`].
    pub rejected: [u64; Reason::ALL.len()],
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            lines: 0,
            new: 0,
            duplicates: 0,
            adopted: 0,
            held: 0,
            rejected: [0; Reason::ALL.len()],
        }
    }
}

impl Summary {
    fn print(&self, secs: f64, w: &mut dyn Write) -> io::Result<()> {
        let rejected: u64 = self.rejected.iter().sum();
        writeln!(
            w,
            "crawlsieve dedup: {} lines, {} new, {} duplicate, {} rejected in {:.2} s ({:.0} lines/s)",
            self.lines,
            self.new,
            self.duplicates,
            rejected,
            secs,
            self.lines as f64 / secs.max(1e-9)
        )?;
        if self.adopted > 0 {
            writeln!(
                w,
                "  {} of the new URLs were adopted from an ended run's outbox",
                self.adopted
            )?;
        }
        if self.held > 0 {
            writeln!(
                w,
                "  {} held: their site's robots.txt could not be read yet (not marked seen: run the same input again later)",
                self.held
            )?;
        }
        let mut by: Vec<(Reason, u64)> = Reason::ALL
            .iter()
            .map(|r| (*r, self.rejected[r.index()]))
            .filter(|x| x.1 > 0)
            .collect();
        by.sort_by_key(|x| std::cmp::Reverse(x.1));
        for (r, n) in by {
            writeln!(w, "  rejected {:<22} {n}", r.code())?;
        }
        let no_base = self.rejected[Reason::NoBase.index()];
        if no_base > 0 {
            writeln!(
                w,
                "  {no_base} relative line(s) had nothing to resolve them against: give --base URL (the page they were found on)"
            )?;
        }
        Ok(())
    }
}

fn load_or_create(a: &DedupArgs) -> Result<BloomFilter> {
    if let Some(p) = &a.state {
        if p.exists() {
            let f = snapshot::load(p).map_err(|e| {
                exit::input(format!("cannot load the state file {}: {e:#}", p.display()))
            })?;
            // An existing state file keeps its own size: asking for another is a mistake to
            // say, not to ignore (a Redis namespace refuses the same mismatch).
            let have = f.params();
            let mut diff = Vec::new();
            if let Some(c) = a.capacity.filter(|&c| c != have.capacity) {
                diff.push(format!("--capacity {c} ≠ {}", have.capacity));
            }
            if let Some(r) = a.fp_rate.filter(|&r| (r - have.fp_rate).abs() > r * 1e-9) {
                diff.push(format!("--fp-rate {r} ≠ {}", have.fp_rate));
            }
            if !diff.is_empty() {
                return Err(exit::usage(format!(
                    "the state file {} was made with other parameters: {} (leave the flags out to use the file's, or give another --state file)",
                    p.display(),
                    diff.join(", ")
                )));
            }
            return Ok(f);
        }
    }
    let params = BloomParams::new(
        a.capacity.unwrap_or(DEFAULT_CAPACITY),
        a.fp_rate.unwrap_or(DEFAULT_FP_RATE),
    )
    .map_err(|e| exit::usage(format!("--capacity/--fp-rate: {e}")))?;
    BloomFilter::new(params).map_err(|e| exit::usage(format!("--capacity/--fp-rate: {e}")))
}

/// The filter `dedup` uses: in-process (default) or a Redis namespace.
enum DedupFilter {
    Local(BloomFilter),
    Redis(Box<crate::redis_filter::RedisFilter>, std::time::Duration),
}

/// Batches `dedup` keeps in flight to Redis: classification of the next batches overlaps Redis'
/// work on the earlier ones.
const REDIS_DEPTH: usize = 4;

/// Writes verdicts out and counts them.
struct Emitter {
    out: Box<dyn Write>,
    sum: Summary,
    format: Format,
    /// One batch's output, written with one call.
    buf: Vec<u8>,
}

impl Emitter {
    fn emit(&mut self, res: &BatchResult, lines: &[Line]) -> Result<()> {
        for (i, line) in lines.iter().enumerate() {
            let v = res.verdict(i);
            self.sum.lines += 1;
            match v {
                Verdict::New => self.sum.new += 1,
                Verdict::Duplicate => self.sum.duplicates += 1,
                Verdict::Rejected(r) => self.sum.rejected[r.index()] += 1,
                // (`dedup` publishes every new URL: nothing is unpublishable.)
                Verdict::Held | Verdict::Unpublishable => self.sum.held += 1,
            }
            self.format_line(&line.bytes, v, res.canonical(i));
        }
        // One write per batch; a batch is emitted whole before its URLs are confirmed.
        self.write_out()
    }

    /// Format one verdict into the batch's buffer.
    fn format_line(&mut self, input: &[u8], v: Verdict, canonical: Option<&str>) {
        match self.format {
            Format::Plain => {
                if let (Verdict::New, Some(c)) = (v, canonical) {
                    self.buf.extend_from_slice(c.as_bytes());
                    self.buf.push(b'\n');
                }
            }
            Format::Jsonl => {
                write_json_line(&mut self.buf, input, v.as_str(), v.reason(), canonical)
            }
        }
    }

    /// Write the buffered batch with one call.
    fn write_out(&mut self) -> Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

fn dedup(a: DedupArgs) -> Result<()> {
    let mut sieve = a.rules.sieve()?;
    a.scope.apply(&mut sieve)?;
    check_io(&a.input, &a.output)?;
    // The state is saved after the run: a directory that is not there would lose it then, and
    // an output written to the state file would be overwritten by it.
    if let (Some(p), Some(o)) = (&a.state, &a.output.output) {
        if p == o || matches!((p.canonicalize(), o.canonicalize()), (Ok(x), Ok(y)) if x == y) {
            return Err(exit::usage(format!(
                "-o {} is the --state file: the saved filter would overwrite the output",
                o.display()
            )));
        }
    }
    if let Some(p) = &a.state {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(exit::input(format!(
                "--state {}: the directory {} does not exist (the state is saved there after the run)",
                p.display(),
                dir.display()
            )));
        }
    }
    let mut filter = match a.redis.connect(a.capacity, a.fp_rate)? {
        Some(f) => DedupFilter::Redis(Box::new(f), a.redis.redis_retry_for.0),
        None => DedupFilter::Local(load_or_create(&a)?),
    };
    let started = Instant::now();
    let mut em = Emitter {
        out: open_output(&a.output)?,
        sum: Summary::default(),
        format: a.format,
        buf: Vec::with_capacity(OUT_CHUNK),
    };
    let progress = Progress::maybe(&a.input, a.quiet);
    let mut res = BatchResult::default();
    // With the in-process filter, a first SIGTERM/SIGINT ends the input where it is: what was
    // read is decided and written, and the state saved with exactly those URLs (a second
    // signal exits at once, saving nothing). (`--redis`: a killed run's outbox is adopted by the
    // next one instead.)
    let mut stopped = false;
    match &mut filter {
        DedupFilter::Local(f) => {
            let stop = crate::stage::signals::install_interrupting();
            stopped = for_each_batch(&a.input, progress.as_ref(), Some(stop), |lines, quiet| {
                sieve.classify_batch(lines.iter().map(|l| (&l.bytes[..], l.truncated)), &mut res);
                match res.decide(&mut *f) {
                    Ok(()) => {}
                    Err(e) => match e {},
                }
                em.emit(&res, lines)?;
                if quiet {
                    em.out.flush().context("writing the output")?;
                }
                Ok(())
            })?;
        }
        DedupFilter::Redis(f, budget) => {
            let cfg = a.policy.config(&a.redis.namespace, &a.rules.robots_agent);
            let redis = a.redis.config().expect("--redis given");
            let metrics =
                crate::observe::FilterMetrics::new(&crate::observe::Metrics::new("dedup"));
            let mut policy = crate::gate::policy::Policy::with_redis(&cfg, redis, metrics);
            policy.attach(&a.redis.namespace);
            let policy = dedup::DedupPolicy {
                policy,
                names: [a.redis.namespace.clone()],
                robots_wait: cfg.robots.fetch_timeout.0 + std::time::Duration::from_secs(1),
            };
            let mut pipe = dedup::RedisPipe::new(f, *budget, a.quiet, Some(policy));
            pipe.adopt(&mut em)?;
            for_each_batch(&a.input, progress.as_ref(), None, |lines, quiet| {
                if !lines.is_empty() {
                    let (mut res, mut kept) = pipe.pool.pop().unwrap_or_default();
                    sieve.learned = pipe.learned();
                    sieve.classify_batch(
                        lines.iter().map(|l| (&l.bytes[..], l.truncated)),
                        &mut res,
                    );
                    kept.clear();
                    kept.extend_from_slice(lines);
                    pipe.push(res, kept, &mut em)?;
                }
                if quiet {
                    // Complete what is in flight: its new URLs are written and flushed.
                    pipe.drain(&mut em)?;
                }
                Ok(())
            })?;
            pipe.finish(&mut em)?;
        }
    }
    let Emitter { mut out, sum, .. } = em;
    // Deliver, then remember: the state is saved only once every new URL was written out.
    out.flush().context("writing the output")?;
    drop(out);
    drop(progress);
    let filter = match filter {
        DedupFilter::Local(f) => f,
        DedupFilter::Redis(mut f, _) => {
            f.flush().context("updating the namespace's item counter")?;
            if !a.quiet {
                let mut err = io::stderr().lock();
                sum.print(started.elapsed().as_secs_f64(), &mut err)?;
                let c = f.client_stats();
                writeln!(
                    err,
                    "  redis namespace {}: {} answered by the local tier, {} looked up in Redis, {} reconnects, {} answered new after a lost reply, {} outbox entries adopted from ended clients",
                    f.namespace(), c.tier_hits, c.redis_lookups, c.reconnects, c.doubt_rescued, c.adopted
                )?;
            }
            return Ok(());
        }
    };
    if let Some(p) = &a.state {
        snapshot::save(&filter, p)
            .with_context(|| format!("cannot save the state file {}", p.display()))?;
    }
    if !a.quiet {
        let stats = filter.stats();
        let mut err = io::stderr().lock();
        sum.print(started.elapsed().as_secs_f64(), &mut err)?;
        writeln!(
            err,
            "  filter: {} items / capacity {}, fill {:.3}, estimated FP {:.2e} (target {:.0e}), {} bytes",
            stats.items, stats.capacity, stats.fill_ratio, stats.estimated_fp, stats.target_fp, stats.bytes
        )?;
        if stats.items > stats.capacity {
            writeln!(err, "  warning: the filter is past its capacity; use a larger --capacity for a new state file")?;
        }
    }
    if stopped {
        return Err(exit::partial(format!(
            "stopped by a signal after {} input lines, their {} new URLs written{}",
            sum.lines,
            sum.new,
            if a.state.is_some() {
                " and remembered: a run over the whole input again gives only the rest"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

fn check(a: CheckArgs) -> Result<()> {
    let mut sieve = a.rules.sieve()?;
    a.scope.apply(&mut sieve)?;
    check_io(&a.input, &a.output)?;
    let mut out = open_output(&a.output)?;
    let mut buf = Vec::with_capacity(OUT_CHUNK + 4096);
    for_each_line(&a.input, None, |line| {
        let Some(line) = line else {
            out.write_all(&buf)?;
            buf.clear();
            return Ok(out.flush()?);
        };
        match sieve.classify(&line.bytes, line.truncated) {
            Ok(c) => write_json_line(&mut buf, &line.bytes, "keep", None, Some(c)),
            Err(r) => write_json_line(&mut buf, &line.bytes, "reject", Some(r), None),
        }
        if buf.len() >= OUT_CHUNK {
            out.write_all(&buf)?;
            buf.clear();
        }
        Ok(())
    })?;
    out.write_all(&buf)?;
    out.flush()?;
    Ok(())
}

/// The canonical form of one line through the same rules as `check` and `dedup` (the junk
/// rules of `--profile`, `--max-len`, `--context`, the base): `None` when they reject it.
fn canon_line<'a>(sieve: &'a mut Sieve, line: &Line, no_base: &mut u64) -> Option<&'a str> {
    match sieve.classify(&line.bytes, line.truncated) {
        Ok(c) => Some(c),
        Err(r) => {
            *no_base += u64::from(r == Reason::NoBase);
            None
        }
    }
}

/// After `canon` or `pattern`: relative lines printed empty for want of `--base` are said once
/// on stderr (every line empty, and nothing said, looked like a broken tool).
fn hint_no_base(command: &str, no_base: u64) {
    if no_base > 0 {
        eprintln!(
            "crawlsieve {command}: {no_base} relative line(s) printed empty: give --base URL (the page they were found on) to resolve them"
        );
    }
}

fn canon(a: CanonArgs) -> Result<()> {
    let mut sieve = a.rules.sieve()?;
    check_io(&a.input, &a.output)?;
    let mut out = open_output(&a.output)?;
    let mut no_base = 0;
    for_each_line(&a.input, None, |line| {
        let Some(line) = line else {
            return Ok(out.flush()?);
        };
        if let Some(c) = canon_line(&mut sieve, line, &mut no_base) {
            out.write_all(c.as_bytes())?;
        }
        out.write_all(b"\n")?;
        Ok(())
    })?;
    out.flush()?;
    hint_no_base("canon", no_base);
    Ok(())
}

fn pattern_cmd(a: PatternArgs) -> Result<()> {
    if let Some(m) = &a.method {
        if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(exit::usage(format!(
                "--method must be an HTTP method name, got {m:?}"
            )));
        }
    }
    let mut sieve = a.rules.sieve()?;
    check_io(&a.input, &a.output)?;
    let mut out = open_output(&a.output)?;
    let mut no_base = 0;
    for_each_line(&a.input, None, |line| {
        let Some(line) = line else {
            return Ok(out.flush()?);
        };
        if let Some(c) = canon_line(&mut sieve, line, &mut no_base) {
            let p = match &a.method {
                Some(m) => pattern::pattern_with_method(m, c),
                None => pattern::pattern(c),
            };
            out.write_all(p.as_bytes())?;
        }
        out.write_all(b"\n")?;
        Ok(())
    })?;
    out.flush()?;
    hint_no_base("pattern", no_base);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_are_what_serde_json_writes() {
        let all_controls: String = (0u8..0x20).map(char::from).collect();
        for s in [
            "",
            "plain",
            "http://h/a?b=\"c\"&d=\\e",
            "tab\there\nnew\rline\u{8}\u{c}",
            "\u{7f}\u{0}\u{1f} end",
            "中文/ü/😀",
            all_controls.as_str(),
        ] {
            let mut out = Vec::new();
            push_json_str(&mut out, s);
            assert_eq!(out, serde_json::to_vec(s).unwrap(), "{s:?}");
            assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), s);
        }
        let mut line = Vec::new();
        write_json_line(
            &mut line,
            b"a\xffb",
            "reject",
            Some(Reason::InvalidUtf8),
            None,
        );
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["input"], "a\u{fffd}b");
        assert_eq!(v["reason"], "invalid_utf8");
        assert!(v["canonical"].is_null());
        assert_eq!(line.last(), Some(&b'\n'));
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
                if a.is_positional() || matches!(id, "help" | "version" | "print_config") {
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
