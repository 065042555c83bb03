//! Crawl scope (issue 18): which hosts and paths a crawl may fetch, decided on the canonical URL
//! before the filter, so an out-of-scope URL never takes a place in it.
//!
//! A [`ScopeSpec`] is what users write (`[scope]` in a configuration file, the `--allow-domain`,
//! `--deny-domain`, `--allow`, `--deny`, `--scope-file` … flags of `check` and `dedup`); [`Scope`]
//! is it compiled once: domain sets, the patterns (behind a literal prefilter), the limits. [`Scope::check`] answers
//! with a [`Reason`] of its own for each way out:
//!
//! | order | rule | reason |
//! |---|---|---|
//! | 1 | `schemes` (empty: http and https) | `out_of_scope_scheme` |
//! | 2 | `ports` (empty: any; the scheme's default port counts when none is written) | `out_of_scope_port` |
//! | 3 | `deny_domains`, then `allow_domains` (empty: every domain) | `out_of_scope_domain` |
//! | 4 | `same_site_as_source`: the URL's site is its source's | `off_site` |
//! | 5 | `max_depth` (path segments) | `too_deep` |
//! | 6 | `max_query_params` | `too_many_params` |
//! | 7 | `deny` patterns, then the scope files' rules, then `allow` patterns | `denied_by_rule` |
//!
//! Decisions a user would otherwise have to guess:
//! * **Domains** are hosts with their subdomains, as Scrapy's `allowed_domains`: `example.com`
//!   admits `example.com` and `docs.example.com`, never `badexample.com`; `example.co.uk` never
//!   admits `other.co.uk`. IDN entries are written in either form (`bücher.example` or
//!   `xn--bcher-kva.example`), trailing dots are ignored, IP addresses match exactly. An allowed
//!   domain that is itself a public suffix of the Public Suffix List (`co.uk`, `github.io`) is a
//!   load error: it would admit every site under it (write an `allow` pattern if that is meant).
//! * **Sites** (`same_site_as_source`) are registrable domains from the Public Suffix List (the
//!   `psl` crate ships it): `a.example.co.uk` and `b.example.co.uk` are one site,
//!   `alice.github.io` and `bob.github.io` two (`github.io` is a private suffix). An IP host is
//!   its own site. An event without a `source` is not judged by this rule.
//! * **Patterns** are regular expressions searched (not anchored) in the canonical URL, as
//!   Nutch's `regex-urlfilter.txt` does. The `deny` list rejects on any match; the `allow` list,
//!   when not empty, needs one match (an empty allow list means everything).
//! * **Scope files** are Nutch's `regex-urlfilter.txt` format, with Nutch's meaning, so a user's
//!   file works unchanged: `+pattern` (allow) and `-pattern` (deny) lines, `#` comments, blank
//!   lines; the first line that matches decides, and a URL no line matches is rejected (files are
//!   read in the order given, as one list). Nutch's patterns are Java regular expressions; the
//!   few that need backtracking (the back-references of Nutch's own loop breaker,
//!   `-.*(/.+?)/.*?\1/.*?\1/`) run on `fancy-regex`, every other one on `regex`.
//! * **Cost**: each pattern's necessary literals (`example.com/admin/`, `sessionid=`, `.pdf`) go
//!   into one Aho-Corasick automaton; a URL runs only the patterns whose literal it contains
//!   (grouped into a `RegexSet` per literal set), and the patterns with no usable literal.
//! * A bad scope is an error at load time naming the file, the line and the pattern.
//!
//! The patterns and their literal prefilter are compiled in `patterns.rs`.

use rustc_hash::FxHashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use url::Url;

use crate::url::lex::UrlParts as Parts;
use crate::url::Reason;

mod patterns;

use patterns::{compile_one, Patterns};

