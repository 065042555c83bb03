//! Learned parameter rules in Redis (issue 26): the render stage publishes what its learner
//! ([`crate::page::params`]) decided; gates and the API read the rules of their namespace and
//! apply them in canonicalization ([`crate::url::LearnedRules`]); an operator lists, exports and
//! revokes them (`crawlsieve rules list|revoke`).
//!
//! # Redis format (version 1)
//! Three keys per namespace, one hash tag (one slot on a cluster):
//! * `cs:lp:{NS}` — hash, field `HOST PARAM` (a space cannot occur in either), value a JSON
//!   [`Rule`]: the rules in force.
//! * `cs:lp:{NS}:revoked` — hash, same fields, value a JSON [`Revocation`]. A revoked rule is
//!   never published again (the learner met a counter-example, or an operator said no); an
//!   operator's `rules revoke --clear` removes the revocation.
//! * `cs:lp:{NS}:ver` — a counter incremented with every change. Readers ask for it (one `GET`)
//!   at most once per [`RulesCache`] period and read the rules again only when it moved, so a
//!   gate with no rules pays one `GET` a second.
//!
//! A rule in force applies to URLs gated after a reader saw it (≤ one period). URLs gated before
//! keep their place in the filter under their longer form; a revoked rule lets the variants in
//! again as distinct URLs (nothing is lost either way, some pages are fetched twice).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::page::params::Learned;
use crate::redis_filter::{Conn, RedisFilterError};
use crate::url::LearnedRules;

/// A rule in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Format version (1).
    pub v: u32,
    pub host: String,
    pub param: String,
    /// Distinct values seen serving the same page.
    pub values: usize,
    /// Distinct paths they were seen on.
    pub paths: usize,
    /// Comparisons that found the same page.
    pub samples: usize,
    /// One URL of the evidence.
    pub example: String,
    /// When it was published (RFC 3339).
    pub learned_at: String,
}

/// A revoked rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revocation {
    /// Format version (1).
    pub v: u32,
    pub host: String,
    pub param: String,
    /// Why: `counter-example: A | B` (two URLs that differ only in the parameter and are
    /// different pages), or `operator`.
    pub why: String,
    /// When (RFC 3339).
    pub revoked_at: String,
}

/// The keys of namespace `ns`'s rules: (rules, revoked, version).
pub fn keys(ns: &str) -> (String, String, String) {
    crate::redis_filter::Keys::learned_params(ns)
}

fn field(host: &str, param: &str) -> String {
    format!("{} {param}", host.to_ascii_lowercase())
}

fn redis_err(e: redis::RedisError) -> RedisFilterError {
    RedisFilterError::from_redis(e, false)
}

/// KEYS: rules, revoked, version; ARGV: field, rule. 0: revoked (not written), 1: written,
/// 2: already in force.
static PUBLISH: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 2 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('INCR', KEYS[3])
return 1
",
    )
});

/// KEYS: rules, revoked, version; ARGV: field, revocation. Whether a rule was in force.
static REVOKE: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"
local had = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('INCR', KEYS[3])
return had
",
    )
});

/// What [`publish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    Written,
    AlreadyInForce,
    /// Revoked before: not written.
    Revoked,
}

/// Publish a rule the learner decided (the render stage's side; tests use it too).
pub fn publish(conn: &mut Conn, ns: &str, l: &Learned) -> Result<Published, RedisFilterError> {
    let rule = Rule {
        v: 1,
        host: l.host.to_ascii_lowercase(),
        param: l.param.clone(),
        values: l.values,
        paths: l.paths,
        samples: l.samples,
        example: l.example.clone(),
        learned_at: crate::events::now_rfc3339(),
    };
    let json = serde_json::to_string(&rule).expect("a rule serializes");
    let (r, x, v) = keys(ns);
    let n: i64 = conn
        .script_keys(&PUBLISH, &[&r, &x, &v], &[&field(&l.host, &l.param), &json])
        .map_err(redis_err)?;
    Ok(match n {
        0 => Published::Revoked,
        2 => Published::AlreadyInForce,
        _ => Published::Written,
    })
}

