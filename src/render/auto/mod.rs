//! `render.mode = "auto"` (`similar --render auto`): fetch every page over HTTP, start Chromium
//! only where rendering could change the answer (docs/render.md, "When a page is rendered").
//!
//! Per page, in this order:
//! 1. the static fetch ([`super::http`], the browser's egress policy) failed, was refused, or is
//!    no HTML: that is the record — a refused URL never reaches the browser;
//! 2. the HTML shows a reason ([`crate::page::dynamic::Signals::needs_browser`]: an empty
//!    framework root, little text beside scripts, a state block, a `<noscript>` notice, a meta or
//!    script redirect) or the status is one bot defences answer with (401, 403, 429, 503):
//!    rendered;
//! 3. otherwise [`Learned::plan`] decides from what rendering samples taught: the page's URL
//!    pattern, its section (origin and first path segment) and its host each keep how many
//!    rendered checks agreed with the static features ([`agree`]) and how many differed.
//!
//! The policy ([`Learned::plan`]):
//! * a URL pattern one of whose pages differed when rendered is rendered from then on;
//! * a section or host where at least a quarter of the checks differed is *mixed*: it lends no
//!   trust;
//! * trust is spoken by the most specific place that was checked: the pattern's agreeing checks
//!   (or more, lent by its section or host when they are not mixed), else its section's, else its
//!   host's; below [`WARMUP`] the page is rendered to learn (at most [`WARMUP`] such renders per
//!   host at a time; the others wait for their answers);
//! * with trust, the host's pages are rendered one in `interval` as checks, `interval` twice
//!   the trust, up to `check_one_in` (default 20, 5%): the share never reaches zero, so a site
//!   that starts writing its pages by script is noticed.
//!
//! A `<meta http-equiv="refresh">` that sends the reader on at once (delay 0) is followed over
//! HTTP as Chromium follows it (each hop through the same policy, at most five), so a site of
//! redirect stubs (a third of Rust's documentation files) is not rendered for them.
//!
//! Every rendered page with a static twin is also a check ([`Seer::see_all`]), whatever it was
//! rendered for; a cluster's canonical rendered for its picture stands for one scheduled check
//! of its host (a credit), so `similar` does not render both.
//!
//! `waves.rs` holds the steps of [`Seer::see_all_first`] in `auto`: the static fetches, then the
//! waves of renders.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::page::similarity::{compare, Thresholds};
use crate::page::Page;

use super::http::StaticFetch;
use super::{Rendered, Renderer};

mod waves;
use waves::Waves;

/// How pages are seen (`render.mode`, `similar --render`): defined with the configuration,
/// which the render layer builds on.
pub use crate::config::RenderMode as Mode;

/// Agreeing checks before a host, section or pattern is trusted to be seen over HTTP.
pub const WARMUP: u32 = 3;
/// The default `check_one_in`: with full trust, one page in 20 is still rendered.
pub const CHECK_ONE_IN: u32 = crate::config::DEFAULT_CHECK_ONE_IN;

/// Why a page was rendered (a fixed label set: metrics and reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// `render.mode = "always"`.
    Always,
    /// The HTML showed a reason
    /// ([`Signals::needs_browser`](crate::page::dynamic::Signals::needs_browser), or `challenge`
    /// for a 401, 403, 429 or 503 answer).
    Signal(&'static str),
    /// Its URL pattern's pages differed when rendered, or its section or host is mixed.
    Differs,
    /// Too little known of its pattern, section and host.
    Learning,
    /// A sampled check of a trusted pattern.
    Check,
    /// The canonical page of a cluster: rendered for its picture.
    Canonical,
}

impl Why {
    /// The label (`always`, `signal`, `differs`, `learning`, `check`, `canonical`).
    pub fn label(&self) -> &'static str {
        match self {
            Why::Always => "always",
            Why::Signal(_) => "signal",
            Why::Differs => "differs",
            Why::Learning => "learning",
            Why::Check => "check",
            Why::Canonical => "canonical",
        }
    }

    /// `signal:<reason>` for a signal, else the label.
    pub fn describe(&self) -> String {
        match self {
            Why::Signal(s) => format!("signal:{s}"),
            w => w.label().to_string(),
        }
    }
}

/// What [`Learned::plan`] says of a page without a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Its HTML is enough.
    Static,
    /// Render it.
    Render(Why),
    /// Enough renders of its host are under way to learn from: ask again after their answers.
    Wait,
}

