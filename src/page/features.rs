//! One page → [`Features`], in one walk over the html5ever tree (scraper).
//!
//! * **Main text** — the first `article`, `main` or `[role=main]` element with at least
//!   [`MIN_SEMANTIC_CHARS`] characters; else the *deepest element that holds at least 60% of the
//!   page's non-link text* (a text-density choice: the elements holding that much form one
//!   ancestor chain, and the deepest of them is the content column without the sidebars).
//!   Text inside `script`, `style`, `noscript`, `template` is never text; `nav`, `header`,
//!   `footer`, `aside` (and `role=navigation|banner|contentinfo`) are skipped with their
//!   descendants.
//! * **SimHash** (64-bit) of the main text with CJK-aware tokens: lower-cased words for
//!   alphabetic scripts, character bigrams inside CJK runs (whitespace tokenization is useless for
//!   Chinese), each token weighted by its count.
//! * **DOM statistics**: element count, non-blank text nodes, counts of key tags, the depth
//!   histogram; **root-to-node path frequencies** (`html>body>div>p`, hashed; at most
//!   [`MAX_PATHS`] distinct paths).
//! * **Rule evidence**, computed here because the body is not kept: the title, keyword hits in
//!   the title and the visible text outside navigation (never in scripts, where "error" and
//!   "404" are everywhere, nor in a header's "Login" link), a
//!   password field, the visible-text fingerprint (what E3/L1/W1/M1/T1 group by).
//!
//! `scan.rs` holds the steps of [`check_bounds`], the linear pre-scan that refuses what would make
//! the parser slow.

use std::collections::HashMap;

use ego_tree::iter::Edge;
use scraper::{Html, Node};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::rule_pages::{keyword_hits, KeywordHits};

mod scan;

/// Tags counted in [`Features::tags`], in this order.
pub const KEY_TAGS: [&str; 12] = [
    "div", "a", "img", "input", "script", "form", "p", "span", "li", "table", "iframe", "button",
];
/// Depth histogram bins (deeper elements land in the last bin).
pub const DEPTH_BINS: usize = 32;
/// Distinct DOM paths kept per page (later new paths are not counted).
pub const MAX_PATHS: usize = 2048;
/// A semantic container is used as the main text only from this many characters on.
pub const MIN_SEMANTIC_CHARS: usize = 200;
/// Visible text kept for keyword matching (characters).
const RULE_TEXT_CHARS: usize = 8192;

/// Browser timings (milliseconds), when the page was rendered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Time to first byte.
    pub ttfb_ms: f64,
    /// DOMContentLoaded.
    pub dcl_ms: f64,
    /// The load event.
    pub load_ms: f64,
}

/// What the clustering needs of a page; the HTML itself is not kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// `<title>`, whitespace-collapsed.
    pub title: String,
    /// HTML size in bytes.
    pub html_bytes: usize,
    /// Main text length in characters.
    pub text_chars: usize,
    /// Visible text length in characters (all of the body's text, boilerplate included).
    pub visible_chars: usize,
    /// SimHash of the main text.
    pub simhash: u64,
    /// MinHash signature of the main text's token 3-shingles ([`minhash`]); empty when there is
    /// no text (and in features stored before it existed).
    #[serde(default)]
    pub minhash: Vec<u32>,
    /// xxh3 of the whitespace-normalized visible text (rule-cluster grouping).
    pub visible_fp: u64,
    /// Element count.
    pub nodes: u32,
    /// Non-blank text nodes.
    pub text_nodes: u32,
    /// Counts of [`KEY_TAGS`].
    pub tags: [u32; KEY_TAGS.len()],
    /// Elements per depth.
    pub depth_hist: [u32; DEPTH_BINS],
    /// (path hash, count), sorted by hash.
    pub paths: Vec<(u64, u32)>,
    /// Keyword evidence for the rule classes.
    pub hits: KeywordHits,
    /// A password field is present.
    pub password_field: bool,
    /// Screenshot perceptual hash, when rendered.
    pub phash: Option<u64>,
    /// Timings, when rendered.
    pub timings: Option<Timings>,
    /// The page is its host's "not found" answer ([`super::soft404`]; set by the caller that
    /// probed the host, never from the HTML alone).
    #[serde(default)]
    pub soft_404: bool,
}

