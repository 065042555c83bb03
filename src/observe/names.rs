//! Every metric crawlsieve exports, in one place: the name after `crawlsieve_<component>_` and
//! its help text. Prometheus conventions: counters end in `_total`, durations are in seconds,
//! ratios are 0–1, and labels take values from small fixed sets only (reason codes, dead-letter
//! codes, causes, kinds, the input topic's partition numbers, filter namespaces bounded by
//! `redis.max_namespaces` — the label is `filter_namespace`, since Kubernetes service discovery
//! adds its own `namespace`), never URLs or hosts.
//!
//! Which component exports which: the stage runtime's series (`gate`, `render`), the filter's
//! (`gate`, `serve`), the Redis probe's (all three), the render stage's, the API's.

/// A metric's name (after the component prefix) and help text.
#[derive(Debug, Clone, Copy)]
pub struct Name {
    /// The name after `crawlsieve_<component>_`.
    pub name: &'static str,
    /// The help text.
    pub help: &'static str,
}

const fn n(name: &'static str, help: &'static str) -> Name {
    Name { name, help }
}

// The Kafka stage runtime (crate::stage): gate and render.
/// Input messages finished.
pub const CONSUMED: Name = n(
    "messages_consumed_total",
    "Input messages finished (emitted, rejected, duplicate or dead-lettered).",
);
/// Output events delivered.
pub const EMITTED: Name = n(
    "urls_emitted_total",
    "Output events delivered (gate: fetch events; render: cluster assignments; serve: new URLs answered).",
);
/// Dead letters, by error code.
pub const DEAD_LETTERED: Name = n(
    "messages_dead_lettered_total",
    "Malformed input messages sent to the dead-letter topic, by error code.",
);
/// Seconds per batch.
pub const BATCH_SECONDS: Name = n(
    "batch_duration_seconds",
    "Time per batch from its first message to its commit.",
);
/// Whether a broker is reachable.
pub const KAFKA_UP: Name = n(
    "kafka_up",
    "1 while the consumer reaches at least one Kafka broker (from librdkafka statistics, every 5 s).",
);
/// Lag per partition.
pub const LAG: Name = n(
    "consumer_lag_messages",
    "Messages between the consumer position and the high watermark, per assigned input partition.",
);
/// Messages in flight.
pub const IN_FLIGHT: Name = n(
    "messages_in_flight",
    "Messages received and not yet finished.",
);
/// Back-off waits, by cause.
pub const RETRIES: Name = n(
    "backoff_retries_total",
    "Back-off waits while Redis or Kafka was unavailable, by cause.",
);
/// Paused by back-pressure.
pub const PAUSED: Name = n("paused", "1 while consumption is paused by back-pressure.");
/// Partitions held.
pub const ASSIGNED: Name = n(
    "assigned_partitions",
    "Input partitions assigned to this process.",
);
/// Rebalances, by kind.
pub const REBALANCES: Name = n(
    "rebalances_total",
    "Consumer-group rebalance events, by kind.",
);
/// Failed commits.
pub const COMMIT_FAILURES: Name = n(
    "commit_failures_total",
    "Offset commits that failed (a later commit covers them).",
);
/// Records dropped for good.
pub const UNDELIVERABLE: Name = n(
    "records_undeliverable_total",
    "Records refused for good by the output cluster that could not be dead-lettered either (dropped).",
);

// The filter (gate and serve).
/// Rejections, by reason code.
pub const REJECTED: Name = n(
    "urls_rejected_total",
    "URL candidates rejected, by reason code.",
);
/// robots.txt fetches, by outcome.
pub const ROBOTS_FETCHES: Name = n(
    "robots_fetches_total",
    "robots.txt files this process fetched, by outcome (rules, none: 4xx or no usable answer, unavailable: 5xx or unreachable, refused: the egress policy).",
);
/// URLs held for robots.txt, by why.
pub const ROBOTS_HELD: Name = n(
    "robots_held_total",
    "URLs put on the robots wait topic, by why (unknown: the origin's rules are being fetched; unavailable: its robots.txt answered 5xx or could not be reached).",
);
/// Hosts whose per-host budget was spent.
pub const BUDGET_HOSTS_REACHED: Name = n(
    "budget_hosts_reached_total",
    "Hosts whose per-host budget ([redis] max_new_urls_per_host) a batch spent, once per host, namespace and window across all gates; their further new URLs are rejected host_budget (the log names the host).",
);
/// New URLs published without the budget.
pub const BUDGET_UNCHECKED: Name = n(
    "budget_unchecked_total",
    "New URLs published without their per-host budget checked, because the budget's Redis exchange (or taking the surplus back out of the filter) failed: over budget, never lost.",
);
/// Fetch-outcome probes.
pub const OUTCOME_PROBES: Name = n(
    "outcome_probes_total",
    "Candidates the fetch outcomes would hold (fetch_misses) published anyway as probes, one in [outcomes] probe_one_in, so that a site that changes is noticed.",
);
/// Held candidates put back.
pub const OUTCOME_PUT_BACK: Name = n(
    "outcome_put_back_total",
    "Candidates held for fetch misses (fetch_misses) put back on the gate's input topic because a hit was counted under their key or `crawlsieve rules release` released it; judged again there.",
);
/// Fetch outcomes counted.
pub const OUTCOMES: Name = n(
    "fetch_outcomes_total",
    "Fetch outcomes the gate read from kafka.outcomes_topic, by kind (hit: a 2xx page; miss: 404, 410 or a soft 404; none: anything else).",
);
/// Duplicates.
pub const DUPLICATES: Name = n(
    "urls_duplicate_total",
    "URL candidates whose canonical form was already seen.",
);
/// Seconds in filter calls.
pub const FILTER_SECONDS: Name = n(
    "filter_duration_seconds",
    "Time per batch spent in Redis filter calls (check and insert).",
);
/// Bloom fill.
pub const FILTER_FILL: Name = n(
    "filter_fill_ratio",
    "Fraction of the namespace's Bloom bits set (fingerprint-store load in exact mode).",
);
/// FP rate now.
pub const FILTER_ESTIMATED_FP: Name = n(
    "filter_estimated_false_positive_ratio",
    "False-positive rate at the namespace's current fill (all live generations).",
);
/// FP rate sized for.
pub const FILTER_TARGET_FP: Name = n(
    "filter_target_false_positive_ratio",
    "The false-positive rate the namespace was sized for.",
);
/// Items counted.
pub const FILTER_ITEMS: Name = n("filter_items", "New URLs counted into the namespace.");
/// Capacity.
pub const FILTER_CAPACITY: Name = n(
    "filter_capacity_items",
    "The number of URLs the namespace was sized for.",
);
/// Redis memory.
pub const FILTER_MEMORY: Name = n(
    "filter_memory_bytes",
    "Redis memory used by the namespace's keys.",
);

