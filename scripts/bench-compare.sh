#!/usr/bin/env bash
# Side-by-side benchmark of two revisions (release builds), as issue 15's before/after figures were
# measured: this VM's run-to-run noise (±15–30%) is larger than most changes, so the two builds are
# run alternately, pinned to core 0, several times, and minima/medians compared.
#   scripts/bench-compare.sh REV_BEFORE REV_AFTER      # e.g. scripts/bench-compare.sh main~5 HEAD
# Steps per revision: `dedup` over 10 M gen_stream.py lines (3 runs, alternating), `check` over the
# real 1.29 M-line corpus (7 runs, alternating), the `gate_core` criterion benches, and the Kafka
# gate benchmark (`gate_kafka`: 1 M events on tansu, passthrough vs gate; Redis on 127.0.0.1:6379).
# Worktrees and their target dirs live under target/compare/ (a clean release build each: ~15 min).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 REV_BEFORE REV_AFTER" >&2; exit 2; }
ROOT=$PWD
DATA=$ROOT/target/bench-data
mkdir -p "$DATA" target/compare
# The benches read ../shared beside their manifest: a worktree's is target/compare/shared.
ln -sfn "$(cd ../shared && pwd)" target/compare/shared
S10=$DATA/stream-10000000-seed42.txt
S1=$DATA/stream-1000000-seed42.txt
[ -s "$S10" ] || python3 ../shared/tools/gen_stream.py --n 10000000 --seed 42 > "$S10"
[ -s "$S1" ] || python3 ../shared/tools/gen_stream.py --n 1000000 --seed 42 > "$S1"
CORPUS=$DATA/candidates.txt
[ -s "$CORPUS" ] || xz -dc ../shared/data/urls/candidates.txt.xz > "$CORPUS"
TANSU=$(scripts/fetch-tansu.sh)
PIN=""; command -v taskset >/dev/null && PIN="taskset -c 0"

dirs=()
for rev in "$1" "$2"; do
  sha=$(git rev-parse --short "$rev")
  dir=$ROOT/target/compare/$sha
  [ -d "$dir" ] || git worktree add -f --detach "$dir" "$sha" >/dev/null
  (cd "$dir" && CARGO_TARGET_DIR=$dir/target cargo build --release --quiet \
     --bin crawlsieve --bench gate_core --bench gate_kafka)
  dirs+=("$dir")
done
A=${dirs[0]}; B=${dirs[1]}
bench_bin() { ls -t "$1"/target/release/deps/"$2"-* | grep -v '\.d$' | head -1; }

echo "== dedup, 10 M lines, alternating (s)"
for run in 1 2 3; do
  for d in "$A" "$B"; do
    s=$(date +%s.%N); $PIN "$d/target/release/crawlsieve" dedup -q --capacity 10000000 "$S10" >/dev/null; e=$(date +%s.%N)
    echo "$(basename "$d") run $run: $(python3 -c "print(round($e-$s, 2))")"
  done
done
echo "== check, real corpus, JSON to /dev/null, alternating (s)"
for run in 1 2 3 4 5 6 7; do
  for d in "$A" "$B"; do
    s=$(date +%s.%N); $PIN "$d/target/release/crawlsieve" check "$CORPUS" >/dev/null; e=$(date +%s.%N)
    echo "$(basename "$d") run $run: $(python3 -c "print(round($e-$s, 3))")"
  done
done
for d in "$A" "$B"; do
  echo "== $(basename "$d"): gate_core (criterion)"
  (cd "$d" && $PIN "$(bench_bin "$d" gate_core)" --bench 2>"$d/gate_core.stderr" | grep -E "^[a-z].*/|time:|thrpt:" | grep -v change) \
    || { echo "gate_core failed:" >&2; tail -5 "$d/gate_core.stderr" >&2; exit 1; }
  echo "== $(basename "$d"): gate_kafka, 1 M events"
  (cd "$d" && STREAM=$S1 TANSU=$TANSU "$(bench_bin "$d" gate_kafka)" --bench 2>&1 | tail -3)
done
