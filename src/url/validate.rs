//! The junk-URL validator: "reject only what is certainly junk" (seed 000, v2.0 blacklist).
//!
//! A crawler's link extractor returns strings that are URLs, and strings that merely sit where a URL
//! could be: JavaScript fragments caught by LinkFinder-style regexes, HTML tags, template
//! placeholders, CSS values, MIME types. [`Validator::check`] rejects the second kind with a stable
//! [`Reason`] and lets everything else through: a real page must never be rejected, so every rule
//! here is one that a URL a browser would really fetch cannot match (the doc comment of each rule
//! says why).
//!
//! Rules run cheapest first and stop at the first match. Everything is a hand-written byte scan
//! with no regex and no allocation: the whole check averages well under 150 ns on the real
//! candidate corpus (see `benches/gate_core.rs`).
//!
//! Where this differs from the seed's reference implementation (GogoSpider's SmartURLValidator),
//! deliberately, fixing its bugs:
//! * `http://host/`, `/?page=2`, `/`, `./`, `../` pass (it rejected root URLs as "pure symbols");
//! * `document.` / `window.` inside a path (`/files/document.pdf`) pass: only JS receivers at the
//!   start of a dotted identifier chain, or after JS punctuation, count as code;
//! * protocol-relative `//cdn.host/lib.js` passes: `//` is a comment only when followed by a space;
//! * percent-encoded UTF-8 text (`/wiki/%E7%BD%91%E7%BB%9C`) does not count towards the encoding
//!   ratio, nor do encoded delimiters of nested URLs (`?u=https%3A%2F%2F...`);
//! * CSS words match the whole candidate only (`left-nav.html`, `auto-login.php` pass);
//! * `&&` in a query (`?q=a&&b`) passes: it is code only next to `(`, `)`, `!`, quotes or spaces;
//! * rejected, though it let them through: `/undefined`, `/null`, `/[object Object]`, `/${path}/x`,
//!   `/posts/{id}`, `e.target.value`, `this.props.url`, `new Date()`, MIME-type paths below any
//!   prefix (`/AJAX/text/xml`, `/application/x-shockwave-flash`).

use std::borrow::Cow;

use super::lex::scheme_of;
use super::reason::Reason;

/// A named bundle of thresholds (`--profile`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Maximum collection: long URLs allowed, encoding ratio 0.5.
    Loose,
    /// The default: balanced for most crawls.
    #[default]
    Standard,
    /// Higher precision: short URLs only, encoding ratio 0.3, no raw whitespace.
    Strict,
}

/// Every threshold of the validator. Start from [`ValidatorConfig::from_profile`] and override.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ValidatorConfig {
    /// Longest accepted candidate, in bytes after trimming. Loose 8192, standard 2048 (the
    /// sitemap protocol's and most CDNs' limit), strict 500 (the seed's "standard").
    pub max_len: usize,
    /// Largest accepted share of the candidate made of needless `%XX` escapes of ASCII
    /// characters (encoded UTF-8 text and encoded delimiters do not count). Seed: 0.5/0.4/0.3.
    pub encoding_ratio: f64,
    /// Reject candidates with raw spaces inside (strict only: real hrefs do contain spaces).
    pub reject_whitespace: bool,
    /// Schemes that a fetcher loads; any other explicit scheme is `non_fetchable_scheme`.
    pub fetchable_schemes: Vec<String>,
}

impl Default for ValidatorConfig {
    fn default() -> Self {
        Self::from_profile(Profile::Standard)
    }
}

impl ValidatorConfig {
    /// The thresholds of a profile.
    pub fn from_profile(p: Profile) -> Self {
        let (max_len, encoding_ratio, reject_whitespace) = match p {
            Profile::Loose => (8192, 0.5, false),
            Profile::Standard => (2048, 0.4, false),
            Profile::Strict => (500, 0.3, true),
        };
        ValidatorConfig {
            max_len,
            encoding_ratio,
            reject_whitespace,
            fetchable_schemes: vec!["http".into(), "https".into()],
        }
    }

    /// Check the values; called by [`Validator::new`].
    pub fn validate(&self) -> Result<(), String> {
        if self.max_len == 0 {
            return Err("max_len must be at least 1".into());
        }
        if !(self.encoding_ratio > 0.0 && self.encoding_ratio <= 1.0) {
            return Err(format!(
                "encoding_ratio must be in (0, 1], got {}",
                self.encoding_ratio
            ));
        }
        if self.fetchable_schemes.is_empty() {
            return Err("fetchable_schemes must name at least one scheme".into());
        }
        Ok(())
    }
}

/// The junk validator. Cheap to clone, `Send + Sync`, no interior state.
#[derive(Debug, Clone, Default)]
pub struct Validator {
    cfg: ValidatorConfig,
}

// ---- byte classes -------------------------------------------------------------------------------

const fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}
const fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}
const fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Bytes after which a JS receiver (`window.`) or call is code, not a path: JS punctuation.
const fn is_js_punct(b: u8) -> bool {
    matches!(
        b,
        b'(' | b')'
            | b'{'
            | b'}'
            | b';'
            | b','
            | b'='
            | b'!'
            | b'&'
            | b'|'
            | b'+'
            | b' '
            | b'?'
            | b':'
            | b'['
    )
}

/// Leading bytes that no URL reference starts with but JavaScript fragments cut out between
/// quotes do (`),t.focus(`, `,r=this`, `!==t.type`, `+o.substring(`).
const fn is_js_leading(b: u8) -> bool {
    matches!(
        b,
        b')' | b','
            | b';'
            | b'}'
            | b']'
            | b'!'
            | b'+'
            | b'='
            | b'|'
            | b'&'
            | b'*'
            | b'^'
            | b'('
            | b'{'
            | b':'
            | b'\''
            | b'"'
            | b'`'
            | b'>'
            | b'\\'
            | b'$'
    )
}