#[derive(Debug, Clone, Copy, Default)]
struct Evidence {
    agreed: u32,
    differed: u32,
}

impl Evidence {
    fn mixed(&self) -> bool {
        self.differed > 0 && self.differed * 4 >= self.agreed + self.differed
    }
}

/// A host's check schedule.
#[derive(Debug, Default)]
struct HostState {
    /// Pages decided static since its last check.
    since: u32,
    /// Renders to learn from under way (the host's undecided pages wait for them).
    learning: u32,
    /// Renders compared with their static twins that the schedule did not ask for (a
    /// cluster's canonical): each stands for one scheduled check.
    credit: u32,
    /// Renders to learn from that failed (a browser that times out where HTTP is answered).
    failed: u32,
}

/// Most places remembered (patterns, sections, hosts); past it the least recently learned
/// half is forgotten (they are learned again, a few renders each).
const MAX_PLACES: usize = 200_000;

/// What rendering samples taught, per URL pattern, section and host (one worker's memory).
#[derive(Debug)]
pub struct Learned {
    check_one_in: u32,
    places: HashMap<String, (Evidence, u64)>,
    /// Per host: the check schedule and the renders under way.
    hosts: HashMap<String, HostState>,
    /// Sections (soft-404 scopes) with a page that needed the browser (a signal or a
    /// difference).
    browser_scopes: HashMap<String, u64>,
    tick: u64,
}

/// The three places a URL is learned under: its pattern, section and host.
fn places(url: &str) -> [String; 3] {
    let pattern = crate::url::pattern::pattern(url);
    let section = crate::page::soft404::scope_key(url);
    let host = crate::url::lex::origin(url).into_owned();
    [
        format!("p {pattern}"),
        format!("s {section}"),
        format!("h {host}"),
    ]
}

impl Learned {
    /// A policy that renders at least one trusted page in `check_one_in` (at least 1).
    pub fn new(check_one_in: u32) -> Learned {
        Learned {
            check_one_in: check_one_in.max(1),
            places: HashMap::new(),
            hosts: HashMap::new(),
            browser_scopes: HashMap::new(),
            tick: 0,
        }
    }

    fn evidence(&self, key: &str) -> Evidence {
        self.places.get(key).map(|e| e.0).unwrap_or_default()
    }

    /// Decide for a page of `url` whose HTML showed no reason; `max_learning` renders to learn
    /// from may be under way per host.
    pub fn plan(&mut self, url: &str, max_learning: u32) -> Plan {
        let [p, s, h] = places(url);
        let host = h[2..].to_string();
        let ep = self.evidence(&p);
        if ep.differed > 0 {
            return Plan::Render(Why::Differs);
        }
        let (es, eh) = (self.evidence(&s), self.evidence(&h));
        let lend = |e: Evidence| if e.mixed() { 0 } else { e.agreed };
        // The most specific place that has been checked speaks: the pattern (with what its
        // section and host lend), else its section, else its host.
        let trust = if ep.agreed > 0 {
            ep.agreed.max(lend(es)).max(lend(eh))
        } else if es.agreed + es.differed > 0 {
            lend(es)
        } else {
            lend(eh)
        };
        let hs = self.hosts.entry(host).or_default();
        // A host whose renders fail teaches nothing: after WARMUP failures its pages are seen
        // over HTTP with the checks of a barely trusted place, not rendered three at a time
        // in waves that each last a page budget.
        let trust = if trust < WARMUP && hs.failed >= WARMUP {
            WARMUP
        } else {
            trust
        };
        if trust >= WARMUP {
            let interval = (2 * trust).min(self.check_one_in).max(1);
            hs.since += 1;
            if hs.since >= interval {
                hs.since = 0;
                if hs.credit > 0 {
                    // A canonical's render already compared a page of this host.
                    hs.credit -= 1;
                    return Plan::Static;
                }
                return Plan::Render(Why::Check);
            }
            return Plan::Static;
        }
        if hs.learning >= max_learning.max(1) {
            return Plan::Wait;
        }
        hs.learning += 1;
        Plan::Render(Why::Learning)
    }

    /// A render of a page of `url` to learn from is under way (the host's other pages wait for
    /// it as for a [`Why::Learning`] render); [`Learned::learn`] with [`Why::Canonical`] ends it.
    pub fn begin(&mut self, url: &str) {
        let host = crate::url::lex::origin(url).into_owned();
        self.hosts.entry(host).or_default().learning += 1;
    }

