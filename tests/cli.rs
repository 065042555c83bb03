//! The `crawlsieve` binary end to end: output contracts, state across runs, bad input.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `crawlsieve ARGS` with all three standard streams piped.
fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = spawn(args);
    let mut stdin_pipe = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin_pipe.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// The reason code of each line of `check`'s output (`keep` for a kept candidate).
fn reasons_of(check_output: &str) -> Vec<String> {
    check_output
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["reason"].as_str().unwrap_or("keep").to_string()
        })
        .collect()
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

const SAMPLE: &str = "http://Example.com:80/a?utm_source=x&b=2&a=1#top
javascript:void(0)
http://example.com/a?a=1&b=2
/relative/page.html
function() { return true; }
#section
https://example.com/%7Euser
";

#[test]
fn dedup_plain_emits_each_new_url_once() {
    let out = stdout(&run(
        &["dedup", "--base", "https://example.com/dir/", "-q"],
        SAMPLE.as_bytes(),
    ));
    assert_eq!(out, "http://example.com/a?a=1&b=2\nhttps://example.com/relative/page.html\nhttps://example.com/~user\n");
}

#[test]
fn dedup_jsonl_follows_the_output_contract() {
    let out = stdout(&run(
        &["dedup", "--format", "jsonl", "-q"],
        SAMPLE.as_bytes(),
    ));
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        rows.len(),
        SAMPLE.lines().count(),
        "one object per input line"
    );
    for (row, input) in rows.iter().zip(SAMPLE.lines()) {
        assert_eq!(row["input"], input, "input order kept");
        let keys: Vec<&String> = row.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 4, "{row}");
    }
    let verdicts: Vec<&str> = rows
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        [
            "keep",
            "reject",
            "duplicate",
            "reject",
            "reject",
            "reject",
            "keep"
        ]
    );
    assert_eq!(rows[1]["reason"], "non_fetchable_scheme");
    assert_eq!(rows[4]["reason"], "js_code");
    assert_eq!(rows[5]["reason"], "fragment_only");
    assert_eq!(rows[2]["canonical"], "http://example.com/a?a=1&b=2");
    assert!(rows[1]["canonical"].is_null() && rows[0]["reason"].is_null());
    // Without a base, a relative candidate is nothing to fetch: `no_base`, as in the gate and
    // the API (issue 28: it was printed as a new URL).
    assert_eq!(rows[3]["reason"], "no_base");
    assert!(rows[3]["canonical"].is_null());
}

#[test]
fn state_file_makes_a_second_run_emit_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.bloom");
    let s = state.to_str().unwrap();
    let first = stdout(&run(
        &["dedup", "--state", s, "--capacity", "1000", "-q"],
        SAMPLE.as_bytes(),
    ));
    assert_eq!(first.lines().count(), 2);
    assert!(state.exists());
    let second = stdout(&run(&["dedup", "--state", s, "-q"], SAMPLE.as_bytes()));
    assert_eq!(second, "", "a second run over the same input emits nothing");
    let third = stdout(&run(
        &["dedup", "--state", s, "-q"],
        b"http://example.com/new\n",
    ));
    assert_eq!(third, "http://example.com/new\n");
    // A damaged state file is a clear error, not a silent fresh start.
    let mut bytes = std::fs::read(&state).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0xff;
    std::fs::write(&state, bytes).unwrap();
    let bad = run(&["dedup", "--state", s, "-q"], SAMPLE.as_bytes());
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("checksum"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

#[test]
fn summary_reports_counts_per_reason() {
    let o = run(&["dedup"], SAMPLE.as_bytes());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success());
    assert!(
        err.contains("7 lines, 2 new, 1 duplicate, 4 rejected"),
        "{err}"
    );
    assert!(
        err.contains("rejected js_code") && err.contains("lines/s"),
        "{err}"
    );
}

