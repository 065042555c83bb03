//! Redis-shared dedup, side by side in one run (run through `scripts/bench-redis.sh`):
//!
//! - scrapy-redis's approach: `SADD` of the SHA-1 hex fingerprint of each URL (pipelined);
//! - a Lua loop of `SETBIT` over k = 13 positions per URL (textbook Bloom filter in Redis);
//! - RedisBloom `BF.MADD`, when the server has the module;
//! - crawlsieve's Redis filter in each mode, with and without its local tier, and with the
//!   textbook k = 13; crawlsieve keeps DEPTH batches in flight (`submit`/`complete`), so
//!   RedisBloom is also run with DEPTH batches per pipeline;
//! - CLIENTS clients in parallel (stream split by host, as host-keyed Kafka partitions do) for
//!   RedisBloom and crawlsieve's default mode.
//!
//! Every approach gets the same URLs in batches of 1000 and a freshly flushed Redis; Bloom
//! filters are sized for the stream's distinct URLs at p = 1e-4. Reported: URLs/s of
//! check-and-set, URLs reported new, and Redis `used_memory` growth per distinct URL.
//!
//! Usage: `cargo bench --bench redis_filter -- URL FILE [N] [LUA_N]`

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::time::Instant;

use crawlsieve::bloom::fingerprint;
use crawlsieve::redis_filter::{Mode, NamespaceSpec, RedisConfig, RedisFilter};

const BATCH: usize = 1000;
/// Batches in flight for the pipelined variants (env DEPTH overrides).
const DEPTH: usize = 8;
const P: f64 = 1e-4;

struct Row {
    name: String,
    urls: usize,
    secs: f64,
    new: usize,
    mem: i64,
}

