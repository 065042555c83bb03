//! Where a candidate was found, and the decoding that context implies (issue 17).
//!
//! A link extractor knows whether a string came from an HTML attribute, HTML text, a
//! JavaScript string, a CSS `url()` or plain text; the same bytes mean different URLs in each.
//! `href="?a=1&amp;b=2"` is the URL `?a=1&b=2`, and the JavaScript string `"\/api\/v2"` is
//! `/api/v2`. [`Context::decode`] turns the raw candidate into what a browser would have used,
//! before the junk rules and canonicalization see it. `unknown` (the default) decodes nothing:
//! today's behaviour.

use std::borrow::Cow;

/// Where a candidate was found.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Context {
    /// Not said: nothing is decoded.
    #[default]
    Unknown,
    /// The raw value of an HTML attribute (`href`, `src`, …), before character references are
    /// decoded: decoded as a browser decodes attribute values.
    HtmlAttr,
    /// HTML text: character references decoded as in text.
    HtmlText,
    /// A JavaScript string or template literal (inline or external): escapes decoded.
    Js,
    /// A CSS `url(…)` value: CSS escapes decoded.
    Css,
    /// Plain text (logs, JSON values already decoded): nothing is decoded.
    Text,
}

impl Context {
    /// The code used in events, flags and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Context::Unknown => "unknown",
            Context::HtmlAttr => "html_attr",
            Context::HtmlText => "html_text",
            Context::Js => "js",
            Context::Css => "css",
            Context::Text => "text",
        }
    }

    /// The candidate as a browser would use it. Borrowed (free) when there is nothing to decode.
    pub fn decode(self, raw: &str) -> Cow<'_, str> {
        match self {
            Context::Unknown => Cow::Borrowed(raw),
            Context::Text => Cow::Borrowed(text_end(raw)),
            Context::HtmlAttr if raw.contains('&') => htmlize::unescape_attribute(raw),
            Context::HtmlText if raw.contains('&') => match htmlize::unescape(raw) {
                Cow::Borrowed(b) => Cow::Borrowed(text_end(b)),
                Cow::Owned(o) => Cow::Owned(text_end(&o).to_string()),
            },
            Context::HtmlText => Cow::Borrowed(text_end(raw)),
            Context::Js if raw.contains('\\') => Cow::Owned(js_unescape(raw)),
            Context::Css if raw.contains('\\') => Cow::Owned(css_unescape(raw)),
            _ => Cow::Borrowed(raw),
        }
    }
}

impl std::str::FromStr for Context {
    type Err = String;
    fn from_str(s: &str) -> Result<Context, String> {
        <Context as clap::ValueEnum>::from_str(s, false)
            .map_err(|_| format!("{s:?}: expected unknown, html_attr, html_text, js, css or text"))
    }
}

/// Where a URL found in running text ends: before CJK punctuation
/// ([`before_cjk_punctuation`]) and before the residue of Markdown
/// ([`before_markdown_residue`]).
fn text_end(s: &str) -> &str {
    before_markdown_residue(before_cjk_punctuation(s))
}

/// A URL lifted out of Markdown by an extractor that stops only at whitespace ends where the
/// Markdown syntax after it starts (issue 46): at `](` — the link target after a URL written
/// as the link's text or image (`[![v](https://img.shields.io/npm/v/x.svg)](https://npm.im/x)`
/// gives `https://img.shields.io/npm/v/x.svg)](https://npm.im/x)`: cut at `)](`, or at `](`
/// where no `)` closes an image first) — and at a table's cell separator `|` written in the
/// URL's host or path (`https://x.org/docs|Docs|`), relative ones too (what a kept relative
/// candidate becomes is read again as an absolute URL, and must not change); not where the cut
/// leaves no letter or digit (code: `/|/\=|&|`). Not a `|` in the query
/// or fragment: `?family=Roboto|Open+Sans` is how Google Fonts lists families (and a cut
/// there would change a kept URL's canonical form when it is read again).
/// The URL is kept, trimmed: the residue is not part of any page's address (WHATWG leaves `]`,
/// `(` and `|` as they are in a path, so the request would go to a page that does not exist).
fn before_markdown_residue(s: &str) -> &str {
    let b = s.as_bytes();
    let Some(first) = memchr::memchr2(b']', b'|', b) else {
        return s;
    };
    let mut end = b.len();
    // `](` with no `[` before it in the candidate: the link's target after its text (a `[` of
    // the candidate's own opens a bracket the `]` closes: `?q=[a](b)`, `/![sra](?=`).
    if let Some(i) = s[first..].find("](").map(|i| i + first) {
        if !b[..i].contains(&b'[') {
            // The `)` before it closes an image's target (`![v](URL)](…)`), unless it closes
            // a `(` of the URL's own (`…/wiki/Mercury_(planet)](…)`).
            let before = &b[..i.saturating_sub(1)];
            let opens = before.iter().filter(|&&c| c == b'(').count();
            let closes = before.iter().filter(|&&c| c == b')').count();
            end = if i > 0 && b[i - 1] == b')' && opens <= closes {
                i - 1
            } else {
                i
            };
        }
    }
    let query = s.find(['?', '#']).unwrap_or(b.len());
    if let Some(i) = s[..end.min(query)].find('|').filter(|&i| i > 0) {
        end = i;
    }
    if end == b.len() {
        return s;
    }
    // A cut that leaves no letter or digit (in any script) found code, not a URL
    // (`/|/\=|&|…` would be `/`, the site's root; minified code starting `](),…`): nothing
    // is left to judge (`empty`). Judged whole instead, a kept relative `.|h.com` would come
    // back as `…/lib/.|h.com`, which the cut changes.
    if !s[..end].chars().any(char::is_alphanumeric) {
        return &s[..0];
    }
    &s[..end]
}

