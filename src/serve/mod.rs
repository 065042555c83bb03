//! `crawlsieve serve`: the HTTP filter API — seed 001's URIFilter service.
//!
//! `POST /v1/filter` with `{"namespace": "...", "urls": [...]}` answers which URLs are new (their
//! canonical forms, in input order), which were rejected and why (the gate's reason codes), and
//! how many were duplicates. It shares everything with the gate: the same sieve, the same Redis
//! namespaces (created on first use up to `redis.max_namespaces`), the same URL-pattern verdicts
//! from the render stage. The check-and-set is atomic in Redis, so concurrent requests — and API
//! servers beside each other — never both get the same URL as new; a gate beside them keeps its
//! own at-least-once window (it checks, produces, then inserts).
//!
//! The contract is `schemas/filter-api.v1.openapi.json`. Errors are JSON
//! `{"error": {"code", "message"}}`: 400 `malformed_json`, 401 `unauthorized`, 413
//! `body_too_large` / `too_many_urls`, 422 `invalid_request` / `namespace_refused`, 503
//! `overloaded` / `unavailable` (Redis; with `Retry-After`). `POST /v1/forget` takes the same
//! body and takes the accepted URLs out of the filter (every storage mode).
//!
//! Auth: `Authorization: Bearer <token>`, tokens from `CRAWLSIEVE_API_TOKENS` (comma-separated)
//! and `serve.token_file`; each presented token is compared with every configured one in
//! constant time (SHA-256 digests, `subtle`). `/metrics`, `/healthz` and `/readyz` need no token
//! (they carry no URLs; keep the port inside the cluster).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use prometheus::{Histogram, IntCounter, IntCounterVec};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

use crate::config::{Config, ServeSection};
use crate::decision::Verdict;
use crate::gate::{DirectError, GateCore, Idem};
use crate::observe::{self, names, FilterMetrics, Metrics, ProbeMetrics};
use crate::stage::Stop;
use crate::url::Reason;

/// The API's series (`crawlsieve_serve_…`): its own, the filter's and the Redis probe's.
#[derive(Clone)]
pub struct ApiMetrics {
    /// The registry.
    pub metrics: Metrics,
    /// URLs received.
    pub consumed: IntCounter,
    /// New URLs answered.
    pub emitted: IntCounter,
    /// The filter's series.
    pub filter: FilterMetrics,
    /// The Redis probe's series.
    pub probe: ProbeMetrics,
    /// Requests by status code.
    pub http: IntCounterVec,
    /// Seconds per request.
    pub seconds: Histogram,
}

impl ApiMetrics {
    /// A registry with every series of the API.
    pub fn new() -> ApiMetrics {
        let m = Metrics::new("serve");
        ApiMetrics {
            consumed: m.counter(names::CONSUMED),
            emitted: m.counter(names::EMITTED),
            filter: FilterMetrics::new(&m),
            probe: ProbeMetrics::new(&m),
            http: m.counter_vec(names::REQUESTS, "code"),
            seconds: m.histogram(
                names::REQUEST_SECONDS,
                &[
                    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                ],
            ),
            metrics: m,
        }
    }
}

impl Default for ApiMetrics {
    fn default() -> Self {
        ApiMetrics::new()
    }
}

/// The environment variable holding bearer tokens (comma-separated).
pub const TOKENS_ENV: &str = "CRAWLSIEVE_API_TOKENS";

/// A filter request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterRequest {
    /// The filter namespace (seed 001's `filter_typeid`, accepted as an alias); default:
    /// `redis.namespace`.
    #[serde(default, alias = "filter_typeid")]
    pub namespace: Option<String>,
    /// The candidates: strings; any other JSON value is rejected as `not_a_string`.
    pub urls: Candidates,
    /// The page the candidates came from: the base of relative ones.
    #[serde(default)]
    pub source: Option<String>,
    /// Check without marking the new URLs as seen.
    #[serde(default)]
    pub check_only: bool,
    /// Where the candidates were found (`html_attr`, `js`, …; default `unknown`): decoded
    /// accordingly before they are judged.
    #[serde(default)]
    pub context: crate::url::Context,
}

