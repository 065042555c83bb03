//! The egress policy: which addresses crawlsieve itself may connect to, and the one HTTP request
//! it makes on its own (a robots.txt, [`get`]). The renderer's proxy ([`crate::render::egress`])
//! and the gate's robots.txt fetches ([`crate::gate`]) both connect only through
//! [`Policy::resolve`]: only http(s), and by default only hosts whose every address is public —
//! never loopback, private (RFC 1918, unique-local), link-local (including the cloud metadata
//! address 169.254.169.254), CGNAT, multicast, unspecified, documentation, benchmarking,
//! site-local or other reserved ranges (IANA's special-purpose registries), nor an IPv6 form that
//! carries one of those IPv4 addresses (mapped, compatible, NAT64 `64:ff9b::/96`, 6to4
//! `2002::/16`) — unless the host or address is allow-listed (tests allow their loopback server
//! explicitly). The name is resolved once and the checked address is the one connected to.

use std::net::{IpAddr, SocketAddr};

/// Why a URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Not http or https.
    #[error("scheme {0:?} is not http(s)")]
    Scheme(String),
    /// Not a URL.
    #[error("not a URL: {0}")]
    Invalid(String),
    /// The host did not resolve.
    #[error("{0} does not resolve")]
    Unresolved(String),
    /// It resolves to an address that is not public.
    #[error("{host} resolves to {ip}, a {kind} address (allow it with --allow HOST[:PORT] on the command line, render.allow in a config file, robots.allow for robots.txt)")]
    Private {
        /// The host.
        host: String,
        /// The address.
        ip: IpAddr,
        /// Loopback, private, …
        kind: &'static str,
    },
}

pub use crate::url::address::non_public;

/// The allow-list: host names (exact, case-insensitive) and addresses.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Allowed hosts or IP addresses, even when not public: `host`, `1.2.3.4` or `::1` (any
    /// port), or with a port, `host:8080`, `1.2.3.4:8080`, `[::1]:8080` (that port only).
    pub allow: Vec<String>,
}

/// One allow-list entry: a host name or address, and the port it is limited to (if any).
pub(crate) fn parse_allow(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        // `[v6]` or `[v6]:port`
        return match rest.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (rest, None),
        };
    }
    match entry.rsplit_once(':') {
        // Exactly one colon: `host:port` or `v4:port` (a bare IPv6 address has several).
        Some((h, p)) if !h.contains(':') => match p.parse() {
            Ok(port) => (h, Some(port)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

/// Whether `entry` is an allow-list entry [`Policy`] can use: `HOST`, `IP`, `HOST:PORT`,
/// `IP:PORT`, `[IPv6]` or `[IPv6]:PORT`, with a port in 1..=65535. The reason otherwise (an
/// entry that matches nothing would silently allow nothing).
pub fn check_allow_entry(entry: &str) -> Result<(), String> {
    let entry = entry.trim();
    let port_ok = |p: &str| {
        match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(()),
        _ => Err(format!(
            "port {p:?} is not a number from 1 to 65535 (HOST, HOST:PORT, IP, IP:PORT or [IPv6]:PORT)"
        )),
    }
    };
    if entry.is_empty() {
        return Err("empty (HOST, HOST:PORT, IP, IP:PORT or [IPv6]:PORT)".into());
    }
    if let Some((_, rest)) = entry.split_once("://") {
        let host = rest.split('/').next().unwrap_or(rest);
        return Err(format!(
            "a URL, not a host: write {host} (HOST, HOST:PORT, IP, IP:PORT or [IPv6]:PORT)"
        ));
    }
    if let Some(rest) = entry.strip_prefix('[') {
        let Some((h, p)) = rest.split_once(']') else {
            return Err("no closing `]` ([IPv6] or [IPv6]:PORT)".into());
        };
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("{h:?} is not an IPv6 address"));
        }
        return match p {
            "" => Ok(()),
            _ => match p.strip_prefix(':') {
                Some(p) => port_ok(p),
                None => Err(format!("{p:?} after `]` (expected :PORT)")),
            },
        };
    }
    let host = match entry.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => {
            port_ok(p)?;
            h
        }
        Some(_) => {
            return entry
                .parse::<std::net::Ipv6Addr>()
                .map(|_| ())
                .map_err(|_| {
                    format!("{entry:?} is not an IPv6 address (write [IPv6]:PORT for a port)")
                });
        }
        None => entry,
    };
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    {
        return Err(format!("{host:?} is not a host name or an address"));
    }
    Ok(())
}

impl Policy {
    /// Whether an entry allows `host` (a name, or an address's text) or `ip`, on `port`.
    fn allows(&self, host: &str, ip: Option<IpAddr>, port: u16) -> bool {
        self.allow.iter().any(|entry| {
            let (h, p) = parse_allow(entry.trim());
            let same =
                h.eq_ignore_ascii_case(host) || ip.is_some_and(|ip| h.parse::<IpAddr>() == Ok(ip));
            same && p.is_none_or(|p| p == port)
        })
    }

