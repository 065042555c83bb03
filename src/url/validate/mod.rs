//! The junk-URL validator: "reject only what is certainly junk" (seed 000, v2.0 blacklist).
//!
//! A crawler's link extractor returns strings that are URLs, and strings that merely sit where a URL
//! could be: JavaScript fragments caught by LinkFinder-style regexes, HTML tags, template
//! placeholders, CSS values, MIME types. [`Validator::check`] rejects the second kind with a stable
//! [`Reason`] and lets everything else through: a real page must never be rejected, so every rule
//! here is one that a URL a browser would really fetch cannot match (the doc comment of each rule
//! says why).
//!
//! The rules by family, one file each: `code.rs` (JavaScript, CSS, templates, HTML), `path.rs`
//! (artifact segments, MIME-type paths, number-like strings), `kinds.rs` (what a string in a
//! script or of unknown origin is: module specifiers, regexes, selectors, vocabularies), on
//! `scan.rs`'s byte classes, `words.rs`' lists and `mime_registry.rs` (IANA's media types,
//! generated); [`clean`] is what every rule and the canonicalizer see.
//!
//! Owns: the junk rules and when each fires. May import `url::lex`, `url::reason` and
//! `url::context`; never `url::canon` (`tests/layers.rs` checks both directions).
//!
//! Context (issue 17): [`Validator::check_in`] takes where the candidate was found. Every rule
//! above holds in every context; `js.rs` adds the rules that only a JavaScript string can be
//! held to (module specifiers, dotted identifiers, version and format strings), which apply to
//! relative candidates only. `unknown` (what [`Validator::check`] uses) is today's behaviour.
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

mod clean;
mod code;
mod js;
mod kinds;
mod mime_registry;
mod path;
mod scan;
mod words;

use self::{code::*, js::*, path::*, scan::*, words::*};
use super::context::Context;
pub use clean::clean;