/// One element of `urls`: a string, or any other JSON value kept as its JSON text (at most
/// 200 bytes) for the `not_a_string` rejection.
#[derive(Debug, Clone, PartialEq)]
pub enum Candidate {
    /// A string: a URL candidate.
    Url(String),
    /// Not a string.
    Other(String),
}

/// The `urls` array, read element by element and abandoned at the first element past the
/// limit set by [`FilterRequest::parse`] (`serve.max_urls`): an oversized array costs no more
/// than `max_urls + 1` elements of memory, whatever its length.
#[derive(Debug, Default)]
pub struct Candidates(pub Vec<Candidate>);

/// How [`FilterRequest::parse`] failed.
#[derive(Debug)]
pub enum ParseError {
    /// More than the limit of URLs.
    TooMany,
    /// JSON of the wrong shape (422 `invalid_request`).
    Invalid(String),
    /// Not JSON (400 `malformed_json`).
    Malformed(String),
}

const TOO_MANY: &str = "crawlsieve: too many urls";

thread_local! {
    /// The element limit of the `urls` array being parsed on this thread.
    static URL_LIMIT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

impl FilterRequest {
    /// Parse a request body, reading at most `max_urls` elements of `urls` (blocking work:
    /// run it off the async workers).
    pub fn parse(body: &[u8], max_urls: usize) -> Result<FilterRequest, ParseError> {
        URL_LIMIT.with(|c| c.set(max_urls));
        let r = serde_json::from_slice::<FilterRequest>(body);
        URL_LIMIT.with(|c| c.set(usize::MAX));
        r.map_err(|e| {
            if e.to_string().starts_with(TOO_MANY) {
                ParseError::TooMany
            } else if e.is_data() {
                ParseError::Invalid(e.to_string())
            } else {
                ParseError::Malformed(e.to_string())
            }
        })
    }
}

/// JSON text of a non-string element, cut to 200 bytes on a character boundary.
fn json_text(v: &serde_json::Value) -> String {
    let mut t = v.to_string();
    if t.len() > 200 {
        let mut cut = 200;
        while !t.is_char_boundary(cut) {
            cut -= 1;
        }
        t.truncate(cut);
    }
    t
}

impl<'de> Deserialize<'de> for Candidate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Candidate, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Candidate;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a URL candidate")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Candidate, E> {
                Ok(Candidate::Url(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Candidate, E> {
                Ok(Candidate::Url(v))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Candidate, E> {
                Ok(Candidate::Other(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Candidate, E> {
                Ok(Candidate::Other(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Candidate, E> {
                Ok(Candidate::Other(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Candidate, E> {
                Ok(Candidate::Other(json_text(&serde_json::json!(v))))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Candidate, E> {
                Ok(Candidate::Other("null".into()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, a: A) -> Result<Candidate, A::Error> {
                let v = serde_json::Value::deserialize(
                    serde::de::value::SeqAccessDeserializer::new(a),
                )?;
                Ok(Candidate::Other(json_text(&v)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, a: A) -> Result<Candidate, A::Error> {
                let v = serde_json::Value::deserialize(
                    serde::de::value::MapAccessDeserializer::new(a),
                )?;
                Ok(Candidate::Other(json_text(&v)))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Candidates {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Candidates, D::Error> {
        struct V(usize);
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Candidates;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of URL strings")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Candidates, A::Error> {
                let mut out = Vec::with_capacity(a.size_hint().unwrap_or(0).min(self.0).min(4096));
                while let Some(c) = a.next_element::<Candidate>()? {
                    if out.len() == self.0 {
                        return Err(serde::de::Error::custom(TOO_MANY));
                    }
                    out.push(c);
                }
                Ok(Candidates(out))
            }
        }
        d.deserialize_seq(V(URL_LIMIT.with(|c| c.get())))
    }
}

/// One rejected candidate.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct RejectedUrl {
    /// Its position in `urls`.
    pub index: usize,
    /// The candidate (a non-string element as JSON text, at most 200 bytes).
    pub url: String,
    /// The reason code.
    pub reason: String,
}

/// A filter response.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct FilterResponse {
    /// The namespace used.
    pub namespace: String,
    /// Candidates received.
    pub received: usize,
    /// The new URLs, canonical, in input order.
    pub new: Vec<String>,
    /// Positions of the new URLs in `urls` (same order as `new`).
    pub new_index: Vec<usize>,
    /// Rejected candidates, in input order.
    pub rejected: Vec<RejectedUrl>,
    /// Candidates already seen (before, or earlier in this request).
    pub duplicates: usize,
    /// Candidates held for robots.txt (`[robots]` on: their site's rules could not be read
    /// within `robots.fetch_timeout`, or its server fails): not marked seen; ask again later.
    /// Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<HeldUrl>,
}

/// A candidate held for robots.txt.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct HeldUrl {
    /// Position in `urls`.
    pub index: usize,
    /// The candidate as sent.
    pub url: String,
}

/// A filter client taken from the pool; back on drop — a fresh one if the task panicked, as
/// the old one may hold half-done state.
struct Lease {
    core: Option<GateCore>,
    api: Arc<Api>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let core = match self.core.take() {
            Some(c) if !std::thread::panicking() => c,
            _ => GateCore::new(self.api.core_cfg(), self.api.metrics.filter.clone()),
        };
        if let Ok(mut cores) = self.api.cores.lock() {
            cores.push(core);
        }
    }
}

/// A request past [`Api::admit`]: parsed, with its request slot and body memory held.
struct Admitted<'a> {
    req: FilterRequest,
    ns: String,
    bytes: Vec<u8>,
    _budget: Option<tokio::sync::OwnedSemaphorePermit>,
    _slot: tokio::sync::SemaphorePermit<'a>,
}

struct Api {
    cfg: ServeSection,
    default_ns: String,
    tokens: Vec<[u8; 32]>,
    /// Idle filter clients; `workers` permits guard them.
    cores: Mutex<Vec<GateCore>>,
    core_permits: Arc<Semaphore>,
    requests: Semaphore,
    /// `serve.max_body_memory` permits, one per byte of request body held.
    body_budget: Arc<Semaphore>,
    metrics: ApiMetrics,
    core_cfg: Config,
    /// `serve.idempotency_ttl`.
    idem_ttl: std::time::Duration,
}

/// A request's candidates: the strings, their positions, and the other JSON values, rejected
/// `not_a_string`.
type Split = (Vec<String>, Vec<usize>, Vec<RejectedUrl>);

fn split(urls: Vec<Candidate>) -> Split {
    let (mut strings, mut idx, mut other) = (Vec::new(), Vec::new(), Vec::new());
    for (i, c) in urls.into_iter().enumerate() {
        match c {
            Candidate::Url(s) => {
                strings.push(s);
                idx.push(i);
            }
            Candidate::Other(t) => other.push(RejectedUrl {
                index: i,
                url: t,
                reason: Reason::NotAString.code().into(),
            }),
        }
    }
    (strings, idx, other)
}

/// Lower-case hex of `b`.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bearer tokens from `CRAWLSIEVE_API_TOKENS` and `serve.token_file` (blank lines and `#`
/// comments skipped).
pub fn load_tokens(cfg: &ServeSection, env: Option<String>) -> Result<Vec<String>> {
    let mut out: Vec<String> = env
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect();
    if let Some(f) = &cfg.token_file {
        let text = std::fs::read_to_string(f).with_context(|| format!("serve.token_file {f}"))?;
        out.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from),
        );
    }
    Ok(out)
}

fn digest(t: &[u8]) -> [u8; 32] {
    Sha256::digest(t).into()
}

/// Whether `presented` equals one of `tokens`, in time independent of where they differ and
/// of which one matched (every token is compared).
fn token_ok(tokens: &[[u8; 32]], presented: &[u8]) -> bool {
    let d = digest(presented);
    let mut ok = subtle::Choice::from(0);
    for t in tokens {
        ok |= t.ct_eq(&d);
    }
    ok.into()
}

/// A JSON answer.
fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = serde_json::json!({"error": {"code": code, "message": message.into()}});
    json_response(status, body.to_string().into_bytes())
}

/// Why the filter client answered no verdicts, as the API says it.
fn direct_error(e: DirectError) -> Response {
    match e {
        DirectError::Refused(detail) => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "namespace_refused",
            detail,
        ),
        DirectError::KeyReused => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency_key_reused",
            "this Idempotency-Key was used for a different request: use a new key per request",
        ),
    }
}

/// 503 `unavailable` (Redis) with `Retry-After: 1`.
fn unavailable(e: impl std::fmt::Display) -> Response {
    let mut r = error(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        format!("the filter is unavailable: {e}"),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// 503 `overloaded` with `Retry-After: 1`.
fn overloaded(message: String) -> Response {
    let mut r = error(StatusCode::SERVICE_UNAVAILABLE, "overloaded", message);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

impl Api {
    /// Read the body within `serve.body_timeout` and `serve.max_body_bytes`, charging every
    /// byte to the process's body budget (`serve.max_body_memory`) as it arrives; the permit
    /// returned holds the charge until it is dropped, after the response.
    async fn read_body(
        &self,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<(Vec<u8>, Option<tokio::sync::OwnedSemaphorePermit>), Response> {
        use http_body_util::BodyExt;
        let limit = self.cfg.max_body_bytes;
        let too_large = || {
            error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the request body is larger than serve.max_body_bytes ({limit} bytes)"),
            )
        };
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(too_large());
        }
        let over_budget = || {
            overloaded(format!(
                "request bodies in memory would pass serve.max_body_memory ({} bytes)",
                self.cfg.max_body_memory
            ))
        };
        let mut held: Option<tokio::sync::OwnedSemaphorePermit> = None;
        let mut charge = |n: usize| -> bool {
            let Ok(n) = u32::try_from(n) else {
                return false;
            };
            match self.body_budget.clone().try_acquire_many_owned(n) {
                Ok(p) => {
                    match &mut held {
                        Some(h) => h.merge(p),
                        None => held = Some(p),
                    }
                    true
                }
                Err(_) => false,
            }
        };
        // Charged as bytes arrive, never on a declared length alone: a client that declares
        // 4 MB and trickles holds only what it sent.
        let mut buf = Vec::with_capacity(declared.map_or(0, |n| n as usize).min(64 << 10));
        let mut charged = 0usize;
        let deadline = tokio::time::Instant::now() + self.cfg.body_timeout.0;
        let mut body = body;
        loop {
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => {
                    let mut r = error(
                        StatusCode::REQUEST_TIMEOUT,
                        "body_timeout",
                        format!(
                            "the request body did not arrive within serve.body_timeout ({})",
                            self.cfg.body_timeout
                        ),
                    );
                    r.headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                    return Err(r);
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(error(
                        StatusCode::BAD_REQUEST,
                        "malformed_body",
                        format!("the request body could not be read: {e}"),
                    ))
                }
                Ok(Some(Ok(f))) => f,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            if buf.len() + data.len() > limit {
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
            // The buffer's capacity is what the allocator holds.
            if buf.capacity() > charged {
                if !charge(buf.capacity() - charged) {
                    return Err(over_budget());
                }
                charged = buf.capacity();
            }
        }
        Ok((buf, held))
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        if self.tokens.is_empty() {
            return true; // allow_anonymous (checked at start)
        }
        let Some(v) = headers.get(header::AUTHORIZATION) else {
            return false;
        };
        let v = v.as_bytes();
        let prefix = b"bearer ";
        if v.len() <= prefix.len() || !v[..prefix.len()].eq_ignore_ascii_case(prefix) {
            return false;
        }
        token_ok(&self.tokens, v[prefix.len()..].trim_ascii())
    }

    /// What every URL endpoint does first: the token, the body (charged to the body budget as
    /// it arrives), a request slot, the parse (off the async workers) and the namespace's name.
    /// The permits in the answer hold the slot and the body's memory until it is dropped.
    async fn admit(&self, headers: &HeaderMap, body: Body) -> Result<Admitted<'_>, Response> {
        if !self.authorized(headers) {
            let mut r = error(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a valid `Authorization: Bearer <token>` header is required",
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"crawlsieve\""),
            );
            return Err(r);
        }
        // The body first, charged to the body budget as it arrives; a request slot only once
        // it is in (a client trickling its body holds no slot and almost no budget).
        let (bytes, budget) = self.read_body(headers, body).await?;
        let Ok(slot) = self.requests.try_acquire() else {
            return Err(overloaded(format!(
                "more than serve.max_concurrent_requests ({}) requests at once",
                self.cfg.max_concurrent_requests
            )));
        };
        // Parsing a large body is blocking work: off the async workers.
        let max_urls = self.cfg.max_urls;
        let (parsed, bytes) = match tokio::task::spawn_blocking(move || {
            (FilterRequest::parse(&bytes, max_urls), bytes)
        })
        .await
        {
            Ok(v) => v,
            Err(e) => {
                return Err(error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    format!("the parse task failed: {e}"),
                ))
            }
        };
        let req = match parsed {
            Ok(r) => r,
            Err(ParseError::TooMany) => {
                return Err(error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_many_urls",
                    format!(
                        "more than serve.max_urls ({}) URLs in one request",
                        self.cfg.max_urls
                    ),
                ))
            }
            Err(ParseError::Invalid(e)) => {
                return Err(error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_request",
                    format!("{e} (expected {{\"urls\": [string, ...]}}, optionally \"namespace\", \"source\", \"context\", \"check_only\")"),
                ))
            }
            Err(ParseError::Malformed(e)) => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    "malformed_json",
                    format!("the body is not JSON: {e}"),
                ))
            }
        };
        let ns = req
            .namespace
            .clone()
            .unwrap_or_else(|| self.default_ns.clone());
        if !crate::redis_filter::layout::is_namespace(&ns) {
            return Err(error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                format!("namespace {ns:?}: use 1–64 of A–Z a–z 0–9 . _ -"),
            ));
        }
        // A source that is no page's URL would resolve nothing: every relative candidate
        // would come back `no_base`, which says nothing of the mistake (the CLI's `--base
        // docs.example.org` is a usage error too).
        if let Some(s) = req.source.as_deref().filter(|s| !s.is_empty()) {
            let ok = url::Url::parse(s)
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            if !ok {
                return Err(error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_request",
                    format!(
                        "source {s:?} is not an absolute http(s) URL: give the full URL of the page the candidates were found on, e.g. https://{}",
                        s.trim_start_matches('/')
                    ),
                ));
            }
        }
        Ok(Admitted {
            req,
            ns,
            bytes,
            _budget: budget,
            _slot: slot,
        })
    }

    async fn filter(self: Arc<Self>, headers: HeaderMap, body: Body) -> Response {
        let idem_key = match headers.get("idempotency-key").map(|v| v.as_bytes()) {
            None => None,
            Some(k)
                if (1..=255).contains(&k.len()) && k.iter().all(|b| (0x21..0x7f).contains(b)) =>
            {
                Some(k.to_vec())
            }
            Some(_) if !self.authorized(&headers) => None, // answered 401 below
            Some(_) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "Idempotency-Key: 1–255 visible ASCII characters",
                )
            }
        };
        let a = match self.admit(&headers, body).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        // The key is scoped to the client (its credentials), the answer to the exact body.
        let idem = idem_key.map(|k| {
            let auth = headers
                .get(header::AUTHORIZATION)
                .map_or(&b""[..], |v| v.as_bytes());
            let name = Sha256::new()
                .chain_update(auth)
                .chain_update([0u8])
                .chain_update(&k)
                .finalize();
            let token = i64::from_le_bytes(name[..8].try_into().expect("8 bytes")) >> 2;
            Idem {
                name: hex(&name),
                token: token.abs().max(1),
                request: hex(&digest(&a.bytes)),
                ttl: self.idem_ttl,
            }
        });
        let Admitted { req, ns, .. } = a;
        self.clone().run(ns, req, idem).await
    }

    /// `POST /v1/forget`: the same body as `/v1/filter` (`check_only` refused); the accepted
    /// URLs are taken out of the namespace's filter (`{"namespace", "received", "forgotten",
    /// "rejected"}`).
    async fn forget(self: Arc<Self>, headers: HeaderMap, body: Body) -> Response {
        let a = match self.admit(&headers, body).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if a.req.check_only {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "check_only has no meaning for /v1/forget",
            );
        }
        let Admitted { req, ns, .. } = a;
        let joined = self
            .with_core(move |core| {
                let received = req.urls.0.len();
                let (strings, idx, other) = split(req.urls.0);
                core.set_context(req.context);
                let r = core.forget_direct(&ns, req.source.as_deref(), &strings);
                (r, strings, idx, other, ns, received)
            })
            .await;
        let (r, strings, idx, mut out, ns, received) = match joined {
            Ok(v) => v,
            Err(r) => return r,
        };
        let (forgotten, rejected) = match r {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return direct_error(e),
            Err(e) => return unavailable(e),
        };
        for (k, reason) in rejected {
            out.push(RejectedUrl {
                index: idx[k],
                url: strings[k].clone(),
                reason: reason.code().into(),
            });
        }
        out.sort_by_key(|r| r.index);
        let body = serde_json::json!({
            "namespace": ns,
            "received": received,
            "forgotten": forgotten,
            "rejected": out,
        });
        json_response(StatusCode::OK, body.to_string().into_bytes())
    }

    /// Run `f` on an idle filter client, off the async workers. The permit and the client
    /// belong to the blocking task, not to the calling future: a client that hangs up drops the
    /// future, while the task runs on and gives both back.
    async fn with_core<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut GateCore) -> T + Send + 'static,
    ) -> Result<T, Response> {
        let permit = self
            .core_permits
            .clone()
            .acquire_owned()
            .await
            .expect("never closed");
        let api = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut lease = Lease {
                core: Some(
                    api.cores
                        .lock()
                        .expect("cores lock")
                        .pop()
                        .expect("a permit guarantees an idle core"),
                ),
                api: api.clone(),
                _permit: permit,
            };
            f(lease.core.as_mut().expect("leased above"))
        })
        .await
        .map_err(|e| {
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                format!("the filter task failed: {e}"),
            )
        })
    }

    async fn run(self: Arc<Self>, ns: String, req: FilterRequest, idem: Option<Idem>) -> Response {
        let joined = self
            .with_core(move |core| {
                let received = req.urls.0.len();
                let (strings, idx, out) = split(req.urls.0);
                core.set_context(req.context);
                let r = core.filter_direct(
                    &ns,
                    req.source.as_deref(),
                    &strings,
                    req.check_only,
                    idem.as_ref(),
                );
                (r, strings, idx, out, ns, received)
            })
            .await;
        let api = self;
        let (r, strings, idx, non_strings, ns, received) = match joined {
            Ok(v) => v,
            Err(r) => return r,
        };
        let (verdicts, replayed) = match r {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return direct_error(e),
            Err(e) => return unavailable(e),
        };
        let mut resp = FilterResponse {
            namespace: ns,
            received,
            new: Vec::new(),
            new_index: Vec::new(),
            rejected: non_strings,
            duplicates: 0,
            held: Vec::new(),
        };
        let m = &api.metrics;
        m.consumed.inc_by(received as u64);
        for (((v, c), i), url) in verdicts.into_iter().zip(idx).zip(strings) {
            match v {
                Verdict::New => {
                    resp.new.push(c);
                    resp.new_index.push(i);
                }
                Verdict::Duplicate | Verdict::Unpublishable => resp.duplicates += 1,
                Verdict::Rejected(r) => resp.rejected.push(RejectedUrl {
                    index: i,
                    url,
                    reason: r.code().into(),
                }),
                Verdict::Held => resp.held.push(HeldUrl { index: i, url }),
            }
        }
        resp.rejected.sort_by_key(|r| r.index);
        for r in &resp.rejected {
            m.filter.rejected.with_label_values(&[&r.reason]).inc();
        }
        m.filter.duplicates.inc_by(resp.duplicates as u64);
        m.emitted.inc_by(resp.new.len() as u64);
        let body = serde_json::to_vec(&resp).expect("a response serializes");
        let mut r = json_response(StatusCode::OK, body);
        if replayed {
            r.headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
        }
        r
    }

    /// Count a request that started at `t` and answered `r` into the API's series.
    fn observed(&self, t: Instant, r: Response) -> Response {
        self.metrics.seconds.observe(t.elapsed().as_secs_f64());
        self.metrics
            .http
            .with_label_values(&[r.status().as_str()])
            .inc();
        r
    }

    fn core_cfg(&self) -> Config {
        self.core_cfg.clone()
    }
}

