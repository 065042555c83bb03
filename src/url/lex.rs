//! The lexical layer both the validator and the canonicalizer build on: byte search, the
//! pieces of a URL read without parsing it (scheme, authority, origin), escapes as
//! canonicalization decodes them, residue and dot segments. Neither `validate` nor `canon`
//! imports the other; both import this.

/// Byte search tuned for URL-sized text: eight bytes at a time below 64 bytes (where `memchr`'s
/// dispatch costs more than the scan), `memchr` above.
#[inline]
pub(crate) fn find_byte(c: u8, b: &[u8]) -> Option<usize> {
    if b.len() < 64 {
        swar_find(b, |x| zero_bytes(x ^ splat(c)), |x| x == c)
    } else {
        memchr::memchr(c, b)
    }
}

/// The first of two bytes; see [`find_byte`].
#[inline]
pub(crate) fn find_byte2(c1: u8, c2: u8, b: &[u8]) -> Option<usize> {
    if b.len() < 64 {
        swar_find(
            b,
            |x| zero_bytes(x ^ splat(c1)) | zero_bytes(x ^ splat(c2)),
            |x| x == c1 || x == c2,
        )
    } else {
        memchr::memchr2(c1, c2, b)
    }
}

/// The first of three bytes; see [`find_byte`].
#[inline]
pub(crate) fn find_byte3(c1: u8, c2: u8, c3: u8, b: &[u8]) -> Option<usize> {
    if b.len() < 64 {
        swar_find(
            b,
            |x| zero_bytes(x ^ splat(c1)) | zero_bytes(x ^ splat(c2)) | zero_bytes(x ^ splat(c3)),
            |x| x == c1 || x == c2 || x == c3,
        )
    } else {
        memchr::memchr3(c1, c2, c3, b)
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte of a word.
pub(crate) const HI: u64 = 0x8080_8080_8080_8080;

/// `c` in every byte of a word.
#[inline(always)]
pub(crate) const fn splat(c: u8) -> u64 {
    LO * c as u64
}

/// The high bit of each zero byte of `x` (exact up to and including the lowest zero byte; bytes
/// above it may be marked too, which a search for the first match never reads).
#[inline(always)]
pub(crate) const fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

/// The high bit of each byte of `x` below `n` (`n` ≤ 0x80; exact for "any", as [`zero_bytes`]).
#[inline(always)]
pub(crate) const fn bytes_below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(splat(n)) & !x & HI
}

/// The first index whose byte `hit`s: words of eight read little-endian, `marks` giving the
/// high bit of each matching byte (see [`zero_bytes`]), the tail byte by byte.
#[inline(always)]
fn swar_find(b: &[u8], marks: impl Fn(u64) -> u64, hit: impl Fn(u8) -> bool) -> Option<usize> {
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for w in &mut chunks {
        let m = marks(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        if m != 0 {
            return Some(at + (m.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&x| hit(x))
        .map(|p| at + p)
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
    [".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"]
        .iter()
        .any(|d| d.eq_ignore_ascii_case(seg))
}

pub(crate) const fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

pub(crate) const fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The text with escapes of unreserved characters decoded exactly as step 3 decodes them (and
/// nothing else changed), or `None` when there is none: the validator judges code patterns on
/// what canonicalization will produce (`)%2Eswitch(` is `).switch(`).
pub(crate) fn decode_unreserved(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut i, mut start, mut changed) = (0, 0, false);
    while let Some(off) = find_byte(b'%', &b[i..]) {
        let p = i + off;
        if let (Some(h), Some(l)) = (
            b.get(p + 1).and_then(|&x| hex(x)),
            b.get(p + 2).and_then(|&x| hex(x)),
        ) {
            let v = h * 16 + l;
            out.push_str(&s[start..p]);
            if is_unreserved(v) && !completes_escape(&out, v) {
                out.push(v as char);
                changed = true;
            } else {
                out.push_str(&s[p..p + 3]);
            }
            i = p + 3;
            start = i;
        } else {
            i = p + 1;
        }
    }
    out.push_str(&s[start..]);
    changed.then_some(out)
}

/// Whether pushing the decoded hex digit `v` would complete a `%` or `%X` already at the end of
/// `out` (from a lone `%` in the input) into a new escape: `%%30a` must not become `%0a`, or a
/// second pass would change it again.
pub(crate) fn completes_escape(out: &str, v: u8) -> bool {
    if !v.is_ascii_hexdigit() {
        return false;
    }
    let b = out.as_bytes();
    match b {
        [.., b'%'] => true,
        [.., b'%', x] => x.is_ascii_hexdigit(),
        _ => false,
    }
}

/// A path with `;jsessionid=...` removed from every segment (step 5), or `None` when it has none.
/// Not where what is left would be a dot segment (`..;jsessionid=x` → `..`), which a second parse
/// would resolve. Shared with the validator, which judges the path as it will be.
pub(crate) fn strip_session_params(path: &str) -> Option<String> {
    find_byte(b';', path.as_bytes())?;
    let mut kept = String::with_capacity(path.len());
    let mut changed = false;
    for (i, seg) in path.split('/').enumerate() {
        if i > 0 {
            kept.push('/');
        }
        let cut = seg
            .find(';')
            .filter(|&c| seg[c + 1..].to_ascii_lowercase().starts_with("jsessionid="))
            .filter(|&c| !is_dot_segment(&seg[..c]));
        changed |= cut.is_some();
        kept.push_str(cut.map_or(seg, |c| &seg[..c]));
    }
    changed.then_some(kept)
}

/// The explicit scheme of a candidate, if it has one. `host:8080/path` and `localhost:3000` are a
/// host and port without a scheme, not a scheme named `host`.
pub(crate) fn scheme_of(b: &[u8]) -> Option<&[u8]> {
    // Most candidates that have a scheme are `http://` or `https://` (issue 44: this function
    // runs three times per candidate): the answer without the scan.
    if b.len() >= 7 && b[..7].eq_ignore_ascii_case(b"http://") {
        return Some(&b[..4]);
    }
    if b.len() >= 8 && b[..8].eq_ignore_ascii_case(b"https://") {
        return Some(&b[..5]);
    }
    if b.is_empty() || !b[0].is_ascii_alphabetic() {
        return None;
    }
    let mut i = 1;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'+' | b'-' | b'.')) {
        i += 1;
    }
    if i >= b.len() || b[i] != b':' {
        return None;
    }
    // `word:digits` followed by end, `/`, `?` or `#` is host:port.
    let rest = &b[i + 1..];
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0
        && digits <= 5
        && (digits == rest.len() || matches!(rest[digits], b'/' | b'?' | b'#'))
    {
        return None;
    }
    Some(&b[..i])
}

/// `host.tld:8080/x`, `localhost:3000`: a host and port written without a scheme, which
/// canonicalization reads as `scheme://host:port/…` (the base's scheme) and the validator's
/// written-host rules judge as such.
pub(crate) fn is_host_port(b: &[u8]) -> bool {
    // A host starts with neither (the common relative candidates: no search for a colon).
    if matches!(b.first(), None | Some(b'/' | b'?' | b'#')) {
        return false;
    }
    let Some(colon) = super::find_byte(b':', b) else {
        return false;
    };
    if colon == 0
        || !b[..colon]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-'))
    {
        return false;
    }
    let rest = &b[colon + 1..];
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    digits > 0 && (digits == rest.len() || matches!(rest[digits], b'/' | b'?' | b'#'))
}

/// Where the first `://` of `url` starts (`str::find("://")` without building a substring
/// searcher: these run several times on every URL).
#[inline]
pub fn scheme_sep(url: &str) -> Option<usize> {
    let b = url.as_bytes();
    let mut from = 0;
    while let Some(i) = find_byte(b':', &b[from..]) {
        let at = from + i;
        if b[at + 1..].starts_with(b"//") {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The end of the authority in `rest` (what follows `://`): its first `/`, `?` or `#`.
#[inline]
fn authority_len(rest: &str) -> usize {
    rest.bytes()
        .position(|c| matches!(c, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len())
}

/// Where the path of an absolute URL starts (after `scheme://authority`); 0 when there is no
/// `://`.
pub fn authority_end(url: &str) -> usize {
    let Some(i) = scheme_sep(url) else {
        return 0;
    };
    i + 3 + authority_len(&url[i + 3..])
}

/// The authority of an absolute URL (`scheme://authority/...`) without its userinfo: the host
/// and, when it has one, the port. `""` when there is no `://`.
pub fn host_port(url: &str) -> &str {
    let Some(i) = scheme_sep(url) else {
        return "";
    };
    let rest = &url[i + 3..];
    let auth = &rest[..authority_len(rest)];
    match auth.bytes().rposition(|c| c == b'@') {
        Some(at) => &auth[at + 1..],
        None => auth,
    }
}

/// The origin of an absolute URL, `scheme://host[:port]` (no userinfo): the unit the render
/// stage clusters pages by. `""` when there is no `://`.
pub fn origin(url: &str) -> std::borrow::Cow<'_, str> {
    let Some(i) = scheme_sep(url) else {
        return "".into();
    };
    let rest = &url[i + 3..];
    let end = authority_len(rest);
    if rest.as_bytes()[..end].contains(&b'@') {
        format!("{}://{}", &url[..i], host_port(url)).into()
    } else {
        url[..i + 3 + end].into()
    }
}

/// The parts of a canonical URL (`scheme://[user@]host[:port]/path[?query][#fragment]`) that
/// scope, fetch safety and the trap rules read. Byte scans only: this runs on every URL.
pub struct UrlParts<'a> {
    /// `http`, `https` (empty without `://`).
    pub scheme: &'a str,
    /// The host, without userinfo, port or a trailing dot; an IPv6 literal keeps its brackets.
    pub host: &'a str,
    /// The port, or the scheme's default.
    pub port: u16,
    /// The path (the whole input when it has no `://`).
    pub path: &'a str,
    /// The query, without its `?`.
    pub query: Option<&'a str>,
}

impl<'a> UrlParts<'a> {
    /// Split `u`.
    pub fn of(u: &'a str) -> UrlParts<'a> {
        let b = u.as_bytes();
        let (scheme, rest) = match b.iter().position(|&c| c == b':') {
            Some(i) if b[i + 1..].starts_with(b"//") => (&u[..i], &u[i + 3..]),
            _ => ("", u),
        };
        let rb = rest.as_bytes();
        let auth_end = rb
            .iter()
            .position(|&c| matches!(c, b'/' | b'?' | b'#'))
            .unwrap_or(rb.len());
        let (auth, tail) = rest.split_at(auth_end);
        let ab = auth.as_bytes();
        let auth = match ab.iter().rposition(|&c| c == b'@') {
            Some(i) => &auth[i + 1..],
            None => auth,
        };
        let ab = auth.as_bytes();
        let (host, port) = match ab.iter().rposition(|&c| c == b':') {
            Some(i) if !ab[i..].contains(&b']') => (&auth[..i], auth[i + 1..].parse().ok()),
            _ => (auth, None),
        };
        let default = if scheme.eq_ignore_ascii_case("https") {
            443
        } else {
            80
        };
        let tb = tail.as_bytes();
        let tail = &tail[..tb.iter().position(|&c| c == b'#').unwrap_or(tb.len())];
        let (path, query) = match tail.as_bytes().iter().position(|&c| c == b'?') {
            Some(q) => (&tail[..q], Some(&tail[q + 1..])),
            None => (tail, None),
        };
        UrlParts {
            scheme,
            host: host.strip_suffix('.').unwrap_or(host),
            port: port.unwrap_or(default),
            path,
            query,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time searches answer what a plain scan answers: every byte value as the
    /// match, at every position of lines 0–70 bytes long, with look-alike bytes (the value ±1,
    /// ±0x80: the borrow cases of the zero-byte trick) before and after it.
    #[test]
    fn word_searches_find_what_a_scan_finds() {
        for len in 0..70usize {
            for c in 0..=255u8 {
                let mut b: Vec<u8> = (0..len)
                    .map(|i| [c.wrapping_add(1), c.wrapping_sub(1), c ^ 0x80][i % 3])
                    .collect();
                for pos in [None, Some(0), Some(len / 2), len.checked_sub(1)] {
                    let mut b = b.clone();
                    if let Some(p) = pos.filter(|&p| p < len) {
                        b[p] = c;
                        if p + 1 < len {
                            b[p + 1] = c;
                        }
                    }
                    let want = b.iter().position(|&x| x == c);
                    assert_eq!(find_byte(c, &b), want, "{c:#x} in {b:?}");
                    let d = c.wrapping_add(7);
                    let want2 = b.iter().position(|&x| x == c || x == d);
                    assert_eq!(find_byte2(d, c, &b), want2);
                    let e = c ^ 0x40;
                    let want3 = b.iter().position(|&x| x == c || x == d || x == e);
                    assert_eq!(find_byte3(e, d, c, &b), want3);
                }
                b.clear();
            }
        }
    }

    #[test]
    fn scheme_sep_finds_what_str_find_finds() {
        for u in [
            "https://h.example/a",
            "a:b://c",
            "::://",
            ":/",
            "x:/y://z",
            "",
            "no scheme",
            "http:/",
            "mailto:x@y",
            "ü:/://",
        ] {
            assert_eq!(scheme_sep(u), u.find("://"), "{u:?}");
        }
    }

    #[test]
    fn host_and_origin_agree_and_drop_userinfo() {
        for (u, host, origin_) in [
            ("https://a.example/x?y#z", "a.example", "https://a.example"),
            (
                "http://u:p@a.example:8080/x",
                "a.example:8080",
                "http://a.example:8080",
            ),
            ("https://a.example", "a.example", "https://a.example"),
            ("https://a.example?q", "a.example", "https://a.example"),
            ("a.example/x", "", ""),
        ] {
            assert_eq!(host_port(u), host, "{u}");
            assert_eq!(origin(u), origin_, "{u}");
        }
    }
}
