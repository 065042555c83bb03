//! Learned parameter rules end to end (issue 26): tansu, a Redis of the test's own, Chromium, a
//! loopback site. The render stage learns that `sid` changes nothing and that `page` does; the
//! gate then drops `sid` (the second visit of each page is a duplicate) and never `page`; a
//! counter-example met by the render stage revokes a rule by itself, and an operator's
//! `crawlsieve rules revoke` lets the variants in again.

use std::net::TcpListener;
use std::time::Duration;

mod common;

use common::kafka::{create_topics, produce, read_all, Tansu};
use common::site::{request_path, response, site};

/// `/doc/NAME?sid=…`: the page of NAME whatever the session id (echoed into a link);
/// `/list?page=N`: the Nth page of a catalogue; `/t/NAME?lang=…`: the same page for every
/// language but `de`.
fn serve_site() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
    std::thread::spawn(move || {
        for stream in l.incoming().flatten() {
            std::thread::spawn(move || {
                let Some(target) = request_path(&stream) else {
                    return;
                };
                let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                let arg = |k: &str| {
                    query
                        .split('&')
                        .find_map(|p| p.strip_prefix(&format!("{k}=")))
                        .unwrap_or("")
                        .to_string()
                };
                // Only these pages exist (any other path is a 404: a site that served a page
                // for every name would be a soft-404 site, its pages no evidence).
                let known = |n: &str| ["cp", "ls", "mv", "rm", "x", "y", "z", "q"].contains(&n);
                let body = if let Some(name) = path.strip_prefix("/doc/").filter(|n| known(n)) {
                    let paras: String = (0..8)
                        .map(|i| format!("<p>Chapter {i} of the {name} manual explains how the {name} tool reads its configuration file number {i} and what each of its {name} options does.</p>"))
                        .collect();
                    site(
                        &format!("The {name} manual"),
                        &format!(
                            "{paras}<a href=\"/doc/{name}?sid={}\">permalink</a>",
                            arg("sid")
                        ),
                        "ad",
                    )
                } else if path == "/list" {
                    let n: usize = arg("page").parse().unwrap_or(1);
                    let items: String = (0..20)
                        .map(|i| {
                            let k = n * 20 + i;
                            format!("<li><a href=/item/{k}>Item {k}: product {k} in colour {} and size {}</a></li>", k * 7 % 13, k * 3 % 11)
                        })
                        .collect();
                    site(
                        &format!("Catalogue page {n}"),
                        &format!("<ul>{items}</ul>"),
                        "ad",
                    )
                } else if let Some(name) = path.strip_prefix("/t/").filter(|n| known(n)) {
                    let text = if arg("lang") == "de" {
                        (0..6).map(|i| format!("<p>Die Seite {name} auf Deutsch, Absatz {i}, mit einem ganz anderen Text über Bahnhöfe, Brücken und Wälder, den niemand anders liest, und über Kaffee und Kuchen am Sonntag.</p>")).collect::<String>()
                    } else {
                        (0..6).map(|i| format!("<p>The page {name}, paragraph {i}, in the language the reader asked for, which here is always the same English text about stations, bridges and forests, and coffee and cake on Sunday afternoons.</p>")).collect::<String>()
                    };
                    site(&format!("Page {name}"), &text, "ad")
                } else {
                    let mut w = stream;
                    let _ = std::io::Write::write_all(
                        &mut w,
                        &response("404 Not Found", "text/plain", b"no"),
                    );
                    return;
                };
                let mut w = stream;
                let _ = std::io::Write::write_all(
                    &mut w,
                    &response("200 OK", "text/html; charset=utf-8", body.as_bytes()),
                );
            });
        }
    });
    base
}

fn run(args: &[&str]) -> (String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(args)
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    );
    assert!(o.status.success(), "{args:?}: {err}");
    (out, err)
}

fn stage(cmd: &str, config: &std::path::Path, group: &str) -> String {
    let c = config.to_str().unwrap();
    let set = format!("kafka.group_id={group}");
    run(&[cmd, "--config", c, "--idle-exit", "3s", "--set", &set]).1
}

