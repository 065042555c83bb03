//! `crawlsieve similar -l urls.txt -o result.json|csv`: the seed's command on the embedded
//! default (no Kafka, no Redis): render every URL in headless Chromium, cluster, write the report.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use crate::page::similarity::Thresholds;
use crate::page::soft404;
use crate::page::Page;
use crate::render::auto::{Mode, Seen, Seer, Why, CHECK_ONE_IN};
use crate::render::safety::Policy;
use crate::render::{RenderConfig, Rendered, Renderer};

use super::Dur;

/// `crawlsieve similar` arguments (the seed's flags; `-http-timeout` and the other long flags
/// are accepted with one dash too, as the seed spells them).
#[derive(Debug, Args)]
pub struct SimilarArgs {
    /// URLs: a file (one per line; blank lines and `#` comments skipped; `-`: standard input)
    /// or a comma list of absolute URLs.
    #[arg(
        short = 'l',
        long = "list",
        env = "CRAWLSIEVE_LIST",
        value_name = "FILE|URLS"
    )]
    pub list: String,
    /// Output: `.json`, `.csv`, or `.html` (a self-contained report with thumbnails);
    /// repeatable (comma-separated in the variable): one run, one clustering, several files.
    #[arg(
        short = 'o',
        long = "output",
        env = "CRAWLSIEVE_REPORT",
        required = true,
        value_delimiter = ','
    )]
    pub output: Vec<PathBuf>,
    /// Pages rendered at once (browser tabs).
    #[arg(
        short = 't',
        long = "threads",
        env = "CRAWLSIEVE_THREADS",
        default_value_t = 2
    )]
    pub threads: usize,
    /// Budget for the first response of a page (the browser's request timeout).
    #[arg(
        long = "http-timeout",
        env = "CRAWLSIEVE_HTTP_TIMEOUT",
        default_value = "10s"
    )]
    pub http_timeout: Dur,
    /// Budget for a whole page: navigation, settling, reading, screenshot.
    #[arg(
        long = "page-timeout",
        env = "CRAWLSIEVE_PAGE_TIMEOUT",
        default_value = "20s"
    )]
    pub page_timeout: Dur,
    /// URLs queued to the browser at a time.
    #[arg(
        long = "batch-size",
        env = "CRAWLSIEVE_BATCH_SIZE",
        default_value_t = 1000
    )]
    pub batch_size: usize,
    /// Hosts or addresses the renderer may load although they are not public (loopback,
    /// private, link-local); repeatable. `HOST` or `IP` allows every port, `HOST:PORT`,
    /// `IP:PORT` or `[IPv6]:PORT` only that port.
    #[arg(
        long = "allow",
        env = "CRAWLSIEVE_RENDER_ALLOW",
        value_delimiter = ',',
        value_name = "HOST[:PORT]|IP[:PORT]"
    )]
    pub allow: Vec<String>,
    /// The Chromium binary.
    #[arg(long, default_value = "/usr/bin/chromium", env = "CRAWLSIEVE_CHROMIUM")]
    pub chromium: PathBuf,
    /// Use the seed's thresholds and scales exactly.
    #[arg(long, env = "CRAWLSIEVE_SEED_THRESHOLDS", value_parser = clap::builder::BoolishValueParser::new())]
    pub seed_thresholds: bool,
    /// The seed's similarity threshold, in 0..1: the structure-similarity threshold (the
    /// seed's default 0.85 is ours). The seed only echoed it in `meta.sim_threshold`; here it
    /// also takes effect. Content and visual keep their own thresholds (docs/page-clustering.md).
    #[arg(
        long = "sim-threshold",
        env = "CRAWLSIEVE_SIM_THRESHOLD",
        value_parser = super::cluster::unit_interval
    )]
    pub sim_threshold: Option<f64>,
    /// Do not probe each host (and first path segment) with a URL that cannot exist: no page is
    /// then classified `soft_404` (docs/render.md, "Soft 404s").
    #[arg(long = "no-soft-404-probe", env = "CRAWLSIEVE_NO_SOFT_404_PROBE", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_soft_404_probe: bool,
    /// How pages are seen: `auto` fetches every page over HTTP (the browser's address policy
    /// and limits) and renders in Chromium only the pages whose HTML or whose URL pattern says
    /// rendering could change the answer, a sample of the rest as checks, and the canonical
    /// page of every cluster for its picture; `always` renders every page (docs/render.md).
    #[arg(long = "render", env = "CRAWLSIEVE_RENDER", value_enum, default_value_t = Mode::Auto)]
    pub render: Mode,
    /// With `--render auto`: once a site's pages are trusted to look the same over HTTP, one
    /// page in this many is still rendered to check (never zero: a site that changes is
    /// noticed).
    #[arg(long = "check-one-in", env = "CRAWLSIEVE_CHECK_ONE_IN", default_value_t = CHECK_ONE_IN, value_parser = clap::value_parser!(u32).range(1..))]
    pub check_one_in: u32,
}

