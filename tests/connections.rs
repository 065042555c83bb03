//! Production connections (issue 45): Redis over TLS (`rediss://`, a CA by flag or
//! `SSL_CERT_FILE`, mutual TLS), credentials and database numbers that fail with their fix and
//! the right exit code, `bloom list`, and `serve` saying at start that Redis does not answer
//! and staying not-ready until it does. Servers: `redis-server`s of the tests' own (one with a
//! `--tls-port` and certificates `openssl` makes), a 3-node cluster for `bloom list`, and
//! `crawlsieve serve`. (The gate over TLS is in gate.rs, beside its Kafka helpers.)

mod common;

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, http_get, http_request, OwnCluster, OwnRedis, TlsRedis};

fn crawlsieve(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
    cmd.args(args)
        .env_remove("SSL_CERT_FILE")
        .env_remove("CRAWLSIEVE_REDIS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// 400 URL lines with repeats, junk and tracking parameters, in a file.
fn input() -> tempfile::NamedTempFile {
    let mut s = String::new();
    for i in 0..400 {
        match i % 5 {
            0 => s.push_str(&format!("https://a.example.com/item/{}\n", i / 2)),
            1 => s.push_str(&format!(
                "https://b.example.com/p?id={}&utm_source=x\n",
                i % 37
            )),
            2 => s.push_str("function(){return 1}\n"),
            3 => s.push_str(&format!("https://A.example.com/item/{}\n", i / 3)),
            _ => s.push_str(&format!("/docs/{}.html\n", i % 11)),
        }
    }
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), s).unwrap();
    f
}

#[test]
fn dedup_over_tls_gives_what_plain_tcp_gives_and_an_untrusted_certificate_exits_4() {
    let tls = TlsRedis::start(false);
    let file = input();
    let path = file.path().to_str().unwrap();
    let base = ["--base", "https://site.example/"];
    let run = |url: &str, ns: &str, extra: &[&str], env: &[(&str, &str)]| {
        let mut a = vec!["dedup", "--redis", url, "--namespace", ns, "-q"];
        a.extend_from_slice(&base);
        a.extend_from_slice(extra);
        a.push(path);
        crawlsieve(&a, env)
    };
    let plain = run(&tls.redis.url(), "plain", &[], &[]);
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert!(
        text(&plain.stdout).lines().count() > 100,
        "{}",
        text(&plain.stdout)
    );

    let ca = tls.certs.path("ca.crt");
    let by_flag = run(&tls.url(), "by-flag", &["--redis-ca", &ca], &[]);
    assert!(by_flag.status.success(), "{}", text(&by_flag.stderr));
    assert_eq!(text(&by_flag.stdout), text(&plain.stdout));
    let by_env = run(&tls.url(), "by-env", &[], &[("SSL_CERT_FILE", &ca)]);
    assert!(by_env.status.success(), "{}", text(&by_env.stderr));
    assert_eq!(text(&by_env.stdout), text(&plain.stdout));
    // The same namespace again over TLS: all seen.
    let again = run(&tls.url(), "by-flag", &[], &[("CRAWLSIEVE_REDIS_CA", &ca)]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), "");

    // No CA, or the wrong one: exit 4 at once (not after the minute of retries an outage
    // gets), naming the certificate and the fix.
    for extra in [
        &[][..],
        &["--redis-ca", &tls.certs.path("other-ca.crt")][..],
    ] {
        let t = Instant::now();
        let out = run(&tls.url(), "untrusted", extra, &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(
            err.contains("certificate") && err.contains("--redis-ca"),
            "{err}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "retried a refusal: {err}"
        );
        assert_eq!(text(&out.stdout), "");
    }
    // TLS files with a plain URL: a usage error.
    let out = run(&tls.redis.url(), "x", &["--redis-ca", &ca], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("rediss://"),
        "{}",
        text(&out.stderr)
    );

    // `bloom list` over TLS shows the namespaces just made.
    let out = crawlsieve(
        &["bloom", "list", "--redis", &tls.url(), "--redis-ca", &ca],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["namespaces"],
        serde_json::json!(["by-env", "by-flag", "plain"])
    );
}

