//! The validator and the whole sieve step on arbitrary bytes: never a panic, and a kept
//! candidate always has a canonical form that is itself kept. The first byte picks the
//! extraction context the candidate is decoded by (issue 17); the canonical form is checked
//! again as a plain URL (context unknown), as a fetcher or a second crawlsieve would read it,
//! and (on a base with a public name, where the written-host policy of text and scripts lets
//! the page's own URLs through) in the context it was found in, as a second run of the same
//! `check --context` would — for the contexts whose decoding leaves a canonical URL as it is
//! (text, js, css: a canonical URL holds no `\`); an HTML context would decode its `&amp;`.
#![no_main]
use crawlsieve::bloom::BloomFilter;
use crawlsieve::sieve::{Sieve, Verdict};
use crawlsieve::url::{Canonicalizer, Context, Validator};
use libfuzzer_sys::fuzz_target;

const CONTEXTS: [Context; 6] = [
    Context::Unknown,
    Context::HtmlAttr,
    Context::HtmlText,
    Context::Js,
    Context::Css,
    Context::Text,
];

fuzz_target!(|data: &[u8]| {
    let (ctx, data) = match data.split_first() {
        Some((b, rest)) => (CONTEXTS[*b as usize % CONTEXTS.len()], rest),
        None => (Context::Unknown, data),
    };
    let v = Validator::default();
    let _ = v.check_bytes(data);
    let f = BloomFilter::with_capacity(16, 0.01).unwrap();
    let base = url::Url::parse("https://example.com/dir/page.html").ok();
    let mut s = Sieve::new(v, Canonicalizer::default(), base);
    s.context = ctx;
    if s.process(data, false, &f) == Verdict::New {
        let c = s.canonical().to_owned();
        // Processing the canonical form again, as a plain URL, finds it already seen.
        s.context = Context::Unknown;
        assert_eq!(s.process(c.as_bytes(), false, &f), Verdict::Duplicate, "{ctx:?}: {c:?}");
    }
    if !matches!(ctx, Context::Text | Context::Js | Context::Css | Context::Unknown) {
        return;
    }
    let f = BloomFilter::with_capacity(16, 0.01).unwrap();
    let base = url::Url::parse("https://docs.site.org/dir/page.html").ok();
    let mut s = Sieve::new(Validator::default(), Canonicalizer::default(), base);
    s.context = ctx;
    if s.process(data, false, &f) == Verdict::New {
        let c = s.canonical().to_owned();
        assert_eq!(s.process(c.as_bytes(), false, &f), Verdict::Duplicate, "again in {ctx:?}: {c:?}");
    }
});
