//! Reason codes: the stable, machine-readable answer to "why was this candidate not emitted?".
//!
//! The snake_case strings returned by [`Reason::code`] are a public contract: they appear in
//! `crawlsieve check` output, in rejected-URL events and as metric label values. Add new codes at
//! the end; never rename or reuse one.

use std::fmt;
use std::str::FromStr;

/// Why a candidate was rejected. Every variant maps to one stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// Empty or whitespace-only line.
    Empty,
    /// Longer than the profile's `max_len` bytes (or than the reader's line cap).
    TooLong,
    /// The line is not valid UTF-8.
    InvalidUtf8,
    /// NUL or another control character (other than tab) inside the candidate.
    ControlChars,
    /// An explicit scheme that no fetcher can load (`javascript:`, `data:`, `mailto:`, ...).
    NonFetchableScheme,
    /// Only punctuation, no letter or digit (`#`, `?`, `?%2A=`); `/`, `./`, `../` excepted.
    PureSymbols,
    /// A CSS colour (`#BFBFBF`, `#fff`, `rgb(...)`).
    ColorValue,
    /// A same-document reference (`#section`): never a new page once fragments are dropped.
    FragmentOnly,
    /// Starts with punctuation that only a JavaScript fragment starts with (`),`, `,r=`, `!==`).
    JsFragment,
    /// An HTML tag (`<div>`, `</a>`, `<!DOCTYPE`, `&lt;b&gt;`).
    HtmlTag,
    /// A comment marker (`/*`, `*/`, `<!--`, `-->`, `// text`).
    CommentMarker,
    /// Template or placeholder syntax (`{{x}}`, `<%= x %>`, `${x}`, `/posts/{id}`, `/users/:id`).
    TemplateSyntax,
    /// JavaScript code (`function(`, `=>`, `===`, `var x =`, `new Date()`, `e.target.value`).
    JsCode,
    /// A JavaScript value leaked into a path (`/undefined`, `/null`, `/[object Object]`, `/NaN`).
    JsArtifact,
    /// A lone JavaScript keyword or well-known global (`return`, `true`, `prototype`).
    JsKeyword,
    /// A lone CSS property name or keyword value (`display`, `background-color`, `none`).
    CssKeyword,
    /// A CSS length or percentage (`12px`, `1.5em`, `100%`).
    CssValue,
    /// A bare number (`123`, `-0.5`, `1e3`).
    BareNumber,
    /// The path is a MIME type (`/application/json`, `/AJAX/text/xml`, `font/woff2`).
    MimeType,
    /// Too large a share of the candidate is percent-encoded ASCII (`%20%20%20...`).
    EncodingRatio,
    /// Two or more `%` signs that start no valid `%XX` escape (`%m/%d/%Y`, `%Math.abs%`).
    BadPercentEncoding,
    /// Raw whitespace inside the candidate (strict profile only).
    Whitespace,
    /// Passed the junk rules but cannot be parsed as a URL (bad host, bad port, ...).
    InvalidUrl,
    /// Its URL pattern was verified to serve near-identical pages (render-stage feedback).
    PatternSimilar,
    /// The whole candidate is one long base64 blob (inlined data, search indexes).
    EncodedBlob,
    /// A relative candidate with nothing to resolve it against (the gate's events need a
    /// `source`; a fetcher cannot fetch `img/a.png`).
    NoBase,
    /// (HTTP filter API) a list element that is not a JSON string.
    NotAString,
    /// (JavaScript context) a module specifier a bundler or Node resolves, not a URL a browser
    /// requests: `ace/mode/x`, `./layer/cursor`, `../lib/util` (no file extension).
    JsModulePath,
    /// (JavaScript context) a dotted identifier or abbreviation: `foo.bar.Baz`,
    /// `keyword.operator.x`, `e.g.`.
    DottedIdentifier,
    /// (JavaScript context) a version string: `1.2.3`, `v2.0.1-beta`, `4.1.7-compat:2.0.1`.
    VersionString,
    /// (JavaScript context) a date or number format string: `d.M.y`, `yyyy-MM-dd`, `HH:mm`.
    FormatString,
    /// Percent-encoded twice: the path holds encoded `%2F`, `%3A`, … (`%252Fapi%252Fv2`).
    DoubleEncoded,
    /// An XML namespace or DTD identifier (`http://www.w3.org/2000/svg`); kept with
    /// `keep_xml_namespaces` (and by the loose profile).
    XmlNamespace,
    /// (JavaScript) a name starting with a dot, no `/`: a class name, a hidden file's name, a
    /// build target (`.menu`, `.PHONY`).
    DotName,
    /// (JavaScript) a CSS selector (`.a.b`, `.btn:hover`, `.x > .y`).
    CssSelector,
    /// (JavaScript, text) a TeX or LaTeX macro (`\frac{1}{2}`).
    TexMacro,
    /// (JavaScript, text) regular-expression source (`^\/api\/(\d+)$`, `www\.host\.org`).
    RegexSource,
    /// (JavaScript) a bundler or loader request (`style-loader!./x.css`, `text!./tpl.html`).
    LoaderRequest,
    /// (JavaScript) a path into `node_modules` or a package's `package.json`.
    PackageInternal,
    /// (JavaScript, text) a Unix device or kernel file (`/dev/null`, `/proc/self/…`).
    DevicePath,
    /// (Text) a URL with a user name and password (`http://user:pass@host/`).
    Credentials,
    /// (Plain text) a numeric character reference cut before its `;` (`…&#39`).
    CharRefResidue,
    /// (Scope) the host is not in `allow_domains`, or is in `deny_domains`.
    OutOfScopeDomain,
    /// (Scope) a `deny` pattern matched, no `allow` pattern did, or a scope file's rule said no.
    DeniedByRule,
    /// (Scope) more path segments than `max_depth`.
    TooDeep,
    /// (Scope) more query parameters than `max_query_params`.
    TooManyParams,
    /// (Scope) a scheme outside `schemes`.
    OutOfScopeScheme,
    /// (Scope) a port outside `ports`.
    OutOfScopePort,
    /// (Scope) `same_site_as_source`: another site than the page it was found on.
    OffSite,
    /// The host is a special-purpose IP literal (loopback, private, link-local or cloud metadata,
    /// an IPv6 form carrying one, …) or a localhost name, not allowed by `allow_private`: a
    /// fetcher would be pointed at the crawler's own network ([`crate::url::address`]).
    PrivateAddress,
    /// (Trap) a path segment, or a run of up to 4, repeated in a row (`/a/b/a/b/a/b/`).
    TrapRepeatedPath,
    /// (Trap) more path segments than `[sieve.traps] max_segments`.
    TrapTooDeep,
    /// (Trap) a link that repeats the path or query of the page it was found on.
    TrapEcho,
    /// (Trap) a calendar date beyond the horizon (`[sieve.traps] calendar_*`).
    TrapCalendar,
    /// The origin's robots.txt disallows it for the crawler's user agent (the gate with
    /// `[robots]` on, `dedup --robots-dir`). Not put in the filter: if the rules change, a later
    /// event of the URL is judged again.
    RobotsDisallowed,
    /// The gate's per-host budget (`[redis] max_new_urls_per_host`) for this namespace and
    /// window is spent: the URL is new, but its host already had that many new URLs published.
    /// Taken back out of the filter (fingerprints and exact modes), so a later window, a raised
    /// budget or a forget lets it in.
    HostBudget,
    /// (Text) a URL written with a name reserved for documentation and tests (`example.com`,
    /// `.example`, `.test`, `.invalid`): no crawl of the public web reaches it.
    ReservedHost,
    /// (Text) a URL written with a single-label host (`http://server/`): a name only inside
    /// someone's network.
    SingleLabelHost,
    /// (Text) a URL written with a top-level name the public DNS does not delegate (not in the
    /// Public Suffix List: `http://www.another.url`): no crawl of the public web resolves it.
    UnknownTld,
    /// Fetch outcomes say guesses from where it was found miss (issue 46, [`crate::outcomes`]):
    /// its source's guesses so far all 404ed, or its directory's, and nothing in its directory
    /// answered. Held, not put in the filter: the Kafka gate keeps it, and once a guess from
    /// there lands (a 2xx outcome) or the key is released it is put back on the input and judged
    /// again; a fraction of such URLs is published as probes.
    FetchMisses,
    /// (JavaScript, text) a build script's file-system path: a root-relative path climbing
    /// above the root (`/../dist`), or a glob (`src/**/*.js`, `assets/{a,b}.css`).
    BuildPath,
    /// (JavaScript, text) a URL written with a placeholder name a reader is told to replace
    /// (`yourdomain.com`, `your-site.org`, `mysite.com`).
    PlaceholderHost,
    /// SVG path data (`m39.99,17.51c-15.28,11.1-15.28,33.88,0,44.98`, a `d` attribute's
    /// drawing commands in a script): only path commands and at least four numbers.
    SvgPath,
    /// (JavaScript, text) an email address written without `mailto:` (`user@example.com`):
    /// resolved as a relative link it names no page.
    EmailAddress,
}

