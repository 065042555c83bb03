//! The seed's rule classes (004), in priority order: E1 5xx per origin, E3 error template, L1
//! login wall, W1 WAF/challenge, M1 maintenance, T1 thin/empty, R1 same final URL, U1 URL
//! variants.
//!
//! Keywords are matched in the title and the visible text (lower-cased), never in scripts or
//! styles: "error" and "404" appear in the JavaScript of most pages. Body text counts only on
//! pages with little visible text ([`SHORT_PAGE_CHARS`]), and every keyword rule needs a page
//! whose main text is under [`KEYWORD_PAGE_MAX_CHARS`]: an article about bridge maintenance, or
//! one with a login box in its header, is an article. The seed groups E3/L1/W1/M1/T1 by an
//! "HTML fingerprint"; here that is the fingerprint of the visible text, so CSRF tokens, nonces
//! and timestamps in the markup do not split one template into many clusters.

use serde::{Deserialize, Serialize};

/// Body-text keywords count only on pages with less visible text than this.
pub const SHORT_PAGE_CHARS: usize = 600;
/// Keyword rules (E3 on a 2xx page, L1, W1, M1) apply only below this much main text.
pub const KEYWORD_PAGE_MAX_CHARS: usize = 1000;

/// Error pages. Phrases, matched on word boundaries. Status codes are not keywords: a status
/// is evidence as the status only ("404" is in issue numbers, `Http404`, prices and ids).
/// (Not the bare word "error": "Error handling in Python" is a page worth fetching.)
pub const ERROR_WORDS: &[&str] = &[
    "not found",
    "page does not exist",
    "no longer available",
    "an error occurred",
    "an error has occurred",
    "something went wrong",
    "internal server error",
    "出错了",
    "错误页",
    "页面不存在",
    "找不到页面",
    "无法找到",
    "不存在",
    "无法访问",
];
/// Login walls: phrases that ask the reader to sign in (title or text), matched on word
/// boundaries. A page *about* logging in (`cargo login`, "Login with OAuth") is not a wall.
pub const LOGIN_WORDS: &[&str] = &[
    "please log in",
    "please login",
    "please sign in",
    "log in to continue",
    "login to continue",
    "sign in to continue",
    "log in to your account",
    "sign in to your account",
    "login required",
    "you must be logged in",
    "you need to log in",
    "you need to sign in",
    "请先登录",
    "请登录",
    "登录后",
];
/// Login page titles: the title's subject (before a ` - `, ` | `, ` — `, ` :: ` separator) is
/// one of these.
pub const LOGIN_TITLES: &[&str] = &[
    "login",
    "log in",
    "sign in",
    "signin",
    "sign on",
    "log on",
    "user login",
    "member login",
    "account login",
    "sign in to your account",
    "登录",
    "登陆",
    "用户登录",
];
/// WAF and bot challenges.
pub const WAF_WORDS: &[&str] = &[
    "access denied",
    "attention required",
    "cloudflare ray id",
    "just a moment",
    "checking your browser",
    "request blocked",
    "web application firewall",
    "ddos protection",
    "captcha",
    "performance & security by cloudflare",
    "防火墙",
    "安全狗",
    "拦截",
    "云盾",
    "访问被拒绝",
    "人机验证",
    "安全验证",
    "请求被阻断",
];
/// Maintenance pages: phrases, never the bare "maintenance" or "upgrading" (an article on
/// bridge maintenance, PostgreSQL's "Routine Database Maintenance Tasks", release notes on
/// upgrading).
pub const MAINT_WORDS: &[&str] = &[
    "under maintenance",
    "down for maintenance",
    "scheduled maintenance",
    "undergoing maintenance",
    "maintenance mode",
    "maintenance in progress",
    "we are upgrading",
    "we're upgrading",
    "currently upgrading",
    "is being upgraded",
    "under construction",
    "temporarily unavailable",
    "be back soon",
    "维护中",
    "系统维护",
    "升级中",
    "暂停服务",
    "正在维护",
];

/// Which keyword lists matched (title anywhere, body text on short pages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeywordHits {
    /// An error keyword.
    pub error: bool,
    /// A login keyword.
    pub login: bool,
    /// A WAF/challenge keyword.
    pub waf: bool,
    /// A maintenance keyword.
    pub maint: bool,
}

