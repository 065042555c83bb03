//! Similarities and the duplicate decision (seed 004).
//!
//! * **content** — 0 when the shorter main text is under 30% of the longer (the seed's "length
//!   differs by more than 70%"), else `1 − d / content_scale` for the SimHash Hamming distance
//!   `d`, floored at 0.
//! * **structure** — ½ cosine of the DOM statistics (element count, text nodes, key tags, depth
//!   histogram; each `ln(1+x)` so the element count does not drown the rest) + ½ weighted
//!   Jaccard of the path frequencies (Σmin / Σmax).
//! * **visual** — `1 − d / visual_scale` for the perceptual-hash distance; 0 when a page has none.
//! * **behaviour** — cosine of (TTFB, DOMContentLoaded, load); reported, never decisive.
//!
//! Duplicate when `content ≥ c ∧ (structure ≥ 0.85 ∨ visual ≥ 0.85)`, or `visual ≥ v`.
//!
//! **Scales and thresholds.** The seed's scales (content 16, visual 20) make its thresholds say
//! more than they mean: content ≥ 0.97 then allows a SimHash distance of 0 only (the same
//! article with one sentence changed fails it), and visual ≥ 0.99 demands identical hashes.
//! crawlsieve's scale is 64 for both, so a similarity is the share of fingerprint bits that agree
//! (two unrelated pages ≈ 0.5), and its defaults are set on that scale by what they are for:
//! content `c` = 0.95 ⇔ d ≤ 3, the near-duplicate distance Manku et al. validated for 64-bit
//! SimHashes; visual 0.85 ⇔ d ≤ 9; the visual fallback `v` = 0.96 ⇔ d ≤ 2 ("almost the same
//! screenshot"). [`Thresholds::seed`] reproduces the seed exactly (0.97 / 0.85 / 0.85 / 0.99 at
//! scales 16 and 20).

use serde::{Deserialize, Serialize};

use super::features::{Features, Timings};

/// Thresholds and scales of the decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// Content similarity of rule 1.
    pub content: f64,
    /// Structure similarity of rule 1 (or visual ≥ `visual`).
    pub structure: f64,
    /// Visual similarity of rule 1.
    pub visual: f64,
    /// Visual similarity of rule 2 (the visual fallback).
    pub visual_alone: f64,
    /// SimHash distance at which content similarity reaches 0.
    pub content_scale: f64,
    /// Perceptual-hash distance at which visual similarity reaches 0.
    pub visual_scale: f64,
    /// The least estimated Jaccard similarity of the two main texts' shingle sets (MinHash) for
    /// any duplicate decision; 0 disables it (the seed's rule).
    pub text: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            content: 0.95,
            structure: 0.85,
            visual: 0.85,
            visual_alone: 0.96,
            content_scale: 64.0,
            visual_scale: 64.0,
            text: 0.75,
        }
    }
}

impl Thresholds {
    /// Exactly the seed's: 0.97 / 0.85 / 0.85 / 0.99, content scale 16, visual scale 20.
    pub fn seed() -> Thresholds {
        Thresholds {
            content: 0.97,
            structure: 0.85,
            visual: 0.85,
            visual_alone: 0.99,
            content_scale: 16.0,
            visual_scale: 20.0,
            text: 0.0,
        }
    }

    /// The largest SimHash distance that can still pass rule 1 (what the index must find).
    pub fn max_content_distance(&self) -> u32 {
        (((1.0 - self.content) * self.content_scale).floor().max(0.0) as u32).min(64)
    }
}

/// The four similarities of a pair.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Similarity {
    /// Text.
    pub content: f64,
    /// DOM structure.
    pub structure: f64,
    /// Screenshot.
    pub visual: f64,
    /// Timings (display only).
    pub behavior: f64,
    /// Estimated Jaccard similarity of the main texts' shingles (MinHash); `None` when a page
    /// has no signature.
    #[serde(default)]
    pub text: Option<f64>,
}

impl Similarity {
    /// The seed's decision.
    pub fn is_duplicate(&self, t: &Thresholds) -> bool {
        if self.text.is_some_and(|j| j < t.text) {
            return false; // different texts, however alike their fingerprints and screenshots
        }
        (self.content >= t.content && (self.structure >= t.structure || self.visual >= t.visual))
            || self.visual >= t.visual_alone
    }

    /// One number for `similarity_to_canonical`: the mean of content, structure and (when
    /// both pages have screenshots) visual.
    pub fn overall(&self, with_visual: bool) -> f64 {
        if with_visual {
            (self.content + self.structure + self.visual) / 3.0
        } else {
            (self.content + self.structure) / 2.0
        }
    }
}

