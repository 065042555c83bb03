//! URL candidates: junk rejection ([`validate`]), canonicalization ([`canon`]), URL patterns
//! ([`pattern`]) and the reason codes they share ([`reason`]).

pub mod canon;
pub mod pattern;
pub mod reason;
pub mod validate;

pub use canon::{CanonConfig, CanonError, Canonical, Canonicalizer, Merge};
pub use pattern::{pattern, pattern_with_method};
pub use reason::Reason;
pub use validate::{Profile, Validator, ValidatorConfig};

/// Byte search tuned for URL-sized text: a plain loop below 64 bytes (where `memchr`'s dispatch
/// costs more than the scan), `memchr` above.
#[inline]
pub(crate) fn find_byte(c: u8, b: &[u8]) -> Option<usize> {
    if b.len() < 64 {
        b.iter().position(|&x| x == c)
    } else {
        memchr::memchr(c, b)
    }
}

/// The first of two bytes; see [`find_byte`].
#[inline]
pub(crate) fn find_byte2(c1: u8, c2: u8, b: &[u8]) -> Option<usize> {
    if b.len() < 64 {
        b.iter().position(|&x| x == c1 || x == c2)
    } else {
        memchr::memchr2(c1, c2, b)
    }
}

/// The first of three bytes; see [`find_byte`].
#[inline]
pub(crate) fn find_byte3(c1: u8, c2: u8, c3: u8, b: &[u8]) -> Option<usize> {
    if b.len() < 64 {
        b.iter().position(|&x| x == c1 || x == c2 || x == c3)
    } else {
        memchr::memchr3(c1, c2, c3, b)
    }
}

/// Trailing extraction residue removed — `\\` (JS string escapes), `'`, `>`, and whitespace
/// left before them — unless that would
/// leave a dot segment at the end (`..'` stays: trimming it would turn a name into `..`, which
/// a second parse resolves). Shared by the validator's `clean` and the canonicalizer, so both read
/// a candidate's end alike.
pub(crate) fn trim_residue(s: &str) -> &str {
    let mut t = s;
    while let Some(&last) = t.as_bytes().last() {
        // Whitespace too: once a `'` goes, a space before it is the end, and the parser trims it.
        if !matches!(last, b'\\' | b'\'' | b'>' | b' ' | b'\t') {
            break;
        }
        let rest = &t[..t.len() - 1];
        let seg = rest.rsplit('/').next().unwrap_or(rest);
        if is_dot_segment(seg) {
            break;
        }
        t = rest;
    }
    t
}

/// `.`, `..` and their escaped forms (`%2e`, `.%2E`, ...), as the WHATWG parser reads them.
pub(crate) fn is_dot_segment(seg: &str) -> bool {
    let lower = seg.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "." | ".." | "%2e" | ".%2e" | "%2e." | "%2e%2e"
    )
}