    /// A page of `url`'s section needed the browser by its HTML: the section's soft-404 probes
    /// are rendered.
    pub fn note_signal(&mut self, url: &str) {
        self.tick += 1;
        self.browser_scopes
            .insert(crate::page::soft404::scope_key(url), self.tick);
    }

    /// Whether `url`'s section (origin and first path segment, the soft-404 probe's scope)
    /// has shown a page that needed the browser (a signal, or a rendered check that differed):
    /// its soft-404 probes are rendered too.
    pub fn needs_browser(&self, url: &str) -> bool {
        self.browser_scopes
            .contains_key(&crate::page::soft404::scope_key(url))
    }

    /// What a render of `url` (planned for `why`) taught: `agreed` when its static and rendered
    /// features tell the same page, `None` when it could not be compared (a failure).
    pub fn learn(&mut self, url: &str, why: Why, agreed: Option<bool>) {
        let [p, s, h] = places(url);
        if matches!(why, Why::Learning | Why::Canonical) {
            if let Some(hs) = self.hosts.get_mut(&h[2..]) {
                hs.learning = hs.learning.saturating_sub(1);
                if why == Why::Canonical && agreed.is_some() {
                    hs.credit += 1;
                }
                if agreed.is_none() {
                    hs.failed += 1;
                }
            }
        }
        let Some(agreed) = agreed else { return };
        self.tick += 1;
        if !agreed {
            self.browser_scopes.insert(s[2..].to_string(), self.tick);
        }
        if self.places.len() >= MAX_PLACES {
            let mut ticks: Vec<u64> = self.places.values().map(|v| v.1).collect();
            ticks.sort_unstable();
            let cut = ticks[ticks.len() / 2];
            self.places.retain(|_, v| v.1 > cut);
            self.browser_scopes.retain(|_, t| *t > cut);
            self.hosts.retain(|_, h| h.learning > 0);
        }
        // A page rendered for a signal in its HTML is expected to differ: what it shows is
        // its pattern's, not evidence about its section's or host's other pages.
        let keys = if matches!(why, Why::Signal(_)) {
            vec![p]
        } else {
            vec![p, s, h]
        };
        for k in keys {
            let e = self.places.entry(k).or_default();
            if agreed {
                e.0.agreed += 1;
            } else {
                e.0.differed += 1;
            }
            e.1 = self.tick;
        }
    }

    /// Places remembered (for the log).
    pub fn len(&self) -> usize {
        self.places.len()
    }

    /// Whether nothing was learned yet.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }
}

/// Whether a page's static and rendered forms tell the same page: the same final URL, the same
/// rule class, and the duplicate decision of the clustering ([`Thresholds::default`]) without
/// the screenshot (the static side has none) — the rendered page would be clustered with its
/// static twin. Two pages with no main text at all are compared on structure alone.
pub fn agree(stat: &Page, rend: &Page) -> bool {
    let norm = |u: &str| {
        url::Url::parse(u).map_or_else(
            |_| u.to_string(),
            |mut u| {
                u.set_fragment(None);
                u.to_string()
            },
        )
    };
    if norm(&stat.final_url) != norm(&rend.final_url) || stat.status != rend.status {
        return false;
    }
    let rule = |p: &Page| {
        crate::page::rule_pages::page_rule(p.status, p.is_html(), &p.features).map(|r| r.code())
    };
    if rule(stat) != rule(rend) {
        return false;
    }
    let t = Thresholds::default();
    let (a, b) = (&stat.features, &rend.features);
    let sim = compare(a, b, &t);
    if a.text_chars == 0 && b.text_chars == 0 {
        return sim.structure >= t.structure;
    }
    sim.is_duplicate(&t)
}

/// One page as seen: the record, and why the browser was used (`None`: over HTTP only).
#[derive(Debug, Clone)]
pub struct Seen {
    /// The record ([`Rendered::rendered`] says which way).
    pub page: Rendered,
    /// Why it was rendered.
    pub why: Option<Why>,
    /// How long seeing it took (fetch and render).
    pub took: Duration,
}

/// Statuses bot defences answer a client without a browser with.
fn challenge(status: u16) -> bool {
    matches!(status, 401 | 403 | 429 | 503)
}

/// The browser, the static fetch, the mode and what was learned: how every page is seen.
pub struct Seer {
    /// The browser.
    pub renderer: Arc<Renderer>,
    /// `auto` or `always`.
    pub mode: Mode,
    fetch: StaticFetch,
    fetches: Arc<tokio::sync::Semaphore>,
    /// What the checks taught.
    pub learned: std::sync::Mutex<Learned>,
}

