//! Forgetting URLs (issue 25): `crawlsieve bloom forget` and the API let given URLs through once
//! more. In the `fingerprints` and `exact` modes the fingerprint store decides whether a URL is
//! new, so forgetting is an `SREM` of its member from every live generation: the next
//! check-and-set's `SADD` answers new, atomically, for exactly one client. Every client clears
//! its local tier when it sees the namespace's `forgets` counter move (on its next metadata
//! refresh, within `redis.refresh_interval`): until then a tier may still answer "seen", which
//! delays the forget but loses nothing. Two URLs whose truncated fingerprints collide in one
//! bucket (FP-rate odds) are forgotten together: a repeat, never a loss.
//!
//! `bloom` mode cannot forget: a bit may be shared by many URLs and is never cleared. Such a
//! namespace answers [`RedisFilterError::Params`]; docs/crawl-policy.md has the re-admit-set
//! design that would lift this.

use super::*;

impl RedisFilter {
    /// Let `fps` through once more; returns how many were held by the filter (and are now
    /// forgotten).
    pub fn forget_urls(&mut self, fps: &[u128]) -> Result<u64, RedisFilterError> {
        self.idle()?;
        if !self.spec.mode.uses_store() {
            return Err(RedisFilterError::Params(format!(
                "namespace {:?} is in bloom mode: a Bloom filter cannot forget a URL (use the fingerprints or exact mode)",
                self.ns
            )));
        }
        self.refresh()?;
        if fps.is_empty() {
            return Ok(0);
        }
        let gens = self.gens.live.clone();
        let mut batch = self.batch()?;
        for g in &gens {
            for &fp in fps {
                let (b, member) = g.bucket_of(fp);
                batch.cmd("SREM", 3);
                batch.arg(Keys::bucket(&self.ns, g, g.shard_of(fp), b).as_bytes());
                batch.int(member);
            }
        }
        let replies = self.run_plain(batch)?;
        let mut held = vec![false; fps.len()];
        let mut removed = vec![0i64; gens.len()];
        for n in 0..gens.len() * fps.len() {
            if replies.int(n) == 1 {
                held[n % fps.len()] = true;
                removed[n / fps.len()] += 1;
            }
        }
        self.replies = replies;
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
        let mut batch = self.batch()?;
        for g in &gens {
            for &fp in fps {
                let (b, member) = g.bucket_of(fp);
                batch.cmd("SREM", 3);
                batch.arg(Keys::bucket(&self.ns, g, g.shard_of(fp), b).as_bytes());
                batch.int(member);
            }
        }
        let replies = self.run_plain(batch)?;
        let removed = (0..gens.len() * fps.len())
            .filter(|&n| replies.int(n) == 1)
            .count() as u64;
        self.replies = replies;
        for &fp in fps {
            self.tier.remove(fp);
            if let Some(k) = self.known.as_mut() {
                k.remove(fp);
            }
        }
        Ok(removed)
    }
}
