//! A batch through the gate, step by step, and the gate's [`Stage`] implementation.

use std::collections::HashMap;

use super::{GateCore, GatePending, GateStaged, Namespace, Pending};
use crate::decision::Verdict;
use crate::events::{
    now_rfc3339, DeadLetterCode, DecodeError, FetchEvent, FetchEventRef, UrlEvent,
};
use crate::redis_filter::{Payload, RedisFilter, RedisFilterError, Ticket};
use crate::stage::{Batch, Dest, Stage};

/// Messages per chunk of a batch (see `GateCore::judge`).
const CHUNK: usize = 256;

/// An upper bound of `p`'s fetch event's size: under the output limit, it fits without being
/// encoded to check. Strings re-encode no longer than they arrived and numbers may grow a
/// little (twice the input); the gate adds the canonical URL, its host and its pattern (a
/// pattern is at most five bytes per byte of the URL: `/1` → `/{int}`), and the field names.
fn fetch_event_bound(p: &Pending) -> usize {
    2 * p.raw_len + 2 * 7 * p.canonical.len() + 3 * 256
}

impl crate::decision::Candidates for [Pending] {
    fn url(&self, j: usize) -> &str {
        &self[j].canonical
    }

    fn ns(&self, j: usize) -> usize {
        self[j].ns
    }

    fn compute_pattern(&mut self, j: usize) {
        let p = &mut self[j];
        if p.pattern.is_empty() {
            p.pattern = crate::url::pattern::pattern(&p.canonical);
        }
    }

    fn pattern(&self, j: usize) -> &str {
        &self[j].pattern
    }

    fn set_crawl_delay(&mut self, j: usize, delay: Option<f64>) {
        self[j].crawl_delay = delay;
    }

    fn source(&self, j: usize) -> Option<&str> {
        self[j].event.source.as_deref()
    }

    fn context(&self, j: usize) -> Option<crate::url::Context> {
        self[j].event.context
    }

    fn module_path(&self, j: usize) -> bool {
        crate::outcomes::module_path(self[j].event.url.as_bytes())
    }

    fn held_event(&self, j: usize, ns: &str) -> Option<Vec<u8>> {
        // Its namespace written out: put back, it may be read by a gate whose default differs.
        let mut event = self[j].event.clone();
        event.namespace = Some(ns.to_string());
        Some(serde_json::to_vec(&event).expect("an event serializes"))
    }
}

/// Append `p`'s fetch event (JSON) to `enc` and note where it is.
fn encode(p: &mut Pending, namespace: &str, now: &str, enc: &mut Vec<u8>) {
    if p.pattern.is_empty() {
        p.pattern = crate::url::pattern::pattern(&p.canonical);
    }
    let host = crate::url::lex::host_port(&p.canonical);
    let mut fe = FetchEventRef::of(&p.event, &p.canonical, &p.pattern, host, namespace, now);
    fe.crawl_delay_s = p.crawl_delay;
    let s = enc.len();
    serde_json::to_writer(&mut *enc, &fe).expect("event types serialize");
    p.enc = Some((s, enc.len()));
}

/// Append `p`'s outbox line (without its newline): `HOST \t FETCH-EVENT-JSON`, the form
/// [`Payload::parse`] reads back. `p` was encoded.
fn push_payload(p: &Pending, enc: &[u8], buf: &mut Vec<u8>) {
    let (s, e) = p.enc.expect("encoded");
    buf.extend_from_slice(host_of(p).as_bytes());
    buf.push(b'\t');
    buf.extend_from_slice(&enc[s..e]);
}

/// Whether each of `pending` is known as seen by its namespace's local tier.
fn known_seen(
    namespaces: &HashMap<String, Namespace>,
    names: &[String],
    pending: &[Pending],
) -> Vec<bool> {
    let filters: Vec<&RedisFilter> = names.iter().map(|n| &namespaces[n].filter).collect();
    pending
        .iter()
        .map(|p| filters[p.ns].known_seen(p.fp))
        .collect()
}

/// The message key of `p`'s fetch event: its host.
fn host_of(p: &Pending) -> &str {
    crate::url::lex::host_port(&p.canonical)
}

