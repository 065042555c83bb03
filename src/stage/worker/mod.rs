//! One worker = one consumer in the group, one producer, one [`Stage`]. Per batch:
//!
//! 1. poll up to `batch_size` messages (waiting at most `batch_linger_ms` once one arrived);
//! 2. [`Stage::stage`] — the component's decision (retried while its store is unavailable);
//! 3. produce every record; then, while the *next* batch is polled and staged, wait for
//!    **every delivery report** of this one — failed records are produced again (retried while
//!    Kafka is unavailable);
//! 4. [`Stage::finish`] — record what must be remembered (the gate marks the emitted URLs seen);
//! 5. mark the batch's offsets done and commit the finished prefix of each partition.
//!
//! At most two batches are in the pipeline: one staged and sent, awaiting its reports, and the
//! one being polled and staged. They finish in order. A URL of the first is not emitted again by
//! the second (the stage remembers what it staged until it is finished).
//!
//! While a step waits for Redis or Kafka the worker **pauses** its partitions and keeps polling
//! (so the group keeps it and rebalances are served): nothing is committed and nothing is
//! dropped. On a revocation the rebalance callback first finishes the batch in flight (when it
//! can do so without waiting out an outage), then commits the finished offsets synchronously
//! before the partitions go; unprocessed messages of revoked partitions are dropped (the next
//! owner reads them again from the committed offset). On a stop request the worker finishes or
//! abandons what it holds, commits synchronously what was finished, and leaves the group.
//!
//! The loop (`impl Worker`) is in `cycle.rs`; the pipeline and callbacks it drives are here.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, TryLockError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::offsets::PartitionOffsets;
use super::{Batch, Dest, Stage, StageError, StageMetrics, Staged, Stop};
use crate::config::KafkaConfig;
use crate::events::{DeadLetterCode, DecodeError};

mod cycle;

/// Delivery reports of one produce attempt.
#[derive(Debug, Default)]
struct Tally {
    reported: usize,
    /// Failed for a reason that may pass (broker away, timeout): produced again.
    failed: Vec<usize>,
    /// Refused for good (larger than the output cluster takes), with the error.
    refused: Vec<(usize, String)>,
    why: Option<String>,
}

/// Whether a produce error will repeat whatever the retries: the record is larger than the
/// producer's `message.max.bytes` or the broker's limit.
pub(crate) fn permanent(e: &KafkaError) -> bool {
    matches!(
        e.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::MessageSizeTooLarge
                | RDKafkaErrorCode::InvalidMessageSize
                | RDKafkaErrorCode::MessageBatchTooLarge
        )
    )
}

/// librdkafka's client errors, logged for an operator: "all brokers down" names the
/// configured brokers (librdkafka says only "AllBrokersDown", never where), and each kind of
/// error is logged at most once per [`KafkaErrors::EVERY`] with the count of those not logged
/// (a client retrying a dead broker reports a failure per attempt, per client: a gate's
/// consumer, producer and mover said ~20 lines a second). The clients keep retrying, as a
/// service must; `/readyz` stays not ready until a broker answers.
pub(crate) struct KafkaErrors {
    brokers: String,
    /// Per error kind: when it was last logged, and how many since.
    last: Mutex<HashMap<String, (Instant, u64)>>,
}

impl KafkaErrors {
    /// At most one line per kind of error in this long.
    pub(crate) const EVERY: Duration = Duration::from_secs(10);

    /// The errors of clients of `brokers` (`kafka.brokers`).
    pub(crate) fn new(brokers: &str) -> KafkaErrors {
        KafkaErrors {
            brokers: brokers.to_string(),
            last: Mutex::default(),
        }
    }

    /// Log `error` (`reason`: librdkafka's words) unless its kind was logged less than
    /// [`KafkaErrors::EVERY`] ago.
    pub(crate) fn log(&self, error: &KafkaError, reason: &str) {
        let code = error.rdkafka_error_code();
        let kind = format!("{code:?}");
        let suppressed = {
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            match last.get_mut(&kind) {
                Some((at, n)) if now.duration_since(*at) < Self::EVERY => {
                    *n += 1;
                    return;
                }
                Some((at, n)) => {
                    *at = now;
                    std::mem::take(n)
                }
                None => {
                    last.insert(kind, (now, 0));
                    0
                }
            }
        };
        let more = if suppressed > 0 {
            format!(
                " ({suppressed} more like it in the last {}s)",
                Self::EVERY.as_secs()
            )
        } else {
            String::new()
        };
        match code {
            Some(RDKafkaErrorCode::AllBrokersDown) => tracing::warn!(
                brokers = %self.brokers,
                "no Kafka broker reachable at {} (kafka.brokers): {reason}; retrying{more}",
                self.brokers
            ),
            // One broker's connection failed; the client reconnects by itself.
            Some(RDKafkaErrorCode::BrokerTransportFailure) => {
                tracing::warn!("librdkafka: {error}: {reason}{more}")
            }
            _ => tracing::error!("librdkafka: {error}: {reason}{more}"),
        }
    }
}

