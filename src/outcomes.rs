//! Fetch outcomes teach the gate (issue 46): what fetching the URLs guessed from one place
//! returned says whether to keep guessing from there.
//!
//! A URL candidate found in a script (`ui/dark/skin.css`, `en.json`) is junk only because
//! nothing answers where it resolves; no rule over the string tells it from a real one. What
//! does is the fetches of its siblings. Every fetch outcome (`schemas/fetch-outcome.v1.json`: a
//! 2xx that is not a soft 404 is a **hit**; a 404, a 410 or a soft 404 a **miss**; anything
//! else neither) is counted under two **keys** of where its URL was guessed:
//!
//! * the **source key** — the context and the page or script it was found in
//!   (`s|js|https://a.example/app.js`): a script whose guesses so far all missed;
//! * the **directory key** — the context and the directory it resolved to
//!   (`d|js|https://a.example/static/`): a place where guesses miss, or where one landed.
//!
//! **The rule** ([`OutcomeConfig`], chosen on data in docs/crawl-policy.md, "Fetch outcomes"): a
//! candidate is **held** (`fetch_misses`) when nothing guessed into its directory ever hit and
//! either its source's guesses all missed (at least `min_source_misses` of them, no hit) or its
//! directory had at least `min_dir_misses` misses. A hit in the directory lifts the hold for
//! every candidate there; a hit from the source lifts the source's rule on that site (the
//! source key is per target origin), not a directory's where guesses miss. A **module path**
//! (`./x.js`, `../y.mjs`: [`module_path`]) is never held: that is how a script names its own
//! files, and the real pages of scripts that have shown hits are mostly those. One held
//! candidate in `probe_one_in` (by its fingerprint: the same URL is always a probe or never) is
//! published anyway, so a site that changes is noticed.
//!
//! Held candidates are not put in the filter: a later event of the same URL is judged again,
//! and passes once the keys say so. The gate audits each with its reason, and **keeps** it so
//! that it can come back: the Kafka gate stores its URL event under the keys whose hit would
//! lift it (`cs:fh:{NS:H}`, a hash by fingerprint, expiring [`kept_ttl`] after the last hold or
//! outcome there), and the first hit counted under one of them, or `crawlsieve rules release`
//! of one, puts it back on the gate's input topic, where it is judged again ([`move_held`]; a
//! copy under the other key comes back as a duplicate later, answered by the filter). A hold is
//! never decided on cached counts alone: a candidate they would hold is judged again on counts
//! read after it was kept ([`OutcomeStore::hold_fresh`]), so a hit counted meanwhile either lets
//! it through or finds it kept. Candidates under keys whose counts expire (`ttl` with no
//! outcome and no hold there: the hold lapsed) are put back by the reader's sweep
//! ([`orphaned`], every [`SWEEP`]). Each held candidate is also in the audit topic
//! (`fetch_misses`). The HTTP API and `dedup` keep nothing: their caller has the answer.
//!
//! # Redis format (version 1)
//! One hash per key and namespace, `cs:fo:{NS:H}` (`H` the 16-hex-digit xxh3-64 of the key;
//! [`crate::redis_filter::Keys::fetch_outcomes`]), fields `h` and `m` (hits, misses), expiring
//! `ttl` after its last outcome. Writers `HINCRBY` and `EXPIRE` in one pipeline; readers `HMGET`
//! the keys of a batch in one pipeline and keep the answers for `cache_ms`.
//!
//! Each outcome also counts under its URL's **origin key** (`o|ORIGIN`), which never holds
//! anything: a reader asks the origins of a batch first (a few keys, cached) and looks up the
//! source and directory keys only of candidates on an origin with a miss. A site nothing ever
//! missed on costs no more than that (measured: with every key empty, the gate's CPU per event
//! was 50% higher before this, docs/crawl-policy.md). It expires `2 × ttl` after its last
//! outcome, so it outlives the keys under it, also when `ttl` is lowered by up to half between
//! writers. Its counts may be up to `cache_ms` old at a reader, like every key's. (A reader of a build
//! before this one wrote no origin keys: its counts hold nothing until outcomes are counted
//! again.)

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::redis_filter::{Conn, Keys, RedisFilterError};
use crate::url::Context;

/// `[outcomes]`: what fetch outcomes do to the gate, the API and `dedup --redis`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutcomeConfig {
    /// Apply the holds (outcomes are counted whenever they arrive).
    pub enabled: bool,
    /// A source whose guesses all missed holds its next ones after this many misses.
    pub min_source_misses: u64,
    /// A directory with no hit holds what resolves into it after this many misses.
    pub min_dir_misses: u64,
    /// One held candidate in this many is published anyway (a probe); 0: none.
    pub probe_one_in: u64,
    /// How long counts live after a key's last outcome (seconds).
    pub ttl: u64,
    /// How long a reader trusts counts it read (milliseconds).
    pub cache_ms: u64,
    /// The contexts whose candidates may be held (outcomes of every context are counted).
    pub contexts: Vec<Context>,
}

