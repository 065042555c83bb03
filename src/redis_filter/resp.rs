//! The hot path's wire format: check-and-set batches are encoded straight into RESP and their
//! replies (integers and arrays of integers) parsed into one flat buffer.
//!
//! Profiling the first version (redis-rs `Cmd` + `Value`) showed the client spending more time
//! than Redis: per-argument `Vec` pushes, a copy of every command into the pipeline, and a
//! generic parser allocating a `Value` per reply. On a single node the batch now goes through
//! this encoder over a plain socket; on a cluster the same [`Batch`] builds redis-rs commands,
//! which route by slot and follow MOVED/ASK.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use redis::Cmd;

/// A pipeline being built: raw RESP for a single node, or redis-rs commands for a cluster.
pub struct Batch {
    raw: bool,
    pub(crate) resp: Vec<u8>,
    pub(crate) cmds: Vec<Cmd>,
    pub(crate) n: usize,
}

impl Batch {
    /// An empty batch; `raw` = encode RESP bytes.
    pub fn new(raw: bool) -> Batch {
        Batch {
            raw,
            resp: Vec::new(),
            cmds: Vec::new(),
            n: 0,
        }
    }

    /// Start a command of `nargs` arguments, the name included.
    pub fn cmd(&mut self, name: &str, nargs: usize) {
        self.n += 1;
        if self.raw {
            self.resp.push(b'*');
            self.resp
                .extend_from_slice(itoa::Buffer::new().format(nargs).as_bytes());
            self.resp.extend_from_slice(b"\r\n");
            self.arg(name.as_bytes());
        } else {
            self.cmds.push(redis::cmd(name));
        }
    }

    /// A bytes argument of the current command.
    pub fn arg(&mut self, a: &[u8]) {
        if self.raw {
            self.resp.push(b'$');
            self.resp
                .extend_from_slice(itoa::Buffer::new().format(a.len()).as_bytes());
            self.resp.extend_from_slice(b"\r\n");
            self.resp.extend_from_slice(a);
            self.resp.extend_from_slice(b"\r\n");
        } else {
            self.cmds.last_mut().expect("cmd() first").arg(a);
        }
    }

    /// An integer argument of the current command.
    pub fn int(&mut self, v: i64) {
        let mut b = itoa::Buffer::new();
        self.arg(b.format(v).as_bytes());
    }

    /// Whether it encodes raw RESP.
    pub fn is_raw(&self) -> bool {
        self.raw
    }

    /// Number of commands.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there is no command.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Empty it for reuse.
    pub fn clear(&mut self) {
        self.resp.clear();
        self.cmds.clear();
        self.n = 0;
    }
}

/// Replies of a batch: command `i`'s integers are `ints[spans[i].0..spans[i].1]` (an integer
/// reply is one, an array of integers is many, nil is none).
#[derive(Default)]
pub struct Replies {
    ints: Vec<i64>,
    spans: Vec<(usize, usize)>,
}

impl Replies {
    /// The integers of command `i`.
    pub fn get(&self, i: usize) -> &[i64] {
        let (a, b) = self.spans[i];
        &self.ints[a..b]
    }

    /// The single integer of command `i` (0 for nil).
    pub fn int(&self, i: usize) -> i64 {
        self.get(i).first().copied().unwrap_or(0)
    }

    pub(crate) fn clear(&mut self) {
        self.ints.clear();
        self.spans.clear();
    }

    /// Append the replies of `other` (a second round trip of the same exchange).
    pub(crate) fn append(&mut self, other: &Replies) {
        let base = self.ints.len();
        self.ints.extend_from_slice(&other.ints);
        self.spans
            .extend(other.spans.iter().map(|&(a, b)| (a + base, b + base)));
    }

    /// Number of replies.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub(crate) fn push_value(&mut self, v: &redis::Value) -> Result<(), String> {
        let start = self.ints.len();
        match v {
            redis::Value::Int(i) => self.ints.push(*i),
            redis::Value::Nil => {}
            redis::Value::Array(items) => {
                for it in items {
                    match it {
                        redis::Value::Int(i) => self.ints.push(*i),
                        redis::Value::Nil => self.ints.push(0),
                        other => return Err(format!("unexpected reply element {other:?}")),
                    }
                }
            }
            redis::Value::Okay | redis::Value::SimpleString(_) => {}
            redis::Value::BulkString(b) => self.ints.push(
                std::str::from_utf8(b)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(i64::MIN),
            ),
            other => return Err(format!("unexpected reply {other:?}")),
        }
        self.spans.push((start, self.ints.len()));
        Ok(())
    }
}

