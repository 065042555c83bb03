//! The renderer's one egress point: a forward HTTP proxy on a loopback port that Chromium must
//! use for every connection it makes (`--proxy-server`, with the implicit loopback bypass
//! removed). Frames of any site (out-of-process iframes included), dedicated, shared and service
//! workers, WebSockets, popups, prefetches and favicons all reach the network through Chromium's
//! network service, and so through this proxy — unlike DevTools request interception, which sees
//! only the targets it is attached to and never sees WebSockets.
//!
//! For each request the proxy resolves the name itself, checks **every** address against the
//! [`Policy`], and connects to the address it checked ([`Policy::resolve`]): a name that resolves
//! to a public address for the check and to a private one a moment later (DNS rebinding) cannot
//! get through, because there is no second resolution.
//!
//! - `CONNECT host:port` (https, wss, ws: Chromium tunnels WebSockets through `CONNECT`): the
//!   target is checked and connected before the `200`; bytes are then copied both ways.
//! - `GET http://host:port/path` (plain http): checked and connected per request; the request is
//!   sent in origin form on a fresh connection, hop-by-hop headers removed.
//! - Anything else (a request in origin form, an unknown scheme) is `400`.
//!
//! A refusal is `403` with the reason in the body; a target that does not answer is `502`.
//! What a proxy cannot see is switched off in the browser: QUIC (`disable-quic`) and WebRTC's
//! non-proxied UDP (`force-webrtc-ip-handling-policy`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

use super::safety::{system_lookup, Lookup, Policy, Refused};

/// Longest a connection to a target may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The header on every answer the proxy gives itself (never on a target's): `refused …` or
/// `unreachable …`, so the renderer tells the proxy's 403/502 from a site's own.
pub const EGRESS_HEADER: &str = "x-crawlsieve-egress";

/// The proxy's own answer `status`, with `why` in the body and in [`EGRESS_HEADER`].
fn own_answer(status: StatusCode, why: &str) -> Response<Body> {
    let mut r = text(status, format!("{why}\n"));
    let v = why.replace(['\r', '\n'], " ");
    if let Ok(v) = hyper::header::HeaderValue::from_str(&v) {
        r.headers_mut().insert(EGRESS_HEADER, v);
    }
    r
}

/// Refusals kept for [`Egress::refusals`].
const KEEP_REFUSALS: usize = 64;

/// What the proxy did, for metrics and tests.
#[derive(Debug, Default)]
pub struct EgressStats {
    /// Connections made to targets the policy allowed.
    pub allowed: AtomicU64,
    /// Requests refused by the policy.
    pub refused: AtomicU64,
    /// Allowed targets that did not answer.
    pub failed: AtomicU64,
    recent: Mutex<std::collections::VecDeque<String>>,
}

