//! Issue 25: Google's robots.txt reference cases (google/robotstxt `robots_test.cc`, as the
//! `robotstxt` port runs them) fed through `crawlsieve robots`, plus what RFC 9309 adds.
//! Left out: `ID_Encoding`'s "a URL with a raw `ツ` does not match": the command percent-encodes
//! URLs first, as RFC 9309 §2.2.2 asks, so it matches (asserted below).

use std::io::Write;
use std::process::{Command, Stdio};

/// (robots.txt, agent, [(url, allowed)]).
type Case = (&'static str, &'static str, &'static [(&'static str, bool)]);

const CASES: &[Case] = &[
    // ID_LineSyntax_Line
    ("user-agent: FooBot\ndisallow: /\n", "FooBot", &[("http://foo.bar/x/y", false)]),
    ("foo: FooBot\nbar: /\n", "FooBot", &[("http://foo.bar/x/y", true)]),
    ("user-agent FooBot\ndisallow /\n", "FooBot", &[("http://foo.bar/x/y", false)]),
    // ID_LineSyntax_Groups
    (
        "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n",
        "FooBot",
        &[
            ("http://foo.bar/x/b", true),
            ("http://foo.bar/z/d", true),
            ("http://foo.bar/y/c", false),
            ("http://foo.bar/foo/bar/", false),
        ],
    ),
    (
        "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n",
        "BarBot",
        &[
            ("http://foo.bar/y/c", true),
            ("http://foo.bar/w/a", true),
            ("http://foo.bar/z/d", false),
            ("http://foo.bar/foo/bar/", false),
        ],
    ),
    // ID_LineSyntax_Groups_OtherRules: a line the REP does not define (a sitemap, an unknown
    // key) between two user-agent lines does not end the group.
    (
        "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
        "FooBot",
        &[("http://foo.bar/", false)],
    ),
    (
        "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
        "BarBot",
        &[("http://foo.bar/", false)],
    ),
    (
        "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
        "FooBot",
        &[("http://foo.bar/", false)],
    ),
    (
        "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
        "BarBot",
        &[("http://foo.bar/", false)],
    ),
    // ID_REPLineNamesCaseInsensitive
    (
        "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
        "FooBot",
        &[("http://foo.bar/x/y", true), ("http://foo.bar/a/b", false)],
    ),
    // ID_UserAgentValueCaseInsensitive, GoogleOnly_AcceptUserAgentUpToFirstSpace
    (
        "User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n",
        "foo",
        &[("http://foo.bar/x/y", true), ("http://foo.bar/a/b", false)],
    ),
    (
        "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
        "Foo",
        &[("http://foo.bar/x/y", true)],
    ),
    // ID_GlobalGroups_Secondary
    ("", "FooBot", &[("http://foo.bar/x/y", true)]),
    (
        "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
        "FooBot",
        &[("http://foo.bar/x/y", false)],
    ),
    (
        "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
        "BarBot",
        &[("http://foo.bar/x/y", true)],
    ),
    (
        "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n",
        "QuxBot",
        &[("http://foo.bar/x/y", true)],
    ),
    // ID_AllowDisallow_Value_CaseSensitive
    ("user-agent: FooBot\ndisallow: /x/\n", "FooBot", &[("http://foo.bar/x/y", false)]),
    ("user-agent: FooBot\ndisallow: /X/\n", "FooBot", &[("http://foo.bar/x/y", true)]),
    // ID_LongestMatch
    (
        "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n",
        "FooBot",
        &[("http://foo.bar/x/page.html", false)],
    ),
    (
        "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n",
        "FooBot",
        &[("http://foo.bar/x/page.html", true), ("http://foo.bar/x/", false)],
    ),
    ("user-agent: FooBot\ndisallow: \nallow: \n", "FooBot", &[("http://foo.bar/x/page.html", true)]),
    ("user-agent: FooBot\ndisallow: /\nallow: /\n", "FooBot", &[("http://foo.bar/x/page.html", true)]),
    (
        "user-agent: FooBot\ndisallow: /x\nallow: /x/\n",
        "FooBot",
        &[("http://foo.bar/x", false), ("http://foo.bar/x/", true)],
    ),
    (
        "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n",
        "FooBot",
        &[("http://foo.bar/page.html", false), ("http://foo.bar/page", true)],
    ),
    (
        "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n",
        "FooBot",
        &[("http://foo.bar/x/page.html", true), ("http://foo.bar/x/y.html", false)],
    ),
    (
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        "FooBot",
        &[("http://foo.bar/x/page", true), ("http://foo.bar/y/page", false)],
    ),
    // ID_Encoding
    (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
        "FooBot",
        &[("http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", true)],
    ),
    (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
        "FooBot",
        &[("http://foo.bar/foo/bar/%E3%83%84", true), ("http://foo.bar/foo/bar/ツ", true)],
    ),
    (
        "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
        "FooBot",
        &[("http://foo.bar/foo/bar/baz", false), ("http://foo.bar/foo/bar/%62%61%7A", true)],
    ),
    // ID_SpecialCharacters
    (
        "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
        "FooBot",
        &[
            ("http://foo.bar/foo/bar/quz", false),
            ("http://foo.bar/foo/quz", true),
            ("http://foo.bar/foo//quz", true),
            ("http://foo.bar/foo/bax/quz", true),
        ],
    ),
    (
        "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
        "FooBot",
        &[
            ("http://foo.bar/foo/bar", false),
            ("http://foo.bar/foo/bar/qux", true),
            ("http://foo.bar/foo/bar/", true),
            ("http://foo.bar/foo/bar/baz", true),
        ],
    ),
    (
        "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
        "FooBot",
        &[("http://foo.bar/foo/bar", true), ("http://foo.bar/foo/quz", false)],
    ),
    // GoogleOnly_IndexHTMLisDirectory
    (
        "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n",
        "foobot",
        &[
            ("http://foo.com/allowed-slash/", true),
            ("http://foo.com/allowed-slash/index.htm", false),
            ("http://foo.com/allowed-slash/index.html", true),
            ("http://foo.com/anyother-url", false),
        ],
    ),
    // GoogleOnly_DocumentationChecks
    (
        "user-agent: FooBot\ndisallow: /\nallow: /fish\n",
        "FooBot",
        &[
            ("http://foo.bar/bar", false),
            ("http://foo.bar/fish", true),
            ("http://foo.bar/fish.html", true),
            ("http://foo.bar/fish/salmon.html", true),
            ("http://foo.bar/fishheads/yummy.html", true),
            ("http://foo.bar/fish.html?id=anything", true),
            ("http://foo.bar/Fish.asp", false),
            ("http://foo.bar/catfish", false),
            ("http://foo.bar/?id=fish", false),
        ],
    ),
    (
        "user-agent: FooBot\ndisallow: /\nallow: /fish/\n",
        "FooBot",
        &[
            ("http://foo.bar/fish/", true),
            ("http://foo.bar/fish/?salmon", true),
            ("http://foo.bar/fish", false),
            ("http://foo.bar/Fish/Salmon.html", false),
        ],
    ),
    (
        "user-agent: FooBot\ndisallow: /\nallow: /*.php\n",
        "FooBot",
        &[
            ("http://foo.bar/filename.php", true),
            ("http://foo.bar/folder/filename.php?parameters", true),
            ("http://foo.bar//folder/any.php.file.html", true),
            ("http://foo.bar/index?f=filename.php/", true),
            ("http://foo.bar/php/", false),
            ("http://foo.bar/index?php", false),
            ("http://foo.bar/windows.PHP", false),
        ],
    ),
    (
        "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n",
        "FooBot",
        &[
            ("http://foo.bar/filename.php", true),
            ("http://foo.bar/filename.php?parameters", false),
            ("http://foo.bar/filename.php/", false),
            ("http://foo.bar/filename.php5", false),
            ("http://foo.bar/aaaphpaaa", false),
        ],
    ),
    (
        "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n",
        "FooBot",
        &[
            ("http://foo.bar/fish.php", true),
            ("http://foo.bar/fishheads/catfish.php?parameters", true),
            ("http://foo.bar/Fish.PHP", false),
        ],
    ),
    ("user-agent: FooBot\nallow: /p\ndisallow: /\n", "FooBot", &[("http://example.com/page", true)]),
    (
        "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n",
        "FooBot",
        &[("http://example.com/folder/page", true)],
    ),
    (
        "user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n",
        "FooBot",
        &[("http://example.com/page.htm", false)],
    ),
    (
        "user-agent: FooBot\nallow: /$\ndisallow: /\n",
        "FooBot",
        &[("http://example.com/", true), ("http://example.com/page.html", false)],
    ),
    // RFC 9309 §2.5 on top of the library: /robots.txt is always allowed; CR, CRLF and a BOM.
    (
        "\u{feff}User-agent: *\r\nDisallow: /\r\n",
        "FooBot",
        &[("http://foo.bar/robots.txt", true), ("http://foo.bar/x", false)],
    ),
    ("User-agent: *\rDisallow: /x\r", "FooBot", &[("http://foo.bar/x", false), ("http://foo.bar/y", true)]),
];

