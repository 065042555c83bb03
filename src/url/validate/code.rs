//! The code family: JavaScript and CSS fragments, template syntax, HTML tags and comments
//! caught where a URL could be. Each rule's doc comment says why no real URL matches it.

use super::*;

/// Ends in a call's open parenthesis, an empty trailing `?` or `&` aside (canonicalization
/// drops those): `createElement(`.
pub(super) fn ends_open_paren(b: &[u8]) -> bool {
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'?' | b'&') {
        end -= 1;
    }
    b[..end].ends_with(b"(")
}

/// Bytes that mark a candidate's head (before `?`/`#`) as possible code rather than a path.
pub(super) const fn is_code_byte(c: u8) -> bool {
    matches!(
        c,
        b'(' | b')'
            | b'{'
            | b'}'
            | b'<'
            | b'>'
            | b'\''
            | b'"'
            | b';'
            | b'$'
            | b'!'
            | b'|'
            | b'*'
            | b'`'
            | b'['
            | b']'
            | b'\\'
            | b' '
            | b','
            | b'+'
            | b'='
    )
}

/// The rules for code punctuation, applied to the head of a URL or to a whole fragment of code.
pub(super) fn code_rules(b: &[u8], absolute: bool) -> Option<Reason> {
    if let Some(r) = template_syntax(b) {
        return Some(r);
    }
    if html_tag(b) {
        return Some(Reason::HtmlTag);
    }
    // A raw backtick is a template literal's delimiter; no href carries one.
    if crate::url::find_byte(b'`', b).is_some() {
        return Some(Reason::JsCode);
    }
    let first_slash = if absolute {
        Some(0)
    } else {
        crate::url::find_byte(b'/', b)
    };
    js_code(b, first_slash).then_some(Reason::JsCode)
}

/// In a query or fragment, only what no real URL carries raw: arrows, strict equality,
/// declarations (raw spaces), template delimiters, script tags.
pub(super) fn strong_code_markers(b: &[u8]) -> Option<Reason> {
    for pat in [&b"{{"[..], b"}}", b"${", b"<%", b"%>", b"{%", b"%}"] {
        if find(b, pat).is_some() {
            return Some(Reason::TemplateSyntax);
        }
    }
    let lower_has = |p: &[u8]| b.windows(p.len()).any(|w| w.eq_ignore_ascii_case(p));
    if lower_has(b"<script") || lower_has(b"</script") || find(b, b"<!--").is_some() {
        return Some(Reason::HtmlTag);
    }
    // Not `function(`: a playground link's code may call a variable named `function`.
    if find(b, b"=>").is_some()
        || find(b, b"===").is_some()
        || find(b, b"!==").is_some()
        || declaration(b)
    {
        return Some(Reason::JsCode);
    }
    None
}

/// A printf conversion left in a URL: `%s`, `%d`, `%i` or `%u`, optionally positional
/// (`%1$s`), in lower case, followed by the end or a delimiter (`/ & ? # = . , ;`):
/// `/1/dictionaries/%s/batch`, `?page=%d`.
///
/// Why no request matches: `s`, `i` and `u` are no hex digits, so `%s` is no escape, nor is
/// `%d` before a delimiter: the string is a format a program fills in before the URL exists.
/// Only before the end or a delimiter: `100%sure` (a stray `%` in prose) is left to the escape
/// rules. (A URL cut inside a lower-case escape, `…%d0%bf%d`, matches too: it is no page either.)
pub(super) fn printf_placeholder(b: &[u8]) -> bool {
    memchr::memchr_iter(b'%', b).any(|p| {
        // `%20$s` is an escaped space, then `$s` (the canonical form of `a $s/`): an escape
        // is never a conversion.
        if b.get(p + 1).is_some_and(u8::is_ascii_hexdigit)
            && b.get(p + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            return false;
        }
        let mut q = p + 1;
        while b.get(q).is_some_and(u8::is_ascii_digit) {
            q += 1;
        }
        let positional = q > p + 1;
        if positional {
            if b.get(q) != Some(&b'$') {
                return false;
            }
            q += 1;
        }
        matches!(b.get(q), Some(b's' | b'd' | b'i' | b'u'))
            && b.get(q + 1)
                .is_none_or(|c| matches!(c, b'/' | b'&' | b'?' | b'#' | b'=' | b'.' | b',' | b';'))
    })
}

