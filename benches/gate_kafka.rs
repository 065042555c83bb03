//! Events/s through `crawlsieve gate` beside a bare consume → produce passthrough with the same
//! client settings, batching and delivery discipline (`crawlsieve gate --passthrough`), in the
//! same run, on a real tansu broker and real Redis. Run with `scripts/bench-gate.sh`.
//!
//! Environment: `STREAM` (a file of URL lines, e.g. from gen_stream.py), `BENCH_EVENTS`
//! (lines used, default all), `BENCH_FORMAT` (`json`, the default: each line becomes a url-event
//! with a `source` page, `depth` and `discovered_at`, every other one relative to its source;
//! `lines`: the bare line as the event), `BENCH_PARTITIONS` (4), `BENCH_ROUNDS` (2), `BENCH_WORKERS` (1),
//! `BENCH_REDIS` (default: a redis-server of its own on a free port), `BENCH_SET` (extra `--set` values for both runs,
//! `;`-separated), `TANSU` (the broker binary), `BENCH_PERF` (a file: the gate runs under
//! `perf record -g` into it, the robots run into FILE.robots; `BENCH_PERF_CALLGRAPH=dwarf` for call graphs of a build without frame pointers), `BENCH_BIN` (run that `crawlsieve` binary instead of this
//! build's: an earlier revision side by side), `BENCH_ROBOTS` (set: each round also runs the gate
//! with `[robots]` on, the rules of every origin of the stream already in Redis — the cost of
//! robots.txt with rules cached, issue 25), `BENCH_ROBOTS_WARM` (set, with `BENCH_ROBOTS`: the
//! input starts with one event per origin of the stream, and each run's rate is also taken over
//! the stream after them — 10% to 95% of it, from the gate's `messages_consumed_total` and
//! its `/proc/PID/stat` CPU times sampled every 50 ms: events/s and CPU µs per event, medians of
//! the rounds — so the robots run is measured with every origin's rules already in each
//! worker's memory: the steady state of a crawl whose gates have met its hosts; with
//! `BENCH_WORKERS=1` — the warm-up events are spread over the partitions, so with more workers
//! each meets only its partitions' share of the origins before the window).
//!
//! Rates are over each run's active span (first message → last finished batch), so group joins
//! and the idle wait before exit are not counted.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/robots_fixture.rs"]
mod fixture;

use std::process::Command;
use std::time::Instant;

use common::env_or as env;
use common::kafka::{create_topics, produce, Tansu};
use crawlsieve::redis_filter::{RedisConfig, RedisFilter};

/// What one run reports: consumed, active seconds, its summary line and, when sampled, the
/// rate and CPU µs per event over a window of the input ([`Window`]).
struct Ran {
    consumed: u64,
    secs: f64,
    line: String,
    window_rate: Option<(f64, f64)>,
}

/// The part of the input a windowed rate is taken over: consumed counts from `lo` to `hi`.
#[derive(Clone, Copy)]
struct Window {
    lo: f64,
    hi: f64,
}

/// One sample of a gate's exposition at `addr`: `crawlsieve_gate_messages_consumed_total` (all
/// partitions).
fn scrape(addr: &str) -> Option<f64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(1)))
        .ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: bench\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let sum = |name: &str| -> Option<f64> {
        let v: Vec<f64> = body
            .lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    sum("crawlsieve_gate_messages_consumed_total")
}

/// CPU seconds (user + system) process `pid` has used so far, from `/proc/PID/stat` (clock
/// ticks, 10 ms): the exposition's `process_cpu_seconds_total` counts whole seconds, too coarse
/// for a window of a few seconds.
fn proc_cpu(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after the name.
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / hz)
}

/// Over the samples from the first at or past `w.lo` consumed to the last at or before `w.hi`:
/// events per second, and the gate process's CPU µs per event.
fn window_rate(samples: &[(Instant, f64, f64)], w: Window) -> Option<(f64, f64)> {
    let a = samples.iter().find(|s| s.1 >= w.lo)?;
    let b = samples.iter().rev().find(|s| s.1 <= w.hi)?;
    let dt = b.0.checked_duration_since(a.0)?.as_secs_f64();
    let n = b.1 - a.1;
    (dt > 0.0 && n > 0.0).then(|| (n / dt, (b.2 - a.2) * 1e6 / n))
}