#[test]
fn bad_input_gets_reason_codes_and_never_hurts_other_lines() {
    let mut input = Vec::new();
    input.extend_from_slice(b"http://example.com/before\n");
    input.extend_from_slice(b"\xff\xfe\xfd/not-utf8\n");
    input.extend_from_slice(b"/nul\x00byte\n");
    input.extend_from_slice(b"/bell\x07char\n");
    input.extend_from_slice(b"\n");
    input.extend_from_slice(b"http://example.com/");
    input.extend(std::iter::repeat_n(b'a', 3 << 20)); // a 3 MiB line
    input.extend_from_slice(b"\n");
    input.extend_from_slice(b"http://example.com/after\r\n");
    let out = stdout(&run(&["check"], &input));
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reasons: Vec<&str> = rows
        .iter()
        .map(|r| r["reason"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        reasons,
        [
            "-",
            "invalid_utf8",
            "control_chars",
            "control_chars",
            "empty",
            "too_long",
            "-"
        ]
    );
    assert_eq!(rows[6]["canonical"], "http://example.com/after");
    assert!(
        rows[5]["input"].as_str().unwrap().len() <= 1 << 20,
        "echo bounded by --max-line-bytes"
    );
}

#[test]
fn canon_prints_one_line_per_input_and_empty_where_none() {
    let out = stdout(&run(&["canon"], b"HTTP://EXAMPLE.com/a/../b?z=1&a=2#f\njavascript:alert(1)\n\xff\nhttp://[::1\n//cdn.host/x.js\n"));
    assert_eq!(
        out,
        "http://example.com/b?a=2&z=1\n\n\n\nhttps://cdn.host/x.js\n"
    );
}

#[test]
fn pattern_prints_templates() {
    let out = stdout(&run(
        &["pattern"],
        b"http://example.com/user/123?b=1&a=2\nhttp://example.com/about\n\xff\n",
    ));
    assert_eq!(
        out,
        "http://example.com/user/{num}?a=&b=\nhttp://example.com/about\n\n"
    );
    let out = stdout(&run(
        &["pattern", "--method", "post"],
        b"http://example.com/api/7\n",
    ));
    assert_eq!(out, "POST http://example.com/api/{num}\n");
}

#[test]
fn bad_settings_are_clear_errors() {
    let o = run(&["dedup", "--encoding-ratio", "7"], b"");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--encoding-ratio"));
    let o = run(&["dedup", "--fp-rate", "0"], b"");
    assert!(!o.status.success());
    let o = run(&["dedup", "/no/such/file"], b"");
    assert!(String::from_utf8_lossy(&o.stderr).contains("/no/such/file"));
}

#[test]
fn profile_env_var_is_honoured() {
    let long = format!("http://example.com/{}\n", "a".repeat(600));
    let strict = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["check"])
        .env("CRAWLSIEVE_PROFILE", "strict")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut s = strict;
    s.stdin.take().unwrap().write_all(long.as_bytes()).unwrap();
    let out = String::from_utf8(s.wait_with_output().unwrap().stdout).unwrap();
    assert!(out.contains("too_long"), "{out}");
}

#[test]
fn opt_in_merges_dedup_variants_but_emit_the_first_as_written() {
    let input =
        b"http://www.h.com/a/\nhttps://h.com/a\nhttp://h.com/a/index.html\nhttp://h.com/b\n";
    let safe = stdout(&run(&["dedup", "-q"], input));
    assert_eq!(safe.lines().count(), 4, "no merge by default: {safe}");
    let merged = stdout(&run(
        &["dedup", "-q", "--merge", "scheme,www,trailing-slash,index"],
        input,
    ));
    assert_eq!(merged, "http://www.h.com/a/\nhttp://h.com/b\n");
}

