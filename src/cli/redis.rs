//! `--redis` options and `crawlsieve bloom create|stats|export|import|drop`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::config::Dur;
use crate::redis_filter::{
    snapshot, Expect, Mode, NamespaceSpec, RedisConfig, RedisFilter, RedisTls,
};

/// TLS for `rediss://` URLs: what to trust instead of the system's store, and a client
/// certificate.
/// Global, so that `bloom` and `rules` take them before or after their sub-command.
#[derive(Debug, Args, Clone, Default)]
pub struct RedisTlsArgs {
    /// CA certificates (PEM) to trust for rediss:// instead of the system's store (which honours
    /// SSL_CERT_FILE; a Redis Cluster's CA goes there).
    #[arg(long, env = "CRAWLSIEVE_REDIS_CA", value_name = "FILE", global = true)]
    pub redis_ca: Option<PathBuf>,
    /// A client certificate (PEM) for a Redis that asks for one (mutual TLS; needs --redis-key).
    #[arg(
        long,
        env = "CRAWLSIEVE_REDIS_CERT",
        value_name = "FILE",
        global = true
    )]
    pub redis_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM, PKCS#8).
    #[arg(long, env = "CRAWLSIEVE_REDIS_KEY", value_name = "FILE", global = true)]
    pub redis_key: Option<PathBuf>,
}

impl RedisTlsArgs {
    /// The files, as the filter's client takes them.
    pub fn tls(&self) -> RedisTls {
        RedisTls {
            ca: self.redis_ca.clone(),
            cert: self.redis_cert.clone(),
            key: self.redis_key.clone(),
        }
    }
}

/// Where a Redis is, for the commands that only administer it (`bloom`, `rules`): required.
#[derive(Debug, Args, Clone)]
pub struct RedisServerArgs {
    /// Redis URL: redis://host:port[/db], rediss:// for TLS; comma-separated seeds for a
    /// cluster.
    #[arg(
        long,
        env = "CRAWLSIEVE_REDIS",
        value_name = "URL",
        global = true,
        value_parser = super::args::redis_urls
    )]
    pub redis: Option<String>,
    /// Use the cluster protocol even with one seed URL.
    #[arg(long, env = "CRAWLSIEVE_REDIS_CLUSTER", global = true, value_parser = clap::builder::BoolishValueParser::new())]
    pub redis_cluster: bool,
    #[command(flatten)]
    pub tls: RedisTlsArgs,
}

impl RedisServerArgs {
    /// The client settings, or a usage error when no URL is given (`what` says what the Redis
    /// holds, for the message).
    pub fn config(&self, what: &str) -> Result<RedisConfig> {
        let Some(url) = self.redis.as_deref() else {
            return Err(super::exit::usage(format!(
                "--redis URL (or CRAWLSIEVE_REDIS) is required: redis://host:port of the Redis \
                 that holds {what}"
            )));
        };
        let mut cfg = RedisConfig::new(url);
        cfg.cluster |= self.redis_cluster;
        cfg.tls = self.tls.tls();
        Ok(cfg)
    }
}

