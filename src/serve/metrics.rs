//! The API's series (`crawlsieve_serve_…`, names in [`crate::observe::names`]).

use prometheus::{Histogram, IntCounter, IntCounterVec};

use crate::observe::{names, FilterMetrics, Metrics, ProbeMetrics};

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
