//! Clustering pages: rule classes first (in the seed's priority order), then near-duplicate
//! content clusters among the eligible pages of each host.
//!
//! **Candidates** come from a Hamming-distance index over the SimHashes ([`HammingIndex`], the
//! block method of Manku, Jain and Das Sarma, WWW 2007): the 64 bits are cut into `k + 1` blocks;
//! two fingerprints within distance `k` agree exactly on at least one block (pigeonhole), so one
//! exact-match table per block finds every pair within `k` — no bucket edge hides a
//! near-duplicate, unlike the reference's buckets by the top 16 bits and text length.
//!
//! **Assignment** is the seed's canonical-centred union: pages are taken in canonical-preference
//! order (status 200 first, then the longest text, then the smallest final URL); a page not yet
//! in a cluster becomes a canonical, and every not-yet-assigned candidate that is a duplicate *of
//! that canonical* joins it (members are compared with the canonical only, so chains A~B~C do not
//! drag unrelated pages together); pages left over become canonicals in their turn (the seed's
//! second pass). Cluster ids are hashes of the canonical's final URL: the same pages in any order
//! give the same ids. A page in no cluster (alone, or not eligible and hit by no rule) is its own
//! canonical with an empty cluster id.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::rule_pages::{page_rule, Rule, MIN_HTML_BYTES, MIN_TEXT_CHARS};
use super::similarity::{compare, Similarity, Thresholds};
use super::Page;

/// Exact-match tables over `k + 1` blocks of a 64-bit fingerprint.
#[derive(Debug, Clone)]
pub struct HammingIndex {
    k: u32,
    blocks: Vec<(u32, u32)>, // (shift, width)
    tables: Vec<HashMap<u64, Vec<u32>>>,
    keys: Vec<u64>,
}

impl HammingIndex {
    /// An index that finds every pair within distance `k` (0..=15).
    pub fn new(k: u32) -> HammingIndex {
        let k = k.min(15);
        let n = k + 1;
        let mut blocks = Vec::new();
        let mut shift = 0;
        for i in 0..n {
            let width = 64 / n + u32::from(i < 64 % n);
            blocks.push((shift, width));
            shift += width;
        }
        HammingIndex {
            k,
            tables: vec![HashMap::new(); blocks.len()],
            blocks,
            keys: Vec::new(),
        }
    }

    fn block(&self, key: u64, b: usize) -> u64 {
        let (shift, width) = self.blocks[b];
        (key >> shift) & (u64::MAX >> (64 - width))
    }

    /// Add `key`; returns its id (0, 1, 2, … in insertion order).
    pub fn insert(&mut self, key: u64) -> u32 {
        let id = self.keys.len() as u32;
        self.keys.push(key);
        for b in 0..self.blocks.len() {
            let v = self.block(key, b);
            self.tables[b].entry(v).or_default().push(id);
        }
        id
    }

