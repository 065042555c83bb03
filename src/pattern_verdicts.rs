//! URL-pattern verdicts (seed 003): the render stage samples a few pages of each URL pattern and
//! decides whether the pattern serves near-identical pages; the gate then skips further URLs of a
//! pattern verified *similar* (reason code `pattern_similar`).
//!
//! # Redis format (version 1)
//! One string per (namespace, pattern): key `cs:pv:{NAME:H}` where `H` is the 16-hex-digit
//! xxh3-64 of the pattern (the hash tag spreads patterns over cluster slots), value a JSON
//! object:
//!
//! ```json
//! {"v":1,"pattern":"example.com/product?id=","samples":3,"similarity":0.93,
//!  "updated_at":"2026-11-22T10:15:31.002Z"}
//! ```
//!
//! `samples` is how many pages of the pattern were compared, `similarity` their mean pairwise DOM
//! similarity in [0, 1]. The writer (render stage) only records measurements; the decision uses
//! the reader's configuration, as the seed's: a pattern is *similar* when
//! `samples ≥ url_pattern_dom_sample_count` and `similarity ≥ url_pattern_dom_threshold`. Until
//! then (sampling, or measured different) its URLs pass.
//!
//! # The index
//! A crawl stream holds far more patterns than the render stage ever measures (a quarter of a
//! million distinct ones per million events of `gen_stream.py`), so asking Redis about each
//! would cost a `GET` per pattern and a round trip per batch for nothing. The writer therefore
//! first adds the pattern's hash to the namespace's index (`cs:pv:{NAME}:idx`, a sorted set
//! scored by a counter in `cs:pv:{NAME}:seq`, both in one script), then writes the verdict. The
//! gate keeps a copy of the index, reading only what was added since its last read (at most
//! once a second, or every [`PatternConfig::cache_ttl`] when that is shorter), and asks Redis
//! only about patterns in it — caching those answers for `cache_ttl`. A verdict not in the index
//! is not read: verdicts written by a build before the index (0.x ≤ issue 24) are seen again
//! once the render stage measures their pattern anew. The counter carries a random `epoch`
//! written with its first entry: Redis restarted empty (or the keys deleted) shows as a new
//! epoch, and the gate reads the index again from the start.

use std::time::{Duration, Instant};

use rustc_hash::FxHashSet;

use serde::{Deserialize, Serialize};

use crate::redis_filter::{Conn, RedisFilterError};

/// The seed's switches, with its defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PatternConfig {
    /// Skip URLs whose pattern was verified similar.
    pub enable_url_pattern_dom_dedup: bool,
    /// Pages of a pattern compared before its verdict counts.
    pub url_pattern_dom_sample_count: u32,
    /// Mean DOM similarity at which a pattern counts as similar.
    pub url_pattern_dom_threshold: f64,
    /// How long the gate trusts a cached verdict (seconds).
    pub cache_ttl: u64,
    /// Learned parameter rules ([`crate::params`]): the render stage learns which query
    /// parameters change nothing on a host and publishes them; the gate and the API drop those
    /// parameters in canonicalization. Off: nothing learned, nothing applied.
    pub learned_params: bool,
    /// One URL in this many that a learned rule would merge is deduplicated as itself instead
    /// (chosen by a hash of the URL), so the render stage keeps seeing variants and a
    /// counter-example revokes a wrong rule; 0: never (a wrong rule then stays until an
    /// operator revokes it).
    pub learned_params_verify_one_in: u64,
}

impl Default for PatternConfig {
    fn default() -> Self {
        PatternConfig {
            enable_url_pattern_dom_dedup: true,
            url_pattern_dom_sample_count: 3,
            url_pattern_dom_threshold: 0.85,
            cache_ttl: 30,
            learned_params: true,
            learned_params_verify_one_in: 50,
        }
    }
}

/// One stored measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatternVerdict {
    /// Format version (1).
    pub v: u32,
    /// The URL pattern, as `crawlsieve pattern` prints it.
    pub pattern: String,
    /// Pages compared.
    pub samples: u32,
    /// Mean pairwise DOM similarity of those pages, in [0, 1].
    pub similarity: f64,
    /// When it was written (RFC 3339).
    pub updated_at: String,
}

