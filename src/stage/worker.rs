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

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};

use super::offsets::PartitionOffsets;
use super::{Batch, Dest, Stage, StageError, StageMetrics, Staged, Stop};
use crate::config::KafkaConfig;
use crate::events::{DeadLetterCode, DecodeError};

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
fn permanent(e: &KafkaError) -> bool {
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

impl<S: Stage + Send + 'static> Worker<S> {
    /// Connect worker `id` of stage `name` (`gate`, `render`: its Kafka clients are
    /// `crawlsieve-<name>-<id>`); the group is joined on the first poll.
    pub fn new(
        k: &KafkaConfig,
        topics: Topics,
        name: &str,
        stage: S,
        metrics: StageMetrics,
        stop: Stop,
        id: usize,
    ) -> Result<Self> {
        let client_id = format!("crawlsieve-{name}-{id}");
        // An output event carries its input's URL, metadata and source plus the canonical URL
        // and its pattern: room for 3× the largest input accepted, so an accepted event is never
        // refused by our own producer (a broker with a lower limit still can: then the input
        // becomes a `too_large` dead letter and its URL is released, never marked seen).
        let max_out = k.default_producer_max_bytes().to_string();
        let producer: ThreadedProducer<Deliveries> = client_config(
            k,
            &[
                ("client.id", &client_id),
                ("message.max.bytes", &max_out),
                ("acks", "all"),
                ("linger.ms", "1"),
                ("message.timeout.ms", "30000"),
                // The partition of a host is the one Java clients would pick (murmur2), so
                // fetchers see each host on one partition whoever produced it.
                ("partitioner", "murmur2_random"),
            ],
            &k.producer,
        )
        .create_with_context(Deliveries {
            tallies: Mutex::default(),
            reported: Condvar::new(),
            errors: KafkaErrors::new(&k.brokers),
        })
        .context("creating the Kafka producer")?;
        let input = topics.input.clone();
        let pipeline = Arc::new(Mutex::new(Pipeline {
            topics,
            producer,
            stage,
            offsets: HashMap::new(),
            inflight: None,
            spare: Vec::new(),
            attempt: 0,
            metrics: metrics.clone(),
        }));
        let ctx = GroupContext {
            pipeline: pipeline.clone(),
            revoked: Mutex::default(),
            metrics: metrics.clone(),
            assigned: Default::default(),
            topic: input.clone(),
            errors: KafkaErrors::new(&k.brokers),
        };
        let consumer: BaseConsumer<GroupContext<S>> = client_config(
            k,
            &[
                ("group.id", &k.group_id),
                ("client.id", &client_id),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
                ("auto.offset.reset", "earliest"),
                // Consumer lag for the metrics (see GroupContext::stats).
                ("statistics.interval.ms", "5000"),
                // librdkafka stops fetching a partition whose local queue is over
                // `queued.min.messages` and looks again only after this back-off (1 s by
                // default): with a backlog, a consumer that drains its queue in less than that
                // sits idle for the rest. 10 ms lifted a bare consume → produce copy from 127 k to
                // 426 k events/s and the gate from 112 k to 211 k (scripts/bench-gate.sh, 1
                // consumer); the queue's memory bounds (`queued.max.messages.kbytes`) are
                // unchanged.
                ("fetch.queue.backoff.ms", "10"),
            ],
            &k.consumer,
        )
        .create_with_context(ctx)
        .context("creating the Kafka consumer")?;
        consumer
            .subscribe(&[&input])
            .context("subscribing to the input topic")?;
        Ok(Worker {
            batch_size: k.batch_size,
            linger: Duration::from_millis(k.batch_linger_ms),
            consumer,
            pipeline,
            metrics,
            seq: 0,
            span: tracing::info_span!("worker", stage = name, worker = id),
            stop,
            batch: Batch::default(),
            held: Batch::default(),
            paused: false,
            last_message: Instant::now(),
            report: Report::default(),
            last_error: None,
        })
    }

    fn pipe(&self) -> MutexGuard<'_, Pipeline<S>> {
        self.pipeline.lock().expect("pipeline lock")
    }

    /// Run until a stop is requested (or, with `idle_exit`, until no message arrived for that
    /// long after the first one). Returns after a synchronous commit.
    pub fn run(&mut self, idle_exit: Option<Duration>) -> Result<Report> {
        let span = self.span.clone();
        let _in = span.enter();
        // Finish what is in flight unless that means waiting out an outage after a stop; on a
        // fatal error, still commit what finished before it.
        let r = self
            .run_loop(idle_exit)
            .and_then(|()| self.finish_inflight().map(drop));
        self.commit(CommitMode::Sync, true);
        self.stage_idle();
        r.map(|()| self.report)
    }

    /// Let the stage write down what its finished batches left for later.
    fn stage_idle(&mut self) {
        if let Err(e) = self.pipe().stage.idle() {
            tracing::warn!(error = %e, "the stage could not settle; it retries when idle again");
        }
    }

    fn run_loop(&mut self, idle_exit: Option<Duration>) -> Result<()> {
        let started = Instant::now();
        let mut looked_unassigned = false;
        while !self.stop.requested() {
            // A consumer the group gives nothing (another member holds every partition, or
            // the group is slow to rebalance) would otherwise say nothing at all.
            if !looked_unassigned && started.elapsed() >= UNASSIGNED_WARNING {
                looked_unassigned = true; // once: one look at the assignment, then never again
                if self.consumer.assignment().map_or(0, |a| a.count()) == 0 {
                    tracing::warn!(
                        "no partition assigned after {}s: another member of the consumer group may hold them all (kafka.group_id), or the group is still rebalancing",
                        UNASSIGNED_WARNING.as_secs()
                    );
                }
            }
            if let Some(idle) = idle_exit {
                if self.report.first.is_some() && self.last_message.elapsed() >= idle {
                    break;
                }
            }
            self.fill();
            let had_messages = !self.batch.is_empty();
            if self.batch.is_empty() {
                // Nothing new: do not leave a batch waiting in the pipeline.
                if !self.finish_inflight()? {
                    break;
                }
                self.stage_idle();
                if !self.pipe().stage.wants_batch() {
                    continue;
                }
            }
            if !self.stage_and_send()? {
                break;
            }
            // Idle means waiting for messages: a batch of messages that took longer than
            // `idle_exit` to stage (the render stage's pages) is not idleness. (An empty batch
            // staged for the stage's own work — adoption, a carry — is.)
            if had_messages {
                self.last_message = Instant::now();
            }
        }
        Ok(())
    }

    /// Stage the polled batch (retrying while Redis is away), send it, then finish the batch
    /// sent before it. False when a stop interrupted a wait.
    fn stage_and_send(&mut self) -> Result<bool> {
        let mut backoff = Backoff::new();
        let (mut batch, mut staged) = self.pipe().spare.pop().unwrap_or_default();
        std::mem::swap(&mut batch, &mut self.batch);
        let span = batch_span(self.seq + 1, &batch);
        let _in = span.enter();
        loop {
            let r = {
                let mut p = self.pipe();
                let topic = p.topics.input.clone();
                p.stage.stage(&topic, &batch, &mut staged)
            };
            match r {
                Ok(()) => break,
                Err(e) if e.is_retryable() => {
                    tracing::warn!(error = %e, "the stage's store is unavailable; pausing");
                    if !self.wait(backoff.next(), "redis") {
                        return Ok(false);
                    }
                    let gone = self.take_revoked();
                    if !gone.is_empty() {
                        batch.retain(|m| !gone.contains(&m.partition));
                        if batch.is_empty() {
                            return Ok(true);
                        }
                    }
                }
                Err(e) => return Err(anyhow::Error::new(e)).context("the stage refused the batch"),
            }
        }
        self.seq += 1;
        let mut f = InFlight {
            seq: self.seq,
            todo: (0..staged.len()).collect(),
            batch,
            staged,
            attempt: None,
            delivered: false,
            started: Instant::now(),
        };
        let prev = self.pipe().inflight.take();
        self.pipe().send(&mut f);
        // Batches finish in order: the one sent before this one first.
        let ok = match prev {
            Some(prev) => {
                self.pipe().inflight = Some(prev);
                self.finish_inflight()?
            }
            None => true,
        };
        self.pipe().inflight = Some(f);
        Ok(ok)
    }

    /// Finish the batch in flight, waiting out outages with the partitions paused. False when
    /// a stop interrupted a wait.
    fn finish_inflight(&mut self) -> Result<bool> {
        let Some(seq) = self.pipe().inflight.as_ref().map(|f| f.seq) else {
            return Ok(true);
        };
        let span = tracing::info_span!("batch", batch = seq);
        let _in = span.enter();
        let mut backoff = Backoff::new();
        loop {
            let r = self.pipe().advance()?;
            match r {
                Ok(()) => break,
                Err(Blocked::Kafka(why)) => {
                    tracing::warn!(why = %why, "output not delivered; pausing");
                    if !self.wait(backoff.next(), "kafka") {
                        return Ok(false);
                    }
                }
                Err(Blocked::Store(why)) => {
                    tracing::warn!(error = %why, "the stage's store is unavailable; pausing");
                    if !self.wait(backoff.next(), "redis") {
                        return Ok(false);
                    }
                }
            }
        }
        self.resume();
        self.report.last_done = Some(Instant::now());
        self.commit(CommitMode::Async, false);
        Ok(true)
    }

    /// Poll one message; register its offset and keep it in the batch, or in `held` while
    /// backing off. False when nothing arrived.
    fn poll_one(&mut self, timeout: Duration, into_batch: bool) -> bool {
        let Worker {
            consumer,
            pipeline,
            batch,
            held,
            last_message,
            report,
            last_error,
            ..
        } = self;
        let m = match consumer.poll(timeout) {
            Some(Ok(m)) => m,
            Some(Err(e)) => {
                // The same error every poll while a broker is away: say it once per 10 s.
                let msg = e.to_string();
                let now = Instant::now();
                if last_error.as_ref().is_none_or(|(m, t)| {
                    *m != msg || now.duration_since(*t) > Duration::from_secs(10)
                }) {
                    tracing::warn!(error = %msg, "consumer");
                    *last_error = Some((msg, now));
                }
                return false;
            }
            None => return false,
        };
        let (p, o) = (m.partition(), m.offset());
        let fresh = pipeline
            .lock()
            .expect("pipeline lock")
            .offsets
            .entry(p)
            .or_default()
            .received(o)
            .is_ok();
        if !fresh {
            return true; // already held: a redelivery after a pause/resume
        }
        *last_message = Instant::now();
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
            let gone = self.take_revoked();
            if !gone.is_empty() {
                self.batch.retain(|m| !gone.contains(&m.partition));
            }
            if got && first.is_none() && !self.batch.is_empty() {
                first = Some(Instant::now());
            }
            if !got && first.is_none() {
                break; // idle: let the caller check for a stop
            }
        }
        let n = self.pipe().in_flight_messages();
        self.metrics.in_flight.set(n as i64);
    }

    /// Partitions revoked since the last call (their held messages are dropped here).
    fn take_revoked(&mut self) -> Vec<i32> {
        let gone: Vec<i32> = std::mem::take(
            &mut *self
                .consumer
                .context()
                .revoked
                .lock()
                .expect("revoked lock"),
        );
        if !gone.is_empty() {
            self.held.retain(|m| !gone.contains(&m.partition));
        }
        gone
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
            self.take_revoked();
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

    /// Commit the finished prefix of every partition (`all`: even what was committed before,
    /// for the final synchronous commit).
    fn commit(&mut self, mode: CommitMode, all: bool) {
        let (topic, list) = {
            let p = self.pipe();
            (p.topics.input.clone(), p.to_commit(all, None))
        };
        if list.is_empty() {
            return;
        }
        match self.consumer.commit(&tpl(&topic, &list), mode) {
            Ok(()) => self.pipe().committed(&list),
            Err(e) => {
                self.metrics.commit_failures.inc();
                tracing::warn!(error = %e, "commit failed; the next commit covers it");
            }
        }
    }
}

/// The span of one batch: its number in this worker and the partitions it holds.
fn batch_span(seq: u64, batch: &Batch) -> tracing::Span {
    let mut parts: Vec<i32> = batch.msgs().iter().map(|m| m.partition).collect();
    parts.sort_unstable();
    parts.dedup();
    tracing::info_span!("batch", batch = seq, partitions = ?parts)
}