/// Facts gathered by the single scan over the candidate.
#[derive(Default)]
struct Scan {
    /// A letter, digit or non-ASCII character, counting `%XX` escapes by what they decode to.
    has_alnum: bool,
    has_control: bool,
    has_space: bool,
    /// Bytes of needless escapes (ASCII other than delimiters; invalid UTF-8 sequences).
    suspicious_escape_bytes: usize,
    /// `%` not followed by two hex digits.
    bad_escapes: usize,
    /// Any byte of `(){}<>'"$;!|*`[]\` or a space, or `=>`, `==`, `&&` (gates the slower rules).
    has_code_punct: bool,
    first_slash: Option<usize>,
    /// A `:` occurs (gates the `/:id` placeholder rule).
    has_colon: bool,
    /// An escaped space or tab (`%20`, `%09`) occurs.
    has_escaped_space: bool,
    /// An escape of an unreserved character (`%2E`, `%41`) occurs: canonicalization decodes it.
    has_unreserved_escape: bool,
    /// Some byte that [`is_code_byte`] counts occurs (else no head can hold code).
    has_head_code: bool,
}

// Byte classes of the scan table.
const C_ALNUM: u8 = 1;
const C_CONTROL: u8 = 2;
const C_SPACE: u8 = 4;
const C_CODE: u8 = 8;
const C_SPECIAL: u8 = 16; // `%`, `=`, `&`: need a look at the neighbours
const C_COLON: u8 = 32;
const C_SLASH: u8 = 64;
const C_HEADCODE: u8 = 128; // `,`, `+`, `=`: code in a head, ordinary in a query

const fn class_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = if b.is_ascii_alphanumeric() || b >= 0x80 {
            C_ALNUM
        } else if b == b' ' || b == b'\t' {
            C_SPACE | C_CODE
        } else if b == b':' {
            C_COLON
        } else if b == b'/' {
            C_SLASH
        } else if b < 0x20 || b == 0x7f {
            C_CONTROL
        } else if matches!(
            b,
            b'(' | b')'
                | b'{'
                | b'}'
                | b'<'
                | b'>'
                | b'\''
                | b'"'
                | b'$'
                | b';'
                | b'!'
                | b'|'
                | b'*'
                | b'`'
                | b'['
                | b']'
                | b'\\'
        ) {
            C_CODE
        } else if b == b'=' {
            C_SPECIAL | C_HEADCODE
        } else if matches!(b, b'%' | b'&') {
            C_SPECIAL
        } else if matches!(b, b',' | b'+') {
            C_HEADCODE
        } else {
            0
        };
        i += 1;
    }
    t
}

static CLASS: [u8; 256] = class_table();

/// An escape of this ASCII character is needless or abnormal: unreserved characters never need
/// escaping (canonicalization decodes them), controls never belong in a URL. Escapes of reserved
/// delimiters and of characters that must be escaped (space, `"`, `<`, backtick, ...) are normal:
/// the canonicalizer writes them itself, and its output must pass this validator.
const fn needless_escape(v: u8) -> bool {
    v.is_ascii_alphanumeric() || matches!(v, b'-' | b'.' | b'_' | b'~') || v < 0x20 || v == 0x7f
}

fn scan(s: &[u8]) -> Scan {
    let mut sc = Scan::default();
    let mut classes = 0u8;
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        let c = CLASS[b as usize];
        classes |= c;
        if c & C_SPECIAL != 0 {
            match b {
                b'%' => {
                    if let (Some(h), Some(l)) = (
                        s.get(i + 1).and_then(|&c| hex_val(c)),
                        s.get(i + 2).and_then(|&c| hex_val(c)),
                    ) {
                        i = scan_escape(s, i, h * 16 + l, &mut sc);
                        continue;
                    }
                    sc.bad_escapes += 1;
                }
                b'=' => {
                    if matches!(s.get(i + 1), Some(b'>' | b'=')) {
                        sc.has_code_punct = true;
                    }
                }
                _ => {
                    if s.get(i + 1) == Some(&b'&') {
                        sc.has_code_punct = true;
                    }
                }
            }
        }
        i += 1;
    }
    sc.has_alnum |= classes & C_ALNUM != 0;
    sc.has_control = classes & C_CONTROL != 0;
    sc.has_space = classes & C_SPACE != 0;
    sc.has_code_punct |= classes & C_CODE != 0;
    sc.has_colon = classes & C_COLON != 0;
    sc.has_head_code = classes & (C_CODE | C_HEADCODE) != 0;
    sc.first_slash = if classes & C_SLASH != 0 {
        super::find_byte(b'/', s)
    } else {
        None
    };
    sc
}

/// One `%XX` escape (value `v`) at `i`, or a run of high-byte escapes; returns the next index.
fn scan_escape(s: &[u8], i: usize, v: u8, sc: &mut Scan) -> usize {
    if v < 0x80 {
        if v.is_ascii_alphanumeric() {
            sc.has_alnum = true;
        }
        if v.is_ascii_alphanumeric() || matches!(v, b'-' | b'.' | b'_' | b'~') {
            sc.has_unreserved_escape = true;
        }
        if needless_escape(v) && v != b'\t' {
            sc.suspicious_escape_bytes += 3;
        }
        if v == b' ' || v == b'\t' {
            sc.has_escaped_space = true;
        }
        return i + 3;
    }
    // A run of high-byte escapes: fine where it decodes to UTF-8 text.
    let mut i = i;
    let mut buf = [0u8; 64];
    let mut n = 0;
    while i + 2 < s.len() && s[i] == b'%' {
        match (hex_val(s[i + 1]), hex_val(s[i + 2])) {
            (Some(h), Some(l)) if h >= 8 => {
                if n < buf.len() {
                    buf[n] = h * 16 + l;
                }
                n += 1;
                i += 3;
            }
            _ => break,
        }
    }
    if n > buf.len() {
        sc.has_alnum = true; // long encoded text is trusted
        return i;
    }
    // Only the bytes that are not UTF-8 count, so that a stray `%DE` costs the same whether the
    // text after it is raw or (as canonicalization writes it) escaped too.
    let (mut rest, mut invalid, mut valid) = (&buf[..n], 0, false);
    loop {
        match std::str::from_utf8(rest) {
            Ok(v) => {
                valid |= !v.is_empty();
                break;
            }
            Err(e) => {
                valid |= e.valid_up_to() > 0;
                let bad = e.error_len().unwrap_or(rest.len() - e.valid_up_to());
                invalid += bad;
                rest = &rest[e.valid_up_to() + bad..];
            }
        }
    }
    sc.has_alnum |= valid;
    sc.suspicious_escape_bytes += invalid * 3;
    i
}

// ---- word lists ---------------------------------------------------------------------------------

