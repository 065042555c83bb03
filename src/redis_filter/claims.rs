//! The claim protocol (claim → deliver → confirm): a claim key per new URL, read in every live
//! generation, confirmed (inserted, claim deleted) after delivery. Since issue 24 only the HTTP
//! API's idempotent requests use it ([`RedisFilter::claim_as`]: the claims are held under the
//! request's key, so a retry by any process finds them); `dedup` and the gate run the outbox
//! protocol (`outbox.rs`).

use super::*;

/// A batch between [`RedisFilter::submit`] and [`RedisFilter::complete`].
pub(super) struct Inflight {
    pub(super) fps: Vec<u128>,
    /// Indices of `fps` sent to be claimed: tier misses, first occurrence in the batch.
    pub(super) todo: Vec<usize>,
    pub(super) out: Vec<bool>,
    /// Confirmations and releases riding on this exchange.
    pub(super) carried: Vec<u128>,
    pub(super) released: Vec<u128>,
    pub(super) kind: Pending,
}

pub(super) enum Pending {
    /// Nothing to send (all tier hits, nothing carried).
    Done,
    /// Run synchronously at complete() time (a cluster: two round trips, see `encode_claims`).
    Deferred,
    /// Sent on connection `epoch`; `n` replies to read.
    Sent { plan: Plan, n: usize, epoch: u64 },
}

/// How the replies of one claim exchange are laid out (see `encode_claims`).
pub(super) struct Plan {
    /// BITFIELD groups of the carried confirmations (bitmap generations).
    confirm_groups: Vec<Vec<usize>>,
    /// One SADD per carried confirmation follows (fingerprint store).
    confirm_store: bool,
    n_release: usize,
    n_unclaim: usize,
    /// Per live generation read: k and its BITFIELD_RO groups (then one SISMEMBER per claim
    /// when the store decides).
    reads: Vec<(usize, Vec<Vec<usize>>)>,
    exact: bool,
    /// A last `HGET meta gv` follows the reads.
    version: bool,
    /// The URLs were claimed before they were read (else read only: claim what looks new).
    claims: bool,
}

impl Plan {
    fn replies(&self, carried: usize, todo: usize) -> usize {
        let confirm = self.confirm_groups.len() + if self.confirm_store { carried } else { 0 };
        let reads: usize = self
            .reads
            .iter()
            .map(|(_, g)| g.len() + if self.exact { todo } else { 0 })
            .sum();
        let claims = if self.claims { todo } else { 0 };
        confirm + claims + self.n_release + self.n_unclaim + reads + self.version as usize
    }
}

