//! One connection to a single Redis node or a Redis Cluster, with timeouts, and pipelines that
//! work on both.

use std::path::PathBuf;
use std::time::Duration;

use redis::{Cmd, IntoConnectionInfo, RedisResult, Value};

use super::resp::{Batch, RawConn, RawError, Replies};
use super::RedisFilterError;

/// Where Redis is and how long to wait for it.
#[derive(Debug, Clone)]
pub struct RedisConfig {
    /// `redis://[user:pass@]host:port[/db]` URLs; several seeds for a cluster.
    pub urls: Vec<String>,
    /// Talk the cluster protocol (implied by more than one URL).
    pub cluster: bool,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// How long one request or pipeline may wait for its reply. A pipeline of 1000 URLs takes a
    /// few milliseconds; the default (2 s) only fires when Redis is stalled or gone.
    pub response_timeout: Duration,
    /// Slots of the local first tier (16 bytes each); 0 disables it.
    pub local_tier_slots: usize,
    /// How often a client re-reads the namespace's generations (growth, windows, drops).
    pub refresh_interval: Duration,
    /// How long a claim on a URL lasts when its holder never confirms it (it crashed, or lost
    /// Redis): the longest another client waits for such a URL, and the longest an emitted
    /// URL may take to be confirmed before a second client may emit it too.
    pub claim_ttl: Duration,
    /// How long a client waits for a URL another client has claimed before it takes the URL
    /// as new itself (a repeat, never a loss). Two clients can each wait on the other's
    /// undelivered claims (two gates with batches in flight): the wait must end well before
    /// the claims expire.
    pub busy_wait: Duration,
    /// Certificates for `rediss://` URLs instead of the system's trust store.
    pub tls: RedisTls,
}

/// What a `rediss://` connection trusts and shows instead of the system's trust store (OpenSSL's,
/// which honours `SSL_CERT_FILE` and `SSL_CERT_DIR`). Every file is PEM.
///
/// A single node takes all three; a cluster's client (the `redis` crate's, over native TLS)
/// takes the system store only, so a cluster's CA is given with `SSL_CERT_FILE` and a cluster
/// cannot use a client certificate — [`Conn::connect`] says so rather than ignoring the files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisTls {
    /// CA certificates to trust: only these, when given (the `redis` crate then turns the
    /// system's store off).
    pub ca: Option<PathBuf>,
    /// A client certificate, for servers that ask for one (mutual TLS); needs `key`.
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PKCS#8, `BEGIN PRIVATE KEY`).
    pub key: Option<PathBuf>,
}

impl RedisTls {
    /// Whether any file is given.
    pub fn is_set(&self) -> bool {
        self.ca.is_some() || self.cert.is_some() || self.key.is_some()
    }

    /// Read the files into the redis crate's form; a missing or unreadable file, or a
    /// certificate without its key, is a configuration error naming the setting.
    fn certificates(&self) -> RedisResult<redis::TlsCertificates> {
        fn read(what: &str, p: &PathBuf) -> RedisResult<Vec<u8>> {
            std::fs::read(p).map_err(|e| {
                redis::RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "cannot read a TLS file",
                    format!("{what} {}: {e}", p.display()),
                ))
            })
        }
        let client_tls =
            match (&self.cert, &self.key) {
                (Some(c), Some(k)) => Some(redis::ClientTlsConfig {
                    client_cert: read("client certificate (--redis-cert)", c)?,
                    client_key: read("client key (--redis-key)", k)?,
                }),
                (None, None) => None,
                _ => return Err(redis::RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "a client certificate needs its key: give both --redis-cert and --redis-key",
                ))),
            };
        let root_cert = self
            .ca
            .as_ref()
            .map(|p| read("CA file (--redis-ca)", p))
            .transpose()?;
        Ok(redis::TlsCertificates {
            client_tls,
            root_cert,
        })
    }
}