/// `phrase` occurs in `text` (both lower-case) as whole words: an ASCII phrase neither starts
/// nor ends inside a word (`captcha` is not in `recaptchas`). CJK phrases match anywhere (no
/// spaces between words there).
pub fn has_phrase(text: &str, phrase: &str) -> bool {
    if !phrase.is_ascii() {
        return text.contains(phrase);
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut from = 0;
    while let Some(i) = text[from..].find(phrase) {
        let at = from + i;
        let end = at + phrase.len();
        if !word(text[..at].chars().next_back()) && !word(text[end..].chars().next()) {
            return true;
        }
        from = at + phrase.chars().next().map_or(1, char::len_utf8);
    }
    false
}

fn any_in(words: &[&str], text: &str) -> bool {
    words.iter().any(|w| has_phrase(text, w))
}

/// The title's subject: the part before a site-name separator (`Sign in | Example` → `sign in`).
fn title_subject(t: &str) -> &str {
    let mut s = t;
    for sep in [" | ", " - ", " – ", " — ", " :: ", " · ", " » "] {
        if let Some(i) = s.find(sep) {
            s = &s[..i];
        }
    }
    s.trim()
}

/// Keyword evidence from the title and (a bounded prefix of) the visible text.
pub fn keyword_hits(title: &str, visible: &str) -> KeywordHits {
    let t = title.to_lowercase();
    let body = if visible.chars().count() < SHORT_PAGE_CHARS {
        visible.to_lowercase()
    } else {
        String::new()
    };
    let hit = |w: &[&str]| any_in(w, &t) || any_in(w, &body);
    let subject = title_subject(&t);
    KeywordHits {
        error: hit(ERROR_WORDS),
        login: hit(LOGIN_WORDS) || LOGIN_TITLES.contains(&subject),
        waf: hit(WAF_WORDS),
        maint: hit(MAINT_WORDS),
    }
}

/// A rule class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Rule {
    /// 5xx status; one cluster per origin.
    E1,
    /// 404/401/403, or 200 with error keywords; grouped by visible-text fingerprint.
    E3,
    /// Login wall.
    L1,
    /// WAF or bot challenge.
    W1,
    /// Maintenance page.
    M1,
    /// Thin or empty page (< 1 KiB of HTML or < 200 characters of text).
    T1,
    /// Same final URL as another page.
    R1,
    /// Same URL after path normalization.
    U1,
    /// The host's "not found" answer to a URL that does not exist, served with a 2xx status
    /// (a soft 404: the host's probe, [`super::soft404`]); one cluster per origin.
    #[serde(rename = "soft_404")]
    Soft404,
}

impl Rule {
    /// The class's code as reports, events and schemas spell it (its serde name): `E1` …
    /// `U1`, `soft_404`.
    pub fn code(self) -> &'static str {
        match self {
            Rule::E1 => "E1",
            Rule::E3 => "E3",
            Rule::L1 => "L1",
            Rule::W1 => "W1",
            Rule::M1 => "M1",
            Rule::T1 => "T1",
            Rule::R1 => "R1",
            Rule::U1 => "U1",
            Rule::Soft404 => "soft_404",
        }
    }

    /// The seed's cluster-id prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            Rule::E1 => "err5xx",
            Rule::E3 => "errtpl",
            Rule::L1 => "loginwall",
            Rule::W1 => "waf",
            Rule::M1 => "maint",
            Rule::T1 => "thin",
            Rule::R1 => "redir",
            Rule::U1 => "urlcanon",
            Rule::Soft404 => "soft404",
        }
    }
}

/// What each class in a report means, in the words the HTML report's legend and `cluster`'s and
/// `similar`'s `--help` show (one list for both).
pub const LEGEND: &[(&str, &str)] = &[
    ("similar", "a content cluster: near-duplicate pages of one host (same text give or take a few words, and the same layout or look); its canonical is the page to keep"),
    ("E1", "server error: 5xx answers of one origin"),
    ("E3", "error page: a 404/401/403, or a 2xx page with little text that says \"not found\" or \"an error occurred\""),
    ("L1", "login wall: a page whose only content is a login form"),
    ("W1", "WAF or challenge page (captcha, \"checking your browser\")"),
    ("M1", "maintenance page"),
    ("T1", "thin page: under 1 KiB of HTML or 200 characters of text (too little for the content rule); thin pages of one template with near-identical text are grouped, the others stay alone"),
    ("R1", "redirect: several URLs that end at the same final URL"),
    ("U1", "URL variant: URLs that differ only in case, index.html or a trailing slash and serve the same page"),
    ("soft_404", "soft 404: the host's \"not found\" page served with a 2xx status (measured with a probe URL that cannot exist)"),
    ("distance", "1 − the page's similarity to its cluster's canonical (0: the canonical itself); blank where nothing was measured (a page in no cluster, or a member without HTML)"),
    ("pattern_similar", "(the gate's reason) a URL not published because the render stage verified that its URL pattern serves near-identical pages"),
];

