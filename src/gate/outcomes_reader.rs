//! The fetch-outcome reader (issue 46): a consumer (group `<kafka.group_id>.outcomes`) of
//! `kafka.outcomes_topic` that counts each outcome in Redis under the keys of where its URL
//! was guessed ([`crate::outcomes`]), where every gate, the API and `dedup --redis` read them.
//!
//! At least once: a batch's offsets are committed only after its counts were written (with
//! retries while Redis is away). A reader killed in between counts the batch again — one more
//! hit or miss under a key, which moves a threshold by one and loses nothing: outcomes only
//! decide whether candidates are held, and a held candidate is audited and judged again when it
//! comes back. An outcome that is not one (not JSON, not the schema, a bad namespace) is a
//! dead letter on `kafka.dead_letter_topic`, as a bad URL event is.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::FutureProducer;
use rdkafka::Message;

use crate::config::Config;
use crate::events::{DeadLetter, DeadLetterCode, DecodeError, FetchOutcome};
use crate::observe::FilterMetrics;
use crate::outcomes::{GuessKeys, Kind, OutcomeStore};
use crate::redis_filter::{LazyConn, RedisFilterError};

/// A running reader; [`OutcomeReader::stop`] ends it after a commit.
pub struct OutcomeReader {
    quit: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
}

impl OutcomeReader {
    /// Start the reader of `cfg`'s gate (`kafka.outcomes_topic` set).
    pub fn start(cfg: &Config, metrics: FilterMetrics) -> Result<OutcomeReader> {
        let k = &cfg.kafka;
        let topic = k
            .outcomes_topic
            .clone()
            .context("kafka.outcomes_topic is not set")?;
        let mut cc = crate::stage::client_config(
            k,
            &[
                ("group.id", &format!("{}.outcomes", k.group_id)),
                ("client.id", "crawlsieve-gate-outcomes"),
                ("auto.offset.reset", "earliest"),
            ],
            &k.consumer,
        );
        // Offsets stored only after the counts were written, whatever `[kafka.consumer]` says.
        cc.set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .remove("group.protocol")
            .remove("group.remote.assignor");
        let consumer: BaseConsumer = cc
            .create()
            .context("creating the fetch outcomes' consumer")?;
        consumer
            .subscribe(&[&topic])
            .with_context(|| format!("subscribing to the fetch outcomes topic {topic}"))?;
        // Held URL events go back to the input: as large as the gate's own records may be.
        let max = k.default_producer_max_bytes().to_string();
        let producer: FutureProducer = crate::stage::client_config(
            k,
            &[
                ("client.id", "crawlsieve-gate-outcomes"),
                ("enable.idempotence", "true"),
                ("message.max.bytes", &max),
            ],
            &k.producer,
        )
        .create()
        .context("creating the fetch outcomes' dead-letter producer")?;
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let cfg = cfg.clone();
        let thread = std::thread::Builder::new()
            .name("gate-outcomes".into())
            .spawn(move || {
                Reader {
                    consumer,
                    producer,
                    topic,
                    stores: HashMap::new(),
                    conn: LazyConn::new(cfg.redis.client()),
                    metrics,
                    cfg,
                    quit: q,
                    released_at: Instant::now(),
                    swept_at: None,
                }
                .run()
            })
            .context("starting the fetch outcomes' reader")?;
        Ok(OutcomeReader {
            quit,
            thread: Some(thread),
        })
    }

