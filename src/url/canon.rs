//! Canonicalization: one string per resource, so that the Bloom filter sees equivalent URLs as one.
//!
//! The policy, in order (every step is safe: it never merges two URLs a server may answer
//! differently, so it never loses a page):
//!
//! 1. **Parse** with the WHATWG URL standard (the `url` crate, as browsers do): ASCII whitespace
//!    trimmed, tabs/newlines removed, `\` as `/`, scheme and host lower-cased, IDN hosts to
//!    punycode, IPv4/IPv6 hosts normalized, default ports (`:80`, `:443`) dropped, empty path `/`,
//!    dot segments (`/a/./b/../c`, also `%2E%2E`) resolved, characters that must be escaped escaped.
//! 2. **Relative candidates** are resolved against `base` (`--base`, or the event's source URL).
//!    Protocol-relative `//host/x` without a base takes `https:`. `host:8080/x` (what a browser would
//!    treat as scheme `host:`) is read as `http://host:8080/x`, the scheme of `base` if any.
//!    Without a base, a relative candidate is kept relative: only steps 3–5 apply, and `../` stays.
//! 3. **Percent-encoding**: hex digits upper-cased (`%c3%a9` → `%C3%A9`), escapes of unreserved
//!    characters decoded (`%7E` → `~`, `%2D` → `-`, `%41` → `A`); reserved ones stay (`%2F` ≠ `/`).
//!    In the query, `%20` becomes `+` (both are a space in `application/x-www-form-urlencoded`).
//! 4. **Query**: empty parameters (`?&a=1`, `a=1&&b=2`) and an empty `?` dropped; tracking
//!    parameters dropped (`utm_*`, `gclid`, `fbclid`, ...: [`CanonConfig::strip_params`]); session
//!    ids dropped when the value looks like a session token (`sid`, `PHPSESSID`, ... with a value of
//!    16+ token characters: `?sid=12` may be a section id and stays); the rest **stably** sorted by
//!    name, so repeated names keep their relative order (`a=2&a=1` ≠ `a=1&a=2`).
//! 5. **Fragment** dropped; `;jsessionid=...` path parameters dropped.
//!
//! Deliberately *not* done, because each can merge different pages: lower-casing the path,
//! removing a trailing slash or `index.html`, dropping `www.`, merging `http` and `https`,
//! removing a trailing dot from the host, decoding `+` in the path. Deliberate differences from
//! w3lib's `canonicalize_url` (tested in `tests/canon_suites.rs`): w3lib keeps default ports
//! (`:80`), sorts repeated names by value, and keeps tracking parameters.

use url::Url;

use super::lex::strip_session_params;
use super::lex::{completes_escape, hex, is_unreserved, scheme_of};

/// The canonicalization policy knobs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CanonConfig {
    /// Query parameter names dropped everywhere (ASCII case-insensitive). An entry ending in `*`
    /// is a prefix (`utm_*`).
    pub strip_params: Vec<String>,
    /// Parameter names dropped when their value looks like a session token (16+ characters of
    /// `[A-Za-z0-9_-]`).
    pub session_params: Vec<String>,
    /// Sort query parameters by name (stable).
    pub sort_query: bool,
    /// Opt-in merges applied to the dedup key only (the emitted URL stays the safe canonical
    /// form): each can join URLs that a server answers differently, so none is on by default.
    pub merge: Vec<Merge>,
}

/// An opt-in equivalence for the dedup key (`--merge`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Merge {
    /// `http://h/x` ≡ `https://h/x`.
    Scheme,
    /// `www.h.com` ≡ `h.com`.
    Www,
    /// `/a/` ≡ `/a` (the root `/` stays).
    TrailingSlash,
    /// `/a/index.html` ≡ `/a/` (also index.htm, index.php, default.asp(x)).
    Index,
    /// `/a//b` ≡ `/a/b`.
    Slashes,
}

/// Tracking parameters that never change what a page shows.
pub const DEFAULT_STRIP_PARAMS: &[&str] = &[
    "utm_*",
    "gclid",
    "gclsrc",
    "gbraid",
    "wbraid",
    "dclid",
    "fbclid",
    "msclkid",
    "yclid",
    "twclid",
    "ttclid",
    "igshid",
    "li_fat_id",
    "mc_cid",
    "mc_eid",
    "_hsenc",
    "_hsmi",
    "__hstc",
    "__hssc",
    "__hsfp",
    "_ga",
    "_gl",
    "spm",
    "scm",
    "mkt_tok",
    "vero_id",
    "oly_anon_id",
    "oly_enc_id",
    "rb_clickid",
    "s_cid",
];

