//! `crawlsieve similar -l urls.txt -o result.json|csv`: the seed's command on the embedded
//! default (no Kafka, no Redis): render every URL in headless Chromium, cluster, write the report.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::page::similarity::Thresholds;
use crate::page::soft404;
use crate::page::Page;
use crate::render::safety::Policy;
use crate::render::{RenderConfig, Rendered, Renderer};

use super::Dur;

/// `crawlsieve similar` arguments (the seed's flags; `-http-timeout` and the other long flags
/// are accepted with one dash too, as the seed spells them).
#[derive(Debug, Args)]
pub struct SimilarArgs {
    /// URLs: a file (one per line; blank lines and `#` comments skipped) or a comma list.
    #[arg(short = 'l', long = "list", value_name = "FILE|URLS")]
    pub list: String,
    /// Output: `.json`, `.csv`, or `.html` (a self-contained report with thumbnails).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Pages rendered at once (browser tabs).
    #[arg(short = 't', long = "threads", default_value_t = 2)]
    pub threads: usize,
    /// Budget for the first response of a page (the browser's request timeout).
    #[arg(long = "http-timeout", default_value = "10s")]
    pub http_timeout: Dur,
    /// Budget for a whole page: navigation, settling, reading, screenshot.
    #[arg(long = "page-timeout", default_value = "20s")]
    pub page_timeout: Dur,
    /// URLs queued to the browser at a time.
    #[arg(long = "batch-size", default_value_t = 1000)]
    pub batch_size: usize,
    /// Hosts or addresses the renderer may load although they are not public (loopback,
    /// private, link-local); repeatable. `HOST` or `IP` allows every port, `HOST:PORT`,
    /// `IP:PORT` or `[IPv6]:PORT` only that port.
    #[arg(long = "allow", value_name = "HOST[:PORT]|IP[:PORT]")]
    pub allow: Vec<String>,
    /// The Chromium binary.
    #[arg(long, default_value = "/usr/bin/chromium", env = "CRAWLSIEVE_CHROMIUM")]
    pub chromium: PathBuf,
    /// Use the seed's thresholds and scales exactly.
    #[arg(long)]
    pub seed_thresholds: bool,
    /// The seed's similarity threshold, in 0..1: the structure-similarity threshold (the
    /// seed's default 0.85 is ours). The seed only echoed it in `meta.sim_threshold`; here it
    /// also takes effect. Content and visual keep their own thresholds (docs/page-clustering.md).
    #[arg(long = "sim-threshold", value_parser = super::cluster::unit_interval)]
    pub sim_threshold: Option<f64>,
    /// Do not probe each host (and first path segment) with a URL that cannot exist: no page is
    /// then classified `soft_404` (docs/render.md, "Soft 404s").
    #[arg(long = "no-soft-404-probe")]
    pub no_soft_404_probe: bool,
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

fn urls(list: &str) -> Result<Vec<String>> {
    let from_file = std::path::Path::new(list).is_file();
    let text = if from_file {
        std::fs::read_to_string(list).with_context(|| format!("cannot read {list}"))?
    } else {
        list.replace(',', "\n")
    };
    let v: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    if v.is_empty() {
        bail!("-l {list:?}: no URL");
    }
    Ok(v)
}

/// Run `crawlsieve similar`.
pub fn run(a: SimilarArgs) -> Result<()> {
    let list = urls(&a.list)?;
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
    let (rendered, (templates, probes)) = rt.block_on(async {
        let r = Arc::new(Renderer::new(cfg).await?);
        // Ctrl-C or SIGTERM: close the browser and remove its profile before exiting.
        let probe = !a.no_soft_404_probe;
        let work = async {
            let pages = render_all(&r, &list, a.batch_size).await?;
            let templates = if probe {
                soft_404_templates(&r, &pages, a.batch_size).await?
            } else {
                (Default::default(), Vec::new())
            };
            anyhow::Ok((pages, templates))
        };
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
    })?;

    let mut pages = Vec::with_capacity(rendered.len());
    let mut errors = Vec::with_capacity(rendered.len());
    let mut thumbs = Vec::with_capacity(rendered.len());
    let soft = soft_404s(&rendered, &templates);
    for (r, soft) in rendered.into_iter().zip(soft) {
        thumbs.push(r.thumbnail);
        let mut p = Page::new(&r.url, &r.final_url, r.status, &r.content_type, &r.html);
        p.features.soft_404 = soft;
        p.redirect_chain = r.redirect_chain;
        p.features.phash = r.phash;
        p.features.timings = r.timings;
        pages.push(p);
        errors.push(r.error);
    }
    let mut t = if a.seed_thresholds {
        Thresholds::seed()
    } else {
        Thresholds::default()
    };
    if let Some(s) = a.sim_threshold {
        t.structure = s;
    }
    rt.shutdown_timeout(Duration::from_secs(5));
    // What the render stage would learn from these pages: parameters that change nothing.
    let mut learner = crate::page::params::Learner::default();
    let mut learned = Vec::new();
    for (p, e) in pages.iter().zip(&errors) {
        let is_html = p.content_type.is_empty() || p.content_type.contains("html");
        if e.is_empty()
            && (200..300).contains(&p.status)
            && p.final_url == p.url
            && crate::page::rules::page_rule(p.status, is_html, &p.features).is_none()
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
    let extras = super::cluster::Extras {
        thumbs: &thumbs,
        probes: &probes,
        learned: &learned,
    };
    super::cluster::report(&pages, errors, &extras, 0, &t, Some(&a.output), "similar")
}

/// Render every URL of `list`, `batch` at a time, with a progress bar on a terminal.
async fn render_all(r: &Arc<Renderer>, list: &[String], batch: usize) -> Result<Vec<Rendered>> {
    let bar = if std::io::stderr().is_terminal() {
        indicatif::ProgressBar::new(list.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut out = Vec::with_capacity(list.len());
    for chunk in list.chunks(batch.max(1)) {
        let tasks: Vec<_> = chunk
            .iter()
            .map(|u| {
                let (r, u, bar) = (r.clone(), u.clone(), bar.clone());
                tokio::spawn(async move {
                    let x = r.render(&u).await;
                    bar.inc(1);
                    x
                })
            })
            .collect();
        for t in tasks {
            out.push(t.await.context("a render task failed")?);
        }
    }
    bar.finish_and_clear();
    Ok(out)
}

/// Which rendered pages are soft 404s: each scope's pages judged together by its template
/// ([`soft404::judge_scope`]); a page with an error never is.
fn soft_404s(
    rendered: &[Rendered],
    templates: &std::collections::HashMap<String, soft404::Template>,
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
        let site = templates.get(soft404::origin_scope(&scope));
        for (&i, soft) in idx.iter().zip(soft404::judge_scope(t, site, &pages)) {
            out[i] = soft;
        }
    }
    out
}

/// What the probes found: each scope's template, and (scope, probe URL, what it answered) for
/// the report.
type Probed = (
    std::collections::HashMap<String, soft404::Template>,
    Vec<(String, String, String)>,
);

/// Each scope's "not found" template ([`soft404`]): one probe per origin and first path segment
/// of the pages rendered without error, derived from the first page of that scope.
async fn soft_404_templates(r: &Arc<Renderer>, pages: &[Rendered], batch: usize) -> Result<Probed> {
    let mut scopes: Vec<(String, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for p in pages.iter().filter(|p| p.error.is_empty()) {
        let key = soft404::scope_key(&p.url);
        // A section's root is judged against the origin's answer too: probe the origin.
        let mut wanted = vec![(key, p.url.clone())];
        if soft404::is_section_root(&p.url) {
            let origin = soft404::origin_scope(&p.url).to_string();
            wanted.push((origin.clone(), format!("{origin}/")));
        }
        for (key, sample) in wanted {
            if seen.insert(key.clone()) {
                if let Some(u) = soft404::fresh_probe(&sample, &key) {
                    scopes.push((key, u));
                }
            }
        }
    }
    let probes: Vec<String> = scopes.iter().map(|(_, u)| u.clone()).collect();
    let answers = render_all(r, &probes, batch).await?;
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
    Ok((out, seen))
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
