//! `Idempotency-Key` on `POST /v1/filter`: which keys are accepted, and the [`Idem`] a key
//! becomes — its name scoped to the client (its credentials), its answer bound to the exact
//! body.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use sha2::{Digest, Sha256};

use super::auth::digest;
use super::reply::error;
use super::state::Api;
use crate::gate::Idem;

/// Lower-case hex of `b`.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether `k` is a usable key: 1–255 visible ASCII characters.
fn valid_key(k: &[u8]) -> bool {
    (1..=255).contains(&k.len()) && k.iter().all(|b| (0x21..0x7f).contains(b))
}

/// The request's `Idempotency-Key` header, as sent.
fn sent_key(headers: &HeaderMap) -> Option<&[u8]> {
    headers.get("idempotency-key").map(|v| v.as_bytes())
}

impl Api {
    /// 400 `invalid_request` when the request's `Idempotency-Key` is not 1–255 visible ASCII
    /// characters — unless the request is unauthorized, which admission answers 401 first.
    pub(super) fn refuse_idempotency_key(&self, headers: &HeaderMap) -> Option<Response> {
        match sent_key(headers) {
            None => None,
            Some(k) if valid_key(k) => None,
            Some(_) if !self.authorized(headers) => None, // answered 401 below
            Some(_) => Some(error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "Idempotency-Key: 1–255 visible ASCII characters",
            )),
        }
    }
}

/// The [`Idem`] of the request's `Idempotency-Key` (none without a valid one) for `headers`
/// and `body`, kept `ttl`. The key is scoped to the client (its credentials), the answer to
/// the exact body.
pub(super) fn idem(headers: &HeaderMap, body: &[u8], ttl: std::time::Duration) -> Option<Idem> {
    let key = sent_key(headers).filter(|k| valid_key(k))?;
    let auth = headers
        .get(header::AUTHORIZATION)
        .map_or(&b""[..], |v| v.as_bytes());
    let name = Sha256::new()
        .chain_update(auth)
        .chain_update([0u8])
        .chain_update(key)
        .finalize();
    let token = i64::from_le_bytes(name[..8].try_into().expect("8 bytes")) >> 2;
    Some(Idem {
        name: hex(&name),
        token: token.abs().max(1),
        request: hex(&digest(body)),
        ttl,
    })
}
