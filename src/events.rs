//! The gate's Kafka events, one type per JSON Schema in `schemas/` (versioned `.v1`):
//!
//! | type | schema | topic |
//! |---|---|---|
//! | [`UrlEvent`] | `url-event.v1.json` | input (a bare URL string as the value is accepted too) |
//! | [`FetchEvent`] | `fetch-event.v1.json` | fetch topic, keyed by host |
//! | [`RejectedEvent`] | `rejected-event.v1.json` | optional audit topic |
//! | [`DeadLetter`] | `dead-letter.v1.json` | dead-letter topic |
//!
//! Decoding never panics: a message that is not one of the accepted forms becomes a
//! [`DeadLetterCode`] with a detail, and its offset still advances. Unknown top-level fields
//! are refused (they are usually typos: `"ulr"`); `metadata` is the extension point and is
//! passed through untouched. (The pass-through fields are spelled out in each type rather than
//! shared through `#[serde(flatten)]`, which serde cannot combine with `deny_unknown_fields`.)

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::url::Reason;

/// Largest input message accepted by default (bytes); larger ones are dead-lettered.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1 << 20;

/// HTTP method of the request the URL is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// GET (the default).
    Get,
    /// HEAD.
    Head,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
    /// OPTIONS.
    Options,
}

/// A URL candidate, as the link extractor publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrlEvent {
    /// The candidate, as extracted (may be relative, or junk: the gate decides).
    pub url: String,
    /// The page it was found on (also the base for relative candidates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Link depth from the crawl's seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// When the link extractor found it (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovered_at: Option<String>,
    /// The filter namespace to use (default: the gate's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Crawl identifier, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawl_id: Option<String>,
    /// HTTP method (default GET).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    /// Free-form data, passed through to the fetch event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Where the extractor found the candidate (`html_attr`, `js`, …; absent: `unknown`): the
    /// gate decodes it accordingly before judging it ([`crate::url::Context`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<crate::url::Context>,
}

/// Why a message went to the dead-letter topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterCode {
    /// Larger than the configured maximum.
    TooLarge,
    /// Not valid UTF-8.
    NotUtf8,
    /// Starts like JSON but does not parse.
    NotJson,
    /// Valid JSON that is not a URL event (wrong types, unknown or missing fields, bad values).
    SchemaInvalid,
    /// Empty value (or only whitespace).
    Empty,
    /// Names a namespace the gate will not serve: beyond its `redis.max_namespaces` (each
    /// costs a filter client and its local tier; an unbounded set would let producers exhaust
    /// the gate's memory), or missing from Redis while `redis.create_missing` is off.
    NamespaceRefused,
}

impl DeadLetterCode {
    /// Every code, in the schema's order.
    pub const ALL: [DeadLetterCode; 6] = [
        DeadLetterCode::TooLarge,
        DeadLetterCode::NotUtf8,
        DeadLetterCode::NotJson,
        DeadLetterCode::SchemaInvalid,
        DeadLetterCode::Empty,
        DeadLetterCode::NamespaceRefused,
    ];

    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            DeadLetterCode::TooLarge => "too_large",
            DeadLetterCode::NotUtf8 => "not_utf8",
            DeadLetterCode::NotJson => "not_json",
            DeadLetterCode::SchemaInvalid => "schema_invalid",
            DeadLetterCode::Empty => "empty",
            DeadLetterCode::NamespaceRefused => "namespace_refused",
        }
    }
}

/// A message that could not be decoded: its code and a human-readable detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Stable code.
    pub code: DeadLetterCode,
    /// What exactly is wrong.
    pub detail: String,
}

fn bad(code: DeadLetterCode, detail: impl Into<String>) -> DecodeError {
    DecodeError {
        code,
        detail: detail.into(),
    }
}

impl UrlEvent {
    /// An event carrying only a URL.
    pub fn bare(url: impl Into<String>) -> UrlEvent {
        UrlEvent {
            url: url.into(),
            source: None,
            depth: None,
            discovered_at: None,
            namespace: None,
            crawl_id: None,
            method: None,
            metadata: None,
            context: None,
        }
    }

