//! The URL endpoints: `POST /v1/filter` ([`Api::filter`]) and `POST /v1/forget`
//! ([`Api::forget`]). Each admits the request (`admission`), runs its filter call on a pooled
//! client (`pool`) and answers JSON (`reply`).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use super::admission::Admitted;
use super::idempotency;
use super::reply::{direct_error, error, json_response, unavailable};
use super::request::{split, FilterRequest, FilterResponse, HeldUrl, RejectedUrl, Split};
use super::state::Api;
use crate::decision::Verdict;
use crate::gate::{Answer, Idem};

impl Api {
    /// `POST /v1/filter`: which of the request's URLs are new, rejected (and why), held or
    /// duplicates ([`FilterResponse`]); with an `Idempotency-Key`, a retry gets the first
    /// answer back (`Idempotent-Replayed: true`).
    pub(super) async fn filter(self: Arc<Self>, headers: HeaderMap, body: Body) -> Response {
        // The key's syntax first: a bad key is a 400 (a 401 when the token is wrong too).
        if let Some(r) = self.refuse_idempotency_key(&headers) {
            return r;
        }
        let a = match self.admit(&headers, body).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        // The key is scoped to the client (its credentials), the answer to the exact body.
        let idem = idempotency::idem(&headers, &a.bytes, self.idem_ttl);
        // The slot and the body's memory stay held (in `a`) until the answer is built.
        let Admitted { req, ns, .. } = a;
        self.clone().filter_urls(ns, req, idem).await
    }

    /// The filter call of an admitted `/v1/filter` request on a pooled client, and its answer,
    /// counted into the API's series.
    async fn filter_urls(
        self: Arc<Self>,
        ns: String,
        req: FilterRequest,
        idem: Option<Idem>,
    ) -> Response {
        // The call, off the async workers: the non-strings set aside, the strings judged.
        let joined = self
            .with_core(move |core| {
                let received = req.urls.0.len();
                let split = split(req.urls.0);
                core.set_context(req.context);
                let r = core.filter_direct(
                    &ns,
                    req.source.as_deref(),
                    &split.0,
                    req.check_only,
                    idem.as_ref(),
                );
                (r, split, ns, received)
            })
            .await;
        let (r, split, ns, received) = match joined {
            Ok(v) => v,
            Err(r) => return r,
        };
        let (answers, replayed) = match r {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return direct_error(e),
            Err(e) => return unavailable(e),
        };
        // The answer, in input order, counted.
        let resp = filter_response(ns, received, answers, split);
        self.count(&resp);
        let body = serde_json::to_vec(&resp).expect("a response serializes");
        let mut r = json_response(StatusCode::OK, body);
        if replayed {
            r.headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
        }
        r
    }

    /// Count an answered `/v1/filter` request into the API's series: URLs received, rejected
    /// (by reason), duplicates and new.
    fn count(&self, resp: &FilterResponse) {
        let m = &self.metrics;
        m.consumed.inc_by(resp.received as u64);
        for r in &resp.rejected {
            m.filter.rejected.with_label_values(&[&r.reason]).inc();
        }
        m.filter.duplicates.inc_by(resp.duplicates as u64);
        m.emitted.inc_by(resp.new.len() as u64);
    }

    /// `POST /v1/forget`: the same body as `/v1/filter` (`check_only` refused); the accepted
    /// URLs are taken out of the namespace's filter (`{"namespace", "received", "forgotten",
    /// "rejected"}`).
    pub(super) async fn forget(self: Arc<Self>, headers: HeaderMap, body: Body) -> Response {
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
        // The call, off the async workers: the non-strings set aside, the strings forgotten.
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
        // The answer: every rejection, in input order.
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
}

/// The `/v1/filter` answer for `received` candidates, `split` into strings (with their
/// positions) and non-strings, the strings judged `answers`: new, rejected, duplicate or held,
/// each list in input order.
fn filter_response(
    ns: String,
    received: usize,
    answers: Vec<Answer>,
    (strings, idx, non_strings): Split,
) -> FilterResponse {
    let mut resp = FilterResponse {
        namespace: ns,
        received,
        new: Vec::new(),
        new_index: Vec::new(),
        rejected: non_strings,
        duplicates: 0,
        held: Vec::new(),
    };
    for (((v, c), i), url) in answers.into_iter().zip(idx).zip(strings) {
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
    resp
}