/// Producer callbacks (on the producer's polling thread): every delivery report, counted per
/// attempt; the worker waits on `reported`.
struct Deliveries {
    tallies: Mutex<HashMap<usize, Tally>>,
    reported: Condvar,
    errors: KafkaErrors,
}

impl ClientContext for Deliveries {
    fn error(&self, error: KafkaError, reason: &str) {
        self.errors.log(&error, reason);
    }
}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, tag: usize) {
        let mut t = self.tallies.lock().expect("tallies lock");
        let tally = t.entry(tag >> TAG_BITS).or_default();
        tally.reported += 1;
        if let Err((e, _)) = result {
            if permanent(e) {
                tally.refused.push((tag & TAG_MASK, e.to_string()));
            } else {
                tally.failed.push(tag & TAG_MASK);
                tally.why.get_or_insert_with(|| e.to_string());
            }
        }
        drop(t);
        self.reported.notify_all();
    }
}

/// Bits of a delivery tag that hold the record index (the rest is the attempt number).
const TAG_BITS: u32 = 32;
const TAG_MASK: usize = (1 << TAG_BITS) - 1;
/// The longest wait for an attempt's delivery reports: librdkafka reports every message within
/// `message.timeout.ms` (30 s by default here); this only guards against a missing report.
const REPORT_WAIT: Duration = Duration::from_secs(120);

/// A batch staged and sent, not yet finished.
struct InFlight<P> {
    /// Its number in this worker (for the logs).
    seq: u64,
    batch: Batch,
    staged: Staged<P>,
    /// The attempt whose reports are awaited, and how many records it sent.
    attempt: Option<(usize, usize)>,
    /// Records to produce (again).
    todo: Vec<usize>,
    /// Every record delivered.
    delivered: bool,
    started: Instant,
}

/// Why a batch could not be finished yet.
enum Blocked {
    /// Records were not delivered.
    Kafka(String),
    /// The stage's store did not answer (a retryable error).
    Store(String),
}

/// The topics of a stage.
#[derive(Debug, Clone)]
pub struct Topics {
    /// Read in the consumer group.
    pub input: String,
    /// [`Dest::Output`]: fetch events (gate), cluster assignments (render).
    pub output: String,
    /// [`Dest::Audit`]; the dead-letter topic when none.
    pub audit: Option<String>,
    /// [`Dest::DeadLetter`].
    pub dead_letter: String,
    /// [`Dest::Held`]: the gate's robots wait topic (`[robots]` on); the dead-letter topic
    /// when none (a stage that holds nothing never uses it).
    pub held: Option<String>,
    /// [`Dest::Outcome`]: `kafka.outcomes_topic` (the render stage); the dead-letter topic when
    /// none (a stage then writes no outcomes).
    pub outcomes: Option<String>,
}

/// What the worker and the rebalance callback share: everything needed to finish a batch.
struct Pipeline<S: Stage> {
    topics: Topics,
    producer: ThreadedProducer<Deliveries>,
    stage: S,
    offsets: HashMap<i32, PartitionOffsets>,
    inflight: Option<InFlight<S::Pending>>,
    spare: Vec<(Batch, Staged<S::Pending>)>,
    attempt: usize,
    metrics: StageMetrics,
}

impl<S: Stage> Pipeline<S> {
    fn topic_of(&self, d: Dest) -> &str {
        let t = &self.topics;
        match d {
            Dest::Output => &t.output,
            Dest::Audit => t.audit.as_deref().unwrap_or(&t.dead_letter),
            Dest::DeadLetter => &t.dead_letter,
            Dest::Held => t.held.as_deref().unwrap_or(&t.dead_letter),
            Dest::Outcome => t.outcomes.as_deref().unwrap_or(&t.dead_letter),
        }
    }