impl GateCore {
    /// 1. Decode and sieve messages `range` of `batch` into `pending`; dead letters and
    ///    rejections are staged at once.
    fn decode(
        &mut self,
        pending: &mut Vec<Pending>,
        topic: &str,
        batch: &Batch,
        range: std::ops::Range<usize>,
        out: &mut GateStaged,
        now: &str,
    ) -> Result<(), RedisFilterError> {
        let max = self.cfg.kafka.max_message_bytes;
        let default_ns = self.cfg.redis.namespace.clone();
        for i in range {
            let ev = match UrlEvent::decode(batch.value(i), max) {
                Ok(ev) => ev,
                Err(e) => {
                    out.dead_letter(&e, topic, batch, i);
                    continue;
                }
            };
            let ns_name = ev.namespace.as_deref().unwrap_or(&default_ns);
            let ns = match self.namespace(ns_name)? {
                Ok(ns) => ns,
                Err(detail) => {
                    let e = DecodeError {
                        code: DeadLetterCode::NamespaceRefused,
                        detail,
                    };
                    out.dead_letter(&e, topic, batch, i);
                    continue;
                }
            };
            self.sieve.set_source(ev.source.as_deref());
            self.sieve.context = ev.context.unwrap_or_default();
            self.use_scope_of(ns);
            match self.sieve_url(&ev.url) {
                Err(reason) => self.reject(out, &ev, reason, now),
                Ok(canonical) => {
                    let fp = self.sieve.dedup_fingerprint();
                    self.decision.candidate(ns as u32, fp);
                    pending.push(Pending {
                        idx: i,
                        raw_len: batch.value(i).len(),
                        ns,
                        fp,
                        canonical,
                        pattern: String::new(),
                        event: ev,
                        enc: None,
                        crawl_delay: None,
                    });
                }
            }
        }
        Ok(())
    }

    /// 1b. robots.txt ([`super::super::policy::Policy::robots`]) on `pending[from..]`, but for the
    ///    URLs the filter's local tier knows as seen (duplicates whatever their origin says).
    ///    A URL of an origin this worker knows nothing fresh of is deferred to
    ///    [`GateCore::resolve_deferred`]; a held one is staged to the wait topic with the
    ///    batch ([`GateCore::stage_holds`]).
    fn robots_pass(&mut self, pending: &mut [Pending], from: usize) {
        let GateCore {
            policy,
            decision,
            namespaces,
            names,
            ..
        } = self;
        if !policy.parts().robots {
            return;
        }
        let seen = known_seen(namespaces, names, &pending[from..]);
        policy.robots(decision, pending, from, |j| seen[j - from]);
    }

    /// 4b. The candidates deferred for their origin's robots.txt: the records of their origins
    ///    (and of origins whose record went stale) read from Redis in one exchange for the whole
    ///    batch (a synchronous round trip per chunk halved the gate's rate), judged, and the
    ///    allowed ones looked up like a chunk.
    fn resolve_deferred(
        &mut self,
        pending: &mut [Pending],
        (topic, batch): (&str, &Batch),
        out: &mut GateStaged,
        now: &str,
        sent: &mut Vec<(usize, Vec<usize>)>,
    ) -> Result<(), RedisFilterError> {
        if self
            .policy
            .resolve_deferred(&mut self.decision, pending, None)?
        {
            self.look_up(pending, 0, (topic, batch), out, now, sent)?;
        }
        Ok(())
    }

    /// The batch's held candidates, staged to the robots wait topic (their input is committed
    /// only once Kafka has them; the mover puts them back when due).
    fn stage_holds(&self, pending: &[Pending], batch: &Batch, out: &mut GateStaged) {
        for h in self.policy.holds() {
            let p = &pending[h.j];
            let event = serde_json::to_vec(&p.event).expect("an event serializes");
            let origin = crate::url::lex::origin(&p.canonical);
            let origin = serde_json::to_string(&origin).expect("a string serializes");
            out.record_from(p.idx, Dest::Held, batch.key(p.idx), |b| {
                let head = format!(
                    "{{\"held_until_ms\":{},\"origin\":{origin},\"why\":\"{}\",\"event\":",
                    h.until_ms, h.why
                );
                b.extend_from_slice(head.as_bytes());
                b.extend_from_slice(&event);
                b.push(b'}');
            });
            if h.why == "unknown" {
                out.pending.held.0 += 1;
            } else {
                out.pending.held.1 += 1;
            }
        }
    }

    /// 2–4. The candidates of `pending[from..]` still to be looked up: pattern verdicts,
    ///    publishers, and each namespace's exchange sent (noted in `sent`). A chunk's step, and
    ///    the deferred candidates' once they were judged (only candidates are touched, so
    ///    `from = 0` there re-asks nothing).
    fn look_up(
        &mut self,
        pending: &mut [Pending],
        from: usize,
        (topic, batch): (&str, &Batch),
        out: &mut GateStaged,
        now: &str,
        sent: &mut Vec<(usize, Vec<usize>)>,
    ) -> Result<(), RedisFilterError> {
        self.skip_patterns(pending, from)?;
        self.choose_publishers(pending, from, (topic, batch), out, now);
        for ns in 0..self.names.len() {
            if let Some(idx) = self.submit(ns, pending, now)? {
                sent.push((ns, idx));
            }
        }
        Ok(())
    }