#[test]
fn dedup_shares_a_redis_namespace_across_runs_and_bloom_commands_manage_it() {
    let own = common::OwnRedis::start(&[]);
    let url = own.url();
    let r: &str = &url;
    let sample = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/sample-candidates.txt"
    ))
    .unwrap();
    let _ = run(&["bloom", "--redis", r, "drop", "cli-test"], b"");
    let local = stdout(&run(
        &["dedup", "-q", "--base", "https://docs.example.org/guide/"],
        &sample,
    ));
    let args = [
        "dedup",
        "-q",
        "--base",
        "https://docs.example.org/guide/",
        "--redis",
        r,
        "--namespace",
        "cli-test",
    ];
    let shared = stdout(&run(&args, &sample));
    assert_eq!(shared, local, "the Redis filter decides like the local one");
    assert!(shared.lines().count() > 1000);
    // A second run (another process) sees everything.
    assert_eq!(stdout(&run(&args, &sample)), "");
    // Issue 25: two URLs forgotten are published again, once.
    let two: Vec<&str> = shared.lines().skip(10).take(2).collect();
    let f = run(
        &[
            "bloom",
            "forget",
            "--redis",
            r,
            "--namespace",
            "cli-test",
            two[0],
            two[1],
            "not a url",
        ],
        b"",
    );
    // The output is written; a URL the sieve rejects is an item not done: exit 5 (partial).
    assert_eq!(
        f.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&f.stderr)
    );
    assert!(
        String::from_utf8_lossy(&f.stderr)
            .contains("1 of 3 URLs not forgotten: 1 rejected by the sieve"),
        "{}",
        String::from_utf8_lossy(&f.stderr)
    );
    // Every URL not forgotten is counted (issue 45: one rejected and one never seen were "1 of
    // 3 not forgotten").
    let f2 = run(
        &[
            "bloom",
            "forget",
            "--redis",
            r,
            "--namespace",
            "cli-test",
            "https://never-seen.example/x",
            "not a url",
        ],
        b"",
    );
    let said = String::from_utf8_lossy(&f2.stderr);
    assert!(
        said.contains("2 of 2 URLs not forgotten: 1 rejected by the sieve")
            && said.contains("1 not in the filter"),
        "{said}"
    );
    // (urls, forgotten, not_in_filter) of a forget's answer, and the answer.
    let counts = |f: &Output| {
        let v: serde_json::Value = serde_json::from_slice(&f.stdout).unwrap();
        let n = |k: &str| v[k].as_u64();
        ((n("urls"), n("forgotten"), n("not_in_filter")), v)
    };
    let (n, v) = counts(&f);
    assert_eq!(n, (Some(3), Some(2), Some(0)), "{v}");
    assert_eq!(v["rejected"][0]["reason"], "no_base", "{v}");
    // `-` reads stdin; a URL never seen is counted, not an error.
    let f = run(
        &[
            "bloom",
            "forget",
            "--redis",
            r,
            "--namespace",
            "cli-test",
            "-",
        ],
        b"https://never-seen.example.org/x\n",
    );
    assert!(f.status.success(), "{}", String::from_utf8_lossy(&f.stderr));
    let (n, v) = counts(&f);
    assert_eq!(n, (Some(1), Some(0), Some(1)), "{v}");
    assert_eq!(
        stdout(&run(&args, &sample)),
        format!("{}\n{}\n", two[0], two[1])
    );
    assert_eq!(stdout(&run(&args, &sample)), "", "exactly once");
    // Attaching with other parameters is a clear error.
    let o = run(
        &[
            "dedup",
            "--redis",
            r,
            "--namespace",
            "cli-test",
            "--capacity",
            "5",
        ],
        b"x\n",
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("capacity"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // stats / export / drop / import.
    let stats: serde_json::Value = serde_json::from_str(&stdout(&run(
        &["bloom", "--redis", r, "stats", "cli-test"],
        b"",
    )))
    .unwrap();
    assert_eq!(
        stats["items"].as_u64().unwrap() as usize,
        local.lines().count()
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ns.snap");
    stdout(&run(
        &[
            "bloom",
            "--redis",
            r,
            "export",
            "cli-test",
            file.to_str().unwrap(),
        ],
        b"",
    ));
    stdout(&run(&["bloom", "--redis", r, "drop", "cli-test"], b""));
    assert!(!run(&["bloom", "--redis", r, "stats", "cli-test"], b"")
        .status
        .success());
    stdout(&run(
        &["bloom", "--redis", r, "import", file.to_str().unwrap()],
        b"",
    ));
    assert_eq!(
        stdout(&run(&args, &sample)),
        "",
        "restored from the snapshot"
    );
    let o = run(&["bloom", "--redis", r, "create", "cli-test"], b"");
    assert!(!o.status.success(), "create refuses an existing namespace");
    stdout(&run(&["bloom", "--redis", r, "drop", "cli-test"], b""));
}

#[test]
fn dedup_redis_survives_a_redis_restart_without_losing_a_url() {
    use std::collections::HashSet;
    let mut server = common::OwnRedis::start(&["--appendonly", "yes", "--appendfsync", "always"]);
    // 400 000 lines, 100 000 distinct URLs, each seen 4 times.
    let mut input = String::new();
    for i in 0..400_000u64 {
        let u = (i * 7919) % 100_000;
        input.push_str(&format!(
            "https://h{}.example.org/item/{u}?p={}\n",
            u % 977,
            u % 13
        ));
    }
    let expect: HashSet<String> = stdout(&run(&["dedup", "-q"], input.as_bytes()))
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(expect.len(), 100_000);
    let url = server.url();
    let mut child = spawn(&[
        "dedup",
        "--redis",
        &url,
        "--namespace",
        "restart",
        "--redis-timeout",
        "300ms",
    ]);
    let mut stdin_pipe = child.stdin.take().unwrap();
    let data = input.into_bytes();
    let writer = std::thread::spawn(move || {
        // Half the input, then the outage, then the rest.
        stdin_pipe.write_all(&data[..data.len() / 2]).unwrap();
        stdin_pipe.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        server.kill();
        std::thread::sleep(std::time::Duration::from_millis(500));
        server.restart();
        stdin_pipe.write_all(&data[data.len() / 2..]).unwrap();
        server
    });
    let out = child.wait_with_output().unwrap();
    let _server = writer.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("retrying"), "the outage was noticed: {err}");
    let got: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let got_set: HashSet<String> = got.iter().cloned().collect();
    assert_eq!(got_set, expect, "every URL emitted, nothing else");
    // Repeats are only possible for the batches that were in flight during the outage.
    assert!(
        got.len() - expect.len() <= 4 * 512 * 2,
        "{} repeats",
        got.len() - expect.len()
    );
}

/// Issue 17: `--context` decodes candidates as the place they were found implies, before they
/// are judged: raw attribute values (`&amp;`, `&#x2F;`), JavaScript string escapes (`\/`,
/// `\u002F`); `unknown` decodes nothing.
#[test]
fn context_decodes_candidates_before_judging() {
    let canon = |ctx: &str, input: &str| {
        stdout(&run(
            &[
                "canon",
                "--context",
                ctx,
                "--base",
                "https://b.example/dir/",
            ],
            input.as_bytes(),
        ))
    };
    assert_eq!(
        canon("html_attr", "/s?code=x&amp;edition=2021\n/a&#x2F;b\n"),
        "https://b.example/s?code=x&edition=2021\nhttps://b.example/a/b\n"
    );
    assert_eq!(
        canon("js", "\\/api\\/v2\\/users\n\\u002Fdocs\\x2Fintro\n"),
        "https://b.example/api/v2/users\nhttps://b.example/docs/intro\n"
    );
    // Unknown: the JS escapes stay as they are (`\/` is read as the path `//api//v2`… by the
    // WHATWG parser), and `&#x2F;` is not decoded.
    assert_eq!(canon("unknown", "/a&#x2F;b\n"), "https://b.example/a&\n");
    let check = stdout(&run(
        &["check", "--context", "html_attr"],
        b"https://e.example/p?x=1&amp;y=2\n",
    ));
    let v: serde_json::Value = serde_json::from_str(check.lines().next().unwrap()).unwrap();
    assert_eq!(v["verdict"], "keep", "{v}");
    assert_eq!(v["canonical"], "https://e.example/p?x=1&y=2", "{v}");
    assert_eq!(
        v["input"], "https://e.example/p?x=1&amp;y=2",
        "the input is echoed raw"
    );
    let bad = run(&["check", "--context", "html"], b"x\n");
    assert_eq!(
        bad.status.code(),
        Some(2),
        "an unknown context is a usage error"
    );
}

/// Issue 25: a candidate naming the crawler's own machine or network is `private_address` in
/// `check` and `dedup` alike, however it is spelled; `--allow-private` opens what it names, and
/// a bad entry is an error naming it.
#[test]
fn private_addresses_are_rejected_unless_allowed() {
    let input = b"http://&#x31;27.0.0.1/admin\nhttp://2130706433/\nhttp://[::ffff:a9fe:a9fe]/\nhttp://10.1.2.3/x\nhttps://public.example/\n";
    let out = stdout(&run(&["check", "--context", "html_attr"], input));
    assert_eq!(
        reasons_of(&out),
        [
            "private_address",
            "private_address",
            "private_address",
            "private_address",
            "keep"
        ],
        "{out}"
    );
    let dedup = stdout(&run(
        &[
            "dedup",
            "--context",
            "html_attr",
            "--allow-private",
            "10.0.0.0/8,127.0.0.1",
        ],
        input,
    ));
    assert_eq!(
        dedup,
        "http://127.0.0.1/admin\nhttp://127.0.0.1/\nhttp://10.1.2.3/x\nhttps://public.example/\n",
        "allowed ranges pass, the metadata address does not"
    );
    let bad = run(&["check", "--allow-private", "example.com"], b"x\n");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("\"example.com\""),
        "{err}"
    );
}