    /// Queue the records `f.todo` under a new attempt number (does not wait).
    fn send(&mut self, f: &mut InFlight<S::Pending>) {
        self.attempt = (self.attempt + 1) & (usize::MAX >> TAG_BITS);
        let attempt = self.attempt;
        let mut sent = 0;
        let mut refused = Vec::new();
        let mut for_good = Vec::new();
        for &i in &f.todo {
            let (dest, key, payload) = f.staged.get(i);
            let topic = self.topic_of(dest);
            let mut record =
                BaseRecord::with_opaque_to(topic, (attempt << TAG_BITS) | i).payload(payload);
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
                        record = r; // the producer's thread drains the queue
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err((e, _)) if permanent(&e) => {
                        for_good.push((i, e.to_string()));
                        break;
                    }
                    Err((e, _)) => {
                        // Refused before it was queued (e.g. an unknown topic): counts as a
                        // failed delivery of this attempt.
                        let mut t = self.producer.context().tallies.lock().expect("lock");
                        t.entry(attempt)
                            .or_default()
                            .why
                            .get_or_insert_with(|| e.to_string());
                        refused.push(i);
                        break;
                    }
                }
            }
        }
        if !refused.is_empty() || !for_good.is_empty() {
            let mut t = self.producer.context().tallies.lock().expect("lock");
            let tally = t.entry(attempt).or_default();
            tally.reported += refused.len() + for_good.len();
            tally.failed.extend(refused.iter().copied());
            sent += refused.len() + for_good.len();
            tally.refused.extend(for_good);
        }
        f.todo.clear();
        f.attempt = Some((attempt, sent));
    }

    /// Take the batch in flight as far as it goes: wait for its reports, re-send what failed
    /// (once per call), mark its URLs seen, mark its offsets done. `Ok(Ok(()))` = finished (or
    /// nothing in flight); `Ok(Err(_))` = blocked by an outage, call again later.
    fn advance(&mut self) -> Result<Result<(), Blocked>> {
        let Some(mut f) = self.inflight.take() else {
            return Ok(Ok(()));
        };
        let r = self.advance_one(&mut f);
        match r {
            Ok(Ok(())) => {
                for m in f.batch.msgs() {
                    // A partition revoked meanwhile is gone from the map: its next owner
                    // repeats the batch's part of it (at-least-once).
                    if let Some(po) = self.offsets.get_mut(&m.partition) {
                        let _ = po.done(m.offset);
                    }
                }
                self.metrics.account(&f.staged);
                self.stage.account(&f.staged);
                self.metrics
                    .batch_seconds
                    .observe(f.started.elapsed().as_secs_f64());
                let InFlight { batch, staged, .. } = f;
                self.spare.push((batch, staged));
            }
            _ => self.inflight = Some(f),
        }
        r
    }

    /// Stage a `too_large` dead letter for the input message of each record refused for good,
    /// and return the new records' indices. A refused record with no input message, or a dead
    /// letter refused itself (its value is cut to 1 KiB, so only a broker limit below that
    /// does it), cannot be replaced: it is reported and counted, not retried forever.
    fn replace_refused(
        &mut self,
        f: &mut InFlight<S::Pending>,
        refused: &[(usize, String)],
    ) -> Vec<usize> {
        let mut out = Vec::new();
        for (i, why) in refused {
            let (dest, _, payload) = f.staged.get(*i);
            let bytes = payload.len();
            match (dest, f.staged.source(*i)) {
                (Dest::Output | Dest::Audit | Dest::Held, Some(src)) => {
                    let e = DecodeError {
                        code: DeadLetterCode::TooLarge,
                        detail: format!(
                            "its output event ({bytes} bytes) was refused by the output cluster: {why}"
                        ),
                    };
                    if dest == Dest::Output {
                        f.staged.emitted = f.staged.emitted.saturating_sub(1);
                        // Not published: the stage forgets it (the gate releases its URL,
                        // never marks it seen).
                        self.stage.withdraw(&mut f.staged, *i);
                    }
                    f.staged.dead_letter(&e, &self.topics.input, &f.batch, src);
                    out.push(f.staged.len() - 1);
                }
                _ => {
                    self.metrics.undeliverable.inc();
                    tracing::error!(
                        dest = ?dest,
                        bytes,
                        why = %why,
                        "a record cannot be delivered and has no input message to dead-letter; dropped"
                    );
                }
            }
        }
        out
    }

    fn advance_one(&mut self, f: &mut InFlight<S::Pending>) -> Result<Result<(), Blocked>> {
        while !f.delivered {
            if f.attempt.is_none() {
                self.send(f);
            }
            let (attempt, sent) = f.attempt.expect("sent above");
            let deadline = Instant::now() + REPORT_WAIT;
            let ctx = self.producer.context();
            let mut t = ctx.tallies.lock().expect("lock");
            let tally = loop {
                if t.get(&attempt).map_or(0, |x| x.reported) >= sent {
                    break t.remove(&attempt).unwrap_or_default();
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    // A report went missing: produce everything of this attempt again.
                    t.remove(&attempt);
                    break Tally {
                        why: Some("delivery reports missing".into()),
                        ..Tally::default()
                    };
                }
                t = ctx.reported.wait_timeout(t, left).expect("lock").0;
            };
            drop(t);
            f.attempt = None;
            // Records refused for good are replaced by dead letters of their input messages
            // (sent now); retrying them would stall the partition forever.
            let replaced = self.replace_refused(f, &tally.refused);
            if tally.failed.is_empty() && tally.why.is_none() {
                if replaced.is_empty() {
                    f.delivered = true;
                } else {
                    f.todo = replaced;
                }
                continue;
            }
            // No failed record but an error: the reports went missing (then nothing was
            // refused either), so produce everything again.
            let mut n = if tally.failed.is_empty() {
                (0..f.staged.len()).collect()
            } else {
                tally.failed
            };
            n.extend(replaced);
            let why = format!(
                "{} of {} records not delivered ({})",
                n.len(),
                f.staged.len(),
                tally.why.unwrap_or_default()
            );
            f.todo = n;
            return Ok(Err(Blocked::Kafka(why)));
        }
        match self.stage.finish(&mut f.staged) {
            Ok(()) => Ok(Ok(())),
            Err(e) if e.is_retryable() => Ok(Err(Blocked::Store(e.to_string()))),
            Err(e) => Err(anyhow::Error::new(e)).context("the stage could not finish a batch"),
        }
    }

    /// The offsets to commit: `all` = every finished prefix, else only those that moved.
    fn to_commit(&self, all: bool, only: Option<&[i32]>) -> Vec<(i32, i64)> {
        self.offsets
            .iter()
            .filter(|(p, _)| only.is_none_or(|o| o.contains(p)))
            .filter_map(|(&p, po)| {
                let o = if all {
                    po.committable()
                } else {
                    po.to_commit()
                };
                o.map(|o| (p, o))
            })
            .collect()
    }

    fn committed(&mut self, list: &[(i32, i64)]) {
        for &(p, o) in list {
            if let Some(po) = self.offsets.get_mut(&p) {
                po.committed(o);
            }
        }
    }

    fn in_flight_messages(&self) -> usize {
        self.offsets.values().map(PartitionOffsets::in_flight).sum()
    }
}

