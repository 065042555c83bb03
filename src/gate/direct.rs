//! The HTTP filter API's path through the gate's decision ([`GateCore::filter_direct`]): one
//! request's URLs sieved, the pattern verdicts, one filter call (a read, a check-and-set, or the
//! claims of an idempotent request), verdicts in order. A child of `core`, for its fields.

use super::*;

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
    /// The record for `verdicts`: `{"request": digest, "verdicts": ["n:URL" | "d" | "r:code"]}`.
    fn encode(&self, verdicts: &[Direct]) -> String {
        let v: Vec<String> = verdicts
            .iter()
            .map(|d| match d {
                Direct::New(c) => format!("n:{c}"),
                Direct::Duplicate => "d".to_string(),
                Direct::Rejected(r) => format!("r:{}", r.code()),
            })
            .collect();
        serde_json::json!({"request": self.request, "verdicts": v}).to_string()
    }

    /// The verdicts of a stored record, if it answers `request`.
    fn replay(record: &str, request: &str) -> Result<Vec<Direct>, DirectError> {
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
                    Direct::New(c.to_string())
                } else if let Some(code) = s.strip_prefix("r:") {
                    Reason::ALL
                        .iter()
                        .find(|r| r.code() == code)
                        .map_or(Direct::Duplicate, |r| Direct::Rejected(*r))
                } else {
                    Direct::Duplicate
                }
            })
            .collect())
    }
}

/// What [`GateCore::forget_direct`] did: how many URLs the filter forgot, and the rejected
/// inputs (index, reason).
pub type Forgotten = (u64, Vec<(usize, Reason)>);

/// One URL's verdict from [`GateCore::filter_direct`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Direct {
    /// New: its canonical form.
    New(String),
    /// Seen before (or earlier in the same request).
    Duplicate,
    /// Rejected, with the reason code.
    Rejected(Reason),
}

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
    ) -> Result<Result<(Vec<Direct>, bool), DirectError>, RedisFilterError> {
        self.refresh_learned();
        let ns = match self.namespace(ns)? {
            Ok(i) => {
                self.use_scope_of(i);
                self.names[i].clone()
            }
            Err(detail) => return Ok(Err(DirectError::Refused(detail))),
        };
        let idem = idem.filter(|_| !check_only);
        if let Some(k) = idem {
            let state = self.namespaces.get_mut(&ns).expect("attached above");
            if let Some(rec) = state.filter.record(&k.name)? {
                return Ok(Idem::replay(&rec, &k.request).map(|v| (v, true)));
            }
        }
        let (mut d, canon) = self.judge_request(&ns, source, urls)?;
        let fps = d.lookup_fps().to_vec();
        let mut news = Vec::new();
        let t = std::time::Instant::now();
        self.ask_filter(&ns, &fps, &mut news, check_only, idem)?;
        if check_only {
            // A read answers every occurrence alike: only the first is new.
            let mut seen = HashSet::new();
            for (n, fp) in news.iter_mut().zip(&fps) {
                *n &= seen.insert(*fp);
            }
        }
        d.answer(&news);
        self.metrics
            .filter_seconds
            .observe(t.elapsed().as_secs_f64());
        let delivered: Vec<u128> = d.news().map(|i| d.fp(i)).collect();
        let out: Vec<Direct> = canon
            .into_iter()
            .enumerate()
            .map(|(i, c)| match d.verdict(i) {
                Verdict::New => Direct::New(c),
                Verdict::Rejected(r) => Direct::Rejected(r),
                Verdict::Duplicate | Verdict::Unpublishable => Direct::Duplicate,
            })
            .collect();
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
        let mut fps = Vec::with_capacity(urls.len());
        let mut rejected = Vec::new();
        for (i, u) in urls.iter().enumerate() {
            match self.sieve_url(u) {
                Ok(_) => fps.push(self.sieve.dedup_fingerprint()),
                Err(r) => rejected.push((i, r)),
            }
        }
        let state = self.namespaces.get_mut(&ns).expect("attached above");
        match state.filter.forget_urls(&fps) {
            Ok(n) => Ok(Ok((n, rejected))),
            Err(e) => Err(self.namespace_lost(&ns, e)),
        }
    }

    /// The API's request through the sieve and the pattern verdicts: its decision (lookups
    /// made) and each URL's canonical form (empty when rejected).
    fn judge_request(
        &mut self,
        ns: &str,
        source: Option<&str>,
        urls: &[String],
    ) -> Result<(Decision, Vec<String>), RedisFilterError> {
        self.sieve.set_source(source);
        let mut d = Decision::default();
        let mut canon: Vec<String> = Vec::with_capacity(urls.len());
        for u in urls {
            match self.sieve_url(u) {
                Err(r) => {
                    d.reject(r);
                    canon.push(String::new());
                }
                Ok(c) => {
                    d.candidate(0, self.sieve.dedup_fingerprint());
                    canon.push(c);
                }
            }
        }
        let cand: Vec<usize> = (0..d.len()).filter(|&i| d.is_candidate(i)).collect();
        let pats: Vec<String> = cand
            .iter()
            .map(|&i| crate::url::pattern::pattern(&canon[i]))
            .collect();
        let refs: Vec<&str> = pats.iter().map(String::as_str).collect();
        let mut skip = Vec::new();
        self.pattern_skips(ns, &refs, &mut skip)?;
        for (&i, _) in cand.iter().zip(&skip).filter(|(_, &s)| s) {
            d.reject_at(i, Reason::PatternSimilar);
        }
        d.lookups(0);
        Ok((d, canon))
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
