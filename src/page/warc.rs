//! Reading `response` records from a WARC file (ISO 28500, WARC/1.0 and 1.1), plain or gzipped
//! (a `.warc.gz` is a series of gzip members), as crawlers archive pages.
//!
//! Redirects are resolved inside the archive: a 3xx response whose `Location` leads (within 10
//! hops) to another response of the archive becomes a page with that final URL, status and body,
//! and the chain it followed — which is what the R1 rule groups.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};

use crate::input::{Line, LineReader};

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

/// A record that could not be read; the records around it are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    /// 1-based record number (records counted by their version lines; a damaged span between
    /// two records counts as one).
    pub record: usize,
    /// Its `WARC-Target-URI`, when the header was read.
    pub uri: Option<String>,
    /// What is wrong.
    pub why: String,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "record {}", self.record)?;
        if let Some(u) = &self.uri {
            write!(f, " ({u})")?;
        }
        write!(f, ": {}", self.why)
    }
}

/// What a WARC held: its responses, and the records that could not be read.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Warc {
    /// The `response` records, in order.
    pub responses: Vec<Response>,
    /// Damaged, truncated or oversized records, in order.
    pub errors: Vec<RecordError>,
}

/// A record block larger than this is skipped (read through, not kept), with an error.
pub const MAX_BLOCK_BYTES: u64 = 64 << 20;
/// A `Content-Encoding: gzip` body may decode to at most this many bytes (a gzip bomb of 1 GB
/// stops here).
pub const MAX_DECODED_BYTES: u64 = 64 << 20;
/// A header line longer than this is damage, not a header.
const MAX_LINE_BYTES: usize = 64 << 10;
/// Header fields per record.
const MAX_FIELDS: usize = 1024;

/// One line (without its terminator), at most [`MAX_LINE_BYTES`] of it kept; `false` at the end.
fn read_line(r: &mut dyn BufRead, line: &mut Line) -> std::io::Result<bool> {
    LineReader::new(r, MAX_LINE_BYTES).read_line(line)
}

fn trim(b: &[u8]) -> &[u8] {
    let mut b = b;
    while let [rest @ .., b'\r' | b'\n'] = b {
        b = rest;
    }
    b
}

/// Every `response` record of `input` (gzip detected by its magic bytes), and an error for each
/// record that could not be read. Never fails as a whole: a damaged record is reported and
/// reading resumes at the next `WARC/` version line; a truncated record or an unreadable stream
/// ends the reading with the records before it kept. Memory is bounded by
/// [`MAX_BLOCK_BYTES`] per record and [`MAX_DECODED_BYTES`] per decoded body.
pub fn read(input: impl Read) -> Warc {
    let mut out = Warc::default();
    let mut r = BufReader::new(input);
    let gz = match r.fill_buf() {
        Ok(b) => b.starts_with(&[0x1f, 0x8b]),
        Err(e) => {
            out.errors.push(RecordError {
                record: 1,
                uri: None,
                why: format!("unreadable: {e}"),
            });
            return out;
        }
    };
    let mut r: Box<dyn BufRead> = if gz {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(r)))
    } else {
        Box::new(r)
    };
    let mut record = 0;
    // Set while skipping damage: the next version line starts a record again.
    let mut resync = false;
    let mut line = Line::default();
    loop {
        match read_record(&mut r, &mut line, &mut record, &mut resync) {
            Ok(Step::Response(resp)) => out.responses.push(resp),
            Ok(Step::Other) => {}
            Ok(Step::Bad(e)) => out.errors.push(e),
            Ok(Step::End) => break,
            Err(e) => {
                // The stream itself failed (I/O, a corrupt gzip member): keep what was read.
                out.errors.push(RecordError {
                    record: record.max(1),
                    uri: None,
                    why: format!("the stream ends unreadable: {e}"),
                });
                break;
            }
        }
    }
    out
}

enum Step {
    Response(Response),
    Other,
    Bad(RecordError),
    End,
}

fn read_record(
    r: &mut dyn BufRead,
    line: &mut Line,
    record: &mut usize,
    resync: &mut bool,
) -> std::io::Result<Step> {
    if let Some(step) = to_version_line(r, line, record, resync)? {
        return Ok(step);
    }
    *record += 1;
    let record = *record;
    let headers = match read_headers(r, line, record, resync)? {
        Ok(h) => h,
        Err(e) => return Ok(Step::Bad(e)),
    };
    let block = match read_block(r, &headers, record, resync)? {
        Ok(b) => b,
        Err(e) => return Ok(Step::Bad(e)),
    };
    let is_response = headers.get("warc-type").is_some_and(|t| t == "response")
        && headers
            .get("content-type")
            .is_some_and(|t| t.starts_with("application/http"));
    if !is_response {
        return Ok(Step::Other);
    }
    let uri = headers
        .get("warc-target-uri")
        .map(|u| u.trim_matches(['<', '>']).to_string())
        .unwrap_or_default();
    Ok(match parse_http(uri, &block) {
        Ok(resp) => Step::Response(resp),
        Err(why) => Step::Bad(bad(record, &headers, why)),
    })
}