impl RedisConfig {
    /// The URLs without credentials, comma-separated, for messages.
    pub fn address(&self) -> String {
        self.urls
            .iter()
            .map(|u| match (u.find("://"), u.rfind('@')) {
                (Some(s), Some(at)) if at > s => format!("{}{}", &u[..s + 3], &u[at + 1..]),
                _ => u.clone(),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Defaults for `url` (comma-separated seeds make a cluster).
    pub fn new(url: &str) -> RedisConfig {
        let urls: Vec<String> = url
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        RedisConfig {
            cluster: urls.len() > 1,
            urls,
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(2),
            local_tier_slots: 1 << 21,
            refresh_interval: Duration::from_secs(1),
            claim_ttl: Duration::from_secs(30),
            busy_wait: Duration::from_millis(500),
            tls: RedisTls::default(),
        }
    }
}

/// A live connection.
pub enum Conn {
    /// One node: redis-rs for administration, a raw socket for the hot path (plain TCP only:
    /// over TLS redis-rs carries the hot path too).
    Single(redis::Connection, Option<Box<RawConn>>),
    /// A cluster (routes every command by its key's slot; MOVED/ASK are followed, I/O errors
    /// are returned, never silently re-sent).
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl Conn {
    /// Connect with the configured timeouts.
    pub fn connect(cfg: &RedisConfig) -> RedisResult<Conn> {
        if cfg.urls.is_empty() {
            return Err(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "no Redis URL given",
            )));
        }
        if cfg.tls.is_set() && !cfg.urls.iter().all(|u| u.starts_with("rediss://")) {
            return Err(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "TLS files are given but the Redis URL is not TLS: write rediss://host:port",
            )));
        }
        if cfg.cluster {
            if cfg.tls.is_set() {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "a Redis Cluster over TLS trusts the system's certificates only: give its CA \
                     with SSL_CERT_FILE=FILE instead of --redis-ca (client certificates are not \
                     supported for a cluster)",
                )));
            }
            let client = redis::cluster::ClusterClientBuilder::new(cfg.urls.clone())
                .connection_timeout(cfg.connect_timeout)
                .response_timeout(cfg.response_timeout)
                .retries(3)
                .build()?;
            Ok(Conn::Cluster(Box::new(client.get_connection()?)))
        } else {
            let info = cfg.urls[0].as_str().into_connection_info()?;
            let client = if cfg.tls.is_set() {
                redis::Client::build_with_tls(info.clone(), cfg.tls.certificates()?)?
            } else {
                redis::Client::open(info.clone())?
            };
            let con = client.get_connection_with_timeout(cfg.connect_timeout)?;
            con.set_read_timeout(Some(cfg.response_timeout))?;
            con.set_write_timeout(Some(cfg.response_timeout))?;
            let raw = RawConn::connect(&info, cfg.connect_timeout, cfg.response_timeout)
                .transpose()
                .map_err(redis::RedisError::from)?
                .map(Box::new);
            Ok(Conn::Single(con, raw))
        }
    }

    /// Run `cmds` as one pipeline (one round trip per node) and return their replies in order.
    pub fn pipeline(&mut self, cmds: Vec<Cmd>) -> RedisResult<Vec<Value>> {
        if cmds.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Conn::Single(c, _) => {
                let mut p = redis::pipe();
                for cmd in cmds {
                    p.add_command(cmd);
                }
                p.query(c)
            }
            Conn::Cluster(c) => {
                let mut p = redis::cluster::cluster_pipe();
                for cmd in cmds {
                    p.add_command(cmd);
                }
                p.query(c)
            }
        }
    }

    /// Whether hot-path batches should be raw RESP.
    pub fn is_raw(&self) -> bool {
        matches!(self, Conn::Single(_, Some(_)))
    }

    /// Run a hot-path batch (built for this connection's kind, see [`Conn::is_raw`]).
    pub fn exec(&mut self, batch: &mut Batch, out: &mut Replies) -> Result<(), RedisFilterError> {
        if batch.is_empty() {
            out.clear();
            return Ok(());
        }
        if let Conn::Single(_, Some(raw)) = self {
            if batch.is_raw() {
                return raw.exec(batch, out).map_err(raw_error);
            }
        } else if batch.is_raw() {
            return Err(RedisFilterError::Params(
                "a raw batch on a connection without a raw socket".into(),
            ));
        }
        let cmds = std::mem::take(&mut batch.cmds);
        let values = self
            .pipeline(cmds)
            .map_err(|e| RedisFilterError::from_redis(e, false))?;
        out.clear();
        for v in &values {
            out.push_value(v).map_err(RedisFilterError::Corrupt)?;
        }
        Ok(())
    }

    /// Send a raw batch without waiting (single node only; see [`Conn::is_raw`]).
    pub fn send(&mut self, batch: &Batch) -> Result<(), RedisFilterError> {
        match self {
            Conn::Single(_, Some(raw)) => raw.send(batch).map_err(raw_error),
            _ => Err(RedisFilterError::Params(
                "pipelined send needs a raw connection".into(),
            )),
        }
    }

    /// Receive the replies of a batch of `n` commands sent with [`Conn::send`].
    pub fn recv(&mut self, n: usize, out: &mut Replies) -> Result<(), RedisFilterError> {
        match self {
            Conn::Single(_, Some(raw)) => raw.recv(n, out).map_err(raw_error),
            _ => Err(RedisFilterError::Params(
                "pipelined recv needs a raw connection".into(),
            )),
        }
    }

    /// Run one command.
    pub fn query<T: redis::FromRedisValue>(&mut self, cmd: &Cmd) -> RedisResult<T> {
        match self {
            Conn::Single(c, _) => cmd.query(c),
            Conn::Cluster(c) => cmd.query(c),
        }
    }

    /// Run a Lua script on one key.
    pub fn script<T: redis::FromRedisValue>(
        &mut self,
        script: &redis::Script,
        key: &str,
        args: &[&str],
    ) -> RedisResult<T> {
        self.script_keys(script, &[key], args)
    }

    /// Run a Lua script on several keys (one hash tag on a cluster).
    pub fn script_keys<T: redis::FromRedisValue>(
        &mut self,
        script: &redis::Script,
        keys: &[&str],
        args: &[&str],
    ) -> RedisResult<T> {
        let mut inv = script.prepare_invoke();
        for k in keys {
            inv.key(*k);
        }
        for a in args {
            inv.arg(*a);
        }
        match self {
            Conn::Single(c, _) => inv.invoke(c),
            Conn::Cluster(c) => inv.invoke(c),
        }
    }
}

