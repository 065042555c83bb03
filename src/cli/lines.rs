//! Line I/O of the line commands: the inputs read line by line or in batches (a quiet pipe's
//! results come out as its lines do), the checks made before anything is written, the output
//! file, JSON lines, the progress bar, and `dedup`'s emitter and summary.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, Result};

use super::exit;
use super::{Format, InputArgs, OutputArgs};
use crate::input::{Line, LineReader};
use crate::sieve::{BatchResult, Verdict};
use crate::url::Reason;

/// Write `s` and a newline to standard output. A closed pipe (`| head`) is an error (the run
/// exits 1, quietly: see `main`), never a panic as `println!` makes it.
pub(crate) fn out_line(s: &str) -> Result<()> {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    o.write_all(s.as_bytes())
        .and_then(|()| o.write_all(b"\n"))
        .and_then(|()| o.flush())
        .context("writing to standard output")
}

/// The inputs in order: `None` is stdin.
fn sources(input: &InputArgs) -> Vec<Option<&Path>> {
    if input.files.is_empty() {
        vec![None]
    } else {
        input
            .files
            .iter()
            .map(|p| (p.as_os_str() != "-").then_some(p.as_path()))
            .collect()
    }
}

fn source_name(src: Option<&Path>) -> String {
    src.map_or("stdin".into(), |p| p.display().to_string())
}

/// An input and its file descriptor (to ask whether a read would wait: [`would_wait`]).
struct Source {
    reader: BufReader<Box<dyn io::Read>>,
    fd: std::os::fd::RawFd,
}

fn open_source(src: Option<&Path>) -> Result<Source> {
    use std::os::fd::AsRawFd;
    Ok(match src {
        None => Source {
            reader: BufReader::with_capacity(1 << 16, Box::new(io::stdin().lock())),
            fd: io::stdin().as_raw_fd(),
        },
        Some(p) => {
            let f = File::open(p)
                .map_err(|e| exit::input(format!("cannot open {}: {e}", p.display())))?;
            let fd = f.as_raw_fd();
            Source {
                reader: BufReader::with_capacity(1 << 16, Box::new(f)),
                fd,
            }
        }
    })
}

/// Whether reading the next line from `r` may wait for its writer: nothing left in its buffer
/// and nothing ready on the descriptor (a pipe whose writer is quiet: `tail -f log | crawlsieve
/// dedup`). A regular file is always ready; the check is one `poll` per buffer of 64 KiB.
fn would_wait(r: &LineReader<BufReader<Box<dyn io::Read>>>, fd: std::os::fd::RawFd) -> bool {
    // A whole line is buffered: no wait. (Part of one, `url1\nur` then a pause from a
    // block-buffered writer: the read of its rest may wait — found by review.) 4 KiB left hold
    // a line end unless a line is that long: the scan runs only near a buffer's end (it cost
    // `check` 3% on every line).
    let buf = r.get_ref().buffer();
    if buf.len() >= 4096 || memchr::memchr(b'\n', buf).is_some() {
        return false;
    }
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 0
}

/// Iterate over every line of every input, in order: `f(Some(line))`; `f(None)` when the
/// input is quiet and the next read would wait for its writer — write out what is held, so a
/// pipe's results come out as its lines do, not at its end.
pub(super) fn for_each_line(
    input: &InputArgs,
    progress: Option<&Progress>,
    mut f: impl FnMut(Option<&Line>) -> Result<()>,
) -> Result<()> {
    let mut line = Line::default();
    for src in sources(input) {
        let s = open_source(src)?;
        let mut r = LineReader::new(s.reader, input.max_line_bytes);
        loop {
            if would_wait(&r, s.fd) {
                f(None)?;
            }
            if !r
                .read_line(&mut line)
                .with_context(|| format!("reading {}", source_name(src)))?
            {
                break;
            }
            strip_bom(&mut line);
            f(Some(&line))?;
            if let Some(p) = progress {
                p.tick(line.bytes.len() as u64 + 1);
            }
        }
    }
    Ok(())
}

