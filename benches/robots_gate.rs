//! robots.txt's cost in the gate's own work (issue 25: "the gate's throughput with robots on,
//! rules cached, stays within 10% of without"), interleaved in time.
//!
//! Two gate cores (`GateCore::stage` + `finish`: decode the events, sieve, robots.txt, claim and
//! confirm in the Redis-shared filter — everything the gate does but Kafka), each in **a process
//! of its own** (its own heap; a child of this bench), one with `[robots]` on and every origin's
//! record preloaded in Redis (the rules of `support/robots_fixture.rs`, which disallow none of the
//! stream's URLs: every URL is judged, allowed, then claimed), run the same batches of the same
//! URL events **in turns**: `BENCH_PHASE` batches (50: ~¼ s) one side, then the other, the order
//! flipping every turn, and never both at once. So a machine that slows down for a while slows
//! both alike, and each side runs with its own data in the caches, as a gate alone would (one
//! process per side, not one thread: two cores in one process share a heap and the robots side's
//! fragmentation would be charged to both). The end-to-end benchmark (`gate_kafka` with
//! `BENCH_ROBOTS_WARM`) runs the two gates minutes apart, and on a shared machine its rounds of
//! one build differ by more than the cost measured.
//!
//! Before the timed passes each side stages one event per origin (every origin's rules in the
//! robots side's memory: the steady state of a crawl whose gates have met its hosts) and one
//! untimed pass of the stream. Each timed pass appends `bench_pass=N` to every URL's query, so
//! every pass's URLs are new to the filter (claimed and confirmed, as new URLs are) while their
//! origins, and robots' verdicts, stay the same.
//!
//! Reported: per side, events/s over its timed batches (wall) and the CPU µs per event of its
//! process (the gate's own work; Redis's is not in it), and robots on / off for both, per pass
//! and over all passes. `BENCH_AA=1` runs robots off on both sides: the harness's own bias
//! (it should read ~100%).
//!
//! Environment: `STREAM` (URL lines; default: `gen_stream.py --n 200000 --seed 42` into
//! target/bench-data), `BENCH_EVENTS` (lines used), `BENCH_PASSES` (timed passes, 3),
//! `BENCH_BATCH` (events per batch, the gate's default `kafka.batch_size`), `BENCH_PHASE`
//! (batches per turn, 50), `BENCH_CPU` (the CPU both sides are pinned to, 0: placement next to
//! Redis or another tenant is then the same for both; `none`: unpinned), `BENCH_REDIS` (default: a redis-server of its own on a free port). Run: `cargo bench --bench
//! robots_gate`; the figures in docs/crawl-policy.md used
//! `STREAM=target/bench-data/stream-1000000-seed42.txt` (what `scripts/bench-gate.sh` generates).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/robots_fixture.rs"]
mod fixture;

use std::time::{Duration, Instant};

use common::env_or as env;

use crawlsieve::gate::{GateCore, GateStaged};
use crawlsieve::observe::FilterMetrics;
use crawlsieve::redis_filter::{RedisConfig, RedisFilter};
use crawlsieve::stage::{Batch, Stage};

fn lines() -> Vec<String> {
    let path = std::env::var("STREAM").unwrap_or_else(|_| {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/target/bench-data/stream-200000-seed42.txt"
        );
        if !std::path::Path::new(p).exists() {
            let out = std::process::Command::new("python3")
                .arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../shared/tools/gen_stream.py"
                ))
                .args(["--n", "200000", "--seed", "42"])
                .output()
                .expect("python3 ../shared/tools/gen_stream.py");
            assert!(out.status.success(), "gen_stream.py failed");
            std::fs::create_dir_all(std::path::Path::new(p).parent().unwrap()).unwrap();
            std::fs::write(p, &out.stdout).unwrap();
        }
        p.to_string()
    });
    let text = std::fs::read_to_string(&path).expect("read STREAM");
    text.lines()
        .take(env("BENCH_EVENTS", usize::MAX))
        .map(String::from)
        .collect()
}

/// `events` in batches of `size`.
fn batches(events: &[Vec<u8>], size: usize) -> Vec<Batch> {
    events
        .chunks(size)
        .map(|chunk| {
            let mut b = Batch::default();
            for (i, e) in chunk.iter().enumerate() {
                b.push(0, i as i64, None, Some(e));
            }
            b
        })
        .collect()
}

