//! The validator and the whole sieve step on arbitrary bytes: never a panic, and a kept
//! candidate always has a canonical form that is itself kept.
#![no_main]
use crawlsieve::bloom::BloomFilter;
use crawlsieve::sieve::{Sieve, Verdict};
use crawlsieve::url::{Canonicalizer, Validator};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let v = Validator::default();
    let _ = v.check_bytes(data);
    let f = BloomFilter::with_capacity(16, 0.01).unwrap();
    let base = url::Url::parse("https://example.com/dir/page.html").ok();
    let mut s = Sieve::new(v, Canonicalizer::default(), base);
    if s.process(data, false, &f) == Verdict::Keep {
        let c = s.canonical().to_owned();
        // Processing the canonical form again finds it already seen.
        assert_eq!(s.process(c.as_bytes(), false, &f), Verdict::Duplicate, "{c:?}");
    }
});