/// Why a raw exchange failed.
#[derive(Debug)]
pub enum RawError {
    /// Socket error or timeout: the connection is unusable.
    Io(io::Error),
    /// Redis answered `-CODE message` to command `index`; the other commands ran.
    Server(String),
    /// Redis answered something this parser does not expect.
    Protocol(String),
}

/// A plain TCP connection used for the hot path on a single node.
pub struct RawConn {
    stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
}

impl RawConn {
    /// Connect, authenticate and select the database of `info`; `None` for TLS or Unix sockets
    /// (redis-rs keeps serving those).
    pub fn connect(
        info: &redis::ConnectionInfo,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Option<io::Result<RawConn>> {
        let (host, port) = match info.addr() {
            redis::ConnectionAddr::Tcp(h, p) => (h.clone(), *p),
            _ => return None,
        };
        Some((|| {
            use std::net::ToSocketAddrs;
            let addr = (host.as_str(), port)
                .to_socket_addrs()?
                .next()
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))?;
            let stream = TcpStream::connect_timeout(&addr, connect_timeout)?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(timeout))?;
            stream.set_write_timeout(Some(timeout))?;
            let mut c = RawConn {
                stream,
                buf: Vec::with_capacity(1 << 16),
                pos: 0,
            };
            let r = info.redis_settings();
            let mut hello = Batch::new(true);
            if let Some(pw) = r.password() {
                match r.username() {
                    Some(u) => {
                        hello.cmd("AUTH", 3);
                        hello.arg(u.as_bytes());
                    }
                    None => hello.cmd("AUTH", 2),
                }
                hello.arg(pw.as_bytes());
            }
            if r.db() != 0 {
                hello.cmd("SELECT", 2);
                hello.int(r.db());
            }
            if !hello.is_empty() {
                let mut rep = Replies::default();
                c.exec(&hello, &mut rep).map_err(|e| match e {
                    RawError::Io(e) => e,
                    RawError::Server(m) | RawError::Protocol(m) => {
                        io::Error::new(io::ErrorKind::PermissionDenied, m)
                    }
                })?;
            }
            Ok(c)
        })())
    }

    /// Send the batch and parse its replies into `out`. A server error in one reply is
    /// returned after all replies were read (the connection stays usable).
    pub fn exec(&mut self, batch: &Batch, out: &mut Replies) -> Result<(), RawError> {
        self.send(batch)?;
        self.recv(batch.n, out)
    }

    /// Send a batch without waiting for its replies (read them, in order, with [`RawConn::recv`]).
    pub fn send(&mut self, batch: &Batch) -> Result<(), RawError> {
        self.stream.write_all(&batch.resp).map_err(RawError::Io)
    }

    /// Read the replies of `n` commands sent earlier.
    pub fn recv(&mut self, n: usize, out: &mut Replies) -> Result<(), RawError> {
        out.clear();
        let mut first_err = None;
        for _ in 0..n {
            let start = out.ints.len();
            match self.reply(out) {
                Ok(()) => {}
                Err(RawError::Server(m)) => {
                    first_err.get_or_insert(RawError::Server(m));
                }
                Err(e) => return Err(e),
            }
            out.spans.push((start, out.ints.len()));
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn line(&mut self) -> Result<(usize, usize), RawError> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.pos..]) {
                let start = self.pos;
                let end = self.pos + i;
                self.pos = end + 1;
                if end == start || self.buf[end - 1] != b'\r' {
                    return Err(RawError::Protocol("line without CRLF".into()));
                }
                return Ok((start, end - 1));
            }
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            let len = self.buf.len();
            self.buf.resize(len + 65536, 0);
            let n = self.stream.read(&mut self.buf[len..]);
            match n {
                Ok(0) => {
                    self.buf.truncate(len);
                    return Err(RawError::Io(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "Redis closed the connection",
                    )));
                }
                Ok(n) => self.buf.truncate(len + n),
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(RawError::Io(e));
                }
            }
        }
    }

    fn int_of(&self, a: usize, b: usize) -> Result<i64, RawError> {
        std::str::from_utf8(&self.buf[a..b])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| RawError::Protocol("bad integer".into()))
    }

    fn reply(&mut self, out: &mut Replies) -> Result<(), RawError> {
        let (a, b) = self.line()?;
        match self.buf.get(a) {
            Some(b':') => {
                let v = self.int_of(a + 1, b)?;
                out.ints.push(v);
                Ok(())
            }
            Some(b'+') => Ok(()),
            Some(b'-') => Err(RawError::Server(
                String::from_utf8_lossy(&self.buf[a + 1..b]).into_owned(),
            )),
            Some(b'*') => {
                let n = self.int_of(a + 1, b)?;
                for _ in 0..n.max(0) {
                    let (c, d) = self.line()?;
                    match self.buf.get(c) {
                        Some(b':') => {
                            let v = self.int_of(c + 1, d)?;
                            out.ints.push(v);
                        }
                        Some(b'$') if &self.buf[c..d] == b"$-1" => out.ints.push(0),
                        _ => return Err(RawError::Protocol("array of non-integers".into())),
                    }
                }
                Ok(())
            }
            Some(b'$') if &self.buf[a..b] == b"$-1" => Ok(()),
            Some(b'$') => {
                // A bulk string: the old value of a `SET … GET` claim, always an integer token
                // of ours. Anything else is recorded as `i64::MIN` (nobody's token).
                let n = self.int_of(a + 1, b)?;
                let n =
                    usize::try_from(n).map_err(|_| RawError::Protocol("bad bulk length".into()))?;
                let (c, d) = self.line()?;
                if d - c != n {
                    return Err(RawError::Protocol("bulk string with a line break".into()));
                }
                out.ints.push(self.int_of(c, d).unwrap_or(i64::MIN));
                Ok(())
            }
            _ => Err(RawError::Protocol(format!(
                "unexpected reply {:?}",
                String::from_utf8_lossy(&self.buf[a..b])
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_resp() {
        let mut b = Batch::new(true);
        b.cmd("BITFIELD", 6);
        b.arg(b"k");
        b.arg(b"SET");
        b.arg(b"u1");
        b.int(12345);
        b.int(1);
        assert_eq!(
            b.resp,
            b"*6\r\n$8\r\nBITFIELD\r\n$1\r\nk\r\n$3\r\nSET\r\n$2\r\nu1\r\n$5\r\n12345\r\n$1\r\n1\r\n"
        );
        assert_eq!(b.len(), 1);
    }
}

#[cfg(test)]
mod wire_tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// A fake server that answers with `reply`, written a few bytes at a time.
    fn fake(reply: &'static [u8]) -> RawConn {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            for part in reply.chunks(3) {
                s.write_all(part).unwrap();
                s.flush().unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(200));
        });
        let info = redis::IntoConnectionInfo::into_connection_info(format!(
            "redis://{}:{}",
            addr.ip(),
            addr.port()
        ))
        .unwrap();
        RawConn::connect(&info, Duration::from_secs(1), Duration::from_secs(1))
            .unwrap()
            .unwrap()
    }

    fn batch(n: usize) -> Batch {
        let mut b = Batch::new(true);
        for _ in 0..n {
            b.cmd("PING", 1);
        }
        b
    }

    #[test]
    fn parses_fragmented_replies() {
        let mut c = fake(
            b":1\r\n*3\r\n:0\r\n:1\r\n$-1\r\n+OK\r\n$-1\r\n:-42\r\n$5\r\n12345\r\n$2\r\nab\r\n",
        );
        let mut out = Replies::default();
        c.exec(&batch(7), &mut out).unwrap();
        assert_eq!(out.get(0), [1]);
        assert_eq!(out.get(1), [0, 1, 0]);
        assert!(out.get(2).is_empty() && out.get(3).is_empty());
        assert_eq!(out.int(4), -42);
        assert_eq!(out.int(5), 12345, "a claim's token");
        assert_eq!(out.int(6), i64::MIN, "somebody else's value");
    }

    #[test]
    fn a_server_error_is_reported_after_reading_every_reply() {
        let mut c = fake(b"-WRONGTYPE Operation against a key\r\n:1\r\n");
        let mut out = Replies::default();
        match c.exec(&batch(2), &mut out) {
            Err(RawError::Server(m)) => assert!(m.starts_with("WRONGTYPE")),
            other => panic!("{other:?}"),
        }
        assert_eq!(out.int(1), 1, "the stream stays in sync");
    }

    #[test]
    fn garbage_and_eof_are_errors_not_panics() {
        let mut c = fake(b"?what\r\n");
        let mut out = Replies::default();
        assert!(matches!(
            c.exec(&batch(1), &mut out),
            Err(RawError::Protocol(_))
        ));
        let mut c = fake(b":12");
        assert!(matches!(c.exec(&batch(1), &mut out), Err(RawError::Io(_))));
        let mut c = fake(b"*2\r\n+x\r\n");
        assert!(matches!(
            c.exec(&batch(1), &mut out),
            Err(RawError::Protocol(_))
        ));
    }
}
