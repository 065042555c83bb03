//! The Kafka side of the gate: one worker = one consumer in the group, one producer, one
//! [`Stage`]. Per batch:
//!
//! 1. poll up to `batch_size` messages (waiting at most `batch_linger_ms` once one arrived);
//! 2. [`Stage::stage`] — decode, sieve, read the filter (retried while Redis is unavailable);
//! 3. produce every record and wait for **every delivery report**; failed records are produced
//!    again (retried while Kafka is unavailable);
//! 4. [`Stage::finish`] — mark the emitted URLs seen in the filter;
//! 5. mark the batch's offsets done and commit the finished prefix of each partition.
//!
//! While a step waits for Redis or Kafka the worker **pauses** its partitions and keeps polling
//! (so the group keeps it and rebalances are served): nothing is committed and nothing is
//! dropped. On a revocation the finished offsets are committed synchronously before the
//! partitions go, and unprocessed messages of revoked partitions are dropped (the next owner
//! reads them again from the committed offset). On a stop request the worker finishes or
//! abandons its batch, commits synchronously what was finished, and leaves the group.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};

use super::config::GateConfig;
use super::core::{Batch, Dest, Stage, Staged};
use super::metrics::GateMetrics;
use super::offsets::PartitionOffsets;
use super::signals::Stop;

type Offsets = Arc<Mutex<HashMap<i32, PartitionOffsets>>>;

/// Consumer callbacks: commit on revocation, and tell the worker which partitions went.
struct GroupContext {
    topic: String,
    offsets: Offsets,
    revoked: Mutex<Vec<i32>>,
    metrics: GateMetrics,
}

impl ClientContext for GroupContext {}

impl ConsumerContext for GroupContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Revoke(tpl) => {
                self.metrics.rebalances.with_label_values(&["revoke"]).inc();
                let mut offsets = self.offsets.lock().expect("offsets lock");
                let mut commit = TopicPartitionList::new();
                let mut gone = Vec::new();
                for e in tpl.elements_for_topic(&self.topic) {
                    let p = e.partition();
                    if let Some(o) = offsets.get(&p).and_then(|po| po.committable()) {
                        let _ = commit.add_partition_offset(&self.topic, p, Offset::Offset(o));
                    }
                    offsets.remove(&p);
                    gone.push(p);
                }
                // Everything finished is committed before the partitions go; what is not
                // finished was never committed and goes to the next owner.
                if commit.count() > 0
                    && !consumer.assignment_lost()
                    && consumer.commit(&commit, CommitMode::Sync).is_err()
                {
                    self.metrics.commit_failures.inc();
                }
                self.revoked.lock().expect("revoked lock").extend(gone);
            }
            Rebalance::Assign(_) => {
                self.metrics.rebalances.with_label_values(&["assign"]).inc();
            }
            Rebalance::Error(e) => eprintln!("crawlsieve gate: rebalance error: {e}"),
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, _: &Rebalance<'_>) {
        let n = consumer.assignment().map(|a| a.count()).unwrap_or(0);
        self.metrics.assigned_partitions.set(n as i64);
    }
}

/// Producer callbacks: every delivery report, tagged with (attempt, record index).
#[derive(Default)]
struct Deliveries {
    reports: Mutex<Vec<(usize, Result<(), String>)>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, tag: usize) {
        let r = match result {
            Ok(_) => Ok(()),
            Err((e, _)) => Err(e.to_string()),
        };
        self.reports.lock().expect("reports lock").push((tag, r));
    }
}

/// How a batch ended.
enum Outcome {
    /// Finished: its offsets may be committed.
    Done,
    /// A stop was requested while it waited for Redis or Kafka: not finished, not committed.
    Abandoned,
}

/// Doubling back-off, 50 ms to 5 s.
struct Backoff(Duration);

impl Backoff {
    fn new() -> Backoff {
        Backoff(Duration::from_millis(50))
    }
    fn next(&mut self) -> Duration {
        let d = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(5));
        d
    }
}

/// Bits of a delivery tag that hold the record index (the rest is the attempt number).
const TAG_BITS: u32 = 32;
/// The longest wait for a batch's delivery reports: librdkafka reports every message within
/// `message.timeout.ms` (30 s by default here); this only guards against a missing report.
const REPORT_WAIT: Duration = Duration::from_secs(120);

/// One consumer of the group with its producer and stage.
pub struct Worker<S: Stage> {
    topic: String,
    fetch_topic: String,
    audit_topic: Option<String>,
    dead_topic: String,
    batch_size: usize,
    linger: Duration,
    consumer: BaseConsumer<GroupContext>,
    producer: BaseProducer<Deliveries>,
    stage: S,
    metrics: GateMetrics,
    stop: Stop,
    offsets: Offsets,
    batch: Batch,
    held: Batch,
    staged: Staged,
    attempt: usize,
    paused: bool,
    last_message: Instant,
    seen_any: bool,
    report: Report,
}