    /// Decode a message value: a JSON object (`url-event.v1.json`), a JSON string, or a bare
    /// URL (any value not starting with `{` or `"`; surrounding whitespace is trimmed).
    pub fn decode(value: &[u8], max_bytes: usize) -> Result<UrlEvent, DecodeError> {
        if value.len() > max_bytes {
            return Err(bad(
                DeadLetterCode::TooLarge,
                format!("{} bytes (the limit is {max_bytes})", value.len()),
            ));
        }
        let text = std::str::from_utf8(value).map_err(|e| {
            bad(
                DeadLetterCode::NotUtf8,
                format!("invalid UTF-8 at byte {}", e.valid_up_to()),
            )
        })?;
        // A byte-order mark some producers write first is not part of the value.
        let t = text.trim().trim_start_matches('\u{feff}').trim();
        if t.is_empty() {
            return Err(bad(DeadLetterCode::Empty, "empty message"));
        }
        let ev = match t.as_bytes()[0] {
            b'{' => parse_json::<UrlEvent>(t)?,
            b'"' => UrlEvent::bare(parse_json::<String>(t)?),
            _ => UrlEvent::bare(t),
        };
        ev.check()?;
        Ok(ev)
    }

    /// Value checks the types alone cannot express (the schema states them too).
    pub fn check(&self) -> Result<(), DecodeError> {
        if self.url.trim().is_empty() {
            return Err(bad(DeadLetterCode::SchemaInvalid, "url is empty"));
        }
        if let Some(ns) = &self.namespace {
            if !crate::redis_filter::layout::is_namespace(ns) {
                return Err(bad(
                    DeadLetterCode::SchemaInvalid,
                    format!("namespace {ns:?}: use 1–64 of A–Z a–z 0–9 . _ -"),
                ));
            }
        }
        if let Some(t) = &self.discovered_at {
            if !is_rfc3339(t) {
                return Err(bad(
                    DeadLetterCode::SchemaInvalid,
                    format!("discovered_at {t:?} is not an RFC 3339 time"),
                ));
            }
        }
        Ok(())
    }
}

/// Deepest nesting of arrays and objects accepted (serde_json's own default is 128; deeper
/// valid JSON is refused as `schema_invalid`, never as `not_json`, and nothing deep enough to
/// exhaust the stack when it is parsed, written out or dropped gets in).
pub const MAX_JSON_DEPTH: usize = 512;

/// Parse a JSON value of the url-event forms: valid JSON nested up to [`MAX_JSON_DEPTH`], with
/// lone UTF-16 surrogate escapes (valid JSON syntax, not valid Unicode) read as U+FFFD.
fn parse_json<T: serde::de::DeserializeOwned>(t: &str) -> Result<T, DecodeError> {
    // Nesting is bounded by the brackets a message holds: count them first (a vectorized
    // count; the byte-by-byte depth scan only when there are that many: issue 24's profile).
    let brackets = t.bytes().filter(|&b| b == b'{' || b == b'[').count();
    let depth = if brackets > MAX_JSON_DEPTH {
        json_depth(t)
    } else {
        0
    };
    if depth > MAX_JSON_DEPTH {
        return Err(bad(
            DeadLetterCode::SchemaInvalid,
            format!("nested {depth} levels deep (the limit is {MAX_JSON_DEPTH})"),
        ));
    }
    let parse = |text: &str| {
        let mut de = serde_json::Deserializer::from_str(text);
        de.disable_recursion_limit();
        let v = T::deserialize(&mut de)?;
        de.end()?;
        Ok::<T, serde_json::Error>(v)
    };
    match parse(t) {
        Ok(v) => Ok(v),
        Err(e) => match replace_lone_surrogates(t) {
            Some(fixed) => parse(&fixed).map_err(json_error),
            None => Err(json_error(e)),
        },
    }
}