/// `translate(-.3px)`, `cubic-bezier(`, `calc(`, `var(--x)`, `url(/a.png)`: CSS functions.
pub(super) fn starts_with_css_function(b: &[u8]) -> bool {
    const F: &[&[u8]] = &[
        b"translate(",
        b"translatex(",
        b"translatey(",
        b"translate3d(",
        b"rotate(",
        b"scale(",
        b"matrix(",
        b"matrix3d(",
        b"skew(",
        b"cubic-bezier(",
        b"calc(",
        b"var(",
        b"url(",
        b"linear-gradient(",
        b"radial-gradient(",
        b"steps(",
        b"attr(",
    ];
    F.iter().any(|f| starts_with_ignore_case(b, f))
}

/// A whole relative candidate that is one long base64 blob (inlined fonts, search indexes).
pub(super) fn encoded_blob(b: &[u8]) -> bool {
    b.len() >= 48
        && !matches!(b[0], b'/' | b'.')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'_' | b'-'))
        && b.iter().any(u8::is_ascii_uppercase)
        && b.iter().any(u8::is_ascii_lowercase)
        && b.iter().any(u8::is_ascii_digit)
        // Real slugs and paths are split by separators; a blob runs on.
        && b.split(|c| matches!(c, b'/' | b'-' | b'_')).any(|run| run.len() >= 40)
}

/// `0.76,0,0.24,1`: a comma-separated list of numbers (cubic-bezier arguments, coordinates).
pub(super) fn number_list(b: &[u8]) -> bool {
    b.contains(&b',')
        && b.split(|&c| c == b',')
            .all(|p| !p.is_empty() && number_like(p) == Some(Reason::BareNumber))
}

pub(super) fn starts_with_ignore_case(b: &[u8], p: &[u8]) -> bool {
    b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p)
}

/// `/`, `./`, `../`, `.`, `..`, `../../` ...: real relative references without a letter.
pub(super) fn is_dot_slash_path(b: &[u8]) -> bool {
    let mut segs = b.split(|&c| c == b'/').peekable();
    if !matches!(segs.next(), Some(b"" | b"." | b"..")) {
        return false;
    }
    // After the first, only `.`/`..` segments, and an empty one only at the end (no `//`, `/?`).
    while let Some(seg) = segs.next() {
        let last = segs.peek().is_none();
        if !(matches!(seg, b"." | b"..") || seg.is_empty() && last) {
            return false;
        }
    }
    true
}

/// Bytes (3 per character, as escaped) in runs of three or more spaces or tabs, raw or escaped:
/// `/%20%20%20%20` is padding, not a name. Raw and escaped count alike, so that a candidate and
/// its canonical form (which escapes the spaces) get the same verdict.
pub(super) fn whitespace_run_bytes(b: &[u8]) -> usize {
    let (mut total, mut run, mut i) = (0, 0, 0);
    while i < b.len() {
        let ws = if matches!(b[i], b' ' | b'\t') {
            i += 1;
            true
        } else if b[i] == b'%' && matches!(&b[i + 1..], [b'2', b'0', ..] | [b'0', b'9', ..]) {
            i += 3;
            true
        } else {
            i += 1;
            false
        };
        if ws {
            run += 1;
            continue;
        }
        if run >= 3 {
            total += run * 3;
        }
        run = 0;
    }
    if run >= 3 {
        total += run * 3;
    }
    total
}

pub(super) fn is_hex_color(b: &[u8]) -> bool {
    matches!(b.len(), 3 | 4 | 6 | 8) && b.iter().all(|c| c.is_ascii_hexdigit())
}