/// A URL in running text ends at the first CJK (full-width) punctuation mark written after
/// it — a sentence's `。，、；：！？…`, a closing `）」』】〕〉》”’` — which no writer means as
/// part of the URL: `访问https://news.cn，更多` names `https://news.cn`, where the comma would
/// have been taken into the host (and `。` read as a dot by IDNA: `news.cn.`). The cost: an
/// internationalized host spelled with the ideographic full stop (`例子。中国`) in text is cut
/// too; browsers and writers show such hosts with `.`.
fn before_cjk_punctuation(s: &str) -> &str {
    if s.is_ascii() {
        return s;
    }
    let stop = s.find([
        '\u{3002}', '\u{FF0C}', '\u{3001}', '\u{FF1B}', '\u{FF1A}', '\u{FF01}', '\u{FF1F}',
        '\u{2026}', '\u{FF09}', '\u{300D}', '\u{300F}', '\u{3011}', '\u{3015}', '\u{3009}',
        '\u{300B}', '\u{201D}', '\u{2019}', '\u{FF0E}', '\u{FF61}',
    ]);
    match stop {
        Some(i) if i > 0 => &s[..i],
        _ => s,
    }
}

/// JavaScript string escapes (ECMAScript's `EscapeSequence`): `\n` and the other single-letter
/// escapes, `\xHH`, `\uHHHH` (surrogate pairs joined), `\u{H…}`, `\0`, line continuations
/// (removed), and identity escapes (`\/` → `/`, `\q` → `q`). A malformed `\x`/`\u` keeps its
/// letter, as a lenient engine would; a lone surrogate becomes U+FFFD.
fn js_unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut lit = 0; // start of the pending literal run
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        out.push_str(&s[lit..i]);
        let Some(&c) = b.get(i + 1) else {
            lit = i; // a trailing backslash stays
            break;
        };
        i += 2;
        match c {
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'v' => out.push('\u{b}'),
            b'0' if !b.get(i).is_some_and(u8::is_ascii_digit) => out.push('\0'),
            b'\n' => {}
            b'\r' => {
                if b.get(i) == Some(&b'\n') {
                    i += 1;
                }
            }
            b'x' => match hex_at(s, i, 2) {
                Some(v) => {
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                    i += 2;
                }
                None => out.push('x'),
            },
            b'u' => i = unicode_escape(s, i, &mut out),
            _ => {
                // An identity escape: the character itself (may be multi-byte).
                let start = i - 1;
                let ch = s[start..].chars().next().expect("a character after `\\`");
                out.push(ch);
                i = start + ch.len_utf8();
            }
        }
        lit = i;
    }
    out.push_str(&s[lit.min(s.len())..]);
    out
}

