//! The API's request and response bodies: [`FilterRequest`] with its hand-written `urls`
//! reader ([`Candidates`], abandoned past `serve.max_urls`), [`FilterResponse`] and its parts,
//! and `split`, which sets the non-string candidates aside as `not_a_string`.

use serde::{Deserialize, Serialize};

use crate::url::Reason;

/// A filter request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterRequest {
    /// The filter namespace (seed 001's `filter_typeid`, accepted as an alias); default:
    /// `redis.namespace`.
    #[serde(default, alias = "filter_typeid")]
    pub namespace: Option<String>,
    /// The candidates: strings; any other JSON value is rejected as `not_a_string`.
    pub urls: Candidates,
    /// The page the candidates came from: the base of relative ones.
    #[serde(default)]
    pub source: Option<String>,
    /// Check without marking the new URLs as seen.
    #[serde(default)]
    pub check_only: bool,
    /// Where the candidates were found (`html_attr`, `js`, …; default `unknown`): decoded
    /// accordingly before they are judged.
    #[serde(default)]
    pub context: crate::url::Context,
}

/// One element of `urls`: a string, or any other JSON value kept as its JSON text (at most
/// 200 bytes) for the `not_a_string` rejection.
#[derive(Debug, Clone, PartialEq)]
pub enum Candidate {
    /// A string: a URL candidate.
    Url(String),
    /// Not a string.
    Other(String),
}

/// The `urls` array, read element by element and abandoned at the first element past the
/// limit set by [`FilterRequest::parse`] (`serve.max_urls`): an oversized array costs no more
/// than `max_urls + 1` elements of memory, whatever its length.
#[derive(Debug, Default)]
pub struct Candidates(pub Vec<Candidate>);

/// How [`FilterRequest::parse`] failed.
#[derive(Debug)]
pub enum ParseError {
    /// More than the limit of URLs.
    TooMany,
    /// JSON of the wrong shape (422 `invalid_request`).
    Invalid(String),
    /// Not JSON (400 `malformed_json`).
    Malformed(String),
}

const TOO_MANY: &str = "crawlsieve: too many urls";

thread_local! {
    /// The element limit of the `urls` array being parsed on this thread.
    static URL_LIMIT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

impl FilterRequest {
    /// Parse a request body, reading at most `max_urls` elements of `urls` (blocking work:
    /// run it off the async workers).
    pub fn parse(body: &[u8], max_urls: usize) -> Result<FilterRequest, ParseError> {
        URL_LIMIT.with(|c| c.set(max_urls));
        let r = serde_json::from_slice::<FilterRequest>(body);
        URL_LIMIT.with(|c| c.set(usize::MAX));
        r.map_err(|e| {
            if e.to_string().starts_with(TOO_MANY) {
                ParseError::TooMany
            } else if e.is_data() {
                ParseError::Invalid(e.to_string())
            } else {
                ParseError::Malformed(e.to_string())
            }
        })
    }
}

/// JSON text of a non-string element, cut to 200 bytes on a character boundary.
fn json_text(v: &serde_json::Value) -> String {
    let mut t = v.to_string();
    if t.len() > 200 {
        let mut cut = 200;
        while !t.is_char_boundary(cut) {
            cut -= 1;
        }
        t.truncate(cut);
    }
    t
}

impl<'de> Deserialize<'de> for Candidate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Candidate, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Candidate;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a URL candidate")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Candidate, E> {
                Ok(Candidate::Url(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Candidate, E> {
                Ok(Candidate::Url(v))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Candidate, E> {
                Ok(Candidate::Other(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Candidate, E> {
                Ok(Candidate::Other(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Candidate, E> {
                Ok(Candidate::Other(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Candidate, E> {
                Ok(Candidate::Other(json_text(&serde_json::json!(v))))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Candidate, E> {
                Ok(Candidate::Other("null".into()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, a: A) -> Result<Candidate, A::Error> {
                let v = serde_json::Value::deserialize(
                    serde::de::value::SeqAccessDeserializer::new(a),
                )?;
                Ok(Candidate::Other(json_text(&v)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, a: A) -> Result<Candidate, A::Error> {
                let v = serde_json::Value::deserialize(
                    serde::de::value::MapAccessDeserializer::new(a),
                )?;
                Ok(Candidate::Other(json_text(&v)))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Candidates {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Candidates, D::Error> {
        struct V(usize);
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Candidates;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of URL strings")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Candidates, A::Error> {
                let mut out = Vec::with_capacity(a.size_hint().unwrap_or(0).min(self.0).min(4096));
                while let Some(c) = a.next_element::<Candidate>()? {
                    if out.len() == self.0 {
                        return Err(serde::de::Error::custom(TOO_MANY));
                    }
                    out.push(c);
                }
                Ok(Candidates(out))
            }
        }
        d.deserialize_seq(V(URL_LIMIT.with(|c| c.get())))
    }
}

/// One rejected candidate.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct RejectedUrl {
    /// Its position in `urls`.
    pub index: usize,
    /// The candidate (a non-string element as JSON text, at most 200 bytes).
    pub url: String,
    /// The reason code.
    pub reason: String,
}

/// A filter response.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct FilterResponse {
    /// The namespace used.
    pub namespace: String,
    /// Candidates received.
    pub received: usize,
    /// The new URLs, canonical, in input order.
    pub new: Vec<String>,
    /// Positions of the new URLs in `urls` (same order as `new`).
    pub new_index: Vec<usize>,
    /// Rejected candidates, in input order.
    pub rejected: Vec<RejectedUrl>,
    /// Candidates already seen (before, or earlier in this request).
    pub duplicates: usize,
    /// Candidates held for robots.txt (`[robots]` on: their site's rules could not be read
    /// within `robots.fetch_timeout`, or its server fails): not marked seen; ask again later.
    /// Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<HeldUrl>,
}

/// A candidate held for robots.txt.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct HeldUrl {
    /// Position in `urls`.
    pub index: usize,
    /// The candidate as sent.
    pub url: String,
}

/// A request's candidates: the strings, their positions, and the other JSON values, rejected
/// `not_a_string`.
pub(super) type Split = (Vec<String>, Vec<usize>, Vec<RejectedUrl>);

pub(super) fn split(urls: Vec<Candidate>) -> Split {
    let (mut strings, mut idx, mut other) = (Vec::new(), Vec::new(), Vec::new());
    for (i, c) in urls.into_iter().enumerate() {
        match c {
            Candidate::Url(s) => {
                strings.push(s);
                idx.push(i);
            }
            Candidate::Other(t) => other.push(RejectedUrl {
                index: i,
                url: t,
                reason: Reason::NotAString.code().into(),
            }),
        }
    }
    (strings, idx, other)
}