/// `{{x}}`, `{% x %}`, `<% x %>`, `<?php`, `${x}`, `#{x}`, `{id}` / `{0}` placeholders.
pub(super) fn template_syntax(b: &[u8]) -> Option<Reason> {
    for pat in [
        &b"{{"[..],
        b"}}",
        b"{%",
        b"%}",
        b"<%",
        b"%>",
        b"${",
        b"#{",
        b"<?",
        b"?>",
    ] {
        if find(b, pat).is_some() {
            return Some(Reason::TemplateSyntax);
        }
    }
    // `$1` regex back-references in replacement templates (`/embed/video/$1`, `[url=$1]`).
    let mut i = 0;
    while let Some(off) = crate::url::find_byte(b'$', &b[i..]) {
        let p = i + off;
        if b.get(p + 1).is_some_and(u8::is_ascii_digit)
            && (p == 0 || matches!(b[p - 1], b'/' | b'=' | b']' | b'>' | b' ' | b':'))
        {
            return Some(Reason::TemplateSyntax);
        }
        i = p + 1;
    }
    // `{name}` with an identifier-ish body (OpenAPI, .NET, Python format placeholders).
    let mut i = 0;
    while let Some(off) = crate::url::find_byte(b'{', &b[i..]) {
        let start = i + off + 1;
        let body = b[start..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
            .count();
        if body > 0 && b.get(start + body) == Some(&b'}') {
            return Some(Reason::TemplateSyntax);
        }
        i = start;
    }
    None
}

/// `/users/:id`: a path segment that starts with `:` and an identifier (Express/Rails routes).
pub(super) fn path_placeholder(b: &[u8]) -> bool {
    memchr::memchr_iter(b':', b)
        .any(|p| p > 0 && b[p - 1] == b'/' && b.get(p + 1).is_some_and(|&c| is_ident_start(c)))
}

/// `<div`, `</a`, `<!DOCTYPE`, `<!--` (comment handled separately), `&lt;b`.
pub(super) fn html_tag(b: &[u8]) -> bool {
    let mut i = 0;
    while let Some(off) = crate::url::find_byte(b'<', &b[i..]) {
        let p = i + off;
        match b.get(p + 1) {
            Some(c) if c.is_ascii_alphabetic() || *c == b'!' => return true,
            Some(b'/') if b.get(p + 2).is_some_and(|c| c.is_ascii_alphabetic()) => return true,
            _ => {}
        }
        i = p + 1;
    }
    if let Some(p) = find(b, b"&lt;") {
        if b.get(p + 4)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'/')
        {
            return true;
        }
    }
    false
}

/// `/*`, `*/`, `<!--`, `-->`, and `//` followed by whitespace (never protocol-relative URLs).
pub(super) fn comment_marker(b: &[u8]) -> Option<Reason> {
    if b.starts_with(b"/*") || b.starts_with(b"<!--") {
        return Some(Reason::CommentMarker);
    }
    if find(b, b"*/").is_some() || find(b, b"-->").is_some() {
        return Some(Reason::CommentMarker);
    }
    let mut i = 0;
    while let Some(off) = find(&b[i..], b"//") {
        let p = i + off;
        if matches!(b.get(p + 2), Some(b' ' | b'\t')) {
            return Some(Reason::CommentMarker);
        }
        i = p + 2;
    }
    None
}

/// A leading `ident(.ident)*`: how many identifiers, the first and the last, the shortest after
/// the first, and where the chain ended.
pub(super) struct Chain<'a> {
    pub(super) count: usize,
    pub(super) first: &'a [u8],
    pub(super) last: &'a [u8],
    pub(super) min_tail_len: usize,
    pub(super) end: usize,
}

pub(super) fn ident_chain(b: &[u8]) -> Chain<'_> {
    let mut c = Chain {
        count: 0,
        first: &[],
        last: &[],
        min_tail_len: usize::MAX,
        end: 0,
    };
    let mut i = 0;
    while i < b.len() && is_ident_start(b[i]) {
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let part = &b[start..i];
        if c.count == 0 {
            c.first = part;
        } else {
            c.min_tail_len = c.min_tail_len.min(part.len());
        }
        c.last = part;
        c.count += 1;
        c.end = i;
        if i + 1 < b.len() && b[i] == b'.' && is_ident_start(b[i + 1]) {
            i += 1;
        } else {
            break;
        }
    }
    c
}

