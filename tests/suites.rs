//! The public suites in ../shared/data: the seed validator's cases, the reference's URL-pattern
//! cases, WHATWG parsing, and w3lib's canonicalize_url — with every deliberate difference listed.

mod common;

use crawlsieve::url::{pattern, Canonicalizer, Validator};
use url::Url;

#[test]
fn seed_validator_cases_all_agree() {
    let text = std::fs::read_to_string(common::shared("validator/seed_cases.tsv")).unwrap();
    let v = Validator::default();
    let mut n = 0;
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (input, expected, note) = (cols[0], cols[1], cols.get(2).copied().unwrap_or(""));
        // The TSV writes the 600-NUL case as a placeholder.
        let input = if input.contains("<600 NUL bytes>") {
            format!("http://example.com/{}", "\0".repeat(600))
        } else {
            input.to_string()
        };
        let got = v.check(&input);
        match expected {
            "pass" => assert_eq!(got, Ok(()), "{input:?} ({note}) must pass"),
            "reject" => assert!(got.is_err(), "{input:?} ({note}) must be rejected"),
            other => panic!("unknown label {other}"),
        }
        n += 1;
    }
    assert_eq!(n, 144);
}

#[test]
fn reference_pattern_cases_all_agree() {
    let text = std::fs::read_to_string(common::shared("pattern/structure_cases.tsv")).unwrap();
    let k = Canonicalizer::default();
    let mut n = 0;
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let canonical = k.canonicalize(cols[0], None).unwrap().url;
        assert_eq!(pattern(&canonical), cols[1], "{} ({})", cols[0], cols[2]);
        n += 1;
    }
    assert_eq!(n, 14);
}

/// WHATWG parsing: for every http(s) case, our canonical form of the input equals our canonical
/// form of the standard's expected href, so crawlsieve parses exactly as a browser does; every
/// case the standard rejects is an error for us too (except a relative input without a base,
/// which crawlsieve keeps relative by design).
#[test]
fn whatwg_parsing_agrees() {
    let k = Canonicalizer::default();
    let (mut agree, mut failures) = (0, 0);
    for row in common::jsonl("normalize/whatwg_urltestdata.jsonl") {
        let input = row["input"].as_str().unwrap();
        let base = row["base"].as_str().and_then(|b| Url::parse(b).ok());
        let got = k.canonicalize(input, base.as_ref()); // must not panic, whatever the row
                                                        // Compare against the current WPT snapshot only (flag present and false): the 2018
                                                        // snapshot's expectations predate later changes to the standard.
        if row["rust_url_2_5_8_known_failure"] != serde_json::Value::Bool(false) {
            continue;
        }
        match row["expected"].as_str() {
            Some(href) if href.starts_with("http:") || href.starts_with("https:") => {
                // Both sides go through crawlsieve, so a host crawlsieve refuses (no letter or
                // digit, e.g. `http://!$&'()*+,-.;=_`~/`) must be refused on both.
                let want = k.canonicalize(href, None).map(|c| c.url);
                assert_eq!(
                    got.map(|c| c.url).ok(),
                    want.clone().ok(),
                    "input {input:?} base {:?}",
                    row["base"]
                );
                if want.is_ok() {
                    agree += 1;
                }
            }
            Some(_) => {} // other schemes: not fetchable, out of scope
            None => {
                if base.is_some() || input.contains("://") {
                    assert!(
                        got.is_err(),
                        "{input:?} (base {:?}) is invalid by WHATWG, got {got:?}",
                        row["base"]
                    );
                    failures += 1;
                }
            }
        }
    }
    assert!(agree > 200, "only {agree} http(s) cases compared");
    assert!(failures > 150, "only {failures} failure cases compared");
}

