//! The HTTP filter API's path through the gate's decision ([`GateCore::filter_direct`]): one
//! request's URLs sieved, the crawl policy ([`super::policy`]), one filter call (a read, a check-and-set, or the
//! claims of an idempotent request), verdicts in order. A sibling of `core`: it reads the
//! `GateCore` fields that are `pub(super)`.

use crate::decision::Verdict;
use crate::redis_filter::RedisFilterError;
use crate::url::Reason;

use super::core::GateCore;

/// Why [`GateCore::filter_direct`] answered no verdicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirectError {
    /// The namespace is refused (as the gate dead-letters it).
    Refused(String),
    /// The idempotency key was used before for a different request.
    KeyReused,
}

/// An idempotent API request ([`GateCore::filter_direct`]).
#[derive(Debug, Clone)]
pub struct Idem {
    /// Record name: a digest of the client's identity and its key.
    pub name: String,
    /// Claim token derived from the name.
    pub token: i64,
    /// A digest of the request body: the same key with another body is refused.
    pub request: String,
    /// How long the answer is kept.
    pub ttl: std::time::Duration,
}

impl Idem {
    /// The record for `verdicts`: `{"request": digest, "verdicts": ["n:URL" | "d" | "r:code" |
    /// "h"]}`.
    fn encode(&self, verdicts: &[Answer]) -> String {
        let v: Vec<String> = verdicts
            .iter()
            .map(|(v, c)| match v {
                Verdict::New => format!("n:{c}"),
                Verdict::Rejected(r) => format!("r:{}", r.code()),
                Verdict::Held => "h".to_string(),
                Verdict::Duplicate | Verdict::Unpublishable => "d".to_string(),
            })
            .collect();
        serde_json::json!({"request": self.request, "verdicts": v}).to_string()
    }

    /// The verdicts of a stored record, if it answers `request`.
    fn replay(record: &str, request: &str) -> Result<Vec<Answer>, DirectError> {
        let v: serde_json::Value = serde_json::from_str(record).unwrap_or_default();
        if v["request"].as_str() != Some(request) {
            return Err(DirectError::KeyReused);
        }
        let verdicts = v["verdicts"].as_array().cloned().unwrap_or_default();
        Ok(verdicts
            .iter()
            .map(|x| {
                let s = x.as_str().unwrap_or("d");
                if let Some(c) = s.strip_prefix("n:") {
                    (Verdict::New, c.to_string())
                } else if let Some(code) = s.strip_prefix("r:") {
                    let v = Reason::ALL
                        .iter()
                        .find(|r| r.code() == code)
                        .map_or(Verdict::Duplicate, |r| Verdict::Rejected(*r));
                    (v, String::new())
                } else if s == "h" {
                    (Verdict::Held, String::new())
                } else {
                    (Verdict::Duplicate, String::new())
                }
            })
            .collect())
    }
}

/// What [`GateCore::forget_direct`] did: how many URLs the filter forgot, and the rejected
/// inputs (index, reason).
pub type Forgotten = (u64, Vec<(usize, Reason)>);

/// One URL's answer from [`GateCore::filter_direct`]: its verdict (never `Unpublishable`), and
/// its canonical form when new (empty otherwise).
pub type Answer = (Verdict, String);

impl GateCore {
    /// Where the candidates of the next [`GateCore::filter_direct`] calls were found (the API's
    /// `context`; the Kafka path takes each event's own).
    pub fn set_context(&mut self, context: crate::url::Context) {
        self.sieve.context = context;
    }

    /// The HTTP filter API's path ([`crate::serve`]): sieve `urls` for namespace `ns` (relative
    /// ones against `source`), skip URL patterns verified similar, and check-and-set the rest
    /// atomically (`check_only`: check without inserting). One verdict per input, in order.
    /// `Ok(Err(DirectError::Refused(detail)))` when the namespace is refused (as the gate
    /// dead-letters it); `Ok(Ok((verdicts, replayed)))` otherwise.
    ///
    /// With `idem` (an `Idempotency-Key`), the request is idempotent: its URLs are claimed
    /// under the key's token, its verdicts stored (for `idem.ttl`) before they are confirmed
    /// and returned, and a retry of the same request — by this process or another, after a
    /// timeout, a cut connection or a crash — gets the first answer (`replayed`).
    pub fn filter_direct(
        &mut self,
        ns: &str,
        source: Option<&str>,
        urls: &[String],
        check_only: bool,
        idem: Option<&Idem>,
    ) -> Result<Result<(Vec<Answer>, bool), DirectError>, RedisFilterError> {
        self.refresh_learned();
        let ns_i = match self.namespace(ns)? {
            Ok(i) => {
                self.use_scope_of(i);
                i
            }
            Err(detail) => return Ok(Err(DirectError::Refused(detail))),
        };
        let ns = self.names[ns_i].clone();
        let idem = idem.filter(|_| !check_only);
        if let Some(k) = idem {
            let state = self.namespaces.get_mut(&ns).expect("attached above");
            if let Some(rec) = state.filter.record(&k.name)? {
                return Ok(Idem::replay(&rec, &k.request).map(|v| (v, true)));
            }
        }
        let mut res = std::mem::take(&mut self.request);
        let r = self.judge_request(ns_i, source, urls, check_only, idem, &mut res);
        let out = r.map(|()| {
            (0..res.len())
                .map(|i| match res.verdict(i) {
                    Verdict::New => (Verdict::New, res.canonical(i).unwrap_or("").to_string()),
                    // Not publishable is the gate's (a fetch event too large): never here.
                    Verdict::Unpublishable => (Verdict::Duplicate, String::new()),
                    v => (v, String::new()),
                })
                .collect::<Vec<Answer>>()
        });
        let delivered: Vec<u128> = res.news_fps();
        self.request = res;
        let out = out?;
        if let Some(k) = idem {
            // Remember the answer before the URLs are confirmed: a retry after this point
            // replays it; a retry before finds the claims still under the key's token.
            let state = self.namespaces.get_mut(&ns).expect("attached above");
            let stored = state.filter.put_record(&k.name, &k.encode(&out), k.ttl)?;
            state.filter.confirm(&delivered);
            state.filter.settle()?;
            // Two attempts racing: both answer what was stored first.
            return Ok(Idem::replay(&stored, &k.request).map(|v| (v, false)));
        }
        Ok(Ok((out, false)))
    }

