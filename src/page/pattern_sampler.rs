//! URL pattern + DOM similarity (seed 003): per URL pattern, sample N pages (default 3); when N
//! samples are in, the mean pairwise structure similarity decides: ≥ threshold (0.85) →
//! *similar* (the gate skips further URLs of the pattern), else *different*.
//!
//! The reference counted a failed fetch as a sample, so one timeout could lock a pattern into a
//! verdict built on an empty page. Here a failure is not a sample ([`Sampler::failed`] only
//! counts it), and a pattern still sampling after [`Sampler::max_failures`] failures simply
//! stays undecided — its URLs keep passing — instead of being decided on bad data.

use std::collections::HashMap;

use super::features::Features;
use super::similarity::structure;

/// The outcome for a pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Still collecting samples (URLs pass).
    Sampling,
    /// Mean pairwise DOM similarity ≥ the threshold (URLs are skipped).
    Similar(f64),
    /// Below it (URLs pass).
    Different(f64),
}

#[derive(Debug, Default)]
struct State {
    samples: Vec<Features>,
    failures: u32,
    verdict: Option<Verdict>,
}

/// Per-pattern sampling.
#[derive(Debug)]
pub struct Sampler {
    /// Pages compared per pattern.
    pub sample_count: usize,
    /// Mean similarity at which a pattern is similar.
    pub threshold: f64,
    /// Failures after which a still-undecided pattern stops being sampled (it stays
    /// undecided: its URLs pass).
    pub max_failures: u32,
    states: HashMap<String, State>,
}

impl Sampler {
    /// The seed's defaults: 3 samples, 0.85.
    pub fn new(sample_count: usize, threshold: f64) -> Sampler {
        Sampler {
            sample_count: sample_count.max(2),
            threshold,
            max_failures: 10,
            states: HashMap::new(),
        }
    }

    /// Record a fetched page of `pattern`; returns the verdict once it is decided.
    pub fn sample(&mut self, pattern: &str, f: Features) -> Verdict {
        let need = self.sample_count;
        let threshold = self.threshold;
        let st = self.states.entry(pattern.to_string()).or_default();
        if let Some(v) = st.verdict {
            return v;
        }
        st.samples.push(f);
        if st.samples.len() < need {
            return Verdict::Sampling;
        }
        let mut sum = 0.0;
        let mut pairs = 0;
        for i in 0..st.samples.len() {
            for j in i + 1..st.samples.len() {
                sum += structure(&st.samples[i], &st.samples[j]);
                pairs += 1;
            }
        }
        let mean = sum / pairs as f64;
        let v = if mean >= threshold {
            Verdict::Similar(mean)
        } else {
            Verdict::Different(mean)
        };
        st.verdict = Some(v);
        st.samples.clear();
        v
    }

    /// A page of `pattern` could not be fetched: not a sample.
    pub fn failed(&mut self, pattern: &str) {
        self.states.entry(pattern.to_string()).or_default().failures += 1;
    }

    /// Whether more pages of `pattern` should be sampled.
    pub fn wants(&self, pattern: &str) -> bool {
        self.states
            .get(pattern)
            .is_none_or(|s| s.verdict.is_none() && s.failures < self.max_failures)
    }

    /// The current verdict.
    pub fn verdict(&self, pattern: &str) -> Verdict {
        self.states
            .get(pattern)
            .and_then(|s| s.verdict)
            .unwrap_or(Verdict::Sampling)
    }
}