impl Default for OutcomeConfig {
    fn default() -> Self {
        OutcomeConfig {
            enabled: true,
            min_source_misses: 1,
            min_dir_misses: 3,
            probe_one_in: 20,
            ttl: 7 * 24 * 3600,
            cache_ms: 1000,
            contexts: vec![
                Context::Js,
                Context::Text,
                Context::HtmlText,
                Context::Unknown,
            ],
        }
    }
}

/// What an outcome says of a guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A 2xx that is not a soft 404: a real page.
    Hit,
    /// A 404, a 410, or a soft 404.
    Miss,
}

/// The kind of an outcome of `status` (0: nothing answered), or none (a redirect that was not
/// followed, a 401, a 5xx, nothing answering: no evidence either way).
pub fn kind(status: u16, soft_404: bool) -> Option<Kind> {
    match status {
        200..=299 if soft_404 => Some(Kind::Miss),
        200..=299 => Some(Kind::Hit),
        404 | 410 => Some(Kind::Miss),
        _ => None,
    }
}

/// A guess's two keys ([module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GuessKeys {
    /// `s|CONTEXT|SOURCE|ORIGIN` (none without a source).
    pub source: Option<String>,
    /// `d|CONTEXT|ORIGIN/DIR/`.
    pub dir: String,
    /// `o|ORIGIN` ([`origin_key`]).
    pub origin: String,
}

/// The origin key of `url` (absolute): `o|ORIGIN`.
pub fn origin_key(url: &str) -> String {
    format!("o|{}", crate::url::lex::origin(url))
}

/// The keys of `url` (absolute) found in `source` with `context` (`unknown` when none). The
/// source is taken without its fragment; the directory is the URL up to its last `/` before any
/// query.
pub fn keys(url: &str, source: Option<&str>, context: Option<Context>) -> GuessKeys {
    let ctx = context.unwrap_or(Context::Unknown).as_str();
    let path_end = url.find(['?', '#']).unwrap_or(url.len());
    let dir_end = url[..path_end].rfind('/').map_or(path_end, |i| i + 1);
    GuessKeys {
        source: source.filter(|s| !s.is_empty()).map(|s| {
            format!(
                "s|{ctx}|{}|{}",
                s.split('#').next().unwrap_or(s),
                crate::url::lex::origin(url)
            )
        }),
        dir: format!("d|{ctx}|{}", &url[..dir_end]),
        origin: origin_key(url),
    }
}

/// Hits and misses under one key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub hits: u64,
    pub misses: u64,
}

impl Counts {
    fn add(&mut self, k: Kind) {
        match k {
            Kind::Hit => self.hits += 1,
            Kind::Miss => self.misses += 1,
        }
    }
}

/// What the counts say of one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    /// Publish it.
    Pass,
    /// Hold it (`fetch_misses`).
    Hold,
    /// The keys say hold, but it is one of the probes: publish it.
    Probe,
}

/// Whether candidates found in `context` (none: unknown) may be held.
pub fn holds_in(cfg: &OutcomeConfig, context: Option<Context>) -> bool {
    cfg.contexts.contains(&context.unwrap_or(Context::Unknown))
}

/// Whether a candidate written as `raw` is a **module path**: dot-relative (`./x.js`,
/// `../lib/y.mjs`) with a script's extension (`.js`, `.mjs`, `.cjs`), before any query or
/// fragment. That is how an ES module import or a CommonJS `require` names a file of its own
/// package, resolved against the importing script exactly as the gate resolves it (a bare
/// `macros.js` in a bundle is not): such candidates are never held (measured in
/// docs/crawl-policy.md: 34 of 37 on the design set were real, and 413 of 414 on hold-out 3).
pub fn module_path(raw: &[u8]) -> bool {
    let raw = raw.trim_ascii();
    if !(raw.starts_with(b"./") || raw.starts_with(b"../")) {
        return false;
    }
    let end = raw
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(raw.len());
    let path = &raw[..end];
    // A path through `node_modules/` is a build's (a bundle naming the module it inlined, as
    // `../../node_modules/.pnpm/dayjs@1.11.13/node_modules/dayjs/plugin/isoWeek.js`), not a
    // file the site serves beside the script: judged like any guess.
    if path.windows(13).any(|w| w == b"node_modules/") {
        return false;
    }
    [&b".js"[..], b".mjs", b".cjs"].iter().any(|ext| {
        path.len() > ext.len()
            && path.ends_with(ext)
            && path[..path.len() - ext.len()].last() != Some(&b'/')
    })
}

