//! Issue 28: a new user's first hour. Every mistake found trying the README as a newcomer ends
//! with a non-zero exit (the contract of `crawlsieve --help`: 2 usage, 3 input, 4 unreachable,
//! 5 partial) and one sentence that names the file, flag or address and says what to do; every
//! promise of the README and `--help` is kept. Each test here failed on the binary the issue
//! was filed against.

mod common;

use std::process::{Command, Output, Stdio};

fn run(args: &[&str], stdin: &[u8]) -> Output {
    run_env(args, stdin, &[])
}

fn run_env(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `similar`'s mistakes are caught before any browser starts: a missing list file (it was
/// taken as a one-URL list: "1 page, 0 eligible", exit 0), a report name with no known
/// extension (`report.txt` was silently JSON), an allow-list entry with an impossible port.
#[test]
fn similar_refuses_a_missing_list_an_unknown_report_name_and_a_bad_allow_entry() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("x.json");
    let o = run(
        &["similar", "-l", "nofile.txt", "-o", json.to_str().unwrap()],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(
        err(&o).contains("nofile.txt") && err(&o).contains("no such file"),
        "{}",
        err(&o)
    );
    assert!(!json.exists(), "nothing written");

    let txt = dir.path().join("report.txt");
    let o = run(
        &[
            "similar",
            "-l",
            "http://127.0.0.1:9/",
            "-o",
            txt.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains(".json, .csv or .html"), "{}", err(&o));
    assert!(!txt.exists());

    let o = run(
        &[
            "similar",
            "-l",
            "http://127.0.0.2:9/",
            "-o",
            json.to_str().unwrap(),
            "--allow",
            "127.0.0.2:99999",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("--allow 127.0.0.2:99999") && err(&o).contains("65535"),
        "{}",
        err(&o)
    );
}

/// `--base` without a scheme, or of another scheme, is a usage error that says what to write
/// (it was "relative URL without a base", or accepted and then every relative line rejected);
/// `--same-site` without `--base` admitted everything.
#[test]
fn base_and_same_site_mistakes_are_usage_errors() {
    let o = run(&["check", "--base", "docs.example.org"], b"a.html\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("https://docs.example.org"), "{}", err(&o));
    let o = run(&["check", "--base", "ftp://x/"], b"a.html\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("http or https"), "{}", err(&o));
    let o = run(&["dedup", "--same-site"], b"https://a.example/\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--same-site needs --base"), "{}", err(&o));
    assert_eq!(out(&o), "", "nothing admitted");
}

/// A state file made with other parameters is a mistake to say, as a Redis namespace says it
/// (the file's 10,000,000 / 1e-4 were silently kept).
#[test]
fn a_state_file_with_other_parameters_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s.bloom");
    let s = state.to_str().unwrap();
    let o = run(
        &["dedup", "-q", "--state", s, "--capacity", "1000"],
        b"https://a.example/\n",
    );
    assert!(o.status.success(), "{}", err(&o));
    let o = run(
        &[
            "dedup",
            "-q",
            "--state",
            s,
            "--capacity",
            "2000",
            "--fp-rate",
            "0.01",
        ],
        b"https://b.example/\n",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains("--capacity 2000") && e.contains("--fp-rate 0.01") && e.contains(s),
        "{e}"
    );
    assert_eq!(out(&o), "", "nothing emitted");
    // The file's own parameters (flags left out, or the same) still work.
    let o = run(
        &["dedup", "-q", "--state", s, "--capacity", "1000"],
        b"https://b.example/\n",
    );
    assert_eq!(out(&o), "https://b.example/\n", "{}", err(&o));
}

/// A `cluster` record with no `status`, no `html` and no `error` is no page (it was a page of
/// status 0): skipped with its line number, and the run is partial.
#[test]
fn a_cluster_record_with_nothing_in_it_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("p.jsonl");
    std::fs::write(
        &input,
        "{\"url\":\"https://a.example/\",\"status\":200,\"html\":\"<p>hello</p>\"}\n{\"url\":\"https://a.example/empty\"}\n{\"url\":\"https://a.example/x\",\"error\":\"timeout\"}\n",
    )
    .unwrap();
    let report = dir.path().join("r.json");
    let o = run(
        &[
            "cluster",
            input.to_str().unwrap(),
            "-o",
            report.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert!(
        err(&o).contains(":2: skipped: no `status`, `html` or `error`"),
        "{}",
        err(&o)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["urls"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["meta"]["unreadable_lines"], 1);
}

/// A character reference in an attribute is part of the value: `q=&#39;hello&#39;` keeps its
/// closing quote (it was trimmed as extractor residue: `q=%27hello`); a raw trailing quote is
/// still residue.
#[test]
fn a_quote_written_as_a_character_reference_is_kept() {
    let o = run(
        &[
            "check",
            "--context",
            "html_attr",
            "--base",
            "https://h.example/p",
        ],
        b"?q=&#39;hello&#39;\n?q=hello'\n",
    );
    let rows: Vec<serde_json::Value> = out(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["canonical"], "https://h.example/p?q=%27hello%27");
    assert_eq!(rows[1]["canonical"], "https://h.example/p?q=hello");
}

/// File errors name the file once (the cause was said twice), every bad line of a scope file
/// is reported (only the first was), and a write error names the output.
#[test]
fn file_errors_name_the_file_once_and_report_every_bad_line() {
    let o = run(
        &["check", "--scope-file", "missing-scope.txt"],
        b"https://a.example/\n",
    );
    assert_eq!(o.status.code(), Some(3));
    let e = err(&o);
    assert!(e.contains("missing-scope.txt"), "{e}");
    assert_eq!(e.matches("No such file or directory").count(), 1, "{e}");

    let dir = tempfile::tempdir().unwrap();
    let scope = dir.path().join("scope.txt");
    std::fs::write(&scope, "+^https://a\\.example/\nno sign here\n+(unclosed\n").unwrap();
    let o = run(
        &["check", "--scope-file", scope.to_str().unwrap()],
        b"https://a.example/\n",
    );
    assert_eq!(o.status.code(), Some(3));
    let e = err(&o);
    assert!(
        e.contains("scope.txt:2") && e.contains("scope.txt:3"),
        "{e}"
    );

    if std::path::Path::new("/dev/full").exists() {
        let o = run(&["dedup", "-q", "-o", "/dev/full"], b"https://a.example/\n");
        assert!(!o.status.success());
        assert!(err(&o).contains("/dev/full"), "{}", err(&o));
    }
}

/// Redis not running is a refusal, not a timeout, said once, exit 4; `--redis host:port` says
/// to write `redis://host:port` (it was "Redis URL did not parse - InvalidClientConfig");
/// `--redis-retry-for 3s` retries for 3 s (it gave up after 1.56 s).
#[test]
fn redis_mistakes_say_what_happened() {
    let port = common::free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let t = std::time::Instant::now();
    let o = run(
        &[
            "dedup",
            "--redis",
            &url,
            "--namespace",
            "t",
            "--redis-retry-for",
            "3s",
        ],
        b"https://a.example/\n",
    );
    let took = t.elapsed();
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    let last = err(&o).lines().last().unwrap_or("").to_string();
    assert!(last.contains("connection refused"), "{last}");
    assert!(!last.contains("no reply within the timeout"), "{last}");
    assert!(
        took >= std::time::Duration::from_millis(2900),
        "retried for {took:?}"
    );

    let o = run(
        &[
            "dedup",
            "--redis",
            &format!("localhost:{port}"),
            "--namespace",
            "t",
        ],
        b"https://a.example/\n",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains(&format!("redis://localhost:{port}")),
        "{}",
        err(&o)
    );
}

/// `bloom drop` answers JSON like every `bloom` command (it printed text); creating an existing
/// namespace suggests what exists (`--replace` belongs to `import` only); `bloom stats` says
/// what each generation stores (`k: 5` in the spec beside `k: 1` in a fingerprints
/// generation, unexplained).
#[test]
fn bloom_answers_json_and_explains_itself() {
    let redis = common::OwnRedis::start(&[]);
    let url = redis.url();
    let o = run(
        &[
            "bloom",
            "--redis",
            &url,
            "create",
            "ns1",
            "--capacity",
            "10000",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", err(&o));
    let o = run(
        &[
            "bloom",
            "--redis",
            &url,
            "create",
            "ns1",
            "--capacity",
            "10000",
        ],
        b"",
    );
    assert!(!o.status.success());
    assert!(err(&o).contains("crawlsieve bloom drop ns1"), "{}", err(&o));
    let o = run(&["bloom", "--redis", &url, "stats", "ns1"], b"");
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let stores = stats["generations"][0]["stores"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        stores.contains("fingerprint") && stores.contains("k does not apply"),
        "{stores}"
    );
    let o = run(&["bloom", "--redis", &url, "drop", "ns1"], b"");
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v, serde_json::json!({"namespace": "ns1", "dropped": true}));
    let o = run(&["bloom", "--redis", &url, "drop", "ns1"], b"");
    assert_eq!(
        o.status.code(),
        Some(3),
        "a typo must not look like a success"
    );
}

/// "Every flag has an environment variable": `CRAWLSIEVE_DENY=/admin/` was silently ignored.
#[test]
fn scope_flags_read_their_environment_variables() {
    let o = run_env(
        &["check"],
        b"https://a.example/admin/x\nhttps://a.example/docs\n",
        &[("CRAWLSIEVE_DENY", "/admin/")],
    );
    let rows: Vec<serde_json::Value> = out(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["verdict"], "reject", "{rows:?}");
    assert_eq!(rows[1]["verdict"], "keep", "{rows:?}");
}

/// `canon` and `pattern` list `--profile`, `--max-len` and `--context`: they apply them, as
/// `check` does (`canon --max-len 10` printed a 40-character URL, `{{x}}` became
/// `%7B%7Bx%7D%7D`).
#[test]
fn canon_and_pattern_apply_the_junk_rules_they_list() {
    let o = run(
        &["canon", "--max-len", "30"],
        b"https://a.example/a/rather/long/path/indeed\n{{x}}\nhttps://a.example/ok\n",
    );
    assert_eq!(out(&o), "\n\nhttps://a.example/ok\n");
    let o = run(&["pattern"], b"{{x}}\nhttps://a.example/p/12\n");
    assert_eq!(out(&o), "\nhttps://a.example/p/{num}\n");
}

/// `--help` keeps the README's promises: `gate --passthrough` (in the README) is listed, and
/// the exit codes are there.
#[test]
fn help_lists_what_the_readme_documents() {
    let o = run(&["gate", "--help"], b"");
    assert!(out(&o).contains("--passthrough"), "{}", out(&o));
    let o = run(&["--help"], b"");
    let h = out(&o);
    for code in ["0 done", "2 usage", "3 input", "4 unreachable", "5 partial"] {
        assert!(h.contains(code), "{code}: {h}");
    }
}

/// Shell completions and man pages, generated from the same definitions as `--help`.
#[test]
fn completions_and_man_pages_come_from_the_cli_definitions() {
    let o = run(&["completions", "bash"], b"");
    assert!(o.status.success());
    assert!(
        out(&o).contains("_crawlsieve") && out(&o).contains("dedup"),
        "{}",
        out(&o)
    );
    let o = run(&["man"], b"");
    assert!(
        out(&o).starts_with(".ie") || out(&o).contains(".TH crawlsieve 1"),
        "{}",
        out(&o)
    );
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["man", "--dir", dir.path().to_str().unwrap()], b"");
    assert!(o.status.success(), "{}", err(&o));
    let page = std::fs::read_to_string(dir.path().join("crawlsieve-dedup.1")).unwrap();
    assert!(
        page.contains("\\-\\-same\\-site"),
        "every flag is on the page"
    );
}

/// Found by a second newcomer run (issue 28): `-o` naming an input emptied it; a missing
/// input was found only after `-o` had emptied the output file.
#[test]
fn the_output_never_destroys_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("u.txt");
    std::fs::write(&f, "https://a.example/\n").unwrap();
    let p = f.to_str().unwrap();
    let o = run(&["check", "-o", p, p], b"");
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "https://a.example/\n");
    let keep = dir.path().join("keep.txt");
    std::fs::write(&keep, "precious\n").unwrap();
    let o = run(
        &["check", "-o", keep.to_str().unwrap(), "no-such-input.txt"],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "precious\n");
    let o = run(&["check", dir.path().to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(3), "a directory is no input file");
}

/// Flags that would be silently ignored, or values that make every line fail, are usage or
/// input errors; the contract's codes hold for them.
#[test]
fn silently_useless_runs_are_errors() {
    let o = run(&["dedup", "--namespace", "foo"], b"https://a.example/\n");
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("--namespace needs --redis"), "{}", err(&o));
    let o = run(&["check", "--max-len", "0"], b"https://a.example/\n");
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("scope.txt");
    std::fs::write(&empty, "# only a comment\n").unwrap();
    let o = run(
        &["check", "--scope-file", empty.to_str().unwrap()],
        b"https://a.example/\n",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("no rule"), "{}", err(&o));
    let robots_dir = dir.path().join("robots");
    std::fs::create_dir(&robots_dir).unwrap();
    std::fs::write(
        robots_dir.join("robots.txt"),
        "User-agent: *\nDisallow: /\n",
    )
    .unwrap();
    let o = run(
        &["check", "--robots-dir", robots_dir.to_str().unwrap()],
        b"https://a.example/\n",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("DIR/<host>/robots.txt"), "{}", err(&o));
    // A relative line printed empty by `canon` is explained once.
    let o = run(&["canon"], b"a.html\nb.html\n");
    assert_eq!(out(&o), "\n\n");
    assert!(
        err(&o).contains("2 relative line(s) printed empty: give --base"),
        "{}",
        err(&o)
    );
    // Boolean flags take 1/0, yes/no from the environment too.
    let o = run_env(
        &["dedup"],
        b"https://a.example/\n",
        &[("CRAWLSIEVE_QUIET", "1")],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(err(&o), "", "quiet: no summary");
    // `--allow` given a URL says what to write.
    let o = run(
        &[
            "similar",
            "-l",
            "http://127.0.0.1:9/",
            "-o",
            "x.json",
            "--allow",
            "http://127.0.0.1:8931",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("write 127.0.0.1:8931"), "{}", err(&o));
    // A gate configuration with a bare host:port for Redis is refused before anything starts.
    let o = run(
        &[
            "gate",
            "--print-config",
            "--set",
            "redis.url=localhost:6391",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("redis://localhost:6391"), "{}", err(&o));
}

/// `robots` judges absolute http(s) URLs only: anything else is `"allowed": null` with an
/// error, and the run is partial; a missing file is an input error.
#[test]
fn robots_judges_urls_only() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("robots.txt");
    std::fs::write(&f, "User-agent: *\nDisallow: /p/\n").unwrap();
    let o = run(
        &[
            "robots",
            "--file",
            f.to_str().unwrap(),
            "--agent",
            "bot",
            "not a url",
            "https://h.example/p/1",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    let rows: Vec<serde_json::Value> = out(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        rows[0]["allowed"].is_null() && rows[0]["error"].is_string(),
        "{rows:?}"
    );
    assert_eq!(rows[1]["allowed"], false);
    let o = run(
        &[
            "robots",
            "--file",
            "nosuch.txt",
            "--agent",
            "bot",
            "https://h.example/",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
}

/// A file of URLs given to `cluster` is said once to be no JSON Lines, with the way to render
/// URLs, not 3,000 times.
#[test]
fn cluster_of_a_url_list_says_what_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("urls.txt");
    let urls: String = (0..50)
        .map(|i| format!("https://a.example/{i}\n"))
        .collect();
    std::fs::write(&f, urls).unwrap();
    let o = run(
        &[
            "cluster",
            f.to_str().unwrap(),
            "-o",
            dir.path().join("r.json").to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(5));
    let e = err(&o);
    assert!(e.matches("skipped:").count() <= 10, "{e}");
    assert!(e.contains("crawlsieve similar -l"), "{e}");
}

/// Redis: a namespace that does not exist is an input error, one made with other parameters a
/// usage error; `rules revoke` with a URL for a host is refused.
#[test]
fn redis_namespace_errors_follow_the_contract() {
    let redis = common::OwnRedis::start(&[]);
    let url = redis.url();
    let o = run(&["bloom", "--redis", &url, "stats", "nope"], b"");
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    let o = run(
        &[
            "bloom",
            "--redis",
            &url,
            "create",
            "ns2",
            "--capacity",
            "10000",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", err(&o));
    let o = run(
        &[
            "dedup",
            "-q",
            "--redis",
            &url,
            "--namespace",
            "ns2",
            "--capacity",
            "5000",
        ],
        b"https://a.example/\n",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = run(
        &[
            "rules",
            "--redis",
            &url,
            "revoke",
            "https://example.com/",
            "sid",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

/// `similar` on a page whose server does not answer: an error (`unreachable: …`), not the
/// egress proxy's 502 taken for the site's page, and the run is partial.
#[test]
fn similar_reports_an_unreachable_page() {
    let port = common::free_port();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let o = run(
        &[
            "similar",
            "-l",
            &format!("http://127.0.0.1:{port}/"),
            "-o",
            report.to_str().unwrap(),
            "--allow",
            "127.0.0.1",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let e = r["urls"][0]["error"].as_str().unwrap();
    assert!(e.starts_with("unreachable: 127.0.0.1:"), "{r}");
    // No status was received: the proxy's own 502 is not the site's.
    assert_eq!(r["urls"][0]["status_code"], 0, "{r}");
    assert!(
        err(&o).contains("1 not fetched or not rendered"),
        "{}",
        err(&o)
    );
}

/// `similar -o` into a directory that is not there fails before any page is rendered;
/// `--max-line-bytes 0` (every line `too_long`) is a usage error.
#[test]
fn hopeless_outputs_and_limits_fail_first() {
    let o = run(
        &[
            "similar",
            "-l",
            "http://127.0.0.1:9/",
            "-o",
            "/nonexistent-dir/r.json",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("/nonexistent-dir"), "{}", err(&o));
    let o = run(&["check", "--max-line-bytes", "0"], b"https://a.example/\n");
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

/// Found by review: `check -o urls.txt < urls.txt` still emptied the input (stdin is that file),
/// and a hard link to an input slipped through a path comparison.
#[test]
fn the_output_is_never_the_input_by_another_name() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("u.txt");
    std::fs::write(&f, "https://a.example/\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["check", "-o", f.to_str().unwrap()])
        .stdin(std::fs::File::open(&f).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "https://a.example/\n");
    let link = dir.path().join("link.txt");
    std::fs::hard_link(&f, &link).unwrap();
    let o = run(
        &["check", "-o", link.to_str().unwrap(), f.to_str().unwrap()],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "https://a.example/\n");
}

/// From the third newcomer run: `-o` naming the `--state` file lost the output to the saved
/// filter; a byte-order mark became part of the first URL; `completions | head` panicked;
/// `dedup` with relative lines and no `--base` said nothing about it.
#[test]
fn state_bom_pipes_and_relative_lines() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s.bloom");
    let s = state.to_str().unwrap();
    let o = run(
        &["dedup", "-q", "--state", s, "-o", s],
        b"https://a.example/\n",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = run(
        &["dedup", "-q", "--base", "https://docs.example.org/guide/"],
        b"\xEF\xBB\xBFhttps://a.example/x\n",
    );
    assert_eq!(out(&o), "https://a.example/x\n");
    // Files joined with `cat` carry their marks into the stream (issue 45): every line's goes,
    // through `dedup`'s batches and `check`'s lines alike.
    let joined = b"\xEF\xBB\xBFhttps://a.example/x\n\xEF\xBB\xBFhttps://b.example/y\n";
    let o = run(&["dedup", "-q"], joined);
    assert_eq!(out(&o), "https://a.example/x\nhttps://b.example/y\n");
    let o = run(&["check", "--base", "https://docs.example.org/"], joined);
    let canon: Vec<String> = out(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["canonical"].to_string())
        .collect();
    assert_eq!(
        canon,
        ["\"https://a.example/x\"", "\"https://b.example/y\""]
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["completions", "zsh"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader went away at once, as `| head -1` does
    let o = child.wait_with_output().unwrap();
    assert_ne!(o.status.code(), Some(101), "no panic: {}", err(&o));
    let o = run(&["dedup"], b"a.html\n");
    assert!(err(&o).contains("give --base URL"), "{}", err(&o));
    let o = run(&["dedup", "--fp-rate", "2"], b"https://a.example/\n");
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

/// Fourth newcomer run: every code of the contract where it was 1, 2 or 3 by accident. `serve`
/// without tokens is a setting missing (2, was 1); a flag's regular expression that does not
/// compile is a usage error (2, was 3); a scope file named by the configuration that is not
/// there is input (3, was 2); a directory where a file is wanted, read or written, is input (3,
/// was 1).
#[test]
fn each_mistake_has_its_contract_code() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_env(&["serve"], b"", &[("CRAWLSIEVE_API_TOKENS", "")]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("no API tokens"), "{}", err(&o));

    let o = run(&["check", "--allow", "(["], b"");
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("--allow") && !err(&o).contains("allow[0]"),
        "{}",
        err(&o)
    );

    let cfg = dir.path().join("gate.toml");
    let missing = dir.path().join("missing-scope.txt");
    std::fs::write(
        &cfg,
        format!("[scope]\nfiles = [{:?}]\n", missing.display().to_string()),
    )
    .unwrap();
    let o = run(
        &["gate", "-c", cfg.to_str().unwrap(), "--print-config"],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("missing-scope.txt"), "{}", err(&o));

    let d = dir.path().to_str().unwrap();
    let o = run(
        &["robots", "--file", d, "--agent", "x", "http://a.example/"],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains(d), "{}", err(&o));
    let o = run(&["check", "-o", d], b"https://a.example/\n");
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains(d), "{}", err(&o));
}

/// A scope file of `-` rules only rejects every URL (Nutch's "no match rejects"): an input
/// error that says to end it with `+.`, not a run that silently keeps nothing.
#[test]
fn a_scope_file_that_can_only_reject_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("deny-only.txt");
    std::fs::write(&f, "# only denials\n-/admin/\n-\\.pdf$\n").unwrap();
    let o = run(
        &["check", "--scope-file", f.to_str().unwrap()],
        b"https://a.example/\n",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(
        err(&o).contains("deny-only.txt") && err(&o).contains("+."),
        "{}",
        err(&o)
    );
    // With the catch-all it is the scope that was meant.
    std::fs::write(&f, "-/admin/\n+.\n").unwrap();
    let o = run(
        &["check", "--scope-file", f.to_str().unwrap()],
        b"https://a.example/\nhttps://a.example/admin/x\n",
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains("\"keep\"") && out(&o).contains("denied_by_rule"),
        "{}",
        out(&o)
    );
}

/// `robots` reads standard input for `-` as for no URL at all, and warns (exit 0: the file is
/// valid) when the file has no `User-agent:` line — every URL is then allowed, which a wrong
/// file shows too.
#[test]
fn robots_reads_dash_and_warns_of_a_file_with_no_group() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("robots.txt");
    std::fs::write(&f, "User-agent: *\nDisallow: /private/\n").unwrap();
    let o = run(
        &[
            "robots",
            "--file",
            f.to_str().unwrap(),
            "--agent",
            "bot",
            "-",
        ],
        b"https://a.example/private/x\nhttps://a.example/ok\n",
    );
    assert!(o.status.success(), "{}", err(&o));
    let v: Vec<serde_json::Value> = out(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        v.iter().map(|j| j["allowed"].clone()).collect::<Vec<_>>(),
        [serde_json::json!(false), serde_json::json!(true)]
    );
    assert!(err(&o).is_empty(), "{}", err(&o));
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "hello\nDisallow is a word\n").unwrap();
    let o = run(
        &[
            "robots",
            "--file",
            notes.to_str().unwrap(),
            "--agent",
            "bot",
        ],
        b"https://a.example/x\n",
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains("notes.txt") && err(&o).contains("User-agent"),
        "{}",
        err(&o)
    );
}

/// `rules` on a namespace with neither a filter nor rules is a typo (3), not an empty list;
/// `bloom` names the Redis it could not reach; `--window 3` (three seconds, where days were
/// meant) must be written with its unit.
#[test]
fn redis_commands_name_what_is_not_there() {
    let redis = common::OwnRedis::start(&[]);
    let url = redis.url();
    let o = run(
        &["rules", "--redis", &url, "--namespace", "nope", "list"],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(
        err(&o).contains("\"nope\"") && err(&o).contains(&url),
        "{}",
        err(&o)
    );
    let o = run(
        &["bloom", "--redis", &url, "create", "w1", "--window", "3"],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("3d"), "{}", err(&o));
    let o = run(
        &["bloom", "--redis", &url, "create", "w1", "--window", "3d"],
        b"",
    );
    assert!(o.status.success(), "{}", err(&o));
    let o = run(
        &["rules", "--redis", &url, "--namespace", "w1", "list"],
        b"",
    );
    assert!(o.status.success(), "{}", err(&o));
    // The mismatch is said in the flags' words (it said `Fingerprints ≠ Bloom`, `259200s`).
    let o = run(
        &[
            "dedup",
            "-q",
            "--redis",
            &url,
            "--namespace",
            "w1",
            "--mode",
            "bloom",
            "--window",
            "1h",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("mode: fingerprints ≠ bloom") && err(&o).contains("window: 3days ≠ 1h"),
        "{}",
        err(&o)
    );
    let down = format!("redis://127.0.0.1:{}", common::free_port());
    let o = run(&["bloom", "--redis", &down, "stats", "w1"], b"");
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(err(&o).contains(&down), "{}", err(&o));
}

/// A gate or render stage with no broker at its address exits 4 within
/// `kafka.startup_timeout`, naming the brokers (it logged ~20 warnings a second for ever).
#[test]
fn a_stage_with_no_broker_exits_4() {
    let port = common::free_port();
    for stage in ["gate", "render"] {
        let t = std::time::Instant::now();
        let o = run(
            &[
                stage,
                "--set",
                &format!("kafka.brokers=127.0.0.1:{port}"),
                "--set",
                "kafka.startup_timeout=2s",
                "--set",
                &format!("redis.url={}", common::shared_redis()),
            ],
            b"",
        );
        assert_eq!(o.status.code(), Some(4), "{stage}: {}", err(&o));
        assert!(
            err(&o).contains(&format!("127.0.0.1:{port}")) && err(&o).contains("kafka.brokers"),
            "{}",
            err(&o)
        );
        assert!(
            t.elapsed() < std::time::Duration::from_secs(60),
            "{stage} gave up"
        );
    }
}

/// `similar`: `--http-timeout 0s` is a usage error; `-l -` reads standard input; a line that is
/// no absolute URL is skipped with its line number and a fix (`host:port/x` was taken for a
/// relative URL), and counted as a skipped input line, not as a page that failed.
#[test]
fn similar_lists_say_which_line_is_no_url() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let o = run(
        &[
            "similar",
            "-l",
            "http://127.0.0.1:9/",
            "-o",
            report.to_str().unwrap(),
            "--http-timeout",
            "0s",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let port = common::free_port();
    let o = run(
        &[
            "similar",
            "-l",
            "-",
            "-o",
            report.to_str().unwrap(),
            "--allow",
            "127.0.0.1",
            "--no-soft-404-probe",
        ],
        format!("http://127.0.0.1:{port}/a\n127.0.0.1:{port}/x\n").as_bytes(),
    );
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert!(
        err(&o).contains("standard input:2")
            && err(&o).contains(&format!("http://127.0.0.1:{port}/x")),
        "{}",
        err(&o)
    );
    // A line that is no URL is no page (issue 45: it was "1 of 2 pages were not done").
    assert!(
        err(&o).contains("1 input line skipped (not a URL)") && !err(&o).contains("pages were"),
        "{}",
        err(&o)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["urls"].as_array().unwrap().len(), 1, "{r}");
}

/// A URL still in the quotes of the string it was lifted from names a real page: kept, quotes
/// removed (it was `js_fragment`).
#[test]
fn a_quoted_absolute_url_is_kept() {
    let o = run(
        &["check"],
        b"\"https://a.example/x\"\n'http://b.example/'\n\"/relative.html\"\n",
    );
    let v: Vec<serde_json::Value> = out(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v[0]["canonical"], "https://a.example/x");
    assert_eq!(v[1]["canonical"], "http://b.example/");
    assert_eq!(v[2]["verdict"], "reject");
}

/// A `phash` in `cluster`'s input that is not a hash is said (it was ignored silently).
#[test]
fn a_phash_that_is_not_one_is_said() {
    let line = br#"{"url":"https://a.example/","status":200,"html":"<html><body><p>x</p></body></html>","phash":"zz"}"#;
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let o = run(&["cluster", "-", "-o", report.to_str().unwrap()], line);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains("stdin:1: phash \"zz\" ignored"),
        "{}",
        err(&o)
    );
}

/// Fifth newcomer run: a pipe's results come out as its lines do, not at its end (`tail -f log
/// | crawlsieve dedup -`): lines written, then the writer quiet, the output must be there.
#[test]
fn results_stream_while_the_input_is_quiet() {
    use std::io::{BufRead, Write};
    for cmd in [&["dedup", "-q"][..], &["check"][..], &["canon"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args(cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"https://s.example/1\nhttps://s.example/2\n")
            .unwrap();
        stdin.flush().unwrap();
        // Read two lines while stdin stays open (a reader thread: the test fails, not hangs).
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = std::io::BufReader::new(stdout);
            for _ in 0..2 {
                let mut l = String::new();
                r.read_line(&mut l).unwrap();
                tx.send(l).unwrap();
            }
        });
        for _ in 0..2 {
            let l = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("{cmd:?}: no output while the input is open"));
            assert!(l.contains("s.example/"), "{l}");
        }
        drop(stdin);
        assert!(child.wait().unwrap().success());
    }
}

/// More of the contract: a closed stdout is exit 1 without a panic; zero timeouts and windows
/// are usage errors; directories and non-WARC files where files are wanted are input errors;
/// a configuration that is not TOML is a malformed file (3); a robots.txt of `--robots-dir`
/// that cannot be read is said before anything passes.
#[test]
fn more_mistakes_follow_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    // A closed pipe: no panic.
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["gate", "--print-config"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert!(!err(&o).contains("panicked"), "{}", err(&o));

    let o = run(
        &[
            "dedup",
            "--redis",
            "redis://127.0.0.1:9",
            "--redis-timeout",
            "0s",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = run(
        &["dedup", "--redis", "redis://127.0.0.1:9", "--window", "0s"],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));

    let page = dir.path().join("p.jsonl");
    std::fs::write(
        &page,
        "{\"url\":\"https://a.example/\",\"status\":200,\"html\":\"<p>x</p>\"}\n",
    )
    .unwrap();
    let o = run(&["cluster", page.to_str().unwrap(), "-o", d], b"");
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("is a directory"), "{}", err(&o));
    let report = dir.path().join("r.json");
    let o = run(
        &["cluster", "--warc", d, "-o", report.to_str().unwrap()],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    let o = run(
        &[
            "cluster",
            "--warc",
            page.to_str().unwrap(),
            "-o",
            report.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("no WARC response record"), "{}", err(&o));
    let o = run(&["similar", "-l", d, "-o", report.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    let o = run(
        &[
            "similar",
            "-l",
            "http://127.0.0.1:9/",
            "-o",
            report.to_str().unwrap(),
            "--chromium",
            "/nonexistent/chromium",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(
        err(&o).contains("--chromium /nonexistent/chromium"),
        "{}",
        err(&o)
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[kafka\nbrokers = 1\n").unwrap();
    let o = run(
        &["gate", "-c", bad.to_str().unwrap(), "--print-config"],
        b"",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    let o = run(&["man", "--dir", page.to_str().unwrap()], b"");
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));

    let robots = dir.path().join("robots");
    std::fs::create_dir_all(robots.join("h.example.net").join("robots.txt")).unwrap();
    let o = run(
        &["check", "--robots-dir", robots.to_str().unwrap()],
        b"https://h.example.net/private/x\n",
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("h.example.net/robots.txt"), "{}", err(&o));
}

/// Found by review: a line whose rest has not arrived (`url1\nur`, then a pause from a
/// block-buffered writer) held url1's result; and a streaming `dedup --redis` stopped while
/// its input was quiet left its delivered entries in the outbox, so the next run wrote those
/// URLs again.
#[test]
fn a_quiet_pipe_is_delivered_and_settled() {
    use std::io::{BufRead, Write};
    let redis = common::OwnRedis::start(&[]);
    let url = redis.url();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args([
            "dedup",
            "-q",
            "--redis",
            &url,
            "--namespace",
            "quiet",
            "--claim-ttl",
            "1s",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"https://q.example/1\nhttps://q.example/2\nhttps://q.exa")
        .unwrap();
    stdin.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(stdout);
        loop {
            let mut l = String::new();
            if r.read_line(&mut l).unwrap_or(0) == 0 {
                break;
            }
            let _ = tx.send(l);
        }
    });
    for want in ["https://q.example/1\n", "https://q.example/2\n"] {
        let l = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("delivered while the rest of a line is awaited");
        assert_eq!(l, want);
    }
    // Delivered and settled: killed now, nothing of it is left to adopt.
    std::thread::sleep(std::time::Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    // Its lease expires: what its outbox still held would now be adopted by the next run.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let o = run(
        &[
            "dedup",
            "-q",
            "--redis",
            &url,
            "--namespace",
            "quiet",
            "--claim-ttl",
            "1s",
        ],
        b"https://q.example/3\n",
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "https://q.example/3\n", "nothing written twice");
}

/// Found by a newcomer's review (2026-11-27): flags of the shared filter were silently ignored
/// without `--redis`; a capacity no memory holds aborted the process (exit 134, a backtrace);
/// `15M` was fifteen months; `intranet:8080` in text was kept while its own canonical form,
/// `https://intranet:8080/`, is rejected.
#[test]
fn newcomer_review_mistakes_are_said() {
    for flags in [
        &["--window", "3d"][..],
        &["--mode", "bloom"],
        &["--redis-cluster"],
        &["--hashes=3"],
        &["--claim-ttl", "5s"],
    ] {
        let mut args = vec!["dedup", "-q"];
        args.extend_from_slice(flags);
        let o = run(&args, b"https://a.example/\n");
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {}", err(&o));
        let name = flags[0].split('=').next().unwrap();
        assert!(
            err(&o).contains(&format!("{name} needs --redis URL")),
            "{flags:?}: {}",
            err(&o)
        );
    }
    let o = run_env(
        &["dedup", "-q", "--capacity", "1000000000000000"],
        b"https://a.example/\n",
        &[("RUST_BACKTRACE", "1")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("--capacity/--fp-rate") && !err(&o).contains("backtrace"),
        "{}",
        err(&o)
    );
    // Flags' mistakes name the flags, not the settings' keys.
    for (flags, said) in [
        (
            &["check", "--max-len", "0"][..],
            "--max-len must be at least 1",
        ),
        (
            &["check", "--encoding-ratio", "2"],
            "--encoding-ratio must be in",
        ),
        (
            &["check", "--allow-private", "foo"],
            "--allow-private \"foo\"",
        ),
    ] {
        let o = run(flags, b"https://a.example/\n");
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {}", err(&o));
        assert!(err(&o).contains(said), "{flags:?}: {}", err(&o));
    }
    let o = run(
        &["gate", "--print-config", "--set", "redis.claim_ttl=15M"],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("no fixed length"), "{}", err(&o));
    let o = run(
        &[
            "check",
            "--context",
            "text",
            "--base",
            "https://b.site.org/",
        ],
        b"intranet:8080\nwww.python.org:443/x\n",
    );
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert!(lines[0].contains("single_label_host"), "{lines:?}");
    assert!(lines[1].contains("\"keep\""), "{lines:?}");
}

/// `dedup --state` stopped by SIGTERM or SIGINT (a supervisor, a `timeout`, Ctrl-C) while its
/// input pipe is open and quiet: it stops reading, writes what it decided, saves the state with
/// exactly those URLs and exits 5; a second run over the whole input gives only the rest — no
/// URL lost, none repeated. (Before, a signal saved nothing: the next run repeated them all.)
#[test]
fn dedup_stopped_by_a_signal_saves_what_it_wrote() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.bloom");
    let first: Vec<String> = (0..300)
        .map(|i| format!("https://s.site.org/p/{i}"))
        .collect();
    let rest: Vec<String> = (300..500)
        .map(|i| format!("https://s.site.org/p/{i}"))
        .collect();
    for (sig, name) in [(libc::SIGTERM, "TERM"), (libc::SIGINT, "INT")] {
        let _ = std::fs::remove_file(&state);
        let mut child = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args(["dedup", "-q", "--capacity", "100000", "--state"])
            .arg(&state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all((first.join("\n") + "\n").as_bytes())
            .unwrap();
        stdin.flush().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(stdout).lines() {
                tx.send(l.unwrap()).unwrap();
            }
        });
        let mut got: Vec<String> = Vec::new();
        while got.len() < first.len() {
            got.push(
                rx.recv_timeout(std::time::Duration::from_secs(20))
                    .unwrap_or_else(|_| panic!("SIG{name}: {} lines, then nothing", got.len())),
            );
        }
        // The input stays open: the signal must end a read that waits on it.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let (tx2, rx2) = std::sync::mpsc::channel();
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut e = String::new();
            std::io::Read::read_to_string(&mut stderr, &mut e).unwrap();
            tx2.send(e).unwrap();
        });
        let e = rx2
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("SIG{name}: still running with its input open"));
        let status = child.wait().unwrap();
        drop(stdin);
        assert_eq!(status.code(), Some(5), "SIG{name}: {e}");
        assert!(
            e.contains("stopped by a signal after 300 input lines"),
            "{e}"
        );
        got.extend(rx.try_iter());
        assert_eq!(got, first, "SIG{name}: every URL read was written, once");
        // The whole input again, and more: only what was not written comes out.
        let all = [first.clone(), rest.clone()].concat();
        let o = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args(["dedup", "-q", "--state"])
            .arg(&state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut o = o;
        o.stdin
            .take()
            .unwrap()
            .write_all((all.join("\n") + "\n").as_bytes())
            .unwrap();
        let o = o.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", err(&o));
        let second: Vec<String> = out(&o).lines().map(str::to_string).collect();
        assert_eq!(
            second, rest,
            "SIG{name}: the second run gives only the rest"
        );
    }
}
