//! Local input: lines with a bound (a megabyte-long or endless line never takes unbounded
//! memory, and bytes are passed on as read — invalid UTF-8 is the validator's business, not a
//! read error), and robots.txt files already fetched ([`RobotsDir`], `--robots-dir`).

use std::io::{self, BufRead};

/// One line as read.
#[derive(Debug, Default, Clone)]
pub struct Line {
    /// The bytes, without the line terminator (`\n` or `\r\n`), at most the reader's cap.
    pub bytes: Vec<u8>,
    /// The line was longer than the cap; the rest was skipped.
    pub truncated: bool,
}

/// Reads `\n`-terminated lines, keeping at most `cap` bytes of each.
pub struct LineReader<R> {
    inner: R,
    cap: usize,
    interruptible: bool,
}

impl<R: BufRead> LineReader<R> {
    /// A reader keeping at most `cap` bytes per line.
    pub fn new(inner: R, cap: usize) -> Self {
        LineReader {
            inner,
            cap: cap.max(1),
            interruptible: false,
        }
    }

    /// Return [`io::ErrorKind::Interrupted`] from [`LineReader::read_line`] when a read is
    /// interrupted by a signal before any byte of the line was read (otherwise the read is
    /// retried, as always: a line is never returned cut). For a caller whose signal handler
    /// asks it to stop, so that a read waiting on a quiet pipe does not keep it waiting.
    pub fn interruptible(mut self, yes: bool) -> Self {
        self.interruptible = yes;
        self
    }

    /// The reader underneath.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Read the next line into `line` (reused); `Ok(false)` at end of input.
    pub fn read_line(&mut self, line: &mut Line) -> io::Result<bool> {
        line.bytes.clear();
        line.truncated = false;
        let mut any = false;
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    if self.interruptible && !any {
                        return Err(e);
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                break;
            }
            any = true;
            let (chunk, done) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let room = self.cap - line.bytes.len().min(self.cap);
            if chunk.len() > room {
                line.truncated = true;
            }
            line.bytes
                .extend_from_slice(&chunk[..chunk.len().min(room)]);
            let used = done.unwrap_or(buf.len());
            self.inner.consume(used);
            if done.is_some() {
                break;
            }
        }
        if line.bytes.last() == Some(&b'\r') && !line.truncated {
            line.bytes.pop();
        }
        Ok(any)
    }
}

/// robots.txt files already fetched, one per host, for `dedup --robots-dir DIR` (and `check`):
/// `DIR/<host>/robots.txt`, or `DIR/<host>:<port>/robots.txt` for a URL with a non-default
/// port — the layout `wget -x` and most mirrors write. Each file is read and compiled once.
/// A host without a file has no rules known here: its URLs pass (nothing is dropped for
/// robots' sake without a file that says so).
#[derive(Debug, Clone)]
pub struct RobotsDir {
    dir: std::path::PathBuf,
    agent: String,
    rules: std::collections::HashMap<String, Option<std::sync::Arc<crate::robots::AgentRules>>>,
}

impl RobotsDir {
    /// The files under `dir`, judged for the crawler whose user agent is `agent`.
    pub fn new(dir: impl Into<std::path::PathBuf>, agent: &str) -> RobotsDir {
        RobotsDir {
            dir: dir.into(),
            agent: agent.to_string(),
            rules: Default::default(),
        }
    }

    /// Whether `url` (canonical, absolute) is allowed by its host's file, if there is one.
    pub fn allowed(&mut self, url: &str) -> bool {
        let host = crate::url::lex::host_port(url);
        if host.is_empty() || host.contains(['/', '\\']) || host.starts_with('.') {
            return true;
        }
        if !self.rules.contains_key(host) {
            let path = self.dir.join(host).join("robots.txt");
            let rules = match std::fs::read(&path) {
                Ok(bytes) => Some(std::sync::Arc::new(crate::robots::AgentRules::compile(
                    &crate::robots::Robots::new(&bytes),
                    &self.agent,
                ))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "robots.txt not readable: its host's URLs pass");
                    None
                }
            };
            self.rules.insert(host.to_string(), rules);
        }
        self.rules[host].as_ref().is_none_or(|r| r.allowed(url))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], cap: usize) -> Vec<(Vec<u8>, bool)> {
        let mut r = LineReader::new(io::BufReader::with_capacity(7, input), cap);
        let mut l = Line::default();
        let mut out = Vec::new();
        while r.read_line(&mut l).unwrap() {
            out.push((l.bytes.clone(), l.truncated));
        }
        out
    }

    #[test]
    fn splits_and_caps() {
        let got = lines(b"a\r\n\nbcdefghijkl\nlast", 5);
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), false),
                (vec![], false),
                (b"bcdef".to_vec(), true),
                (b"last".to_vec(), false)
            ]
        );
        assert!(lines(b"", 5).is_empty());
        assert_eq!(
            lines(b"\xff\x00x\n", 10),
            vec![(b"\xff\x00x".to_vec(), false)]
        );
    }
}
