//! The URL decision, one home for the three drivers (the Kafka gate, the HTTP filter API and
//! `dedup`): pure and synchronous, no I/O.
//!
//! A driver feeds it what the sieve said of each candidate (rejected with a reason, or a
//! fingerprint in a group — the gate's and the API's namespace; `dedup` has one), what the
//! pattern verdicts skip, and which candidates cannot be published (the gate: a fetch event
//! over the output limit). It answers the **lookups** the filter must make — per group, the
//! publishable candidates in input order — and, once the filter answered them, each
//! candidate's [`Verdict`].
//!
//! The filter's contract ([`crate::bloom::CheckAndSet`], and every protocol of
//! [`crate::redis_filter::RedisFilter`]): within one call a fingerprint is answered new at most
//! once, at its first occurrence. So the first publishable occurrence of a new URL is new and
//! every other occurrence a duplicate, without a set of its own here. What the filter does with
//! a lookup (check-and-set, take into an outbox, claim, or only check) is the driver's choice;
//! the decision is the same.

use crate::url::Reason;

/// A batch's candidates as the policy reads them, indexed like its [`Decision`].
pub trait Candidates {
    /// Candidate `j`'s canonical URL.
    fn url(&self, j: usize) -> &str;
    /// Its namespace: an index the driver gave the crawl policy (`gate::policy::Policy::attach`).
    fn ns(&self, j: usize) -> usize;
    /// Compute its URL pattern ([`crate::url::pattern::pattern`]) unless it was: kept for
    /// [`Candidates::pattern`] (the gate reuses it in the fetch event).
    fn compute_pattern(&mut self, j: usize);
    /// Its URL pattern, once computed.
    fn pattern(&self, j: usize) -> &str;
    /// The `Crawl-delay` of the robots.txt group that allowed it.
    fn set_crawl_delay(&mut self, _j: usize, _delay: Option<f64>) {}
    /// The page or script it was found in, when known (the fetch outcomes' source key).
    fn source(&self, _j: usize) -> Option<&str> {
        None
    }
    /// Where in its source it was found, when known.
    fn context(&self, _j: usize) -> Option<crate::url::Context> {
        None
    }
    /// Whether it was written as a module path (`./x.js`; [`crate::outcomes::module_path`]):
    /// never held for fetch misses.
    fn module_path(&self, _j: usize) -> bool {
        false
    }
    /// Its URL event, naming its namespace `ns`, for a driver that keeps the candidates fetch
    /// outcomes hold and can put them back on its input (the Kafka gate; [`crate::outcomes`]);
    /// none: nothing is kept.
    fn held_event(&self, _j: usize, _ns: &str) -> Option<Vec<u8>> {
        None
    }
}

/// One candidate's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// New: deliver it.
    New,
    /// Seen before, or earlier in the batch.
    Duplicate,
    /// Junk, out of scope, a pattern verified similar, or not publishable.
    Rejected(Reason),
    /// Not publishable (over the output limit): the driver dead-letters it.
    Unpublishable,
    /// Held for robots.txt (its origin's rules are not known yet, or its server fails): not
    /// marked seen; the gate puts it back on its input later, the API and `dedup` say so.
    Held,
}

