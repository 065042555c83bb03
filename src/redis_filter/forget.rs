//! Forgetting URLs (issue 25): `crawlsieve bloom forget` and the API let given URLs through once
//! more. In the `fingerprints` and `exact` modes the fingerprint store decides whether a URL is
//! new, so forgetting is an `SREM` of its member from every live generation: the next
//! check-and-set's `SADD` answers new, atomically, for exactly one client. Every client clears
//! its local tier when it sees the namespace's `forgets` counter move (on its next metadata
//! refresh, within `redis.refresh_interval`): until then a tier may still answer "seen", which
//! delays the forget but loses nothing. Two URLs whose truncated fingerprints collide in one
//! bucket (FP-rate odds) are forgotten together: a repeat, never a loss.
//!
//! `bloom` mode cannot clear a bit (it may be shared by many URLs), so a forgotten URL's
//! fingerprint goes to the namespace's **re-admit set** (`cs:{NS}:readmit`) instead: while the
//! set is not empty (the metadata's `readmit_until` says it may hold something, and `SCARD`
//! confirms it at each refresh), every check-and-set sends one `SREM readmit FP` per URL after
//! its `BITFIELD`s, and a reply of 1 makes the URL new whatever its bits — atomically, for
//! exactly one client; the read-only lookups (older generations, `check`) ask `SMISMEMBER`.
//! Entries live [`READMIT_TTL_MS`] (30 days, the set's expiry, renewed by each forget): a URL
//! forgotten and never met again does not tax every check for good. Not covered: the API's
//! idempotent requests (`Idempotency-Key`), whose claim protocol reads the bits only — such a
//! request answers a URL forgotten in a bloom namespace as a duplicate until a plain request,
//! `dedup` or the gate meets it.

use super::*;

/// How long a bloom namespace keeps a forgotten URL's fingerprint for its next sighting.
pub const READMIT_TTL_MS: u64 = 30 * 24 * 3600 * 1000;

/// Milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// In one step (a client refreshing in between must not see the mark without the members):
/// add the members to the re-admit set, renew its expiry, set the metadata's `readmit_until`
/// (never lower it) and count the forget — unless the namespace is gone (a dropped namespace is
/// never recreated). KEYS: meta, readmit set; ARGV: until, ttl ms, members…. Returns the
/// members added, or -1.
const MARK_READMIT: &str = r"
if redis.call('HEXISTS', KEYS[1], 'spec') == 0 then return -1 end
local added = redis.call('SADD', KEYS[2], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[2], ARGV[2])
local cur = tonumber(redis.call('HGET', KEYS[1], 'readmit_until') or '0')
if tonumber(ARGV[1]) > cur then redis.call('HSET', KEYS[1], 'readmit_until', ARGV[1]) end
redis.call('HINCRBY', KEYS[1], 'forgets', 1)
return added
";

impl RedisFilter {
    /// Let `fps` through once more; returns how many were held by the filter (and are now
    /// forgotten).
    pub fn forget_urls(&mut self, fps: &[u128]) -> Result<u64, RedisFilterError> {
        self.idle()?;
        self.refresh()?;
        if fps.is_empty() {
            return Ok(0);
        }
        if !self.spec.mode.uses_store() {
            return self.forget_bloom(fps);
        }
        let gens = self.gens.live.clone();
        let hits = self.srem_live(&gens, fps)?;
        let mut held = vec![false; fps.len()];
        let mut removed = vec![0i64; gens.len()];
        for n in hits {
            held[n % fps.len()] = true;
            removed[n / fps.len()] += 1;
        }
        // Each generation holds fewer (its fill drives growth), and every client's tier
        // forgets at its next refresh; this one's at once.
        let key = self.meta_key.clone();
        let script = redis::Script::new(super::namespace::INCR_ITEMS_LUA);
        let mut fields = vec![("forgets".to_string(), 1)];
        for (g, &n) in gens.iter().zip(&removed) {
            if n > 0 {
                fields.push((format!("items:{}", g.id), -n));
            }
        }
        for (field, n) in fields {
            let n = n.to_string();
            self.mconn()?
                .script::<i64>(&script, &key, &[&field, &n])
                .map_err(|e| self.mfail(e))?;
        }
        self.tier.clear();
        if let Some(k) = self.known.as_mut() {
            k.clear();
        }
        Ok(held.iter().filter(|&&h| h).count() as u64)
    }

