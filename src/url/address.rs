//! Special-purpose IP addresses (IANA's registries) and the gate's fetch-safety check on a
//! canonical URL's host. One table for the whole crate: the render stage refuses to load such an
//! address ([`crate::render::safety`]), and the sieve rejects a candidate that names one as an IP
//! literal (`private_address`), so a fetcher downstream without an egress policy of its own is
//! never pointed at the crawler's own network by a planted link. Pure functions, no I/O: a host
//! *name* is not resolved here (the renderer resolves and checks at connect time).

use std::net::IpAddr;

use super::Reason;

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

/// The address a canonical URL's host names, when it is an IP literal (`127.0.0.1`, `[::1]`).
/// The canonicalizer has already written every IPv4 spelling (decimal, octal, hex, short forms)
/// as dotted decimal, and IPv6 in brackets.
pub fn host_ip(host: &str) -> Option<IpAddr> {
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse().ok().map(IpAddr::V6);
    }
    if host.ends_with(|c: char| c.is_ascii_digit()) {
        return host.parse().ok().map(IpAddr::V4);
    }
    None
}

/// Whether `host` is a name that always means this machine: `localhost` and `*.localhost`
/// (RFC 6761, and what browsers do).
pub fn is_localhost_name(host: &str) -> bool {
    let h = host.strip_suffix('.').unwrap_or(host);
    h.eq_ignore_ascii_case("localhost")
        || h.len() > 10 && h[h.len() - 10..].eq_ignore_ascii_case(".localhost")
}

/// One allow-list entry of [`AddressPolicy`].
#[derive(Debug, Clone, PartialEq)]
enum Allowed {
    /// Every special-purpose literal (`*`).
    Any,
    /// An address range: `10.0.0.0/8`, `fd00::/8`, or one address.
    Net(IpAddr, u8),
    /// A name (`localhost`, `intranet.localhost`), exact, case-insensitive.
    Name(String),
}

/// Which special-purpose hosts a candidate may name (`[sieve] allow_private`, `--allow-private`):
/// none by default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AddressPolicy {
    allow: Vec<Allowed>,
}

impl AddressPolicy {
    /// A policy allowing `entries`: `*` (everything: the check is off), an address or a CIDR
    /// range (`10.0.0.0/8`, `192.168.1.5`, `fd00::/8`, `::1`), or a localhost name.
    pub fn new<S: AsRef<str>>(entries: &[S]) -> Result<AddressPolicy, String> {
        let mut allow = Vec::new();
        for e in entries {
            let e = e.as_ref().trim();
            let a = if e == "*" {
                Allowed::Any
            } else if let Some((ip, bits)) = e.split_once('/') {
                let ip: IpAddr = ip
                    .trim_matches(['[', ']'])
                    .parse()
                    .map_err(|_| format!("allow_private entry {e:?}: not an address range"))?;
                let max = if ip.is_ipv4() { 32 } else { 128 };
                let bits: u8 = bits.parse().ok().filter(|&b| b <= max).ok_or_else(|| {
                    format!("allow_private entry {e:?}: prefix length over {max}")
                })?;
                Allowed::Net(ip, bits)
            } else if let Ok(ip) = e.trim_matches(['[', ']']).parse::<IpAddr>() {
                Allowed::Net(ip, if ip.is_ipv4() { 32 } else { 128 })
            } else if is_localhost_name(e) {
                Allowed::Name(e.to_ascii_lowercase())
            } else {
                return Err(format!(
                    "allow_private entry {e:?}: use *, an address, a CIDR range or a localhost name"
                ));
            };
            allow.push(a);
        }
        Ok(AddressPolicy { allow })
    }

    /// Whether the check is off (`*`).
    pub fn allows_all(&self) -> bool {
        self.allow.contains(&Allowed::Any)
    }

    /// Judge a canonical URL (`scheme://host[:port]/…`): `private_address` when its host is a
    /// special-purpose IP literal or a localhost name the policy does not allow.
    pub fn check(&self, canonical: &str) -> Result<(), Reason> {
        let host = super::lex::UrlParts::of(canonical).host;
        if let Some(ip) = host_ip(host) {
            if non_public(ip).is_some() && !self.allows_ip(ip) {
                return Err(Reason::PrivateAddress);
            }
        } else if is_localhost_name(host) && !self.allows_name(host) {
            return Err(Reason::PrivateAddress);
        }
        Ok(())
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        self.allow.iter().any(|a| match a {
            Allowed::Any => true,
            Allowed::Net(net, bits) => in_net(ip, *net, *bits),
            Allowed::Name(_) => false,
        })
    }