/// A value no other hold or release writes: 16 hex digits of the time, the process and a
/// counter. A kept candidate's value starts with one (`NONCE EVENT`), so that putting it back
/// deletes exactly the hold it delivered, never a newer hold of the same URL written meanwhile.
fn nonce() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!(
        "{t}:{}:{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(seed.as_bytes()))
}

/// How often a gate's outcome reader sweeps for kept candidates whose counts are gone
/// ([`orphaned`]).
pub const SWEEP: Duration = Duration::from_secs(600);

/// How long candidates kept under a key live after its last hold or outcome (seconds): twice
/// its counts' `ttl` and two sweeps more, so that every sweep finds them after their counts
/// expired and before they go, however short `ttl` is.
pub fn kept_ttl(ttl: u64) -> u64 {
    ttl.max(1)
        .saturating_mul(2)
        .saturating_add(2 * SWEEP.as_secs())
}

/// The URL event of a kept value, `NONCE EVENT` (16 hex digits and a space); a value without
/// one is the event whole.
fn kept_event(value: &[u8]) -> &[u8] {
    match value.get(..17) {
        Some(head) if head[16] == b' ' && head[..16].iter().all(u8::is_ascii_hexdigit) => {
            &value[17..]
        }
        _ => value,
    }
}

/// Delete each `field value` pair of ARGV from the hash KEYS[1] whose value is still `value`.
const DELETE_IF_SAME: &str = "local n = 0 \
for i = 1, #ARGV, 2 do \
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then \
    redis.call('HDEL', KEYS[1], ARGV[i]) n = n + 1 \
  end \
end \
return n";

/// The rule of the [module docs](self), for a candidate with fingerprint `fp`.
pub fn judge(cfg: &OutcomeConfig, source: Counts, dir: Counts, fp: u128) -> Judgement {
    if dir.hits > 0 {
        return Judgement::Pass;
    }
    let source_misses =
        cfg.min_source_misses > 0 && source.hits == 0 && source.misses >= cfg.min_source_misses;
    let dir_misses = cfg.min_dir_misses > 0 && dir.misses >= cfg.min_dir_misses;
    if !(source_misses || dir_misses) {
        return Judgement::Pass;
    }
    let mixed = (fp as u64) ^ ((fp >> 64) as u64);
    if cfg.probe_one_in > 0
        && mixed
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .is_multiple_of(cfg.probe_one_in)
    {
        Judgement::Probe
    } else {
        Judgement::Hold
    }
}

/// One namespace's counts as this process knows them: read from Redis in batches, cached for
/// `cache_ms`, and bumped at once by the outcomes this process records.
pub struct OutcomeStore {
    cfg: OutcomeConfig,
    ns: String,
    cache: HashMap<String, (Counts, Instant)>,
    /// When the cache was last pruned of stale answers.
    pruned: Instant,
}