/// Where the shared filter lives. Without `--redis`, `dedup` uses an in-process filter.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Shared filter (Redis)")]
pub struct RedisArgs {
    /// Share the filter through Redis: `redis://host:port[/db]`; several comma-separated seed
    /// URLs (or --redis-cluster) talk to a Redis Cluster.
    #[arg(long, env = "CRAWLSIEVE_REDIS", value_name = "URL", value_parser = super::args::redis_urls)]
    pub redis: Option<String>,
    /// Use the cluster protocol even with one seed URL.
    #[arg(long, env = "CRAWLSIEVE_REDIS_CLUSTER", value_parser = clap::builder::BoolishValueParser::new())]
    pub redis_cluster: bool,
    #[command(flatten)]
    pub tls: RedisTlsArgs,
    /// The namespace (an independent filter per crawl or tenant); created if missing.
    #[arg(long, env = "CRAWLSIEVE_NAMESPACE", default_value = "default")]
    pub namespace: String,
    /// Timeout of one Redis request or pipeline.
    #[arg(long, env = "CRAWLSIEVE_REDIS_TIMEOUT", default_value = "2s")]
    pub redis_timeout: Dur,
    /// How long to keep retrying while Redis is unavailable before giving up.
    #[arg(long, env = "CRAWLSIEVE_REDIS_RETRY_FOR", default_value = "60s")]
    pub redis_retry_for: Dur,
    /// How long a client's lease outlives it (`dedup`: its outbox of URLs taken but not yet
    /// written is adopted by another run this long after it died) or a gate's claim on a URL
    /// (the longest another gate waits for it after a crash).
    #[arg(long, env = "CRAWLSIEVE_CLAIM_TTL", default_value = "30s")]
    pub claim_ttl: Dur,
    /// How long to wait for a URL another process has claimed (it is publishing it) before
    /// taking it as new anyway: a repeat rather than a stall when that process is stuck.
    #[arg(long, env = "CRAWLSIEVE_BUSY_WAIT", default_value = "500ms")]
    pub busy_wait: Dur,
    /// Entries of the local first tier (16 bytes each; 0 = off).
    #[arg(long, env = "CRAWLSIEVE_LOCAL_TIER", default_value_t = 1 << 21)]
    pub local_tier: usize,
    #[command(flatten)]
    pub create: CreateArgs,
}

/// Parameters of a new namespace; when attaching, the ones given must match the stored ones.
#[derive(Debug, Args, Clone)]
pub struct CreateArgs {
    /// Bits per URL in Redis [default: 5; fewer = faster Redis, more memory].
    #[arg(long, env = "CRAWLSIEVE_HASHES")]
    pub hashes: Option<u32>,
    /// Shards per generation [default: one per 64 MiB].
    #[arg(long, env = "CRAWLSIEVE_SHARDS")]
    pub shards: Option<u32>,
    /// What Redis stores per URL [default: fingerprints]: `bloom` (k bits, smallest), `exact`
    /// (Bloom + 64-bit fingerprints: no false drops), `fingerprints` (fastest; FP 6e-8).
    #[arg(long, env = "CRAWLSIEVE_MODE", value_enum)]
    pub mode: Option<Mode>,
    /// Recrawl window: a URL counts as new again this long after it was last new (e.g. 30d;
    /// the unit must be written: a bare `3` would be 3 seconds).
    #[arg(long, env = "CRAWLSIEVE_WINDOW", value_parser = with_unit)]
    pub window: Option<Dur>,
}

/// A duration whose unit is written: a recrawl window of `3` read as three seconds (where
/// days were meant) would make every URL new again at once.
fn with_unit(s: &str) -> std::result::Result<Dur, String> {
    if s.trim().bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{s:?} has no unit: write it, e.g. {s}d, {s}h or {s}m ({s}s if seconds are meant)"
        ));
    }
    s.parse()
}

impl CreateArgs {
    fn spec(&self, capacity: Option<u64>, fp_rate: Option<f64>) -> Result<NamespaceSpec> {
        let mut spec = NamespaceSpec::new(
            capacity.unwrap_or(super::DEFAULT_CAPACITY),
            fp_rate.unwrap_or(super::DEFAULT_FP_RATE),
        );
        if let Some(k) = self.hashes {
            spec.k = k;
        }
        spec.shards = self.shards;
        if let Some(m) = self.mode {
            spec.mode = m;
        }
        spec.window = self.window_secs()?;
        Ok(spec)
    }

    fn expect(&self, capacity: Option<u64>, fp_rate: Option<f64>) -> Result<Expect> {
        Ok(Expect {
            capacity,
            fp_rate,
            k: self.hashes,
            mode: self.mode,
            window: self.window.map(|_| self.window_secs()).transpose()?,
            shards: self.shards,
        })
    }

    /// The window in whole seconds; one that is not is refused rather than rounded.
    fn window_secs(&self) -> Result<Option<u64>> {
        match self.window {
            None => Ok(None),
            Some(w) if w.0.subsec_nanos() != 0 || w.0.as_secs() == 0 => {
                Err(super::exit::usage(format!(
                    "--window must be a whole number of seconds, at least 1s (got {}): windows \
                     rotate on whole seconds",
                    w
                )))
            }
            Some(w) => Ok(Some(w.0.as_secs())),
        }
    }
}

