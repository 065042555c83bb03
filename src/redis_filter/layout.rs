//! Where a URL's bits live in Redis: generation sizing, shard strings, key names, positions.
//!
//! A generation is a partitioned Bloom filter: `shards` Redis strings; the fingerprint picks one
//! shard and all `k` bits of the URL lie in that string, so a check-and-set is one single-key
//! `BITFIELD` (atomic, and routable on Redis Cluster: every shard key has its own hash tag).
//!
//! **k is chosen for Redis, not for memory.** Redis spends ~0.5 µs per `SET u1` sub-command and
//! ~0.4 µs per URL besides (measured on this machine with `redis-cli --pipe`: 200 k URLs at
//! k = 4 / 7 / 13 took 0.55 / 0.75 / 1.60 s), so the textbook k = 13 at p = 1e-4 caps a Redis
//! core near 125 k URLs/s. The default k = 5 needs 29 bits per URL at p = 1e-4 instead of 19.2
//! (3.6 B instead of 2.4) and runs ~2.3× faster; `--hashes` trades back. The size is solved from
//! the exact formula p = (1 − e^(−k·n/m))^k for the chosen k, so the FP target holds either way.
//!
//! **Shard strings fit jemalloc's size classes.** A string of L bytes costs its size class
//! (4, 5, 6 or 7 × 2ʲ bytes for large allocations): a 2³²-bit (512 MiB) string costs 640 MiB
//! because of the 9-byte sds header. Shards are therefore `class − 128` bytes long, and the bits
//! the rounding adds are used: the generation's capacity is raised to what the allocated bits
//! hold at the FP target (never below what was asked). The last byte of every shard is reserved:
//! allocation writes it (`SETRANGE key L−1 "\0"`), which is idempotent and never clears a bit.

use serde::{Deserialize, Serialize};

use super::RedisFilterError;

/// Most bytes in one shard string: 512 MiB − 128 B, i.e. 2³² − 1024 bits (Redis' limit is 2³²).
pub const MAX_SHARD_BYTES: u64 = (1 << 29) - 128;
/// Shards are split so that none is larger than this by default (64 MiB): big keys block Redis
/// when migrated or exported and concentrate load on one cluster node.
pub const DEFAULT_SHARD_TARGET: u64 = 64 << 20;
/// Smallest shard string.
const MIN_SHARD_BYTES: u64 = 4096 - 128;
/// Default number of bit positions per URL (see the module docs).
pub const DEFAULT_K: u32 = 5;
/// Exact-confirm buckets are sized for this many fingerprints at capacity: well under Redis'
/// default `set-max-intset-entries` (512), so every bucket stays a compact intset (8 B/entry).
pub const BUCKET_TARGET: u64 = 256;

/// One generation of a namespace: a Bloom filter of its own size, plus (exact mode) the
/// fingerprint buckets that confirm its "maybe" answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenSpec {
    /// Generation number, increasing.
    pub id: u32,
    /// Unix seconds when it was created.
    pub created: u64,
    /// Unix seconds when it stopped receiving inserts (a newer generation became current).
    #[serde(default)]
    pub sealed: Option<u64>,
    /// Items it holds at its FP target (≥ what was asked: shard rounding is used).
    pub capacity: u64,
    /// FP target of this generation.
    pub fp_rate: f64,
    /// Bits per URL in the Bloom bit strings; 1 in `fingerprints` mode, which has none (the
    /// namespace's `k` is then unused: `bloom stats` says so in each generation's `stores`).
    pub k: u32,
    /// Number of shard strings.
    pub shards: u32,
    /// Length of each shard string in bytes (the last byte is reserved).
    pub shard_bytes: u64,
    /// Fingerprint buckets per shard (0 when the mode is `bloom`).
    #[serde(default)]
    pub buckets: u32,
    /// Whether the generation has Bloom bit strings (false in `fingerprints` mode).
    #[serde(default = "yes")]
    pub bitmap: bool,
    /// Bits of each stored fingerprint: 64 (exact mode), 32 or 16 (fingerprints mode).
    #[serde(default = "sixty_four")]
    pub fp_bits: u32,
    /// Random tag in the generation's key names, so that two clients racing to create
    /// generation N with different sizes never write into each other's keys (the loser's keys
    /// are unlinked).
    #[serde(default)]
    pub nonce: u32,
}

fn yes() -> bool {
    true
}

fn sixty_four() -> u32 {
    64
}

