//! `dedup --redis`: the line job's driver of the shared filter's outbox protocol
//! (`redis_filter/outbox.rs`).
//!
//! Each batch's URLs that the local tier cannot answer are written to this client's outbox and
//! check-and-set in Redis in one pipeline; the answers come back in order; each batch is written
//! out and flushed, and only then is its outbox entry cleared. A crash or a Redis fault at any
//! point therefore repeats URLs (another client, or the next run, adopts the entry once this
//! client's lease expires, and writes its URLs) and never drops one; docs/redis-filter.md has
//! the fault table. Nothing here waits on another process: a URL another client has just taken
//! is "seen", and that client delivers it.

use std::collections::VecDeque;
use std::io::Write;
use std::time::Duration;

use anyhow::{Context, Result};

use super::lines::Emitter;
use crate::gate::policy::Policy;
use crate::input::Line;
use crate::redis_filter::{with_retry, Adopted, Payload, RedisFilter, RedisFilterError};
use crate::sieve::{BatchResult, Verdict};

/// Batches `dedup` keeps in flight to Redis: classification of the next batches overlaps Redis'
/// work on the earlier ones.
const REDIS_DEPTH: usize = 4;

/// The crawl policy of `dedup --redis` ([`crate::gate::policy`]): the namespace's name (index
/// 0), how long to wait for a site's robots.txt.
pub(super) struct DedupPolicy {
    pub(super) policy: Policy,
    pub(super) names: [String; 1],
    pub(super) robots_wait: Duration,
}

/// Batches in flight, answered in order, emitted in order.
pub(super) struct RedisPipe<'a> {
    f: &'a mut RedisFilter,
    budget: Duration,
    quiet: bool,
    policy: Option<DedupPolicy>,
    queue: VecDeque<(BatchResult, Vec<Line>)>,
    pub(super) pool: Vec<(BatchResult, Vec<Line>)>,
    news: Vec<bool>,
}

