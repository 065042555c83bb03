//! The HTTP half of `render.mode = "auto"`: a page fetched without a browser, through the same
//! egress policy as the browser's proxy ([`crate::net::get`]: only http(s); every name resolved
//! once and every address checked, the checked address connected to; each redirect hop checked
//! the same way; the `--allow` list; the page budget as the whole request's time limit; the
//! browser's HTML size limit), and returned as a [`Rendered`] with `rendered: false` — no
//! screenshot, no timings, the HTML as the server sent it.
//!
//! It asks as the browser would (the browser's own `User-Agent`, a browser's `Accept`), so a
//! server that answers browsers and `curl` differently answers this fetch as it answers the
//! browser. The body is read as UTF-8 (invalid bytes replaced): what a page declares in
//! another charset is compared in its replacement form, the same way on every page of its host.

use crate::net::{GetError, GetLimits, Lookup, Policy};

use super::Rendered;

/// What a static fetch needs: the policy, the resolver, the limits.
#[derive(Clone)]
pub struct StaticFetch {
    /// Who may be reached (the renderer's policy).
    pub policy: Policy,
    /// The resolver (the system's; tests may give their own).
    pub lookup: Lookup,
    /// Time, size, redirects, headers.
    pub limits: GetLimits,
}

/// The `Accept` header of a top-level navigation in Chromium.
pub const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8";

/// Redirects Chromium follows before it gives up (`net::URLRequest::kMaxRedirects`).
pub const MAX_REDIRECTS: usize = 20;

impl StaticFetch {
    /// Fetch `url`; never fails (errors are in [`Rendered::error`], worded as the renderer words
    /// them, so [`Rendered::failure_kind`] sorts them alike).
    pub async fn fetch(&self, url: &str) -> Rendered {
        let mut out = Rendered {
            url: url.to_string(),
            final_url: url.to_string(),
            ..Rendered::default()
        };
        match crate::net::get(url, &self.policy, &self.lookup, &self.limits).await {
            Ok(got) => {
                if got.truncated {
                    out.error = format!(
                        "the HTML is over the limit of {} bytes",
                        self.limits.max_bytes
                    );
                    out.status = got.status;
                    return out;
                }
                out.status = got.status;
                out.content_type = got
                    .content_type
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                out.final_url = got.chain.last().cloned().unwrap_or_else(|| url.into());
                if got.chain.len() > 1 {
                    out.redirect_chain = got.chain;
                }
                out.html = String::from_utf8(got.body)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                if let Err(e) = crate::page::features::check_bounds(&out.html) {
                    out.error = format!("unparsable: the fetched HTML: {e}");
                    out.html.clear();
                }
            }
            Err(GetError::Refused { why, hop: 0 }) => out.error = format!("refused: {why}"),
            Err(GetError::Refused { why, hop }) => {
                out.error = format!("refused after a redirect (hop {hop}): {why}")
            }
            Err(GetError::TooManyRedirects(n)) => {
                out.error = format!("navigation failed: more than {n} redirects")
            }
            Err(GetError::Failed(why)) if why.starts_with("no complete answer within") => {
                out.error = format!("timeout: {why}")
            }
            Err(GetError::Failed(why)) if why.starts_with("unreachable") => out.error = why,
            Err(GetError::Failed(why)) => out.error = format!("navigation failed: {why}"),
        }
        out
    }
}