impl RedisFilter {
    /// Claim a batch, first half: answer what the tier can and send the rest to Redis without
    /// waiting. Up to a few batches may be in flight; [`RedisFilter::complete`] returns their
    /// answers in submission order. Keeping the next batch queued while Redis works on this one
    /// is what saturates a Redis core from one client (docs/redis-filter.md).
    ///
    /// # The claim protocol (never lose a URL, whatever fails)
    /// A URL answered new is **claimed**, not inserted: `SET cs:{NS:c:FP} TOKEN NX GET PX ttl`,
    /// then a read of every live generation, in that order. It is new for this client iff no
    /// generation holds it and the claim is this client's (just taken, or taken by an earlier
    /// attempt whose reply was lost: `GET` returns our own token). A claim held by another
    /// client is waited on until it is confirmed (then the URL is seen) or expires (then it is
    /// ours). The caller delivers the new URLs, then [`RedisFilter::confirm`]s them: insert
    /// into the current generation, then delete the claim.
    ///
    /// So nothing is written to the filter before the URL was delivered: a timeout, a lost
    /// connection or a crash anywhere repeats work (a claim expires after
    /// [`RedisConfig::claim_ttl`] and the URL is someone's to deliver again) and never drops a
    /// URL; and since claims are exclusive, healthy concurrent clients still see each distinct
    /// URL new exactly once.
    ///
    /// Other calls (`check`, `insert`, `stats`, …) refuse to run while batches are in flight;
    /// refreshes and maintenance run on a second connection, on time.
    pub fn submit(&mut self, fps: &[u128]) -> Result<(), RedisFilterError> {
        self.maybe_refresh()?;
        let mut it = Inflight {
            fps: fps.to_vec(),
            todo: Vec::new(),
            out: vec![false; fps.len()],
            carried: std::mem::take(&mut self.confirm_q),
            released: std::mem::take(&mut self.release_q),
            kind: Pending::Deferred,
        };
        self.claim_todo(fps, &mut it.todo);
        // Sent batches must not overtake a deferred one: both would read the same socket.
        let raw = self.conn()?.is_raw()
            && !self
                .inflight
                .iter()
                .any(|i| matches!(i.kind, Pending::Deferred));
        if it.todo.is_empty() && it.carried.is_empty() && it.released.is_empty() {
            it.kind = Pending::Done;
        } else if raw {
            self.stats.redis_lookups += it.todo.len() as u64;
            let claim_first = self.seen_share < 0.5;
            let (p1, p2, plan) = self.encode_claims(
                &it.fps,
                &it.todo,
                &it.carried,
                &it.released,
                true,
                claim_first,
            );
            let n = p1.len() + p2.len();
            let r = self.conn().and_then(|c| {
                c.send(&p1)?;
                c.send(&p2)
            });
            if let Err(e) = r {
                self.lose_connection(&e);
                self.requeue(&mut it);
                return Err(e);
            }
            it.kind = Pending::Sent {
                plan,
                n,
                epoch: self.epoch,
            };
        }
        self.inflight.push_back(it);
        Ok(())
    }

    /// Claim a batch, second half: the answers of the oldest submitted batch (`out[i]` = new,
    /// claimed by this client: deliver it, then [`RedisFilter::confirm`] it). Claims held by
    /// other clients are waited on here. On error nothing of the batch is answered; resubmit
    /// it (after [`RedisFilter::abandon`] if others are in flight): its claims are still ours,
    /// so the retry answers as if the first attempt had never been made.
    pub fn complete(&mut self, out: &mut Vec<bool>) -> Result<(), RedisFilterError> {
        let mut it = self.inflight.pop_front().ok_or_else(|| {
            RedisFilterError::Params("complete() without a submitted batch".into())
        })?;
        let r = self.complete_one(&mut it);
        if r.is_err() {
            self.requeue(&mut it);
        }
        out.clear();
        out.extend_from_slice(&it.out);
        r
    }

    pub(super) fn complete_one(&mut self, it: &mut Inflight) -> Result<(), RedisFilterError> {
        let mut replies = std::mem::take(&mut self.replies);
        let plan = match std::mem::replace(&mut it.kind, Pending::Done) {
            Pending::Done => None,
            Pending::Deferred => {
                self.stats.redis_lookups += it.todo.len() as u64;
                let raw = self.conn()?.is_raw();
                let claim_first = self.seen_share < 0.5;
                let (mut p1, mut p2, plan) = self.encode_claims(
                    &it.fps,
                    &it.todo,
                    &it.carried,
                    &it.released,
                    raw,
                    claim_first,
                );
                let r = self.exec2(&mut p1, &mut p2, &mut replies);
                if let Err(e) = r {
                    self.replies = replies;
                    return Err(e);
                }
                Some(plan)
            }
            Pending::Sent { plan, n, epoch } => {
                if let Err(e) = self.recv_sent(n, epoch, false, &mut replies) {
                    self.replies = replies;
                    return Err(e);
                }
                Some(plan)
            }
        };
        let mut answers = vec![None; it.todo.len()];
        let plan_read_only = plan.as_ref().is_some_and(|p| !p.claims);
        if let Some(plan) = plan {
            let r = self.decode_claims(
                &plan,
                &it.fps,
                &it.todo,
                &it.carried,
                &replies,
                &mut answers,
            );
            self.replies = replies;
            if let Err(e) = r {
                self.lose_connection(&e);
                return Err(e);
            }
        } else {
            self.replies = replies;
        }
        // The carried confirmations and releases ran.
        it.carried.clear();
        it.released.clear();
        if plan_read_only {
            self.claim_unclaimed(&it.fps, &it.todo, &mut answers)?;
        }
        self.resolve_busy(&it.fps, &it.todo, &mut answers)?;
        // Only now, when nothing can fail any more, do the new URLs become held.
        let now = Instant::now();
        for (j, &i) in it.todo.iter().enumerate() {
            let new = answers[j] == Some(true);
            it.out[i] = new;
            if new {
                self.held.insert(it.fps[i], now);
                self.stats.new += 1;
            }
        }
        Ok(())
    }

