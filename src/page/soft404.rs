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

/// `scheme://authority` and the path (no query or fragment) of an absolute URL; an empty
/// origin when there is no `://`.
fn origin_and_path(url: &str) -> (&str, &str) {
    let (origin, rest) = url.split_at(crate::url::lex::authority_end(url));
    (origin, rest.split(['?', '#']).next().unwrap_or(""))
}

/// The probe URL for `sample` (a page URL of the host): its path with the last segment replaced
/// by `token` (random, at least 12 characters from the caller) and the same extension; no query.
/// `None` for a URL without `scheme://host`.
pub fn probe_url(sample: &str, token: &str) -> Option<String> {
    let (origin, path) = origin_and_path(sample);
    if origin.is_empty() {
        return None;
    }
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

/// A probe URL for `sample`, a page of `scope` ([`probe_url`]), with a fresh token no site
/// names a page with: `cs` and 12 hex digits of a hash of the scope and the time.
pub fn fresh_probe(sample: &str, scope: &str) -> Option<String> {
    let token = format!(
        "cs{:012x}",
        xxhash_rust::xxh3::xxh3_64(format!("{scope}{:?}", std::time::SystemTime::now()).as_bytes())
            & 0xffff_ffff_ffff
    );
    probe_url(sample, &token)
}

/// The key a host's template is kept under: origin and first path segment of `url`
/// (`https://h.example/shop`), the origin alone for a page at the root.
pub fn scope_key(url: &str) -> String {
    let (origin, path) = origin_and_path(url);
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    // A first segment that is the page itself (`/about.html`, no directory) is not a section.
    if first.is_empty() || !path.trim_start_matches('/').contains('/') {
        origin.to_string()
    } else {
        format!("{origin}/{first}")
    }
}

/// A host's "not found" answer, from its probe. Serialized (the render stage shares templates
/// through Redis) as `{"redirect": URL}` or `{"page": [WORD, ...]}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Template {
    /// Unknown URLs are redirected to this final URL (canonical form).
    Redirect(String),
    /// Unknown URLs get a 200 page with these visible words (the probe's path words removed).
    Page(HashSet<String>),
}

/// Jaccard similarity at or above which a page is word for word the template (the probe's
/// answer to another unknown URL): such pages do not count when the scope's chrome is measured.
pub const IDENTICAL_WORDS: f64 = 0.98;

/// The fewest visible words a 200 template needs: an empty or near-empty answer (a blank 200,
/// a page that only echoes its path) says nothing a real page could be told apart by.
pub const MIN_TEMPLATE_WORDS: usize = 10;

/// A URL's canonical form for comparisons (`https://h.example` and `https://h.example/` are one
/// page), the URL itself when it does not canonicalize.
fn canon(url: &str) -> String {
    crate::url::Canonicalizer::default()
        .canonicalize(url, None)
        .map_or_else(|_| url.to_string(), |c| c.url)
}

/// The visible words of `html` (text outside `script`, `style`, `noscript`, `template`, and
/// the title), lowercased, without those of `url`'s path and query.
pub fn words(html: &str, url: &str) -> HashSet<String> {
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
            if !volatile(w) {
                out.insert(w.to_lowercase());
            }
        });
    }
    if let Some(title) = doc
        .select(&scraper::Selector::parse("title").expect("a valid selector"))
        .next()
    {
        super::features::tokens(&title.text().collect::<String>(), |w| {
            if !volatile(w) {
                out.insert(w.to_lowercase());
            }
        });
    }
    let end = crate::url::lex::authority_end(url);
    let tail = percent_encoding::percent_decode_str(&url[end..]).decode_utf8_lossy();
    super::features::tokens(&tail, |w| {
        out.remove(&w.to_lowercase());
    });
    out
}

/// A token that changes from one answer to the next without the page changing: anything
/// with a digit (request ids, times, dates, counters) or a long run of hex letters. A "not
/// found" page that stamps each answer with a request id and a time is still one template.
fn volatile(w: &str) -> bool {
    w.bytes().any(|b| b.is_ascii_digit())
        || (w.len() >= 12 && w.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        return 0.0; // nothing to compare is never "the same"
    }
    inter as f64 / union as f64
}