/// CPU time this process has used.
fn process_cpu() -> Duration {
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Pass `p`'s events: the stream with `bench_pass=p` in every URL's query (pass 0: as is).
fn pass_events(lines: &[String], p: usize) -> Vec<Vec<u8>> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let l = if p == 0 {
                l.clone()
            } else {
                let (base, frag) = l.split_once('#').unwrap_or((l, ""));
                let sep = if base.contains('?') { '&' } else { '?' };
                let frag = if frag.is_empty() {
                    String::new()
                } else {
                    format!("#{frag}")
                };
                format!("{base}{sep}bench_pass={p}{frag}")
            };
            fixture::as_event(i, &l)
        })
        .collect()
}

/// A side (a child process, `ROBOTS_GATE_SIDE=off|on`): warm up, say `ready`, then for each
/// `run K` on stdin stage and finish its next K batches (passes 1.. in order) and answer
/// `wall_ns cpu_ns events`.
fn side(robots: bool, ns: &str, redis: &str, capacity: u64) {
    use std::io::{BufRead, Write};
    // Both sides on one CPU (`BENCH_CPU`, 0; `none`: unpinned): the same neighbours for both.
    if let Ok(cpu) = std::env::var("BENCH_CPU")
        .unwrap_or_else(|_| "0".into())
        .parse::<usize>()
    {
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe {
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
    let lines = lines();
    let size = batch_size();
    let mut cfg = crawlsieve::config::Config::default();
    cfg.redis.url = redis.to_string();
    cfg.redis.namespace = ns.to_string();
    cfg.redis.capacity = capacity;
    cfg.robots.enabled = robots;
    let mut core = GateCore::new(cfg, FilterMetrics::unregistered());
    let mut st = GateStaged::default();
    let mut stage = |core: &mut GateCore, b: &Batch| {
        core.stage("in", b, &mut st).expect("stage");
        core.finish(&mut st).expect("finish");
    };
    let first = pass_events(&lines, 0);
    let warm = fixture::warm_events(&fixture::origins(&first));
    for b in batches(&warm, size).iter().chain(&batches(&first, size)) {
        stage(&mut core, b);
    }
    drop(first);
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    let (mut pass, mut queue) = (0, std::collections::VecDeque::new());
    for cmd in std::io::stdin().lock().lines() {
        let cmd = cmd.unwrap();
        let Some(k) = cmd
            .strip_prefix("run ")
            .and_then(|k| k.parse::<usize>().ok())
        else {
            break;
        };
        let (mut wall, mut cpu, mut n) = (Duration::ZERO, Duration::ZERO, 0usize);
        for _ in 0..k {
            if queue.is_empty() {
                pass += 1;
                queue.extend(batches(&pass_events(&lines, pass), size));
            }
            let b = queue.pop_front().unwrap();
            let (w0, c0) = (Instant::now(), process_cpu());
            stage(&mut core, &b);
            wall += w0.elapsed();
            cpu += process_cpu() - c0;
            n += b.len();
        }
        writeln!(out, "{} {} {n}", wall.as_nanos(), cpu.as_nanos()).unwrap();
        out.flush().unwrap();
    }
}

fn batch_size() -> usize {
    env(
        "BENCH_BATCH",
        crawlsieve::config::Config::default().kafka.batch_size,
    )
}

/// A running side: its process and its pipes.
struct Child {
    proc: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

impl Child {
    fn start(which: &str, ns: &str, capacity: u64) -> Child {
        use std::io::BufRead;
        let mut proc = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--bench")
            .env("ROBOTS_GATE_SIDE", which)
            .env("ROBOTS_GATE_NS", ns)
            .env("ROBOTS_GATE_CAPACITY", capacity.to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start a side");
        let mut out = std::io::BufReader::new(proc.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "side {which} failed to warm up");
        Child { proc, out }
    }

    /// Run its next `k` batches: (wall, CPU, events).
    fn run(&mut self, k: usize) -> (f64, f64, u64) {
        use std::io::{BufRead, Write};
        let stdin = self.proc.stdin.as_mut().unwrap();
        writeln!(stdin, "run {k}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        let f: Vec<f64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(f.len(), 3, "a side's answer: {line:?}");
        (f[0] * 1e-9, f[1] * 1e-9, f[2] as u64)
    }

    fn stop(mut self) {
        drop(self.proc.stdin.take());
        let _ = self.proc.wait();
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with no argument: do nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let redis: String = env("BENCH_REDIS", common::shared_redis().to_string());
    if let Ok(which) = std::env::var("ROBOTS_GATE_SIDE") {
        let ns = std::env::var("ROBOTS_GATE_NS").unwrap();
        let capacity = env("ROBOTS_GATE_CAPACITY", 1_000_000u64);
        side(which == "on", &ns, &redis, capacity);
        return;
    }
    if redis::Client::open(redis.as_str())
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(1)))
        .is_err()
    {
        eprintln!("robots_gate: no Redis at {redis}; skipped");
        return;
    }
    let aa = std::env::var("BENCH_AA").is_ok_and(|v| v == "1");
    let lines = lines();
    let passes: usize = env("BENCH_PASSES", 3);
    let phase: usize = env("BENCH_PHASE", 50);
    let size = batch_size();
    let origins = fixture::origins(&pass_events(&lines, 0));
    let pid = std::process::id();
    let (ns_off, ns_on) = (
        format!("bench-robots-gate-off-{pid}"),
        format!("bench-robots-gate-on-{pid}"),
    );
    fixture::preload_robots(&redis, &ns_on, &origins);
    let capacity = ((passes + 2) * lines.len() + origins.len()) as u64 * 2;
    let (off_name, on_name) = if aa { ("off", "off") } else { ("off", "on") };
    println!(
        "{} events ({} origins, each with its robots.txt record preloaded), batches of {size}, turns of {phase} batches, {passes} timed passes{}",
        lines.len(),
        origins.len(),
        if aa { "; BENCH_AA: robots off on both sides" } else { "" }
    );
    // Both sides warm up at once (untimed), then take turns.
    let mut sides = [
        Child::start(off_name, &ns_off, capacity),
        Child::start(on_name, &ns_on, capacity),
    ];
    let per_pass = lines.len().div_ceil(size);
    let mut tot = [(0.0, 0.0, 0u64); 2];
    let (mut wall_ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
    let mut turn = 0;
    for p in 1..=passes {
        let mut acc = [(0.0, 0.0, 0u64); 2];
        let mut left = per_pass;
        while left > 0 {
            let k = left.min(phase);
            let order: [usize; 2] = if turn % 2 == 0 { [0, 1] } else { [1, 0] };
            turn += 1;
            for s in order {
                let (w, c, n) = sides[s].run(k);
                acc[s].0 += w;
                acc[s].1 += c;
                acc[s].2 += n;
            }
            left -= k;
        }
        let rate = |a: (f64, f64, u64)| a.2 as f64 / a.0;
        let cpu = |a: (f64, f64, u64)| a.1 * 1e6 / a.2 as f64;
        let (wr, cr) = (rate(acc[1]) / rate(acc[0]), cpu(acc[0]) / cpu(acc[1]));
        println!(
            "pass {p}: robots {off_name} {:.0} events/s, {:.2} µs CPU per event; robots {on_name} {:.0} events/s, {:.2} µs; second / first: {:.1}% (wall), {:.1}% (CPU)",
            rate(acc[0]),
            cpu(acc[0]),
            rate(acc[1]),
            cpu(acc[1]),
            100.0 * wr,
            100.0 * cr
        );
        wall_ratios.push(wr);
        cpu_ratios.push(cr);
        for s in 0..2 {
            tot[s].0 += acc[s].0;
            tot[s].1 += acc[s].1;
            tot[s].2 += acc[s].2;
        }
    }
    for s in sides {
        s.stop();
    }
    let (r0, r1) = (tot[0].2 as f64 / tot[0].0, tot[1].2 as f64 / tot[1].0);
    let (c0, c1) = (
        tot[0].1 * 1e6 / tot[0].2 as f64,
        tot[1].1 * 1e6 / tot[1].2 as f64,
    );
    let range = |v: &[f64]| {
        let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = v.iter().cloned().fold(0.0, f64::max);
        format!("{:.1}–{:.1}%", 100.0 * lo, 100.0 * hi)
    };
    println!(
        "all passes: robots {off_name} {r0:.0} events/s, {c0:.2} µs CPU per event; robots {on_name} (rules cached) {r1:.0} events/s, {c1:.2} µs; throughput second / first = {:.1}% (wall), {:.1}% (CPU); passes {} (wall), {} (CPU) (goal >= 90%)",
        100.0 * r1 / r0,
        100.0 * c0 / c1,
        range(&wall_ratios),
        range(&cpu_ratios)
    );
    for ns in [&ns_off, &ns_on] {
        let _ = RedisFilter::drop_namespace(&RedisConfig::new(&redis), ns);
    }
    fixture::drop_robots(&redis, &ns_on, &origins);
}