    /// [`RedisFilter::claim`] under `token` instead of this client's own: a request id that
    /// outlives this process (the HTTP API's `Idempotency-Key`), so a retry of the same
    /// request, by any process, finds the claims its first attempt took and answers the same.
    pub fn claim_as(
        &mut self,
        token: i64,
        fps: &[u128],
        out: &mut Vec<bool>,
    ) -> Result<(), RedisFilterError> {
        // An earlier attempt with this token in this process counts as ours, not as held.
        self.forget(fps);
        let own = std::mem::replace(&mut self.token, token.max(1));
        let r = self.claim(fps, out);
        self.token = own;
        r
    }

    /// A small record next to the namespace (`cs:{NS}:rec:NAME`), e.g. an idempotent answer:
    /// its value, if it is there.
    pub fn record(&mut self, name: &str) -> Result<Option<String>, RedisFilterError> {
        self.idle()?;
        let key = Keys::record(&self.ns, name);
        let r: redis::RedisResult<Option<String>> = self.conn()?.query(redis::cmd("GET").arg(&key));
        r.map_err(|e| self.fail(e, false))
    }

    /// Store a record unless one is there (`SET NX PX`); returns the value that is there now
    /// (ours, or the one stored first).
    pub fn put_record(
        &mut self,
        name: &str,
        value: &str,
        ttl: Duration,
    ) -> Result<String, RedisFilterError> {
        self.idle()?;
        let key = Keys::record(&self.ns, name);
        let ms = ttl.as_millis().clamp(1, i64::MAX as u128) as i64;
        let r: redis::RedisResult<Option<String>> = self.conn()?.query(
            redis::cmd("SET")
                .arg(&key)
                .arg(value)
                .arg("NX")
                .arg("GET")
                .arg("PX")
                .arg(ms),
        );
        let old = r.map_err(|e| self.fail(e, false))?;
        Ok(old.unwrap_or_else(|| value.to_string()))
    }

    /// Claim `fps` synchronously: [`RedisFilter::submit`] + [`RedisFilter::complete`].
    pub fn claim(&mut self, fps: &[u128], out: &mut Vec<bool>) -> Result<(), RedisFilterError> {
        self.idle()?;
        self.submit(fps)?;
        self.complete(out)
    }

    /// The URLs of `fps` were delivered: insert them into the current generation and delete
    /// their claims. Queued: sent with the next [`RedisFilter::submit`] (or by
    /// [`RedisFilter::settle`]); idempotent, so a failed exchange simply sends it again.
    pub fn confirm(&mut self, fps: &[u128]) {
        self.confirm_q.extend_from_slice(fps);
    }

    /// The URLs of `fps` will not be delivered (refused for good): delete their claims without
    /// inserting them, so they are new again to anyone. Queued like [`RedisFilter::confirm`].
    pub fn release(&mut self, fps: &[u128]) {
        for fp in fps {
            self.held.remove(fp);
        }
        self.release_q.extend_from_slice(fps);
    }

    /// Forget that this client is publishing `fps` (a caller that failed after claiming them
    /// and will claim them again): their claims stay ours in Redis, so the next claim answers
    /// them new, not as repeats of our own.
    pub fn forget(&mut self, fps: &[u128]) {
        for fp in fps {
            self.held.remove(fp);
        }
    }