impl Reason {
    /// Every reason, in code order; used for summaries and metric label sets.
    pub const ALL: [Reason; 64] = [
        Reason::Empty,
        Reason::TooLong,
        Reason::InvalidUtf8,
        Reason::ControlChars,
        Reason::NonFetchableScheme,
        Reason::PureSymbols,
        Reason::ColorValue,
        Reason::FragmentOnly,
        Reason::JsFragment,
        Reason::HtmlTag,
        Reason::CommentMarker,
        Reason::TemplateSyntax,
        Reason::JsCode,
        Reason::JsArtifact,
        Reason::JsKeyword,
        Reason::CssKeyword,
        Reason::CssValue,
        Reason::BareNumber,
        Reason::MimeType,
        Reason::EncodingRatio,
        Reason::BadPercentEncoding,
        Reason::Whitespace,
        Reason::InvalidUrl,
        Reason::PatternSimilar,
        Reason::EncodedBlob,
        Reason::NoBase,
        Reason::NotAString,
        Reason::JsModulePath,
        Reason::DottedIdentifier,
        Reason::VersionString,
        Reason::FormatString,
        Reason::DoubleEncoded,
        Reason::XmlNamespace,
        Reason::DotName,
        Reason::CssSelector,
        Reason::TexMacro,
        Reason::RegexSource,
        Reason::LoaderRequest,
        Reason::PackageInternal,
        Reason::DevicePath,
        Reason::Credentials,
        Reason::CharRefResidue,
        Reason::OutOfScopeDomain,
        Reason::DeniedByRule,
        Reason::TooDeep,
        Reason::TooManyParams,
        Reason::OutOfScopeScheme,
        Reason::OutOfScopePort,
        Reason::OffSite,
        Reason::PrivateAddress,
        Reason::TrapRepeatedPath,
        Reason::TrapTooDeep,
        Reason::TrapEcho,
        Reason::TrapCalendar,
        Reason::RobotsDisallowed,
        Reason::HostBudget,
        Reason::ReservedHost,
        Reason::SingleLabelHost,
        Reason::UnknownTld,
        Reason::FetchMisses,
        Reason::BuildPath,
        Reason::PlaceholderHost,
        Reason::SvgPath,
        Reason::EmailAddress,
    ];