/// Run one gate to the end of the input; with `window`, its consumed count is sampled.
fn run(sets: &[String], extra: &[&str], window: Option<Window>) -> Ran {
    // BENCH_BIN: another build's binary (side by side with an earlier revision).
    let own = env!("CARGO_BIN_EXE_crawlsieve").to_string();
    let bin = std::env::var("BENCH_BIN").unwrap_or(own);
    let bin = bin.as_str();
    // BENCH_PERF=FILE: the gate (not the passthrough) runs under `perf record -g -o FILE`.
    // With robots on, into FILE.robots (the two profiles side by side: `perf diff`).
    let perf = std::env::var("BENCH_PERF")
        .ok()
        .filter(|_| !extra.contains(&"--passthrough"))
        .map(|f| {
            if sets.iter().any(|s| s == "robots.enabled=true") {
                format!("{f}.robots")
            } else {
                f
            }
        });
    let mut cmd = match &perf {
        Some(file) => {
            let mut c = Command::new("perf");
            // BENCH_PERF_CALLGRAPH: perf's --call-graph mode (`dwarf` for a build without frame
            // pointers; default `fp`).
            let cg = std::env::var("BENCH_PERF_CALLGRAPH").unwrap_or_else(|_| "fp".into());
            c.args([
                "record",
                "-F",
                "499",
                "--call-graph",
                &cg,
                "-o",
                file,
                "--",
                bin,
            ]);
            c
        }
        None => Command::new(bin),
    };
    cmd.arg("gate");
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    let addr = format!("127.0.0.1:{}", common::free_port());
    if window.is_some() {
        cmd.arg("--set").arg(format!("metrics.listen={addr}"));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let child = cmd
        .args(["--idle-exit", "3s"])
        .args(extra)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run crawlsieve gate");
    // Under perf the child is perf: no CPU figure then (NaN), not perf's.
    let pid = perf.is_none().then_some(child.id());
    let sampler = window.map(|_| {
        let (stop, addr) = (stop.clone(), addr.clone());
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // The CPU read right after the count: both describe one moment.
                let cpu = pid.map_or(Some(f64::NAN), proc_cpu);
                if let Some((c, cpu)) = scrape(&addr).zip(cpu) {
                    samples.push((Instant::now(), c, cpu));
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            samples
        })
    });
    let out = child.wait_with_output().expect("run crawlsieve gate");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let window_rate = sampler
        .and_then(|t| t.join().ok())
        .zip(window)
        .and_then(|(samples, w)| window_rate(&samples, w));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "gate failed: {err}");
    let line = err
        .lines()
        .rev()
        .find(|l| l.contains("consumed"))
        .unwrap_or_default()
        .to_string();
    let num = |after: &str| -> f64 {
        line.split(after)
            .nth(1)
            .and_then(|s| s.split([' ', ',']).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0.0)
    };
    Ran {
        consumed: num("consumed ") as u64,
        secs: num("active "),
        line,
        window_rate,
    }
}

/// Seconds of CPU (user + system) used by this process's waited-for children.
fn children_cpu() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// CPU per event of one run: (the crawlsieve process, the broker, Redis), in µs.
struct Cpu(f64, f64, f64);

impl Cpu {
    fn measure<T>(k: &Tansu, redis: &str, f: impl FnOnce() -> (u64, T)) -> (Cpu, u64, T) {
        let (p0, k0, r0) = (children_cpu(), k.cpu_seconds(), redis_cpu(redis));
        let (n, t) = f();
        let per = |d: f64| d * 1e6 / n.max(1) as f64;
        let cpu = Cpu(
            per(children_cpu() - p0),
            per(k.cpu_seconds() - k0),
            per(redis_cpu(redis) - r0),
        );
        (cpu, n, t)
    }
}

impl std::fmt::Display for Cpu {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "CPU per event: process {:.2} µs, broker {:.2} µs, Redis {:.2} µs (INFO cpu: other clients of that Redis count too), total {:.2} µs",
            self.0,
            self.1,
            self.2,
            self.0 + self.1 + self.2
        )
    }
}

