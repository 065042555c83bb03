//! The outbox protocol: write ahead, check-and-set, deliver, clear.
//!
//! A client that must never lose a URL and still wants each URL to cost Redis about one
//! check-and-set (issue 24) writes its batch's **payloads** (what it would deliver: the
//! canonical URL for `dedup`) into its own outbox *before* it check-and-sets their fingerprints,
//! in the same pipeline (Redis runs one connection's commands in order; on a cluster the outbox
//! write is acknowledged before the inserts are sent). It delivers the URLs the filter answered
//! new, then clears the batch's outbox entry.
//!
//! The invariant: **a fingerprint is in the filter only if the URL was delivered or its payload
//! is in some outbox.** An entry leaves an outbox only after its URLs were delivered, by its
//! owner or by an adopter. A client holds a **lease** (a key with a TTL refreshed by a
//! heartbeat thread of its own); when a lease expires (the process died, or stalled for longer
//! than the TTL), any other client of the namespace **adopts** the outbox: one Lua script moves
//! the entries into the adopter's own outbox, and the adopter delivers them. So another client
//! can trust a "seen" answer at once: the URL was delivered, or will be by whoever holds its
//! entry. Nobody waits on anyone's claims, and a live holder is never taken over; a dead one's
//! undelivered URLs are delivered once its lease expires (repeats: what it had delivered but not
//! yet cleared, and the seen URLs of its batches in flight).
//!
//! Costs per URL the local tier cannot answer: one `SADD` (fingerprints), one `BITFIELD … SET`
//! share (bloom) or both (exact), plus an older generation's read when several are live. Per
//! batch: one `HSET` of the payloads, one `SADD` of the client id, one `HDEL` once delivered.
//!
//! `submit.rs` holds the steps of [`RedisFilter::take_submit`] (payloads, field, direct send).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::layout::{GenSpec, Keys};
use super::resp::Batch;
use super::{Conn, RedisConfig, RedisFilter, RedisFilterError};

mod submit;

/// A batch's outbox entry: clear it with [`RedisFilter::delivered`] once its new URLs (or an
/// adopted entry's payloads) were delivered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ticket {
    /// The outbox (client id) holding the entry: a ticket of an earlier outbox of the same
    /// filter (one replaced after Redis lost the namespace) clears nothing.
    owner: String,
    field: String,
}

/// The outbox side of a client (made on first use).
pub(super) struct Outbox {
    id: String,
    lease_key: String,
    box_key: String,
    clients_key: String,
    seq: u64,
    /// Entries to delete: delivered.
    clear_q: Vec<String>,
    /// Fields of abandoned batches, in order: their resubmissions write the same fields again
    /// (an entry is never deleted before its batch's resubmission replaced it).
    reuse: VecDeque<String>,
    inflight: VecDeque<Take>,
    /// A buffer for the next batch's payloads.
    spare_blob: Vec<u8>,
    /// Adopted entries (`deadid/seq` fields of this client's box) handed to the caller and not
    /// yet delivered: any other such field in the box was adopted by a script whose reply was
    /// lost, and is handed out at the next adoption.
    handed: std::collections::HashSet<String>,
    beat: Option<Heartbeat>,
    /// URLs answered "seen" by Redis this run: someone else's entry may still hold them.
    pub(super) seen_in_redis: u64,
}

/// A batch between [`RedisFilter::take_submit`] and [`RedisFilter::take_complete`].
struct Take {
    fps: Vec<u128>,
    /// Indices of `fps` sent to Redis: tier misses, first occurrence in the batch.
    todo: Vec<usize>,
    field: String,
    blob: Vec<u8>,
    /// Entries cleared by this exchange (back to the queue if it fails).
    cleared: Vec<String>,
    kind: Kind,
}

enum Kind {
    /// Nothing for Redis (every URL answered by the tier or earlier in the batch).
    Done,
    /// Run at complete() time (a cluster, several live generations, or behind a deferred one).
    Deferred,
    /// Sent on connection `epoch`: `n` replies, the inserts' replies from `base` on.
    Sent {
        n: usize,
        epoch: u64,
        base: usize,
        groups: Vec<Vec<usize>>,
        cur: GenSpec,
        /// The re-admit set's `SREM`s follow the inserts (bloom, after a forget).
        readmit: bool,
    },
}

