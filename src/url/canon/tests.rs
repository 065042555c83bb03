use super::*;
use crate::url::lex::decode_unreserved;

fn c(s: &str) -> String {
    Canonicalizer::default().canonicalize(s, None).unwrap().url
}

fn cb(s: &str, base: &str) -> String {
    let base = Url::parse(base).unwrap();
    Canonicalizer::default()
        .canonicalize(s, Some(&base))
        .unwrap()
        .url
}

#[test]
fn policy_steps() {
    assert_eq!(
        c("HTTP://Example.COM:80/a/./b/../c#frag"),
        "http://example.com/a/c"
    );
    assert_eq!(c("https://example.com:443"), "https://example.com/");
    assert_eq!(
        c("http://example.com/%7euser/%2Dx/%c3%a9"),
        "http://example.com/~user/-x/%C3%A9"
    );
    assert_eq!(c("http://example.com/a%2Fb"), "http://example.com/a%2Fb");
    assert_eq!(c("http://www.bücher.de/"), "http://www.xn--bcher-kva.de/");
    assert_eq!(
        c("http://example.com/?b=2&a=1&utm_source=x&gclid=abc"),
        "http://example.com/?a=1&b=2"
    );
    // `&amp;` left HTML-escaped by an extractor (issue 17): the pair after it, not `amp;…`.
    assert_eq!(
        c("https://example.com/search?code=x&amp;edition=2021"),
        "https://example.com/search?code=x&edition=2021"
    );
    assert_eq!(
        c("https://example.com/?b=1&AMP;a=2&amp;c=3"),
        "https://example.com/?a=2&b=1&c=3"
    );
    assert_eq!(
        c("https://example.com/?amp;x=1&a=2"),
        "https://example.com/?a=2&x=1"
    );
    assert_eq!(
        c("https://example.com/?x=1&amp;amp;y=2"),
        "https://example.com/?x=1&y=2"
    );
    assert_eq!(
        c("http://example.com/?a=2&b=1&a=1"),
        "http://example.com/?a=2&a=1&b=1"
    );
    assert_eq!(c("http://example.com/p?"), "http://example.com/p");
    assert_eq!(c("http://example.com/p?&&a=1&"), "http://example.com/p?a=1");
    assert_eq!(
        c("http://example.com/s?q=a%20b"),
        "http://example.com/s?q=a+b"
    );
    assert_eq!(
        c("http://example.com/s?q=a+b"),
        "http://example.com/s?q=a+b"
    );
    assert_eq!(
        c("http://example.com/x;jsessionid=ABCDEF0123/y"),
        "http://example.com/x/y"
    );
    assert_eq!(
        c("http://example.com/x?sid=0123456789abcdef0"),
        "http://example.com/x"
    );
    assert_eq!(
        c("http://example.com/x?sid=12"),
        "http://example.com/x?sid=12"
    );
    // Never merged.
    assert_ne!(c("http://example.com/About"), c("http://example.com/about"));
    assert_ne!(c("http://example.com/a/"), c("http://example.com/a"));
    assert_ne!(c("http://example.com/"), c("https://example.com/"));
    assert_ne!(c("http://www.example.com/"), c("http://example.com/"));
}

#[test]
fn relative_candidates() {
    assert_eq!(
        cb("../x.html#top", "http://h.com/a/b/c.html"),
        "http://h.com/a/x.html"
    );
    assert_eq!(
        cb("//cdn.host/lib.js", "http://h.com/"),
        "http://cdn.host/lib.js"
    );
    assert_eq!(c("//cdn.host/lib.js"), "https://cdn.host/lib.js");
    assert_eq!(c("localhost:8080/api"), "http://localhost:8080/api");
    assert_eq!(
        cb("api.host.com:8443/v1", "https://h.com/"),
        "https://api.host.com:8443/v1"
    );
    assert_eq!(
        cb("?page=2", "http://h.com/list?page=1"),
        "http://h.com/list?page=2"
    );
    let r = Canonicalizer::default()
        .canonicalize("../a b/%7e.html?b=1&a=2#x", None)
        .unwrap();
    assert!(!r.absolute);
    assert_eq!(r.url, "../a%20b/~.html?a=2&b=1");
}

#[test]
fn regression_non_ascii_relative_with_tab_does_not_panic() {
    // From the real candidate corpus: a relative path with raw non-ASCII and a tab.
    let r = Canonicalizer::default()
        .canonicalize("/\u{ef}\tA\u{f0}", None)
        .unwrap();
    assert_eq!(r.url, "/%C3%AFA%C3%B0");
}

#[test]
fn regression_decoding_never_forms_a_new_escape() {
    // Found by the idempotence property: `%%30a` decoded `%30` into `0`, forming `%0a`.
    for s in [
        "Example.COM/%%30a",
        "/a%%341",
        "/x%4%31",
        "http://h.com/%%30a?q=%%30a",
    ] {
        let once = c(s);
        assert_eq!(c(&once), once, "{s}");
    }
    assert_eq!(c("/a%%30a"), "/a%%30a");
}

