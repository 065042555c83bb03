//! [`router`]: the API's routes — the URL endpoints, timed and counted per status code, beside
//! [`observe::router`]'s `/metrics`, `/healthz` and `/readyz`, with JSON answers for an unknown
//! endpoint or method.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;

use super::metrics::ApiMetrics;
use super::reply::error;
use super::state::Api;
use crate::config::Config;
use crate::observe;

/// The API's routes over `cfg` (its `[redis]`, `[patterns]` and `[serve]` sections), with
/// `tokens` (none: anonymous), counting into `metrics`; `/metrics`, `/healthz` and `/readyz`
/// are [`observe::router`]'s, ready while Redis answers.
pub fn router(cfg: &Config, tokens: &[String], metrics: ApiMetrics) -> Router {
    // The state first (its filter clients), then the observability routes over its series.
    let api = Arc::new(Api::new(cfg, tokens, metrics));
    let probe = api.metrics.probe.clone();
    let observability = observe::router(
        api.metrics.metrics.clone(),
        Arc::new(move || probe.not_ready()),
    );
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

impl Api {
    /// Count a request that started at `t` and answered `r` into the API's series.
    fn observed(&self, t: Instant, r: Response) -> Response {
        self.metrics.seconds.observe(t.elapsed().as_secs_f64());
        self.metrics
            .http
            .with_label_values(&[r.status().as_str()])
            .inc();
        r
    }
}