    /// 2. Pattern verdicts of `pending[from..]` ([`super::super::policy::Policy::patterns`]), every
    ///    namespace before any of it is taken. A URL the filter's local tier knows as seen is a
    ///    duplicate whatever its pattern: its pattern is not computed.
    fn skip_patterns(
        &mut self,
        pending: &mut [Pending],
        from: usize,
    ) -> Result<(), RedisFilterError> {
        let GateCore {
            policy,
            decision,
            namespaces,
            names,
            ..
        } = self;
        let parts = policy.parts();
        if !parts.patterns && !parts.outcomes {
            return Ok(());
        }
        let seen = known_seen(namespaces, names, &pending[from..]);
        policy.patterns(decision, pending, from, names, |j| seen[j - from])?;
        policy.outcomes(decision, pending, from, |j| seen[j - from])
    }

    /// 3. The publisher of each URL in `pending[from..]`: its first event of the batch whose
    ///    fetch event fits the output limit (one too large is dead-lettered, and the next
    ///    event of the URL is tried).
    fn choose_publishers(
        &mut self,
        pending: &mut [Pending],
        from: usize,
        (topic, batch): (&str, &Batch),
        out: &mut GateStaged,
        now: &str,
    ) {
        let limit = self.cfg.kafka.producer_max_bytes();
        for (j, p) in pending.iter_mut().enumerate().skip(from) {
            if !self.decision.is_candidate(j) || self.chosen.contains(&(p.ns, p.fp)) {
                continue;
            }
            if fetch_event_bound(p) > limit {
                encode(p, &self.names[p.ns], now, &mut self.enc);
                let (s, e) = p.enc.expect("just encoded");
                let size = host_of(p).len() + (e - s) + crate::stage::batch::RECORD_OVERHEAD;
                if size > limit {
                    self.decision.unpublishable(j);
                    let e = DecodeError {
                        code: DeadLetterCode::TooLarge,
                        detail: format!(
                            "its fetch event would be {size} bytes, over the output limit of {limit} (the producer's message.max.bytes)"
                        ),
                    };
                    out.dead_letter(&e, topic, batch, p.idx);
                    continue;
                }
            }
            self.chosen.insert((p.ns, p.fp));
        }
    }

    /// 4. Submit namespace `ns`'s lookups: their fetch events into the outbox and their
    ///    fingerprints check-and-set, in one pipeline sent without waiting for the replies.
    ///    Returns the candidates submitted (none: nothing to ask).
    fn submit(
        &mut self,
        ns: usize,
        pending: &mut [Pending],
        now: &str,
    ) -> Result<Option<Vec<usize>>, RedisFilterError> {
        let GateCore {
            names,
            namespaces,
            enc,
            decision,
            ..
        } = self;
        let idx = decision.lookups(ns as u32).to_vec();
        if idx.is_empty() {
            return Ok(None);
        }
        let name = &names[ns];
        let filter = &mut namespaces.get_mut(name).expect("attached").filter;
        let r = filter.take_submit(decision.lookup_fps(), |k, buf| {
            let p = &mut pending[idx[k]];
            if p.enc.is_none() {
                encode(p, name, now, enc);
            }
            push_payload(p, enc, buf);
        });
        match r {
            Ok(()) => Ok(Some(idx)),
            Err(e) => {
                let name = name.clone();
                Err(self.namespace_lost(&name, e))
            }
        }
    }

    /// 5. The answers of a submitted lookup, in submission order per namespace.
    fn complete(&mut self, ns: usize, idx: &[usize]) -> Result<Ticket, RedisFilterError> {
        let filter = &mut self
            .namespaces
            .get_mut(&self.names[ns])
            .expect("attached")
            .filter;
        let mut news = Vec::new();
        match filter.take_complete(&mut news) {
            Ok(ticket) => {
                self.decision.answer_for(idx, &news);
                Ok(ticket)
            }
            Err(e) => {
                let name = self.names[ns].clone();
                Err(self.namespace_lost(&name, e))
            }
        }
    }

