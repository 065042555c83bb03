//! `similar --render auto` (issue 43) on a loopback site that mixes real static pages with
//! single-page-app shells, against `--render always` on the same site: every shell is rendered,
//! shells showing different content are never clustered together and identical ones are, the
//! static pages' duplicate pairs stay together with no distinct page merged, and most static
//! pages are never opened in the browser. Also: the HTTP fetch goes through the browser's egress
//! policy (a redirect to a forbidden loopback port, a forbidden port asked directly: refused, the
//! recorder there never reached). Needs Debian's Chromium.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::net::TcpListener;

use common::site::{recorder, redirect, request_path, response};

/// Words for the static pages' texts: each page draws its own sentences from them.
const WORDS: [&str; 48] = [
    "river",
    "engine",
    "library",
    "garden",
    "protocol",
    "harvest",
    "winter",
    "kernel",
    "castle",
    "market",
    "signal",
    "forest",
    "compiler",
    "bridge",
    "orchestra",
    "desert",
    "network",
    "painter",
    "glacier",
    "theorem",
    "harbour",
    "village",
    "satellite",
    "recipe",
    "volcano",
    "museum",
    "algorithm",
    "lantern",
    "meadow",
    "parliament",
    "telescope",
    "canyon",
    "festival",
    "archive",
    "railway",
    "island",
    "chemistry",
    "factory",
    "poetry",
    "mountain",
    "database",
    "cathedral",
    "orchard",
    "battery",
    "lighthouse",
    "tournament",
    "vineyard",
    "observatory",
];

/// A deterministic text of `n` sentences for `seed`.
fn text(seed: u64, n: usize) -> String {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::new();
    for _ in 0..n {
        out.push_str("<p>");
        for w in 0..12 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.push_str(WORDS[(x >> 33) as usize % WORDS.len()]);
            out.push_str(if w == 11 { ".</p>" } else { " " });
        }
    }
    out
}

/// A static documentation page: navigation, the text, a footer, a search script.
fn doc_page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><title>{title}</title><script src=/static/search.js></script></head>\
         <body><nav><a href=/>Home</a> <a href=/docs/>Docs</a></nav><main><h1>{title}</h1>{body}</main>\
         <footer>Example documentation</footer></body></html>"
    )
}

/// The one app shell every `/app/…` URL answers: an empty root, a script writing the content
/// for `location.pathname` (inline table, or fetched after load for `/app/item/f…`).
fn shell() -> String {
    let table: Vec<String> = (1..=4)
        .map(|i| {
            // /app/item/3 and /app/item/4 show the same content.
            let seed = if i == 4 { 3 } else { i };
            format!("'/app/item/{i}': `{}`", text(1000 + seed, 14))
        })
        .collect();
    format!(
        "<!doctype html><html><head><title>Shop</title></head><body><div id=\"root\"></div>\
         <script>const T = {{{}}}; const p = location.pathname; const root = document.getElementById('root');\
         if (T[p]) {{ root.innerHTML = '<main><h1>' + p + '</h1>' + T[p] + '</main>'; }}\
         else {{ fetch('/api' + p + '.json').then(r => r.json()).then(d => {{ root.innerHTML = '<main><h1>' + p + '</h1>' + d.html + '</main>'; }}); }}\
         </script></body></html>",
        table.join(",")
    )
}

