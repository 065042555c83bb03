//! Spider traps, judged on the structure of a canonical URL (issue 25): URL spaces a crawler
//! never finishes because pages link to ever new URLs of themselves. Each rule has its own
//! reason code and setting (`[sieve.traps]`), all on by default with limits that no real page
//! of the shared 1.29 M-line corpus reaches (docs/gate.md lists what each rejects there):
//!
//! | rule | reason | default |
//! |---|---|---|
//! | a segment, or a run of up to 4 segments, repeated 3 times in a row (`/a/b/a/b/a/b/`; runs of numbers only are not loops: tiles `/3/3/3.png`, dates) | `trap_repeated_path` | 3 |
//! | more path segments than a limit (Heritrix's `TooManyPathSegments`) | `trap_too_deep` | 30 |
//! | the page's own path (≥ 2 segments) or query (≥ 8 bytes) appearing twice in a link found on it (pages that echo the requested URL into their links) | `trap_echo` | on |
//! | a calendar date (`/2031/05/`, `2031-05-12`, `?month=2031-05`, `?year=2031`) further in the future than a horizon, or further back | `trap_calendar` | 2 years ahead, 100 years back |
//!
//! Pure functions, no I/O; the only input besides the URL is today's date (calendar).

use serde::{Deserialize, Serialize};

use super::Reason;

/// The trap rules' settings (`[sieve.traps]`); `0` turns a numeric rule off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrapConfig {
    /// Repetitions in a row of a path segment (or run of up to 4) that make a loop (0: off).
    pub max_repeats: usize,
    /// Path segments beyond which a URL is a trap (0: off).
    pub max_segments: usize,
    /// Reject links that repeat their source page's path or query (`trap_echo`).
    pub echo: bool,
    /// Calendar dates more than this many months ahead of today are traps (0: off).
    pub calendar_months_ahead: u32,
    /// Calendar dates more than this many years before today are traps (0: off).
    pub calendar_years_back: u32,
}

impl Default for TrapConfig {
    fn default() -> Self {
        TrapConfig {
            max_repeats: 3,
            max_segments: 30,
            echo: true,
            calendar_months_ahead: 24,
            calendar_years_back: 100,
        }
    }
}

impl TrapConfig {
    /// Every rule off.
    pub fn off() -> TrapConfig {
        TrapConfig {
            max_repeats: 0,
            max_segments: 0,
            echo: false,
            calendar_months_ahead: 0,
            calendar_years_back: 0,
        }
    }