#[test]
fn mutual_tls_takes_a_client_certificate() {
    let tls = TlsRedis::start(true);
    let file = input();
    let path = file.path().to_str().unwrap();
    let ca = tls.certs.path("ca.crt");
    let (cert, key) = (tls.certs.path("client.crt"), tls.certs.path("client.key"));
    let with_cert = crawlsieve(
        &[
            "dedup",
            "-q",
            "--redis",
            &tls.url(),
            "--redis-ca",
            &ca,
            "--redis-cert",
            &cert,
            "--redis-key",
            &key,
            path,
        ],
        &[],
    );
    assert!(with_cert.status.success(), "{}", text(&with_cert.stderr));
    let local = crawlsieve(&["dedup", "-q", path], &[]);
    assert_eq!(text(&with_cert.stdout), text(&local.stdout));
    // Without the client certificate the server turns the client away: exit 4.
    let without = crawlsieve(
        &[
            "dedup",
            "-q",
            "--namespace",
            "n2",
            "--redis",
            &tls.url(),
            "--redis-ca",
            &ca,
            path,
        ],
        &[],
    );
    assert_eq!(without.status.code(), Some(4), "{}", text(&without.stderr));
    // A certificate without its key: a usage error naming both flags.
    let half = crawlsieve(
        &[
            "dedup",
            "-q",
            "--redis",
            &tls.url(),
            "--redis-ca",
            &ca,
            "--redis-cert",
            &cert,
            path,
        ],
        &[],
    );
    assert_eq!(half.status.code(), Some(2), "{}", text(&half.stderr));
    assert!(
        text(&half.stderr).contains("--redis-key"),
        "{}",
        text(&half.stderr)
    );
}