/// Content similarity from the SimHashes and text lengths.
pub fn content(a: &Features, b: &Features, t: &Thresholds) -> f64 {
    let (lo, hi) = if a.text_chars < b.text_chars {
        (a.text_chars, b.text_chars)
    } else {
        (b.text_chars, a.text_chars)
    };
    if hi == 0 || (lo as f64) < 0.3 * hi as f64 {
        return 0.0;
    }
    let d = (a.simhash ^ b.simhash).count_ones() as f64;
    (1.0 - d / t.content_scale).max(0.0)
}

fn stats_vector(f: &Features) -> impl Iterator<Item = f64> + '_ {
    [f.nodes, f.text_nodes]
        .into_iter()
        .chain(f.tags)
        .chain(f.depth_hist)
        .map(|x| (x as f64).ln_1p())
}

fn cosine(a: impl Iterator<Item = f64>, b: impl Iterator<Item = f64>) -> f64 {
    let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
    for (x, y) in a.zip(b) {
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 && bb == 0.0 {
        return 1.0;
    }
    if aa == 0.0 || bb == 0.0 {
        return 0.0;
    }
    (ab / (aa.sqrt() * bb.sqrt())).clamp(0.0, 1.0)
}

/// Weighted Jaccard of two sorted (hash, count) lists.
pub fn weighted_jaccard(a: &[(u64, u32)], b: &[(u64, u32)]) -> f64 {
    let (mut i, mut j) = (0, 0);
    let (mut min, mut max) = (0u64, 0u64);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                min += x.1.min(y.1) as u64;
                max += x.1.max(y.1) as u64;
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                max += x.1 as u64;
                i += 1;
            }
            (Some(_), Some(y)) => {
                max += y.1 as u64;
                j += 1;
            }
            (Some(x), None) => {
                max += x.1 as u64;
                i += 1;
            }
            (None, Some(y)) => {
                max += y.1 as u64;
                j += 1;
            }
            (None, None) => break,
        }
    }
    if max == 0 {
        1.0
    } else {
        min as f64 / max as f64
    }
}

/// Structure similarity.
pub fn structure(a: &Features, b: &Features) -> f64 {
    0.5 * cosine(stats_vector(a), stats_vector(b)) + 0.5 * weighted_jaccard(&a.paths, &b.paths)
}

/// Visual similarity (0 unless both have a perceptual hash).
pub fn visual(a: &Features, b: &Features, t: &Thresholds) -> f64 {
    match (a.phash, b.phash) {
        (Some(x), Some(y)) => (1.0 - (x ^ y).count_ones() as f64 / t.visual_scale).max(0.0),
        _ => 0.0,
    }
}

fn timing_vector(t: &Option<Timings>) -> [f64; 3] {
    t.map_or([0.0; 3], |t| [t.ttfb_ms, t.dcl_ms, t.load_ms])
}

/// All four similarities.
pub fn compare(a: &Features, b: &Features, t: &Thresholds) -> Similarity {
    Similarity {
        content: content(a, b, t),
        structure: structure(a, b),
        visual: visual(a, b, t),
        text: super::features::jaccard_estimate(&a.minhash, &b.minhash),
        behavior: if a.timings.is_some() && b.timings.is_some() {
            cosine(
                timing_vector(&a.timings).into_iter(),
                timing_vector(&b.timings).into_iter(),
            )
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_scales_are_reproducible_and_the_defaults_mean_what_they_say() {
        assert_eq!(Thresholds::seed().max_content_distance(), 0);
        assert_eq!(Thresholds::default().max_content_distance(), 3);
        // The seed's visual fallback needs identical hashes; the default allows 2 bits.
        let v = |t: &Thresholds, d: f64| 1.0 - d / t.visual_scale >= t.visual_alone;
        assert!(v(&Thresholds::seed(), 0.0) && !v(&Thresholds::seed(), 1.0));
        assert!(v(&Thresholds::default(), 2.0) && !v(&Thresholds::default(), 3.0));
    }

    #[test]
    fn weighted_jaccard_counts() {
        let a = [(1, 2), (2, 1)];
        let b = [(1, 1), (3, 1)];
        assert!((weighted_jaccard(&a, &b) - 1.0 / 4.0).abs() < 1e-12);
        assert_eq!(weighted_jaccard(&a, &a), 1.0);
    }
}
