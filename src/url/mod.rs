//! URL candidates: junk rejection ([`validate`]), canonicalization ([`canon`]), URL patterns
//! ([`pattern`]), the reason codes they share ([`reason`]), the decoding a candidate's extraction
//! context implies ([`context`]), and the lexical layer under all of them ([`lex`]); special-purpose
//! addresses (`address`: `private_address`, shared with the renderer), learned parameter rules
//! as the canonicalizer applies them (`learned`), spider traps (`trap`). Pure functions, no I/O.
//!
//! Owns: what a URL candidate is and what it canonicalizes to. Imports nothing of the crate;
//! `validate` and `canon` import [`lex`], never each other.

pub mod address;
pub mod canon;
pub mod context;
pub mod learned;
pub mod lex;
pub mod pattern;
pub mod reason;
pub mod trap;
pub mod validate;

pub use address::AddressPolicy;
pub use canon::{CanonConfig, CanonError, Canonical, Canonicalizer, Merge};
pub use context::Context;
pub use learned::LearnedRules;
pub use pattern::{pattern, pattern_with_method};
pub use reason::Reason;
pub use trap::TrapConfig;
pub use validate::{has_web_extension, Profile, Validator, ValidatorConfig};

/// The word-at-a-time byte tests behind [`find_byte`] (also the JSON writer's plain-copy test).
pub(crate) use lex::{bytes_below, splat, zero_bytes, HI as HIGH_BITS};
pub(crate) use lex::{find_byte, find_byte2, find_byte3, trim_residue};
