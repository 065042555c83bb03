//! What a page's HTML, as a server sent it, says about whether a browser would show something
//! else (`render.mode = "auto"`, docs/render.md): script-written documents, redirects done by a
//! script or a `<meta http-equiv="refresh">`, `<noscript>` notices. Pure: the HTML in, the
//! evidence out; [`Signals::needs_browser`] turns it into a reason or none.
//!
//! The thresholds are set so that a documentation page, an article or a forum thread (hundreds
//! of characters of text, scripts only for search boxes and analytics) has no reason, and an
//! application shell (an empty mount point, a state block, a few words) has one; what the HTML
//! cannot show is learned by rendering samples and comparing ([`crate::render::auto`]).

use ego_tree::iter::Edge;
use scraper::{Html, Node};

/// Below this many characters of visible text, a page with a script is rendered (its text is
/// likely written by the script: an app shell, a "loading…" page, a search page). 300
/// characters is about two sentences; the T1 rule calls pages under 200 thin.
pub const LITTLE_TEXT: usize = 300;
/// A framework's mount point holding fewer characters than this is empty: the framework writes
/// the page.
pub const EMPTY_ROOT: usize = 50;
/// A state block (`__NEXT_DATA__`, `window.__INITIAL_STATE__`, …) or a `<noscript>` notice
/// counts only on a page with less visible text than this: server-rendered pages carry state
/// blocks too (for hydration), and articles carry "enable JavaScript to see the comments".
pub const SOME_TEXT: usize = 1500;

/// Ids of elements frameworks mount into.
const ROOT_IDS: [&str; 9] = [
    "root",
    "app",
    "__next",
    "__nuxt",
    "___gatsby",
    "svelte",
    "q-app",
    "react-root",
    "main-app",
];
/// Attributes that mark a framework's root element.
const ROOT_ATTRS: [&str; 5] = [
    "ng-app",
    "ng-version",
    "data-reactroot",
    "data-server-rendered",
    "x-data",
];
/// Inline-script markers of a serialized application state.
const STATE_MARKERS: [&str; 7] = [
    "__NEXT_DATA__",
    "__NUXT__",
    "__INITIAL_STATE__",
    "__APOLLO_STATE__",
    "__PRELOADED_STATE__",
    "__remixContext",
    "__sveltekit",
];

/// The evidence of one document.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals {
    /// Characters of visible text (outside `script`, `style`, `noscript`, `template`, `title`).
    pub visible_chars: usize,
    /// `<script>` elements (external or inline, JSON data blocks excluded).
    pub scripts: u32,
    /// A framework's root element (or its attribute) is present.
    pub framework_root: bool,
    /// A framework's root element holds fewer than [`EMPTY_ROOT`] characters.
    pub empty_root: bool,
    /// A serialized application state.
    pub state_block: bool,
    /// A `<noscript>` whose text mentions JavaScript.
    pub noscript_notice: bool,
    /// `<meta http-equiv="refresh">` to another URL with no delay (what the browser follows
    /// before the page is read).
    pub meta_refresh: bool,
    /// An inline script assigns `location` (or calls `location.replace`/`assign`).
    pub script_redirect: bool,
}

impl Signals {
    /// Read the evidence from `html` (bounded input: the caller checked
    /// [`super::features::check_bounds`]).
    pub fn of(html: &str) -> Signals {
        let doc = Html::parse_document(html);
        let mut w = SignalWalk {
            s: Signals::default(),
            stack: Vec::with_capacity(64),
            roots: Vec::new(),
            in_script: 0,
            in_noscript: 0,
        };
        for edge in doc.tree.root().traverse() {
            match edge {
                Edge::Open(node) => match node.value() {
                    Node::Element(e) => w.open_element(e),
                    Node::Text(t) => w.text(t),
                    _ => {}
                },
                Edge::Close(node) => {
                    if let Node::Element(e) = node.value() {
                        w.close_element(e.name());
                    }
                }
            }
        }
        w.s.empty_root = w.roots.iter().any(|&n| n < EMPTY_ROOT);
        w.s
    }

