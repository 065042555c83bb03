//! Rendering pages in headless Chromium (Debian's `chromium`, driven by chromiumoxide over the
//! DevTools protocol): one browser, a few tabs, a fresh profile directory per launch.
//!
//! Per page: check the URL against the [`safety::Policy`], navigate, wait until the page is
//! stable (the seed's rule, on events: loaded, and no DOM change nor completed resource for
//! [`SETTLE_QUIET`], at most [`RenderConfig::settle_max`]), then read the final URL, the redirect chain, the status,
//! the rendered HTML, the navigation timings, and a quarter-scale screenshot hashed two ways
//! (Gradient and Median-DCT; `image_hasher`'s Mean-DCT gives every white page one hash). A page
//! that fails or hangs becomes a [`Rendered`] with an error, never a stuck caller; a browser that
//! died is relaunched on the next page.
//!
//! * [`auto`] — `render.mode = "auto"`: fetch over HTTP, render where it could change the
//!   answer, learn from checks ([`auto::Seer`] sees pages for `similar` and the stage).
//! * [`http`] — the static fetch, through the same egress policy.
//! * [`egress`] — the forward proxy every browser connection goes through.
//! * [`safety`] — which addresses a page may reach.
//! * [`stage`] — the render stage's decision ([`stage::RenderStage`], a [`crate::stage::Stage`]):
//!   render, cluster, assign, feed URL-pattern verdicts back to the gate.
//! * [`soft404`] — probing a scope's answer to URLs that cannot exist, shared through Redis.
//! * [`thumb`] — thumbnails for the HTML report.
//! * [`metrics`] — its series.
//! * `drive.rs` — the steps of driving one page in a tab (redirect chain, response, settle wait,
//!   reading, screenshot).
//!
//! Owns: the browser and what a page may reach. May import `page`, `config`, `stage`,
//! `observe`, `events`, `pattern_verdicts`, `redis_filter`, `url`; never `gate`, `serve` or `cli`.

pub mod auto;
mod drive;
pub mod egress;
pub mod http;
pub mod metrics;
pub mod safety;
pub mod soft404;
pub mod stage;
pub mod thumb;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::browser::{
    SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, NavigateParams, Viewport,
};
use chromiumoxide::page::ScreenshotParams;
use futures::StreamExt;
use tokio::sync::{Mutex, Semaphore};

use crate::page::Timings;

/// Renderer settings.
#[derive(Debug, Clone)]
pub struct RenderConfig {
    /// The Chromium binary.
    pub chromium: PathBuf,
    /// Pages rendered at once (tabs); 2–4 saturate two cores.
    pub tabs: usize,
    /// The whole budget of one page (navigation, settling, reading, screenshot).
    pub page_timeout: Duration,
    /// The browser's timeout for one DevTools request (and so for the first response).
    pub request_timeout: Duration,
    /// Longest wait for a page to become stable after it loaded.
    pub settle_max: Duration,
    /// Viewport width and height (CSS pixels).
    pub viewport: (u32, u32),
    /// Rendered HTML larger than this is an error (bytes).
    pub max_html_bytes: usize,
    /// Requests a page may make besides its document; later ones fail (and the settle wait
    /// stops).
    pub max_subresources: usize,
    /// URL policy.
    pub policy: safety::Policy,
    /// Keep each screenshot as a report thumbnail ([`Rendered::thumbnail`]; `similar` does,
    /// the render stage does not).
    pub thumbnails: bool,
}

impl Default for RenderConfig {
    fn default() -> Self {
        RenderConfig {
            chromium: PathBuf::from("/usr/bin/chromium"),
            tabs: 2,
            page_timeout: Duration::from_secs(20),
            request_timeout: Duration::from_secs(10),
            settle_max: Duration::from_secs(10),
            viewport: (1280, 800),
            max_html_bytes: 10 << 20,
            max_subresources: 500,
            policy: safety::Policy::default(),
            thumbnails: false,
        }
    }
}