struct Frame {
    skip: bool,
    boiler: bool,
    link: bool,
    path: u64,
    content_start: usize,
    nonlink_start: usize,
    semantic: bool,
    title: bool,
}

fn is_skipped(tag: &str) -> bool {
    matches!(tag, "script" | "style" | "noscript" | "template")
}

fn is_boilerplate(tag: &str, role: Option<&str>) -> bool {
    matches!(tag, "nav" | "header" | "footer" | "aside")
        || matches!(role, Some("navigation" | "banner" | "contentinfo"))
}

/// HTML larger than this is not parsed (bytes; the renderer's own limit is 10 MiB).
pub const MAX_HTML_BYTES: usize = 10 << 20;
/// Elements open at once beyond this: not parsed. Chromium's parser stops nesting at 512; only a
/// script can build deeper, and html5ever's scope checks cost O(depth) per tag.
pub const MAX_DEPTH: usize = 512;
/// Attributes on one tag beyond this: not parsed (html5ever's duplicate check is quadratic).
pub const MAX_ATTRIBUTES: usize = 1024;

/// Why a document is not parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HtmlRefused {
    /// Too large.
    #[error("HTML is {0} bytes (limit {MAX_HTML_BYTES})")]
    TooLarge(usize),
    /// Nested too deep.
    #[error("elements nested more than {MAX_DEPTH} deep (at byte {0})")]
    TooDeep(usize),
    /// Too many attributes on one tag.
    #[error("a tag with more than {MAX_ATTRIBUTES} attributes (at byte {0})")]
    TooManyAttributes(usize),
}

/// Elements that never have content.
fn is_void(name: &[u8]) -> bool {
    matches!(
        name,
        b"area"
            | b"base"
            | b"br"
            | b"col"
            | b"embed"
            | b"hr"
            | b"img"
            | b"input"
            | b"link"
            | b"meta"
            | b"param"
            | b"source"
            | b"track"
            | b"wbr"
            | b"keygen"
            | b"frame"
            | b"basefont"
            | b"bgsound"
            | b"image"
    )
}

/// Elements whose content is text up to their end tag.
fn is_raw_text(name: &[u8]) -> bool {
    matches!(
        name,
        b"script"
            | b"style"
            | b"textarea"
            | b"title"
            | b"xmp"
            | b"iframe"
            | b"noembed"
            | b"noframes"
            | b"plaintext"
            | b"noscript"
    )
}

/// Elements a start tag of the same name closes (`<li>a<li>b`), as a browser does.
fn closes_itself(name: &[u8]) -> bool {
    matches!(
        name,
        b"p" | b"li"
            | b"dt"
            | b"dd"
            | b"tr"
            | b"td"
            | b"th"
            | b"option"
            | b"optgroup"
            | b"rb"
            | b"rt"
            | b"rp"
            | b"tbody"
            | b"thead"
            | b"tfoot"
            | b"a"
    )
}

/// A linear pre-scan of `html` that refuses what would make the parser slow: more than
/// [`MAX_HTML_BYTES`], elements open [`MAX_DEPTH`] deep (counted the way a browser would close
/// them: end tags close up to their element, `<li>`, `<p>`, `<td>`… close their open sibling,
/// void and self-closed elements never open), a tag with more than [`MAX_ATTRIBUTES`]
/// attributes. Comments, doctypes and the text of `script`, `style`, `textarea`… are skipped.
pub fn check_bounds(html: &str) -> Result<(), HtmlRefused> {
    let b = html.as_bytes();
    if b.len() > MAX_HTML_BYTES {
        return Err(HtmlRefused::TooLarge(b.len()));
    }
    let mut open: Vec<&[u8]> = Vec::with_capacity(64);
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'<', &b[i..]) {
        let at = i + off;
        i = at + 1;
        match b.get(i) {
            Some(b'!') | Some(b'?') => i = scan::skip_declaration(b, i),
            Some(b'/') => i = scan::end_tag(b, i, &mut open),
            Some(c) if c.is_ascii_alphabetic() => i = scan::start_tag(b, i, at, &mut open)?,
            _ => {}
        }
    }
    Ok(())
}

