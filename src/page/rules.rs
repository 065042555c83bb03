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

/// Error pages.
/// (Not the bare word "error": "Error handling in Python" is a page worth fetching.)
pub const ERROR_WORDS: &[&str] = &[
    "404",
    "not found",
    "page does not exist",
    "no longer available",
    "an error occurred",
    "something went wrong",
    "server error",
    "出错了",
    "错误页",
    "页面不存在",
    "找不到页面",
    "无法找到",
    "不存在",
    "无法访问",
];
/// Login walls.
pub const LOGIN_WORDS: &[&str] = &[
    "login",
    "log in",
    "sign in",
    "signin",
    "password",
    "登录",
    "登陆",
    "密码",
    "用户名",
    "请先登录",
];
/// WAF and bot challenges.
pub const WAF_WORDS: &[&str] = &[
    "access denied",
    "attention required",
    "cloudflare",
    "just a moment",
    "checking your browser",
    "request blocked",
    "web application firewall",
    "ddos protection",
    "captcha",
    "防火墙",
    "安全狗",
    "拦截",
    "云盾",
    "访问被拒绝",
    "人机验证",
    "安全验证",
    "请求被阻断",
];
/// Maintenance pages.
pub const MAINT_WORDS: &[&str] = &[
    "maintenance",
    "upgrading",
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

fn any_in(words: &[&str], text: &str) -> bool {
    words.iter().any(|w| text.contains(w))
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
    KeywordHits {
        error: hit(ERROR_WORDS),
        login: hit(LOGIN_WORDS),
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
}

impl Rule {
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
        }
    }
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