/// Read up to the next version line; `None` there, else the step to return (the end, or a
/// damaged span, after which `resync` is set).
fn to_version_line(
    r: &mut dyn BufRead,
    line: &mut Line,
    record: &mut usize,
    resync: &mut bool,
) -> std::io::Result<Option<Step>> {
    // Skip the blank lines between records (and, after damage, everything up to a version line).
    loop {
        if !read_line(r, line)? {
            return Ok(Some(Step::End));
        }
        let l = trim(&line.bytes);
        if l.starts_with(b"WARC/") {
            *resync = false;
            break;
        }
        if l.is_empty() || *resync {
            continue;
        }
        *record += 1;
        *resync = true;
        return Ok(Some(Step::Bad(RecordError {
            record: *record,
            uri: None,
            why: format!(
                "expected a WARC version line, found {:?}; skipped to the next record",
                String::from_utf8_lossy(&l[..l.len().min(40)])
            ),
        })));
    }
    Ok(None)
}

/// The error of record `record`, naming its target URI when the header gave one.
fn bad(record: usize, headers: &HashMap<String, String>, why: String) -> RecordError {
    RecordError {
        record,
        uri: headers
            .get("warc-target-uri")
            .map(|u| u.trim_matches(['<', '>']).to_string()),
        why,
    }
}

/// The header fields of record `record` (names lower-cased), or why they could not be read.
fn read_headers(
    r: &mut dyn BufRead,
    line: &mut Line,
    record: usize,
    resync: &mut bool,
) -> std::io::Result<Result<HashMap<String, String>, RecordError>> {
    let mut headers: HashMap<String, String> = HashMap::new();
    loop {
        if !read_line(r, line)? {
            return Ok(Err(bad(record, &headers, "truncated header".into())));
        }
        if line.truncated || headers.len() >= MAX_FIELDS {
            *resync = true;
            return Ok(Err(bad(
                record,
                &headers,
                "a header line over 64 KiB or over 1,024 fields; skipped to the next record".into(),
            )));
        }
        let l = trim(&line.bytes);
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
    Ok(Ok(headers))
}

/// The block of record `record` (its `Content-Length` bytes), or why it is not kept: no
/// length, over [`MAX_BLOCK_BYTES`] (read through), or truncated.
fn read_block(
    r: &mut dyn BufRead,
    headers: &HashMap<String, String>,
    record: usize,
    resync: &mut bool,
) -> std::io::Result<Result<Vec<u8>, RecordError>> {
    let Some(len) = headers
        .get("content-length")
        .and_then(|v| v.parse::<u64>().ok())
    else {
        *resync = true;
        return Ok(Err(bad(
            record,
            headers,
            "no Content-Length; skipped to the next record".into(),
        )));
    };
    if len > MAX_BLOCK_BYTES {
        let skipped = std::io::copy(&mut (&mut *r).take(len), &mut std::io::sink())?;
        if skipped < len {
            return Ok(Err(bad(
                record,
                headers,
                format!("truncated block ({skipped} of {len} bytes)"),
            )));
        }
        return Ok(Err(bad(
            record,
            headers,
            format!("a block of {len} bytes, over the {MAX_BLOCK_BYTES}-byte limit; skipped"),
        )));
    }
    let mut block = Vec::with_capacity(len as usize);
    (&mut *r).take(len).read_to_end(&mut block)?;
    if (block.len() as u64) < len {
        return Ok(Err(bad(
            record,
            headers,
            format!("truncated block ({} of {len} bytes)", block.len()),
        )));
    }
    Ok(Ok(block))
}

/// An HTTP/1.x response message → [`Response`], or why it is not one.
fn parse_http(uri: String, block: &[u8]) -> Result<Response, String> {
    let end = memchr::memmem::find(block, b"\r\n\r\n")
        .map(|i| (i, i + 4))
        .or_else(|| memchr::memmem::find(block, b"\n\n").map(|i| (i, i + 2)))
        .ok_or("no end of the HTTP header")?;
    let head = String::from_utf8_lossy(&block[..end.0]);
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("no HTTP status line")?;
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
        let read = flate2::read::MultiGzDecoder::new(&body[..])
            .take(MAX_DECODED_BYTES + 1)
            .read_to_end(&mut d);
        if d.len() as u64 > MAX_DECODED_BYTES {
            return Err(format!(
                "the gzip body decodes to more than {MAX_DECODED_BYTES} bytes"
            ));
        }
        // A body that is not gzip after all is kept as it is.
        if read.is_ok() {
            body = d;
        }
    }
    Ok(Response {
        uri,
        status,
        content_type: h.get("content-type").cloned().unwrap_or_default(),
        location: h.get("location").cloned(),
        body,
    })
}