impl PatternVerdict {
    /// Whether, under `cfg`, URLs of this pattern are to be skipped.
    pub fn is_similar(&self, cfg: &PatternConfig) -> bool {
        self.samples >= cfg.url_pattern_dom_sample_count
            && self.similarity >= cfg.url_pattern_dom_threshold
    }
}

/// The Redis key of a pattern's verdict in namespace `ns`.
pub fn key(ns: &str, pattern: &str) -> String {
    crate::redis_filter::Keys::pattern_verdict(ns, xxhash_rust::xxh3::xxh3_64(pattern.as_bytes()))
}

/// Write a measurement (the render stage's side; tests use it too).
pub fn write(
    conn: &mut Conn,
    ns: &str,
    pattern: &str,
    samples: u32,
    similarity: f64,
) -> Result<(), RedisFilterError> {
    let v = PatternVerdict {
        v: 1,
        pattern: pattern.to_string(),
        samples,
        similarity: similarity.clamp(0.0, 1.0),
        updated_at: crate::events::now_rfc3339(),
    };
    let json = serde_json::to_string(&v).expect("verdict serializes");
    // Indexed first: a verdict is never stored where the gate would not look for it.
    let (idx, seq) = crate::redis_filter::Keys::pattern_index(ns);
    let hash = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(pattern.as_bytes()));
    let epoch = format!("{:016x}", crate::redis_filter::layout::unique_u64());
    conn.script_keys::<()>(&INDEX_SCRIPT, &[&seq, &idx], &[&hash, &epoch])
        .map_err(|e| RedisFilterError::from_redis(e, false))?;
    conn.query::<()>(redis::cmd("SET").arg(key(ns, pattern)).arg(json))
        .map_err(|e| RedisFilterError::from_redis(e, false))
}

/// Index a pattern hash (ARGV[1]) once: KEYS[1] the counter, KEYS[2] the index; ARGV[2] the
/// epoch to set when the counter is new. A pattern indexed before keeps its place.
static INDEX_SCRIPT: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('HSETNX', KEYS[1], 'epoch', ARGV[2])
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('ZADD', KEYS[2], n, ARGV[1])
return 1
",
    )
});

/// Entries read from the index per round trip.
const INDEX_PAGE: usize = 10_000;

/// The gate's copy of a namespace's index (see the module docs).
#[derive(Default)]
struct Index {
    /// Hashes of the patterns with a verdict.
    hashes: FxHashSet<u64>,
    /// The counter's epoch and the highest score read.
    epoch: Option<String>,
    upto: i64,
    read_at: Option<Instant>,
}

impl Index {
    /// Read what was added since the last read, when one is due.
    fn refresh(
        &mut self,
        conn: &mut Conn,
        ns: &str,
        every: Duration,
    ) -> Result<(), RedisFilterError> {
        if self.read_at.is_some_and(|t| t.elapsed() < every) {
            return Ok(());
        }
        let (idx, seq) = crate::redis_filter::Keys::pattern_index(ns);
        loop {
            let cmds = vec![
                redis::cmd("HGET").arg(&seq).arg("epoch").clone(),
                redis::cmd("ZRANGEBYSCORE")
                    .arg(&idx)
                    .arg(format!("({}", self.upto))
                    .arg("+inf")
                    .arg("WITHSCORES")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(INDEX_PAGE)
                    .clone(),
            ];
            let r = conn
                .pipeline(cmds)
                .map_err(|e| RedisFilterError::from_redis(e, false))?;
            let epoch: Option<String> = redis::from_redis_value(r[0].clone()).unwrap_or(None);
            if epoch != self.epoch {
                // A new counter (first entry, or Redis lost the index): from the start.
                let restart = self.upto > 0;
                *self = Index {
                    epoch,
                    ..Index::default()
                };
                if restart {
                    continue;
                }
            }
            let page: Vec<(String, i64)> =
                redis::from_redis_value(r[1].clone()).unwrap_or_default();
            for (h, score) in &page {
                if let Ok(h) = u64::from_str_radix(h, 16) {
                    self.hashes.insert(h);
                }
                self.upto = self.upto.max(*score);
            }
            if page.len() < INDEX_PAGE {
                break;
            }
        }
        self.read_at = Some(Instant::now());
        Ok(())
    }
}