/// Issue 25: the spider-trap rules in `check`, each with its reason; `--no-traps` turns them
/// off; a number repeated is not a loop.
#[test]
fn spider_traps_are_rejected_with_their_reasons() {
    let deep: String = (0..31).map(|i| format!("/d{i}")).collect();
    let input = format!(
        "https://t.example/x/y/x/y/x/y/\nhttps://t.example{deep}\nhttps://t.example/events/2150/01/\nhttps://t.example/cal?month=2150-01\nhttps://tiles.example/3/3/3.png\nhttps://t.example/blog/2009/05/post\n"
    );
    let reasons = |args: &[&str]| reasons_of(&stdout(&run(args, input.as_bytes())));
    assert_eq!(
        reasons(&["check"]),
        [
            "trap_repeated_path",
            "trap_too_deep",
            "trap_calendar",
            "trap_calendar",
            "keep",
            "keep"
        ]
    );
    assert_eq!(reasons(&["check", "--no-traps"]), ["keep"; 6]);
    // Echo: judged against the page the links were found on (`--base`).
    let echo = stdout(&run(
        &["check", "--base", "https://t.example/shop/list?sort=price"],
        b"list/shop/list\n/shop/list/shop/list\n?sort=price&sort=price\n/shop/item/1\n",
    ));
    let got = reasons_of(&echo);
    assert_eq!(
        got,
        ["trap_echo", "trap_echo", "trap_echo", "keep"],
        "{echo}"
    );
}