    /// Judge canonical URL `url`, found on page `source` (its URL text, if known).
    pub fn check(&self, url: &str, source: Option<&str>) -> Result<(), Reason> {
        if *self == TrapConfig::off() {
            return Ok(());
        }
        let parts = super::lex::UrlParts::of(url);
        let (path, query) = (parts.path, parts.query.unwrap_or(""));
        // The segments, once (the first 32 kept: deeper is a trap by any sane limit).
        let mut buf = [""; 32];
        let (mut n, mut total) = (0, 0);
        for seg in segments(path) {
            total += 1;
            if n < buf.len() {
                buf[n] = seg;
                n += 1;
            }
        }
        let segs = &buf[..n];
        if self.max_segments > 0 && total > self.max_segments {
            return Err(Reason::TrapTooDeep);
        }
        if self.max_repeats > 1 && repeats_in_a_row(segs, self.max_repeats) {
            return Err(Reason::TrapRepeatedPath);
        }
        if self.echo {
            if let Some(src) = source {
                if echoes(&parts, src) {
                    return Err(Reason::TrapEcho);
                }
            }
        }
        if self.calendar_months_ahead > 0 || self.calendar_years_back > 0 {
            if let Some(d) = calendar_month(segs, path, query) {
                let now = this_month();
                let ahead = self.calendar_months_ahead as i64;
                let back = 12 * self.calendar_years_back as i64;
                if (ahead > 0 && d - now > ahead) || (back > 0 && now - d > back) {
                    return Err(Reason::TrapCalendar);
                }
            }
        }
        Ok(())
    }
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

fn numeric(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a run of 1–4 segments, not all numbers, repeats `times` times in a row.
fn repeats_in_a_row(segs: &[&str], times: usize) -> bool {
    for k in 1..=4 {
        if segs.len() < k * times {
            break;
        }
        for i in 0..=segs.len() - k * times {
            let unit = &segs[i..i + k];
            if (1..times).all(|r| &segs[i + r * k..i + (r + 1) * k] == unit)
                && !unit.iter().all(|s| numeric(s))
            {
                return true;
            }
        }
    }
    false
}

/// Whether `url` holds its source page's path (two segments or more) twice, or its query (8
/// bytes or more) twice: a page that writes the requested URL into its links grows one copy
/// per hop. Only for a link to the source's own host.
fn echoes(url: &super::lex::UrlParts, source: &str) -> bool {
    let src = super::lex::UrlParts::of(source);
    if url.host.is_empty() || !url.host.eq_ignore_ascii_case(src.host) {
        return false;
    }
    let (sp, sq) = (src.path, src.query.unwrap_or(""));
    let (up, uq) = (url.path, url.query.unwrap_or(""));
    let sp = sp.trim_end_matches('/');
    // Cheap exits first: the link must be long enough to hold two copies.
    if up.len() < 2 * sp.len() && uq.len() < 2 * sq.len().max(8) {
        return false;
    }
    let twice = |hay: &str, needle: &str| -> bool {
        hay.find(needle)
            .is_some_and(|i| hay[i + needle.len()..].contains(needle))
    };
    (segments(sp).count() >= 2 && twice(up, sp)) || (sq.len() >= 8 && twice(uq, sq))
}

/// The month (`year × 12 + month − 1`) of the first calendar date in a path or query, if any:
/// path segments `YYYY/MM[/DD]`, a token `YYYY-MM[-DD]` anywhere, or a query parameter
/// `year=YYYY` (month 1). Years 1800–2199 only, months 1–12.
fn calendar_month(segs: &[&str], path: &str, query: &str) -> Option<i64> {
    // Most URLs hold no four-digit number starting with 1 or 2: nothing to read.
    if !has_year(path) && !has_year(query) {
        return None;
    }
    for w in segs.windows(2) {
        if let (Some(y), Some(m)) = (year(w[0]), month(w[1])) {
            return Some(y * 12 + m - 1);
        }
    }
    for text in [path, query] {
        if let Some(d) = dashed_date(text) {
            return Some(d);
        }
    }
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if matches!(k.to_ascii_lowercase().as_str(), "year" | "yr" | "y") {
            if let Some(y) = year(v) {
                return Some(y * 12);
            }
        }
    }
    None
}

/// Whether `text` holds a run of exactly four digits starting with 1 or 2.
fn has_year(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i - start == 4 && matches!(b[start], b'1' | b'2') {
                return true;
            }
        } else {
            i += 1;
        }
    }
    false
}

fn year(s: &str) -> Option<i64> {
    (s.len() == 4 && numeric(s))
        .then(|| s.parse().ok())
        .flatten()
        .filter(|y| (1800..2200).contains(y))
}

fn month(s: &str) -> Option<i64> {
    (matches!(s.len(), 1 | 2) && numeric(s))
        .then(|| s.parse().ok())
        .flatten()
        .filter(|m| (1..=12).contains(m))
}

/// The first calendar token `YYYY-MM` or `YYYY-MM-DD` in `text` that stands alone: right after
/// the start, `/`, `=`, `?` or `&`, and followed by the end, `/`, `&`, `#` or `.` (a date, not
/// part of a name: `thread-2327-10-1.html` is no date).
fn dashed_date(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let ends = |j: usize| {
        b.get(j)
            .is_none_or(|c| matches!(c, b'/' | b'&' | b'#' | b'.'))
    };
    let mut i = 0;
    while i + 7 <= b.len() {
        let starts = i == 0 || matches!(b[i - 1], b'/' | b'=' | b'?' | b'&');
        if starts && b[i + 4] == b'-' {
            if let (Some(y), Some(m)) = (year(&text[i..i + 4]), month2(&text[i + 5..i + 7])) {
                let day = b.get(i + 7) == Some(&b'-')
                    && text.get(i + 8..i + 10).is_some_and(|d| {
                        numeric(d) && d.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d))
                    })
                    && ends(i + 10);
                if day || ends(i + 7) {
                    return Some(y * 12 + m - 1);
                }
            }
        }
        i += 1;
    }
    None
}

/// A two-digit month (`01`–`12`).
fn month2(s: &str) -> Option<i64> {
    (s.len() == 2).then(|| month(s)).flatten()
}