/// The gate's reader: answers "skip this pattern?" for a batch, from a cache refreshed from
/// Redis.
pub struct PatternVerdicts {
    cfg: PatternConfig,
    ns: String,
    cache: rustc_hash::FxHashMap<u64, (bool, Instant)>,
    index: Index,
    /// Verdicts stored in a form this build does not read (counted, treated as "pass").
    pub unreadable: u64,
}

impl PatternVerdicts {
    /// A reader for namespace `ns`.
    pub fn new(cfg: PatternConfig, ns: &str) -> PatternVerdicts {
        PatternVerdicts {
            cfg,
            ns: ns.to_string(),
            cache: Default::default(),
            index: Index::default(),
            unreadable: 0,
        }
    }

    /// `skip[i]` = whether URLs of `patterns[i]` are to be skipped. A pattern not in the index
    /// passes; one pipelined round trip for the indexed patterns not cached (or expired), and
    /// one a second to read the index; none when the feature is off.
    pub fn skip_batch(
        &mut self,
        conn: &mut Conn,
        patterns: &[&str],
        skip: &mut Vec<bool>,
    ) -> Result<(), RedisFilterError> {
        skip.clear();
        skip.resize(patterns.len(), false);
        if !self.cfg.enable_url_pattern_dom_dedup {
            return Ok(());
        }
        let ttl = Duration::from_secs(self.cfg.cache_ttl);
        self.index
            .refresh(conn, &self.ns, ttl.min(Duration::from_secs(1)))?;
        if self.index.hashes.is_empty() {
            return Ok(());
        }
        let now = Instant::now();
        let mut misses: Vec<(usize, u64)> = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            let h = xxhash_rust::xxh3::xxh3_64(p.as_bytes());
            if !self.index.hashes.contains(&h) {
                continue;
            }
            match self.cache.get(&h) {
                Some(&(s, at)) if now.duration_since(at) < ttl => skip[i] = s,
                _ => misses.push((i, h)),
            }
        }
        if misses.is_empty() {
            return Ok(());
        }
        let cmds: Vec<redis::Cmd> = misses
            .iter()
            .map(|&(i, _)| redis::cmd("GET").arg(key(&self.ns, patterns[i])).clone())
            .collect();
        // A transport failure is retryable like the filter's own (the gate backs off and pauses).
        let replies = conn
            .pipeline(cmds)
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        for (&(i, h), r) in misses.iter().zip(replies) {
            let s = match r {
                redis::Value::BulkString(b) => match serde_json::from_slice::<PatternVerdict>(&b) {
                    Ok(v) if v.v == 1 && v.pattern == patterns[i] => v.is_similar(&self.cfg),
                    _ => {
                        self.unreadable += 1;
                        false
                    }
                },
                _ => false,
            };
            skip[i] = s;
            self.cache.insert(h, (s, now));
        }
        if self.cache.len() > 1 << 20 {
            self.cache
                .retain(|_, (_, at)| now.duration_since(*at) < ttl);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision_follows_the_seed_defaults() {
        let cfg = PatternConfig::default();
        let v = |samples, similarity| PatternVerdict {
            v: 1,
            pattern: "p".into(),
            samples,
            similarity,
            updated_at: String::new(),
        };
        assert!(v(3, 0.85).is_similar(&cfg));
        assert!(!v(2, 0.99).is_similar(&cfg), "still sampling");
        assert!(!v(3, 0.84).is_similar(&cfg), "measured different");
        assert!(key("ns", "a").starts_with("cs:pv:{ns:") && key("ns", "a") != key("ns", "b"));
    }
}
