//! URL patterns (seed 003): the template a URL was made from, so that one template's pages can be
//! sampled and, once verified near-identical by the render stage, skipped.
//!
//! Built from a canonical URL (see [`super::canon`]):
//! * query values dropped, names kept once each and sorted: `?type=1&sort=asc&page=5` →
//!   `?page=&sort=&type=`;
//! * path variables replaced, by whole segment first, then token by token (tokens split at `-`,
//!   `_`, `.`, `,`): `{uuid}` (8-4-4-4-12 hex), `{date}` (`2024-05-01`, `2024_05_01`), `{hash}`
//!   (16+ hex digits with a digit in them as a segment, 8+ with digits and letters as a token),
//!   `{num}` (all digits);
//! * literal words are never touched: `/v1/` and `/v2/` differ, `/about` stays `/about`,
//!   `RateProduct-2.html` → `RateProduct-{num}.html`.
//!
//! With a method (`pattern_with_method`), the pattern is prefixed `GET ` / `POST ` as the seed's
//! optional method dimension.

/// The pattern of a canonical URL (absolute or relative).
pub fn pattern(canonical: &str) -> String {
    let mut out = String::with_capacity(canonical.len());
    push_pattern(canonical, &mut out);
    out
}

/// The pattern prefixed with an upper-cased HTTP method: `POST http://h/api/{num}`.
pub fn pattern_with_method(method: &str, canonical: &str) -> String {
    let mut out = method.to_ascii_uppercase();
    out.push(' ');
    push_pattern(canonical, &mut out);
    out
}

fn push_pattern(canonical: &str, out: &mut String) {
    let (before_q, query) = match canonical.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (canonical, None),
    };
    let before_q = before_q.split_once('#').map_or(before_q, |(a, _)| a);
    // Keep `scheme://authority` literally.
    let path_start = match super::lex::scheme_sep(before_q) {
        Some(p) => before_q[p + 3..]
            .find('/')
            .map_or(before_q.len(), |q| p + 3 + q),
        None => 0,
    };
    out.push_str(&before_q[..path_start]);
    for (i, seg) in before_q[path_start..].split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        push_segment(seg, out);
    }
    if let Some(q) = query {
        let mut names: Vec<&str> = q
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').map_or(p, |(n, _)| n))
            .collect();
        names.sort_unstable();
        names.dedup();
        if !names.is_empty() {
            out.push('?');
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    out.push('&');
                }
                out.push_str(n);
                out.push('=');
            }
        }
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                *c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && (b[4] == b'-' && b[7] == b'-' || b[4] == b'_' && b[7] == b'_')
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
        && matches!(&s[..2], "19" | "20")
}

fn hexish(s: &str, min: usize, need_letter: bool) -> bool {
    s.len() >= min
        && s.bytes().all(|c| c.is_ascii_hexdigit())
        && s.bytes().any(|c| c.is_ascii_digit())
        && (!need_letter || s.bytes().any(|c| c.is_ascii_alphabetic()))
}

fn push_segment(seg: &str, out: &mut String) {
    if is_digits(seg) {
        out.push_str("{num}");
    } else if is_uuid(seg) {
        out.push_str("{uuid}");
    } else if is_date(seg) {
        out.push_str("{date}");
    } else if hexish(seg, 16, false) {
        out.push_str("{hash}");
    } else {
        // Token by token, keeping the separators.
        let mut start = 0;
        for (i, c) in seg.char_indices() {
            if matches!(c, '-' | '_' | '.' | ',') {
                push_token(&seg[start..i], out);
                out.push(c);
                start = i + 1;
            }
        }
        push_token(&seg[start..], out);
    }
}

fn push_token(tok: &str, out: &mut String) {
    if is_digits(tok) {
        out.push_str("{num}");
    } else if hexish(tok, 8, true) {
        out.push_str("{hash}");
    } else {
        out.push_str(tok);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_and_literals() {
        assert_eq!(pattern("http://h.com/user/123"), "http://h.com/user/{num}");
        assert_eq!(pattern("http://h.com/v1/items"), "http://h.com/v1/items");
        assert_ne!(
            pattern("http://h.com/v1/items"),
            pattern("http://h.com/v2/items")
        );
        assert_eq!(pattern("http://h.com/about"), "http://h.com/about");
        assert_eq!(
            pattern("http://h.com/static/js/app.3fa2c9d1e0.js"),
            "http://h.com/static/js/app.{hash}.js"
        );
        assert_eq!(
            pattern("http://h.com/forum/thread-12-3-1.html"),
            "http://h.com/forum/thread-{num}-{num}-{num}.html"
        );
        assert_eq!(
            pattern("http://h.com/news/2024-05-01/x"),
            "http://h.com/news/{date}/x"
        );
        assert_eq!(
            pattern("http://h.com:8080/a?b=1&a=2&b=3"),
            "http://h.com:8080/a?a=&b="
        );
        assert_eq!(pattern("http://h.com"), "http://h.com");
        assert_eq!(pattern("../list/7?p=2"), "../list/{num}?p=");
        assert_eq!(
            pattern_with_method("post", "http://h.com/api/9"),
            "POST http://h.com/api/{num}"
        );
    }
}
