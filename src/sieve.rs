//! The gate's pure core: one candidate in, one decision out — validate, canonicalize, check-and-set
//! the filter. Synchronous and I/O-free, so the embedded `dedup` job, the Kafka gate and the HTTP
//! API wrap the same function (the vector `transform_one` shape).

use url::Url;

use crate::bloom::{fingerprint, BloomFilter, CheckAndSet};
use crate::decision::Decision;
use crate::url::{CanonError, Canonicalizer, Reason, Validator};

/// What happened to one candidate: the decision's one verdict type (issue 44).
pub use crate::decision::Verdict;

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
    /// Base URL for relative candidates (replaced by the source while one is set with
    /// [`Sieve::set_source`]).
    pub base: Option<Url>,
    /// The page the next candidates were found on ([`Sieve::set_source`]): parsed only when a
    /// candidate needs a base (relative, or judged against its source's site). Most candidates
    /// are absolute, and a stream's source changes often, so parsing every one cost the gate
    /// ~8% of its CPU.
    source: Option<(String, std::cell::OnceCell<Option<Url>>)>,
    /// Where the candidates were found: decoded accordingly before anything else
    /// ([`crate::url::Context::decode`]). `Unknown` (the default) decodes nothing.
    pub context: crate::url::Context,
    /// Crawl scope, judged on the canonical URL before the filter (`None`: everything is in
    /// scope). [`crate::scope`].
    pub scope: Option<std::sync::Arc<crate::scope::Scope>>,
    /// Special-purpose hosts candidates may name (none by default: `private_address`).
    pub address: crate::url::AddressPolicy,
    /// Spider-trap rules (`trap_*`; [`crate::url::trap`]).
    pub traps: crate::url::TrapConfig,
    /// robots.txt files already fetched (`dedup --robots-dir`): a URL they disallow is
    /// `robots_disallowed`, before the filter. (The gate fetches and shares its own:
    /// [`crate::gate`].)
    pub robots: Option<crate::input::RobotsDir>,
    /// Learned parameter rules ([`crate::url::learned`]): parameters left out of what their
    /// host's URLs are deduplicated by (the gate and the API keep each namespace's copy from
    /// Redis).
    pub learned: Option<std::sync::Arc<crate::url::LearnedRules>>,
    buf: String,
    key: String,
}

/// A trailing `'`, `>` or `\` is trimmed as extraction residue (a quote the extractor left);
/// one that decoding produced (`q=&#39;hello&#39;` in an attribute) was written by the page's
/// author as a character reference, and is part of the value: it is percent-encoded here so
/// the residue trimming leaves it (`q=%27hello%27`, what a browser requests).
fn protect_decoded_end(raw: &str, decoded: &mut String) {
    // Quotes and `>` only: a `\` the author typed before a reference is the author's (a browser
    // reads it as `/`), and stays as the rest of the pipeline treats it.
    const RESIDUE: [char; 2] = ['\'', '>'];
    let raw_tail = raw.len() - raw.trim_end_matches(RESIDUE).len();
    let kept = decoded.trim_end_matches(RESIDUE).len();
    let tail = decoded.len() - kept; // ASCII: bytes are characters
    if tail > raw_tail {
        let from_refs = tail - raw_tail;
        let escaped: String = decoded.as_bytes()[kept..kept + from_refs]
            .iter()
            .map(|b| format!("%{b:02X}"))
            .collect();
        decoded.replace_range(kept..kept + from_refs, &escaped);
    }
}

impl Sieve {
    /// A sieve from its parts.
    pub fn new(validator: Validator, canon: Canonicalizer, base: Option<Url>) -> Self {
        Sieve {
            validator,
            canon,
            base,
            source: None,
            context: crate::url::Context::Unknown,
            scope: None,
            address: Default::default(),
            traps: Default::default(),
            robots: None,
            learned: None,
            buf: String::with_capacity(256),
            key: String::new(),
        }
    }

