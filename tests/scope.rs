//! Crawl scope (issue 18): real Nutch/StormCrawler rule files, a public-suffix edge-case table,
//! load errors that name the file, line and pattern, and scope in the sieve (before the filter).

use std::path::PathBuf;

use crawlsieve::bloom::BloomFilter;
use crawlsieve::scope::{site, Scope, ScopeSpec};
use crawlsieve::sieve::{Sieve, Verdict};
use crawlsieve::url::{Canonicalizer, Reason, Validator};
use url::Url;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/scope")
        .join(name)
}

fn scope(spec: ScopeSpec) -> Scope {
    Scope::new(&spec)
        .expect("compiles")
        .expect("restricts something")
}

#[track_caller]
fn verdicts(s: &Scope, cases: &[(&str, Result<(), Reason>)]) {
    for (u, want) in cases {
        assert_eq!(s.check(u, None), *want, "{u}");
    }
}

#[test]
fn nutch_default_file_loads_and_means_what_it_means_in_nutch() {
    let s = scope(ScopeSpec {
        files: vec![data("nutch-regex-urlfilter.txt")],
        ..Default::default()
    });
    verdicts(
        &s,
        &[
            ("https://example.com/docs/intro", Ok(())),
            ("https://example.com/", Ok(())),
            ("https://example.com/logo.png", Err(Reason::DeniedByRule)),
            ("https://example.com/a.JPG", Err(Reason::DeniedByRule)),
            // `-[?*!@=]`: Nutch's whole-web default skips every query.
            ("https://example.com/search?q=x", Err(Reason::DeniedByRule)),
            // The loop breaker (a back-reference, run on fancy-regex).
            (
                "https://example.com/a/b/a/c/a/d/",
                Err(Reason::DeniedByRule),
            ),
            ("https://example.com/a/b/c/d/e/f/", Ok(())),
        ],
    );
}

#[test]
fn stormcrawler_default_file_loads() {
    let s = scope(ScopeSpec {
        files: vec![data("stormcrawler-default-regex-filters.txt")],
        ..Default::default()
    });
    verdicts(
        &s,
        &[
            ("https://example.com/app.js", Err(Reason::DeniedByRule)),
            (
                "https://example.com/style.CSS?v=2",
                Err(Reason::DeniedByRule),
            ),
            (
                "https://example.com/x/y/x/z/x/w/",
                Err(Reason::DeniedByRule),
            ),
            ("https://example.com/search?q=x", Ok(())),
            ("https://example.com/page.html", Ok(())),
        ],
    );
}

#[test]
fn a_focused_file_keeps_nutch_order_first_match_decides() {
    // `+site` before `-.`: in Nutch order the site is admitted and everything else rejected
    // (deny-before-allow would reject everything here).
    let s = scope(ScopeSpec {
        files: vec![data("focused-docs.txt")],
        ..Default::default()
    });
    verdicts(
        &s,
        &[
            ("https://docs.example.org/guide/", Ok(())),
            ("https://eu.docs.example.org/guide/", Ok(())),
            (
                "https://docs.example.org/admin/users",
                Err(Reason::DeniedByRule),
            ),
            (
                "https://docs.example.org/guide/?print=1",
                Err(Reason::DeniedByRule),
            ),
            ("https://example.org/", Err(Reason::DeniedByRule)),
            (
                "https://docs.example.org.evil.com/",
                Err(Reason::DeniedByRule),
            ),
        ],
    );
}

#[test]
fn allow_and_deny_lists_deny_first_empty_allow_means_everything() {
    let s = scope(ScopeSpec {
        deny: vec![r"/private/".into(), r"(?i)\.pdf$".into()],
        ..Default::default()
    });
    verdicts(
        &s,
        &[
            ("https://a.com/x", Ok(())),
            ("https://a.com/private/x", Err(Reason::DeniedByRule)),
            ("https://a.com/X.PDF", Err(Reason::DeniedByRule)),
        ],
    );
    let s = scope(ScopeSpec {
        allow: vec![r"^https://a\.com/docs/".into()],
        deny: vec![r"/docs/old/".into()],
        ..Default::default()
    });
    verdicts(
        &s,
        &[
            ("https://a.com/docs/new", Ok(())),
            ("https://a.com/docs/old/x", Err(Reason::DeniedByRule)),
            ("https://a.com/blog/", Err(Reason::DeniedByRule)),
        ],
    );
}

#[test]
fn domains_with_their_subdomains() {
    let s = scope(ScopeSpec {
        allow_domains: vec![
            "example.co.uk".into(),
            "alice.github.io".into(),
            "BÜCHER.example".into(),
            "127.0.0.1".into(),
            "trailing.example.com.".into(),
        ],
        deny_domains: vec!["secret.example.co.uk".into()],
        ..Default::default()
    });
    verdicts(
        &s,
        &[
            ("https://example.co.uk/", Ok(())),
            ("https://www.example.co.uk/a", Ok(())),
            ("https://other.co.uk/", Err(Reason::OutOfScopeDomain)),
            ("https://badexample.co.uk/", Err(Reason::OutOfScopeDomain)),
            (
                "https://secret.example.co.uk/",
                Err(Reason::OutOfScopeDomain),
            ),
            (
                "https://x.secret.example.co.uk/",
                Err(Reason::OutOfScopeDomain),
            ),
            ("https://alice.github.io/p", Ok(())),
            ("https://bob.github.io/p", Err(Reason::OutOfScopeDomain)),
            // The canonicalizer writes IDN hosts in punycode; the entry was Unicode.
            ("https://xn--bcher-kva.example/", Ok(())),
            ("https://shop.xn--bcher-kva.example/", Ok(())),
            ("http://127.0.0.1:8080/", Ok(())),
            ("http://127.0.0.2/", Err(Reason::OutOfScopeDomain)),
            ("https://trailing.example.com/", Ok(())),
            ("https://trailing.example.com./", Ok(())),
        ],
    );
    // Punycode entries admit the same hosts.
    let s = scope(ScopeSpec {
        allow_domains: vec!["xn--bcher-kva.example".into()],
        ..Default::default()
    });
    verdicts(&s, &[("https://xn--bcher-kva.example/", Ok(()))]);
}