impl OutcomeStore {
    /// The store of namespace `ns`.
    pub fn new(cfg: OutcomeConfig, ns: &str) -> OutcomeStore {
        OutcomeStore {
            pruned: Instant::now(),
            cfg,
            ns: ns.to_string(),
            cache: HashMap::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OutcomeConfig {
        &self.cfg
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// Count `outcomes` (keys and kind) in Redis: `HINCRBY` and `EXPIRE` per key, one pipeline.
    /// Counted at least once: a retry after a lost reply counts again (an extra miss or hit
    /// moves a threshold by one; losing one would not be noticed either). Returns the keys a
    /// hit was counted under that have held candidates (each once): the caller puts them back
    /// ([`move_held`]). The check follows the increment on the key's node, so a candidate a
    /// gate held without seeing this hit ([`OutcomeStore::hold_fresh`]) is found by it.
    pub fn record(
        &mut self,
        conn: &mut Conn,
        outcomes: &[(GuessKeys, Kind)],
    ) -> Result<Vec<String>, RedisFilterError> {
        let mut cmds = Vec::with_capacity(outcomes.len() * 4);
        // The position in `cmds` of each `EXISTS` of a hit key's held candidates.
        let mut asked: Vec<(usize, &str)> = Vec::new();
        let mut seen: std::collections::HashSet<&str> = Default::default();
        for (k, kind) in outcomes {
            let field = if *kind == Kind::Hit { "h" } else { "m" };
            for key in k.source.iter().chain([&k.dir, &k.origin]) {
                let rk = Keys::fetch_outcomes(&self.ns, key);
                cmds.push(redis::cmd("HINCRBY").arg(&rk).arg(field).arg(1).clone());
                if *kind == Kind::Hit && !key.starts_with("o|") && seen.insert(key) {
                    asked.push((cmds.len(), key));
                    cmds.push(
                        redis::cmd("EXISTS")
                            .arg(Keys::fetch_held(&self.ns, key))
                            .clone(),
                    );
                }
                // The key itself, for `rules holds` and `rules release`.
                cmds.push(redis::cmd("HSETNX").arg(&rk).arg("k").arg(key).clone());
                // The origin key lives twice as long, so that it outlives the keys under it
                // even when `ttl` is lowered between writers (it gates their lookups).
                let ttl = if key.starts_with("o|") {
                    self.cfg.ttl.max(1).saturating_mul(2)
                } else {
                    self.cfg.ttl.max(1)
                };
                cmds.push(redis::cmd("EXPIRE").arg(&rk).arg(ttl).clone());
                if !key.starts_with("o|") {
                    // What is kept under a key outlives its counts, however long outcomes
                    // keep them alive after the last hold ([`orphaned`]).
                    cmds.push(
                        redis::cmd("EXPIRE")
                            .arg(Keys::fetch_held(&self.ns, key))
                            .arg(kept_ttl(self.cfg.ttl))
                            .arg("GT")
                            .clone(),
                    );
                }
            }
        }
        if cmds.is_empty() {
            return Ok(Vec::new());
        }
        let replies = conn
            .pipeline(cmds)
            .map_err(|e| RedisFilterError::from_redis(e, true))?;
        let lifted = asked
            .iter()
            .filter(|(at, _)| {
                replies
                    .get(*at)
                    .and_then(|v| redis::from_redis_value::<u64>(v.clone()).ok())
                    .unwrap_or(0)
                    > 0
            })
            .map(|(_, key)| key.to_string())
            .collect();
        for (k, kind) in outcomes {
            for key in k.source.iter().chain([&k.dir, &k.origin]) {
                if let Some((c, _)) = self.cache.get_mut(key) {
                    c.add(*kind);
                }
            }
        }
        Ok(lifted)
    }

    /// The candidates the cached counts would hold, judged again on counts read now: each is
    /// `(keys, fingerprint, its URL event)`. With an event (the Kafka gate, which can put it
    /// back on its input), it is first kept under both its keys (`HSET` of `cs:fh:…`, expiring
    /// `ttl` after the last hold) and the counts are read after that on the same node: a hit
    /// counted before is seen here, one counted after finds the candidate kept
    /// ([`OutcomeStore::record`]). Without (the API, `dedup`: the caller has the answer), only
    /// read. Returns each one's fresh source and directory counts.
    pub fn hold_fresh(
        &mut self,
        conn: &mut Conn,
        held: &[(&GuessKeys, u128, Option<Vec<u8>>)],
    ) -> Result<Vec<(Counts, Counts)>, RedisFilterError> {
        let kept_ttl = kept_ttl(self.cfg.ttl);
        let ttl = self.cfg.ttl.max(1);
        let mut cmds = Vec::with_capacity(held.len() * 10);
        // Per candidate: the positions of its source and directory counts' replies.
        let mut at: Vec<(Option<usize>, usize)> = Vec::with_capacity(held.len());
        // Per candidate: the value it is kept with (`NONCE EVENT`).
        let mut values: Vec<Option<Vec<u8>>> = Vec::with_capacity(held.len());
        for (k, fp, event) in held {
            let value = event.as_ref().map(|ev| {
                let mut value = format!("{} ", nonce()).into_bytes();
                value.extend_from_slice(ev);
                value
            });
            let read = |key: &str, cmds: &mut Vec<redis::Cmd>| {
                if let Some(value) = &value {
                    let hk = Keys::fetch_held(&self.ns, key);
                    let rk = Keys::fetch_outcomes(&self.ns, key);
                    cmds.push(
                        redis::cmd("HSET")
                            .arg(&hk)
                            .arg(format!("{fp:032x}"))
                            .arg(value.as_slice())
                            .clone(),
                    );
                    cmds.push(redis::cmd("EXPIRE").arg(&hk).arg(kept_ttl).clone());
                    // A key that keeps candidates has counts, if only its name: counts gone
                    // are what the sweep puts back on ([`orphaned`]); a key kept under with no
                    // outcome yet (a directory, for a candidate its source holds) is swept
                    // only once `ttl` passed since.
                    cmds.push(redis::cmd("HSETNX").arg(&rk).arg("k").arg(key).clone());
                    cmds.push(redis::cmd("EXPIRE").arg(&rk).arg(ttl).arg("NX").clone());
                }
                cmds.push(
                    redis::cmd("HMGET")
                        .arg(Keys::fetch_outcomes(&self.ns, key))
                        .arg("h")
                        .arg("m")
                        .clone(),
                );
                cmds.len() - 1
            };
            let s = k.source.as_deref().map(|key| read(key, &mut cmds));
            let d = read(&k.dir, &mut cmds);
            at.push((s, d));
            values.push(value);
        }
        if cmds.is_empty() {
            return Ok(Vec::new());
        }
        let write = held.iter().any(|h| h.2.is_some());
        let replies = conn
            .pipeline(cmds)
            .map_err(|e| RedisFilterError::from_redis(e, write))?;
        let counts = |i: usize| {
            let (h, m): (Option<u64>, Option<u64>) = replies
                .get(i)
                .and_then(|v| redis::from_redis_value(v.clone()).ok())
                .unwrap_or((None, None));
            Counts {
                hits: h.unwrap_or(0),
                misses: m.unwrap_or(0),
            }
        };
        let now = Instant::now();
        let mut out = Vec::with_capacity(held.len());
        // A candidate the directory holds is lifted only by a hit there: not kept under its
        // source, whose hits would put it back only to be held again.
        let mut unkeep = Vec::new();
        for (((k, fp, _), (s, d)), value) in held.iter().zip(at).zip(&values) {
            let src = s.map(counts).unwrap_or_default();
            let dir = counts(d);
            if let Some(key) = &k.source {
                self.cache.insert(key.clone(), (src, now));
                let dir_holds = self.cfg.min_dir_misses > 0
                    && dir.hits == 0
                    && dir.misses >= self.cfg.min_dir_misses;
                if let (Some(value), true) = (value, dir_holds) {
                    // Only this hold's copy: another gate's newer hold of the URL, kept under
                    // the source alone, stays.
                    unkeep.push(
                        redis::cmd("EVAL")
                            .arg(DELETE_IF_SAME)
                            .arg(1)
                            .arg(Keys::fetch_held(&self.ns, key))
                            .arg(format!("{fp:032x}"))
                            .arg(value.as_slice())
                            .clone(),
                    );
                }
            }
            self.cache.insert(k.dir.clone(), (dir, now));
            out.push((src, dir));
        }
        if !unkeep.is_empty() {
            conn.pipeline(unkeep)
                .map_err(|e| RedisFilterError::from_redis(e, true))?;
        }
        Ok(out)
    }

    /// The counts of `keys`, from the cache where fresh, the rest in one pipeline.
    pub fn lookup(
        &mut self,
        conn: &mut Conn,
        keys: &[&str],
    ) -> Result<Vec<Counts>, RedisFilterError> {
        let fresh = Duration::from_millis(self.cfg.cache_ms);
        let now = Instant::now();
        let mut ask: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| self.cache.get(*k).is_none_or(|(_, at)| now - *at >= fresh))
            .collect();
        ask.sort_unstable();
        ask.dedup();
        if !ask.is_empty() {
            let cmds = ask
                .iter()
                .map(|k| {
                    redis::cmd("HMGET")
                        .arg(Keys::fetch_outcomes(&self.ns, k))
                        .arg("h")
                        .arg("m")
                        .clone()
                })
                .collect();
            let replies = conn
                .pipeline(cmds)
                .map_err(|e| RedisFilterError::from_redis(e, false))?;
            // Stale answers go past 100,000 keys, at most once per `cache_ms` (a scan of a
            // cache of fresh answers frees nothing: not once per batch).
            if self.cache.len() > 100_000 && now - self.pruned >= fresh {
                self.cache.retain(|_, (_, at)| now - *at < fresh);
                self.pruned = now;
            }
            for (k, v) in ask.iter().zip(replies) {
                let (h, m): (Option<u64>, Option<u64>) =
                    redis::from_redis_value(v).unwrap_or((None, None));
                let c = Counts {
                    hits: h.unwrap_or(0),
                    misses: m.unwrap_or(0),
                };
                self.cache.insert(k.to_string(), (c, now));
            }
        }
        Ok(keys
            .iter()
            .map(|k| self.cache.get(*k).map(|(c, _)| *c).unwrap_or_default())
            .collect())
    }
}

/// One key's counts as stored (`rules holds`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stored {
    /// `s|CONTEXT|SOURCE|ORIGIN`, `d|CONTEXT|ORIGIN/DIR/` or `o|ORIGIN` (which never holds).
    pub key: String,
    pub hits: u64,
    pub misses: u64,
    /// Whether this key alone holds candidates under it (a source whose guesses all missed, a
    /// directory with enough misses and no hit); a hit under the candidate's other key may
    /// still let one through.
    pub holds: bool,
    /// The candidates kept under it by a Kafka gate, put back on its input by a hit here or
    /// by `rules release`.
    pub held: u64,
}

/// Every key of namespace `ns` with its counts, sorted by key (`rules holds`).
pub fn stored(
    cfg: &OutcomeConfig,
    redis: &crate::redis_filter::RedisConfig,
    conn: &mut Conn,
    ns: &str,
) -> Result<Vec<Stored>, RedisFilterError> {
    let mut out: Vec<Stored> = Vec::new();
    for rk in crate::redis_filter::scan_keys(redis, &Keys::fetch_outcomes_pattern(ns))? {
        let (k, h, m): (Option<String>, Option<u64>, Option<u64>) = conn
            .query(redis::cmd("HMGET").arg(&rk).arg("k").arg("h").arg("m"))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        let Some(key) = k else { continue }; // written by a build without key names
        let held: u64 = conn
            .query(redis::cmd("HLEN").arg(Keys::fetch_held(ns, &key)))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        let (hits, misses) = (h.unwrap_or(0), m.unwrap_or(0));
        // An origin key never holds: it only says whether to look further.
        let need = if key.starts_with("s|") {
            cfg.min_source_misses
        } else if key.starts_with("o|") {
            0
        } else {
            cfg.min_dir_misses
        };
        out.push(Stored {
            holds: hits == 0 && need > 0 && misses >= need,
            held,
            key,
            hits,
            misses,
        });
    }
    // A key holds only where its origin has a miss (what the gate asks first): counts written
    // by a build before origin keys, or under a released origin, hold nothing.
    let missing: std::collections::HashSet<String> = out
        .iter()
        .filter(|s| s.key.starts_with("o|") && s.misses > 0)
        .map(|s| s.key.clone())
        .collect();
    for s in &mut out {
        if s.holds && !missing.contains(&origin_of_key(&s.key)) {
            s.holds = false;
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// The origin key (`o|ORIGIN`) of a source or directory key.
fn origin_of_key(key: &str) -> String {
    if let Some(rest) = key.strip_prefix("s|") {
        // `s|CTX|SOURCE|TARGET-ORIGIN`: the origin is the last field.
        return format!("o|{}", rest.rsplit('|').next().unwrap_or_default());
    }
    match key.strip_prefix("d|").and_then(|r| r.split_once('|')) {
        Some((_, url)) => origin_key(url),
        None => String::new(),
    }
}

/// Forget key `key`'s counts in namespace `ns`: what it holds is judged afresh (`rules
/// release`), and its held candidates are put back on a gate's input by the first gate that
/// reads the released keys ([`released`]). Whether there were counts, and how many candidates
/// it held. (The CLI refuses an origin key: forgetting it would lift every hold on the site
/// until its next miss.)
pub fn release(conn: &mut Conn, ns: &str, key: &str) -> Result<(bool, u64), RedisFilterError> {
    let held: u64 = conn
        .query(redis::cmd("HLEN").arg(Keys::fetch_held(ns, key)))
        .map_err(|e| RedisFilterError::from_redis(e, false))?;
    // Listed before the counts go: a release killed in between leaves a key listed whose
    // counts still hold (put back, held again), never counts gone with nothing listed.
    if held > 0 {
        mark_released(conn, ns, &[key.to_string()])?;
    }
    let n: u64 = conn
        .query(redis::cmd("DEL").arg(Keys::fetch_outcomes(ns, key)))
        .map_err(|e| RedisFilterError::from_redis(e, true))?;
    Ok((n > 0, held))
}

/// List `keys` of namespace `ns` for a running gate to put their held candidates back (each
/// listing unique: `NAMESPACE` TAB `KEY` TAB `NONCE`, so that a gate done with one listing
/// never takes off another made meanwhile).
pub fn mark_released(conn: &mut Conn, ns: &str, keys: &[String]) -> Result<(), RedisFilterError> {
    if keys.is_empty() {
        return Ok(());
    }
    let mut cmd = redis::cmd("SADD");
    cmd.arg(Keys::fetch_released());
    for k in keys {
        cmd.arg(format!("{ns}\t{k}\t{}", nonce()));
    }
    conn.query::<u64>(&cmd)
        .map(drop)
        .map_err(|e| RedisFilterError::from_redis(e, true))
}

/// A listing of [`mark_released`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    pub ns: String,
    pub key: String,
    /// The set member, to take off once done ([`done_released`]).
    pub member: String,
}

/// The keys released by `rules release` (or lifted by `dedup`'s outcomes) whose held
/// candidates wait to be put back.
pub fn released(conn: &mut Conn) -> Result<Vec<Released>, RedisFilterError> {
    let members: Vec<String> = conn
        .query(redis::cmd("SMEMBERS").arg(Keys::fetch_released()))
        .map_err(|e| RedisFilterError::from_redis(e, false))?;
    Ok(members
        .into_iter()
        .filter_map(|m| {
            let mut it = m.splitn(3, '\t');
            let (ns, key) = (it.next()?.to_string(), it.next()?.to_string());
            Some(Released { ns, key, member: m })
        })
        .collect())
}

/// Take a listing off: its held candidates were put back.
pub fn done_released(conn: &mut Conn, r: &Released) -> Result<(), RedisFilterError> {
    conn.query::<u64>(
        redis::cmd("SREM")
            .arg(Keys::fetch_released())
            .arg(&r.member),
    )
    .map(drop)
    .map_err(|e| RedisFilterError::from_redis(e, true))
}

/// The kept candidates, in every namespace, whose counts are gone (expired after `ttl` without
/// an outcome or a hold there, or deleted by a release): the held-candidate hashes (Redis keys)
/// to put back ([`move_held_at`]). A sweep over the keyspace (`SCAN`, every master of a
/// cluster). Every key that keeps candidates has counts while a hold there is younger than
/// `ttl` ([`OutcomeStore::hold_fresh`]).
pub fn orphaned(
    redis: &crate::redis_filter::RedisConfig,
    conn: &mut Conn,
) -> Result<Vec<String>, RedisFilterError> {
    let mut out = Vec::new();
    for hk in crate::redis_filter::scan_keys(redis, Keys::fetch_held_all())? {
        let counts = Keys::fetch_outcomes_of_held(&hk);
        let there: u64 = conn
            .query(redis::cmd("EXISTS").arg(&counts))
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        if there == 0 {
            out.push(hk);
        }
    }
    Ok(out)
}

/// Put the candidates held under `key` back ([`move_held_at`]).
pub fn move_held(
    conn: &mut Conn,
    ns: &str,
    key: &str,
    deliver: impl FnMut(&[Vec<u8>]) -> bool,
) -> Result<Option<u64>, RedisFilterError> {
    move_held_at(conn, &Keys::fetch_held(ns, key), deliver)
}

/// Put the candidates kept in the hash `hk` back: `deliver` gets them in chunks (their URL
/// events) and says whether Kafka acknowledged them all; only then is each taken out of Redis,
/// and only if its value is still the one delivered (a newer hold of the same URL, written
/// meanwhile, stays). A process killed in between puts them back again (the filter answers the
/// second a duplicate); none is lost. Returns how many were put back, or none when `deliver`
/// gave up (stopping: what is left stays kept, and is put back by the next hit or release).
pub fn move_held_at(
    conn: &mut Conn,
    hk: &str,
    mut deliver: impl FnMut(&[Vec<u8>]) -> bool,
) -> Result<Option<u64>, RedisFilterError> {
    let mut cursor: u64 = 0;
    let mut moved = 0;
    loop {
        let (next, flat): (u64, Vec<Vec<u8>>) = conn
            .query(
                redis::cmd("HSCAN")
                    .arg(hk)
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(500),
            )
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        let pairs: Vec<(&[u8], &[u8])> = flat
            .chunks_exact(2)
            .map(|p| (p[0].as_slice(), p[1].as_slice()))
            .collect();
        // `NONCE EVENT`: the event is what goes back.
        let events: Vec<Vec<u8>> = pairs.iter().map(|(_, v)| kept_event(v).to_vec()).collect();
        if !events.is_empty() {
            if !deliver(&events) {
                return Ok(None);
            }
            let mut cad = redis::cmd("EVAL");
            cad.arg(DELETE_IF_SAME).arg(1).arg(hk);
            for (f, v) in &pairs {
                cad.arg(*f).arg(*v);
            }
            conn.query::<u64>(&cad)
                .map_err(|e| RedisFilterError::from_redis(e, true))?;
            moved += events.len() as u64;
        }
        if next == 0 {
            return Ok(Some(moved));
        }
        cursor = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_value_is_its_nonce_and_its_event() {
        let ev = br#"{"url":"a b.css","metadata":{"x":"y z"}}"#;
        let mut v = format!("{} ", nonce()).into_bytes();
        v.extend_from_slice(ev);
        assert_eq!(kept_event(&v), ev);
        // Without a nonce (or a short, or not hex, one) the value is the event whole.
        assert_eq!(kept_event(ev), ev);
        assert_eq!(kept_event(b"0123456789abcdeg {}"), b"0123456789abcdeg {}");
        assert_eq!(kept_event(b"abc {}"), b"abc {}");
        assert_eq!(kept_event(b""), b"");
        assert_eq!(kept_ttl(7 * 24 * 3600), 14 * 24 * 3600 + 1200);
        assert_eq!(kept_ttl(0), 2 + 1200);
    }

    #[test]
    fn kinds_follow_the_status_and_the_soft_404_flag() {
        assert_eq!(kind(200, false), Some(Kind::Hit));
        assert_eq!(kind(204, true), Some(Kind::Miss));
        assert_eq!(kind(404, false), Some(Kind::Miss));
        assert_eq!(kind(410, false), Some(Kind::Miss));
        for s in [0, 301, 401, 403, 500, 503] {
            assert_eq!(kind(s, false), None, "{s}");
        }
    }

    #[test]
    fn keys_are_the_source_and_the_resolved_directory() {
        let k = keys(
            "https://a.example/static/ui/skin.css?v=2",
            Some("https://a.example/app.js#x"),
            Some(Context::Js),
        );
        assert_eq!(
            k.source.as_deref(),
            Some("s|js|https://a.example/app.js|https://a.example")
        );
        // A link to another site from the same script counts apart.
        let other = keys(
            "https://cdn.example/x.js",
            Some("https://a.example/app.js"),
            Some(Context::Js),
        );
        assert_ne!(other.source, k.source);
        assert_eq!(k.dir, "d|js|https://a.example/static/ui/");
        // The origin key, whatever the context and source: what a reader asks first.
        assert_eq!(k.origin, "o|https://a.example");
        assert_eq!(other.origin, "o|https://cdn.example");
        // `rules holds` finds each key's origin key again.
        assert_eq!(origin_of_key(k.source.as_deref().unwrap()), k.origin);
        assert_eq!(origin_of_key(&k.dir), k.origin);
        assert_eq!(origin_of_key(&other.dir), other.origin);
        let k = keys("https://a.example/a/b?x=/y/z", None, None);
        assert_eq!(k.origin, "o|https://a.example");
        assert_eq!(k.source, None);
        assert_eq!(k.dir, "d|unknown|https://a.example/a/");
    }

    #[test]
    fn the_rule_holds_where_guesses_miss_and_a_hit_lifts_it() {
        let cfg = OutcomeConfig {
            probe_one_in: 0,
            ..OutcomeConfig::default()
        };
        let c = |hits, misses| Counts { hits, misses };
        // Nothing known: pass.
        assert_eq!(judge(&cfg, c(0, 0), c(0, 0), 1), Judgement::Pass);
        // The source's one guess missed: hold.
        assert_eq!(judge(&cfg, c(0, 1), c(0, 0), 1), Judgement::Hold);
        // ... unless the source also hit once.
        assert_eq!(judge(&cfg, c(1, 5), c(0, 0), 1), Judgement::Pass);
        // The directory missed three times (from any source): hold a guess of a source with
        // no outcome yet ...
        assert_eq!(judge(&cfg, c(0, 0), c(0, 3), 1), Judgement::Hold);
        assert_eq!(judge(&cfg, c(0, 0), c(0, 2), 1), Judgement::Pass);
        // ... also one of a script that has shown a hit elsewhere: a hit lifts the source's
        // own rule, not a directory's (hold-out 4's highlight.js wrappers: `./perl.js` hit,
        // then a warning message's `highlight.js/lib/languages/perl.js` resolved into a
        // directory of 16 misses). Its module paths (`./x.js`) are never held at all.
        assert_eq!(judge(&cfg, c(1, 0), c(0, 3), 1), Judgement::Hold);
        assert_eq!(judge(&cfg, c(1, 0), c(0, 2), 1), Judgement::Pass);
        assert_eq!(judge(&cfg, c(1, 9), c(0, 2), 1), Judgement::Pass);
        // A hit in the directory lifts every hold there.
        assert_eq!(judge(&cfg, c(0, 9), c(1, 9), 1), Judgement::Pass);
    }

    #[test]
    fn module_paths_are_dot_relative_scripts() {
        for raw in [
            "./reveal.js",
            "../utils/constants.js",
            "../build/pdf.sandbox.mjs",
            "./lib/x.cjs?v=2",
            " ./perl.js#L1",
        ] {
            assert!(module_path(raw.as_bytes()), "{raw}");
        }
        for raw in [
            "macros.js",
            "/js/app.js",
            "https://a.example/x.js",
            "./",
            "./.js",
            "./settings_menu.css",
            "./speaker-view.html",
            "./x.json",
            "./x.js/",
            "./jsx",
            "../../node_modules/.pnpm/dayjs@1.11.13/node_modules/dayjs/plugin/isoWeek.js",
            "./node_modules/a/b.js",
            "ui/dark/skin.css",
            "",
        ] {
            assert!(!module_path(raw.as_bytes()), "{raw}");
        }
    }

    #[test]
    fn only_guessing_contexts_are_held() {
        let cfg = OutcomeConfig::default();
        for c in [
            Context::Js,
            Context::Text,
            Context::HtmlText,
            Context::Unknown,
        ] {
            assert!(holds_in(&cfg, Some(c)), "{c:?}");
        }
        assert!(holds_in(&cfg, None));
        assert!(!holds_in(&cfg, Some(Context::HtmlAttr)));
        assert!(!holds_in(&cfg, Some(Context::Css)));
    }

    #[test]
    fn one_in_probe_one_in_held_candidates_is_a_probe_always_the_same() {
        let cfg = OutcomeConfig::default();
        let miss = Counts { hits: 0, misses: 4 };
        let probes = (0..20_000u128)
            .map(|i| i.wrapping_mul(0x2545_f491_4f6c_dd1d_9e37_79b9_7f4a_7c15))
            .filter(|&fp| judge(&cfg, miss, Counts::default(), fp) == Judgement::Probe)
            .count();
        assert!(
            (800..1200).contains(&probes),
            "{probes} of 20000 at 1 in 20"
        );
        let fp = 0xdead_beef_u128 << 70;
        let first = judge(&cfg, miss, Counts::default(), fp);
        assert!((0..10).all(|_| judge(&cfg, miss, Counts::default(), fp) == first));
    }
}
