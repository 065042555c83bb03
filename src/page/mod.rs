//! Pages → features → near-duplicate and rule clusters (seed 004), and URL-pattern DOM verdicts
//! (seed 003). Pure and deterministic: no browser, no I/O; the render stage and
//! `crawlsieve cluster` wrap it.
//!
//! * [`features`] — one walk over the parsed page: main text, CJK-aware SimHash, DOM statistics,
//!   path frequencies, depth histogram, title, rule evidence.
//! * [`similarity`] — content, structure, visual, behaviour; the seed's duplicate rule with
//!   scales that make its thresholds mean what they say ([`similarity::Thresholds::seed`] keeps
//!   the seed's own).
//! * [`rule_pages`] — E1, E3, L1, W1, M1, T1 (R1 and U1 are decided with the other pages).
//! * [`cluster`] — the Hamming index and the canonical-centred batch clustering.
//! * [`pattern_sampler`] — per URL pattern, sample N pages and decide similar/different.
//! * [`dynamic`] — what a page's HTML says about whether a browser would show something else.
//! * [`online`] — streaming clustering: each page assigned as it comes (the render stage).
//! * [`params`] — learning which query parameters change nothing on a host.
//! * [`soft404`] — soft 404s: a scope's answer to URLs that cannot exist.
//! * [`warc`] — reading pages from WARC files (`crawlsieve cluster`).
//!
//! Owns: what a page is and how pages are compared and grouped. Layer 1 (pure, no browser, no
//! Kafka): may import `url` and `input`; never `render` (which builds on it) or above.

pub mod cluster;
pub mod dynamic;
pub mod features;
pub mod online;
pub mod params;
pub mod pattern_sampler;
pub mod rule_pages;
pub mod similarity;
pub mod soft404;
pub mod warc;

pub use features::{Features, Timings};

/// A fetched page, reduced to its features (the HTML is not kept).
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The URL asked for.
    pub url: String,
    /// The URL after redirects.
    pub final_url: String,
    /// HTTP status.
    pub status: u16,
    /// Content-Type.
    pub content_type: String,
    /// Redirects followed, in order.
    pub redirect_chain: Vec<String>,
    /// Its features.
    pub features: Features,
}

impl Page {
    /// Extract a page's features from its HTML (`final_url` empty = `url`).
    pub fn new(url: &str, final_url: &str, status: u16, content_type: &str, html: &str) -> Page {
        Page {
            url: url.to_string(),
            final_url: if final_url.is_empty() { url } else { final_url }.to_string(),
            status,
            content_type: content_type.to_string(),
            redirect_chain: Vec::new(),
            features: features::extract(html),
        }
    }

    /// [`Page::new`] for untrusted HTML: the page, and why its HTML was not parsed, if it was
    /// not ([`features::check_bounds`]: size, nesting depth, attributes per tag) — then the page
    /// has no features, and the caller reports it with the error.
    pub fn parse(
        url: &str,
        final_url: &str,
        status: u16,
        content_type: &str,
        html: &str,
    ) -> (Page, Option<features::HtmlRefused>) {
        match features::check_bounds(html) {
            Ok(()) => (Page::new(url, final_url, status, content_type, html), None),
            Err(e) => (Page::new(url, final_url, status, content_type, ""), Some(e)),
        }
    }

    /// Whether the content type is HTML (an absent content type counts as HTML).
    pub fn is_html(&self) -> bool {
        let ct = self.content_type.to_ascii_lowercase();
        ct.is_empty() || ct.contains("text/html") || ct.contains("application/xhtml")
    }
}