/// `url`'s path with a directory index document (`index.html`, `default.aspx`) taken off: the
/// directory it stands for. Not with a query: `/index.php?title=X` is an application's page X
/// (MediaWiki and many more address every page so).
fn directory_path(url: &str) -> &str {
    let (_, path) = origin_and_path(url);
    let has_query = url[crate::url::lex::authority_end(url)..].contains('?');
    match path.rsplit_once('/') {
        Some((dir, last)) if is_index_document(last) && !has_query => &path[..dir.len() + 1],
        _ => path,
    }
}

/// Whether `url` is the origin's root (`/`, `/index.html`): the page a fallback route or a
/// redirect of unknown URLs usually shows, never judged a soft 404 itself.
fn is_origin_root(url: &str) -> bool {
    directory_path(url).trim_matches('/').is_empty()
}

/// Whether `url` is the root of its scope (`/`, or `/<first segment>/`, or their index
/// documents). A directory's index document is the directory: a fallback route that serves
/// `/index.html` for every unknown URL serves that very page (found on the documentation corpus).
fn is_scope_root(url: &str) -> bool {
    let path = directory_path(url);
    let p = path.trim_matches('/');
    // `/seg/` is the root of the scope `/seg` ([`scope_key`]); `/seg` without its slash is a
    // page of the origin's scope.
    p.is_empty() || path.ends_with('/') && !p.contains('/')
}

/// Whether `url` is a section's root (`/manual/`, `/manual/index.html`): judging it needs the
/// origin's template too ([`judge_scope`]).
pub fn is_section_root(url: &str) -> bool {
    is_scope_root(url) && !is_origin_root(url)
}

/// The origin (`scheme://authority`) of a URL or a [`scope_key`]: the key of the origin's scope.
pub fn origin_scope(url: &str) -> &str {
    origin_and_path(url).0
}

/// Whether a section's root page (`/manual/`) may be judged under the section's page template
/// `t`, given the origin's template `site` (`None`: not known, or known to be the home page —
/// see [`serves_home`]).
///
/// A section can have a fallback route of its own that serves the section's root for every
/// unknown URL under it (a single-page application at `/app/`): then the root *is* the
/// template's page and must be spared. When the section's unknown URLs get the site's own
/// "not found" answer (the same words as the origin's template), the section has no such route,
/// and a root that shows that answer is an unknown directory like any other unknown URL. A
/// section whose origin's answer is not known keeps its root spared; so does every section of
/// a site whose unknown URLs get its home page (the caller passes `None` then): the home page
/// itself may live at a section's root (`/` redirecting to `/en/`).
fn section_roots_judged(t: &Template, site: Option<&Template>) -> bool {
    match (t, site) {
        (Template::Page(a), Some(Template::Page(b))) => jaccard(a, b) >= SAME_WORDS,
        _ => false,
    }
}

/// Whether the origin's template `t` is the site's home page: the origin's root, as rendered
/// (`home`), shows the template's words, or lands where the template redirects. A home page
/// not rendered (`None`) counts as one: section roots stay spared.
pub fn serves_home(t: &Template, home: Option<&Rendered>) -> bool {
    let Some(home) = home else {
        return true;
    };
    match t {
        Template::Redirect(to) => canon(home.at()) == *to,
        Template::Page(w) => jaccard(w, &words(home.html, home.at())) >= SAME_WORDS,
    }
}

/// For a section's root (`/manual/`): the origin's scope key and the URL its probe is derived
/// from (`scheme://authority/`), as the render stage and `similar` add them to their probes.
pub fn origin_probe_for(url: &str) -> Option<(String, String)> {
    is_section_root(url).then(|| {
        let origin = origin_scope(url).to_string();
        let sample = format!("{origin}/");
        (origin, sample)
    })
}

/// Whether `name` (a last path segment) is a directory index document: `index.*` or
/// `default.*` with a web page extension.
fn is_index_document(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    matches!(stem, "index" | "default")
        && matches!(
            ext,
            "html" | "htm" | "xhtml" | "shtml" | "php" | "asp" | "aspx" | "jsp"
        )
}

impl Template {
    /// What the probe of `probe` answered: `final_url`, `status`, rendered `html`. `None`: no
    /// template (an honest 4xx/5xx, or an answer too empty to compare with).
    pub fn from_probe(probe: &str, final_url: &str, status: u16, html: &str) -> Option<Template> {
        if !(200..300).contains(&status) {
            return None;
        }
        // The browser may change the URL trivially (a trailing slash, an https upgrade, an
        // escape, a hash route): a landing URL still naming the probe's token is not a redirect.
        let token = probe.rsplit('/').next().unwrap_or("");
        let token = token.split('.').next().unwrap_or(token);
        let moved = !final_url.is_empty()
            && canon(final_url) != canon(probe)
            && (token.len() < 8 || !final_url.contains(token));
        if moved {
            return Some(Template::Redirect(canon(final_url)));
        }
        let w = words(
            html,
            if final_url.is_empty() {
                probe
            } else {
                final_url
            },
        );
        (w.len() >= MIN_TEMPLATE_WORDS).then_some(Template::Page(w))
    }
}