    /// Why a browser could show something else than this HTML, if anything does: a short,
    /// fixed label (`meta_refresh`, `script_redirect`, `app_root`, `little_text`,
    /// `state_block`, `noscript`) for the metrics and the report.
    pub fn needs_browser(&self) -> Option<&'static str> {
        let scripted = self.scripts > 0;
        if self.meta_refresh {
            Some("meta_refresh")
        } else if self.script_redirect && self.visible_chars < SOME_TEXT {
            Some("script_redirect")
        } else if self.empty_root && scripted {
            Some("app_root")
        } else if scripted && self.visible_chars < LITTLE_TEXT {
            Some("little_text")
        } else if self.state_block && self.visible_chars < SOME_TEXT {
            Some("state_block")
        } else if self.noscript_notice && self.visible_chars < SOME_TEXT {
            Some("noscript")
        } else {
            None
        }
    }
}

/// The state of [`Signals::of`]'s one walk over the tree.
struct SignalWalk {
    s: Signals,
    // (skip text, inside a root: index into `roots`)
    stack: Vec<(bool, Option<usize>)>,
    roots: Vec<usize>, // characters inside each root element
    in_script: u32,
    in_noscript: u32,
}

impl SignalWalk {
    /// An element opens: note a framework root, a script or state block, a noscript, an
    /// immediate meta refresh; push whether its text is skipped and which root it is in.
    fn open_element(&mut self, e: &scraper::node::Element) {
        let s = &mut self.s;
        let tag = e.name();
        let parent = self.stack.last().copied();
        let skip = parent.is_some_and(|p| p.0)
            || matches!(
                tag,
                "script" | "style" | "noscript" | "template" | "title" | "head"
            );
        let mut root = parent.and_then(|p| p.1);
        let is_root = e.id().is_some_and(|id| ROOT_IDS.contains(&id))
            || ROOT_ATTRS.iter().any(|a| e.attr(a).is_some())
            || tag == "app-root";
        if is_root && root.is_none() && tag != "html" && tag != "body" {
            s.framework_root = true;
            self.roots.push(0);
            root = Some(self.roots.len() - 1);
        }
        if tag == "script" {
            let ty = e.attr("type").unwrap_or("").to_ascii_lowercase();
            let data = ty.contains("json") || ty.contains("template");
            if e.id() == Some("__NEXT_DATA__") {
                s.state_block = true;
            }
            if !data {
                s.scripts += 1;
            }
            self.in_script += 1;
        }
        if tag == "noscript" {
            self.in_noscript += 1;
        }
        // Only a redirect the browser follows at once: a later refresh (a
        // reload every 5 minutes, "you will be sent on in 5 s") has not fired
        // when the rendered page is read, so the browser shows this HTML too.
        if tag == "meta"
            && e.attr("http-equiv")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("refresh"))
            && e.attr("content")
                .and_then(parse_refresh)
                .is_some_and(|(d, u)| d == 0 && !u.is_empty())
        {
            s.meta_refresh = true;
        }
        self.stack.push((skip, root));
    }

    /// A text node: a script's (state markers, location assignments), a noscript's (a
    /// JavaScript notice), or visible text counted (and counted in its root).
    fn text(&mut self, t: &str) {
        let s = &mut self.s;
        if self.in_script > 0 {
            if STATE_MARKERS.iter().any(|m| t.contains(m)) {
                s.state_block = true;
            }
            if assigns_location(t) {
                s.script_redirect = true;
            }
            return;
        }
        if self.in_noscript > 0 {
            // Scripting on: a noscript's content is raw text, markup included.
            if t.to_ascii_lowercase().contains("javascript") {
                s.noscript_notice = true;
            }
            return;
        }
        let Some(&(skip, root)) = self.stack.last() else {
            return;
        };
        if skip {
            return;
        }
        let n: usize = t.split_whitespace().map(|w| w.chars().count() + 1).sum();
        s.visible_chars += n;
        if let Some(r) = root {
            self.roots[r] += n;
        }
    }

    /// An element named `name` closes.
    fn close_element(&mut self, name: &str) {
        self.stack.pop();
        match name {
            "script" => self.in_script = self.in_script.saturating_sub(1),
            "noscript" => self.in_noscript = self.in_noscript.saturating_sub(1),
            _ => {}
        }
    }
}

