//! Check-and-set (`SADD` / `BITFIELD … SET` per generation) and its building blocks, shared by
//! every protocol: the batch writer, the replies' reader, the read-only check and the insert.

use super::*;

impl RedisFilter {
    /// Atomic batched check-and-set: `out[i]` = whether `fps[i]` was new; all are inserted.
    /// Duplicates inside the batch are answered in order (the first is new).
    ///
    /// Unlike the claim protocol ([`RedisFilter::submit`]) this writes before the caller acts,
    /// so only this process can tell a lost reply from a real duplicate: a write whose outcome
    /// is unknown is kept "in doubt" and its URLs are reported new when the batch is retried
    /// by this client. A crash between the write and the caller's use of the answer loses it;
    /// callers that must survive that (dedup, the gate) claim instead.
    pub fn check_and_set(
        &mut self,
        fps: &[u128],
        out: &mut Vec<bool>,
    ) -> Result<(), RedisFilterError> {
        self.idle()?;
        self.maybe_refresh()?;
        out.clear();
        out.resize(fps.len(), false);
        let mut todo = std::mem::take(&mut self.todo);
        self.tier_misses(fps, &mut todo);
        let r = self.redis_check_and_set(fps, &mut todo, out);
        self.todo = todo;
        r
    }

    /// Indices of `fps` the local tier cannot answer (counting the hits).
    pub(super) fn tier_misses(&mut self, fps: &[u128], todo: &mut Vec<usize>) {
        todo.clear();
        for (i, &fp) in fps.iter().enumerate() {
            if self.tier.contains(fp) {
                self.stats.tier_hits += 1;
            } else {
                todo.push(i);
            }
        }
    }

    pub(super) fn redis_check_and_set(
        &mut self,
        fps: &[u128],
        todo: &mut Vec<usize>,
        out: &mut [bool],
    ) -> Result<(), RedisFilterError> {
        if todo.is_empty() {
            return Ok(());
        }
        self.stats.redis_lookups += todo.len() as u64;
        // Older generations first, read-only: a URL they hold is seen and not re-inserted
        // (so a recrawl window counts from when the URL was last new).
        if self.gens.live.len() > 1 {
            let mut seen = std::mem::take(&mut self.seen);
            let older: Vec<GenSpec> = self.gens.live[..self.gens.live.len() - 1].to_vec();
            let r = self.lookup(&older, fps, todo, &mut seen);
            if let Err(e) = r {
                self.seen = seen;
                return Err(e);
            }
            let mut j = 0;
            // A URL in doubt may be in an older generation because of our own lost write
            // (the generation rotated since): the current one decides, and the doubt rescues.
            todo.retain(|&i| {
                let s = seen[j] && !self.doubt.contains(&fps[i]);
                j += 1;
                if s {
                    self.tier.insert(fps[i]);
                    if let Some(k) = self.known.as_mut() {
                        k.insert(fps[i]);
                    }
                }
                !s
            });
            self.seen = seen;
            if todo.is_empty() {
                return Ok(());
            }
        }
        if self.gens.live.len() == 1 {
            self.readmit_seen.clear();
        }
        let cur = self.gens.current().clone();
        let mut batch = self.batch()?;
        let groups = self.write_cmds(&cur, fps, todo, true, &mut batch);
        let readmit = self.write_readmit(fps, todo, &mut batch);
        let mut replies = std::mem::take(&mut self.replies);
        let r = self.exec(&mut batch, &mut replies, true);
        self.spare = batch;
        let r = match r {
            Ok(()) => self.apply_at(0, fps, todo, out, (&groups, readmit), &cur, &replies),
            Err(e) => {
                self.stats.ambiguous_failures += 1;
                self.doubt.extend(todo.iter().map(|&i| fps[i]));
                Err(e)
            }
        };
        self.replies = replies;
        r
    }