    /// Every id whose key is within distance `k` of `key`, each once, ascending.
    pub fn query(&self, key: u64, out: &mut Vec<u32>) {
        out.clear();
        for b in 0..self.blocks.len() {
            if let Some(ids) = self.tables[b].get(&self.block(key, b)) {
                out.extend(
                    ids.iter()
                        .copied()
                        .filter(|&i| (self.keys[i as usize] ^ key).count_ones() <= self.k),
                );
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// The distance this index answers for.
    pub fn k(&self) -> u32 {
        self.k
    }
}

/// One page's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    /// Cluster id; empty when the page is in no cluster.
    pub cluster_id: String,
    /// The canonical of its cluster (or alone).
    pub is_canonical: bool,
    /// Index of its canonical in the input.
    pub canonical: usize,
    /// The rule class, for rule clusters.
    pub rule: Option<Rule>,
    /// Similarities to the canonical (the canonical of a cluster has 1s, measured against
    /// itself; zeros where nothing was measured: see `measured`).
    pub sim: Similarity,
    /// `similarity_to_canonical`.
    pub similarity_to_canonical: f64,
    /// Whether `sim` was measured: true for every page of a cluster whose page and canonical both
    /// have HTML to compare; false for a page in no cluster and for rule-cluster members without
    /// HTML (a 5xx body, a failed fetch), whose zeros are no distance.
    pub measured: bool,
}

/// Origin (`scheme://host[:port]`, no userinfo) of a URL: one definition for the crate.
pub use crate::url::lex::origin;

/// The seed's U1 key: the URL with its path normalized — lower-cased, `index.*`/`default.*` and
/// trailing slashes dropped; the query is kept (it selects content), the fragment is not.
fn url_variant_key(url: &str) -> String {
    let o = origin(url);
    let rest = &url[crate::url::lex::authority_end(url)..];
    let rest = rest.split('#').next().unwrap_or("");
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut p = path.to_ascii_lowercase();
    if let Some(i) = p.rfind('/') {
        let last = &p[i + 1..];
        if last.starts_with("index.") || last.starts_with("default.") {
            p.truncate(i + 1);
        }
    }
    while p.ends_with('/') {
        p.pop();
    }
    let q = if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    };
    format!("{}{p}{q}", o.to_ascii_lowercase())
}

/// The 12-hex-digit hash in cluster ids.
pub(crate) fn short_hash(s: &[u8]) -> String {
    format!("{:012x}", xxh3_64(s) >> 16)
}

/// Whether a page takes part in content clustering (the seed's conditions).
pub fn eligible(p: &Page) -> bool {
    (200..300).contains(&p.status)
        && p.is_html()
        && p.features.html_bytes >= MIN_HTML_BYTES
        && p.features.text_chars >= MIN_TEXT_CHARS
}

/// Cluster a batch of pages.
pub fn cluster(pages: &[Page], t: &Thresholds) -> Vec<Assignment> {
    cluster_preferring(pages, t, &[])
}

/// [`cluster`], with `noisy[i]` = page `i`'s final URL carries a query parameter a learned rule
/// says changes nothing: such a page is the canonical of its cluster only when no page of it
/// without one is (the clean `/docs/intro`, not `/docs/intro?sid=…`).
pub fn cluster_preferring(pages: &[Page], t: &Thresholds, noisy: &[bool]) -> Vec<Assignment> {
    let mut out = each_alone(pages.len());
    // 1. Rules that need one page only.
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    let (mut free, thin) = single_page_rules(pages, &mut out, &mut groups);
    // Thin pages (T1) of one template: grouped by structure and text, not left alone.
    thin_groups(pages, t, noisy, &thin, &mut groups);
    // 2. R1 (same final URL), then U1 (same URL variant), among the pages left. An R1 group's
    // preferred page stays free, the others ride on it.
    let riders = url_rules(pages, t, noisy, &mut free, &mut out, &mut groups);
    // Rule clusters: canonical by the same preference as content clusters.
    assign_rule_clusters(pages, t, noisy, &groups, &mut out);
    // 3. Content clusters among the eligible pages left, per host.
    content_clusters(pages, t, noisy, &free, &mut out);
    // 4. The URLs that redirect to a page go where that page went.
    place_riders(pages, t, noisy, riders, &mut out);
    out
}

/// The R1 riders of each page ([`url_rules`]): URLs whose final URL is that page's. Where the
/// page joined a cluster (content, or U1), they join it as members — the same page, reached
/// another way — keeping their R1 class; where it stayed alone, it and they form the R1
/// cluster, as the seed has it.
fn place_riders(
    pages: &[Page],
    t: &Thresholds,
    noisy: &[bool],
    riders: Vec<(usize, Vec<usize>)>,
    out: &mut [Assignment],
) {
    for (rep, others) in riders {
        if out[rep].cluster_id.is_empty() {
            let mut members = others;
            members.push(rep);
            for &m in &members {
                out[m].rule = Some(Rule::R1);
            }
            let id = format!("redir-{}", short_hash(pages[rep].final_url.as_bytes()));
            assign_rule_clusters(pages, t, noisy, &HashMap::from([(id, members)]), out);
            continue;
        }
        let canon = out[rep].canonical;
        let with_visual = pages[canon].features.phash.is_some();
        for m in others {
            let s = compare(&pages[canon].features, &pages[m].features, t);
            out[m] = Assignment {
                cluster_id: out[rep].cluster_id.clone(),
                is_canonical: false,
                canonical: canon,
                rule: Some(Rule::R1),
                similarity_to_canonical: s
                    .overall(with_visual && pages[m].features.phash.is_some()),
                sim: s,
                measured: comparable(&pages[m]) && comparable(&pages[canon]),
            };
        }
    }
}

/// The least shingle Jaccard (MinHash estimate) of two thin pages' texts for one group: half the
/// shingles shared ([`thin_groups`]).
pub const THIN_TEXT: f64 = 0.5;

/// Whether a page has HTML whose features mean something to compare.
fn comparable(p: &Page) -> bool {
    p.is_html() && p.features.html_bytes > 0
}

/// Groups the thin pages (T1) of each origin: pages of one template whose texts are near
/// duplicates go together, the others stay apart. A thin page has too little text for the
/// SimHash rule (a few changed words move a 64-bit SimHash of 80 words by far more than 3
/// bits), so it is compared by what it has: its DOM structure (≥ `t.structure`) and the MinHash
/// estimate of its 3-shingle Jaccard (≥ [`THIN_TEXT`]: each changed word breaks three shingles,
/// so two changed words in a 40-word text leave a Jaccard of 0.73 — under the 0.75 of long
/// pages — while an about page and a contact page of one template share almost none). The same
/// visible text always groups. With the seed's thresholds (`t.text` = 0) only the same visible
/// text does, as the seed's "HTML fingerprint" did. Canonical-centred, in preference order, as
/// content clusters; the id is the canonical's visible-text fingerprint, as before.
fn thin_groups(
    pages: &[Page],
    t: &Thresholds,
    noisy: &[bool],
    thin: &[usize],
    groups: &mut HashMap<String, Vec<usize>>,
) {
    let mut by_origin: HashMap<std::borrow::Cow<str>, Vec<usize>> = HashMap::new();
    for &i in thin {
        by_origin
            .entry(origin(&pages[i].final_url))
            .or_default()
            .push(i);
    }
    for (o, mut members) in by_origin {
        members.sort_by(|&a, &b| preference(pages, noisy, a).cmp(&preference(pages, noisy, b)));
        let mut taken = vec![false; members.len()];
        for pos in 0..members.len() {
            if taken[pos] {
                continue;
            }
            taken[pos] = true;
            let c = &pages[members[pos]].features;
            let id = format!(
                "{}-{o}-{}",
                Rule::T1.prefix(),
                short_hash(&c.visible_fp.to_le_bytes())
            );
            let group = groups.entry(id).or_default();
            group.push(members[pos]);
            for (q, &m) in members.iter().enumerate().skip(pos + 1) {
                if taken[q] {
                    continue;
                }
                let f = &pages[m].features;
                let same = c.visible_fp == f.visible_fp
                    || (t.text > 0.0 && {
                        let s = compare(c, f, t);
                        s.structure >= t.structure && s.text.is_some_and(|j| j >= THIN_TEXT)
                    });
                if same {
                    taken[q] = true;
                    group.push(m);
                }
            }
        }
    }
}

/// One assignment per page, each its own canonical with no cluster.
fn each_alone(n: usize) -> Vec<Assignment> {
    (0..n)
        .map(|i| Assignment {
            is_canonical: true,
            canonical: i,
            ..Assignment::default()
        })
        .collect()
}

/// Groups the pages a single-page rule classifies (recording the rule), except the thin ones
/// ([`thin_groups`] groups them); returns the pages no rule took, and the thin pages.
fn single_page_rules(
    pages: &[Page],
    out: &mut [Assignment],
    groups: &mut HashMap<String, Vec<usize>>,
) -> (Vec<usize>, Vec<usize>) {
    let mut free = Vec::new();
    let mut thin = Vec::new();
    for (i, p) in pages.iter().enumerate() {
        let o = origin(&p.final_url);
        match page_rule(p.status, p.is_html(), &p.features) {
            Some(r @ (Rule::E1 | Rule::Soft404)) => {
                groups
                    .entry(format!("{}-{o}", r.prefix()))
                    .or_default()
                    .push(i);
                out[i].rule = Some(r);
            }
            Some(Rule::T1) => {
                thin.push(i);
                out[i].rule = Some(Rule::T1);
            }
            Some(r) => {
                let id = format!(
                    "{}-{o}-{}",
                    r.prefix(),
                    short_hash(&p.features.visible_fp.to_le_bytes())
                );
                groups.entry(id).or_default().push(i);
                out[i].rule = Some(r);
            }
            None => free.push(i),
        }
    }
    (free, thin)
}

/// Runs R1 (same final URL), then U1 (same URL variant) over `free`. An R1 group's preferred
/// page stays in `free` (content clustering may still place it) and the group's other pages
/// are returned as its riders ([`place_riders`]); U1 groups are recorded in `groups`, and the
/// pages neither takes stay in `free`.
fn url_rules(
    pages: &[Page],
    t: &Thresholds,
    noisy: &[bool],
    free: &mut Vec<usize>,
    out: &mut [Assignment],
    groups: &mut HashMap<String, Vec<usize>>,
) -> Vec<(usize, Vec<usize>)> {
    // R1: the same final URL, reached from several URLs.
    let mut by: HashMap<&str, Vec<usize>> = HashMap::new();
    for &i in free.iter() {
        by.entry(pages[i].final_url.as_str()).or_default().push(i);
    }
    let mut riders = Vec::new();
    let mut ride = vec![false; pages.len()];
    for same in by.into_values().filter(|v| v.len() > 1) {
        let rep = *same
            .iter()
            .min_by(|&&a, &&b| preference(pages, noisy, a).cmp(&preference(pages, noisy, b)))
            .expect("non-empty group");
        let others: Vec<usize> = same.into_iter().filter(|&i| i != rep).collect();
        for &i in &others {
            ride[i] = true;
        }
        riders.push((rep, others));
    }
    riders.sort_unstable();
    free.retain(|&i| !ride[i]);
    // U1: different final URLs that normalize alike and serve the same page.
    let mut by: HashMap<String, Vec<usize>> = HashMap::new();
    for &i in free.iter() {
        by.entry(url_variant_key(&pages[i].final_url))
            .or_default()
            .push(i);
    }
    confirm_url_variants(pages, t, noisy, &mut by);
    let mut rest = Vec::new();
    for &i in free.iter() {
        let k = url_variant_key(&pages[i].final_url);
        let same = &by[&k];
        if same.len() > 1 && same.contains(&i) {
            groups.entry(format!("urlcanon-{k}")).or_default().push(i);
            out[i].rule = Some(Rule::U1);
        } else {
            rest.push(i);
        }
    }
    *free = rest;
    riders
}

/// Keeps in each U1 group only the pages whose content matches the group's preferred page.
fn confirm_url_variants(
    pages: &[Page],
    t: &Thresholds,
    noisy: &[bool],
    by: &mut HashMap<String, Vec<usize>>,
) {
    // U1 is confirmed by content: a URL variant (`/shop/Item`, `/shop/item/`) joins only
    // when its page is the same as the group's preferred page (same visible text, or a
    // near-duplicate by the content rule); a case-sensitive server's different page stays
    // free for content clustering.
    for same in by.values_mut() {
        if same.len() < 2 {
            continue;
        }
        let anchor = *same
            .iter()
            .min_by(|&&a, &&b| preference(pages, noisy, a).cmp(&preference(pages, noisy, b)))
            .expect("non-empty group");
        let a = &pages[anchor].features;
        same.retain(|&i| {
            let b = &pages[i].features;
            i == anchor || a.visible_fp == b.visible_fp || compare(a, b, t).is_duplicate(t)
        });
    }
}

/// Writes each rule group's id and preferred canonical into its members' assignments, and
/// each member's similarities to the canonical where both have HTML to compare (a rule groups
/// pages for what they are, not by distance; the distance is still shown for what it is).
fn assign_rule_clusters(
    pages: &[Page],
    t: &Thresholds,
    noisy: &[bool],
    groups: &HashMap<String, Vec<usize>>,
    out: &mut [Assignment],
) {
    for (id, members) in groups {
        let canon = *members
            .iter()
            .min_by(|&&a, &&b| preference(pages, noisy, a).cmp(&preference(pages, noisy, b)))
            .expect("non-empty group");
        let with_visual = pages[canon].features.phash.is_some();
        for &m in members {
            out[m].cluster_id = id.clone();
            out[m].canonical = canon;
            out[m].is_canonical = m == canon;
            if m == canon {
                out[m].sim = itself(with_visual);
                out[m].similarity_to_canonical = 1.0;
                out[m].measured = true;
            } else if comparable(&pages[m]) && comparable(&pages[canon]) {
                let s = compare(&pages[canon].features, &pages[m].features, t);
                out[m].similarity_to_canonical =
                    s.overall(with_visual && pages[m].features.phash.is_some());
                out[m].sim = s;
                out[m].measured = true;
            }
        }
    }
}

/// A page's similarities to itself.
fn itself(with_visual: bool) -> Similarity {
    Similarity {
        content: 1.0,
        structure: 1.0,
        visual: if with_visual { 1.0 } else { 0.0 },
        behavior: 1.0,
        text: Some(1.0),
    }
}

/// Clusters the eligible pages of `free` by content, one host at a time.
fn content_clusters(
    pages: &[Page],
    t: &Thresholds,
    noisy: &[bool],
    free: &[usize],
    out: &mut [Assignment],
) {
    let mut by_host: HashMap<std::borrow::Cow<str>, Vec<usize>> = HashMap::new();
    for &i in free {
        if eligible(&pages[i]) {
            by_host
                .entry(origin(&pages[i].final_url))
                .or_default()
                .push(i);
        }
    }
    let k = t.max_content_distance().max(3);
    let mut cand = Vec::new();
    for members in by_host.values() {
        host_content_clusters(pages, t, noisy, members, k, &mut cand, out);
    }
}

/// Canonical-centred union over one host's pages, with a Hamming index of distance `k`.
fn host_content_clusters(
    pages: &[Page],
    t: &Thresholds,
    noisy: &[bool],
    members: &[usize],
    k: u32,
    cand: &mut Vec<u32>,
    out: &mut [Assignment],
) {
    let mut order = members.to_vec();
    order.sort_by(|&a, &b| preference(pages, noisy, a).cmp(&preference(pages, noisy, b)));
    let mut index = HammingIndex::new(k);
    for &i in &order {
        index.insert(pages[i].features.simhash);
    }
    let mut assigned = vec![false; order.len()];
    for (pos, &c) in order.iter().enumerate() {
        if assigned[pos] {
            continue;
        }
        assigned[pos] = true;
        index.query(pages[c].features.simhash, cand);
        let mut cluster = Vec::new();
        for &j in cand.iter() {
            let j = j as usize;
            if assigned[j] {
                continue;
            }
            let m = order[j];
            let s = compare(&pages[c].features, &pages[m].features, t);
            if s.is_duplicate(t) {
                assigned[j] = true;
                cluster.push((m, s));
            }
        }
        if cluster.is_empty() {
            continue; // alone: its own canonical, no cluster id
        }
        write_content_cluster(pages, c, cluster, out);
    }
}

/// Records a content cluster: canonical `c` (similarities of 1) and its members.
fn write_content_cluster(
    pages: &[Page],
    c: usize,
    cluster: Vec<(usize, Similarity)>,
    out: &mut [Assignment],
) {
    let id = format!("cluster-{}", short_hash(pages[c].final_url.as_bytes()));
    let with_visual = pages[c].features.phash.is_some();
    out[c].cluster_id = id.clone();
    out[c].sim = itself(with_visual);
    out[c].similarity_to_canonical = 1.0;
    out[c].measured = true;
    for (m, s) in cluster {
        out[m] = Assignment {
            cluster_id: id.clone(),
            is_canonical: false,
            canonical: c,
            rule: None,
            similarity_to_canonical: s.overall(with_visual && pages[m].features.phash.is_some()),
            sim: s,
            measured: true,
        };
    }
}

/// Canonical preference: status 200 first, then a URL without a query parameter known to change
/// nothing (`noisy`: a learned parameter rule, [`crate::page::params`]), then the longest text,
/// then the smallest final URL, then the smallest requested URL (then the input index, for the
/// same URL given twice).
fn preference<'a>(
    pages: &'a [Page],
    noisy: &[bool],
    i: usize,
) -> (
    bool,
    bool,
    std::cmp::Reverse<usize>,
    &'a str,
    &'a str,
    usize,
) {
    let p = &pages[i];
    (
        p.status != 200,
        noisy.get(i).copied().unwrap_or(false),
        std::cmp::Reverse(p.features.text_chars),
        p.final_url.as_str(),
        p.url.as_str(),
        i,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_finds_exactly_the_brute_force_pairs() {
        let mut x: u64 = 0x1234_5678_9ABC_DEF1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut keys = Vec::new();
        for _ in 0..300 {
            let base = next();
            keys.push(base);
            for _ in 0..3 {
                let flips = next() % 6;
                let mut k = base;
                for _ in 0..flips {
                    k ^= 1 << (next() % 64);
                }
                keys.push(k);
            }
        }
        for k in [0, 1, 3, 5] {
            let mut idx = HammingIndex::new(k);
            for &key in &keys {
                idx.insert(key);
            }
            let mut got = Vec::new();
            for (i, &a) in keys.iter().enumerate() {
                idx.query(a, &mut got);
                let want: Vec<u32> = (0..keys.len() as u32)
                    .filter(|&j| (keys[j as usize] ^ a).count_ones() <= k)
                    .collect();
                assert_eq!(got, want, "k = {k}, key {i}");
            }
        }
    }

    #[test]
    fn url_variants() {
        assert_eq!(
            url_variant_key("https://A.com/x/index.html?q=1"),
            "https://a.com/x?q=1"
        );
        assert_eq!(
            url_variant_key("https://A.com/x/index.html#top"),
            "https://a.com/x"
        );
        assert_eq!(url_variant_key("https://a.com/x/"), "https://a.com/x");
        assert_eq!(origin("https://a.com:8080/x?y"), "https://a.com:8080");
    }
}