/// Refreshes the lease every third of its TTL (at most every second) on its own connection,
/// so a client busy elsewhere, or waiting for input, stays alive to the others.
struct Heartbeat {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    fn spawn(cfg: RedisConfig, lease: String, clients: String, id: String) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let every = (cfg.claim_ttl / 3).min(Duration::from_secs(1));
        let handle = std::thread::Builder::new()
            .name("cs-lease".into())
            .spawn(move || {
                let mut conn: Option<Conn> = None;
                let mut last = Instant::now();
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                    if last.elapsed() < every {
                        continue;
                    }
                    last = Instant::now();
                    if conn.is_none() {
                        conn = Conn::connect(&cfg).ok();
                    }
                    if let Some(c) = conn.as_mut() {
                        if c.pipeline(lease_cmds(&lease, &clients, &id, cfg.claim_ttl))
                            .is_err()
                        {
                            conn = None;
                        }
                    }
                }
            })
            .map_err(|e| {
                tracing::warn!(error = %e, "could not start the lease heartbeat thread: this client's outbox will be adopted by others (repeats)")
            })
            .ok();
        Heartbeat { stop, handle }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn lease_cmds(lease: &str, clients: &str, id: &str, ttl: Duration) -> Vec<redis::Cmd> {
    let ms = ttl.as_millis().clamp(1, i64::MAX as u128) as i64;
    let mut set = redis::cmd("SET");
    set.arg(lease).arg(id).arg("PX").arg(ms);
    let mut add = redis::cmd("SADD");
    add.arg(clients).arg(id);
    vec![set, add]
}

