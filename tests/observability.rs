//! A real Prometheus server (Debian's `prometheus`, installed by scripts/test.sh) scraping a
//! running gate, render stage and HTTP API on 127.0.0.1, with the alert rules of
//! `deploy/prometheus/` loaded: every PromQL expression of the Grafana dashboard returns data,
//! every rule evaluates without error, and each `/metrics` passes `promtool check metrics`.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::kafka::{create_topics, produce, Tansu};
use common::{free_port, http_get, http_request, promtool_check, shared_redis};
use serde_json::Value;

/// A child process killed (SIGTERM, then SIGKILL) on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn crawlsieve(args: &[&str], sets: &[String], env: &[(&str, &str)]) -> Proc {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crawlsieve"));
    c.args(args).env_remove("CRAWLSIEVE_CONFIG");
    for s in sets {
        c.arg("--set").arg(s);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    Proc(
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

fn wait_listening(port: u16, p: &mut Proc, what: &str) {
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = p.0.try_wait() {
            panic!("{what} exited ({status}) before it listened on {port}");
        }
        assert!(
            t.elapsed() < Duration::from_secs(90),
            "{what}: nothing on port {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn prom_api(port: u16, path: &str) -> Value {
    let resp = http_get(port, path);
    let body = resp.split("\r\n\r\n").nth(1).unwrap_or("");
    serde_json::from_str(body).unwrap_or(Value::Null)
}

fn query(port: u16, q: &str) -> Value {
    prom_api(port, &format!("/api/v1/query?query={}", encode(q)))
}

#[test]
fn prometheus_scrapes_every_stage_and_the_dashboard_has_data() {
    let site = common::site::serve();
    let k = Tansu::start();
    let b = k.brokers();
    create_topics(
        &b,
        &[
            ("urls", 2),
            ("fetch", 2),
            ("results", 2),
            ("urls.dead-letter", 1),
            ("fetch.dead-letter", 1),
        ],
    );
    let ns = format!("obs-{}-{}", std::process::id(), free_port());
    let (gport, rport, aport, pport) = (free_port(), free_port(), free_port(), free_port());
    let common_sets = |group: &str, port: u16| -> Vec<String> {
        vec![
            format!("kafka.brokers={b}"),
            format!("kafka.group_id={group}"),
            format!("redis.url={}", shared_redis()),
            format!("redis.namespace={ns}"),
            "redis.fp_rate=1e-9".into(),
            "redis.capacity=100000".into(),
            format!("metrics.listen=127.0.0.1:{port}"),
            "metrics.probe_interval=500ms".into(),
            "metrics.filter_stats_interval=1s".into(),
            "kafka.consumer.\"session.timeout.ms\"=6000".into(),
            "kafka.consumer.\"statistics.interval.ms\"=1000".into(),
            "kafka.batch_linger_ms=10".into(),
        ]
    };
    // Input: pages of the local site, a refused private address, junk, and poison messages.
    let mut input: Vec<Vec<u8>> = ["/a1", "/a2", "/p/1", "/p/2", "/p/3", "/login"]
        .iter()
        .map(|p| format!("{site}{p}").into_bytes())
        .collect();
    input.push(b"http://10.0.0.7/internal".to_vec());
    input.push(b"function(){return 1}".to_vec());
    input.push(b"</div>".to_vec());
    input.push(b"{\"url\": 5}".to_vec());
    input.push(vec![0xff, 0xfe, 0x00]);
    produce(&b, "urls", 2, &input);

    // The gate lets the loopback site and the private address through (allow-listed, as an
    // intranet crawl would), so the render stage is the one refusing 10.0.0.7.
    let mut gsets = common_sets("obs-gate", gport);
    gsets.push("sieve.allow_private=[\"127.0.0.1\", \"10.0.0.7\"]".into());
    let mut gate = crawlsieve(&["gate"], &gsets, &[]);
    let mut rsets = common_sets("obs-render", rport);
    // The site is on loopback (refused unless allow-listed); 10.0.0.7 stays refused: a failure.
    rsets.push("render.allow=[\"127.0.0.1\"]".into());
    rsets.push("render.page_timeout=\"15s\"".into());
    let mut render = crawlsieve(&["render"], &rsets, &[]);
    let mut asets = common_sets("unused", aport);
    asets.retain(|s| !s.starts_with("metrics.listen"));
    asets.push(format!("serve.listen=127.0.0.1:{aport}"));
    let mut api = crawlsieve(
        &["serve"],
        &asets,
        &[("CRAWLSIEVE_API_TOKENS", "obs-token")],
    );
    wait_listening(gport, &mut gate, "gate");
    wait_listening(rport, &mut render, "render (is chromium installed?)");
    wait_listening(aport, &mut api, "serve");
    // API traffic: a new URL, a repeat, a junk one, and one unauthorized request.
    let body = format!(
        r#"{{"namespace": "{ns}", "urls": ["https://api.example/1", "https://api.example/1", "</div>"]}}"#
    );
    for token in ["obs-token", "wrong"] {
        let req = format!(
            "POST /v1/filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        http_request(aport, req.as_bytes());
    }

    // Prometheus, scraping the three every second, with the alert rules.
    let dir = tempfile::tempdir().unwrap();
    let rules = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/prometheus/crawlsieve-rules.yaml");
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n\
             - job_name: gate\n  static_configs:\n  - targets: ['127.0.0.1:{gport}']\n\
             - job_name: render\n  static_configs:\n  - targets: ['127.0.0.1:{rport}']\n\
             - job_name: api\n  static_configs:\n  - targets: ['127.0.0.1:{aport}']\n",
            rules.display()
        ),
    )
    .unwrap();
    let mut prom = Proc(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (scripts/test.sh installs Debian's prometheus package)"),
    );
    wait_listening(pport, &mut prom, "prometheus");

    let t = Instant::now();
    loop {
        let up = query(pport, "sum(up)");
        if up["data"]["result"][0]["value"][1] == "3" {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "targets not up: {up}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // Every dashboard expression (variables substituted as Grafana would) returns data.
    let out = Command::new("python3")
        .args([
            "scripts/dashboard_exprs.py",
            "deploy/grafana/crawlsieve.json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let exprs: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(exprs.len() >= 30, "{}", exprs.len());
    let mut missing: Vec<String> = exprs
        .iter()
        .map(|e| e["expr"].as_str().unwrap().to_string())
        .collect();
    let t = Instant::now();
    while !missing.is_empty() {
        missing.retain(|q| {
            let r = query(pport, q);
            assert_eq!(r["status"], "success", "{q}: {r}");
            r["data"]["result"].as_array().is_none_or(|a| a.is_empty())
        });
        if t.elapsed() > Duration::from_secs(120) {
            panic!(
                "dashboard expressions without data after 120 s:\n{}",
                missing.join("\n")
            );
        }
        std::thread::sleep(Duration::from_secs(1));
    }

    // The alert rules load and evaluate without error against real series.
    let rules = prom_api(pport, "/api/v1/rules");
    let groups = rules["data"]["groups"].as_array().unwrap();
    let all: Vec<&Value> = groups
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .collect();
    assert_eq!(all.len(), 14, "{rules}");
    for r in all {
        assert_eq!(r["health"], "ok", "{r}");
    }
    // Every component reports crawlsieve_build_info (what the absent() alerts look for) and
    // the process collector's series.
    for c in ["gate", "render", "serve"] {
        let q = format!("crawlsieve_build_info{{component=\"{c}\"}}");
        let r = query(pport, &q);
        assert_eq!(
            r["data"]["result"].as_array().map(Vec::len),
            Some(1),
            "{q}: {r}"
        );
    }
    let r = query(pport, "count(process_resident_memory_bytes)");
    assert_eq!(r["data"]["result"][0]["value"][1], "3", "{r}");

    // Each stage's exposition passes promtool, and the metrics mean what they say.
    for p in [gport, rport, aport] {
        promtool_check(&http_get(p, "/metrics"));
    }
    let g = http_get(gport, "/metrics");
    assert!(
        g.contains(&format!(
            "crawlsieve_gate_filter_items{{filter_namespace=\"{ns}\"}} "
        )),
        "{g}"
    );
    // Everything was consumed and committed: the lag of both input partitions comes to 0.
    let t = Instant::now();
    loop {
        let g = http_get(gport, "/metrics");
        let lags: Vec<f64> = ["0", "1"]
            .iter()
            .map(|p| {
                common::metric(
                    &g,
                    "crawlsieve_gate_consumer_lag_messages",
                    &format!("partition=\"{p}\""),
                )
            })
            .collect();
        if g.contains("crawlsieve_gate_consumer_lag_messages{partition=\"1\"}")
            && lags == [0.0, 0.0]
        {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "lag {lags:?}: {g}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let r = http_get(rport, "/metrics");
    assert!(
        common::metric(&r, "crawlsieve_render_pages_rendered_total", "") >= 6.0,
        "{r}"
    );
    assert_eq!(common::metric(&r, "crawlsieve_render_chromium_up", ""), 1.0);
    assert!(http_get(rport, "/readyz").contains("200 OK"));
    let _ = crawlsieve::redis_filter::RedisFilter::drop_namespace(
        &crawlsieve::redis_filter::RedisConfig::new(shared_redis()),
        &ns,
    );
}
