//! Streaming assignment for the render stage: one page at a time, against the clusters seen so
//! far, with bounded memory per host.
//!
//! Rule pages get the same ids as in batch clustering ([`super::cluster`]). A redirected page
//! (final URL ≠ URL) joins `redir-{hash(final URL)}`. An eligible page joins the cluster of the
//! most similar canonical within the Hamming distance of the index (the canonical being the
//! first page of its cluster the stage saw), or becomes a new canonical. Unlike the batch, the
//! result depends on arrival order (a stream cannot wait for the longest page); ids are still
//! hashes of the canonical's final URL, so a checkpointed state and a replay agree.
//!
//! Memory: at most `max_canonicals` canonicals per host are remembered (the oldest half is
//! forgotten when the limit is doubled; the index is rebuilt then). A forgotten canonical's
//! later duplicates start a new cluster — duplicates, never a lost page.

use std::collections::HashMap;

use super::cluster::{eligible, origin, short_hash, HammingIndex};
use super::rule_pages::{page_rule, Rule};
use super::similarity::{compare, Similarity, Thresholds};
use super::{Features, Page};

/// One page's assignment.
#[derive(Debug, Clone, PartialEq)]
pub struct Online {
    /// Cluster id; empty when the page is alone (not eligible, no rule).
    pub cluster_id: String,
    /// Whether it is its cluster's canonical.
    pub is_canonical: bool,
    /// The canonical's final URL.
    pub canonical_url: String,
    /// The rule class, for rule clusters.
    pub rule: Option<Rule>,
    /// Similarities to the canonical (content clusters).
    pub sim: Similarity,
    /// The page started a new cluster (content or rule) in this clusterer.
    pub created: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Canonical {
    id: String,
    url: String,
    features: Features,
}

/// A host's state as stored (checkpoints, so a rebalance does not forget clusters).
#[derive(serde::Serialize, serde::Deserialize)]
struct HostState {
    v: u32,
    canonicals: Vec<Canonical>,
    first_of: Vec<(String, String)>,
}

#[derive(Default)]
struct Host {
    canonicals: Vec<Canonical>,
    index: Option<HammingIndex>,
    first_of: HashMap<String, String>, // rule/redirect cluster id → canonical URL
}

impl Online {
    /// A page in no cluster: not eligible, or one whose render failed (its features say nothing
    /// of the page its URL serves, and its final URL — an error page, a refused hop — must not
    /// group it with other failures as R1).
    pub fn alone(p: &Page) -> Online {
        Online {
            cluster_id: String::new(),
            is_canonical: true,
            canonical_url: p.final_url.clone(),
            rule: None,
            sim: Similarity::default(),
            created: false,
        }
    }
}

/// The streaming clusterer.
pub struct OnlineClusterer {
    t: Thresholds,
    k: u32,
    max_canonicals: usize,
    hosts: HashMap<String, Host>,
}

impl OnlineClusterer {
    /// A clusterer remembering at most `max_canonicals` content canonicals per host.
    pub fn new(t: Thresholds, max_canonicals: usize) -> OnlineClusterer {
        OnlineClusterer {
            k: t.max_content_distance().max(3),
            t,
            max_canonicals: max_canonicals.max(1),
            hosts: HashMap::new(),
        }
    }

    /// Whether `host` (an origin) has state here.
    pub fn knows(&self, host: &str) -> bool {
        self.hosts.contains_key(host)
    }

    /// `host`'s state as JSON (for a checkpoint), if any.
    pub fn export(&self, host: &str) -> Option<String> {
        let h = self.hosts.get(host)?;
        let st = HostState {
            v: 1,
            canonicals: h
                .canonicals
                .iter()
                .map(|c| Canonical {
                    id: c.id.clone(),
                    url: c.url.clone(),
                    features: c.features.clone(),
                })
                .collect(),
            first_of: h
                .first_of
                .iter()
                .map(|(a, b)| (a.clone(), b.clone()))
                .collect(),
        };
        Some(serde_json::to_string(&st).expect("state serializes"))
    }

    /// Load `host`'s state from a checkpoint (replacing what is here). A checkpoint this build
    /// cannot read is an error; the caller starts the host afresh.
    pub fn import(&mut self, host: &str, json: &str) -> Result<(), serde_json::Error> {
        let st: HostState = serde_json::from_str(json)?;
        let mut idx = HammingIndex::new(self.k);
        for c in &st.canonicals {
            idx.insert(c.features.simhash);
        }
        self.hosts.insert(
            host.to_string(),
            Host {
                canonicals: st.canonicals,
                index: Some(idx),
                first_of: st.first_of.into_iter().collect(),
            },
        );
        Ok(())
    }