/// A rendered page (or the error that stopped it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// The URL asked for.
    pub url: String,
    /// The URL shown at the end.
    pub final_url: String,
    /// Redirects followed (the URLs requested, in order, ending with the final one).
    pub redirect_chain: Vec<String>,
    /// HTTP status of the main document (0 when none was received).
    pub status: u16,
    /// The egress proxy's own answer to the main document (`unreachable …`, `refused …`),
    /// empty when the site answered; [`Renderer::render`] turns it into the error.
    pub proxy_error: String,
    /// Content-Type (MIME type) of the main document.
    pub content_type: String,
    /// The rendered DOM, serialized.
    pub html: String,
    /// Navigation timings.
    pub timings: Option<Timings>,
    /// Gradient hash of the quarter-scale screenshot.
    pub phash: Option<u64>,
    /// Median-DCT hash of the same screenshot.
    pub phash_dct: Option<u64>,
    /// The screenshot as a report thumbnail (a `data:image/jpeg` URI,
    /// [`thumb::thumbnail`]).
    pub thumbnail: Option<String>,
    /// Requests the policy blocked (subresources, redirect hops), at most 20.
    pub blocked: Vec<String>,
    /// Empty on success.
    pub error: String,
    /// Whether Chromium produced this record (`false`: fetched over HTTP, no screenshot, no
    /// timings).
    pub rendered: bool,
}

impl Rendered {
    /// The page's features from its HTML, with what the record says beside them: the redirect
    /// chain, the screenshot hash and the timings (both `None` when it was not rendered). The
    /// caller sets what only it knows (`soft_404`).
    pub fn to_page(&self) -> crate::page::Page {
        let mut p = crate::page::Page::new(
            &self.url,
            &self.final_url,
            self.status,
            &self.content_type,
            &self.html,
        );
        p.redirect_chain = self.redirect_chain.clone();
        p.features.phash = self.phash;
        p.features.timings = self.timings;
        p
    }

    /// The kind of failure, a small fixed set for metrics: `refused` (the safety policy, before
    /// or after redirects), `timeout` (the page budget ran out), `navigation` (DNS, connection,
    /// TLS or HTTP-level failure of the main document), `unparsable` (the rendered HTML is over
    /// the parser's bounds: [`crate::page::features::check_bounds`]), `browser` (Chromium would
    /// not launch or open a tab), `other`; `None` on success.
    pub fn failure_kind(&self) -> Option<&'static str> {
        let e = self.error.as_str();
        Some(if e.is_empty() {
            return None;
        } else if e.starts_with("out of scope") {
            "out_of_scope"
        } else if e.starts_with("refused") {
            "refused"
        } else if e.starts_with("timeout") {
            "timeout"
        } else if e.starts_with("navigat") || e.starts_with("unreachable") {
            "navigation"
        } else if e.starts_with("unparsable") {
            "unparsable"
        } else if e.starts_with("the browser") || e.starts_with("launching") {
            "browser"
        } else {
            "other"
        })
    }
}

struct Live {
    browser: Browser,
    handler: tokio::task::JoinHandle<()>,
    profile: Option<tempfile::TempDir>,
}