/// Session parameters, dropped only with a token-like value.
pub const DEFAULT_SESSION_PARAMS: &[&str] = &[
    "sid",
    "sessionid",
    "session_id",
    "phpsessid",
    "jsessionid",
    "aspsessionid",
    "cfid",
    "cftoken",
];

impl Default for CanonConfig {
    fn default() -> Self {
        CanonConfig {
            strip_params: DEFAULT_STRIP_PARAMS.iter().map(|s| s.to_string()).collect(),
            session_params: DEFAULT_SESSION_PARAMS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            sort_query: true,
            merge: Vec::new(),
        }
    }
}

/// Why a candidate has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonError {
    /// The WHATWG parser rejected it (bad host, bad port, ...).
    #[error("not a valid URL: {0}")]
    Parse(#[from] url::ParseError),
    /// It parsed, but to a scheme no fetcher loads.
    #[error("scheme {0:?} is not fetchable")]
    Scheme(String),
}

/// A canonical URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canonical {
    /// The canonical string.
    pub url: String,
    /// `false` for a relative candidate canonicalized without a base.
    pub absolute: bool,
}

/// Canonicalizes candidates under one [`CanonConfig`]. `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Canonicalizer {
    strip_exact: Vec<String>,
    strip_prefix: Vec<String>,
    session: Vec<String>,
    sort_query: bool,
    merge: Vec<Merge>,
}

impl Default for Canonicalizer {
    fn default() -> Self {
        Canonicalizer::new(&CanonConfig::default())
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

#[derive(Clone, Copy, PartialEq)]
enum Part {
    Path,
    Query,
}

fn push_escape(out: &mut String, b: u8) {
    out.push('%');
    out.push(HEX_UPPER[(b >> 4) as usize] as char);
    out.push(HEX_UPPER[(b & 15) as usize] as char);
}

/// Step 3 on one component. Also escapes what the WHATWG parser would have escaped, so that a
/// relative candidate (which never went through the parser) comes out the same way.
fn normalize_escapes(src: &str, part: Part, out: &mut String) {
    let b = src.as_bytes();
    let mut i = 0;
    // Fast path: copy runs of plain bytes in one go.
    while i < b.len() {
        let start = i;
        while i < b.len() && !NEEDS_WORK[b[i] as usize] {
            i += 1;
        }
        // Only ASCII bytes are skipped above, so both ends of a non-empty run are char boundaries.
        if i > start {
            out.push_str(&src[start..i]);
        }
        if i >= b.len() {
            break;
        }
        let c = b[i];
        if c == b'%' {
            if let (Some(h), Some(l)) = (
                b.get(i + 1).and_then(|&x| hex(x)),
                b.get(i + 2).and_then(|&x| hex(x)),
            ) {
                let v = h * 16 + l;
                if is_unreserved(v) && !completes_escape(out, v) {
                    out.push(v as char);
                } else if part == Part::Query && v == b' ' {
                    out.push('+');
                } else {
                    push_escape(out, v);
                }
                i += 3;
                continue;
            }
            out.push('%');
        } else if c == b'\\' && part == Part::Path {
            out.push('/');
        } else if c == b'\'' && part == Part::Path {
            out.push('\'');
        } else if c == b' ' && part == Part::Query {
            out.push('+');
        } else {
            push_escape(out, c);
        }
        i += 1;
    }
}

/// [`needs_work`] as a table: one load per byte in `normalize_escapes`' copy loop.
static NEEDS_WORK: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = needs_work(i as u8);
        i += 1;
    }
    t
};

/// In the query, `'` is escaped as the WHATWG special-query set does, and `\\`, `{`, `}` too: a
/// canonical query then never holds a raw `'` or `\\` (which the validator's residue trimming
/// and JSON-unescaping would read differently on a second pass) nor a brace next to an escape.
const fn needs_work(c: u8) -> bool {
    match c {
        b'%' | b' ' | b'"' | b'<' | b'>' | b'`' | 0..=0x1f | 0x7f..=0xff => true,
        // In a query too: an escape next to a raw brace could form a template marker (`{%5C` is
        // `{%`), which the validator rejects.
        b'{' | b'}' => true,
        b'\\' | b'\'' => true, // path: `\\` → `/` below; `'` stays raw in a path
        _ => false,
    }
}