/// Whether a path segment ends in a file extension a browser requests (`.js`, `.html`, `.png`,
/// …): the list the script rules keep files by. Public for the labelled-set measurements.
pub fn has_web_extension(seg: &str) -> bool {
    js::has_web_extension(seg.as_bytes())
}

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
    /// Keep XML namespace and DTD identifiers (`http://www.w3.org/2000/svg`): real documents,
    /// but never a page a crawl wants. Off (rejected as `xml_namespace`) except in `loose`.
    #[serde(default)]
    pub keep_xml_namespaces: bool,
    /// Keep URLs written in text or scripts with a host no crawl of the public web can reach: the names
    /// reserved for documentation and testing (`example.com`, `.example`, `.test`, `.invalid`;
    /// `reserved_host`; in scripts only the last three), single-label hosts (`http://server/`;
    /// `single_label_host`) and undelegated top-level names (`unknown_tld`). Off
    /// (rejected) except in `loose`; turn it on for a crawl of an intranet.
    #[serde(default)]
    pub keep_placeholder_hosts: bool,
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
            keep_xml_namespaces: p == Profile::Loose,
            keep_placeholder_hosts: p == Profile::Loose,
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
        self.check_bytes_in(raw, Context::Unknown)
    }

    /// [`Validator::check_bytes`] for a candidate found in `ctx` (already decoded by
    /// [`Context::decode`]): the context's own rules apply too.
    pub fn check_bytes_in<'a>(&self, raw: &'a [u8], ctx: Context) -> Result<Cow<'a, str>, Reason> {
        let s = std::str::from_utf8(raw).map_err(|_| Reason::InvalidUtf8)?;
        if let Some(r) = kinds::raw_rules(s, ctx, self.cfg.keep_xml_namespaces) {
            return Err(r);
        }
        let t = clean(s);
        self.check_trimmed(&t, ctx)?;
        Ok(t)
    }

    /// Check one candidate. `Ok(())` means "not certainly junk": pass it on.
    pub fn check(&self, raw: &str) -> Result<(), Reason> {
        self.check_in(raw, Context::Unknown)
    }

    /// [`Validator::check`] for a candidate found in `ctx` (already decoded).
    pub fn check_in(&self, raw: &str, ctx: Context) -> Result<(), Reason> {
        if let Some(r) = kinds::raw_rules(raw, ctx, self.cfg.keep_xml_namespaces) {
            return Err(r);
        }
        self.check_trimmed(&clean(raw), ctx)
    }

    fn check_trimmed(&self, s: &str, ctx: Context) -> Result<(), Reason> {
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
                self.check_trimmed(&path, ctx)?;
            }
        }
        // `;jsessionid=...` goes in canonicalization, which can join what was around it
        // (`**;jsessionid=1/x` → `**/x`, a comment marker): judge that path too.
        // (`;` is code punctuation, which the scan reports.)
        if sc.has_code_punct && crate::url::find_byte(b';', b).is_some() {
            let q = crate::url::find_byte(b'?', b).unwrap_or(b.len());
            if let Some(path) = super::lex::strip_session_params(&s[..q]) {
                self.check_trimmed(&format!("{path}{}", &s[q..]), ctx)?;
            }
        }
        if sc.has_unreserved_escape {
            // Judge the text canonicalization will produce, with the escape ratio of the original.
            if let Some(decoded) = super::lex::decode_unreserved(s) {
                let mut sc2 = scan(decoded.as_bytes());
                sc2.suspicious_escape_bytes = sc.suspicious_escape_bytes;
                sc2.bad_escapes = sc.bad_escapes;
                return self.rules(&decoded, sc2, b.len(), ctx);
            }
        }
        self.rules(s, sc, b.len(), ctx)
    }

    /// Whether needless escapes and whitespace runs of `b` (as `sc` scanned it) exceed the
    /// configured share of `len` bytes.
    fn escapes_exceed(&self, b: &[u8], sc: &Scan, len: usize) -> bool {
        let mut suspicious = sc.suspicious_escape_bytes;
        if sc.has_space || sc.has_escaped_space {
            suspicious += whitespace_run_bytes(b);
        }
        suspicious as f64 > self.cfg.encoding_ratio * len as f64
    }

    /// The escape-ratio rule ([`Reason::EncodingRatio`]) judged on a canonical URL. The
    /// validator measures the ratio against the candidate as written, but canonicalization may
    /// shorten it (a stripped tracking parameter, a removed dot segment, a default port) and
    /// only the caller knows the canonicalizer: [`crate::sieve::Sieve`] asks this of every
    /// canonical form shorter than its candidate, so a kept URL's canonical form is kept too.
    pub fn canonical_escapes_exceed(&self, canonical: &str) -> bool {
        let b = canonical.as_bytes();
        if crate::url::find_byte(b'%', b).is_none() {
            return false;
        }
        self.escapes_exceed(b, &scan(b), b.len())
    }

    /// The rules, on `s` as canonicalization will read it; `orig_len` is the length the
    /// escape ratio is measured against. Cheapest first, each family a step; the first that
    /// matches is the reason.
    fn rules(&self, s: &str, sc: Scan, orig_len: usize, ctx: Context) -> Result<(), Reason> {
        let b = s.as_bytes();
        if sc.has_control {
            return Err(Reason::ControlChars);
        }
        // A scheme needs a `:` (which the scan reports).
        let scheme = if sc.has_colon { scheme_of(b) } else { None };
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
        leading_rules(b, &sc)?;
        code_shape_rules(b, &sc, scheme)?;
        self.word_rules(b, &sc, scheme)?;
        self.context_rules(b, &sc, scheme, ctx)?;
        self.escape_rules(b, &sc, orig_len)
    }

    /// Code and encoded-blob rules on what the whole candidate looks like: dotted JS chains, XML
    /// namespaces, the path's artifact and MIME rules, keywords and numbers.
    fn word_rules(&self, b: &[u8], sc: &Scan, scheme: Option<&[u8]>) -> Result<(), Reason> {
        if scheme.is_none() && js_dotted_chain(b) {
            return Err(Reason::JsCode);
        }
        if scheme.is_none() && encoded_blob(b) {
            return Err(Reason::EncodedBlob);
        }
        if let Some(sch) = scheme {
            if !self.cfg.keep_xml_namespaces && (xml_namespace(b, sch) || parser_feature_id(b, sch))
            {
                return Err(Reason::XmlNamespace);
            }
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
            && crate::url::find_byte2(b'.', b':', b).is_none()
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
        if sc.has_escaped_percent && double_encoded(path_of(b, scheme)) {
            return Err(Reason::DoubleEncoded);
        }
        Ok(())
    }

    /// The rules of the context the candidate was found in (relative candidates of a script,
    /// text, an unknown origin).
    fn context_rules(
        &self,
        b: &[u8],
        sc: &Scan,
        scheme: Option<&[u8]>,
        ctx: Context,
    ) -> Result<(), Reason> {
        if ctx == Context::Js && scheme.is_none() {
            if let Some(r) = js_rules(b) {
                return Err(r);
            }
        }
        // SVG path data, relative (any context: no link is written so).
        if scheme.is_none() && kinds::svg_path(b) {
            return Err(Reason::SvgPath);
        }
        // A build script's file-system path or glob, relative (issue 46).
        if matches!(ctx, Context::Js | Context::Text | Context::HtmlText)
            && scheme.is_none()
            && !b.starts_with(b"//")
            && kinds::build_path(b)
        {
            return Err(Reason::BuildPath);
        }
        // An email address without `mailto:`, relative (a page's own `href` is authored: not
        // judged).
        if matches!(ctx, Context::Js | Context::Text | Context::HtmlText)
            && scheme.is_none()
            && sc.first_slash.is_none()
            && !sc.has_colon
            && kinds::email_address(b)
        {
            return Err(Reason::EmailAddress);
        }
        match ctx {
            Context::Text | Context::HtmlText => {
                if let Some(r) = kinds::text_kinds(b, scheme, self.cfg.keep_placeholder_hosts) {
                    return Err(r);
                }
            }
            Context::Js if !self.cfg.keep_placeholder_hosts => {
                if let Some(r) = kinds::placeholder_host(b, scheme, false) {
                    return Err(r);
                }
            }
            // Relative candidates only: an absolute URL is also how a kept candidate of any
            // context comes back as its canonical form, read as `unknown` by a fetcher or a
            // second crawlsieve, and must pass as it did (cargo fuzz: `88a[^ht` in an `href`).
            // (The raw rules of the other contexts do not run here: see `regex_syntax`.)
            Context::Unknown if scheme.is_none() => {
                if sc.has_code_punct && kinds::regex_syntax(b) {
                    return Err(Reason::RegexSource);
                }
                if let Some(r) = kinds::shape_kinds(b, sc.has_code_punct) {
                    return Err(r);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Escapes and whitespace: printf placeholders, bad `%` escapes, the escape ratio against
    /// `orig_len`, whitespace when the configuration rejects it.
    fn escape_rules(&self, b: &[u8], sc: &Scan, orig_len: usize) -> Result<(), Reason> {
        if sc.bad_escapes >= 1 && printf_placeholder(b) {
            return Err(Reason::TemplateSyntax);
        }
        if sc.bad_escapes >= 2 {
            return Err(Reason::BadPercentEncoding);
        }
        if self.escapes_exceed(b, sc, orig_len) {
            return Err(Reason::EncodingRatio);
        }
        if self.cfg.reject_whitespace && sc.has_space {
            return Err(Reason::Whitespace);
        }
        Ok(())
    }
}

/// What the first bytes say: a fragment or colour (`#…`), a colour or CSS function (`rgb(`),
/// a JS fragment or template (`),t.focus(`, `{{x}}`).
fn leading_rules(b: &[u8], sc: &Scan) -> Result<(), Reason> {
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
    if b[0] == b'/' {
        if let Some(r) = slash_residue(b) {
            return Err(r);
        }
    }
    if is_js_leading(b[0]) {
        // `{{x}}` and `${x}` start like code but are templates: name them as such.
        return Err(template_syntax(b).unwrap_or(Reason::JsFragment));
    }
    Ok(())
}

/// A `/` that ends something else, then what follows it in a script or a page: `/>` closes a
/// tag (`html_tag`; judged before cleaning too, which trims a trailing `>`); `/,`, `/|`, `/)`
/// and a regular expression's flags then `)`, or `,` and no path after it (`/g,`, `/gi)`), end a
/// regex literal — an extractor that paired quotes across one takes
/// `/,end:/` or `/,contains:[n.BACKSLASH_ESCAPE,s]},{begin:/` from highlight.js grammars
/// (`js_fragment`). No link starts so (`/;jsessionid=…` does, and passes).
fn slash_residue(b: &[u8]) -> Option<Reason> {
    match b.get(1) {
        Some(b'>') => Some(Reason::HtmlTag),
        Some(b',' | b'|' | b')') => Some(Reason::JsFragment),
        _ => {
            let flags = b[1..]
                .iter()
                .take_while(|c| b"dgimsuvy".contains(c))
                .count();
            // `/g)`, and `/g,` where the comma ends the string or code follows it (a space, a
            // quote): `/m,204,slug.html` and `/s,o-firmie` are Polish sites' real paths
            // (found by review: MADKOM's eBIP municipal sites, wp.pl).
            let end = match b.get(1 + flags) {
                Some(b')') => true,
                Some(b',') => b.get(2 + flags).is_none_or(|c| {
                    !(c.is_ascii_alphanumeric() || *c >= 0x80 || b"-_.%~".contains(c))
                }),
                _ => false,
            };
            (flags > 0 && flags <= 8 && end).then_some(Reason::JsFragment)
        }
    }
}

/// Code in the candidate: calls, placeholders, code punctuation and comment markers — judged
/// on the part before the query when that part is a clean path (a query may hold code-like
/// text: playground links, `?search=Vec<T>`), where only unmistakable markers count.
fn code_shape_rules(b: &[u8], sc: &Scan, scheme: Option<&[u8]>) -> Result<(), Reason> {
    // `clean` already removed the fragment and an empty query: canonicalization drops both,
    // so what is judged is what is fetched.
    let head_end = crate::url::find_byte(b'?', b).unwrap_or(b.len());
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
        // Every comment marker holds `*`, `<`, `>` or whitespace: all code punctuation.
        if let Some(r) = comment_marker(ruled) {
            return Err(r);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
