//! The records a stage works on: a [`Batch`] of input messages copied out of the consumer,
//! and what the stage turned it into, [`Staged`] (records for [`Dest`]inations, counts, and
//! the stage's own pending state).

use crate::events::{DeadLetter, DeadLetterCode, DecodeError};

/// Input messages, copied out of the consumer into one buffer (no allocation per message).
#[derive(Debug, Default)]
pub struct Batch {
    msgs: Vec<Msg>,
    data: Vec<u8>,
}

/// One input message's place in a [`Batch`].
#[derive(Debug, Clone, Copy)]
pub struct Msg {
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    key: Option<(usize, usize)>,
    value: (usize, usize),
}

impl Batch {
    /// Append a message (a missing value, a tombstone, is stored as empty).
    pub fn push(&mut self, partition: i32, offset: i64, key: Option<&[u8]>, value: Option<&[u8]>) {
        let mut span = |b: &[u8]| {
            let s = self.data.len();
            self.data.extend_from_slice(b);
            (s, self.data.len())
        };
        let key = key.map(&mut span);
        let value = span(value.unwrap_or_default());
        self.msgs.push(Msg {
            partition,
            offset,
            key,
            value,
        });
    }

    /// The messages, in arrival order.
    pub fn msgs(&self) -> &[Msg] {
        &self.msgs
    }

    /// Message `i`'s key.
    pub fn key(&self, i: usize) -> Option<&[u8]> {
        self.msgs[i].key.map(|(s, e)| &self.data[s..e])
    }

    /// Message `i`'s value.
    pub fn value(&self, i: usize) -> &[u8] {
        let (s, e) = self.msgs[i].value;
        &self.data[s..e]
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.msgs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// Empty it, keeping the buffers.
    pub fn clear(&mut self) {
        self.msgs.clear();
        self.data.clear();
    }

    /// Keep only the messages `keep` accepts (their bytes stay where they are).
    pub fn retain(&mut self, mut keep: impl FnMut(&Msg) -> bool) {
        self.msgs.retain(|m| keep(m));
    }

    /// Move every message of `other` to the end of this batch.
    pub fn append(&mut self, other: &mut Batch) {
        for i in 0..other.len() {
            let m = other.msgs[i];
            let key = other.key(i).map(<[u8]>::to_vec);
            let value = other.value(i).to_vec();
            self.push(m.partition, m.offset, key.as_deref(), Some(&value));
        }
        other.clear();
    }
}

/// Where a staged record goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// The stage's output topic: fetch events for the gate, cluster assignments (results) for
    /// the render stage.
    Output,
    /// The audit topic (the gate's rejected URLs; the dead-letter topic when none is set).
    Audit,
    /// The dead-letter topic.
    DeadLetter,
    /// The gate's robots wait topic (URLs held until their origin's robots.txt is known).
    Held,
    /// `kafka.outcomes_topic`: the render stage's fetch outcomes (one per page it fetched).
    Outcome,
}

#[derive(Debug, Clone, Copy)]
struct Record {
    dest: Dest,
    key: Option<(usize, usize)>,
    payload: (usize, usize),
    /// The input message it came from (its batch index), for output records.
    source: Option<usize>,
}

/// What librdkafka adds to a record's key and value when it checks `message.max.bytes`
/// (record batch header and framing), with a margin.
pub const RECORD_OVERHEAD: usize = 512;

/// What a batch turned into: the records to produce and the counts every stage has, plus
/// `pending`, what the stage itself needs to finish the batch once every record was delivered
/// (the gate: the fingerprints to confirm; render: checkpoints and verdicts to write).
#[derive(Debug, Default)]
pub struct Staged<P = ()> {
    records: Vec<Record>,
    buf: Vec<u8>,
    /// Input messages the batch held.
    pub consumed: u64,
    /// Output records (fetch events, assignments).
    pub emitted: u64,
    /// Dead letters per code.
    pub dead: Vec<(DeadLetterCode, u64)>,
    /// The stage's own state of this batch, until it is finished.
    pub pending: P,
}