/// The fetch events the gate published since `skip`: (url, original).
fn fetched(b: &str, skip: usize) -> Vec<(String, String)> {
    read_all(b, "fetch", 1, Duration::from_secs(2))
        .iter()
        .skip(skip)
        .map(|g| {
            let v: serde_json::Value = serde_json::from_slice(&g.value).unwrap();
            (
                v["url"].as_str().unwrap().to_string(),
                v["original"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_session_id_is_learned_and_dropped_by_the_gate_a_page_number_never() {
    let base = serve_site();
    let host = base.trim_start_matches("http://").to_string();
    let redis = common::OwnRedis::start(&[]);
    let k = Tansu::start();
    let b = k.brokers();
    // One partition each: the render stage meets the pages in the order they were written.
    create_topics(
        &b,
        &[
            ("urls", 1),
            ("fetch", 1),
            ("results", 1),
            ("urls.dead-letter", 1),
            ("fetch.dead-letter", 1),
            ("audit", 1),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("stage.toml");
    std::fs::write(
        &config,
        format!(
            "[kafka]\nbrokers = \"{b}\"\naudit_topic = \"audit\"\n[kafka.consumer]\n\"session.timeout.ms\" = 6000\n\
             [redis]\nurl = \"{}\"\nnamespace = \"lp\"\nfp_rate = 1e-9\n\
             [patterns]\nenable_url_pattern_dom_dedup = false\nlearned_params_verify_one_in = 0\n\
             [render]\nallow = [\"127.0.0.1\"]\npage_timeout = \"15s\"\n\
             [sieve]\nallow_private = [\"127.0.0.1\"]\n",
            redis.url()
        ),
    )
    .unwrap();
    let ev = |p: &str| format!("{base}{p}").into_bytes();

    // Phase 1: three session ids on each of four manual pages, four catalogue pages, and a
    // parameter that changes nothing until `de` comes.
    let mut first: Vec<Vec<u8>> = Vec::new();
    for (i, name) in ["cp", "ls", "mv", "rm"].iter().enumerate() {
        for v in ["a", "b", "c"] {
            first.push(ev(&format!("/doc/{name}?sid={v}{i}")));
        }
    }
    for n in 1..=4 {
        first.push(ev(&format!("/list?page={n}")));
    }
    for (i, name) in ["x", "y", "z"].iter().enumerate() {
        for v in ["l", "m", "n"] {
            first.push(ev(&format!("/t/{name}?lang={v}{i}")));
        }
    }
    first.push(ev("/t/x?lang=de"));
    produce(&b, "urls", 1, &first);
    let err = stage("gate", &config, "lp-gate");
    assert!(
        err.contains("consumed 26 ") && err.contains("emitted 26"),
        "{err}"
    );
    let err = stage("render", &config, "lp-render");
    assert!(err.contains("consumed 26 "), "{err}");

    let r = redis.url();
    let (out, _) = run(&["rules", "--redis", &r, "--namespace", "lp", "list"]);
    let rules: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pairs: Vec<(String, String)> = rules
        .iter()
        .map(|v| {
            (
                v["host"].as_str().unwrap().into(),
                v["param"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(pairs, [(host.clone(), "sid".to_string())], "{out}");
    let schema = common::schema_validator("param-rule");
    assert!(rules[0]["values"].as_u64().unwrap() >= 5, "{out}");
    assert!(rules[0]["paths"].as_u64().unwrap() >= 3, "{out}");
    // `lang` was learned after three paths, then `/t/x?lang=de` revoked it by itself.
    let (out, _) = run(&[
        "rules",
        "--redis",
        &r,
        "--namespace",
        "lp",
        "list",
        "--revoked",
    ]);
    let revoked: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for v in rules.iter().chain(&revoked) {
        if let Err(e) = schema.validate(v) {
            panic!("schemas/param-rule.v1.json: {e}: {v}");
        }
    }
    // Every counter-example is recorded (no worker publishes the parameter later): `page`
    // before any rule, `lang` after its rule was published (then revoked by `/t/x?lang=de`).
    let params: Vec<&str> = revoked
        .iter()
        .map(|v| v["param"].as_str().unwrap())
        .collect();
    assert_eq!(params, ["lang", "page"], "{out}");
    let why = revoked[0]["why"].as_str().unwrap();
    assert!(
        why.starts_with("counter-example: ") && why.contains("lang=de"),
        "{out}"
    );

    // Phase 2: each manual page visited twice with new session ids; two new catalogue pages.
    let mut second: Vec<Vec<u8>> = Vec::new();
    for name in ["cp", "ls", "mv", "rm"] {
        second.push(ev(&format!("/doc/{name}?sid=c")));
        second.push(ev(&format!("/doc/{name}?sid=d")));
    }
    second.push(ev("/list?page=5"));
    second.push(ev("/list?page=6"));
    second.push(ev("/t/q?lang=l0"));
    second.push(ev("/t/q?lang=m0"));
    produce(&b, "urls", 1, &second);
    let err = stage("gate", &config, "lp-gate");
    assert!(
        err.contains("consumed 12 ") && err.contains("emitted 8"),
        "{err}"
    );
    let got = fetched(&b, 26);
    let urls: Vec<&str> = got.iter().map(|(u, _)| u.as_str()).collect();
    // A rule changes what a URL is deduplicated by, not the URL: the first variant is fetched
    // as linked.
    let want: Vec<String> = [
        "/doc/cp?sid=c",
        "/doc/ls?sid=c",
        "/doc/mv?sid=c",
        "/doc/rm?sid=c",
        "/list?page=5",
        "/list?page=6",
        "/t/q?lang=l0",
        "/t/q?lang=m0",
    ]
    .iter()
    .map(|p| format!("{base}{p}"))
    .collect();
    assert_eq!(urls, want);

    // Phase 3: the operator revokes `sid`; a variant is a URL of its own again.
    let (out, _) = run(&[
        "rules",
        "--redis",
        &r,
        "--namespace",
        "lp",
        "revoke",
        &host,
        "sid",
    ]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["was_in_force"], true, "{out}");
    let (out, _) = run(&["rules", "--redis", &r, "--namespace", "lp", "list"]);
    assert_eq!(out.trim(), "", "no rule left in force");
    // The render stage does not publish it again while revoked.
    let (out, _) = run(&["rules", "--redis", &r, "--namespace", "lp", "export"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["revoked"].as_array().unwrap().len(), 3, "{out}");
    produce(&b, "urls", 1, &[ev("/doc/cp?sid=e"), ev("/doc/cp?sid=e")]);
    let err = stage("gate", &config, "lp-gate");
    assert!(
        err.contains("consumed 2 ") && err.contains("emitted 1"),
        "{err}"
    );
    let got = fetched(&b, 34);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, format!("{base}/doc/cp?sid=e"));
}