/// Receivers whose member access is JavaScript, not a file name (`window.location.href`).
const JS_RECEIVERS: &[&str] = &[
    "window",
    "document",
    "console",
    "this",
    "self",
    "globalThis",
    "navigator",
    "location",
    "localStorage",
    "sessionStorage",
    "history",
    "Math",
    "JSON",
    "Object",
    "Array",
    "Promise",
    "String",
    "Number",
    "Reflect",
    "Symbol",
    "module",
    "exports",
    "process",
    "props",
    "state",
    "event",
    "evt",
    "jQuery",
    "React",
    "Vue",
];

/// Extensions and TLDs that end a dotted chain which is a file or host name (`document.pdf`).
const NAME_ENDINGS: &[&str] = &[
    "html", "htm", "shtml", "xhtml", "php", "asp", "aspx", "jsp", "jspx", "do", "action", "cgi",
    "pl", "py", "rb", "js", "mjs", "cjs", "css", "json", "xml", "txt", "md", "pdf", "doc", "docx",
    "xls", "xlsx", "ppt", "pptx", "odt", "rtf", "csv", "zip", "gz", "tgz", "bz2", "xz", "rar",
    "7z", "tar", "jpg", "jpeg", "png", "gif", "svg", "webp", "ico", "bmp", "avif", "mp3", "mp4",
    "webm", "ogg", "wav", "avi", "mov", "woff", "woff2", "ttf", "otf", "eot", "map", "wasm", "swf",
    "apk", "exe", "dmg", "msi", "deb", "rpm", "iso", "img", "bin", "com", "net", "org", "io", "cn",
    "de", "uk", "jp", "ru", "fr", "it", "nl", "es", "info", "co", "me", "tv", "us", "edu", "gov",
    "app", "dev",
];

/// Whole-candidate JavaScript keywords, literals and well-known globals (case-sensitive).
const JS_KEYWORDS: &[&str] = &[
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "export",
    "extends",
    "finally",
    "for",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "let",
    "new",
    "return",
    "super",
    "switch",
    "this",
    "throw",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
    "await",
    "async",
    "null",
    "undefined",
    "true",
    "false",
    "NaN",
    "Infinity",
    "prototype",
    "constructor",
    "arguments",
    "window",
    "document",
    "console",
    "length",
    "toString",
    "valueOf",
    "hasOwnProperty",
    "use strict",
    "[object Object]",
];

/// Whole-candidate CSS property names and keyword values (ASCII case-insensitive).
const CSS_KEYWORDS: &[&str] = &[
    "align-items",
    "animation",
    "background",
    "background-color",
    "background-image",
    "background-position",
    "background-size",
    "border",
    "border-bottom",
    "border-color",
    "border-left",
    "border-radius",
    "border-right",
    "border-top",
    "border-width",
    "bottom",
    "box-shadow",
    "box-sizing",
    "clear",
    "color",
    "cursor",
    "display",
    "flex",
    "flex-direction",
    "float",
    "font",
    "font-family",
    "font-size",
    "font-style",
    "font-weight",
    "height",
    "justify-content",
    "left",
    "letter-spacing",
    "line-height",
    "list-style",
    "margin",
    "margin-bottom",
    "margin-left",
    "margin-right",
    "margin-top",
    "max-height",
    "max-width",
    "min-height",
    "min-width",
    "opacity",
    "outline",
    "overflow",
    "overflow-x",
    "overflow-y",
    "padding",
    "padding-bottom",
    "padding-left",
    "padding-right",
    "padding-top",
    "pointer-events",
    "position",
    "right",
    "text-align",
    "text-decoration",
    "text-transform",
    "top",
    "transform",
    "transition",
    "vertical-align",
    "visibility",
    "white-space",
    "width",
    "word-break",
    "word-wrap",
    "z-index",
    "none",
    "auto",
    "inherit",
    "initial",
    "unset",
    "block",
    "inline",
    "inline-block",
    "inline-flex",
    "grid",
    "absolute",
    "relative",
    "fixed",
    "sticky",
    "static",
    "hidden",
    "visible",
    "solid",
    "dashed",
    "dotted",
    "transparent",
    "bold",
    "normal",
    "italic",
    "nowrap",
    "pointer",
    "underline",
    "uppercase",
    "lowercase",
    "center",
    "middle",
    "baseline",
    "ease",
    "ease-in",
    "ease-out",
    "ease-in-out",
    "linear",
    "scroll",
    "both",
    "contain",
    "cover",
    "no-repeat",
    "repeat",
    "sans-serif",
    "serif",
    "monospace",
    "important",
    "!important",
    "currentcolor",
];

const CSS_UNITS: &[&str] = &[
    "px", "em", "rem", "vh", "vw", "vmin", "vmax", "pt", "pc", "ex", "ch", "deg", "rad", "ms", "s",
    "fr", "%",
];

const MIME_TYPES: &[&str] = &[
    "application",
    "text",
    "image",
    "audio",
    "video",
    "font",
    "multipart",
    "message",
    "model",
];

/// Registered subtypes (base part, before any `+suffix`) that appear as bogus paths.
const MIME_SUBTYPES: &[&str] = &[
    "json",
    "xml",
    "html",
    "plain",
    "javascript",
    "ecmascript",
    "css",
    "csv",
    "octet-stream",
    "pdf",
    "zip",
    "gzip",
    "form-data",
    "jpeg",
    "jpg",
    "png",
    "gif",
    "webp",
    "svg",
    "bmp",
    "tiff",
    "ico",
    "avif",
    "heic",
    "mpeg",
    "mp4",
    "webm",
    "ogg",
    "wav",
    "mp3",
    "aac",
    "flac",
    "opus",
    "midi",
    "quicktime",
    "3gpp",
    "woff",
    "woff2",
    "ttf",
    "otf",
    "sfnt",
    "collection",
    "rtf",
    "msword",
    "wasm",
    "ld",
    "rss",
    "atom",
    "xhtml",
    "graphql",
    "protobuf",
    "markdown",
    "event-stream",
    "mixed",
    "alternative",
    "related",
    "byteranges",
    "rfc822",
    "http",
    "partial",
    "problem",
    "manifest",
    "calendar",
    "richtext",
    "tab-separated-values",
    "vtt",
    "sql",
    "yaml",
    "toml",
    "java-archive",
    "pkcs7-mime",
    "pkcs8",
    "postscript",
    "soap",
    "xslt",
    "zstd",
    "cbor",
    "msgpack",
    "jwt",
    "jose",
    "dns-message",
    "ogg",
    "x-icon",
    "svg+xml",
];