/// A chunked body, de-chunked; a damaged or truncated chunk ends it (sizes are checked: a size
/// of `FFFFFFFFFFFFFFFF` is damage, not an overflow).
fn dechunk(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let Some(nl) = memchr::memchr(b'\n', &b[i..]) else {
            break;
        };
        let size_line = String::from_utf8_lossy(&b[i..i + nl]);
        let Ok(size) = usize::from_str_radix(size_line.trim().split(';').next().unwrap_or(""), 16)
        else {
            break;
        };
        i += nl + 1;
        if size == 0 || size > b.len() - i {
            break;
        }
        out.extend_from_slice(&b[i..i + size]);
        i = (i + size).saturating_add(2).min(b.len()); // the chunk's CRLF
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
        let plain = read(warc.as_bytes()).responses;
        assert_eq!(plain.len(), 2);
        assert_eq!(plain[1].body, b"hello world");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, warc.as_bytes()).unwrap();
        let zipped = read(&gz.finish().unwrap()[..]).responses;
        assert_eq!(zipped, plain);
        let r = resolve(&plain);
        assert_eq!(r[0].1, 1, "the redirect resolves to the archived page");
        assert_eq!(r[0].2, ["http://a.example/old", "http://a.example/new"]);
        let not_warc = read(&b"GET / HTTP/1.1\r\n"[..]);
        assert!(not_warc.responses.is_empty());
        assert_eq!(not_warc.errors.len(), 1);
        assert_eq!(not_warc.errors[0].record, 1);
    }

    fn gz(b: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut z, b).unwrap();
        z.finish().unwrap()
    }

    /// Issue 14: hostile archives end in per-record errors, bounded, the other records kept.
    #[test]
    fn hostile_records_are_reported_and_the_others_kept() {
        let good = |n: usize| {
            record(
                &format!("http://a.example/{n}"),
                &format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>page {n}"),
            )
        };
        // A chunk size of 2^64 - 1: damage, not an overflow panic.
        let overflow = record(
            "http://a.example/chunk",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nFFFFFFFFFFFFFFFF\r\nxx\r\n0\r\n\r\n",
        );
        // A gzip bomb: 100 MB of zeros, about 100 KB compressed.
        let bomb_body = gz(&vec![0u8; 100 << 20]);
        let mut bomb_http =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n"
                .to_vec();
        bomb_http.extend_from_slice(&bomb_body);
        let mut bomb = format!(
            "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/bomb\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
            bomb_http.len()
        )
        .into_bytes();
        bomb.extend_from_slice(&bomb_http);
        bomb.extend_from_slice(b"\r\n\r\n");
        let garbage = "this is not a record\r\nnor this\r\n\r\n".to_string();
        let no_length =
            "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/nolen\r\n\r\nxyz\r\n\r\n";
        let huge = "WARC/1.0\r\nWARC-Type: resource\r\nContent-Length: 99999999999\r\n\r\nshort";
        let mut warc = Vec::new();
        for part in [
            good(1).into_bytes(),
            overflow.into_bytes(),
            good(2).into_bytes(),
            bomb,
            garbage.into_bytes(),
            good(3).into_bytes(),
            no_length.as_bytes().to_vec(),
            good(4).into_bytes(),
            huge.as_bytes().to_vec(),
        ] {
            warc.extend_from_slice(&part);
        }
        for input in [warc.clone(), gz(&warc)] {
            let w = read(&input[..]);
            let uris: Vec<&str> = w.responses.iter().map(|r| r.uri.as_str()).collect();
            assert_eq!(
                uris,
                [
                    "http://a.example/1",
                    "http://a.example/chunk",
                    "http://a.example/2",
                    "http://a.example/3",
                    "http://a.example/4"
                ],
                "{:?}",
                w.errors
            );
            assert_eq!(
                w.responses[1].body, b"hello",
                "the chunks before the damage"
            );
            let why: Vec<String> = w.errors.iter().map(|e| e.to_string()).collect();
            assert_eq!(w.errors.len(), 4, "{why:?}");
            assert!(
                why[0].contains("bomb") && why[0].contains("decodes to more than"),
                "{why:?}"
            );
            assert!(why[1].contains("expected a WARC version line"), "{why:?}");
            assert!(
                why[2].contains("nolen") && why[2].contains("no Content-Length"),
                "{why:?}"
            );
            assert!(
                why[3].contains("truncated block (5 of 99999999999"),
                "{why:?}"
            );
        }
        // A record cut short at the end keeps the records before it.
        let cut = [good(1), good(2)].concat();
        let w = read(&cut.as_bytes()[..cut.len() - 10]);
        assert_eq!(w.responses.len(), 1);
        assert!(
            w.errors[0].why.starts_with("truncated block"),
            "{:?}",
            w.errors
        );
        // A gzip stream cut short: what was decoded is kept.
        let z = gz([good(1), good(2), good(3)].concat().as_bytes());
        let w = read(&z[..z.len() - 20]);
        assert!(!w.responses.is_empty() && !w.errors.is_empty(), "{w:?}");
    }
}
