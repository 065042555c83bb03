//! The render stage's own series (`crawlsieve_render_…`, names in [`crate::observe::names`]).

use prometheus::{Histogram, IntCounter, IntCounterVec, IntGauge};

use crate::observe::{names, Metrics};

/// The render stage's series.
#[derive(Clone)]
pub struct RenderMetrics {
    /// Pages rendered without an error.
    pub pages: IntCounter,
    /// Pages that failed, by kind (see [`crate::render::Rendered::failure_kind`]).
    pub failures: IntCounterVec,
    /// Seconds per page, successful or not.
    pub page_seconds: Histogram,
    /// Assignments by outcome: `canonical` (a new cluster or a page alone), `duplicate`, `rule`.
    pub assignments: IntCounterVec,
    /// Clusters created (a page became the canonical of a new cluster).
    pub clusters_created: IntCounter,
    /// Subresource and redirect requests the safety policy blocked.
    pub blocked_requests: IntCounter,
    /// Connections the egress proxy refused (any frame, worker, WebSocket, popup).
    pub egress_refused: IntCounter,
    /// Chromium relaunches after it died or stopped opening tabs.
    pub chromium_restarts: IntCounter,
    /// 1 while the browser runs.
    pub chromium_up: IntGauge,
    /// URL-pattern verdicts written back to the gate, by verdict (`similar`, `different`).
    pub verdicts: IntCounterVec,
    /// Soft-404 probes rendered, by answer (`honest`, `redirect`, `page`, `failed`).
    pub soft_404_probes: IntCounterVec,
    /// Pages classed `soft_404`.
    pub soft_404_pages: IntCounter,
    /// Learned parameter rules, by outcome (`learned`, `revoked`: a rule in force met a
    /// counter-example, `refuted`: a counter-example before any rule, `refused`: revoked before,
    /// not published).
    pub param_rules: IntCounterVec,
    /// Pages by how they were seen (`how`: `rendered`, `http`) and why rendered (`why`:
    /// [`crate::render::auto::Why::label`], `none` for `http`).
    pub pages_seen: IntCounterVec,
}

impl RenderMetrics {
    /// Register the render stage's series in `m`.
    pub fn new(m: &Metrics) -> RenderMetrics {
        let r = RenderMetrics {
            pages: m.counter(names::PAGES),
            failures: m.counter_vec(names::FAILURES, "kind"),
            page_seconds: m.histogram(
                names::PAGE_SECONDS,
                &[0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0],
            ),
            assignments: m.counter_vec(names::ASSIGNMENTS, "outcome"),
            clusters_created: m.counter(names::CLUSTERS_CREATED),
            blocked_requests: m.counter(names::BLOCKED_REQUESTS),
            egress_refused: m.counter(names::EGRESS_REFUSED),
            chromium_restarts: m.counter(names::CHROMIUM_RESTARTS),
            chromium_up: m.gauge(names::CHROMIUM_UP),
            verdicts: m.counter_vec(names::PATTERN_VERDICTS, "verdict"),
            param_rules: m.counter_vec(names::PARAM_RULES, "outcome"),
            soft_404_probes: m.counter_vec(names::SOFT_404_PROBES, "answer"),
            soft_404_pages: m.counter(names::SOFT_404_PAGES),
            pages_seen: m.counter_vec2(names::PAGES_SEEN, ["how", "why"]),
        };
        // Rare outcomes are exported at 0 from the start: `increase()` over them has data
        // before the first rule is learned.
        for o in ["learned", "revoked", "refuted", "refused"] {
            r.param_rules.with_label_values(&[o]);
        }
        r.pages_seen.with_label_values(&["http", "none"]);
        for w in [
            "always",
            "signal",
            "differs",
            "learning",
            "check",
            "canonical",
        ] {
            r.pages_seen.with_label_values(&["rendered", w]);
        }
        r
    }

    /// Why the browser makes the stage unready, if it does.
    pub fn not_ready(&self) -> Option<String> {
        (self.chromium_up.get() == 0).then(|| "Chromium is not running".to_string())
    }
}