/// [`extract`], after [`check_bounds`]: the features, or why the document was not parsed.
pub fn try_extract(html: &str) -> Result<Features, HtmlRefused> {
    check_bounds(html)?;
    Ok(extract(html))
}

/// Extract the features of `html` (no bounds: see [`try_extract`] for untrusted input).
pub fn extract(html: &str) -> Features {
    let doc = Html::parse_document(html);
    let mut w = Walk::new(html);
    for edge in doc.tree.root().traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(e) => w.open_element(e),
                Node::Text(t) => w.text(t),
                _ => {}
            },
            Edge::Close(node) => {
                if node.value().is_element() {
                    w.close_element();
                }
            }
        }
    }
    w.finish()
}

/// The state of [`extract`]'s one walk over the tree.
struct Walk {
    f: Features,
    stack: Vec<Frame>,
    content: String,
    visible: String,
    visible_chars: usize,
    nonlink: usize, // non-link content characters so far
    title: String,
    paths: HashMap<u64, u32>,
    semantic: Option<(usize, usize)>,
    // (depth, content range, non-link chars) of every closed element, for the density choice.
    closed: Vec<(usize, usize, usize, usize)>,
    vis_hash: xxhash_rust::xxh3::Xxh3,
}

impl Walk {
    /// An empty walk over `html`, its buffers sized for it.
    fn new(html: &str) -> Walk {
        Walk {
            f: Features {
                html_bytes: html.len(),
                ..Features::default()
            },
            stack: Vec::with_capacity(64),
            content: String::with_capacity(html.len() / 4),
            visible: String::with_capacity(RULE_TEXT_CHARS),
            visible_chars: 0,
            nonlink: 0,
            title: String::new(),
            paths: HashMap::new(),
            semantic: None,
            closed: Vec::new(),
            vis_hash: xxhash_rust::xxh3::Xxh3::new(),
        }
    }

    /// An element opens: count it (tags, depth, path, password field) and push its frame.
    fn open_element(&mut self, e: &scraper::node::Element) {
        let tag = e.name();
        let parent = self.stack.last();
        let depth = self.stack.len();
        self.f.nodes += 1;
        self.f.depth_hist[depth.min(DEPTH_BINS - 1)] += 1;
        if let Some(i) = KEY_TAGS.iter().position(|t| *t == tag) {
            self.f.tags[i] += 1;
        }
        if tag == "input"
            && e.attr("type")
                .is_some_and(|t| t.eq_ignore_ascii_case("password"))
        {
            self.f.password_field = true;
        }
        let path = xxh3_64(
            &[
                &parent.map_or(0, |p| p.path).to_le_bytes()[..],
                tag.as_bytes(),
            ]
            .concat(),
        );
        if self.paths.len() < MAX_PATHS || self.paths.contains_key(&path) {
            *self.paths.entry(path).or_insert(0) += 1;
        }
        let role = e.attr("role");
        let sem = matches!(tag, "article" | "main") || role == Some("main");
        self.stack.push(Frame {
            skip: parent.is_some_and(|p| p.skip) || is_skipped(tag),
            boiler: parent.is_some_and(|p| p.boiler) || is_boilerplate(tag, role),
            link: parent.is_some_and(|p| p.link) || tag == "a",
            path,
            content_start: self.content.len(),
            nonlink_start: self.nonlink,
            semantic: sem,
            title: tag == "title",
        });
    }

    /// A text node: the title's, or visible words (hashed, and kept as content and keyword text
    /// outside navigation).
    fn text(&mut self, t: &str) {
        let Some(top) = self.stack.last() else { return };
        if top.title {
            self.title.push_str(t);
            return;
        }
        if top.skip || t.trim().is_empty() {
            return;
        }
        self.f.text_nodes += 1;
        for w in t.split_whitespace() {
            self.vis_hash.update(w.as_bytes());
            self.vis_hash.update(b" ");
            let n = w.chars().count() + 1;
            self.visible_chars += n;
            if !top.boiler {
                // Keywords are looked for outside navigation: the "Login" link of a
                // site's header is on every page.
                if self.visible.len() < RULE_TEXT_CHARS {
                    self.visible.push_str(w);
                    self.visible.push(' ');
                }
                self.content.push_str(w);
                self.content.push(' ');
                if !top.link {
                    self.nonlink += n;
                }
            }
        }
    }