/// Seconds of CPU (user + system) the Redis server at `url` has used (`INFO cpu`).
fn redis_cpu(url: &str) -> f64 {
    let mut con = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("connect to BENCH_REDIS");
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query(&mut con)
        .expect("INFO cpu");
    info.lines()
        .filter(|l| l.starts_with("used_cpu_sys:") || l.starts_with("used_cpu_user:"))
        .filter_map(|l| l.split(':').nth(1)?.trim().parse::<f64>().ok())
        .sum()
}

fn main() {
    let stream =
        std::env::var("STREAM").expect("STREAM=file of URL lines (scripts/bench-gate.sh sets it)");
    let text = std::fs::read_to_string(&stream).expect("read STREAM");
    let n: usize = env("BENCH_EVENTS", usize::MAX);
    let json = std::env::var("BENCH_FORMAT").map_or(true, |f| f != "lines");
    let vals: Vec<Vec<u8>> = text
        .lines()
        .take(n)
        .enumerate()
        .map(|(i, l)| {
            if json {
                fixture::as_event(i, l)
            } else {
                l.as_bytes().to_vec()
            }
        })
        .collect();
    let parts: i32 = env("BENCH_PARTITIONS", 4);
    let rounds: usize = env("BENCH_ROUNDS", 2);
    let workers: usize = env("BENCH_WORKERS", 1);
    let redis: String = env("BENCH_REDIS", common::shared_redis().to_string());

    let k = Tansu::start();
    let b = k.brokers();
    let robots = std::env::var("BENCH_ROBOTS").is_ok();
    let warm = robots && std::env::var("BENCH_ROBOTS_WARM").is_ok();
    let mut topics = vec![
        ("urls".to_string(), parts),
        ("urls.dead-letter".to_string(), 1),
        ("urls.robots-wait".to_string(), 1),
    ];
    for r in 0..rounds {
        topics.push((format!("pt-out-{r}"), parts));
        topics.push((format!("fetch-{r}"), parts));
        topics.push((format!("fetch-robots-{r}"), parts));
    }
    let t: Vec<(&str, i32)> = topics.iter().map(|(n, p)| (n.as_str(), *p)).collect();
    create_topics(&b, &t);
    let origins: Vec<String> = if robots {
        fixture::origins(&vals)
    } else {
        Vec::new()
    };
    // BENCH_ROBOTS_WARM: one event per origin first (each run meets every origin before the
    // window its steady rate is taken over).
    let warm_events: Vec<Vec<u8>> = if warm {
        fixture::warm_events(&origins)
    } else {
        Vec::new()
    };
    let total = warm_events.len() + vals.len();
    let window = warm.then_some(Window {
        lo: (warm_events.len() as f64 + 0.10 * vals.len() as f64),
        hi: (warm_events.len() as f64 + 0.95 * vals.len() as f64),
    });
    let t0 = Instant::now();
    if warm {
        produce(&b, "urls", parts, &warm_events);
    }
    produce(&b, "urls", parts, &vals);
    let load = t0.elapsed().as_secs_f64();
    println!(
        "loaded {} {} events (and {} warm-up events, one per origin) into {parts} partitions in {load:.1} s ({:.0}/s); workers per gate: {workers}",
        vals.len(),
        if json { "JSON url-" } else { "bare-line" },
        warm_events.len(),
        total as f64 / load
    );
    // Extra settings for both runs, `;`-separated (e.g. `kafka.producer."linger.ms"=1`).
    let extra: Vec<String> = std::env::var("BENCH_SET")
        .map(|v| {
            v.split(';')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let common_sets = |group: &str, out: &str| -> Vec<String> {
        let mut v = vec![
            format!("kafka.brokers={b}"),
            format!("kafka.group_id={group}"),
            format!("kafka.fetch_topic={out}"),
            format!("kafka.workers={workers}"),
            "kafka.consumer.\"session.timeout.ms\"=6000".into(),
            format!("redis.url={redis}"),
        ];
        v.extend(extra.iter().cloned());
        v
    };
    let mut pt_rates = Vec::new();
    let mut gate_rates = Vec::new();
    let mut robots_rates = Vec::new();
    let (mut gate_steady, mut robots_steady) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let (cpu, c, (secs, line)) = Cpu::measure(&k, &redis, || {
            let ran = run(
                &common_sets(&format!("pt-{r}"), &format!("pt-out-{r}")),
                &["--passthrough"],
                None,
            );
            (ran.consumed, (ran.secs, ran.line))
        });
        assert_eq!(c as usize, total, "passthrough read everything: {line}");
        pt_rates.push(c as f64 / secs);
        println!("round {r} passthrough: {line}");
        println!("round {r} passthrough: {cpu}");
        let ns = format!("bench-gate-{}-{r}", std::process::id());
        let mut sets = common_sets(&format!("gate-{r}"), &format!("fetch-{r}"));
        sets.push(format!("redis.namespace={ns}"));
        let (cpu, c, (secs, line, steady)) = Cpu::measure(&k, &redis, || {
            let ran = run(&sets, &[], window);
            (ran.consumed, (ran.secs, ran.line, ran.window_rate))
        });
        let _ = RedisFilter::drop_namespace(&RedisConfig::new(&redis), &ns);
        assert_eq!(c as usize, total, "gate read everything: {line}");
        gate_rates.push(c as f64 / secs);
        gate_steady.extend(steady);
        println!("round {r} gate:        {line}");
        if let Some((v, cpu)) = steady {
            println!("round {r} gate:        after the warm-up: {v:.0} events/s, process CPU {cpu:.2} µs per event");
        }
        println!("round {r} gate:        {cpu}");
        if robots {
            let ns = format!("bench-robots-{}-{r}", std::process::id());
            fixture::preload_robots(&redis, &ns, &origins);
            let mut sets = common_sets(&format!("gate-robots-{r}"), &format!("fetch-robots-{r}"));
            sets.push(format!("redis.namespace={ns}"));
            sets.push("robots.enabled=true".into());
            let (cpu, c, (secs, line, steady)) = Cpu::measure(&k, &redis, || {
                let ran = run(&sets, &[], window);
                (ran.consumed, (ran.secs, ran.line, ran.window_rate))
            });
            let _ = RedisFilter::drop_namespace(&RedisConfig::new(&redis), &ns);
            fixture::drop_robots(&redis, &ns, &origins);
            // Held URLs come back: more than the input is read when any origin was unknown.
            assert!(c as usize >= total, "gate read everything: {line}");
            robots_rates.push(c as f64 / secs);
            robots_steady.extend(steady);
            if let Some((v, cpu)) = steady {
                println!("round {r} gate+robots: after the warm-up: {v:.0} events/s, process CPU {cpu:.2} µs per event");
            }
            let held = common::kafka::read_all(
                &b,
                "urls.robots-wait",
                1,
                std::time::Duration::from_secs(1),
            )
            .len();
            println!("round {r} gate+robots: {line}");
            println!("round {r} gate+robots: {cpu}; held on the wait topic so far: {held} (origins preloaded: {})", origins.len());
        }
    }
    let best = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    let (pt, gate) = (best(&pt_rates), best(&gate_rates));
    println!(
        "\nbest of {rounds}: passthrough {pt:.0} events/s, gate {gate:.0} events/s = {:.0}% of passthrough (goal >= 90%)",
        100.0 * gate / pt
    );
    if robots {
        let rb = best(&robots_rates);
        println!(
            "best of {rounds}: gate with robots.txt (rules cached) {rb:.0} events/s = {:.1}% of the gate without (goal >= 90%)",
            100.0 * rb / gate
        );
    }
    if warm {
        // The gate is CPU-bound: its CPU per event is the steadier measure on a shared machine
        // (the rates of one build move ±15% between rounds); the median of the rounds.
        let median = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| {
            let mut x: Vec<f64> = v.iter().map(f).collect();
            x.sort_by(f64::total_cmp);
            x.get(x.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let (g, rb) = (
            median(&gate_steady, |s| s.0),
            median(&robots_steady, |s| s.0),
        );
        let (gc, rc) = (
            median(&gate_steady, |s| s.1),
            median(&robots_steady, |s| s.1),
        );
        println!(
            "median of {rounds}, after the warm-up (every origin's rules in each worker's memory): gate {g:.0} events/s, with robots.txt {rb:.0} events/s = {:.1}%; gate process CPU {gc:.2} µs per event, with robots.txt {rc:.2} µs = {:.1}% of the rate at equal CPU (goal >= 90%)",
            100.0 * rb / g,
            100.0 * gc / rc
        );
    }
}