impl RedisArgs {
    pub(super) fn config(&self) -> Option<RedisConfig> {
        let url = self.redis.as_deref()?;
        let mut cfg = RedisConfig::new(url);
        cfg.cluster |= self.redis_cluster;
        cfg.tls = self.tls.tls();
        cfg.response_timeout = self.redis_timeout.0;
        cfg.local_tier_slots = self.local_tier;
        cfg.claim_ttl = self.claim_ttl.0;
        cfg.busy_wait = self.busy_wait.0;
        Some(cfg)
    }

    /// Attach to (or create) the namespace when `--redis` is given. Parameters given explicitly
    /// must match an existing namespace's.
    pub fn connect(
        &self,
        capacity: Option<u64>,
        fp_rate: Option<f64>,
    ) -> Result<Option<RedisFilter>> {
        let Some(cfg) = self.config() else {
            // Said on the command line only: CRAWLSIEVE_NAMESPACE and the others may be set in
            // the environment for `bloom`/`rules`. A Redis flag without Redis is a mistake to
            // say, not to ignore (`--window 3d` would silently never expire anything).
            const REDIS_ONLY: [&str; 11] = [
                "--namespace",
                "--redis-cluster",
                "--redis-timeout",
                "--redis-retry-for",
                "--claim-ttl",
                "--busy-wait",
                "--local-tier",
                "--hashes",
                "--shards",
                "--mode",
                "--window",
            ];
            let given = std::env::args().find_map(|a| {
                let name = a.split('=').next().unwrap_or(&a).to_string();
                REDIS_ONLY.contains(&name.as_str()).then_some(name)
            });
            if let Some(flag) = given {
                return Err(super::exit::usage(format!(
                    "{flag} needs --redis URL: it sets the shared Redis filter, and without \
                     --redis the filter is in-process (--state FILE keeps it across runs)"
                )));
            }
            return Ok(None);
        };
        if self.claim_ttl.0 < Duration::from_secs(1) {
            return Err(super::exit::usage(format!(
                "--claim-ttl must be at least 1s (got {})",
                self.claim_ttl
            )));
        }
        if self.redis_timeout.0.is_zero() {
            return Err(super::exit::usage(
                "--redis-timeout 0s: every reply would time out; give a duration, e.g. 2s",
            ));
        }
        let ns = &self.namespace;
        let expect = self.create.expect(capacity, fp_rate)?;
        let spec = self.create.spec(capacity, fp_rate)?;
        let where_ = cfg.address();
        // Redis being late at start is a fault like any other: retry within --redis-retry-for.
        let f = crate::redis_filter::with_retry(
            self.redis_retry_for.0,
            |e, wait| eprintln!("crawlsieve: Redis at {where_}: {e}; retrying in {wait:.1?}"),
            || match RedisFilter::attach(cfg.clone(), ns, &expect) {
                Err(crate::redis_filter::RedisFilterError::NotFound(_)) => {
                    RedisFilter::create(cfg.clone(), ns, &spec)
                }
                r => r,
            },
        )
        .with_context(|| format!("cannot attach to the Redis namespace {ns:?} at {where_}"))?;
        for w in f.warnings() {
            eprintln!("crawlsieve: warning: {w}");
        }
        Ok(Some(f))
    }
}

/// `crawlsieve bloom`.
#[derive(Debug, Args)]
pub struct BloomArgs {
    #[command(flatten)]
    pub server: RedisServerArgs,
    #[command(subcommand)]
    pub command: BloomCommand,
}