/// Where crawlsieve deliberately differs from w3lib's canonicalize_url, and why.
const W3LIB_DIFFERENCES: &[(&str, &str)] = &[
    ("http://www.example.com/do?c=3&b=5&b=2&a=50", "repeated names keep their order: servers may read the last or all values in order"),
    ("http://www.example.com/do?b=&c&a=2", "`c` and `c=` stay apart: a valueless flag may differ from an empty value"),
    ("http://www.example.com/do?1750,4", "a valueless parameter gets no `=` and `,` is not escaped"),
    ("https://example.com/a%23b%2cc#bash", "`%2C` stays escaped: only unreserved characters are decoded (RFC 3986 §6.2.2.2)"),
    ("http://foo.com/%0A%3BpE%7C", "`%7C` stays escaped: `|` is not unreserved"),
    ("http://www.example.com/do?price(£)=500&a=1", "parentheses are left as WHATWG leaves them"),
    ("?b=1", "a relative candidate without a base stays relative"),
    ("sftp://UsEr:PaSsWoRd@www.EXAMPLE.com/", "only http and https are fetchable"),
    ("mailto:a/../b", "only http and https are fetchable"),
    ("foo:/a/../b", "only http and https are fetchable"),
    ("http://.éxamplé.com/résumé?q=résumé", "IDN labels are converted by UTS #46 as browsers do"),
    ("http://www.éxamplééxamplééxamplééxamplééxamplééxamplééxamplééxamplééxamplééxamplééxamplé.com/résumé?q=résumé", "IDN labels are converted by UTS #46 as browsers do"),
];

#[test]
fn w3lib_canonicalize_url_agrees_except_where_documented() {
    let k = Canonicalizer::default();
    let (mut agree, mut differ) = (0, 0);
    for row in common::jsonl("normalize/w3lib.jsonl") {
        if row["function"] != "w3lib.url:canonicalize_url"
            || !row["kwargs"].as_object().unwrap().is_empty()
        {
            continue; // other functions, or options (encodings, keep_fragments) we do not offer
        }
        let Some(input) = row["input"].as_str() else {
            continue;
        }; // urlparse tuples
        let ours = k
            .canonicalize(&crawlsieve::url::validate::clean(input), None)
            .ok()
            .map(|c| c.url);
        let theirs = row["expected"].as_str().map(str::to_owned);
        if ours == theirs {
            agree += 1;
        } else {
            let why = W3LIB_DIFFERENCES.iter().find(|(i, _)| *i == input);
            assert!(
                why.is_some(),
                "undocumented difference for {input:?}: w3lib {theirs:?}, crawlsieve {ours:?}"
            );
            differ += 1;
        }
    }
    assert!(agree >= 75, "{agree} agreements");
    assert_eq!(differ, W3LIB_DIFFERENCES.len());
}

/// The canonicalizer's fast path (no `Url` built) gives exactly the parser's answer on every
/// absolute http(s) URL of the real corpus, of 100 k generated stream lines and of WHATWG's data.
#[test]
fn fast_path_agrees_with_the_parser_on_real_urls() {
    let corpus = std::process::Command::new("xz")
        .arg("-dc")
        .arg(common::shared("urls/candidates.txt.xz"))
        .output()
        .expect("xz");
    let stream = std::process::Command::new("python3")
        .arg(common::shared("../tools/gen_stream.py"))
        .args(["--n", "100000", "--seed", "5"])
        .output()
        .expect("python3");
    let whatwg: Vec<String> = common::jsonl("normalize/whatwg_urltestdata.jsonl")
        .iter()
        .map(|r| r["input"].as_str().unwrap().to_owned())
        .collect();
    let k = Canonicalizer::default();
    let mut compared = 0;
    let texts = [
        String::from_utf8_lossy(&corpus.stdout).into_owned(),
        String::from_utf8_lossy(&stream.stdout).into_owned(),
        whatwg.join("\n"),
    ];
    for text in &texts {
        for line in text.lines() {
            let l = line.trim();
            if l.len() > 7 && l.as_bytes()[..7].eq_ignore_ascii_case(b"http://")
                || l.len() > 8 && l.as_bytes()[..8].eq_ignore_ascii_case(b"https://")
            {
                assert_eq!(
                    k.canonicalize(l, None).map(|c| c.url).ok(),
                    k.canonicalize_slow(l).ok(),
                    "{l:?}"
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 150_000, "only {compared} URLs compared");
}