/// One page of a scope, as rendered.
#[derive(Debug, Clone, Copy)]
pub struct Rendered<'a> {
    // (`html` is read by [`judge_scope`] only; [`judge_words`] takes the words instead.)
    /// The URL asked for.
    pub url: &'a str,
    /// The URL shown at the end (empty: `url`).
    pub final_url: &'a str,
    pub status: u16,
    pub html: &'a str,
}

impl Rendered<'_> {
    /// Where the page ended: its final URL, else the URL asked for.
    pub fn at(&self) -> &str {
        if self.final_url.is_empty() {
            self.url
        } else {
            self.final_url
        }
    }
}

/// Which pages of one scope are its soft 404s, given the scope's template `t` and the origin's
/// (`site`, `None` when not known). Only 2xx pages, and never the origin's root (`/`,
/// `/index.html`). A redirect template: pages asked elsewhere that end on its landing URL. A
/// page template: a section's root (`/manual/`) only when the section answers unknown URLs as
/// the whole site does ([`section_roots_judged`]); pages whose visible words,
/// once the scope's shared chrome is set aside, are the template's (Jaccard ≥ [`SAME_WORDS`]); the chrome is the words found on at least half
/// of the scope's pages that are not word for word the template (Jaccard <
/// [`IDENTICAL_WORDS`]; at least two of them), so a site whose
/// navigation and footer outweigh a short page's text does not make that page look like its
/// "not found" answer. A page with no words of its own is never a soft 404.
pub fn judge_scope(t: &Template, site: Option<&Template>, pages: &[Rendered]) -> Vec<bool> {
    judge_words(t, site, pages, &pages_words(t, pages), &[])
}

/// The visible words of each 2xx page of `pages` ([`words`], against its final URL), as
/// [`judge_words`] takes them; none at all under a redirect template, which needs no words.
pub fn pages_words(t: &Template, pages: &[Rendered]) -> Vec<Option<HashSet<String>>> {
    match t {
        Template::Redirect(_) => vec![None; pages.len()],
        Template::Page(_) => pages
            .iter()
            .map(|p| {
                (200..300)
                    .contains(&p.status)
                    .then(|| words(p.html, p.at()))
            })
            .collect(),
    }
}