/// When a worker was busy: from its first message to the end of its last finished batch.
#[derive(Debug, Clone, Copy, Default)]
pub struct Report {
    /// The first message polled.
    pub first: Option<Instant>,
    /// The last batch finished.
    pub last_done: Option<Instant>,
}

impl Report {
    /// The span covering both reports.
    pub fn merge(self, o: Report) -> Report {
        Report {
            first: match (self.first, o.first) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            last_done: self.last_done.max(o.last_done),
        }
    }

    /// Seconds from the first message to the last finished batch.
    pub fn active_secs(&self) -> Option<f64> {
        Some(self.last_done?.duration_since(self.first?).as_secs_f64())
    }
}

/// librdkafka settings: the gate's defaults, then `[kafka.client]`, then the role's own table.
fn client_config(
    cfg: &GateConfig,
    defaults: &[(&str, &str)],
    role: &std::collections::BTreeMap<String, String>,
) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &cfg.kafka.brokers);
    for (k, v) in defaults {
        c.set(*k, *v);
    }
    for (k, v) in cfg.kafka.client.iter().chain(role) {
        c.set(k, v);
    }
    c
}

impl<S: Stage> Worker<S> {
    /// Connect a worker (the group is joined on the first poll).
    pub fn new(
        cfg: &GateConfig,
        stage: S,
        metrics: GateMetrics,
        stop: Stop,
        id: usize,
    ) -> Result<Self> {
        let k = &cfg.kafka;
        let client_id = format!("crawlsieve-gate-{id}");
        let offsets: Offsets = Arc::default();
        let ctx = GroupContext {
            topic: k.input_topic.clone(),
            offsets: offsets.clone(),
            revoked: Mutex::default(),
            metrics: metrics.clone(),
        };
        let consumer: BaseConsumer<GroupContext> = client_config(
            cfg,
            &[
                ("group.id", &k.group_id),
                ("client.id", &client_id),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
                ("auto.offset.reset", "earliest"),
            ],
            &k.consumer,
        )
        .create_with_context(ctx)
        .context("creating the Kafka consumer")?;
        let producer: BaseProducer<Deliveries> = client_config(
            cfg,
            &[
                ("client.id", &client_id),
                ("acks", "all"),
                ("linger.ms", "5"),
                ("message.timeout.ms", "30000"),
                // The partition of a host is the one Java clients would pick (murmur2), so
                // fetchers see each host on one partition whoever produced it.
                ("partitioner", "murmur2_random"),
            ],
            &k.producer,
        )
        .create_with_context(Deliveries::default())
        .context("creating the Kafka producer")?;
        consumer
            .subscribe(&[&k.input_topic])
            .context("subscribing to the input topic")?;
        Ok(Worker {
            topic: k.input_topic.clone(),
            fetch_topic: k.fetch_topic.clone(),
            audit_topic: k.audit_topic.clone(),
            dead_topic: k.dead_letter_topic.clone(),
            batch_size: k.batch_size,
            linger: Duration::from_millis(k.batch_linger_ms),
            consumer,
            producer,
            stage,
            metrics,
            stop,
            offsets,
            batch: Batch::default(),
            held: Batch::default(),
            staged: Staged::default(),
            attempt: 0,
            paused: false,
            last_message: Instant::now(),
            seen_any: false,
            report: Report::default(),
        })
    }

    /// Run until a stop is requested (or, with `idle_exit`, until no message arrived for that
    /// long after the first one). Returns after a synchronous commit.
    pub fn run(&mut self, idle_exit: Option<Duration>) -> Result<Report> {
        while !self.stop.requested() {
            if let Some(idle) = idle_exit {
                if self.seen_any && self.last_message.elapsed() >= idle {
                    break;
                }
            }
            self.fill();
            if self.batch.is_empty() {
                continue;
            }
            let t = Instant::now();
            match self.process()? {
                Outcome::Done => {
                    self.commit(CommitMode::Async, false);
                    self.report.last_done = Some(Instant::now());
                    self.metrics
                        .batch_seconds
                        .observe(t.elapsed().as_secs_f64());
                }
                Outcome::Abandoned => break,
            }
        }
        self.commit(CommitMode::Sync, true);
        Ok(self.report)
    }

