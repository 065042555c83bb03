//! What a client counts and what `crawlsieve bloom stats` reports.

use super::*;

/// Counters of one client (the gate exports them as metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClientStats {
    /// Answered "seen" by the local tier, without a round trip.
    pub tier_hits: u64,
    /// Sent to Redis.
    pub redis_lookups: u64,
    /// Reported new.
    pub new: u64,
    /// Exact mode: Bloom said "maybe", the fingerprint store said new (a false positive caught).
    pub bloom_fp_caught: u64,
    /// Reported new because an earlier attempt of the same URL failed ambiguously
    /// ([`RedisFilter::check_and_set`]).
    pub doubt_rescued: u64,
    /// Claims found already ours: an earlier attempt's reply was lost ([`RedisFilter::submit`]).
    pub reclaimed: u64,
    /// URLs found claimed by another client and waited on.
    pub busy_waits: u64,
    /// Of those, taken as new after waiting `busy_wait` (possible repeats).
    pub busy_taken: u64,
    /// Write pipelines whose outcome was unknown.
    pub ambiguous_failures: u64,
    /// Reconnections.
    pub reconnects: u64,
    /// Outbox entries adopted from clients whose lease expired (the outbox protocol).
    pub adopted: u64,
}

/// Filled and estimated figures of one generation.
#[derive(Debug, Clone, Serialize)]
pub struct GenStats {
    /// The generation's parameters.
    pub spec: GenSpec,
    /// New URLs counted by clients.
    pub items: u64,
    /// Fraction of data bits set.
    pub fill: f64,
    /// Items estimated from the fill (`bloom`, `exact`), or from the fingerprints counted in
    /// the buckets sampled (`fingerprints`: exact when every bucket is counted, see
    /// `buckets_counted`). `items` is what the clients counted as new.
    pub estimated_items: u64,
    /// FP rate at the current fill.
    pub estimated_fp: f64,
    /// `MEMORY USAGE` of its keys.
    pub memory_bytes: u64,
    /// Fingerprints stored (estimated from `buckets_counted` of `buckets`).
    pub fingerprints: u64,
    /// Fingerprint buckets of the generation (0 for a Bloom-bits generation).
    pub buckets: u64,
    /// Of those, the buckets counted (all up to a few thousand; else an even sample, scaled
    /// up: a namespace of 10⁹ URLs has millions): below `buckets`, `fingerprints` and
    /// `estimated_items` are estimates — a namespace of two URLs may show 0.
    pub buckets_counted: u64,
    /// What the generation stores per URL, in words: `k` bits of a Bloom filter, or one
    /// fingerprint (`fingerprints` mode: the generation's `k` is 1 and sets no bits; the
    /// namespace's `k` applies to `bloom` and `exact` generations only).
    pub stores: String,
}

/// `crawlsieve bloom stats`.
#[derive(Debug, Clone, Serialize)]
pub struct NamespaceStats {
    /// Name.
    pub namespace: String,
    /// Parameters.
    pub spec: NamespaceSpec,
    /// Per live generation.
    pub generations: Vec<GenStats>,
    /// Sum of `items`.
    pub items: u64,
    /// Sum of memory.
    pub memory_bytes: u64,
    /// Memory per counted item.
    pub bytes_per_item: f64,
    /// Union bound of the generations' estimated FP rates.
    pub estimated_fp: f64,
}

impl RedisFilter {
    /// Fill, estimated FP and memory of every live generation.
    pub fn stats(&mut self) -> Result<NamespaceStats, RedisFilterError> {
        self.idle()?;
        self.refresh()?;
        let gens = self.gens.live.clone();
        let ns = self.ns.clone();
        let mut out = Vec::new();
        for g in &gens {
            out.push(self.gen_stats(&ns, g)?);
        }
        let items: u64 = out.iter().map(|g| g.items).sum();
        let memory: u64 = out.iter().map(|g| g.memory_bytes).sum();
        Ok(NamespaceStats {
            namespace: ns,
            spec: self.spec.clone(),
            estimated_fp: out.iter().map(|g| g.estimated_fp).sum::<f64>().min(1.0),
            items,
            memory_bytes: memory,
            bytes_per_item: if items > 0 {
                memory as f64 / items as f64
            } else {
                0.0
            },
            generations: out,
        })
    }

