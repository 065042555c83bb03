//! The Kafka gate stage: consumers in one group read URL events, reject junk, canonicalize,
//! check the Redis-shared filter, and emit new URLs to the fetch topic — at least once, never
//! losing a URL.
//!
//! * [`config`] — `gate.toml` with environment and `--set` overrides.
//! * [`core`] — the decision for a batch, without Kafka ([`core::GateCore`]), and the bare
//!   copy it is benchmarked against ([`core::Passthrough`]).
//! * [`kafka`] — the worker: poll → stage → produce and await every report → mark seen →
//!   commit the finished prefix; pause and back off while Redis or Kafka is away.
//! * [`offsets`] — which offset of a partition may be committed when messages finish out of
//!   order.
//! * [`metrics`] — Prometheus metrics and the `/metrics` listener.
//! * [`signals`] — SIGTERM/SIGINT: finish, commit, exit; a second signal exits at once.
//!
//! The events it reads and writes are in [`crate::events`]; the URL-pattern feedback it reads is
//! in [`crate::patterns`].

pub mod config;
pub mod core;
pub mod kafka;
pub mod metrics;
pub mod offsets;
pub mod signals;
