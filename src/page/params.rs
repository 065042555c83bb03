//! Learning which query parameters do not change a page (issue 26; after DustBuster,
//! Bar-Yossef et al., WWW 2007, restricted to evidence the render stage has seen).
//!
//! Every rendered page is noted under each of its query parameters: the *group* of a page
//! for parameter `P` is its host, its path and its query without `P`. Two pages of one group
//! that differ only in `P`'s value are a comparison:
//! * the **same page** — main-text MinHash Jaccard ≥ [`LearnConfig::same_text`] *and*
//!   structure similarity ≥ [`LearnConfig::same_structure`] — is evidence that `P` changes
//!   nothing on that host;
//! * anything else is a **counter-example**: `P` is never learned for that host, and the first
//!   one is reported ([`Change::Refuted`]) so the caller revokes the rule wherever it was
//!   published (by this learner, another worker, or before a restart).
//!
//! A rule is learned once a (host, `P`) has evidence from ≥ [`LearnConfig::min_values`] distinct
//! values over ≥ [`LearnConfig::min_paths`] distinct paths (the path alone: scheme and port do
//! not make another path), ≥ [`LearnConfig::min_samples`] comparisons, and no counter-example.
//! Pages with little main text (under [`crate::page::rule_pages::MIN_TEXT_CHARS`] characters:
//! a "no results" or "not found" page looks the same whatever the URL) are no evidence either
//! way. The thresholds err towards keeping pages apart: a rule merges URLs before anything is
//! fetched, so one wrong rule loses pages, while a rule not learned costs only repeated fetches.
//!
//! The learner keeps the first page of each group as its reference, so memory grows with the
//! groups met; it forgets everything (and learns again) past [`LearnConfig::max_groups`].
//! Pure and deterministic; the render stage feeds it and publishes what it decides
//! ([`crate::params`]).

use rustc_hash::{FxHashMap, FxHashSet};

use super::features::{jaccard_estimate, Features};
use super::similarity::structure;

/// When a parameter counts as changing nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct LearnConfig {
    /// Distinct values of the parameter seen serving the same page.
    pub min_values: usize,
    /// Distinct paths those values were seen on.
    pub min_paths: usize,
    /// Comparisons that found the same page.
    pub min_samples: usize,
    /// Main-text MinHash Jaccard estimate at which two pages have the same text.
    pub same_text: f64,
    /// Structure similarity ([`super::similarity::structure`]) at which two pages have the
    /// same DOM shape.
    pub same_structure: f64,
    /// Groups (host, path, other parameters) remembered before the learner starts over.
    pub max_groups: usize,
}

impl Default for LearnConfig {
    fn default() -> Self {
        LearnConfig {
            min_values: 5,
            min_paths: 3,
            min_samples: 5,
            same_text: 0.95,
            same_structure: 0.95,
            max_groups: 200_000,
        }
    }
}

/// A rule learned: on `host`, parameter `param` does not change the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Learned {
    pub host: String,
    pub param: String,
    /// Distinct values seen serving the same page.
    pub values: usize,
    /// Distinct paths they were seen on.
    pub paths: usize,
    /// Comparisons that found the same page.
    pub samples: usize,
    /// One URL of the evidence.
    pub example: String,
}

/// What a page taught.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A rule has enough evidence (reported once).
    Learned(Learned),
    /// The first counter-example of (host, param): `a` and `b` differ only in `param` and are
    /// different pages. Reported whether or not this learner learned the rule: it may be in
    /// force from elsewhere.
    Refuted {
        host: String,
        param: String,
        a: String,
        b: String,
    },
}

/// The first page seen of a group.
struct Reference {
    url: String,
    value: String,
    minhash: Vec<u32>,
    features: Features,
}

#[derive(Default)]
struct Evidence {
    values: FxHashSet<u64>,
    paths: FxHashSet<u64>,
    samples: usize,
    refuted: bool,
    learned: bool,
    example: String,
}

/// The learner (see the module docs).
#[derive(Default)]
pub struct Learner {
    cfg: LearnConfig,
    groups: FxHashMap<u128, Reference>,
    evidence: FxHashMap<(String, String), Evidence>,
}

fn h64(s: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(s.as_bytes())
}

impl Learner {
    /// A learner deciding by `cfg`.
    pub fn new(cfg: LearnConfig) -> Self {
        Learner {
            cfg,
            ..Default::default()
        }
    }

