//! The JavaScript-context family (issue 17): what a string literal in a script may be held to.
//!
//! In an `href`, `ace/mode/x` is a relative link and passes. In a JavaScript string it is a
//! module specifier: `require('ace/mode/x')`, `import x from './layer/cursor'` are resolved by a
//! bundler or Node (or an AMD loader's own path map), never requested by the browser as a URL
//! relative to the page. The browser requests by URL only what carries a file extension
//! (`import './x.js'`, `new URL('./w.js', import.meta.url)`, `new Worker('worker.js')`), an
//! absolute or root-relative path (`fetch('/api/v2/users')`), or anything with a query.
//!
//! These rules run only for relative candidates (no scheme, not `//host`) found in a `js`
//! context, after every rule of the other families. Each doc comment says why no URL a script
//! really requests matches. What a page's script requests with an extension-less relative path
//! (`fetch('api/users')`, rare next to root-relative API paths) is the one thing given up; the
//! labelled set in `tests/data/context-labels.tsv` measures the trade.

use super::*;

/// The JavaScript-context rules, cheapest first; `b` is relative (no scheme, not `//`).
pub(super) fn js_rules(b: &[u8]) -> Option<Reason> {
    if b.starts_with(b"//") {
        return None;
    }
    if format_string(b) {
        return Some(Reason::FormatString);
    }
    if version_string(b) {
        return Some(Reason::VersionString);
    }
    if dotted_identifier(b) || type_url_path(b) {
        return Some(Reason::DottedIdentifier);
    }
    if let Some(r) = super::kinds::js_kinds(b) {
        return Some(r);
    }
    if module_path(b) {
        return Some(Reason::JsModulePath);
    }
    None
}

/// `seg` ends in a file extension a browser requests (`.js`, `.html`, `.png`, … [`WEB_EXTENSIONS`]).
pub(super) fn has_web_extension(seg: &[u8]) -> bool {
    let Some(dot) = seg.iter().rposition(|&c| c == b'.') else {
        return false;
    };
    let ext = &seg[dot + 1..];
    (1..=11).contains(&ext.len()) && eq_ignore_case_any(ext, WEB_EXTENSIONS)
}

/// A module specifier: a relative path with a `/` (`ace/mode/x`, `./layer/cursor`,
/// `../lib/util`, `@scope/pkg/x`, `ace/mode/`) whose last segment has no web file extension,
/// and no query.
///
/// Why no request matches: a browser resolves a script's string as a URL only where a script
/// asks it to (`fetch`, `import`, `new URL`, `src =`); ES modules need a full file name
/// (`import './x.js'`: the extension is there, so it passes), and what bundlers and Node resolve
/// (`require('./lib/util')`, `ace/mode/x`) never reaches the browser as a URL. Root-relative
/// paths (`/api/v2/users`), anything with a query (`api/items?page=2`) and the dot paths `./`,
/// `../` pass.
fn module_path(b: &[u8]) -> bool {
    if b[0] == b'/' || crate::url::find_byte(b'?', b).is_some() || is_dot_slash_path(b) {
        return false;
    }
    let Some(last_slash) = b.iter().rposition(|&c| c == b'/') else {
        return false;
    };
    !has_web_extension(&b[last_slash + 1..])
}

/// A dotted identifier, scope name or abbreviation: identifier parts joined by single dots, no
/// `/` — `foo.bar.Baz`, `keyword.operator.x`, `submit.check`, `e.g.`, `S.A.` — unless the last
/// part is a web file extension (`jquery.min.js`, `index.html` pass).
///
/// Why no request matches: without a `/`, a relative string is a file name in the page's own
/// directory; in a script, a file name a browser is asked to load ends in its extension. A host
/// name without a scheme (`api.example.com`) also matches: relative to the page it names a file
/// `…/dir/api.example.com`, which is not what the script meant and not a page.
fn dotted_identifier(b: &[u8]) -> bool {
    let trailing_dot = b.last() == Some(&b'.');
    let body = if trailing_dot { &b[..b.len() - 1] } else { b };
    if body.is_empty() {
        return false;
    }
    let mut parts = 0;
    for part in body.split(|&c| c == b'.') {
        let ok = matches!(part.first(), Some(c) if c.is_ascii_alphabetic() || *c == b'_' || *c == b'$')
            && part
                .iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'-'));
        if !ok {
            return false;
        }
        parts += 1;
    }
    if trailing_dot {
        return true;
    }
    parts >= 2 && !has_web_extension(body)
}