/// A UTF-8 byte-order mark at the start of a line is no part of its candidate (it became
/// `%EF%BB%BFhttps://…`): Windows editors write one at the start of a file, and files joined
/// with `cat` carry theirs into the middle of the stream — stripped on every line.
fn strip_bom(line: &mut Line) {
    if line.bytes.starts_with(b"\xEF\xBB\xBF") {
        line.bytes.drain(..3);
    }
}

/// Lines a `dedup` batch holds: enough to overlap the filter's cache misses, small enough to
/// stay in L2 with their canonical forms.
const BATCH_LINES: usize = 512;

/// Iterate over the input in batches of up to [`BATCH_LINES`] lines, in order. Lines are read
/// straight into reused slots. `f(lines, quiet)`: `quiet` when the input is quiet and the next
/// read would wait for its writer (the batch is then short, possibly empty): deliver everything
/// held, so a pipe's new URLs come out as its lines do, not at its end.
///
/// With `stop` (a handler installed by [`crate::stage::signals::install_interrupting`]), a
/// SIGTERM/SIGINT ends the input early: the lines read so far are delivered, then `Ok(true)`;
/// a read waiting on a quiet pipe is interrupted for it. `Ok(false)`: the input ended.
pub(super) fn for_each_batch(
    input: &InputArgs,
    progress: Option<&Progress>,
    stop: Option<crate::stage::Stop>,
    mut f: impl FnMut(&[Line], bool) -> Result<()>,
) -> Result<bool> {
    let mut batch: Vec<Line> = (0..BATCH_LINES).map(|_| Line::default()).collect();
    let mut filled = 0;
    for src in sources(input) {
        let s = open_source(src)?;
        let mut r = LineReader::new(s.reader, input.max_line_bytes).interruptible(stop.is_some());
        loop {
            if stop.is_some_and(|s| s.requested()) {
                f(&batch[..filled], false)?;
                return Ok(true);
            }
            if would_wait(&r, s.fd) {
                f(&batch[..filled], true)?;
                filled = 0;
                // Wait for input in slices, looking at the stop between them: a signal that
                // came after the look above and before the read would not interrupt it.
                if let Some(stop) = stop {
                    while would_wait(&r, s.fd) {
                        if stop.requested() {
                            return Ok(true);
                        }
                        let mut p = libc::pollfd {
                            fd: s.fd,
                            events: libc::POLLIN,
                            revents: 0,
                        };
                        // SAFETY: one valid pollfd; a signal may end the wait early (EINTR).
                        unsafe { libc::poll(&mut p, 1, 100) };
                    }
                }
            }
            let more = match r.read_line(&mut batch[filled]) {
                // Only with `stop`, before any byte of a line: the loop's top decides.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                read => read.with_context(|| format!("reading {}", source_name(src)))?,
            };
            if more {
                strip_bom(&mut batch[filled]);
            }
            if more {
                if let Some(p) = progress {
                    p.tick(batch[filled].bytes.len() as u64 + 1);
                }
                filled += 1;
            }
            if filled == BATCH_LINES || (!more && filled > 0) {
                f(&batch[..filled], false)?;
                filled = 0;
            }
            if !more {
                break;
            }
        }
    }
    Ok(false)
}

/// Before anything is written: every input file can be opened, and `-o` is none of them (the
/// output is created, so emptied, before the inputs are read: `check -o in.txt in.txt` lost
/// the input, and a missing input was found only after `-o keep.txt` had emptied keep.txt).
pub(super) fn check_io(input: &InputArgs, o: &OutputArgs) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    // The output file, if it exists already (by device and inode: a hard link or another
    // spelling of the same path is the same file).
    let out_id = o
        .output
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .filter(|m| m.is_file())
        .map(|m| (m.dev(), m.ino()));
    let clash = |what: &str| {
        exit::usage(format!(
            "-o {} is also the input ({what}): it would be emptied before it is read (write to another file)",
            o.output.as_deref().unwrap_or(Path::new("")).display()
        ))
    };
    if let Some(id) = out_id {
        // `check -o urls.txt < urls.txt`: standard input is that very file.
        let stdin_id = std::fs::metadata("/proc/self/fd/0")
            .ok()
            .map(|m| (m.dev(), m.ino()));
        if sources(input).contains(&None) && stdin_id == Some(id) {
            return Err(clash("standard input"));
        }
    }
    for src in sources(input).into_iter().flatten() {
        let m = std::fs::metadata(src)
            .map_err(|e| exit::input(format!("cannot open {}: {e}", src.display())))?;
        if m.is_dir() {
            return Err(exit::input(format!(
                "{} is a directory: give the files in it (one candidate a line)",
                src.display()
            )));
        }
        if out_id == Some((m.dev(), m.ino())) {
            return Err(clash(&src.display().to_string()));
        }
    }
    Ok(())
}