/// A `<meta http-equiv="refresh">` `content` read as the HTML standard reads it: (delay in
/// whole seconds, the URL as written, empty for a reload of the page itself). `url` may be
/// written in any case with spaces around its `=` (`0; URL = /new`), the URL quoted or not.
pub fn parse_refresh(content: &str) -> Option<(u32, String)> {
    let content = content.trim();
    let digits = content.bytes().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 && !content.starts_with('.') {
        return None;
    }
    let delay: u32 = content[..digits].parse().unwrap_or(0);
    let rest = content[digits..].trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let rest = rest.trim_start();
    let rest = match rest.strip_prefix([';', ',']) {
        Some(r) => r.trim_start(),
        None if rest.is_empty() => "",
        None => return None,
    };
    let rest = match rest.get(..3) {
        Some(k) if k.eq_ignore_ascii_case("url") && rest[3..].trim_start().starts_with('=') => {
            rest[3..].trim_start()[1..].trim_start()
        }
        _ => rest,
    };
    let url = match rest.chars().next() {
        Some(q @ ('\'' | '"')) => rest[1..].split(q).next().unwrap_or(""),
        _ => rest,
    }
    .trim();
    Some((delay, url.to_string()))
}

/// The target of a `<meta http-equiv="refresh" content="N; url=…">` that sends the reader on
/// within `max_delay` seconds: (delay, the URL as written). `None` without one, or for a refresh
/// that reloads the page itself (no URL).
pub fn meta_refresh(html: &str, max_delay: u32) -> Option<(u32, String)> {
    if !(html.contains("efresh") || html.contains("EFRESH")) {
        return None; // no parse for the pages that cannot have one
    }
    let doc = Html::parse_document(html);
    let sel = scraper::Selector::parse("meta[http-equiv]").expect("a valid selector");
    for m in doc.select(&sel) {
        let e = m.value();
        if !e
            .attr("http-equiv")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("refresh"))
        {
            continue;
        }
        let (delay, url) = parse_refresh(e.attr("content")?)?;
        return (delay <= max_delay && !url.is_empty()).then_some((delay, url));
    }
    None
}

