//! The robots wait topic's mover: a consumer (group `<kafka.group_id>.robots-wait`) of the wait
//! topic that puts each held URL event back on the input topic once it is due
//! (`held_until_ms`), where the gate judges it again ([`super::robots`]).
//!
//! Durable at every step: a held event's input offset was committed only after Kafka had it
//! on the wait topic, and a wait-topic offset is committed only after the input topic
//! acknowledged the event put back. A mover killed in between puts an event back twice (the
//! filter answers the second a duplicate); none is lost. An event not due yet is not kept in
//! memory: its partition is rewound to it and paused until it is due (the consumer keeps
//! polling, so the group does not evict it however long the hold).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};

/// Notes each rebalance: partitions assigned afresh start from their committed offsets, not
/// paused, so what the mover knew of its paused partitions no longer holds.
struct MoverContext {
    rebalanced: AtomicBool,
    errors: crate::stage::worker::KafkaErrors,
}

impl ClientContext for MoverContext {
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        self.errors.log(&error, reason);
    }
}

impl ConsumerContext for MoverContext {
    fn post_rebalance(&self, _: &BaseConsumer<Self>, _: &Rebalance<'_>) {
        self.rebalanced.store(true, Ordering::SeqCst);
    }
}

type MoverConsumer = BaseConsumer<MoverContext>;

use super::robots::{now_ms, Held};
use crate::config::Config;

/// A running mover; [`Mover::stop`] ends it after a commit.
pub struct Mover {
    quit: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
}

impl Mover {
    /// Start the mover of `cfg`'s gate (`[robots]` on).
    pub fn start(cfg: &Config) -> Result<Mover> {
        let k = &cfg.kafka;
        let wait = cfg.robots.wait_topic(&k.input_topic);
        let mut cc = crate::stage::client_config(
            k,
            &[
                ("group.id", &format!("{}.robots-wait", k.group_id)),
                ("client.id", "crawlsieve-gate-robots-wait"),
                ("auto.offset.reset", "earliest"),
            ],
            &k.consumer,
        );
        // What the mover's durability rests on, whatever `[kafka.consumer]` says: offsets
        // stored only after the input acknowledged an event, and eager rebalances (a partition
        // kept across an incremental rebalance would keep a read position past a paused event).
        cc.set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("partition.assignment.strategy", "range,roundrobin")
            .remove("group.protocol")
            .remove("group.remote.assignor");
        let consumer: MoverConsumer = cc
            .create_with_context(MoverContext {
                rebalanced: AtomicBool::new(false),
                errors: crate::stage::worker::KafkaErrors::new(&k.brokers),
            })
            .context("creating the robots wait topic's consumer")?;
        // Fail loudly at start: without the topic every held URL would stall the gate.
        let md = consumer
            .fetch_metadata(Some(&wait), Duration::from_secs(30))
            .with_context(|| format!("reading the metadata of the robots wait topic {wait}"))?;
        let exists = md
            .topics()
            .iter()
            .any(|t| t.name() == wait && t.error().is_none() && !t.partitions().is_empty());
        anyhow::ensure!(
            exists,
            "the robots wait topic {wait:?} does not exist: create it (or set robots.wait_topic); [robots] holds URLs there (docs/crawl-policy.md)"
        );
        consumer
            .subscribe(&[&wait])
            .with_context(|| format!("subscribing to the robots wait topic {wait}"))?;
        let max = k.default_producer_max_bytes().to_string();
        let producer: FutureProducer = crate::stage::client_config(
            k,
            &[
                ("client.id", "crawlsieve-gate-robots-wait"),
                ("message.max.bytes", &max),
                ("enable.idempotence", "true"),
            ],
            &k.producer,
        )
        .create()
        .context("creating the robots wait topic's producer")?;
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let input = k.input_topic.clone();
        let dead = k.dead_letter_topic.clone();
        let thread = std::thread::Builder::new()
            .name("gate-robots-wait".into())
            .spawn(move || run(consumer, producer, &wait, &input, &dead, &q))
            .context("starting the robots wait topic's mover")?;
        Ok(Mover {
            quit,
            thread: Some(thread),
        })
    }