    fn allows_name(&self, host: &str) -> bool {
        let h = host.strip_suffix('.').unwrap_or(host);
        self.allow.iter().any(|a| match a {
            Allowed::Any => true,
            Allowed::Name(n) => n.eq_ignore_ascii_case(h),
            Allowed::Net(..) => false,
        })
    }
}

/// Whether `ip` lies in `net/bits` (an IPv4-mapped IPv6 address is not an IPv4 one here).
fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - bits as u32).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - bits as u32).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// The shared test table: special-purpose addresses in every form issue 14 found passing (the
/// renderer's resolver and the sieve's literal check both refuse each; their tests iterate it).
#[cfg(test)]
pub(crate) const SPECIAL_PURPOSE: &[&str] = &[
    "127.0.0.1",
    "127.255.0.9",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.0.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "255.255.255.255",
    "224.0.0.1",
    "::1",
    "::",
    "fd00:ec2::254",
    "fc00::1",
    "fe80::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
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
];

/// Public twins of [`SPECIAL_PURPOSE`]'s forms.
#[cfg(test)]
pub(crate) const PUBLIC: &[&str] = &[
    "93.184.216.34",
    "198.20.0.1",
    "192.0.1.1",
    "64:ff9b::5db8:d822",
    "2002:5db8:d822::1",
    "2606:4700::1111",
    "2a00:1450:4001::200e",
];

/// `http://ADDR/` with `ADDR` written as a URL host (IPv6 in brackets).
#[cfg(test)]
pub(crate) fn url_of(addr: &str) -> String {
    if addr.contains(':') {
        format!("http://[{addr}]/")
    } else {
        format!("http://{addr}/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 14: every special-purpose form the issue found passing, and their public twins.
    #[test]
    fn special_purpose_addresses_are_not_public() {
        for a in SPECIAL_PURPOSE {
            let ip: IpAddr = a.parse().unwrap();
            assert!(non_public(ip).is_some(), "{a} passed as public");
        }
        for a in PUBLIC {
            let ip: IpAddr = a.parse().unwrap();
            assert_eq!(non_public(ip), None, "{a} refused");
        }
    }

    /// The gate's side: every special-purpose literal a canonical URL can carry is refused, its
    /// public twins pass, and the allow-list opens exactly what it names.
    #[test]
    fn canonical_urls_naming_special_purpose_hosts_are_refused() {
        let p = AddressPolicy::default();
        let canon = crate::url::Canonicalizer::default();
        for a in SPECIAL_PURPOSE {
            let u = canon.canonicalize(&url_of(a), None).unwrap().url;
            assert_eq!(p.check(&u), Err(Reason::PrivateAddress), "{a}: {u}");
        }
        for a in PUBLIC {
            let u = canon.canonicalize(&url_of(a), None).unwrap().url;
            assert_eq!(p.check(&u), Ok(()), "{a}: {u}");
        }
        for u in [
            "http://127.0.0.1/",
            "https://127.0.0.1:8443/x?y",
            "http://10.1.2.3/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/",
            "http://[::ffff:7f00:1]/",
            "http://[fd00:ec2::254]/",
            "http://0.0.0.0/",
            "http://user@192.168.0.1:8080/",
            "http://localhost/",
            "http://LOCALHOST.:3000/",
            "http://api.localhost/",
        ] {
            assert_eq!(p.check(u), Err(Reason::PrivateAddress), "{u}");
        }
        for u in [
            "http://93.184.216.34/",
            "https://[2606:4700::1111]/",
            "https://example.com/127.0.0.1",
            "https://10.example/",
            "https://localhost.example/",
            "https://notlocalhost/",
        ] {
            assert_eq!(p.check(u), Ok(()), "{u}");
        }
        let intranet = AddressPolicy::new(&["10.0.0.0/8", "::1", "dev.localhost"]).unwrap();
        assert_eq!(intranet.check("http://10.200.3.4/"), Ok(()));
        assert_eq!(intranet.check("http://[::1]:8080/"), Ok(()));
        assert_eq!(intranet.check("http://dev.localhost/"), Ok(()));
        assert_eq!(intranet.check("http://11.0.0.1/"), Ok(()), "public anyway");
        assert_eq!(
            intranet.check("http://192.168.1.1/"),
            Err(Reason::PrivateAddress)
        );
        assert_eq!(
            intranet.check("http://localhost/"),
            Err(Reason::PrivateAddress)
        );
        assert!(AddressPolicy::new(&["*"])
            .unwrap()
            .check("http://127.0.0.1/")
            .is_ok());
        for bad in ["10.0.0.0/33", "example.com", "::1/129", "nonsense/8"] {
            assert!(AddressPolicy::new(&[bad]).is_err(), "{bad}");
        }
    }
}
