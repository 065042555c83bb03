//! `gate.toml`: the gate's configuration, with environment and command-line overrides.
//!
//! Precedence, lowest first: built-in defaults → the file → `CRAWLSIEVE__SECTION__KEY=value`
//! environment variables → `--set section.key=value` flags. librdkafka properties are dotted;
//! in the environment write them with underscores: `CRAWLSIEVE__KAFKA__CLIENT__SASL_PASSWORD`
//! sets `kafka.client."sasl.password"` (how a Kubernetes Secret reaches the gate). Override values are read as TOML
//! scalars when they parse as one (`5`, `true`, `0.9`, `"quoted"`), else as strings. Unknown
//! keys are errors naming their path (a typo must not silently fall back to a default).
//!
//! ```toml
//! [kafka]
//! brokers = "127.0.0.1:9092"
//! group_id = "crawlsieve-gate"
//! input_topic = "urls"
//! fetch_topic = "fetch"
//! dead_letter_topic = "urls.dead-letter"
//! # audit_topic = "urls.rejected"      # rejected URLs with their reason codes (off by default)
//! batch_size = 1000
//! batch_linger_ms = 20                 # wait at most this long to fill a batch
//! max_message_bytes = 1048576
//! workers = 1                          # consumers (threads) in this process
//! [kafka.client]                       # passed to librdkafka as is (SASL/TLS, timeouts, ...)
//! "security.protocol" = "SASL_SSL"
//! [kafka.consumer]                     # consumer-only librdkafka properties
//! "session.timeout.ms" = "45000"
//! [kafka.producer]                     # producer-only librdkafka properties
//! "compression.type" = "lz4"
//!
//! [redis]
//! url = "redis://127.0.0.1:6379"
//! namespace = "default"
//! create_missing = true                # namespaces named by events are created on first use
//! capacity = 10000000                  # ... with these parameters
//! fp_rate = 0.0001
//! mode = "fingerprints"
//! max_namespaces = 64
//! local_tier_slots = 1048576           # per namespace, 16 bytes each
//!
//! [metrics]
//! listen = "0.0.0.0:9464"              # /metrics, /healthz, /readyz (off when absent)
//! probe_interval = "5s"                 # Redis PING for /readyz and crawlsieve_*_redis_up
//! filter_stats_interval = "60s"         # per-namespace filter gauges; "0s" = off
//!
//! [sieve]                              # the rules, as dedup's flags of the same names
//! profile = "standard"                 # loose | standard | strict
//! strip_params = []                    # extra query parameters to drop
//! keep_tracking = false
//! sort_query = true
//! merge = []                           # scheme, www, trailing-slash, index, slashes
//!
//! [patterns]
//! enable_url_pattern_dom_dedup = true
//! url_pattern_dom_sample_count = 3
//! url_pattern_dom_threshold = 0.85
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::patterns::PatternConfig;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct GateConfig {
    /// Kafka: brokers, topics, group, batching, client passthrough.
    pub kafka: KafkaConfig,
    /// The Redis-shared filter.
    pub redis: RedisSection,
    /// URL-pattern feedback (seed 003).
    pub patterns: PatternConfig,
    /// The metrics listener.
    pub metrics: MetricsSection,
    /// `crawlsieve serve`, the HTTP filter API.
    pub serve: ServeSection,
    /// The junk rules and canonicalization (the `dedup` flags of the same names).
    pub sieve: SieveSection,
    /// The render stage's browser (`crawlsieve render` only).
    pub render: RenderSection,
}

/// `[render]` (read by `crawlsieve render`; the gate ignores it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RenderSection {
    /// The Chromium binary.
    pub chromium: String,
    /// Browser tabs.
    pub tabs: usize,
    /// Budget of one page, e.g. `"20s"`.
    pub page_timeout: String,
    /// Hosts or addresses allowed although not public: `host` or an address (any port), or
    /// `host:port`, `1.2.3.4:port`, `[::1]:port` (that port only).
    pub allow: Vec<String>,
    /// Content canonicals remembered per host.
    pub max_canonicals: usize,
}