/// The seed's single-dash long flags, rewritten to clap's double dash.
pub fn normalize_args(args: Vec<String>) -> Vec<String> {
    const LONG: [&str; 4] = [
        "-http-timeout",
        "-page-timeout",
        "-batch-size",
        "-sim-threshold",
    ];
    if args.get(1).map(String::as_str) != Some("similar") {
        return args;
    }
    args.into_iter()
        .map(|a| {
            let (flag, rest) = a
                .split_once('=')
                .map_or((a.as_str(), None), |(f, r)| (f, Some(r)));
            if LONG.contains(&flag) {
                match rest {
                    Some(r) => format!("-{flag}={r}"),
                    None => format!("-{flag}"),
                }
            } else {
                a
            }
        })
        .collect()
}

/// The URLs of `-l`: a file's lines (`-`: standard input's), or a comma-separated list of
/// absolute URLs. Anything else (a file name that does not exist, a bare word) is an input
/// error, not a one-URL list. A line of a file that is no absolute http(s) URL is skipped with
/// a warning naming it (and counted: the run is then partial); returns the URLs and that count.
fn urls(list: &str) -> Result<(Vec<String>, usize)> {
    let path = std::path::Path::new(list);
    if path.is_dir() {
        return Err(super::exit::input(format!(
            "-l {list}: is a directory (give a file of URLs, one per line)"
        )));
    }
    let (text, from_file) = if list == "-" {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut t)
            .map_err(|e| super::exit::input(format!("-l -: cannot read standard input: {e}")))?;
        (t, true)
    } else if path.is_file() {
        let t = std::fs::read_to_string(list)
            .map_err(|e| super::exit::input(format!("-l {list}: cannot read the file: {e}")))?;
        (t, true)
    } else {
        let items: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        if let Some(bad) = items.iter().find(|u| absolute(u).is_err()) {
            return Err(super::exit::input(
                if items.len() == 1 && !bad.contains("://") {
                    format!("-l {list}: no such file, and not a URL (give a file of URLs, one per line, or a comma-separated list of absolute URLs)")
                } else {
                    format!(
                        "-l: {bad:?} is not an absolute http(s) URL: {}",
                        absolute(bad).unwrap_err()
                    )
                },
            ));
        }
        (items.join("\n"), false)
    };
    let name = if list == "-" { "standard input" } else { list };
    let mut v = Vec::new();
    let mut skipped = 0;
    for (n, l) in text.lines().enumerate() {
        let l = l.trim().trim_start_matches('\u{feff}');
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        match absolute(l) {
            Ok(()) => v.push(l.to_string()),
            Err(why) if from_file => {
                skipped += 1;
                eprintln!(
                    "crawlsieve similar: {name}:{}: skipped {l:?}: not an absolute http(s) URL: {why}",
                    n + 1
                );
            }
            Err(_) => unreachable!("a list's items are checked above"),
        }
    }
    if v.is_empty() {
        return Err(super::exit::input(format!(
            "-l {list}: no absolute http(s) URL in it"
        )));
    }
    Ok((v, skipped))
}

