//! The runtime's series (`crawlsieve_<stage>_…`, names in [`crate::observe::names`]) and the
//! part of readiness it knows.

use prometheus::{Histogram, IntCounter, IntCounterVec, IntGauge, IntGaugeVec};

use crate::observe::{names, Metrics, ProbeMetrics, SECONDS};

/// Every series the runtime updates.
#[derive(Clone)]
pub struct StageMetrics {
    /// Messages taken from the input topic and finished (counted once per finished batch).
    pub consumed: IntCounter,
    /// Output records delivered.
    pub emitted: IntCounter,
    /// Messages sent to the dead-letter topic, by error code.
    pub dead_lettered: IntCounterVec,
    /// Seconds per batch, from the first poll to the commit.
    pub batch_seconds: Histogram,
    /// 1 while the consumer reaches at least one Kafka broker (librdkafka statistics).
    pub kafka_up: IntGauge,
    /// Messages behind the high watermark, per assigned input partition.
    pub lag: IntGaugeVec,
    /// Messages received and not yet finished.
    pub in_flight: IntGauge,
    /// Back-off waits, by cause (`redis`, `kafka`).
    pub retries: IntCounterVec,
    /// 1 while consumption is paused by back-pressure.
    pub paused: IntGauge,
    /// Partitions currently assigned to this process.
    pub assigned_partitions: IntGauge,
    /// Rebalance events, by kind (`assign`, `revoke`).
    pub rebalances: IntCounterVec,
    /// Offset commits that failed (the next commit covers them).
    pub commit_failures: IntCounter,
    /// Records the output cluster refused for good and that could not become dead letters.
    pub undeliverable: IntCounter,
}

impl StageMetrics {
    /// Register the runtime's series in `m`.
    pub fn new(m: &Metrics) -> StageMetrics {
        let kafka_up = m.gauge(names::KAFKA_UP);
        kafka_up.set(1);
        StageMetrics {
            consumed: m.counter(names::CONSUMED),
            emitted: m.counter(names::EMITTED),
            dead_lettered: m.counter_vec(names::DEAD_LETTERED, "error"),
            batch_seconds: m.histogram(names::BATCH_SECONDS, SECONDS),
            kafka_up,
            lag: m.gauge_vec(names::LAG, "partition"),
            in_flight: m.gauge(names::IN_FLIGHT),
            retries: m.counter_vec(names::RETRIES, "cause"),
            paused: m.gauge(names::PAUSED),
            assigned_partitions: m.gauge(names::ASSIGNED),
            rebalances: m.counter_vec(names::REBALANCES, "kind"),
            commit_failures: m.counter(names::COMMIT_FAILURES),
            undeliverable: m.counter(names::UNDELIVERABLE),
        }
    }

    /// Why a stage cannot take work: no partitions assigned, consumption paused by an
    /// unreachable Redis or Kafka, the last Redis probe unanswered, or no Kafka broker
    /// reachable (a consumer keeps its partitions for a while after the cluster went away).
    pub fn not_ready(&self, redis: &ProbeMetrics) -> Option<String> {
        let why = if self.assigned_partitions.get() == 0 {
            "no partitions assigned"
        } else if self.paused.get() != 0 {
            "paused: Redis or the output cluster is unavailable"
        } else if let Some(why) = redis.not_ready() {
            return Some(why);
        } else if self.kafka_up.get() == 0 {
            "no Kafka broker is reachable"
        } else {
            return None;
        };
        Some(why.to_string())
    }

    /// Count a finished batch's messages.
    pub fn account<P: Default>(&self, s: &super::Staged<P>) {
        self.consumed.inc_by(s.consumed);
        self.emitted.inc_by(s.emitted);
        for (c, n) in &s.dead {
            self.dead_lettered.with_label_values(&[c.code()]).inc_by(*n);
        }
    }
}