fn eq_ignore_case_any(s: &[u8], list: &[&str]) -> bool {
    list.iter()
        .any(|w| w.len() == s.len() && w.as_bytes().eq_ignore_ascii_case(s))
}

/// Substring search for short needles in short haystacks: memchr on the first byte, then a
/// compare. (`memmem::find` builds a searcher per call, which costs more than a URL's scan.)
#[inline]
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut i = 0;
    while let Some(off) = super::find_byte(first, &hay[i..]) {
        let p = i + off;
        if hay[p + 1..].starts_with(rest) {
            return Some(p);
        }
        i = p + 1;
    }
    None
}

impl Validator {
    /// A validator with the given thresholds (checked).
    pub fn new(cfg: ValidatorConfig) -> Result<Self, String> {
        cfg.validate()?;
        Ok(Validator { cfg })
    }

    /// A validator for a named profile.
    pub fn with_profile(p: Profile) -> Self {
        Validator {
            cfg: ValidatorConfig::from_profile(p),
        }
    }

    /// The thresholds in force.
    pub fn config(&self) -> &ValidatorConfig {
        &self.cfg
    }

    /// Check raw bytes (a line as read): invalid UTF-8 is a reason, never a panic.
    /// On success returns the trimmed candidate.
    pub fn check_bytes<'a>(&self, raw: &'a [u8]) -> Result<Cow<'a, str>, Reason> {
        let s = std::str::from_utf8(raw).map_err(|_| Reason::InvalidUtf8)?;
        let t = clean(s);
        self.check_trimmed(&t)?;
        Ok(t)
    }

    /// Check one candidate. `Ok(())` means "not certainly junk": pass it on.
    pub fn check(&self, raw: &str) -> Result<(), Reason> {
        self.check_trimmed(&clean(raw))
    }

    fn check_trimmed(&self, s: &str) -> Result<(), Reason> {
        let b = s.as_bytes();
        if b.is_empty() {
            return Err(Reason::Empty);
        }
        if b.len() > self.cfg.max_len {
            return Err(Reason::TooLong);
        }
        let sc = scan(b);
        // `https:x` (no `//`) is, against an https base, the relative path `x` (WHATWG): it must
        // pass as that path too, or its canonical form `…/dir/x` could be rejected.
        // (Needs a `:`, which the scan reports.)
        if let Some(sch) = if sc.has_colon { scheme_of(b) } else { None } {
            let rest = &s[sch.len() + 1..];
            let rb = rest.as_bytes();
            if matches!(sch.to_ascii_lowercase().as_slice(), b"http" | b"https")
                && !matches!(rb, [b'/' | b'\\', b'/' | b'\\', ..])
                && !rb.is_empty()
            {
                let path = if matches!(rb[0], b'/' | b'\\') {
                    rest.to_owned()
                } else {
                    format!("/{rest}")
                };
                self.check_trimmed(&path)?;
            }
        }
        // `;jsessionid=...` goes in canonicalization, which can join what was around it
        // (`**;jsessionid=1/x` → `**/x`, a comment marker): judge that path too.
        // (`;` is code punctuation, which the scan reports.)
        if sc.has_code_punct && super::find_byte(b';', b).is_some() {
            let q = super::find_byte(b'?', b).unwrap_or(b.len());
            if let Some(path) = super::lex::strip_session_params(&s[..q]) {
                self.check_trimmed(&format!("{path}{}", &s[q..]))?;
            }
        }
        if sc.has_unreserved_escape {
            // Judge the text canonicalization will produce, with the escape ratio of the original.
            if let Some(decoded) = super::lex::decode_unreserved(s) {
                let mut sc2 = scan(decoded.as_bytes());
                sc2.suspicious_escape_bytes = sc.suspicious_escape_bytes;
                sc2.bad_escapes = sc.bad_escapes;
                return self.rules(&decoded, sc2, b.len());
            }
        }
        self.rules(s, sc, b.len())
    }

    /// The rules, on `s` as canonicalization will read it; `orig_len` is the length the
    /// escape ratio is measured against.
    fn rules(&self, s: &str, sc: Scan, orig_len: usize) -> Result<(), Reason> {
        let b = s.as_bytes();
        if sc.has_control {
            return Err(Reason::ControlChars);
        }
        let scheme = scheme_of(b);
        if let Some(sch) = scheme {
            if !self
                .cfg
                .fetchable_schemes
                .iter()
                .any(|f| f.as_bytes().eq_ignore_ascii_case(sch))
            {
                return Err(Reason::NonFetchableScheme);
            }
        }
        if !sc.has_alnum {
            return if is_dot_slash_path(b) {
                Ok(())
            } else {
                Err(Reason::PureSymbols)
            };
        }
        if b[0] == b'#' {
            return Err(if is_hex_color(&b[1..]) {
                Reason::ColorValue
            } else {
                Reason::FragmentOnly
            });
        }
        // Colour and CSS functions all hold a `(` (code punctuation): skip the prefix lists
        // otherwise.
        if sc.has_code_punct && b[0].is_ascii_alphabetic() {
            if starts_with_ignore_case(b, b"rgb(")
                || starts_with_ignore_case(b, b"rgba(")
                || starts_with_ignore_case(b, b"hsl(")
                || starts_with_ignore_case(b, b"hsla(")
            {
                return Err(Reason::ColorValue);
            }
            if starts_with_css_function(b) {
                return Err(Reason::CssValue);
            }
        }
        if is_js_leading(b[0]) {
            // `{{x}}` and `${x}` start like code but are templates: name them as such.
            return Err(template_syntax(b).unwrap_or(Reason::JsFragment));
        }
        // `clean` already removed the fragment and an empty query: canonicalization drops both,
        // so what is judged is what is fetched.
        // A query may legitimately hold code-like text (playground links, `?search=Vec<T>`): when
        // the part before it is a clean path, only unmistakable code markers count there.
        let head_end = super::find_byte(b'?', b).unwrap_or(b.len());
        let (head, tail) = b.split_at(head_end);
        let split = scheme.is_some()
            || !(head.is_empty() || sc.has_head_code && head.iter().any(|&c| is_code_byte(c)));

        let ruled = if split { head } else { b };
        // A head ending in a call's open parenthesis: `createElement(` (judged on the head for
        // relative and absolute candidates alike, so a candidate and its canonical form agree).
        if ends_open_paren(head) || ends_open_paren(ruled) {
            return Err(Reason::JsCode);
        }
        if sc.has_colon && path_placeholder(ruled) {
            return Err(Reason::TemplateSyntax);
        }
        if sc.has_code_punct {
            if let Some(r) = code_rules(ruled, scheme.is_some()) {
                return Err(r);
            }
            if split {
                if let Some(r) = strong_code_markers(tail) {
                    return Err(r);
                }
            }
        }
        // Every comment marker holds `*`, `<`, `>` or whitespace: all code punctuation.
        if sc.has_code_punct {
            if let Some(r) = comment_marker(ruled) {
                return Err(r);
            }
        }
        if scheme.is_none() && js_dotted_chain(b) {
            return Err(Reason::JsCode);
        }
        if scheme.is_none() && encoded_blob(b) {
            return Err(Reason::EncodedBlob);
        }
        // One walk over the path's segments for the artifact and MIME rules. (The keyword and
        // number rules below need a candidate without `/`, these need one: order is moot.)
        // A relative candidate is a path even without a `/` (it resolves to `…/dir/it`).
        if sc.first_slash.is_some() || scheme.is_none() {
            if let Some(r) = path_rules(path_of(b, scheme)) {
                return Err(r);
            }
        }
        // Keywords are short and have no `/`, `.` or `:`; most URLs skip the word lists.
        if b.len() <= 24
            && sc.first_slash.is_none()
            && scheme.is_none()
            && super::find_byte2(b'.', b':', b).is_none()
        {
            if JS_KEYWORDS.iter().any(|w| w.as_bytes() == b) {
                return Err(Reason::JsKeyword);
            }
            if eq_ignore_case_any(b, CSS_KEYWORDS) {
                return Err(Reason::CssKeyword);
            }
        }
        if let Some(r) = number_like(b) {
            return Err(r);
        }
        if matches!(b[0], b'0'..=b'9' | b'-' | b'+' | b'.') && number_list(b) {
            return Err(Reason::BareNumber);
        }
        if sc.bad_escapes >= 2 {
            return Err(Reason::BadPercentEncoding);
        }
        let mut suspicious = sc.suspicious_escape_bytes;
        if sc.has_space || sc.has_escaped_space {
            suspicious += whitespace_run_bytes(b);
        }
        if suspicious as f64 > self.cfg.encoding_ratio * orig_len as f64 {
            return Err(Reason::EncodingRatio);
        }
        if self.cfg.reject_whitespace && sc.has_space {
            return Err(Reason::Whitespace);
        }
        Ok(())
    }
}