/// Whether `u` is an absolute http(s) URL with a host; if not, why, with the fix when it is
/// only the scheme that is missing (`host:8080/x` would otherwise read as scheme `host`).
fn absolute(u: &str) -> std::result::Result<(), String> {
    let lower = u.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        let looks_like_host = u
            .split(['/', '?', '#'])
            .next()
            .is_some_and(|h| h.contains('.') || h.contains(':') || h == "localhost");
        return Err(if looks_like_host && !u.contains("://") {
            format!("no scheme (write http://{u} or https://{u})")
        } else {
            "it does not start with http:// or https://".into()
        });
    }
    match url::Url::parse(u) {
        Ok(p) if p.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        Ok(_) => Err("no host".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Run `crawlsieve similar`.
pub fn run(a: SimilarArgs) -> Result<()> {
    for o in &a.output {
        super::cluster::report_format(o)?;
    }
    check_args(&a)?;
    let (list, skipped) = urls(&a.list)?;
    check_chromium(&a.chromium)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(2)
        .build()
        .context("starting the async runtime")?;
    let cfg = RenderConfig {
        chromium: a.chromium.clone(),
        tabs: a.threads.clamp(1, 16),
        page_timeout: a.page_timeout.0,
        request_timeout: a.http_timeout.0,
        policy: Policy {
            allow: a.allow.clone(),
        },
        thumbnails: true,
        ..RenderConfig::default()
    };
    let mut t = if a.seed_thresholds {
        Thresholds::seed()
    } else {
        Thresholds::default()
    };
    if let Some(s) = a.sim_threshold {
        t.structure = s;
    }
    let (seen, (templates, probes, serve_home), mut cache) = see(&rt, &a, cfg, &list, &t)?;
    let rendered_flags: Vec<bool> = seen.iter().map(|s| s.page.rendered).collect();
    let why: Vec<Option<String>> = seen
        .iter()
        .map(|s| s.why.filter(|_| s.page.rendered).map(|w| w.describe()))
        .collect();
    let (pages, errors) = pages_of(&seen, &(templates, Vec::new(), serve_home), &mut cache);
    let thumbs: Vec<Option<String>> = seen.into_iter().map(|s| s.page.thumbnail).collect();
    rt.shutdown_timeout(Duration::from_secs(5));
    let learned = learn(&pages, &errors);
    let extras = super::cluster::Extras {
        thumbs: &thumbs,
        probes: &probes,
        learned: &learned,
        rendered: &rendered_flags,
        mode: Some(a.render),
        why: &why,
    };
    super::cluster::report(&pages, errors, &extras, skipped, &t, &a.output, "similar")
}

/// 1. Refuse a bad `--allow`, a zero timeout, or no threads or batch, as a usage error.
fn check_args(a: &SimilarArgs) -> Result<()> {
    for x in &a.allow {
        crate::net::check_allow_entry(x)
            .map_err(|e| super::exit::usage(format!("--allow {x}: {e}")))?;
    }
    for (flag, d) in [
        ("--http-timeout", a.http_timeout),
        ("--page-timeout", a.page_timeout),
    ] {
        if d.0.is_zero() {
            return Err(super::exit::usage(format!(
                "{flag} 0s: every page would time out at once; give a duration, e.g. 10s"
            )));
        }
    }
    if a.threads == 0 || a.batch_size == 0 {
        return Err(super::exit::usage(
            "--threads and --batch-size must be at least 1",
        ));
    }
    Ok(())
}

/// 2. Refuse a `--chromium` that is no program there (or, for a bare name, on PATH).
fn check_chromium(chromium: &std::path::Path) -> Result<()> {
    // A bare name is looked up on PATH, as the browser's launcher does (`--chromium chrome`).
    let found = if chromium.components().count() > 1 {
        chromium.is_file()
    } else {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(chromium).is_file()))
    };
    if !found {
        return Err(super::exit::unreachable(format!(
            "--chromium {}: no such program; install Debian's chromium (apt-get install chromium) or give the path of a Chromium binary",
            chromium.display()
        )));
    }
    Ok(())
}

/// 3. Start the browser, see, probe and render every page in it, and close it (also on a signal).
fn see(
    rt: &tokio::runtime::Runtime,
    a: &SimilarArgs,
    cfg: RenderConfig,
    list: &[String],
    t: &Thresholds,
) -> Result<(Vec<Seen>, Probed, Vec<Option<Page>>)> {
    rt.block_on(async {
        let r = Arc::new(
            Renderer::new(cfg)
                .await
                .map_err(|e| super::exit::unreachable(format!("{e:#}")))?,
        );
        let seer = Arc::new(Seer::new(
            r.clone(),
            a.render,
            a.check_one_in,
            (a.threads * 4).max(8),
        ));
        // Ctrl-C or SIGTERM: close the browser and remove its profile before exiting.
        let probe = !a.no_soft_404_probe;
        let work = see_probe_render(&seer, list, a, t, probe);
        let out = tokio::select! {
            out = work => out,
            _ = stop_signal() => {
                r.close().await;
                eprintln!("crawlsieve similar: interrupted; the browser was closed");
                std::process::exit(130);
            }
        };
        r.close().await;
        out
    })
}