/// [`judge_scope`] on the pages' visible words, already computed (`words[i]` of `pages[i]`,
/// `None` for a page that is not 2xx; unused for a redirect template), with `earlier`: word
/// sets of pages of the scope judged before (the render stage sees a scope a batch at a time;
/// they count towards the scope's chrome, never judged again).
pub fn judge_words(
    t: &Template,
    site: Option<&Template>,
    pages: &[Rendered],
    words: &[Option<HashSet<String>>],
    earlier: &[HashSet<String>],
) -> Vec<bool> {
    match t {
        // Spared: the landing page itself, asked as itself or as its directory's index document.
        Template::Redirect(to) => pages
            .iter()
            .map(|p| {
                let fin = p.at();
                let (origin, _) = origin_and_path(p.url);
                let asked = canon(&format!("{origin}{}", directory_path(p.url)));
                // A section's root landing inside its own section (`/app/` → `/app/dashboard`,
                // the section's default route) is the section's home, not an unknown URL.
                let own_home = is_section_root(p.url) && scope_key(to) == scope_key(&canon(p.url));
                (200..300).contains(&p.status)
                    && !is_origin_root(p.url)
                    && !own_home
                    && canon(fin) == *to
                    && canon(p.url) != *to
                    && asked != *to
            })
            .collect(),
        Template::Page(tw) => {
            let roots = section_roots_judged(t, site);
            let ok = |p: &Rendered| {
                (200..300).contains(&p.status)
                    && !is_origin_root(p.url)
                    && (roots || !is_scope_root(p.url))
            };
            let ws = words;
            // "Plainly not the template": not word for word the same. (A page the raw match
            // would call the template can be a real page under heavy chrome: it counts here.)
            let others: Vec<&HashSet<String>> = ws
                .iter()
                .flatten()
                .chain(earlier)
                .filter(|w| jaccard(tw, w) < IDENTICAL_WORDS)
                .collect();
            let mut chrome: HashSet<String> = HashSet::new();
            if others.len() >= 2 {
                let mut count: std::collections::HashMap<&str, usize> = Default::default();
                for w in &others {
                    for x in w.iter() {
                        *count.entry(x.as_str()).or_default() += 1;
                    }
                }
                chrome = count
                    .into_iter()
                    .filter(|(_, n)| 2 * n >= others.len())
                    .map(|(x, _)| x.to_string())
                    .collect();
            }
            let own = |w: &HashSet<String>| -> HashSet<String> {
                w.difference(&chrome).cloned().collect()
            };
            let tdist = own(tw);
            if tdist.len() < 3 {
                // The template is the site's chrome and little else: nothing tells it apart.
                return vec![false; pages.len()];
            }
            pages
                .iter()
                .zip(ws)
                .map(|(p, w)| {
                    let Some(w) = w else { return false };
                    let pdist = own(w);
                    ok(p) && !pdist.is_empty() && jaccard(&tdist, &pdist) >= SAME_WORDS
                })
                .collect()
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
        for (u, root) in [
            ("https://h.example", true),
            ("https://h.example/", true),
            ("https://h.example/shop/", true),
            ("https://h.example/shop//", true),
            ("https://h.example/shop", false),
            ("https://h.example/shop/item", false),
            ("https://h.example/?q=1", true),
            // A directory's index document is the directory (found on the documentation
            // corpus: a fallback route serving /index.html made /index.html its own soft 404).
            ("https://h.example/index.html", true),
            ("https://h.example/shop/INDEX.HTM", true),
            ("https://h.example/shop/default.aspx", true),
            ("https://h.example/shop/item/index.html", false),
            ("https://h.example/indexes.html", false),
            ("https://h.example/index", false),
            ("https://h.example/index.php?title=Interpolation", false),
        ] {
            assert_eq!(is_scope_root(u), root, "{u}");
        }
    }

    #[test]
    fn request_ids_and_times_do_not_make_another_template() {
        let nf = |id: &str, at: &str| {
            format!("<html><head><title>Not found</title></head><body><h1>Page not found</h1><p>The page you requested does not exist on this server. Request {id} at {at}. Check the address or go back to the start page.</p></body></html>")
        };
        let t = Template::from_probe(
            "https://h.example/docs/cs0123456789ab.html",
            "",
            200,
            &nf("9f8e7d6c5b4a3f2e", "2026-11-26T18:01:07Z"),
        )
        .expect("a template");
        let soft = nf("0a1b2c3d4e5f6a7b", "2026-11-26T18:44:13Z");
        let real = |topic: &str, text: &str| {
            format!("<html><head><title>{topic}</title></head><body><h1>{topic}</h1><p>{text}</p></body></html>")
        };
        let pages = [
            real("Installing", "Run the installer, choose a directory, and start the program from the menu. The first start creates a configuration file in your home directory."),
            real("Configuring", "Every option lives in one file; comments explain each of them. Reload the program after an edit, or send it a hangup signal."),
            real("Upgrading", "Back up your settings, install the new release over the old one, and read the release notes for options that were renamed."),
        ];
        let mut rendered = vec![r("https://h.example/docs/old-page.html", "", 200, &soft)];
        for (p, u) in pages.iter().zip(["install", "config", "upgrade"]) {
            rendered.push(Rendered {
                url: match u {
                    "install" => "https://h.example/docs/install.html",
                    "config" => "https://h.example/docs/config.html",
                    _ => "https://h.example/docs/upgrade.html",
                },
                final_url: "",
                status: 200,
                html: p,
            });
        }
        assert_eq!(
            judge_scope(&t, None, &rendered),
            [true, false, false, false]
        );
        assert!(volatile("2026") && volatile("req-7") && volatile("deadbeefcafe12"));
        assert!(!volatile("installer") && !volatile("decade"));
    }

    fn r<'a>(url: &'a str, final_url: &'a str, status: u16, html: &'a str) -> Rendered<'a> {
        Rendered {
            url,
            final_url,
            status,
            html,
        }
    }

    #[test]
    fn templates_echoing_the_path_match_and_real_pages_do_not() {
        let page = |p: &str| {
            format!("<html><head><title>Oops</title></head><body><nav>Home Docs Blog</nav><h1>Sorry, {p} was not found</h1><p>Try the search box above or go back to the start page.</p></body></html>")
        };
        let t = Template::from_probe(
            "https://h.example/docs/zq81kd02mxa7",
            "https://h.example/docs/zq81kd02mxa7",
            200,
            &page("zq81kd02mxa7"),
        )
        .unwrap();
        let echo = page("installing things");
        let real = "<html><head><title>Search</title></head><body><nav>Home Docs Blog</nav><form><input name=q><button>Search</button></form><p>Enter words to search the documentation.</p></body></html>";
        let missing = page("x");
        let v = judge_scope(
            &t,
            None,
            &[
                r("https://h.example/docs/installing-things", "", 200, &echo),
                r("https://h.example/docs/search", "", 200, real),
                r("https://h.example/docs/x", "", 404, &missing),
            ],
        );
        assert_eq!(v, [true, false, false]);
        assert_eq!(
            Template::from_probe("https://h.example/a/tok", "", 404, "gone"),
            None
        );
    }

    /// Found by review: the redirect template compared raw strings, so a home page listed as
    /// `https://h.example` (landing on `https://h.example/`) was a soft 404; a landing page of
    /// its own scope never is; the probe's own URL changed trivially is not a redirect.
    #[test]
    fn redirect_templates_compare_canonical_urls_and_spare_the_landing_page() {
        let t = Template::from_probe(
            "https://h.example/a/cs0123456789ab",
            "https://h.example/",
            200,
            "",
        )
        .unwrap();
        let v = judge_scope(
            &t,
            None,
            &[
                r("https://h.example/a/old", "https://h.example/", 200, ""),
                r("https://h.example", "https://h.example/", 200, ""),
                r("https://H.example:443/", "https://h.example/", 200, ""),
                r("https://h.example/en/", "https://h.example/", 200, ""),
                r(
                    "https://h.example/index.html",
                    "https://h.example/",
                    200,
                    "",
                ),
            ],
        );
        // `/en/` ends on the home page like every unknown URL: it has no page of its own (a
        // language alias of the home page loses nothing, the home page is judged as itself).
        assert_eq!(v, [true, false, false, true, false]);
        // A trailing slash or an upgrade of the probe's own URL: not a redirect.
        let same = Template::from_probe(
            "http://h.example/a/cs0123456789ab",
            "https://h.example/a/cs0123456789ab/",
            200,
            "<p>one two three four five six seven eight nine ten eleven</p>",
        );
        assert!(matches!(same, Some(Template::Page(_))), "{same:?}");
    }

    /// Found by review: an empty or near-empty template matched every page with no words; a
    /// short page on a site with heavy chrome looked like the template; a fallback route that
    /// serves the home page for unknown URLs made the home page a soft 404.
    #[test]
    fn empty_templates_heavy_chrome_and_fallback_routes_make_no_false_positives() {
        assert_eq!(
            Template::from_probe("https://h.example/x/tok", "", 200, "<p>tok</p>"),
            None
        );
        let chrome: String = (0..300).map(|i| format!("navword{i} ")).collect();
        let page = |main: &str| {
            format!("<html><body><nav>{chrome}</nav><main>{main}</main></body></html>")
        };
        let nf = page("page not found sorry nothing here please check the address again");
        let t = Template::from_probe("https://h.example/blog/tok0123456789", "", 200, &nf).unwrap();
        let short = page("hello world a short note");
        let long1 = page("a long article about rivers and their mountains and valleys");
        let long2 = page("release notes for version two with a faster parser");
        let v = judge_scope(
            &t,
            None,
            &[
                r("https://h.example/blog/hello", "", 200, &short),
                r("https://h.example/blog/rivers", "", 200, &long1),
                r("https://h.example/blog/release", "", 200, &long2),
                r("https://h.example/blog/gone", "", 200, &nf),
            ],
        );
        assert_eq!(v, [false, false, false, true]);
        // Unknown URLs get the home view: the home page itself is not a soft 404.
        let home = page("welcome to the example site with guides and news for everyone");
        let t = Template::from_probe("https://h.example/tok0123456789", "", 200, &home).unwrap();
        let v = judge_scope(
            &t,
            None,
            &[
                r("https://h.example/", "", 200, &home),
                r("https://h.example/old-link", "", 200, &home),
            ],
        );
        assert_eq!(v, [false, true]);
    }

    /// A section's root (`/manual/`) under a site whose unknown URLs all get one "not found"
    /// page is an unknown directory, judged like any unknown URL; under a section's own fallback
    /// route (the section's unknown URLs get the section's home), or when the origin's answer is
    /// not known, it is spared.
    #[test]
    fn section_roots_are_judged_only_where_the_section_answers_as_the_site() {
        let chrome = "Example Docs Home Guide Reference Search Contact Licence";
        let page = |main: &str| {
            format!("<html><body><nav>{chrome}</nav><main>{main}</main></body></html>")
        };
        let nf = page("Page not found. The page you asked for is not here, check the address");
        let site = Template::from_probe("https://h.example/tok0123456789", "", 200, &nf).unwrap();
        let section =
            Template::from_probe("https://h.example/manual/tok0123456789", "", 200, &nf).unwrap();
        let real1 = page("Installing the tool on a laptop with three commands and a config file");
        let real2 = page("Reference of every option the parser takes, with defaults and examples");
        let pages = [
            r("https://h.example/manual/", "", 200, &nf),
            r("https://h.example/manual/index.html", "", 200, &nf),
            r("https://h.example/manual/install.html", "", 200, &real1),
            r("https://h.example/manual/options.html", "", 200, &real2),
            r("https://h.example/manual/gone.html", "", 200, &nf),
        ];
        assert_eq!(
            judge_scope(&section, Some(&site), &pages),
            [true, true, false, false, true]
        );
        assert_eq!(
            judge_scope(&section, None, &pages),
            [false, false, false, false, true]
        );
        assert!(is_section_root("https://h.example/manual/index.html"));
        assert!(!is_section_root("https://h.example/index.html"));
        assert!(!is_section_root("https://h.example/manual/install.html"));
        // A single-page application at /app/: its unknown routes get the app's home view, the
        // site's unknown URLs a "not found" page. /app/ is the app's home, never a soft 404.
        let app_home = page("Dashboard of your projects, with recent activity and shared boards");
        let app = Template::from_probe("https://h.example/app/tok0123456789", "", 200, &app_home)
            .unwrap();
        let v = judge_scope(
            &app,
            Some(&site),
            &[
                r("https://h.example/app/", "", 200, &app_home),
                r("https://h.example/app/settings", "", 200, &real1),
                r("https://h.example/app/boards", "", 200, &real2),
            ],
        );
        assert_eq!(v, [false, false, false]);
        assert_eq!(
            origin_scope("https://h.example/app/x?q=1"),
            "https://h.example"
        );
        // Found by review: a site whose unknown URLs all get its home page, and whose home page
        // lives at a section's root (`/` redirecting to `/en/`): the caller passes no site
        // template (`serves_home`), and /en/ is spared.
        let home = page("Welcome to the example site with guides, news and downloads for all");
        let site_home =
            Template::from_probe("https://h.example/tok0123456789", "", 200, &home).unwrap();
        assert!(serves_home(
            &site_home,
            Some(&r(
                "https://h.example/",
                "https://h.example/en/",
                200,
                &home
            ))
        ));
        assert!(!serves_home(
            &site,
            Some(&r("https://h.example/", "", 200, &home))
        ));
        assert!(
            serves_home(&site, None),
            "a home page not rendered spares the roots"
        );
        // A page template under a redirecting site: sections' roots spared.
        let to_home = Template::Redirect("https://h.example/".into());
        assert!(!section_roots_judged(&section, Some(&to_home)));
        // Found by review: a section whose unknown URLs and root redirect to its default route
        // (`/app/` → `/app/dashboard`) keeps its root; an unknown section redirected to the
        // site's home does not.
        let app = Template::from_probe(
            "https://h.example/app/tok0123456789",
            "https://h.example/app/dashboard",
            200,
            "",
        )
        .unwrap();
        let v = judge_scope(
            &app,
            None,
            &[
                r(
                    "https://h.example/app/",
                    "https://h.example/app/dashboard",
                    200,
                    "",
                ),
                r(
                    "https://h.example/app/old",
                    "https://h.example/app/dashboard",
                    200,
                    "",
                ),
            ],
        );
        assert_eq!(v, [false, true]);
        let v = judge_scope(
            &to_home,
            None,
            &[r(
                "https://h.example/manual/",
                "https://h.example/",
                200,
                "",
            )],
        );
        assert_eq!(v, [true]);
    }
}