#[test]
fn public_suffix_edge_cases() {
    // (host, its site)
    for (host, want) in [
        ("www.example.co.uk", "example.co.uk"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("alice.github.io", "alice.github.io"),
        ("www.alice.github.io", "alice.github.io"),
        ("bucket.s3.amazonaws.com", "bucket.s3.amazonaws.com"),
        ("example.com.au", "example.com.au"),
        ("shop.example.com.au", "example.com.au"),
        ("www.example.com.", "example.com"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "[::1]"),
        ("localhost", "localhost"),
    ] {
        assert_eq!(site(host), want, "{host}");
    }
    let s = scope(ScopeSpec {
        same_site_as_source: true,
        ..Default::default()
    });
    let src = |u: &str| Url::parse(u).unwrap();
    for (url, source, same) in [
        (
            "https://b.example.co.uk/x",
            "https://a.example.co.uk/",
            true,
        ),
        ("https://other.co.uk/x", "https://example.co.uk/", false),
        ("https://bob.github.io/x", "https://alice.github.io/", false),
        (
            "https://alice.github.io/x",
            "https://www.alice.github.io/",
            true,
        ),
        ("http://127.0.0.1:8081/", "http://127.0.0.1:8080/", true),
        ("http://127.0.0.2/", "http://127.0.0.1/", false),
        ("https://example.com/", "https://www.example.com./", true),
        (
            "https://xn--bcher-kva.example/",
            "https://www.bücher.example/",
            true,
        ),
    ] {
        let got = s.check(url, Some(&src(source)));
        assert_eq!(got.is_ok(), same, "{url} from {source}: {got:?}");
        if !same {
            assert_eq!(got, Err(Reason::OffSite));
        }
    }
    // Without a source the rule does not apply.
    assert_eq!(s.check("https://anything.example/", None), Ok(()));
}

#[test]
fn limits_schemes_and_ports() {
    let s = scope(ScopeSpec {
        max_depth: Some(2),
        max_query_params: Some(1),
        schemes: vec!["https".into()],
        ports: vec![443, 8443],
        ..Default::default()
    });
    verdicts(
        &s,
        &[
            ("https://a.com/x/y", Ok(())),
            ("https://a.com/x/y/", Ok(())),
            ("https://a.com/x/y/z", Err(Reason::TooDeep)),
            ("https://a.com/?a=1", Ok(())),
            ("https://a.com/?a=1&b=2", Err(Reason::TooManyParams)),
            ("http://a.com/", Err(Reason::OutOfScopeScheme)),
            ("https://a.com:8443/", Ok(())),
            ("https://a.com:9443/", Err(Reason::OutOfScopePort)),
        ],
    );
}

#[test]
fn a_bad_scope_names_the_file_line_and_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("rules.txt");
    std::fs::write(&f, "# comment\n-^ftp:\n\n+^https://(unclosed\n").unwrap();
    let e = Scope::new(&ScopeSpec {
        files: vec![f.clone()],
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains(&format!("{}:4", f.display())), "{e}");
    assert!(e.contains("^https://(unclosed"), "{e}");
    std::fs::write(&f, "^https://no-sign/\n").unwrap();
    let e = Scope::new(&ScopeSpec {
        files: vec![f.clone()],
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(":1") && e.contains("starts with + (allow) or - (deny)"),
        "{e}"
    );
    let e = Scope::new(&ScopeSpec {
        files: vec![dir.path().join("missing.txt")],
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("missing.txt"), "{e}");
    let e = Scope::new(&ScopeSpec {
        deny: vec!["ok".into(), "[z-a]".into()],
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("deny[1]") && e.contains("[z-a]"), "{e}");
    for suffix in ["co.uk", "github.io", "com"] {
        let e = Scope::new(&ScopeSpec {
            allow_domains: vec![suffix.into()],
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("public suffix"), "{suffix}: {e}");
    }
    let e = Scope::new(&ScopeSpec {
        allow_domains: vec!["https://example.com/".into()],
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("host name"), "{e}");
    // Denying a whole public suffix is a legitimate wish.
    assert!(Scope::new(&ScopeSpec {
        deny_domains: vec!["cn".into()],
        ..Default::default()
    })
    .is_ok());
    assert!(Scope::new(&ScopeSpec::default()).unwrap().is_none());
}

#[test]
fn out_of_scope_urls_never_take_a_place_in_the_filter() {
    let base: Url = "https://docs.example.org/guide/".parse().unwrap();
    let mut sieve = Sieve::new(Validator::default(), Canonicalizer::default(), Some(base));
    sieve.scope = Some(std::sync::Arc::new(scope(ScopeSpec {
        allow_domains: vec!["docs.example.org".into()],
        ..Default::default()
    })));
    let filter = BloomFilter::with_capacity(1000, 0.001).unwrap();
    assert_eq!(
        sieve.process(b"https://elsewhere.example/", false, &filter),
        Verdict::Rejected(Reason::OutOfScopeDomain)
    );
    assert_eq!(filter.items(), 0, "an out-of-scope URL took a place");
    // Relative candidates are judged as resolved.
    assert_eq!(sieve.process(b"intro.html", false, &filter), Verdict::New);
    assert_eq!(
        sieve.canonical(),
        "https://docs.example.org/guide/intro.html"
    );
    assert_eq!(filter.items(), 1);
}