/// The API's routes over `cfg` (its `[redis]`, `[patterns]` and `[serve]` sections), with
/// `tokens` (none: anonymous), counting into `metrics`; `/metrics`, `/healthz` and `/readyz`
/// are [`observe::router`]'s, ready while Redis answers.
pub fn router(cfg: &Config, tokens: &[String], metrics: ApiMetrics) -> Router {
    let sv = cfg.serve.clone();
    let cores = (0..sv.workers)
        .map(|_| GateCore::new(cfg.clone(), metrics.filter.clone()))
        .collect();
    let probe = metrics.probe.clone();
    let observability =
        observe::router(metrics.metrics.clone(), Arc::new(move || probe.not_ready()));
    let api = Arc::new(Api {
        default_ns: cfg.redis.namespace.clone(),
        tokens: tokens.iter().map(|t| digest(t.as_bytes())).collect(),
        cores: Mutex::new(cores),
        core_permits: Arc::new(Semaphore::new(sv.workers)),
        requests: Semaphore::new(sv.max_concurrent_requests),
        body_budget: Arc::new(Semaphore::new(sv.max_body_memory)),
        core_cfg: cfg.clone(),
        idem_ttl: sv.idempotency_ttl.0,
        cfg: sv,
        metrics,
    });
    Router::new()
        .route(
            "/v1/filter",
            post(
                |State(api): State<Arc<Api>>, headers: HeaderMap, body: Body| async move {
                    let t = Instant::now();
                    let r = api.clone().filter(headers, body).await;
                    api.observed(t, r)
                },
            ),
        )
        .route(
            "/v1/forget",
            post(
                |State(api): State<Arc<Api>>, headers: HeaderMap, body: Body| async move {
                    let t = Instant::now();
                    let r = api.clone().forget(headers, body).await;
                    api.observed(t, r)
                },
            ),
        )
        .with_state(api)
        .merge(observability)
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such endpoint; see schemas/filter-api.v1.openapi.json",
            )
        })
        .method_not_allowed_fallback(|| async {
            error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "POST /v1/filter, /v1/forget; GET /metrics, /healthz, /readyz",
            )
        })
}