    /// Send the queued confirmations and releases now, and the item counters (at the end of a
    /// run, or after each batch where nothing else would carry them). Safe to retry.
    pub fn settle(&mut self) -> Result<(), RedisFilterError> {
        self.idle()?;
        for q in [&mut self.confirm_q, &mut self.release_q] {
            q.sort_unstable();
            q.dedup();
        }
        if !self.confirm_q.is_empty() || !self.release_q.is_empty() {
            let mut it = Inflight {
                fps: Vec::new(),
                todo: Vec::new(),
                out: Vec::new(),
                carried: std::mem::take(&mut self.confirm_q),
                released: std::mem::take(&mut self.release_q),
                kind: Pending::Deferred,
            };
            if let Err(e) = self.complete_one(&mut it) {
                self.requeue(&mut it);
                return Err(e);
            }
        }
        self.flush_items()
    }

    /// Forget every submitted batch without answering it (after a failure, before the batches
    /// are submitted again): their claims stay ours, so the resubmission is answered as if
    /// they had never been sent; what they carried is queued again.
    pub fn abandon(&mut self) {
        let mut sent = false;
        while let Some(mut it) = self.inflight.pop_front() {
            sent |= matches!(it.kind, Pending::Sent { .. });
            self.requeue(&mut it);
        }
        if sent {
            // Their replies are still in the socket.
            self.conn = None;
        }
    }

    /// Confirmations and releases a failed exchange carried go back to the queues.
    pub(super) fn requeue(&mut self, it: &mut Inflight) {
        self.confirm_q.append(&mut it.carried);
        self.release_q.append(&mut it.released);
    }

    /// Indices of `fps` to claim in Redis: not answered by the tier, first in the batch.
    pub(super) fn claim_todo(&mut self, fps: &[u128], todo: &mut Vec<usize>) {
        self.tier_misses(fps, todo);
        if todo.len() > 1 {
            let mut first: rustc_hash::FxHashSet<u128> = Default::default();
            first.reserve(todo.len());
            todo.retain(|&i| first.insert(fps[i]));
        }
    }

    /// Whether this client holds a live claim on `fp` for a URL it answered new.
    pub(super) fn holds(&self, fp: u128) -> bool {
        self.held
            .get(&fp)
            .is_some_and(|t| t.elapsed() < self.cfg.claim_ttl)
    }

    /// DEL `keys`' claims: one variadic command on a single node, one per key on a cluster
    /// (claims live in different slots). Returns the number of commands.
    pub(super) fn del_claims(&self, fps: &[u128], batch: &mut Batch) -> usize {
        if fps.is_empty() {
            return 0;
        }
        let mut key = String::new();
        if batch.is_raw() {
            batch.cmd("DEL", 1 + fps.len());
            for &fp in fps {
                key.clear();
                Keys::write_claim(&mut key, &self.ns, fp);
                batch.arg(key.as_bytes());
            }
            1
        } else {
            for &fp in fps {
                key.clear();
                Keys::write_claim(&mut key, &self.ns, fp);
                batch.cmd("DEL", 2);
                batch.arg(key.as_bytes());
            }
            fps.len()
        }
    }

