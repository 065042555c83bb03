//! `crawlsieve cluster`: near-duplicate and rule clusters for pages already fetched (JSON Lines
//! in; the seed's report out as JSON or CSV, `schemas/cluster-report.v1.json`).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::page::cluster::eligible;
use crate::page::rule_pages::Rule;
use crate::page::similarity::Thresholds;
use crate::page::{Page, Timings};
use crate::url::Canonicalizer;

/// `crawlsieve cluster` arguments.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// JSON Lines of fetched pages (`url`, `final_url`, `status`, `content_type`, `html`,
    /// optional `redirect_chain`, `timings`, `phash`); `-` or nothing reads stdin.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// WARC files (plain or gzipped) to read `response` records from, instead of JSON Lines;
    /// redirects are followed inside the archive. Repeatable.
    #[arg(
        long,
        env = "CRAWLSIEVE_WARC",
        value_delimiter = ',',
        value_name = "WARC"
    )]
    pub warc: Vec<PathBuf>,
    /// Output file: `.json` (default: JSON on stdout), `.csv`, or `.html` (a self-contained
    /// page: clusters as rows of thumbnails, filterable by host and class); repeatable
    /// (comma-separated in the variable): one clustering, several files.
    #[arg(short = 'o', long, env = "CRAWLSIEVE_REPORT", value_delimiter = ',')]
    pub output: Vec<PathBuf>,
    /// Use the seed's thresholds and scales exactly (content ≥ 0.97 at scale 16, visual ≥ 0.99
    /// at scale 20; see docs/page-clustering.md).
    #[arg(long, env = "CRAWLSIEVE_SEED_THRESHOLDS", value_parser = clap::builder::BoolishValueParser::new())]
    pub seed_thresholds: bool,
    /// Content-similarity threshold (default 0.95 = SimHash distance ≤ 3).
    #[arg(long, env = "CRAWLSIEVE_CONTENT_THRESHOLD", value_parser = unit_interval)]
    pub content: Option<f64>,
    /// Structure-similarity threshold (default 0.85); `--sim-threshold` (websiteSimilar's name)
    /// is the same, and is reported as `meta.sim_threshold`.
    #[arg(
        long,
        env = "CRAWLSIEVE_STRUCTURE_THRESHOLD",
        alias = "sim-threshold",
        value_parser = unit_interval
    )]
    pub structure: Option<f64>,
}

/// An input line longer than this is skipped (an HTML page at the parser's limit, escaped).
const MAX_LINE_BYTES: usize = 4 * crate::page::features::MAX_HTML_BYTES;

/// A threshold: a number in 0..1.
pub(crate) fn unit_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("{s:?} is not a similarity between 0 and 1")),
    }
}

/// One input line.
#[derive(Debug, Deserialize)]
struct InPage {
    url: String,
    #[serde(default)]
    final_url: String,
    /// `None`: absent (a record with neither `status`, `html` nor `error` is no page).
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    content_type: String,
    #[serde(default)]
    html: String,
    #[serde(default)]
    redirect_chain: Vec<String>,
    #[serde(default)]
    timings: Option<Timings>,
    /// Perceptual hash of a screenshot, as 16 hex digits.
    #[serde(default)]
    phash: Option<String>,
    /// A thumbnail for the HTML report: a base64 `data:image/jpeg` or `data:image/png` URI
    /// (anything else is ignored).
    #[serde(default)]
    thumbnail: Option<String>,
    #[serde(default)]
    error: String,
}

