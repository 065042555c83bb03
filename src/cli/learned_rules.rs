//! `crawlsieve rules …`: the learned parameter rules of a namespace ([`crate::params`]) —
//! list them, export them, revoke one — and its fetch-outcome holds ([`crate::outcomes`]):
//! list them, release one.

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::redis_filter::Conn;

/// `crawlsieve rules` arguments.
#[derive(Debug, Args)]
pub struct LearnedRulesArgs {
    #[command(flatten)]
    pub server: super::redis::RedisServerArgs,
    /// Namespace whose rules these are.
    #[arg(
        long,
        env = "CRAWLSIEVE_NAMESPACE",
        default_value = "default",
        global = true
    )]
    pub namespace: String,
    #[command(subcommand)]
    pub command: LearnedRulesCommand,
}

/// `crawlsieve rules …` subcommands.
#[derive(Debug, Subcommand)]
pub enum LearnedRulesCommand {
    /// The rules in force, one JSON object per line (host, param, evidence); with
    /// `--revoked`, the revocations instead.
    List {
        /// List the revoked rules (and why) instead of the rules in force.
        #[arg(long, env = "CRAWLSIEVE_RULES_REVOKED", value_parser = clap::builder::BoolishValueParser::new())]
        revoked: bool,
    },
    /// Everything as one JSON document: `{"namespace", "rules": [...], "revoked": [...]}`.
    Export,
    /// Revoke a rule: the gates stop deduplicating HOST's URLs without PARAM within a second, and the
    /// render stage never publishes it again (unless `--clear`).
    Revoke {
        /// The host (`host[:port]`, as `rules list` shows it).
        host: String,
        /// The parameter name.
        param: String,
        /// Remove an earlier revocation instead, so the rule may be learned again.
        #[arg(long, env = "CRAWLSIEVE_RULES_CLEAR", value_parser = clap::builder::BoolishValueParser::new())]
        clear: bool,
    },
    /// The fetch-outcome keys that hold candidates (`fetch_misses`, docs/crawl-policy.md), one
    /// JSON object per line: key, hits, misses, holds, held (candidates kept under it); with `--all`, every key counted (origin
    /// keys, `o|…`, hold nothing: they say where a miss was counted). Judged with the default
    /// thresholds of `[outcomes]` (min_source_misses 1, min_dir_misses 3).
    Holds {
        /// Every key counted, not only those that hold.
        #[arg(long, env = "CRAWLSIEVE_HOLDS_ALL", value_parser = clap::builder::BoolishValueParser::new())]
        all: bool,
    },
    /// Lift a hold: forget the counts of KEY (as `rules holds` shows it); candidates under it
    /// are judged afresh, and those a Kafka gate kept (`held`) are put back on its input topic
    /// by a running gate within seconds. Not an origin key.
    Release {
        /// The key, e.g. `s|js|https://a.example/app.js|https://a.example`.
        key: String,
    },
}

pub(super) fn run(a: LearnedRulesArgs) -> Result<()> {
    let cfg = a.server.config("the namespace's rules")?;
    if let LearnedRulesCommand::Revoke { host, param, .. } = &a.command {
        // A rule's host is `host[:port]` as `rules list` shows it; a URL there would write a
        // revocation no rule ever matches.
        if host.contains("://") || host.contains('/') || host.is_empty() {
            return Err(super::exit::usage(format!(
                "{host:?} is not a host: write it as `rules list` shows it (host or host:port, no scheme or path)"
            )));
        }
        if param.is_empty() || param.contains(['&', '=', '?']) {
            return Err(super::exit::usage(format!(
                "{param:?} is not a parameter name"
            )));
        }
    }
    let mut conn = Conn::connect(&cfg).map_err(|e| {
        super::exit::unreachable(format!("connecting to Redis at {}: {e}", cfg.address()))
    })?;
    let ns = &a.namespace;
    if !crate::redis_filter::layout::is_namespace(ns) {
        return Err(super::exit::usage(format!(
            "--namespace {ns:?} is not a namespace name (1–64 of A–Z a–z 0–9 . _ -)"
        )));
    }
    // A namespace with no filter and no rules is a typo (or the wrong Redis): say so rather
    // than list nothing or write a revocation no gate reads. A namespace whose filter was
    // dropped but whose rules remain is still listed.
    let (r, x, _) = crate::params::keys(ns);
    let there: u64 = conn
        .query(
            redis::cmd("EXISTS")
                .arg(crate::redis_filter::layout::Keys::meta(ns))
                .arg(&r)
                .arg(&x),
        )
        .map_err(|e| super::exit::unreachable(format!("Redis at {}: {e}", cfg.address())))?;
    if there == 0 {
        return Err(super::exit::input(format!(
            "namespace {ns:?} has no filter and no rules in Redis at {}: check --namespace (the gates' and render stages' redis.namespace)",
            cfg.address()
        )));
    }
    match a.command {
        LearnedRulesCommand::Holds { all } => {
            let oc = crate::outcomes::OutcomeConfig::default();
            for h in crate::outcomes::stored(&oc, &cfg, &mut conn, ns)? {
                if all || h.holds {
                    super::lines::out_line(&serde_json::to_string(&h)?)?;
                }
            }
        }
        LearnedRulesCommand::Release { key } => {
            if key.starts_with("o|") {
                return Err(super::exit::input(format!(
                    "{key:?} is an origin key: it holds nothing itself, and forgetting it would lift every hold on the site until its next miss; release the s|… or d|… keys `crawlsieve rules holds` lists"
                )));
            }
            let (had, held) = crate::outcomes::release(&mut conn, ns, &key)?;
            let out = serde_json::json!({"key": key, "released": had, "held": held});
            super::lines::out_line(&serde_json::to_string(&out)?)?;
            if !had && held == 0 {
                return Err(super::exit::input(format!(
                    "no fetch-outcome counts under {key:?} in namespace {ns:?} (`crawlsieve rules holds --all` lists them)"
                )));
            }
        }
        LearnedRulesCommand::List { revoked } => {
            let (rules, revs) = crate::params::list(&mut conn, ns)?;
            if revoked {
                for r in revs {
                    super::lines::out_line(&serde_json::to_string(&r)?)?;
                }
            } else {
                for r in rules {
                    super::lines::out_line(&serde_json::to_string(&r)?)?;
                }
            }
        }
        LearnedRulesCommand::Export => {
            let (rules, revs) = crate::params::list(&mut conn, ns)?;
            let doc = serde_json::json!({"namespace": ns, "rules": rules, "revoked": revs});
            super::lines::out_line(&serde_json::to_string_pretty(&doc)?)?;
        }
        LearnedRulesCommand::Revoke { host, param, clear } => {
            let out = if clear {
                let had = crate::params::clear_revocation(&mut conn, ns, &host, &param)?;
                serde_json::json!({"host": host, "param": param, "revocation_cleared": had})
            } else {
                let had = crate::params::revoke(&mut conn, ns, &host, &param, "operator")?;
                serde_json::json!({"host": host, "param": param, "revoked": true, "was_in_force": had})
            };
            super::lines::out_line(&serde_json::to_string(&out)?)?;
        }
    }
    Ok(())
}
