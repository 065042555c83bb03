#!/usr/bin/env bash
# robots.txt's cost in the gate, side by side: alternate the warm robots benchmark
# (`BENCH_ROBOTS=1 BENCH_ROBOTS_WARM=1`, gate_kafka) between release builds in checkouts DIR...
# (each with target/release built: `cargo build --release --bins --benches`, or the worktrees
# scripts/bench-compare.sh leaves under target/compare/). RUNS rounds of BENCH_ROUNDS each.
#   scripts/bench-robots-ab.sh target/compare/4fefe32 .
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 DIR [DIR...]" >&2; exit 2; }
S1=$PWD/target/bench-data/stream-1000000-seed42.txt
[ -s "$S1" ] || { mkdir -p target/bench-data; python3 ../shared/tools/gen_stream.py --n 1000000 --seed 42 > "$S1"; }
TANSU=$(scripts/fetch-tansu.sh)
for run in $(seq 1 "${RUNS:-3}"); do
  for d in "$@"; do
    d=$(cd "$d" && pwd)
    b=$(ls -t "$d"/target/release/deps/gate_kafka-* | grep -v '\.d$' | head -1)
    echo "== $(basename "$d") run $run"
    (cd "$d" && BENCH_ROBOTS=1 BENCH_ROBOTS_WARM=1 BENCH_ROUNDS=${BENCH_ROUNDS:-2} BENCH_WORKERS=1 \
       STREAM=$S1 TANSU=$TANSU "$b" --bench 2>&1 | grep -E "after the warm|best of|median of|CPU per event")
  done
done