/// A protobuf type URL's path: `/` and a fully qualified message name — three or more
/// identifier parts joined by dots: the package's, starting in lower case, then the type's and
/// those of the types nested in it, in CamelCase (`/google.protobuf.Any`,
/// `/keyhole.dbroot.DbRootProto`, `/pkg.v1.Outer.Inner`), no other `/`. Not title-like slugs
/// (`/J.R.R.Tolkien`, `/St.Louis.Cardinals`: found by review).
///
/// Why no request matches: protobuf.js builds an `Any`'s type URL as `prefix + "/" + fullName`
/// and keeps the `/` and the name as a string; the name identifies a message type of a `.proto`
/// schema, resolved inside the program, never fetched. A page's path separates its parts with
/// `/`; a file name with dots ends in its extension (`/jquery.min.js`, `/index.PHP` pass).
fn type_url_path(b: &[u8]) -> bool {
    let Some(name) = b.strip_prefix(b"/") else {
        return false;
    };
    let ident = |p: &[u8]| {
        p.first()
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
            && p.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
    };
    // The package (lower-case parts), then the type and the types nested in it (`Outer.Inner`).
    let (mut package, mut types, mut in_types) = (0, 0, false);
    for part in name.split(|&c| c == b'.') {
        if !ident(part) {
            return false;
        }
        if part[0].is_ascii_uppercase() {
            if !part.iter().any(u8::is_ascii_lowercase) {
                return false;
            }
            in_types = true;
            types += 1;
        } else if in_types || part.len() < 2 {
            // A one-letter part is an initial (`/e.e.Cummings`, found by review), no package.
            return false;
        } else {
            package += 1;
        }
    }
    package >= 1 && types >= 1 && package + types >= 3 && !has_web_extension(name)
}

/// A version string: `1.2.3`, `v2.0`, `1.2.3-beta.1`, `4.1.7-compat:2.0.1` (three numeric parts,
/// or two after a `v`; then an optional `-`/`+` suffix of letters, digits, `.`, `:`, `-`, `+`).
///
/// Why no request matches: without a `/` it is a file name with no web extension; a release
/// directory is linked as `1.2.3/` (with the slash, which passes).
fn version_string(b: &[u8]) -> bool {
    let (mut i, min_parts) = if matches!(b[0], b'v' | b'V') {
        (1, 2)
    } else {
        (0, 3)
    };
    let mut parts = 0;
    loop {
        let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return false;
        }
        i += digits;
        parts += 1;
        if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
        } else {
            break;
        }
    }
    if parts < min_parts {
        return false;
    }
    match b.get(i) {
        None => true,
        Some(b'-' | b'+') => b[i + 1..]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b':' | b'-' | b'+' | b'_')),
        _ => false,
    }
}