/// A member-access chain that starts at a JS receiver: `window.location.href`, `this.props.url`,
/// `e.target.value`, `document.getElementById`. `document.pdf` and `window.com` are names.
pub(super) fn js_dotted_chain(b: &[u8]) -> bool {
    if !is_ident_start(b[0]) {
        return false;
    }
    let c = ident_chain(b);
    if c.count < 2 {
        return false;
    }
    // The chain must be the whole candidate, or be followed by a call or index.
    if c.end < b.len() && !matches!(b[c.end], b'(' | b'[') {
        return false;
    }
    // (Chain parts are ASCII identifier bytes: compared as bytes. The receiver is asked first:
    // most dotted candidates, `jquery.min.js`, have none and skip the name list.)
    let last_is_name = || {
        NAME_ENDINGS
            .iter()
            .any(|e| e.as_bytes().eq_ignore_ascii_case(c.last))
    };
    if JS_RECEIVERS.iter().any(|r| r.as_bytes() == c.first) {
        return c.count >= 3 || c.end < b.len() || !last_is_name();
    }
    // Minified receivers (`e.target.value`, `t.data.id`): one letter, three or more links, and a
    // JS-looking tail rather than a host or file name.
    c.first.len() == 1 && c.count >= 3 && c.min_tail_len > 1 && !last_is_name()
}

/// Known global functions whose call is code wherever it appears without a path before it.
pub(super) const JS_CALLS: &[&str] = &[
    "alert",
    "eval",
    "encodeURIComponent",
    "decodeURIComponent",
    "encodeURI",
    "decodeURI",
    "escape",
    "unescape",
    "parseInt",
    "parseFloat",
    "setTimeout",
    "setInterval",
    "require",
    "import",
    "fetch",
    "jQuery",
    "$",
    "url",
    "isNaN",
    "confirm",
    "prompt",
    "Symbol",
    "String",
    "Number",
    "Boolean",
    "Object",
    "Array",
];

pub(super) fn js_code(b: &[u8], first_slash: Option<usize>) -> bool {
    if find(b, b"=>").is_some() || find(b, b"===").is_some() || find(b, b"!==").is_some() {
        return true;
    }
    if function_call(b) {
        return true;
    }
    // Declarations and operators that need a word boundary.
    if declaration(b) || new_call(b) {
        return true;
    }
    statement_start(b)
        || logical_operator(b)
        || statement_punctuation(b)
        // Method calls and receivers before the first `/` (after it, `St._Louis_(city)` is a path).
        || head_call(&b[..first_slash.unwrap_or(b.len())])
        || receiver_after_punctuation(b)
}

/// Starts with a statement keyword: `return `, `typeof `, `if(`, `else{`, …
fn statement_start(b: &[u8]) -> bool {
    [
        &b"return "[..],
        b"typeof ",
        b"void ",
        b"throw ",
        b"await ",
        b"delete ",
        b"if(",
        b"if (",
        b"for(",
        b"for (",
        b"while(",
        b"switch(",
        b"else{",
        b"else ",
    ]
    .iter()
    .any(|kw| b.starts_with(kw))
}

/// `&&` / `||` next to code punctuation (`?q=a&&b` is a query, not code).
fn logical_operator(b: &[u8]) -> bool {
    for op in [&b"&&"[..], b"||"] {
        let mut i = 0;
        while let Some(off) = find(&b[i..], op) {
            let p = i + off;
            let before = if p == 0 { None } else { Some(b[p - 1]) };
            let after = b.get(p + 2).copied();
            let codey = |c: Option<u8>| {
                // Not the end of the text: canonicalization may remove what followed (an empty
                // or tracking parameter), and a candidate and its canonical form must agree.
                matches!(c, Some(b'(' | b')' | b'!' | b'\'' | b'"' | b' ' | b'$'))
            };
            if codey(before) || codey(after) {
                return true;
            }
            i = p + 2;
        }
    }
    false
}