    /// Note page `url` (canonical, absolute; the URL that was rendered, after redirects the
    /// page's own) with its features; what it decided.
    pub fn observe(&mut self, url: &str, f: &Features) -> Vec<Change> {
        let mut out = Vec::new();
        let Some(Query {
            host,
            path,
            bare_path,
            pairs,
        }) = Query::of(url, f)
        else {
            return out;
        };
        if self.groups.len() >= self.cfg.max_groups {
            self.groups.clear();
        }
        for (i, &(name, value)) in pairs.iter().enumerate() {
            // Twice the same name: which value counts is the server's business; no evidence.
            if pairs.iter().filter(|(n, _)| *n == name).count() > 1 {
                continue;
            }
            let key = group_key(name, path, &pairs, i);
            let Some(r) = self.groups.get(&key) else {
                self.groups.insert(
                    key,
                    Reference {
                        url: url.to_string(),
                        value: value.to_string(),
                        minhash: f.minhash.clone(),
                        features: f.clone(),
                    },
                );
                continue;
            };
            if r.value == value {
                continue;
            }
            let same = jaccard_estimate(&r.minhash, &f.minhash)
                .is_some_and(|j| j >= self.cfg.same_text)
                && structure(&r.features, f) >= self.cfg.same_structure;
            let ev = self
                .evidence
                .entry((host.clone(), name.to_string()))
                .or_default();
            if !same {
                if !ev.refuted {
                    out.push(Change::Refuted {
                        host: host.clone(),
                        param: name.to_string(),
                        a: r.url.clone(),
                        b: url.to_string(),
                    });
                }
                ev.refuted = true;
                continue;
            }
            if ev.refuted {
                continue;
            }
            if ev.note_same(&self.cfg, &r.value, value, bare_path, url) {
                out.push(Change::Learned(ev.rule(&host, name)));
            }
        }
        out
    }

    /// Forget that (host, param) was learned or refuted (an operator revoked it and wants it
    /// judged again from new evidence).
    pub fn forget(&mut self, host: &str, param: &str) {
        self.evidence
            .remove(&(host.to_ascii_lowercase(), param.to_string()));
    }
}

/// The parts of a page's URL [`Learner::observe`] groups by.
struct Query<'a> {
    /// Host (and port), lower-cased.
    host: String,
    /// Everything before the query.
    path: &'a str,
    /// The path alone (no scheme, no authority).
    bare_path: &'a str,
    /// The query's (name, value) pairs, in order.
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Query<'a> {
    /// The parts of `url`; `None` when it has no query or host, or its page is no evidence.
    fn of(url: &'a str, f: &Features) -> Option<Query<'a>> {
        let host = crate::url::lex::host_port(url).to_ascii_lowercase();
        let end = url.find('#').unwrap_or(url.len());
        let q = url[..end].find('?')?;
        if host.is_empty()
            || f.minhash.is_empty()
            || f.text_chars < crate::page::rule_pages::MIN_TEXT_CHARS
        {
            return None;
        }
        let path = &url[..q];
        // The path alone, for counting paths (`http://h/a` and `https://h/a` are one path).
        let bare_path = &url[crate::url::lex::authority_end(url).min(q)..q];
        let pairs: Vec<(&str, &str)> = url[q + 1..end]
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect();
        Some(Query {
            host,
            path,
            bare_path,
            pairs,
        })
    }
}

/// The group of parameter `pairs[i]` (named `name`): its name, `path` and the other pairs.
fn group_key(name: &str, path: &str, pairs: &[(&str, &str)], i: usize) -> u128 {
    let mut g = xxhash_rust::xxh3::Xxh3::new();
    g.update(name.as_bytes());
    g.update(b"\0");
    g.update(path.as_bytes());
    for (j, (n, v)) in pairs.iter().enumerate() {
        if j != i {
            g.update(b"\0");
            g.update(n.as_bytes());
            g.update(b"=");
            g.update(v.as_bytes());
        }
    }
    g.digest128()
}

impl Evidence {
    /// Note a comparison that found the same page (values `a` and `b` on `bare_path`, `url` an
    /// example); whether the rule is learned by it.
    fn note_same(
        &mut self,
        cfg: &LearnConfig,
        a: &str,
        b: &str,
        bare_path: &str,
        url: &str,
    ) -> bool {
        self.values.insert(h64(a));
        self.values.insert(h64(b));
        self.paths.insert(h64(bare_path));
        self.samples += 1;
        if self.example.is_empty() {
            self.example = url.to_string();
        }
        if !self.learned
            && self.values.len() >= cfg.min_values
            && self.paths.len() >= cfg.min_paths
            && self.samples >= cfg.min_samples
        {
            self.learned = true;
            return true;
        }
        false
    }