impl<P: Default> Staged<P> {
    /// Empty it, keeping the buffers.
    pub fn clear(&mut self) {
        self.records.clear();
        self.buf.clear();
        self.consumed = 0;
        self.emitted = 0;
        self.dead.clear();
        self.pending = P::default();
    }

    /// Stage a record for `dest` whose payload `write` appends.
    pub fn record(&mut self, dest: Dest, key: Option<&[u8]>, write: impl FnOnce(&mut Vec<u8>)) {
        let key = key.map(|k| {
            let s = self.buf.len();
            self.buf.extend_from_slice(k);
            (s, self.buf.len())
        });
        let s = self.buf.len();
        write(&mut self.buf);
        self.records.push(Record {
            dest,
            key,
            payload: (s, self.buf.len()),
            source: None,
        });
    }

    /// Stage `v` as JSON for `dest`.
    pub fn json<T: serde::Serialize>(&mut self, dest: Dest, key: Option<&[u8]>, v: &T) {
        self.record(dest, key, |buf| {
            serde_json::to_writer(buf, v).expect("event types serialize")
        });
    }

    /// Stage `v` as JSON for `dest`, made from input message `source` of the batch: if the
    /// output cluster refuses it for good (too large), that message is dead-lettered instead.
    pub fn json_from<T: serde::Serialize>(
        &mut self,
        source: usize,
        dest: Dest,
        key: Option<&[u8]>,
        v: &T,
    ) {
        self.json(dest, key, v);
        self.records.last_mut().expect("just pushed").source = Some(source);
    }

    /// Stage a record for `dest` made from input message `source` of the batch (see
    /// [`Staged::json_from`]).
    pub fn record_from(
        &mut self,
        source: usize,
        dest: Dest,
        key: Option<&[u8]>,
        write: impl FnOnce(&mut Vec<u8>),
    ) {
        self.record(dest, key, write);
        self.records.last_mut().expect("just pushed").source = Some(source);
    }

    /// The input message record `i` was made from, if it says.
    pub fn source(&self, i: usize) -> Option<usize> {
        self.records[i].source
    }

    /// Stage message `i` of `batch` as a dead letter with `err`, and count it.
    pub fn dead_letter(&mut self, err: &DecodeError, topic: &str, batch: &Batch, i: usize) {
        let m = batch.msgs()[i];
        let d = DeadLetter::new(
            err,
            topic,
            m.partition,
            m.offset,
            batch.key(i),
            batch.value(i),
        );
        self.count_dead(err.code);
        self.json(Dest::DeadLetter, batch.key(i), &d);
    }

    /// Bytes of record `i` (key and payload), as the producer counts them, roughly.
    pub fn record_bytes(&self, i: usize) -> usize {
        let r = self.records[i];
        r.key.map_or(0, |(s, e)| e - s) + (r.payload.1 - r.payload.0) + RECORD_OVERHEAD
    }

    /// Take back the last record staged.
    pub fn pop(&mut self) {
        if let Some(r) = self.records.pop() {
            self.buf.truncate(r.key.map_or(r.payload.0, |k| k.0));
        }
    }

    /// Number of records to produce.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Record `i`: destination, key, payload.
    pub fn get(&self, i: usize) -> (Dest, Option<&[u8]>, &[u8]) {
        let r = self.records[i];
        (
            r.dest,
            r.key.map(|(s, e)| &self.buf[s..e]),
            &self.buf[r.payload.0..r.payload.1],
        )
    }

    /// Count a dead letter.
    pub fn count_dead(&mut self, c: DeadLetterCode) {
        match self.dead.iter_mut().find(|(x, _)| *x == c) {
            Some((_, n)) => *n += 1,
            None => self.dead.push((c, 1)),
        }
    }
}