#[test]
fn opt_in_merges_change_only_the_key() {
    let all = CanonConfig {
        merge: vec![
            Merge::Scheme,
            Merge::Www,
            Merge::TrailingSlash,
            Merge::Index,
            Merge::Slashes,
        ],
        ..CanonConfig::default()
    };
    let k = Canonicalizer::new(&all);
    let key = |s: &str| {
        let c = k.canonicalize(s, None).unwrap().url;
        let mut out = String::new();
        k.dedup_key(&c, &mut out);
        out
    };
    let same = [
        "http://www.h.com/a/",
        "https://h.com/a",
        "https://h.com//a/index.html",
        "HTTP://WWW.H.COM:80/a/?",
    ];
    for s in same {
        assert_eq!(key(s), "//h.com/a", "{s}");
    }
    assert_eq!(key("http://h.com/"), "//h.com/");
    assert_eq!(key("http://h.com/index.html?x=1"), "//h.com/?x=1");
    assert_ne!(key("http://h.com/a"), key("http://h.com/b"));
    assert_ne!(key("http://h.com/myindex.html"), key("http://h.com/"));
    // The emitted canonical URL is untouched.
    assert_eq!(
        k.canonicalize("http://www.h.com/a/", None).unwrap().url,
        "http://www.h.com/a/"
    );
    // Without merges the key is the canonical URL.
    let d = Canonicalizer::default();
    assert!(!d.merges());
    let mut out = String::new();
    d.dedup_key("http://www.h.com/a/", &mut out);
    assert_eq!(out, "http://www.h.com/a/");
}

#[test]
fn fast_path_matches_the_parser() {
    let k = Canonicalizer::default();
    let cases = [
        "http://Example.COM",
        "HTTPS://example.com:443/a",
        "http://example.com:80/",
        "http://example.com:8080/a/b?z=1&a=2#f",
        "http://example.com:0080/",
        "http://h.com/a%7e%2D/x%2fy?q=%7e+x&utm_source=z",
        "http://h.com/a;jsessionid=0123456789ABCDEF/b",
        "http://h.com/?",
        "http://h.com/p?&&",
        "http://h.com/p?a=1&a=0&b",
        "http://h.com//double//slash",
        "http://a-b.c-d.co.uk/x_y~z",
        "http://h.com/(x)!$*,;=:@",
        "http://h.com/?q=^`{}|\\",
        "http://h.com:65535/",
        "http://localhost/",
        "http://h.com/%zz%",
    ];
    for c in cases {
        let mut fast = String::new();
        assert!(
            k.fast_absolute(c, &mut fast),
            "{c} should take the fast path"
        );
        trim_residue_end(&mut fast);
        assert_eq!(Ok(fast), k.canonicalize_slow(c), "{c}");
    }
    for c in [
        "http://1.2.3.4/",
        "http://h.0x7f/",
        "http://xn--bcher-kva.de/",
        "http://bücher.de/",
        "http://u:p@h.com/",
        "http://[::1]/",
        "http://h.com/./a",
        "http://h.com/a/%2e%2E/b",
        "http://h.com/a b",
        "http://h.com/\\x",
        "http://h.com:99999/",
        "http://h..com/",
        "http://h.com./",
        "http://h.com:/",
        "http://h.com/?q='",
        "http://h_x.com/",
        "http://h.com/é",
    ] {
        let mut fast = String::new();
        assert!(!k.fast_absolute(c, &mut fast), "{c} should take the parser");
    }
}

#[test]
fn regression_session_removal_never_creates_a_host() {
    // Found by cargo fuzz: the whole first segment was a session parameter.
    let s = "\u{f};jsessionid=nshttps://m.estatebeb0ase.cc\u{34a}k/articl/26?sid=f92";
    let once = c(s);
    assert!(once.starts_with("/.//m.estatebeb0ase.cc"), "{once}");
    assert_eq!(c(&once), once);
}

#[test]
fn regression_query_pairs_never_combine_escapes() {
    // Found by cargo fuzz: `ht%E` ended one pair, and `%36k` began the next.
    for q in [
        "http://h.com/?q=%E8e&%36k))&ht%E&%36k))&htt&",
        "http://h.com/?a=%E&%41=1",
    ] {
        let once = c(q);
        assert_eq!(c(&once), once, "{q}");
    }
    assert_eq!(c("http://h.com/?b=%E&%41=1"), "http://h.com/?A=1&b=%E");
}

#[test]
fn regression_sorted_query_never_ends_in_residue() {
    // Found by cargo fuzz: sorting moved `q%=s\` to the end, where `clean` trims it.
    let once = c("http://h.com/search?q%=s\\&ordeq=asa");
    assert_eq!(once, "http://h.com/search?ordeq=asa&q%=s%5C");
    assert_eq!(c(&once), once);
    assert_eq!(c("http://h.com/a?b=1&x=\\"), "http://h.com/a?b=1&x=%5C");
    assert_eq!(c("http://h.com/a'?utm_source=z"), "http://h.com/a");
    assert_eq!(c("Example.COM/?=\\"), "Example.COM/?=%5C");
    // Regression (cargo fuzz): trimming `'` must not expose a dot segment.
    let base = Url::parse("http://h.example/a/b?c=d").unwrap();
    let k = Canonicalizer::default();
    let once = k.canonicalize("X--Yom;./..'", Some(&base)).unwrap().url;
    assert_eq!(once, "http://h.example/a/X--Yom;./..'");
    assert_eq!(k.canonicalize(&once, None).unwrap().url, once);
}

