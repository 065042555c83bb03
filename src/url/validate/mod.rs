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
    /// escape ratio is measured against.
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
        if ctx == Context::Js && scheme.is_none() {
            if let Some(r) = js_rules(b) {
                return Err(r);
            }
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
        if sc.bad_escapes >= 1 && printf_placeholder(b) {
            return Err(Reason::TemplateSyntax);
        }
        if sc.bad_escapes >= 2 {
            return Err(Reason::BadPercentEncoding);
        }
        if self.escapes_exceed(b, &sc, orig_len) {
            return Err(Reason::EncodingRatio);
        }
        if self.cfg.reject_whitespace && sc.has_space {
            return Err(Reason::Whitespace);
        }
        Ok(())
    }
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

    /// Issue 27: printf conversions a program fills in, in any context; look-alikes pass. (A
    /// whole `{name}` query value is not judged: GraphQL's `?query={hello}` is a request,
    /// found by review.)
    #[test]
    fn printf_templates() {
        for s in [
            "/1/dictionaries/%s/batch",
            "https://github.com/o/r/commit/%s",
            "%s",
            "/items?page=%d",
            "/a/%1$s/b",
            "/u/%i.json",
        ] {
            reject(s, Reason::TemplateSyntax);
        }
        for s in [
            "/wiki/100%25_sure",
            "/a%20b/%D0%B4",
            "/x%d0%b4",
            "/p?filter={\"a\":1}",
            "/p?x={a}b",
            "/%u4E2D",
            "/graphql?query={hello}",
            "https://h.example/a%20$s/%zz",
            "/a%20$s/",
            "/x?id={id}&y=1",
        ] {
            assert!(v().check(s) != Err(Reason::TemplateSyntax), "{s:?}");
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
        reject("/sale%/50%off", Reason::BadPercentEncoding);
        // (cargo fuzz) an `href`'s canonical form, read again with no context, passes.
        pass("https://example.com/dir/88a[^ht");
        reject("88a[^ht", Reason::RegexSource);
        reject("%m/%d/%Y", Reason::TemplateSyntax); // a strftime format: `%d/` (issue 27)
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
