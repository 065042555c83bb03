//! Bearer tokens: where they come from ([`load_tokens`]) and how a presented one is checked —
//! against every configured token, in constant time, by SHA-256 digest.

use anyhow::{Context, Result};
use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::state::Api;
use crate::config::ServeSection;

/// The environment variable holding bearer tokens (comma-separated).
pub const TOKENS_ENV: &str = "CRAWLSIEVE_API_TOKENS";

/// Bearer tokens from `CRAWLSIEVE_API_TOKENS` and `serve.token_file` (blank lines and `#`
/// comments skipped).
pub fn load_tokens(cfg: &ServeSection, env: Option<String>) -> Result<Vec<String>> {
    let mut out: Vec<String> = env
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect();
    if let Some(f) = &cfg.token_file {
        let text = std::fs::read_to_string(f).with_context(|| format!("serve.token_file {f}"))?;
        out.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from),
        );
    }
    Ok(out)
}

/// The SHA-256 digest of `t`: how tokens are held and compared.
pub(super) fn digest(t: &[u8]) -> [u8; 32] {
    Sha256::digest(t).into()
}

/// Whether `presented` equals one of `tokens`, in time independent of where they differ and
/// of which one matched (every token is compared).
fn token_ok(tokens: &[[u8; 32]], presented: &[u8]) -> bool {
    let d = digest(presented);
    let mut ok = subtle::Choice::from(0);
    for t in tokens {
        ok |= t.ct_eq(&d);
    }
    ok.into()
}

impl Api {
    /// Whether `headers` carry `Authorization: Bearer <token>` with a configured token (always,
    /// when none is configured).
    pub(super) fn authorized(&self, headers: &HeaderMap) -> bool {
        if self.tokens.is_empty() {
            return true; // allow_anonymous (checked at start)
        }
        let Some(v) = headers.get(header::AUTHORIZATION) else {
            return false;
        };
        let v = v.as_bytes();
        let prefix = b"bearer ";
        if v.len() <= prefix.len() || !v[..prefix.len()].eq_ignore_ascii_case(prefix) {
            return false;
        }
        token_ok(&self.tokens, v[prefix.len()..].trim_ascii())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_by_value() {
        let toks = [digest(b"alpha"), digest(b"beta")];
        assert!(token_ok(&toks, b"alpha"));
        assert!(token_ok(&toks, b"beta"));
        assert!(!token_ok(&toks, b"alph"));
        assert!(!token_ok(&toks, b"alphaa"));
        assert!(!token_ok(&toks, b""));
        assert!(!token_ok(&[], b"alpha"));
    }

    #[test]
    fn tokens_from_env_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tokens");
        std::fs::write(&f, "# ops\n  t-file-1 \n\nt-file-2\n").unwrap();
        let cfg = ServeSection {
            token_file: Some(f.display().to_string()),
            ..ServeSection::default()
        };
        let t = load_tokens(&cfg, Some(" a , ,b".into())).unwrap();
        assert_eq!(t, ["a", "b", "t-file-1", "t-file-2"]);
        let missing = ServeSection {
            token_file: Some("/nonexistent/tokens".into()),
            ..ServeSection::default()
        };
        assert!(load_tokens(&missing, None).is_err());
    }
}
