//! The bodies of the line commands over URL candidates: `dedup` (junk out, canonicalize, emit
//! each new URL once, through the in-process filter or a Redis namespace), `check` (one verdict
//! a line), `canon` and `pattern` (one canonical form or pattern a line).

use std::io::{self, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use super::dedup::{DedupPolicy, RedisPipe};
use super::exit;
use super::lines::{
    check_io, for_each_batch, for_each_line, open_output, write_json_line, Emitter, Progress,
    Summary, OUT_CHUNK,
};
use super::{CanonArgs, CheckArgs, DedupArgs, PatternArgs};
use super::{DEFAULT_CAPACITY, DEFAULT_FP_RATE};
use crate::bloom::{snapshot, BloomFilter, BloomParams};
use crate::input::Line;
use crate::sieve::{BatchResult, Sieve};
use crate::url::{pattern, Reason};

fn load_or_create(a: &DedupArgs) -> Result<BloomFilter> {
    if let Some(p) = &a.state {
        if p.exists() {
            let f = snapshot::load(p).map_err(|e| {
                exit::input(format!("cannot load the state file {}: {e:#}", p.display()))
            })?;
            // An existing state file keeps its own size: asking for another is a mistake to
            // say, not to ignore (a Redis namespace refuses the same mismatch).
            let have = f.params();
            let mut diff = Vec::new();
            if let Some(c) = a.capacity.filter(|&c| c != have.capacity) {
                diff.push(format!("--capacity {c} ≠ {}", have.capacity));
            }
            if let Some(r) = a.fp_rate.filter(|&r| (r - have.fp_rate).abs() > r * 1e-9) {
                diff.push(format!("--fp-rate {r} ≠ {}", have.fp_rate));
            }
            if !diff.is_empty() {
                return Err(exit::usage(format!(
                    "the state file {} was made with other parameters: {} (leave the flags out to use the file's, or give another --state file)",
                    p.display(),
                    diff.join(", ")
                )));
            }
            return Ok(f);
        }
    }
    let params = BloomParams::new(
        a.capacity.unwrap_or(DEFAULT_CAPACITY),
        a.fp_rate.unwrap_or(DEFAULT_FP_RATE),
    )
    .map_err(|e| exit::usage(format!("--capacity/--fp-rate: {e}")))?;
    BloomFilter::new(params).map_err(|e| exit::usage(format!("--capacity/--fp-rate: {e}")))
}

/// The filter `dedup` uses: in-process (default) or a Redis namespace.
enum DedupFilter {
    Local(BloomFilter),
    Redis(Box<crate::redis_filter::RedisFilter>, std::time::Duration),
}

/// `crawlsieve dedup`, in steps (each one of the functions below).
pub(super) fn dedup(a: DedupArgs) -> Result<()> {
    // The sieve and its scope from the flags; the inputs, the output and the state file checked
    // before anything is written.
    let mut sieve = a.sieve_args.sieve()?;
    a.scope.apply(&mut sieve)?;
    check_io(&a.input, &a.output)?;
    check_state_path(&a)?;
    // The filter: a Redis namespace with --redis, else in-process (loaded from --state).
    let mut filter = match a.redis.connect(a.capacity, a.fp_rate)? {
        Some(f) => DedupFilter::Redis(Box::new(f), a.redis.redis_retry_for.0),
        None => DedupFilter::Local(load_or_create(&a)?),
    };
    let started = Instant::now();
    let mut em = Emitter {
        out: open_output(&a.output)?,
        sum: Summary::default(),
        format: a.format,
        buf: Vec::with_capacity(OUT_CHUNK),
    };
    let progress = Progress::maybe(&a.input, a.quiet);
    // Stream the input through the sieve and the filter, writing each batch's verdicts.
    let stopped = match &mut filter {
        DedupFilter::Local(f) => stream_local(&a, &mut sieve, f, &mut em, progress.as_ref())?,
        DedupFilter::Redis(f, budget) => {
            stream_redis(&a, &mut sieve, f, *budget, &mut em, progress.as_ref())?;
            false
        }
    };
    let Emitter { mut out, sum, .. } = em;
    // Deliver, then remember: the state is saved only once every new URL was written out.
    out.flush().context("writing the output")?;
    drop(out);
    drop(progress);
    // Remember and report: the state saved, the summary on stderr.
    match filter {
        DedupFilter::Local(f) => finish_local(&a, &f, &sum, started, stopped),
        DedupFilter::Redis(f, _) => finish_redis(&a, f, &sum, started),
    }
}

/// The --state file is usable: not the output, in a directory that exists.
fn check_state_path(a: &DedupArgs) -> Result<()> {
    // The state is saved after the run: a directory that is not there would lose it then, and
    // an output written to the state file would be overwritten by it.
    if let (Some(p), Some(o)) = (&a.state, &a.output.output) {
        if p == o || matches!((p.canonicalize(), o.canonicalize()), (Ok(x), Ok(y)) if x == y) {
            return Err(exit::usage(format!(
                "-o {} is the --state file: the saved filter would overwrite the output",
                o.display()
            )));
        }
    }
    if let Some(p) = &a.state {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(exit::input(format!(
                "--state {}: the directory {} does not exist (the state is saved there after the run)",
                p.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// The input through the in-process filter `f`; whether a signal stopped it.
fn stream_local(
    a: &DedupArgs,
    sieve: &mut Sieve,
    f: &mut BloomFilter,
    em: &mut Emitter,
    progress: Option<&Progress>,
) -> Result<bool> {
    let mut res = BatchResult::default();
    // With the in-process filter, a first SIGTERM/SIGINT ends the input where it is: what was
    // read is decided and written, and the state saved with exactly those URLs (a second
    // signal exits at once, saving nothing). (`--redis`: a killed run's outbox is adopted by the
    // next one instead.)
    let stop = crate::stage::signals::install_interrupting();
    for_each_batch(&a.input, progress, Some(stop), |lines, quiet| {
        sieve.classify_batch(lines.iter().map(|l| (&l.bytes[..], l.truncated)), &mut res);
        match res.decide(&mut *f) {
            Ok(()) => {}
            Err(e) => match e {},
        }
        em.emit(&res, lines)?;
        if quiet {
            em.out.flush().context("writing the output")?;
        }
        Ok(())
    })
}

/// `dedup --outcomes FILE`: count the file's fetch outcomes in the namespace (index 0) and turn
/// the holds on. A line that is no fetch outcome is skipped and named (the others count).
fn count_outcomes(
    policy: &mut crate::gate::policy::Policy,
    file: &std::path::Path,
    quiet: bool,
    budget: std::time::Duration,
) -> Result<()> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("--outcomes {}: cannot read it", file.display()))?;
    let mut counted = Vec::new();
    let mut bad = 0usize;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_start_matches('\u{feff}').trim();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<crate::events::FetchOutcome>(line) {
            Ok(o) => counted.extend(o.counted()),
            Err(e) => {
                bad += 1;
                if !quiet && bad <= 5 {
                    eprintln!(
                        "crawlsieve: --outcomes {} line {}: not a fetch outcome ({e}); skipped",
                        file.display(),
                        n + 1
                    );
                }
            }
        }
    }
    for chunk in counted.chunks(1000) {
        crate::redis_filter::with_retry(
            budget,
            &|e: &crate::redis_filter::RedisFilterError, wait| {
                if !quiet {
                    eprintln!("crawlsieve: counting fetch outcomes: {e}; retrying in {wait:.1?}");
                }
            },
            || policy.record_outcomes(0, chunk),
        )?;
    }
    policy.use_outcomes();
    if !quiet {
        eprintln!(
            "crawlsieve dedup: {} counted from {}{}",
            super::lines::count_of(counted.len() as u64, "fetch outcome", "fetch outcomes"),
            file.display(),
            if bad > 0 {
                format!(
                    ", {} skipped (not a fetch outcome)",
                    super::lines::count_of(bad as u64, "line", "lines")
                )
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// The input through the Redis namespace `f` and the crawl policy of the flags, batches in
/// flight ([`RedisPipe`]); an ended run's outbox adopted first.
fn stream_redis(
    a: &DedupArgs,
    sieve: &mut Sieve,
    f: &mut crate::redis_filter::RedisFilter,
    budget: std::time::Duration,
    em: &mut Emitter,
    progress: Option<&Progress>,
) -> Result<()> {
    let cfg = a
        .policy
        .config(&a.redis.namespace, &a.sieve_args.robots_agent);
    let redis = a.redis.config().expect("--redis given");
    let metrics = crate::observe::FilterMetrics::new(&crate::observe::Metrics::new("dedup"));
    let mut policy = crate::gate::policy::Policy::with_redis(&cfg, redis, metrics);
    policy.attach(&a.redis.namespace);
    if let Some(file) = &a.policy.outcomes {
        count_outcomes(&mut policy, file, a.quiet, budget)?;
    }
    let policy = DedupPolicy {
        policy,
        names: [a.redis.namespace.clone()],
        robots_wait: cfg.robots.fetch_timeout.0 + std::time::Duration::from_secs(1),
    };
    let mut pipe = RedisPipe::new(f, budget, a.quiet, Some(policy));
    pipe.adopt(em)?;
    for_each_batch(&a.input, progress, None, |lines, quiet| {
        if !lines.is_empty() {
            let (mut res, mut kept) = pipe.pool.pop().unwrap_or_default();
            sieve.learned = pipe.learned();
            sieve.classify_batch(lines.iter().map(|l| (&l.bytes[..], l.truncated)), &mut res);
            kept.clear();
            kept.extend_from_slice(lines);
            pipe.push(res, kept, em)?;
        }
        if quiet {
            // Complete what is in flight: its new URLs are written and flushed.
            pipe.drain(em)?;
        }
        Ok(())
    })?;
    pipe.finish(em)
}

/// After an in-process run: the state saved, the summary and the filter's numbers on stderr; a
/// run a signal stopped is partial.
fn finish_local(
    a: &DedupArgs,
    filter: &BloomFilter,
    sum: &Summary,
    started: Instant,
    stopped: bool,
) -> Result<()> {
    if let Some(p) = &a.state {
        snapshot::save(filter, p)
            .with_context(|| format!("cannot save the state file {}", p.display()))?;
    }
    if !a.quiet {
        let stats = filter.stats();
        let mut err = io::stderr().lock();
        sum.print(started.elapsed().as_secs_f64(), &mut err)?;
        writeln!(
            err,
            "  filter: {} in a filter sized for {} (--capacity), {:.1}% of its bits set; false positives now {} (target {} at capacity); {}",
            super::lines::count_of(stats.items, "URL", "URLs"),
            thousands(stats.capacity),
            stats.fill_ratio * 100.0,
            one_in(stats.estimated_fp),
            one_in(stats.target_fp),
            mebibytes(stats.bytes)
        )?;
        if stats.items > stats.capacity {
            writeln!(err, "  warning: the filter is past its capacity; use a larger --capacity for a new state file")?;
        }
    }
    if stopped {
        return Err(exit::partial(format!(
            "stopped by a signal after {} input lines, their {} new URLs written{}",
            sum.lines,
            sum.new,
            if a.state.is_some() {
                " and remembered: a run over the whole input again gives only the rest"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

/// After a `--redis` run: the namespace's item counter updated, the summary and the client's
/// numbers on stderr.
fn finish_redis(
    a: &DedupArgs,
    mut f: Box<crate::redis_filter::RedisFilter>,
    sum: &Summary,
    started: Instant,
) -> Result<()> {
    f.flush().context("updating the namespace's item counter")?;
    if !a.quiet {
        let mut err = io::stderr().lock();
        sum.print(started.elapsed().as_secs_f64(), &mut err)?;
        let c = f.client_stats();
        writeln!(
            err,
            "  redis namespace {}: {} answered by the local tier, {} looked up in Redis, {} reconnects, {} answered new after a lost reply, {} outbox entries adopted from ended clients",
            f.namespace(), c.tier_hits, c.redis_lookups, c.reconnects, c.doubt_rescued, c.adopted
        )?;
    }
    Ok(())
}

/// `n` with thousands separators: `10,000,000`.
fn thousands(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A probability as a person reads it: "about 1 in 10,000", "under 1 in a trillion", "none".
fn one_in(p: f64) -> String {
    if p.is_nan() || p <= 0.0 {
        "none".into()
    } else if p < 1e-12 {
        "under 1 in a trillion".into()
    } else if p >= 0.5 {
        format!("{:.0}%", p * 100.0)
    } else {
        format!("about 1 in {}", thousands((1.0 / p).round() as u64))
    }
}

/// Bytes in MiB (or KiB below one): what `ls -lh` would say.
fn mebibytes(b: u64) -> String {
    if b < 1 << 20 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    }
}

pub(super) fn check(a: CheckArgs) -> Result<()> {
    let mut sieve = a.sieve_args.sieve()?;
    a.scope.apply(&mut sieve)?;
    check_io(&a.input, &a.output)?;
    let mut out = open_output(&a.output)?;
    let mut buf = Vec::with_capacity(OUT_CHUNK + 4096);
    for_each_line(&a.input, None, |line| {
        let Some(line) = line else {
            out.write_all(&buf)?;
            buf.clear();
            return Ok(out.flush()?);
        };
        match sieve.classify(&line.bytes, line.truncated) {
            Ok(c) => write_json_line(&mut buf, &line.bytes, "keep", None, Some(c)),
            Err(r) => write_json_line(&mut buf, &line.bytes, "reject", Some(r), None),
        }
        if buf.len() >= OUT_CHUNK {
            out.write_all(&buf)?;
            buf.clear();
        }
        Ok(())
    })?;
    out.write_all(&buf)?;
    out.flush()?;
    Ok(())
}

/// The canonical form of one line through the same rules as `check` and `dedup` (the junk
/// rules of `--profile`, `--max-len`, `--context`, the base): `None` when they reject it.
fn canon_line<'a>(sieve: &'a mut Sieve, line: &Line, no_base: &mut u64) -> Option<&'a str> {
    match sieve.classify(&line.bytes, line.truncated) {
        Ok(c) => Some(c),
        Err(r) => {
            *no_base += u64::from(r == Reason::NoBase);
            None
        }
    }
}

/// After `canon` or `pattern`: relative lines printed empty for want of `--base` are said once
/// on stderr (every line empty, and nothing said, looked like a broken tool).
fn hint_no_base(command: &str, no_base: u64) {
    if no_base > 0 {
        eprintln!(
            "crawlsieve {command}: {no_base} relative line(s) printed empty: give --base URL (the page they were found on) to resolve them"
        );
    }
}

pub(super) fn canon(a: CanonArgs) -> Result<()> {
    let mut sieve = a.sieve_args.sieve()?;
    check_io(&a.input, &a.output)?;
    let mut out = open_output(&a.output)?;
    let mut no_base = 0;
    for_each_line(&a.input, None, |line| {
        let Some(line) = line else {
            return Ok(out.flush()?);
        };
        if let Some(c) = canon_line(&mut sieve, line, &mut no_base) {
            out.write_all(c.as_bytes())?;
        }
        out.write_all(b"\n")?;
        Ok(())
    })?;
    out.flush()?;
    hint_no_base("canon", no_base);
    Ok(())
}

pub(super) fn pattern_cmd(a: PatternArgs) -> Result<()> {
    if let Some(m) = &a.method {
        if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(exit::usage(format!(
                "--method must be an HTTP method name, got {m:?}"
            )));
        }
    }
    let mut sieve = a.sieve_args.sieve()?;
    check_io(&a.input, &a.output)?;
    let mut out = open_output(&a.output)?;
    let mut no_base = 0;
    for_each_line(&a.input, None, |line| {
        let Some(line) = line else {
            return Ok(out.flush()?);
        };
        if let Some(c) = canon_line(&mut sieve, line, &mut no_base) {
            let p = match &a.method {
                Some(m) => pattern::pattern_with_method(m, c),
                None => pattern::pattern(c),
            };
            out.write_all(p.as_bytes())?;
        }
        out.write_all(b"\n")?;
        Ok(())
    })?;
    out.flush()?;
    hint_no_base("pattern", no_base);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary's figures read as a person says them (issue 45: "estimated FP 6.41e-94").
    #[test]
    fn filter_figures_read_as_words() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(10_000_000), "10,000,000");
        assert_eq!(one_in(6.41e-94), "under 1 in a trillion");
        assert_eq!(one_in(1e-4), "about 1 in 10,000");
        assert_eq!(one_in(0.0), "none");
        assert_eq!(one_in(f64::NAN), "none");
        assert_eq!(one_in(0.75), "75%");
        assert_eq!(mebibytes(23 * (1 << 20) + 1), "23.0 MiB");
        assert_eq!(mebibytes(2048), "2.0 KiB");
    }
}