    /// The stable machine-readable code.
    pub const fn code(self) -> &'static str {
        match self {
            Reason::Empty => "empty",
            Reason::TooLong => "too_long",
            Reason::InvalidUtf8 => "invalid_utf8",
            Reason::ControlChars => "control_chars",
            Reason::NonFetchableScheme => "non_fetchable_scheme",
            Reason::PureSymbols => "pure_symbols",
            Reason::ColorValue => "color_value",
            Reason::FragmentOnly => "fragment_only",
            Reason::JsFragment => "js_fragment",
            Reason::HtmlTag => "html_tag",
            Reason::CommentMarker => "comment_marker",
            Reason::TemplateSyntax => "template_syntax",
            Reason::JsCode => "js_code",
            Reason::JsArtifact => "js_artifact",
            Reason::JsKeyword => "js_keyword",
            Reason::CssKeyword => "css_keyword",
            Reason::CssValue => "css_value",
            Reason::BareNumber => "bare_number",
            Reason::MimeType => "mime_type",
            Reason::EncodingRatio => "encoding_ratio",
            Reason::BadPercentEncoding => "bad_percent_encoding",
            Reason::Whitespace => "whitespace",
            Reason::InvalidUrl => "invalid_url",
            Reason::PatternSimilar => "pattern_similar",
            Reason::EncodedBlob => "encoded_blob",
            Reason::NoBase => "no_base",
            Reason::NotAString => "not_a_string",
            Reason::JsModulePath => "js_module_path",
            Reason::DottedIdentifier => "dotted_identifier",
            Reason::VersionString => "version_string",
            Reason::FormatString => "format_string",
            Reason::DoubleEncoded => "double_encoded",
            Reason::XmlNamespace => "xml_namespace",
            Reason::DotName => "dot_name",
            Reason::CssSelector => "css_selector",
            Reason::TexMacro => "tex_macro",
            Reason::RegexSource => "regex_source",
            Reason::LoaderRequest => "loader_request",
            Reason::PackageInternal => "package_internal",
            Reason::DevicePath => "device_path",
            Reason::Credentials => "credentials",
            Reason::CharRefResidue => "char_ref_residue",
            Reason::OutOfScopeDomain => "out_of_scope_domain",
            Reason::DeniedByRule => "denied_by_rule",
            Reason::TooDeep => "too_deep",
            Reason::TooManyParams => "too_many_params",
            Reason::OutOfScopeScheme => "out_of_scope_scheme",
            Reason::OutOfScopePort => "out_of_scope_port",
            Reason::OffSite => "off_site",
            Reason::PrivateAddress => "private_address",
            Reason::TrapRepeatedPath => "trap_repeated_path",
            Reason::TrapTooDeep => "trap_too_deep",
            Reason::TrapEcho => "trap_echo",
            Reason::TrapCalendar => "trap_calendar",
            Reason::RobotsDisallowed => "robots_disallowed",
            Reason::HostBudget => "host_budget",
            Reason::ReservedHost => "reserved_host",
            Reason::SingleLabelHost => "single_label_host",
            Reason::UnknownTld => "unknown_tld",
            Reason::FetchMisses => "fetch_misses",
            Reason::BuildPath => "build_path",
            Reason::PlaceholderHost => "placeholder_host",
            Reason::SvgPath => "svg_path",
            Reason::EmailAddress => "email_address",
        }
    }

    /// Dense index into [`Reason::ALL`], for per-reason counters without hashing.
    pub fn index(self) -> usize {
        Reason::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Error for [`Reason::from_str`].
#[derive(Debug, thiserror::Error)]
#[error("unknown reason code {0:?}")]
pub struct UnknownReason(pub String);

impl FromStr for Reason {
    type Err = UnknownReason;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Reason::ALL
            .iter()
            .copied()
            .find(|r| r.code() == s)
            .ok_or_else(|| UnknownReason(s.to_owned()))
    }
}

impl serde::Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl<'de> serde::Deserialize<'de> for Reason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert!(seen.insert(r.code()), "duplicate code {}", r.code());
            assert_eq!(r.code().parse::<Reason>().unwrap(), *r);
            assert_eq!(r.index(), i);
        }
        assert!("nope".parse::<Reason>().is_err());
    }
}