impl Default for RenderSection {
    fn default() -> Self {
        RenderSection {
            chromium: "/usr/bin/chromium".into(),
            tabs: 2,
            page_timeout: "20s".into(),
            allow: Vec::new(),
            max_canonicals: 10_000,
        }
    }
}

impl GateConfig {
    /// The Redis client settings of `[redis]` (URL, cluster, timeouts, local tier).
    pub fn redis_config(&self) -> crate::redis_filter::RedisConfig {
        let r = &self.redis;
        let mut c = crate::redis_filter::RedisConfig::new(&r.url);
        c.cluster |= r.cluster;
        if let Ok(d) = r.timeout.parse::<crate::config::Dur>() {
            c.response_timeout = d.0;
            c.connect_timeout = d.0;
        }
        c.local_tier_slots = r.local_tier_slots;
        if let Ok(d) = r.claim_ttl.parse::<crate::config::Dur>() {
            c.claim_ttl = d.0;
        }
        if let Ok(d) = r.busy_wait.parse::<crate::config::Dur>() {
            c.busy_wait = d.0;
        }
        c
    }
}

/// `[sieve]`: the validator and canonicalization settings, as `crawlsieve dedup`'s flags of the
/// same names. The gate and the HTTP API use them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SieveSection {
    /// Threshold profile: `loose`, `standard`, `strict`.
    pub profile: crate::url::Profile,
    /// Override the profile's maximum candidate length (bytes).
    pub max_len: Option<usize>,
    /// Override the profile's maximum share of needless %XX escapes (0–1].
    pub encoding_ratio: Option<f64>,
    /// Extra query parameters to drop (`name` or `prefix*`).
    pub strip_params: Vec<String>,
    /// Keep tracking parameters (utm_*, gclid, …) and session ids.
    pub keep_tracking: bool,
    /// Sort query parameters (off: keep their order).
    pub sort_query: bool,
    /// Opt-in equivalences for deduplication only: `scheme`, `www`, `trailing-slash`, `index`,
    /// `slashes`. Each may merge pages a server tells apart.
    pub merge: Vec<crate::url::Merge>,
}

impl Default for SieveSection {
    fn default() -> Self {
        SieveSection {
            profile: crate::url::Profile::Standard,
            max_len: None,
            encoding_ratio: None,
            strip_params: Vec::new(),
            keep_tracking: false,
            sort_query: true,
            merge: Vec::new(),
        }
    }
}

impl SieveSection {
    /// The validator these settings describe.
    pub fn validator(&self) -> Result<crate::url::Validator, String> {
        let mut cfg = crate::url::ValidatorConfig::from_profile(self.profile);
        if let Some(n) = self.max_len {
            cfg.max_len = n;
        }
        if let Some(r) = self.encoding_ratio {
            cfg.encoding_ratio = r;
        }
        crate::url::Validator::new(cfg).map_err(|e| format!("invalid validator settings: {e}"))
    }

    /// The canonicalizer these settings describe.
    pub fn canonicalizer(&self) -> crate::url::Canonicalizer {
        let mut cfg = crate::url::CanonConfig::default();
        if self.keep_tracking {
            cfg.strip_params.clear();
            cfg.session_params.clear();
        }
        cfg.strip_params.extend(self.strip_params.iter().cloned());
        cfg.sort_query = self.sort_query;
        cfg.merge = self.merge.clone();
        crate::url::Canonicalizer::new(&cfg)
    }
}

/// `[serve]`: the HTTP filter API (`crawlsieve serve`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSection {
    /// `host:port` to listen on (the API, and `/metrics`, `/healthz`, `/readyz`).
    pub listen: String,
    /// Largest request body accepted (413 beyond it).
    pub max_body_bytes: usize,
    /// Most URLs in one request (413 beyond it).
    pub max_urls: usize,
    /// Requests handled at once; more get 503 `overloaded` at once instead of queueing.
    pub max_concurrent_requests: usize,
    /// Filter clients (each one Redis connection per namespace) serving requests in parallel.
    pub workers: usize,
    /// A file of bearer tokens, one per line (a mounted Secret). Tokens also come from the
    /// environment variable `CRAWLSIEVE_API_TOKENS` (comma-separated).
    pub token_file: Option<String>,
    /// Serve without tokens. Off: `crawlsieve serve` refuses to start without a token.
    pub allow_anonymous: bool,
    /// How long the answer to a request with an `Idempotency-Key` header is kept: a retry of
    /// the same request within it gets the first answer.
    pub idempotency_ttl: String,
}