/// How a generation stores URLs (see [`super::Mode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// Bloom bits only.
    Bloom,
    /// Bloom bits and 64-bit fingerprints.
    BloomAndFingerprints,
    /// Fingerprints only, as narrow as the FP target allows.
    Fingerprints,
}

fn size_class_at_least(bytes: u64) -> u64 {
    // jemalloc: 4 classes per doubling (2^j, 1.25·2^j, 1.5·2^j, 1.75·2^j).
    let mut pow = 4096u64;
    loop {
        for c in [4u64, 5, 6, 7] {
            let class = pow / 4 * c;
            if class >= bytes {
                return class;
            }
        }
        pow *= 2;
    }
}

/// m for n items at p with exactly k functions: p = (1 − e^(−k·n/m))^k.
pub fn bits_for(n: u64, p: f64, k: u32) -> f64 {
    let q = p.powf(1.0 / k as f64);
    -(k as f64) * n as f64 / (1.0 - q).ln()
}

/// Items that m bits hold at p with k functions (inverse of [`bits_for`]).
pub fn items_for(m: u64, p: f64, k: u32) -> u64 {
    let q = p.powf(1.0 / k as f64);
    (-(m as f64) * (1.0 - q).ln() / k as f64).floor() as u64
}

impl GenSpec {
    /// Size a generation. `shards = None` picks enough shards to keep each ≤ 64 MiB.
    pub fn new(
        id: u32,
        created: u64,
        capacity: u64,
        fp_rate: f64,
        k: u32,
        shards: Option<u32>,
        store: Store,
    ) -> Result<GenSpec, RedisFilterError> {
        if capacity == 0 {
            return Err(RedisFilterError::Params(
                "capacity must be at least 1".into(),
            ));
        }
        if capacity > MAX_CAPACITY {
            return Err(RedisFilterError::Params(format!(
                "capacity {capacity} is beyond {MAX_CAPACITY} per generation (a namespace grows \
                 by generations past its capacity: start smaller)"
            )));
        }
        if !(fp_rate > 0.0 && fp_rate < 1.0) {
            return Err(RedisFilterError::Params(format!(
                "fp_rate must be in (0, 1), got {fp_rate}"
            )));
        }
        if !(1..=32).contains(&k) {
            return Err(RedisFilterError::Params(format!(
                "k must be in 1..=32, got {k}"
            )));
        }
        if store == Store::Fingerprints {
            return Self::fingerprints(id, created, capacity, fp_rate, shards);
        }
        let m = bits_for(capacity, fp_rate, k).ceil() as u64;
        let bytes = m.div_ceil(8);
        let shards = match shards {
            Some(0) => return Err(RedisFilterError::Params("shards must be at least 1".into())),
            Some(s) => s as u64,
            // At most 64 MiB per shard, and, when each would still hold 256 KiB, at least 16
            // shards: each has its own hash tag, so a cluster spreads them over its nodes.
            None => bytes
                .div_ceil(DEFAULT_SHARD_TARGET)
                .max((bytes / (256 << 10)).min(MIN_SPREAD_SHARDS))
                .max(1),
        };
        if shards > 1 << 20 {
            return Err(RedisFilterError::Params(format!(
                "{shards} shards is too many"
            )));
        }
        // +1: the reserved byte; +128: room for the sds header inside the size class.
        let per_shard = bytes.div_ceil(shards) + 1;
        let shard_bytes = (size_class_at_least(per_shard + 128) - 128).max(MIN_SHARD_BYTES);
        if shard_bytes > MAX_SHARD_BYTES {
            return Err(RedisFilterError::Params(format!(
                "{capacity} items at p={fp_rate} need shards of {per_shard} bytes; Redis strings \
                 hold at most {MAX_SHARD_BYTES}: use more shards"
            )));
        }
        let mut g = GenSpec {
            id,
            created,
            sealed: None,
            capacity,
            fp_rate,
            k,
            shards: shards as u32,
            shard_bytes,
            buckets: 0,
            bitmap: true,
            fp_bits: 64,
            nonce: new_nonce(),
        };
        g.capacity = items_for(g.data_bits() * shards, fp_rate, k).max(capacity);
        if store == Store::BloomAndFingerprints {
            g.buckets = (g.capacity.div_ceil(shards) / BUCKET_TARGET).max(1) as u32;
        }
        Ok(g)
    }

