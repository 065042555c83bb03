//! Soft 404s in the render stage (issue 26): the probes of [`crate::page::soft404`], shared
//! across render workers through Redis, and the judging of a scope's pages a batch at a time.
//!
//! For each scope (origin and first path segment) of a batch's 2xx pages — and the origin's
//! scope too where a section's root is among them (a section's root is judged only when the
//! section answers as the site does, [`soft404::judge_scope`]) — the worker needs the scope's
//! "not found" template:
//! 1. from its memory (re-read from Redis every [`REREAD`]);
//! 2. else from Redis, `cs:s404:{SCOPE}` (a JSON [`Record`], written with an expiry:
//!    `render.soft_404_ttl`, 6 h by default — a site that changes its error page is probed
//!    again);
//! 3. else it takes the scope's lease (`cs:s404:{SCOPE}:lease`, `SET NX PX`, 2 min) and renders
//!    the probe itself, through the same browser and egress policy as every page, then writes the
//!    record. An origin's probe renders the origin's home page too: whether unknown URLs get
//!    the home page ([`Record::serves_home`]). A worker that does not get the lease judges the scope's pages without a template
//!    for this batch (they are not soft 404s). An HTTP error answer (4xx/5xx, HTML or not) is
//!    an honest answer; a probe that gets no answer (timeout, refused) is not recorded: this
//!    worker does not probe the scope again for [`RETRY_FAILED`], and the lease is left to
//!    expire so another worker may.
//!
//! A scope is judged as `similar` judges it, with one difference: the scope's chrome (the words
//! on at least half of its pages) is measured over the batch's pages *and* the word sets of up to
//! [`HISTORY`] pages of the scope seen in earlier batches, so a batch holding one page of a scope
//! still has its site's navigation and footer set aside.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::page::soft404::{self, Template};
use crate::redis_filter::{LazyConn, RedisFilterError};

/// How long a worker trusts a template it read before reading Redis again.
pub const REREAD: Duration = Duration::from_secs(600);
/// Word sets of earlier pages kept per scope (for its chrome).
pub const HISTORY: usize = 32;
/// Scopes remembered before the memory starts over.
const MAX_SCOPES: usize = 50_000;
/// How long a probing worker holds a scope.
const LEASE: Duration = Duration::from_secs(120);
/// How long a worker waits before probing a scope again after its probe got no answer.
pub const RETRY_FAILED: Duration = Duration::from_secs(600);

/// KEYS[1] the lease, ARGV[1] its holder: deleted only if still held by it.
static RELEASE: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
",
    )
});

/// A scope's probe, as stored in Redis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Format version (1).
    pub v: u32,
    /// The URL probed.
    pub probe: String,
    /// Its status.
    pub status: u16,
    /// Where it ended.
    pub final_url: String,
    /// The template; `null`: unknown URLs are answered honestly (4xx/5xx), or too emptily to
    /// compare with.
    pub template: Option<Template>,
    /// When (RFC 3339).
    pub probed_at: String,
    /// Of an origin's record: whether its template is its home page (the origin's root was
    /// rendered with the probe; [`soft404::serves_home`]) — its sections' roots are then never
    /// judged. Absent (records of an earlier build): taken as yes.
    #[serde(default = "yes")]
    pub serves_home: bool,
}

fn yes() -> bool {
    true
}

/// The Redis key of a scope's record, and of its lease.
pub fn keys(scope: &str) -> (String, String) {
    crate::redis_filter::Keys::soft_404(scope)
}

fn redis_err(e: redis::RedisError) -> RedisFilterError {
    RedisFilterError::from_redis(e, false)
}

/// What a probe answered, for the metrics: `honest`, `redirect`, `page`, `failed`.
pub fn answer_label(r: Option<&Record>) -> &'static str {
    match r.map(|r| &r.template) {
        None => "failed",
        Some(None) => "honest",
        Some(Some(Template::Redirect(_))) => "redirect",
        Some(Some(Template::Page(_))) => "page",
    }
}

/// What [`Probes::templates`] found: each scope's template, each probe rendered now with its
/// record (`None`: it failed), and the origins whose template is their home page.
pub type Found = (
    HashMap<String, Template>,
    Vec<(String, Option<Record>)>,
    HashSet<String>,
);

/// One render worker's soft-404 state.
pub struct Probes {
    ttl: Duration,
    /// Scope → its template (`None`: none needed), whether it serves the home page, and when it
    /// was read.
    known: HashMap<String, (Option<Template>, bool, Instant)>,
    history: HashMap<String, VecDeque<HashSet<String>>>,
    /// Scopes whose probe got no answer, and when.
    failed: HashMap<String, Instant>,
    owner: String,
}