impl Default for ServeSection {
    fn default() -> Self {
        ServeSection {
            listen: "127.0.0.1:8080".into(),
            max_body_bytes: 4 << 20,
            max_urls: 10_000,
            max_concurrent_requests: 64,
            workers: 2,
            token_file: None,
            allow_anonymous: false,
            idempotency_ttl: "24h".into(),
        }
    }
}

/// `[metrics]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSection {
    /// `host:port` to serve `/metrics`, `/healthz` and `/readyz` on; none = no listener.
    pub listen: Option<String>,
    /// How often Redis is probed (`PING`, for `/readyz` and `crawlsieve_*_redis_up`).
    pub probe_interval: String,
    /// How often the per-namespace filter gauges are refreshed (`BITCOUNT` over the filter: a
    /// few ms per 100 MB of filter on Redis' side). `0s` turns them off.
    pub filter_stats_interval: String,
}

impl Default for MetricsSection {
    fn default() -> Self {
        MetricsSection {
            listen: None,
            probe_interval: "5s".into(),
            filter_stats_interval: "60s".into(),
        }
    }
}

/// `[kafka]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaConfig {
    /// `bootstrap.servers`.
    pub brokers: String,
    /// Consumer group.
    pub group_id: String,
    /// Topic of URL events.
    pub input_topic: String,
    /// Topic of fetch events (keyed by host).
    pub fetch_topic: String,
    /// Topic of dead letters.
    pub dead_letter_topic: String,
    /// Topic of rejected-URL events; none = not published.
    pub audit_topic: Option<String>,
    /// Messages per batch.
    pub batch_size: usize,
    /// How long to wait for a batch to fill before processing what arrived (milliseconds).
    pub batch_linger_ms: u64,
    /// Larger input messages are dead-lettered.
    pub max_message_bytes: usize,
    /// Consumers in this process (each a thread with its own consumer, producer and Redis
    /// connection; partitions are spread over them by the group protocol).
    pub workers: usize,
    /// librdkafka properties for both clients, passed through (`security.protocol`, `sasl.*`,
    /// `ssl.*`, …). Values may be strings, numbers or booleans.
    #[serde(deserialize_with = "scalar_map")]
    pub client: BTreeMap<String, String>,
    /// librdkafka properties for the consumer only (applied after `client`).
    #[serde(deserialize_with = "scalar_map")]
    pub consumer: BTreeMap<String, String>,
    /// librdkafka properties for the producer only (applied after `client`).
    #[serde(deserialize_with = "scalar_map")]
    pub producer: BTreeMap<String, String>,
}

impl KafkaConfig {
    /// The producer's `message.max.bytes` unless `[kafka.producer]` sets it: room for an
    /// output event 3× the largest input accepted (an output event carries its input's URL,
    /// metadata and source plus the canonical URL and its pattern), so an accepted event is
    /// never refused by our own producer.
    pub fn default_producer_max_bytes(&self) -> usize {
        (self.max_message_bytes.saturating_mul(3) + 65_536).clamp(1_000_000, 1_000_000_000)
    }

    /// The output limit the stage checks fetch events against: `[kafka.producer]`'s or
    /// `[kafka.client]`'s `message.max.bytes`, else the default above. (A broker with a lower
    /// limit can still refuse an event: its input then becomes a `too_large` dead letter and
    /// its URL is released, never marked seen.)
    pub fn producer_max_bytes(&self) -> usize {
        self.producer
            .get("message.max.bytes")
            .or_else(|| self.client.get("message.max.bytes"))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| self.default_producer_max_bytes())
    }
}