    /// Check `url`, resolving its host; returns the URL parsed.
    pub async fn check(&self, url: &str) -> Result<url::Url, Refused> {
        let u = url::Url::parse(url).map_err(|e| Refused::Invalid(format!("{url}: {e}")))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(Refused::Scheme(u.scheme().to_string()));
        }
        let host = u.host_str().unwrap_or("");
        let port = u.port_or_known_default().unwrap_or(80);
        self.resolve(host, port).await?;
        Ok(u)
    }

    /// Resolve `host` (a name, an IPv4 address or an IPv6 address with or without brackets) on
    /// `port` once, and return the addresses to connect to (in the resolver's order) — every one
    /// of them checked. Every address
    /// the name resolves to must pass (allowed, or public): a name that mixes a public and a
    /// private answer is refused, so the answer a rebinding attacker controls cannot choose. A
    /// host allowed by name is resolved and not checked further (the operator named it).
    ///
    /// The egress proxy ([`crate::render::egress`]) connects to exactly the addresses returned, so a name
    /// that resolves differently a moment later (DNS rebinding) cannot slip past the check.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refused> {
        self.resolve_with(host, port, &system_lookup()).await
    }

    /// [`Policy::resolve`] with the name lookup given (tests pass one that answers differently
    /// each time, as a rebinding DNS server would).
    pub async fn resolve_with(
        &self,
        host: &str,
        port: u16,
        lookup: &Lookup,
    ) -> Result<Vec<SocketAddr>, Refused> {
        let host = host.trim_matches(['[', ']']).to_string();
        if host.is_empty() {
            return Err(Refused::Invalid("no host".into()));
        }
        let by_name = self.allows(&host, None, port);
        let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => match tokio::time::timeout(RESOLVE_TIMEOUT, lookup(host.clone(), port)).await
            {
                Ok(Ok(a)) => a,
                _ => return Err(Refused::Unresolved(host)),
            },
        };
        if addrs.is_empty() {
            return Err(Refused::Unresolved(host));
        }
        if !by_name {
            for &ip in &addrs {
                if self.allows(&host, Some(ip), port) {
                    continue;
                }
                if let Some(kind) = non_public(ip) {
                    return Err(Refused::Private { host, ip, kind });
                }
            }
        }
        Ok(addrs
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect())
    }
}

/// A name lookup: host and port to addresses.
pub type Lookup = std::sync::Arc<
    dyn Fn(String, u16) -> futures::future::BoxFuture<'static, std::io::Result<Vec<IpAddr>>>
        + Send
        + Sync,
>;

/// The system resolver (`getaddrinfo`, through tokio).
pub fn system_lookup() -> Lookup {
    std::sync::Arc::new(|host: String, port: u16| {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), port))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    })
}

/// The longest a name may take to resolve.
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Limits of one [`get`].
#[derive(Debug, Clone)]
pub struct GetLimits {
    /// The whole request: resolution, connections, redirects and body.
    pub timeout: std::time::Duration,
    /// Body bytes read; the rest is not read (`Got::truncated`).
    pub max_bytes: usize,
    /// Redirects followed (RFC 9309 §2.3.1.2: at least five).
    pub max_redirects: usize,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// The `Accept` header (`text/plain, */*;q=0.5` for a robots.txt; a browser's for a page).
    pub accept: &'static str,
}

/// What a [`get`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Got {
    /// The final answer's status (after redirects).
    pub status: u16,
    /// Its body, at most `max_bytes`.
    pub body: Vec<u8>,
    /// Whether the body was longer than `max_bytes`.
    pub truncated: bool,
    /// Redirects followed.
    pub redirects: usize,
    /// Every URL requested, the one asked first and the final one last.
    pub chain: Vec<String>,
    /// The final answer's `Content-Type`, as sent (empty when none).
    pub content_type: String,
}

/// Why a [`get`] has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GetError {
    /// The policy refused the target of redirect hop `hop` (0: the URL itself).
    #[error("{why} (redirect hop {hop})")]
    Refused {
        /// Why.
        why: Refused,
        /// 0 for the URL asked, n for the n-th redirect's target.
        hop: usize,
    },
    /// More redirects than `max_redirects`.
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
    /// No connection, TLS, a broken answer, or the time ran out.
    #[error("{0}")]
    Failed(String),
}