    /// A fingerprints-only generation: `capacity / 256` intset buckets; each fingerprint is 16,
    /// 32 or 64 bits, the narrowest whose FP rate at capacity (256 / 2^bits: 3.9e-3, 6.0e-8,
    /// 1.4e-17) meets `fp_rate`. Redis stores 16- and 32-bit intset entries in 2 and 4 bytes.
    fn fingerprints(
        id: u32,
        created: u64,
        capacity: u64,
        fp_rate: f64,
        shards: Option<u32>,
    ) -> Result<GenSpec, RedisFilterError> {
        let buckets_total = capacity.div_ceil(BUCKET_TARGET).max(1);
        let shards = match shards {
            Some(0) => return Err(RedisFilterError::Params("shards must be at least 1".into())),
            Some(s) => s as u64,
            // At most 65 536 buckets per shard, and at least 16 shards where there are buckets
            // for them: every shard is its own hash tag (cluster slot).
            None => buckets_total
                .div_ceil(1 << 16)
                .max(buckets_total.min(MIN_SPREAD_SHARDS)),
        };
        if shards > 1 << 20 {
            return Err(RedisFilterError::Params(format!(
                "{shards} shards is too many (at most {})",
                1 << 20
            )));
        }
        let fp_bits = [16u32, 32, 64]
            .into_iter()
            .find(|&b| BUCKET_TARGET as f64 / 2f64.powi(b as i32) <= fp_rate)
            .unwrap_or(64);
        Ok(GenSpec {
            id,
            created,
            sealed: None,
            capacity,
            fp_rate,
            k: 1,
            shards: shards as u32,
            shard_bytes: MIN_SHARD_BYTES,
            buckets: buckets_total.div_ceil(shards).max(1) as u32,
            bitmap: false,
            fp_bits,
            nonce: new_nonce(),
        })
    }

    /// FP rate of a fingerprint lookup in a bucket of `load` entries.
    pub fn fingerprint_fp(&self, load: f64) -> f64 {
        load / 2f64.powi(self.fp_bits as i32)
    }

    /// Check a spec read from Redis or a snapshot before trusting its sizes.
    pub fn check(&self) -> Result<(), RedisFilterError> {
        let ok = self.shards >= 1
            && self.shards <= 1 << 20
            && (MIN_SHARD_BYTES..=MAX_SHARD_BYTES).contains(&self.shard_bytes)
            && (1..=32).contains(&self.k)
            && self.fp_rate > 0.0
            && self.fp_rate < 1.0
            && self.capacity >= 1
            && self.buckets <= 1 << 24
            && matches!(self.fp_bits, 16 | 32 | 64)
            && (self.bitmap || self.buckets > 0);
        if ok {
            Ok(())
        } else {
            Err(RedisFilterError::Corrupt(format!(
                "inconsistent generation {self:?}"
            )))
        }
    }

    /// Usable bits per shard (the last byte is reserved).
    pub fn data_bits(&self) -> u64 {
        (self.shard_bytes - 1) * 8
    }

    /// Bytes Redis allocates for the shard strings of this generation.
    pub fn allocated_bytes(&self) -> u64 {
        (self.shard_bytes + 128) * self.shards as u64
    }

    /// The shard a fingerprint lives in.
    #[inline]
    pub fn shard_of(&self, fp: u128) -> u32 {
        fastrange((fp >> 64) as u64, self.shards as u64) as u32
    }

    /// The k bit offsets of a fingerprint inside its shard (enhanced double hashing).
    #[inline]
    pub fn positions(&self, fp: u128, out: &mut [u64; 32]) -> usize {
        let bits = self.data_bits();
        let mut h1 = fp as u64;
        let mut h2 = mix((fp >> 64) as u64 ^ 0x5851_f42d_4c95_7f2d) | 1;
        for (i, slot) in out.iter_mut().take(self.k as usize).enumerate() {
            *slot = fastrange(h1, bits);
            h1 = h1.wrapping_add(h2);
            h2 = h2.wrapping_add(i as u64 + 1);
        }
        self.k as usize
    }

    /// Exact mode: the bucket and the 64-bit member that store a fingerprint.
    #[inline]
    pub fn bucket_of(&self, fp: u128) -> (u32, i64) {
        let b = fastrange(mix((fp >> 64) as u64), self.buckets.max(1) as u64) as u32;
        let member = match self.fp_bits {
            16 => fp as u16 as i16 as i64,
            32 => fp as u32 as i32 as i64,
            _ => fp as u64 as i64,
        };
        (b, member)
    }
}