impl Default for KafkaConfig {
    fn default() -> Self {
        KafkaConfig {
            brokers: "127.0.0.1:9092".into(),
            group_id: "crawlsieve-gate".into(),
            input_topic: "urls".into(),
            fetch_topic: "fetch".into(),
            dead_letter_topic: "urls.dead-letter".into(),
            audit_topic: None,
            batch_size: 1000,
            batch_linger_ms: 20,
            max_message_bytes: crate::events::DEFAULT_MAX_MESSAGE_BYTES,
            workers: 1,
            client: BTreeMap::new(),
            consumer: BTreeMap::new(),
            producer: BTreeMap::new(),
        }
    }
}

/// A table of librdkafka properties: every value becomes the string librdkafka expects
/// (`6000` and `"6000"`, `true` and `"true"` are the same setting).
fn scalar_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    use serde::de::Error;
    let raw = BTreeMap::<String, toml::Value>::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| {
            let s = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(D::Error::custom(format!(
                        "{k}: expected a string, number or boolean, found {}",
                        other.type_str()
                    )))
                }
            };
            Ok((k, s))
        })
        .collect()
}

/// `[redis]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisSection {
    /// URL, or comma-separated cluster seeds.
    pub url: String,
    /// Force the cluster protocol with one seed.
    pub cluster: bool,
    /// Default namespace (an event may name its own).
    pub namespace: String,
    /// Request timeout, e.g. `"2s"`.
    pub timeout: String,
    /// Create a namespace an event names (or the default one) when it does not exist, with the
    /// parameters below; when false such events wait (back-pressure) until it is created.
    pub create_missing: bool,
    /// Capacity of namespaces the gate creates.
    pub capacity: u64,
    /// FP target of namespaces the gate creates.
    pub fp_rate: f64,
    /// Storage mode of namespaces the gate creates.
    pub mode: crate::redis_filter::Mode,
    /// Distinct namespaces one worker serves; events naming more are dead-lettered
    /// (`namespace_limit`).
    pub max_namespaces: usize,
    /// Local first-tier slots per namespace (16 bytes each; 0 disables the tier).
    pub local_tier_slots: usize,
    /// How long the claim on a URL being published lasts if its gate dies before the delivery
    /// report (docs/redis-filter.md): the longest another gate waits for that URL after a crash.
    /// Give every client of a namespace the same value.
    pub claim_ttl: String,
    /// How long to wait for a URL another gate is publishing before publishing it too (a
    /// repeat, never a loss): ends the wait when two gates each wait on the other's batch in
    /// flight, or when the other gate died.
    pub busy_wait: String,
}

impl Default for RedisSection {
    fn default() -> Self {
        RedisSection {
            url: "redis://127.0.0.1:6379".into(),
            cluster: false,
            namespace: "default".into(),
            timeout: "2s".into(),
            create_missing: true,
            capacity: crate::config::DEFAULT_CAPACITY,
            fp_rate: crate::config::DEFAULT_FP_RATE,
            mode: crate::redis_filter::Mode::Fingerprints,
            max_namespaces: 64,
            local_tier_slots: 1 << 20,
            claim_ttl: "30s".into(),
            busy_wait: "500ms".into(),
        }
    }
}

/// A configuration that cannot be used, with the reason.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML, or a value of the wrong type / an unknown key.
    #[error("{0}")]
    Invalid(String),
}

/// Build the configuration: defaults, then `file` (if any), then environment variables
/// (`env` as (name, value) pairs; only `CRAWLSIEVE__*` are read), then `--set` overrides.
pub fn load(
    file: Option<&Path>,
    env: impl IntoIterator<Item = (String, String)>,
    sets: &[String],
) -> Result<GateConfig, ConfigError> {
    load_over(&GateConfig::default(), file, env, sets)
}

