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
    // The segments, found by the word-at-a-time byte search (a byte-by-byte split cost more).
    let (mut ty, mut sub): (Option<&[u8]>, &[u8]) = (None, &[]);
    let mut start = 0;
    loop {
        let end = crate::url::find_byte(b'/', &p[start..]).map_or(p.len(), |e| start + e);
        let seg = &p[start..end];
        if is_artifact(seg) {
            return Some(Reason::JsArtifact);
        }
        if start > 0 {
            ty = Some(sub);
        }
        sub = seg;
        if end == p.len() {
            break;
        }
        start = end + 1;
    }
    // The last two segments (a path of one segment has no type).
    let ty = ty?;
    mime_type(ty, sub).then_some(Reason::MimeType)
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
        || registered_media_type(ty, sub)
        || versioned_script(base)
}

/// `ty/sub` is in the IANA media-type registry (`mime_registry.rs`, generated from mime-db):
/// `multipart/signed`, `application/ld+json`, `audio/opus`. Subtypes that are also ordinary
/// route words (`/application/index`, `/message/news`, `/video/raw`) were left out of the
/// generated list: a site may well serve those paths.
fn registered_media_type(ty: &[u8], sub: &[u8]) -> bool {
    let mut key = [0u8; 96];
    let n = ty.len() + 1 + sub.len();
    if n > key.len() {
        return false;
    }
    key[..ty.len()].copy_from_slice(ty);
    key[ty.len()] = b'/';
    key[ty.len() + 1..n].copy_from_slice(sub);
    key[..n].make_ascii_lowercase();
    let key = &key[..n];
    super::mime_registry::IANA_MEDIA_TYPES
        .binary_search_by(|k| k.as_bytes().cmp(key))
        .is_ok()
}

/// `javascript1.2`, `ecmascript5`: the `language` attribute values of old `<script>` tags,
/// written as MIME subtypes (`text/javascript1.2`). Never a registered type, never a page.
fn versioned_script(sub: &[u8]) -> bool {
    [&b"javascript"[..], b"ecmascript", b"jscript", b"livescript"]
        .iter()
        .any(|p| {
            sub.len() > p.len()
                && sub[..p.len()].eq_ignore_ascii_case(p)
                && sub[p.len()..]
                    .iter()
                    .all(|c| c.is_ascii_digit() || *c == b'.')
        })
}

/// Two or more escapes of an escaped delimiter in the path: `%252F` (`/`), `%253A` (`:`),
/// `%253F`, `%253D`, `%2526`, `%2523` — `%252Fapi%252Fv2`.
///
/// Why no link matches: a server decodes a path once, so `/a%252Fb%252Fc` names one segment whose
/// name holds the literal text `%2F` twice. No site names its pages that way; it is what an
/// extractor makes by escaping an already-escaped path (or a nested URL) a second time. Only the
/// path counts: a query may carry a nested URL encoded twice on purpose
/// (`/out?u=https%253A%252F%252F…`, redirectors do), and a single `%2520` (an encoded space
/// escaped again) is a broken link that some servers still answer.
pub(super) fn double_encoded(path: &[u8]) -> bool {
    let mut n = 0;
    let mut i = 0;
    while let Some(off) = crate::url::find_byte(b'%', &path[i..]) {
        let p = i + off;
        if path.len() >= p + 5
            && path[p + 1] == b'2'
            && path[p + 2] == b'5'
            && matches!(
                (path[p + 3], path[p + 4] | 0x20),
                (b'2', b'f' | b'6' | b'3') | (b'3', b'a' | b'f' | b'd')
            )
        {
            n += 1;
            if n == 2 {
                return true;
            }
            i = p + 5;
        } else {
            i = p + 1;
        }
    }
    false
}

/// An XML namespace or DTD identifier (`http://www.w3.org/2000/svg`, the XHTML 1.0 DTDs, RDF,
/// Dublin Core, sitemaps): the absolute candidate, scheme aside, is one of [`XML_NAMESPACES`]
/// (case-insensitive, one trailing `/` ignored).
///
/// Why no link is lost: these strings sit in `xmlns` attributes, `DOCTYPE`s and `createElementNS`
/// calls, by the hundred per crawl. Each names a real document, but one no crawl of a site wants
/// (the W3C's namespace pages); a user who does sets `keep_xml_namespaces` (the loose profile
/// does). Only these exact identifiers match: any other page of those hosts passes.
#[inline]
pub(super) fn xml_namespace(b: &[u8], scheme: &[u8]) -> bool {
    let Some(mut rest) = b[scheme.len() + 1..].strip_prefix(b"//") else {
        return false;
    };
    if rest.last() == Some(&b'/') {
        rest = &rest[..rest.len() - 1];
    }
    // One shift rejects nearly every URL: the list holds a handful of lengths.
    if rest.len() >= 64 || XML_NAMESPACE_LENGTHS >> rest.len() & 1 == 0 {
        return false;
    }
    // Most absolute URLs stop here: their host is none of the few that mint these identifiers.
    let host = &rest[..crate::url::find_byte(b'/', rest).unwrap_or(rest.len())];
    if !XML_NAMESPACE_HOSTS
        .iter()
        .any(|h| h.len() == host.len() && h.as_bytes().eq_ignore_ascii_case(host))
    {
        return false;
    }
    XML_NAMESPACES.iter().any(|ns| {
        let ns = ns.strip_suffix('/').unwrap_or(ns).as_bytes();
        ns.len() == rest.len() && ns.eq_ignore_ascii_case(rest)
    })
}

/// An XML parser's feature or property identifier: `http://xml.org/sax/features/namespaces`,
/// `http://xml.org/sax/properties/lexical-handler` (SAX2) and Xerces'
/// `http://apache.org/xml/features/…`, `http://apache.org/xml/properties/…` — every URL under
/// these four prefixes (case-insensitive, scheme aside).
///
/// Why no link is lost: SAX2 names each parser switch with a URI under these prefixes, and
/// Xerces its own; programs pass them to `setFeature`/`setProperty`, and manuals (javadoc,
/// Doxygen) list them by the dozen. They identify a switch, not a document: the hosts serve no
/// page at those paths. Kept, like the namespaces, by `keep_xml_namespaces` and `loose`.
pub(super) fn parser_feature_id(b: &[u8], scheme: &[u8]) -> bool {
    const PREFIXES: [&[u8]; 4] = [
        b"xml.org/sax/features/",
        b"xml.org/sax/properties/",
        b"apache.org/xml/features/",
        b"apache.org/xml/properties/",
    ];
    let Some(rest) = b[scheme.len() + 1..].strip_prefix(b"//") else {
        return false;
    };
    if !matches!(rest.first(), Some(b'x' | b'X' | b'a' | b'A')) {
        return false;
    }
    // A dot segment would lead out of the prefix (`…/features/../../index.html`, found by
    // review): whatever holds `..`, `%2e` or `%2E` passes.
    PREFIXES
        .iter()
        .any(|p| rest.len() > p.len() && rest[..p.len()].eq_ignore_ascii_case(p))
        && !rest.windows(2).any(|w| w == b"..")
        && !rest.windows(3).any(|w| w.eq_ignore_ascii_case(b"%2e"))
}
