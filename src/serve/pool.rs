//! The pool of filter clients ([`GateCore`]s): a request borrows one for its filter call, off
//! the async workers, and gives it back — a fresh one if the call panicked.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;

use super::reply::error;
use super::state::Api;
use crate::config::Config;
use crate::gate::GateCore;

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

impl Api {
    /// Run `f` on an idle filter client, off the async workers. The permit and the client
    /// belong to the blocking task, not to the calling future: a client that hangs up drops the
    /// future, while the task runs on and gives both back.
    pub(super) async fn with_core<T: Send + 'static>(
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

    /// The configuration a fresh filter client is built from.
    fn core_cfg(&self) -> Config {
        self.core_cfg.clone()
    }
}