/// `crawlsieve bloom …` subcommands.
#[derive(Debug, Subcommand)]
pub enum BloomCommand {
    /// Create a namespace and allocate its shards (an existing one is an error).
    Create {
        /// Namespace name.
        namespace: String,
        /// Expected distinct URLs (per window period for windowed namespaces).
        #[arg(long, env = "CRAWLSIEVE_CAPACITY", default_value_t = super::DEFAULT_CAPACITY)]
        capacity: u64,
        /// FP target at capacity.
        #[arg(long, env = "CRAWLSIEVE_FP_RATE", default_value_t = super::DEFAULT_FP_RATE)]
        fp_rate: f64,
        #[command(flatten)]
        create: CreateArgs,
    },
    /// The namespaces this Redis holds (every master of a cluster), as JSON:
    /// `{"namespaces": [...]}`, sorted.
    List,
    /// Parameters, fill, estimated FP rate and memory of every generation (JSON).
    Stats {
        #[command(flatten)]
        namespace: NamespaceArg,
    },
    /// Write a namespace to a snapshot file (versioned, checksummed):
    /// `bloom export NS FILE` or `bloom export NS -o FILE`.
    Export {
        #[command(flatten)]
        namespace: NamespaceArg,
        /// Output file (or `-o FILE`).
        file: Option<PathBuf>,
        /// Output file.
        #[arg(
            short = 'o',
            long = "output",
            value_name = "FILE",
            id = "export_output",
            conflicts_with = "file"
        )]
        output: Option<PathBuf>,
    },
    /// Load a snapshot file into Redis (checksum and sizes are verified first).
    Import {
        /// Snapshot file.
        file: PathBuf,
        /// Target namespace [default: the one it was exported from].
        #[arg(long, env = "CRAWLSIEVE_IMPORT_NAMESPACE")]
        namespace: Option<String>,
        /// Drop an existing namespace of that name first.
        #[arg(long, env = "CRAWLSIEVE_REPLACE", value_parser = clap::builder::BoolishValueParser::new())]
        replace: bool,
    },
    /// Delete a namespace and all its keys (UNLINK).
    Drop {
        #[command(flatten)]
        namespace: NamespaceArg,
    },
    /// Let URLs through once more (every mode; bloom through its re-admit set): each is
    /// canonicalized and fingerprinted as the gate does — pass the same rule flags as its
    /// `[sieve]` — and taken out of the filter; the next gate or API call that sees it
    /// publishes it once. Prints the number forgotten (JSON).
    Forget {
        /// Namespace name.
        #[arg(long, env = "CRAWLSIEVE_NAMESPACE")]
        namespace: String,
        /// URLs to forget; none given, or `-`: one per line on stdin.
        urls: Vec<String>,
        #[command(flatten)]
        sieve_args: Box<super::SieveArgs>,
    },
}

/// A namespace named as an argument (`bloom stats NS`) or, as `bloom forget` and `rules` take
/// it, with `--namespace NS` (issue 45: the sub-commands took it two ways).
#[derive(Debug, Args)]
pub struct NamespaceArg {
    /// Namespace name (or `--namespace NAME`).
    #[arg(value_name = "NAMESPACE")]
    name: Option<String>,
    /// Namespace name. (A variable of its own, not the gate's `CRAWLSIEVE_NAMESPACE`: a bare
    /// `bloom drop` in a gate's shell must not find the live namespace there — review.)
    #[arg(
        long = "namespace",
        value_name = "NAME",
        env = "CRAWLSIEVE_BLOOM_NAMESPACE"
    )]
    flag: Option<String>,
}

impl NamespaceArg {
    /// The namespace, and the positional argument left over when `--namespace` named it (the
    /// next positional slot's value, read into the namespace's by clap).
    fn resolve(self) -> Result<(String, Option<String>)> {
        match (self.flag, self.name) {
            (Some(f), Some(n)) if f == n => Ok((f, None)),
            (Some(f), rest) => Ok((f, rest)),
            (None, Some(n)) => Ok((n, None)),
            (None, None) => Err(super::exit::usage(
                "name the namespace: `crawlsieve bloom … NAMESPACE` or `--namespace NAMESPACE`",
            )),
        }
    }

