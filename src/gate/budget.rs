//! Per-host budgets (issue 25): at most `[redis] max_new_urls_per_host` new URLs of one host
//! (`host[:port]`, the fetch event's key) are published per namespace and window, counted
//! across every gate of the namespace.
//!
//! **How.** The count of a host's new URLs in a batch is known only from the check-and-set's
//! replies, so the budget is one more exchange per batch (not per URL), on its own connection,
//! after the filter answered: per (namespace, host) with new URLs, `HINCRBY
//! cs:budget:{NS}:WINDOW HOST n`, and one `EXPIRE` (two windows) per namespace. Redis orders the
//! `HINCRBY`s of all gates, so each learns how many were counted before its own: with `v` the reply and `n` its
//! own count, it may publish `min(n, budget - (v - n))` (at least 0), the first ones in input
//! order; exactly the budget gets through across gates. The surplus is rejected `host_budget`,
//! taken back out of the filter ([`crate::redis_filter::RedisFilter::untake`]: a later window, a
//! raised budget or a forget lets them in) and taken back out of the count (`HINCRBY -n`, riding on
//! the next exchange), so the counter holds what was published.
//!
//! **Why not in the check-and-set's pipeline.** A Lua script doing both per URL is what issue 24
//! removed (~7× the Redis CPU of a plain insert); counting before the filter answers would
//! count repeats, and another gate's repeats, against the budget.
//!
//! **Never lose a URL.** If the budget exchange fails, or taking the surplus back out of the
//! filter fails, the batch's new URLs are all published (over budget, logged and counted in
//! `crawlsieve_budget_unchecked_total`): a URL is never rejected while it still holds a place in
//! the filter. A gate that dies between its take and its publication has its outbox adopted
//! whole, surplus included (over budget by that batch). In a `bloom` namespace the surplus keeps
//! its bits (a Bloom filter cannot take back): those URLs stay "seen" — a budget there is a
//! hard cap, documented in docs/crawl-policy.md.
//!
//! Windows are aligned to the Unix epoch (`unix_seconds / window`), so gates agree on the
//! current one as far as their clocks do.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Value;

use crate::redis_filter::{LazyConn, RedisFilterError};

/// The Redis hash counting, per host (its fields), the published new URLs in namespace `ns`
/// and window `window` (in the namespace's slot, like its metadata).
pub fn key(ns: &str, window: u64) -> String {
    crate::redis_filter::Keys::budget(ns, window)
}

/// The index of the window `now` falls in.
pub fn window_index(now: SystemTime, window: Duration) -> u64 {
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    secs / window.as_secs().max(1)
}

/// One (namespace, host)'s new URLs in a batch.
pub struct Ask {
    pub ns: String,
    pub host: String,
    pub n: u64,
}

/// The budget's side of a gate worker.
pub struct Budget {
    limit: u64,
    window: Duration,
    conn: LazyConn,
    /// Surplus to take back out of the counters: (key, host, n), with the next exchange.
    corrections: Vec<(String, String, u64)>,
    /// The window the last [`Budget::grant`] counted into.
    window_now: u64,
}

/// What the budget decided for one [`Ask`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Granted {
    /// How many of the host's new URLs may be published (the first ones).
    pub admitted: u64,
    /// This batch spent the host's budget (it was not spent before): log it once.
    pub reached: bool,
}

impl Budget {
    /// A budget of `limit` new URLs per host and `window` (`limit` > 0).
    pub fn new(limit: u64, window: Duration, conn: LazyConn) -> Budget {
        Budget {
            limit,
            window,
            conn,
            corrections: Vec::new(),
            window_now: 0,
        }
    }

