//! Issue 26: soft 404s, measured on a labelled loopback set. Four sites serve the same real
//! documentation pages (an article, a thin contact page, a search page, an index of links, a
//! home page, a blog post) and answer unknown URLs each their own way: an honest 404; 200 with a
//! styled "not found" page in the site's full template; a redirect of every unknown URL to the
//! home page; 200 with a template that echoes the requested path. `crawlsieve similar` renders
//! every URL in Chromium, probes each host and first path segment, and the test scores its
//! `soft_404` verdicts against the labels (precision ≥ 0.99, recall ≥ 0.95; every real page
//! negative). The table is printed (docs/render.md, "Soft 404s").

mod common;

use std::net::TcpListener;

use common::site::{redirect, request_path, response, ARTICLE};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Behaviour {
    Honest404,
    Styled200,
    RedirectHome,
    Echo200,
}

const BEHAVIOURS: [Behaviour; 4] = [
    Behaviour::Honest404,
    Behaviour::Styled200,
    Behaviour::RedirectHome,
    Behaviour::Echo200,
];
/// The real pages of every site (and the site's bare origin, which lands on `/`: found by
/// review, a raw string comparison called it a soft 404 on the redirecting site).
const REAL: [&str; 6] = [
    "/",
    "/docs/intro.html",
    "/docs/tiny.html",
    "/docs/search.html",
    "/docs/index.html",
    "/blog/post-1",
];
/// URLs no site has.
const UNKNOWN: [&str; 6] = [
    "/docs/installing-on-windows.html",
    // An unknown section: its root is judged against the origin's answer (`judge_scope`).
    "/manual/",
    "/docs/old-api.html",
    "/docs/faq.html",
    "/blog/post-99",
    "/blog/release-notes-1-0",
];

fn template(title: &str, main: &str) -> String {
    format!(
        "<!doctype html><html><head><title>{title} - Example Docs</title></head><body>\
         <header><nav><a href=/>Home</a> <a href=/docs/index.html>Docs</a> <a href=/blog/>Blog</a> <a href=/docs/search.html>Search</a></nav></header>\
         <main>{main}</main>\
         <footer>Example Docs is maintained by volunteers. Licensed CC BY-SA. <a href=/about>About</a></footer></body></html>"
    )
}

fn real_page(path: &str) -> Option<String> {
    Some(match path {
        "/" => template("Welcome", "<h1>Example Docs</h1><p>Guides and reference for the example toolkit: installation, configuration, tutorials and the release notes of every version.</p><ul><li><a href=/docs/intro.html>Introduction</a></li><li><a href=/blog/post-1>Release 2.0</a></li></ul>"),
        "/docs/intro.html" => template("Introduction", &format!("<h1>Introduction</h1>{ARTICLE}")),
        "/docs/tiny.html" => template("Contact", "<h1>Contact</h1><p>Write to the maintainers.</p>"),
        "/docs/search.html" => template("Search", "<h1>Search</h1><form><input name=q><button>Go</button></form>"),
        "/docs/index.html" => template("Index", "<h1>Index</h1><ul><li><a href=/docs/intro.html>Introduction</a></li><li><a href=/docs/tiny.html>Contact</a></li><li><a href=/docs/search.html>Search</a></li><li><a href=/docs/api.html>API reference</a></li><li><a href=/docs/faq.html>Questions</a></li></ul>"),
        "/blog/post-1" => template("Release 2.0", "<h1>Release 2.0</h1><p>Version two brings a faster parser, a plugin interface and a new configuration format. Upgrading takes a few minutes; the old format is read with a warning until version three.</p><p>Thanks to the forty contributors of this release.</p>"),
        _ => return None,
    })
}

fn serve(b: Behaviour) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
    std::thread::spawn(move || {
        for stream in l.incoming().flatten() {
            std::thread::spawn(move || {
                let Some(path) = request_path(&stream) else {
                    return;
                };
                let mut w = stream;
                let html = |status: &str, body: String| {
                    response(status, "text/html; charset=utf-8", body.as_bytes())
                };
                let not_found = template("Page not found", "<h1>Page not found</h1><p>Sorry, the page you were looking for could not be found. It may have moved, or the link may be wrong.</p>");
                let resp = match (real_page(&path), b) {
                    (Some(p), _) => html("200 OK", p),
                    (None, Behaviour::Honest404) => html("404 Not Found", not_found),
                    (None, Behaviour::Styled200) => html("200 OK", not_found),
                    (None, Behaviour::RedirectHome) => redirect("/"),
                    (None, Behaviour::Echo200) => html(
                        "200 OK",
                        template(
                            "Not here",
                            &format!("<h1>No page named {path}</h1><p>There is nothing at {path} yet.</p>"),
                        ),
                    ),
                };
                let _ = std::io::Write::write_all(&mut w, &resp);
            });
        }
    });
    base
}

