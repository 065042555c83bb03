//! The Kafka gate stage (issue 4), built up in pieces. Done so far:
//!
//! * [`config`] — `gate.toml` with environment and `--set` overrides.
//! * [`offsets`] — at-least-once bookkeeping: which offset of a partition may be committed when
//!   messages finish out of order.
//!
//! The events it reads and writes are in [`crate::events`]; the URL-pattern feedback it reads is
//! in [`crate::patterns`].

pub mod config;
pub mod offsets;