/// What a user writes: `[scope]`, or the scope flags of `check` and `dedup`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScopeSpec {
    /// Domains a URL's host must be, or be under (empty: every domain).
    pub allow_domains: Vec<String>,
    /// Domains a URL's host must not be, nor be under (checked first).
    pub deny_domains: Vec<String>,
    /// Regular expressions of which one must match the canonical URL (empty: everything).
    pub allow: Vec<String>,
    /// Regular expressions of which none may match the canonical URL (checked first).
    pub deny: Vec<String>,
    /// Nutch-style rule files: `+pattern` (allow), `-pattern` (deny), `#` comments.
    pub files: Vec<PathBuf>,
    /// Most path segments a URL may have (`/a/b/c` has 3); none: no limit.
    pub max_depth: Option<usize>,
    /// Most query parameters a URL may have; none: no limit.
    pub max_query_params: Option<usize>,
    /// Schemes allowed (empty: http and https).
    pub schemes: Vec<String>,
    /// Ports allowed (empty: any), the scheme's default counting when none is written.
    pub ports: Vec<u16>,
    /// Admit only URLs of the same site (registrable domain) as the page they were found on.
    pub same_site_as_source: bool,
}

impl ScopeSpec {
    /// Nothing is restricted: every URL is in scope.
    pub fn is_empty(&self) -> bool {
        *self == ScopeSpec::default()
    }
}

/// Why a scope could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    /// A scope file could not be read.
    #[error("scope file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A pattern that does not compile (or a line that is not `+pattern` / `-pattern`).
    #[error("{origin}: pattern {pattern:?}: {message}")]
    Pattern {
        /// `file:line`, or the configuration key and index.
        origin: String,
        /// The pattern as written.
        pattern: String,
        /// What is wrong with it.
        message: String,
    },
    /// A domain that is not a host name or IP address, or an allowed public suffix.
    #[error("{key}: {domain:?}: {message}")]
    Domain {
        /// `allow_domains` or `deny_domains`.
        key: &'static str,
        /// The entry as written.
        domain: String,
        /// What is wrong with it.
        message: String,
    },
    /// A scope file whose rules, taken together, cannot be what was meant (none at all, or
    /// only `-` rules: every URL rejected).
    #[error("{path}: {message}")]
    File {
        /// The file (or files, comma-separated).
        path: String,
        /// What is wrong and what to write.
        message: String,
    },
    /// Another setting out of range.
    #[error("{0}")]
    Setting(String),
    /// Several of the above, every one found (a scope file with three bad lines says three).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Many(Vec<ScopeError>),
}

impl ScopeError {
    /// Whether the fault is in a file the scope reads (a scope file that cannot be read, or a
    /// line of one that is no rule) rather than in a flag or setting: an input error (exit 3)
    /// for the command line, where a flag's or setting's own value is a usage error (exit 2).
    pub fn is_input(&self) -> bool {
        match self {
            ScopeError::Read { .. } | ScopeError::File { .. } => true,
            // Rules from files are `file:line`; from flags and settings `key[i]`.
            ScopeError::Pattern { origin, .. } => !origin.ends_with(']'),
            ScopeError::Many(v) => v.iter().any(ScopeError::is_input),
            ScopeError::Domain { .. } | ScopeError::Setting(_) => false,
        }
    }
}

/// A compiled scope. Cheap to share (`Arc`), `Send + Sync`.
#[derive(Debug)]
pub struct Scope {
    allow_domains: FxHashSet<String>,
    deny_domains: FxHashSet<String>,
    allow: Option<Patterns>,
    deny: Option<Patterns>,
    files: Option<FileRules>,
    max_depth: Option<usize>,
    max_query_params: Option<usize>,
    schemes: Vec<String>,
    ports: Vec<u16>,
    same_site_as_source: bool,
}

/// One rule line of a scope file or a configuration list.
struct Rule {
    allow: bool,
    pattern: String,
    origin: String,
}

/// The scope files' rules, in order: the first that matches decides (Nutch).
#[derive(Debug)]
struct FileRules {
    patterns: Patterns,
    /// Allow (`+`) or deny (`-`), per rule position.
    allow: Vec<bool>,
}

impl FileRules {
    fn build(rules: &[Rule]) -> Result<FileRules, ScopeError> {
        Ok(FileRules {
            patterns: Patterns::build(rules, true)?,
            allow: rules.iter().map(|r| r.allow).collect(),
        })
    }

    /// Allowed by the first rule that matches; a URL no rule matches is rejected.
    fn allows(&self, url: &str) -> bool {
        self.patterns
            .first_match(url)
            .is_some_and(|i| self.allow[i])
    }
}