    /// Encode one claim exchange in two phases. Phase 1: insert the `carried` confirmations
    /// into the current generation, delete the `released` claims, claim `todo`. Phase 2:
    /// delete the confirmed URLs' claims, read `todo` in every live generation. On one node
    /// both phases go in one pipeline (Redis runs a connection's commands in order); on a
    /// cluster phase 2 is sent after phase 1 answered, so on every node an insert comes before
    /// its claim's deletion and a claim before its read.
    pub(super) fn encode_claims(
        &mut self,
        fps: &[u128],
        todo: &[usize],
        carried: &[u128],
        released: &[u128],
        raw: bool,
        claim: bool,
    ) -> (Batch, Batch, Plan) {
        let mut p1 = Batch::new(raw);
        let mut p2 = Batch::new(raw);
        let cur = self.gens.current().clone();
        let confirm_groups = if carried.is_empty() {
            Vec::new()
        } else {
            let all: Vec<usize> = (0..carried.len()).collect();
            self.write_cmds(&cur, carried, &all, true, &mut p1)
        };
        // Releases before claims: a URL released and claimed again in one exchange stays
        // claimed.
        let n_release = self.del_claims(released, &mut p1);
        let ttl = self.cfg.claim_ttl.as_millis().clamp(1, i64::MAX as u128) as i64;
        let mut key = String::new();
        for &i in todo.iter().filter(|_| claim) {
            key.clear();
            Keys::write_claim(&mut key, &self.ns, fps[i]);
            p1.cmd("SET", 7);
            p1.arg(key.as_bytes());
            p1.int(self.token);
            p1.arg(b"NX");
            p1.arg(b"GET");
            p1.arg(b"PX");
            p1.int(ttl);
        }
        let n_unclaim = self.del_claims(carried, &mut p2);
        let mut reads = Vec::new();
        if !todo.is_empty() {
            let gens = self.gens.live.clone();
            for g in &gens {
                let groups = self.write_cmds(g, fps, todo, false, &mut p2);
                reads.push((g.k as usize, groups));
            }
            p2.cmd("HGET", 3);
            p2.arg(self.meta_key.as_bytes());
            p2.arg(b"gv");
        }
        let plan = Plan {
            confirm_groups,
            confirm_store: !carried.is_empty() && self.spec.mode.uses_store(),
            n_release,
            n_unclaim,
            version: !todo.is_empty(),
            claims: claim,
            reads,
            exact: self.spec.mode.uses_store(),
        };
        (p1, p2, plan)
    }

    /// Run both phases of an exchange on the hot connection (see `encode_claims`).
    pub(super) fn exec2(
        &mut self,
        p1: &mut Batch,
        p2: &mut Batch,
        out: &mut Replies,
    ) -> Result<(), RedisFilterError> {
        self.exec(p1, out, false)?;
        let mut second = Replies::default();
        self.exec(p2, &mut second, false)?;
        out.append(&second);
        Ok(())
    }

    /// Read the replies of a claim exchange: apply the carried confirmations (counters, tier,
    /// held) and answer each claim: `Some(true)` new and ours, `Some(false)` seen, `None` held
    /// by another client.
    pub(super) fn decode_claims(
        &mut self,
        plan: &Plan,
        fps: &[u128],
        todo: &[usize],
        carried: &[u128],
        replies: &Replies,
        answers: &mut [Option<bool>],
    ) -> Result<(), RedisFilterError> {
        let want = plan.replies(carried.len(), todo.len());
        if replies.len() != want {
            return Err(RedisFilterError::Corrupt(format!(
                "a claim exchange got {} replies for {want} commands",
                replies.len()
            )));
        }
        let mut at = self.decode_confirmations(plan, carried, replies);
        at += plan.n_release;
        let claims_at = at;
        if plan.claims {
            at += todo.len();
        }
        at += plan.n_unclaim;
        let seen = decode_reads(plan, todo, replies, &mut at);
        // The generations changed since we read them: a URL another client inserted into a
        // generation we do not know yet would read as new. Re-read what looked new, with the
        // generations refreshed (the claims stay ours meanwhile).
        let stale = plan.version && replies.int(at) != self.gens_version;
        if stale {
            self.force_refresh = true;
        }
        if !todo.is_empty() && !plan.reads.is_empty() {
            let share = seen.iter().filter(|&&x| x).count() as f64 / todo.len() as f64;
            self.seen_share = 0.8 * self.seen_share + 0.2 * share;
        }
        if !plan.claims {
            // Read only: what is seen is answered; the rest is claimed next
            // (`claim_unclaimed`).
            for (j, &i) in todo.iter().enumerate() {
                answers[j] = if seen[j] {
                    self.tier.insert(fps[i]);
                    Some(false)
                } else {
                    None
                };
            }
            return Ok(());
        }
        for (j, &i) in todo.iter().enumerate() {
            let fp = fps[i];
            let claim = replies.get(claims_at + j);
            answers[j] = self.answer_claim(fp, claim, seen[j], stale);
        }
        Ok(())
    }