    /// Poll one message; register its offset and keep it in the batch, or in `held` while
    /// backing off. False when nothing arrived.
    fn poll_one(&mut self, timeout: Duration, into_batch: bool) -> bool {
        let Worker {
            consumer,
            offsets,
            batch,
            held,
            last_message,
            seen_any,
            report,
            ..
        } = self;
        let m = match consumer.poll(timeout) {
            Some(Ok(m)) => m,
            Some(Err(e)) => {
                eprintln!("crawlsieve gate: consumer: {e}");
                return false;
            }
            None => return false,
        };
        let (p, o) = (m.partition(), m.offset());
        match offsets
            .lock()
            .expect("offsets lock")
            .entry(p)
            .or_default()
            .received(o)
        {
            Ok(()) => {}
            // Already held: a redelivery after a pause/resume. Keep the first copy.
            Err(_) => return true,
        }
        *last_message = Instant::now();
        *seen_any = true;
        report.first.get_or_insert(*last_message);
        let dst = if into_batch { batch } else { held };
        dst.push(p, o, m.key(), m.payload());
        true
    }

    /// Poll a batch: what was held during a back-off first, then up to `batch_size` messages,
    /// waiting at most `linger` after the first.
    fn fill(&mut self) {
        self.batch.clear();
        self.batch.append(&mut self.held);
        let mut first: Option<Instant> = (!self.batch.is_empty()).then(Instant::now);
        while self.batch.len() < self.batch_size && !self.stop.requested() {
            let timeout = match first {
                None => Duration::from_millis(100),
                Some(t) => match self.linger.checked_sub(t.elapsed()) {
                    Some(r) if !r.is_zero() => r,
                    _ => break,
                },
            };
            let got = self.poll_one(timeout, true);
            self.drop_revoked();
            if got && first.is_none() && !self.batch.is_empty() {
                first = Some(Instant::now());
            }
            if !got && first.is_none() {
                break; // idle: let the caller check for a stop
            }
        }
        self.update_in_flight();
    }

    /// Drop unprocessed messages of partitions revoked since the last call.
    fn drop_revoked(&mut self) -> bool {
        let gone: Vec<i32> = std::mem::take(
            &mut *self
                .consumer
                .context()
                .revoked
                .lock()
                .expect("revoked lock"),
        );
        if gone.is_empty() {
            return false;
        }
        self.batch.retain(|m| !gone.contains(&m.partition));
        self.held.retain(|m| !gone.contains(&m.partition));
        true
    }

    fn update_in_flight(&self) {
        let n: usize = self
            .offsets
            .lock()
            .expect("offsets lock")
            .values()
            .map(PartitionOffsets::in_flight)
            .sum();
        self.metrics.in_flight.set(n as i64);
    }