/// Deepest nesting of `[`/`{` outside strings.
fn json_depth(t: &str) -> usize {
    let (mut depth, mut max, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for b in t.bytes() {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// `t` with every `\uXXXX` escape of an unpaired surrogate replaced by `\uFFFD`; `None` if
/// there is none.
fn replace_lone_surrogates(t: &str) -> Option<String> {
    let b = t.as_bytes();
    let hex = |i: usize| -> Option<u16> {
        let s = t.get(i..i + 4)?;
        u16::from_str_radix(s, 16).ok()
    };
    // An escape `\uXXXX` at i (i points at the backslash).
    let unit = |i: usize| -> Option<u16> {
        (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u')).then(|| hex(i + 2))?
    };
    let mut out = String::with_capacity(t.len());
    let (mut i, mut last, mut changed, mut in_str) = (0, 0, false, false);
    while i < b.len() {
        match b[i] {
            b'"' => {
                in_str = !in_str;
                i += 1;
            }
            b'\\' if in_str => match unit(i) {
                Some(u @ 0xD800..=0xDBFF) if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) => {
                    let _ = u;
                    i += 12;
                }
                Some(0xD800..=0xDFFF) => {
                    out.push_str(&t[last..i]);
                    out.push_str("\\uFFFD");
                    i += 6;
                    last = i;
                    changed = true;
                }
                Some(_) => i += 6,
                None => i += 2,
            },
            _ => i += 1,
        }
    }
    out.push_str(&t[last..]);
    changed.then_some(out)
}

/// Whether `t` is an RFC 3339 `date-time` (what JSON Schema's `format: date-time` means):
/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, `T` and `Z` in either case, real calendar dates,
/// seconds up to 60 (a leap second).
pub fn is_rfc3339(t: &str) -> bool {
    let b = t.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let s = b.get(r)?;
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| s.iter().fold(0u32, |a, &d| a * 10 + (d - b'0') as u32))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let (Some(y), Some(mo), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    if !(at(4, b'-') && at(7, b'-') && matches!(b.get(10), Some(b'T' | b't'))) {
        return false;
    }
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match mo {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if d == 0 || d > days {
        return false;
    }
    let (Some(h), Some(mi), Some(s)) = (num(11..13), num(14..16), num(17..19)) else {
        return false;
    };
    if !(at(13, b':') && at(16, b':')) || h > 23 || mi > 59 || s > 60 {
        return false;
    }
    let mut i = 19;
    if at(i, b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            i + 6 == b.len()
                && at(i + 3, b':')
                && num(i + 1..i + 3).is_some_and(|oh| oh <= 23)
                && num(i + 4..i + 6).is_some_and(|om| om <= 59)
        }
        _ => false,
    }
}

fn json_error(e: serde_json::Error) -> DecodeError {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            bad(DeadLetterCode::NotJson, e.to_string())
        }
        Category::Data => bad(DeadLetterCode::SchemaInvalid, e.to_string()),
    }
}

/// A new URL, for the fetchers. Keyed by `host` on the fetch topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchEvent {
    /// The canonical URL (what to fetch).
    pub url: String,
    /// The candidate as it arrived.
    pub original: String,
    /// Its URL pattern (`/item/{int}`-style, see `crawlsieve pattern`).
    pub pattern: String,
    /// Host (lowercase, with a non-default port), the message key.
    pub host: String,
    /// The filter namespace that judged it new.
    pub namespace: String,
    /// Passed through from the input event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Where the candidate was found, passed through from the input event (issue 46): a
    /// fetcher echoes it, with `source`, in its fetch outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<crate::url::Context>,
    /// Passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovered_at: Option<String>,
    /// Passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawl_id: Option<String>,
    /// Passed through (absent = GET).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    /// Passed through untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// The `Crawl-delay` (seconds) of the robots.txt group that applies to the crawler, when
    /// the gate applies robots.txt (`[robots]`) and the group has one: for fetchers that are
    /// polite per host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawl_delay_s: Option<f64>,
    /// When the gate emitted it (RFC 3339, UTC).
    pub gated_at: String,
}

/// What fetching a fetch event's URL returned (`schemas/fetch-outcome.v1.json`): read by the
/// gate from `kafka.outcomes_topic`, and by `dedup --outcomes FILE`; published by the render
/// stage for every page it fetches ([`crate::outcomes`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchOutcome {
    /// The fetch event's `url`.
    pub url: String,
    /// The HTTP status; 0 when nothing answered.
    pub status: u16,
    /// Where redirects ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_url: Option<String>,
    /// The fetcher judged the 2xx page a soft 404.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_404: Option<bool>,
    /// The fetch event's `source`, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The fetch event's `context`, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<crate::url::Context>,
    /// The fetch event's namespace (none: the gate's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// When it was fetched (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetched_at: Option<String>,
}