impl Scope {
    /// Compile `spec`; `None` when it restricts nothing (every URL is in scope, at no cost).
    pub fn new(spec: &ScopeSpec) -> Result<Option<Scope>, ScopeError> {
        if spec.is_empty() {
            return Ok(None);
        }
        let file_rules = read_file_rules(spec)?;
        let files = if spec.files.is_empty() {
            None
        } else {
            Some(FileRules::build(&file_rules)?)
        };
        let schemes: Vec<String> = spec
            .schemes
            .iter()
            .map(|s| s.to_ascii_lowercase())
            .collect();
        check_settings(spec, &schemes)?;
        Ok(Some(Scope {
            allow_domains: domain_set("allow_domains", &spec.allow_domains, true)?,
            deny_domains: domain_set("deny_domains", &spec.deny_domains, false)?,
            allow: pattern_list("allow", true, &spec.allow)?,
            deny: pattern_list("deny", false, &spec.deny)?,
            files,
            max_depth: spec.max_depth,
            max_query_params: spec.max_query_params,
            schemes,
            ports: spec.ports.clone(),
            same_site_as_source: spec.same_site_as_source,
        }))
    }

    /// Whether [`Scope::check`] looks at the source (`same_site_as_source`).
    pub fn uses_source(&self) -> bool {
        self.same_site_as_source
    }

    /// Judge a canonical URL (`scheme://host[:port]/path[?query]`, as the canonicalizer writes
    /// it) found on `source` (the page it came from, if known).
    pub fn check(&self, canonical: &str, source: Option<&Url>) -> Result<(), Reason> {
        let p = Parts::of(canonical);
        if !self.schemes.is_empty() && !self.schemes.iter().any(|s| s == p.scheme) {
            return Err(Reason::OutOfScopeScheme);
        }
        if !self.ports.is_empty() && !self.ports.contains(&p.port) {
            return Err(Reason::OutOfScopePort);
        }
        if !self.deny_domains.is_empty() && under_any(p.host, &self.deny_domains) {
            return Err(Reason::OutOfScopeDomain);
        }
        if !self.allow_domains.is_empty() && !under_any(p.host, &self.allow_domains) {
            return Err(Reason::OutOfScopeDomain);
        }
        if self.same_site_as_source {
            if let Some(src) = source.and_then(|s| s.host_str()) {
                // `Url` already wrote the host as the canonicalizer does (lowercase, punycode).
                if site(p.host) != site(src) {
                    return Err(Reason::OffSite);
                }
            }
        }
        if let Some(max) = self.max_depth {
            if p.path.split('/').filter(|s| !s.is_empty()).count() > max {
                return Err(Reason::TooDeep);
            }
        }
        if let Some(max) = self.max_query_params {
            let n = p
                .query
                .map_or(0, |q| q.split('&').filter(|s| !s.is_empty()).count());
            if n > max {
                return Err(Reason::TooManyParams);
            }
        }
        if let Some(deny) = &self.deny {
            if deny.any_match(canonical) {
                return Err(Reason::DeniedByRule);
            }
        }
        if let Some(files) = &self.files {
            if !files.allows(canonical) {
                return Err(Reason::DeniedByRule);
            }
        }
        if let Some(allow) = &self.allow {
            if !allow.any_match(canonical) {
                return Err(Reason::DeniedByRule);
            }
        }
        Ok(())
    }
}

/// The patterns of a configuration list (`key[i]` origins); `None` when it is empty.
fn pattern_list(key: &str, allow: bool, pats: &[String]) -> Result<Option<Patterns>, ScopeError> {
    if pats.is_empty() {
        return Ok(None);
    }
    let rules: Vec<Rule> = pats
        .iter()
        .enumerate()
        .map(|(i, p)| Rule {
            allow,
            pattern: p.clone(),
            origin: format!("{key}[{i}]"),
        })
        .collect();
    Patterns::build(&rules, false).map(Some)
}

