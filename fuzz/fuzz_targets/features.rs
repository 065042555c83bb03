//! The feature extractor on arbitrary text: the bounds pre-scan never panics, and what it
//! accepts is extracted without a panic into features that hold together.
#![no_main]
use crawlsieve::page::features::{check_bounds, try_extract, MINHASH_LEN};
use crawlsieve::page::Page;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let html = String::from_utf8_lossy(data);
    let accepted = check_bounds(&html).is_ok();
    match try_extract(&html) {
        Ok(f) => {
            assert!(accepted);
            assert_eq!(f.html_bytes, html.len());
            assert!(f.minhash.is_empty() || f.minhash.len() == MINHASH_LEN);
            // The main text is part of the visible text.
            assert!(f.text_chars <= f.visible_chars, "{} > {}", f.text_chars, f.visible_chars);
            let p = Page::new("https://a.example/", "", 200, "text/html", &html);
            let _ = crawlsieve::page::rule_pages::page_rule(200, true, &p.features);
        }
        Err(_) => assert!(!accepted),
    }
});