impl Drop for Live {
    /// Stop the browser and remove its profile directory, on every path (a relaunch, the end of
    /// a run, a panic unwinding). The directory is removed only after the browser process is
    /// gone, and once more a moment later: Chromium's network service writes its cache index
    /// on the way out, which recreated removed directories (116 were left in `/tmp` before).
    fn drop(&mut self) {
        self.handler.abort();
        if let Some(child) = self.browser.get_mut_child() {
            let child = child.as_mut_inner();
            if !matches!(child.try_wait(), Ok(Some(_))) {
                let _ = child.start_kill();
                let t0 = Instant::now();
                while t0.elapsed() < Duration::from_secs(2) && matches!(child.try_wait(), Ok(None))
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        if let Some(profile) = self.profile.take() {
            let path = profile.path().to_path_buf();
            let _ = profile.close();
            std::thread::sleep(Duration::from_millis(100));
            if path.exists() {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }
}

impl Live {
    /// Close the browser the polite way (its processes end, then it exits), within 5 s; the
    /// drop that follows removes the profile.
    async fn close(mut self) {
        if tokio::time::timeout(Duration::from_secs(3), self.browser.close())
            .await
            .is_ok()
        {
            let _ = tokio::time::timeout(Duration::from_secs(2), self.browser.wait()).await;
        }
    }
}

/// One browser and its tabs.
pub struct Renderer {
    cfg: RenderConfig,
    user_agent: String,
    egress: egress::Egress,
    live: Mutex<Option<Live>>,
    tabs: Arc<Semaphore>,
    /// Browser launches (the first, and relaunches after a crash).
    pub launches: std::sync::atomic::AtomicU64,
    blocked: Arc<
        std::sync::Mutex<
            std::collections::HashMap<
                chromiumoxide::cdp::browser_protocol::target::TargetId,
                Vec<String>,
            >,
        >,
    >,
}

/// Chromium switches, without leading dashes: chromiumoxide adds them (with dashes it doubles
/// them and Chromium ignores them).
pub const CHROMIUM_SWITCHES: [&str; 8] = [
    "disable-gpu",
    "disable-quic",
    "no-first-run",
    "disable-background-networking",
    "disable-component-update",
    "disable-sync",
    "disable-dev-shm-usage",
    "mute-audio",
];

/// Send every connection through the egress proxy at `proxy`: `<-loopback>` removes Chromium's
/// implicit bypass of localhost and loopback addresses, and WebRTC may not send UDP around it.
fn egress_switches(proxy: &str) -> [(&'static str, String); 3] {
    [
        ("proxy-server", proxy.to_string()),
        ("proxy-bypass-list", "<-loopback>".to_string()),
        (
            "force-webrtc-ip-handling-policy",
            "disable_non_proxied_udp".to_string(),
        ),
    ]
}

/// Variables Chromium may inherit; every other one (Kafka SASL credentials, the Redis URL with
/// its password, API tokens) stays in crawlsieve: the browser runs pages of the open web
/// without its sandbox.
pub const CHROMIUM_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "FONTCONFIG_PATH",
    "FONTCONFIG_FILE",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_RUNTIME_DIR",
];

/// A shell script that runs `chromium` with its arguments and only the [`CHROMIUM_ENV`]
/// variables of `env` (`env -i`): chromiumoxide passes the parent's environment on whole.
///
/// Through `setpriv --pdeathsig KILL` (util-linux, in every Debian) where it is installed: the
/// browser is killed when the thread that launched it dies, so a render stage killed with
/// SIGKILL leaves no Chromium behind (one was left per kill before). The launching thread is
/// one of the stage runtime's workers or the thread that built it, which live as long as the
/// stage; a relaunch after a crash happens on them too.
pub fn chromium_wrapper(
    chromium: &std::path::Path,
    env: impl IntoIterator<Item = (String, String)>,
) -> String {
    fn quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
    let mut keep: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| CHROMIUM_ENV.contains(&k.as_str()))
        .collect();
    keep.sort();
    let mut script = String::from("#!/bin/sh\nexec ");
    if std::path::Path::new(SETPRIV).exists() {
        script.push_str(SETPRIV);
        script.push_str(" --pdeathsig KILL ");
    }
    script.push_str("/usr/bin/env -i");
    for (k, v) in keep {
        script.push(' ');
        script.push_str(&quote(&format!("{k}={v}")));
    }
    script.push(' ');
    script.push_str(&quote(&chromium.display().to_string()));
    script.push_str(" \"$@\"\n");
    script
}

/// util-linux's `setpriv`, which sets the browser's parent-death signal.
const SETPRIV: &str = "/usr/bin/setpriv";

async fn launch(cfg: &RenderConfig, proxy: &str) -> Result<Live> {
    let profile = tempfile::Builder::new()
        .prefix("crawlsieve-chromium-")
        .tempdir()
        .context("creating a profile directory")?;
    let (w, h) = cfg.viewport;
    let wrapper = profile.path().join("chromium.sh");
    std::fs::write(&wrapper, chromium_wrapper(&cfg.chromium, std::env::vars()))
        .context("writing the Chromium launcher")?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o700))
            .context("making the Chromium launcher executable")?;
    }
    let config = BrowserConfig::builder()
        .chrome_executable(&wrapper)
        .user_data_dir(profile.path())
        .window_size(w, h)
        .viewport(chromiumoxide::handler::viewport::Viewport {
            width: w,
            height: h,
            ..Default::default()
        })
        .launch_timeout(Duration::from_secs(60))
        .request_timeout(cfg.request_timeout)
        .no_sandbox()
        .args(CHROMIUM_SWITCHES)
        .args(egress_switches(proxy).iter().map(|(k, v)| (*k, v.as_str())))
        .build()
        .map_err(|e| anyhow!("browser configuration: {e}"))?;
    let (browser, mut handler) = Browser::launch(config)
        .await
        .with_context(|| format!("launching {}", cfg.chromium.display()))?;
    let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
    // No downloads, ever.
    let _ = browser
        .execute(SetDownloadBehaviorParams::new(
            SetDownloadBehaviorBehavior::Deny,
        ))
        .await;
    Ok(Live {
        browser,
        handler,
        profile: Some(profile),
    })
}

