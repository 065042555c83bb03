//! Admission: what every URL endpoint does before its filter call — the token, the body read
//! within `serve.body_timeout` and `serve.max_body_bytes` and charged to the process's body
//! budget (`serve.max_body_memory`) as it arrives, a request slot
//! (`serve.max_concurrent_requests`), the parse (off the async workers), the namespace's name
//! and the `source`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::reply::{error, overloaded};
use super::request::{FilterRequest, ParseError};
use super::state::Api;

/// A request past [`Api::admit`]: parsed, with its request slot and body memory held.
pub(super) struct Admitted<'a> {
    pub(super) req: FilterRequest,
    pub(super) ns: String,
    pub(super) bytes: Vec<u8>,
    _budget: Option<OwnedSemaphorePermit>,
    _slot: tokio::sync::SemaphorePermit<'a>,
}

/// One request body's charge to the body budget: the permits held and the bytes they cover.
#[derive(Default)]
struct Charge {
    held: Option<OwnedSemaphorePermit>,
    bytes: usize,
}

impl Charge {
    /// Charge `budget` so that `capacity` bytes are covered in all; false when the budget has
    /// not that many left (the charge then stays as it was).
    fn cover(&mut self, budget: &Arc<Semaphore>, capacity: usize) -> bool {
        if capacity <= self.bytes {
            return true;
        }
        let Ok(n) = u32::try_from(capacity - self.bytes) else {
            return false;
        };
        match budget.clone().try_acquire_many_owned(n) {
            Ok(p) => {
                match &mut self.held {
                    Some(h) => h.merge(p),
                    None => self.held = Some(p),
                }
                self.bytes = capacity;
                true
            }
            Err(_) => false,
        }
    }
}

/// The body's declared `Content-Length`, if it has a readable one.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// 413 `body_too_large`.
fn too_large(limit: usize) -> Response {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("the request body is larger than serve.max_body_bytes ({limit} bytes)"),
    )
}

/// 401 `unauthorized`, with the `WWW-Authenticate` challenge.
fn unauthorized() -> Response {
    let mut r = error(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "a valid `Authorization: Bearer <token>` header is required",
    );
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"crawlsieve\""),
    );
    r
}

/// 422 `invalid_request` when `ns` is no namespace name.
fn refuse_namespace(ns: &str) -> Option<Response> {
    if crate::redis_filter::layout::is_namespace(ns) {
        return None;
    }
    Some(error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
        format!("namespace {ns:?}: use 1–64 of A–Z a–z 0–9 . _ -"),
    ))
}

/// 422 `invalid_request` when `source` is given and is no absolute http(s) URL.
///
/// A source that is no page's URL would resolve nothing: every relative candidate would come
/// back `no_base`, which says nothing of the mistake (the CLI's `--base docs.example.org` is a
/// usage error too).
fn refuse_source(source: Option<&str>) -> Option<Response> {
    let s = source.filter(|s| !s.is_empty())?;
    let ok = url::Url::parse(s)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if ok {
        return None;
    }
    Some(error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
        format!(
            "source {s:?} is not an absolute http(s) URL: give the full URL of the page the candidates were found on, e.g. https://{}",
            s.trim_start_matches('/')
        ),
    ))
}

impl Api {
    /// What every URL endpoint does first: the token, the body (charged to the body budget as
    /// it arrives), a request slot, the parse (off the async workers) and the namespace's name.
    /// The permits in the answer hold the slot and the body's memory until it is dropped.
    pub(super) async fn admit(
        &self,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<Admitted<'_>, Response> {
        if !self.authorized(headers) {
            return Err(unauthorized());
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
        let (req, bytes) = self.parse(bytes).await?;
        let ns = req
            .namespace
            .clone()
            .unwrap_or_else(|| self.default_ns.clone());
        if let Some(r) = refuse_namespace(&ns).or_else(|| refuse_source(req.source.as_deref())) {
            return Err(r);
        }
        Ok(Admitted {
            req,
            ns,
            bytes,
            _budget: budget,
            _slot: slot,
        })
    }

    /// Read the body within `serve.body_timeout` and `serve.max_body_bytes`, charging every
    /// byte to the process's body budget (`serve.max_body_memory`) as it arrives; the permit
    /// returned holds the charge until it is dropped, after the response.
    async fn read_body(
        &self,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<(Vec<u8>, Option<OwnedSemaphorePermit>), Response> {
        use http_body_util::BodyExt;
        let limit = self.cfg.max_body_bytes;
        let declared = declared_length(headers);
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(too_large(limit));
        }
        // Charged as bytes arrive, never on a declared length alone: a client that declares
        // 4 MB and trickles holds only what it sent.
        let mut buf = Vec::with_capacity(declared.map_or(0, |n| n as usize).min(64 << 10));
        let mut charge = Charge::default();
        let deadline = tokio::time::Instant::now() + self.cfg.body_timeout.0;
        let mut body = body;
        loop {
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return Err(self.body_timeout()),
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
                return Err(too_large(limit));
            }
            buf.extend_from_slice(&data);
            // The buffer's capacity is what the allocator holds.
            if !charge.cover(&self.body_budget, buf.capacity()) {
                return Err(overloaded(format!(
                    "request bodies in memory would pass serve.max_body_memory ({} bytes)",
                    self.cfg.max_body_memory
                )));
            }
        }
        Ok((buf, charge.held))
    }

    /// 408 `body_timeout`, closing the connection.
    fn body_timeout(&self) -> Response {
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
        r
    }

    /// Parse `bytes` as a [`FilterRequest`] of at most `serve.max_urls` URLs. Parsing a large
    /// body is blocking work: off the async workers. The bytes come back with the request.
    async fn parse(&self, bytes: Vec<u8>) -> Result<(FilterRequest, Vec<u8>), Response> {
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
        match parsed {
            Ok(req) => Ok((req, bytes)),
            Err(e) => Err(self.parse_error(e)),
        }
    }

    /// How a parse failure is answered: 413 `too_many_urls`, 422 `invalid_request` or 400
    /// `malformed_json`.
    fn parse_error(&self, e: ParseError) -> Response {
        match e {
            ParseError::TooMany => error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_many_urls",
                format!(
                    "more than serve.max_urls ({}) URLs in one request",
                    self.cfg.max_urls
                ),
            ),
            ParseError::Invalid(e) => error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                format!("{e} (expected {{\"urls\": [string, ...]}}, optionally \"namespace\", \"source\", \"context\", \"check_only\")"),
            ),
            ParseError::Malformed(e) => error(
                StatusCode::BAD_REQUEST,
                "malformed_json",
                format!("the body is not JSON: {e}"),
            ),
        }
    }
}