    /// Canonicals remembered for `host` (an origin).
    pub fn remembered(&self, host: &str) -> usize {
        self.hosts.get(host).map_or(0, |h| h.canonicals.len())
    }

    fn rule_cluster(h: &mut Host, id: String, url: &str, rule: Rule) -> Online {
        let created = !h.first_of.contains_key(&id);
        let canon = h
            .first_of
            .entry(id.clone())
            .or_insert_with(|| url.to_string())
            .clone();
        Online {
            created,
            is_canonical: canon == url,
            cluster_id: id,
            canonical_url: canon,
            rule: Some(rule),
            sim: Similarity::default(),
        }
    }

    /// Assign `p`.
    pub fn assign(&mut self, p: &Page) -> Online {
        let o = origin(&p.final_url).to_string();
        let h = self.hosts.entry(o.clone()).or_default();
        if h.first_of.len() > 4 * self.max_canonicals {
            h.first_of.clear(); // bounded too; ids do not change, only who is canonical
        }
        if let Some(a) = Self::rule_assignment(h, &o, p) {
            return a;
        }
        if !eligible(p) {
            return Online::alone(p);
        }
        let k = self.k;
        let index = h.index.get_or_insert_with(|| HammingIndex::new(k));
        let mut cand = Vec::new();
        index.query(p.features.simhash, &mut cand);
        if let Some(a) = closest_canonical(&h.canonicals, &cand, p, &self.t) {
            return a;
        }
        new_canonical(&mut h.canonicals, index, p, k, self.max_canonicals)
    }

    /// The rule or redirect cluster of `p` on host `o`, if a rule classifies it.
    fn rule_assignment(h: &mut Host, o: &str, p: &Page) -> Option<Online> {
        match page_rule(p.status, p.is_html(), &p.features) {
            Some(Rule::E1) => {
                return Some(Self::rule_cluster(
                    h,
                    format!("err5xx-{o}"),
                    &p.final_url,
                    Rule::E1,
                ))
            }
            Some(r) => {
                let id = format!(
                    "{}-{o}-{}",
                    r.prefix(),
                    short_hash(&p.features.visible_fp.to_le_bytes())
                );
                return Some(Self::rule_cluster(h, id, &p.final_url, r));
            }
            None => {}
        }
        if p.final_url != p.url {
            let id = format!("redir-{}", short_hash(p.final_url.as_bytes()));
            return Some(Self::rule_cluster(h, id, &p.final_url, Rule::R1));
        }
        None
    }
}

/// The cluster of the most similar duplicate among the candidate canonicals `cand`, if any.
fn closest_canonical(
    canonicals: &[Canonical],
    cand: &[u32],
    p: &Page,
    t: &Thresholds,
) -> Option<Online> {
    let best = cand
        .iter()
        .map(|&i| {
            (
                i as usize,
                compare(&canonicals[i as usize].features, &p.features, t),
            )
        })
        .filter(|(_, s)| s.is_duplicate(t))
        .max_by(|a, b| {
            a.1.overall(false)
                .total_cmp(&b.1.overall(false))
                .then(b.0.cmp(&a.0))
        });
    let (i, s) = best?;
    let c = &canonicals[i];
    Some(Online {
        cluster_id: c.id.clone(),
        is_canonical: c.url == p.final_url,
        canonical_url: c.url.clone(),
        rule: None,
        sim: s,
        created: false,
    })
}

/// `p` becomes a new canonical of its host (indexed; past `2 × max_canonicals` the oldest half
/// is forgotten and the index rebuilt).
fn new_canonical(
    canonicals: &mut Vec<Canonical>,
    index: &mut HammingIndex,
    p: &Page,
    k: u32,
    max_canonicals: usize,
) -> Online {
    let id = format!("cluster-{}", short_hash(p.final_url.as_bytes()));
    canonicals.push(Canonical {
        id: id.clone(),
        url: p.final_url.clone(),
        features: p.features.clone(),
    });
    index.insert(p.features.simhash);
    if canonicals.len() >= 2 * max_canonicals {
        // Forget the oldest half and rebuild the index over the rest.
        canonicals.drain(..max_canonicals);
        let mut idx = HammingIndex::new(k);
        for c in canonicals.iter() {
            idx.insert(c.features.simhash);
        }
        *index = idx;
    }
    Online {
        cluster_id: id,
        is_canonical: true,
        canonical_url: p.final_url.clone(),
        rule: None,
        sim: Similarity {
            content: 1.0,
            structure: 1.0,
            visual: 0.0,
            behavior: 0.0,
            text: Some(1.0),
        },
        created: true,
    }
}