    /// Back off for `d` with the partitions paused, still polling (rebalances are served and
    /// anything delivered is held for the next batch). False when a stop was requested.
    fn wait(&mut self, d: Duration, cause: &str) -> bool {
        self.metrics.retries.with_label_values(&[cause]).inc();
        let until = Instant::now() + d;
        loop {
            if self.stop.requested() {
                return false;
            }
            // Re-pause every round: a rebalance brings new partitions unpaused.
            if let Ok(a) = self.consumer.assignment() {
                if a.count() > 0 && self.consumer.pause(&a).is_ok() {
                    self.paused = true;
                    self.metrics.paused.set(1);
                }
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            self.poll_one(left.min(Duration::from_millis(100)), false);
        }
    }

    fn resume(&mut self) {
        if self.paused {
            if let Ok(a) = self.consumer.assignment() {
                let _ = self.consumer.resume(&a);
            }
            self.paused = false;
            self.metrics.paused.set(0);
        }
    }

    fn process(&mut self) -> Result<Outcome> {
        // 2. Stage (reads only; repeated until Redis answers).
        let mut backoff = Backoff::new();
        loop {
            match self.stage.stage(&self.topic, &self.batch, &mut self.staged) {
                Ok(()) => break,
                Err(e) if e.is_retryable() => {
                    eprintln!("crawlsieve gate: redis unavailable ({e}); pausing");
                    if !self.wait(backoff.next(), "redis") {
                        return Ok(Outcome::Abandoned);
                    }
                    if self.drop_revoked() && self.batch.is_empty() {
                        return Ok(Outcome::Done);
                    }
                }
                Err(e) => return Err(e).context("the Redis filter refused the batch"),
            }
        }
        // 3. Produce and wait for every delivery report.
        let mut todo: Vec<usize> = (0..self.staged.len()).collect();
        let mut backoff = Backoff::new();
        loop {
            let (failed, why) = self.produce(&todo);
            if failed.is_empty() {
                break;
            }
            eprintln!(
                "crawlsieve gate: {} of {} records not delivered ({}); pausing",
                failed.len(),
                todo.len(),
                why.unwrap_or_default()
            );
            todo = failed;
            if !self.wait(backoff.next(), "kafka") {
                return Ok(Outcome::Abandoned);
            }
        }
        // 4. Remember the emitted URLs (idempotent; repeated until Redis answers).
        let mut backoff = Backoff::new();
        loop {
            match self.stage.finish(&self.staged) {
                Ok(()) => break,
                Err(e) if e.is_retryable() => {
                    eprintln!("crawlsieve gate: redis unavailable ({e}); pausing");
                    if !self.wait(backoff.next(), "redis") {
                        return Ok(Outcome::Abandoned);
                    }
                }
                Err(e) => return Err(e).context("the Redis filter refused an insert"),
            }
        }
        // 5. Done: the offsets may be committed.
        {
            let mut offsets = self.offsets.lock().expect("offsets lock");
            for m in self.batch.msgs() {
                // A partition revoked meanwhile is gone from the map: its next owner repeats
                // the batch's part of it (at-least-once).
                if let Some(po) = offsets.get_mut(&m.partition) {
                    let _ = po.done(m.offset);
                }
            }
        }
        self.resume();
        self.staged.account(&self.metrics);
        self.update_in_flight();
        Ok(Outcome::Done)
    }

    fn topic_of(&self, d: Dest) -> &str {
        match d {
            Dest::Fetch => &self.fetch_topic,
            Dest::Audit => self.audit_topic.as_deref().unwrap_or(&self.dead_topic),
            Dest::DeadLetter => &self.dead_topic,
        }
    }

    /// Produce `todo` (indices into the staged records) and wait for their reports; returns
    /// the indices that failed and one of the errors.
    fn produce(&mut self, todo: &[usize]) -> (Vec<usize>, Option<String>) {
        self.attempt = (self.attempt + 1) & ((1 << (usize::BITS - TAG_BITS)) - 1);
        let attempt = self.attempt;
        let mut failed = Vec::new();
        let mut why = None;
        let mut sent = 0usize;
        for &i in todo {
            let (dest, key, payload) = self.staged.get(i);
            let topic = self.topic_of(dest).to_string();
            let mut record =
                BaseRecord::with_opaque_to(&topic, (attempt << TAG_BITS) | i).payload(payload);
            if let Some(k) = key {
                record = record.key(k);
            }
            loop {
                match self.producer.send(record) {
                    Ok(()) => {
                        sent += 1;
                        break;
                    }
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                        record = r;
                        self.producer.poll(Duration::from_millis(5));
                    }
                    Err((e, _)) => {
                        why.get_or_insert_with(|| e.to_string());
                        failed.push(i);
                        break;
                    }
                }
            }
        }
        let deadline = Instant::now() + REPORT_WAIT;
        let mut reported = 0usize;
        while reported < sent && Instant::now() < deadline {
            self.producer.poll(Duration::from_millis(1));
            let mut reports = self
                .producer
                .context()
                .reports
                .lock()
                .expect("reports lock");
            for (tag, r) in reports.drain(..) {
                if tag >> TAG_BITS != attempt {
                    continue; // a late report of an earlier attempt: already retried
                }
                reported += 1;
                if let Err(e) = r {
                    why.get_or_insert(e);
                    failed.push(tag & ((1 << TAG_BITS) - 1));
                }
            }
        }
        if reported < sent {
            // Not reported in time: produce everything not confirmed again.
            why.get_or_insert_with(|| "delivery reports missing".into());
            failed = todo.to_vec();
        }
        (failed, why)
    }

    /// Commit the finished prefix of every partition (`all`: even what was committed before,
    /// for the final synchronous commit).
    fn commit(&mut self, mode: CommitMode, all: bool) {
        let mut offsets = self.offsets.lock().expect("offsets lock");
        let mut tpl = TopicPartitionList::new();
        let mut list = Vec::new();
        for (&p, po) in offsets.iter() {
            let o = if all {
                po.committable()
            } else {
                po.to_commit()
            };
            if let Some(o) = o {
                let _ = tpl.add_partition_offset(&self.topic, p, Offset::Offset(o));
                list.push((p, o));
            }
        }
        if list.is_empty() {
            return;
        }
        match self.consumer.commit(&tpl, mode) {
            Ok(()) => {
                for (p, o) in list {
                    if let Some(po) = offsets.get_mut(&p) {
                        po.committed(o);
                    }
                }
            }
            Err(e) => {
                self.metrics.commit_failures.inc();
                eprintln!("crawlsieve gate: commit failed ({e}); the next commit covers it");
            }
        }
    }
}