/// Statement and call punctuation that URLs do not contain: `){`, `};`, `('`, `'+`, …
fn statement_punctuation(b: &[u8]) -> bool {
    for pat in [
        &b"){"[..],
        b"}(",
        b";}",
        b"};",
        b");",
        b"')",
        b"\")",
        b"('",
        b"(\"",
        b"'+",
        b"+'",
        b"\"+",
        b"+\"",
        b"](",
        b").",
    ] {
        if let Some(p) = find(b, pat) {
            // `).` only counts before a call: `).then(`, not `(v=vs.85).aspx`.
            if pat == b")." {
                let c = ident_chain(&b[p + 2..]);
                if c.count == 0 || b.get(p + 2 + c.end) != Some(&b'(') {
                    continue;
                }
            }
            return true;
        }
    }
    false
}

/// A method call (`.select(`) or a known global's call (`alert(1)`) in `head`.
fn head_call(head: &[u8]) -> bool {
    let mut i = 0;
    while let Some(off) = crate::url::find_byte(b'(', &head[i..]) {
        let p = i + off;
        // Walk back over the identifier before `(`.
        let mut s = p;
        while s > 0 && is_ident(head[s - 1]) {
            s -= 1;
        }
        if s < p {
            let name = std::str::from_utf8(&head[s..p]).unwrap_or("");
            let dotted = s > 0 && head[s - 1] == b'.';
            if dotted && is_ident_start(head[s]) {
                return true; // `.select(`
            }
            if (s == 0 || is_js_punct(head[s - 1])) && JS_CALLS.contains(&name) {
                return true; // `alert(1)`
            }
        }
        i = p + 1;
    }
    false
}

/// A receiver after JS punctuation: `(document.head`, `;window.location` (needs a `.`).
fn receiver_after_punctuation(b: &[u8]) -> bool {
    if crate::url::find_byte(b'.', b).is_none() {
        return false;
    }
    b.iter().enumerate().any(|(p, &c)| {
        if !is_js_punct(c) {
            return false;
        }
        let chain = ident_chain(&b[p + 1..]);
        chain.count >= 2 && JS_RECEIVERS.iter().any(|r| r.as_bytes() == chain.first)
    })
}

/// `function(` / `function name(` with a word boundary.
pub(super) fn function_call(b: &[u8]) -> bool {
    let mut i = 0;
    while let Some(off) = find(&b[i..], b"function") {
        let p = i + off;
        let boundary = p == 0 || !is_ident(b[p - 1]);
        let mut j = p + 8;
        let spaces = b[j..].iter().take_while(|c| **c == b' ').count();
        j += spaces;
        // `function_with_x(` is an identifier; `function foo(` needs the space.
        if spaces > 0 {
            j += b[j..].iter().take_while(|c| is_ident(**c)).count();
        }
        if boundary && b.get(j) == Some(&b'(') {
            return true;
        }
        i = p + 8;
    }
    false
}

/// `var x =`, `let y = 1;`, `const z=` with word boundaries.
pub(super) fn declaration(b: &[u8]) -> bool {
    for kw in [&b"var"[..], b"let", b"const"] {
        let mut i = 0;
        while let Some(off) = find(&b[i..], kw) {
            let p = i + off;
            i = p + kw.len();
            if p > 0 && is_ident(b[p - 1]) {
                continue;
            }
            let mut j = p + kw.len();
            let ws = b[j..].iter().take_while(|c| **c == b' ').count();
            if ws == 0 {
                continue;
            }
            j += ws;
            let id = b[j..].iter().take_while(|c| is_ident(**c)).count();
            if id == 0 || !is_ident_start(b[j]) {
                continue;
            }
            j += id;
            j += b[j..].iter().take_while(|c| **c == b' ').count();
            if matches!(b.get(j), Some(b'=' | b';' | b',')) {
                return true;
            }
        }
    }
    false
}

/// `new Date()`, `new Foo.Bar(`.
pub(super) fn new_call(b: &[u8]) -> bool {
    let mut i = 0;
    while let Some(off) = find(&b[i..], b"new ") {
        let p = i + off;
        i = p + 4;
        if p > 0 && is_ident(b[p - 1]) {
            continue;
        }
        let c = ident_chain(&b[p + 4..]);
        if c.count > 0 && b.get(p + 4 + c.end) == Some(&b'(') {
            return true;
        }
    }
    false
}
