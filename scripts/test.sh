#!/usr/bin/env bash
# The one test command: installs what the tests need on a fresh Debian 12 machine, then runs them.
#   scripts/test.sh            # everything
#   scripts/test.sh -- FILTER  # pass a filter to cargo test
# Needs: the Rust toolchain (rustup/cargo), and ../shared beside the checkout (the shared data).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v xz >/dev/null 2>&1 || need_apt+=(xz-utils)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)  # the TLS tests make their certificates
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
command -v make >/dev/null 2>&1 || need_apt+=(make)  # librdkafka (bundled by rdkafka) builds with make
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
pkg-config --exists openssl 2>/dev/null || need_apt+=(libssl-dev)  # librdkafka's SSL / SASL_SSL
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)  # the render tests drive Debian's Chromium
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)  # tsc type-checks the Grafana dashboard
python3 -c "import ensurepip" >/dev/null 2>&1 || need_apt+=(python3-venv)  # Debian strips ensurepip
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "test.sh: installing ${need_apt[*]}" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi
# promtool (Debian's prometheus package) checks the /metrics output in the gate tests.
if ! command -v promtool >/dev/null 2>&1; then
  echo "test.sh: installing prometheus (for promtool)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus
fi
if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || { echo "test.sh: cargo not found; install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
[ -d ../shared/data ] || { echo "test.sh: ../shared/data is missing: the tests read the shared suites from beside the checkout" >&2; exit 1; }

# Redis: the tests start their own servers on free ports (one shared per test binary, a
# 3-node cluster, ones they kill); the machine's 127.0.0.1:6379 is never touched.

# Helm's engine (helm-python-sdk: lint and render without the helm binary) and
# kubernetes-validate for tests/deploy.rs, in a virtualenv of the checkout's own (Debian's
# Python refuses system-wide pip installs). Its bin/ goes first on PATH for the tests.
venv=target/py
if ! "$venv/bin/python3" -c "import helm_python, kubernetes_validate" >/dev/null 2>&1; then
  echo "test.sh: installing helm-python-sdk and kubernetes-validate into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
    helm-python-sdk==0.2.2 kubernetes-validate==1.37.0
fi
PATH="$PWD/$venv/bin:$PATH"
export PATH

# The tansu broker (Kafka protocol) for the gate tests; each test starts its own on a free port.
TANSU=$(scripts/fetch-tansu.sh)
export TANSU

# A clean clone (CI) gains nothing from incremental state: 1.2 GB of disk it need not write.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
# The build needs a few GB of disk (target/debug): say how much there is, for a failure's log.
df -h . | awk 'NR == 2 { print "test.sh: " $4 " of disk free for target/" }' >&2

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
