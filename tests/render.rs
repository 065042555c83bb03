//! The renderer against real Chromium (Debian's, installed by scripts/test.sh) and a loopback
//! HTTP server this test starts (allowed explicitly: loopback is refused by default).

use std::time::{Duration, Instant};

mod common;

use common::site::serve;

use crawlsieve::page::rule_pages::Rule;
use crawlsieve::page::similarity::{compare, Thresholds};
use crawlsieve::page::Page;
use crawlsieve::render::safety::Policy;
use crawlsieve::render::{RenderConfig, Rendered, Renderer};

fn to_page(r: &Rendered) -> Page {
    let mut p = Page::new(&r.url, &r.final_url, r.status, &r.content_type, &r.html);
    p.features.phash = r.phash;
    p.features.timings = r.timings;
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renders_real_pages_safely() {
    let base = serve();
    let cfg = RenderConfig {
        page_timeout: Duration::from_secs(8),
        settle_max: Duration::from_secs(4),
        policy: Policy {
            allow: vec!["127.0.0.1".into()],
        },
        ..RenderConfig::default()
    };
    let r = Renderer::new(cfg)
        .await
        .expect("launch chromium (scripts/test.sh installs it)");
    let url = |p: &str| format!("{base}{p}");

    // Near-duplicates: same article, different ads.
    let (a1, a2) = (r.render(&url("/a1")).await, r.render(&url("/a2")).await);
    for a in [&a1, &a2] {
        assert_eq!((a.error.as_str(), a.status), ("", 200), "{a:?}");
        assert!(a.html.contains("public library") && a.phash.is_some() && a.timings.is_some());
        assert_eq!(a.content_type, "text/html");
    }
    let t = Thresholds::default();
    let s = compare(&to_page(&a1).features, &to_page(&a2).features, &t);
    assert!(s.is_duplicate(&t), "{s:?}");
    assert!(s.visual > 0.8, "{s:?}");

    // Content that only JavaScript writes.
    let js = r.render(&url("/js")).await;
    assert!(js.error.is_empty(), "{js:?}");
    assert!(
        js.html.contains("rendered-by-javascript"),
        "waited for the DOM to settle"
    );

    // A redirect chain.
    let red = r.render(&url("/r1")).await;
    assert!(red.error.is_empty(), "{red:?}");
    assert_eq!(red.final_url, url("/a1"));
    assert_eq!(red.redirect_chain, [url("/r1"), url("/r2"), url("/a1")]);

    // Subresources and redirect hops to internal addresses are blocked before they are sent.
    let leaky = r.render(&url("/leaky")).await;
    assert!(leaky.error.is_empty(), "{leaky:?}");
    assert!(
        leaky
            .blocked
            .iter()
            .any(|b| b.starts_with("http://10.0.0.1/")),
        "{:?}",
        leaky.blocked
    );
    assert!(
        leaky
            .blocked
            .iter()
            .any(|b| b.starts_with("http://169.254.169.254/")),
        "{:?}",
        leaky.blocked
    );
    let hop = r.render(&url("/r-private")).await;
    assert!(!hop.error.is_empty() && hop.html.is_empty(), "{hop:?}");
    assert!(
        hop.blocked
            .iter()
            .any(|b| b.starts_with("http://10.0.0.1/")),
        "{hop:?}"
    );

    // A login wall is classified from the rendered page.
    let login = to_page(&r.render(&url("/login")).await);
    assert_eq!(
        crawlsieve::page::rule_pages::page_rule(200, true, &login.features),
        Some(Rule::L1)
    );

    // A page that never finishes: an error within the budget, and the renderer still works.
    let t0 = Instant::now();
    let hang = r.render(&url("/hang")).await;
    assert!(
        !hang.error.is_empty() || hang.html.contains("partial"),
        "{hang:?}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(12),
        "bounded by page_timeout"
    );
    assert!(
        r.render(&url("/a1")).await.error.is_empty(),
        "not stuck after a hung page"
    );

    // Refused before any request: private, metadata, loopback not allowed, other schemes.
    for bad in [
        "http://10.0.0.7/",
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
    ] {
        let x = r.render(bad).await;
        assert!(x.error.starts_with("refused"), "{bad}: {x:?}");
        assert!(x.html.is_empty());
    }
    let strict = Renderer::new(RenderConfig::default()).await.unwrap();
    assert!(strict
        .render(&url("/a1"))
        .await
        .error
        .starts_with("refused"));
}

/// `crawlsieve similar` with the seed's flags (single-dash long ones too): renders, clusters,
/// writes CSV; refused URLs are rows with an error, and the run is partial (exit 5).
#[test]
fn the_similar_command_renders_and_clusters() {
    let base = serve();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("result.csv");
    let list = format!(
        "{base}/a1,{base}/a2,{base}/login,http://10.0.0.9/,{base}/missing,{base}/waf,{base}/waf200,{base}/maint,{base}/p/1,{base}/p/2"
    );
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["similar", "-l", &list, "-o"])
        .arg(&out)
        .args([
            "-t",
            "2",
            "-page-timeout",
            "15s",
            "-http-timeout",
            "10s",
            "--allow",
            "127.0.0.1",
            "-sim-threshold",
            "0.85",
        ])
        .output()
        .unwrap();
    // Written, with the refused private address as a row: partial (exit 5).
    assert_eq!(
        o.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut rd = csv::Reader::from_path(&out).unwrap();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 10);
    let col = |r: &csv::StringRecord, name: &str| {
        let i = rd_headers(&out).iter().position(|h| h == name).unwrap();
        r[i].to_string()
    };
    assert!(
        col(&rows[0], "cluster_id").starts_with("cluster-"),
        "{rows:?}"
    );
    assert_eq!(col(&rows[0], "cluster_id"), col(&rows[1], "cluster_id"));
    assert_eq!(col(&rows[2], "rule"), "L1");
    assert!(col(&rows[3], "error").starts_with("refused"));
    // Rule classes from rendered pages: 404 → E3, a challenge with 403 → E3 (status first),
    // with 200 → W1, maintenance → M1. Two catalogue pages whose items differ only in their
    // numbers are near-duplicates by text (seed 004's rule); the pattern sampler is what decides
    // pagination (seed 003, the end-to-end test).
    let rules: Vec<String> = rows[4..8].iter().map(|r| col(r, "rule")).collect();
    assert_eq!(rules, ["E3", "E3", "W1", "M1"], "{rows:?}");
    assert_eq!(
        (col(&rows[8], "status_code"), col(&rows[9], "status_code")),
        ("200".into(), "200".into())
    );
}