fn robots(body: &str, agent: &str, urls: &[&str]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("robots.txt");
    std::fs::write(&f, body).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["robots", "--agent", agent, "--file"])
        .arg(&f)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = urls.join("\n");
    input.push('\n');
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn googles_reference_cases_through_crawlsieve_robots() {
    let mut n = 0;
    for (body, agent, urls) in CASES {
        let list: Vec<&str> = urls.iter().map(|(u, _)| *u).collect();
        let got = robots(body, agent, &list);
        assert_eq!(got.len(), urls.len(), "one object per URL, in order");
        for ((url, allowed), v) in urls.iter().zip(&got) {
            assert_eq!(v["url"], *url);
            assert_eq!(
                v["allowed"], *allowed,
                "{agent} {url} against:\n{body}\n{v}"
            );
            n += 1;
        }
    }
    assert!(n >= 60, "{n} cases");
}

/// The rule that decided is named with its line; the crawl delay of the agent's group; URLs as
/// arguments; a bad agent is an error.
#[test]
fn the_deciding_rule_and_the_crawl_delay_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("robots.txt");
    std::fs::write(
        &f,
        "User-agent: *\nDisallow: /\n\nUser-agent: crawlsieve\nCrawl-delay: 2\nAllow: /docs/\nDisallow: /docs/private/\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args([
            "robots",
            "--agent",
            "crawlsieve/1.4 (+https://example.org)",
            "--file",
        ])
        .arg(&f)
        .args([
            "https://h.example/docs/a",
            "https://h.example/docs/private/b",
            "https://h.example/x",
        ])
        .output()
        .unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["allowed"], true);
    assert_eq!(
        (lines[0]["line"].as_u64(), lines[0]["rule"].as_str()),
        (Some(6), Some("Allow: /docs/"))
    );
    assert_eq!(lines[1]["allowed"], false);
    assert_eq!(lines[1]["rule"], "Disallow: /docs/private/");
    assert_eq!(
        lines[2]["allowed"], true,
        "no rule of the crawlsieve group matches"
    );
    assert_eq!(lines[2]["rule"], "no rule matches");
    assert!(lines.iter().all(|l| l["crawl_delay_s"] == 2.0));
    let bad = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["robots", "--agent", "/1.0", "--file"])
        .arg(&f)
        .arg("https://h.example/")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("product token"));
}

