//! [`Api`]: what every request shares — the configuration, the token digests, the pool of
//! filter clients, the admission semaphores and the series. Each concern adds its methods in
//! its own file (`auth`, `admission`, `pool`, `handler`, `routes`).

use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use super::auth::digest;
use super::metrics::ApiMetrics;
use crate::config::{Config, ServeSection};
use crate::gate::GateCore;

/// The state every request shares (one per [`super::router`]).
pub(super) struct Api {
    pub(super) cfg: ServeSection,
    pub(super) default_ns: String,
    pub(super) tokens: Vec<[u8; 32]>,
    /// Idle filter clients; `workers` permits guard them.
    pub(super) cores: Mutex<Vec<GateCore>>,
    pub(super) core_permits: Arc<Semaphore>,
    pub(super) requests: Semaphore,
    /// `serve.max_body_memory` permits, one per byte of request body held.
    pub(super) body_budget: Arc<Semaphore>,
    pub(super) metrics: ApiMetrics,
    pub(super) core_cfg: Config,
    /// `serve.idempotency_ttl`.
    pub(super) idem_ttl: std::time::Duration,
}

impl Api {
    /// The state over `cfg` (its `[redis]`, `[patterns]` and `[serve]` sections), with
    /// `tokens` (none: anonymous): `serve.workers` filter clients, counting into `metrics`.
    pub(super) fn new(cfg: &Config, tokens: &[String], metrics: ApiMetrics) -> Api {
        let sv = cfg.serve.clone();
        let cores = (0..sv.workers)
            .map(|_| GateCore::new(cfg.clone(), metrics.filter.clone()))
            .collect();
        Api {
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
        }
    }
}