/// Issue 25: `--robots-dir` judges URLs by robots.txt files already fetched
/// (`DIR/<host>/robots.txt`, `DIR/<host>:<port>/robots.txt`), for the agent given; a host
/// without a file passes; a disallowed URL takes no place in the state, so new rules let it in.
#[test]
fn robots_dir_applies_fetched_files() {
    let dir = tempfile::tempdir().unwrap();
    let write = |host: &str, body: &str| {
        std::fs::create_dir_all(dir.path().join(host)).unwrap();
        std::fs::write(dir.path().join(host).join("robots.txt"), body).unwrap();
    };
    write(
        "r.example",
        "User-agent: *\nDisallow: /private/\n\nUser-agent: mybot\nDisallow: /mine/\n",
    );
    write("r.example:8080", "User-agent: *\nDisallow: /\n");
    let d = dir.path().to_str().unwrap();
    let input = b"https://r.example/private/a\nhttps://r.example/mine/b\nhttps://r.example:8080/x\nhttps://r.example/robots.txt\nhttps://other.example/private/a\n";
    let reasons = |agent: &str| {
        reasons_of(&stdout(&run(
            &["check", "--robots-dir", d, "--robots-agent", agent],
            input,
        )))
    };
    assert_eq!(
        reasons("OtherBot/2.0"),
        [
            "robots_disallowed",
            "keep",
            "robots_disallowed",
            "keep",
            "keep"
        ]
    );
    assert_eq!(
        reasons("mybot"),
        [
            "keep",
            "robots_disallowed",
            "robots_disallowed",
            "keep",
            "keep"
        ]
    );
    // dedup with a state file: the disallowed URL is not remembered as seen.
    let state = dir.path().join("state.bloom");
    let st = state.to_str().unwrap();
    let first = stdout(&run(&["dedup", "--robots-dir", d, "--state", st], input));
    assert_eq!(
        first,
        "https://r.example/mine/b\nhttps://r.example/robots.txt\nhttps://other.example/private/a\n"
    );
    write("r.example", "User-agent: *\nAllow: /\n");
    let again = stdout(&run(&["dedup", "--robots-dir", d, "--state", st], input));
    assert_eq!(
        again, "https://r.example/private/a\n",
        "new rules let it in"
    );
    let bad = run(&["check", "--robots-dir", "/nonexistent/dir"], b"x\n");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("--robots-dir /nonexistent/dir"),
        "{err}"
    );
}