fn tpl(topic: &str, list: &[(i32, i64)]) -> TopicPartitionList {
    let mut t = TopicPartitionList::new();
    for &(p, o) in list {
        let _ = t.add_partition_offset(topic, p, Offset::Offset(o));
    }
    t
}

/// Consumer callbacks: on revocation, finish the batch in flight if that needs no waiting,
/// commit, and tell the worker which partitions went.
struct GroupContext<S: Stage> {
    pipeline: Arc<Mutex<Pipeline<S>>>,
    revoked: Mutex<Vec<i32>>,
    metrics: StageMetrics,
    /// Partitions this consumer holds (the process gauge is the sum over its workers).
    assigned: std::sync::atomic::AtomicI64,
    topic: String,
    /// librdkafka's errors, logged ([`KafkaErrors`]).
    errors: KafkaErrors,
}

impl<S: Stage + Send + 'static> ClientContext for GroupContext<S> {
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        self.errors.log(&error, reason);
    }

    /// librdkafka statistics (every `statistics.interval.ms`): the lag of each partition this
    /// consumer holds — high watermark minus committed offset, so messages in flight count.
    fn stats(&self, stats: rdkafka::Statistics) {
        // Real brokers have a node id (bootstrap entries are -1): is any of them up?
        let up = stats
            .brokers
            .values()
            .any(|b| b.nodeid >= 0 && b.state == "UP");
        self.metrics.kafka_up.set(up as i64);
        let Some(t) = stats.topics.get(&self.topic) else {
            return;
        };
        for (p, part) in &t.partitions {
            if *p >= 0 && part.consumer_lag >= 0 {
                self.metrics
                    .lag
                    .with_label_values(&[&p.to_string()])
                    .set(part.consumer_lag);
            }
        }
    }
}