impl<'a> RedisPipe<'a> {
    pub(super) fn new(
        f: &'a mut RedisFilter,
        budget: Duration,
        quiet: bool,
        policy: Option<DedupPolicy>,
    ) -> RedisPipe<'a> {
        RedisPipe {
            f,
            budget,
            quiet,
            policy,
            queue: VecDeque::new(),
            pool: Vec::new(),
            news: Vec::new(),
        }
    }

    fn submit(f: &mut RedisFilter, res: &BatchResult) -> Result<(), RedisFilterError> {
        f.take_submit(res.fps(), |j, b| {
            b.extend_from_slice(res.passed(j).as_bytes())
        })
    }

    pub(super) fn push(
        &mut self,
        mut res: BatchResult,
        lines: Vec<Line>,
        em: &mut Emitter,
    ) -> Result<()> {
        self.before_filter(&mut res)?;
        res.seal();
        self.queue.push_back((res, lines));
        let res = &self.queue.back().expect("just pushed").0;
        if let Err(e) = Self::submit(self.f, res) {
            self.recover(e)?;
        }
        // The budget takes a host's surplus back out of the filter, which needs no take in
        // flight: one batch at a time then.
        let budget = self
            .policy
            .as_ref()
            .is_some_and(|p| p.policy.parts().budget);
        self.drain_to(if budget { 0 } else { REDIS_DEPTH }, em)
    }

    /// The namespace's learned parameter rules, read again where due (none without the
    /// policy, or when there are none): the sieve applies them.
    pub(super) fn learned(&mut self) -> Option<std::sync::Arc<crate::url::LearnedRules>> {
        let p = self.policy.as_mut()?;
        p.policy.refresh_learned(&p.names);
        let l = p.policy.learned_rules(0);
        (!l.is_empty()).then(|| l.clone())
    }

    /// The crawl policy before the filter (robots.txt, pattern verdicts), as the gate and the
    /// API apply it; a URL this client's tier knows as seen is a duplicate, not judged.
    fn before_filter(&mut self, res: &mut BatchResult) -> Result<()> {
        let Some(p) = self.policy.as_mut() else {
            return Ok(());
        };
        let report = {
            let (quiet, at) = (self.quiet, self.f.address());
            move |e: &RedisFilterError, wait: Duration| {
                if !quiet {
                    eprintln!("crawlsieve: Redis at {at}: {e}; retrying in {wait:.1?}");
                }
            }
        };
        let f = &*self.f;
        let (d, c) = res.parts();
        let budget = self.budget;
        // Each step that talks to Redis within the run's retry budget.
        p.policy
            .before_filter(
                d,
                c,
                (&p.names, p.robots_wait),
                |fp| f.known_seen(fp),
                |step| with_retry(budget, &report, step),
            )
            .context(UNSETTLED)?;
        Ok(())
    }

    /// Complete every batch in flight (the input is quiet): its lines are written and flushed,
    /// then the delivered entries cleared from the outbox (found by review: a run stopped while
    /// its input was quiet, the usual end of `tail -f | crawlsieve dedup`, left them there,
    /// and the next run adopted and wrote those URLs again).
    pub(super) fn drain(&mut self, em: &mut Emitter) -> Result<()> {
        self.drain_to(0, em)?;
        em.out.flush().context("writing the output")?;
        let report = self.reporter();
        let f = &mut *self.f;
        with_retry(self.budget, report, || f.take_settle()).context(UNSETTLED)
    }

    /// Complete batches until at most `keep` are in flight: emit each, flush the output, then
    /// clear its outbox entry (with the next exchange).
    fn drain_to(&mut self, keep: usize, em: &mut Emitter) -> Result<()> {
        while self.queue.len() > keep {
            match self.f.take_complete(&mut self.news) {
                Ok(ticket) => {
                    let (mut res, lines) = self.queue.pop_front().expect("in flight");
                    res.apply(&self.news);
                    if let Some(p) = self.policy.as_mut() {
                        // The per-host budget (only one batch is in flight with it on).
                        let f = &mut *self.f;
                        let (d, c) = res.parts();
                        p.policy.budget(d, c, &p.names, |_, fps| f.untake(fps));
                    }
                    em.emit(&res, &lines)?;
                    em.out.flush().context("writing the output")?;
                    self.f.delivered(ticket);
                    self.pool.push((res, lines));
                }
                Err(e) => self.recover(e)?,
            }
        }
        Ok(())
    }

    /// After a failure: forget what is in flight and resubmit every queued batch, in order,
    /// with backoff. A URL whose insert ran but whose reply was lost is answered new on the
    /// retry (in doubt), so nothing is lost.
    fn recover(&mut self, first: RedisFilterError) -> Result<()> {
        if !first.is_retryable() {
            return Err(first).context("the Redis filter failed");
        }
        let report = self.reporter();
        report(&first, Duration::ZERO);
        let (f, queue) = (&mut *self.f, &self.queue);
        with_retry(self.budget, report, || {
            f.take_abandon();
            for (res, _) in queue {
                Self::submit(f, res)?;
            }
            Ok(())
        })
        .context(UNSETTLED)
    }

    /// Deliver the entries of clients whose lease expired (a killed run's URLs): at the start
    /// of a run, and again at its end.
    pub(super) fn adopt(&mut self, em: &mut Emitter) -> Result<()> {
        let report = self.reporter();
        let f = &mut *self.f;
        let got = with_retry(self.budget, report, || f.adopt_expired()).context(UNSETTLED)?;
        self.deliver_adopted(got, em)
    }

    fn deliver_adopted(&mut self, got: Vec<Adopted>, em: &mut Emitter) -> Result<()> {
        if got.is_empty() {
            return Ok(());
        }
        for (_, payloads) in &got {
            // A gate's entry (same namespace) holds fetch events: their URL is written.
            for url in Payload::lines(payloads).filter_map(|p| p.url()) {
                em.sum.new += 1;
                em.sum.adopted += 1;
                em.format_line(url.as_bytes(), Verdict::New, Some(&url));
            }
        }
        em.write_out()?;
        em.out.flush().context("writing the output")?;
        for (t, _) in got {
            self.f.delivered(t);
        }
        Ok(())
    }

    /// At the end: complete what is in flight; wait for the entries other clients hold (a URL
    /// answered "seen" here may be in one: a run killed just before this one started),
    /// delivering those whose holder's lease expires; clear every entry; give the lease up.
    pub(super) fn finish(&mut self, em: &mut Emitter) -> Result<()> {
        self.drain_to(0, em)?;
        let limit = self.f.lease_ttl() * 2 + Duration::from_secs(1);
        let report = self.reporter();
        let f = &mut *self.f;
        let (got, all) =
            with_retry(self.budget, report, || f.await_others(limit)).context(UNSETTLED)?;
        self.deliver_adopted(got, em)?;
        if !all && !self.quiet {
            eprintln!(
                "crawlsieve: another live client of the namespace still holds URLs it took; it \
                 writes them out itself"
            );
        }
        let report = self.reporter();
        let f = &mut *self.f;
        with_retry(self.budget, report, || f.take_settle()).context(UNSETTLED)?;
        f.leave().context(UNSETTLED)
    }

    /// What a retry says on stderr (nothing with `--quiet`), naming where Redis is.
    fn reporter(&self) -> impl Fn(&RedisFilterError, Duration) {
        let (quiet, at) = (self.quiet, self.f.address());
        move |e, wait| {
            if !quiet {
                eprintln!("crawlsieve: Redis at {at}: {e}; retrying in {wait:.1?}");
            }
        }
    }
}

/// What a `dedup` that gives up on Redis leaves behind.
const UNSETTLED: &str = "the Redis filter failed; every URL written so far was delivered, and \
    the URLs not yet written stay in this run's outbox in Redis: the next run on the namespace \
    writes them out (once --claim-ttl has passed since this one stopped; run the same input \
    again)";