    /// An element closes: pop its frame, note a long enough semantic container and its content
    /// range.
    fn close_element(&mut self) {
        let fr = self.stack.pop().expect("balanced traversal");
        let range = (fr.content_start, self.content.len());
        if fr.semantic && self.semantic.is_none() {
            let chars = self.content[range.0..range.1].chars().count();
            if chars >= MIN_SEMANTIC_CHARS {
                self.semantic = Some(range);
            }
        }
        self.closed.push((
            self.stack.len(),
            range.0,
            range.1,
            self.nonlink - fr.nonlink_start,
        ));
    }

    /// The features: the main text chosen and hashed, the title, keyword hits and paths.
    fn finish(self) -> Features {
        let Walk {
            mut f,
            content,
            visible,
            visible_chars,
            nonlink,
            title,
            paths,
            semantic,
            closed,
            vis_hash,
            ..
        } = self;
        let main = semantic.unwrap_or_else(|| density_choice(&closed, nonlink));
        let main_text = content[main.0..main.1].trim_end();
        f.text_chars = main_text.chars().count();
        f.simhash = simhash(main_text);
        f.minhash = minhash(main_text);
        f.visible_chars = visible_chars;
        f.visible_fp = vis_hash.digest();
        f.title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        f.hits = keyword_hits(&f.title, &visible);
        let mut p: Vec<(u64, u32)> = paths.into_iter().collect();
        p.sort_unstable();
        f.paths = p;
        f
    }
}

/// The deepest element holding at least 60% of the page's non-link text.
fn density_choice(closed: &[(usize, usize, usize, usize)], total: usize) -> (usize, usize) {
    if total == 0 {
        return (0, 0);
    }
    let need = total * 3 / 5;
    closed
        .iter()
        .filter(|c| c.3 >= need.max(1))
        .max_by_key(|c| (c.0, std::cmp::Reverse(c.1)))
        .map_or((0, 0), |c| (c.1, c.2))
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF     // Hiragana, Katakana
        | 0x3400..=0x4DBF   // CJK Extension A
        | 0x4E00..=0x9FFF   // CJK Unified Ideographs
        | 0xAC00..=0xD7AF   // Hangul syllables
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0x20000..=0x2FFFF)
}

/// Call `f` with every token of `text`: lower-cased alphanumeric words; character bigrams
/// inside CJK runs (a lone CJK character is a unigram).
pub fn tokens(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut prev_cjk: Option<char> = None;
    let mut run_len = 0usize;
    let mut buf = [0u8; 8];
    let flush_run = |prev: &mut Option<char>, run_len: &mut usize, f: &mut dyn FnMut(&str)| {
        if *run_len == 1 {
            if let Some(c) = *prev {
                let mut b = [0u8; 4];
                f(c.encode_utf8(&mut b));
            }
        }
        *prev = None;
        *run_len = 0;
    };
    for c in text.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                f(&word);
                word.clear();
            }
            if let Some(p) = prev_cjk {
                let n = p.encode_utf8(&mut buf).len();
                let m = c.encode_utf8(&mut buf[n..]).len();
                f(std::str::from_utf8(&buf[..n + m]).expect("two chars"));
            }
            prev_cjk = Some(c);
            run_len += 1;
        } else {
            flush_run(&mut prev_cjk, &mut run_len, &mut f);
            if c.is_alphanumeric() {
                word.extend(c.to_lowercase());
            } else if !word.is_empty() {
                f(&word);
                word.clear();
            }
        }
    }
    flush_run(&mut prev_cjk, &mut run_len, &mut f);
    if !word.is_empty() {
        f(&word);
    }
}

/// 64-bit SimHash of `text` (Charikar): every token's xxh3 votes ±1 per bit.
pub fn simhash(text: &str) -> u64 {
    let mut v = [0i32; 64];
    let mut any = false;
    tokens(text, |t| {
        any = true;
        let h = xxh3_64(t.as_bytes());
        for (i, x) in v.iter_mut().enumerate() {
            *x += if h >> i & 1 == 1 { 1 } else { -1 };
        }
    });
    if !any {
        return 0;
    }
    v.iter()
        .enumerate()
        .fold(0u64, |acc, (i, &x)| if x > 0 { acc | 1 << i } else { acc })
}