    /// Take `fps` back out of the filter: this client's take answered them new, and its caller
    /// will not deliver them (the gate's per-host budget was spent). One `SREM` per live
    /// generation, and this client's tier forgets them; no other client's tier is cleared (none
    /// has them unless Redis answered it "seen", which only delays them: a repeat or a later
    /// event, never a loss). Returns how many were removed; a `bloom` namespace cannot take
    /// back and removes none (its bits stay: the URLs stay "seen", as documented for budgets).
    /// Call only with no take in flight.
    pub fn untake(&mut self, fps: &[u128]) -> Result<u64, RedisFilterError> {
        if fps.is_empty() || !self.spec.mode.uses_store() {
            return Ok(0);
        }
        let gens = self.gens.live.clone();
        let removed = self.srem_live(&gens, fps)?.len() as u64;
        // They were counted new (growth reads the count): take them back out of what this
        // client has not written yet (a count already written stays: growth a little early).
        self.pending_items = self.pending_items.saturating_sub(removed);
        for &fp in fps {
            self.tier.remove(fp);
            if let Some(k) = self.known.as_mut() {
                k.remove(fp);
            }
        }
        Ok(removed)
    }

    /// `bloom` mode: the URLs the filter holds (every bit set in a live generation) go to the
    /// re-admit set; returns how many were added (a URL already waiting there counts 0).
    fn forget_bloom(&mut self, fps: &[u128]) -> Result<u64, RedisFilterError> {
        let gens = self.gens.live.clone();
        let todo: Vec<usize> = (0..fps.len()).collect();
        let mut seen = Vec::new();
        // The bits alone: a URL already in the set is held too (SADD then counts it 0).
        let was = std::mem::replace(&mut self.readmit, false);
        let r = self.lookup(&gens, fps, &todo, &mut seen);
        self.readmit = was;
        r?;
        let members: Vec<[u8; 16]> = fps
            .iter()
            .zip(&seen)
            .filter(|(_, &s)| s)
            .map(|(fp, _)| fp.to_be_bytes())
            .collect();
        if members.is_empty() {
            return Ok(0);
        }
        let key = Keys::readmit(&self.ns);
        let until = now_ms() + READMIT_TTL_MS;
        let meta = self.meta_key.clone();
        let mut added = 0;
        // Lua's unpack() takes a few thousand values at most.
        for chunk in members.chunks(1000) {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(MARK_READMIT)
                .arg(2)
                .arg(&meta)
                .arg(&key)
                .arg(until)
                .arg(READMIT_TTL_MS);
            for m in chunk {
                cmd.arg(&m[..]);
            }
            let n: i64 = self.mconn()?.query(&cmd).map_err(|e| self.mfail(e))?;
            if n < 0 {
                return Err(RedisFilterError::NotFound(self.ns.clone()));
            }
            added += n as u64;
        }
        self.readmit = true;
        self.tier.clear();
        if let Some(k) = self.known.as_mut() {
            k.clear();
        }
        Ok(added)
    }

    /// `SREM` every fingerprint of `fps` from its bucket in each of `gens` (one pipeline, the
    /// fingerprint-store modes). Returns the positions `g * fps.len() + i` that were there.
    fn srem_live(
        &mut self,
        gens: &[GenSpec],
        fps: &[u128],
    ) -> Result<Vec<usize>, RedisFilterError> {
        let mut batch = self.batch()?;
        for g in gens {
            for &fp in fps {
                let (b, member) = g.bucket_of(fp);
                batch.cmd("SREM", 3);
                batch.arg(Keys::bucket(&self.ns, g, g.shard_of(fp), b).as_bytes());
                batch.int(member);
            }
        }
        let replies = self.run_plain(batch)?;
        let hits = (0..gens.len() * fps.len())
            .filter(|&n| replies.int(n) == 1)
            .collect();
        self.replies = replies;
        Ok(hits)
    }
}