    /// Apply the carried confirmations of a claim exchange (counters, tier, held); returns the
    /// index of the first reply after them.
    fn decode_confirmations(&mut self, plan: &Plan, carried: &[u128], replies: &Replies) -> usize {
        let mut at = 0;
        let cur_k = self.gens.current().k as usize;
        let mut inserted = 0u64;
        if plan.confirm_store {
            at += plan.confirm_groups.len();
            inserted += (0..carried.len())
                .filter(|&n| replies.int(at + n) == 1)
                .count() as u64;
            at += carried.len();
        } else {
            for g in &plan.confirm_groups {
                let bits = replies.get(at);
                at += 1;
                inserted += (0..g.len())
                    .filter(|&n| {
                        bits.get(n * cur_k..(n + 1) * cur_k)
                            .is_some_and(|b| b.contains(&0))
                    })
                    .count() as u64;
            }
        }
        self.count_items(inserted);
        for fp in carried {
            self.held.remove(fp);
            self.tier.insert(*fp);
        }
        at
    }

    /// The answer to one claimed URL: `Some(true)` new and ours, `Some(false)` seen, `None` held
    /// by another client (or ours while the generations are stale).
    fn answer_claim(&mut self, fp: u128, claim: &[i64], seen: bool, stale: bool) -> Option<bool> {
        let mine = claim.is_empty() || claim[0] == self.token;
        if seen {
            if mine && !self.holds(fp) {
                self.release_q.push(fp);
            }
            self.tier.insert(fp);
            Some(false)
        } else if mine && stale {
            None
        } else if mine {
            if claim.is_empty() {
                Some(!self.holds(fp))
            } else {
                // Our own claim from an attempt whose answer was lost.
                if !self.holds(fp) {
                    self.stats.reclaimed += 1;
                }
                Some(!self.holds(fp))
            }
        } else {
            None
        }
    }

    /// Claim the open answers (`None`: unseen by a read-only exchange, or busy at the last
    /// poll) on the maintenance connection, refreshing first if the generations changed: each
    /// becomes new (ours), seen (someone confirmed it meanwhile) or stays busy.
    pub(super) fn claim_unclaimed(
        &mut self,
        fps: &[u128],
        todo: &[usize],
        answers: &mut [Option<bool>],
    ) -> Result<(), RedisFilterError> {
        let open: Vec<usize> = todo
            .iter()
            .zip(answers.iter())
            .filter(|(_, a)| a.is_none())
            .map(|(&i, _)| i)
            .collect();
        if open.is_empty() {
            return Ok(());
        }
        if self.force_refresh {
            self.refresh()?;
        }
        let raw = self.mconn()?.is_raw();
        let (p1, p2, plan) = self.encode_claims(fps, &open, &[], &[], raw, true);
        let replies = self.mexec2(p1, p2)?;
        let mut sub = vec![None; open.len()];
        self.decode_claims(&plan, fps, &open, &[], &replies, &mut sub)?;
        for (a, s) in answers.iter_mut().filter(|a| a.is_none()).zip(sub) {
            *a = s;
        }
        Ok(())
    }