/// A running egress proxy; it stops when dropped.
pub struct Egress {
    addr: SocketAddr,
    stats: Arc<EgressStats>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Egress {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Egress {
    /// Listen on an ephemeral port of 127.0.0.1 and serve until dropped.
    pub async fn start(policy: Policy) -> std::io::Result<Egress> {
        Egress::start_with(policy, system_lookup()).await
    }

    /// [`Egress::start`] with the name lookup given.
    pub async fn start_with(policy: Policy, lookup: Lookup) -> std::io::Result<Egress> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(EgressStats::default());
        let policy = Arc::new((policy, lookup));
        let st = stats.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors, most likely: wait rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let (policy, st) = (policy.clone(), st.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let (policy, st) = (policy.clone(), st.clone());
                        async move { Ok::<_, Infallible>(handle(req, &policy, &st).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .preserve_header_case(true)
                        .title_case_headers(true)
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        Ok(Egress { addr, stats, task })
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Chromium's `proxy-server` value.
    pub fn proxy_server(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Counters.
    pub fn stats(&self) -> &EgressStats {
        &self.stats
    }

    /// The latest refusals (`host:port: reason`), oldest first, at most 64.
    pub fn refusals(&self) -> Vec<String> {
        self.stats
            .recent
            .lock()
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }
}

type Body = BoxBody<Bytes, hyper::Error>;

fn text(status: StatusCode, msg: String) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(msg)).map_err(|e| match e {}).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Check and connect: the one place a connection to the outside is made.
async fn connect(
    host: &str,
    port: u16,
    (policy, lookup): &(Policy, Lookup),
    st: &EgressStats,
) -> Result<TcpStream, Response<Body>> {
    let addrs = match policy.resolve_with(host, port, lookup).await {
        Ok(a) => a,
        Err(e) => {
            st.refused.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut r) = st.recent.lock() {
                if r.len() >= KEEP_REFUSALS {
                    r.pop_front();
                }
                r.push_back(format!("{host}:{port}: {e}"));
            }
            let status = match e {
                Refused::Unresolved(_) => StatusCode::BAD_GATEWAY,
                _ => StatusCode::FORBIDDEN,
            };
            return Err(own_answer(status, &format!("refused by crawlsieve: {e}")));
        }
    };
    // Every address was checked: try them in order (`localhost` may answer on one family only).
    let mut last = String::new();
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                st.allowed.fetch_add(1, Ordering::Relaxed);
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Ok(Err(e)) => last = format!("{addr}: {e}"),
            Err(_) => last = format!("{addr}: no answer"),
        }
    }
    st.failed.fetch_add(1, Ordering::Relaxed);
    Err(own_answer(
        StatusCode::BAD_GATEWAY,
        &format!("unreachable: {host}:{port} ({last})"),
    ))
}

async fn handle(
    req: Request<Incoming>,
    policy: &(Policy, Lookup),
    st: &EgressStats,
) -> Response<Body> {
    if req.method() == Method::CONNECT {
        return tunnel(req, policy, st).await;
    }
    let uri = req.uri().clone();
    if uri.scheme_str() != Some("http") {
        return text(
            StatusCode::BAD_REQUEST,
            "only absolute http:// requests and CONNECT\n".into(),
        );
    }
    let Some(host) = uri.host().map(str::to_string) else {
        return text(StatusCode::BAD_REQUEST, "no host\n".into());
    };
    let port = uri.port_u16().unwrap_or(80);
    let upstream = match connect(&host, port, policy, st).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let (mut parts, body) = req.into_parts();
    parts.uri = uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .parse()
        .unwrap_or_else(|_| hyper::Uri::from_static("/"));
    for h in ["proxy-connection", "proxy-authorization", "keep-alive"] {
        parts.headers.remove(h);
    }
    forward(Request::from_parts(parts, body), upstream, &host, port, st).await
}

/// `CONNECT host:port`: check and connect the target, answer `200`, then copy bytes both ways
/// once the connection is upgraded.
async fn tunnel(
    req: Request<Incoming>,
    policy: &(Policy, Lookup),
    st: &EgressStats,
) -> Response<Body> {
    // The authority form: `host:port`, `[v6]:port`.
    let Some((host, port)) = req
        .uri()
        .authority()
        .and_then(|a| Some((a.host().to_string(), a.port_u16()?)))
    else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port\n".into());
    };
    let upstream = match connect(&host, port, policy, st).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    tokio::spawn(async move {
        if let Ok(upgraded) = hyper::upgrade::on(req).await {
            let mut client = TokioIo::new(upgraded);
            let mut upstream = upstream;
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
    });
    Response::new(http_body_util::Empty::new().map_err(|e| match e {}).boxed())
}

/// Send the plain-http request `req` (origin form) to `host:port` on `upstream`, a fresh
/// connection, and relay the answer (the egress header removed); `502` when it fails.
async fn forward(
    req: Request<Incoming>,
    upstream: TcpStream,
    host: &str,
    port: u16,
    st: &EgressStats,
) -> Response<Body> {
    let (mut sender, conn) = match hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .title_case_headers(true)
        .handshake(TokioIo::new(upstream))
        .await
    {
        Ok(x) => x,
        Err(e) => {
            st.failed.fetch_add(1, Ordering::Relaxed);
            return own_answer(
                StatusCode::BAD_GATEWAY,
                &format!("unreachable: {host}:{port} ({e})"),
            );
        }
    };
    tokio::spawn(conn);
    match sender.send_request(req).await {
        Ok(mut resp) => {
            // Only the proxy may say it answered itself: a site sending the header would have
            // its page taken for a refusal (and the operator told to `--allow` what it names).
            resp.headers_mut().remove(EGRESS_HEADER);
            resp.map(|b| b.boxed())
        }
        Err(e) => {
            st.failed.fetch_add(1, Ordering::Relaxed);
            own_answer(
                StatusCode::BAD_GATEWAY,
                &format!("unreachable: {host}:{port} ({e})"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback server that answers every connection with `hello` and counts them.
    async fn target() -> (SocketAddr, Arc<AtomicU64>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let hits = Arc::new(AtomicU64::new(0));
        let h = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                h.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    let _ = s
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
                        .await;
                });
            }
        });
        (addr, hits)
    }

    /// One request to the proxy; the answer up to the connection's close (or 5 s).
    async fn ask(proxy: SocketAddr, raw: String) -> String {
        let raw = raw.replacen("\r\n", "\r\nConnection: close\r\n", 1);
        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(raw.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Found by review: a site sending the proxy's own header would have its page taken for
    /// a refusal. The proxy strips it from every site's answer, and puts it on its own: a
    /// refusal, a target that refuses the connection, one that closes it without answering.
    #[tokio::test]
    async fn only_the_proxy_says_it_answered_itself() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let spoof = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    let _ = s
                        .write_all(b"HTTP/1.1 200 OK\r\nX-Crawlsieve-Egress: refused by crawlsieve: h resolves to 10.0.0.5, a private address\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
                        .await;
                });
            }
        });
        let closes = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let hangs_up = closes.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((s, _)) = closes.accept().await {
                drop(s);
            }
        });
        let nobody = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let e = Egress::start(Policy {
            allow: vec!["127.0.0.1".into()],
        })
        .await
        .unwrap();
        let get = |a: SocketAddr| format!("GET http://{a}/x HTTP/1.1\r\nHost: {a}\r\n\r\n");
        let r = ask(e.addr(), get(spoof)).await.to_ascii_lowercase();
        assert!(
            r.starts_with("http/1.1 200") && !r.contains(EGRESS_HEADER),
            "{r}"
        );
        for target in [hangs_up, nobody] {
            let r = ask(e.addr(), get(target)).await.to_ascii_lowercase();
            assert!(
                r.starts_with("http/1.1 502")
                    && r.contains(&format!("{EGRESS_HEADER}: unreachable")),
                "{r}"
            );
        }
    }

    #[tokio::test]
    async fn forwards_what_is_allowed_and_refuses_the_rest() {
        let (ok, ok_hits) = target().await;
        let (bad, bad_hits) = target().await;
        let e = Egress::start(Policy {
            allow: vec![format!("127.0.0.1:{}", ok.port())],
        })
        .await
        .unwrap();
        let p = e.addr();
        let r = ask(
            p,
            format!("GET http://{ok}/x HTTP/1.1\r\nHost: {ok}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("hello"), "{r}");
        for raw in [
            format!("GET http://{bad}/x HTTP/1.1\r\nHost: {bad}\r\n\r\n"),
            format!("CONNECT {bad} HTTP/1.1\r\nHost: {bad}\r\n\r\n"),
            format!(
                "CONNECT [::ffff:127.0.0.1]:{0} HTTP/1.1\r\nHost: x\r\n\r\n",
                bad.port()
            ),
            format!(
                "GET http://localhost:{0}/ HTTP/1.1\r\nHost: x\r\n\r\n",
                bad.port()
            ),
            format!(
                "GET http://127.1:{0}/ HTTP/1.1\r\nHost: x\r\n\r\n",
                bad.port()
            ),
            format!(
                "GET http://0x7f000001:{0}/ HTTP/1.1\r\nHost: x\r\n\r\n",
                bad.port()
            ),
        ] {
            let r = ask(p, raw.clone()).await;
            assert!(r.starts_with("HTTP/1.1 403"), "{raw:?} → {r}");
        }
        // A tunnel to an allowed target carries bytes both ways.
        let mut s = TcpStream::connect(p).await.unwrap();
        s.write_all(format!("CONNECT {ok} HTTP/1.1\r\nHost: {ok}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut head = [0u8; 19];
        s.read_exact(&mut head).await.unwrap();
        assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
        let mut rest = Vec::new();
        // The rest of the proxy's header block, then the target's answer.
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
        assert!(String::from_utf8_lossy(&rest).ends_with("hello"));
        // An origin-form request (someone using the proxy as a web server) is refused.
        let r = ask(p, "GET / HTTP/1.1\r\nHost: x\r\n\r\n".into()).await;
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        assert_eq!(
            bad_hits.load(Ordering::SeqCst),
            0,
            "the refused target was reached"
        );
        assert_eq!(ok_hits.load(Ordering::SeqCst), 2);
        assert_eq!(e.stats().refused.load(Ordering::Relaxed), 6);
        assert!(e.refusals()[0].contains("loopback"), "{:?}", e.refusals());
    }

    /// DNS rebinding: the name answers with an allowed address once and a forbidden one after.
    /// The proxy resolves once per connection and connects to the address it checked.
    #[tokio::test]
    async fn connects_to_the_address_it_checked() {
        let (ok, ok_hits) = target().await;
        let bad_l = match TcpListener::bind(("127.0.0.2", ok.port())).await {
            Ok(l) => l,
            Err(_) => return, // the port is taken on 127.0.0.2: nothing to learn this run
        };
        let bad_hits = Arc::new(AtomicU64::new(0));
        let h = bad_hits.clone();
        tokio::spawn(async move {
            while bad_l.accept().await.is_ok() {
                h.fetch_add(1, Ordering::SeqCst);
            }
        });
        let calls = Arc::new(AtomicU64::new(0));
        let c = calls.clone();
        let lookup: Lookup = Arc::new(move |_host, _port| {
            let n = c.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                Ok(vec![if n == 0 {
                    "127.0.0.1".parse().unwrap()
                } else {
                    "127.0.0.2".parse().unwrap()
                }])
            })
        });
        let e = Egress::start_with(
            Policy {
                allow: vec![format!("127.0.0.1:{}", ok.port())],
            },
            lookup,
        )
        .await
        .unwrap();
        let host = format!("rebind.example:{}", ok.port());
        let r = ask(
            e.addr(),
            format!("GET http://{host}/ HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(r.ends_with("hello"), "{r}");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "one resolution per connection"
        );
        // The second resolution answers with the forbidden address: refused, not connected.
        let r = ask(
            e.addr(),
            format!("CONNECT {host} HTTP/1.1\r\nHost: {host}\r\n\r\n"),
        )
        .await;
        assert!(r.starts_with("HTTP/1.1 403"), "{r}");
        assert_eq!(ok_hits.load(Ordering::SeqCst), 1);
        assert_eq!(bad_hits.load(Ordering::SeqCst), 0);
    }
}
