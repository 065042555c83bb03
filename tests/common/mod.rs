//! Helpers shared by the integration tests: the shared data folder beside the checkout.

#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared/data/<rel>`; panics with a clear message when the shared folder is missing.
pub fn shared(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(rel);
    assert!(
        p.exists(),
        "shared test data {} is missing: the tests expect ../shared beside the checkout",
        p.display()
    );
    p
}

/// JSON Lines of a shared file.
pub fn jsonl(rel: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(shared(rel))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A validator for the newest `schemas/<name>.vN.json` (formats checked).
pub fn schema_validator(name: &str) -> jsonschema::Validator {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let newest = (1..10)
        .filter(|v| dir.join(format!("{name}.v{v}.json")).is_file())
        .max()
        .unwrap_or_else(|| panic!("no schemas/{name}.vN.json"));
    schema_validator_version(name, newest)
}

/// A validator for `schemas/<name>.v<version>.json` (formats checked).
pub fn schema_validator_version(name: &str, version: u32) -> jsonschema::Validator {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("schemas/{name}.v{version}.json"));
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// An environment variable parsed, or `default` (benchmark knobs).
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The Redis the tests of one test binary share (each in namespaces of its own): a
/// redis-server of the binary's own on a free port, started on first use and killed when the
/// test process ends, however it ends. Never the machine's 127.0.0.1:6379, which belongs to
/// whoever runs the tests.
#[allow(dead_code)]
pub fn shared_redis() -> &'static str {
    static URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    URL.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("shared-redis".into())
            .spawn(move || {
                // Started from a thread that lives as long as the process: the server gets
                // SIGKILL when it ends (`setpriv --pdeathsig` follows the starting thread).
                let r = OwnRedis::start_with(&[], true);
                tx.send(r.url()).unwrap();
                loop {
                    std::thread::park();
                }
            })
            .unwrap();
        rx.recv()
            .expect("the shared redis-server did not start (see the panic above)")
    })
}

/// A free TCP port on 127.0.0.1 (bound and released; fine for tests).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A redis-server of the test's own, killed on drop.
pub struct OwnRedis {
    pub port: u16,
    pub dir: tempfile::TempDir,
    child: Option<std::process::Child>,
    args: Vec<String>,
    /// Started through `setpriv --pdeathsig KILL` ([`shared_redis`]).
    pdeathsig: bool,
}

impl OwnRedis {
    /// Start `redis-server` on a free port with extra `args` (e.g. `--appendonly yes`).
    pub fn start(args: &[&str]) -> OwnRedis {
        OwnRedis::start_with(args, false)
    }