    /// Stop after committing what was moved; its error, if it failed.
    pub fn stop(mut self) -> Result<()> {
        self.quit.store(true, Ordering::SeqCst);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(anyhow::anyhow!("the robots wait topic's mover panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Mover {
    fn drop(&mut self) {
        self.quit.store(true, Ordering::SeqCst);
    }
}

fn stopping(quit: &AtomicBool) -> bool {
    quit.load(Ordering::SeqCst) || crate::stage::signals::Stop.requested()
}

/// Deliver `value` to `topic`, retrying until delivered or stopping; whether delivered (also
/// the fetch outcomes' reader's dead letters, [`super::outcomes_reader`]).
pub(super) fn deliver(
    producer: &FutureProducer,
    topic: &str,
    key: Option<&[u8]>,
    value: &[u8],
    quit: &AtomicBool,
) -> bool {
    let mut wait = Duration::from_millis(100);
    loop {
        let mut rec = FutureRecord::<[u8], [u8]>::to(topic).payload(value);
        if let Some(k) = key {
            rec = rec.key(k);
        }
        match futures::executor::block_on(producer.send(rec, Duration::from_secs(30))) {
            Ok(_) => return true,
            Err((e, _)) => {
                tracing::warn!(topic, error = %e, "delivering a record failed (a held URL put back, or a dead letter); retrying");
                if stopping(quit) {
                    return false;
                }
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// A record sent and not yet acknowledged: where it came from, and enough to send it again.
struct InFlight {
    partition: i32,
    offset: i64,
    topic: String,
    key: Option<Vec<u8>>,
    value: Vec<u8>,
    ack: rdkafka::producer::DeliveryFuture,
}

/// Wait for every record in flight (sending again any that failed), then store their offsets;
/// false when stopping before all were delivered (nothing after the first undelivered one is
/// stored).
fn settle(
    consumer: &MoverConsumer,
    producer: &FutureProducer,
    wait: &str,
    inflight: &mut Vec<InFlight>,
    quit: &AtomicBool,
) -> Result<bool> {
    for f in inflight.drain(..) {
        let ok = match futures::executor::block_on(f.ack) {
            Ok(Ok(_)) => true,
            _ => deliver(producer, &f.topic, f.key.as_deref(), &f.value, quit),
        };
        if !ok {
            return Ok(false);
        }
        store(consumer, wait, f.partition, f.offset);
    }
    let _ = consumer.commit_consumer_state(CommitMode::Async);
    Ok(true)
}

/// After a rebalance (noted by [`MoverContext`]), forget what was paused or rewound: the
/// partitions assigned afresh start from their committed offsets. They are resumed explicitly
/// (a pause librdkafka kept from an earlier assignment would stall one for good).
fn after_rebalance(
    consumer: &MoverConsumer,
    paused: &mut HashMap<i32, (i64, u64)>,
    expect: &mut HashMap<i32, i64>,
) {
    if !consumer.context().rebalanced.swap(false, Ordering::SeqCst) {
        return;
    }
    paused.clear();
    expect.clear();
    if let Ok(a) = consumer.assignment() {
        tracing::debug!(partitions = a.count(), "robots wait: rebalanced");
        let _ = consumer.resume(&a);
    }
}

/// Rewind `partition` to `offset` (retried: a partition not rewound would skip events; if
/// it cannot be, the `expect` check rewinds again on the next message).
fn rewind(consumer: &MoverConsumer, wait: &str, partition: i32, offset: i64) {
    for _ in 0..3 {
        match consumer.seek(
            wait,
            partition,
            Offset::Offset(offset),
            Duration::from_secs(10),
        ) {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(partition, offset, error = %e, "robots wait topic: rewinding failed; retrying")
            }
        }
    }
}

/// Note `offset` of `partition` as moved (committed with the next commit). A partition this
/// consumer lost to a rebalance refuses it: its new owner moves the event again (a repeat the
/// filter answers as a duplicate).
fn store(consumer: &MoverConsumer, wait: &str, partition: i32, offset: i64) {
    tracing::debug!(partition, offset, "robots wait: moved");
    // `store_offsets` stores the offset given: the next one to read. (`store_offset` — the
    // legacy call — stores its argument + 1: given `offset + 1` it skipped an event, which the
    // fault test caught.)
    let mut tpl = TopicPartitionList::new();
    let stored = tpl
        .add_partition_offset(wait, partition, Offset::Offset(offset + 1))
        .and_then(|()| consumer.store_offsets(&tpl));
    if let Err(e) = stored {
        tracing::debug!(partition, error = %e, "robots wait topic: offset not stored (partition revoked?)");
    }
}

/// Records sent before waiting for their acknowledgements.
const IN_FLIGHT: usize = 512;

fn run(
    consumer: MoverConsumer,
    producer: FutureProducer,
    wait: &str,
    input: &str,
    dead: &str,
    quit: &AtomicBool,
) -> Result<()> {
    let mv = Moving {
        consumer: &consumer,
        producer: &producer,
        wait,
        input,
        dead,
        quit,
    };
    // Paused partitions: the offset they were rewound to, and when it is due.
    let mut paused: HashMap<i32, (i64, u64)> = HashMap::new();
    // Partitions rewound: the offset the next message read from each must have.
    let mut expect: HashMap<i32, i64> = HashMap::new();
    let mut inflight: Vec<InFlight> = Vec::new();
    while !stopping(quit) {
        after_rebalance(&consumer, &mut paused, &mut expect);
        let now = now_ms();
        mv.resume_due(&mut paused, &mut expect, now);
        let msg = match consumer.poll(Duration::from_millis(100)) {
            None => {
                if !settle(&consumer, &producer, wait, &mut inflight, quit)? {
                    break;
                }
                continue;
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "robots wait topic");
                continue;
            }
            Some(Ok(m)) => m,
        };
        // A rebalance in this very poll: the message is of the new assignment.
        after_rebalance(&consumer, &mut paused, &mut expect);
        let (p, off) = (msg.partition(), msg.offset());
        if mv.skip(&paused, &mut expect, p, off) {
            continue;
        }
        let value = msg.payload().unwrap_or_default();
        let held: Option<Held> = serde_json::from_slice(value).ok();
        let Some((topic, value)) = mv.route(&mut paused, p, off, &held, value, now) else {
            continue;
        };
        if !mv.send(&mut inflight, &msg, topic, value)? {
            break;
        }
    }
    settle(&consumer, &producer, wait, &mut inflight, quit)?;
    let _ = consumer.commit_consumer_state(CommitMode::Sync);
    Ok(())
}

/// What the mover's steps work with: its clients, its topics, and the flag that stops it.
struct Moving<'a> {
    consumer: &'a MoverConsumer,
    producer: &'a FutureProducer,
    wait: &'a str,
    input: &'a str,
    dead: &'a str,
    quit: &'a AtomicBool,
}

impl Moving<'_> {
    /// 1. Resume the paused partitions due by `now`, each rewound to its event not due before.
    fn resume_due(
        &self,
        paused: &mut HashMap<i32, (i64, u64)>,
        expect: &mut HashMap<i32, i64>,
        now: u64,
    ) {
        let (consumer, wait) = (self.consumer, self.wait);
        let due: Vec<(i32, i64)> = paused
            .iter()
            .filter(|(_, &(_, t))| t <= now)
            .map(|(&p, &(floor, _))| (p, floor))
            .collect();
        for (p, floor) in due {
            // Resume, then rewind to the event that was not due (a seek while paused is not
            // reliably kept by the fetcher); the next message read must be it (`expect`).
            paused.remove(&p);
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition(wait, p);
            let _ = consumer.resume(&tpl);
            rewind(consumer, wait, p, floor);
            expect.insert(p, floor);
            tracing::debug!(partition = p, offset = floor, "robots wait: resumed");
        }
    }

    /// 2. Whether to pass over `off` of `p`: read ahead of a pause, or past a rewind (rewound).
    fn skip(
        &self,
        paused: &HashMap<i32, (i64, u64)>,
        expect: &mut HashMap<i32, i64>,
        p: i32,
        off: i64,
    ) -> bool {
        if let Some(&(floor, _)) = paused.get(&p) {
            // Read ahead before the partition was paused: read again once it resumes.
            if off >= floor {
                return true;
            }
        }
        if let Some(&want) = expect.get(&p) {
            if off > want {
                tracing::debug!(
                    partition = p,
                    offset = off,
                    want,
                    "robots wait: past the rewind; rewinding again"
                );
                // Past the event to move next: rewind again (never skip one).
                rewind(self.consumer, self.wait, p, want);
                return true;
            }
            expect.remove(&p);
        }
        false
    }

    /// 3. Where a message goes and what is sent; `None` (its partition paused): not due yet.
    fn route<'m>(
        &'m self,
        paused: &mut HashMap<i32, (i64, u64)>,
        p: i32,
        off: i64,
        held: &'m Option<Held<'m>>,
        value: &'m [u8],
        now: u64,
    ) -> Option<(&'m str, &'m [u8])> {
        Some(match held {
            Some(h) if h.held_until_ms > now => {
                // Not due: pause its partition and read it again when it is due, without
                // holding it here (the consumer keeps polling, so the group keeps it).
                let mut tpl = TopicPartitionList::new();
                tpl.add_partition(self.wait, p);
                let _ = self.consumer.pause(&tpl);
                paused.insert(p, (off, h.held_until_ms));
                tracing::debug!(
                    partition = p,
                    offset = off,
                    due = h.held_until_ms,
                    "robots wait: paused"
                );
                return None;
            }
            Some(h) => (self.input, h.event.get().as_bytes()),
            None => {
                // Not a held event (written by something else): kept, as a dead letter.
                tracing::error!(
                    partition = p,
                    offset = off,
                    "robots wait topic: a message that is not a held URL event; dead-lettered"
                );
                (self.dead, value)
            }
        })
    }

    /// 4. Send `value` to `topic`, or deliver it when the queue is full; false when stopping.
    fn send(
        &self,
        inflight: &mut Vec<InFlight>,
        msg: &rdkafka::message::BorrowedMessage<'_>,
        topic: &str,
        value: &[u8],
    ) -> Result<bool> {
        let (consumer, producer, wait, quit) = (self.consumer, self.producer, self.wait, self.quit);
        let (p, off) = (msg.partition(), msg.offset());
        let key = msg.key().map(<[u8]>::to_vec);
        let mut rec = FutureRecord::<[u8], [u8]>::to(topic).payload(value);
        if let Some(k) = &key {
            rec = rec.key(k);
        }
        let ack = match producer.send_result(rec) {
            Ok(ack) => ack,
            Err((e, _)) => {
                // The local queue is full (or the record is refused at once): wait for what is
                // in flight, then send this one until delivered.
                tracing::debug!(error = %e, "robots wait topic: producer queue");
                if !settle(consumer, producer, wait, inflight, quit)?
                    || !deliver(producer, topic, key.as_deref(), value, quit)
                {
                    return Ok(false);
                }
                store(consumer, wait, p, off);
                return Ok(true);
            }
        };
        inflight.push(InFlight {
            partition: p,
            offset: off,
            topic: topic.to_string(),
            key,
            value: value.to_vec(),
            ack,
        });
        if inflight.len() >= IN_FLIGHT && !settle(consumer, producer, wait, inflight, quit)? {
            return Ok(false);
        }
        Ok(true)
    }
}
