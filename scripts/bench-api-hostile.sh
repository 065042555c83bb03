#!/usr/bin/env bash
# The API under hostile clients (issue 16), release build: 64 slow bodies + 500 half-open
# connections beside a well-behaved client (its p50/p99), half-open connections closed by the
# header timeout, SIGTERM while they are connected, and the peak RSS under 64 × 10k-URL
# requests, 64 × 4 MB arrays and 64 namespaces. Needs Redis on 127.0.0.1:6379.
#   scripts/bench-api-hostile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --test hostile -- --nocapture --test-threads 1 2>&1 | grep -E "^hostile:|test result"