/// Move a client's outbox into the adopter's, if its lease is gone. KEYS: dead lease, dead
/// box, own box, clients; ARGV: dead id, own id. Returns the moved [field, payloads, …].
const ADOPT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local kv = redis.call('HGETALL', KEYS[2])
local out = {}
for i = 1, #kv, 2 do
  local f = ARGV[1] .. '/' .. kv[i]
  redis.call('HSET', KEYS[3], f, kv[i + 1])
  out[#out + 1] = f
  out[#out + 1] = kv[i + 1]
end
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[4], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[2])
return out
";

/// An adopted entry: its ticket and its payloads (one per line).
pub type Adopted = (Ticket, Vec<u8>);

impl RedisFilter {
    fn outbox(&mut self) -> Result<&mut Outbox, RedisFilterError> {
        if self.ob.is_none() {
            let id = format!("{:016x}", super::layout::unique_u64());
            let ob = Outbox {
                lease_key: Keys::lease(&self.ns, &id),
                box_key: Keys::outbox(&self.ns, &id),
                clients_key: Keys::outbox_clients(&self.ns),
                id,
                seq: 0,
                clear_q: Vec::new(),
                reuse: VecDeque::new(),
                inflight: VecDeque::new(),
                spare_blob: Vec::new(),
                handed: Default::default(),
                beat: None,
                seen_in_redis: 0,
            };
            // The lease exists before any entry is written.
            let cmds = lease_cmds(&ob.lease_key, &ob.clients_key, &ob.id, self.cfg.claim_ttl);
            let r = self.mconn()?.pipeline(cmds);
            r.map_err(|e| self.mfail(e))?;
            self.ob = Some(ob);
            self.known = Some(super::LocalTier::new(self.cfg.local_tier_slots));
        }
        let ob = self.ob.as_mut().expect("made above");
        if ob.beat.is_none() {
            ob.beat = Some(Heartbeat::spawn(
                self.cfg.clone(),
                ob.lease_key.clone(),
                ob.clients_key.clone(),
                ob.id.clone(),
            ));
        }
        Ok(ob)
    }

    /// Whether this client knows `fp` is in the filter without asking Redis (the local tier).
    pub fn known_seen(&self, fp: u128) -> bool {
        self.tier.contains(fp)
    }

    /// How long a lease outlives its holder's last heartbeat (`claim_ttl`).
    pub fn lease_ttl(&self) -> Duration {
        self.cfg.claim_ttl
    }

    /// Batches submitted with [`RedisFilter::take_submit`] and not yet completed.
    pub fn takes_in_flight(&self) -> usize {
        self.ob.as_ref().map_or(0, |o| o.inflight.len())
    }

    /// Take a batch, first half: write the payloads of the URLs the local tier cannot answer
    /// into this client's outbox, then check-and-set them, without waiting for the replies.
    /// `payload(i, buf)` appends what delivering `fps[i]` means (a line; no `\n`); it is called
    /// only for the URLs sent to Redis, in order. Up to a few batches
    /// may be in flight; [`RedisFilter::take_complete`] answers them in order.
    pub fn take_submit(
        &mut self,
        fps: &[u128],
        mut payload: impl FnMut(usize, &mut Vec<u8>),
    ) -> Result<(), RedisFilterError> {
        if !self.inflight.is_empty() {
            return Err(RedisFilterError::Params(
                "take_submit() with claim batches in flight".into(),
            ));
        }
        self.maybe_refresh()?;
        self.outbox()?;
        let mut todo = Vec::new();
        self.claim_todo(fps, &mut todo);
        let blob = self.take_payloads(&todo, &mut payload)?;
        let deferred = {
            let ob = self.ob.as_ref().expect("made by outbox()");
            ob.inflight.iter().any(|t| matches!(t.kind, Kind::Deferred))
        };
        let mut take = Take {
            fps: fps.to_vec(),
            todo,
            field: String::new(),
            blob,
            cleared: Vec::new(),
            kind: Kind::Deferred,
        };
        if take.todo.is_empty() {
            // Nothing for Redis: no entry, no field.
            take.kind = Kind::Done;
            self.ob.as_mut().expect("made").inflight.push_back(take);
            return Ok(());
        }
        // What can fail before anything is sent comes first: a failure here consumes no field
        // and drops no entry to clear.
        let raw = self.conn()?.is_raw();
        let direct = raw && !deferred && self.gens.live.len() == 1;
        let mut b = if direct { Some(self.batch()?) } else { None };
        let ob = self.ob.as_mut().expect("made by outbox()");
        ob.assign_field(&mut take);
        if let Some(b) = b.as_mut() {
            let sent = self.send_direct(&mut take, b);
            if let Err(e) = sent {
                // Part of it may have run: it stays in flight, to be abandoned and resubmitted.
                self.lose_connection(&e);
                self.ob.as_mut().expect("made").inflight.push_back(take);
                return Err(e);
            }
        }
        if let Some(b) = b {
            self.spare = b;
        }
        self.ob.as_mut().expect("made").inflight.push_back(take);
        Ok(())
    }

    /// `HSET box field payloads`, `SADD clients id`, then the entries it clears.
    fn write_ahead(&self, take: &Take, b: &mut Batch) {
        let ob = self.ob.as_ref().expect("made by outbox()");
        b.cmd("HSET", 4);
        b.arg(ob.box_key.as_bytes());
        b.arg(take.field.as_bytes());
        b.arg(&take.blob);
        b.cmd("SADD", 3);
        b.arg(ob.clients_key.as_bytes());
        b.arg(ob.id.as_bytes());
        if !take.cleared.is_empty() {
            b.cmd("HDEL", 2 + take.cleared.len());
            b.arg(ob.box_key.as_bytes());
            for f in &take.cleared {
                b.arg(f.as_bytes());
            }
        }
    }

    /// Take a batch, second half: `out[i]` = `fps[i]` is new (deliver it, then clear the
    /// returned ticket with [`RedisFilter::delivered`]). On error nothing of the batch is
    /// answered: [`RedisFilter::take_abandon`], then submit the batches again, in order; a URL
    /// whose insert ran but whose reply was lost is answered new on that retry (in doubt).
    pub fn take_complete(&mut self, out: &mut Vec<bool>) -> Result<Ticket, RedisFilterError> {
        let ob = self
            .ob
            .as_mut()
            .ok_or_else(|| RedisFilterError::Params("take_complete() without a batch".into()))?;
        let mut take = ob
            .inflight
            .pop_front()
            .ok_or_else(|| RedisFilterError::Params("take_complete() without a batch".into()))?;
        out.clear();
        out.resize(take.fps.len(), false);
        let r = self.take_one(&mut take, out);
        let ob = self.ob.as_mut().expect("made");
        match r {
            Ok(()) => {
                // Answered: the payloads are in the outbox; the buffer serves the next batch
                // (a gate's batch of fetch events is ~0.5 MB: growing a fresh one every batch
                // cost page faults and copies).
                if ob.spare_blob.capacity() < take.blob.capacity() {
                    ob.spare_blob = std::mem::take(&mut take.blob);
                }
                let seen = take.todo.iter().filter(|&&i| !out[i]).count();
                ob.seen_in_redis += seen as u64;
                if take.todo.is_empty() {
                    // No entry was written.
                    return Ok(Ticket::default());
                }
                Ok(Ticket {
                    owner: ob.id.clone(),
                    field: take.field,
                })
            }
            Err(e) => {
                // Back in front, as sent on a lost connection: take_abandon() hands its field
                // to the resubmission.
                take.kind = Kind::Sent {
                    n: 0,
                    epoch: u64::MAX,
                    base: 0,
                    groups: Vec::new(),
                    cur: self.gens.current().clone(),
                    readmit: false,
                };
                let ob = self.ob.as_mut().expect("made");
                ob.inflight.push_front(take);
                out.iter_mut().for_each(|o| *o = false);
                Err(e)
            }
        }
    }

    fn take_one(&mut self, take: &mut Take, out: &mut [bool]) -> Result<(), RedisFilterError> {
        match std::mem::replace(&mut take.kind, Kind::Done) {
            Kind::Done => Ok(()),
            Kind::Deferred => {
                let mut b = self.batch()?;
                self.write_ahead(take, &mut b);
                let mut replies = std::mem::take(&mut self.replies);
                let r = self.exec(&mut b, &mut replies, false);
                self.spare = b;
                self.replies = replies;
                r?;
                // Acknowledged: now the inserts (older generations read first).
                let mut todo = take.todo.clone();
                self.redis_check_and_set(&take.fps, &mut todo, out)
            }
            Kind::Sent {
                n,
                epoch,
                base,
                groups,
                cur,
                readmit,
            } => {
                let mut replies = std::mem::take(&mut self.replies);
                if let Err(e) = self.recv_sent(n, epoch, true, &mut replies) {
                    self.replies = replies;
                    if readmit {
                        // Its SREM may have taken a re-admission: "present before" (the
                        // tier's knowledge) no longer proves the retry's "seen" is ours.
                        self.doubt.extend(take.todo.iter().map(|&i| take.fps[i]));
                    } else {
                        self.put_in_doubt(take.todo.iter().map(|&i| take.fps[i]));
                    }
                    self.stats.ambiguous_failures += 1;
                    return Err(e);
                }
                let r = self.apply_at(
                    base,
                    &take.fps,
                    &take.todo,
                    out,
                    (&groups, readmit),
                    &cur,
                    &replies,
                );
                self.replies = replies;
                r
            }
        }
    }

    /// Forget every batch in flight (after a failure, before submitting them again): their
    /// entries are cleared once the resubmissions' are written; what was sent is in doubt.
    pub fn take_abandon(&mut self) {
        let Some(ob) = self.ob.as_mut() else {
            return;
        };
        let mut sent = false;
        let mut doubt = Vec::new();
        let mut fields = VecDeque::new();
        while let Some(mut t) = ob.inflight.pop_front() {
            ob.clear_q.append(&mut t.cleared);
            if !t.field.is_empty() {
                fields.push_back(t.field);
            }
            if matches!(t.kind, Kind::Sent { .. }) {
                sent = true;
                doubt.extend(t.todo.iter().map(|&i| t.fps[i]));
            }
        }
        fields.append(&mut ob.reuse);
        ob.reuse = fields;
        self.put_in_doubt(doubt);
        if sent {
            // Their replies are still in the socket.
            self.conn = None;
            self.tier.clear();
        }
    }

    /// Forget every batch in flight, for a caller that will not resubmit the same batches (the
    /// gate: a retried stage may hold other messages, after a rebalance). What may have reached
    /// Redis is handed back as entries to deliver, like adopted ones (their fields are never
    /// written again; clear them with [`RedisFilter::delivered`] once delivered): its URLs are
    /// not put in doubt, so a retry answers "seen" those whose insert ran (they are delivered
    /// from the entry) and new the others (a repeat at worst).
    pub fn take_abandon_carry(&mut self) -> Vec<Adopted> {
        let Some(ob) = self.ob.as_mut() else {
            return Vec::new();
        };
        let mut sent = false;
        let mut out = Vec::new();
        while let Some(mut t) = ob.inflight.pop_front() {
            ob.clear_q.append(&mut t.cleared);
            if matches!(t.kind, Kind::Sent { .. }) {
                sent = true;
                // take_complete's failure put them in doubt: the entry delivers them instead.
                for &i in &t.todo {
                    self.doubt.remove(&t.fps[i]);
                }
                let ticket = Ticket {
                    owner: ob.id.clone(),
                    field: t.field,
                };
                out.push((ticket, t.blob));
            } else if !t.field.is_empty() {
                // Never sent: its field was not written by it (an older entry's, reused, stays
                // for the resubmission that reuses it next).
                ob.reuse.push_front(t.field);
            }
        }
        if sent {
            // Their replies are still in the socket.
            self.conn = None;
            self.tier.clear();
        }
        out
    }

    /// URLs whose insert may have run without its reply reaching us: answered new on the
    /// retry. Not those Redis had answered for this client before (they were present before
    /// the failed attempt, which therefore did not insert them).
    fn put_in_doubt(&mut self, fps: impl IntoIterator<Item = u128>) {
        for fp in fps {
            if !self.known.as_ref().is_some_and(|k| k.contains(fp)) {
                self.doubt.insert(fp);
            }
        }
    }

    /// The ticket's URLs were delivered: its entry is cleared with the next exchange (or by
    /// [`RedisFilter::take_settle`]).
    pub fn delivered(&mut self, t: Ticket) {
        if let Some(ob) = self.ob.as_mut().filter(|ob| ob.id == t.owner) {
            if t.field.contains('/') {
                ob.handed.remove(&t.field);
            }
            ob.clear_q.push(t.field);
        }
    }

    /// Clear the delivered entries now and write the item counters (the end of a run). Safe
    /// to retry.
    pub fn take_settle(&mut self) -> Result<(), RedisFilterError> {
        self.idle()?;
        if let Some(ob) = self.ob.as_mut() {
            if !ob.inflight.is_empty() {
                return Err(RedisFilterError::Params(
                    "take_complete() the submitted batches first".into(),
                ));
            }
            if !ob.clear_q.is_empty() {
                let fields = std::mem::take(&mut ob.clear_q);
                let mut cmd = redis::cmd("HDEL");
                cmd.arg(&ob.box_key);
                for f in &fields {
                    cmd.arg(f);
                }
                let r: redis::RedisResult<i64> = self.mconn()?.query(&cmd);
                if let Err(e) = r {
                    self.ob.as_mut().expect("made").clear_q = fields;
                    return Err(self.mfail(e));
                }
            }
        }
        self.flush_items()
    }

    /// Adopt the outbox of every client of the namespace whose lease expired: its entries
    /// become this client's, to deliver and then clear with [`RedisFilter::delivered`].
    pub fn adopt_expired(&mut self) -> Result<Vec<Adopted>, RedisFilterError> {
        let mut got = self.recover_adopted()?;
        for id in self.others()? {
            match self.adopt_one(&id) {
                Ok(a) => got.extend(a),
                // What was adopted already is handed out; the rest at the next call (an entry
                // whose script ran without its reply is recovered from this client's box then).
                Err(_) if !got.is_empty() => break,
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }

    /// `HMGET key fields…` on the maintenance connection.
    fn hmget(
        &mut self,
        key: &str,
        fields: &[String],
    ) -> Result<Vec<Option<Vec<u8>>>, RedisFilterError> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(key);
        for f in fields {
            cmd.arg(f);
        }
        let r: redis::RedisResult<Vec<Option<Vec<u8>>>> = self.mconn()?.query(&cmd);
        r.map_err(|e| self.mfail(e))
    }

    /// Adopted entries in this client's box that were never handed out (the adopting
    /// script's reply was lost).
    fn recover_adopted(&mut self) -> Result<Vec<Adopted>, RedisFilterError> {
        let ob = self.outbox()?;
        let key = ob.box_key.clone();
        let r: redis::RedisResult<Vec<String>> = self.mconn()?.query(redis::cmd("HKEYS").arg(&key));
        let fields = r.map_err(|e| self.mfail(e))?;
        let ob = self.ob.as_ref().expect("made");
        let lost: Vec<String> = fields
            .into_iter()
            .filter(|f| f.contains('/') && !ob.handed.contains(f))
            .collect();
        if lost.is_empty() {
            return Ok(Vec::new());
        }
        let vals = self.hmget(&key, &lost)?;
        let ob = self.ob.as_mut().expect("made");
        let mut out = Vec::new();
        for (field, v) in lost.into_iter().zip(vals) {
            if let Some(v) = v {
                ob.handed.insert(field.clone());
                let owner = ob.id.clone();
                out.push((Ticket { owner, field }, v));
            }
        }
        self.stats.adopted += out.len() as u64;
        Ok(out)
    }

    /// The other clients with an outbox in this namespace.
    fn others(&mut self) -> Result<Vec<String>, RedisFilterError> {
        let ob = self.outbox()?;
        let (clients_key, me) = (ob.clients_key.clone(), ob.id.clone());
        let r: redis::RedisResult<Vec<String>> = self
            .mconn()?
            .query(redis::cmd("SMEMBERS").arg(&clients_key));
        let mut ids = r.map_err(|e| self.mfail(e))?;
        ids.retain(|id| *id != me);
        Ok(ids)
    }

    /// Adopt `id`'s outbox if its lease is gone (else nothing: the script checks the lease).
    fn adopt_one(&mut self, id: &str) -> Result<Vec<Adopted>, RedisFilterError> {
        static ADOPT_SCRIPT: std::sync::LazyLock<redis::Script> =
            std::sync::LazyLock::new(|| redis::Script::new(ADOPT));
        let (lease, dead_box) = (Keys::lease(&self.ns, id), Keys::outbox(&self.ns, id));
        let ob = self.ob.as_ref().expect("made by outbox()");
        let (own_box, clients, me) = (ob.box_key.clone(), ob.clients_key.clone(), ob.id.clone());
        let r: redis::RedisResult<Option<Vec<Vec<u8>>>> = self.mconn()?.script_keys(
            &ADOPT_SCRIPT,
            &[&lease, &dead_box, &own_box, &clients],
            &[id, &me],
        );
        let moved = r.map_err(|e| self.mfail(e))?.unwrap_or_default();
        let mut out = Vec::with_capacity(moved.len() / 2);
        let mut it = moved.into_iter();
        while let (Some(f), Some(v)) = (it.next(), it.next()) {
            self.stats.adopted += 1;
            let field = String::from_utf8_lossy(&f).into_owned();
            self.ob.as_mut().expect("made").handed.insert(field.clone());
            out.push((
                Ticket {
                    owner: me.clone(),
                    field,
                },
                v,
            ));
        }
        Ok(out)
    }

    /// Wait (at most `limit`) until every entry other clients hold now is cleared, adopting
    /// those whose holder's lease expires meanwhile. What this client answered "seen" because
    /// another client had just taken it is then delivered, by that client or here. Returns the
    /// adopted entries, to deliver; and whether every entry was accounted for. A client that
    /// Redis never answered "seen" depends on nobody: it only adopts the expired outboxes.
    pub fn await_others(
        &mut self,
        limit: Duration,
    ) -> Result<(Vec<Adopted>, bool), RedisFilterError> {
        let deadline = Instant::now() + limit;
        let depends = self.outbox()?.seen_in_redis > 0;
        let mut got = Vec::new();
        let mut waiting: Vec<(String, Vec<String>)> = Vec::new();
        for id in self.others()? {
            let adopted = self.adopt_one(&id)?;
            if !adopted.is_empty() || !depends {
                got.extend(adopted);
                continue;
            }
            let key = Keys::outbox(&self.ns, &id);
            let r: redis::RedisResult<Vec<String>> =
                self.mconn()?.query(redis::cmd("HKEYS").arg(&key));
            let fields = r.map_err(|e| self.mfail(e))?;
            if !fields.is_empty() {
                waiting.push((id, fields));
            }
        }
        let mut pause = Duration::from_millis(5);
        while !waiting.is_empty() && Instant::now() < deadline {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(200));
            let mut still = Vec::new();
            for (id, fields) in std::mem::take(&mut waiting) {
                let adopted = self.adopt_one(&id)?;
                if !adopted.is_empty() {
                    got.extend(adopted);
                    continue;
                }
                let vals = self.hmget(&Keys::outbox(&self.ns, &id), &fields)?;
                let left: Vec<String> = fields
                    .into_iter()
                    .zip(vals)
                    .filter(|(_, v)| v.is_some())
                    .map(|(f, _)| f)
                    .collect();
                if !left.is_empty() {
                    still.push((id, left));
                }
            }
            waiting = still;
        }
        Ok((got, waiting.is_empty()))
    }

    /// The end of a run: stop the heartbeat and give the lease up. Entries not cleared (a run
    /// that failed) stay, and are adopted by the next client at once.
    pub fn leave(&mut self) -> Result<(), RedisFilterError> {
        let Some(mut ob) = self.ob.take() else {
            return Ok(());
        };
        ob.beat = None; // joins the heartbeat thread
        let (lease, box_key, clients, id) = (ob.lease_key, ob.box_key, ob.clients_key, ob.id);
        let empty = ob.clear_q.is_empty() && ob.inflight.is_empty();
        let conn = self.mconn()?;
        let mut cmds = Vec::new();
        if empty {
            let r: redis::RedisResult<i64> = conn.query(redis::cmd("HLEN").arg(&box_key));
            if r.map_err(|e| RedisFilterError::from_redis(e, false))? == 0 {
                let mut c = redis::cmd("SREM");
                c.arg(&clients).arg(&id);
                cmds.push(c);
            }
        }
        let mut c = redis::cmd("DEL");
        c.arg(&lease);
        cmds.push(c);
        conn.pipeline(cmds)
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        Ok(())
    }
}

/// One line of an outbox entry: what delivering a URL means to the client that took it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload<'a> {
    /// A canonical URL (`dedup` writes it out).
    Url(&'a [u8]),
    /// `KEY \t FETCH-EVENT-JSON` (the gate produces it to the fetch topic with that key).
    Event { key: &'a [u8], json: &'a [u8] },
}

impl<'a> Payload<'a> {
    /// Read one line (a tab marks a gate's fetch event: a URL holds no raw tab).
    pub fn parse(line: &'a [u8]) -> Payload<'a> {
        match line.iter().position(|&b| b == b'\t') {
            Some(t) => Payload::Event {
                key: &line[..t],
                json: &line[t + 1..],
            },
            None => Payload::Url(line),
        }
    }

    /// Every non-empty line of an entry.
    pub fn lines(entry: &'a [u8]) -> impl Iterator<Item = Payload<'a>> {
        entry
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(Payload::parse)
    }

    /// The canonical URL it delivers (`None`: a fetch event that does not parse).
    pub fn url(&self) -> Option<String> {
        match self {
            Payload::Url(u) => Some(String::from_utf8_lossy(u).into_owned()),
            Payload::Event { json, .. } => {
                #[derive(serde::Deserialize)]
                struct U {
                    url: String,
                }
                serde_json::from_slice::<U>(json).ok().map(|u| u.url)
            }
        }
    }
}