/// One row of the report (the seed's columns, plus `rule`).
#[derive(Debug, Serialize)]
struct OutUrl {
    id: usize,
    url: String,
    normalized_url: String,
    final_url: String,
    redirect_chain: Vec<String>,
    status_code: u16,
    content_length: usize,
    content_type: String,
    error: String,
    title: String,
    cluster_id: String,
    is_canonical: bool,
    similarity_to_canonical: f64,
    /// Whether the similarities were measured against the canonical (false: a page in no
    /// cluster, or a rule-cluster member without HTML to compare; its zeros are no distance).
    similarity_measured: bool,
    content_sim: f64,
    structure_sim: f64,
    /// `None` (null) when the page or its canonical has no screenshot (not rendered).
    visual_sim: Option<f64>,
    /// `None` (null) when the page or its canonical has no timings (not rendered).
    behavior_sim: Option<f64>,
    rule: Option<Rule>,
    /// Whether the page was rendered in Chromium (`similar`; absent in `cluster`'s report,
    /// whose input says nothing of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    rendered: Option<bool>,
    /// Why `similar --render auto` rendered it (`signal:app_root`, `learning`, `check`,
    /// `differs`, `canonical`, `always`); null when it was not rendered. Absent in `cluster`.
    #[serde(skip_serializing_if = "Option::is_none")]
    render_reason: Option<Option<String>>,
}

#[derive(Debug, Serialize)]
struct OutCluster {
    cluster_id: String,
    canonical_url: String,
    member_ids: Vec<usize>,
    rule: Option<Rule>,
}

#[derive(Debug, Serialize)]
struct Meta {
    total_urls: usize,
    eligible_html_urls: usize,
    total_clusters: usize,
    unreadable_lines: usize,
    /// websiteSimilar's field: the structure-similarity threshold (`--sim-threshold`).
    sim_threshold: f64,
    thresholds: Thresholds,
    generated_at: String,
    /// `similar`'s `--render` (absent in `cluster`'s report).
    #[serde(skip_serializing_if = "Option::is_none")]
    render_mode: Option<String>,
    /// Pages rendered in Chromium (`similar`).
    #[serde(skip_serializing_if = "Option::is_none")]
    rendered_urls: Option<usize>,
}

