//! `crawlsieve robots`: judge URLs against a robots.txt file by hand, as the gate will.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;

use crate::robots::Robots;

/// `crawlsieve robots --file ROBOTS.TXT --agent AGENT [URL ...]`.
#[derive(Debug, Args)]
pub struct RobotsArgs {
    /// The robots.txt file (at most its first 500 KiB are read, as RFC 9309 allows).
    #[arg(long, env = "CRAWLSIEVE_ROBOTS_FILE", value_name = "ROBOTS.TXT")]
    pub file: PathBuf,
    /// The crawler's user agent; its product token (`crawlsieve` of `crawlsieve/1.0`) picks the
    /// group.
    #[arg(long, env = "CRAWLSIEVE_ROBOTS_AGENT", value_name = "AGENT")]
    pub agent: String,
    /// URLs to judge (absolute); none given, or `-`: one per line on stdin (blank lines skipped). Non-ASCII bytes and spaces
    /// are percent-encoded before matching (RFC 9309 §2.2.2).
    pub urls: Vec<String>,
}

/// One JSON object per URL, in order: `url`, `allowed`, `line` and `rule` (the rule that
/// decided), `crawl_delay_s`.
pub fn run(a: RobotsArgs) -> Result<()> {
    let body = std::fs::read(&a.file).with_context(|| format!("reading {}", a.file.display()))?;
    let robots = Robots::new(&body);
    if !has_groups(&body) {
        // Valid (every URL is allowed), but a user who gave the wrong file should hear it.
        eprintln!(
            "crawlsieve: warning: {} has no `User-agent:` line, so no rule applies and every URL is allowed: is it a robots.txt file?",
            a.file.display()
        );
    }
    if crate::robots::product_token(&a.agent).is_empty() {
        return Err(super::exit::usage(format!(
            "--agent {:?} has no product token (it must start with letters, `-` or `_`)",
            a.agent
        )));
    }
    let mut not_urls = 0usize;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut judge = |url: &str| -> Result<()> {
        let url = url.trim();
        if url.is_empty() {
            return Ok(());
        }
        // robots.txt rules match a URL's path: something that is no absolute http(s) URL has
        // none, and must not come out `allowed: true`.
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            not_urls += 1;
            serde_json::to_writer(
                &mut out,
                &serde_json::json!({"url": url, "allowed": null, "error": "not an absolute http(s) URL"}),
            )?;
            out.write_all(b"\n")?;
            return Ok(());
        }
        let mut v = robots.check(&a.agent, &percent_encode(url));
        v.url = url.to_string();
        serde_json::to_writer(&mut out, &v)?;
        out.write_all(b"\n")?;
        Ok(())
    };
    if a.urls.is_empty() || a.urls == ["-"] {
        for line in std::io::stdin().lock().lines() {
            judge(&line.context("reading stdin")?).context("writing to standard output")?;
        }
    } else {
        for u in &a.urls {
            judge(u).context("writing to standard output")?;
        }
    }
    out.flush().context("writing to standard output")?;
    if not_urls > 0 {
        return Err(super::exit::partial(format!(
            "{not_urls} line(s) judged nothing: not an absolute http(s) URL (`\"allowed\": null`)"
        )));
    }
    Ok(())
}

/// Whether `body` has a `User-agent:` line (a group): without one no rule applies (RFC 9309
/// §2.1), which a file that is not a robots.txt file at all shows too.
/// An empty file is a robots.txt file that allows everything: not warned of.
fn has_groups(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    text.trim().is_empty()
        || text.lines().any(|l| {
            l.trim_start_matches('\u{feff}')
                .split_once(':')
                .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("user-agent"))
        })
}

/// `url` with bytes outside printable ASCII percent-encoded (escapes already there stay).
fn percent_encode(url: &str) -> String {
    let mut s = String::with_capacity(url.len());
    for &b in url.as_bytes() {
        if b > b' ' && b < 0x7f {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}