/// A value unique to this call (time, process and a counter, hashed): instance ids and
/// generation nonces.
pub(crate) fn unique_u64() -> u64 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!(
        "{t}:{}:{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    xxhash_rust::xxh3::xxh3_64(seed.as_bytes())
}

fn new_nonce() -> u32 {
    (unique_u64() as u32).max(1)
}

#[inline]
fn fastrange(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Largest capacity of one generation (10¹², ~5 TB of fingerprints).
pub const MAX_CAPACITY: u64 = 1_000_000_000_000;

/// Automatic shard counts aim at least this many shards (hash tags), so a namespace uses every
/// node of a cluster.
const MIN_SPREAD_SHARDS: u64 = 16;

/// Key names. Namespace names are `[A-Za-z0-9._-]{1,64}`, so they never contain a brace and the
/// hash tags below are exactly what they look like.
pub struct Keys;

impl Keys {
    /// The namespace's parameters and generations (a Redis hash).
    pub fn meta(ns: &str) -> String {
        format!("cs:{{{ns}}}:meta")
    }

    /// The `SCAN` pattern of every namespace's metadata key (`bloom list`).
    pub const META_PATTERN: &'static str = "cs:{*}:meta";

    /// The namespace whose metadata key `key` is (a key [`Keys::META_PATTERN`] matched), if
    /// it is one: the name between the braces, a valid namespace name.
    pub fn namespace_of_meta(key: &str) -> Option<&str> {
        let name = key.strip_prefix("cs:{")?.strip_suffix("}:meta")?;
        check_namespace(name).is_ok().then_some(name)
    }

    /// A `bloom` namespace's re-admit set: fingerprints forgotten and not yet seen again
    /// (16 bytes each, big-endian), in the metadata's slot.
    pub fn readmit(ns: &str) -> String {
        format!("cs:{{{ns}}}:readmit")
    }

    /// One shard string; its own hash tag spreads shards over cluster slots.
    pub fn shard(ns: &str, g: &GenSpec, shard: u32) -> String {
        let mut s = String::new();
        Self::write_shard(&mut s, ns, g, shard);
        s
    }

    /// [`Keys::shard`] into a reused buffer (the hot path).
    pub fn write_shard(out: &mut String, ns: &str, g: &GenSpec, shard: u32) {
        Self::write_tag(out, ns, g, shard);
        out.push_str(":bits");
    }

    /// `cs:{NS:GEN[-NONCE]:SHARD}`: the hash-tagged prefix of a shard's keys.
    fn write_tag(out: &mut String, ns: &str, g: &GenSpec, shard: u32) {
        let mut b = itoa::Buffer::new();
        out.push_str("cs:{");
        out.push_str(ns);
        out.push(':');
        out.push_str(b.format(g.id));
        if g.nonce != 0 {
            out.push('-');
            out.push_str(b.format(g.nonce));
        }
        out.push(':');
        out.push_str(b.format(shard));
        out.push('}');
    }

    /// The claim on one URL (`SET … NX PX ttl`, see [`crate::redis_filter::RedisFilter::submit`]):
    /// `cs:{NS:c:FP}`. The whole fingerprint is the hash tag, so claims spread over every slot
    /// of a cluster; they outlive no generation (a TTL ends each).
    pub fn write_claim(out: &mut String, ns: &str, fp: u128) {
        use std::fmt::Write;
        out.push_str("cs:{");
        out.push_str(ns);
        let _ = write!(out, ":c:{fp:032x}}}");
    }

    /// The outbox protocol's keys of namespace `ns` share the hash tag `{NS:ob}`, so the
    /// adoption script touches them together on a cluster: the set of clients with an outbox
    /// (`cs:{NS:ob}:clients`), ...
    pub fn outbox_clients(ns: &str) -> String {
        format!("cs:{{{ns}:ob}}:clients")
    }

    /// ... one client's lease (`cs:{NS:ob}:lease:ID`, a key with a TTL its holder refreshes) ...
    pub fn lease(ns: &str, id: &str) -> String {
        format!("cs:{{{ns}:ob}}:lease:{id}")
    }

    /// ... and one client's outbox (`cs:{NS:ob}:box:ID`, a hash: one field per batch in flight,
    /// the payloads of its URLs as the value).
    pub fn outbox(ns: &str, id: &str) -> String {
        format!("cs:{{{ns}:ob}}:box:{id}")
    }

    /// A URL-pattern verdict of namespace `ns` (`cs:pv:{NS:HASH}`; [`crate::pattern_verdicts`]).
    pub fn pattern_verdict(ns: &str, pattern_hash: u64) -> String {
        format!("cs:pv:{{{ns}:{pattern_hash:016x}}}")
    }

    /// The fetch-outcome counts of one key of namespace `ns` (`cs:fo:{NS:HASH}`, a hash `h`,
    /// `m`; [`crate::outcomes`]).
    pub fn fetch_outcomes(ns: &str, key: &str) -> String {
        format!(
            "cs:fo:{{{ns}:{:016x}}}",
            xxhash_rust::xxh3::xxh3_64(key.as_bytes())
        )
    }

    /// The candidates held under one fetch-outcome key of namespace `ns` (`cs:fh:{NS:HASH}`, a
    /// hash: the candidate's fingerprint → its URL event; in the slot of the key's counts,
    /// [`Keys::fetch_outcomes`]; [`crate::outcomes`]).
    pub fn fetch_held(ns: &str, key: &str) -> String {
        format!(
            "cs:fh:{{{ns}:{:016x}}}",
            xxhash_rust::xxh3::xxh3_64(key.as_bytes())
        )
    }

    /// The counts whose key keeps the held candidates of the hash `held` (a
    /// [`Keys::fetch_held`] name): the same namespace and key hash.
    pub fn fetch_outcomes_of_held(held: &str) -> String {
        held.replacen("cs:fh:", "cs:fo:", 1)
    }

    /// The `SCAN` pattern of every namespace's held-candidate hashes.
    pub fn fetch_held_all() -> &'static str {
        "cs:fh:*"
    }

    /// The keys released by `crawlsieve rules release` whose held candidates a gate is to put
    /// back on its input (`cs:fr`, a set of `NAMESPACE` TAB `KEY` TAB `NONCE`).
    pub fn fetch_released() -> &'static str {
        "cs:fr"
    }

    /// The `SCAN` pattern of namespace `ns`'s fetch-outcome counts.
    pub fn fetch_outcomes_pattern(ns: &str) -> String {
        format!("cs:fo:{{{ns}:*}}")
    }

    /// The index of namespace `ns`'s pattern verdicts (`cs:pv:{NS}:idx`, a sorted set: the
    /// hex hash of every pattern with a verdict, scored by when it was first indexed) and its
    /// counter (`cs:pv:{NS}:seq`, a hash: `epoch`, `n`); [`crate::pattern_verdicts`].
    pub fn pattern_index(ns: &str) -> (String, String) {
        (format!("cs:pv:{{{ns}}}:idx"), format!("cs:pv:{{{ns}}}:seq"))
    }

    /// The render stage's clustering checkpoint of one host (`cs:rs:{HOST}`).
    pub fn render_state(host: &str) -> String {
        format!("cs:rs:{{{host}}}")
    }

    /// An origin's robots.txt record in namespace `ns` (`cs:robots:{NS}:<origin>`, JSON), and
    /// the lease on fetching it (`…:lease:<origin>`); [`crate::gate::robots`].
    pub fn robots(ns: &str, origin: &str) -> (String, String) {
        (
            format!("cs:robots:{{{ns}}}:{origin}"),
            format!("cs:robots:{{{ns}}}:lease:{origin}"),
        )
    }

    /// The per-host budget's counts of namespace `ns` in window `window` (`cs:budget:{NS}:W`, a
    /// hash: host → new URLs published), in the namespace's slot; [`crate::gate::budget`].
    pub fn budget(ns: &str, window: u64) -> String {
        format!("cs:budget:{{{ns}}}:{window}")
    }

    /// A soft-404 scope's record (`cs:s404:{SCOPE}`) and its lease; `crate::render::soft404`.
    pub fn soft_404(scope: &str) -> (String, String) {
        (
            format!("cs:s404:{{{scope}}}"),
            format!("cs:s404:{{{scope}}}:lease"),
        )
    }

    /// Namespace `ns`'s learned parameter rules (`cs:lp:{NS}`, a hash), their revocations
    /// (`…:revoked`) and version counter (`…:ver`); [`crate::params`].
    pub fn learned_params(ns: &str) -> (String, String, String) {
        (
            format!("cs:lp:{{{ns}}}"),
            format!("cs:lp:{{{ns}}}:revoked"),
            format!("cs:lp:{{{ns}}}:ver"),
        )
    }

    /// A record of the namespace (`cs:{NS}:rec:NAME`), in its metadata's slot.
    pub fn record(ns: &str, name: &str) -> String {
        format!("cs:{{{ns}}}:rec:{name}")
    }

    /// One fingerprint bucket (an intset), in the same slot as its shard.
    pub fn bucket(ns: &str, g: &GenSpec, shard: u32, bucket: u32) -> String {
        let mut s = String::new();
        Self::write_tag(&mut s, ns, g, shard);
        s.push_str(":fp:");
        s.push_str(itoa::Buffer::new().format(bucket));
        s
    }
}