    /// Wait for the claims other clients hold on some of `todo` (the `None` answers): each is
    /// either confirmed (the URL is seen) or deleted or expired (the URL becomes ours). Polls on
    /// the maintenance connection, backing off from 2 ms to 50 ms. Before waiting, this
    /// client's own queued confirmations are sent, so a client waiting on us is not waiting on
    /// our wait. A claim still held after [`RedisConfig::busy_wait`] is taken as new anyway:
    /// its holder may be waiting on claims of ours that cannot be confirmed before this call
    /// returns (two gates, each with a batch in flight), or may be dead. That is a repeat,
    /// never a loss.
    pub(super) fn resolve_busy(
        &mut self,
        fps: &[u128],
        todo: &[usize],
        answers: &mut [Option<bool>],
    ) -> Result<(), RedisFilterError> {
        let start = Instant::now();
        let mut wait = Duration::from_millis(2);
        let mut first = true;
        loop {
            let busy: Vec<usize> = todo
                .iter()
                .zip(answers.iter())
                .filter(|(_, a)| a.is_none())
                .map(|(&i, _)| i)
                .collect();
            if busy.is_empty() {
                return Ok(());
            }
            if first {
                self.stats.busy_waits += busy.len() as u64;
                first = false;
                self.settle_on_mconn()?;
            }
            if !self.force_refresh && start.elapsed() >= self.cfg.busy_wait {
                // Taken over: new for us (a repeat if the holder publishes it too).
                self.stats.busy_taken += busy.len() as u64;
                for a in answers.iter_mut().filter(|a| a.is_none()) {
                    *a = Some(true);
                }
                return Ok(());
            }
            if !self.force_refresh {
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_millis(50));
            }
            // Poll: claim the open ones again (refreshing first if the generations changed).
            self.claim_unclaimed(fps, todo, answers)?;
        }
    }

    /// Send the queued confirmations and releases on the maintenance connection (they are
    /// idempotent and independent of what is in flight on the hot one).
    pub(super) fn settle_on_mconn(&mut self) -> Result<(), RedisFilterError> {
        if self.confirm_q.is_empty() && self.release_q.is_empty() {
            return Ok(());
        }
        let carried = std::mem::take(&mut self.confirm_q);
        let released = std::mem::take(&mut self.release_q);
        let raw = match self.mconn() {
            Ok(c) => c.is_raw(),
            Err(e) => {
                self.confirm_q = carried;
                self.release_q = released;
                return Err(e);
            }
        };
        let (p1, p2, plan) = self.encode_claims(&[], &[], &carried, &released, raw, true);
        match self.mexec2(p1, p2) {
            Ok(replies) => self.decode_claims(&plan, &[], &[], &carried, &replies, &mut []),
            Err(e) => {
                self.confirm_q = carried;
                self.release_q = released;
                Err(e)
            }
        }
    }

    /// Both phases of an exchange on the maintenance connection (see `encode_claims`).
    pub(super) fn mexec2(
        &mut self,
        mut p1: Batch,
        mut p2: Batch,
    ) -> Result<Replies, RedisFilterError> {
        let mut replies = Replies::default();
        let mut second = Replies::default();
        let c = self.mconn()?;
        let r = c
            .exec(&mut p1, &mut replies)
            .and_then(|()| c.exec(&mut p2, &mut second));
        if let Err(e) = r {
            if e.is_retryable() {
                self.mconn = None;
            }
            return Err(e);
        }
        replies.append(&second);
        Ok(replies)
    }

    /// Receive the `n` replies of a batch sent on connection `epoch` (an error if that
    /// connection was lost meanwhile, `ambiguous` if the batch wrote); a failure drops the
    /// connection.
    pub(super) fn recv_sent(
        &mut self,
        n: usize,
        epoch: u64,
        ambiguous: bool,
        replies: &mut Replies,
    ) -> Result<(), RedisFilterError> {
        let r = match self.conn.as_mut() {
            Some(c) if epoch == self.epoch => c.recv(n, replies),
            _ => Err(RedisFilterError::from_redis(
                std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "the connection was lost with this batch in flight",
                )
                .into(),
                ambiguous,
            )),
        };
        if let Err(e) = &r {
            self.lose_connection(e);
        }
        r
    }
}

/// Read the generation reads of a claim exchange from reply `at` on (advancing it): whether
/// each URL of `todo` was seen.
fn decode_reads(plan: &Plan, todo: &[usize], replies: &Replies, at: &mut usize) -> Vec<bool> {
    let mut seen = vec![false; todo.len()];
    let pos_of: HashMap<usize, usize> = todo.iter().enumerate().map(|(j, &i)| (i, j)).collect();
    for (k, groups) in &plan.reads {
        for g in groups {
            let bits = replies.get(*at);
            *at += 1;
            for (n, i) in g.iter().enumerate() {
                if bits
                    .get(n * k..(n + 1) * k)
                    .is_some_and(|b| b.iter().all(|&x| x == 1))
                {
                    seen[pos_of[i]] = true;
                }
            }
        }
        if plan.exact {
            for s in seen.iter_mut() {
                if replies.int(*at) == 1 {
                    *s = true;
                }
                *at += 1;
            }
        }
    }
    seen
}