    /// 1. Count the bits, fingerprints and memory of generation `g` of `ns`, and estimate.
    fn gen_stats(&mut self, ns: &str, g: &GenSpec) -> Result<GenStats, RedisFilterError> {
        let (cmds, total, sampled) = stats_commands(ns, g);
        let scale = if sampled > 0 {
            total as f64 / sampled as f64
        } else {
            1.0
        };
        let (ones, bits_mem, fp_mem, fps_sampled) = self.tally(&cmds)?;
        let mem = bits_mem + (fp_mem as f64 * scale) as u64;
        let fps_stored = (fps_sampled as f64 * scale).round() as u64;
        let (fill, est, fp) = estimates(g, ones, fps_stored);
        Ok(GenStats {
            spec: g.clone(),
            items: self.items.get(&g.id).copied().unwrap_or(0),
            fill,
            estimated_items: est,
            estimated_fp: fp,
            memory_bytes: mem,
            fingerprints: fps_stored,
            buckets: total,
            buckets_counted: sampled,
            stores: if g.bitmap {
                format!("{} Bloom bits per URL", g.k)
            } else {
                format!(
                    "one {}-bit fingerprint per URL (no Bloom bits: k does not apply)",
                    g.fp_bits
                )
            },
        })
    }

    /// 3. Run `cmds`: bits set, memory of bits, memory of fingerprints, fingerprints counted.
    fn tally(&mut self, cmds: &[redis::Cmd]) -> Result<(u64, u64, u64, u64), RedisFilterError> {
        let mut ones = 0u64;
        let mut bits_mem = 0u64;
        let mut fp_mem = 0u64;
        let mut fps_sampled = 0u64;
        for chunk in cmds.chunks(2000) {
            let replies = self.pipeline(chunk.to_vec(), false)?;
            let mut last = "";
            for (c, r) in chunk.iter().zip(replies) {
                let v = as_int(&r).unwrap_or(0).max(0) as u64;
                match c.args_iter().next() {
                    Some(redis::Arg::Simple(b"BITCOUNT")) => {
                        ones += v;
                        last = "bits";
                    }
                    Some(redis::Arg::Simple(b"SCARD")) => {
                        fps_sampled += v;
                        last = "fp";
                    }
                    _ if last == "bits" => bits_mem += v,
                    _ => fp_mem += v,
                }
            }
        }
        Ok((ones, bits_mem, fp_mem, fps_sampled))
    }
}

/// 2. The commands counting `g`'s bits and sampled buckets; how many buckets, how many sampled.
fn stats_commands(ns: &str, g: &GenSpec) -> (Vec<redis::Cmd>, u64, u64) {
    let mut cmds = Vec::new();
    let usage = |key: &str| {
        redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .clone()
    };
    for s in 0..g.shards {
        if g.bitmap {
            let key = Keys::shard(ns, g, s);
            cmds.push(redis::cmd("BITCOUNT").arg(&key).clone());
            cmds.push(usage(&key));
        }
    }
    // Fingerprint buckets: all of them up to STATS_SAMPLE, else an even sample (a
    // namespace of 10⁹ URLs has ~4 M buckets), scaled up.
    let total = g.buckets as u64 * g.shards as u64;
    let step = total.div_ceil(STATS_SAMPLE).max(1);
    let mut sampled = 0u64;
    let mut i = 0;
    while i < total {
        let bk = Keys::bucket(
            ns,
            g,
            (i / g.buckets as u64) as u32,
            (i % g.buckets as u64) as u32,
        );
        cmds.push(redis::cmd("SCARD").arg(&bk).clone());
        cmds.push(usage(&bk));
        sampled += 1;
        i += step;
    }
    (cmds, total, sampled)
}

/// 4. Fill, estimated items and FP rate of `g` from its bits set or fingerprints stored.
fn estimates(g: &GenSpec, ones: u64, fps_stored: u64) -> (f64, u64, f64) {
    if g.bitmap {
        let m = (g.data_bits() * g.shards as u64) as f64;
        let fill = ones as f64 / m;
        let est = if fill < 1.0 {
            (-(m / g.k as f64) * (1.0 - fill).ln()) as u64
        } else {
            u64::MAX
        };
        (fill, est, fill.powi(g.k as i32))
    } else {
        let load = fps_stored as f64 / (g.buckets as f64 * g.shards as f64);
        (
            fps_stored as f64 / g.capacity as f64,
            fps_stored,
            g.fingerprint_fp(load),
        )
    }
}