/// The gate's compiled rules ([`AgentRules`]) decide as the reference matcher does
/// ([`Robots::check`]) on every reference case.
#[test]
fn compiled_rules_agree_with_the_reference_matcher_on_googles_cases() {
    use crawlsieve::robots::{AgentRules, Robots};
    let mut n = 0;
    for (body, agent, urls) in CASES {
        let r = Robots::new(body.as_bytes());
        let c = AgentRules::compile(&r, agent);
        for (url, _) in *urls {
            assert_eq!(
                c.allowed(url),
                r.check(agent, url).allowed,
                "{agent} {url} with\n{body}"
            );
            n += 1;
        }
    }
    assert!(n > 60, "{n} cases");
}

/// The case that showed the port's own `matches` wrong (it inserts positions where Google's C++
/// overwrites them): `/*%41a` matches `/%41%41a`, in the command and in the gate's rules.
#[test]
fn a_star_before_a_repeated_run_matches() {
    use crawlsieve::robots::{AgentRules, Robots};
    let body = "user-agent: *\ndisallow: /*%41a\n";
    let url = "http://h.example/%41%41a";
    let r = Robots::new(body.as_bytes());
    let v = r.check("FooBot", url);
    assert!(!v.allowed, "{v:?}");
    assert_eq!(v.line, Some(2));
    assert!(!AgentRules::compile(&r, "FooBot").allowed(url));
    assert!(AgentRules::compile(&r, "FooBot").allowed("http://h.example/%41%41b"));
}