    /// The API's `POST /v1/forget`: sieve `urls` exactly as [`GateCore::filter_direct`] does
    /// (same canonical forms, same fingerprints) and take the accepted ones out of namespace
    /// `ns`'s filter ([`RedisFilter::forget_urls`]), so the next gate or API call that meets one
    /// publishes it once. Returns how many the filter held (and now forgot) and the rejected
    /// inputs (index, reason: such a URL was never let in, so there is nothing to forget). Safe
    /// to retry: forgetting twice forgets once (the count of a retry may be lower). A
    /// namespace the gate would create is created (it then forgets nothing).
    pub fn forget_direct(
        &mut self,
        ns: &str,
        source: Option<&str>,
        urls: &[String],
    ) -> Result<Result<Forgotten, DirectError>, RedisFilterError> {
        self.refresh_learned();
        let ns = match self.namespace(ns)? {
            Ok(i) => {
                self.use_scope_of(i);
                self.names[i].clone()
            }
            Err(detail) => return Ok(Err(DirectError::Refused(detail))),
        };
        self.sieve.set_source(source);
        let (fps, rejected) = self.sieve.forget_fingerprints(urls);
        let state = self.namespaces.get_mut(&ns).expect("attached above");
        match state.filter.forget_urls(&fps) {
            Ok(n) => Ok(Ok((n, rejected))),
            Err(e) => Err(self.namespace_lost(&ns, e)),
        }
    }

    /// The API's request through the one decision: the sieve, the crawl policy before the
    /// filter (robots.txt, waiting up to `robots.fetch_timeout` for an origin's rules; pattern
    /// verdicts), the filter call, the policy after it (the per-host budget; not for a
    /// read, which counts nothing).
    fn judge_request(
        &mut self,
        ns_i: usize,
        source: Option<&str>,
        urls: &[String],
        check_only: bool,
        idem: Option<&Idem>,
        res: &mut crate::sieve::BatchResult,
    ) -> Result<(), RedisFilterError> {
        self.sieve.set_source(source);
        self.sieve
            .classify_batch(urls.iter().map(|u| (u.as_bytes(), false)), res);
        let ns = self.names[ns_i].clone();
        let wait = self.cfg.robots.fetch_timeout.0 + std::time::Duration::from_secs(1);
        {
            let GateCore {
                policy,
                namespaces,
                names,
                ..
            } = self;
            let filter = &namespaces[&ns].filter;
            let (d, c) = res.parts();
            c.ns = ns_i;
            // Once each: a failed step fails the request, and the client retries it.
            let known = |fp| filter.known_seen(fp);
            policy.before_filter(d, c, (names, wait), known, |step| step())?;
        }
        res.seal();
        let fps = res.fps().to_vec();
        let mut news = Vec::new();
        let t = std::time::Instant::now();
        self.ask_filter(&ns, &fps, &mut news, check_only, idem)?;
        res.apply(&news);
        self.metrics
            .filter_seconds
            .observe(t.elapsed().as_secs_f64());
        if !check_only {
            let GateCore {
                policy,
                namespaces,
                names,
                ..
            } = self;
            let filter = &mut namespaces.get_mut(&ns).expect("attached").filter;
            let (d, c) = res.parts();
            policy.budget(d, c, names, |_, fps| match idem {
                // Claimed, not yet inserted: released, new again to anyone.
                Some(_) => {
                    filter.release(fps);
                    Ok(fps.len() as u64)
                }
                None => filter.untake(fps),
            });
        }
        Ok(())
    }

    /// The API's filter call: a read (`check_only`), the claims of an idempotent request, or a
    /// check-and-set. A namespace Redis lost is created again (`create_missing`) and the call
    /// made once more.
    fn ask_filter(
        &mut self,
        ns: &str,
        fps: &[u128],
        news: &mut Vec<bool>,
        check_only: bool,
        idem: Option<&Idem>,
    ) -> Result<(), RedisFilterError> {
        let mut attempt = 0;
        loop {
            let state = self.namespaces.get_mut(ns).expect("attached");
            let r = match (check_only, idem) {
                (true, _) => state.filter.check(fps, news),
                (false, Some(k)) => state.filter.claim_as(k.token, fps, news),
                (false, None) => state.filter.check_and_set(fps, news),
            };
            match r {
                Ok(()) => return Ok(()),
                Err(e @ RedisFilterError::NotFound(_))
                    if attempt == 0 && self.cfg.redis.create_missing =>
                {
                    attempt += 1;
                    let _ = self.namespace_lost(ns, e);
                }
                Err(e) => return Err(self.namespace_lost(ns, e)),
            }
        }
    }
}