fn token_like(v: &str) -> bool {
    v.len() >= 16
        && v.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

impl Canonicalizer {
    /// A canonicalizer for `cfg`.
    pub fn new(cfg: &CanonConfig) -> Self {
        let mut strip_exact = Vec::new();
        let mut strip_prefix = Vec::new();
        for p in &cfg.strip_params {
            let p = p.to_ascii_lowercase();
            match p.strip_suffix('*') {
                Some(pre) => strip_prefix.push(pre.to_owned()),
                None => strip_exact.push(p),
            }
        }
        Canonicalizer {
            strip_exact,
            strip_prefix,
            session: cfg
                .session_params
                .iter()
                .map(|s| s.to_ascii_lowercase())
                .collect(),
            sort_query: cfg.sort_query,
            merge: cfg.merge.clone(),
        }
    }

    fn drops_param(&self, name: &str, value: &str) -> bool {
        if name.is_empty() && value.is_empty() {
            return true;
        }
        let lower_eq = |w: &String| {
            w.len() == name.len() && w.as_bytes().eq_ignore_ascii_case(name.as_bytes())
        };
        if self.strip_exact.iter().any(lower_eq) {
            return true;
        }
        if self.strip_prefix.iter().any(|p| {
            name.len() >= p.len() && name.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes())
        }) {
            return true;
        }
        self.session.iter().any(lower_eq) && token_like(value)
    }

    /// Step 4 on a raw query (without `?`); appends `?query` to `out` unless nothing remains.
    fn push_query(&self, q: &str, out: &mut String) {
        let mut norm = String::with_capacity(q.len());
        // (name range, whole-pair range) in `norm`.
        let mut pairs: Vec<(usize, usize, usize)> = Vec::new();
        for raw in q.split('&') {
            // In every position, the first too: sorting may move a pair to the front, and a
            // second canonicalization must change nothing.
            let raw = strip_escaped_ampersand(raw);
            if raw.is_empty() {
                continue;
            }
            // A separator first, so that escapes of one pair never combine with the end of the
            // previous one (`ht%E` then `%36k` must not read as `%E6`).
            norm.push('&');
            let start = norm.len();
            normalize_escapes(raw, Part::Query, &mut norm);
            let pair = &norm[start..];
            let (name, value) = split_at_byte(pair, b'=').unwrap_or((pair, ""));
            if self.drops_param(name, value) {
                norm.truncate(start - 1);
                continue;
            }
            pairs.push((start, start + name.len(), norm.len()));
        }
        if pairs.is_empty() {
            return;
        }
        if self.sort_query {
            pairs.sort_by(|a, b| norm[a.0..a.1].cmp(&norm[b.0..b.1]));
        }
        out.push('?');
        for (i, &(s, _, e)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push('&');
            }
            out.push_str(&norm[s..e]);
        }
    }

    /// Step 3 and 5 on a path: escapes, and `;jsessionid=...` parameters removed.
    fn push_path(&self, path: &str, out: &mut String) {
        let start = out.len();
        normalize_escapes(path, Part::Path, out);
        // Remove `;jsessionid=...` up to the next `/` (rare: only search when present).
        if let Some(kept) = strip_session_params(&out[start..]) {
            out.truncate(start);
            out.push_str(&kept);
        }
    }

    /// Canonicalize `input`, resolving a relative candidate against `base`.
    pub fn canonicalize(&self, input: &str, base: Option<&Url>) -> Result<Canonical, CanonError> {
        let mut out = String::with_capacity(input.len() + 8);
        let absolute = self.canonicalize_into(input, base, &mut out)?;
        Ok(Canonical { url: out, absolute })
    }

    /// [`Canonicalizer::canonicalize_into`]'s fast path alone: `true` when `input` is an
    /// absolute http(s) URL it canonicalized into `out` without a base (the result
    /// `canonicalize_into` gives with any base); `false` (and `out` unspecified) otherwise.
    pub fn canonicalize_fast(&self, input: &str, out: &mut String) -> bool {
        out.clear();
        let s = input.trim_matches(|c: char| c <= ' ');
        if super::find_byte3(b'\t', b'\n', b'\r', s.as_bytes()).is_some() {
            return false;
        }
        if self.fast_absolute(s, out) {
            trim_residue_end(out);
            return true;
        }
        false
    }

    /// As [`Canonicalizer::canonicalize`], writing into a reused buffer (cleared first).
    /// Returns whether the result is absolute.
    pub fn canonicalize_into(
        &self,
        input: &str,
        base: Option<&Url>,
        out: &mut String,
    ) -> Result<bool, CanonError> {
        out.clear();
        let s = input.trim_matches(|c: char| c <= ' ');
        // Tabs and newlines go before anything is read (WHATWG), so `h\tttp:` is `http:`.
        let owned;
        let s = if super::find_byte3(b'\t', b'\n', b'\r', s.as_bytes()).is_some() {
            owned = s.replace(['\t', '\n', '\r'], "");
            owned.as_str()
        } else {
            s
        };
        let bytes = s.as_bytes();
        // Most candidates are plain absolute http(s) URLs: canonicalize those without building a
        // `Url` (exactly the same result, tested in `fast_path_matches_the_parser`).
        if self.fast_absolute(s, out) {
            trim_residue_end(out);
            return Ok(true);
        }
        out.clear();
        let has_scheme = scheme_of(bytes).is_some();
        let parsed = if !has_scheme && super::lex::is_host_port(bytes) {
            let scheme = base.map_or("http", |b| b.scheme());
            Url::parse(&format!("{scheme}://{s}"))?
        } else if let Some(b) = base {
            // `join` also handles absolute inputs, and `http:foo` against an http base as the
            // standard says (relative).
            b.join(s)?
        } else if has_scheme {
            Url::parse(s)?
        } else if matches!(bytes, [b'/' | b'\\', b'/' | b'\\', ..]) {
            // Protocol-relative; for http(s) a backslash is a slash, so `/\host` is one too.
            Url::parse(&format!("https:{s}"))?
        } else {
            self.relative(s, out);
            trim_residue_end(out);
            return Ok(false);
        };
        self.serialize(&parsed, out)?;
        trim_residue_end(out);
        Ok(true)
    }

    /// The fast path: an absolute `http://` / `https://` URL whose every part is already in the
    /// form the WHATWG parser would leave unchanged (ASCII host of letters, digits, dots and
    /// hyphens, no punycode, no IPv4-looking last label, no userinfo, no dot segments, no
    /// backslash, nothing the parser would escape). Anything else returns `false` and takes the
    /// parser. Writes into `out` (which may be left partly written on `false`).
    fn fast_absolute(&self, s: &str, out: &mut String) -> bool {
        let b = s.as_bytes();
        let (scheme, default_port, rest) =
            if b.len() > 8 && b[..8].eq_ignore_ascii_case(b"https://") {
                ("https", 443, 8)
            } else if b.len() > 7 && b[..7].eq_ignore_ascii_case(b"http://") {
                ("http", 80, 7)
            } else {
                return false;
            };
        let auth_len = b[rest..]
            .iter()
            .position(|&c| matches!(c, b'/' | b'?' | b'#'))
            .unwrap_or(b.len() - rest);
        let auth = &s[rest..rest + auth_len];
        let (host, port) = match split_at_byte(auth, b':') {
            Some((h, p)) => (h, Some(p)),
            None => (auth, None),
        };
        if host.is_empty() || !fast_host(host.as_bytes()) {
            return false;
        }
        let port = match port {
            None => None,
            Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|c| c.is_ascii_digit()) => {
                match p.parse::<u32>() {
                    Ok(n) if n <= 65535 => (n != default_port).then_some(n),
                    _ => return false,
                }
            }
            Some(_) => return false,
        };
        let tail = &s[rest + auth_len..];
        let tail = split_at_byte(tail, b'#').map_or(tail, |(a, _)| a);
        let (path, query) = match split_at_byte(tail, b'?') {
            Some((p, q)) => (p, Some(q)),
            None => (tail, None),
        };
        if !path.bytes().all(|c| FAST_PATH[c as usize] & 1 != 0)
            || has_slash_dot(path)
            || has_dot_escape(path)
        {
            return false;
        }
        if let Some(q) = query {
            if !q.bytes().all(|c| FAST_PATH[c as usize] & 2 != 0) {
                return false;
            }
        }
        out.push_str(scheme);
        out.push_str("://");
        out.push_str(host);
        let end = out.len();
        out[end - host.len()..].make_ascii_lowercase();
        if let Some(n) = port {
            out.push(':');
            out.push_str(itoa::Buffer::new().format(n));
        }
        if path.is_empty() {
            out.push('/');
        } else {
            self.push_path(path, out);
        }
        if let Some(q) = query {
            self.push_query(q, out);
        }
        true
    }

    /// Whether any opt-in merge is configured (otherwise the dedup key is the canonical URL).
    pub fn merges(&self) -> bool {
        !self.merge.is_empty()
    }

    /// The dedup key of a canonical URL under the opt-in merges, written into `out` (cleared).
    /// Keys are only hashed, never emitted.
    pub fn dedup_key(&self, canonical: &str, out: &mut String) {
        out.clear();
        let has = |m: Merge| self.merge.contains(&m);
        let rest = match canonical.split_once("://") {
            Some((scheme, rest)) => {
                if !has(Merge::Scheme) {
                    out.push_str(scheme);
                    out.push(':');
                }
                out.push_str("//");
                rest
            }
            None => canonical, // relative: no scheme or host
        };
        let (before_q, query) = match rest.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (rest, None),
        };
        let (host, path) = if canonical.contains("://") {
            before_q.split_at(before_q.find('/').unwrap_or(before_q.len()))
        } else {
            ("", before_q)
        };
        let host = if has(Merge::Www) && host.len() > 4 && host[..4].eq_ignore_ascii_case("www.") {
            &host[4..]
        } else {
            host
        };
        out.push_str(host);
        let start = out.len();
        if has(Merge::Slashes) {
            let mut prev = 0u8;
            for c in path.bytes() {
                if !(c == b'/' && prev == b'/') {
                    out.push(c as char);
                }
                prev = c;
            }
        } else {
            out.push_str(path);
        }
        if has(Merge::Index) {
            for idx in [
                "index.html",
                "index.htm",
                "index.php",
                "default.aspx",
                "default.asp",
            ] {
                if out[start..].ends_with(idx) && out[..out.len() - idx.len()].ends_with('/') {
                    out.truncate(out.len() - idx.len());
                    break;
                }
            }
        }
        if has(Merge::TrailingSlash) && out.len() > start + 1 && out.ends_with('/') {
            out.pop();
        }
        if let Some(q) = query {
            out.push('?');
            out.push_str(q);
        }
    }

    /// The parser-only path (no fast path), for differential tests.
    #[doc(hidden)]
    pub fn canonicalize_slow(&self, input: &str) -> Result<String, CanonError> {
        let u = Url::parse(input.trim_matches(|c: char| c <= ' '))?;
        let mut out = String::new();
        self.serialize(&u, &mut out)?;
        trim_residue_end(&mut out);
        Ok(out)
    }

    /// Canonical form of a parsed absolute URL.
    pub fn serialize(&self, u: &Url, out: &mut String) -> Result<(), CanonError> {
        let scheme = u.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(CanonError::Scheme(scheme.to_owned()));
        }
        let Some(host) = u.host_str() else {
            return Err(CanonError::Parse(url::ParseError::EmptyHost));
        };
        // The parser accepts hosts like `*`, `-.` or `n.es*`; a real host name has a letter or
        // digit and nothing but letters, digits, `.`, `-`, `_` (IDN is punycode by now).
        let plausible = host.starts_with('[')
            || host.bytes().any(|c| c.is_ascii_alphanumeric())
                && host
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_'));
        if !plausible {
            return Err(CanonError::Parse(url::ParseError::InvalidDomainCharacter));
        }
        out.push_str(scheme);
        out.push_str("://");
        if !u.username().is_empty() || u.password().is_some() {
            out.push_str(u.username());
            if let Some(p) = u.password() {
                out.push(':');
                out.push_str(p);
            }
            out.push('@');
        }
        out.push_str(host);
        if let Some(port) = u.port() {
            out.push(':');
            out.push_str(itoa::Buffer::new().format(port));
        }
        self.push_path(u.path(), out);
        if let Some(q) = u.query() {
            self.push_query(q, out);
        }
        Ok(())
    }

    /// A relative candidate without a base: fragment dropped, escapes and query normalized.
    fn relative(&self, s: &str, out: &mut String) {
        let s = split_at_byte(s, b'#').map_or(s, |(a, _)| a);
        let (path, query) = match split_at_byte(s, b'?') {
            Some((p, q)) => (p, Some(q)),
            None => (s, None),
        };
        self.push_path(path, out);
        // Decoding may have put a `:` into the first segment (`https%2Ehttp:` → `https.http:`),
        // which would read as a scheme or host:port next time: mark it a path, as RFC 3986 §4.2
        // says, with `./`.
        let first_seg = out.split('/').next().unwrap_or("");
        if first_seg.contains(':') {
            out.insert_str(0, "./");
        } else if out.starts_with("//") {
            // Removing `;jsessionid=...` can leave `//x`, which would read as a host: a path that
            // starts with `//` is written `/.//x` (RFC 3986 §3.3).
            out.insert_str(0, "/.");
        }
        if let Some(q) = query {
            self.push_query(q, out);
        }
    }
}

