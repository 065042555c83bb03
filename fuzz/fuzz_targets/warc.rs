//! The WARC reader on arbitrary bytes (plain, and the same bytes gzipped): never a panic, never
//! more than its caps, and what it returns holds together: bodies within the caps, errors in
//! record order, redirect chains within the archive.
#![no_main]
use crawlsieve::page::warc::{read, resolve, MAX_BLOCK_BYTES, MAX_DECODED_BYTES};
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    let w = read(bytes);
    for r in &w.responses {
        assert!(r.body.len() as u64 <= MAX_BLOCK_BYTES.max(MAX_DECODED_BYTES));
    }
    // Errors are in record order, numbered from 1.
    let mut last = 1;
    for e in &w.errors {
        assert!(e.record >= last, "{e}");
        last = e.record;
    }
    for (start, end, chain) in resolve(&w.responses) {
        assert!(start < w.responses.len() && end < w.responses.len());
        assert!(!chain.is_empty() && chain.len() <= 11);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut z, data).unwrap();
    check(&z.finish().unwrap());
});
