//! Reading `response` records from a WARC file (ISO 28500, WARC/1.0 and 1.1), plain or gzipped
//! (a `.warc.gz` is a series of gzip members), as crawlers archive pages.
//!
//! Redirects are resolved inside the archive: a 3xx response whose `Location` leads (within 10
//! hops) to another response of the archive becomes a page with that final URL, status and body,
//! and the chain it followed — which is what the R1 rule groups.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};

/// One HTTP response from the archive.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// `WARC-Target-URI`.
    pub uri: String,
    /// HTTP status.
    pub status: u16,
    /// The response's Content-Type.
    pub content_type: String,
    /// `Location`, for redirects.
    pub location: Option<String>,
    /// The payload (de-chunked; gzip content-encoding decoded).
    pub body: Vec<u8>,
}

/// A WARC that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum WarcError {
    /// I/O.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Not WARC, or a damaged record.
    #[error("record {record}: {why}")]
    Format {
        /// 1-based record number.
        record: usize,
        /// What is wrong.
        why: String,
    },
}

fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    buf.clear();
    r.read_until(b'\n', buf)
}

fn trim(b: &[u8]) -> &[u8] {
    let mut b = b;
    while let [rest @ .., b'\r' | b'\n'] = b {
        b = rest;
    }
    b
}

/// Every `response` record of `input` (gzip detected by its magic bytes).
pub fn responses(input: impl Read) -> Result<Vec<Response>, WarcError> {
    let mut r = BufReader::new(input);
    let gz = r.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    let mut r: Box<dyn BufRead> = if gz {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(r)))
    } else {
        Box::new(r)
    };
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut record = 0;
    loop {
        // Skip the blank lines between records.
        let n = loop {
            let n = read_line(&mut r, &mut line)?;
            if n == 0 || !trim(&line).is_empty() {
                break n;
            }
        };
        if n == 0 {
            break;
        }
        record += 1;
        let bad = |why: String| WarcError::Format { record, why };
        if !trim(&line).starts_with(b"WARC/") {
            return Err(bad(format!(
                "expected a WARC version line, found {:?}",
                String::from_utf8_lossy(&line[..line.len().min(40)])
            )));
        }
        let mut headers: HashMap<String, String> = HashMap::new();
        loop {
            if read_line(&mut r, &mut line)? == 0 {
                return Err(bad("truncated header".into()));
            }
            let l = trim(&line);
            if l.is_empty() {
                break;
            }
            if let Some(i) = l.iter().position(|&c| c == b':') {
                headers.insert(
                    String::from_utf8_lossy(&l[..i]).trim().to_ascii_lowercase(),
                    String::from_utf8_lossy(&l[i + 1..]).trim().to_string(),
                );
            }
        }
        let len: u64 = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad("no Content-Length".into()))?;
        let mut block = Vec::with_capacity(len.min(1 << 26) as usize);
        (&mut r).take(len).read_to_end(&mut block)?;
        if (block.len() as u64) < len {
            return Err(bad("truncated block".into()));
        }
        let is_response = headers.get("warc-type").is_some_and(|t| t == "response")
            && headers
                .get("content-type")
                .is_some_and(|t| t.starts_with("application/http"));
        if is_response {
            let uri = headers
                .get("warc-target-uri")
                .map(|u| u.trim_matches(['<', '>']).to_string())
                .unwrap_or_default();
            if let Some(resp) = parse_http(uri, &block) {
                out.push(resp);
            }
        }
    }
    Ok(out)
}

/// An HTTP/1.x response message → [`Response`]; `None` when it is not one.
fn parse_http(uri: String, block: &[u8]) -> Option<Response> {
    let end = block
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4))
        .or_else(|| {
            block
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, i + 2))
        })?;
    let head = String::from_utf8_lossy(&block[..end.0]);
    let mut lines = head.lines();
    let status: u16 = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let mut h: HashMap<String, String> = HashMap::new();
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            h.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let mut body = block[end.1..].to_vec();
    if h.get("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        body = dechunk(&body);
    }
    if h.get("content-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"))
    {
        let mut d = Vec::new();
        if flate2::read::MultiGzDecoder::new(&body[..])
            .read_to_end(&mut d)
            .is_ok()
        {
            body = d;
        }
    }
    Some(Response {
        uri,
        status,
        content_type: h.get("content-type").cloned().unwrap_or_default(),
        location: h.get("location").cloned(),
        body,
    })
}

fn dechunk(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let Some(nl) = b[i..].iter().position(|&c| c == b'\n') else {
            break;
        };
        let size_line = String::from_utf8_lossy(&b[i..i + nl]);
        let Ok(size) = usize::from_str_radix(size_line.trim().split(';').next().unwrap_or(""), 16)
        else {
            break;
        };
        i += nl + 1;
        if size == 0 || i + size > b.len() {
            break;
        }
        out.extend_from_slice(&b[i..i + size]);
        i += size + 2; // the chunk's CRLF
    }
    out
}

/// Follow redirects inside the archive: (response index, chain of URLs followed) per response
/// that starts a page — every response; a redirect whose target is archived resolves to it.
pub fn resolve(responses: &[Response]) -> Vec<(usize, usize, Vec<String>)> {
    let by_uri: HashMap<&str, usize> = responses
        .iter()
        .enumerate()
        .map(|(i, r)| (r.uri.as_str(), i))
        .collect();
    (0..responses.len())
        .map(|start| {
            let mut at = start;
            let mut chain = vec![responses[start].uri.clone()];
            for _ in 0..10 {
                let r = &responses[at];
                let next = match (&r.location, (300..400).contains(&r.status)) {
                    (Some(loc), true) => url::Url::parse(&r.uri)
                        .and_then(|b| b.join(loc))
                        .ok()
                        .and_then(|u| by_uri.get(u.as_str()).copied()),
                    _ => None,
                };
                match next {
                    Some(n) if n != at => {
                        at = n;
                        chain.push(responses[n].uri.clone());
                    }
                    _ => break,
                }
            }
            (start, at, chain)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(uri: &str, http: &str) -> String {
        format!(
            "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
            http.len()
        )
    }

    #[test]
    fn reads_plain_and_gzipped_records_and_follows_redirects() {
        let warc = [
            "WARC/1.0\r\nWARC-Type: warcinfo\r\nContent-Length: 4\r\n\r\nabcd\r\n\r\n".to_string(),
            record("http://a.example/old", "HTTP/1.1 301 Moved\r\nLocation: /new\r\n\r\n"),
            record(
                "http://a.example/new",
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
            ),
        ]
        .concat();
        let plain = responses(warc.as_bytes()).unwrap();
        assert_eq!(plain.len(), 2);
        assert_eq!(plain[1].body, b"hello world");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, warc.as_bytes()).unwrap();
        let zipped = responses(&gz.finish().unwrap()[..]).unwrap();
        assert_eq!(zipped, plain);
        let r = resolve(&plain);
        assert_eq!(r[0].1, 1, "the redirect resolves to the archived page");
        assert_eq!(r[0].2, ["http://a.example/old", "http://a.example/new"]);
        assert!(matches!(
            responses(&b"GET / HTTP/1.1\r\n"[..]),
            Err(WarcError::Format { record: 1, .. })
        ));
    }
}
