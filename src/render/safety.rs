//! Which URLs the renderer may load. It loads pages an attacker may have planted, so by default
//! only http(s) URLs whose host resolves to public addresses: never loopback, private (RFC 1918,
//! unique-local), link-local (including the cloud metadata address 169.254.169.254), CGNAT,
//! multicast, unspecified, documentation, benchmarking, site-local or other reserved ranges (IANA's
//! special-purpose registries), nor an IPv6 form that carries one of those IPv4 addresses
//! (mapped, compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) — unless the host or address is
//! allow-listed (tests allow their loopback server explicitly).

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
    #[error("{host} resolves to {ip}, a {kind} address (allow it with render.allow)")]
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
fn parse_allow(entry: &str) -> (&str, Option<u16>) {
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

impl Policy {
    /// Whether an entry allows `host` (a name, or an address's text) or `ip`, on `port`.
    fn allows(&self, host: &str, ip: Option<IpAddr>, port: u16) -> bool {
        self.allow.iter().any(|entry| {
            let (h, p) = parse_allow(entry.trim());
            let same =
                h.eq_ignore_ascii_case(host) || ip.is_some_and(|ip| h.parse::<IpAddr>() == Ok(ip));
            same && p.map_or(true, |p| p == port)
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
    /// The egress proxy ([`super::egress`]) connects to exactly the addresses returned, so a name
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The renderer refuses every address of the shared table ([`crate::url::address`]'s, which
    /// the sieve refuses as literals too) and loads their public twins.
    #[tokio::test]
    async fn refuses_every_special_purpose_address_of_the_shared_table() {
        use crate::url::address::{url_of, PUBLIC, SPECIAL_PURPOSE};
        let p = Policy::default();
        for a in SPECIAL_PURPOSE {
            let u = url_of(a);
            assert!(
                matches!(p.check(&u).await, Err(Refused::Private { .. })),
                "{u}"
            );
        }
        for a in PUBLIC {
            assert!(p.check(&url_of(a)).await.is_ok(), "{a}");
        }
    }

    #[tokio::test]
    async fn refuses_what_is_not_public() {
        let p = Policy::default();
        for u in [
            "http://127.0.0.1:8080/",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/",
            "http://[fd00:ec2::254]/",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
        ] {
            assert!(
                matches!(p.check(u).await, Err(Refused::Private { .. })),
                "{u}"
            );
        }
        assert!(matches!(
            p.check("file:///etc/passwd").await,
            Err(Refused::Scheme(_))
        ));
        assert!(matches!(
            p.check("javascript:alert(1)").await,
            Err(Refused::Scheme(_))
        ));
        assert!(p.check("http://93.184.216.34/").await.is_ok());
        let allow = Policy {
            allow: vec!["127.0.0.1".into()],
        };
        assert!(allow.check("http://127.0.0.1:8080/").await.is_ok());
        assert!(allow.check("http://10.0.0.1/").await.is_err());
        // Issue 14: allowing one loopback port does not open the others.
        let one_port = Policy {
            allow: vec![
                "127.0.0.1:8080".into(),
                "[::1]:8081".into(),
                "localhost:3000".into(),
                " ::1 ".into(),
            ],
        };
        assert!(one_port.check("http://127.0.0.1:8080/").await.is_ok());
        assert!(one_port.check("http://127.0.0.1:6379/").await.is_err());
        assert!(one_port.check("http://127.0.0.1/").await.is_err());
        assert!(one_port.check("http://localhost:3000/").await.is_ok());
        assert!(one_port.check("http://localhost:3001/").await.is_err());
        // A bare `::1` allows every port of it; `[::1]:8081` adds nothing beyond that.
        assert!(one_port.check("http://[::1]:9999/").await.is_ok());
        let v6 = Policy {
            allow: vec!["[::1]:8081".into()],
        };
        assert!(v6.check("http://[::1]:8081/").await.is_ok());
        assert!(v6.check("http://[::1]:8082/").await.is_err());
        assert_eq!(parse_allow("example.org"), ("example.org", None));
        assert_eq!(parse_allow("example.org:x"), ("example.org:x", None));
        assert_eq!(parse_allow("fe80::1"), ("fe80::1", None));
    }
}