/// A `\u` escape whose `HHHH` or `{H…}` starts at `i` (after the `u`): its character pushed
/// (a surrogate pair joined, a lone surrogate as U+FFFD, a malformed escape as its `u`);
/// returns where reading goes on.
fn unicode_escape(s: &str, mut i: usize, out: &mut String) -> usize {
    let b = s.as_bytes();
    if b.get(i) == Some(&b'{') {
        let end = s[i + 1..].find('}').map(|e| i + 1 + e);
        match end.and_then(|e| {
            (e > i + 1 && e - (i + 1) <= 6)
                .then(|| u32::from_str_radix(&s[i + 1..e], 16).ok())
                .flatten()
                .map(|v| (v, e))
        }) {
            Some((v, e)) => {
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                i = e + 1;
            }
            None => out.push('u'),
        }
        return i;
    }
    match hex_at(s, i, 4) {
        Some(hi) if (0xD800..0xDC00).contains(&hi) => {
            i += 4;
            // A low surrogate escape right after joins it.
            let lo = (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u'))
                .then(|| hex_at(s, i + 2, 4))
                .flatten()
                .filter(|lo| (0xDC00..0xE000).contains(lo));
            match lo {
                Some(lo) => {
                    let v = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                    i += 6;
                }
                None => out.push('\u{fffd}'),
            }
        }
        Some(v) => {
            out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            i += 4;
        }
        None => out.push('u'),
    }
    i
}

/// `n` hex digits at `s[i..]`, if they are there.
fn hex_at(s: &str, i: usize, n: usize) -> Option<u32> {
    let d = s.get(i..i + n)?;
    d.bytes()
        .all(|c| c.is_ascii_hexdigit())
        .then(|| u32::from_str_radix(d, 16).ok())
        .flatten()
}

/// CSS escapes (CSS Syntax §4.3.7): `\` + 1–6 hex digits + one optional whitespace, or `\` +
/// any other character (itself). Zero, surrogates and values past U+10FFFF become U+FFFD.
fn css_unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let mut hex = String::new();
        while hex.len() < 6 {
            match chars.peek() {
                Some(&(_, h)) if h.is_ascii_hexdigit() => {
                    hex.push(h);
                    chars.next();
                }
                _ => break,
            }
        }
        if hex.is_empty() {
            match chars.next() {
                Some((_, '\n')) => {} // an escaped newline: nothing
                Some((_, other)) => out.push(other),
                None => out.push('\\'),
            }
            continue;
        }
        let v = u32::from_str_radix(&hex, 16).unwrap_or(0xFFFD);
        let ch = match v {
            0 => '\u{fffd}',
            v => char::from_u32(v).unwrap_or('\u{fffd}'),
        };
        out.push(ch);
        if let Some(&(_, w)) = chars.peek() {
            if matches!(w, ' ' | '\t' | '\n') {
                chars.next();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_attributes_decode_as_browsers_do() {
        let d = |s| Context::HtmlAttr.decode(s).into_owned();
        assert_eq!(d("?code=x&amp;edition=2021"), "?code=x&edition=2021");
        assert_eq!(d("/a&#x2F;b&#47;c"), "/a/b/c");
        assert_eq!(d("&quot;/x&quot;"), "\"/x\"");
        // Legacy names without `;`: decoded, except before `=` or an alphanumeric (attributes).
        assert_eq!(d("?a=1&copy=2"), "?a=1&copy=2");
        assert_eq!(d("?a=1&not;b"), "?a=1¬b");
        assert_eq!(d("?x=&lt"), "?x=<");
        assert!(matches!(
            Context::HtmlAttr.decode("/plain"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn html_text_decodes_legacy_names_everywhere() {
        assert_eq!(Context::HtmlText.decode("?a=1&copy=2"), "?a=1©=2");
    }

    #[test]
    fn javascript_escapes_decode() {
        let d = |s| Context::Js.decode(s).into_owned();
        assert_eq!(d(r"\/api\/v2\/users"), "/api/v2/users");
        assert_eq!(d(r"\u002Fapi\x2Fv2"), "/api/v2");
        assert_eq!(d(r"\u{1F600}/x"), "\u{1F600}/x");
        assert_eq!(d(r"\uD83D\uDE00"), "\u{1F600}");
        assert_eq!(d(r"\uD83Dx"), "\u{fffd}x");
        assert_eq!(d(r"a\qb"), "aqb");
        assert_eq!(d(r"\xZZ"), "xZZ");
        assert_eq!(d("a\\\nb"), "ab");
        assert_eq!(d(r"end\"), r"end\");
        assert_eq!(d(r"\é/x"), "é/x");
        assert!(matches!(Context::Js.decode("/plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn css_escapes_decode() {
        let d = |s| Context::Css.decode(s).into_owned();
        assert_eq!(d(r"\2F img\2f a.png"), "/img/a.png");
        assert_eq!(d(r"a\(b\)"), "a(b)");
        assert_eq!(d(r"\0 x"), "\u{fffd}x");
    }

    /// Issue 44: CJK punctuation after a URL in text ends it, and is not taken into the host
    /// or the path; other contexts keep it (a script's or an attribute's value is the URL).
    #[test]
    fn cjk_punctuation_ends_a_url_in_text() {
        for c in [Context::Text, Context::HtmlText] {
            assert_eq!(c.decode("https://news.cn，更多内容"), "https://news.cn");
            assert_eq!(c.decode("https://news.cn。"), "https://news.cn");
            assert_eq!(c.decode("https://news.cn/a/b。"), "https://news.cn/a/b");
            assert_eq!(
                c.decode("https://news.cn/页面、下一页"),
                "https://news.cn/页面"
            );
            assert_eq!(c.decode("https://news.cn/x?q=1）"), "https://news.cn/x?q=1");
            assert_eq!(
                c.decode("https://news.cn/中文路径"),
                "https://news.cn/中文路径"
            );
        }
        assert_eq!(
            Context::HtmlText.decode("https://news.cn/?a=1&amp;b=2，见"),
            "https://news.cn/?a=1&b=2"
        );
        assert_eq!(
            Context::Js.decode("https://news.cn/a，"),
            "https://news.cn/a，"
        );
        assert_eq!(
            Context::Unknown.decode("https://news.cn。"),
            "https://news.cn。"
        );
    }

    /// Issue 46: the residue of Markdown after a URL in text (a link target, a table's cell
    /// separator) is trimmed; a `|` in a query stays, and other contexts keep it all.
    #[test]
    fn markdown_residue_ends_a_url_in_text() {
        for c in [Context::Text, Context::HtmlText] {
            let d = |s| c.decode(s).into_owned();
            assert_eq!(
                d("https://img.shields.io/npm/v/x.svg)](https://npmjs.org/package/x)"),
                "https://img.shields.io/npm/v/x.svg"
            );
            assert_eq!(d("https://x.org/a](https://x.org/a)"), "https://x.org/a");
            assert_eq!(d("https://x.org/docs|Docs|"), "https://x.org/docs");
            assert_eq!(d("https://x.org/docs|"), "https://x.org/docs");
            assert_eq!(d("https://x.org/?a=1|"), "https://x.org/?a=1|");
            assert_eq!(d("www.x.org/a|b"), "www.x.org/a");
            assert_eq!(d("docs/a.md](docs/a.md)"), "docs/a.md");
            // Found by review: a `)` of the URL's own stays; a `[` of its own is no Markdown.
            assert_eq!(
                d("https://en.wikipedia.org/wiki/Mercury_(planet)](https://x.org/)"),
                "https://en.wikipedia.org/wiki/Mercury_(planet)"
            );
            assert_eq!(
                d("https://site.org/page?q=[a](b)"),
                "https://site.org/page?q=[a](b)"
            );
            assert_eq!(d("/文档|文档|"), "/文档");
            // A cut that would leave no letter or digit: code, nothing left to judge.
            assert_eq!(d("/|/\\=|&|"), "");
            assert_eq!(d(".|h.com"), "");
            assert_eq!(d("|https://x.org/"), "|https://x.org/");
            // A `|` in the query is a value; a `)` closing a path is the URL's own.
            assert_eq!(
                d("https://fonts.googleapis.com/css?family=Roboto|Open+Sans"),
                "https://fonts.googleapis.com/css?family=Roboto|Open+Sans"
            );
            assert_eq!(
                d("https://en.wikipedia.org/wiki/Rust_(language)"),
                "https://en.wikipedia.org/wiki/Rust_(language)"
            );
            assert_eq!(d("https://x.org/a[1]"), "https://x.org/a[1]");
            assert_eq!(d("|"), "|");
        }
        assert_eq!(
            Context::Js.decode("https://x.org/a)](https://x.org/b)"),
            "https://x.org/a)](https://x.org/b)"
        );
        assert_eq!(
            Context::Unknown.decode("https://x.org/a|"),
            "https://x.org/a|"
        );
    }

    #[test]
    fn unknown_and_text_decode_nothing() {
        for c in [Context::Unknown, Context::Text] {
            assert_eq!(c.decode("?a=1&amp;b=\\/"), "?a=1&amp;b=\\/");
        }
        assert_eq!("html_attr".parse::<Context>(), Ok(Context::HtmlAttr));
        assert!("html".parse::<Context>().is_err());
    }
}