/// [`load`] with other built-in defaults (`crawlsieve render` reads the fetch topic and writes
/// the results topic).
pub fn load_over(
    defaults: &GateConfig,
    file: Option<&Path>,
    env: impl IntoIterator<Item = (String, String)>,
    sets: &[String],
) -> Result<GateConfig, ConfigError> {
    let mut doc = toml::Table::try_from(defaults)
        .map_err(|e| ConfigError::Invalid(format!("defaults: {e}")))?;
    let file_doc = match file {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                path: p.display().to_string(),
                source,
            })?;
            text.parse::<toml::Table>()
                .map_err(|e| ConfigError::Invalid(format!("{}: {e}", p.display())))?
        }
        None => toml::Table::new(),
    };
    merge(&mut doc, file_doc);
    let mut env: Vec<(String, String)> = env
        .into_iter()
        .filter_map(|(k, v)| {
            let path = k.strip_prefix("CRAWLSIEVE__")?;
            let mut parts: Vec<String> = path.split("__").map(|s| s.to_ascii_lowercase()).collect();
            // librdkafka property names are dotted, which environment names cannot be:
            // CRAWLSIEVE__KAFKA__CLIENT__SASL_PASSWORD sets kafka.client."sasl.password".
            if parts.len() == 3
                && parts[0] == "kafka"
                && matches!(parts[1].as_str(), "client" | "consumer" | "producer")
            {
                parts[2] = format!("\"{}\"", parts[2].replace('_', "."));
            }
            Some((parts.join("."), v))
        })
        .collect();
    env.sort();
    for (path, value) in env {
        set(&mut doc, &path, &value)
            .map_err(|e| ConfigError::Invalid(format!("environment CRAWLSIEVE__…: {e}")))?;
    }
    for s in sets {
        let (path, value) = s.split_once('=').ok_or_else(|| {
            ConfigError::Invalid(format!("--set {s:?}: expected section.key=value"))
        })?;
        set(&mut doc, path.trim(), value.trim())
            .map_err(|e| ConfigError::Invalid(format!("--set {s:?}: {e}")))?;
    }
    let cfg: GateConfig = toml::Value::Table(doc)
        .try_into()
        .map_err(|e: toml::de::Error| ConfigError::Invalid(e.to_string()))?;
    cfg.check()?;
    Ok(cfg)
}

/// Overlay `over` on `base`, table by table.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Set `path` (dotted; a quoted last part may contain dots: `kafka.client."security.protocol"`)
/// to `value` read as a TOML scalar or array if it is one (`render.allow=["127.0.0.1"]`), else
/// as a string.
fn set(doc: &mut toml::Table, path: &str, value: &str) -> Result<(), String> {
    let parts = split_path(path)?;
    let (last, tables) = parts.split_last().ok_or("empty key")?;
    let mut t = doc;
    for p in tables {
        let entry = t
            .entry(p.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = entry
            .as_table_mut()
            .ok_or_else(|| format!("{p} is a value, not a section"))?;
    }
    let parsed = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut tb| tb.remove("v"))
        .filter(|v| !v.is_table());
    t.insert(
        last.clone(),
        parsed.unwrap_or_else(|| toml::Value::String(value.to_string())),
    );
    Ok(())
}

fn split_path(path: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"').ok_or("unclosed quote")?;
            out.push(r[..end].to_string());
            rest = r[end + 1..].strip_prefix('.').unwrap_or(&r[end + 1..]);
        } else {
            let (head, tail) = rest.split_once('.').unwrap_or((rest, ""));
            if head.is_empty() {
                return Err(format!("empty part in {path:?}"));
            }
            out.push(head.to_string());
            rest = tail;
        }
    }
    Ok(out)
}