#[derive(Debug, Serialize)]
struct Report {
    urls: Vec<OutUrl>,
    clusters: Vec<OutCluster>,
    meta: Meta,
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Run `crawlsieve cluster`.
pub fn run(a: ClusterArgs) -> Result<()> {
    for o in &a.output {
        report_format(o)?;
    }
    let t = thresholds(&a);
    let mut input = Input::default();
    let mut warc_pages = 0usize;
    for w in &a.warc {
        warc_pages += read_warc(w, &mut input)?;
    }
    // Only WARC files given, and not one response record in any: not WARC files at all (or
    // empty ones) — an input error, not a report of nothing.
    if !a.warc.is_empty() && a.files.is_empty() && warc_pages == 0 && input.pages.is_empty() {
        return Err(super::exit::input(format!(
            "--warc: no WARC response record could be read in {} (are they WARC files?)",
            a.warc
                .iter()
                .map(|w| w.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    read_files(&a, &mut input)?;
    let Input {
        pages,
        errors,
        thumbs,
        unreadable,
    } = input;
    debug_assert_eq!(thumbs.len(), pages.len(), "a thumbnail slot per page");
    let extras = Extras {
        thumbs: &thumbs,
        probes: &[],
        learned: &[],
        rendered: &[],
        mode: None,
        why: &[],
    };
    report(
        &pages, errors, &extras, unreadable, &t, &a.output, "cluster",
    )
}

/// 1. The thresholds: the default or the seed's, with `--content` and `--structure` over them.
fn thresholds(a: &ClusterArgs) -> Thresholds {
    let mut t = if a.seed_thresholds {
        Thresholds::seed()
    } else {
        Thresholds::default()
    };
    if let Some(c) = a.content {
        t.content = c;
    }
    if let Some(s) = a.structure {
        t.structure = s;
    }
    t
}

/// The pages read so far: a row each, with its error and thumbnail, and the lines skipped.
#[derive(Default)]
struct Input {
    pages: Vec<Page>,
    errors: Vec<String>,
    // The HTML report's thumbnails, by page (given in the input; WARC records have none).
    thumbs: Vec<Option<String>>,
    unreadable: usize,
}

impl Input {
    // A page whose HTML is over the parser's bounds is a row with an error, not a stopped run.
    fn add(
        &mut self,
        (page, refused): (Page, Option<crate::page::features::HtmlRefused>),
        error: String,
    ) {
        self.pages.push(page);
        self.errors.push(match refused {
            Some(e) => format!("unparsable: {e}"),
            None => error,
        });
    }
}

/// 2. Read the response records of one `--warc` file into `input`; the number of them.
fn read_warc(w: &std::path::Path, input: &mut Input) -> Result<usize> {
    if w.is_dir() {
        return Err(super::exit::input(format!(
            "--warc {}: is a directory (give the WARC files in it)",
            w.display()
        )));
    }
    let f = std::fs::File::open(w)
        .map_err(|e| super::exit::input(format!("--warc {}: cannot open: {e}", w.display())))?;
    let warc = crate::page::warc::read(std::io::BufReader::new(f));
    // No response in it: said (a warcinfo- or revisit-only segment is a WARC file too, so
    // only a run in which no WARC gives a page at all is an input error: below).
    if warc.responses.is_empty() {
        let why = warc
            .errors
            .first()
            .map_or("no response record in it".to_string(), |e| e.to_string());
        eprintln!(
            "crawlsieve cluster: --warc {}: no WARC response record read ({why})",
            w.display()
        );
    }
    let rs = &warc.responses;
    for (start, end, chain) in crate::page::warc::resolve(rs) {
        let (s, e) = (&rs[start], &rs[end]);
        let html = String::from_utf8_lossy(&e.body);
        let mut page = Page::parse(&s.uri, &e.uri, e.status, &e.content_type, &html);
        if chain.len() > 1 {
            page.0.redirect_chain = chain;
        }
        input.add(page, String::new());
        input.thumbs.push(None);
    }
    // A damaged record: a row with its error when its URI is known, else a count.
    for e in &warc.errors {
        eprintln!("crawlsieve cluster: {}: {e}", w.display());
        match &e.uri {
            Some(u) => {
                input.add(
                    (Page::new(u, u, 0, "", ""), None),
                    format!("unreadable WARC record {}: {}", e.record, e.why),
                );
                input.thumbs.push(None);
            }
            None => input.unreadable += 1,
        }
    }
    Ok(warc.responses.len())
}

/// 3. Read the JSON Lines files (stdin when neither files nor WARCs are given) into `input`.
fn read_files(a: &ClusterArgs, input: &mut Input) -> Result<()> {
    // JSON Lines from the files (`-` is stdin); stdin when neither files nor WARCs are given.
    let stdin_only = [PathBuf::from("-")];
    let files: &[PathBuf] = if a.files.is_empty() && a.warc.is_empty() {
        &stdin_only
    } else {
        &a.files
    };
    for f in files {
        if f.as_os_str() == "-" {
            read_lines(Box::new(std::io::stdin().lock()), "stdin", input)?;
        } else {
            let file = std::fs::File::open(f)
                .map_err(|e| super::exit::input(format!("cannot open {}: {e}", f.display())))?;
            read_lines(
                Box::new(std::io::BufReader::new(file)),
                &f.display().to_string(),
                input,
            )?;
        }
    }
    Ok(())
}

/// 4. Read one JSON Lines input (`name` in messages) into `input`, skipping what is no page.
fn read_lines(r: Box<dyn BufRead>, name: &str, input: &mut Input) -> Result<()> {
    let mut lines = crate::input::LineReader::new(r, MAX_LINE_BYTES);
    let mut line = crate::input::Line::default();
    let mut n = 0usize;
    while lines
        .read_line(&mut line)
        .with_context(|| format!("reading {name} after line {n}"))?
    {
        n += 1;
        if line.truncated {
            input.unreadable += 1;
            eprintln!(
                "crawlsieve cluster: {name}:{n}: skipped: a line over {MAX_LINE_BYTES} bytes"
            );
            continue;
        }
        // Invalid UTF-8 (a Latin-1 page pasted into JSON) is decoded lossily, per line.
        let text = String::from_utf8_lossy(&line.bytes);
        if let std::borrow::Cow::Owned(_) = text {
            eprintln!("crawlsieve cluster: {name}:{n}: invalid UTF-8 replaced with U+FFFD");
        }
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<InPage>(&text) {
            Ok(p) if p.status.is_none() && p.html.is_empty() && p.error.is_empty() => {
                input.unreadable += 1;
                eprintln!("crawlsieve cluster: {name}:{n}: skipped: no `status`, `html` or `error` (a fetched page has a status and its html; a failed fetch, its error)");
            }
            Ok(p) => add_line(p, name, n, input),
            Err(e) => {
                input.unreadable += 1;
                // A file that is no JSON Lines at all (a URL list) says so once, not per line.
                if input.unreadable <= 10 {
                    eprintln!("crawlsieve cluster: {name}:{n}: skipped: not a JSON object of a fetched page ({e})");
                }
                if input.unreadable == 10 {
                    eprintln!("crawlsieve cluster: {name}: further skipped lines not listed; `cluster` reads JSON Lines of fetched pages (README, \"Input for cluster\"); to render a list of URLs, use `crawlsieve similar -l FILE`");
                }
            }
        }
    }
    Ok(())
}

/// 5. Add the page of line `n` of `name` to `input`, without a bad `phash` or thumbnail.
fn add_line(p: InPage, name: &str, n: usize, input: &mut Input) {
    let status = p.status.unwrap_or(0);
    let mut page = Page::parse(&p.url, &p.final_url, status, &p.content_type, &p.html);
    page.0.redirect_chain = p.redirect_chain;
    page.0.features.timings = p.timings;
    // A hash that is not 1–16 hex digits is said, and the page compared
    // without it (text and structure still are), as a thumbnail that is not one.
    page.0.features.phash = p.phash.as_ref().and_then(|h| {
        let v = (h.len() <= 16)
            .then(|| u64::from_str_radix(h, 16).ok())
            .flatten();
        if v.is_none() {
            eprintln!("crawlsieve cluster: {name}:{n}: phash {h:?} ignored: not 1 to 16 hex digits (a 64-bit perceptual hash)");
        }
        v
    });
    input.add(page, p.error);
    input.thumbs.push(p.thumbnail.filter(|t| {
        let ok = super::report_html::is_data_image(t);
        if !ok {
            eprintln!("crawlsieve cluster: {name}:{n}: thumbnail ignored: not a base64 data:image/jpeg or data:image/png URI");
        }
        ok
    }));
}

/// Cluster `pages` and write the seed's report (JSON, or CSV by the output's extension).
/// What the HTML report shows beside the clusters.
pub(crate) struct Extras<'a> {
    /// A thumbnail per page (`data:` URIs), where there is one.
    pub thumbs: &'a [Option<String>],
    /// Soft-404 probes: (scope, probe URL, what it answered).
    pub probes: &'a [(String, String, String)],
    /// Query parameters these pages show change nothing ([`crate::page::params`]).
    pub learned: &'a [crate::page::params::Learned],
    /// Whether each page was rendered (`similar`: one per page, and the mode; `cluster`:
    /// empty and `None`).
    pub rendered: &'a [bool],
    /// `similar`'s `--render`.
    pub mode: Option<crate::render::auto::Mode>,
    /// Why each page was rendered (`similar`; empty for `cluster`).
    pub why: &'a [Option<String>],
}

pub(crate) fn report(
    pages: &[Page],
    errors: Vec<String>,
    extras: &Extras,
    unreadable: usize,
    t: &Thresholds,
    outputs: &[std::path::PathBuf],
    command: &str,
) -> Result<()> {
    let assignments = assign(pages, &errors, t, extras.learned);
    let urls = out_urls(pages, &assignments, errors, extras);
    let clusters = out_clusters(pages, &assignments);
    let report = Report {
        meta: Meta {
            total_urls: urls.len(),
            eligible_html_urls: pages.iter().filter(|p| eligible(p)).count(),
            total_clusters: clusters.len(),
            unreadable_lines: unreadable,
            sim_threshold: t.structure,
            thresholds: *t,
            generated_at: crate::events::now_rfc3339(),
            render_mode: extras.mode.map(|m| m.to_string()),
            rendered_urls: extras
                .mode
                .map(|_| extras.rendered.iter().filter(|r| **r).count()),
        },
        urls,
        clusters,
    };
    let names = if outputs.is_empty() {
        vec![write_report(&report, extras, None, command)?]
    } else {
        outputs
            .iter()
            .map(|o| write_report(&report, extras, Some(o), command))
            .collect::<Result<Vec<_>>>()?
    };
    summarize(&report, &names.join(", "), command)
}

/// Step 1: cluster the pages without an error; a page with one is its own canonical, in none. A
/// page whose URL carries a parameter `learned` says changes nothing is a canonical only when
/// its cluster has no page without one.
fn assign(
    pages: &[Page],
    errors: &[String],
    t: &Thresholds,
    learned: &[crate::page::params::Learned],
) -> Vec<crate::page::cluster::Assignment> {
    // A page with an error (refused, failed, unreadable, unparsable) is in no cluster: its
    // features say nothing about the page the URL serves.
    let ok: Vec<usize> = (0..pages.len()).filter(|&i| errors[i].is_empty()).collect();
    let ok_pages: Vec<Page> = ok.iter().map(|&i| pages[i].clone()).collect();
    let mut assignments: Vec<crate::page::cluster::Assignment> = (0..pages.len())
        .map(|i| crate::page::cluster::Assignment {
            is_canonical: false,
            canonical: i,
            ..Default::default()
        })
        .collect();
    let noisy: Vec<bool> = ok_pages
        .iter()
        .map(|p| carries_learned_param(&p.final_url, learned))
        .collect();
    for (a, &i) in crate::page::cluster::cluster_preferring(&ok_pages, t, &noisy)
        .into_iter()
        .zip(&ok)
    {
        assignments[i] = crate::page::cluster::Assignment {
            canonical: ok[a.canonical],
            ..a
        };
    }
    assignments
}

/// Whether `url`'s query has a parameter a learned rule of its host (`host[:port]`) says
/// changes nothing.
fn carries_learned_param(url: &str, learned: &[crate::page::params::Learned]) -> bool {
    if learned.is_empty() {
        return false;
    }
    // The learner's own keys (`crate::page::params`): the authority as written, lower-cased,
    // and parameter names as written (not percent-decoded).
    let host = crate::url::lex::host_port(url).to_ascii_lowercase();
    let query = url
        .split('#')
        .next()
        .unwrap_or("")
        .split_once('?')
        .map_or("", |(_, q)| q);
    query
        .split('&')
        .map(|kv| kv.split('=').next().unwrap_or(""))
        .any(|k| !k.is_empty() && learned.iter().any(|l| l.host == host && l.param == k))
}

/// 2. The report's rows: a page each, with its cluster and similarities to its canonical.
fn out_urls(
    pages: &[Page],
    assignments: &[crate::page::cluster::Assignment],
    errors: Vec<String>,
    extras: &Extras,
) -> Vec<OutUrl> {
    let canon = Canonicalizer::default();
    let mut buf = String::new();
    pages
        .iter()
        .zip(assignments)
        .zip(errors)
        .enumerate()
        .map(|(i, ((p, a), error))| OutUrl {
            id: i + 1,
            url: p.url.clone(),
            normalized_url: match canon.canonicalize_into(&p.url, None, &mut buf) {
                Ok(_) => buf.clone(),
                Err(_) => String::new(),
            },
            final_url: p.final_url.clone(),
            redirect_chain: p.redirect_chain.clone(),
            status_code: p.status,
            content_length: p.features.html_bytes,
            content_type: p.content_type.clone(),
            error,
            title: p.features.title.clone(),
            cluster_id: a.cluster_id.clone(),
            is_canonical: a.is_canonical,
            similarity_to_canonical: round(a.similarity_to_canonical),
            similarity_measured: a.measured,
            content_sim: round(a.sim.content),
            structure_sim: round(a.sim.structure),
            visual_sim: (p.features.phash.is_some() && pages[a.canonical].features.phash.is_some())
                .then(|| round(a.sim.visual)),
            behavior_sim: (p.features.timings.is_some()
                && pages[a.canonical].features.timings.is_some())
            .then(|| round(a.sim.behavior)),
            rule: a.rule,
            rendered: extras.rendered.get(i).copied(),
            render_reason: extras.why.get(i).cloned(),
        })
        .collect()
}

/// 3. The report's clusters, in the order of their first member, with their members' ids.
fn out_clusters(
    pages: &[Page],
    assignments: &[crate::page::cluster::Assignment],
) -> Vec<OutCluster> {
    let mut clusters: Vec<OutCluster> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, a) in assignments.iter().enumerate() {
        if a.cluster_id.is_empty() {
            continue;
        }
        let k = *at.entry(a.cluster_id.as_str()).or_insert_with(|| {
            clusters.push(OutCluster {
                cluster_id: a.cluster_id.clone(),
                canonical_url: pages[a.canonical].final_url.clone(),
                member_ids: Vec::new(),
                rule: a.rule,
            });
            clusters.len() - 1
        });
        clusters[k].member_ids.push(i + 1);
    }
    clusters
}

/// 4. Write the report to `output` (stdout without one) in its format; the name written to.
fn write_report(
    report: &Report,
    extras: &Extras,
    output: Option<&std::path::Path>,
    command: &str,
) -> Result<String> {
    let format = match output {
        Some(p) => report_format(p)?,
        None => ReportFormat::Json,
    };
    let name = output.map_or("stdout".to_string(), |p| p.display().to_string());
    let mut out: Box<dyn Write> = match output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let written = (|| -> Result<()> {
        match format {
            ReportFormat::Csv => write_csv(report, &mut out)?,
            ReportFormat::Html => out.write_all(html_report(report, extras, command).as_bytes())?,
            ReportFormat::Json => {
                serde_json::to_writer_pretty(&mut out, report)?;
                writeln!(out)?;
            }
        }
        out.flush()?;
        Ok(())
    })();
    written.with_context(|| format!("writing the report to {name}"))?;
    Ok(name)
}

/// 5. Say what was done on stderr; a partial-run error when pages were not done.
fn summarize(report: &Report, name: &str, command: &str) -> Result<()> {
    // Pages this run could not do: for `similar`, those refused by the address policy or not
    // rendered; for `cluster`, those whose HTML was over the parser's bounds (an `error` a
    // record brought with it is the crawler's, reported as it came). The `error` column says
    // why.
    let did_not = |u: &&OutUrl| {
        if command == "similar" {
            !u.error.is_empty()
        } else {
            u.error.starts_with("unparsable:")
        }
    };
    // Refused by the address policy: a host that is not public (`… resolves to 127.0.0.1, a
    // loopback address …`), the one refusal `--allow` lifts. A line that is no http(s) URL or
    // names no host is a failure of its own.
    let private = |u: &&OutUrl| u.error.starts_with("refused") && u.error.contains(" address");
    let refused = report.urls.iter().filter(did_not).filter(private).count();
    let failed = report
        .urls
        .iter()
        .filter(did_not)
        .filter(|u| !private(u))
        .count();
    let n = |k: usize, one: &str, many: &str| super::lines::count_of(k as u64, one, many);
    let mut summary = format!(
        "crawlsieve {command}: {}, {} eligible (2xx HTML with enough text to compare), {}",
        n(report.meta.total_urls, "page", "pages"),
        report.meta.eligible_html_urls,
        n(report.meta.total_clusters, "cluster", "clusters")
    );
    if refused > 0 {
        summary.push_str(&format!(
            "; {refused} refused by the address policy (not public: allow a host with --allow HOST[:PORT])"
        ));
    }
    if failed > 0 {
        summary.push_str(&format!(
            "; {failed} not fetched or not rendered (see their `error`)"
        ));
    }
    // Lines that are no URL are no pages: counted apart (issue 45: "1 input lines skipped",
    // then "1 of 11 pages were not done" for ten pages all done).
    let skipped = report.meta.unreadable_lines;
    let skipped_text = n(skipped, "input line", "input lines") + " skipped (not a URL)";
    if skipped > 0 {
        summary.push_str(&format!("; {skipped_text}"));
    }
    eprintln!("{summary}");
    let pages = (refused + failed > 0).then(|| {
        let total = n(report.meta.total_urls, "page", "pages");
        format!(
            "{} of {total} were not done ({refused} refused, {failed} failed)",
            refused + failed
        )
    });
    let not_done: Vec<String> = pages
        .into_iter()
        .chain((skipped > 0).then_some(skipped_text))
        .collect();
    if !not_done.is_empty() {
        return Err(super::exit::partial(format!(
            "{name} written, but {}",
            not_done.join("; ")
        )));
    }
    Ok(())
}

pub use super::report_format::{report_format, ReportFormat};

/// The report as one self-contained HTML page ([`super::report_html`]): clusters in the JSON
/// report's order, each with its canonical page first; pages in no cluster after them.
fn html_report(r: &Report, extras: &Extras, command: &str) -> String {
    let thumbs = extras.thumbs;
    use super::report_html::{render, Group, Member};
    fn member<'a>(u: &'a OutUrl, thumbs: &'a [Option<String>]) -> Member<'a> {
        Member {
            id: u.id,
            url: &u.url,
            final_url: if u.final_url.is_empty() {
                &u.url
            } else {
                &u.final_url
            },
            status: u.status_code,
            title: &u.title,
            class: u.rule.map(Rule::code),
            // Only what was measured: a page against itself is 0; a page in no cluster, or a
            // rule-cluster member without HTML, has none.
            distance: u
                .similarity_measured
                .then(|| (1.0 - u.similarity_to_canonical).max(0.0)),
            error: &u.error,
            thumb: thumbs.get(u.id - 1).and_then(|t| t.as_deref()),
            rendered: u.rendered,
        }
    }
    let groups: Vec<Group> = r
        .clusters
        .iter()
        .map(|c| {
            let mut members: Vec<&OutUrl> =
                c.member_ids.iter().map(|&id| &r.urls[id - 1]).collect();
            members.sort_by_key(|u| !u.is_canonical);
            Group {
                id: &c.cluster_id,
                class: c.rule.map(Rule::code),
                members: members.into_iter().map(|u| member(u, thumbs)).collect(),
            }
        })
        .collect();
    let unclustered: Vec<Member> = r
        .urls
        .iter()
        .filter(|u| u.cluster_id.is_empty())
        .map(|u| member(u, thumbs))
        .collect();
    render(
        command,
        &r.meta.generated_at,
        r.urls.len(),
        &groups,
        &unclustered,
        extras.probes,
        extras.learned,
    )
}

/// The seed's CSV columns (plus `rule`), with a real CSV writer: titles contain commas.
fn write_csv(r: &Report, out: &mut dyn Write) -> Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "id",
        "url",
        "normalized_url",
        "final_url",
        "status_code",
        "content_length",
        "content_type",
        "error",
        "title",
        "cluster_id",
        "is_canonical",
        "similarity_to_canonical",
        "content_sim",
        "structure_sim",
        "visual_sim",
        "behavior_sim",
        "rule",
        "rendered",
        "render_reason",
    ])?;
    for u in &r.urls {
        w.write_record([
            u.id.to_string(),
            u.url.clone(),
            u.normalized_url.clone(),
            u.final_url.clone(),
            u.status_code.to_string(),
            u.content_length.to_string(),
            u.content_type.clone(),
            u.error.clone(),
            u.title.clone(),
            u.cluster_id.clone(),
            u.is_canonical.to_string(),
            u.similarity_to_canonical.to_string(),
            u.content_sim.to_string(),
            u.structure_sim.to_string(),
            u.visual_sim.map(|v| v.to_string()).unwrap_or_default(),
            u.behavior_sim.map(|v| v.to_string()).unwrap_or_default(),
            u.rule.map(|r| format!("{r:?}")).unwrap_or_default(),
            u.rendered.map(|r| r.to_string()).unwrap_or_default(),
            u.render_reason.clone().flatten().unwrap_or_default(),
        ])?;
    }
    w.flush()?;
    Ok(())
}
