//! Soft 404s (issue 26): servers that answer 200 for a URL that does not exist. About 7% of
//! servers do (Prieto et al., "Soft404Detector", 2014); crawlsieve's E3 rule only sees error
//! keywords on short pages, so a styled "not found" page with the site's full template is a
//! normal page to it.
//!
//! The method is the probe of that paper: once per host (and first path segment — a site that
//! mixes applications answers unknown URLs differently under `/shop/` and `/blog/`), render a URL
//! that cannot exist — the path of one of the host's pages with its last segment replaced by a
//! random one of the same extension, so the same application answers — and keep what came back
//! as the host's "not found" [`Template`]:
//!
//! - a 4xx or 5xx status: the host answers honestly; no template (its pages are judged by
//!   status as before);
//! - a redirect to a page every unknown URL lands on (the home page): pages asked at another
//!   URL that end on that same final URL are soft 404s (the page itself, asked directly, is not);
//! - a 200 page: pages whose visible words are those of the template, once the words of each
//!   page's own URL path are set aside (a template that echoes the requested path — "no page
//!   named *foo* here" — is the same template whatever the path), are soft 404s.
//!
//! Word sets are compared by Jaccard similarity ≥ [`SAME_WORDS`]: a "not found" text is short
//! and fixed, while a real page — even one with little text, a search form or an index — has
//! words of its own. Only 2xx pages of the host are judged.

use std::collections::HashSet;

/// Jaccard similarity of visible-word sets at or above which a page is the template.
pub const SAME_WORDS: f64 = 0.9;

/// The probe URL for `sample` (a page URL of the host): its path with the last segment replaced
/// by `token` (random, at least 12 characters from the caller) and the same extension; no query.
/// `None` for a URL without `scheme://host`.
pub fn probe_url(sample: &str, token: &str) -> Option<String> {
    let end = crate::url::lex::authority_end(sample);
    if end == 0 {
        return None;
    }
    let (origin, rest) = sample.split_at(end);
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let (dir, last) = match path.rfind('/') {
        Some(i) => (&path[..=i], &path[i + 1..]),
        None => ("/", ""),
    };
    let ext = match last.rfind('.') {
        Some(i) if i > 0 && last.len() - i <= 6 => &last[i..],
        _ => "",
    };
    Some(format!("{origin}{dir}{token}{ext}"))
}

/// The key a host's template is kept under: origin and first path segment of `url`
/// (`https://h.example/shop`), the origin alone for a page at the root.
pub fn scope_key(url: &str) -> String {
    let end = crate::url::lex::authority_end(url);
    let (origin, rest) = url.split_at(end);
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    // A first segment that is the page itself (`/about.html`, no directory) is not a section.
    if first.is_empty() || !path.trim_start_matches('/').contains('/') {
        origin.to_string()
    } else {
        format!("{origin}/{first}")
    }
}

/// A host's "not found" answer, from its probe.
#[derive(Debug, Clone, PartialEq)]
pub enum Template {
    /// Unknown URLs are redirected to this final URL.
    Redirect(String),
    /// Unknown URLs get a 200 page with these visible words (the probe's path words removed).
    Page(HashSet<String>),
}

/// The visible words of `html` (text outside `script`, `style`, `noscript`, `template`),
/// lowercased, without those of `url`'s path and query.
fn words(html: &str, url: &str) -> HashSet<String> {
    let doc = scraper::Html::parse_document(html);
    let mut out = HashSet::new();
    for node in doc.tree.root().descendants() {
        let scraper::Node::Text(t) = node.value() else {
            continue;
        };
        let hidden = node.ancestors().any(|a| {
            a.value().as_element().is_some_and(|e| {
                matches!(
                    e.name(),
                    "script" | "style" | "noscript" | "template" | "head"
                )
            })
        });
        if hidden {
            continue;
        }
        super::features::tokens(t, |w| {
            out.insert(w.to_lowercase());
        });
    }
    // Title words count too (a template's title is part of it).
    if let Some(title) = doc
        .select(&scraper::Selector::parse("title").expect("a valid selector"))
        .next()
    {
        super::features::tokens(&title.text().collect::<String>(), |w| {
            out.insert(w.to_lowercase());
        });
    }
    let end = crate::url::lex::authority_end(url);
    let tail = percent_encoding::percent_decode_str(&url[end..]).decode_utf8_lossy();
    super::features::tokens(&tail, |w| {
        out.remove(&w.to_lowercase());
    });
    out
}

fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(b).count();
    inter as f64 / (a.len() + b.len() - inter) as f64
}

impl Template {
    /// What the probe of `probe` answered: `final_url`, `status`, rendered `html`. `None`: no
    /// template (an honest 4xx/5xx, or nothing received).
    pub fn from_probe(probe: &str, final_url: &str, status: u16, html: &str) -> Option<Template> {
        if !(200..300).contains(&status) {
            return None;
        }
        if !final_url.is_empty() && final_url != probe {
            return Some(Template::Redirect(final_url.to_string()));
        }
        Some(Template::Page(words(html, probe)))
    }

    /// Whether the page asked at `url` (ending at `final_url` with `status` and `html`) is this
    /// host's "not found" answer.
    pub fn matches(&self, url: &str, final_url: &str, status: u16, html: &str) -> bool {
        if !(200..300).contains(&status) {
            return false;
        }
        match self {
            Template::Redirect(to) => final_url == to && url != to,
            Template::Page(w) => {
                // A page that redirected elsewhere is judged at its final URL's words.
                let at = if final_url.is_empty() { url } else { final_url };
                jaccard(w, &words(html, at)) >= SAME_WORDS
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_keeps_directory_and_extension() {
        assert_eq!(
            probe_url(
                "https://h.example/docs/guide/intro.html?x=1",
                "zq81kd02mxa7"
            )
            .as_deref(),
            Some("https://h.example/docs/guide/zq81kd02mxa7.html")
        );
        assert_eq!(
            probe_url("https://h.example/item/42", "zq81kd02mxa7").as_deref(),
            Some("https://h.example/item/zq81kd02mxa7")
        );
        assert_eq!(
            probe_url("https://h.example", "tok").as_deref(),
            Some("https://h.example/tok")
        );
        assert_eq!(probe_url("relative/x", "tok"), None);
        assert_eq!(
            scope_key("https://h.example/shop/item/1"),
            "https://h.example/shop"
        );
        assert_eq!(
            scope_key("https://h.example/about.html"),
            "https://h.example"
        );
        assert_eq!(scope_key("https://h.example/"), "https://h.example");
    }

    #[test]
    fn templates_echoing_the_path_match_and_real_pages_do_not() {
        let page = |p: &str| {
            format!("<html><head><title>Oops</title></head><body><nav>Home Docs Blog</nav><h1>Sorry, {p} was not found</h1><p>Try the search.</p></body></html>")
        };
        let t = Template::from_probe(
            "https://h.example/docs/zq81kd02mxa7",
            "https://h.example/docs/zq81kd02mxa7",
            200,
            &page("zq81kd02mxa7"),
        )
        .unwrap();
        assert!(t.matches(
            "https://h.example/docs/installing-things",
            "",
            200,
            &page("installing things")
        ));
        let real = "<html><head><title>Search</title></head><body><nav>Home Docs Blog</nav><form><input name=q><button>Search</button></form><p>Enter words to search the documentation.</p></body></html>";
        assert!(!t.matches("https://h.example/docs/search", "", 200, real));
        assert!(!t.matches("https://h.example/docs/x", "", 404, &page("x")));
        assert_eq!(
            Template::from_probe("https://h.example/a/tok", "", 404, "gone"),
            None
        );
        let r =
            Template::from_probe("https://h.example/a/tok", "https://h.example/", 200, "").unwrap();
        assert!(r.matches("https://h.example/a/old", "https://h.example/", 200, ""));
        assert!(!r.matches("https://h.example/", "https://h.example/", 200, ""));
    }
}