impl GateConfig {
    /// Values the types alone cannot check.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        let k = &self.kafka;
        for (name, v) in [
            ("kafka.brokers", &k.brokers),
            ("kafka.group_id", &k.group_id),
            ("kafka.input_topic", &k.input_topic),
            ("kafka.fetch_topic", &k.fetch_topic),
            ("kafka.dead_letter_topic", &k.dead_letter_topic),
        ] {
            if v.trim().is_empty() {
                return bad(format!("{name} is empty"));
            }
        }
        if k.input_topic == k.fetch_topic || k.input_topic == k.dead_letter_topic {
            return bad("kafka.input_topic must differ from the output topics".into());
        }
        if !(1..=100_000).contains(&k.batch_size) {
            return bad(format!(
                "kafka.batch_size {} is outside 1..=100000",
                k.batch_size
            ));
        }
        if k.max_message_bytes < 64 {
            return bad("kafka.max_message_bytes must be at least 64".into());
        }
        if !(1..=64).contains(&k.workers) {
            return bad(format!("kafka.workers {} is outside 1..=64", k.workers));
        }
        if k.batch_linger_ms > 60_000 {
            return bad("kafka.batch_linger_ms must be at most 60000".into());
        }
        let r = &self.redis;
        match r.claim_ttl.parse::<crate::config::Dur>() {
            Err(e) => return bad(format!("redis.claim_ttl: {e}")),
            Ok(d) if d.0 < std::time::Duration::from_secs(1) => {
                return bad(format!(
                    "redis.claim_ttl must be at least 1s, got {:?}",
                    r.claim_ttl
                ))
            }
            Ok(_) => {}
        }
        if let Err(e) = self.serve.idempotency_ttl.parse::<crate::config::Dur>() {
            return bad(format!("serve.idempotency_ttl: {e}"));
        }
        if let Err(e) = r.busy_wait.parse::<crate::config::Dur>() {
            return bad(format!("redis.busy_wait: {e}"));
        }
        if let Err(e) = r.timeout.parse::<crate::config::Dur>() {
            return bad(format!("redis.timeout: {e}"));
        }
        if !crate::redis_filter::layout::is_namespace(&r.namespace) {
            return bad(format!(
                "redis.namespace {:?}: use 1–64 of A–Z a–z 0–9 . _ -",
                r.namespace
            ));
        }
        if r.capacity == 0 || !(r.fp_rate > 0.0 && r.fp_rate < 1.0) {
            return bad("redis.capacity must be positive and redis.fp_rate in (0, 1)".into());
        }
        if r.max_namespaces == 0 {
            return bad("redis.max_namespaces must be at least 1".into());
        }
        if let Some(l) = &self.metrics.listen {
            if l.parse::<std::net::SocketAddr>().is_err() {
                return bad(format!("metrics.listen {l:?} is not host:port"));
            }
        }
        for (k, v) in [
            ("metrics.probe_interval", &self.metrics.probe_interval),
            (
                "metrics.filter_stats_interval",
                &self.metrics.filter_stats_interval,
            ),
        ] {
            if let Err(e) = v.parse::<crate::config::Dur>() {
                return bad(format!("{k} {v:?}: {e}"));
            }
        }
        if let Err(e) = self.sieve.validator() {
            return bad(format!("sieve: {e}"));
        }
        let sv = &self.serve;
        if sv.listen.parse::<std::net::SocketAddr>().is_err() {
            return bad(format!("serve.listen {:?} is not host:port", sv.listen));
        }
        if sv.max_body_bytes < 1024 || sv.max_urls == 0 || sv.max_concurrent_requests == 0 {
            return bad("serve.max_body_bytes must be at least 1024, serve.max_urls and serve.max_concurrent_requests at least 1".into());
        }
        if !(1..=256).contains(&sv.workers) {
            return bad(format!("serve.workers {} is outside 1..=256", sv.workers));
        }
        let p = &self.patterns;
        if !(0.0..=1.0).contains(&p.url_pattern_dom_threshold) {
            return bad("patterns.url_pattern_dom_threshold must be in [0, 1]".into());
        }
        if p.url_pattern_dom_sample_count < 2 {
            return bad("patterns.url_pattern_dom_sample_count must be at least 2".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn file_then_env_then_flags() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("gate.toml");
        std::fs::write(
            &f,
            "[kafka]\nbrokers = \"k1:9092\"\nbatch_size = 500\n[kafka.client]\n\"security.protocol\" = \"SASL_SSL\"\n[patterns]\nurl_pattern_dom_threshold = 0.9\n",
        )
        .unwrap();
        let cfg = load(
            Some(&f),
            env(&[
                ("CRAWLSIEVE__KAFKA__BATCH_SIZE", "800"),
                ("CRAWLSIEVE__REDIS__NAMESPACE", "crawl-42"),
                ("CRAWLSIEVE__KAFKA__CLIENT__SASL_PASSWORD", "s3cret"),
                ("UNRELATED", "x"),
            ]),
            &[
                "kafka.batch_size=900".into(),
                "kafka.client.\"sasl.mechanism\"=PLAIN".into(),
                "kafka.consumer.\"session.timeout.ms\"=6000".into(),
            ],
        )
        .unwrap();
        assert_eq!(cfg.kafka.brokers, "k1:9092");
        assert_eq!(cfg.kafka.batch_size, 900, "flag beats env beats file");
        assert_eq!(cfg.redis.namespace, "crawl-42");
        assert_eq!(cfg.kafka.client["security.protocol"], "SASL_SSL");
        assert_eq!(cfg.kafka.client["sasl.mechanism"], "PLAIN");
        assert_eq!(cfg.kafka.client["sasl.password"], "s3cret");
        assert_eq!(
            cfg.kafka.consumer["session.timeout.ms"], "6000",
            "numbers become strings"
        );
        assert_eq!(cfg.patterns.url_pattern_dom_threshold, 0.9);
        assert_eq!(cfg.patterns.url_pattern_dom_sample_count, 3, "seed default");
        assert_eq!(cfg.kafka.fetch_topic, "fetch", "built-in default");
    }

    #[test]
    fn typos_and_bad_values_are_errors_naming_the_key() {
        let err = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            load(None, Vec::new(), &sets).unwrap_err().to_string()
        };
        assert!(err(&["kafka.brokrs=x"]).contains("brokrs"));
        assert!(err(&["kafka.batch_size=lots"]).contains("batch_size"));
        assert!(err(&["kafka.batch_size=0"]).contains("batch_size"));
        assert!(err(&["kafka.fetch_topic=urls"]).contains("differ"));
        assert!(err(&["redis.timeout=soon"]).contains("redis.timeout"));
        assert!(err(&["patterns.url_pattern_dom_threshold=1.5"]).contains("threshold"));
        assert!(err(&["no-equals"]).contains("section.key=value"));
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.toml");
        std::fs::write(&f, "[kafka\n").unwrap();
        assert!(load(Some(&f), Vec::new(), &[])
            .unwrap_err()
            .to_string()
            .contains("bad.toml"));
        assert!(load(Some(&dir.path().join("missing.toml")), Vec::new(), &[]).is_err());
        assert!(load(None, Vec::new(), &[]).is_ok(), "defaults are valid");
    }

