//! The configuration's sections, one struct each, with their built-in defaults.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Dur, DEFAULT_CAPACITY, DEFAULT_FP_RATE};

/// How pages are seen (`render.mode`, `similar --render`; [`crate::render::auto`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RenderMode {
    /// Fetch over HTTP; render where rendering could change the answer.
    #[default]
    Auto,
    /// Render every page in Chromium.
    Always,
}

impl std::fmt::Display for RenderMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RenderMode::Auto => "auto",
            RenderMode::Always => "always",
        })
    }
}

/// The default `render.check_one_in`: with full trust, one page in 20 is still rendered.
pub const DEFAULT_CHECK_ONE_IN: u32 = 20;

/// `[render]` (read by `crawlsieve render`; the gate ignores it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RenderSection {
    /// The Chromium binary.
    pub chromium: String,
    /// Browser tabs.
    pub tabs: usize,
    /// Budget of one page, e.g. `"20s"`.
    pub page_timeout: Dur,
    /// Hosts or addresses allowed although not public: `host` or an address (any port), or
    /// `host:port`, `1.2.3.4:port`, `[::1]:port` (that port only).
    pub allow: Vec<String>,
    /// Content canonicals remembered per host.
    pub max_canonicals: usize,
    /// Probe each scope (origin and first path segment) with a URL that cannot exist and class
    /// pages that match its "not found" answer `soft_404` ([`crate::render::soft404`]).
    pub soft_404_probe: bool,
    /// How long a scope's probe is kept in Redis before it is probed again.
    pub soft_404_ttl: Dur,
    /// How pages are seen: `"auto"` fetches each page over HTTP through the browser's egress
    /// policy and renders only where rendering could change the answer; `"always"` renders
    /// every page (docs/render.md, "When a page is rendered").
    pub mode: RenderMode,
    /// In `auto`: once a pattern, section or host is trusted to look the same over HTTP, one
    /// page in this many is still rendered as a check (at least 1).
    pub check_one_in: u32,
}

impl Default for RenderSection {
    fn default() -> Self {
        RenderSection {
            chromium: "/usr/bin/chromium".into(),
            tabs: 2,
            page_timeout: Dur(Duration::from_secs(20)),
            allow: Vec::new(),
            max_canonicals: 10_000,
            soft_404_probe: true,
            soft_404_ttl: Dur(Duration::from_secs(6 * 3600)),
            mode: RenderMode::Auto,
            check_one_in: DEFAULT_CHECK_ONE_IN,
        }
    }
}

impl RedisSection {
    /// The Redis client settings of `[redis]` (URL, cluster, timeouts, local tier).
    pub fn client(&self) -> crate::redis_filter::RedisConfig {
        let mut c = crate::redis_filter::RedisConfig::new(&self.url);
        c.cluster |= self.cluster;
        c.response_timeout = self.timeout.0;
        c.connect_timeout = self.timeout.0;
        c.local_tier_slots = self.local_tier_slots;
        c.claim_ttl = self.claim_ttl.0;
        c.busy_wait = self.busy_wait.0;
        let file = |f: &String| (!f.is_empty()).then(|| std::path::PathBuf::from(f));
        c.tls = crate::redis_filter::RedisTls {
            ca: file(&self.tls_ca),
            cert: file(&self.tls_cert),
            key: file(&self.tls_key),
        };
        c
    }