impl Probes {
    /// Probes whose records live `ttl` in Redis.
    pub fn new(ttl: Duration) -> Self {
        Probes {
            ttl,
            known: HashMap::new(),
            history: HashMap::new(),
            failed: HashMap::new(),
            owner: format!("{}:{}", std::process::id(), crate::events::now_rfc3339()),
        }
    }

    /// The templates of `wanted` (scope, a page URL of it): from memory, Redis, or a probe
    /// rendered here; scopes another worker is probing are left out. Also returns each probe
    /// rendered here with its record (`None`: it failed), for the metrics and the log.
    pub fn templates(
        &mut self,
        rt: &tokio::runtime::Runtime,
        seer: &Arc<super::auto::Seer>,
        redis: &mut LazyConn,
        wanted: &[(String, String)],
    ) -> Result<Found, RedisFilterError> {
        if self.known.len() > MAX_SCOPES {
            self.known.clear();
            self.history.clear();
            self.failed.clear();
        }
        let to_probe = self.leased_probes(redis, wanted)?;
        let answers = render_probes(rt, seer, &to_probe);
        let probed = self.record_probes(redis, to_probe, answers)?;
        let (out, homes) = self.remembered(wanted);
        Ok((out, probed, homes))
    }

    /// The scopes of `wanted` to probe here, with their probe URLs: neither fresh in memory,
    /// recently failed, nor recorded in Redis, and whose lease this worker took.
    fn leased_probes(
        &mut self,
        redis: &mut LazyConn,
        wanted: &[(String, String)],
    ) -> Result<Vec<(String, String)>, RedisFilterError> {
        let mut to_probe: Vec<(String, String)> = Vec::new();
        for (scope, sample) in wanted {
            if self
                .known
                .get(scope)
                .is_some_and(|(_, _, at)| at.elapsed() < REREAD)
            {
                continue;
            }
            if self
                .failed
                .get(scope)
                .is_some_and(|at| at.elapsed() < RETRY_FAILED)
            {
                continue;
            }
            let (key, lease) = keys(scope);
            let got: Option<String> =
                redis.with(|c| c.query(redis::cmd("GET").arg(&key)).map_err(redis_err))?;
            if let Some(rec) = got.and_then(|j| serde_json::from_str::<Record>(&j).ok()) {
                self.known.insert(
                    scope.clone(),
                    (rec.template, rec.serves_home, Instant::now()),
                );
                continue;
            }
            let mine: Option<String> = redis.with(|c| {
                c.query(
                    redis::cmd("SET")
                        .arg(&lease)
                        .arg(&self.owner)
                        .arg("NX")
                        .arg("PX")
                        .arg(LEASE.as_millis() as u64),
                )
                .map_err(redis_err)
            })?;
            if mine.is_some() {
                if let Some(u) = soft404::fresh_probe(sample, scope) {
                    to_probe.push((scope.clone(), u));
                }
            }
        }
        Ok(to_probe)
    }

    /// Records each probe's answer (in Redis and memory, or as failed); returns each probe URL
    /// with its record.
    fn record_probes(
        &mut self,
        redis: &mut LazyConn,
        to_probe: Vec<(String, String)>,
        mut answers: Vec<Option<super::Rendered>>,
    ) -> Result<Vec<(String, Option<Record>)>, RedisFilterError> {
        let mut homes = answers
            .split_off(to_probe.len().min(answers.len()))
            .into_iter();
        let mut probed = Vec::new();
        for ((scope, probe), a) in to_probe.into_iter().zip(answers) {
            let home = if soft404::origin_scope(&scope) == scope.as_str() {
                homes.next().flatten().filter(|h| h.error.is_empty())
            } else {
                None
            };
            let rec = probe_record(&probe, a, home.as_ref());
            self.store_probe(redis, &scope, rec.as_ref())?;
            probed.push((probe, rec));
        }
        Ok(probed)
    }