    /// Stop after committing what was counted; its error, if it failed.
    pub fn stop(mut self) -> Result<()> {
        self.quit.store(true, Ordering::SeqCst);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(anyhow::anyhow!("the fetch outcomes' reader panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for OutcomeReader {
    fn drop(&mut self) {
        self.quit.store(true, Ordering::SeqCst);
    }
}

/// A decoded outcome: its namespace, and the keys and kind it counts.
type Counted = (String, (GuessKeys, Kind));

/// Messages counted per Redis exchange.
const BATCH: usize = 500;

struct Reader {
    consumer: BaseConsumer,
    producer: FutureProducer,
    topic: String,
    stores: HashMap<String, OutcomeStore>,
    conn: LazyConn,
    metrics: FilterMetrics,
    cfg: Config,
    quit: Arc<AtomicBool>,
    /// When the released keys were last read.
    released_at: Instant,
    /// When kept candidates under expired counts were last swept (none yet: at the start).
    swept_at: Option<Instant>,
}

impl Reader {
    fn stopping(&self) -> bool {
        self.quit.load(Ordering::SeqCst) || crate::stage::signals::Stop.requested()
    }

    fn run(mut self) -> Result<()> {
        let mut counted: HashMap<String, Vec<(GuessKeys, Kind)>> = HashMap::new();
        loop {
            if self.stopping() {
                let _ = self.consumer.commit_consumer_state(CommitMode::Sync);
                return Ok(());
            }
            // Released keys each second, kept candidates whose counts are gone each sweep
            // (also under a steady stream of outcomes).
            if !self.put_back_released() || !self.sweep() {
                return Ok(());
            }
            // 1. A batch: up to BATCH messages, or what arrived within 200 ms.
            let until = Instant::now() + Duration::from_millis(200);
            let mut n = 0;
            while n < BATCH && Instant::now() < until {
                let Some(m) = self.consumer.poll(Duration::from_millis(50)) else {
                    continue;
                };
                let m = match m {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::warn!(error = %e, "reading fetch outcomes");
                        continue;
                    }
                };
                n += 1;
                let (partition, offset) = (m.partition(), m.offset());
                match self.decode(m.payload().unwrap_or_default()) {
                    Ok(Some((ns, c))) => counted.entry(ns).or_default().push(c),
                    Ok(None) => {}
                    Err(e) => {
                        let dl = DeadLetter::new(
                            &e,
                            &self.topic,
                            partition,
                            offset,
                            m.key(),
                            m.payload().unwrap_or_default(),
                        );
                        if !self.dead_letter(&dl) {
                            return Ok(()); // stopping: not committed, read again
                        }
                    }
                }
                let mut tpl = rdkafka::TopicPartitionList::new();
                let _ = tpl
                    .add_partition_offset(
                        &self.topic,
                        partition,
                        rdkafka::Offset::Offset(offset + 1),
                    )
                    .and_then(|()| self.consumer.store_offsets(&tpl));
            }
            if n == 0 {
                continue;
            }
            // 2. Count them (retrying while Redis is away), put back what a hit lifted, then
            //    commit.
            let Some(lifted) = self.count(&mut counted) else {
                return Ok(()); // stopping before the counts were written: not committed
            };
            if !self.put_back(&lifted) {
                return Ok(()); // stopping: counted again, and put back, when read again
            }
            let _ = self.consumer.commit_consumer_state(CommitMode::Async);
        }
    }

    /// Every second: the keys `rules release` released, their held candidates put back.
    fn put_back_released(&mut self) -> bool {
        if self.released_at.elapsed() < Duration::from_secs(1) {
            return true;
        }
        self.released_at = Instant::now();
        let listed = match self.conn.with(crate::outcomes::released) {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!(error = %e, "reading the released fetch-outcome keys failed; asked again in a second");
                return true;
            }
        };
        for r in &listed {
            let hk = crate::redis_filter::Keys::fetch_held(&r.ns, &r.key);
            if !self.put_back(&[hk]) {
                return false;
            }
            if let Err(e) = self.conn.with(|c| crate::outcomes::done_released(c, r)) {
                tracing::warn!(error = %e, "taking a released fetch-outcome key off its list failed; its candidates may be put back twice");
            }
        }
        true
    }

    /// At the start and every [`crate::outcomes::SWEEP`]: candidates kept under counts that
    /// are gone (expired: a hold that lapsed) put back, in every namespace (kept events name
    /// theirs).
    fn sweep(&mut self) -> bool {
        if self
            .swept_at
            .is_some_and(|t| t.elapsed() < crate::outcomes::SWEEP)
        {
            return true;
        }
        self.swept_at = Some(Instant::now());
        let redis = self.cfg.redis.client();
        match self.conn.with(|c| crate::outcomes::orphaned(&redis, c)) {
            Ok(keys) => keys.is_empty() || self.put_back(&keys),
            Err(e) => {
                tracing::warn!(error = %e, "sweeping held candidates whose counts expired failed; swept again later");
                true
            }
        }
    }

    /// Put the candidates kept in the hashes `keys` (Redis keys) back on the input topic
    /// ([`crate::outcomes::move_held_at`]), retrying while Redis is away; false when stopping
    /// before they all were (what is left stays kept).
    fn put_back(&mut self, keys: &[String]) -> bool {
        let input = self.cfg.kafka.input_topic.clone();
        for key in keys {
            let mut wait = Duration::from_millis(50);
            loop {
                let (producer, quit) = (&self.producer, &self.quit);
                let r = self.conn.with(|c| {
                    crate::outcomes::move_held_at(c, key, |events| {
                        deliver_all(producer, &input, events, quit)
                    })
                });
                match r {
                    Ok(Some(n)) => {
                        if n > 0 {
                            self.metrics.outcome_put_back.inc_by(n);
                            tracing::info!(
                                key,
                                candidates = n,
                                "held candidates put back on the input topic"
                            );
                        }
                        break;
                    }
                    Ok(None) => return false,
                    Err(e) if !e.is_retryable() => {
                        // Wrong type, no permission…: what is kept there stays, tried again
                        // by the next hit, release or sweep; the rest goes on.
                        tracing::error!(error = %e, key, "putting held candidates back failed; left kept");
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, key, "putting held candidates back failed; retrying");
                        if self.stopping() {
                            return false;
                        }
                        std::thread::sleep(wait);
                        wait = (wait * 2).min(Duration::from_secs(5));
                    }
                }
            }
        }
        true
    }