/// Issue 18: the scope flags of `check` and `dedup`, a Nutch file among them; a bad file is an
/// error naming its line.
#[test]
fn scope_flags_reject_with_their_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("regex-urlfilter.txt");
    std::fs::write(
        &rules,
        "# focused\n-/admin/\n+^https://docs\\.example/\n-.\n",
    )
    .unwrap();
    let input = b"https://docs.example/a\nhttps://docs.example/admin/x\nhttps://other.example/\nhttps://docs.example/a/b/c/d\nhttps://blog.docs.example/\n";
    let out = stdout(&run(
        &[
            "check",
            "--allow-domain",
            "docs.example",
            "--scope-file",
            rules.to_str().unwrap(),
            "--max-depth",
            "3",
        ],
        input,
    ));
    let got = reasons_of(&out);
    assert_eq!(
        got,
        [
            "keep",
            "denied_by_rule",
            "out_of_scope_domain",
            "too_deep",
            "denied_by_rule"
        ]
    );
    let out = stdout(&run(
        &["dedup", "-q", "--deny-domain", "other.example"],
        input,
    ));
    assert!(
        !out.contains("other.example") && out.contains("docs.example/a\n"),
        "{out}"
    );
    std::fs::write(&rules, "+^https://ok/\n-(unclosed\n").unwrap();
    let r = run(
        &["check", "--scope-file", rules.to_str().unwrap()],
        b"https://ok/\n",
    );
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("regex-urlfilter.txt:2") && err.contains("(unclosed"),
        "{err}"
    );
}

/// Issue 45: the `bloom` sub-commands take the namespace both ways (`stats NS`, `stats
/// --namespace NS`, as `forget` and `rules` take it) and `export` takes `-o FILE` as well as
/// the file as an argument; a namespace or file named twice, or not at all, is a usage error.
#[test]
fn bloom_subcommands_take_the_namespace_and_file_alike() {
    let redis = common::OwnRedis::start(&[]);
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let bloom = |args: &[&str]| {
        let mut all = vec!["bloom", "--redis", url.as_str()];
        all.extend_from_slice(args);
        run(&all, b"")
    };
    let ok = |o: &Output| assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    ok(&bloom(&["create", "shapes", "--capacity", "1000"]));
    for args in [
        &["stats", "shapes"][..],
        &["stats", "--namespace", "shapes"],
    ] {
        let o = bloom(args);
        ok(&o);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["namespace"], "shapes", "{args:?}");
    }
    let file = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let (a, b, c) = (file("a.snap"), file("b.snap"), file("c.snap"));
    ok(&bloom(&["export", "shapes", &a]));
    ok(&bloom(&["export", "shapes", "-o", &b]));
    ok(&bloom(&["export", "--namespace", "shapes", &c]));
    let snap = std::fs::read(&a).unwrap();
    assert!(!snap.is_empty());
    for f in [&b, &c] {
        assert_eq!(std::fs::read(f).unwrap().len(), snap.len(), "{f}");
    }
    for args in [
        &["export", "shapes"][..],
        &["export", "shapes", &a, "-o", &b],
        &["stats", "--namespace", "shapes", "other"],
        &["stats"],
    ] {
        assert_eq!(bloom(args).status.code(), Some(2), "{args:?}");
    }
    // CRAWLSIEVE_BLOOM_NAMESPACE naming the same namespace is no conflict; naming another one
    // is an error, never a silent choice of one; the gate's CRAWLSIEVE_NAMESPACE is not read
    // (review: `bloom export shapes` exported it to ./shapes, a bare `bloom drop` dropped it).
    let with_env = |ns: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args(["bloom", "--redis", url.as_str()])
            .args(args)
            .env("CRAWLSIEVE_BLOOM_NAMESPACE", ns)
            .output()
            .unwrap()
    };
    ok(&with_env("shapes", &["stats", "shapes"]));
    ok(&with_env("shapes", &["stats"]));
    assert_eq!(
        with_env("other", &["stats", "shapes"]).status.code(),
        Some(2)
    );
    assert_eq!(
        with_env("other", &["export", "shapes", &a]).status.code(),
        Some(2)
    );
    let gate_env = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args(["bloom", "--redis", url.as_str()])
            .args(args)
            .current_dir(dir.path())
            .env("CRAWLSIEVE_NAMESPACE", "live")
            .output()
            .unwrap()
    };
    assert_eq!(gate_env(&["export", "shapes"]).status.code(), Some(2));
    assert!(!dir.path().join("shapes").exists(), "nothing exported");
    assert_eq!(gate_env(&["drop"]).status.code(), Some(2));
    ok(&gate_env(&["stats", "shapes"]));
    let o = bloom(&["drop", "--namespace", "shapes"]);
    ok(&o);
    assert_eq!(bloom(&["stats", "shapes"]).status.code(), Some(3));
}