    #[test]
    fn the_documented_example_loads() {
        let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/gate.example.toml");
        let cfg = load(Some(&f), Vec::new(), &[]).unwrap();
        assert_eq!(cfg.kafka.producer["compression.type"], "lz4");
        assert_eq!(cfg.metrics.listen.as_deref(), Some("127.0.0.1:9464"));
        // Apart from the marked examples, it shows the defaults.
        let mut d = GateConfig::default();
        d.kafka.consumer = cfg.kafka.consumer.clone();
        d.kafka.producer = cfg.kafka.producer.clone();
        d.metrics = cfg.metrics.clone();
        assert_eq!(cfg, d);
    }

    #[test]
    fn sieve_section_is_read_and_checked() {
        let sets = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cfg = load(
            None,
            Vec::new(),
            &sets(&[
                "sieve.profile=strict",
                "sieve.merge=[\"www\", \"trailing-slash\"]",
            ]),
        )
        .unwrap();
        assert_eq!(cfg.sieve.profile, crate::url::Profile::Strict);
        assert_eq!(
            cfg.sieve.merge,
            [crate::url::Merge::Www, crate::url::Merge::TrailingSlash]
        );
        let err = load(None, Vec::new(), &sets(&["sieve.encoding_ratio=0"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("sieve"), "{err}");
        let err = load(None, Vec::new(), &sets(&["sieve.merge=[\"nope\"]"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope"), "{err}");
    }
}