    /// Judge the next candidates as found on `source` (its URL is their base; `None`: no base,
    /// and [`Sieve::clear_source`] restores `base`). An unparsable source is no base.
    pub fn set_source(&mut self, source: Option<&str>) {
        // No source is an empty one: it parses to no base.
        let s = source.unwrap_or_default();
        match &mut self.source {
            Some((text, _)) if text == s => {}
            Some((text, url)) => {
                text.clear();
                text.push_str(s);
                *url = std::cell::OnceCell::new();
            }
            slot => *slot = Some((s.to_string(), std::cell::OnceCell::new())),
        }
    }

    /// Back to `base` for the next candidates (no source).
    pub fn clear_source(&mut self) {
        self.source = None;
    }

    /// The base of the current candidate: the source's URL (parsed on first need), else `base`.
    fn base_of<'a>(
        source: &'a Option<(String, std::cell::OnceCell<Option<Url>>)>,
        base: &'a Option<Url>,
    ) -> Option<&'a Url> {
        match source {
            Some((text, url)) => url.get_or_init(|| Url::parse(text).ok()).as_ref(),
            None => base.as_ref(),
        }
    }

    /// Validate and canonicalize. `Ok(canonical)` borrows the internal buffer.
    pub fn classify(&mut self, line: &[u8], truncated: bool) -> Result<&str, Reason> {
        if truncated {
            return Err(Reason::TooLong);
        }
        if self.context != crate::url::Context::Unknown {
            if let Ok(text) = std::str::from_utf8(line) {
                match self.context.decode(text) {
                    std::borrow::Cow::Owned(mut decoded) => {
                        protect_decoded_end(text, &mut decoded);
                        return self.classify_decoded(&decoded);
                    }
                    // Cut short (text: CJK punctuation after the URL).
                    std::borrow::Cow::Borrowed(b) if b.len() < text.len() => {
                        let b = b.to_string();
                        return self.classify_decoded(&b);
                    }
                    std::borrow::Cow::Borrowed(_) => {}
                }
            }
        }
        self.classify_decoded_bytes(line)
    }

    fn classify_decoded(&mut self, s: &str) -> Result<&str, Reason> {
        self.classify_decoded_bytes(s.as_bytes())
    }

    fn classify_decoded_bytes(&mut self, line: &[u8]) -> Result<&str, Reason> {
        let s = self.validator.check_bytes_in(line, self.context)?;
        // A relative candidate with no page to resolve it against is `no_base` at once: three
        // quarters of the real corpus read without `--base` (issue 44: they were canonicalized
        // first, a quarter of `check`'s work, and rejected after).
        if self.base.is_none() && self.source.as_ref().is_none_or(|(t, _)| t.is_empty()) {
            let b = s.as_bytes();
            // A scheme and a host:port both need a `:` (most relative candidates have none).
            let colon = crate::url::find_byte(b':', b).is_some();
            if !matches!(b, [b'/' | b'\\', b'/' | b'\\', ..])
                && !(colon
                    && (crate::url::lex::scheme_of(b).is_some()
                        || crate::url::lex::is_host_port(b)))
            {
                return Err(Reason::NoBase);
            }
        }
        // An absolute URL already in canonical form needs no base: the source is not parsed.
        if !self.canon.canonicalize_fast(&s, &mut self.buf) {
            let base = Self::base_of(&self.source, &self.base);
            self.canon
                .canonicalize_into(&s, base, &mut self.buf)
                .map_err(|e| canon_reason(&e))?;
        }
        // The limit is for what the fetcher gets: escaping can lengthen a candidate (`\\` →
        // `%5C`), and a canonical URL must pass the validator it came through.
        if self.buf.len() > self.validator.config().max_len {
            return Err(Reason::TooLong);
        }
        // The escape ratio was measured against the candidate; a shorter canonical form (a
        // tracking parameter stripped) is judged again, or it could be kept only via its source.
        if self.buf.len() < s.len() && self.validator.canonical_escapes_exceed(&self.buf) {
            return Err(Reason::EncodingRatio);
        }
        // A relative candidate with no page to resolve it against (no source, no base) is
        // nothing a fetcher can fetch: `no_base`, as the gate and the API say it.
        let http = self.buf.starts_with("https://") || self.buf.starts_with("http://");
        if !http && crate::url::lex::scheme_of(self.buf.as_bytes()).is_none() {
            return Err(Reason::NoBase);
        }
        // A host that is this machine or its network, by literal or localhost name, whatever
        // the spelling (canonicalized: `0x7f.1` is `127.0.0.1`).
        // Traps are judged on what would be fetched: an absolute URL (a relative one's `../`
        // are not resolved yet).
        if http {
            self.address.check(&self.buf)?;
            let source = match &self.source {
                Some((text, _)) => Some(text.as_str()).filter(|t| !t.is_empty()),
                None => self.base.as_ref().map(Url::as_str),
            };
            self.traps.check(&self.buf, source)?;
        }
        // Scope after canonicalization (it judges what would be fetched), before the filter (an
        // out-of-scope URL never takes a place in it).
        if let Some(scope) = &self.scope {
            let base = if scope.uses_source() {
                Self::base_of(&self.source, &self.base)
            } else {
                None
            };
            scope.check(&self.buf, base)?;
        }
        if let Some(r) = &mut self.robots {
            if !r.allowed(&self.buf) {
                return Err(Reason::RobotsDisallowed);
            }
        }
        Ok(&self.buf)
    }

    /// The fingerprint a canonical URL is deduplicated by: of the URL itself, or of its key under
    /// the opt-in merges ([`crate::url::Merge`]).
    /// Works on the canonical URL in `self.buf`, as left by [`Sieve::classify`].
    /// Learned parameter rules ([`Sieve::learned`]) drop their parameters from that key (not
    /// from the URL).
    pub fn dedup_fingerprint(&mut self) -> u128 {
        let learned = self.learned.as_ref().and_then(|l| l.dedup_form(&self.buf));
        let url = learned.as_deref().unwrap_or(&self.buf);
        if self.canon.merges() {
            self.canon.dedup_key(url, &mut self.key);
            fingerprint(self.key.as_bytes())
        } else {
            fingerprint(url.as_bytes())
        }
    }

    /// Validate, canonicalize and check-and-set `filter`. The canonical URL (for `Keep` and
    /// `Duplicate`) is in [`Sieve::canonical`] until the next call.
    pub fn process(&mut self, line: &[u8], truncated: bool, filter: &BloomFilter) -> Verdict {
        match self.classify(line, truncated) {
            Err(r) => Verdict::Rejected(r),
            Ok(_) => {
                if filter.insert(self.dedup_fingerprint()) {
                    Verdict::New
                } else {
                    Verdict::Duplicate
                }
            }
        }
    }

    /// What forgetting `urls` takes out of a filter (the API's `/v1/forget` and `bloom forget`
    /// alike): each accepted URL's dedup fingerprint, once however many spellings name it (a
    /// second would count as not in the filter), and the rejected inputs (index, reason: never
    /// let in, nothing to forget).
    pub fn forget_fingerprints(&mut self, urls: &[String]) -> (Vec<u128>, Vec<(usize, Reason)>) {
        let mut fps = Vec::with_capacity(urls.len());
        let mut rejected = Vec::new();
        for (i, u) in urls.iter().enumerate() {
            match self.classify(u.as_bytes(), false) {
                Ok(c) if c.starts_with("http://") || c.starts_with("https://") => {
                    fps.push(self.dedup_fingerprint())
                }
                Ok(_) => rejected.push((i, Reason::NoBase)),
                Err(r) => rejected.push((i, r)),
            }
        }
        fps.sort_unstable();
        fps.dedup();
        (fps, rejected)
    }

    /// The canonical URL of the last successful [`Sieve::classify`] / [`Sieve::process`].
    pub fn canonical(&self) -> &str {
        &self.buf
    }

    /// Process a batch in order: classify every line, then check-and-set all fingerprints in one
    /// pass with prefetching (the filter's cache misses overlap instead of queueing). Verdicts
    /// are the same as calling [`Sieve::process`] on each line in turn.
    pub fn process_batch<'a, I, F>(
        &mut self,
        lines: I,
        filter: F,
        out: &mut BatchResult,
    ) -> Result<(), F::Error>
    where
        I: IntoIterator<Item = (&'a [u8], bool)>,
        F: CheckAndSet,
    {
        self.classify_batch(lines, out);
        out.decide(filter)
    }

    /// First half of [`Sieve::process_batch`]: classify and canonicalize every line; the URLs
    /// that passed wait for the crawl policy (a driver's [`crate::gate::policy`]), then
    /// [`BatchResult::seal`] and [`BatchResult::decide`] (which may be retried).
    pub fn classify_batch<'a, I>(&mut self, lines: I, out: &mut BatchResult)
    where
        I: IntoIterator<Item = (&'a [u8], bool)>,
    {
        out.clear();
        // Where these candidates were found, for the fetch outcomes' keys: the source being
        // judged (the API's request), else the base (`dedup --base`).
        let source = match &self.source {
            Some((text, _)) if !text.is_empty() => Some(text.as_str()),
            Some(_) => None,
            None => self.base.as_ref().map(|u| u.as_str()),
        };
        if out.cands.source.as_deref() != source {
            out.cands.source = source.map(str::to_string);
        }
        out.cands.context = Some(self.context);
        for (line, truncated) in lines {
            match self.classify(line, truncated) {
                Ok(c) => {
                    let start = out.cands.arena.len();
                    out.cands.arena.push_str(c);
                    out.decision.candidate(0, self.dedup_fingerprint());
                    out.cands.spans.push((start, out.cands.arena.len()));
                    out.cands
                        .module_paths
                        .push(crate::outcomes::module_path(line));
                }
                Err(r) => {
                    out.decision.reject(r);
                    out.cands.spans.push((0, 0));
                    out.cands.module_paths.push(false);
                }
            }
        }
    }
}

/// The canonical URLs of a [`BatchResult`], as the crawl policy reads them.
#[derive(Debug, Default)]
pub struct BatchUrls {
    /// The namespace index the crawl policy knows the batch's namespace by.
    pub ns: usize,
    /// Where the batch's candidates were found (the API request's `source`, `dedup --base`):
    /// the fetch outcomes' source key.
    pub source: Option<String>,
    /// Their context (the request's, `dedup --context`).
    pub context: Option<crate::url::Context>,
    spans: Vec<(usize, usize)>,
    arena: String,
    /// Whether each was written as a module path ([`crate::outcomes::module_path`]).
    module_paths: Vec<bool>,
    /// URL patterns, computed on first use (empty: not yet).
    patterns: Vec<String>,
}

impl crate::decision::Candidates for BatchUrls {
    fn url(&self, j: usize) -> &str {
        let (a, b) = self.spans[j];
        &self.arena[a..b]
    }

    fn ns(&self, _j: usize) -> usize {
        self.ns
    }

    fn compute_pattern(&mut self, j: usize) {
        if self.patterns.len() < self.spans.len() {
            self.patterns.resize(self.spans.len(), String::new());
        }
        if self.patterns[j].is_empty() {
            let (a, b) = self.spans[j];
            self.patterns[j] = crate::url::pattern::pattern(&self.arena[a..b]);
        }
    }

    fn pattern(&self, j: usize) -> &str {
        &self.patterns[j]
    }

    fn source(&self, _j: usize) -> Option<&str> {
        self.source.as_deref()
    }

    fn context(&self, _j: usize) -> Option<crate::url::Context> {
        self.context
    }

    fn module_path(&self, j: usize) -> bool {
        self.module_paths.get(j).copied().unwrap_or(false)
    }
}

/// Verdicts and canonical URLs of one [`Sieve::process_batch`] call; reuse it across batches.
/// The verdicts are [`Decision`]'s (one group: `dedup` and an API request have one namespace).
#[derive(Debug, Default)]
pub struct BatchResult {
    decision: Decision,
    cands: BatchUrls,
    sealed: bool,
    news: Vec<bool>,
}

impl BatchResult {
    fn clear(&mut self) {
        self.decision.clear();
        self.cands.spans.clear();
        self.cands.module_paths.clear();
        self.cands.arena.clear();
        self.cands.patterns.clear();
        self.sealed = false;
    }

    /// The decision and the URLs, for the crawl policy to work on before [`BatchResult::seal`].
    pub fn parts(&mut self) -> (&mut Decision, &mut BatchUrls) {
        (&mut self.decision, &mut self.cands)
    }

    /// The policy is done: the candidates left are looked up (once; later calls do nothing).
    pub fn seal(&mut self) {
        if !self.sealed {
            self.decision.lookups(0);
            self.sealed = true;
        }
    }

    /// Second half of [`Sieve::process_batch`]: check-and-set the batch's fingerprints and
    /// mark the new ones. On error nothing is marked and the call may be repeated.
    pub fn decide<F: CheckAndSet>(&mut self, mut filter: F) -> Result<(), F::Error> {
        self.seal();
        let mut news = std::mem::take(&mut self.news);
        let r = filter.check_and_set_batch(self.decision.lookup_fps(), &mut news);
        if r.is_ok() {
            self.apply(&news);
        }
        self.news = news;
        r
    }

    /// The dedup fingerprints of the lines looked up, in line order (for a filter driven by
    /// the caller, e.g. the pipelined Redis filter), once [`BatchResult::seal`]ed.
    pub fn fps(&self) -> &[u128] {
        debug_assert!(self.sealed, "fingerprints of a batch not sealed");
        self.decision.lookup_fps()
    }

    /// The canonical URL of `fps()[j]`.
    pub fn passed(&self, j: usize) -> &str {
        let (a, b) = self.cands.spans[self.decision.looked_up()[j]];
        &self.cands.arena[a..b]
    }

    /// Mark the lines looked up new or duplicate: `news[j]` answers `fps()[j]`.
    pub fn apply(&mut self, news: &[bool]) {
        self.decision.answer(news);
    }

    /// The fingerprints of the new lines, in order.
    pub fn news_fps(&self) -> Vec<u128> {
        self.decision.news().map(|i| self.decision.fp(i)).collect()
    }

    /// Number of lines in the batch.
    pub fn len(&self) -> usize {
        self.decision.len()
    }

    /// Whether the batch was empty.
    pub fn is_empty(&self) -> bool {
        self.decision.is_empty()
    }

    /// The verdict of line `i`.
    pub fn verdict(&self, i: usize) -> Verdict {
        self.decision.verdict(i)
    }

    /// The canonical URL of line `i` (not rejected).
    pub fn canonical(&self, i: usize) -> Option<&str> {
        match self.decision.verdict(i) {
            Verdict::Rejected(_) => None,
            _ => Some(&self.cands.arena[self.cands.spans[i].0..self.cands.spans[i].1]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by `tests/properties.rs` (CI, 2026-11-26): the escape ratio was measured against
    /// the candidate with its tracking parameter, so the candidate was kept and its canonical
    /// form (`?utm_a` stripped, 6 bytes shorter) rejected `encoding_ratio`. Both are judged
    /// alike now; a candidate whose stripped part does not matter keeps passing.
    #[test]
    fn regression_escape_ratio_is_judged_on_the_canonical_form() {
        let base = Url::parse("https://base.example/dir/page.html").unwrap();
        let mut s = Sieve::new(Validator::default(), Canonicalizer::default(), Some(base));
        let judge = |s: &mut Sieve, u: &str| s.classify(u.as_bytes(), false).map(String::from);
        let canonical = "http://e.co/%A0/%00/%AA/%0A";
        assert_eq!(judge(&mut s, canonical), Err(Reason::EncodingRatio));
        assert_eq!(
            judge(&mut s, "http://e.co/%A0/%00/%aa/%0a?utm_a"),
            Err(Reason::EncodingRatio)
        );
        assert_eq!(
            judge(&mut s, "http://example.com/%A0/page.html?utm_source=x"),
            Ok("http://example.com/%A0/page.html".to_string())
        );
    }

    /// Issue 25: a candidate naming this machine or its network is rejected however it is
    /// spelled (decimal, octal, hex, short IPv4; IPv6 carrying IPv4; entity-encoded in an
    /// attribute), unless allowed; the shared table of special-purpose addresses all fail.
    #[test]
    fn candidates_naming_special_purpose_hosts_are_private_address() {
        use crate::url::address::{url_of, SPECIAL_PURPOSE};
        let mut s = Sieve::new(Validator::default(), Canonicalizer::default(), None);
        let judge = |s: &mut Sieve, u: &str| s.classify(u.as_bytes(), false).map(String::from);
        for a in SPECIAL_PURPOSE {
            assert_eq!(
                judge(&mut s, &url_of(a)),
                Err(Reason::PrivateAddress),
                "{a}"
            );
        }
        for u in [
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://0xa9fea9fe/latest/meta-data/",
            "HTTP://LOCALHOST:8080/admin",
            "http://[::ffff:a9fe:a9fe]/",
            "//10.0.0.1/x",
        ] {
            assert_eq!(judge(&mut s, u), Err(Reason::PrivateAddress), "{u}");
        }
        s.context = crate::url::Context::HtmlAttr;
        assert_eq!(
            judge(&mut s, "http://&#x31;27.0.0.1/"),
            Err(Reason::PrivateAddress)
        );
        s.context = crate::url::Context::Unknown;
        // Relative to a private page: the result names it too.
        s.set_source(Some("http://192.168.1.1/admin/"));
        assert_eq!(judge(&mut s, "users"), Err(Reason::PrivateAddress));
        s.clear_source();
        assert_eq!(judge(&mut s, "http://8.8.8.8/").unwrap(), "http://8.8.8.8/");
        s.address = crate::url::AddressPolicy::new(&["10.0.0.0/8"]).unwrap();
        assert_eq!(
            judge(&mut s, "http://10.9.8.7/").unwrap(),
            "http://10.9.8.7/"
        );
        assert_eq!(
            judge(&mut s, "http://127.0.0.1/"),
            Err(Reason::PrivateAddress)
        );
    }

    #[test]
    fn a_source_is_the_base_while_set_and_parsed_only_when_needed() {
        let mut s = Sieve::new(
            Validator::default(),
            Canonicalizer::default(),
            Url::parse("http://base.example/d/").ok(),
        );
        let run = |s: &mut Sieve, u: &str| s.classify(u.as_bytes(), false).map(String::from);
        assert_eq!(
            run(&mut s, "x.html").unwrap(),
            "http://base.example/d/x.html"
        );
        s.set_source(Some("https://src.example/a/b.html"));
        assert_eq!(
            run(&mut s, "c.html").unwrap(),
            "https://src.example/a/c.html"
        );
        // An absolute candidate does not parse the source.
        s.set_source(Some("https://other.example/q/"));
        assert_eq!(
            run(&mut s, "https://abs.example/p").unwrap(),
            "https://abs.example/p"
        );
        assert!(s.source.as_ref().unwrap().1.get().is_none(), "not parsed");
        assert_eq!(run(&mut s, "r").unwrap(), "https://other.example/q/r");
        // A scheme-relative host takes the source's scheme.
        assert_eq!(run(&mut s, "//h.example/z").unwrap(), "https://h.example/z");
        // No source, or an unparsable one: no base, and a relative candidate is `no_base`.
        for src in [None, Some("not a url")] {
            s.set_source(src);
            assert_eq!(run(&mut s, "y.html"), Err(Reason::NoBase));
        }
        s.clear_source();
        assert_eq!(
            run(&mut s, "z.html").unwrap(),
            "http://base.example/d/z.html"
        );
    }

    /// Issue 44: CJK punctuation after a URL in text is not taken into the host.
    #[test]
    fn cjk_punctuation_after_a_url_in_text_is_left_out() {
        let mut s = Sieve::new(Validator::default(), Canonicalizer::default(), None);
        s.context = crate::url::Context::Text;
        for (raw, want) in [
            ("https://news.cn，更多内容", "https://news.cn/"),
            ("https://news.cn。", "https://news.cn/"),
            ("https://news.cn/a/b）", "https://news.cn/a/b"),
        ] {
            assert_eq!(s.classify(raw.as_bytes(), false), Ok(want), "{raw}");
        }
    }

    #[test]
    fn decides() {
        let f = BloomFilter::with_capacity(100, 0.001).unwrap();
        let mut s = Sieve::new(
            Validator::default(),
            Canonicalizer::default(),
            Url::parse("http://h.com/a/").ok(),
        );
        assert_eq!(s.process(b"x.html#top", false, &f), Verdict::New);
        assert_eq!(s.canonical(), "http://h.com/a/x.html");
        assert_eq!(
            s.process(b"HTTP://H.COM:80/a/x.html?utm_source=z", false, &f),
            Verdict::Duplicate
        );
        assert_eq!(
            s.process(b"javascript:void(0)", false, &f),
            Verdict::Rejected(Reason::NonFetchableScheme)
        );
        assert_eq!(
            s.process(b"http://exa mple.com/", false, &f),
            Verdict::Rejected(Reason::InvalidUrl)
        );
        assert_eq!(
            s.process(b"/a", true, &f),
            Verdict::Rejected(Reason::TooLong)
        );
        // Regression (cargo fuzz): under the limit raw, over it once backslashes are escaped.
        let long = format!("z?h={}x", "\\".repeat(1000));
        assert_eq!(
            s.process(long.as_bytes(), false, &f),
            Verdict::Rejected(Reason::TooLong)
        );
        assert_eq!(
            s.process(b"\xff", false, &f),
            Verdict::Rejected(Reason::InvalidUtf8)
        );
    }

    #[test]
    fn batch_matches_one_by_one() {
        let lines: Vec<&[u8]> = vec![
            b"/a",
            b"#x",
            b"/b",
            b"/a",
            b"http://h.com/a/a?utm_source=1",
            b"\xff",
            b"/c",
        ];
        let base = Url::parse("http://h.com/a/").ok();
        let (f1, f2) = (
            BloomFilter::with_capacity(100, 0.001).unwrap(),
            BloomFilter::with_capacity(100, 0.001).unwrap(),
        );
        let mut one = Sieve::new(Validator::default(), Canonicalizer::default(), base.clone());
        let mut batch = Sieve::new(Validator::default(), Canonicalizer::default(), base);
        let mut res = BatchResult::default();
        // Two batches, so that state carries over between them.
        batch.process_batch(lines[..3].iter().map(|l| (*l, false)), &f2, &mut res);
        let mut got: Vec<(Verdict, Option<String>)> = (0..res.len())
            .map(|i| (res.verdict(i), res.canonical(i).map(str::to_owned)))
            .collect();
        batch.process_batch(lines[3..].iter().map(|l| (*l, false)), &f2, &mut res);
        got.extend((0..res.len()).map(|i| (res.verdict(i), res.canonical(i).map(str::to_owned))));
        let want: Vec<(Verdict, Option<String>)> = lines
            .iter()
            .map(|l| {
                let v = one.process(l, false, &f1);
                (v, v.reason().is_none().then(|| one.canonical().to_owned()))
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(got[3].0, Verdict::Duplicate);
        assert_eq!(got[4], (Verdict::New, Some("http://h.com/a/a".to_owned())));
    }
}
