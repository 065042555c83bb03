//! The API's JSON answers: a body with its content type, and the `{"error": {"code",
//! "message"}}` answers shared by every step (with `Retry-After` on the 503s).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::gate::DirectError;

/// A JSON answer.
pub(super) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A JSON error answer: `{"error": {"code", "message"}}` with `status`.
pub(super) fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = serde_json::json!({"error": {"code": code, "message": message.into()}});
    json_response(status, body.to_string().into_bytes())
}

/// Why the filter client answered no verdicts, as the API says it.
pub(super) fn direct_error(e: DirectError) -> Response {
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
pub(super) fn unavailable(e: impl std::fmt::Display) -> Response {
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
pub(super) fn overloaded(message: String) -> Response {
    let mut r = error(StatusCode::SERVICE_UNAVAILABLE, "overloaded", message);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}