/// The site: 40 static pages under their own paths (pairs /docs/d{i}.html and
/// /mirror/d{i}.html for i < 6 are the same text with another footer line), four inline shells
/// and two that fetch their content, a redirect to `forbidden_port`.
fn serve(forbidden_port: u16) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
    std::thread::spawn(move || {
        for stream in l.incoming().flatten() {
            std::thread::spawn(move || {
                let Some(path) = request_path(&stream) else {
                    return;
                };
                let mut w = stream;
                let html =
                    |body: String| response("200 OK", "text/html; charset=utf-8", body.as_bytes());
                let num = |p: &str, pre: &str| -> Option<u64> {
                    p.strip_prefix(pre)?.strip_suffix(".html")?.parse().ok()
                };
                let resp = if let Some(i) = num(&path, "/docs/d") {
                    html(doc_page(&format!("Chapter {i}"), &text(i, 16)))
                } else if let Some(i) = num(&path, "/mirror/d") {
                    html(doc_page(&format!("Chapter {i}"), &text(i, 16)).replace(
                        "Example documentation",
                        "Mirror of the example documentation",
                    ))
                } else if path.starts_with("/app/item/") {
                    html(shell())
                } else if let Some(n) = path
                    .strip_prefix("/api/app/item/f")
                    .and_then(|r| r.strip_suffix(".json"))
                {
                    let seed: u64 = n.parse().unwrap_or(0);
                    let body = serde_json::json!({ "html": text(2000 + seed, 14) }).to_string();
                    response("200 OK", "application/json", body.as_bytes())
                } else if path == "/static/search.js" {
                    response(
                        "200 OK",
                        "text/javascript",
                        b"window.search = function () {};",
                    )
                } else if path == "/to-forbidden" {
                    redirect(&format!("http://127.0.0.1:{forbidden_port}/secret"))
                } else {
                    response("404 Not Found", "text/html", b"<h1>Not found</h1>")
                };
                let _ = w.write_all(&resp);
            });
        }
    });
    base
}

/// Run `similar` in `mode` over `urls`; the report's rows.
fn similar(
    mode: &str,
    urls: &[String],
    allow: &str,
) -> (Vec<serde_json::Value>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    std::fs::write(&list, urls.join("\n")).unwrap();
    let out = dir.path().join("report.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args([
            "similar",
            "--render",
            mode,
            "-t",
            "4",
            "--allow",
            allow,
            "--no-soft-404-probe",
            "-l",
        ])
        .arg(&list)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(5),
        "{mode}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let v = common::schema_validator("cluster-report");
    if let Err(e) = v.validate(&doc) {
        panic!("{mode}: {e}");
    }
    (doc["urls"].as_array().unwrap().clone(), doc["meta"].clone())
}

/// Unordered pairs of URLs that share a cluster.
fn pairs(rows: &[serde_json::Value]) -> BTreeSet<(String, String)> {
    let mut by: HashMap<&str, Vec<&str>> = HashMap::new();
    for r in rows {
        let c = r["cluster_id"].as_str().unwrap();
        if !c.is_empty() {
            by.entry(c).or_default().push(r["url"].as_str().unwrap());
        }
    }
    let mut out = BTreeSet::new();
    for m in by.values() {
        for (i, a) in m.iter().enumerate() {
            for b in &m[i + 1..] {
                let (a, b) = if a < b { (a, b) } else { (b, a) };
                out.insert((a.to_string(), b.to_string()));
            }
        }
    }
    out
}

