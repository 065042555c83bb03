//! The steps of [`Seer::see_all_first`] in `auto`: the static fetches, the first wave (pages whose
//! HTML asks for the browser, and the chosen canonicals), then waves of renders planned by what
//! the earlier ones taught.

use std::sync::Arc;
use std::time::Duration;

use crate::page::dynamic::Signals;

use super::super::Rendered;
use super::{challenge, Plan, Seen, Seer, Why, WARMUP};

impl Seer {
    /// Fetch every URL of `urls` over HTTP, concurrently (results in the same order); a failed
    /// task gives a record with the error.
    pub(super) async fn fetch_all(self: &Arc<Self>, urls: &[String]) -> Vec<Rendered> {
        let tasks: Vec<_> = urls
            .iter()
            .map(|u| {
                let (me, u) = (self.clone(), u.clone());
                tokio::spawn(async move { me.fetch_following(&u).await })
            })
            .collect();
        let mut statics = Vec::with_capacity(urls.len());
        for (t, u) in tasks.into_iter().zip(urls) {
            statics.push(t.await.unwrap_or_else(|e| Rendered {
                url: u.clone(),
                final_url: u.clone(),
                error: format!("the fetch task failed: {e}"),
                ..Rendered::default()
            }));
        }
        statics
    }
}

/// One `auto` run of [`Seer::see_all_first`]: what each page became, the wave to render next and
/// the pages waiting for a plan.
pub(super) struct Waves<'a> {
    urls: &'a [String],
    fetch_took: Duration,
    out: Vec<Option<Seen>>,
    wave: Vec<(usize, Why)>,
    pending: Vec<usize>,
}

impl<'a> Waves<'a> {
    /// A run over `urls`, whose static fetches took `fetch_took` each.
    pub(super) fn new(urls: &'a [String], fetch_took: Duration) -> Self {
        Waves {
            urls,
            fetch_took,
            out: vec![None; urls.len()],
            wave: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Puts the HTML pages (and challenges) whose records ask for the browser in the first wave
    /// and the other HTML pages in `pending`; returns which pages go on past their static record.
    pub(super) fn sort_by_signals(&mut self, seer: &Seer, statics: &[Rendered]) -> Vec<bool> {
        let mut later = vec![false; self.urls.len()];
        let mut l = seer.learned();
        for (i, s) in statics.iter().enumerate() {
            let is_html = {
                let ct = s.content_type.as_str();
                ct.is_empty() || ct.contains("html")
            };
            if !s.error.is_empty() || (!is_html && !challenge(s.status)) {
                continue;
            }
            let reason = if challenge(s.status) {
                Some("challenge")
            } else {
                Signals::of(&s.html).needs_browser()
            };
            match reason {
                Some(r) => {
                    l.note_signal(&s.url);
                    self.wave.push((i, Why::Signal(r)));
                }
                None => self.pending.push(i),
            }
            later[i] = true;
        }
        later
    }

    /// Moves the pending pages `first` chooses into the first wave as [`Why::Canonical`].
    pub(super) fn take_first(
        &mut self,
        seer: &Seer,
        statics: &[Rendered],
        first: &(dyn Fn(&[Rendered]) -> Vec<usize> + Send + Sync),
    ) {
        let mut l = seer.learned();
        for i in first(statics) {
            if let Some(k) = self.pending.iter().position(|&p| p == i) {
                self.pending.swap_remove(k);
                l.begin(&self.urls[i]);
                self.wave.push((i, Why::Canonical));
            }
        }
        self.pending.sort_unstable();
    }

    /// Settles every page not going on (`later` false) with its static record.
    pub(super) fn keep_static(
        &mut self,
        statics: &[Rendered],
        later: &[bool],
        tick: &(dyn Fn() + Send + Sync),
    ) {
        for (i, s) in statics.iter().enumerate() {
            if !later[i] {
                self.out[i] = Some(Seen {
                    page: s.clone(),
                    why: None,
                    took: self.fetch_took,
                });
                tick();
            }
        }
    }

    /// Plans each pending page: settled with its static record, added to the wave, or left
    /// waiting.
    pub(super) fn plan(
        &mut self,
        seer: &Seer,
        statics: &[Rendered],
        tick: &(dyn Fn() + Send + Sync),
    ) {
        let max_learning = WARMUP;
        let mut l = seer.learned();
        let mut next = Vec::new();
        for i in self.pending.drain(..) {
            match l.plan(&self.urls[i], max_learning) {
                Plan::Static => {
                    self.out[i] = Some(Seen {
                        page: statics[i].clone(),
                        why: None,
                        took: self.fetch_took,
                    });
                    tick();
                }
                Plan::Render(w) => self.wave.push((i, w)),
                Plan::Wait => next.push(i),
            }
        }
        self.pending = next;
    }

    /// Renders the wave (or, when it is empty, every waiting page); false when there was nothing
    /// to render.
    pub(super) async fn render_wave(
        &mut self,
        seer: &Arc<Seer>,
        statics: &[Rendered],
        tick: &(dyn Fn() + Send + Sync),
    ) -> bool {
        if self.wave.is_empty() {
            // Nothing under way can answer the waiting pages (cannot happen: a page waits
            // only on renders of its host in this wave); render them rather than loop.
            self.wave
                .extend(self.pending.drain(..).map(|i| (i, Why::Learning)));
            if self.wave.is_empty() {
                return false;
            }
        }
        let items = self
            .wave
            .iter()
            .map(|&(i, w)| (self.urls[i].clone(), w, Some(statics[i].clone())))
            .collect();
        let seen = seer.render_for(items, tick).await;
        for ((i, _), mut s) in self.wave.drain(..).zip(seen) {
            s.took += self.fetch_took;
            self.out[i] = Some(s);
        }
        true
    }

    /// Every page's result: its render, or its static record.
    pub(super) fn finish(self, statics: Vec<Rendered>) -> Vec<Seen> {
        let fetch_took = self.fetch_took;
        self.out
            .into_iter()
            .zip(statics)
            .map(|(o, s)| {
                o.unwrap_or(Seen {
                    page: s,
                    why: None,
                    took: fetch_took,
                })
            })
            .collect()
    }
}