impl FetchOutcome {
    /// The keys it counts under and its kind, or none when it says nothing either way (a
    /// 3xx, 401, 5xx, no answer; [`crate::outcomes::kind`]).
    pub fn counted(&self) -> Option<(crate::outcomes::GuessKeys, crate::outcomes::Kind)> {
        let kind = crate::outcomes::kind(self.status, self.soft_404.unwrap_or(false))?;
        Some((
            crate::outcomes::keys(&self.url, self.source.as_deref(), self.context),
            kind,
        ))
    }
}

/// A [`FetchEvent`] as the gate writes it: the same fields, borrowed from the URL event and
/// the gate's state, so writing one copies nothing twice (the gate writes one per new URL).
/// `fetch_event_ref_writes_a_fetch_event` pins the two forms to the same JSON.
#[derive(Debug, Serialize)]
pub struct FetchEventRef<'a> {
    pub url: &'a str,
    pub original: &'a str,
    pub pattern: &'a str,
    pub host: &'a str,
    pub namespace: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<crate::url::Context>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovered_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crawl_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crawl_delay_s: Option<f64>,
    pub gated_at: &'a str,
}

impl<'a> FetchEventRef<'a> {
    /// `ev`'s fetch event, with the fields the gate adds.
    pub fn of(
        ev: &'a UrlEvent,
        url: &'a str,
        pattern: &'a str,
        host: &'a str,
        namespace: &'a str,
        gated_at: &'a str,
    ) -> Self {
        FetchEventRef {
            url,
            original: &ev.url,
            pattern,
            host,
            namespace,
            source: ev.source.as_deref(),
            context: ev.context,
            depth: ev.depth,
            discovered_at: ev.discovered_at.as_deref(),
            crawl_id: ev.crawl_id.as_deref(),
            method: ev.method,
            metadata: ev.metadata.as_ref(),
            crawl_delay_s: None,
            gated_at,
        }
    }
}

/// A rejected candidate, for the optional audit topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectedEvent {
    /// The candidate as it arrived.
    pub url: String,
    /// Why (a stable reason code, as in `crawlsieve check`).
    pub reason: Reason,
    /// Namespace of the input event, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawl_id: Option<String>,
    /// When the gate judged it (RFC 3339, UTC).
    pub gated_at: String,
}

/// A message the gate could not read, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadLetter {
    /// Stable error code.
    pub error: DeadLetterCode,
    /// What exactly is wrong.
    pub detail: String,
    /// Source topic.
    pub topic: String,
    /// Source partition.
    pub partition: i32,
    /// Source offset.
    pub offset: i64,
    /// The message key, if it was UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Size of the value in bytes.
    pub value_bytes: usize,
    /// The first bytes of the value (at most [`DEAD_LETTER_PREFIX`]), lossily decoded.
    pub value_prefix: String,
    /// When the gate received it (RFC 3339, UTC).
    pub received_at: String,
}

/// Bytes of a dead-lettered value kept in [`DeadLetter::value_prefix`].
pub const DEAD_LETTER_PREFIX: usize = 1024;

impl DeadLetter {
    /// A dead letter for `value` at `topic/partition/offset`.
    pub fn new(
        err: &DecodeError,
        topic: &str,
        partition: i32,
        offset: i64,
        key: Option<&[u8]>,
        value: &[u8],
    ) -> DeadLetter {
        let mut end = value.len().min(DEAD_LETTER_PREFIX);
        // Do not cut a UTF-8 sequence in half when the value is text.
        while end > 0 && end < value.len() && (value[end] & 0xC0) == 0x80 {
            end -= 1;
        }
        DeadLetter {
            error: err.code,
            detail: err.detail.clone(),
            topic: topic.to_string(),
            partition,
            offset,
            key: key
                .and_then(|k| std::str::from_utf8(k).ok())
                .map(String::from),
            value_bytes: value.len(),
            value_prefix: String::from_utf8_lossy(&value[..end]).into_owned(),
            received_at: now_rfc3339(),
        }
    }
}

