//! [`run`]: the process side of `crawlsieve serve` — the tokens, the runtime, the listening
//! socket and the accept loop (`serve_connections`): hyper's HTTP/1 per connection, at most
//! `serve.max_connections` at once (the open-file limit raised to fit), and a graceful stop.

use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use tokio::sync::Semaphore;

use super::auth::{load_tokens, TOKENS_ENV};
use super::metrics::ApiMetrics;
use super::routes::router;
use super::LOG_TARGET;
use crate::config::{Config, ServeSection};
use crate::observe;
use crate::stage::Stop;

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
            target: LOG_TARGET,
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

/// Raise the open-file limit for `serve.max_connections` connections (and some to spare); warn
/// when it stays too low for them.
fn check_open_files(sv: &ServeSection) {
    let limit = raise_nofile(sv.max_connections as u64 + 256);
    if limit < sv.max_connections as u64 + 64 {
        tracing::warn!(
            target: LOG_TARGET,
            open_files = limit,
            max_connections = sv.max_connections,
            "the open-file limit is below serve.max_connections: accept may fail under load"
        );
    }
}

/// Resolves once `stop` is requested (checked every 50 ms).
async fn stopped(stop: &Stop) {
    while !stop.requested() {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
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

    check_open_files(sv);
    let slots = Arc::new(Semaphore::new(sv.max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(sv.header_timeout.0)
        .keep_alive(true);
    // Accept: a connection slot first, then a socket; either wait ends at `stop`.
    loop {
        let slot = tokio::select! {
            p = slots.clone().acquire_owned() => p.expect("never closed"),
            _ = stopped(&stop) => break,
        };
        let sock = tokio::select! {
            r = l.accept() => match r {
                Ok((sock, _)) => sock,
                Err(e) => {
                    // EMFILE and the like: back off instead of spinning.
                    tracing::warn!(target: LOG_TARGET, error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped(&stop) => break,
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
    // Stopped: no new connections; the open ones get `serve.shutdown_grace`.
    drop(l);
    if tokio::time::timeout(sv.shutdown_grace.0, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            target: LOG_TARGET,
            grace = %sv.shutdown_grace,
            "connections still open after serve.shutdown_grace: closing them"
        );
    }
}
