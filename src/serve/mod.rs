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
//!
//! The module map (a request goes `listener` → `routes` → `handler`, which calls `admission`,
//! `idempotency` and `pool`):
//! * `listener` — [`run`]: tokens, runtime, the listening socket, the accept loop
//!   (`serve.max_connections`, the open-file limit, the graceful stop).
//! * `routes` — [`router`]: the routes, each request timed and counted by status code.
//! * `state` — `Api`, what every request shares (configuration, token digests, the pool,
//!   the admission semaphores, the series).
//! * `auth` — [`load_tokens`] and the constant-time bearer-token check.
//! * `admission` — what every URL endpoint does first: the token, the body within its
//!   limits and the body budget, a request slot, the parse, the namespace and the source.
//! * `request` — the bodies: [`FilterRequest`] (with its bounded `urls` reader),
//!   [`FilterResponse`], [`RejectedUrl`], [`HeldUrl`].
//! * `idempotency` — which `Idempotency-Key`s are accepted and the key a request is stored
//!   under.
//! * `handler` — the endpoints `POST /v1/filter` and `POST /v1/forget`.
//! * `pool` — the pool of filter clients (the gate's core) a request borrows for its call.
//! * `reply` — the JSON answers and the `{"error": {"code", "message"}}` answers.
//! * `metrics` — [`ApiMetrics`], the `crawlsieve_serve_…` series.

mod admission;
mod auth;
mod handler;
mod idempotency;
mod listener;
mod metrics;
mod pool;
mod reply;
mod request;
mod routes;
mod state;

pub use auth::{load_tokens, TOKENS_ENV};
pub use listener::run;
pub use metrics::ApiMetrics;
pub use request::{
    Candidate, Candidates, FilterRequest, FilterResponse, HeldUrl, ParseError, RejectedUrl,
};
pub use routes::router;

/// The target of the API's log events, whichever child logs them: `crawlsieve::serve` (the
/// target the logs have always had; `tests/api.rs` reads it).
const LOG_TARGET: &str = "crawlsieve::serve";