impl Seer {
    /// Pages are seen with `renderer` in `mode`; static fetches use the renderer's policy and
    /// limits and its browser's `User-Agent`, `fetches` at a time.
    pub fn new(renderer: Arc<Renderer>, mode: Mode, check_one_in: u32, fetches: usize) -> Seer {
        let cfg = renderer.config();
        let fetch = StaticFetch {
            policy: cfg.policy.clone(),
            lookup: crate::net::system_lookup(),
            limits: crate::net::GetLimits {
                timeout: cfg.page_timeout,
                max_bytes: cfg.max_html_bytes,
                max_redirects: super::http::MAX_REDIRECTS,
                user_agent: renderer.user_agent().to_string(),
                accept: super::http::BROWSER_ACCEPT,
            },
        };
        Seer {
            renderer,
            mode,
            fetch,
            fetches: Arc::new(tokio::sync::Semaphore::new(fetches.max(1))),
            learned: std::sync::Mutex::new(Learned::new(check_one_in)),
        }
    }

    fn learned(&self) -> std::sync::MutexGuard<'_, Learned> {
        self.learned.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fetch `url` over HTTP (the browser's policy); a refusal counts in the egress proxy's
    /// refusals.
    pub async fn fetch(&self, url: &str) -> Rendered {
        let _permit = self.fetches.acquire().await.expect("semaphore open");
        let r = self.fetch.fetch(url).await;
        if r.failure_kind() == Some("refused") {
            self.renderer
                .egress()
                .stats()
                .refused
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        r
    }

    /// [`Seer::fetch`], and a `<meta http-equiv="refresh">` with no delay followed over HTTP
    /// (at most five hops, each through the policy), as the browser would follow it: the final
    /// URL and page are the target's, the chain lists every URL asked.
    pub async fn fetch_following(&self, url: &str) -> Rendered {
        let mut r = self.fetch(url).await;
        for _ in 0..5 {
            let is_html = r.content_type.is_empty() || r.content_type.contains("html");
            if !r.error.is_empty() || !is_html || !(200..300).contains(&r.status) {
                break;
            }
            let Some((_, to)) = crate::page::dynamic::meta_refresh(&r.html, 0) else {
                break;
            };
            let Some(next) = url::Url::parse(&r.final_url)
                .ok()
                .and_then(|b| b.join(&to).ok())
                .map(|u| u.to_string())
            else {
                break;
            };
            if next == r.final_url {
                break;
            }
            let mut chain = if r.redirect_chain.is_empty() {
                vec![r.final_url.clone()]
            } else {
                r.redirect_chain.clone()
            };
            let mut t = self.fetch(&next).await;
            chain.extend(if t.redirect_chain.is_empty() {
                vec![t.final_url.clone()]
            } else {
                t.redirect_chain.clone()
            });
            t.url = url.to_string();
            t.redirect_chain = chain;
            if t.failure_kind() == Some("refused") {
                // Where the browser would be refused too: the record says so, and the stub is
                // not handed to the browser.
                t.error = format!("refused after a meta refresh: {}", t.error);
                t.html.clear();
                return t;
            }
            if !t.error.is_empty() {
                // The target could not be fetched: the browser would have tried; render the stub.
                return r;
            }
            r = t;
        }
        r
    }

    /// A soft-404 probe: rendered in `always`, and in `auto` when the pages of its section
    /// needed the browser; fetched over HTTP otherwise.
    pub async fn probe(&self, url: &str) -> Rendered {
        if self.mode == Mode::Always || self.learned().needs_browser(url) {
            self.renderer.render(url).await
        } else {
            self.fetch(url).await
        }
    }

    /// Render `urls` for `why` (the canonicals of clusters seen over HTTP), each compared with
    /// its static record in `statics` when given, and learned from.
    pub async fn render_for(
        self: &Arc<Self>,
        items: Vec<(String, Why, Option<Rendered>)>,
        tick: &(dyn Fn() + Send + Sync),
    ) -> Vec<Seen> {
        let mut meta = Vec::with_capacity(items.len());
        let tasks: Vec<_> = items
            .into_iter()
            .map(|(u, why, stat)| {
                let me = self.clone();
                meta.push((u.clone(), why, stat.clone()));
                tokio::spawn(async move {
                    let t = Instant::now();
                    let r = me.renderer.render(&u).await;
                    let took = t.elapsed();
                    (me.judge(&u, why, stat, r), took)
                })
            })
            .collect();
        let mut out = Vec::with_capacity(tasks.len());
        for (t, (url, why, stat)) in tasks.into_iter().zip(meta) {
            let (seen, took) = match t.await {
                Ok(x) => x,
                // The task itself failed (a panic): what it was to teach is given up, and the
                // page keeps its static record, or gets the error with its URL.
                Err(e) => {
                    self.learned().learn(&url, why, None);
                    let page = stat.unwrap_or_else(|| Rendered {
                        final_url: url.clone(),
                        url,
                        error: format!("the render task failed: {e}"),
                        ..Rendered::default()
                    });
                    (
                        Seen {
                            page,
                            why: None,
                            took: Duration::ZERO,
                        },
                        Duration::ZERO,
                    )
                }
            };
            tick();
            out.push(Seen {
                took: seen.took + took,
                ..seen
            });
        }
        out
    }

    /// Compare a render with its static twin, learn, and choose the record: the rendered page,
    /// or — when a render made only to check or learn failed — the static one (a page is not
    /// lost to a browser hiccup when its HTML was enough to see it).
    fn judge(&self, url: &str, why: Why, stat: Option<Rendered>, r: Rendered) -> Seen {
        let Some(stat) = stat else {
            return Seen {
                page: r,
                why: Some(why),
                took: Duration::ZERO,
            };
        };
        if !r.error.is_empty() {
            self.learned().learn(url, why, None);
            let keep_static = matches!(why, Why::Learning | Why::Check | Why::Canonical);
            return if keep_static {
                Seen {
                    page: stat,
                    why: None,
                    took: Duration::ZERO,
                }
            } else {
                Seen {
                    page: r,
                    why: Some(why),
                    took: Duration::ZERO,
                }
            };
        }
        let (sp, rp) = (stat.to_page(), r.to_page());
        let agreed = agree(&sp, &rp);
        if !agreed {
            let sim = compare(&sp.features, &rp.features, &Thresholds::default());
            tracing::debug!(
                url,
                why = why.describe(),
                content = sim.content,
                structure = sim.structure,
                text = sim.text,
                final_url = rp.final_url,
                "rendered page differs from its HTML"
            );
        }
        self.learned().learn(url, why, Some(agreed));
        Seen {
            page: r,
            why: Some(why),
            took: Duration::ZERO,
        }
    }

    /// See every URL of `urls` (results in the same order). `always`: render each. `auto`: fetch
    /// each over HTTP, render those the HTML or the policy asks for — in waves, so that what the
    /// first renders of a host teach decides for its other pages — and learn from every render.
    /// `tick` is called once per page done.
    pub async fn see_all(
        self: &Arc<Self>,
        urls: &[String],
        tick: &(dyn Fn() + Send + Sync),
    ) -> Vec<Seen> {
        self.see_all_first(urls, tick, &|_| Vec::new()).await
    }

    /// [`Seer::see_all`], with `first` choosing, from the static records, pages to render in
    /// the first wave as [`Why::Canonical`] (`similar`: the canonical pages of the clusters the
    /// static features form — they are rendered for their pictures anyway, and as the first
    /// checks they teach the policy before any page is decided). While they are under way, the
    /// pages of their hosts wait for what they teach.
    pub async fn see_all_first(
        self: &Arc<Self>,
        urls: &[String],
        tick: &(dyn Fn() + Send + Sync),
        first: &(dyn Fn(&[Rendered]) -> Vec<usize> + Send + Sync),
    ) -> Vec<Seen> {
        if self.mode == Mode::Always {
            let items = urls
                .iter()
                .map(|u| (u.clone(), Why::Always, None))
                .collect();
            return self.render_for(items, tick).await;
        }
        let t0 = Instant::now();
        let statics = self.fetch_all(urls).await;
        let fetch_took = t0.elapsed() / (urls.len().max(1) as u32);
        let mut run = Waves::new(urls, fetch_took);
        let later = run.sort_by_signals(self, &statics);
        run.take_first(self, &statics, first);
        run.keep_static(&statics, &later, tick);
        loop {
            run.plan(self, &statics, tick);
            if !run.render_wave(self, &statics, tick).await {
                break;
            }
        }
        run.finish(statics)
    }
}

#[cfg(test)]
mod tests;