    /// The parameters of a namespace this client creates.
    pub fn new_namespace(&self) -> crate::redis_filter::NamespaceSpec {
        let mut spec = crate::redis_filter::NamespaceSpec::new(self.capacity, self.fp_rate);
        spec.mode = self.mode;
        spec
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
    /// Keep XML namespace and DTD identifiers (`http://www.w3.org/2000/svg`) instead of
    /// rejecting them as `xml_namespace` (default: the profile's; only `loose` keeps them).
    pub keep_xml_namespaces: Option<bool>,
    /// Keep URLs written in text or scripts with a reserved (`example.com`, `.test`), single-label
    /// (`http://server/`) or undelegated (`nas.lan`) host instead of rejecting them as
    /// `reserved_host` / `single_label_host` / `unknown_tld` (default: the profile's; only
    /// `loose` keeps them). An intranet crawl turns it on.
    pub keep_placeholder_hosts: Option<bool>,
    /// Extra query parameters to drop (`name` or `prefix*`).
    pub strip_params: Vec<String>,
    /// Keep tracking parameters (utm_*, gclid, …) and session ids.
    pub keep_tracking: bool,
    /// Sort query parameters (off: keep their order).
    pub sort_query: bool,
    /// Opt-in equivalences for deduplication only: `scheme`, `www`, `trailing-slash`, `index`,
    /// `slashes`. Each may merge pages a server tells apart.
    pub merge: Vec<crate::url::Merge>,
    /// Special-purpose hosts a candidate may name (intranet crawls): addresses or CIDR ranges
    /// (`10.0.0.0/8`, `::1`), localhost names, or `*` for all. By default a candidate whose host
    /// is a loopback, private, link-local, metadata or other special-purpose IP literal, or a
    /// localhost name, is rejected as `private_address` ([`crate::url::address`]).
    pub allow_private: Vec<String>,
    /// Spider-trap rules (`[sieve.traps]`, all on by default; [`crate::url::trap`]).
    pub traps: crate::url::TrapConfig,
}

impl Default for SieveSection {
    fn default() -> Self {
        SieveSection {
            profile: crate::url::Profile::Standard,
            max_len: None,
            encoding_ratio: None,
            keep_xml_namespaces: None,
            keep_placeholder_hosts: None,
            strip_params: Vec::new(),
            keep_tracking: false,
            sort_query: true,
            merge: Vec::new(),
            allow_private: Vec::new(),
            traps: Default::default(),
        }
    }
}

impl SieveSection {
    /// The special-purpose hosts these settings allow.
    pub fn address_policy(&self) -> Result<crate::url::AddressPolicy, String> {
        crate::url::AddressPolicy::new(&self.allow_private)
    }