/// Trim what the WHATWG parser trims at the ends: ASCII whitespace (C0 controls other than
/// whitespace are kept, so that they are reported).
fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c'))
}

/// What the validator and the canonicalizer look at: [`trim`]med, tabs and newlines removed (as
/// the WHATWG parser does), then extraction residue removed
/// — trailing backslashes (JS string escapes), single quotes and `>` (`<https://x/issue/1>`); and,
/// for an absolute URL, anything from the first `"`, `<` or backtick on
/// (`http://h/x.js"></script>` → `http://h/x.js`).
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
const K_TAB_NL: u8 = 1;
const K_BACKSLASH: u8 = 2;
const K_HASH: u8 = 4;
const K_QUESTION: u8 = 8;
const K_CUT: u8 = 16; // `"`, `<`, backtick

static CLEAN_CLASS: [u8; 256] = {
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
fn clean_stripped(s: &str, mask: u8) -> &str {
    let mut t = trim(s);
    // The fragment goes first (canonicalization drops it), so that residue before it is trailing
    // residue: `6'#x` and `6'` must clean alike. A fragment-only candidate is kept for the rules.
    if mask & K_HASH != 0 {
        if let Some(h) = super::find_byte(b'#', t.as_bytes()).filter(|&h| h > 0) {
            t = trim(&t[..h]);
        }
    }
    if mask & K_CUT == 0 {
        // nothing to cut
    } else if let Some(sch) = scheme_of(t.as_bytes()) {
        if t.as_bytes()[sch.len() + 1..].starts_with(b"//") {
            if let Some(cut) = super::find_byte3(b'"', b'<', b'`', t.as_bytes()) {
                t = trim(&t[..cut]);
            }
        }
    }
    // Then a query that canonicalization empties (`x'?`, `x?=&`), so what precedes it is trailing.
    let q = if mask & K_QUESTION != 0 {
        super::find_byte(b'?', t.as_bytes())
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
    super::trim_residue(t)
}

/// Ends in a call's open parenthesis, an empty trailing `?` or `&` aside (canonicalization
/// drops those): `createElement(`.
fn ends_open_paren(b: &[u8]) -> bool {
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'?' | b'&') {
        end -= 1;
    }
    b[..end].ends_with(b"(")
}

/// Bytes that mark a candidate's head (before `?`/`#`) as possible code rather than a path.
const fn is_code_byte(c: u8) -> bool {
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
fn code_rules(b: &[u8], absolute: bool) -> Option<Reason> {
    if let Some(r) = template_syntax(b) {
        return Some(r);
    }
    if html_tag(b) {
        return Some(Reason::HtmlTag);
    }
    // A raw backtick is a template literal's delimiter; no href carries one.
    if super::find_byte(b'`', b).is_some() {
        return Some(Reason::JsCode);
    }
    let first_slash = if absolute {
        Some(0)
    } else {
        super::find_byte(b'/', b)
    };
    js_code(b, first_slash).then_some(Reason::JsCode)
}

/// In a query or fragment, only what no real URL carries raw: arrows, strict equality,
/// declarations (raw spaces), template delimiters, script tags.
fn strong_code_markers(b: &[u8]) -> Option<Reason> {
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

/// `translate(-.3px)`, `cubic-bezier(`, `calc(`, `var(--x)`, `url(/a.png)`: CSS functions.
fn starts_with_css_function(b: &[u8]) -> bool {
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
fn encoded_blob(b: &[u8]) -> bool {
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
fn number_list(b: &[u8]) -> bool {
    b.contains(&b',')
        && b.split(|&c| c == b',')
            .all(|p| !p.is_empty() && number_like(p) == Some(Reason::BareNumber))
}

fn starts_with_ignore_case(b: &[u8], p: &[u8]) -> bool {
    b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p)
}

/// `/`, `./`, `../`, `.`, `..`, `../../` ...: real relative references without a letter.
fn is_dot_slash_path(b: &[u8]) -> bool {
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
fn whitespace_run_bytes(b: &[u8]) -> usize {
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

fn is_hex_color(b: &[u8]) -> bool {
    matches!(b.len(), 3 | 4 | 6 | 8) && b.iter().all(|c| c.is_ascii_hexdigit())
}

/// `{{x}}`, `{% x %}`, `<% x %>`, `<?php`, `${x}`, `#{x}`, `{id}` / `{0}` placeholders.
fn template_syntax(b: &[u8]) -> Option<Reason> {
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
    while let Some(off) = super::find_byte(b'$', &b[i..]) {
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
    while let Some(off) = super::find_byte(b'{', &b[i..]) {
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
fn path_placeholder(b: &[u8]) -> bool {
    memchr::memchr_iter(b':', b)
        .any(|p| p > 0 && b[p - 1] == b'/' && b.get(p + 1).is_some_and(|&c| is_ident_start(c)))
}

/// `<div`, `</a`, `<!DOCTYPE`, `<!--` (comment handled separately), `&lt;b`.
fn html_tag(b: &[u8]) -> bool {
    let mut i = 0;
    while let Some(off) = super::find_byte(b'<', &b[i..]) {
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
fn comment_marker(b: &[u8]) -> Option<Reason> {
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
struct Chain<'a> {
    count: usize,
    first: &'a [u8],
    last: &'a [u8],
    min_tail_len: usize,
    end: usize,
}

fn ident_chain(b: &[u8]) -> Chain<'_> {
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
fn js_dotted_chain(b: &[u8]) -> bool {
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
    let first = std::str::from_utf8(c.first).unwrap_or("");
    let last = std::str::from_utf8(c.last).unwrap_or("");
    let last_is_name = NAME_ENDINGS.iter().any(|e| e.eq_ignore_ascii_case(last));
    if JS_RECEIVERS.contains(&first) {
        return c.count >= 3 || c.end < b.len() || !last_is_name;
    }
    // Minified receivers (`e.target.value`, `t.data.id`): one letter, three or more links, and a
    // JS-looking tail rather than a host or file name.
    first.len() == 1 && c.count >= 3 && !last_is_name && c.min_tail_len > 1
}

/// Known global functions whose call is code wherever it appears without a path before it.
const JS_CALLS: &[&str] = &[
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

fn js_code(b: &[u8], first_slash: Option<usize>) -> bool {
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
    for kw in [
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
    ] {
        if b.starts_with(kw) {
            return true;
        }
    }
    // `&&` / `||` next to code punctuation (`?q=a&&b` is a query, not code).
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
    // Statement and call punctuation that URLs do not contain.
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

    // Method calls and receivers before the first `/` (after it, `St._Louis_(city)` is a path).
    let head = &b[..first_slash.unwrap_or(b.len())];
    let mut i = 0;
    while let Some(off) = super::find_byte(b'(', &head[i..]) {
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
    // A receiver after JS punctuation: `(document.head`, `;window.location` (needs a `.`).
    if super::find_byte(b'.', b).is_none() {
        return false;
    }
    for (p, &c) in b.iter().enumerate() {
        if is_js_punct(c) {
            let rest = &b[p + 1..];
            let chain = ident_chain(rest);
            if chain.count >= 2 && JS_RECEIVERS.iter().any(|r| r.as_bytes() == chain.first) {
                return true;
            }
        }
    }
    false
}

/// `function(` / `function name(` with a word boundary.
fn function_call(b: &[u8]) -> bool {
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
fn declaration(b: &[u8]) -> bool {
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
fn new_call(b: &[u8]) -> bool {
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

/// A path segment that is a JS value printed into a URL: `undefined`, `null`, `[object Object]`
/// (raw or percent-encoded). `NaN` and `Null` are not: both are real Wikipedia articles.
fn is_artifact(seg: &[u8]) -> bool {
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
fn path_rules(path: &[u8]) -> Option<Reason> {
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
fn path_of<'a>(b: &'a [u8], scheme: Option<&[u8]>) -> &'a [u8] {
    let mut path = b;
    if let Some(sch) = scheme {
        let rest = &b[sch.len() + 1..];
        if let Some(auth) = rest.strip_prefix(b"//") {
            path = match super::find_byte(b'/', auth) {
                Some(q) => &auth[q..],
                None => return &[],
            };
        }
    }
    &path[..super::find_byte(b'?', path).unwrap_or(path.len())]
}

/// `123`, `-0.5`, `1e3` → bare number; `12px`, `1.5em`, `100%` → CSS value.
fn number_like(b: &[u8]) -> Option<Reason> {
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
fn mime_type(ty: &[u8], sub: &[u8]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn v() -> Validator {
        Validator::default()
    }

    #[track_caller]
    fn pass(s: &str) {
        assert_eq!(v().check(s), Ok(()), "{s:?} should pass");
    }

    #[track_caller]
    fn reject(s: &str, r: Reason) {
        assert_eq!(v().check(s), Err(r), "{s:?} should be rejected as {r}");
    }

    #[test]
    fn reference_false_rejections_now_pass() {
        // Every URL the seed's reference implementation wrongly rejected.
        for s in [
            "http://host/",
            "http://example.com/?page=2",
            "/?page=2",
            "/",
            "./",
            "../",
            "../../",
            "/files/document.pdf",
            "http://example.com/window.open/help",
            "//cdn.host/lib.js",
            "/wiki/%E7%BD%91%E7%BB%9C",
            "https://zh.wikipedia.org/wiki/%E7%BD%91%E7%BB%9C%E7%88%AC%E8%99%AB",
            "left-nav.html",
            "auto-login.php",
            "color-picker.js",
            "/search?q=a&&b",
            "?q=a&&b",
            "/%E4%B8%AD%E6%96%87",
            "document.pdf",
            "window.com",
            "http://example.com/St._Louis_(disambiguation)",
            "/wiki/Python_(programming_language)",
            "https://example.com/r?u=https%3A%2F%2Fexample.org%2Fa%3Fb%3D1",
            "localhost:8080/api",
            "www.example.com",
            "docs.python.org/3/library/",
            "/path with space.pdf",
            "/sale-50%-off",
            "/a,b,c",
            "/x;jsessionid=ABC",
            "/v1",
            "/123",
            "/text/editor",
            "/application_list",
            "/video/123?autoplay=1",
            // From the real corpus: code in a query is the page's content, not junk.
            "https://play.rust-lang.org/?code=%23!%5Ballow(unused)%5D%0Afn+main()+%7B%0A++++assert_eq!(i8::BITS,+8);%0A%7D&edition=2024",
            "../../std/vec/struct.Vec.html?search=option<T>%2C+(fnonce+(T)+->+bool)+->+option<T>&filter-crate=std",
            "https://en.wikipedia.org/wiki/NaN#Floating_point",
            "https://play.rust-lang.org/?code=fn+main()+%7B%0A++++let+mut+function_with_closure(1);%0A%7D",
            "https://play.rust-lang.org/?code=fn+main()+%7B%0A++++assert_eq!(function(),+0);%0A%7D&edition=2024",
            "https://msdn.microsoft.com/en-us/library/aa364428(v=vs.85).aspx",
            "https://intel.com/intrinsics-guide/index.html#text=_mm512_cvt_roundph_epu16",
            "/reset/Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXhxdXV4cXV1eA",
        ] {
            pass(s);
        }
    }

    #[test]
    fn reference_false_acceptances_now_rejected() {
        reject("/undefined", Reason::JsArtifact);
        reject("/null", Reason::JsArtifact);
        reject("/null/", Reason::JsArtifact);
        reject("/application/json/", Reason::MimeType);
        reject("/[object Object]", Reason::JsArtifact);
        reject("%5Bobject%20Object%5D", Reason::JsArtifact); // (cargo fuzz) a segment once resolved
                                                             // (cargo fuzz) session removal joins `**` and `/` into a comment marker.
        reject("a/**;jsessionid=77/x", Reason::CommentMarker);
        pass("/x;jsessionid=ABC/y");
        reject("http://example.com/api/undefined/items", Reason::JsArtifact);
        reject("/${path}/x", Reason::TemplateSyntax);
        reject("/posts/{id}", Reason::TemplateSyntax);
        reject("/users/:id/edit", Reason::TemplateSyntax);
        // Regression (cargo fuzz): relative to an https base, `https::id` is the path `:id`.
        reject("https::oodma%2E%2E::::x", Reason::TemplateSyntax);
        reject("https:$4", Reason::TemplateSyntax); // (cargo fuzz) the path `$4` to an https base
        reject("https:/*x", Reason::CommentMarker);
        pass("http:example.com/path");
        // Regression (cargo fuzz): `%2E` decodes to the `.` of a method call.
        reject("62/wjK.no2e(),v)%2Eswitch(%2Ey6A4", Reason::JsCode);
        reject("e%2Etarget%2Evalue", Reason::JsCode);
        reject("e.target.value", Reason::JsCode);
        reject("this.props.url", Reason::JsCode);
        reject("new Date()", Reason::JsCode);
        reject("/application/x-shockwave-flash", Reason::MimeType);
        reject(
            "http://testphp.vulnweb.com/application/x-shockwave-flash",
            Reason::MimeType,
        );
        reject("http://testphp.vulnweb.com/AJAX/text/xml", Reason::MimeType);
        reject("/AJAX/text/xml", Reason::MimeType);
    }

    #[test]
    fn every_rule_family_has_a_code() {
        reject("", Reason::Empty);
        reject("   ", Reason::Empty);
        reject(&format!("/{}", "a".repeat(3000)), Reason::TooLong);
        reject("/a\u{0}b", Reason::ControlChars);
        reject("javascript:alert(1)", Reason::NonFetchableScheme);
        reject("JavaScript:void(0)", Reason::NonFetchableScheme);
        reject("data:text/html,<b>", Reason::NonFetchableScheme);
        reject("mailto:a@b.c", Reason::NonFetchableScheme);
        reject("tel:+123", Reason::NonFetchableScheme);
        reject("blob:https://example.com/123", Reason::NonFetchableScheme);
        reject("about:blank", Reason::NonFetchableScheme);
        reject("#", Reason::PureSymbols);
        reject("?", Reason::PureSymbols);
        reject("?%2A=", Reason::PureSymbols);
        reject("//", Reason::PureSymbols);
        reject("#BFBFBF", Reason::ColorValue);
        reject("rgba(0,0,0,.5)", Reason::ColorValue);
        reject("#section-2", Reason::FragmentOnly);
        reject("),t.focus(", Reason::JsFragment);
        reject(",r=this.opt.log", Reason::JsFragment);
        reject("<script>alert(1)</script>", Reason::HtmlTag);
        reject("</div>", Reason::HtmlTag);
        reject("<a href=\"x\">", Reason::HtmlTag);
        reject("/* comment", Reason::CommentMarker);
        reject("// TODO fix", Reason::CommentMarker);
        reject("{{variable}}", Reason::TemplateSyntax);
        reject("<%=value%>", Reason::TemplateSyntax);
        reject("<?php echo $x; ?>", Reason::TemplateSyntax);
        reject("function() { return true; }", Reason::JsCode);
        reject("var x = 123;", Reason::JsCode);
        reject("let y = 456;", Reason::JsCode);
        reject("const z = 789;", Reason::JsCode);
        reject("console.log('test')", Reason::JsCode);
        reject("window.location.href", Reason::JsCode);
        reject("document.getElementById", Reason::JsCode);
        reject("a.b === c", Reason::JsCode);
        reject("x => x.id", Reason::JsCode);
        reject(
            "http://example.com/path?code=function(){}=>return",
            Reason::JsCode,
        );
        reject("n.selection.select(n.$(", Reason::JsCode);
        reject("return", Reason::JsKeyword);
        reject("prototype", Reason::JsKeyword);
        reject("display", Reason::CssKeyword);
        reject("background-color", Reason::CssKeyword);
        reject("12px", Reason::CssValue);
        reject("100%", Reason::CssValue);
        reject("123", Reason::BareNumber);
        reject("-0.0", Reason::BareNumber);
        reject("/application/json", Reason::MimeType);
        reject("text/html; charset=utf-8", Reason::MimeType);
        reject("font/woff2", Reason::MimeType);
        reject("image/svg+xml", Reason::MimeType);
        reject(
            "http://example.com/%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20",
            Reason::EncodingRatio,
        );
        reject("%m/%d/%Y", Reason::BadPercentEncoding);
        reject(
            "AQEAOjAAAAEAAAAAAA0AEAAAAEikSaSUuZW5w7zEvOK/47+uyK/IV8pYytHV0tUBAQA6MAAAAQ==",
            Reason::EncodedBlob,
        );
        reject("www.dailymotion.com/embed/video/$1", Reason::TemplateSyntax);
        reject("[url=$1]$2[/url]", Reason::TemplateSyntax);
        reject("translate(-.301)", Reason::CssValue);
        reject("0.76,0,0.24,1", Reason::BareNumber);
        reject("$attrs.class", Reason::JsFragment);
        reject("?(d.value=!1,a.value=!1):a.value=!0,n(", Reason::JsCode);
        reject("http://example.com/a?x={{y}}", Reason::TemplateSyntax);
        reject("/a?next=<script>alert(1)</script>", Reason::HtmlTag);
    }

    #[test]
    fn regression_canonical_forms_of_kept_candidates_are_kept() {
        // Found by cargo fuzz: escapes the canonicalizer writes itself (`%60`, `%20`) counted
        // as needless, so a kept candidate's canonical form was rejected on a second look.
        let k = crate::url::Canonicalizer::default();
        for s in [
            "/a b c d e",
            "/my file (1).pdf",
            "/x\"y\"z",
            "/a|b^c{d",
            "/%E4%B8%AD b",
        ] {
            assert_eq!(v().check(s), Ok(()), "{s}");
            let c = k.canonicalize(s, None).unwrap().url;
            assert_eq!(v().check(&c), Ok(()), "{s} → {c}");
        }
        reject("h-foo````````d/x", Reason::JsCode);
        reject("/a   b", Reason::EncodingRatio);
        reject("/a%20%20%20b", Reason::EncodingRatio);
        pass("/path%20with%20space");
    }

    #[test]
    fn extraction_residue_is_trimmed() {
        assert_eq!(
            clean("http://static.example.com/jQuery.js\"></script>"),
            "http://static.example.com/jQuery.js"
        );
        assert_eq!(clean("h\tt\ntp://h/a\tb"), "http://h/ab");
        assert_eq!(
            clean("https:\\/\\/example.com\\/a\\/b?x=\\y"),
            "https://example.com/a/b?x=\\y"
        );
        assert_eq!(clean("/a\\b"), "/a/b");
        // Regression (cargo fuzz): residue before a fragment is trailing residue.
        assert_eq!(clean("6'#26A4"), "6");
        assert_eq!(clean("#top"), "#top");
        // Regression (cargo fuzz): an empty query goes before the residue; a dot segment stays.
        assert_eq!(clean("ii(&'?"), "ii(&");
        assert_eq!(clean("X--Yom;./..'"), "X--Yom;./..'");
        reject("ii(&'?", Reason::JsCode);
        // Regression (cargo fuzz): a space before the trimmed `'` is the end too.
        reject("i e( '", Reason::JsCode);
        // Regression (cargo fuzz): a stray high escape before raw text scores as before escaping.
        let k = crate::url::Canonicalizer::default();
        let raw = "https://h.com//w1c-areer67.c%dE中文ter67.c%dE中文t=23";
        assert_eq!(v().check(raw), Ok(()));
        assert_eq!(v().check(&k.canonicalize(raw, None).unwrap().url), Ok(()));
        reject("java\tscript:alert(1)", Reason::NonFetchableScheme);
        assert_eq!(clean("http://localhost:8080'"), "http://localhost:8080");
        assert_eq!(
            clean("https://github.com/rust-lang/rust/issues/74840>"),
            "https://github.com/rust-lang/rust/issues/74840"
        );
        assert_eq!(
            clean("../../alloc/trait.Allocator.html\\\\"),
            "../../alloc/trait.Allocator.html"
        );
        assert_eq!(clean(" /a "), "/a");
        // Relative code is not cut into something that looks like a path.
        assert_eq!(clean("/api/\" + id"), "/api/\" + id");
        pass("http://static.example.com/jQuery.js\"></script>");
    }

    #[test]
    fn profiles_change_thresholds() {
        let long = format!("http://example.com/{}", "a".repeat(600));
        assert_eq!(
            Validator::with_profile(Profile::Strict).check(&long),
            Err(Reason::TooLong)
        );
        assert_eq!(
            Validator::with_profile(Profile::Standard).check(&long),
            Ok(())
        );
        let spaced = "/path with space.pdf";
        assert_eq!(
            Validator::with_profile(Profile::Strict).check(spaced),
            Err(Reason::Whitespace)
        );
        assert_eq!(
            Validator::with_profile(Profile::Loose).check(spaced),
            Ok(())
        );
        // 10 needless escapes in 61 bytes: ratio 0.49.
        let enc = "http://example.com/a%2Db%2Dc%2Dd%2De%2Df%2Dg%2Dh%2Di%2Dj%2Dk";
        assert_eq!(Validator::with_profile(Profile::Loose).check(enc), Ok(()));
        assert_eq!(
            Validator::with_profile(Profile::Standard).check(enc),
            Err(Reason::EncodingRatio)
        );
    }

    #[test]
    fn bad_config_is_an_error() {
        assert!(Validator::new(ValidatorConfig {
            encoding_ratio: 0.0,
            ..ValidatorConfig::default()
        })
        .is_err());
        assert!(Validator::new(ValidatorConfig {
            max_len: 0,
            ..ValidatorConfig::default()
        })
        .is_err());
        assert!(Validator::new(ValidatorConfig {
            fetchable_schemes: vec![],
            ..ValidatorConfig::default()
        })
        .is_err());
    }

    #[test]
    fn bytes_never_panic() {
        let v = v();
        assert_eq!(v.check_bytes(b"\xff\xfe/a"), Err(Reason::InvalidUtf8));
        assert_eq!(v.check_bytes(b"  /a/b  ").as_deref(), Ok("/a/b"));
        assert_eq!(v.check_bytes(b"%"), Err(Reason::PureSymbols));
        assert_eq!(v.check_bytes(b"%E4%B8"), Err(Reason::PureSymbols));
        assert_eq!(v.check_bytes(b"a%").as_deref(), Ok("a%"));
    }
}