/// This month, as [`calendar_month`] counts (UTC).
fn this_month() -> i64 {
    let now = humantime::format_rfc3339(std::time::SystemTime::now()).to_string();
    let y: i64 = now[..4].parse().unwrap_or(1970);
    let m: i64 = now[5..7].parse().unwrap_or(1);
    y * 12 + m - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(url: &str) -> Result<(), Reason> {
        TrapConfig::default().check(url, None)
    }

    #[test]
    fn repeated_segments_in_a_row_are_loops_numbers_are_not() {
        for u in [
            "https://a.example/a/b/a/b/a/b/",
            "https://a.example/x/x/x",
            "https://a.example/p/en/docs/en/docs/en/docs/index.html",
            "https://a.example/a/b/c/d/a/b/c/d/a/b/c/d",
            "https://a.example/1/x/1/x/1/x/",
        ] {
            assert_eq!(judge(u), Err(Reason::TrapRepeatedPath), "{u}");
        }
        for u in [
            "https://tile.example/3/3/3.png",
            "https://tile.example/7/7/7/7",
            "https://a.example/2020/10/10/10/post",
            "https://a.example/a/b/a/b/",
            "https://a.example/docs/v1/api/v1/ref/v1",
            "https://a.example/a/a/b/b/c/c",
            "https://a.example/x/x?x/x/x",
        ] {
            assert_eq!(judge(u), Ok(()), "{u}");
        }
        let lax = TrapConfig {
            max_repeats: 4,
            ..TrapConfig::default()
        };
        assert_eq!(lax.check("https://a.example/x/x/x", None), Ok(()));
        assert_eq!(
            lax.check("https://a.example/x/x/x/x", None),
            Err(Reason::TrapRepeatedPath)
        );
    }

    #[test]
    fn too_many_segments() {
        let path = |n: usize| (0..n).map(|i| format!("/s{i}")).collect::<String>();
        assert_eq!(
            judge(&format!("https://a.example{}", path(31))),
            Err(Reason::TrapTooDeep)
        );
        assert_eq!(
            judge(&format!("https://a.example{}", path(30))),
            Ok(()),
            "30 segments"
        );
    }

    #[test]
    fn links_echoing_their_page_are_traps() {
        let cfg = TrapConfig::default();
        let src = "https://e.example/search/results?q=shoes&page=2";
        for u in [
            "https://e.example/search/results/search/results",
            "https://e.example/x?next=q=shoes&page=2&q=shoes&page=2",
        ] {
            assert_eq!(cfg.check(u, Some(src)), Err(Reason::TrapEcho), "{u}");
        }
        for u in [
            "https://e.example/search/results?q=shoes&page=3",
            "https://e.example/search/results/item/1",
            "https://other.example/search/results/search/results",
        ] {
            assert_eq!(cfg.check(u, Some(src)), Ok(()), "{u}");
        }
        // A one-segment page (`/docs/`) is too common a prefix to call an echo.
        assert_eq!(
            cfg.check(
                "https://e.example/docs/api/docs/",
                Some("https://e.example/docs/")
            ),
            Ok(())
        );
        let off = TrapConfig { echo: false, ..cfg };
        assert_eq!(
            off.check("https://e.example/search/results/search/results", Some(src)),
            Ok(())
        );
    }

    #[test]
    fn calendars_beyond_the_horizon_are_traps() {
        let now = this_month();
        let (y, m) = (now / 12, now % 12 + 1);
        let at = |months: i64| {
            let t = now + months;
            (t / 12, t % 12 + 1)
        };
        let (fy, fm) = at(25);
        let (ny, nm) = at(23);
        for u in [
            format!("https://c.example/events/{fy}/{fm:02}/"),
            format!("https://c.example/cal?month={fy}-{fm:02}"),
            format!("https://c.example/day/{fy}-{fm:02}-01.html"),
            format!("https://c.example/cal?year={}", y + 3),
            "https://c.example/archive/1899/01/".to_string(),
        ] {
            assert_eq!(judge(&u), Err(Reason::TrapCalendar), "{u}");
        }
        for u in [
            format!("https://c.example/events/{ny}/{nm:02}/"),
            format!("https://c.example/blog/{y}/{m}/hello"),
            "https://c.example/blog/2009/05/some-post".to_string(),
            "https://c.example/item/202912345".to_string(),
            "https://c.example/v/2031-999".to_string(),
            "https://c.example/sku/12031-05".to_string(),
            "https://c.example/page/2031/77".to_string(),
            // Names and ids that hold digits like a date (the shared stream's forum threads).
            "https://f.example/forum/thread-2327-10-1.html".to_string(),
            "https://f.example/p/id2100-11".to_string(),
            "https://f.example/p/2101-11x".to_string(),
            "https://f.example/item/9999/01/".to_string(),
        ] {
            assert_eq!(judge(&u), Ok(()), "{u}");
        }
        assert_eq!(
            TrapConfig::off().check("https://c.example/cal/2999/01/", None),
            Ok(())
        );
    }
}