/// Issue 46: `dedup --outcomes` holds guesses where they miss (`fetch_misses`); `rules holds`
/// lists the keys that hold, `rules release KEY` lifts one, and the held URL then comes in.
#[test]
fn outcomes_hold_and_rules_list_and_release_the_holds() {
    let redis = common::OwnRedis::start(&[]);
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let outcomes = dir.path().join("outcomes.jsonl");
    std::fs::write(
        &outcomes,
        "{\"url\":\"https://a.example/ui/x.css\",\"status\":404,\"source\":\"https://a.example/app.js\",\"context\":\"js\"}\n",
    )
    .unwrap();
    let dedup = |extra: &[&str], input: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args([
                "dedup",
                "-q",
                "--format",
                "jsonl",
                "--redis",
                &url,
                "--namespace",
                "oc",
            ])
            .args(["--base", "https://a.example/app.js", "--context", "js"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let first = dedup(&["--outcomes", outcomes.to_str().unwrap()], "ui/y.css\n");
    assert!(first.contains("\"fetch_misses\""), "{first}");
    // A module path (`./x.js`, `../x.mjs`: an import of the script's own files) from the same
    // source is never held; the same file written bare is.
    let null = dir.path().join("none.jsonl");
    std::fs::write(&null, "").unwrap();
    let modules = dedup(
        &["--outcomes", null.to_str().unwrap()],
        "./ui/mod.js\n../lib/util.mjs\nui/mod2.js\n",
    );
    let verdicts: Vec<serde_json::Value> = modules
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reason = |i: usize| verdicts[i]["reason"].as_str().unwrap_or("").to_string();
    assert_eq!(verdicts.len(), 3, "{modules}");
    assert_eq!(verdicts[0]["verdict"], "keep", "{modules}");
    assert_eq!(verdicts[1]["verdict"], "keep", "{modules}");
    assert_eq!(reason(2), "fetch_misses", "{modules}");
    let rules = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args(["rules", "--redis", &url, "--namespace", "oc"])
            .args(args)
            .output()
            .unwrap()
    };
    let holds = rules(&["holds"]);
    assert!(
        holds.status.success(),
        "{}",
        String::from_utf8_lossy(&holds.stderr)
    );
    let text = String::from_utf8(holds.stdout).unwrap();
    let key = "s|js|https://a.example/app.js|https://a.example";
    let line: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["key"] == key)
        .unwrap_or_else(|| panic!("{key} not listed: {text}"));
    assert_eq!(
        (line["misses"].as_u64(), line["holds"].as_bool()),
        (Some(1), Some(true)),
        "{line}"
    );
    // The origin key is listed with `--all`, holds nothing itself, and is not released.
    let all = String::from_utf8(rules(&["holds", "--all"]).stdout).unwrap();
    let origin: serde_json::Value = all
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["key"] == "o|https://a.example")
        .unwrap_or_else(|| panic!("no origin key: {all}"));
    assert_eq!(origin["holds"].as_bool(), Some(false), "{origin}");
    let refused = rules(&["release", "o|https://a.example"]);
    assert_eq!(
        refused.status.code(),
        Some(3),
        "an origin key is not released"
    );
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("origin key"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let released = rules(&["release", key]);
    assert!(
        released.status.success(),
        "{}",
        String::from_utf8_lossy(&released.stderr)
    );
    assert_eq!(
        rules(&["release", key]).status.code(),
        Some(3),
        "nothing left to release"
    );
    let again = dedup(&["--outcomes", null.to_str().unwrap()], "ui/y.css\n");
    assert!(again.contains("\"keep\""), "released: {again}");
}