/// The current time, RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_event_ref_writes_a_fetch_event() {
        let full = UrlEvent::decode(
            br#"{"url":"/a\"b","source":"https://s.example/","depth":2,"discovered_at":"2026-01-01T00:00:00Z","crawl_id":"c","method":"POST","metadata":{"k":[1,"\u00e9"]}}"#,
            DEFAULT_MAX_MESSAGE_BYTES,
        )
        .unwrap();
        for ev in [full, UrlEvent::bare("x")] {
            let mut r = FetchEventRef::of(
                &ev,
                "https://s.example/a%22b",
                "s.example/{str}",
                "s.example",
                "ns",
                "2026-01-02T00:00:00.000Z",
            );
            r.crawl_delay_s = ev.depth.map(|d| d as f64 / 2.0);
            let json = serde_json::to_string(&r).unwrap();
            let back: FetchEvent = serde_json::from_str(&json).unwrap();
            let owned = FetchEvent {
                url: r.url.into(),
                original: ev.url.clone(),
                pattern: r.pattern.into(),
                host: r.host.into(),
                namespace: r.namespace.into(),
                source: ev.source.clone(),
                context: ev.context,
                depth: ev.depth,
                discovered_at: ev.discovered_at.clone(),
                crawl_id: ev.crawl_id.clone(),
                method: ev.method,
                metadata: ev.metadata.clone(),
                crawl_delay_s: r.crawl_delay_s,
                gated_at: r.gated_at.into(),
            };
            assert_eq!(back, owned);
            assert_eq!(json, serde_json::to_string(&owned).unwrap());
        }
    }

    #[test]
    fn decodes_every_accepted_form() {
        let max = DEFAULT_MAX_MESSAGE_BYTES;
        assert_eq!(
            UrlEvent::decode(b"  https://a.example/x \n", max).unwrap(),
            UrlEvent::bare("https://a.example/x")
        );
        assert_eq!(
            UrlEvent::decode(br#""/relative""#, max).unwrap(),
            UrlEvent::bare("/relative")
        );
        let ev = UrlEvent::decode(
            br#"{"url":"/a","source":"https://s.example/","depth":2,"method":"POST","metadata":{"k":[1]}}"#,
            max,
        )
        .unwrap();
        assert_eq!(ev.depth, Some(2));
        assert_eq!(ev.method, Some(Method::Post));
    }

    #[test]
    fn refuses_with_a_code() {
        let max = 64;
        let code = |v: &[u8]| UrlEvent::decode(v, max).unwrap_err().code;
        assert_eq!(code(&[b'x'; 65]), DeadLetterCode::TooLarge);
        assert_eq!(code(b"\xff\xfe"), DeadLetterCode::NotUtf8);
        assert_eq!(code(b"{\"url\": "), DeadLetterCode::NotJson);
        assert_eq!(code(b"{\"ulr\": \"x\"}"), DeadLetterCode::SchemaInvalid);
        assert_eq!(code(b"{\"url\": 5}"), DeadLetterCode::SchemaInvalid);
        assert_eq!(
            code(b"{\"url\": \"x\", \"depth\": -1}"),
            DeadLetterCode::SchemaInvalid
        );
        assert_eq!(
            code(b"{\"url\": \"x\", \"namespace\": \"a b\"}"),
            DeadLetterCode::SchemaInvalid
        );
        assert_eq!(
            code(b"{\"url\": \"x\", \"discovered_at\": \"yesterday\"}"),
            DeadLetterCode::SchemaInvalid
        );
        assert_eq!(code(b"{\"url\": \"  \"}"), DeadLetterCode::SchemaInvalid);
        assert_eq!(code(b" \n"), DeadLetterCode::Empty);
    }

    #[test]
    fn dead_letters_keep_a_bounded_prefix() {
        let value = "é".repeat(DEAD_LETTER_PREFIX); // 2 bytes each
        let err = bad(DeadLetterCode::TooLarge, "x");
        let d = DeadLetter::new(&err, "in", 3, 42, Some(b"k"), value.as_bytes());
        assert_eq!(d.value_bytes, 2 * DEAD_LETTER_PREFIX);
        assert!(d.value_prefix.len() <= DEAD_LETTER_PREFIX);
        assert!(!d.value_prefix.contains('\u{fffd}'), "no split character");
        assert_eq!(d.key.as_deref(), Some("k"));
    }
}