impl Verdict {
    /// The verdict's word in `dedup`'s and `check`'s output contract (`keep`, `duplicate`,
    /// `reject`, `held`; the gate's `unpublishable` never reaches a line output).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::New => "keep",
            Verdict::Duplicate => "duplicate",
            Verdict::Rejected(_) => "reject",
            Verdict::Unpublishable => "unpublishable",
            Verdict::Held => "held",
        }
    }

    /// The reason code of a rejection.
    pub fn reason(self) -> Option<Reason> {
        match self {
            Verdict::Rejected(r) => Some(r),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Rejected(Reason),
    Unpublishable,
    Held,
    /// Passed the sieve; not looked up (yet).
    Candidate,
    /// Passed the sieve; waits for something the driver must learn first (the gate: its
    /// origin's robots.txt) before it may be looked up.
    Deferred,
    /// Looked up: the filter's answer decides.
    Lookup,
    New,
}

#[derive(Debug, Clone, Copy)]
struct Item {
    group: u32,
    fp: u128,
    state: State,
}

/// The decision of one batch; reuse it across batches.
#[derive(Debug, Default)]
pub struct Decision {
    items: Vec<Item>,
    /// The items of the last [`Decision::lookups`] call, in order.
    asked: Vec<usize>,
    /// Their fingerprints.
    fps: Vec<u128>,
}

impl Decision {
    /// Empty it for the next batch.
    pub fn clear(&mut self) {
        self.items.clear();
        self.asked.clear();
        self.fps.clear();
    }

    /// The next candidate was rejected by the sieve; returns its index.
    pub fn reject(&mut self, reason: Reason) -> usize {
        self.items.push(Item {
            group: 0,
            fp: 0,
            state: State::Rejected(reason),
        });
        self.items.len() - 1
    }

    /// The next candidate passed the sieve with fingerprint `fp` in `group`; returns its index.
    pub fn candidate(&mut self, group: u32, fp: u128) -> usize {
        self.items.push(Item {
            group,
            fp,
            state: State::Candidate,
        });
        self.items.len() - 1
    }

    /// Candidate `i` is rejected after all (its URL pattern was verified similar; out of scope).
    pub fn reject_at(&mut self, i: usize, reason: Reason) {
        self.items[i].state = State::Rejected(reason);
    }

    /// Candidate `i` cannot be published (the next occurrence of its URL is looked up instead).
    pub fn unpublishable(&mut self, i: usize) {
        self.items[i].state = State::Unpublishable;
    }

    /// Candidate `i` is held (robots.txt): never looked up in this batch.
    pub fn hold(&mut self, i: usize) {
        self.items[i].state = State::Held;
    }

    /// Candidate `i`'s group (the namespace index the driver gave it).
    pub fn group(&self, i: usize) -> u32 {
        self.items[i].group
    }

    /// Candidate `i` waits (not looked up until [`Decision::undefer`]; the driver must then
    /// undefer, reject or mark it unpublishable before the verdicts are read).
    pub fn defer(&mut self, i: usize) {
        if self.items[i].state == State::Candidate {
            self.items[i].state = State::Deferred;
        }
    }

    /// Deferred candidate `i` may be looked up now.
    pub fn undefer(&mut self, i: usize) {
        if self.items[i].state == State::Deferred {
            self.items[i].state = State::Candidate;
        }
    }

    /// Whether candidate `i` passed the sieve and nothing rejected it since (not looked up yet).
    pub fn is_candidate(&self, i: usize) -> bool {
        self.items[i].state == State::Candidate
    }

    /// Number of candidates.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The lookups `group` needs: its publishable candidates (indices), in input order; their
    /// fingerprints are [`Decision::lookup_fps`]. Answer them with [`Decision::answer`].
    pub fn lookups(&mut self, group: u32) -> &[usize] {
        self.asked.clear();
        self.fps.clear();
        for (i, it) in self.items.iter_mut().enumerate() {
            if it.group == group && it.state == State::Candidate {
                it.state = State::Lookup;
                self.asked.push(i);
                self.fps.push(it.fp);
            }
        }
        &self.asked
    }

    /// The candidates of the last [`Decision::lookups`] call.
    pub fn looked_up(&self) -> &[usize] {
        &self.asked
    }

    /// The fingerprints of the last [`Decision::lookups`] call.
    pub fn lookup_fps(&self) -> &[u128] {
        &self.fps
    }

    /// Candidate `i`'s fingerprint.
    pub fn fp(&self, i: usize) -> u128 {
        self.items[i].fp
    }

    /// The filter's answers to the last [`Decision::lookups`] call: `news[k]` for its `k`-th
    /// candidate.
    pub fn answer(&mut self, news: &[bool]) {
        let asked = std::mem::take(&mut self.asked);
        self.answer_for(&asked, news);
        self.asked = asked;
    }

    /// The filter's answers to an earlier [`Decision::lookups`] call (several may be in
    /// flight): `news[k]` for `asked[k]`.
    pub fn answer_for(&mut self, asked: &[usize], news: &[bool]) {
        for (&i, &n) in asked.iter().zip(news) {
            if n && self.items[i].state == State::Lookup {
                self.items[i].state = State::New;
            }
        }
    }

    /// Candidate `i`'s verdict (after the lookups were answered; a candidate of a group never
    /// looked up is a duplicate).
    pub fn verdict(&self, i: usize) -> Verdict {
        match self.items[i].state {
            State::Rejected(r) => Verdict::Rejected(r),
            State::Unpublishable => Verdict::Unpublishable,
            State::Held => Verdict::Held,
            State::New => Verdict::New,
            State::Candidate | State::Lookup => Verdict::Duplicate,
            // Never left waiting (a driver bug): not published, and not counted a duplicate.
            State::Deferred => {
                debug_assert!(false, "candidate {i} left deferred");
                Verdict::Unpublishable
            }
        }
    }

    /// The new candidates, in order.
    pub fn news(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.items.len()).filter(|&i| self.items[i].state == State::New)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publishable_candidates_are_looked_up_per_group_in_order() {
        let mut d = Decision::default();
        let a = d.candidate(0, 1);
        let _r = d.reject(Reason::InvalidUrl);
        let a2 = d.candidate(0, 1);
        let b = d.candidate(0, 2);
        let b2 = d.candidate(0, 2);
        let other_group = d.candidate(1, 1);
        d.unpublishable(b);
        assert_eq!(d.lookups(0), [a, a2, b2]);
        assert_eq!(d.lookup_fps(), [1, 1, 2]);
        // A filter answers a fingerprint new once per call, at its first occurrence.
        d.answer(&[true, false, false]);
        assert_eq!(d.lookups(1), [other_group]);
        d.answer(&[true]);
        let v: Vec<Verdict> = (0..d.len()).map(|i| d.verdict(i)).collect();
        assert_eq!(
            v,
            [
                Verdict::New,
                Verdict::Rejected(Reason::InvalidUrl),
                Verdict::Duplicate,
                Verdict::Unpublishable,
                Verdict::Duplicate,
                Verdict::New,
            ]
        );
        assert_eq!(d.news().collect::<Vec<_>>(), [a, other_group]);
        d.clear();
        assert!(d.is_empty());
    }

    #[test]
    fn a_rejected_candidate_is_never_looked_up() {
        let mut d = Decision::default();
        let a = d.candidate(0, 7);
        let a2 = d.candidate(0, 7);
        d.reject_at(a, Reason::PatternSimilar);
        assert_eq!(d.lookups(0), [a2], "the next occurrence stands in");
        d.answer(&[true]);
        assert_eq!(d.lookups(0), [] as [usize; 0], "looked up once");
        assert_eq!(d.verdict(a), Verdict::Rejected(Reason::PatternSimilar));
        assert_eq!(d.verdict(a2), Verdict::New);
    }
}