/// Whether a script's text assigns the document's location (`location = …`,
/// `location.href = …`, `location.replace(…)`, `location.assign(…)`), not compares it.
fn assigns_location(js: &str) -> bool {
    let mut from = 0;
    while let Some(i) = js[from..].find("location") {
        let at = from + i + "location".len();
        from = at;
        // Not part of a longer name (`geolocation`, `locationBar`).
        let before = js[..at - "location".len()].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = js[at..].trim_start();
        let rest = rest.strip_prefix(".href").map_or(rest, str::trim_start);
        if let Some(r) = rest.strip_prefix('=') {
            if !r.starts_with('=') {
                return true;
            }
        }
        if rest.starts_with(".replace(") || rest.starts_with(".assign(") {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article(words: usize) -> String {
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(words / 9 + 1);
        format!(
            "<!DOCTYPE html><html><head><title>T</title><script src=/a.js></script></head>\
             <body><nav><a href=/>Home</a></nav><main><h1>Title</h1><p>{text}</p></main>\
             <noscript><img src=/pixel.gif></noscript></body></html>"
        )
    }

    #[test]
    fn a_documentation_page_needs_no_browser() {
        let s = Signals::of(&article(200));
        assert!(s.visible_chars > 1000, "{s:?}");
        assert_eq!(s.scripts, 1);
        assert_eq!(s.needs_browser(), None, "{s:?}");
        // A server-rendered app (a root with its content, a state block) with a long text.
        let ssr = article(400).replace(
            "<main>",
            "<script id=__NEXT_DATA__ type=application/json>{}</script><div id=__next><main>",
        );
        let s = Signals::of(&ssr);
        assert!(s.framework_root && !s.empty_root && s.state_block, "{s:?}");
        assert_eq!(s.needs_browser(), None);
    }

    #[test]
    fn app_shells_and_redirects_need_one() {
        let shell = "<!DOCTYPE html><html><head><title>Shop</title></head><body>\
                     <div id=\"root\"></div><script src=\"/static/app.js\"></script></body></html>";
        assert_eq!(Signals::of(shell).needs_browser(), Some("app_root"));
        // An empty root with a long footer around it is still written by its script.
        let footer = format!(
            "<body><div id=app><p>Loading…</p></div><footer>{}</footer><script>boot()</script></body>",
            "Contact us at our offices. ".repeat(40)
        );
        assert_eq!(Signals::of(&footer).needs_browser(), Some("app_root"));
        assert_eq!(
            Signals::of("<p>Hi</p><script>document.body.innerHTML = '…'</script>").needs_browser(),
            Some("little_text")
        );
        assert_eq!(
            Signals::of("<head><meta http-equiv=Refresh content='0; url=/x'></head><p>Moved</p>")
                .needs_browser(),
            Some("meta_refresh")
        );
        // A refresh the browser has not fired when the page is read is no reason.
        assert_eq!(
            Signals::of("<head><meta http-equiv=refresh content='300'></head><p>News</p>")
                .needs_browser(),
            None
        );
        assert_eq!(
            Signals::of(&format!(
                "<p>{}</p><script>window.location.href = '/new';</script>",
                "Moved. ".repeat(60)
            ))
            .needs_browser(),
            Some("script_redirect")
        );
        assert_eq!(
            Signals::of(&format!(
                "<p>{}</p><noscript>You need to enable JavaScript to run this app.</noscript>",
                "Some words. ".repeat(40)
            ))
            .needs_browser(),
            Some("noscript")
        );
        assert_eq!(
            Signals::of(&format!(
                "<p>{}</p><script>window.__INITIAL_STATE__ = {{}}</script>",
                "Some words. ".repeat(40)
            ))
            .needs_browser(),
            Some("state_block")
        );
    }

    #[test]
    fn meta_refresh_targets() {
        let m = |c: &str| {
            meta_refresh(
                &format!("<head><meta http-equiv=Refresh content=\"{c}\"></head>"),
                1,
            )
        };
        assert_eq!(
            m("0;URL=../std/vec/struct.Vec.html"),
            Some((0, "../std/vec/struct.Vec.html".into()))
        );
        assert_eq!(m("1; url='/b'"), Some((1, "/b".into())));
        assert_eq!(
            m("0; url = /new"),
            Some((0, "/new".into())),
            "spaces around ="
        );
        assert_eq!(
            m("0 ;URL= 'x y.html' trailing"),
            Some((0, "x y.html".into()))
        );
        assert_eq!(m("0; /bare"), Some((0, "/bare".into())));
        assert_eq!(m("0"), None, "a reload is no redirect");
        assert_eq!(m("30; url=/later"), None, "too late to matter");
        assert_eq!(meta_refresh("<p>no refresh</p>", 1), None);
    }

    #[test]
    fn comparisons_and_other_names_are_not_redirects() {
        assert!(!assigns_location("if (location == x) {}"));
        assert!(!assigns_location("if (location.href === x) {}"));
        assert!(!assigns_location(
            "navigator.geolocation = 1; var locationBar = 2"
        ));
        assert!(assigns_location("location='/a'"));
        assert!(assigns_location("top.location.replace('/a')"));
        assert!(assigns_location("document.location.assign(u)"));
        // A JSON data block is not a script; noscript without the word is a pixel.
        let s = Signals::of(
            "<p>x</p><script type=application/ld+json>{\"a\":1}</script><noscript><img src=p></noscript>",
        );
        assert_eq!(s.scripts, 0);
        assert!(!s.noscript_notice);
        assert_eq!(s.needs_browser(), None);
    }
}
