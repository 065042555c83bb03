//! URL candidates: junk rejection ([`validate`]), canonicalization ([`canon`]), URL patterns
//! ([`pattern`]) and the reason codes they share ([`reason`]).

pub mod canon;
pub mod pattern;
pub mod reason;
pub mod validate;

pub use canon::{CanonConfig, CanonError, Canonical, Canonicalizer, Merge};
pub use pattern::{pattern, pattern_with_method};
pub use reason::Reason;
pub use validate::{Profile, Validator, ValidatorConfig};