/// Read the scope files' rules, in order; every problem of them at once (in file and line
/// order) is the error.
fn read_file_rules(spec: &ScopeSpec) -> Result<Vec<Rule>, ScopeError> {
    let mut file_rules = Vec::new();
    let mut problems = Vec::new();
    for f in &spec.files {
        read_rule_file(f, &mut file_rules, &mut problems)?;
    }
    // Only `-` rules: with "no match rejects", what they do not reject is rejected too, so
    // every URL is. Never what was meant (Nutch's own file ends with `+.`).
    if !file_rules.is_empty() && file_rules.iter().all(|r| !r.allow) {
        problems.push(ScopeError::File {
            path: spec
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            message: "only `-` (reject) rules: a URL no rule matches is rejected too, so every URL would be; end the file with `+.` to admit what the `-` rules do not reject".into(),
        });
    }
    // Every rule that does not compile, not only the first; in file and line order.
    problems.extend(file_rules.iter().filter_map(|r| compile_one(r).err()));
    let line_of = |e: &ScopeError| match e {
        ScopeError::Pattern { origin, .. } => origin
            .rsplit_once(':')
            .and_then(|(f, n)| Some((f.to_string(), n.parse::<usize>().ok()?)))
            .unwrap_or((origin.clone(), 0)),
        _ => (String::new(), 0),
    };
    problems.sort_by_key(line_of);
    none_of(problems)?;
    Ok(file_rules)
}

/// Every problem of the settings (flags) at once: schemes, ports, domain lists, patterns.
fn check_settings(spec: &ScopeSpec, schemes: &[String]) -> Result<(), ScopeError> {
    // Every problem of the settings (flags) at once, as of the files above.
    let mut bad = Vec::new();
    for s in schemes {
        if s != "http" && s != "https" {
            bad.push(ScopeError::Setting(format!(
                "schemes: {s:?}: only http and https are fetched"
            )));
        }
    }
    if spec.ports.contains(&0) {
        bad.push(ScopeError::Setting("ports: 0 is not a port".into()));
    }
    for (key, list, refuse) in [
        ("allow_domains", &spec.allow_domains, true),
        ("deny_domains", &spec.deny_domains, false),
    ] {
        if let Err(e) = domain_set(key, list, refuse) {
            bad.push(e);
        }
    }
    for (key, allow, pats) in [("allow", true, &spec.allow), ("deny", false, &spec.deny)] {
        for (i, p) in pats.iter().enumerate() {
            let rule = Rule {
                allow,
                pattern: p.clone(),
                origin: format!("{key}[{i}]"),
            };
            if let Err(e) = Patterns::build(std::slice::from_ref(&rule), false) {
                bad.push(e);
            }
        }
    }
    none_of(bad)
}

/// `Ok` when there is no problem; the one problem, or [`ScopeError::Many`].
fn none_of(mut problems: Vec<ScopeError>) -> Result<(), ScopeError> {
    match problems.len() {
        0 => Ok(()),
        1 => Err(problems.remove(0)),
        _ => Err(ScopeError::Many(problems)),
    }
}

/// A scope that admits nothing: what a component runs with if its scope failed to compile after
/// the configuration check passed (fail closed: a crawl never leaves its scope by error).
pub fn reject_all() -> Arc<Scope> {
    Arc::new(Scope {
        allow_domains: FxHashSet::default(),
        deny_domains: FxHashSet::default(),
        // No pattern and no literal: nothing ever matches the allow list.
        allow: Some(Patterns::build(&[], false).expect("no pattern to refuse")),
        deny: None,
        files: None,
        max_depth: None,
        max_query_params: None,
        schemes: Vec::new(),
        ports: Vec::new(),
        same_site_as_source: false,
    })
}

/// The scope of a component: `spec` compiled (once per process), or, should that fail here
/// after the configuration check passed, [`reject_all`] with the error logged.
pub fn for_component(spec: &ScopeSpec) -> Option<Arc<Scope>> {
    shared(spec).unwrap_or_else(|e| {
        tracing::error!(error = %e, "the scope does not compile: every URL is rejected");
        Some(reject_all())
    })
}

/// `spec` compiled once per process: the gate and the API build a core per worker (and per
/// request for a namespace's own settings), and a thousand patterns are worth compiling once.
pub fn shared(spec: &ScopeSpec) -> Result<Option<Arc<Scope>>, ScopeError> {
    static CACHE: Mutex<Vec<(ScopeSpec, Option<Arc<Scope>>)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, s)) = cache.iter().find(|(k, _)| k == spec) {
        return Ok(s.clone());
    }
    let s = Scope::new(spec)?.map(Arc::new);
    if cache.len() >= 64 {
        cache.remove(0);
    }
    cache.push((spec.clone(), s.clone()));
    Ok(s)
}