#[test]
fn soft_404_precision_and_recall_on_the_labelled_loopback_set() {
    let behaviours = BEHAVIOURS;
    let labelled = labelled_set();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    let urls: Vec<&str> = labelled.iter().map(|(u, _, _)| u.as_str()).collect();
    std::fs::write(&list, urls.join("\n")).unwrap();
    let out = dir.path().join("r.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["similar", "-l"])
        .arg(&list)
        .arg("-o")
        .arg(&out)
        .args(["-t", "2", "--page-timeout", "15s", "--allow", "127.0.0.1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let rows = report["urls"].as_array().unwrap();
    assert_eq!(rows.len(), labelled.len());
    let (mut tp, mut fp, mut fneg) = (0, 0, 0);
    let mut per: Vec<String> = Vec::new();
    for (row, (url, b, truth)) in rows.iter().zip(&labelled) {
        assert_eq!(row["url"].as_str().unwrap(), url);
        assert_eq!(row["error"].as_str().unwrap(), "", "{url} rendered");
        let said = row["rule"].as_str() == Some("soft_404");
        match (said, *truth) {
            (true, true) => tp += 1,
            (true, false) => {
                fp += 1;
                per.push(format!("false positive {b:?} {url}"));
            }
            (false, true) => {
                fneg += 1;
                per.push(format!("missed {b:?} {url} ({:?})", row["rule"]));
            }
            _ => {}
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fneg).max(1) as f64;
    println!(
        "soft 404 on the labelled loopback set: {} URLs ({} soft 404s), tp {tp}, fp {fp}, fn {fneg}: precision {precision:.3}, recall {recall:.3}",
        labelled.len(),
        labelled.iter().filter(|l| l.2).count()
    );
    for b in behaviours {
        let of = |want: bool| {
            rows.iter()
                .zip(&labelled)
                .filter(|(_, l)| l.1 == b && l.2 == want)
                .filter(|(r, _)| r["rule"].as_str() == Some("soft_404"))
                .count()
        };
        println!(
            "  {b:?}: soft_404 said of {} unknown URLs, of {} real pages",
            of(true),
            of(false)
        );
    }
    assert!(
        per.is_empty() || precision >= 0.99 && recall >= 0.95,
        "{per:#?}"
    );
    assert!(precision >= 0.99, "precision {precision}: {per:#?}");
    assert!(recall >= 0.95, "recall {recall}: {per:#?}");
    // The honest site's unknown URLs stay what their status says.
    let honest: Vec<&serde_json::Value> = rows
        .iter()
        .zip(&labelled)
        .filter(|(r, l)| l.1 == Behaviour::Honest404 && r["status_code"] == 404)
        .map(|(r, _)| r)
        .collect();
    assert_eq!(
        honest.len(),
        UNKNOWN.len(),
        "the honest site answers its unknown URLs 404"
    );
    assert!(honest.iter().all(|r| r["rule"].as_str() == Some("E3")));
}

/// The labelled loopback set: (url, behaviour, is a soft 404), one server per behaviour.
fn labelled_set() -> Vec<(String, Behaviour, bool)> {
    let mut labelled = Vec::new();
    for b in BEHAVIOURS {
        let base = serve(b);
        labelled.push((base.clone(), b, false));
        for p in REAL {
            labelled.push((format!("{base}{p}"), b, false));
        }
        for p in UNKNOWN {
            labelled.push((format!("{base}{p}"), b, b != Behaviour::Honest404));
        }
    }
    labelled
}

/// The same set through the Kafka pipeline: URL events → `crawlsieve gate` → fetch topic →
/// `crawlsieve render` (real Chromium, a Redis of the test's own for the shared templates, a
/// few pages per batch so scopes are judged across batches) → the results topic, whose `rule`
/// is scored against the labels like `similar`'s; the probes are counted in the metrics.
#[test]
fn soft_404_in_the_render_stage_on_the_labelled_loopback_set() {
    use common::kafka::{create_topics, produce, read_all, Tansu};
    let labelled = labelled_set();
    let redis = common::OwnRedis::start(&[]);
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(
        &b,
        &[
            ("urls", 2),
            ("fetch", 2),
            ("results", 2),
            ("urls.dead-letter", 1),
            ("fetch.dead-letter", 1),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("stage.toml");
    std::fs::write(
        &config,
        format!(
            "[kafka]\nbrokers = \"{b}\"\nbatch_size = 6\n[kafka.consumer]\n\"session.timeout.ms\" = 6000\n\
             [redis]\nurl = \"{}\"\nnamespace = \"s404\"\nfp_rate = 1e-9\n\
             [patterns]\nenable_url_pattern_dom_dedup = false\n\
             [render]\nallow = [\"127.0.0.1\"]\npage_timeout = \"15s\"\n\
             [sieve]\nallow_private = [\"127.0.0.1\"]\n",
            redis.url()
        ),
    )
    .unwrap();
    let events: Vec<Vec<u8>> = labelled
        .iter()
        .map(|(u, _, _)| u.clone().into_bytes())
        .collect();
    produce(&b, "urls", 2, &events);
    let run = |cmd: &str, extra: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args([
                cmd,
                "--config",
                config.to_str().unwrap(),
                "--idle-exit",
                "3s",
            ])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{cmd}: {err}");
        err
    };
    let n = labelled.len();
    let err = run("gate", &["--set", "kafka.group_id=s404-gate"]);
    // `base` and `base/` are one canonical URL: one event fewer per site.
    assert!(err.contains(&format!("emitted {}", n - 4)), "{err}");
    let err = run("render", &["--set", "kafka.group_id=s404-render"]);
    assert!(err.contains(&format!("consumed {} ", n - 4)), "{err}");
    let probes = err.matches("soft-404 probe").count();
    // One probe per scope with a 2xx page: per site, the origin, /docs, /blog and /manual
    // (the honest site answers /manual/ 404: nothing there to judge, no probe).
    assert_eq!(probes, 15, "{err}");
    let results = read_all(&b, "results", 2, std::time::Duration::from_secs(2));
    let v = common::schema_validator("cluster-assignment");
    let by: std::collections::HashMap<String, serde_json::Value> = results
        .iter()
        .map(|g| {
            let doc: serde_json::Value = serde_json::from_slice(&g.value).unwrap();
            if let Err(e) = v.validate(&doc) {
                panic!("{e}: {doc}");
            }
            (doc["url"].as_str().unwrap().to_string(), doc)
        })
        .collect();
    let (mut tp, mut fp, mut fneg) = (0, 0, 0);
    let mut per = Vec::new();
    for (url, b, truth) in &labelled {
        // The gate published `base` as `base/`.
        let key = if url.matches('/').count() == 2 {
            format!("{url}/")
        } else {
            url.clone()
        };
        let doc = &by[&key];
        assert_eq!(doc["error"], "", "{doc}");
        let said = doc["rule"] == "soft_404";
        match (said, *truth) {
            (true, true) => tp += 1,
            (true, false) => {
                fp += 1;
                per.push(format!("false positive {b:?} {url}"));
            }
            (false, true) => {
                fneg += 1;
                per.push(format!("missed {b:?} {url} ({})", doc["rule"]));
            }
            _ => {}
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fneg).max(1) as f64;
    println!("soft 404 in the render stage: tp {tp}, fp {fp}, fn {fneg}: precision {precision:.3}, recall {recall:.3}");
    assert!(precision >= 0.99 && recall >= 0.95, "{per:#?}");
    // A second render stage reads the templates from Redis: no probe again.
    produce(&b, "fetch", 2, &[results_fetch_event(&labelled[2].0)]);
    let err = run("render", &["--set", "kafka.group_id=s404-render-2"]);
    assert_eq!(err.matches("soft-404 probe").count(), 0, "{err}");
}

/// A fetch event for `url` (as the gate writes it).
fn results_fetch_event(url: &str) -> Vec<u8> {
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    serde_json::json!({"url": url, "original": url, "pattern": url, "host": host,
        "namespace": "s404", "gated_at": "2026-11-26T00:00:00Z"})
    .to_string()
    .into_bytes()
}

/// A hold-out site of `tests/data/soft404-holdout/<name>` (its README): real pages from Debian
/// documentation packages under `pages/`, unknown URLs answered as `behaviour.json` says.
fn serve_holdout(dir: std::path::PathBuf) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
    let behaviour: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("behaviour.json")).unwrap()).unwrap();
    let dir = std::sync::Arc::new(dir);
    let behaviour = std::sync::Arc::new(behaviour);
    std::thread::spawn(move || {
        for (n, stream) in (1u64..).zip(l.incoming().flatten()) {
            let (dir, b) = (dir.clone(), behaviour.clone());
            std::thread::spawn(move || {
                let Some(raw) = request_path(&stream) else {
                    return;
                };
                let path = raw.split(['?', '#']).next().unwrap_or("/").to_string();
                let rel = path.trim_start_matches('/');
                let file = if rel.is_empty() || rel.ends_with('/') {
                    dir.join("pages").join(rel).join("index.html")
                } else {
                    dir.join("pages").join(rel)
                };
                let ctype = match file.extension().and_then(|e| e.to_str()) {
                    Some("css") => "text/css",
                    Some("js") => "application/javascript",
                    Some("png") => "image/png",
                    Some("svg") => "image/svg+xml",
                    _ => "text/html; charset=utf-8",
                };
                let real = !rel.contains("..") && file.is_file();
                let resp = if real {
                    response("200 OK", ctype, &std::fs::read(&file).unwrap())
                } else {
                    let kind = b["kind"].as_str().unwrap_or("");
                    let body = b["body_file"]
                        .as_str()
                        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
                        .unwrap_or_default();
                    let esc = raw
                        .replace('&', "&amp;")
                        .replace('<', "&lt;")
                        .replace('>', "&gt;")
                        .replace('"', "&quot;");
                    let body = body
                        .replace("{{PATH}}", &esc)
                        .replace(
                            "{{REQUEST_ID}}",
                            &format!("{:016x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                        )
                        .replace(
                            "{{TIME}}",
                            &format!("2026-11-26T18:{:02}:{:02}Z", n % 60, (n * 7) % 60),
                        );
                    match kind {
                        "honest_404" => {
                            response("404 Not Found", "text/html; charset=utf-8", body.as_bytes())
                        }
                        "redirect" => redirect(b["location"].as_str().unwrap_or("/")),
                        _ => response("200 OK", "text/html; charset=utf-8", body.as_bytes()),
                    }
                };
                let mut w = stream;
                let _ = std::io::Write::write_all(&mut w, &resp);
            });
        }
    });
    base
}

/// The hold-out set (`tests/data/soft404-holdout/`, labelled by hand before any verdict was
/// seen, from Debian packages used nowhere else; measurement only, never tuned on): 8 sites, 68
/// real pages, 33 soft 404s, 11 honest 404s. The targets: precision ≥ 0.99, recall ≥
/// 0.95. Run with `cargo test --test soft404 -- --ignored --nocapture` (it renders ~120 pages).
#[test]
#[ignore = "a measurement (~2 min of Chromium): run by hand, figures in docs/render.md"]
fn soft_404_on_the_hold_out_set() {
    hold_out("soft404-holdout");
}

/// The second hold-out set (`tests/data/soft404-holdout-2/`, its README): built by another
/// session after the first set's misses were seen, from packages used nowhere else; measured
/// once the detector changes prompted by the first set were made.
#[test]
#[ignore = "a measurement (~2 min of Chromium): run by hand, figures in docs/render.md"]
fn soft_404_on_the_second_hold_out_set() {
    hold_out("soft404-holdout-2");
}

/// The third hold-out set (`tests/data/soft404-holdout-3/`): built by another session while
/// the second set's misses were being fixed, from packages used nowhere else; measured once.
#[test]
#[ignore = "a measurement (~2 min of Chromium): run by hand, figures in docs/render.md"]
fn soft_404_on_the_third_hold_out_set() {
    hold_out("soft404-holdout-3");
}

/// The fourth hold-out set (`tests/data/soft404-holdout-4/`): built by another session at the
/// end of the session that measured the third; every site has unknown directory-style URLs.
/// Not measured yet: measure it once, after the next change to the detector.
#[test]
#[ignore = "a measurement (~2 min of Chromium): run by hand, figures in docs/render.md"]
fn soft_404_on_the_fourth_hold_out_set() {
    hold_out("soft404-holdout-4");
}

fn hold_out(set: &str) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(set);
    let mut sites: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("labels.tsv").is_file())
        .collect();
    sites.sort();
    let mut labelled: Vec<(String, String, String)> = Vec::new(); // url, site, label
    for s in &sites {
        let base = serve_holdout(s.clone());
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        for line in std::fs::read_to_string(s.join("labels.tsv"))
            .unwrap()
            .lines()
        {
            let mut f = line.split('\t');
            let (Some(path), Some(label)) = (f.next(), f.next()) else {
                continue;
            };
            if !path.starts_with('/') {
                continue; // a header
            }
            labelled.push((format!("{base}{path}"), name.clone(), label.to_string()));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    let urls: Vec<&str> = labelled.iter().map(|l| l.0.as_str()).collect();
    std::fs::write(&list, urls.join("\n")).unwrap();
    let out = dir.path().join("r.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["similar", "-l"])
        .arg(&list)
        .arg("-o")
        .arg(&out)
        .args(["-t", "2", "--page-timeout", "20s", "--allow", "127.0.0.1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let rows = report["urls"].as_array().unwrap();
    assert_eq!(rows.len(), labelled.len());
    let (mut tp, mut fp, mut fneg) = (0, 0, 0);
    let mut wrong = Vec::new();
    for (row, (url, site, label)) in rows.iter().zip(&labelled) {
        let said = row["rule"].as_str() == Some("soft_404");
        let truth = label == "soft404";
        match (said, truth) {
            (true, true) => tp += 1,
            (true, false) => {
                fp += 1;
                wrong.push(format!("false positive [{site}] {url} ({label})"));
            }
            (false, true) => {
                fneg += 1;
                wrong.push(format!(
                    "missed [{site}] {url} (said {:?}, status {})",
                    row["rule"], row["status_code"]
                ));
            }
            _ => {}
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fneg).max(1) as f64;
    println!(
        "soft 404 on the hold-out set: {} URLs, tp {tp}, fp {fp}, fn {fneg}: precision {precision:.3}, recall {recall:.3}\n{}",
        labelled.len(),
        wrong.join("\n")
    );
    assert!(
        precision >= 0.99 && recall >= 0.95,
        "below the issue's targets"
    );
}

/// How a documentation site of the cluster-quality corpus answers unknown URLs in
/// [`soft_404_on_the_documentation_corpus`].
#[derive(Clone, Copy, Debug)]
enum Unknown {
    /// 200, a "not found" page.
    Styled200,
    /// 200, the site's own index page (a fallback route).
    IndexFallback,
    /// A redirect to the index page.
    RedirectHome,
}

/// Serve `root` (an HTML tree) on loopback; unknown paths answered as `u` says.
fn serve_tree(root: std::path::PathBuf, u: Unknown) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
    let root = std::sync::Arc::new(root);
    std::thread::spawn(move || {
        for stream in l.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                let Some(raw) = request_path(&stream) else {
                    return;
                };
                let path = raw.split(['?', '#']).next().unwrap_or("/").to_string();
                let rel = percent_encoding::percent_decode_str(path.trim_start_matches('/'))
                    .decode_utf8_lossy()
                    .to_string();
                let file = if rel.is_empty() || rel.ends_with('/') {
                    root.join(&rel).join("index.html")
                } else {
                    root.join(&rel)
                };
                let ctype = match file.extension().and_then(|e| e.to_str()) {
                    Some("css") => "text/css",
                    Some("js") => "application/javascript",
                    Some("png") => "image/png",
                    Some("svg") => "image/svg+xml",
                    Some("woff2") => "font/woff2",
                    _ => "text/html; charset=utf-8",
                };
                let resp = if !rel.contains("..") && file.is_file() {
                    response("200 OK", ctype, &std::fs::read(&file).unwrap())
                } else {
                    match u {
                        Unknown::Styled200 => response(
                            "200 OK",
                            "text/html; charset=utf-8",
                            b"<!doctype html><html><head><title>Page not found</title></head><body><h1>Page not found</h1><p>The page you asked for is not part of this documentation. It may have moved in a newer version; try the index or the search.</p></body></html>",
                        ),
                        Unknown::IndexFallback => response(
                            "200 OK",
                            "text/html; charset=utf-8",
                            &std::fs::read(root.join("index.html")).unwrap_or_default(),
                        ),
                        Unknown::RedirectHome => redirect("/"),
                    }
                };
                let mut w = stream;
                let _ = std::io::Write::write_all(&mut w, &resp);
            });
        }
    });
    base
}

fn html_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            html_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "html") {
            out.push(p);
        }
    }
}

/// Issue 26's done-when: no documentation page of the cluster-quality corpus
/// (`scripts/fetch-doc-corpus.sh`: rust-doc, python-django-doc, postgresql-doc-15) is classed
/// `soft_404`. Each package is served on loopback three times, answering unknown URLs with a
/// "not found" page, with its own index page (a fallback route), or with a redirect to it; a
/// sample of its real pages (every k-th of the sorted tree, index pages included) goes through
/// `crawlsieve similar`, which probes each scope. Every real page must stay what it is.
#[test]
#[ignore = "a measurement (~5 min of Chromium, needs scripts/fetch-doc-corpus.sh): run by hand, figures in docs/render.md"]
fn soft_404_on_the_documentation_corpus() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/doc-corpus");
    let sites = [
        (
            "rust-doc",
            "rust-doc/1.63.0_dfsg1-2/usr/share/doc/rust-doc/html",
        ),
        (
            "python-django-doc",
            "python-django-doc/3_3.2.25-0_deb12u7/usr/share/doc/python-django-doc/html",
        ),
        (
            "postgresql-doc-15",
            "postgresql-doc-15/15.20-0_deb12u1/usr/share/doc/postgresql-doc-15/html",
        ),
    ];
    let per_site: usize = common::env_or("SOFT404_CORPUS_PAGES", 40);
    let mut urls: Vec<(String, String)> = Vec::new(); // (url, label)
    for (name, rel) in sites {
        let root = corpus.join(rel);
        assert!(
            root.join("index.html").is_file(),
            "{}: run scripts/fetch-doc-corpus.sh",
            root.display()
        );
        let mut files = Vec::new();
        html_files(&root, &mut files);
        files.sort();
        let step = (files.len() / per_site).max(1);
        let sample: Vec<String> = files
            .iter()
            .step_by(step)
            .take(per_site)
            .chain(
                files
                    .iter()
                    .filter(|f| f.file_name().is_some_and(|n| n == "index.html"))
                    .take(5),
            )
            .map(|f| {
                f.strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace(' ', "%20")
            })
            .collect();
        for u in [
            Unknown::Styled200,
            Unknown::IndexFallback,
            Unknown::RedirectHome,
        ] {
            let base = serve_tree(root.clone(), u);
            for p in &sample {
                urls.push((format!("{base}/{p}"), format!("{name} {u:?}")));
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    std::fs::write(
        &list,
        urls.iter()
            .map(|(u, _)| u.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let out = dir.path().join("r.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["similar", "-l"])
        .arg(&list)
        .arg("-o")
        .arg(&out)
        .args(["-t", "2", "--page-timeout", "20s", "--allow", "127.0.0.1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let rows = report["urls"].as_array().unwrap();
    let mut by: std::collections::BTreeMap<String, (usize, usize, usize)> = Default::default();
    let mut soft = Vec::new();
    for (row, (url, label)) in rows.iter().zip(&urls) {
        assert_eq!(row["url"].as_str().unwrap(), url);
        let e = by.entry(label.clone()).or_default();
        e.0 += 1;
        if row["error"].as_str() != Some("") {
            e.2 += 1;
        } else if row["rule"].as_str() == Some("soft_404") {
            e.1 += 1;
            soft.push(format!("{label} {url}"));
        }
    }
    println!(
        "soft 404 on the documentation corpus ({} pages):",
        rows.len()
    );
    for (label, (n, s, err)) in &by {
        println!("  {label}: {n} real pages, {s} said soft_404, {err} not rendered");
    }
    assert!(soft.is_empty(), "real pages said soft_404: {soft:#?}");
}