// The Redis probe (every component).
/// PING round trip.
pub const REDIS_PING_SECONDS: Name = n(
    "redis_ping_duration_seconds",
    "Round trip of the periodic Redis PING (connection included when reconnecting).",
);
/// Redis answers.
pub const REDIS_UP: Name = n("redis_up", "1 while the last Redis probe answered.");

// The render stage.
/// Pages rendered.
pub const PAGES: Name = n("pages_rendered_total", "Pages rendered without an error.");
/// Failures, by kind.
pub const FAILURES: Name = n(
    "failures_total",
    "Pages that failed, by kind (refused, timeout, navigation, browser, other).",
);
/// Seconds per page.
pub const PAGE_SECONDS: Name = n(
    "page_duration_seconds",
    "Time per page from its start to its features, successful or not.",
);
/// Assignments, by outcome.
pub const ASSIGNMENTS: Name = n(
    "assignments_total",
    "Cluster assignments published, by outcome (canonical, duplicate, rule).",
);
/// Clusters created.
pub const CLUSTERS_CREATED: Name = n(
    "clusters_created_total",
    "Clusters created: a page became the canonical of a new near-duplicate cluster.",
);
/// Requests the policy blocked.
pub const BLOCKED_REQUESTS: Name = n(
    "blocked_requests_total",
    "Subresource and redirect requests refused by the safety policy.",
);
/// Connections the proxy refused.
pub const EGRESS_REFUSED: Name = n(
    "egress_refused_total",
    "Connections of the browser the egress proxy refused (any frame, worker, WebSocket, popup).",
);
/// Browser relaunches.
pub const CHROMIUM_RESTARTS: Name = n(
    "chromium_restarts_total",
    "Chromium relaunches after the browser died or stopped opening tabs.",
);
/// Browser running.
pub const CHROMIUM_UP: Name = n("chromium_up", "1 while the browser runs.");
/// Verdicts written back.
pub const PATTERN_VERDICTS: Name = n(
    "pattern_verdicts_total",
    "URL-pattern verdicts written back to the gate, by verdict.",
);
/// Soft-404 probes rendered.
pub const SOFT_404_PROBES: Name = n(
    "soft_404_probes_total",
    "Soft-404 probes rendered, by answer (honest, redirect, page, failed).",
);
/// Pages classed soft_404.
pub const SOFT_404_PAGES: Name = n(
    "soft_404_pages_total",
    "Pages classed soft_404: they match their scope's answer to a URL that cannot exist.",
);
/// Pages by how they were seen (`render.mode = "auto"`).
pub const PAGES_SEEN: Name = n(
    "pages_seen_total",
    "Pages by how they were seen: how=rendered (Chromium) or how=http (fetched over HTTP only, render.mode auto), and why a rendered one was (always, signal, differs, learning, check, canonical; none for http).",
);
/// Learned parameter rules written back.
pub const PARAM_RULES: Name = n(
    "param_rules_total",
    "Learned parameter rules written back to the gate, by outcome (learned, revoked, refuted, refused).",
);

// The HTTP filter API.
/// Requests, by status.
pub const REQUESTS: Name = n(
    "requests_total",
    "HTTP filter API requests, by status code.",
);
/// Seconds per request.
pub const REQUEST_SECONDS: Name = n(
    "request_duration_seconds",
    "Time per filter request, from its headers to its response.",
);
