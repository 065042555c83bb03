//! The path family: JS values printed into a path (`/undefined`), MIME types as paths, and
//! number-like candidates (versions, sizes, ratios).

use super::*;

/// A path segment that is a JS value printed into a URL: `undefined`, `null`, `[object Object]`
/// (raw or percent-encoded). `NaN` and `Null` are not: both are real Wikipedia articles.
pub(super) fn is_artifact(seg: &[u8]) -> bool {
    // Compared by length first: most segments have none of these lengths.
    match seg.len() {
        4 => seg == b"null",
        9 => seg == b"undefined",
        15 => seg == b"[object Object]",
        17 => seg == b"[object%20Object]",
        21 => seg == b"%5Bobject%20Object%5D",
        _ => false,
    }
}

/// The path rules in one walk over the segments: a JS artifact segment, or a path whose last two
/// segments (trailing slashes aside) are a MIME type.
pub(super) fn path_rules(path: &[u8]) -> Option<Reason> {
    let mut p = path;
    while p.last() == Some(&b'/') {
        p = &p[..p.len() - 1];
    }
    let (mut ty, mut sub): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    for seg in p.split(|&c| c == b'/') {
        if is_artifact(seg) {
            return Some(Reason::JsArtifact);
        }
        ty = sub;
        sub = Some(seg);
    }
    match (ty, sub) {
        (Some(ty), Some(sub)) if mime_type(ty, sub) => Some(Reason::MimeType),
        _ => None,
    }
}

/// The path of a candidate, without query: after `scheme://host` for an absolute URL (empty
/// when there is none), the whole text before `?` otherwise.
pub(super) fn path_of<'a>(b: &'a [u8], scheme: Option<&[u8]>) -> &'a [u8] {
    let mut path = b;
    if let Some(sch) = scheme {
        let rest = &b[sch.len() + 1..];
        if let Some(auth) = rest.strip_prefix(b"//") {
            path = match crate::url::find_byte(b'/', auth) {
                Some(q) => &auth[q..],
                None => return &[],
            };
        }
    }
    &path[..crate::url::find_byte(b'?', path).unwrap_or(path.len())]
}

/// `123`, `-0.5`, `1e3` → bare number; `12px`, `1.5em`, `100%` → CSS value.
pub(super) fn number_like(b: &[u8]) -> Option<Reason> {
    let mut i = 0;
    if matches!(b[0], b'-' | b'+') {
        i = 1;
    }
    let int = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    i += int;
    let mut frac = 0;
    if b.get(i) == Some(&b'.') {
        frac = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if frac > 0 {
            i += 1 + frac;
        }
    }
    if int + frac == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E'))
        && b.get(i + 1)
            .is_some_and(|c| c.is_ascii_digit() || *c == b'-' || *c == b'+')
    {
        let mut j = i + 1;
        if matches!(b[j], b'-' | b'+') {
            j += 1;
        }
        let exp = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp > 0 && j + exp == b.len() {
            return Some(Reason::BareNumber);
        }
    }
    if i == b.len() {
        return Some(Reason::BareNumber);
    }
    let unit = &b[i..];
    if CSS_UNITS
        .iter()
        .any(|u| u.as_bytes().eq_ignore_ascii_case(unit))
    {
        return Some(Reason::CssValue);
    }
    None
}

/// The last two path segments are a MIME type: `/application/json`, `/AJAX/text/xml`,
/// `font/woff2`, `text/html; charset=utf-8`. `/text/editor`, `/application_list` are paths.
pub(super) fn mime_type(ty: &[u8], sub: &[u8]) -> bool {
    // The nine top-level types are 4 to 11 letters and start with one of these.
    if !(4..=11).contains(&ty.len())
        || !matches!(ty[0] | 0x20, b'a' | b't' | b'i' | b'v' | b'f' | b'm')
    {
        return false;
    }
    if !eq_ignore_case_any(ty, MIME_TYPES) || sub.is_empty() {
        return false;
    }
    // Drop `; charset=...` parameters and a `+json` / `+xml` structured-syntax suffix.
    let sub = sub.split(|&c| c == b';').next().unwrap_or(sub);
    let base = sub.split(|&c| c == b'+').next().unwrap_or(sub);
    let lower_starts = |p: &[u8]| base.len() > p.len() && base[..p.len()].eq_ignore_ascii_case(p);
    eq_ignore_case_any(base, MIME_SUBTYPES)
        || lower_starts(b"x-")
        || lower_starts(b"vnd.")
        || lower_starts(b"prs.")
}