fn rd_headers(p: &std::path::Path) -> Vec<String> {
    csv::Reader::from_path(p)
        .unwrap()
        .headers()
        .unwrap()
        .iter()
        .map(String::from)
        .collect()
}

fn run_stage(cmd: &str, config: &std::path::Path, sets: &[String]) -> String {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
    c.arg(cmd)
        .arg("--config")
        .arg(config)
        .args(["--idle-exit", "3s", "--log-format", "json"]);
    for s in sets {
        c.arg("--set").arg(s);
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{cmd}: {err}");
    err
}

/// End to end on tansu, Redis and Chromium: URL events → gate → fetch topic → render → cluster
/// assignments on the results topic; the render stage's pattern verdict reaches the gate, which
/// then skips the pattern.
#[test]
fn gate_then_render_end_to_end() {
    use common::kafka::{create_topics, produce, read_all, Tansu};
    let base = serve();
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
            ("outcomes", 1),
        ],
    );
    let ns = format!("render-e2e-{}-{}", std::process::id(), common::free_port());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("stage.toml");
    let redis_url = common::shared_redis();
    std::fs::write(
        &config,
        format!(
            "[kafka]\nbrokers = \"{b}\"\naudit_topic = \"audit\"\noutcomes_topic = \"outcomes\"\n[kafka.consumer]\n\"session.timeout.ms\" = 6000\n\
             [redis]\nurl = \"{redis_url}\"\nnamespace = \"{ns}\"\nfp_rate = 1e-9\n[render]\nallow = [\"127.0.0.1\"]\npage_timeout = \"15s\"\n\
             [sieve]\nallow_private = [\"127.0.0.1\"]\n"
        ),
    )
    .unwrap();
    let urls: Vec<Vec<u8>> = ["/a1", "/a2", "/p/1", "/p/2", "/p/3"]
        .iter()
        .map(|p| format!("{base}{p}").into_bytes())
        .collect();
    produce(&b, "urls", 2, &urls);
    let gate_log = run_stage("gate", &config, &["kafka.group_id=e2e-gate".into()]);
    let err = run_stage("render", &config, &[]);
    assert!(err.contains("consumed 5 "), "{err}");
    // Both stages log JSON lines: a start event naming the stage and its topics, a closing
    // event with the counts as fields.
    for (log, stage, input, output, consumed) in [
        (&gate_log, "gate", "urls", "fetch", 5),
        (&err, "render", "fetch", "results", 5),
    ] {
        let lines = common::json_log_lines(log);
        let start = common::log_event(&lines, "starting");
        assert_eq!(start["level"], "INFO", "{start}");
        assert!(
            start["target"]
                .as_str()
                .unwrap()
                .starts_with("crawlsieve::"),
            "{start}"
        );
        assert_eq!(start["fields"]["stage"], stage, "{start}");
        assert_eq!(start["fields"]["input"], input, "{start}");
        assert_eq!(start["fields"]["output"], output, "{start}");
        let end = common::log_event(&lines, "consumed");
        assert_eq!(end["fields"]["consumed"], consumed, "{end}");
    }

    let results = read_all(&b, "results", 2, Duration::from_secs(2));
    assert_eq!(results.len(), 5);
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
    let a1 = &by[&format!("{base}/a1")];
    let a2 = &by[&format!("{base}/a2")];
    assert_eq!(a1["error"], "", "{a1}");
    assert!(a1["cluster_id"].as_str().unwrap().starts_with("cluster-"));
    assert_eq!(
        a1["cluster_id"], a2["cluster_id"],
        "near-duplicates share a cluster"
    );
    assert_ne!(by[&format!("{base}/p/1")]["cluster_id"], a1["cluster_id"]);

    // Issue 46: a fetch outcome for every page it fetched, on the outcomes topic.
    let outcomes = read_all(&b, "outcomes", 1, Duration::from_secs(2));
    let v = common::schema_validator("fetch-outcome");
    let mut seen: Vec<String> = outcomes
        .iter()
        .map(|g| {
            let doc: serde_json::Value = serde_json::from_slice(&g.value).unwrap();
            if let Err(e) = v.validate(&doc) {
                panic!("{e}: {doc}");
            }
            assert_eq!(doc["status"], 200, "{doc}");
            // Soft 404s marked as the render stage judged them (its result's rule).
            let result = &by[doc["url"].as_str().unwrap()];
            assert_eq!(
                doc["soft_404"],
                result["rule"] == "soft_404",
                "{doc} {result}"
            );
            assert_eq!(doc["namespace"], ns.as_str(), "{doc}");
            doc["url"].as_str().unwrap().to_string()
        })
        .collect();
    seen.sort();
    let mut want: Vec<String> = by.keys().cloned().collect();
    want.sort();
    assert_eq!(seen, want, "one outcome per page");

    // The three catalogue pages decided their pattern: the gate now skips a fourth.
    produce(&b, "urls", 2, &[format!("{base}/p/4").into_bytes()]);
    let err = run_stage("gate", &config, &["kafka.group_id=e2e-gate".into()]);
    assert!(
        err.contains("consumed 1 ") && err.contains("emitted 0"),
        "{err}"
    );
    let audit = read_all(&b, "audit", 1, Duration::from_secs(1));
    let reasons: Vec<String> = audit
        .iter()
        .map(|g| {
            serde_json::from_slice::<serde_json::Value>(&g.value).unwrap()["reason"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(reasons, ["pattern_similar"]);

    // Issue 18: render does not load a fetch event outside its scope (here the namespace's own
    // `[scopes.NAME]`); the result says why.
    let fetched = read_all(&b, "fetch", 2, Duration::from_secs(3));
    let a1_event = fetched
        .iter()
        .find(|g| String::from_utf8_lossy(&g.value).contains("/a1\""))
        .unwrap_or_else(|| {
            panic!(
                "the /a1 fetch event among {:?}",
                fetched
                    .iter()
                    .map(|g| String::from_utf8_lossy(&g.value).to_string())
                    .collect::<Vec<_>>()
            )
        })
        .value
        .clone();
    produce(&b, "fetch", 2, &[a1_event]);
    let err = run_stage(
        "render",
        &config,
        &[format!(r#"scopes."{ns}".deny=["/a1$"]"#)],
    );
    assert!(err.contains("consumed 1 "), "{err}");
    let results = read_all(&b, "results", 2, Duration::from_secs(2));
    let mut a1_errors: Vec<String> = results
        .iter()
        .map(|g| serde_json::from_slice::<serde_json::Value>(&g.value).unwrap())
        .filter(|d| d["url"] == format!("{base}/a1"))
        .map(|d| d["error"].as_str().unwrap().to_string())
        .collect();
    a1_errors.sort();
    assert_eq!(a1_errors, ["", "out of scope: denied_by_rule"]);
    let _ = crawlsieve::redis_filter::RedisFilter::drop_namespace(
        &crawlsieve::redis_filter::RedisConfig::new(common::shared_redis()),
        &ns,
    );
}

/// A page gets at most `max_subresources` requests besides its document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subresources_beyond_the_cap_are_refused() {
    let base = serve();
    let r = Renderer::new(RenderConfig {
        max_subresources: 2,
        ..common::site::local_render_config()
    })
    .await
    .unwrap();
    let x = r.render(&format!("{base}/many")).await;
    assert!(x.error.is_empty(), "{x:?}");
    let over = x.blocked.iter().filter(|b| b.contains("/img/")).count();
    assert_eq!(over, 4, "6 images, 2 allowed: {:?}", x.blocked);
}

/// Issue 14: `similar` leaves no Chromium profile directory behind, when it finishes and when it
/// is interrupted (SIGINT while a page hangs).
#[test]
fn similar_removes_its_profile_directories() {
    let base = serve();
    let leftovers = |dir: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("crawlsieve-chromium-"))
            .collect()
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.csv");
    let run = |list: String| {
        std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args(["similar", "-l", &list, "-o"])
            .arg(&out)
            .args(["--allow", "127.0.0.1", "-page-timeout", "30s"])
            .env("TMPDIR", tmp.path())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let o = run(format!("{base}/a1,{base}/a2"))
        .wait_with_output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new(), "after a run");
    let child = run(format!("{base}/hang"));
    // Wait until the browser is up (its profile exists), then interrupt.
    let t0 = std::time::Instant::now();
    while leftovers(tmp.path()).is_empty() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !leftovers(tmp.path()).is_empty(),
        "the browser never started"
    );
    std::thread::sleep(Duration::from_secs(2));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new(), "after SIGINT");
}