/// Serve until `stop` (SIGTERM/SIGINT): requests in progress finish first.
pub fn run(cfg: &Config, stop: Stop) -> Result<()> {
    let tokens = load_tokens(&cfg.serve, std::env::var(TOKENS_ENV).ok())?;
    if tokens.is_empty() && !cfg.serve.allow_anonymous {
        // A setting missing: the contract's usage error (exit 2), like any wrong configuration.
        return Err(crate::config::ConfigError::Invalid(vec![format!(
            "no API tokens: set {TOKENS_ENV} (comma-separated) or serve.token_file, or serve.allow_anonymous = true for a trusted network"
        )])
        .into());
    }
    crate::redis_filter::tier::set_budget(cfg.redis.local_tier_memory);
    let metrics = ApiMetrics::new();
    observe::probes::spawn(cfg, metrics.probe.clone(), Some(metrics.filter.clone()));
    let app = router(cfg, &tokens, metrics);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let r = rt.block_on(async {
        let l = tokio::net::TcpListener::bind(&cfg.serve.listen)
            .await
            .with_context(|| format!("serve.listen: cannot listen on {}", cfg.serve.listen))?;
        tracing::info!(
            address = %l.local_addr()?,
            tokens = tokens.len(),
            anonymous = tokens.is_empty(),
            "listening"
        );
        serve_connections(l, app, &cfg.serve, stop).await;
        Ok(())
    });
    // A filter call still running on a blocking thread (Redis stalled) is not waited for.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    r
}

