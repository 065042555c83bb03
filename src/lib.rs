//! crawlsieve — the stage between a crawler's link extractor and its fetchers.
//!
//! A map of the crate, one line a module:
//!
//! * [`url`] — URL candidates: the junk validator with its reason codes, canonicalization, and URL
//!   patterns. Pure functions, no I/O.
//! * [`bloom`] — Bloom filter sizing, the lock-free in-process filter, and snapshot files.
//! * [`patterns`] — URL-pattern verdicts (seed 003): the Redis format the render stage writes and the gate reads.
//! * [`redis_filter`] — the Redis-shared filter: namespaces, generations, local tier, snapshots.
//! * [`sieve`] — the gate's core step: validate → canonicalize → check-and-set, shared by every
//!   front end (embedded `dedup`, and later the Kafka gate and the HTTP API).
//! * [`events`] — the gate's Kafka events (schemas/*.v1.json) and how a message is decoded.
//! * [`gate`] — the Kafka gate stage: consumer group in, new URLs out, at least once.
//! * [`page`] — page features, similarities, rule classes, near-duplicate clustering, URL-pattern
//!   DOM verdicts (pure; seed 004 and 003).
//! * [`input`] — bounded line reading (a megabyte line never becomes a problem).
//! * [`render`] — headless Chromium behind an egress proxy, and the render stage.
//! * [`serve`] — the HTTP filter API.
//! * [`config`] — what every component's configuration shares (durations, a new filter's
//!   defaults); below `cli`.
//! * [`cli`] — the `crawlsieve` command line. It imports everything; nothing imports it
//!   (`tests/layers.rs` fails otherwise).

pub mod bloom;
pub mod cli;
pub mod config;
pub mod events;
pub mod gate;
pub mod input;
pub mod page;
pub mod patterns;
pub mod redis_filter;
pub mod render;
pub mod serve;
pub mod sieve;
pub mod url;