/// Issue 16, item 7: Chromium inherits only the safe variables. The launcher script is run for
/// real with `/usr/bin/env` in Chromium's place, so what it prints is what Chromium would get.
#[test]
fn chromium_gets_no_secrets_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("launch.sh");
    let env = vec![
        ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ("LANG".to_string(), "it's C.UTF-8".to_string()), // a quote survives quoting
        (
            "CRAWLSIEVE__KAFKA__CLIENT__SASL_PASSWORD".to_string(),
            "hunter2".to_string(),
        ),
        (
            "CRAWLSIEVE__REDIS__URL".to_string(),
            "redis://:pw@r:6379".to_string(),
        ),
        ("CRAWLSIEVE_API_TOKENS".to_string(), "t1,t2".to_string()),
        ("AWS_SECRET_ACCESS_KEY".to_string(), "aws".to_string()),
    ];
    let text = crawlsieve::render::chromium_wrapper(std::path::Path::new("/usr/bin/env"), env);
    std::fs::write(&script, &text).unwrap();
    let out = std::process::Command::new("/bin/sh")
        .arg(&script)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{printed}");
    let mut lines: Vec<&str> = printed.lines().collect();
    lines.sort();
    assert_eq!(lines, ["LANG=it's C.UTF-8", "PATH=/usr/bin:/bin"], "{text}");
}