fn used_memory(con: &mut redis::Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("memory").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

fn flush(con: &mut redis::Connection) {
    let _: () = redis::cmd("FLUSHALL").query(con).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
}

fn sadd_sha1(con: &mut redis::Connection, urls: &[String]) -> usize {
    let mut new = 0;
    for chunk in urls.chunks(BATCH) {
        let mut p = redis::pipe();
        for u in chunk {
            p.cmd("SADD")
                .arg("dupefilter")
                .arg(sha1_smol::Sha1::from(u).digest().to_string());
        }
        let r: Vec<i64> = p.query(con).unwrap();
        new += r.iter().filter(|&&x| x == 1).count();
    }
    new
}

const SETBIT_LUA: &str = r"
local k = tonumber(ARGV[1])
local out = {}
local n = (#ARGV - 1) / k
for i = 0, n - 1 do
  local new = 0
  for j = 1, k do
    if redis.call('SETBIT', KEYS[1], ARGV[1 + i * k + j], 1) == 0 then new = 1 end
  end
  out[i + 1] = new
end
return out";

fn setbit_lua(con: &mut redis::Connection, urls: &[String], capacity: u64) -> usize {
    let k = 13u32;
    let m = (-(capacity as f64) * P.ln() / (std::f64::consts::LN_2.powi(2))).ceil() as u64;
    let script = redis::Script::new(SETBIT_LUA);
    let mut new = 0;
    for chunk in urls.chunks(BATCH) {
        let mut inv = script.key("setbit-bloom");
        inv.arg(k);
        for u in chunk {
            let fp = fingerprint(u.as_bytes());
            let (h1, h2) = (fp as u64, ((fp >> 64) as u64) | 1);
            for i in 0..k as u64 {
                inv.arg(h1.wrapping_add(i.wrapping_mul(h2)) % m);
            }
        }
        let r: Vec<i64> = inv.invoke(con).unwrap();
        new += r.iter().filter(|&&x| x == 1).count();
    }
    new
}

fn bf_madd(con: &mut redis::Connection, urls: &[String], capacity: u64) -> Option<usize> {
    let r: redis::RedisResult<()> = redis::cmd("BF.RESERVE")
        .arg("bf")
        .arg(P)
        .arg(capacity)
        .arg("NONSCALING")
        .query(con);
    if r.is_err() {
        return None;
    }
    let mut new = 0;
    for chunk in urls.chunks(BATCH) {
        let r: Vec<i64> = redis::cmd("BF.MADD")
            .arg("bf")
            .arg(chunk)
            .query(con)
            .unwrap();
        new += r.iter().filter(|&&x| x == 1).count();
    }
    Some(new)
}

/// BF.MADD with DEPTH batches per round trip (a pipeline), for a like-for-like comparison.
fn bf_madd_pipelined(con: &mut redis::Connection, urls: &[String], capacity: u64) -> Option<usize> {
    bf_madd(con, &[], capacity)?;
    let depth: usize = std::env::var("DEPTH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEPTH);
    let mut new = 0;
    for group in urls.chunks(BATCH * depth) {
        let mut p = redis::pipe();
        for chunk in group.chunks(BATCH) {
            p.cmd("BF.MADD").arg("bf").arg(chunk);
        }
        let r: Vec<Vec<i64>> = p.query(con).unwrap();
        new += r.iter().flatten().filter(|&&x| x == 1).count();
    }
    Some(new)
}

fn crawlsieve(url: &str, urls: &[String], capacity: u64, tier: bool, mode: Mode, k: u32) -> usize {
    let mut cfg = RedisConfig::new(url);
    if !tier {
        cfg.local_tier_slots = 0;
    }
    let mut spec = NamespaceSpec::new(capacity, P);
    spec.mode = mode;
    spec.k = k;
    let mut f = RedisFilter::create(cfg, "bench", &spec).unwrap();
    let mut fps = Vec::with_capacity(BATCH);
    let mut out = Vec::with_capacity(BATCH);
    let mut new = 0;
    // DEPTH batches in flight: Redis works on them while the client prepares the next.
    let depth: usize = std::env::var("DEPTH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEPTH);
    // The full claim protocol: claim (submit/complete), "deliver", confirm (rides on the next
    // batch), settle at the end.
    let mut queued: std::collections::VecDeque<Vec<u128>> = Default::default();
    let mut delivered = Vec::with_capacity(BATCH);
    let mut finish = |f: &mut RedisFilter, q: &mut std::collections::VecDeque<Vec<u128>>| {
        f.complete(&mut out).unwrap();
        let batch = q.pop_front().unwrap();
        delivered.clear();
        delivered.extend(
            batch
                .iter()
                .zip(&out)
                .filter(|(_, &n)| n)
                .map(|(fp, _)| *fp),
        );
        f.confirm(&delivered);
        delivered.len()
    };
    for chunk in urls.chunks(BATCH) {
        fps.clear();
        fps.extend(chunk.iter().map(|u| fingerprint(u.as_bytes())));
        f.submit(&fps).unwrap();
        queued.push_back(fps.clone());
        if f.in_flight() >= depth {
            new += finish(&mut f, &mut queued);
        }
    }
    while f.in_flight() > 0 {
        new += finish(&mut f, &mut queued);
    }
    f.settle().unwrap();
    let c = f.client_stats();
    eprintln!(
        "    ({} answered by the local tier, {} sent to Redis)",
        c.tier_hits, c.redis_lookups
    );
    new
}

/// The host of a URL (what Kafka partitions are keyed by in the gate).
fn host(u: &str) -> &str {
    let rest = u.split_once("://").map(|x| x.1).unwrap_or(u);
    rest.split(['/', '?', '#']).next().unwrap_or(rest)
}

/// Split the stream into `n` parts by host, as a consumer group with host-keyed partitions does.
fn partition(urls: &[String], n: usize) -> Vec<Vec<String>> {
    let mut parts = vec![Vec::new(); n];
    for u in urls {
        let h = xxhash_rust::xxh3::xxh3_64(host(u).as_bytes()) as usize % n;
        parts[h].push(u.clone());
    }
    parts
}

/// `n` clients in parallel, one per part.
fn parallel<F>(parts: &[Vec<String>], f: F) -> usize
where
    F: Fn(&[String]) -> usize + Sync,
{
    std::thread::scope(|s| {
        let hs: Vec<_> = parts.iter().map(|p| s.spawn(|| f(p))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if args.len() < 2 {
        eprintln!("usage: cargo bench --bench redis_filter -- REDIS_URL FILE [N] [LUA_N]");
        eprintln!("(scripts/bench-redis.sh starts a scratch Redis with RedisBloom and runs this)");
        return;
    }
    let url = &args[0];
    let n: usize = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let lua_n: usize = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let file = std::fs::File::open(&args[1]).expect("input file");
    let urls: Vec<String> = BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .take(n)
        .collect();
    let distinct = urls
        .iter()
        .map(|u| fingerprint(u.as_bytes()))
        .collect::<HashSet<u128>>()
        .len();
    let lua_distinct = urls[..lua_n.min(urls.len())]
        .iter()
        .map(|u| fingerprint(u.as_bytes()))
        .collect::<HashSet<u128>>()
        .len();
    let capacity = (distinct as u64).div_ceil(1_000_000) * 1_000_000;
    println!(
        "{} URLs, {distinct} distinct; Bloom filters sized for {capacity} at p = {P}; batches of {BATCH}",
        urls.len()
    );
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut rows = Vec::new();
    // ONLY=substring runs just the matching approaches (profiling).
    let only = std::env::var("ONLY").unwrap_or_default();
    let mut run = |name: &str,
                   urls: &[String],
                   f: &mut dyn FnMut(&mut redis::Connection) -> Option<usize>| {
        if !name.contains(only.as_str()) {
            return;
        }
        flush(&mut con);
        let before = used_memory(&mut con);
        let t = Instant::now();
        let Some(new) = f(&mut con) else {
            println!("{name}: skipped (not available on this server)");
            return;
        };
        let secs = t.elapsed().as_secs_f64();
        let mem = used_memory(&mut con) - before;
        println!(
            "{name}: {:.0} URLs/s, {new} new, {:.2} B per distinct URL",
            urls.len() as f64 / secs,
            mem as f64 / new.max(1) as f64
        );
        rows.push(Row {
            name: name.to_string(),
            urls: urls.len(),
            secs,
            new,
            mem,
        });
    };
    let all = &urls[..];
    let head = &urls[..lua_n.min(urls.len())];
    let lua_cap = (lua_distinct as u64).div_ceil(100_000) * 100_000;
    run("scrapy-redis SADD sha1", all, &mut |c| {
        Some(sadd_sha1(c, all))
    });
    run(
        &format!("Lua SETBIT loop k=13 (first {})", head.len()),
        head,
        &mut |c| Some(setbit_lua(c, head, lua_cap)),
    );
    run("RedisBloom BF.MADD", all, &mut |c| {
        bf_madd(c, all, capacity)
    });
    run("RedisBloom BF.MADD, pipelined", all, &mut |c| {
        bf_madd_pipelined(c, all, capacity)
    });
    // Several clients, the stream split by host as a consumer group with host-keyed partitions
    // does (CLIENTS, default 4).
    let clients: usize = std::env::var("CLIENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let parts = partition(all, clients);
    run(
        &format!("RedisBloom BF.MADD, {clients} clients"),
        all,
        &mut |c| {
            bf_madd(c, &[], capacity)?;
            Some(parallel(&parts, |p| {
                let mut con = redis::Client::open(url.as_str())
                    .unwrap()
                    .get_connection()
                    .unwrap();
                let mut new = 0;
                for chunk in p.chunks(BATCH) {
                    let r: Vec<i64> = redis::cmd("BF.MADD")
                        .arg("bf")
                        .arg(chunk)
                        .query(&mut con)
                        .unwrap();
                    new += r.iter().filter(|&&x| x == 1).count();
                }
                new
            }))
        },
    );
    run(
        &format!("crawlsieve fingerprints + local tier, {clients} clients"),
        all,
        &mut |_| {
            let mut cfg = RedisConfig::new(url);
            cfg.local_tier_slots = 1 << 21;
            drop(RedisFilter::create(cfg, "bench", &NamespaceSpec::new(capacity, P)).unwrap());
            Some(parallel(&parts, |p| {
                crawlsieve(url, p, capacity, true, Mode::Fingerprints, 5)
            }))
        },
    );
    run("crawlsieve k=5 + local tier", all, &mut |_| {
        Some(crawlsieve(url, all, capacity, true, Mode::Bloom, 5))
    });
    run("crawlsieve k=5, no local tier", all, &mut |_| {
        Some(crawlsieve(url, all, capacity, false, Mode::Bloom, 5))
    });
    run("crawlsieve exact + local tier", all, &mut |_| {
        Some(crawlsieve(url, all, capacity, true, Mode::Exact, 5))
    });
    run("crawlsieve fingerprints + local tier", all, &mut |_| {
        Some(crawlsieve(url, all, capacity, true, Mode::Fingerprints, 5))
    });
    run("crawlsieve fingerprints, no local tier", all, &mut |_| {
        Some(crawlsieve(url, all, capacity, false, Mode::Fingerprints, 5))
    });
    run("crawlsieve k=13, no local tier", all, &mut |_| {
        Some(crawlsieve(url, all, capacity, false, Mode::Bloom, 13))
    });
    flush(&mut con);
    println!();
    println!("| approach | URLs | URLs/s | reported new | Redis memory per distinct URL |");
    println!("|---|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {:.0} | {} | {:.2} B |",
            r.name,
            r.urls,
            r.urls as f64 / r.secs,
            r.new,
            r.mem as f64 / r.new.max(1) as f64
        );
    }
}
