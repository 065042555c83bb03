//! Learned parameter rules, applied (issue 26): "on host H, query parameter P does not change
//! the page", as the render stage learned it from rendered pages
//! ([`crate::page::params`]) and shared through Redis ([`crate::params`]). Canonicalization
//! leaves P out of what H's URLs are deduplicated by, so `/a?sid=1` and `/a?sid=2` are one URL
//! to the filter.
//!
//! A rule changes what a URL is deduplicated by, like the opt-in merges: the fetch event keeps
//! the URL as linked (the first variant met is fetched), and one URL in
//! [`LearnedRules::verify_one_in`] (chosen by a hash of the URL, so the same URL always) keeps
//! its own identity, so the render stage keeps meeting variants and a counter-example can
//! revoke a wrong rule. Rules are per host (`host[:port]` as in the canonical URL, so `a.example` and
//! `b.a.example` learn apart) and per parameter name as the canonical URL spells it (already
//! percent-normalized). Pure: no I/O.

use rustc_hash::FxHashMap;

/// The rules in force: per host, the parameters left out of its URLs' dedup keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LearnedRules {
    by_host: FxHashMap<String, Vec<String>>,
    /// One URL in this many under a rule is deduplicated as itself (0: none).
    pub verify_one_in: u64,
}

impl LearnedRules {
    /// Rules from `(host, parameter)` pairs.
    pub fn new<I, H, P>(rules: I) -> Self
    where
        I: IntoIterator<Item = (H, P)>,
        H: Into<String>,
        P: Into<String>,
    {
        let mut by_host: FxHashMap<String, Vec<String>> = FxHashMap::default();
        for (h, p) in rules {
            let v = by_host.entry(h.into().to_ascii_lowercase()).or_default();
            let p = p.into();
            if !v.contains(&p) {
                v.push(p);
            }
        }
        LearnedRules {
            by_host,
            verify_one_in: 0,
        }
    }

    /// The key `canonical` is deduplicated by under these rules: `canonical` without its
    /// host's learned parameters, `None` when no rule applies (or the URL is one of the
    /// verification sample).
    pub fn dedup_form(&self, canonical: &str) -> Option<String> {
        if self.by_host.is_empty() {
            return None;
        }
        let mut s = canonical.to_string();
        if !self.apply(&mut s) {
            return None;
        }
        let n = self.verify_one_in;
        if n > 0 && xxhash_rust::xxh3::xxh3_64(canonical.as_bytes()).is_multiple_of(n) {
            return None;
        }
        Some(s)
    }

    /// No rule at all.
    pub fn is_empty(&self) -> bool {
        self.by_host.is_empty()
    }

    /// How many (host, parameter) rules.
    pub fn len(&self) -> usize {
        self.by_host.values().map(Vec::len).sum()
    }

    /// Drop the parameters learned for `canonical`'s host from its query, in place; whether
    /// anything was dropped. A query left empty loses its `?`; the fragment (if any) stays.
    pub fn apply(&self, canonical: &mut String) -> bool {
        if self.by_host.is_empty() {
            return false;
        }
        let end = canonical.find('#').unwrap_or(canonical.len());
        let Some(q) = canonical[..end].find('?') else {
            return false;
        };
        let Some(params) = self.by_host.get(super::lex::host_port(canonical)) else {
            return false;
        };
        let mut kept = String::with_capacity(end - q);
        let mut dropped = false;
        for pair in canonical[q + 1..end].split('&') {
            let name = pair.split('=').next().unwrap_or("");
            if params.iter().any(|p| p == name) {
                dropped = true;
                continue;
            }
            kept.push(if kept.is_empty() { '?' } else { '&' });
            kept.push_str(pair);
        }
        if dropped {
            canonical.replace_range(q..end, &kept);
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(rules: &LearnedRules, url: &str) -> String {
        let mut s = url.to_string();
        rules.apply(&mut s);
        s
    }

    #[test]
    fn drops_only_the_learned_parameters_of_the_learned_host() {
        let r = LearnedRules::new([("shop.example", "sid"), ("shop.example:8080", "s")]);
        assert_eq!(
            applied(&r, "http://shop.example/a?sid=1"),
            "http://shop.example/a"
        );
        assert_eq!(
            applied(&r, "http://shop.example/a?page=2&sid=1&z=3#top"),
            "http://shop.example/a?page=2&z=3#top"
        );
        // Another host, another port, a parameter whose name only starts the same.
        assert_eq!(
            applied(&r, "http://www.shop.example/a?sid=1"),
            "http://www.shop.example/a?sid=1"
        );
        assert_eq!(
            applied(&r, "http://shop.example:8080/a?sid=1&s=2"),
            "http://shop.example:8080/a?sid=1"
        );
        assert_eq!(
            applied(&r, "http://shop.example/a?sids=1&xsid=2"),
            "http://shop.example/a?sids=1&xsid=2"
        );
        // Valueless and repeated.
        assert_eq!(
            applied(&r, "http://shop.example/a?sid&sid=2&b"),
            "http://shop.example/a?b"
        );
        // No query, or a `?` only in the fragment.
        assert_eq!(
            applied(&r, "http://shop.example/a#x?sid=1"),
            "http://shop.example/a#x?sid=1"
        );
        let mut s = "http://shop.example/a#x?sid=1".to_string();
        assert!(!r.apply(&mut s));
    }

    #[test]
    fn hosts_are_matched_without_case_and_rules_are_counted_once() {
        let r = LearnedRules::new([("Shop.Example", "sid"), ("shop.example", "sid")]);
        assert_eq!(r.len(), 1);
        assert_eq!(
            applied(&r, "https://shop.example/?sid=9"),
            "https://shop.example/"
        );
        assert!(LearnedRules::default().is_empty());
    }
}
