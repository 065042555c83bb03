#!/usr/bin/env bash
# The documented end-to-end benchmark (release build, one core):
#   scripts/bench.sh            # everything below
#   LINES=1000000 scripts/bench.sh   # a shorter stream
# 1. `crawlsieve dedup` over a LINES-line gen_stream.py stream (default 10 M): lines/s, 3 runs.
# 2. `crawlsieve check` over the real 1.29 M-line candidate corpus (includes JSON output).
# 3. The Bloom filter report (sizing, measured FP rate on 10 M fresh URLs, throughput, HashSet).
# 4. The criterion benches of the hot paths (validator per candidate, canonicalize, sieve, bloom).
# Inputs are generated into target/bench-data/ once and reused.
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${LINES:-10000000}
DATA=target/bench-data
mkdir -p "$DATA"
command -v python3 >/dev/null && command -v xz >/dev/null || { echo "bench.sh needs python3 and xz" >&2; exit 1; }
PIN=""
command -v taskset >/dev/null && PIN="taskset -c 0"

cargo build --release --quiet
BIN=target/release/crawlsieve
STREAM="$DATA/stream-$LINES-seed42.txt"
[ -s "$STREAM" ] || { echo "generating $STREAM ..." >&2; python3 ../shared/tools/gen_stream.py --n "$LINES" --seed 42 > "$STREAM"; }
CORPUS="$DATA/candidates.txt"
[ -s "$CORPUS" ] || xz -dc ../shared/data/urls/candidates.txt.xz > "$CORPUS"

echo "== 1. dedup end to end, $LINES lines of gen_stream.py --seed 42, one core ($(du -h "$STREAM" | cut -f1))"
for run in 1 2 3; do
  start=$(date +%s.%N)
  $PIN "$BIN" dedup -q --capacity "$LINES" "$STREAM" > "$DATA/dedup.out"
  end=$(date +%s.%N)
  python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); n=int(sys.argv[3]); print(f'run {sys.argv[4]}: {s:.2f} s, {n/s/1e6:.3f} M lines/s')" "$start" "$end" "$LINES" "$run"
done
echo "new URLs: $(wc -l < "$DATA/dedup.out") of $LINES lines"
$PIN "$BIN" dedup --capacity "$LINES" "$STREAM" 2>&1 >/dev/null | sed 's/^/  /'

echo; echo "== 2. check over the real corpus ($(wc -l < "$CORPUS") lines, JSON output to /dev/null)"
start=$(date +%s.%N); $PIN "$BIN" check "$CORPUS" > /dev/null; end=$(date +%s.%N)
python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); print(f'{s:.2f} s, {1287879/s/1e6:.2f} M lines/s (validator + canonicalize + JSON)')" "$start" "$end"

echo; echo "== 3. Bloom filter report"
$PIN cargo bench --quiet --bench bloom_report 2>/dev/null

echo; echo "== 4. criterion hot paths (ns per element = 1e9 / thrpt)"
$PIN cargo bench --quiet --bench gate_core 2>/dev/null | grep -E "^[a-z].*/|time:|thrpt:" | grep -v change
