#!/usr/bin/env bash
# Throughput of `crawlsieve serve` (release build) against the local Redis: wrk posts requests
# of 200 URLs each, all new (every request's URLs are distinct), so every request does a full
# sieve + Redis check-and-set; then the same with every URL a repeat (answered duplicate).
#   scripts/bench-api.sh [DURATION=20s] [CONNECTIONS=16]
# Needs wrk (apt-get install wrk) and Redis on 127.0.0.1:6379.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-20s}
conns=${2:-16}
command -v wrk >/dev/null || { echo "bench-api: install wrk (apt-get install wrk)" >&2; exit 1; }
cargo build --release --quiet --bin crawlsieve
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ns="bench-api-$$"
token="bench-$$"
CRAWLSIEVE_API_TOKENS=$token target/release/crawlsieve serve \
  --set serve.listen=127.0.0.1:$port --set redis.namespace=$ns \
  --set redis.capacity=100000000 --set serve.workers=2 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; target/release/crawlsieve bloom --redis redis://127.0.0.1:6379 drop $ns >/dev/null 2>&1 || true; rm -f "$lua"' EXIT
lua=$(mktemp --suffix=.lua)
cat > "$lua" <<LUA
local counter = 0
local tid = 0
local threads = 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
function init(args) tid = tonumber(wrk.thread:get("tid")) or 0; repeat_mode = args[1] == "repeat" end
request = function()
  counter = counter + 1
  local n = repeat_mode and 1 or counter
  local urls = {}
  for i = 1, 200 do
    urls[i] = string.format('"https://h%d.example/c/%d/item-%d?id=%d&page=%d"', i % 50, tid, n, i, n % 7)
  end
  local body = '{"namespace":"$ns","urls":[' .. table.concat(urls, ",") .. ']}'
  return wrk.format("POST", "/v1/filter", {["Authorization"] = "Bearer $token", ["Content-Type"] = "application/json"}, body)
end
LUA
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
echo "== new URLs (200 per request), $conns connections, $dur"
wrk -t2 -c"$conns" -d"$dur" --latency -s "$lua" "http://127.0.0.1:$port" -- new
echo "== repeats (the same 200 URLs per thread: duplicates)"
wrk -t2 -c"$conns" -d"$dur" --latency -s "$lua" "http://127.0.0.1:$port" -- repeat
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^crawlsieve_serve_(requests_total|urls_emitted_total|urls_duplicate_total)'