    /// Turn the replies of a check-and-set into answers: old bits / `SADD` results (and, with
    /// `readmit`, a bloom namespace's `SREM`s from its re-admit set: a 1 makes the URL new
    /// whatever its bits), the doubt set, the tier and the counters.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply_at(
        &mut self,
        base: usize,
        fps: &[u128],
        todo: &[usize],
        out: &mut [bool],
        (groups, readmit): (&[Vec<usize>], bool),
        cur: &GenSpec,
        replies: &Replies,
    ) -> Result<(), RedisFilterError> {
        let exact = self.spec.mode.uses_store();
        let per_url = exact || readmit;
        // Bloom answers per URL, from the old bits.
        let k = cur.k as usize;
        let mut bloom_new = std::mem::take(&mut self.seen);
        bloom_new.clear();
        bloom_new.resize(fps.len(), false);
        if replies.len() != base + groups.len() + if per_url { todo.len() } else { 0 } {
            self.seen = bloom_new;
            return Err(RedisFilterError::Corrupt(format!(
                "a check-and-set got {} replies",
                replies.len()
            )));
        }
        let bad = bloom_answers(base, groups, k, replies, &mut bloom_new);
        if let Some((got, urls)) = bad {
            self.seen = bloom_new;
            return Err(RedisFilterError::Corrupt(format!(
                "BITFIELD returned {got} values for {urls} URLs"
            )));
        }
        for (n, &i) in todo.iter().enumerate() {
            let new = if exact {
                let added = replies.int(base + groups.len() + n) == 1;
                if added && cur.bitmap && !bloom_new[i] {
                    self.stats.bloom_fp_caught += 1;
                }
                added
            } else if readmit {
                let taken = replies.int(base + groups.len() + n) == 1;
                // A re-admitted URL an older generation holds: only its SREM decides (two
                // clients may both find its current bits clear).
                taken || (bloom_new[i] && !self.readmit_seen.contains(&fps[i]))
            } else {
                bloom_new[i]
            };
            out[i] = self.record_answer(fps[i], new);
        }
        if !self.doubt.is_empty() {
            for &i in todo.iter() {
                self.doubt.remove(&fps[i]);
            }
        }
        self.readmit_seen.clear();
        self.seen = bloom_new;
        Ok(())
    }

    /// Settle one URL's answer: a URL in doubt is rescued as new (and leaves the doubt set);
    /// counters, tier and the known set are updated. Returns the final answer.
    fn record_answer(&mut self, fp: u128, mut new: bool) -> bool {
        // Taken out of doubt at its first occurrence whatever the answer, so a repeat of the
        // URL later in the same call is not rescued a second time.
        let in_doubt = !self.doubt.is_empty() && self.doubt.remove(&fp);
        if !new && in_doubt {
            self.stats.doubt_rescued += 1;
            new = true;
        }
        if new {
            self.stats.new += 1;
            self.count_items(1);
        }
        self.tier.insert(fp);
        if let Some(k) = self.known.as_mut() {
            k.insert(fp);
        }
        new
    }

    /// Batches submitted and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    pub(super) fn lose_connection(&mut self, e: &RedisFilterError) {
        if e.is_retryable() || matches!(e, RedisFilterError::Corrupt(_)) {
            self.conn = None;
            self.tier.clear();
        }
    }

    pub(super) fn idle(&self) -> Result<(), RedisFilterError> {
        if self.inflight.is_empty() && self.takes_in_flight() == 0 {
            Ok(())
        } else {
            Err(RedisFilterError::Params(
                "complete() the submitted batches first".into(),
            ))
        }
    }

    /// An empty batch of the right kind for the connection (connecting first, so the kind is
    /// the one the batch will be sent on).
    pub(super) fn batch(&mut self) -> Result<Batch, RedisFilterError> {
        let raw = self.conn()?.is_raw();
        let mut b = std::mem::replace(&mut self.spare, Batch::new(false));
        if b.is_raw() != raw {
            b = Batch::new(raw);
        }
        b.clear();
        Ok(b)
    }

    pub(super) fn exec(
        &mut self,
        batch: &mut Batch,
        out: &mut Replies,
        write: bool,
    ) -> Result<(), RedisFilterError> {
        let r = self.conn()?.exec(batch, out);
        match r {
            Ok(()) => Ok(()),
            Err(e) => {
                if e.is_retryable() {
                    self.conn = None;
                    self.tier.clear();
                }
                Err(match e {
                    RedisFilterError::Unavailable { source, .. } => RedisFilterError::Unavailable {
                        source,
                        ambiguous: write,
                    },
                    other => other,
                })
            }
        }
    }

    /// A bloom namespace with forgotten URLs: one `SREM readmit FP` per URL of `todo`, after the
    /// check-and-set's commands (its reply of 1 hands the forgotten URL to exactly one client).
    /// Returns whether they were written.
    pub(super) fn write_readmit(&self, fps: &[u128], todo: &[usize], batch: &mut Batch) -> bool {
        if !self.readmit || self.spec.mode.uses_store() || todo.is_empty() {
            return false;
        }
        let key = Keys::readmit(&self.ns);
        for &i in todo {
            batch.cmd("SREM", 3);
            batch.arg(key.as_bytes());
            batch.arg(&fps[i].to_be_bytes());
        }
        true
    }

    /// Encode the commands for `todo` in generation `g` into `batch`: one `BITFIELD` (`set`) or
    /// `BITFIELD_RO` per shard and, in exact mode, one `SADD`/`SISMEMBER` per URL after them in
    /// `todo` order. Returns the batch indices of each BITFIELD, in order. Exact-mode reads go
    /// straight to the fingerprint store: SISMEMBER costs Redis what a BITFIELD_RO costs, so
    /// screening with the Bloom bits first would only add work.
    pub(super) fn write_cmds(
        &mut self,
        g: &GenSpec,
        fps: &[u128],
        todo: &[usize],
        set: bool,
        batch: &mut Batch,
    ) -> Vec<Vec<usize>> {
        let exact = self.spec.mode.uses_store();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        if g.bitmap && (set || !exact) {
            let mut order = std::mem::take(&mut self.order);
            order.clear();
            order.extend(todo.iter().map(|&i| (g.shard_of(fps[i]), i)));
            order.sort_by_key(|&(s, _)| s); // stable: batch order inside a shard
            let mut pos = [0u64; 32];
            let k = g.k as usize;
            let (name, op, per) = if set {
                ("BITFIELD", &b"SET"[..], 4)
            } else {
                ("BITFIELD_RO", &b"GET"[..], 3)
            };
            let mut key = String::new();
            let mut start = 0;
            while start < order.len() {
                let shard = order[start].0;
                let end = start
                    + order[start..]
                        .iter()
                        .take_while(|&&(s, _)| s == shard)
                        .count();
                batch.cmd(name, 2 + per * k * (end - start));
                key.clear();
                Keys::write_shard(&mut key, &self.ns, g, shard);
                batch.arg(key.as_bytes());
                let mut idx = Vec::with_capacity(end - start);
                for &(_, i) in &order[start..end] {
                    let n = g.positions(fps[i], &mut pos);
                    for &p in &pos[..n] {
                        batch.arg(op);
                        batch.arg(b"u1");
                        batch.int(p as i64);
                        if set {
                            batch.arg(b"1");
                        }
                    }
                    idx.push(i);
                }
                groups.push(idx);
                start = end;
            }
            self.order = order;
        }
        if exact {
            let name = if set { "SADD" } else { "SISMEMBER" };
            for &i in todo {
                let (b, member) = g.bucket_of(fps[i]);
                batch.cmd(name, 3);
                batch.arg(Keys::bucket(&self.ns, g, g.shard_of(fps[i]), b).as_bytes());
                batch.int(member);
            }
        }
        groups
    }

    /// Read-only lookup of `todo` in `gens`: `seen[j]` for `todo[j]` = held by any of them.
    pub(super) fn lookup(
        &mut self,
        gens: &[GenSpec],
        fps: &[u128],
        todo: &[usize],
        seen: &mut Vec<bool>,
    ) -> Result<(), RedisFilterError> {
        seen.clear();
        seen.resize(todo.len(), false);
        let mut pos_of = HashMap::with_capacity(todo.len());
        for (j, &i) in todo.iter().enumerate() {
            pos_of.entry(i).or_insert(j);
        }
        let exact = self.spec.mode.uses_store();
        let mut batch = self.batch()?;
        let mut plan = Vec::new();
        for g in gens {
            let groups = self.write_cmds(g, fps, todo, false, &mut batch);
            plan.push((g.k as usize, groups));
        }
        // A bloom namespace's forgotten URLs read as new whatever their bits.
        let readmit = self.readmit && !exact && !todo.is_empty();
        if readmit {
            batch.cmd("SMISMEMBER", 2 + todo.len());
            batch.arg(Keys::readmit(&self.ns).as_bytes());
            for &i in todo {
                batch.arg(&fps[i].to_be_bytes());
            }
        }
        let replies = self.run_plain(batch)?;
        let mut at = 0;
        for (k, groups) in plan {
            for g in &groups {
                let bits = replies.get(at);
                at += 1;
                for (n, &i) in g.iter().enumerate() {
                    let all = bits
                        .get(n * k..(n + 1) * k)
                        .is_some_and(|b| b.iter().all(|&x| x == 1));
                    if all {
                        seen[pos_of[&i]] = true;
                    }
                }
            }
            if exact {
                for s in seen.iter_mut() {
                    if replies.int(at) == 1 {
                        *s = true;
                    }
                    at += 1;
                }
            }
        }
        self.readmit_seen.clear();
        if readmit {
            for ((s, &m), &i) in seen.iter_mut().zip(replies.get(at)).zip(todo) {
                if m == 1 {
                    *s = false;
                    self.readmit_seen.insert(fps[i]);
                }
            }
        }
        self.replies = replies;
        Ok(())
    }

    /// Execute `batch` (a read or an idempotent write: no doubt bookkeeping) and hand back the
    /// replies buffer; the batch returns to the spare slot, the buffer to `self` on error.
    pub(super) fn run_plain(&mut self, mut batch: Batch) -> Result<Replies, RedisFilterError> {
        let mut replies = std::mem::take(&mut self.replies);
        let r = self.exec(&mut batch, &mut replies, false);
        self.spare = batch;
        match r {
            Ok(()) => Ok(replies),
            Err(e) => {
                self.replies = replies;
                Err(e)
            }
        }
    }

    /// Read-only check: `out[i]` = whether `fps[i]` is new (not in any live generation), at its
    /// first occurrence in `fps` only — the contract every filter call keeps
    /// ([`crate::decision`]): a later occurrence of a new URL is its duplicate.
    /// Safe to retry; pair with [`RedisFilter::insert`] once the URL was acted on.
    pub fn check(&mut self, fps: &[u128], out: &mut Vec<bool>) -> Result<(), RedisFilterError> {
        self.idle()?;
        out.clear();
        out.resize(fps.len(), true);
        self.maybe_refresh()?;
        let mut todo = std::mem::take(&mut self.todo);
        self.tier_misses(fps, &mut todo);
        let mut j = 0;
        for (i, o) in out.iter_mut().enumerate() {
            if todo.get(j) == Some(&i) {
                j += 1;
            } else {
                *o = false; // a tier hit
            }
        }
        let mut seen = std::mem::take(&mut self.seen);
        let gens = self.gens.live.clone();
        let r = if todo.is_empty() {
            Ok(())
        } else {
            self.stats.redis_lookups += todo.len() as u64;
            self.lookup(&gens, fps, &todo, &mut seen)
        };
        if r.is_ok() {
            for (j, &i) in todo.iter().enumerate() {
                if seen[j] {
                    out[i] = false;
                    self.tier.insert(fps[i]);
                }
            }
            let mut first = rustc_hash::FxHashSet::default();
            for (o, fp) in out.iter_mut().zip(fps) {
                *o &= first.insert(*fp);
            }
        }
        self.seen = seen;
        self.todo = todo;
        r
    }

    /// Insert `fps` into the current generation (idempotent: safe to retry).
    pub fn insert(&mut self, fps: &[u128]) -> Result<(), RedisFilterError> {
        self.idle()?;
        self.maybe_refresh()?;
        let todo: Vec<usize> = (0..fps.len())
            .filter(|&i| !self.tier.contains(fps[i]))
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        let cur = self.gens.current().clone();
        let mut batch = self.batch()?;
        let groups = self.write_cmds(&cur, fps, &todo, true, &mut batch);
        self.write_readmit(fps, &todo, &mut batch);
        let replies = self.run_plain(batch)?;
        // Count what was new (the fingerprint store's answer where there is one), for growth.
        let k = cur.k as usize;
        if self.spec.mode.uses_store() {
            let n = (0..todo.len())
                .filter(|&n| replies.int(groups.len() + n) == 1)
                .count() as u64;
            self.count_items(n);
        } else {
            for (c, g) in groups.iter().enumerate() {
                let bits = replies.get(c);
                for n in 0..g.len() {
                    if bits.get(n * k..(n + 1) * k).is_some_and(|b| b.contains(&0)) {
                        self.count_items(1);
                    }
                }
            }
        }
        for &i in &todo {
            self.tier.insert(fps[i]);
        }
        self.replies = replies;
        Ok(())
    }

    /// Push buffered counters to Redis (also done on every refresh and on drop).
    pub fn flush(&mut self) -> Result<(), RedisFilterError> {
        self.idle()?;
        self.flush_items()
    }
}

/// Read the old bits of each BITFIELD group (replies from `base` on) into `bloom_new` (a URL
/// with a clear bit is new); the first group with the wrong number of values, as (values, URLs).
fn bloom_answers(
    base: usize,
    groups: &[Vec<usize>],
    k: usize,
    replies: &Replies,
    bloom_new: &mut [bool],
) -> Option<(usize, usize)> {
    let mut bad = None;
    for (c, g) in groups.iter().enumerate() {
        let bits = replies.get(base + c);
        if bits.len() != g.len() * k {
            bad = Some((bits.len(), g.len()));
            break;
        }
        for (n, &i) in g.iter().enumerate() {
            bloom_new[i] = bits[n * k..(n + 1) * k].contains(&0);
        }
    }
    bad
}

impl CheckAndSet for &mut RedisFilter {
    type Error = RedisFilterError;
    fn check_and_set_batch(
        &mut self,
        fps: &[u128],
        out: &mut Vec<bool>,
    ) -> Result<(), Self::Error> {
        self.check_and_set(fps, out)
    }
}