pub(super) fn open_output(o: &OutputArgs) -> Result<Box<dyn Write>> {
    Ok(match &o.output {
        Some(p) => Box::new(Named {
            inner: BufWriter::with_capacity(
                1 << 16,
                File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
            ),
            name: p.display().to_string(),
        }),
        None => Box::new(Named {
            inner: BufWriter::with_capacity(1 << 16, io::stdout().lock()),
            name: "standard output".into(),
        }),
    })
}

/// A writer whose errors name the file (`writing out.jsonl: No space left on device`), of the
/// same kind (a closed pipe stays a closed pipe).
struct Named<W> {
    inner: W,
    name: String,
}

impl<W: Write> Named<W> {
    fn named(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("writing {}: {e}", self.name))
    }
}

impl<W: Write> Write for Named<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.named(e))
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf).map_err(|e| self.named(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.named(e))
    }
}

/// `{"input": ..., "verdict": ..., "reason": ..., "canonical": ...}` + newline, appended to `out`
/// (callers write the buffer out in large chunks: one `write` per line through `dyn Write` cost
/// more than the rules).
pub(super) fn write_json_line(
    out: &mut Vec<u8>,
    input: &[u8],
    verdict: &str,
    reason: Option<Reason>,
    canonical: Option<&str>,
) {
    out.extend_from_slice(b"{\"input\":");
    // Most lines are ASCII with nothing to escape: copied as they are, with no UTF-8 pass.
    if !push_plain_json(out, input) {
        match std::str::from_utf8(input) {
            Ok(s) => push_json_str(out, s),
            Err(_) => push_json_str(out, &String::from_utf8_lossy(input)),
        }
    }
    out.extend_from_slice(b",\"verdict\":\"");
    out.extend_from_slice(verdict.as_bytes());
    out.extend_from_slice(b"\",\"reason\":");
    match reason {
        Some(r) => {
            out.push(b'"');
            out.extend_from_slice(r.code().as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"canonical\":");
    match canonical {
        Some(c) => {
            if !push_plain_json(out, c.as_bytes()) {
                push_json_str(out, c)
            }
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b"}\n");
}

/// `b` as a JSON string when it is ASCII with no byte to escape (`"`, `\\`, controls): copied
/// whole, and `true`. Otherwise nothing is written and `false` (the caller escapes it).
/// Eight bytes at a time: the common line is 30–100 bytes of URL.
fn push_plain_json(out: &mut Vec<u8>, b: &[u8]) -> bool {
    use crate::url::{bytes_below, splat, zero_bytes, HIGH_BITS};
    // Whether any byte of `x` needs a look: non-ASCII, below 0x20, `"` or `\\` (the word
    // tricks of `url::lex`'s byte search, exact for "any").
    let attention = |x: u64| {
        (x & HIGH_BITS
            | bytes_below(x, 0x20)
            | zero_bytes(x ^ splat(b'"'))
            | zero_bytes(x ^ splat(b'\\')))
            != 0
    };
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        if attention(u64::from_le_bytes(c.try_into().expect("8 bytes"))) {
            return false;
        }
    }
    if chunks
        .remainder()
        .iter()
        .any(|&c| c >= 0x80 || JSON_ESCAPE[c as usize])
    {
        return false;
    }
    out.reserve(b.len() + 2);
    out.push(b'"');
    out.extend_from_slice(b);
    out.push(b'"');
    true
}

/// Bytes a JSON string must escape (RFC 8259: `"`, `\\`, U+0000–U+001F).
static JSON_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// `s` as a JSON string, byte for byte what `serde_json` writes (short escapes for `\n`, `\r`,
/// `\t`, `\b`, `\f`; `\u00xx` for the other controls; everything else verbatim).
fn push_json_str(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if !JSON_ESCAPE[c as usize] {
            continue;
        }
        out.extend_from_slice(&b[start..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// `k` and its noun, singular or plural: "1 page", "2 pages".
pub(super) fn count_of(k: impl Into<u64>, one: &str, many: &str) -> String {
    let k = k.into();
    format!("{k} {}", if k == 1 { one } else { many })
}

/// Output buffered by the caller is written out once it holds this much.
pub(super) const OUT_CHUNK: usize = 1 << 16;

/// A progress bar on stderr, only when it is a terminal and the input is large.
pub(super) struct Progress {
    bar: indicatif::ProgressBar,
    pending: std::cell::Cell<u64>,
}

impl Progress {
    pub(super) fn maybe(input: &InputArgs, quiet: bool) -> Option<Progress> {
        if quiet || !io::stderr().is_terminal() {
            return None;
        }
        let total: Option<u64> =
            if input.files.is_empty() || input.files.iter().any(|p| p.as_os_str() == "-") {
                None
            } else {
                Some(
                    input
                        .files
                        .iter()
                        .filter_map(|p| std::fs::metadata(p).ok())
                        .map(|m| m.len())
                        .sum(),
                )
            };
        let bar = match total {
            Some(t) if t >= 8 << 20 => indicatif::ProgressBar::new(t).with_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .ok()?,
            ),
            Some(_) => return None,
            None => indicatif::ProgressBar::new_spinner().with_style(
                indicatif::ProgressStyle::with_template("{spinner} {bytes} read, {bytes_per_sec}")
                    .ok()?,
            ),
        };
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
        Some(Progress {
            bar,
            pending: std::cell::Cell::new(0),
        })
    }

    fn tick(&self, bytes: u64) {
        let p = self.pending.get() + bytes;
        if p >= 1 << 20 {
            self.bar.inc(p);
            self.pending.set(0);
        } else {
            self.pending.set(p);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// Counts for the `dedup` summary.
#[derive(Debug)]
pub struct Summary {
    /// Lines read.
    pub lines: u64,
    /// New URLs emitted.
    pub new: u64,
    /// Canonical duplicates.
    pub duplicates: u64,
    /// Of the new URLs, those adopted from an ended run's outbox (`dedup --redis`).
    pub adopted: u64,
    /// Held for robots.txt (`dedup --redis` with `--robots`): not marked seen, judged again
    /// when run again.
    pub held: u64,
    /// Rejections, indexed by [`Reason::index`].
    pub rejected: [u64; Reason::ALL.len()],
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            lines: 0,
            new: 0,
            duplicates: 0,
            adopted: 0,
            held: 0,
            rejected: [0; Reason::ALL.len()],
        }
    }
}

impl Summary {
    pub(super) fn print(&self, secs: f64, w: &mut dyn Write) -> io::Result<()> {
        let rejected: u64 = self.rejected.iter().sum();
        writeln!(
            w,
            "crawlsieve dedup: {} lines, {} new, {} duplicate, {} rejected in {:.2} s ({:.0} lines/s)",
            self.lines,
            self.new,
            self.duplicates,
            rejected,
            secs,
            self.lines as f64 / secs.max(1e-9)
        )?;
        if self.adopted > 0 {
            writeln!(
                w,
                "  {} of the new URLs were adopted from an ended run's outbox",
                self.adopted
            )?;
        }
        if self.held > 0 {
            writeln!(
                w,
                "  {} held: their site's robots.txt could not be read yet (not marked seen: run the same input again later)",
                self.held
            )?;
        }
        let mut by: Vec<(Reason, u64)> = Reason::ALL
            .iter()
            .map(|r| (*r, self.rejected[r.index()]))
            .filter(|x| x.1 > 0)
            .collect();
        by.sort_by_key(|x| std::cmp::Reverse(x.1));
        for (r, n) in by {
            writeln!(w, "  rejected {:<22} {n}", r.code())?;
        }
        let no_base = self.rejected[Reason::NoBase.index()];
        if no_base > 0 {
            writeln!(
                w,
                "  {no_base} relative line(s) had nothing to resolve them against: give --base URL (the page they were found on)"
            )?;
        }
        Ok(())
    }
}

/// Writes verdicts out and counts them.
pub(super) struct Emitter {
    pub(super) out: Box<dyn Write>,
    pub(super) sum: Summary,
    pub(super) format: Format,
    /// One batch's output, written with one call.
    pub(super) buf: Vec<u8>,
}

impl Emitter {
    pub(super) fn emit(&mut self, res: &BatchResult, lines: &[Line]) -> Result<()> {
        for (i, line) in lines.iter().enumerate() {
            let v = res.verdict(i);
            self.sum.lines += 1;
            match v {
                Verdict::New => self.sum.new += 1,
                Verdict::Duplicate => self.sum.duplicates += 1,
                Verdict::Rejected(r) => self.sum.rejected[r.index()] += 1,
                // (`dedup` publishes every new URL: nothing is unpublishable.)
                Verdict::Held | Verdict::Unpublishable => self.sum.held += 1,
            }
            self.format_line(&line.bytes, v, res.canonical(i));
        }
        // One write per batch; a batch is emitted whole before its URLs are confirmed.
        self.write_out()
    }

    /// Format one verdict into the batch's buffer.
    pub(super) fn format_line(&mut self, input: &[u8], v: Verdict, canonical: Option<&str>) {
        match self.format {
            Format::Plain => {
                if let (Verdict::New, Some(c)) = (v, canonical) {
                    self.buf.extend_from_slice(c.as_bytes());
                    self.buf.push(b'\n');
                }
            }
            Format::Jsonl => {
                write_json_line(&mut self.buf, input, v.as_str(), v.reason(), canonical)
            }
        }
    }

    /// Write the buffered batch with one call.
    pub(super) fn write_out(&mut self) -> Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_are_what_serde_json_writes() {
        let all_controls: String = (0u8..0x20).map(char::from).collect();
        for s in [
            "",
            "plain",
            "http://h/a?b=\"c\"&d=\\e",
            "tab\there\nnew\rline\u{8}\u{c}",
            "\u{7f}\u{0}\u{1f} end",
            "中文/ü/😀",
            all_controls.as_str(),
        ] {
            let mut out = Vec::new();
            push_json_str(&mut out, s);
            assert_eq!(out, serde_json::to_vec(s).unwrap(), "{s:?}");
            assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), s);
        }
        let mut line = Vec::new();
        write_json_line(
            &mut line,
            b"a\xffb",
            "reject",
            Some(Reason::InvalidUtf8),
            None,
        );
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["input"], "a\u{fffd}b");
        assert_eq!(v["reason"], "invalid_utf8");
        assert!(v["canonical"].is_null());
        assert_eq!(line.last(), Some(&b'\n'));
    }

    /// The eight-bytes-at-a-time copy says "plain" exactly when nothing needs escaping: every
    /// byte value at every position of a 17-byte line (two words and a remainder), against
    /// serde_json.
    #[test]
    fn the_plain_copy_is_exact_for_every_byte_at_every_position() {
        for pos in 0..17 {
            for v in 0..=255u8 {
                let mut b = b"https://a.b/cdefg".to_vec();
                b[pos] = v;
                let mut out = Vec::new();
                let plain = push_plain_json(&mut out, &b);
                let needs = !(0x20..0x80).contains(&v) || v == b'"' || v == b'\\';
                assert_eq!(plain, !needs, "byte {v:#x} at {pos}");
                if plain {
                    let s = std::str::from_utf8(&b).unwrap();
                    assert_eq!(out, serde_json::to_vec(s).unwrap());
                } else {
                    assert!(out.is_empty());
                }
            }
        }
    }
}
