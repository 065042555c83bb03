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

/// The class of a non-public address, or `None` for a public one. Follows IANA's special-purpose
/// address registries; IPv6 forms that carry an IPv4 address (mapped, translated, compatible,
/// NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by that IPv4 address.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v) => {
            let o = v.octets();
            if v.is_loopback() {
                Some("loopback")
            } else if v.is_private() {
                Some("private")
            } else if v.is_link_local() {
                Some("link-local (cloud metadata)")
            } else if o[0] == 100 && (64..128).contains(&o[1]) {
                Some("carrier-grade NAT")
            } else if v.is_unspecified() || v.is_broadcast() || v.is_multicast() || o[0] == 0 {
                Some("unroutable")
            } else if v.is_documentation()
                || o[0] >= 240
                || (o[0], o[1], o[2]) == (192, 0, 0) // IETF protocol assignments
                || (o[0], o[1], o[2]) == (192, 88, 99) // 6to4 relay anycast (deprecated)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
            // benchmarking 198.18.0.0/15
            {
                Some("reserved")
            } else {
                None
            }
        }
        IpAddr::V6(v) => {
            let s = v.segments();
            if v.is_loopback() {
                return Some("loopback");
            }
            if v.is_unspecified() || v.is_multicast() {
                return Some("unroutable");
            }
            if let Some(v4) = embedded_v4(&s) {
                return non_public(IpAddr::V4(v4)).or(
                    // `::a.b.c.d` (IPv4-compatible) is deprecated: nothing public uses it.
                    if s[..6] == [0; 6] {
                        Some("reserved (IPv4-compatible)")
                    } else {
                        None
                    },
                );
            }
            if (s[0] & 0xfe00) == 0xfc00 {
                Some("private (unique-local)")
            } else if (s[0] & 0xffc0) == 0xfe80 {
                Some("link-local")
            } else if (s[0] & 0xffc0) == 0xfec0 {
                Some("site-local (deprecated)")
            } else if s[0] == 0xfd00 && s[1] == 0x0ec2 {
                Some("link-local (cloud metadata)")
            } else if s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 1 {
                Some("NAT64 local use")
            } else if (s[0] == 0x2001 && s[1] == 0x0db8) || (s[0] & 0xfff0) == 0x3ff0 {
                Some("reserved (documentation)")
            } else if s[0] == 0x2001
                && (s[1] == 0
                    || s[1] == 2
                    || (s[1] & 0xffe0) == 0x0020
                    || (s[1] & 0xfff0) == 0x0010)
            {
                // Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID 2001:10::/28, 2001:20::/28
                Some("reserved")
            } else if s[..4] == [0x0100, 0, 0, 0] {
                Some("reserved (discard)")
            } else {
                None
            }
        }
    }
}

/// The IPv4 address an IPv6 address carries, where it is one of the forms that route to it:
/// mapped `::ffff:0:0/96`, translated `::ffff:0:0:0/96`, compatible `::/96`, NAT64
/// `64:ff9b::/96`, 6to4 `2002::/16`.
fn embedded_v4(s: &[u16; 8]) -> Option<std::net::Ipv4Addr> {
    let low =
        |a: u16, b: u16| std::net::Ipv4Addr::new((a >> 8) as u8, a as u8, (b >> 8) as u8, b as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, a, b]
        | [0, 0, 0, 0, 0xffff, 0, a, b]
        | [0, 0, 0, 0, 0, 0, a, b] => Some(low(*a, *b)),
        [0x0064, 0xff9b, 0, 0, 0, 0, a, b] => Some(low(*a, *b)),
        [0x2002, a, b, ..] => Some(low(*a, *b)),
        _ => None,
    }
}

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

    /// Issue 14: every special-purpose form the issue found passing, and their public twins.
    #[test]
    fn special_purpose_addresses_are_not_public() {
        for a in [
            "::127.0.0.1",
            "::ffff:0:127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2002:c0a8:1::",
            "fec0::1",
            "2001:db8::1",
            "3fff::1",
            "2001::1",
            "2001:2::1",
            "2001:10::1",
            "100::1",
            "::8.8.8.8",
            "198.18.0.1",
            "198.19.255.255",
            "192.0.0.8",
            "192.88.99.1",
            "192.0.2.1",
            "203.0.113.5",
        ] {
            let ip: IpAddr = a.parse().unwrap();
            assert!(non_public(ip).is_some(), "{a} passed as public");
        }
        for a in [
            "93.184.216.34",
            "198.20.0.1",
            "192.0.1.1",
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
        ] {
            let ip: IpAddr = a.parse().unwrap();
            assert_eq!(non_public(ip), None, "{a} refused");
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