#[test]
fn auto_renders_what_scripts_write_and_clusters_as_always_does() {
    let rec = recorder();
    let base = serve(rec.port);
    let port = base.rsplit(':').next().unwrap().to_string();
    let mut urls: Vec<String> = (0..34).map(|i| format!("{base}/docs/d{i}.html")).collect();
    urls.extend((0..6).map(|i| format!("{base}/mirror/d{i}.html")));
    let shells: Vec<String> = (1..=4)
        .map(|i| format!("{base}/app/item/{i}"))
        .chain((1..=2).map(|i| format!("{base}/app/item/f{i}")))
        .collect();
    urls.extend(shells.iter().cloned());
    let allow = format!("127.0.0.1:{port}");
    let (auto, meta) = similar("auto", &urls, &allow);
    let (always, _) = similar("always", &urls, &allow);
    let row = |rows: &[serde_json::Value], u: &str| -> serde_json::Value {
        rows.iter().find(|r| r["url"] == u).unwrap().clone()
    };
    assert_eq!(meta["render_mode"], "auto");
    for r in &always {
        assert_eq!(r["rendered"], true, "{r}");
        assert_eq!(r["error"], "", "{r}");
    }
    // Every shell rendered, with what its script wrote.
    for s in &shells {
        let r = row(&auto, s);
        assert_eq!(r["rendered"], true, "a shell seen over HTTP only: {r}");
        assert_eq!(r["error"], "", "{r}");
    }
    let cluster = |rows: &[serde_json::Value], u: &str| {
        row(rows, u)["cluster_id"].as_str().unwrap().to_string()
    };
    // Identical shells together; different ones never.
    let c3 = cluster(&auto, &shells[2]);
    assert!(
        !c3.is_empty() && c3 == cluster(&auto, &shells[3]),
        "item 3 and 4 show the same: {auto:?}"
    );
    for (i, a) in shells.iter().enumerate() {
        for b in &shells[i + 1..] {
            if (a, b) != (&shells[2], &shells[3]) {
                let (ca, cb) = (cluster(&auto, a), cluster(&auto, b));
                assert!(
                    ca.is_empty() || ca != cb,
                    "{a} and {b} show different content but share {ca}"
                );
            }
        }
    }
    // The static duplicates together, nothing distinct merged: auto's pairs are always's.
    let (pa, pb) = (pairs(&auto), pairs(&always));
    for i in 0..6 {
        let (d, m) = (
            format!("{base}/docs/d{i}.html"),
            format!("{base}/mirror/d{i}.html"),
        );
        assert!(
            pa.contains(&(d.clone(), m.clone())),
            "{d} ~ {m} lost in auto: {pa:?}"
        );
    }
    assert_eq!(pa, pb, "auto and always cluster differently");
    // The browser opened for a minority of the static pages; the canonicals of clusters are
    // rendered (their pictures), and unrendered pages say their visual similarity is absent.
    let statics_rendered = auto[..40].iter().filter(|r| r["rendered"] == true).count();
    assert!(
        statics_rendered <= 20,
        "{statics_rendered} of 40 static pages rendered"
    );
    for r in &auto {
        if r["cluster_id"] != "" && r["is_canonical"] == true {
            assert_eq!(r["rendered"], true, "a canonical without a picture: {r}");
        }
        if r["rendered"] == false {
            assert!(
                r["visual_sim"].is_null() && r["behavior_sim"].is_null(),
                "{r}"
            );
        }
    }
    assert_eq!(
        meta["rendered_urls"].as_u64().unwrap() as usize,
        auto.iter().filter(|r| r["rendered"] == true).count()
    );
    assert_eq!(rec.hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// The HTTP fetch of `auto` refuses what the browser's proxy refuses: a redirect to a loopback
/// port outside the allow-list, and that port asked directly; the server there is never reached.
#[test]
fn the_http_fetch_goes_through_the_egress_policy() {
    let rec = recorder();
    let base = serve(rec.port);
    let port = base.rsplit(':').next().unwrap().to_string();
    let urls = vec![
        format!("{base}/to-forbidden"),
        format!("http://127.0.0.1:{}/direct", rec.port),
        format!("{base}/docs/d1.html"),
    ];
    let (rows, _) = similar("auto", &urls, &format!("127.0.0.1:{port}"));
    for r in &rows[..2] {
        assert!(r["error"].as_str().unwrap().starts_with("refused"), "{r}");
        assert_eq!(
            r["rendered"], false,
            "a refused URL reached the browser: {r}"
        );
    }
    assert_eq!(rows[2]["error"], "");
    assert_eq!(
        rec.hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "{:?}",
        rec.requests.lock().unwrap()
    );
}

/// The render stage on Kafka in `auto` (the default mode) keeps at-least-once under a kill: the
/// gate publishes 24 pages, a render stage is SIGKILLed once its first assignments are on the
/// results topic, a second one finishes; every page has an assignment (lost = 0), repeats are
/// only the batches in flight, and the records say how each page was seen.
#[test]
fn the_render_stage_in_auto_loses_nothing_when_killed() {
    use common::kafka::{create_topics, produce, read_all, read_until, Tansu};
    let rec = recorder();
    let base = serve(rec.port);
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
            ("audit", 1),
        ],
    );
    let ns = format!(
        "render-auto-kill-{}-{}",
        std::process::id(),
        common::free_port()
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("stage.toml");
    let redis_url = common::shared_redis();
    std::fs::write(
        &config,
        format!(
            "[kafka]\nbrokers = \"{b}\"\naudit_topic = \"audit\"\n[kafka.consumer]\n\"session.timeout.ms\" = 6000\n\
             [redis]\nurl = \"{redis_url}\"\nnamespace = \"{ns}\"\nfp_rate = 1e-9\n[render]\nallow = [\"127.0.0.1\"]\npage_timeout = \"15s\"\nsoft_404_probe = false\n\
             [sieve]\nallow_private = [\"127.0.0.1\"]\n"
        ),
    )
    .unwrap();
    let mut urls: Vec<String> = (0..18).map(|i| format!("{base}/docs/d{i}.html")).collect();
    urls.extend((0..3).map(|i| format!("{base}/mirror/d{i}.html")));
    urls.extend((1..=3).map(|i| format!("{base}/app/item/{i}")));
    let values: Vec<Vec<u8>> = urls.iter().map(|u| u.clone().into_bytes()).collect();
    produce(&b, "urls", 2, &values);
    let stage = |cmd: &str, idle: bool| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
        c.arg(cmd)
            .arg("--config")
            .arg(&config)
            .args(["--log-format", "json"]);
        if idle {
            c.args(["--idle-exit", "3s"]);
        }
        c.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        c
    };
    let o = stage("gate", true)
        .args(["--set", "kafka.group_id=auto-kill-gate"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The first render stage: killed once its first assignments are delivered.
    let mut first = stage("render", false).spawn().unwrap();
    let early = read_until(&b, "results", 2, std::time::Duration::from_secs(120), |m| {
        !m.is_empty()
    });
    assert!(!early.is_empty(), "no assignment within two minutes");
    let browsers = children(first.id());
    assert!(!browsers.is_empty(), "the stage's Chromium is its child");
    unsafe { libc::kill(first.id() as i32, libc::SIGKILL) };
    let _ = first.wait();
    // Its browser goes with it (the launcher's parent-death signal), not left running.
    let t = std::time::Instant::now();
    while browsers.iter().any(|&p| alive(p)) {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "the killed stage's Chromium {browsers:?} is still running"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The second finishes the topic.
    let o = stage("render", true).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let results = read_all(&b, "results", 2, std::time::Duration::from_secs(2));
    let v = common::schema_validator("cluster-assignment");
    let mut count: HashMap<String, usize> = HashMap::new();
    let mut rendered = HashMap::new();
    for g in &results {
        let doc: serde_json::Value = serde_json::from_slice(&g.value).unwrap();
        if let Err(e) = v.validate(&doc) {
            panic!("{e}: {doc}");
        }
        *count
            .entry(doc["url"].as_str().unwrap().to_string())
            .or_default() += 1;
        rendered.insert(
            doc["url"].as_str().unwrap().to_string(),
            doc["rendered"].as_bool().unwrap(),
        );
    }
    let lost: Vec<&String> = urls.iter().filter(|u| !count.contains_key(*u)).collect();
    let repeats: usize = count.values().map(|n| n - 1).sum();
    eprintln!(
        "render stage killed once: {} assignments for {} pages, lost {}, repeated {repeats}",
        results.len(),
        urls.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "lost: {lost:?}");
    assert!(
        repeats <= 16,
        "{repeats} repeats: more than the two batches that can be in flight"
    );
    // Shells rendered; the static pages mostly not.
    for i in 1..=3 {
        assert!(rendered[&format!("{base}/app/item/{i}")]);
    }
    assert!(
        rendered.values().filter(|r| !**r).count() >= 8,
        "{rendered:?}"
    );
    assert_eq!(rec.hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let ppid = stat[close + 2..].split_whitespace().nth(1).unwrap_or("");
        if ppid == pid.to_string() {
            out.push(p);
        }
    }
    out
}

/// Whether `pid` runs (a zombie, dead but not reaped by its new parent, does not).
fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    match stat.rfind(')') {
        Some(close) => !matches!(
            stat[close + 2..].chars().next(),
            Some('Z') | Some('X') | None
        ),
        None => false,
    }
}