    /// Writes a scope's record to Redis and memory and releases its lease; with no record,
    /// remembers that the scope's probe failed.
    fn store_probe(
        &mut self,
        redis: &mut LazyConn,
        scope: &str,
        rec: Option<&Record>,
    ) -> Result<(), RedisFilterError> {
        let (key, lease) = keys(scope);
        if let Some(rec) = rec {
            let json = serde_json::to_string(rec).expect("a record serializes");
            redis.with(|c| {
                c.query::<()>(
                    redis::cmd("SET")
                        .arg(&key)
                        .arg(json)
                        .arg("PX")
                        .arg(self.ttl.as_millis() as u64),
                )
                .map_err(redis_err)
            })?;
            self.known.insert(
                scope.to_string(),
                (rec.template.clone(), rec.serves_home, Instant::now()),
            );
            let owner = self.owner.clone();
            redis.with(|c| {
                c.script::<i64>(&RELEASE, &lease, &[&owner])
                    .map_err(redis_err)
            })?;
        } else {
            self.failed.insert(scope.to_string(), Instant::now());
        }
        Ok(())
    }

    /// The templates of `wanted` this worker remembers (whatever their age), and the origins
    /// among them whose template is their home page: what [`Probes::templates`] answers from
    /// memory alone (Redis unreachable).
    pub fn remembered(
        &self,
        wanted: &[(String, String)],
    ) -> (HashMap<String, Template>, HashSet<String>) {
        let out = wanted
            .iter()
            .filter_map(|(scope, _)| {
                let (t, _, _) = self.known.get(scope)?;
                Some((scope.clone(), t.clone()?))
            })
            .collect();
        let homes = wanted
            .iter()
            .filter(|(scope, _)| self.known.get(scope).is_some_and(|k| k.1))
            .map(|(scope, _)| scope.clone())
            .collect();
        (out, homes)
    }

    /// Whether this worker knows how `scope` answers unknown URLs (a template, or none needed).
    pub fn knows(&self, scope: &str) -> bool {
        self.known.contains_key(scope)
    }

    /// Which of `pages` (one scope's, this batch) are soft 404s under `t`; their word sets join
    /// the scope's history (those that are not the template word for word).
    /// `site`: the origin's template, when known (it decides whether a section's root is judged).
    pub fn judge(
        &mut self,
        scope: &str,
        t: &Template,
        site: Option<&Template>,
        pages: &[soft404::Rendered],
    ) -> Vec<bool> {
        let words = soft404::pages_words(t, pages);
        let h = self.history.entry(scope.to_string()).or_default();
        let earlier: Vec<HashSet<String>> = h.iter().cloned().collect();
        let verdicts = soft404::judge_words(t, site, pages, &words, &earlier);
        for (w, soft) in words.into_iter().zip(&verdicts) {
            if let (Some(w), false) = (w, soft) {
                h.push_back(w);
                if h.len() > HISTORY {
                    h.pop_front();
                }
            }
        }
        verdicts
    }
}

/// Renders every probe of `to_probe` (and each origin's home page after them), concurrently;
/// `None` where a render task failed.
fn render_probes(
    rt: &tokio::runtime::Runtime,
    seer: &Arc<super::auto::Seer>,
    to_probe: &[(String, String)],
) -> Vec<Option<super::Rendered>> {
    if to_probe.is_empty() {
        return Vec::new();
    }
    let r = seer.clone();
    // An origin's probe renders its home page too ([`Record::serves_home`]).
    let urls: Vec<String> = to_probe
        .iter()
        .map(|(_, u)| u.clone())
        .chain(
            to_probe
                .iter()
                .filter(|(s, _)| soft404::origin_scope(s) == s.as_str())
                .map(|(s, _)| format!("{s}/")),
        )
        .collect();
    rt.block_on(async move {
        let tasks: Vec<_> = urls
            .into_iter()
            .map(|u| {
                let r = r.clone();
                tokio::spawn(async move { r.probe(&u).await })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.ok());
        }
        out
    })
}

/// The record of a probe's answer (with the origin's home page, if rendered); `None` when the
/// probe got no answer.
fn probe_record(
    probe: &str,
    a: Option<super::Rendered>,
    home: Option<&super::Rendered>,
) -> Option<Record> {
    // An answer with an HTTP error status counts, whatever its body (a plain-text 404
    // is an honest answer); no status is no answer.
    a.filter(|a| a.error.is_empty() || a.status >= 400)
        .map(|a| {
            let template = Template::from_probe(probe, &a.final_url, a.status, &a.html);
            let home = home.map(|h| soft404::Rendered {
                url: &h.url,
                final_url: &h.final_url,
                status: h.status,
                html: &h.html,
            });
            let serves_home = template
                .as_ref()
                .is_some_and(|t| soft404::serves_home(t, home.as_ref()));
            Record {
                v: 1,
                template,
                probe: probe.to_string(),
                status: a.status,
                final_url: a.final_url,
                probed_at: crate::events::now_rfc3339(),
                serves_home,
            }
        })
}