/// The longest one connection attempt may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// `GET url`, connecting only where `policy` allows: each hop's name is resolved once, every
/// address checked ([`Policy::resolve_with`]), and the checked address connected to; redirects
/// (301, 302, 303, 307, 308) are followed up to `max_redirects`, each target checked the same
/// way. https through the system's TLS library, certificates verified.
pub async fn get(
    url: &str,
    policy: &Policy,
    lookup: &Lookup,
    lim: &GetLimits,
) -> Result<Got, GetError> {
    match tokio::time::timeout(lim.timeout, get_within(url, policy, lookup, lim)).await {
        Ok(r) => r,
        Err(_) => Err(GetError::Failed(format!(
            "no complete answer within {:?}",
            lim.timeout
        ))),
    }
}

async fn get_within(
    url: &str,
    policy: &Policy,
    lookup: &Lookup,
    lim: &GetLimits,
) -> Result<Got, GetError> {
    let mut u = url::Url::parse(url).map_err(|e| GetError::Refused {
        why: Refused::Invalid(format!("{url}: {e}")),
        hop: 0,
    })?;
    let mut chain = Vec::new();
    for hop in 0..=lim.max_redirects {
        chain.push(u.to_string());
        let resp = get_hop(&u, hop, policy, lookup, lim).await?;
        let status = resp.status().as_u16();
        if matches!(status, 301 | 302 | 303 | 307 | 308) {
            let next = resp
                .headers()
                .get(hyper::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| u.join(l).ok());
            match next {
                Some(n) => {
                    u = n;
                    continue;
                }
                None => {
                    return Err(GetError::Failed(format!(
                        "{status} without a usable Location"
                    )))
                }
            }
        }
        let content_type = resp
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let (body, truncated) = read_capped(resp.into_body(), lim.max_bytes).await?;
        return Ok(Got {
            status,
            body,
            truncated,
            redirects: hop,
            chain,
            content_type,
        });
    }
    Err(GetError::TooManyRedirects(lim.max_redirects))
}

/// One hop of [`get`]: check `u`'s scheme, resolve and check its host, connect (TLS for https)
/// and send the request; the response's head.
async fn get_hop(
    u: &url::Url,
    hop: usize,
    policy: &Policy,
    lookup: &Lookup,
    lim: &GetLimits,
) -> Result<hyper::Response<hyper::body::Incoming>, GetError> {
    let refused = |why| GetError::Refused { why, hop };
    let https = match u.scheme() {
        "http" => false,
        "https" => true,
        s => return Err(refused(Refused::Scheme(s.to_string()))),
    };
    let host = u.host_str().unwrap_or("").to_string();
    let port = u.port_or_known_default().unwrap_or(80);
    let addrs = policy
        .resolve_with(&host, port, lookup)
        .await
        .map_err(refused)?;
    let tcp = connect_any(&addrs).await?;
    let authority = match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.clone(),
    };
    let target = match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    };
    let resp = if https {
        let cx = native_tls::TlsConnector::new()
            .map_err(|e| GetError::Failed(format!("TLS setup: {e}")))?;
        let tls = tokio_native_tls::TlsConnector::from(cx)
            .connect(host.trim_matches(['[', ']']), tcp)
            .await
            .map_err(|e| GetError::Failed(format!("TLS with {authority}: {e}")))?;
        request(tls, &authority, &target, lim).await?
    } else {
        request(tcp, &authority, &target, lim).await?
    };
    Ok(resp)
}

/// Connect to the first of `addrs` (all checked) that answers.
async fn connect_any(addrs: &[SocketAddr]) -> Result<tokio::net::TcpStream, GetError> {
    let mut last = String::from("unreachable: no address");
    for &a in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(a)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => last = format!("unreachable: {a} ({e})"),
            Err(_) => last = format!("unreachable: {a} (no answer)"),
        }
    }
    // Worded as the renderer's egress proxy words it: `unreachable: host:port (why)`.
    Err(GetError::Failed(last))
}

/// One HTTP/1.1 request on a fresh connection.
async fn request<IO>(
    io: IO,
    authority: &str,
    target: &str,
    lim: &GetLimits,
) -> Result<hyper::Response<hyper::body::Incoming>, GetError>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let failed = |e: hyper::Error| GetError::Failed(format!("{authority}: {e}"));
    let (mut send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
        .await
        .map_err(failed)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = hyper::Request::get(target)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::USER_AGENT, &lim.user_agent)
        .header(hyper::header::ACCEPT, lim.accept)
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .map_err(|e| GetError::Failed(format!("{authority}: {e}")))?;
    send.send_request(req).await.map_err(failed)
}

/// Up to `max` bytes of `body`, and whether there was more.
async fn read_capped(
    mut body: hyper::body::Incoming,
    max: usize,
) -> Result<(Vec<u8>, bool), GetError> {
    use http_body_util::BodyExt;
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| GetError::Failed(format!("reading the body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            let room = max - out.len();
            if data.len() > room {
                out.extend_from_slice(&data[..room]);
                return Ok((out, true));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok((out, false))
}