/// Whether `ns` is a valid namespace name (`[A-Za-z0-9._-]{1,64}`).
pub fn is_namespace(ns: &str) -> bool {
    !ns.is_empty()
        && ns.len() <= 64
        && ns
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Validate a namespace name.
pub fn check_namespace(ns: &str) -> Result<(), RedisFilterError> {
    if is_namespace(ns) {
        Ok(())
    } else {
        Err(RedisFilterError::Params(format!(
            "namespace {ns:?}: use 1–64 characters from A–Z a–z 0–9 . _ -"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_fit_size_classes_and_keep_the_fp_target() {
        let g = GenSpec::new(0, 0, 10_000_000, 1e-4, 5, None, Store::Bloom).unwrap();
        // 36 MB: one 64 MiB shard would do, but 16 spread the namespace over a cluster.
        assert_eq!(g.shards, 16);
        let class = g.shard_bytes + 128;
        let pow = 1u64 << (63 - class.leading_zeros());
        assert!([4, 5, 6, 7].contains(&(class / (pow / 4))), "{class}");
        assert_eq!(class % (pow / 4), 0);
        assert!(g.capacity >= 10_000_000);
        // The raised capacity still meets p with the exact formula.
        let m = g.data_bits() * g.shards as u64;
        let p = (1.0 - (-(g.k as f64) * g.capacity as f64 / m as f64).exp()).powi(g.k as i32);
        assert!(p <= 1.0001e-4 && p > 0.95e-4, "{p}");
        // 2^32 bits would cost 640 MiB; the largest shard stays in the 512 MiB class.
        assert_eq!(MAX_SHARD_BYTES + 128, 512 << 20);
        let big = GenSpec::new(0, 0, 1_000_000_000, 1e-4, 5, None, Store::Bloom).unwrap();
        assert!(
            big.shard_bytes <= DEFAULT_SHARD_TARGET && big.shards >= 54,
            "{big:?}"
        );
        assert!(GenSpec::new(0, 0, 1_000_000_000, 1e-4, 5, Some(1), Store::Bloom).is_err());
    }

    #[test]
    fn positions_stay_in_the_data_bits() {
        let g = GenSpec::new(0, 0, 1000, 1e-2, 7, Some(3), Store::BloomAndFingerprints).unwrap();
        let mut pos = [0u64; 32];
        for i in 0..10_000u64 {
            let fp = crate::bloom::fingerprint(&i.to_le_bytes());
            assert!(g.shard_of(fp) < 3);
            let n = g.positions(fp, &mut pos);
            assert_eq!(n, 7);
            assert!(pos[..n].iter().all(|&p| p < g.data_bits()));
            assert!(g.bucket_of(fp).0 < g.buckets);
        }
    }

    #[test]
    fn fingerprint_width_follows_the_fp_target() {
        let w = |p| GenSpec::new(0, 0, 1_000_000, p, 5, None, Store::Fingerprints).unwrap();
        assert_eq!(w(1e-2).fp_bits, 16);
        assert_eq!(w(1e-4).fp_bits, 32);
        assert_eq!(w(1e-9).fp_bits, 64);
        let g = w(1e-4);
        assert!(!g.bitmap && g.buckets as u64 * g.shards as u64 * BUCKET_TARGET >= 1_000_000);
        assert!(g.fingerprint_fp(BUCKET_TARGET as f64) < 1e-7);
        let (_, m) = g.bucket_of(u128::MAX);
        assert_eq!(m, -1, "32-bit members stay in int32 range");
    }

    #[test]
    fn namespace_names() {
        assert!(check_namespace("crawl-42.tenant_a").is_ok());
        for bad in ["", "a{b}", "a b", "x:y", &"n".repeat(65)] {
            assert!(check_namespace(bad).is_err(), "{bad}");
        }
    }
}