    /// The rule this evidence learned for (`host`, `param`).
    fn rule(&self, host: &str, param: &str) -> Learned {
        Learned {
            host: host.to_string(),
            param: param.to_string(),
            values: self.values.len(),
            paths: self.paths.len(),
            samples: self.samples,
            example: self.example.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::features::extract;

    fn page(items: &[&str]) -> Features {
        let lis: String = items
            .iter()
            .map(|i| format!("<li><a href=/item/{i}>Item {i}: a product with a long description of the {i} kind</a></li>"))
            .collect();
        extract(&format!(
            "<html><head><title>Shop</title></head><body><nav><a href=/>Home</a></nav><main><h1>Catalogue</h1><ul>{lis}</ul></main></body></html>"
        ))
    }

    /// Session ids on three paths, five values each: learned once, never for `page`.
    #[test]
    fn a_session_id_is_learned_and_a_page_number_never() {
        let mut l = Learner::default();
        let mut learned = Vec::new();
        for path in ["a", "b", "c"] {
            let items: Vec<String> = (0..12).map(|i| format!("{path}{i}")).collect();
            let items: Vec<&str> = items.iter().map(String::as_str).collect();
            for sid in 0..5 {
                let url = format!("http://shop.example/{path}?sid={sid:08x}");
                learned.extend(l.observe(&url, &page(&items)));
            }
            for n in 1..=6 {
                let items: Vec<String> = (0..12).map(|i| format!("{path}{n}x{i}")).collect();
                let items: Vec<&str> = items.iter().map(String::as_str).collect();
                let url = format!("http://shop.example/{path}?page={n}");
                learned.extend(l.observe(&url, &page(&items)));
            }
        }
        // `page` is refuted (reported once), `sid` learned once.
        assert_eq!(learned.len(), 2, "{learned:?}");
        assert!(
            learned
                .iter()
                .any(|c| matches!(c, Change::Refuted { param, .. } if param == "page")),
            "{learned:?}"
        );
        let r = learned
            .iter()
            .find_map(|c| match c {
                Change::Learned(r) => Some(r),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{learned:?}"));
        assert_eq!((r.host.as_str(), r.param.as_str()), ("shop.example", "sid"));
        assert!(r.values >= 5 && r.paths >= 3, "{r:?}");
    }

    #[test]
    fn too_little_evidence_learns_nothing() {
        let mut l = Learner::default();
        let p = page(&["x", "y", "z"]);
        // Five values, but on two paths only.
        let mut out = Vec::new();
        for path in ["a", "b"] {
            for sid in 0..10 {
                out.extend(l.observe(&format!("http://h.example/{path}?sid={sid}"), &p));
            }
        }
        assert!(out.is_empty(), "{out:?}");
        // Pages without main text are no evidence.
        let empty = extract("<html><body></body></html>");
        for path in ["c", "d", "e"] {
            for sid in 0..10 {
                out.extend(l.observe(&format!("http://h.example/{path}?sid={sid}"), &empty));
            }
        }
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_counter_example_revokes_a_learned_rule_and_it_is_not_learned_again() {
        let mut l = Learner::default();
        let same = page(&["p", "q", "r", "s", "t", "u"]);
        let mut out = Vec::new();
        for path in ["a", "b", "c"] {
            for v in 0..5 {
                out.extend(l.observe(&format!("http://h.example/{path}?lang={v}"), &same));
            }
        }
        assert!(matches!(out.as_slice(), [Change::Learned(_)]), "{out:?}");
        let other = page(&[
            "completely",
            "different",
            "catalogue",
            "entries",
            "of",
            "another",
        ]);
        let out = l.observe("http://h.example/a?lang=de", &other);
        assert!(
            matches!(&out[..], [Change::Refuted { param, .. }] if param == "lang"),
            "{out:?}"
        );
        // Reported once.
        assert!(l.observe("http://h.example/b?lang=de", &other).is_empty());
        let mut out = Vec::new();
        for path in ["d", "e", "f"] {
            for v in 0..5 {
                out.extend(l.observe(&format!("http://h.example/{path}?lang={v}"), &same));
            }
        }
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn http_and_https_are_one_path_and_thin_pages_are_no_evidence() {
        let mut l = Learner::default();
        let p = page(&["a", "b", "c", "d", "e", "f", "g", "h"]);
        let mut out = Vec::new();
        // Two paths, each under both schemes: still two paths.
        for scheme in ["http", "https"] {
            for path in ["x", "y"] {
                for v in 0..4 {
                    out.extend(
                        l.observe(&format!("{scheme}://h.example/{path}?s={v}{scheme}"), &p),
                    );
                }
            }
        }
        assert!(out.is_empty(), "{out:?}");
        // A "no results" page: the same whatever the query, too little text to be evidence.
        let thin =
            extract("<html><body><main><p>No results for your search.</p></main></body></html>");
        for path in ["s1", "s2", "s3", "s4"] {
            for v in 0..6 {
                out.extend(l.observe(&format!("http://h.example/{path}?q={v}"), &thin));
            }
        }
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn other_parameters_keep_groups_apart() {
        // `sid` varies with `cat`: pages of different categories are never compared.
        let mut l = Learner::default();
        let mut out = Vec::new();
        for cat in 0..6 {
            let items: Vec<String> = (0..8).map(|i| format!("c{cat}i{i}")).collect();
            let items: Vec<&str> = items.iter().map(String::as_str).collect();
            out.extend(l.observe(
                &format!("http://h.example/list?cat={cat}&sid={cat}"),
                &page(&items),
            ));
        }
        assert!(out.is_empty(), "{out:?}");
    }
}