    /// An outcome's namespace and what it counts (none: it says nothing either way), or why
    /// it is a dead letter.
    fn decode(&self, value: &[u8]) -> Result<Option<Counted>, DecodeError> {
        let bad = |code, detail: String| DecodeError { code, detail };
        if value.iter().all(u8::is_ascii_whitespace) {
            return Err(bad(DeadLetterCode::Empty, "an empty message".into()));
        }
        let text =
            std::str::from_utf8(value).map_err(|e| bad(DeadLetterCode::NotUtf8, e.to_string()))?;
        let o: FetchOutcome = serde_json::from_str(text).map_err(|e| {
            let code = if e.is_syntax() || e.is_eof() {
                DeadLetterCode::NotJson
            } else {
                DeadLetterCode::SchemaInvalid
            };
            bad(
                code,
                format!("not a fetch outcome (schemas/fetch-outcome.v1.json): {e}"),
            )
        })?;
        let ns = o
            .namespace
            .clone()
            .unwrap_or_else(|| self.cfg.redis.namespace.clone());
        if !crate::redis_filter::valid_namespace(&ns) {
            return Err(bad(
                DeadLetterCode::SchemaInvalid,
                format!("namespace {ns:?}: 1–64 of A–Z a–z 0–9 . _ -"),
            ));
        }
        let c = o.counted();
        let kind = match c.as_ref().map(|(_, k)| *k) {
            Some(Kind::Hit) => "hit",
            Some(Kind::Miss) => "miss",
            None => "none",
        };
        self.metrics.outcomes.with_label_values(&[kind]).inc();
        Ok(c.map(|c| (ns, c)))
    }

