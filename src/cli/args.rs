//! The argument structs the line commands share — input, junk rules and canonicalization,
//! crawl scope, output, the crawl policy of `dedup --redis` — and the arguments of `dedup`,
//! `check`, `canon` and `pattern` made of them; their value parsers; and what they build: the
//! sieve ([`SieveArgs::sieve`]), its scope ([`ScopeArgs::apply`]), the policy's configuration
//! ([`PolicyArgs::config`]). Their `///` comments are the `--help` text.

use std::fs::File;
use std::io;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use url::Url;

use super::exit;
use super::{Dur, RedisArgs};
use crate::sieve::Sieve;
use crate::url::{Canonicalizer, Merge, Profile, Validator};

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
pub struct SieveArgs {
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

impl SieveArgs {
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

    pub(super) fn apply(&self, sieve: &mut Sieve) -> Result<()> {
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
    pub sieve_args: SieveArgs,
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
    /// Fetch outcomes (JSON Lines of `schemas/fetch-outcome.v1.json`: url, status, source,
    /// context…) to count in the namespace before the input, as the gate counts those of
    /// `kafka.outcomes_topic`; then hold, `fetch_misses`, candidates guessed where guesses miss
    /// ([outcomes] in docs/crawl-policy.md). Counts already in the namespace (from the gate, or
    /// an earlier run) apply too; each run counts its file again (`--outcomes /dev/null`
    /// applies the namespace's counts and adds none).
    #[arg(
        long,
        help_heading = "Crawl policy (--redis)",
        env = "CRAWLSIEVE_OUTCOMES",
        value_name = "FILE",
        requires = "redis"
    )]
    pub outcomes: Option<std::path::PathBuf>,
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
    pub sieve_args: SieveArgs,
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
    pub sieve_args: SieveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `crawlsieve pattern`.
#[derive(Debug, Args)]
pub struct PatternArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub sieve_args: SieveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Prefix each pattern with this HTTP method (`GET`, `POST`, ...).
    #[arg(long, env = "CRAWLSIEVE_METHOD")]
    pub method: Option<String>,
}