/// MinHash values per page: the Jaccard estimate's standard error is √(J(1−J)/64) ≤ 0.0625.
pub const MINHASH_LEN: usize = 64;

/// The MinHash signature of `text`'s token 3-shingles (the tokens of [`tokens`]; a text of
/// fewer than 3 tokens is shingled by single tokens): [`MINHASH_LEN`] minima, each under its own
/// mix of the shingle's 64-bit hash. Empty for an empty text.
pub fn minhash(text: &str) -> Vec<u32> {
    let mut toks: Vec<u64> = Vec::new();
    tokens(text, |t| toks.push(xxh3_64(t.as_bytes())));
    if toks.is_empty() {
        return Vec::new();
    }
    let k = 3.min(toks.len());
    let mut sig = [u64::MAX; MINHASH_LEN];
    for w in toks.windows(k) {
        let sh = w.iter().fold(0x9e37_79b9_7f4a_7c15u64, |a, &h| {
            (a ^ h).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29)
        });
        for (i, m) in sig.iter_mut().enumerate() {
            // splitmix64 of the shingle under the i-th seed.
            let mut z = sh ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            if z < *m {
                *m = z;
            }
        }
    }
    sig.iter().map(|&m| (m >> 32) as u32).collect()
}

/// The Jaccard similarity of two texts' shingle sets, estimated from their MinHash signatures;
/// `None` when either has none (an empty text, or features from before signatures existed).
pub fn jaccard_estimate(a: &[u32], b: &[u32]) -> Option<f64> {
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    Some(a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minhash_estimates_shingle_jaccard() {
        let words: Vec<String> = (0..400).map(|i| format!("w{i}")).collect();
        let a = words.join(" ");
        // The same text with its last quarter replaced: 300 of 400 tokens shared.
        let b = format!(
            "{} {}",
            words[..300].join(" "),
            (0..100)
                .map(|i| format!("x{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let j = jaccard_estimate(&minhash(&a), &minhash(&b)).unwrap();
        // True Jaccard of the 3-shingle sets: 298 / (398 + 100) ≈ 0.60.
        assert!((j - 0.60).abs() < 0.19, "{j}");
        assert_eq!(jaccard_estimate(&minhash(&a), &minhash(&a)), Some(1.0));
        let c = (0..400)
            .map(|i| format!("z{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(jaccard_estimate(&minhash(&a), &minhash(&c)).unwrap() < 0.1);
        assert_eq!(jaccard_estimate(&minhash(""), &minhash(&a)), None);
        assert_eq!(minhash("一个").len(), MINHASH_LEN);
    }

    fn toks(s: &str) -> Vec<String> {
        let mut v = Vec::new();
        tokens(s, |t| v.push(t.to_string()));
        v
    }

    #[test]
    fn tokens_are_words_and_cjk_bigrams() {
        assert_eq!(toks("Hello, World 42"), ["hello", "world", "42"]);
        assert_eq!(toks("中文分词"), ["中文", "文分", "分词"]);
        assert_eq!(toks("用Rust写"), ["用", "rust", "写"]);
    }

    #[test]
    fn main_text_skips_scripts_and_boilerplate() {
        let body = "word ".repeat(100);
        let html = format!(
            "<html><head><title> A  title </title><script>var error = 404;</script></head><body>\
             <nav>Home About Login</nav><div id=side><a href=/x>link text</a></div>\
             <div id=main><p>{body}</p><p>{body}</p></div><footer>copyright</footer></body></html>"
        );
        let f = extract(&html);
        assert_eq!(f.title, "A title");
        assert_eq!(f.text_chars, 1000 - 1, "both paragraphs, nothing else");
        assert!(!f.hits.error, "404 inside a script is not evidence");
        assert!(f.tags[KEY_TAGS.iter().position(|t| *t == "script").unwrap()] == 1);
        assert!(f.nodes > 8 && !f.paths.is_empty());
    }

    #[test]
    fn a_semantic_container_wins() {
        let art = "article text ".repeat(40);
        let side = "sidebar words ".repeat(200);
        let html = format!("<body><div>{side}</div><article>{art}</article></body>");
        let f = extract(&html);
        assert_eq!(f.simhash, simhash(&art));
    }

    #[test]
    fn near_duplicate_texts_have_close_simhashes() {
        // 400 words of a 250-word vocabulary; b changes two words, c is another text.
        let text = |seed: u64| {
            let mut x = seed;
            (0..400)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    format!("w{}", x % 250)
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let a = text(7);
        let b = a
            .replacen("w1 ", "changed ", 1)
            .replacen("w2 ", "edited ", 1);
        let c = text(8);
        let d = |x: u64, y: u64| (x ^ y).count_ones();
        assert!(d(simhash(&a), simhash(&b)) <= 3);
        assert!(d(simhash(&a), simhash(&c)) > 10);
    }
}

#[cfg(test)]
mod bounds_tests {
    use super::*;

    /// Issue 14: the documents that took the parser 29–40 s are refused by a linear pre-scan.
    #[test]
    fn hostile_documents_are_refused_before_parsing() {
        let deep = "<div>".repeat(100_000);
        assert!(matches!(check_bounds(&deep), Err(HtmlRefused::TooDeep(_))));
        let deep_b = format!("<p>{}", "<b>".repeat(600));
        assert!(matches!(
            check_bounds(&deep_b),
            Err(HtmlRefused::TooDeep(_))
        ));
        let attrs: String = (0..200_000).map(|i| format!(" a{i}=x")).collect();
        let wide = format!("<div{attrs}>x</div>");
        assert!(matches!(
            check_bounds(&wide),
            Err(HtmlRefused::TooManyAttributes(0))
        ));
        let big = "x".repeat(MAX_HTML_BYTES + 1);
        assert_eq!(check_bounds(&big), Err(HtmlRefused::TooLarge(big.len())));
        assert!(try_extract(&deep).is_err());
        // At the limits, accepted.
        let ok = format!(
            "{}x{}",
            "<div>".repeat(MAX_DEPTH),
            "</div>".repeat(MAX_DEPTH)
        );
        assert_eq!(check_bounds(&ok), Ok(()));
        let attrs: String = (0..MAX_ATTRIBUTES)
            .map(|i| format!(" a{i}=\"x y\""))
            .collect();
        assert_eq!(check_bounds(&format!("<div{attrs}>x</div>")), Ok(()));
    }

    /// Sloppy but real HTML is not refused: thousands of unclosed `<li>`, `<p>`, `<td>` and
    /// `<option>`, void and self-closed elements, markup inside scripts, comments and
    /// attribute values, end tags that close several elements at once.
    #[test]
    fn real_sloppy_html_passes() {
        let mut h = String::from("<!DOCTYPE html><html><head><meta charset=utf-8><title>t</title>");
        h.push_str("<script>var s = '<div><div><div>' + '</span>'; if (a < b) {}</script>");
        h.push_str("<style>div > p { color: red }</style></head><body>");
        h.push_str("<!-- <div><div><div> --><ul>");
        for i in 0..3000 {
            h.push_str(&format!(
                "<li><a href='/x?a=1&b=<{i}>'>item {i}</a><br><img src=x.png>"
            ));
        }
        h.push_str("</ul>");
        for _ in 0..2000 {
            h.push_str("<p>para<input type=text><hr>");
        }
        h.push_str("<table>");
        for _ in 0..1000 {
            h.push_str("<tr><td>a<td>b<td>c");
        }
        h.push_str("</table><select>");
        for _ in 0..1000 {
            h.push_str("<option>o");
        }
        h.push_str("</select><svg><path d='M0 0'/><circle r=1 /></svg>");
        for _ in 0..150 {
            h.push_str("<div><span><em>");
        }
        h.push_str("deep</div></div></div>");
        h.push_str("<textarea><div><div></textarea><p>after</p></body></html>");
        assert_eq!(check_bounds(&h), Ok(()));
        assert!(try_extract(&h).unwrap().nodes > 10_000);
    }
}