/// Revoke (host, param) for `why`; whether a rule was in force. A revocation is kept even when
/// no rule was (the learner will not publish it later).
pub fn revoke(
    conn: &mut Conn,
    ns: &str,
    host: &str,
    param: &str,
    why: &str,
) -> Result<bool, RedisFilterError> {
    let rev = Revocation {
        v: 1,
        host: host.to_ascii_lowercase(),
        param: param.to_string(),
        why: why.to_string(),
        revoked_at: crate::events::now_rfc3339(),
    };
    let json = serde_json::to_string(&rev).expect("a revocation serializes");
    let (r, x, v) = keys(ns);
    let n: i64 = conn
        .script_keys(&REVOKE, &[&r, &x, &v], &[&field(host, param), &json])
        .map_err(redis_err)?;
    Ok(n > 0)
}

/// Remove the revocation of (host, param), so the learner may publish it again; whether there
/// was one.
pub fn clear_revocation(
    conn: &mut Conn,
    ns: &str,
    host: &str,
    param: &str,
) -> Result<bool, RedisFilterError> {
    let (_, x, _) = keys(ns);
    let n: i64 = conn
        .query(redis::cmd("HDEL").arg(&x).arg(field(host, param)))
        .map_err(redis_err)?;
    Ok(n > 0)
}

/// The rules in force and the revocations of namespace `ns`, each sorted by (host, param).
/// Entries that do not parse (written by something else) are skipped with a warning.
pub fn list(conn: &mut Conn, ns: &str) -> Result<(Vec<Rule>, Vec<Revocation>), RedisFilterError> {
    let (r, x, _) = keys(ns);
    let rules: Vec<(String, String)> = conn
        .query(redis::cmd("HGETALL").arg(&r))
        .map_err(redis_err)?;
    let revs: Vec<(String, String)> = conn
        .query(redis::cmd("HGETALL").arg(&x))
        .map_err(redis_err)?;
    fn parse<T: serde::de::DeserializeOwned>(key: &str, all: Vec<(String, String)>) -> Vec<T> {
        all.into_iter()
            .filter_map(|(f, v)| match serde_json::from_str(&v) {
                Ok(t) => Some(t),
                Err(e) => {
                    tracing::warn!(key, field = f, error = %e, "learned parameter rule not readable; skipped");
                    None
                }
            })
            .collect()
    }
    let mut rules: Vec<Rule> = parse(&r, rules);
    let mut revs: Vec<Revocation> = parse(&x, revs);
    rules.sort_by(|a, b| (&a.host, &a.param).cmp(&(&b.host, &b.param)));
    revs.sort_by(|a, b| (&a.host, &a.param).cmp(&(&b.host, &b.param)));
    Ok((rules, revs))
}

/// A reader's copy of a namespace's rules (gate, API): asks for the version at most once per
/// `every`, reads the rules when it moved.
pub struct RulesCache {
    every: Duration,
    verify_one_in: u64,
    version: Option<Option<i64>>,
    read_at: Option<Instant>,
    rules: Arc<LearnedRules>,
}

impl RulesCache {
    /// A cache asking Redis at most once per `every`; its rules keep one URL in
    /// `verify_one_in` as itself ([`LearnedRules::verify_one_in`]).
    pub fn new(every: Duration, verify_one_in: u64) -> Self {
        RulesCache {
            every,
            verify_one_in,
            version: None,
            read_at: None,
            rules: Arc::default(),
        }
    }

    /// The rules as last read.
    pub fn rules(&self) -> &Arc<LearnedRules> {
        &self.rules
    }

    /// Read the rules of `ns` again if due and they changed. On an error the rules read before
    /// stay in force, and the next attempt is a period later (a Redis away costs one attempt
    /// per period, not one per batch).
    pub fn refresh(&mut self, conn: &mut Conn, ns: &str) -> Result<(), RedisFilterError> {
        if self.read_at.is_some_and(|t| t.elapsed() < self.every) {
            return Ok(());
        }
        self.read_at = Some(Instant::now());
        let (_, _, v) = keys(ns);
        let ver: Option<i64> = conn.query(redis::cmd("GET").arg(&v)).map_err(redis_err)?;
        if self.version != Some(ver) {
            let (rules, _) = list(conn, ns)?;
            let mut l = LearnedRules::new(rules.into_iter().map(|r| (r.host, r.param)));
            l.verify_one_in = self.verify_one_in;
            self.rules = Arc::new(l);
            self.version = Some(ver);
        }
        Ok(())
    }
}