/// The validator's `clean` removes a trailing `\`, `'` or `>` as extraction residue; a canonical
/// URL must be a fixed point of that, even when query sorting moved such a value to the end
/// (`?q=s\&a=1` → `?a=1&q=s\`). So the output never ends with one, nor, once they are gone, with
/// an empty `?` or `&`.
fn trim_residue_end(out: &mut String) {
    // A canonical query never holds a raw `\\`, `'` or `>` (all escaped), so only a path can end
    // in one; query pairs are never touched after sorting.
    if out.contains('?') {
        return;
    }
    let keep = super::trim_residue(out).len();
    out.truncate(keep);
}

/// `s` split at the first ASCII byte `c` (memchr: faster than `str::split_once` on short text).
#[inline]
/// A query pair that starts with `amp;` (any case), the rest of the HTML character reference
/// `&amp;`, is what an extractor left HTML-escaped:
/// `?code=x&amp;edition=2021` was `href="?code=x&amp;edition=2021"`, which a browser requests as
/// `?code=x&edition=2021`. The reference is dropped, so the pair is `edition=2021`, never a
/// parameter named `amp;edition`. Safe in every context: a real parameter whose name starts with
/// `amp;` would need a literal `;` right after `amp` in its name, which no server we know of
/// uses, while the escaped form is common in extracted links (issue 17). The numeric forms
/// (`&#38;`, `&#x26;`) never reach here: their `#` starts the fragment; decoding them is the
/// `html_attr` context's work, before the URL is parsed.
///
/// Repeated (`&amp;amp;`, escaped twice) until none is left, so that canonicalizing twice
/// changes nothing.
fn strip_escaped_ampersand(mut pair: &str) -> &str {
    while pair.len() >= 4 && pair.as_bytes()[..4].eq_ignore_ascii_case(b"amp;") {
        pair = &pair[4..];
    }
    pair
}