    /// Judge the batch in chunks of [`CHUNK`] messages: each chunk's exchange with Redis is
    /// sent before the next chunk is decoded, so Redis works while this thread sieves (issue
    /// 24: the filter's round trip was a third of the gate's time). The answers are read once
    /// every chunk was sent.
    fn judge(
        &mut self,
        pending: &mut Vec<Pending>,
        (topic, batch): (&str, &Batch),
        out: &mut GateStaged,
        now: &str,
        tickets: &mut Vec<(usize, Ticket, Vec<usize>)>,
    ) -> Result<(), RedisFilterError> {
        self.refresh_learned();
        let mut sent: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut start = 0;
        while start < batch.len() {
            let end = (start + CHUNK).min(batch.len());
            let from = pending.len();
            self.decode(pending, topic, batch, start..end, out, now)?;
            let t = std::time::Instant::now();
            self.robots_pass(pending, from);
            self.look_up(pending, from, (topic, batch), out, now, &mut sent)?;
            self.metrics
                .filter_seconds
                .observe(t.elapsed().as_secs_f64());
            start = end;
        }
        self.resolve_deferred(pending, (topic, batch), out, now, &mut sent)?;
        self.adopt_due()?;
        let t = std::time::Instant::now();
        for (ns, idx) in sent {
            let ticket = self.complete(ns, &idx)?;
            tickets.push((ns, ticket, idx));
        }
        self.apply_budget(pending);
        self.metrics
            .filter_seconds
            .observe(t.elapsed().as_secs_f64());
        Ok(())
    }

    /// 5b. The per-host budget ([`super::super::policy::Policy::budget`]): a host's surplus is
    ///     rejected `host_budget` and taken back out of the filter.
    fn apply_budget(&mut self, pending: &[Pending]) {
        let GateCore {
            policy,
            decision,
            namespaces,
            names,
            ..
        } = self;
        policy.budget(decision, pending, names, |ns, fps| {
            let state = namespaces.get_mut(&names[ns]).expect("attached");
            state.filter.untake(fps)
        });
    }

    /// A stage that failed: every exchange that may have reached Redis is carried to the next
    /// batch whole, as an adopted entry (its field is never written again: a retry may hold
    /// other messages, after a rebalance), and what the completed ones answered new is carried
    /// too (their entries are in the outbox, and this gate's tier now answers them "seen", so
    /// the retry would not publish them). Repeats at worst.
    fn abandon(&mut self, pending: &[Pending], tickets: Vec<(usize, Ticket, Vec<usize>)>) {
        for (ns, name) in self.names.iter().enumerate() {
            let state = self.namespaces.get_mut(name).expect("attached");
            let sent = state.filter.take_abandon_carry();
            self.carry.extend(sent.into_iter().map(|a| (ns, a)));
        }
        for (ns, t, idx) in tickets {
            let mut lines = Vec::new();
            let news = idx
                .iter()
                .filter(|&&j| self.decision.verdict(j) == Verdict::New);
            let mut n = 0;
            for p in news.map(|&j| &pending[j]) {
                push_payload(p, &self.enc, &mut lines);
                lines.push(b'\n');
                n += 1;
            }
            // Published with the next batch without a budget count (over budget at worst).
            self.policy.unbudgeted(n);
            self.carry.push((ns, (t, lines)));
        }
    }

    /// Adopt the outboxes of gates whose lease expired: on a namespace's first batch, then
    /// every half lease.
    fn adopt_due(&mut self) -> Result<(), RedisFilterError> {
        for ns in 0..self.names.len() {
            if !self.adoption_due(ns) {
                continue;
            }
            let state = self.namespaces.get_mut(&self.names[ns]).expect("attached");
            let got = match state.filter.adopt_expired() {
                Ok(got) => got,
                Err(e) => {
                    let name = self.names[ns].clone();
                    return Err(self.namespace_lost(&name, e));
                }
            };
            if !got.is_empty() {
                tracing::warn!(
                    namespace = self.names[ns],
                    entries = got.len(),
                    "adopted the outbox of a gate whose lease expired: publishing its URLs"
                );
            }
            self.carry.extend(got.into_iter().map(|a| (ns, a)));
            self.adopted_at[ns] = Some(std::time::Instant::now());
        }
        Ok(())
    }

    /// Whether namespace `ns` is due to look for expired outboxes (its first batch, then every
    /// half lease).
    fn adoption_due(&self, ns: usize) -> bool {
        let state = &self.namespaces[&self.names[ns]];
        let every = state.filter.lease_ttl() / 2;
        self.adopted_at[ns].is_none_or(|t| t.elapsed() >= every)
    }