/// Raise the soft open-file limit towards the hard one so that `want` descriptors fit; the
/// limit reached.
fn raise_nofile(want: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local rlimit.
    unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        if r.rlim_cur < want {
            let target = want.min(r.rlim_max);
            let raised = libc::rlimit {
                rlim_cur: target,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return target;
            }
        }
        r.rlim_cur
    }
}

/// Accept and serve connections until `stop`, then let requests in progress finish within
/// `serve.shutdown_grace` and close the rest. Each connection is hyper's HTTP/1 server with a
/// timer: `serve.header_timeout` closes a connection that does not deliver its headers (a
/// half-open or idle one); at most `serve.max_connections` are open at once.
async fn serve_connections(l: tokio::net::TcpListener, app: Router, sv: &ServeSection, stop: Stop) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let limit = raise_nofile(sv.max_connections as u64 + 256);
    if limit < sv.max_connections as u64 + 64 {
        tracing::warn!(
            open_files = limit,
            max_connections = sv.max_connections,
            "the open-file limit is below serve.max_connections: accept may fail under load"
        );
    }
    let slots = Arc::new(Semaphore::new(sv.max_connections));
    let graceful = GracefulShutdown::new();
    let stopped = || async {
        while !stop.requested() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(sv.header_timeout.0)
        .keep_alive(true);
    loop {
        let slot = tokio::select! {
            p = slots.clone().acquire_owned() => p.expect("never closed"),
            _ = stopped() => break,
        };
        let sock = tokio::select! {
            r = l.accept() => match r {
                Ok((sock, _)) => sock,
                Err(e) => {
                    // EMFILE and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped() => break,
        };
        let _ = sock.set_nodelay(true);
        let conn =
            builder.serve_connection(TokioIo::new(sock), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(l);
    if tokio::time::timeout(sv.shutdown_grace.0, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            grace = %sv.shutdown_grace,
            "connections still open after serve.shutdown_grace: closing them"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_by_value() {
        let toks = [digest(b"alpha"), digest(b"beta")];
        assert!(token_ok(&toks, b"alpha"));
        assert!(token_ok(&toks, b"beta"));
        assert!(!token_ok(&toks, b"alph"));
        assert!(!token_ok(&toks, b"alphaa"));
        assert!(!token_ok(&toks, b""));
        assert!(!token_ok(&[], b"alpha"));
    }

    #[test]
    fn tokens_from_env_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tokens");
        std::fs::write(&f, "# ops\n  t-file-1 \n\nt-file-2\n").unwrap();
        let cfg = ServeSection {
            token_file: Some(f.display().to_string()),
            ..ServeSection::default()
        };
        let t = load_tokens(&cfg, Some(" a , ,b".into())).unwrap();
        assert_eq!(t, ["a", "b", "t-file-1", "t-file-2"]);
        let missing = ServeSection {
            token_file: Some("/nonexistent/tokens".into()),
            ..ServeSection::default()
        };
        assert!(load_tokens(&missing, None).is_err());
    }
}