    /// Write `counted` (then cleared): the held-candidate hashes (Redis keys) a hit lifted, or
    /// none when stopping before it could be.
    fn count(
        &mut self,
        counted: &mut HashMap<String, Vec<(GuessKeys, Kind)>>,
    ) -> Option<Vec<String>> {
        let mut wait = Duration::from_millis(50);
        let mut lifted = Vec::new();
        loop {
            // A namespace whose counts were written leaves the map at once: a retry writes only
            // the ones that failed (a cluster pipeline that failed on one node may still have
            // applied the others' increments: those count twice, never lost).
            let mut failed: Option<RedisFilterError> = None;
            counted.retain(|ns, list| {
                if failed.is_some() {
                    return true;
                }
                let store = self
                    .stores
                    .entry(ns.clone())
                    .or_insert_with(|| OutcomeStore::new(self.cfg.outcomes.clone(), ns));
                match self.conn.with(|c| store.record(c, list)) {
                    Ok(keys) => {
                        lifted.extend(
                            keys.iter()
                                .map(|k| crate::redis_filter::Keys::fetch_held(ns, k)),
                        );
                        false
                    }
                    Err(e) => {
                        failed = Some(e);
                        true
                    }
                }
            });
            let r: Result<(), RedisFilterError> = failed.map_or(Ok(()), Err);
            match r {
                Ok(()) => {
                    return Some(lifted);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "counting fetch outcomes failed; retrying");
                    if self.stopping() {
                        return None;
                    }
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    /// Deliver a dead letter (retried, as the robots mover delivers); false when stopping
    /// before it was.
    fn dead_letter(&self, dl: &DeadLetter) -> bool {
        let value = serde_json::to_vec(dl).expect("dead letters serialize");
        super::mover::deliver(
            &self.producer,
            &self.cfg.kafka.dead_letter_topic,
            None,
            &value,
            &self.quit,
        )
    }
}

/// Deliver `events` to `topic`: all sent, then all awaited; the ones that failed are sent
/// again until delivered. False when stopping before they all were.
fn deliver_all(
    producer: &FutureProducer,
    topic: &str,
    events: &[Vec<u8>],
    quit: &AtomicBool,
) -> bool {
    let mut left: Vec<&[u8]> = events.iter().map(Vec::as_slice).collect();
    let mut wait = Duration::from_millis(100);
    loop {
        // A record refused for good (larger than the producer or the broker takes: an event
        // re-encoded near the limit) would stall every put-back behind it: it stays in the
        // audit topic (`fetch_misses`), where it was written when held, and is logged.
        let refused = |v: &[u8], e: &rdkafka::error::KafkaError| {
            let head = String::from_utf8_lossy(&v[..v.len().min(200)]).into_owned();
            tracing::error!(topic, error = %e, bytes = v.len(), event = head, "a held candidate cannot be put back (too large); it is in the audit topic");
        };
        let acks: Vec<_> = left
            .iter()
            .map(|v| {
                // A record the producer's queue refused (full) is sent again below.
                match producer.send_result(
                    rdkafka::producer::FutureRecord::<[u8], [u8]>::to(topic).payload(*v),
                ) {
                    Ok(f) => Some(Some(f)),
                    Err((e, _)) if crate::stage::worker::permanent(&e) => {
                        refused(v, &e);
                        None
                    }
                    Err(_) => Some(None),
                }
            })
            .collect();
        let mut again = Vec::new();
        for (v, ack) in left.iter().zip(acks) {
            let Some(ack) = ack else { continue };
            let ok = match ack.map(futures::executor::block_on) {
                Some(Ok(Ok(_))) => true,
                Some(Ok(Err((e, _)))) if crate::stage::worker::permanent(&e) => {
                    refused(v, &e);
                    true
                }
                _ => false,
            };
            if !ok {
                again.push(*v);
            }
        }
        if again.is_empty() {
            return true;
        }
        tracing::warn!(
            topic,
            failed = again.len(),
            "putting held candidates back: some were not delivered; retrying"
        );
        if quit.load(Ordering::SeqCst) || crate::stage::signals::Stop.requested() {
            return false;
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_secs(5));
        left = again;
    }
}