/// A page is stable after this long without a DOM change or a completed resource (the seed's
/// 500 ms).
pub const SETTLE_QUIET: Duration = Duration::from_millis(500);

/// Wait in the page until it is quiet (`"quiet"`), over the subresource cap (`"cap"`), or `WAIT`
/// ms passed (`"wait"`). The observers are installed once per document, under a non-enumerable
/// property; attribute changes (animations, carousels) do not count, as they never settle.
const SETTLE_JS: &str = "(() => { const k = '__crawlsieve_settle'; let s = window[k]; \
if (!s) { s = { last: performance.now() }; const bump = () => { s.last = performance.now(); }; \
try { new MutationObserver(bump).observe(document, { subtree: true, childList: true, characterData: true }); } catch (e) {} \
try { new PerformanceObserver(bump).observe({ type: 'resource' }); } catch (e) {} \
Object.defineProperty(window, k, { value: s, enumerable: false }); } \
return new Promise(resolve => { const t0 = performance.now(); const tick = () => { const now = performance.now(); \
if (performance.getEntriesByType('resource').length > CAP) return resolve('cap'); \
if (document.readyState === 'complete' && now - s.last >= QUIET) return resolve('quiet'); \
if (now - t0 >= WAIT) return resolve('wait'); setTimeout(tick, 50); }; tick(); }); })()";
const READ_JS: &str = "(() => { const n = performance.getEntriesByType('navigation')[0]; \
const d = document.doctype ? '<!DOCTYPE ' + document.doctype.name + '>' : ''; \
return [location.href, d + (document.documentElement ? document.documentElement.outerHTML : ''), \
n ? [n.responseStart, n.domContentLoadedEventEnd, n.loadEventEnd] : null] })()";

impl Renderer {
    /// Whether the browser process runs (a browser busy opening a tab counts as running).
    pub fn running(&self) -> bool {
        match self.live.try_lock() {
            Err(_) => true,
            Ok(mut l) => match l.as_mut() {
                None => false,
                Some(l) => !l.handler.is_finished() && matches!(l.browser.try_wait(), Ok(None)),
            },
        }
    }

    /// Launch the browser (60 s timeout, one retry: first launches after idle took 9–30 s).
    pub async fn new(cfg: RenderConfig) -> Result<Renderer> {
        let egress = egress::Egress::start(cfg.policy.clone())
            .await
            .context("starting the egress proxy")?;
        let proxy = egress.proxy_server();
        let live = match launch(&cfg, &proxy).await {
            Ok(l) => l,
            Err(_) => launch(&cfg, &proxy).await?,
        };
        // What the browser says it is: the static fetch of `render.mode = "auto"` says the same.
        let user_agent = tokio::time::timeout(Duration::from_secs(10), live.browser.user_agent())
            .await
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_else(|| "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome Safari/537.36".into());
        Ok(Renderer {
            egress,
            user_agent,
            tabs: Arc::new(Semaphore::new(cfg.tabs.max(1))),
            cfg,
            live: Mutex::new(Some(live)),
            launches: std::sync::atomic::AtomicU64::new(1),
            blocked: Arc::default(),
        })
    }

    /// Close the browser (politely, then by force) and remove its profile directory. Dropping
    /// the renderer does the same by force; call this at the end of a run.
    pub async fn close(&self) {
        if let Some(l) = self.live.lock().await.take() {
            l.close().await;
        }
    }

    /// Its settings.
    pub fn config(&self) -> &RenderConfig {
        &self.cfg
    }

    /// The browser's `User-Agent`.
    pub fn user_agent(&self) -> &str {
        &self.user_agent
    }

    /// The egress proxy every connection of the browser goes through.
    pub fn egress(&self) -> &egress::Egress {
        &self.egress
    }