    /// The validator these settings describe.
    pub fn validator(&self) -> Result<crate::url::Validator, String> {
        let mut cfg = crate::url::ValidatorConfig::from_profile(self.profile);
        if let Some(n) = self.max_len {
            cfg.max_len = n;
        }
        if let Some(r) = self.encoding_ratio {
            cfg.encoding_ratio = r;
        }
        if let Some(k) = self.keep_xml_namespaces {
            cfg.keep_xml_namespaces = k;
        }
        if let Some(k) = self.keep_placeholder_hosts {
            cfg.keep_placeholder_hosts = k;
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
    pub idempotency_ttl: Dur,
    /// A connection must deliver a request's headers within this long, counted from when the
    /// server starts waiting for them: on a new connection, and between the requests of a
    /// kept-alive one (so it is also the idle timeout). Past it the connection is closed.
    pub header_timeout: Dur,
    /// A request's whole body must arrive within this long after its headers (408
    /// `body_timeout` past it, and the connection is closed).
    pub body_timeout: Dur,
    /// Connections open at once; further clients wait in the listen backlog until one closes.
    /// The process raises its open-file limit to fit (`ulimit -n` permitting).
    pub max_connections: usize,
    /// Bytes of request bodies held in memory at once, over every request: charged as bytes
    /// arrive and released when the response is written, so a client trickling its body holds
    /// only what it sent. A request that would go past it gets 503 `overloaded`.
    pub max_body_memory: usize,
    /// On SIGTERM/SIGINT: requests in progress get this long to finish; then every connection
    /// is closed and the process exits (keep it below the pod's termination grace period).
    pub shutdown_grace: Dur,
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
            idempotency_ttl: Dur(Duration::from_secs(86_400)),
            header_timeout: Dur(Duration::from_secs(10)),
            body_timeout: Dur(Duration::from_secs(30)),
            max_connections: 1024,
            max_body_memory: 64 << 20,
            shutdown_grace: Dur(Duration::from_secs(20)),
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
    pub probe_interval: Dur,
    /// How often the per-namespace filter gauges are refreshed (`BITCOUNT` over the filter: a
    /// few ms per 100 MB of filter on Redis' side). `0s` turns them off.
    pub filter_stats_interval: Dur,
}

impl Default for MetricsSection {
    fn default() -> Self {
        MetricsSection {
            listen: None,
            probe_interval: Dur(Duration::from_secs(5)),
            filter_stats_interval: Dur(Duration::from_secs(60)),
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
    /// The gate's output: fetch events (keyed by host).
    pub fetch_topic: String,
    /// The render stage's output: cluster assignments (keyed by host).
    pub results_topic: String,
    /// Topic of dead letters.
    pub dead_letter_topic: String,
    /// Topic of rejected-URL events; none = not published.
    pub audit_topic: Option<String>,
    /// Topic of fetch outcomes (`schemas/fetch-outcome.v1.json`) the gate reads beside its
    /// input and counts ([`crate::outcomes`]); the render stage publishes one per page it
    /// fetches there. None: no outcomes read or written.
    pub outcomes_topic: Option<String>,
    /// Messages per batch.
    pub batch_size: usize,
    /// How long to wait for a batch to fill before processing what arrived (milliseconds).
    pub batch_linger_ms: u64,
    /// Larger input messages are dead-lettered.
    pub max_message_bytes: usize,
    /// Consumers in this process (each a thread with its own consumer, producer and Redis
    /// connection; partitions are spread over them by the group protocol).
    pub workers: usize,
    /// At start, how long to wait for a broker of `brokers` to answer before giving up (exit
    /// 4, naming the brokers): a wrong address fails at once instead of retrying for ever.
    /// Once a broker has answered, outages are waited out. `0s`: wait at start too.
    pub startup_timeout: Dur,
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
            results_topic: "results".into(),
            dead_letter_topic: "urls.dead-letter".into(),
            audit_topic: None,
            outcomes_topic: None,
            batch_size: 1000,
            batch_linger_ms: 20,
            max_message_bytes: crate::events::DEFAULT_MAX_MESSAGE_BYTES,
            workers: 1,
            startup_timeout: Dur(Duration::from_secs(30)),
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
    pub timeout: Dur,
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
    /// Bytes all local tiers of the process may use together, over every namespace and filter
    /// client (the gate's workers, the API's `serve.workers`): a namespace attached when the
    /// budget is spent gets a smaller tier, or none (its lookups all go to Redis). What bounds
    /// a process's memory whatever namespaces its clients name.
    pub local_tier_memory: usize,
    /// A client's lease (docs/redis-filter.md, the outbox protocol): how long after its last
    /// heartbeat (one a second) a gate or `dedup` run that died has its outbox adopted by
    /// another, whose fetch events (URLs) it then delivers; also how long the API's idempotent
    /// claims last. Give every client of a namespace the same value.
    pub claim_ttl: Dur,
    /// The API's idempotent requests: how long to wait for a URL another request holds before
    /// answering it new too (a repeat, never a loss).
    pub busy_wait: Dur,
    /// `rediss://` only: a CA file (PEM) to trust instead of the system's store ("" = none; a
    /// cluster's CA goes in `SSL_CERT_FILE`).
    pub tls_ca: String,
    /// `rediss://` only: a client certificate (PEM) for a Redis that asks for one.
    pub tls_cert: String,
    /// `rediss://` only: the client certificate's private key (PEM, PKCS#8).
    pub tls_key: String,
    /// The gate's per-host budget: at most this many new URLs of one host (`host[:port]`) are
    /// published per namespace and `budget_window`, counted across every gate through Redis;
    /// the rest are rejected `host_budget` and taken back out of the filter. 0: no budget.
    pub max_new_urls_per_host: u64,
    /// The budget's window, e.g. `"24h"`: windows are aligned to the Unix epoch, so every gate
    /// counts into the same one.
    pub budget_window: Dur,
}

impl Default for RedisSection {
    fn default() -> Self {
        RedisSection {
            url: "redis://127.0.0.1:6379".into(),
            cluster: false,
            namespace: "default".into(),
            timeout: Dur(Duration::from_secs(2)),
            create_missing: true,
            capacity: DEFAULT_CAPACITY,
            fp_rate: DEFAULT_FP_RATE,
            mode: crate::redis_filter::Mode::Fingerprints,
            max_namespaces: 64,
            local_tier_slots: 1 << 20,
            local_tier_memory: 64 << 20,
            claim_ttl: Dur(Duration::from_secs(30)),
            busy_wait: Dur(Duration::from_millis(500)),
            tls_ca: String::new(),
            tls_cert: String::new(),
            tls_key: String::new(),
            max_new_urls_per_host: 0,
            budget_window: Dur(Duration::from_secs(24 * 3600)),
        }
    }
}

/// `[robots]`: robots.txt in the gate (docs/crawl-policy.md). Off by default: with it on, the
/// gate connects to the hosts it gates (one `GET /robots.txt` per origin across all gates) and
/// holds URLs on `wait_topic`, which must exist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RobotsSection {
    /// Apply robots.txt to every URL the gate would publish.
    pub enabled: bool,
    /// The crawler's user agent: its product token (`MyBot` of `MyBot/2.1 (+https://…)`)
    /// selects the group; the whole string is sent when fetching.
    pub agent: String,
    /// Where URLs wait while their origin's rules are unknown or its server fails (5xx,
    /// unreachable); re-read by the gate's mover and put back on the input topic when due.
    /// Default: `<input_topic>.robots-wait`.
    pub wait_topic: Option<String>,
    /// How long fetched rules (and a 4xx "no rules") are kept before they are fetched again;
    /// RFC 9309 §2.4: at most 24 hours.
    pub cache_ttl: Dur,
    /// How long a 5xx or unreachable answer holds the origin's URLs before the file is fetched
    /// again (RFC 9309 §2.3.1.4: complete disallow, for now).
    pub error_ttl: Dur,
    /// How long a URL of an origin whose rules are being fetched waits before it is judged
    /// again.
    pub hold: Dur,
    /// Budget of one robots.txt fetch (resolution, connection, redirects, body).
    pub fetch_timeout: Dur,
    /// Concurrent robots.txt fetches per gate worker.
    pub fetch_concurrency: usize,
    /// Origins whose parsed rules each worker keeps in memory.
    pub cache_entries: usize,
    /// Hosts or addresses the robots.txt fetch may reach although not public, as
    /// `render.allow` (`host`, `1.2.3.4`, `host:port`, `[::1]:port`).
    pub allow: Vec<String>,
}

impl Default for RobotsSection {
    fn default() -> Self {
        RobotsSection {
            enabled: false,
            agent: "crawlsieve".into(),
            wait_topic: None,
            cache_ttl: Dur(Duration::from_secs(24 * 3600)),
            error_ttl: Dur(Duration::from_secs(600)),
            hold: Dur(Duration::from_secs(5)),
            fetch_timeout: Dur(Duration::from_secs(10)),
            fetch_concurrency: 32,
            cache_entries: 100_000,
            allow: Vec::new(),
        }
    }
}

impl RobotsSection {
    /// The wait topic: `wait_topic`, else `<input_topic>.robots-wait`.
    pub fn wait_topic(&self, input_topic: &str) -> String {
        self.wait_topic
            .clone()
            .unwrap_or_else(|| format!("{input_topic}.robots-wait"))
    }

    /// What the types cannot check.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if crate::robots::product_token(&self.agent).is_empty() {
            out.push(format!(
                "robots.agent {:?} has no product token (letters, `-` and `_`)",
                self.agent
            ));
        }
        if self.cache_ttl.0 > Duration::from_secs(24 * 3600) || self.cache_ttl.0.is_zero() {
            out.push(format!(
                "robots.cache_ttl {} must be more than 0s and at most 24h (RFC 9309 §2.4)",
                self.cache_ttl
            ));
        }
        for (name, d) in [
            ("error_ttl", self.error_ttl),
            ("hold", self.hold),
            ("fetch_timeout", self.fetch_timeout),
        ] {
            if d.0.is_zero() || d.0 > Duration::from_secs(24 * 3600) {
                out.push(format!(
                    "robots.{name} {d} must be more than 0s and at most 24h"
                ));
            }
        }
        if !(1..=1024).contains(&self.fetch_concurrency) {
            out.push("robots.fetch_concurrency must be in 1..=1024".into());
        }
        if self.cache_entries == 0 {
            out.push("robots.cache_entries must be at least 1".into());
        }
        out
    }
}
