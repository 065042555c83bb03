#!/usr/bin/env bash
# The Kafka gate benchmark, one command (release build):
#   scripts/bench-gate.sh                       # 1 M JSON url-events (gen_stream.py --seed 42), 1 then 2 consumers
#   EVENTS=200000 BENCH_WORKERS=2 scripts/bench-gate.sh
#   BENCH_FORMAT=lines scripts/bench-gate.sh    # bare lines as events
# Starts its own tansu broker (memory storage; fetched like scripts/test.sh does), uses the Redis
# on 127.0.0.1:6379 (BENCH_REDIS to change; a namespace of its own, dropped afterwards), loads the
# stream into a 4-partition topic, then runs `crawlsieve gate --passthrough` and `crawlsieve gate`
# on it BENCH_ROUNDS times each and prints both rates.
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS=${EVENTS:-1000000}
DATA=target/bench-data
mkdir -p "$DATA"
STREAM="$DATA/stream-$EVENTS-seed42.txt"
[ -s "$STREAM" ] || { echo "generating $STREAM ..." >&2; python3 ../shared/tools/gen_stream.py --n "$EVENTS" --seed 42 > "$STREAM"; }
TANSU=$(scripts/fetch-tansu.sh)
STREAM="$PWD/$STREAM"
export TANSU STREAM
for w in ${BENCH_WORKERS:-1 2}; do
  echo "== consumers per process: $w" >&2
  BENCH_WORKERS=$w cargo bench --bench gate_kafka
done