/// A date/time format string (Java, ICU, moment, .NET pattern letters): runs of one repeated
/// pattern letter joined by `.`, `-`, `/`, `:`, `,`, `_` or a space — `d.M.y`, `yyyy.MM`,
/// `yyyy-MM-dd`, `HH:mm:ss`, `MM/dd/yyyy` — with at least two distinct date or time letters.
///
/// Why no request matches: each "segment" is a single letter repeated (`yyyy`, `MM`, `d`),
/// there is no extension and no leading `/`; no page is named like that, and as a relative path
/// in a script it would be a module specifier anyway.
fn format_string(b: &[u8]) -> bool {
    const LETTERS: &[u8] = b"yYMdDHhmsSaEZzkKLQuwWGXx";
    if b[0] == b'/' {
        return false;
    }
    let (mut runs, mut seps, mut core) = (0, 0, 0u32);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() {
            if !LETTERS.contains(&c) {
                return false;
            }
            i += b[i..].iter().take_while(|&&x| x == c).count();
            runs += 1;
            core |= match c {
                b'y' | b'Y' => 1,
                b'M' => 2,
                b'd' | b'D' => 4,
                b'H' | b'h' => 8,
                b'm' => 16,
                b's' => 32,
                _ => 0,
            };
        } else if matches!(c, b'.' | b'-' | b'/' | b':' | b',' | b'_' | b' ') {
            seps += 1;
            i += 1;
        } else {
            return false;
        }
    }
    runs >= 2 && seps >= 1 && core.count_ones() >= 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url::Context;

    fn js(s: &str) -> Result<(), Reason> {
        Validator::default().check_in(s, Context::Js)
    }

    #[test]
    fn the_issue_s_junk_is_rejected_in_js() {
        for (s, r) in [
            ("ace/mode/x", Reason::JsModulePath),
            ("./layer/cursor", Reason::JsModulePath),
            ("./y_highlight_rules", Reason::JsModulePath),
            ("../lib/util", Reason::JsModulePath),
            ("@vue/shared/dist/x", Reason::JsModulePath),
            ("ace/mode/", Reason::JsModulePath),
            ("foo.bar.Baz", Reason::DottedIdentifier),
            ("keyword.operator.x", Reason::DottedIdentifier),
            ("submit.check", Reason::DottedIdentifier),
            ("e.g.", Reason::DottedIdentifier),
            ("S.A.", Reason::DottedIdentifier),
            ("/google.protobuf.Any", Reason::DottedIdentifier),
            ("/keyhole.dbroot.DbRootProto", Reason::DottedIdentifier),
            ("/pkg.v1.Outer.Inner", Reason::DottedIdentifier),
            ("1.2.3", Reason::VersionString),
            ("v2.0", Reason::VersionString),
            ("4.1.7-compat:2.0.1", Reason::VersionString),
            ("1.2.3-beta.1", Reason::VersionString),
            ("d.M.y", Reason::FormatString),
            ("yyyy.MM", Reason::FormatString),
            ("yyyy-MM-dd", Reason::FormatString),
            ("dd/MM/yyyy HH:mm", Reason::FormatString),
            ("HH.mm.ss", Reason::FormatString),
            ("MM/dd/yyyy", Reason::FormatString),
        ] {
            assert_eq!(js(s), Err(r), "{s}");
        }
    }

    #[test]
    fn what_a_script_requests_passes_in_js() {
        for s in [
            "./x.js",
            "./pdf.worker.js",
            "../images/logo.png",
            "workerMain.js",
            "jquery.min.js",
            "index.html",
            "/api/v2/users",
            "/styles/v1",
            "api/items?page=2",
            "./",
            "../",
            "//cdn.example.com/lib/x",
            "https://example.com/a/b",
            "/yyyy/MM",
            "data/feed.json",
            "/jquery.min.js",
            "/index.PHP",
            "/a.b.Cd/x",
            "/com.example",
            "/docs/google.protobuf.Any",
            "/v1.2.Beta",
            "/J.R.R.Tolkien",
            "/e.e.Cummings",
            "/w.e.B_Du_Bois",
            "/St.Louis.Cardinals",
            "/a.b.CD",
            "/a.B.c",
            "/docs.v2.Page.html",
        ] {
            assert_eq!(js(s), Ok(()), "{s}");
        }
    }

    #[test]
    fn js_rules_do_not_apply_elsewhere() {
        // In an href a relative path is a link: exactly as before.
        for s in [
            "ace/mode/x",
            "./layer/cursor",
            "foo.bar.Baz",
            "d.M.y",
            "1.2.3/",
            "/google.protobuf.Any",
        ] {
            for ctx in [
                Context::HtmlAttr,
                Context::Unknown,
                Context::Css,
                Context::Text,
            ] {
                assert_eq!(Validator::default().check_in(s, ctx), Ok(()), "{s} {ctx:?}");
            }
        }
    }

    #[test]
    fn the_universal_rules_apply_in_every_context() {
        let v = Validator::default();
        for ctx in [
            Context::Unknown,
            Context::HtmlAttr,
            Context::Js,
            Context::Text,
        ] {
            for (s, r) in [
                ("multipart/signed", Reason::MimeType),
                ("image/avif", Reason::MimeType),
                ("text/javascript1.2", Reason::MimeType),
                ("application/ld+json", Reason::MimeType),
                ("/AJAX/audio/opus", Reason::MimeType),
                ("%252Fapi%252Fv2", Reason::DoubleEncoded),
                ("/a%252Fb%253Ac", Reason::DoubleEncoded),
                ("http://www.w3.org/2000/svg", Reason::XmlNamespace),
                ("https://www.w3.org/1999/xhtml/", Reason::XmlNamespace),
                (
                    "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd",
                    Reason::XmlNamespace,
                ),
                (
                    "http://xml.org/sax/features/namespaces",
                    Reason::XmlNamespace,
                ),
                (
                    "http://xml.org/sax/properties/lexical-handler",
                    Reason::XmlNamespace,
                ),
                (
                    "http://apache.org/xml/features/validation/schema",
                    Reason::XmlNamespace,
                ),
                (
                    "HTTP://Apache.org/xml/properties/schema/external-noNamespaceSchemaLocation",
                    Reason::XmlNamespace,
                ),
            ] {
                assert_eq!(v.check_in(s, ctx), Err(r), "{s} {ctx:?}");
            }
            for s in [
                "/application/index",
                "/message/news",
                "/video/raw",
                "/out?u=https%253A%252F%252Fexample.com",
                "/files/a%2520b.pdf",
                "http://www.w3.org/2000/svg/about",
                "https://www.w3.org/TR/html52/",
                "http://xml.org/sax/",
                "https://www.apache.org/xml/features/",
                "https://apache.org/xml/index.html",
                "https://xml.org/sax/featuresx",
                "http://apache.org/xml/features/../../../index.html",
                "http://apache.org/xml/features/%2E%2E/x.html",
            ] {
                assert_eq!(v.check_in(s, ctx), Ok(()), "{s} {ctx:?}");
            }
        }
        let loose = Validator::with_profile(Profile::Loose);
        assert_eq!(loose.check("http://www.w3.org/2000/svg"), Ok(()));
        assert_eq!(
            loose.check("http://xml.org/sax/features/namespaces"),
            Ok(())
        );
    }
}