fn raw_error(e: RawError) -> RedisFilterError {
    match e {
        RawError::Io(io) => RedisFilterError::from_redis(io.into(), false),
        RawError::Server(m) => RedisFilterError::from_server_line(&m),
        RawError::Protocol(m) => RedisFilterError::Corrupt(m),
    }
}

/// A connection made on first use and dropped after an error, so the next use reconnects: how
/// every component outside the filter's hot path (the gate's pattern verdicts, the render
/// stage's checkpoints and verdicts, the probes) holds Redis.
pub struct LazyConn {
    cfg: RedisConfig,
    conn: Option<Conn>,
}

impl LazyConn {
    /// Nothing is connected until [`LazyConn::get`].
    pub fn new(cfg: RedisConfig) -> LazyConn {
        LazyConn { cfg, conn: None }
    }

    /// The connection, made now if there is none.
    pub fn get(&mut self) -> Result<&mut Conn, super::RedisFilterError> {
        if self.conn.is_none() {
            let c = Conn::connect(&self.cfg)
                .map_err(|e| super::RedisFilterError::from_redis(e, false))?;
            self.conn = Some(c);
        }
        Ok(self.conn.as_mut().expect("connected above"))
    }

    /// Run `f` on the connection; on an error the connection is dropped (its state unknown).
    pub fn with<T>(
        &mut self,
        f: impl FnOnce(&mut Conn) -> Result<T, super::RedisFilterError>,
    ) -> Result<T, super::RedisFilterError> {
        let r = self.get().and_then(f);
        if r.is_err() {
            self.conn = None;
        }
        r
    }

    /// Drop the connection (the next use reconnects).
    pub fn reset(&mut self) {
        self.conn = None;
    }
}
