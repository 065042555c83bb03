//! `crawlsieve serve`, the HTTP filter API, as a real process against real Redis: auth, limits,
//! malformed input, verdicts, a Redis outage, and a bounded concurrent load across namespaces.

mod common;

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, http_get, http_request, metric, promtool_check, shared_redis, OwnRedis};
use serde_json::{json, Value};

const TOKEN: &str = "s3cret-token-for-tests";

/// A `crawlsieve serve` child, stopped with SIGTERM on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(redis: &str, sets: &[&str]) -> Server {
        let port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
        cmd.arg("serve")
            .arg("--set")
            .arg(format!("serve.listen=127.0.0.1:{port}"))
            .arg("--set")
            .arg(format!("redis.url={redis}"))
            .args([
                "--set",
                "redis.capacity=1000000",
                "--set",
                "redis.fp_rate=1e-9",
            ])
            .args([
                "--set",
                "redis.timeout=1s",
                "--set",
                "metrics.probe_interval=200ms",
            ])
            .env("CRAWLSIEVE_API_TOKENS", format!("other-token,{TOKEN}"))
            .env_remove("CRAWLSIEVE_CONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
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
        Server { child, port }
    }

    /// POST /v1/filter: (status, headers and body as text, body parsed when JSON).
    fn post(&self, token: Option<&str>, body: &[u8]) -> (u16, String, Value) {
        self.post_to("/v1/filter", token, body)
    }

    /// POST `path`, as [`Server::post`].
    fn post_to(&self, path: &str, token: Option<&str>, body: &[u8]) -> (u16, String, Value) {
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let mut req = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        parse(&http_request(self.port, &req))
    }

    fn filter(&self, v: &Value) -> Value {
        let (status, raw, body) = self.post(Some(TOKEN), v.to_string().as_bytes());
        assert_eq!(status, 200, "{raw}");
        body
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn parse(resp: &str) -> (u16, String, Value) {
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {resp:?}"));
    let body = resp.split("\r\n\r\n").nth(1).unwrap_or("");
    (
        status,
        resp.to_string(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// A unique namespace name (the shared Redis keeps other tests' namespaces).
fn ns(tag: &str) -> String {
    format!(
        "api-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            % 1_000_000_007
    )
}

fn drop_ns(redis: &str, names: &[String]) {
    let cfg = crawlsieve::redis_filter::RedisConfig::new(redis);
    for n in names {
        let _ = crawlsieve::redis_filter::RedisFilter::drop_namespace(&cfg, n);
    }
}

/// Validators for the OpenAPI document's component schemas.
fn openapi(component: &str) -> jsonschema::Validator {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schemas/filter-api.v1.openapi.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let schema = json!({
        "$ref": format!("#/components/schemas/{component}"),
        "components": doc["components"],
    });
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn auth_limits_and_malformed_input_get_clear_errors() {
    let s = Server::start(
        shared_redis(),
        &["serve.max_body_bytes=4096", "serve.max_urls=50"],
    );
    let errors = openapi("Error");
    let n = ns("auth");
    let ok_body = json!({"namespace": n, "urls": ["https://a.example/x"]}).to_string();

    // No token, a wrong one, a prefix of the right one, another scheme: 401 with a challenge.
    for token in [None, Some("wrong"), Some(&TOKEN[..TOKEN.len() - 1])] {
        let (status, raw, body) = s.post(token, ok_body.as_bytes());
        assert_eq!(status, 401, "{raw}");
        assert!(raw.contains("www-authenticate: Bearer"), "{raw}");
        assert_eq!(error_code(&body), "unauthorized");
        assert!(errors.is_valid(&body), "{body}");
    }
    let basic = format!(
        "POST /v1/filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Basic {TOKEN}\r\nContent-Length: {}\r\n\r\n{ok_body}",
        ok_body.len()
    );
    assert_eq!(parse(&http_request(s.port, basic.as_bytes())).0, 401);
    // Either configured token works; the scheme is case-insensitive.
    assert_eq!(s.post(Some("other-token"), ok_body.as_bytes()).0, 200);
    let lower = format!(
        "POST /v1/filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nauthorization: bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n{ok_body}",
        ok_body.len()
    );
    assert_eq!(parse(&http_request(s.port, lower.as_bytes())).0, 200);

    // Oversized bodies: declared, and chunked without a length.
    let big =
        json!({"namespace": n, "urls": vec!["https://a.example/".repeat(20); 40]}).to_string();
    assert!(big.len() > 4096);
    let (status, raw, body) = s.post(Some(TOKEN), big.as_bytes());
    assert_eq!(status, 413, "{raw}");
    assert_eq!(error_code(&body), "body_too_large");
    let mut chunked = format!(
        "POST /v1/filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for part in big.as_bytes().chunks(1000) {
        chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        chunked.extend_from_slice(part);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (status, raw, body) = parse(&http_request(s.port, &chunked));
    assert_eq!(status, 413, "{raw}");
    assert_eq!(error_code(&body), "body_too_large");

    // Too many URLs (small enough a body).
    let many = json!({"namespace": n, "urls": vec!["x"; 51]}).to_string();
    let (status, _, body) = s.post(Some(TOKEN), many.as_bytes());
    assert_eq!((status, error_code(&body)), (413, "too_many_urls"));

    // Malformed JSON, JSON of the wrong shape, a bad namespace name.
    for (bad, code, want) in [
        (
            &b"{\"urls\": [\"https://a.example/\""[..],
            400,
            "malformed_json",
        ),
        (b"not json at all", 400, "malformed_json"),
        (b"", 400, "malformed_json"),
        (
            b"{\"urls\": \"https://a.example/\"}",
            422,
            "invalid_request",
        ),
        (b"{\"namespace\": \"x\"}", 422, "invalid_request"),
        (b"{\"urls\": [], \"extra\": 1}", 422, "invalid_request"),
        (b"[1, 2]", 422, "invalid_request"),
        (
            b"{\"namespace\": \"no spaces\", \"urls\": []}",
            422,
            "invalid_request",
        ),
    ] {
        let (status, raw, body) = s.post(Some(TOKEN), bad);
        assert_eq!(status, code, "{}: {raw}", String::from_utf8_lossy(bad));
        assert_eq!(error_code(&body), want, "{raw}");
        assert!(errors.is_valid(&body), "{body}");
    }
    // Unknown endpoint, wrong method: JSON errors too.
    let (status, _, body) = parse(&http_get(s.port, "/v2/nothing"));
    assert_eq!((status, error_code(&body)), (404, "not_found"));
    let (status, _, body) = parse(&http_get(s.port, "/v1/filter"));
    assert_eq!((status, error_code(&body)), (405, "method_not_allowed"));

    // The server still works after all of that, and its metrics pass promtool.
    assert_eq!(s.post(Some(TOKEN), ok_body.as_bytes()).0, 200);
    let m = http_get(s.port, "/metrics");
    promtool_check(&m);
    assert_eq!(
        metric(&m, "crawlsieve_serve_requests_total", "code=\"401\""),
        4.0
    );
    assert!(metric(&m, "crawlsieve_serve_requests_total", "code=\"413\"") >= 3.0);
    drop_ns(shared_redis(), &[n]);
}

/// A `source` that is no page's absolute URL is a mistake to say (422), not a request whose
/// relative candidates all come back `no_base` (fifth newcomer run).
#[test]
fn a_source_without_a_scheme_is_refused() {
    let s = Server::start(shared_redis(), &[]);
    let n = ns("badsource");
    let body = json!({"namespace": n, "source": "docs.example.org", "urls": ["settings.html"]});
    let (code, _, v) = s.post(Some(TOKEN), body.to_string().as_bytes());
    assert_eq!(code, 422, "{v}");
    assert_eq!(v["error"]["code"], "invalid_request", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("https://docs.example.org"),
        "{v}"
    );
    drop_ns(shared_redis(), &[n]);
}

#[test]
fn verdicts_follow_the_gate_rules() {
    let s = Server::start(shared_redis(), &[]);
    let responses = openapi("FilterResponse");
    let n = ns("verdicts");
    let r = s.filter(&json!({
        "namespace": n,
        "source": "https://shop.example/list/",
        "urls": [
            "https://shop.example/item?b=2&a=1",
            "HTTPS://SHOP.example:443/item?b=2&a=1#frag",
            "function(){return a}",
            "item?b=2&a=1",
            "../about",
            "</div>",
            42,
            {"u": "https://shop.example/"},
            "{{x}}",
            "/application/json",
            "https://shop.example/item?b=2&a=1",
        ]
    }));
    assert!(responses.is_valid(&r), "{r}");
    assert_eq!(r["namespace"], n.as_str());
    assert_eq!(r["received"], 11);
    let new: Vec<&str> = r["new"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // The canonical form (case, default port, fragment, parameter order) is the same page;
    // within a request only the first counts as new. Relative ones resolve against `source`.
    assert_eq!(
        new,
        [
            "https://shop.example/item?a=1&b=2",
            "https://shop.example/list/item?a=1&b=2",
            "https://shop.example/about"
        ],
        "{r}"
    );
    assert_eq!(r["new_index"], json!([0, 3, 4]));
    assert_eq!(r["duplicates"], 2);
    let reasons: HashMap<u64, &str> = r["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["index"].as_u64().unwrap(), x["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(reasons[&2], "js_code", "{r}");
    assert_eq!(reasons[&5], "html_tag", "{r}");
    assert_eq!(reasons[&6], "not_a_string");
    assert_eq!(reasons[&7], "not_a_string");
    assert_eq!(reasons[&8], "template_syntax", "{r}");
    assert_eq!(reasons[&9], "mime_type", "{r}");
    assert_eq!(reasons.len(), 6);
    assert_eq!(r["rejected"][2]["url"], "42");

    // Seen now: a second request gets duplicates. check_only does not mark.
    let again = s.filter(&json!({"namespace": n, "urls": [new[0], "https://shop.example/fresh"], "check_only": true}));
    assert_eq!(again["new"], json!(["https://shop.example/fresh"]));
    assert_eq!(again["duplicates"], 1);
    let third = s.filter(&json!({"filter_typeid": n, "urls": ["https://shop.example/fresh"]}));
    assert_eq!(
        third["new"],
        json!(["https://shop.example/fresh"]),
        "seed 001's filter_typeid works, and check_only did not mark"
    );
    // Relative without a source: no_base. Another namespace: new again.
    let other = ns("verdicts-other");
    let r2 = s.filter(&json!({"namespace": other, "urls": [new[0], "img/a.png"]}));
    assert_eq!(r2["new"], json!([new[0]]));
    assert_eq!(r2["rejected"][0]["reason"], "no_base");

    // Pattern verdicts from the render stage apply as in the gate.
    let pat = crawlsieve::url::pattern::pattern("https://shop.example/p/123");
    let mut con = redis::Client::open(shared_redis())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut conn = crawlsieve::redis_filter::Conn::connect(
        &crawlsieve::redis_filter::RedisConfig::new(shared_redis()),
    )
    .unwrap();
    crawlsieve::pattern_verdicts::write(&mut conn, &other, &pat, 3, 0.97).unwrap();
    // The API reads the namespace's verdict index at most once a second (crate::pattern_verdicts).
    std::thread::sleep(Duration::from_millis(1100));
    let r3 = s.filter(&json!({"namespace": other, "urls": ["https://shop.example/p/456"]}));
    assert_eq!(r3["rejected"][0]["reason"], "pattern_similar", "{r3}");
    let _: () = redis::cmd("DEL")
        .arg(crawlsieve::pattern_verdicts::key(&other, &pat))
        .query(&mut con)
        .unwrap();

    let m = http_get(s.port, "/metrics");
    assert!(
        metric(
            &m,
            "crawlsieve_serve_urls_rejected_total",
            "reason=\"not_a_string\""
        ) >= 2.0
    );
    assert!(metric(&m, "crawlsieve_serve_urls_emitted_total", "") >= 5.0);
    drop_ns(shared_redis(), &[n, other]);
}

/// Redis goes away: 503 `unavailable` with Retry-After, /readyz 503; back: 200 again.
#[test]
fn redis_outage_is_a_503_not_a_wrong_answer() {
    let mut redis = OwnRedis::start(&[]);
    let s = Server::start(&redis.url(), &[]);
    let body = json!({"namespace": "outage", "urls": ["https://a.example/1"]});
    assert_eq!(s.filter(&body)["new"], json!(["https://a.example/1"]));
    assert!(parse(&http_get(s.port, "/readyz")).1.contains("ready"));
    redis.kill();
    // A URL seen before may be answered by the client's local tier (still right); a new one
    // needs Redis.
    let body = json!({"namespace": "outage", "urls": ["https://a.example/2"]});
    let (status, raw, b) = s.post(Some(TOKEN), body.to_string().as_bytes());
    assert_eq!(status, 503, "{raw}");
    assert_eq!(error_code(&b), "unavailable");
    assert!(raw.contains("retry-after: 1"), "{raw}");
    let t = Instant::now();
    while parse(&http_get(s.port, "/readyz")).0 != 503 {
        assert!(t.elapsed() < Duration::from_secs(10), "readyz stays 200");
        std::thread::sleep(Duration::from_millis(100));
    }
    redis.restart();
    let t = Instant::now();
    loop {
        let (status, raw, b) = s.post(Some(TOKEN), body.to_string().as_bytes());
        if status == 200 {
            assert_eq!(b["new"], json!(["https://a.example/2"]), "{raw}");
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "no recovery: {raw}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let t = Instant::now();
    while parse(&http_get(s.port, "/readyz")).0 != 200 {
        assert!(t.elapsed() < Duration::from_secs(10), "readyz stays 503");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// 8 clients × 25 requests × 200 URLs over 4 namespaces, with URLs repeated within and across
/// clients and namespaces: every distinct URL of a namespace comes back new exactly once (none
/// lost, none twice), only in that namespace, and every response accounts for all it received.
#[test]
fn concurrent_load_loses_nothing_and_never_mixes_namespaces() {
    let s = Server::start(shared_redis(), &["serve.workers=2"]);
    let names: Vec<String> = (0..4).map(|i| ns(&format!("load{i}"))).collect();
    let (clients, requests, per) = (8usize, 25usize, 200usize);
    let results: Vec<Vec<(usize, Vec<String>, Value)>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let (s, names) = (&s, &names);
                sc.spawn(move || {
                    let mut out = Vec::new();
                    for r in 0..requests {
                        let ns = (c + r) % 4;
                        let mut urls: Vec<String> = (0..per)
                            .map(|j| {
                                let k = (r * per + j * 7 + c * 13) % 3000;
                                format!("https://h{}.example/p/{k}?x={}", k % 17, j % 3)
                            })
                            .collect();
                        urls[0] = "function(){}".into(); // one reject per request
                        let resp = s.filter(&json!({"namespace": names[ns], "urls": urls}));
                        out.push((ns, urls, resp));
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut sent: Vec<HashSet<String>> = vec![HashSet::new(); 4];
    let mut got: Vec<Vec<String>> = vec![Vec::new(); 4];
    for (ns, urls, resp) in results.into_iter().flatten() {
        assert_eq!(resp["namespace"], names[ns].as_str());
        let new: Vec<String> = serde_json::from_value(resp["new"].clone()).unwrap();
        let idx: Vec<usize> = serde_json::from_value(resp["new_index"].clone()).unwrap();
        let rejected = resp["rejected"].as_array().unwrap().len();
        let dups = resp["duplicates"].as_u64().unwrap() as usize;
        assert_eq!(new.len() + rejected + dups, urls.len(), "{resp}");
        assert_eq!(rejected, 1);
        for (u, i) in new.iter().zip(&idx) {
            assert_eq!(
                u, &urls[*i],
                "a new URL is the one at its index (canonical inputs)"
            );
        }
        sent[ns].extend(urls.into_iter().skip(1));
        got[ns].extend(new);
    }
    for ns in 0..4 {
        let unique: HashSet<&String> = got[ns].iter().collect();
        assert_eq!(
            unique.len(),
            got[ns].len(),
            "namespace {ns}: a URL came back new twice"
        );
        let want: HashSet<&String> = sent[ns].iter().collect();
        assert_eq!(unique, want, "namespace {ns}: lost or foreign URLs");
    }
    let total: usize = got.iter().map(Vec::len).sum();
    assert!(total > 4 * 2000, "the load overlaps namespaces: {total}");
    drop_ns(shared_redis(), &names);
}

/// Clients that hang up while their request is being filtered (wrk does, at the end of a run)
/// must not cost the server its filter clients: afterwards it still answers.
#[test]
fn clients_hanging_up_mid_request_do_not_break_the_server() {
    use std::io::Write;
    let s = Server::start(shared_redis(), &["serve.workers=1"]);
    let n = ns("hangup");
    for round in 0..12 {
        let urls: Vec<String> = (0..5000)
            .map(|i| format!("https://hang.example/{round}/{i}"))
            .collect();
        let body = json!({"namespace": n, "urls": urls}).to_string();
        let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        write!(
            c,
            "POST /v1/filter HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        // Hang up while the request is being filtered, without reading the answer.
        std::thread::sleep(Duration::from_millis(5 + 5 * (round % 4)));
        drop(c);
    }
    std::thread::sleep(Duration::from_millis(500));
    let r = s.filter(&json!({"namespace": n, "urls": ["https://hang.example/after"]}));
    assert_eq!(r["new"], json!(["https://hang.example/after"]));
    drop_ns(shared_redis(), &[n]);
}

/// The Python client in docs/api.md (seed 001's `FilterAPI`) works against the real server:
/// filtered lists come back, and errors raise with the server's error code.
#[test]
fn the_documented_python_client_works() {
    let s = Server::start(shared_redis(), &[]);
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md")).unwrap();
    let start = doc
        .find("```python\n")
        .expect("a python block in docs/api.md")
        + 10;
    let code = &doc[start..start + doc[start..].find("```").unwrap()];
    let n = ns("sdk");
    let script = format!(
        "{code}\nimport sys\nurl = 'http://127.0.0.1:{port}/v1/filter'\n\
         print(json.dumps(FilterAPI('{n}', ['https://www.baidu.com/', 'http://www.2cto.com', 'https://www.baidu.com/', '</div>'], '{TOKEN}', url=url)))\n\
         print(json.dumps(FilterAPI('{n}', ['https://www.baidu.com/', 'item/1'], '{TOKEN}', source='https://www.2cto.com/list/', url=url)))\n\
         try:\n    FilterAPI('{n}', ['x'], 'wrong', url=url)\nexcept FilterAPIError as e:\n    print(e.status, e.error_code)\n",
        port = s.port
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0], r#"["https://www.baidu.com/", "http://www.2cto.com/"]"#,
        "{text}"
    );
    assert_eq!(
        lines[1], r#"["https://www.2cto.com/list/item/1"]"#,
        "{text}"
    );
    assert_eq!(lines[2], "401 unauthorized");
    drop_ns(shared_redis(), &[n]);
}

/// `[sieve]` configures the rules as `dedup`'s flags do: strict profile, extra stripped
/// parameters, opt-in merges.
#[test]
fn the_sieve_section_sets_the_rules() {
    let s = Server::start(
        shared_redis(),
        &[
            "sieve.profile=strict",
            "sieve.strip_params=[\"ref\"]",
            "sieve.merge=[\"www\"]",
        ],
    );
    let n = ns("sieve");
    let r = s.filter(&json!({"namespace": n, "urls": [
        "https://www.shop.example/a?ref=mail&id=1",
        "https://shop.example/a?id=1",
        "https://shop.example/a b",
    ]}));
    // `ref` is stripped; www. is merged for dedup only (the emitted URL keeps it).
    assert_eq!(r["new"], json!(["https://www.shop.example/a?id=1"]), "{r}");
    assert_eq!(r["duplicates"], 1, "{r}");
    assert_eq!(
        r["rejected"][0]["reason"], "whitespace",
        "strict profile: {r}"
    );
    drop_ns(shared_redis(), &[n]);
}

/// `POST /v1/filter` with an extra header line.
fn post_with(s: &Server, header: &str, body: &[u8]) -> (u16, String, Value) {
    let mut req = format!(
        "POST /v1/filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nAuthorization: Bearer {TOKEN}\r\n{header}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    parse(&http_request(s.port, &req))
}

/// Issue 13: a client that retries a request whose answer it never got (a timeout after the
/// server ran it, a cut connection) is told the same thing again with the same
/// `Idempotency-Key`, never that its new URLs are duplicates.
#[test]
fn an_idempotency_key_answers_a_retry_with_the_first_answer() {
    let s = Server::start(shared_redis(), &[]);
    let ns = format!("idem-{}", free_port());
    let body = json!({"namespace": ns, "urls": ["https://i.example/1", "https://i.example/2", "https://i.example/1", "mailto:x@y"]})
        .to_string();
    // The first attempt runs on the server, but its answer never reaches the client (its
    // timeout fired: it hangs up without reading).
    {
        use std::io::Write;
        let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        let req = format!(
            "POST /v1/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer {TOKEN}\r\nIdempotency-Key: k-1\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        c.write_all(req.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(500));
    }
    // The retry gets the first answer (replayed): both URLs new, not duplicates.
    let (status, raw, b) = post_with(&s, "Idempotency-Key: k-1", body.as_bytes());
    assert_eq!(status, 200, "{raw}");
    assert_eq!(
        b["new"],
        json!(["https://i.example/1", "https://i.example/2"]),
        "{raw}"
    );
    assert_eq!(b["new_index"], json!([0, 1]));
    assert_eq!(b["duplicates"], 1);
    assert_eq!(b["rejected"][0]["reason"], "non_fetchable_scheme");
    assert!(
        raw.to_ascii_lowercase()
            .contains("idempotent-replayed: true"),
        "{raw}"
    );
    // And again: the same.
    let (_, _, again) = post_with(&s, "Idempotency-Key: k-1", body.as_bytes());
    assert_eq!(again, b);
    // Without the key, or with another, they are duplicates now (they were delivered).
    let (_, _, plain) = post_with(&s, "X-Other: 1", body.as_bytes());
    assert_eq!(plain["new"], json!([]));
    let (_, _, other) = post_with(&s, "Idempotency-Key: k-2", body.as_bytes());
    assert_eq!(other["new"], json!([]));
    // The same key for another body is refused.
    let body2 = json!({"namespace": ns, "urls": ["https://i.example/3"]}).to_string();
    let (status, raw, e) = post_with(&s, "Idempotency-Key: k-1", body2.as_bytes());
    assert_eq!(status, 422, "{raw}");
    assert_eq!(e["error"]["code"], "idempotency_key_reused");
    // A malformed key is a clear error.
    let (status, _, e) = post_with(&s, "Idempotency-Key: has space", body2.as_bytes());
    assert_eq!(status, 400);
    assert_eq!(e["error"]["code"], "invalid_request");
    drop_ns(shared_redis(), &[ns]);
}

/// The idempotent path survives a process dying between claiming and answering: the retry,
/// in another process, finds the claims still under the key's token and answers new.
#[test]
fn an_idempotent_request_interrupted_after_claiming_is_answered_new_on_retry() {
    use crawlsieve::config::Config as GateConfig;
    use crawlsieve::decision::Verdict;
    use crawlsieve::gate::{GateCore, Idem};
    use crawlsieve::observe::FilterMetrics;
    use crawlsieve::redis_filter::{Expect, RedisConfig, RedisFilter};
    let ns = format!("idem-crash-{}", free_port());
    let mut cfg = GateConfig::default();
    cfg.redis.url = shared_redis().to_string();
    cfg.redis.namespace = ns.clone();
    let idem = Idem {
        name: format!("test-{ns}"),
        token: 4242,
        request: "r1".into(),
        ttl: Duration::from_secs(60),
    };
    let urls = vec![
        "https://crash.example/a".to_string(),
        "https://crash.example/b".to_string(),
    ];
    // The "first process" claims under the key's token and dies before storing the answer.
    {
        let mut core = GateCore::new(cfg.clone(), FilterMetrics::unregistered());
        core.filter_direct(&ns, None, &[], false, None)
            .unwrap()
            .unwrap();
        let mut f =
            RedisFilter::attach(RedisConfig::new(shared_redis()), &ns, &Expect::default()).unwrap();
        let mut s = crawlsieve::sieve::Sieve::new(Default::default(), Default::default(), None);
        let fps: Vec<u128> = urls
            .iter()
            .map(|u| {
                s.classify(u.as_bytes(), false).unwrap();
                s.dedup_fingerprint()
            })
            .collect();
        let mut out = Vec::new();
        f.claim_as(idem.token, &fps, &mut out).unwrap();
        assert_eq!(out, [true, true]);
    }
    // Another client without the key waits on those claims, then (the holder being gone)
    // takes them over after its busy wait: it may publish them too (a repeat, never a loss).
    // The retry with the key answers them new.
    let mut core = GateCore::new(cfg, FilterMetrics::unregistered());
    let (v, replayed) = core
        .filter_direct(&ns, None, &urls, false, Some(&idem))
        .unwrap()
        .unwrap();
    assert!(!replayed);
    assert_eq!(
        v,
        [
            (Verdict::New, "https://crash.example/a".to_string()),
            (Verdict::New, "https://crash.example/b".to_string())
        ]
    );
    // Stored and confirmed: the next retry replays, others see duplicates.
    let (v2, replayed) = core
        .filter_direct(&ns, None, &urls, false, Some(&idem))
        .unwrap()
        .unwrap();
    assert!(replayed);
    assert_eq!(v2, v);
    let (v3, _) = core
        .filter_direct(&ns, None, &urls, false, None)
        .unwrap()
        .unwrap();
    assert_eq!(
        v3,
        [
            (Verdict::Duplicate, String::new()),
            (Verdict::Duplicate, String::new())
        ]
    );
    drop_ns(shared_redis(), &[ns]);
}

/// `crawlsieve serve --log-format json` writes one JSON object per line: the listening event
/// carries the address as a field, and a SIGTERM ends the process cleanly.
#[test]
fn serve_logs_json_lines() {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["serve", "--log-format", "json", "--set"])
        .arg(format!("serve.listen=127.0.0.1:{port}"))
        .arg("--set")
        .arg(format!("redis.url={}", shared_redis()))
        .env("CRAWLSIEVE_API_TOKENS", TOKEN)
        .env("CRAWLSIEVE_LOG", "info")
        .env_remove("CRAWLSIEVE_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "serve did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(http_get(port, "/healthz").starts_with("HTTP/1.1 200"));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines = common::json_log_lines(&err);
    let listening = common::log_event(&lines, "listening");
    assert_eq!(listening["level"], "INFO", "{listening}");
    assert_eq!(listening["target"], "crawlsieve::serve", "{listening}");
    assert_eq!(
        listening["fields"]["address"],
        format!("127.0.0.1:{port}"),
        "{listening}"
    );
    assert_eq!(listening["fields"]["tokens"], 1, "{listening}");
    // A fatal error is a JSON line too (a configuration value that is wrong: exit status 2,
    // the usage code of the exit-code contract).
    let out = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args([
            "serve",
            "--log-format",
            "json",
            "--set",
            "serve.listen=nonsense",
        ])
        .env_remove("CRAWLSIEVE_CONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let lines = common::json_log_lines(&String::from_utf8_lossy(&out.stderr));
    let e = common::log_event(&lines, "error");
    assert_eq!(e["level"], "ERROR", "{e}");
    assert!(
        e["fields"]["error"]
            .as_str()
            .unwrap()
            .contains("serve.listen"),
        "{e}"
    );
}

/// Issue 17: a request's `context` decodes its candidates before they are judged; the
/// rejected ones are echoed as sent.
#[test]
fn the_request_context_decodes_candidates() {
    let srv = Server::start(shared_redis(), &[]);
    let name = ns("ctx");
    let r = srv.filter(&json!({
        "namespace": name,
        "source": "https://s.example/",
        "context": "js",
        "urls": ["\\/api\\/v2\\/users", "\\u002Fdocs\\x2Fintro", "javascript:void(0)"]
    }));
    assert_eq!(
        r["new"],
        json!([
            "https://s.example/api/v2/users",
            "https://s.example/docs/intro"
        ]),
        "{r}"
    );
    assert_eq!(r["rejected"][0]["url"], "javascript:void(0)", "{r}");
    let (status, _, e) = srv.post(
        Some(TOKEN),
        json!({"namespace": name, "urls": ["/x"], "context": "html"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(status, 422, "{e}");
    drop_ns(shared_redis(), &[name]);
}

/// Issue 18: `[scope]` judges each request's URLs after canonicalization, and a namespace's own
/// `[scopes.NAME]` replaces it for that namespace; the reasons come back per URL.
#[test]
fn scope_and_a_namespace_s_own_scope_apply_to_requests() {
    let shop = ns("scope-shop");
    let docs = ns("scope-docs");
    let own = format!(r#"scopes."{shop}".allow_domains=["shop.example"]"#);
    let srv = Server::start(
        shared_redis(),
        &[
            r#"scope.allow_domains=["docs.example"]"#,
            "scope.max_depth=2",
            r#"scope.deny=["/private/"]"#,
            &own,
        ],
    );
    let r = srv.filter(&json!({
        "namespace": docs,
        "source": "https://docs.example/guide/",
        "urls": ["intro", "https://shop.example/", "/a/b/c", "/private/x", "https://www.docs.example/"]
    }));
    assert_eq!(
        r["new"],
        json!([
            "https://docs.example/guide/intro",
            "https://www.docs.example/"
        ]),
        "{r}"
    );
    let reasons: Vec<&str> = r["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        ["out_of_scope_domain", "too_deep", "denied_by_rule"],
        "{r}"
    );
    // The shop namespace has its own scope (no depth limit, no deny rules, another domain).
    let r = srv.filter(&json!({
        "namespace": shop,
        "urls": ["https://shop.example/a/b/c/d", "https://docs.example/"]
    }));
    assert_eq!(r["new"], json!(["https://shop.example/a/b/c/d"]), "{r}");
    assert_eq!(r["rejected"][0]["reason"], "out_of_scope_domain", "{r}");
    drop_ns(shared_redis(), &[shop, docs]);
}

/// Issue 25: `POST /v1/forget` lets given URLs through once more — judged and canonicalized as
/// `/v1/filter` does, counted, refused where it cannot work (a bloom namespace, `check_only`),
/// authenticated like `/v1/filter`, and its answers are what the OpenAPI document says.
#[test]
fn forget_lets_urls_through_exactly_once_more() {
    let redis = OwnRedis::start(&[]);
    let s = Server::start(&redis.url(), &[]);
    let forget =
        |token: Option<&str>, v: &Value| s.post_to("/v1/forget", token, v.to_string().as_bytes());
    let urls = json!([
        "https://shop.example/a?b=2&a=1",
        "https://shop.example/b",
        "https://shop.example/c",
    ]);
    let r = s.filter(&json!({"namespace": "fg", "urls": urls}));
    assert_eq!(r["new"].as_array().unwrap().len(), 3, "{r}");
    let r = s.filter(&json!({"namespace": "fg", "urls": urls}));
    assert_eq!(r["duplicates"], 3, "{r}");

    // Another spelling of the first URL (the canonical form is what is forgotten), the second,
    // a junk candidate and a non-string.
    let (status, raw, body) = forget(
        Some(TOKEN),
        &json!({"namespace": "fg", "urls": [
            "https://SHOP.example/a?a=1&b=2#frag", "https://shop.example/b", "function(){}", 7
        ]}),
    );
    assert_eq!(status, 200, "{raw}");
    assert!(openapi("ForgetResponse").is_valid(&body), "{body}");
    assert_eq!(body["forgotten"], 2, "{body}");
    assert_eq!(body["received"], 4, "{body}");
    let rejected: Vec<(u64, &str)> = body["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["index"].as_u64().unwrap(), r["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(rejected.len(), 2, "{body}");
    assert_eq!(rejected[0].0, 2);
    assert_eq!(rejected[1], (3, "not_a_string"));

    // Published exactly once more: new on the next call, duplicates after.
    let r = s.filter(&json!({"namespace": "fg", "urls": urls}));
    assert_eq!(
        r["new"],
        json!(["https://shop.example/a?a=1&b=2", "https://shop.example/b"]),
        "{r}"
    );
    assert_eq!(r["duplicates"], 1, "{r}");
    let r = s.filter(&json!({"namespace": "fg", "urls": urls}));
    assert_eq!(r["duplicates"], 3, "{r}");
    // Forgetting what is not held counts nothing.
    let (_, _, body) = forget(
        Some(TOKEN),
        &json!({"namespace": "fg", "urls": ["https://shop.example/never"]}),
    );
    assert_eq!(body["forgotten"], 0, "{body}");

    // Refusals.
    let (status, _, body) = forget(None, &json!({"namespace": "fg", "urls": []}));
    assert_eq!((status, error_code(&body)), (401, "unauthorized"));
    let (status, _, body) = forget(
        Some(TOKEN),
        &json!({"namespace": "fg", "urls": [], "check_only": true}),
    );
    assert_eq!((status, error_code(&body)), (422, "invalid_request"));
    drop(s);
    // A bloom namespace forgets too (its re-admit set).
    let bloom = Server::start(&redis.url(), &["redis.mode=\"bloom\""]);
    bloom.filter(&json!({"namespace": "fg-bloom", "urls": urls}));
    let body = bloom.post_to(
        "/v1/forget",
        Some(TOKEN),
        json!({"namespace": "fg-bloom", "urls": ["https://shop.example/c"]})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(
        (body.0, &body.2["forgotten"]),
        (200, &json!(1)),
        "{}",
        body.1
    );
    let r = bloom.filter(&json!({"namespace": "fg-bloom", "urls": urls}));
    assert_eq!(r["new"], json!(["https://shop.example/c"]), "{r}");
    let r = bloom.filter(&json!({"namespace": "fg-bloom", "urls": urls}));
    assert_eq!(r["duplicates"], 3, "{r}");
}

/// Learned parameter rules (issue 26) apply to the API as to the gate: a rule published in
/// Redis drops its parameter for its host (within a second), a revocation lets it through.
#[test]
fn learned_parameter_rules_apply_to_requests() {
    use crawlsieve::page::params::Learned;
    let own = common::OwnRedis::start(&[]);
    let s = Server::start(&own.url(), &["patterns.learned_params_verify_one_in=0"]);
    let mut conn = crawlsieve::redis_filter::Conn::connect(
        &crawlsieve::redis_filter::RedisConfig::new(&own.url()),
    )
    .unwrap();
    let n = ns("learned");
    let urls = |tag: &str| {
        json!({"namespace": n, "urls": [
            format!("https://shop.example/doc?sid={tag}1"),
            format!("https://shop.example/doc?sid={tag}2"),
            format!("https://other.example/doc?sid={tag}1"),
        ]})
    };
    let r = s.filter(&urls("a"));
    assert_eq!(r["new"].as_array().unwrap().len(), 3, "no rule yet: {r}");
    let learned = Learned {
        host: "shop.example".into(),
        param: "sid".into(),
        values: 5,
        paths: 3,
        samples: 4,
        example: "https://shop.example/doc?sid=a1".into(),
    };
    crawlsieve::params::publish(&mut conn, &n, &learned).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let r = s.filter(&urls("b"));
    // `sid` left out of the dedup key for shop.example only: one new URL there (as linked),
    // its variant a duplicate.
    assert_eq!(
        r["new"],
        json!([
            "https://shop.example/doc?sid=b1",
            "https://other.example/doc?sid=b1"
        ]),
        "{r}"
    );
    assert_eq!(r["duplicates"], 1, "{r}");
    crawlsieve::params::revoke(&mut conn, &n, "shop.example", "sid", "operator").unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let r = s.filter(&urls("c"));
    assert_eq!(r["new"].as_array().unwrap().len(), 3, "revoked: {r}");
}