/// `host` is one of `set`, or under one (`a.b.example.com` under `example.com`).
fn under_any(host: &str, set: &FxHashSet<String>) -> bool {
    let mut h = host;
    loop {
        if set.contains(h) {
            return true;
        }
        if h.starts_with('[') {
            return false; // an IPv6 literal has no parents
        }
        match h.as_bytes().iter().position(|&c| c == b'.') {
            Some(i) => h = &h[i + 1..],
            None => return false,
        }
    }
}

/// The site of a host: its registrable domain (Public Suffix List), or the host itself for an IP
/// address or a name the list does not know a suffix of.
pub fn site(host: &str) -> String {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok() {
        return host.to_string();
    }
    match psl::domain(host.as_bytes()) {
        Some(d) => String::from_utf8_lossy(d.as_bytes()).to_ascii_lowercase(),
        None => host.to_ascii_lowercase(),
    }
}

fn domain_set(
    key: &'static str,
    list: &[String],
    refuse_suffixes: bool,
) -> Result<FxHashSet<String>, ScopeError> {
    let mut set = FxHashSet::default();
    set.reserve(list.len());
    for raw in list {
        let err = |message: String| ScopeError::Domain {
            key,
            domain: raw.clone(),
            message,
        };
        let d = raw.trim();
        let d = d.strip_prefix("*.").unwrap_or(d);
        let d = d.strip_suffix('.').unwrap_or(d);
        if d.is_empty() || d.contains(['/', ':', '?', '#', '@', ' ']) && !d.starts_with('[') {
            return Err(err(
                "expected a host name or IP address (no scheme, port or path)".into(),
            ));
        }
        let host = match url::Host::parse(d) {
            Ok(url::Host::Domain(h)) => h.to_ascii_lowercase(),
            Ok(url::Host::Ipv4(a)) => a.to_string(),
            Ok(url::Host::Ipv6(a)) => format!("[{a}]"),
            Err(e) => return Err(err(format!("not a host name: {e}"))),
        };
        if refuse_suffixes && !host.starts_with('[') && host.parse::<std::net::Ipv4Addr>().is_err()
        {
            if let Some(s) = psl::suffix(host.as_bytes()) {
                if s.is_known() && s.as_bytes().eq_ignore_ascii_case(host.as_bytes()) {
                    return Err(err(format!(
                        "is a public suffix: it would admit every site under it; name a site \
                         (e.g. \"example.{host}\"), or write an allow pattern if that is meant"
                    )));
                }
            }
        }
        set.insert(host);
    }
    Ok(set)
}

/// Read a Nutch-style rule file: `+pattern`, `-pattern`, `#` comments, blank lines.
/// The rules of one scope file, appended to `rules`; a line that is no rule goes to `problems`
/// (all of them are reported together). Only an unreadable file stops here.
fn read_rule_file(
    path: &Path,
    rules: &mut Vec<Rule>,
    problems: &mut Vec<ScopeError>,
) -> Result<(), ScopeError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScopeError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let (before, problems_before) = (rules.len(), problems.len());
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let origin = format!("{}:{}", path.display(), n + 1);
        let (allow, pattern) = match l.as_bytes()[0] {
            b'+' => (true, &l[1..]),
            b'-' => (false, &l[1..]),
            _ => {
                problems.push(ScopeError::Pattern {
                    origin,
                    pattern: l.to_string(),
                    message: "a rule line starts with + (allow) or - (deny)".into(),
                });
                continue;
            }
        };
        let pattern = pattern.trim();
        if pattern.is_empty() {
            problems.push(ScopeError::Pattern {
                origin,
                pattern: l.to_string(),
                message: "empty pattern".into(),
            });
            continue;
        }
        rules.push(Rule {
            allow,
            pattern: pattern.to_string(),
            origin,
        });
    }
    if rules.len() == before && problems.len() == problems_before {
        // No rule at all: with Nutch's "no match rejects", every URL would be out of scope.
        problems.push(ScopeError::File {
            path: path.display().to_string(),
            message: "no rule in the file (+regex to admit, -regex to reject); with none, every URL would be rejected".into(),
        });
    }
    Ok(())
}

/// The line of a regex error that says what is wrong (they end with `error: …`).
fn first_line(s: &str) -> String {
    let l = s
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim();
    l.strip_prefix("error: ").unwrap_or(l).to_string()
}

#[cfg(test)]
mod tests;