#[test]
fn regression_query_quotes_and_backslashes_are_escaped() {
    // Found by cargo fuzz: trimming a trailing `'` after sorting reordered the pairs, and
    // `clean` unescaped `\\/` inside a canonical query.
    for s in [
        "a?.t/=3*\u{0}&pa%2s=&pa'",
        "http://h.com/item.php?\\\\https\\\\:\\\\//www.h.com/x",
    ] {
        let once = c(s);
        assert!(!once.contains('\'') && !once.contains('\\'), "{once}");
        assert_eq!(c(&once), once, "{s}");
    }
    assert_eq!(c("http://h.com/?q=it's"), "http://h.com/?q=it%27s");
    // Found by cargo fuzz: `{` then an escaped `\\` formed `{%`; a `?` ending a name was popped.
    assert_eq!(
        c("http://h.com/in/?it{\\?in"),
        "http://h.com/in/?it%7B%5C?in"
    );
    let once = c("http://h.com/?toqNlb?&toqNlb%01");
    assert_eq!(c(&once), once);
    assert!(once.contains("toqNlb?"), "{once}");
    assert_eq!(c("http://h.com/it's?q=1"), "http://h.com/it's?q=1");
}

#[test]
fn decode_unreserved_mirrors_step_3() {
    assert_eq!(decode_unreserved("a%2Eb%2fc%7E"), Some("a.b%2fc~".into()));
    assert_eq!(decode_unreserved("%%30a"), None);
    assert_eq!(decode_unreserved("/plain"), None);
    assert_eq!(decode_unreserved("é%41"), Some("éA".into()));
}

#[test]
fn regression_session_removal_never_leaves_a_dot_segment() {
    // Found by cargo fuzz: `..;jsessionid=x` became `..`.
    let base = Url::parse("http://h.example/a/b?c=d").unwrap();
    let k = Canonicalizer::default();
    let s = "h.sj/e;\u{f}\n..//..;jsessionid=ns... \0\0\0\0 CC-:";
    let once = k.canonicalize(s, Some(&base)).unwrap().url;
    assert_eq!(k.canonicalize(&once, None).unwrap().url, once);
    assert_eq!(
        c("http://h.com/x/..;jsessionid=1/y"),
        "http://h.com/x/..;jsessionid=1/y"
    );
}

#[test]
fn regression_backslash_protocol_relative() {
    // Found by the idempotence property: `/\` became `//` and then an empty host.
    let k = Canonicalizer::default();
    assert!(k.canonicalize("/\\", None).is_err());
    assert_eq!(c("/\\cdn.host/x.js"), "https://cdn.host/x.js");
    assert_eq!(c("\\/cdn.host/x.js"), "https://cdn.host/x.js");
}

#[test]
fn regression_decoding_never_creates_a_scheme() {
    // Found by cargo fuzz: `%2E` decoded into a scheme name, then `https.http:` was a scheme.
    for s in [
        "https%2Ehttp://newh//ww.ru:443/item.ph765",
        "x%2Ecom:80/a",
        "a%2Db:c",
    ] {
        let once = c(s);
        assert!(once.starts_with("./"), "{once}");
        assert_eq!(c(&once), once, "{s}");
    }
}

#[test]
fn errors_are_values() {
    let k = Canonicalizer::default();
    assert!(matches!(
        k.canonicalize("http://[::1", None),
        Err(CanonError::Parse(_))
    ));
    assert!(matches!(
        k.canonicalize("http://exa mple.com/", None),
        Err(CanonError::Parse(_))
    ));
    assert!(matches!(
        k.canonicalize("ftp://example.com/", None),
        Err(CanonError::Scheme(_))
    ));
    // Regression (idempotence property): `http:///*` parsed to the host `*`.
    assert!(k.canonicalize("http:///*", None).is_err());
    assert!(k.canonicalize("http://-.-/", None).is_err());
    // Regression (cargo fuzz): `http:n.es*` parsed to the host `n.es*`.
    assert!(k.canonicalize("http://n.es*/", None).is_err());
    assert!(k.canonicalize("http://a!b.com/", None).is_err());
    assert!(k.canonicalize("http://[::1]/", None).is_ok());
    assert!(k.canonicalize("http://my_host.example/", None).is_ok());
}

#[test]
fn idempotent_on_examples() {
    for s in [
        "HTTP://Example.COM:80/a/./b/../c#frag",
        "http://example.com/s?q=a%20b&z=%7e",
        "../a b/%7e.html?b=1&a=2#x",
    ] {
        let once = c(s);
        assert_eq!(c(&once), once);
    }
}