    /// Render `url`; never fails (errors are in [`Rendered::error`]).
    pub async fn render(&self, url: &str) -> Rendered {
        let mut out = Rendered {
            url: url.to_string(),
            final_url: url.to_string(),
            ..Rendered::default()
        };
        if let Err(e) = self.cfg.policy.check(url).await {
            out.error = format!("refused: {e}");
            return out;
        }
        let _tab = self.tabs.acquire().await.expect("semaphore open");
        out.rendered = true;
        if let Err(e) = self.render_inner(url, &mut out).await {
            out.error = format!("{e:#}");
        }
        if out.error.is_empty() && !out.proxy_error.is_empty() {
            // `unreachable: host:port (…)` or `refused by crawlsieve: …` (as `refused: …`).
            out.error = match out.proxy_error.strip_prefix("refused by crawlsieve: ") {
                Some(why) => format!("refused: {why}"),
                None => out.proxy_error.clone(),
            };
            out.html.clear();
            out.phash = None;
            out.phash_dct = None;
            // The 502 was the proxy's, not the site's: no status was received (0, as the
            // schemas say), so no report shows a refused connection as a server error.
            out.status = 0;
            out.content_type.clear();
        }
        // A script can build a DOM no parser should be fed (100,000 nested elements, a tag with
        // 200,000 attributes): refused here, in linear time, before any feature is extracted.
        if out.error.is_empty() {
            if let Err(e) = crate::page::features::check_bounds(&out.html) {
                out.error = format!("unparsable: the rendered HTML: {e}");
                out.html.clear();
            }
        }
        // A navigation that failed or was blocked (a form or script sending the page to a
        // refused address) leaves Chromium's error page: an error, never a page to cluster.
        if out.error.is_empty() && out.final_url.starts_with("chrome-error:") {
            out.error = match out.blocked.last() {
                Some(b) => format!("refused: the page navigated to {b}"),
                None => "navigation failed: the page ended on the browser's error page".into(),
            };
            out.html.clear();
            out.phash = None;
            out.phash_dct = None;
        }
        // A redirect may lead where the first URL could not: check where it ended.
        if out.error.is_empty() {
            let hops: Vec<String> = out
                .redirect_chain
                .iter()
                .chain([&out.final_url])
                .cloned()
                .collect();
            for hop in &hops {
                if let Err(e) = self.cfg.policy.check(hop).await {
                    out = Rendered {
                        url: out.url,
                        final_url: hop.clone(),
                        rendered: true,
                        error: format!("refused after a redirect: {e}"),
                        ..Rendered::default()
                    };
                    break;
                }
            }
        }
        out
    }

    /// A new tab; a browser that exited, or does not open a tab within 10 s, is replaced once.
    async fn open_tab(&self) -> Result<chromiumoxide::Page> {
        let mut live = self.live.lock().await;
        for attempt in 0..2 {
            let dead = match live.as_mut() {
                None => true,
                Some(l) => l.handler.is_finished() || !matches!(l.browser.try_wait(), Ok(None)),
            };
            if dead || attempt == 1 {
                if let Some(mut old) = live.take() {
                    let _ = old.browser.kill().await;
                    drop(old); // removes its profile
                }
                *live = Some(launch(&self.cfg, &self.egress.proxy_server()).await?);
                self.launches
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            let l = live.as_ref().expect("launched above");
            if let Ok(Ok(p)) =
                tokio::time::timeout(Duration::from_secs(10), l.browser.new_page("about:blank"))
                    .await
            {
                return Ok(p);
            }
        }
        Err(anyhow!("the browser does not open tabs"))
    }

    async fn render_inner(&self, url: &str, out: &mut Rendered) -> Result<()> {
        let page = self.open_tab().await?;
        // The page's budget covers navigating, settling, reading and the screenshot; the tab is
        // closed whatever happened (a hung tab must not stay open).
        let guard = self.guard(&page).await?;
        let r = tokio::time::timeout(self.cfg.page_timeout, self.drive(&page, url, out)).await;
        guard.abort();
        if let Ok(b) = self.blocked_of(&page) {
            out.blocked = b;
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), page.close()).await;
        match r {
            Ok(r) => r,
            Err(_) => Err(anyhow!("timeout after {:?}", self.cfg.page_timeout)),
        }
    }

