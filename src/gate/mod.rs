//! The gate's decision: decode a URL event, reject junk with a reason code, canonicalize, skip
//! URL patterns the render stage found to be near-identical, and claim the URL in the
//! Redis-shared filter; only new URLs become fetch events. [`core::GateCore`] is a
//! [`crate::stage::Stage`]: the shared runtime ([`crate::stage`]) brings the consumer group, the
//! at-least-once delivery and the commits; the HTTP API ([`crate::serve`]) calls its
//! [`core::GateCore::filter_direct`].
//!
//! With `[robots]` on, [`robots`] judges each URL by its origin's robots.txt and [`mover`]
//! puts the URLs it held back on the input topic when due.
//!
//! Owns: what the gate emits and why. May import `config`, `stage`, `observe`, `sieve`, `url`,
//! `events`, `patterns`, `redis_filter`; never `render`, `serve` or `cli`.

pub mod budget;
pub mod core;
pub mod mover;
pub mod policy;
pub mod robots;

pub use self::core::{Answer, DirectError, GateCore, GatePending, GateStaged, Idem};
