//! The gate's pure core: one candidate in, one decision out — validate, canonicalize, check-and-set
//! the filter. Synchronous and I/O-free, so the embedded `dedup` job, the Kafka gate and the HTTP
//! API wrap the same function (the vector `transform_one` shape).

use url::Url;

use crate::bloom::{fingerprint, BloomFilter};
use crate::url::{CanonError, Canonicalizer, Reason, Validator};

/// What happened to one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// New: emit it.
    Keep,
    /// Junk or unparsable.
    Reject(Reason),
    /// Canonical form already seen.
    Duplicate,
}

impl Verdict {
    /// `keep`, `reject` or `duplicate`, as in the output contract.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Keep => "keep",
            Verdict::Reject(_) => "reject",
            Verdict::Duplicate => "duplicate",
        }
    }

    /// The reason code of a rejection.
    pub fn reason(self) -> Option<Reason> {
        match self {
            Verdict::Reject(r) => Some(r),
            _ => None,
        }
    }
}

/// Map a canonicalization failure to its reason code.
pub fn canon_reason(e: &CanonError) -> Reason {
    match e {
        CanonError::Parse(_) => Reason::InvalidUrl,
        CanonError::Scheme(_) => Reason::NonFetchableScheme,
    }
}

/// Validator + canonicalizer (+ optional base), with a reused output buffer.
#[derive(Debug, Clone)]
pub struct Sieve {
    /// Junk rules.
    pub validator: Validator,
    /// Canonicalization policy.
    pub canon: Canonicalizer,
    /// Base URL for relative candidates.
    pub base: Option<Url>,
    buf: String,
}

impl Sieve {
    /// A sieve from its parts.
    pub fn new(validator: Validator, canon: Canonicalizer, base: Option<Url>) -> Self {
        Sieve { validator, canon, base, buf: String::with_capacity(256) }
    }

    /// Validate and canonicalize. `Ok(canonical)` borrows the internal buffer.
    pub fn classify(&mut self, line: &[u8], truncated: bool) -> Result<&str, Reason> {
        if truncated {
            return Err(Reason::TooLong);
        }
        let s = self.validator.check_bytes(line)?;
        self.canon.canonicalize_into(s, self.base.as_ref(), &mut self.buf).map_err(|e| canon_reason(&e))?;
        Ok(&self.buf)
    }

    /// Validate, canonicalize and check-and-set `filter`. The canonical URL (for `Keep` and
    /// `Duplicate`) is in [`Sieve::canonical`] until the next call.
    pub fn process(&mut self, line: &[u8], truncated: bool, filter: &BloomFilter) -> Verdict {
        match self.classify(line, truncated) {
            Err(r) => Verdict::Reject(r),
            Ok(c) => {
                if filter.insert(fingerprint(c.as_bytes())) {
                    Verdict::Keep
                } else {
                    Verdict::Duplicate
                }
            }
        }
    }

    /// The canonical URL of the last successful [`Sieve::classify`] / [`Sieve::process`].
    pub fn canonical(&self) -> &str {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decides() {
        let f = BloomFilter::with_capacity(100, 0.001).unwrap();
        let mut s = Sieve::new(Validator::default(), Canonicalizer::default(), Url::parse("http://h.com/a/").ok());
        assert_eq!(s.process(b"x.html#top", false, &f), Verdict::Keep);
        assert_eq!(s.canonical(), "http://h.com/a/x.html");
        assert_eq!(s.process(b"HTTP://H.COM:80/a/x.html?utm_source=z", false, &f), Verdict::Duplicate);
        assert_eq!(s.process(b"javascript:void(0)", false, &f), Verdict::Reject(Reason::NonFetchableScheme));
        assert_eq!(s.process(b"http://exa mple.com/", false, &f), Verdict::Reject(Reason::InvalidUrl));
        assert_eq!(s.process(b"/a", true, &f), Verdict::Reject(Reason::TooLong));
        assert_eq!(s.process(b"\xff", false, &f), Verdict::Reject(Reason::InvalidUtf8));
    }
}