impl<S: Stage + Send + 'static> ConsumerContext for GroupContext<S> {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Revoke(list) => {
                self.metrics.rebalances.with_label_values(&["revoke"]).inc();
                let mut gone = Vec::new();
                // The worker holds the pipeline only while it waits out an outage (it never
                // polls holding it otherwise); then the batch in flight cannot finish now, and
                // what finished before was committed when it finished.
                match self.pipeline.try_lock() {
                    Ok(mut p) => {
                        let topic = p.topics.input.clone();
                        gone.extend(
                            list.elements_for_topic(&topic)
                                .iter()
                                .map(|e| e.partition()),
                        );
                        if !consumer.assignment_lost() {
                            if let Ok(Err(b)) = p.advance() {
                                let why = match b {
                                    Blocked::Kafka(w) | Blocked::Store(w) => w,
                                };
                                tracing::warn!(why = %why, partitions = ?gone, "revocation: the batch in flight cannot finish now; its partitions' next owner repeats it");
                            }
                            let list = p.to_commit(true, Some(&gone));
                            if !list.is_empty() {
                                match consumer.commit(&tpl(&topic, &list), CommitMode::Sync) {
                                    Ok(()) => p.committed(&list),
                                    Err(_) => self.metrics.commit_failures.inc(),
                                }
                            }
                        }
                        for g in &gone {
                            p.offsets.remove(g);
                        }
                    }
                    Err(TryLockError::WouldBlock) => {
                        gone.extend(list.elements().iter().map(|e| e.partition()));
                    }
                    Err(TryLockError::Poisoned(_)) => {}
                }
                for g in &gone {
                    let _ = self.metrics.lag.remove_label_values(&[&g.to_string()]);
                }
                self.revoked.lock().expect("revoked lock").extend(gone);
            }
            Rebalance::Assign(_) => {
                self.metrics.rebalances.with_label_values(&["assign"]).inc();
            }
            Rebalance::Error(e) => tracing::error!(error = %e, "rebalance error"),
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, _: &Rebalance<'_>) {
        let n = consumer.assignment().map(|a| a.count()).unwrap_or(0) as i64;
        let before = self.assigned.swap(n, std::sync::atomic::Ordering::Relaxed);
        self.metrics.assigned_partitions.add(n - before);
        if n != before {
            // What an operator waiting for a gate to start reads first.
            tracing::info!(topic = %self.topic, partitions = n, "partitions assigned");
        }
    }
}

/// How long a worker waits for its first partitions before it says so.
const UNASSIGNED_WARNING: Duration = Duration::from_secs(30);

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

/// One consumer of the group with its producer and stage.
pub struct Worker<S: Stage + Send + 'static> {
    batch_size: usize,
    linger: Duration,
    consumer: BaseConsumer<GroupContext<S>>,
    pipeline: Arc<Mutex<Pipeline<S>>>,
    metrics: StageMetrics,
    /// Batches staged so far (the `batch` field of the logs' spans).
    seq: u64,
    span: tracing::Span,
    stop: Stop,
    batch: Batch,
    held: Batch,
    paused: bool,
    last_message: Instant,
    report: Report,
    last_error: Option<(String, Instant)>,
}

/// librdkafka settings: the runtime's defaults, then `[kafka.client]`, then the role's own table.
pub(crate) fn client_config(
    k: &KafkaConfig,
    defaults: &[(&str, &str)],
    role: &std::collections::BTreeMap<String, String>,
) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &k.brokers);
    for (k, v) in defaults {
        c.set(*k, *v);
    }
    for (k, v) in k.client.iter().chain(role) {
        c.set(k, v);
    }
    c
}

/// Wait at most `kafka.startup_timeout` for a broker of `kafka.brokers` to answer a metadata
/// request (about `topic`); `0s` waits for ever (the workers' clients retry). A broker that
/// never answers is an error that names the brokers (the command exits 4, unreachable),
/// instead of a process that logs retries and never starts.
pub(crate) fn reach_brokers(k: &KafkaConfig, topic: &str) -> Result<()> {
    let wait = k.startup_timeout.0;
    if wait.is_zero() {
        return Ok(());
    }
    let probe: BaseConsumer<Quiet> =
        client_config(k, &[("client.id", "crawlsieve-probe")], &k.consumer)
            .create_with_context(Quiet)
            .context("creating a Kafka client")?;
    probe.fetch_metadata(Some(topic), wait).map(drop).map_err(|e| {
        anyhow::Error::new(e).context(format!(
            "no Kafka broker answered at {} (kafka.brokers) within {} (kafka.startup_timeout): is it running, and is the address right?",
            k.brokers, k.startup_timeout
        ))
    })
}

/// The start-up probe's client: its errors are the probe's answer, not lines of their own.
struct Quiet;

impl ClientContext for Quiet {
    fn error(&self, _: KafkaError, _: &str) {}
}

impl ConsumerContext for Quiet {}