#[test]
fn a_wrong_password_exits_4_and_a_missing_database_exits_2_with_the_fix() {
    let redis = OwnRedis::start(&[]);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("sekret")
        .query(&mut redis.con())
        .unwrap();
    let file = input();
    let path = file.path().to_str().unwrap();
    let at = |auth: &str, db: &str| format!("redis://{auth}127.0.0.1:{}{db}", redis.port);
    for (url, code, says) in [
        (at(":wrong@", ""), 4, "redis://USER:PASSWORD@"),
        (at("", ""), 4, "redis://USER:PASSWORD@"),
        (at(":sekret@", "/99"), 2, "databases"),
    ] {
        let t = Instant::now();
        let out = crawlsieve(&["dedup", "-q", "--redis", &url, path], &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{url}: {err}");
        assert!(err.contains(says), "{url}: {err}");
        assert!(
            !err.contains("sekret"),
            "the password is not printed: {err}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "retried a refusal: {err}"
        );
        let out = crawlsieve(&["bloom", "list", "--redis", &url], &[]);
        assert_eq!(
            out.status.code(),
            Some(code),
            "bloom list {url}: {}",
            text(&out.stderr)
        );
    }
    let out = crawlsieve(
        &["dedup", "-q", "--redis", &at(":sekret@", "/3"), path],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn bloom_list_finds_the_namespaces_on_every_master_of_a_cluster() {
    let cluster = OwnCluster::start();
    let url = cluster.url();
    let names: Vec<String> = (0..12).map(|i| format!("ns-{i:02}")).collect();
    for n in &names {
        let out = crawlsieve(
            &["bloom", "--redis", &url, "create", n, "--capacity", "1000"],
            &[],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    // Their metadata keys hash to different slots: more than one master holds some.
    let holders = cluster
        .nodes
        .iter()
        .filter(|n| {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("cs:{*}:meta")
                .query(&mut n.con())
                .unwrap();
            !keys.is_empty()
        })
        .count();
    assert!(
        holders > 1,
        "all namespaces on one master: the test proves nothing"
    );
    let out = crawlsieve(&["bloom", "list", "--redis", &url], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["namespaces"], serde_json::json!(names));
}

/// `crawlsieve serve` as a child, its stderr in a file (read while it runs).
struct Serve {
    child: std::process::Child,
    port: u16,
    log: tempfile::NamedTempFile,
}

impl Serve {
    fn start(sets: &[String]) -> Serve {
        let port = free_port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
        cmd.arg("serve")
            .args(["--set", &format!("serve.listen=127.0.0.1:{port}")])
            .args([
                "--set",
                "metrics.probe_interval=200ms",
                "--set",
                "redis.timeout=1s",
            ])
            .env("CRAWLSIEVE_API_TOKENS", "t0ken")
            .env_remove("CRAWLSIEVE_CONFIG")
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap());
        for s in sets {
            cmd.arg("--set").arg(s);
        }
        let child = cmd.spawn().unwrap();
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "serve did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Serve { child, port, log }
    }

    fn log(&self) -> String {
        let mut s = String::new();
        self.log.reopen().unwrap().read_to_string(&mut s).unwrap();
        s
    }

    fn ready(&self) -> (bool, String) {
        let r = http_get(self.port, "/readyz");
        (r.starts_with("HTTP/1.1 200"), r)
    }

    fn filter(&self, urls: &[&str]) -> (u16, serde_json::Value) {
        let body = serde_json::json!({"namespace": "conn", "urls": urls}).to_string();
        let req = format!(
            "POST /v1/filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nAuthorization: Bearer t0ken\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let resp = http_request(self.port, req.as_bytes());
        let status = resp[9..12].parse().unwrap();
        let json = resp.split("\r\n\r\n").nth(1).unwrap_or("");
        (
            status,
            serde_json::from_str(json).unwrap_or(serde_json::Value::Null),
        )
    }

    fn wait_until(&self, what: &str, mut f: impl FnMut() -> bool) {
        let t = Instant::now();
        while !f() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "{what}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_says_at_start_that_redis_does_not_answer_and_gets_ready_when_it_does() {
    let mut redis = OwnRedis::start(&[]);
    redis.kill();
    let s = Serve::start(&[format!("redis.url={}", redis.url())]);
    s.wait_until("no error at start", || {
        s.log().contains("Redis does not answer")
    });
    let (ready, why) = s.ready();
    assert!(!ready, "{why}");
    assert!(
        why.contains("does not answer") && why.contains(&redis.port.to_string()),
        "{why}"
    );
    assert_eq!(s.filter(&["https://a.example/1"]).0, 503);
    redis.restart();
    s.wait_until("never ready", || s.ready().0);
    assert!(s.log().contains("Redis answers"), "{}", s.log());
    let (status, v) = s.filter(&["https://a.example/1"]);
    assert_eq!(
        (status, &v["new"]),
        (200, &serde_json::json!(["https://a.example/1"]))
    );
}

#[test]
fn serve_works_over_tls_and_names_an_untrusted_certificate() {
    let tls = TlsRedis::start(false);
    let s = Serve::start(&[
        format!("redis.url={}", tls.url()),
        format!("redis.tls_ca={}", tls.certs.path("ca.crt")),
    ]);
    s.wait_until("never ready over TLS", || s.ready().0);
    let (status, v) = s.filter(&["https://a.example/1", "https://a.example/1?utm_source=x"]);
    assert_eq!(
        (status, &v["new"]),
        (200, &serde_json::json!(["https://a.example/1"])),
        "{v}"
    );
    drop(s);
    // Without the CA: not ready, and the log and /readyz say why.
    let s = Serve::start(&[format!("redis.url={}", tls.url())]);
    s.wait_until("no certificate error", || s.log().contains("certificate"));
    let (ready, why) = s.ready();
    assert!(!ready && why.contains("--redis-ca"), "{why}");
}

/// A TLS server that closes the connection mid-handshake (restarting, at `maxclients`) is an
/// outage to wait out, not a refusal: `dedup` retries it for `--redis-retry-for` (found by
/// review: every handshake error read as a certificate problem, and ended the run at once).
#[test]
fn a_connection_closed_mid_handshake_is_retried_not_refused() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let a2 = accepted.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            a2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(c); // closed before any TLS is spoken
        }
    });
    let file = input();
    let url = format!("rediss://127.0.0.1:{port}");
    let out = crawlsieve(
        &[
            "dedup",
            "--redis",
            &url,
            "--redis-retry-for",
            "2s",
            file.path().to_str().unwrap(),
        ],
        &[],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("retrying"), "not retried: {err}");
    assert!(
        !err.contains("--redis-ca"),
        "read as a certificate problem: {err}"
    );
    assert!(
        accepted.load(std::sync::atomic::Ordering::SeqCst) > 1,
        "{err}"
    );
}
