//! Which URLs the renderer may load. It loads pages an attacker may have planted, so by default
//! only http(s) URLs whose host resolves to public addresses: never loopback, private (RFC 1918,
//! unique-local), link-local (including the cloud metadata address 169.254.169.254), CGNAT,
//! multicast, unspecified or documentation ranges — unless the host or address is allow-listed
//! (tests allow their loopback server explicitly).

use std::net::IpAddr;

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

/// The class of a non-public address, or `None` for a public one.
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
            } else if v.is_documentation() || o[0] >= 240 {
                Some("reserved")
            } else {
                None
            }
        }
        IpAddr::V6(v) => {
            if let Some(v4) = v.to_ipv4_mapped() {
                return non_public(IpAddr::V4(v4));
            }
            let s = v.segments();
            if v.is_loopback() {
                Some("loopback")
            } else if v.is_unspecified() || v.is_multicast() {
                Some("unroutable")
            } else if (s[0] & 0xfe00) == 0xfc00 {
                Some("private (unique-local)")
            } else if (s[0] & 0xffc0) == 0xfe80 {
                Some("link-local")
            } else if s[0] == 0xfd00 && s[1] == 0x0ec2 {
                Some("link-local (cloud metadata)")
            } else {
                None
            }
        }
    }
}

/// The allow-list: host names (exact, case-insensitive) and addresses.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Allowed hosts or IP addresses, even when not public.
    pub allow: Vec<String>,
}

impl Policy {
    /// Check `url`, resolving its host; returns the URL parsed.
    pub async fn check(&self, url: &str) -> Result<url::Url, Refused> {
        let u = url::Url::parse(url).map_err(|e| Refused::Invalid(format!("{url}: {e}")))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(Refused::Scheme(u.scheme().to_string()));
        }
        let host = u
            .host_str()
            .unwrap_or("")
            .trim_matches(['[', ']'])
            .to_string();
        if self.allow.iter().any(|a| a.eq_ignore_ascii_case(&host)) {
            return Ok(u);
        }
        let port = u.port_or_known_default().unwrap_or(80);
        let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => tokio::net::lookup_host((host.as_str(), port))
                .await
                .map_err(|_| Refused::Unresolved(host.clone()))?
                .map(|a| a.ip())
                .collect(),
        };
        if addrs.is_empty() {
            return Err(Refused::Unresolved(host));
        }
        for ip in addrs {
            if self.allow.iter().any(|a| a.parse::<IpAddr>() == Ok(ip)) {
                continue;
            }
            if let Some(kind) = non_public(ip) {
                return Err(Refused::Private { host, ip, kind });
            }
        }
        Ok(u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