    /// The namespace, with no other positional argument expected.
    fn only(self) -> Result<String> {
        match self.resolve()? {
            (ns, None) => Ok(ns),
            (ns, Some(extra)) => Err(super::exit::usage(format!(
                "the namespace is named twice ({ns:?} with --namespace or CRAWLSIEVE_BLOOM_NAMESPACE, {extra:?} as an argument): give it once"
            ))),
        }
    }
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    super::lines::out_line(&serde_json::to_string_pretty(v)?)
}

pub(super) fn bloom(a: BloomArgs) -> Result<()> {
    // Without its password (the error is printed).
    let at = RedisConfig::new(a.server.redis.as_deref().unwrap_or_default()).address();
    // Redis unreachable: say which Redis (the error alone said "connection refused").
    bloom_at(a).map_err(|e| {
        let unreachable = e.chain().any(|c| {
            matches!(
                c.downcast_ref::<crate::redis_filter::RedisFilterError>(),
                Some(crate::redis_filter::RedisFilterError::Unavailable { .. })
            )
        });
        if unreachable && !format!("{e:#}").contains(&at) {
            e.context(format!("Redis at {at}"))
        } else {
            e
        }
    })
}

/// `bloom export`: the namespace and the snapshot file, however they were named (`NS FILE`,
/// `NS -o FILE`, `--namespace NS FILE`), then the export.
fn export(
    cfg: &RedisConfig,
    namespace: NamespaceArg,
    file: Option<PathBuf>,
    output: Option<PathBuf>,
) -> Result<()> {
    let (namespace, extra) = namespace.resolve()?;
    // `--namespace NS FILE`: clap read FILE into the namespace's slot.
    let file = match (output, file, extra) {
        (Some(o), None, None) => o,
        (None, Some(f), None) => f,
        (None, None, Some(f)) => f.into(),
        (_, _, Some(other)) => {
            return Err(super::exit::usage(format!(
                "the namespace is named twice ({namespace:?} with --namespace or CRAWLSIEVE_BLOOM_NAMESPACE, {other:?} as an argument): give it once"
            )))
        }
        (None, None, None) => {
            return Err(super::exit::usage(
                "name the snapshot file: `crawlsieve bloom export NAMESPACE FILE` or `-o FILE`",
            ))
        }
        _ => {
            return Err(super::exit::usage(
                "name the snapshot file once: as an argument or with -o FILE",
            ))
        }
    };
    if file.is_dir() {
        return Err(is_a_directory(&file));
    }
    print_json(
        &snapshot::export(cfg, &namespace, &file)
            .with_context(|| format!("exporting to the snapshot file {}", file.display()))?,
    )
}

/// A snapshot path that is a directory: an input error naming the fix.
fn is_a_directory(file: &std::path::Path) -> anyhow::Error {
    super::exit::input(format!(
        "{}: is a directory (name the snapshot file)",
        file.display()
    ))
}

fn bloom_at(a: BloomArgs) -> Result<()> {
    let mut cfg = a.server.config("the namespace")?;
    cfg.local_tier_slots = 0;
    match a.command {
        BloomCommand::Create {
            namespace,
            capacity,
            fp_rate,
            create,
        } => {
            let spec = create.spec(Some(capacity), Some(fp_rate))?;
            let mut f = RedisFilter::create_new(cfg, &namespace, &spec)?;
            print_json(&f.stats()?)
        }
        BloomCommand::List => print_json(&serde_json::json!({
            "namespaces": crate::redis_filter::list_namespaces(&cfg)?
        })),
        BloomCommand::Stats { namespace } => {
            let mut f = RedisFilter::attach(cfg, &namespace.only()?, &Expect::default())?;
            print_json(&f.stats()?)
        }
        BloomCommand::Import { file, .. } if file.is_dir() => Err(is_a_directory(&file)),
        BloomCommand::Export {
            namespace,
            file,
            output,
        } => export(&cfg, namespace, file, output),
        BloomCommand::Import {
            file,
            namespace,
            replace,
        } => print_json(
            &snapshot::import(&cfg, &file, namespace.as_deref(), replace)
                .with_context(|| format!("importing the snapshot file {}", file.display()))?,
        ),
        BloomCommand::Forget {
            namespace,
            urls,
            sieve_args,
        } => forget(cfg, &namespace, urls, &sieve_args),
        BloomCommand::Drop { namespace } => {
            let namespace = namespace.only()?;
            // JSON out, as every `bloom` command (README); a namespace that is not there is
            // an error all the same (a typo must not look like a success).
            if RedisFilter::drop_namespace(&cfg, &namespace)? {
                print_json(&serde_json::json!({"namespace": namespace, "dropped": true}))
            } else {
                Err(super::exit::input(format!(
                    "namespace {namespace:?} does not exist (`crawlsieve bloom list` shows the ones that do)"
                )))
            }
        }
    }
}

