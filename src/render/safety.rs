//! Which URLs the renderer may load. It loads pages an attacker may have planted, so by default
//! only http(s) URLs whose host resolves to public addresses — the egress policy of
//! [`crate::net`], which the gate's robots.txt fetches use too (one policy, one place).

#[cfg(test)]
use crate::net::parse_allow;
pub use crate::net::{non_public, system_lookup, Lookup, Policy, Refused};

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