    /// Pause every request of `page` (DevTools Fetch domain) and let through only those the
    /// policy allows — subresources, iframes and redirect hops included; the rest fail as
    /// `BlockedByClient` and are listed in [`Rendered::blocked`].
    async fn guard(&self, page: &chromiumoxide::Page) -> Result<tokio::task::JoinHandle<()>> {
        use chromiumoxide::cdp::browser_protocol::fetch::{
            ContinueRequestParams, EnableParams, EventRequestPaused, FailRequestParams,
            RequestPattern,
        };
        use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
        let mut paused = page.event_listener::<EventRequestPaused>().await?;
        page.execute(EnableParams {
            patterns: Some(vec![RequestPattern {
                url_pattern: Some("*".into()),
                resource_type: None,
                request_stage: None,
            }]),
            handle_auth_requests: None,
        })
        .await
        .context("enabling request interception")?;
        let (page, policy) = (page.clone(), self.cfg.policy.clone());
        let blocked = self.blocked.clone();
        let cap = self.cfg.max_subresources;
        let mut seen = 0usize;
        let key = page.target_id().clone();
        Ok(tokio::spawn(async move {
            let mut cache: std::collections::HashMap<String, bool> = Default::default();
            while let Some(ev) = paused.next().await {
                let u = &ev.request.url;
                seen += 1;
                let ok = if seen > cap + 1 {
                    false // over the subresource cap: the page gets no more
                } else if u.starts_with("data:") || u.starts_with("blob:") || u == "about:blank" {
                    true
                } else {
                    let origin = crate::page::cluster::origin(u).to_string();
                    match cache.get(&origin) {
                        Some(&ok) => ok,
                        None => {
                            let ok = policy.check(u).await.is_ok();
                            cache.insert(origin, ok);
                            ok
                        }
                    }
                };
                if ok {
                    let _ = page
                        .execute(ContinueRequestParams::new(ev.request_id.clone()))
                        .await;
                } else {
                    if let Ok(mut b) = blocked.lock() {
                        let list = b.entry(key.clone()).or_default();
                        if list.len() < 20 {
                            list.push(u.clone());
                        }
                    }
                    let _ = page
                        .execute(FailRequestParams::new(
                            ev.request_id.clone(),
                            ErrorReason::BlockedByClient,
                        ))
                        .await;
                }
            }
        }))
    }

    fn blocked_of(&self, page: &chromiumoxide::Page) -> Result<Vec<String>> {
        let mut b = self.blocked.lock().map_err(|_| anyhow!("poisoned"))?;
        Ok(b.remove(page.target_id()).unwrap_or_default())
    }

    async fn drive(&self, page: &chromiumoxide::Page, url: &str, out: &mut Rendered) -> Result<()> {
        use chromiumoxide::cdp::browser_protocol::network::{
            EventRequestWillBeSent, EventResponseReceived,
        };
        // Redirects keep their request id in CDP: the document requests sharing the first one's
        // id are the chain.
        let mut sent = page.event_listener::<EventRequestWillBeSent>().await?;
        let mut received = page.event_listener::<EventResponseReceived>().await?;
        let nav = page
            .execute(NavigateParams::new(url))
            .await
            .context("navigating")?
            .result;
        if let Some(e) = nav.error_text.filter(|e| !e.is_empty()) {
            return Err(anyhow!("navigation failed: {e}"));
        }
        let main_frame = nav.frame_id;
        let _ = page.wait_for_navigation().await;
        // The main frame's document request (its redirects keep the request id).
        let (chain, id) = drive::main_document(&mut sent, &main_frame);
        if chain.len() > 1 {
            out.redirect_chain = chain;
        }
        drive::read_response(&mut received, id.as_ref(), out);
        self.settle(page).await;
        self.read_page(page, url, out).await?;
        self.screenshot(page, out).await
    }
}

/// A PNG of the viewport at quarter scale (it hashes the same as full scale and costs half).
pub fn screenshot_params((w, h): (u32, u32)) -> ScreenshotParams {
    ScreenshotParams::builder()
        .format(CaptureScreenshotFormat::Png)
        .clip(Viewport {
            x: 0.0,
            y: 0.0,
            width: w as f64,
            height: h as f64,
            scale: 0.25,
        })
        .build()
}

/// Gradient and Median-DCT 64-bit hashes of a PNG.
pub fn hashes(png: &[u8]) -> Result<(u64, u64)> {
    use image_hasher::{HashAlg, HasherConfig};
    let img = image::load_from_memory(png).context("decoding the screenshot")?;
    let to_u64 = |b: &[u8]| b.iter().take(8).fold(0u64, |a, &x| a << 8 | x as u64);
    let g = HasherConfig::new()
        .hash_alg(HashAlg::Gradient)
        .hash_size(8, 8)
        .to_hasher()
        .hash_image(&img);
    let d = HasherConfig::new()
        .hash_alg(HashAlg::Median)
        .preproc_dct()
        .hash_size(8, 8)
        .to_hasher()
        .hash_image(&img);
    Ok((to_u64(g.as_bytes()), to_u64(d.as_bytes())))
}