/// `crawlsieve bloom forget`.
fn forget(
    cfg: RedisConfig,
    ns: &str,
    urls: Vec<String>,
    sieve_args: &super::SieveArgs,
) -> Result<()> {
    let urls = if urls.is_empty() || urls == ["-"] {
        use std::io::BufRead;
        std::io::stdin()
            .lock()
            .lines()
            .collect::<std::io::Result<Vec<String>>>()?
            .into_iter()
            .filter(|l| !l.trim().is_empty())
            .collect()
    } else {
        urls
    };
    let mut sieve = sieve_args.sieve()?;
    // The namespace's learned parameter rules make its fingerprints, as in the gate and the API.
    let mut f = RedisFilter::attach(cfg.clone(), ns, &Expect::default())?;
    let verify = crate::pattern_verdicts::PatternConfig::default().learned_params_verify_one_in;
    let mut learned = crate::params::RulesCache::new(Duration::ZERO, verify);
    crate::redis_filter::LazyConn::new(cfg).with(|c| learned.refresh(c, ns))?;
    if !learned.rules().is_empty() {
        sieve.learned = Some(learned.rules().clone());
    }
    let (fps, rejected) = sieve.forget_fingerprints(&urls);
    let rejected: Vec<serde_json::Value> = rejected
        .into_iter()
        .map(|(i, r)| serde_json::json!({"url": urls[i], "reason": r}))
        .collect();
    let forgotten = f.forget_urls(&fps)?;
    // Not in the filter (never seen, or already forgotten and not seen since): nothing to do,
    // the next event of such a URL is new anyway.
    let not_in_filter = (fps.len() as u64).saturating_sub(forgotten);
    print_json(&serde_json::json!({
        "namespace": ns,
        "urls": urls.len(),
        "forgotten": forgotten,
        "not_in_filter": not_in_filter,
        "rejected": rejected,
    }))?;
    if rejected.is_empty() {
        Ok(())
    } else {
        // As `robots` does for lines that are no URL: the output was written, some items not done.
        // Every URL not forgotten is counted, each kind named (issue 45: "1 of 3 URLs not
        // forgotten" when two were not).
        let count = super::lines::count_of;
        Err(super::exit::partial(format!(
            "{} of {} not forgotten: {} by the sieve (their reasons are in the output){}",
            rejected.len() as u64 + not_in_filter,
            count(urls.len() as u64, "URL", "URLs"),
            count(rejected.len() as u64, "rejected", "rejected"),
            if not_in_filter > 0 {
                format!(", {not_in_filter} not in the filter (nothing to forget)")
            } else {
                String::new()
            }
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(
            "500ms".parse::<Dur>().unwrap().0,
            Duration::from_millis(500)
        );
        assert_eq!("90".parse::<Dur>().unwrap().0, Duration::from_secs(90));
        assert_eq!(
            "30d".parse::<Dur>().unwrap().0,
            Duration::from_secs(30 * 86400)
        );
        assert!("3x".parse::<Dur>().is_err());
        assert_eq!(
            "2w".parse::<Dur>().unwrap().0,
            Duration::from_secs(14 * 86400)
        );
        assert!("".parse::<Dur>().is_err());
        assert_eq!("1.5".parse::<Dur>().unwrap().0, Duration::from_millis(1500));
        assert_eq!("0.25".parse::<Dur>().unwrap().0, Duration::from_millis(250));
        assert!(".".parse::<Dur>().is_err());
        assert!("1.2.3".parse::<Dur>().is_err());
    }
}
