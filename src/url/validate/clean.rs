//! What the validator and the canonicalizer look at: [`clean`] trims a candidate and removes
//! extraction residue (WHATWG whitespace handling, trailing escapes and quotes).

use super::*;

/// Trim what the WHATWG parser trims at the ends: ASCII whitespace (C0 controls other than
/// whitespace are kept, so that they are reported).
pub(super) fn trim(s: &str) -> &str {
    // By bytes (the set is ASCII, which never occurs inside a multi-byte character).
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c');
    let b = s.as_bytes();
    let start = b.iter().position(|c| !ws(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !ws(c)).map_or(start, |e| e + 1);
    &s[start..end]
}

/// What the validator and the canonicalizer look at: [`trim`]med, tabs and newlines removed (as
/// the WHATWG parser does), then extraction residue removed
/// — trailing backslashes (JS string escapes), single quotes and `>` (`<https://x/issue/1>`); and,
/// for an absolute URL, the quote it was lifted in (`"https://h/x"`) and anything from the
/// first `"`, `<` or backtick on (`http://h/x.js"></script>` → `http://h/x.js`).
/// A relative candidate is not cut: `/api/" + id` must stay recognisable as code.
pub fn clean(s: &str) -> Cow<'_, str> {
    // One pass tells which of the rare bytes occur at all; most candidates skip every search.
    let mask = s
        .as_bytes()
        .iter()
        .fold(0u8, |m, &c| m | CLEAN_CLASS[c as usize]);
    if mask & (K_TAB_NL | K_BACKSLASH) == 0 {
        return Cow::Borrowed(clean_stripped(s, mask));
    }
    // The WHATWG parser removes ASCII tabs and newlines anywhere, before it reads the scheme:
    // `java\tscript:` is `javascript:`.
    let mut t: String = trim(s)
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    // JSON-escaped slashes (`https:\/\/h\/a`, common in URLs lifted from JSON) are slashes.
    if t.contains("\\/") {
        t = t.replace("\\/", "/");
    }
    let mut t = clean_stripped(&t, u8::MAX).to_owned();
    // In the path a backslash is a slash to the parser (http and https are special schemes).
    let head_end = t.find(['?', '#']).unwrap_or(t.len());
    if t[..head_end].contains('\\') {
        let head = t[..head_end].replace('\\', "/");
        t.replace_range(..head_end, &head);
    }
    Cow::Owned(t)
}

// Byte classes for `clean`.
pub(super) const K_TAB_NL: u8 = 1;
pub(super) const K_BACKSLASH: u8 = 2;
pub(super) const K_HASH: u8 = 4;
pub(super) const K_QUESTION: u8 = 8;
pub(super) const K_CUT: u8 = 16; // `"`, `<`, backtick

pub(super) static CLEAN_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'\t' as usize] = K_TAB_NL;
    t[b'\n' as usize] = K_TAB_NL;
    t[b'\r' as usize] = K_TAB_NL;
    t[b'\\' as usize] = K_BACKSLASH;
    t[b'#' as usize] = K_HASH;
    t[b'?' as usize] = K_QUESTION;
    t[b'"' as usize] = K_CUT;
    t[b'<' as usize] = K_CUT;
    t[b'`' as usize] = K_CUT;
    t
};

/// `clean` without tabs, newlines or backslashes; `mask` says which of `#`, `?` and the cut
/// bytes may occur (`u8::MAX`: unknown).
pub(super) fn clean_stripped(s: &str, mask: u8) -> &str {
    let mut t = trim(s);
    // An absolute URL still in the quotes of the string it was lifted from (`"https://h/x"`,
    // `'https://h/x'`): the opening quote is residue like the closing one (which the cut and
    // the residue trimming below remove). It names a real page; judging the quote made it
    // `js_fragment`.
    // Only with its closing quote, which ends the URL: `'https://h/y',` is `https://h/y`, and
    // an opening quote with no closing one is left for the rules (found by review).
    if let [q @ (b'"' | b'\'' | b'`'), rest @ ..] = t.as_bytes() {
        let head = &rest[..rest.len().min(8)];
        if head.len() >= 7
            && (head[..7].eq_ignore_ascii_case(b"http://")
                || (head.len() == 8 && head.eq_ignore_ascii_case(b"https://")))
        {
            if let Some(end) = crate::url::find_byte(*q, rest) {
                t = trim(&t[1..1 + end]);
            }
        }
    }
    // The fragment goes first (canonicalization drops it), so that residue before it is trailing
    // residue: `6'#x` and `6'` must clean alike. A fragment-only candidate is kept for the rules.
    if mask & K_HASH != 0 {
        if let Some(h) = crate::url::find_byte(b'#', t.as_bytes()).filter(|&h| h > 0) {
            t = trim(&t[..h]);
        }
    }
    if mask & K_CUT == 0 {
        // nothing to cut
    } else if let Some(sch) = scheme_of(t.as_bytes()) {
        if t.as_bytes()[sch.len() + 1..].starts_with(b"//") {
            if let Some(cut) = crate::url::find_byte3(b'"', b'<', b'`', t.as_bytes()) {
                t = trim(&t[..cut]);
            }
        }
    }
    // Then a query that canonicalization empties (`x'?`, `x?=&`), so what precedes it is trailing.
    let q = if mask & K_QUESTION != 0 {
        crate::url::find_byte(b'?', t.as_bytes())
    } else {
        None
    };
    if let Some(q) = q.filter(|&q| q > 0) {
        if t.as_bytes()[q + 1..]
            .split(|&c| c == b'&')
            .all(|p| p.is_empty() || p == b"=")
        {
            t = &t[..q];
        }
    }
    crate::url::trim_residue(t)
}

#[cfg(test)]
mod tests {
    use super::clean;

    /// An absolute URL in its string's quotes is the URL (it was `js_fragment`); only with its
    /// closing quote, which ends it (found by review: `'https://h/y',` kept `',`).
    #[test]
    fn a_quoted_absolute_url_is_cut_at_its_closing_quote() {
        for (input, want) in [
            ("\"https://a.example/x\"", "https://a.example/x"),
            ("'https://b.example/y',", "https://b.example/y"),
            ("'https://b.example/y']", "https://b.example/y"),
            ("'https://b.example/y?q=1',", "https://b.example/y?q=1"),
            ("`HTTP://c.example/`", "HTTP://c.example/"),
            ("\"https://cdn.example/\"+name", "https://cdn.example/"),
        ] {
            assert_eq!(clean(input), want, "{input}");
        }
        // No closing quote: nothing stripped, the rules judge it as written.
        assert_eq!(clean("'https://b.example/open"), "'https://b.example/open");
        assert_eq!(clean("'relative/path'"), "'relative/path");
    }
}
