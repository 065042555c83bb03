//! Canonicalization on arbitrary strings: never a panic, and idempotent with and without a base.
#![no_main]
use crawlsieve::url::Canonicalizer;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let k = Canonicalizer::default();
    if let Ok(c) = k.canonicalize(s, None) {
        let again = k.canonicalize(&c.url, None).expect("a canonical URL canonicalizes");
        assert_eq!(again.url, c.url, "not idempotent for {s:?}");
    }
    let base = url::Url::parse("http://h.example/a/b?c=d").unwrap();
    if let Ok(c) = k.canonicalize(s, Some(&base)) {
        assert!(c.absolute);
        assert_eq!(k.canonicalize(&c.url, None).unwrap().url, c.url, "not idempotent for {s:?} (base)");
    }
});
