#!/usr/bin/env bash
# The one test command: installs what the tests need on a fresh Debian 12 machine, then runs them.
#   scripts/test.sh            # everything
#   scripts/test.sh -- FILTER  # pass a filter to cargo test
# Needs: the Rust toolchain (rustup/cargo), and ../shared beside the checkout (the shared data).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v xz >/dev/null 2>&1 || need_apt+=(xz-utils)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "test.sh: installing ${need_apt[*]}" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi
if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || { echo "test.sh: cargo not found; install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
[ -d ../shared/data ] || { echo "test.sh: ../shared/data is missing: the tests read the shared suites from beside the checkout" >&2; exit 1; }

shift_args=()
if [ "${1:-}" = "--" ]; then shift; shift_args=("$@"); fi
cargo check --locked --benches --quiet
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --locked "${shift_args[@]}" 2>&1 | tee "$log" || status=$?
# One closing line for the whole run (cargo's own last line is the doc-test runner's).
awk '/^test result:/ { p += $4; f += $6 } END { printf "total: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