    /// Count `asks` into the current window and say how many of each may be published. On an
    /// error nothing is decided (the caller publishes everything) and the connection is
    /// dropped; counts that may have run are not corrected (the host's budget is the smaller
    /// for it in this window, never a loss).
    pub fn grant(&mut self, asks: &[Ask]) -> Result<Vec<Granted>, RedisFilterError> {
        let w = window_index(SystemTime::now(), self.window);
        self.window_now = w;
        let ttl = (self.window.as_secs().max(1) * 2) as i64;
        let corrections = std::mem::take(&mut self.corrections);
        let mut cmds = Vec::with_capacity(corrections.len() + asks.len() + 1);
        let mut keys: Vec<String> = Vec::new();
        for (k, h, n) in &corrections {
            let mut c = redis::cmd("HINCRBY");
            c.arg(k).arg(h).arg(-(*n as i64));
            cmds.push(c);
        }
        let base = cmds.len();
        // Every key touched gets its expiry (a correction may land after its window's key
        // expired: it must not recreate a key without one).
        for (k, _, _) in &corrections {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        for a in asks {
            let k = key(&a.ns, w);
            let mut c = redis::cmd("HINCRBY");
            c.arg(&k).arg(&a.host).arg(a.n);
            cmds.push(c);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for k in &keys {
            let mut e = redis::cmd("EXPIRE");
            e.arg(k).arg(ttl);
            cmds.push(e);
        }
        let replies = self.conn.with(|c| {
            c.pipeline(cmds)
                .map_err(|e| RedisFilterError::from_redis(e, true))
        })?;
        let mut out = Vec::with_capacity(asks.len());
        for (i, a) in asks.iter().enumerate() {
            let v = match replies.get(base + i) {
                Some(Value::Int(v)) => *v,
                other => {
                    self.conn.reset();
                    return Err(RedisFilterError::Params(format!(
                        "HINCRBY of a budget counter answered {other:?}"
                    )));
                }
            };
            out.push(decide(self.limit, a.n, v));
        }
        Ok(out)
    }

    /// Send the queued corrections now (the gate is idle, or stopping). On an error they are
    /// dropped, not retried: a correction whose reply was lost may have run, and running it twice
    /// would let more than the budget through; a counter left high only makes the host's
    /// budget smaller for the rest of its window.
    pub fn flush(&mut self) -> Result<(), RedisFilterError> {
        if self.corrections.is_empty() {
            return Ok(());
        }
        let ttl = (self.window.as_secs().max(1) * 2) as i64;
        let mut cmds = Vec::new();
        let mut keys: Vec<String> = Vec::new();
        for (k, h, n) in std::mem::take(&mut self.corrections) {
            let mut c = redis::cmd("HINCRBY");
            c.arg(&k).arg(h).arg(-(n as i64));
            cmds.push(c);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for k in keys {
            let mut e = redis::cmd("EXPIRE");
            e.arg(k).arg(ttl);
            cmds.push(e);
        }
        self.conn.with(|c| {
            c.pipeline(cmds)
                .map_err(|e| RedisFilterError::from_redis(e, true))
        })?;
        Ok(())
    }

    /// `n` of `ask`'s URLs (of the last [`Budget::grant`]) were not published after all: take
    /// them back out of its window's count with the next exchange.
    pub fn correct(&mut self, ask: &Ask, n: u64) {
        if n > 0 {
            let k = key(&ask.ns, self.window_now);
            self.corrections.push((k, ask.host.clone(), n));
        }
    }
}

/// `n` new URLs were counted into a counter that then read `v`: how many fit in `limit`.
fn decide(limit: u64, n: u64, v: i64) -> Granted {
    let before = (v - n as i64).max(0) as u64;
    let admitted = limit.saturating_sub(before).min(n);
    Granted {
        admitted,
        reached: before < limit && before + n >= limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_orders_the_gates() {
        // Budget 10: a first batch of 6, then two gates' batches of 3 and 5 in Redis's order.
        assert_eq!(decide(10, 6, 6).admitted, 6);
        assert_eq!(decide(10, 3, 9).admitted, 3);
        let third = decide(10, 5, 14);
        assert_eq!(third.admitted, 1);
        assert!(third.reached);
        let after = decide(10, 4, 18);
        assert_eq!(after.admitted, 0);
        assert!(!after.reached);
        assert!(decide(10, 4, 10).reached, "exactly at the budget");
        assert_eq!(decide(0, 4, 4).admitted, 0);
        // A counter that was corrected below this batch's own count (an expired key, a
        // correction racing) admits all that fits.
        assert_eq!(decide(10, 4, 2).admitted, 4);
    }

    #[test]
    fn windows_are_aligned_to_the_epoch() {
        let day = Duration::from_secs(86_400);
        let t = UNIX_EPOCH + Duration::from_secs(86_400 * 3 + 5);
        assert_eq!(window_index(t, day), 3);
        assert_eq!(window_index(t, Duration::ZERO), 86_400 * 3 + 5);
        assert_eq!(key("ns", 3), "cs:budget:{ns}:3");
    }
}
