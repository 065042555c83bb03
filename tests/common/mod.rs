//! Helpers shared by the integration tests: the shared data folder beside the checkout.

#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared/data/<rel>`; panics with a clear message when the shared folder is missing.
pub fn shared(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(rel);
    assert!(
        p.exists(),
        "shared test data {} is missing: the tests expect ../shared beside the checkout",
        p.display()
    );
    p
}

/// JSON Lines of a shared file.
pub fn jsonl(rel: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(shared(rel))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