fn split_at_byte(s: &str, c: u8) -> Option<(&str, &str)> {
    super::find_byte(c, s.as_bytes()).map(|i| (&s[..i], &s[i + 1..]))
}

/// A host the fast path may copy: non-empty labels of ASCII letters, digits and hyphens, no
/// punycode label (the parser validates those), and a last label that cannot be read as an IPv4
/// number (WHATWG "ends in a number": it must not start with a digit).
fn fast_host(h: &[u8]) -> bool {
    if !h.iter().any(u8::is_ascii_alphabetic) {
        return false; // `-.-`, `1.2.3.4`: the parser decides
    }
    let mut labels = h.split(|&c| c == b'.').peekable();
    while let Some(label) = labels.next() {
        if label.is_empty()
            || !label
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || *c == b'-')
            || label.len() >= 4 && label[..4].eq_ignore_ascii_case(b"xn--")
        {
            return false;
        }
        if labels.peek().is_none() && label[0].is_ascii_digit() {
            return false;
        }
    }
    true
}

/// Fast-path byte classes: bit 1 = a path byte the parser keeps, bit 2 = a query byte it keeps.
static FAST_PATH: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        let path = fast_path_byte(c) as u8;
        let query = (c >= 0x21 && c <= 0x7e && !matches!(c, b'"' | b'<' | b'>' | b'\'')) as u8;
        t[i] = path | query << 1;
        i += 1;
    }
    t
};

/// Path bytes the parser leaves as they are (RFC 3986 pchar and `/`, `%`).
const fn fast_path_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'/'
                | b'%'
        )
}

/// `/.`: a segment starting with a dot (possibly a dot segment; the parser decides).
fn has_slash_dot(path: &str) -> bool {
    let b = path.as_bytes();
    memchr::memchr_iter(b'.', b).any(|i| i > 0 && b[i - 1] == b'/')
}

/// `%2E` / `%2e`: an escaped dot, which the parser treats as a dot in dot segments.
fn has_dot_escape(path: &str) -> bool {
    let b = path.as_bytes();
    memchr::memchr_iter(b'%', b)
        .any(|i| b.get(i + 1) == Some(&b'2') && matches!(b.get(i + 2), Some(b'e' | b'E')))
}

#[cfg(test)]
mod tests;
