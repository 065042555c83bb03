//! crawlsieve — the stage between a crawler's link extractor and its fetchers.
//!
//! The crate in layers, lowest first; a module imports only from layers below it
//! (`tests/layers.rs` fails on an import that points up or on a cycle between modules):
//!
//! 1. Cores: pure functions, but for reading the local files and lines a user names (`input`,
//!    `bloom` snapshots); no network, no Redis:
//!    * [`url`] — URL candidates: the junk rules and reason codes (`validate`),
//!      canonicalization (`canon`), URL patterns, on a shared lexical layer (`lex`).
//!    * [`bloom`] — Bloom filter sizing, the lock-free in-process filter, snapshot files.
//!    * [`page`] — page features, similarities, rule classes, near-duplicate clustering,
//!      URL-pattern DOM verdicts (seeds 003 and 004).
//!    * [`input`] — bounded line reading (a megabyte line never becomes a problem), and
//!      robots.txt files already fetched (`--robots-dir`).
//!    * [`decision`] — the URL decision the gate, the HTTP API and `dedup` share: which
//!      candidates the filter must answer, each candidate's one [`decision::Verdict`].
//!    * [`robots`] — robots.txt (RFC 9309) on Google's reference matcher, and one file's rules
//!      compiled for an agent.
//! 2. Shared services (network and Redis):
//!    * [`net`] — the egress policy (which addresses crawlsieve may connect to) and the one
//!      checked HTTP GET it makes itself (robots.txt, pages seen over HTTP).
//!    * [`sieve`] — validate → canonicalize → scope → check-and-set: the core step of embedded `dedup`.
//!    * [`scope`] — crawl scope: domains (Public Suffix List sites), Nutch-style rules, limits.
//!    * [`redis_filter`] — the Redis-shared filter: namespaces, claims, generations, snapshots;
//!      `layout.rs` names every Redis key crawlsieve uses.
//!    * [`events`] — the Kafka events (`schemas/*.v1.json`) and how a message is decoded.
//!    * [`pattern_verdicts`] — URL-pattern verdicts: the Redis format render writes and every
//!      driver reads (`gate::policy`).
//!    * [`params`] — learned parameter rules: the Redis format render publishes and every
//!      driver reads.
//!    * [`outcomes`] — fetch outcomes: hits and misses counted under where a URL was guessed,
//!      and the rule that holds guesses from where they miss (`fetch_misses`).
//! 3. [`config`] — the layered configuration of every component (defaults → file →
//!    `CRAWLSIEVE__*` → `--set`), typed at load, every problem reported at once.
//! 4. [`observe`] — metric names (`observe::names`), registries, the one `/metrics` `/healthz`
//!    `/readyz` server, readiness, the Redis probe, `tracing` logs.
//! 5. [`stage`] — the Kafka stage runtime: batches, the worker's delivery discipline (produce,
//!    await every report, finish, commit), offsets, signals, the run loop.
//! 6. Components, each only its own decision:
//!    * [`gate`] — the gate's decision ([`gate::GateCore`], a [`stage::Stage`]) and the crawl
//!      policy every driver applies ([`gate::policy`]: robots.txt, pattern verdicts, learned
//!      rules, per-host budgets).
//!    * [`render`] — headless Chromium behind an egress proxy, and the render stage's decision.
//!    * [`serve`] — the HTTP filter API (calls the gate's decision per request).
//! 7. [`cli`] — the `crawlsieve` command line (dedup, check, canon, pattern, bloom, gate,
//!    cluster, similar, render, serve). It imports everything; nothing imports it.
//!
//! Where a change belongs: what becomes of a candidate once the filter answered → `decision`
//! (all three drivers); a crawl-policy step between the sieve and the filter → `gate::policy`
//! (all three drivers; `tests/one_decision.rs` holds them to the same verdicts); the render stage's decision → `render::stage`; the Kafka delivery
//! discipline (batching, reports, commits, pauses) → `stage::worker`; a metric's name or help →
//! `observe::names`; a configuration key → `config`; a junk rule → `url::validate`; a scope rule →
//! `scope`.

pub mod bloom;
pub mod cli;
pub mod config;
pub mod decision;
pub mod events;
pub mod gate;
pub mod input;
pub mod net;
pub mod observe;
pub mod outcomes;
pub mod page;
pub mod params;
pub mod pattern_verdicts;
pub mod redis_filter;
pub mod render;
pub mod robots;
pub mod scope;
pub mod serve;
pub mod sieve;
pub mod stage;
pub mod url;