    /// [`OwnRedis::start`], through `setpriv --pdeathsig KILL` when `pdeathsig`.
    fn start_with(args: &[&str], pdeathsig: bool) -> OwnRedis {
        let mut r = OwnRedis {
            port: 0,
            dir: tempfile::tempdir().unwrap(),
            child: None,
            args: args.iter().map(|s| s.to_string()).collect(),
            pdeathsig,
        };
        // The free port may be taken by another test before redis binds it: try another.
        for _ in 0..3 {
            r.port = free_port();
            if r.try_restart() {
                return r;
            }
            r.kill();
        }
        panic!("redis-server did not start on three free ports");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// SIGKILL the server (no shutdown save).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start it again on the same port and directory; waits until it answers PING.
    pub fn restart(&mut self) {
        if !self.try_restart() {
            panic!("redis-server on port {} did not start", self.port);
        }
    }

    /// [`OwnRedis::restart`], false when it does not answer within 10 s or exits (port taken).
    fn try_restart(&mut self) -> bool {
        self.kill();
        let mut cmd = if self.pdeathsig {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--pdeathsig", "KILL", "redis-server"]);
            c
        } else {
            std::process::Command::new("redis-server")
        };
        let child = cmd
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                &self.port.to_string(),
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.args)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed (scripts/test.sh installs it)");
        self.child = Some(child);
        for _ in 0..200 {
            if let Ok(c) = redis::Client::open(self.url()) {
                if let Ok(mut con) = c.get_connection() {
                    if redis::cmd("PING").query::<String>(&mut con).is_ok() {
                        return true;
                    }
                }
            }
            if let Some(Ok(Some(_))) = self.child.as_mut().map(|c| c.try_wait()) {
                return false; // it exited: the port was taken
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }

    /// A plain connection for test-side commands.
    pub fn con(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Certificates `openssl` makes for a TLS test, in a directory of their own: a CA
/// (`ca.crt`), a server certificate for 127.0.0.1 and localhost (`server.crt`, `server.key`) and
/// a client certificate (`client.crt`, `client.key`), both signed by the CA; and a second CA
/// (`other-ca.crt`) that signed nothing here.
#[allow(dead_code)]
pub struct TestCerts {
    pub dir: tempfile::TempDir,
}

#[allow(dead_code)]
impl TestCerts {
    pub fn make() -> TestCerts {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let out = std::process::Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .output()
                .expect("openssl must be installed (scripts/test.sh installs it)");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        for ca in ["ca", "other-ca"] {
            run(&[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN=crawlsieve test {ca}"),
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.crt"),
            ]);
        }
        std::fs::write(
            dir.path().join("ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
        )
        .unwrap();
        for who in ["server", "client"] {
            run(&[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                &format!("/CN={who}"),
                "-keyout",
                &format!("{who}.key"),
                "-out",
                &format!("{who}.csr"),
            ]);
            run(&[
                "x509",
                "-req",
                "-in",
                &format!("{who}.csr"),
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                "ext",
                "-out",
                &format!("{who}.crt"),
            ]);
        }
        TestCerts { dir }
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_string_lossy().into_owned()
    }
}

/// A redis-server with a TLS port beside its plain one (the plain one for the test's own
/// commands and readiness), certificates from [`TestCerts`]; with `mutual`, TLS clients must
/// show a certificate the CA signed.
#[allow(dead_code)]
pub struct TlsRedis {
    pub redis: OwnRedis,
    pub tls_port: u16,
    pub certs: TestCerts,
}

#[allow(dead_code)]
impl TlsRedis {
    pub fn start(mutual: bool) -> TlsRedis {
        let certs = TestCerts::make();
        let tls_port = free_port().to_string();
        let (cert, key, ca) = (
            certs.path("server.crt"),
            certs.path("server.key"),
            certs.path("ca.crt"),
        );
        let auth = if mutual { "yes" } else { "no" };
        let redis = OwnRedis::start(&[
            "--tls-port",
            &tls_port,
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "--tls-ca-cert-file",
            &ca,
            "--tls-auth-clients",
            auth,
        ]);
        TlsRedis {
            redis,
            tls_port: tls_port.parse().unwrap(),
            certs,
        }
    }

    /// `rediss://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.tls_port)
    }
}

/// A 3-master Redis Cluster on loopback, torn down on drop.
pub struct OwnCluster {
    pub nodes: Vec<OwnRedis>,
}

impl OwnCluster {
    pub fn start() -> OwnCluster {
        let nodes: Vec<OwnRedis> = (0..3)
            .map(|_| {
                OwnRedis::start(&["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"])
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = std::process::Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli must be installed");
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        // Wait until every node agrees the cluster is ok.
        for n in &nodes {
            let mut ok = false;
            for _ in 0..100 {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut n.con())
                    .unwrap();
                if info.contains("cluster_state:ok") {
                    ok = true;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            assert!(ok, "cluster did not become ok");
        }
        OwnCluster { nodes }
    }

    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .map(|n| n.url())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `n` distinct URL fingerprints from a seed.
pub fn fps(seed: u64, n: usize) -> Vec<u128> {
    (0..n as u64)
        .map(|i| crawlsieve::bloom::fingerprint(format!("https://t{seed}.example/{i}").as_bytes()))
        .collect()
}

pub mod kafka;
pub mod proxy;
pub mod site;

/// `GET path` on 127.0.0.1:`port`: the whole response (status line, headers, body). HTTP/1.1
/// with `Connection: close` (hyper answers an HTTP/1.0 request with an HTTP/1.0 status line).
#[allow(dead_code)]
pub fn http_get(port: u16, path: &str) -> String {
    let raw = http_request(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .into_bytes(),
    );
    // A chunked body (Prometheus sends large answers so) is returned de-chunked.
    let Some((head, body)) = raw.split_once("\r\n\r\n") else {
        return raw;
    };
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return raw;
    }
    let (mut rest, mut out) = (body, String::new());
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    format!("{head}\r\n\r\n{out}")
}

/// Send raw `request` bytes to 127.0.0.1:`port` and read the response until the server
/// closes (give HTTP/1.0 or `Connection: close`).
#[allow(dead_code)]
pub fn http_request(port: u16, request: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    // The server may answer (413) and close before it read everything: a write error is fine.
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `promtool check metrics` accepts the body of a `/metrics` response (names, types, help,
/// conventions).
#[allow(dead_code)]
pub fn promtool_check(response: &str) {
    use std::io::Write;
    let body = response.split("\r\n\r\n").nth(1).expect("an HTTP body");
    let mut c = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (scripts/test.sh installs Debian's prometheus package)");
    c.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The value of an unlabelled metric, or of the first series whose labels contain `labels`.
#[allow(dead_code)]
pub fn metric(text: &str, name: &str, labels: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| {
            l.starts_with(name)
                && (l[name.len()..].starts_with(' ')
                    || (l[name.len()..].starts_with('{') && l.contains(labels)))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// The log lines of a component run with `--log-format json`: every line of `stderr` must be
/// one JSON object with `timestamp`, `level`, `target` and `fields` (a line that is not fails
/// the test, naming it).
#[allow(dead_code)]
pub fn json_log_lines(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}"));
            for k in ["timestamp", "level", "target", "fields"] {
                assert!(v.get(k).is_some(), "no {k:?} in the log line {l}");
            }
            v
        })
        .collect()
}

/// The first log line whose message is `message`.
#[allow(dead_code)]
pub fn log_event<'a>(lines: &'a [serde_json::Value], message: &str) -> &'a serde_json::Value {
    lines
        .iter()
        .find(|l| {
            l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(message))
        })
        .unwrap_or_else(|| panic!("no log event {message:?} in {lines:#?}"))
}

/// `crawlsieve gate --set …` as a child with its stderr piped; `CRAWLSIEVE_TEST_GATE_LOG=DIR`
/// keeps each gate's log (debug for the gate) in DIR instead (debugging a failure).
#[allow(dead_code)]
pub fn start_gate(sets: &[String]) -> std::process::Child {
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
    cmd.arg("gate");
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    let stderr = match std::env::var("CRAWLSIEVE_TEST_GATE_LOG") {
        Ok(dir) => {
            cmd.env("CRAWLSIEVE_LOG", "crawlsieve::gate=debug,info");
            let n = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            Stdio::from(std::fs::File::create(format!("{dir}/gate-{n}.log")).unwrap())
        }
        Err(_) => Stdio::piped(),
    };
    cmd.stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start the gate")
}

/// Stop a gate started by [`start_gate`] with SIGTERM and assert it exits cleanly (its log in
/// the message when it does not).
#[allow(dead_code)]
pub fn stop_gate(g: &mut std::process::Child) {
    unsafe { libc::kill(g.id() as i32, libc::SIGTERM) };
    let st = g.wait().unwrap();
    let mut err = String::new();
    if let Some(mut e) = g.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut err).unwrap();
    }
    assert!(st.success(), "gate exit {st}: {err}");
}

/// One url-event (`{"url": …}`) per URL.
#[allow(dead_code)]
pub fn url_events(urls: &[String]) -> Vec<Vec<u8>> {
    urls.iter()
        .map(|u| serde_json::json!({ "url": u }).to_string().into_bytes())
        .collect()
}
