//! URL patterns on arbitrary strings and on canonical URLs: never a panic; a pattern of a
//! canonical URL is a fixed point.
#![no_main]
use crawlsieve::url::{pattern, pattern_with_method, Canonicalizer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = pattern(s);
    let _ = pattern_with_method("get", s);
    if let Ok(c) = Canonicalizer::default().canonicalize(s, None) {
        let p = pattern(&c.url);
        assert_eq!(pattern(&p), p);
    }
});