mod differential {
    use crawlsieve::robots::{pattern_matches, AgentRules, Robots};
    use proptest::prelude::*;

    /// An independent oracle for a rule's match: the pattern as an anchored regular expression
    /// (`*` any run, a final `$` the end, everything else literal).
    fn oracle(path: &str, pattern: &str) -> bool {
        let (body, end) = match pattern.strip_suffix('$') {
            Some(b) => (b, "$"),
            None => (pattern, ""),
        };
        let re: Vec<String> = body.split('*').map(regex::escape).collect();
        regex::Regex::new(&format!("^{}{end}", re.join(".*")))
            .unwrap()
            .is_match(path)
    }

    fn line() -> impl Strategy<Value = String> {
        let agent = prop::sample::select(vec![
            "*",
            "FooBot",
            "foobot/1.0",
            "BarBot",
            "* ignored",
            "Foo Bar",
        ]);
        let pattern = prop::collection::vec(
            // A small alphabet, so that rules of equal length (ties) are common.
            prop::sample::select(vec!["/", "a", "*", "$", "index.html", "%41"]),
            0..4,
        )
        // Most rules start with `/`, as they do in real files (and only those can match).
        .prop_map(|v| {
            let p = v.concat();
            if p.starts_with('a') {
                p
            } else {
                format!("/{p}")
            }
        });
        prop_oneof![
            agent.prop_map(|a| format!("user-agent: {a}")),
            pattern.clone().prop_map(|p| format!("allow: {p}")),
            pattern.prop_map(|p| format!("disallow: {p}")),
            Just("sitemap: http://x/s.xml".to_string()),
            Just("crawl-delay: 3".to_string()),
            Just(String::new()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Random patterns and paths over a small alphabet (so runs repeat and `*` has choices):
        /// the match agrees with the regular-expression oracle.
        #[test]
        fn the_match_agrees_with_a_regex_oracle(
            pattern in prop::collection::vec(prop::sample::select(vec!["/", "a", "*", "$", "%41", "b"]), 0..7),
            path in prop::collection::vec(prop::sample::select(vec!["/", "a", "%41", "b", "$"]), 0..8),
        ) {
            let (pattern, path) = (pattern.concat(), path.concat());
            prop_assert_eq!(
                pattern_matches(path.as_bytes(), pattern.as_bytes()),
                oracle(&path, &pattern),
                "{} against {}", pattern, path
            );
        }

        /// Random files, agents and paths: the gate's compiled rules (its own group tracking, one
        /// pass) and `Robots::check` (the reference parser's group tracking) agree.
        #[test]
        fn compiled_rules_agree_with_the_reference_matcher(
            lines in prop::collection::vec(line(), 0..12),
            agent in prop::sample::select(vec!["FooBot", "BarBot", "Other"]),
            path in prop::collection::vec(prop::sample::select(vec!["/", "a", "b", "index.html", "?x", "%41", "."]), 0..6),
        ) {
            let body = lines.join("\n");
            let url = format!("http://h.example/{}", path.concat());
            let r = Robots::new(body.as_bytes());
            let c = AgentRules::compile(&r, agent);
            prop_assert_eq!(c.allowed(&url), r.check(agent, &url).allowed, "{} {}\n{}", agent, url, body);
            let b = AgentRules::compile_bytes(body.as_bytes(), agent);
            prop_assert_eq!(b.allowed(&url), c.allowed(&url));
        }
    }
}
