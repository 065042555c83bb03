//! The worker's loop: poll, stage and send, finish in order, wait out outages, commit.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::ThreadedProducer;
use rdkafka::Message;

use super::{
    client_config, tpl, Backoff, Blocked, Deliveries, GroupContext, InFlight, KafkaErrors,
    Pipeline, Report, Topics, Worker, UNASSIGNED_WARNING,
};
use crate::config::KafkaConfig;
use crate::stage::{Batch, Stage, StageError, StageMetrics, Stop};

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
        let producer = Self::create_producer(k, &client_id)?;
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
        let consumer = Self::create_consumer(k, &client_id, ctx)?;
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

    /// The worker's Kafka producer (client `client_id`), its deliveries counted.
    fn create_producer(k: &KafkaConfig, client_id: &str) -> Result<ThreadedProducer<Deliveries>> {
        // An output event carries its input's URL, metadata and source plus the canonical URL
        // and its pattern: room for 3× the largest input accepted, so an accepted event is never
        // refused by our own producer (a broker with a lower limit still can: then the input
        // becomes a `too_large` dead letter and its URL is released, never marked seen).
        let max_out = k.default_producer_max_bytes().to_string();
        let producer: ThreadedProducer<Deliveries> = client_config(
            k,
            &[
                ("client.id", client_id),
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
        Ok(producer)
    }

    /// The worker's Kafka consumer (client `client_id`) in the configured group, with `ctx`;
    /// offsets are committed by hand.
    fn create_consumer(
        k: &KafkaConfig,
        client_id: &str,
        ctx: GroupContext<S>,
    ) -> Result<BaseConsumer<GroupContext<S>>> {
        let consumer: BaseConsumer<GroupContext<S>> = client_config(
            k,
            &[
                ("group.id", &k.group_id),
                ("client.id", client_id),
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
        Ok(consumer)
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