    /// 5. The records, in input order: skipped patterns are rejected, each new URL's publisher
    ///    becomes its fetch event, the other events are duplicates.
    fn emit(&mut self, pending: &[Pending], out: &mut GateStaged, now: &str) {
        for (j, p) in pending.iter().enumerate() {
            match self.decision.verdict(j) {
                // Dead-lettered, or staged to the wait topic ([`GateCore::stage_holds`]).
                Verdict::Unpublishable | Verdict::Held => {}
                Verdict::Rejected(r) => self.reject(out, &p.event, r, now),
                Verdict::New => {
                    let (s, e) = p.enc.expect("a new URL was encoded");
                    let json = &self.enc[s..e];
                    let key = host_of(p).as_bytes();
                    out.record_from(p.idx, Dest::Output, Some(key), |b| {
                        b.extend_from_slice(json)
                    });
                    out.emitted += 1;
                }
                Verdict::Duplicate => out.pending.duplicates += 1,
            }
        }
    }

    /// 6. The carried outbox entries' fetch events (a `dedup` client's entry holds bare URLs:
    ///    they get a fetch event of their own).
    fn emit_carried(&mut self, out: &mut GateStaged, now: &str) {
        for (ns, (ticket, lines)) in self.carry.drain(..) {
            for line in Payload::lines(&lines) {
                match line {
                    Payload::Event { key, json } => {
                        out.record(Dest::Output, Some(key), |b| b.extend_from_slice(json))
                    }
                    Payload::Url(u) => {
                        let url = String::from_utf8_lossy(u).into_owned();
                        let host = crate::url::lex::host_port(&url).to_string();
                        let fe = FetchEvent {
                            pattern: crate::url::pattern::pattern(&url),
                            original: url.clone(),
                            url,
                            host: host.clone(),
                            namespace: self.names[ns].clone(),
                            source: None,
                            context: None,
                            depth: None,
                            discovered_at: None,
                            crawl_id: None,
                            method: None,
                            metadata: None,
                            crawl_delay_s: None,
                            gated_at: now.to_string(),
                        };
                        out.json(Dest::Output, Some(host.as_bytes()), &fe);
                    }
                }
                out.emitted += 1;
                out.pending.adopted += 1;
            }
            out.pending.tickets.push((self.names[ns].clone(), ticket));
        }
    }
}

impl Stage for GateCore {
    type Error = RedisFilterError;
    type Pending = GatePending;

    fn stage(
        &mut self,
        topic: &str,
        batch: &Batch,
        out: &mut GateStaged,
    ) -> Result<(), RedisFilterError> {
        out.clear();
        self.pending.clear();
        self.decision.clear();
        self.policy.clear();
        self.enc.clear();
        out.consumed = batch.len() as u64;
        let now = now_rfc3339();
        self.chosen.clear();
        let mut pending = std::mem::take(&mut self.pending);
        let mut tickets = Vec::new();
        let r = self.judge(&mut pending, (topic, batch), out, &now, &mut tickets);
        if let Err(e) = r {
            self.abandon(&pending, tickets);
            self.pending = pending;
            return Err(e);
        }
        self.stage_holds(&pending, batch, out);
        self.emit(&pending, out, &now);
        self.emit_carried(out, &now);
        for (ns, t, _) in tickets {
            out.pending.tickets.push((self.names[ns].clone(), t));
        }
        pending.clear();
        self.pending = pending;
        Ok(())
    }

    /// Every record was delivered: the batch's outbox entries are cleared (with the next
    /// exchange, or when the gate is idle).
    fn finish(&mut self, out: &mut GateStaged) -> Result<(), RedisFilterError> {
        for (ns, t) in std::mem::take(&mut out.pending.tickets) {
            if let Some(state) = self.namespaces.get_mut(&ns) {
                state.filter.delivered(t);
            }
        }
        Ok(())
    }

    /// Carried entries to publish, or a namespace due to look for expired outboxes: an idle
    /// gate stages an empty batch for them (a dead gate's fetch events do not wait for input).
    fn wants_batch(&mut self) -> bool {
        !self.carry.is_empty() || (0..self.names.len()).any(|ns| self.adoption_due(ns))
    }

    fn idle(&mut self) -> Result<(), RedisFilterError> {
        for state in self.namespaces.values_mut() {
            state.filter.take_settle()?;
        }
        self.policy.idle()
    }

    fn account(&self, out: &GateStaged) {
        for (r, n) in &out.pending.rejected {
            self.metrics
                .rejected
                .with_label_values(&[r.code()])
                .inc_by(*n);
        }
        self.metrics.duplicates.inc_by(out.pending.duplicates);
        let (unknown, unavailable) = out.pending.held;
        if unknown + unavailable > 0 {
            let h = &self.metrics.robots_held;
            h.with_label_values(&["unknown"]).inc_by(unknown);
            h.with_label_values(&["unavailable"]).inc_by(unavailable);
        }
    }
}
