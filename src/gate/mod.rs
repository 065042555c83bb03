//! The gate's decision: decode a URL event, reject junk with a reason code, canonicalize, skip
//! URL patterns the render stage found to be near-identical, and claim the URL in the
//! Redis-shared filter; only new URLs become fetch events. [`core::GateCore`] is a
//! [`crate::stage::Stage`]: the shared runtime ([`crate::stage`]) brings the consumer group, the
//! at-least-once delivery and the commits; the HTTP API ([`crate::serve`]) calls its
//! [`core::GateCore::filter_direct`].
//!
//! [`policy`] is the crawl policy every driver applies between the sieve and the filter:
//! robots.txt ([`robots`]: records shared in Redis, the fetcher), pattern verdicts, learned
//! parameter rules, the per-host budget ([`budget`]). With `[robots]` on, [`mover`] puts the
//! URLs the gate held back on the input topic when due. With `kafka.outcomes_topic` set,
//! [`outcomes_reader`] counts the fetch outcomes there in Redis, which the policy reads
//! (`fetch_misses`). `direct.rs` is the HTTP API's path through [`core::GateCore`].
//!
//! Owns: what the gate emits and why. May import `config`, `stage`, `observe`, `sieve`, `url`,
//! `events`, `pattern_verdicts`, `redis_filter`; never `render`, `serve` or `cli`.

pub mod budget;
pub mod core;
pub mod mover;
pub mod outcomes_reader;
pub mod policy;
pub mod robots;

mod direct;

pub use self::core::{GateCore, GatePending, GateStaged};
pub use self::direct::{Answer, DirectError, Idem};