/// 4. See every page, probe for soft-404 templates if `probe`, render canonicals in `auto`.
async fn see_probe_render(
    seer: &Arc<Seer>,
    list: &[String],
    a: &SimilarArgs,
    t: &Thresholds,
    probe: bool,
) -> Result<(Vec<Seen>, Probed, Vec<Option<Page>>)> {
    let t0 = std::time::Instant::now();
    let mut seen = see_all(seer, list, a.batch_size, t).await?;
    let rendered = seen.iter().filter(|s| s.page.rendered).count();
    tracing::debug!(
        pages = seen.len(),
        rendered,
        seconds = t0.elapsed().as_secs_f64(),
        "pages seen"
    );
    let t0 = std::time::Instant::now();
    let templates = if probe {
        soft_404_templates(seer, &seen).await?
    } else {
        (Default::default(), Vec::new(), Default::default())
    };
    tracing::debug!(seconds = t0.elapsed().as_secs_f64(), "soft-404 probes");
    let t0 = std::time::Instant::now();
    let mut cache = Vec::new();
    if a.render == Mode::Auto {
        render_canonicals(seer, &mut seen, &templates, t, &mut cache).await;
    }
    let more = seen.iter().filter(|s| s.page.rendered).count() - rendered;
    tracing::debug!(
        rendered = more,
        seconds = t0.elapsed().as_secs_f64(),
        "canonicals rendered after clustering"
    );
    anyhow::Ok((seen, templates, cache))
}

/// 5. The query parameters these pages show change nothing (for the HTML report).
fn learn(pages: &[Page], errors: &[String]) -> Vec<crate::page::params::Learned> {
    // What the render stage would learn from these pages: parameters that change nothing.
    let mut learner = crate::page::params::Learner::default();
    let mut learned = Vec::new();
    for (p, e) in pages.iter().zip(errors) {
        let is_html = p.content_type.is_empty() || p.content_type.contains("html");
        if e.is_empty()
            && (200..300).contains(&p.status)
            && p.final_url == p.url
            && crate::page::rule_pages::page_rule(p.status, is_html, &p.features).is_none()
        {
            for c in learner.observe(&p.url, &p.features) {
                match c {
                    crate::page::params::Change::Learned(l) => learned.push(l),
                    crate::page::params::Change::Refuted { host, param, .. } => {
                        learned.retain(|l| !(l.host == host && l.param == param))
                    }
                }
            }
        }
    }
    learned
}