/// [`LEGEND`] as plain text, one class a line (for `--help`).
pub fn legend_text() -> String {
    LEGEND
        .iter()
        .map(|(k, v)| format!("  {k:<16} {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The seed's eligibility thresholds.
pub const MIN_HTML_BYTES: usize = 1024;
/// Characters of main text a page needs to take part in content clustering.
pub const MIN_TEXT_CHARS: usize = 200;

/// The content-independent class of a page, before any grouping (R1/U1 need other pages and
/// are decided by the clusterer).
pub fn page_rule(status: u16, is_html: bool, f: &super::Features) -> Option<Rule> {
    let thin = f.html_bytes < MIN_HTML_BYTES || f.text_chars < MIN_TEXT_CHARS;
    let few_words = f.text_chars < KEYWORD_PAGE_MAX_CHARS;
    if (500..600).contains(&status) {
        return Some(Rule::E1);
    }
    // A 401/403 that shows a login form is a login wall, not an error template.
    let login_form = f.password_field && few_words;
    if matches!(status, 404) || (matches!(status, 401 | 403) && !login_form) {
        return Some(Rule::E3);
    }
    if f.soft_404 && (200..300).contains(&status) {
        return Some(Rule::Soft404);
    }
    if (200..300).contains(&status) && f.hits.error && few_words {
        return Some(Rule::E3);
    }
    if !is_html {
        return None;
    }
    if login_form || (f.hits.login && thin) {
        return Some(Rule::L1);
    }
    if f.hits.waf && few_words {
        return Some(Rule::W1);
    }
    if f.hits.maint && few_words {
        return Some(Rule::M1);
    }
    if thin && ((200..300).contains(&status) || matches!(status, 401 | 403)) {
        return Some(Rule::T1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_serde_names() {
        use Rule::*;
        for r in [E1, E3, L1, W1, M1, T1, R1, U1, Soft404] {
            assert_eq!(serde_json::to_value(r).unwrap(), r.code(), "{r:?}");
        }
    }
    use crate::page::features::extract;

    fn rule(status: u16, title: &str, body: &str) -> Option<Rule> {
        let html = format!(
            "<!doctype html><html><head><title>{title}</title></head><body><main><p>{body}</main>\
             <footer>{}</footer></body></html>",
            "padding ".repeat(150)
        );
        page_rule(status, true, &extract(&html))
    }

    /// Issue 14: the keyword rules fired on these real pages; they must not.
    #[test]
    fn keywords_match_words_in_the_places_the_seed_means() {
        let text = "This section explains the feature in enough words to be more than a thin \
                    page, with a paragraph of explanation and an example that a reader can follow \
                    from the start to the end of it without trouble.";
        for (title, body) in [
            ("Issue #154042 · rust-lang/rust", text),
            ("Order 34049 shipped", text),
            ("Writing views | Django documentation", "Raise Http404 when the object does not exist; the handler then renders the template for you, which is documented in the section on error views."),
            ("Release notes 2.4", "Upgrading from 2.3: run the migration first. Upgrading is safe on a live cluster, and this page lists every change in the release with its pull request."),
            ("cargo login - The Cargo Book", "This command will save the API token to disk so that commands that require authentication, such as cargo publish, will be automatically authenticated."),
            ("Routine Database Maintenance Tasks", "PostgreSQL, like any database software, requires that certain tasks be performed regularly to achieve optimum performance. The tasks discussed here are required."),
            ("reCAPTCHAs explained", text),
        ] {
            // Long enough not to be thin (T1), short enough for the keyword rules to look.
            let body = format!("{body} {text}");
            assert_eq!(rule(200, title, &body), None, "{title}");
        }
        // A thin page about logging in is thin, not a login wall.
        assert_eq!(
            rule(200, "cargo login - The Cargo Book", "Save an API token."),
            Some(Rule::T1)
        );
        // Still classified: real error, login, maintenance and challenge pages.
        assert_eq!(
            rule(
                200,
                "Page not found - Example",
                "Sorry, the page you asked for does not exist."
            ),
            Some(Rule::E3)
        );
        assert_eq!(
            rule(200, "Sign in | Example", "Email and password, please."),
            Some(Rule::L1)
        );
        assert_eq!(
            rule(
                200,
                "Example",
                "Please log in to continue to your dashboard."
            ),
            Some(Rule::L1)
        );
        assert_eq!(
            rule(
                200,
                "Example",
                "The site is down for maintenance. We'll be back soon."
            ),
            Some(Rule::M1)
        );
        assert_eq!(
            rule(
                200,
                "Just a moment...",
                "Checking your browser before accessing the site."
            ),
            Some(Rule::W1)
        );
        assert_eq!(
            rule(200, "系统维护中", "网站正在升级，请稍后再来。"),
            Some(Rule::M1)
        );
        // A status is evidence as the status.
        assert_eq!(rule(404, "Order 34049", text), Some(Rule::E3));
    }

    #[test]
    fn phrases_match_on_word_boundaries() {
        assert!(has_phrase("error 404: not found.", "not found"));
        assert!(!has_phrase("notfoundexception", "not found"));
        assert!(!has_phrase("recaptchas", "captcha"));
        assert!(has_phrase("(captcha)", "captcha"));
        assert!(has_phrase("页面不存在啊", "页面不存在"));
        assert!(has_phrase("é not found", "not found"));
        assert!(!has_phrase("ébe back soonx", "be back soon"));
    }
}
