#!/usr/bin/env bash
# Page features and clustering benchmarks, one command (release build):
#   scripts/bench-page.sh                     # features on python3.11-doc + clustering 1 M records
#   CLUSTER_RECORDS=100000 scripts/bench-page.sh
# Fetches Debian's python3.11-doc (530 real HTML pages, ~50 MB) into target/bench-data/pydoc once.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=target/bench-data/pydoc
if [ ! -d "$DATA/usr/share/doc/python3.11/html" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download python3.11-doc >/dev/null 2>&1)
  mkdir -p "$DATA" && dpkg-deb -x "$tmp"/python3.11-doc_*.deb "$DATA" && rm -rf "$tmp"
fi
PAGE_HTML_DIR="$PWD/$DATA/usr/share/doc/python3.11/html" exec cargo bench --bench page