/// See every URL of `list` ([`Seer::see_all`]: rendered, or fetched over HTTP in `auto`),
/// `batch` at a time, with a progress bar on a terminal.
async fn see_all(
    seer: &Arc<Seer>,
    list: &[String],
    batch: usize,
    t: &Thresholds,
) -> Result<Vec<Seen>> {
    let bar = if std::io::stderr().is_terminal() {
        indicatif::ProgressBar::new(list.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut out = Vec::with_capacity(list.len());
    for chunk in list.chunks(batch.max(1)) {
        let b = bar.clone();
        // `auto`: the canonical pages of the clusters the HTML alone forms are rendered first
        // (for their pictures, and as the policy's first checks).
        let t = *t;
        let canonicals = move |statics: &[Rendered]| -> Vec<usize> {
            let ok: Vec<usize> = (0..statics.len())
                .filter(|&i| statics[i].error.is_empty())
                .collect();
            let pages: Vec<Page> = ok.iter().map(|&i| statics[i].to_page()).collect();
            crate::page::cluster::cluster(&pages, &t)
                .into_iter()
                .zip(&ok)
                .filter(|(a, _)| !a.cluster_id.is_empty() && a.is_canonical)
                .map(|(_, &i)| i)
                .collect()
        };
        out.extend(
            seer.see_all_first(chunk, &move || b.inc(1), &canonicals)
                .await,
        );
    }
    bar.finish_and_clear();
    Ok(out)
}

/// The pages (features) and their errors, soft 404s judged with `probed`'s templates.
/// `cache` holds each page's features once extracted (`None`: its record changed).
fn pages_of(
    seen: &[Seen],
    probed: &Probed,
    cache: &mut Vec<Option<Page>>,
) -> (Vec<Page>, Vec<String>) {
    let (templates, _, serve_home) = probed;
    let rendered: Vec<&Rendered> = seen.iter().map(|s| &s.page).collect();
    let soft = soft_404s(&rendered, templates, serve_home);
    let mut pages = Vec::with_capacity(seen.len());
    let mut errors = Vec::with_capacity(seen.len());
    cache.resize(seen.len(), None);
    for ((r, soft), c) in rendered.into_iter().zip(soft).zip(cache.iter_mut()) {
        let mut p = c.get_or_insert_with(|| r.to_page()).clone();
        p.features.soft_404 = soft;
        pages.push(p);
        errors.push(r.error.clone());
    }
    (pages, errors)
}

/// `--render auto`: render the canonical page of every cluster (content and rule clusters) that
/// was seen over HTTP only, for its thumbnail and screenshot hash — then cluster again with what
/// the browser showed, as a canonical's rendered features may move members; at most three
/// rounds (a page whose render failed keeps its static record and is not asked again).
async fn render_canonicals(
    seer: &Arc<Seer>,
    seen: &mut [Seen],
    probed: &Probed,
    t: &Thresholds,
    cache: &mut Vec<Option<Page>>,
) {
    let mut tried = std::collections::HashSet::new();
    for _ in 0..3 {
        let (pages, errors) = pages_of(seen, probed, cache);
        let ok: Vec<usize> = (0..pages.len()).filter(|&i| errors[i].is_empty()).collect();
        let ok_pages: Vec<Page> = ok.iter().map(|&i| pages[i].clone()).collect();
        let want: Vec<usize> = crate::page::cluster::cluster(&ok_pages, t)
            .into_iter()
            .zip(&ok)
            .filter(|(a, &i)| !a.cluster_id.is_empty() && a.is_canonical && !seen[i].page.rendered)
            .map(|(_, &i)| i)
            .filter(|i| tried.insert(*i))
            .collect();
        if want.is_empty() {
            return;
        }
        let items = want
            .iter()
            .map(|&i| {
                seer.learned
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .begin(&seen[i].page.url);
                (
                    seen[i].page.url.clone(),
                    Why::Canonical,
                    Some(seen[i].page.clone()),
                )
            })
            .collect();
        for (i, s) in want.into_iter().zip(seer.render_for(items, &|| {}).await) {
            seen[i] = Seen {
                took: seen[i].took + s.took,
                ..s
            };
            cache[i] = None;
        }
    }
}

/// Which rendered pages are soft 404s: each scope's pages judged together by its template
/// ([`soft404::judge_scope`]); a page with an error never is.
fn soft_404s(
    rendered: &[&Rendered],
    templates: &std::collections::HashMap<String, soft404::Template>,
    serve_home: &std::collections::HashSet<String>,
) -> Vec<bool> {
    let mut out = vec![false; rendered.len()];
    let mut by: std::collections::HashMap<String, Vec<usize>> = Default::default();
    for (i, r) in rendered.iter().enumerate() {
        if r.error.is_empty() {
            by.entry(soft404::scope_key(&r.url)).or_default().push(i);
        }
    }
    for (scope, idx) in by {
        let Some(t) = templates.get(&scope) else {
            continue;
        };
        let pages: Vec<soft404::Rendered> = idx
            .iter()
            .map(|&i| soft404::Rendered {
                url: &rendered[i].url,
                final_url: &rendered[i].final_url,
                status: rendered[i].status,
                html: &rendered[i].html,
            })
            .collect();
        let origin = soft404::origin_scope(&scope);
        let site = templates
            .get(origin)
            .filter(|_| !serve_home.contains(origin));
        for (&i, soft) in idx.iter().zip(soft404::judge_scope(t, site, &pages)) {
            out[i] = soft;
        }
    }
    out
}

/// What the probes found: each scope's template, (scope, probe URL, what it answered) for the
/// report, and the origins whose unknown URLs get their home page ([`soft404::serves_home`]).
type Probed = (
    std::collections::HashMap<String, soft404::Template>,
    Vec<(String, String, String)>,
    std::collections::HashSet<String>,
);

/// Each scope's "not found" template ([`soft404`]): one probe per origin and first path segment
/// of the 2xx pages rendered without error, derived from the first page of that scope; and,
/// where a section's root is among them, the origin's (from its root, when no page of the
/// origin's own scope is here) and its home page.
async fn soft_404_templates(seer: &Arc<Seer>, seen: &[Seen]) -> Result<Probed> {
    let pages: Vec<&Rendered> = seen.iter().map(|s| &s.page).collect();
    let mut scopes: Vec<(String, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let judged = |p: &&&Rendered| p.error.is_empty() && (200..300).contains(&p.status);
    for p in pages.iter().filter(judged) {
        let key = soft404::scope_key(&p.url);
        if seen.insert(key.clone()) {
            if let Some(u) = soft404::fresh_probe(&p.url, &key) {
                scopes.push((key, u));
            }
        }
    }
    // A section's root is judged against the origin's answer too: the origin is probed (from
    // its root when none of its own pages is here), and its home page rendered, to know
    // whether unknown URLs get the home page ([`soft404::serves_home`]).
    let mut homes: Vec<String> = Vec::new();
    for p in pages.iter().filter(judged) {
        if let Some((origin, sample)) = soft404::origin_probe_for(&p.url) {
            if seen.insert(origin.clone()) {
                if let Some(u) = soft404::fresh_probe(&sample, &origin) {
                    scopes.push((origin.clone(), u));
                }
            }
            if !homes.contains(&origin) {
                homes.push(origin);
            }
        }
    }
    let mut probes: Vec<String> = scopes.iter().map(|(_, u)| u.clone()).collect();
    probes.extend(homes.iter().map(|o| format!("{o}/")));
    let mut answers = probe_all(seer, &probes).await?;
    let home_pages = answers.split_off(scopes.len());
    let mut out = std::collections::HashMap::new();
    let mut seen = Vec::new();
    for ((key, u), a) in scopes.into_iter().zip(answers) {
        let answer = if !a.error.is_empty() {
            format!("not judged: {}", a.error)
        } else {
            match soft404::Template::from_probe(&u, &a.final_url, a.status, &a.html) {
                None => format!("HTTP {}: unknown URLs answered honestly", a.status),
                Some(t) => {
                    let said = match &t {
                        soft404::Template::Redirect(to) => {
                            format!(
                                "HTTP {}: unknown URLs redirected to {to} (soft 404)",
                                a.status
                            )
                        }
                        soft404::Template::Page(w) => format!(
                            "HTTP {}: unknown URLs get a page of {} words (soft 404)",
                            a.status,
                            w.len()
                        ),
                    };
                    out.insert(key.clone(), t);
                    said
                }
            }
        };
        seen.push((key, u, answer));
    }
    // Origins whose template is their home page: their sections' roots stay spared.
    let mut serve_home = std::collections::HashSet::new();
    for (o, h) in homes.iter().zip(&home_pages) {
        let home = h.error.is_empty().then(|| soft404::Rendered {
            url: &h.url,
            final_url: &h.final_url,
            status: h.status,
            html: &h.html,
        });
        if out
            .get(o)
            .is_some_and(|t| soft404::serves_home(t, home.as_ref()))
        {
            serve_home.insert(o.clone());
        }
    }
    Ok((out, seen, serve_home))
}

/// The soft-404 probes and home pages ([`Seer::probe`]: rendered where the host's pages
/// needed the browser, fetched over HTTP otherwise).
async fn probe_all(seer: &Arc<Seer>, urls: &[String]) -> Result<Vec<Rendered>> {
    let tasks: Vec<_> = urls
        .iter()
        .map(|u| {
            let (seer, u) = (seer.clone(), u.clone());
            tokio::spawn(async move { seer.probe(&u).await })
        })
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.context("a probe task failed")?);
    }
    Ok(out)
}

/// SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut i), Ok(mut t)) => {
            tokio::select! {
                _ = i.recv() => {}
                _ = t.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}
