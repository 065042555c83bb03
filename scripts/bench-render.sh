#!/usr/bin/env bash
# Render cost of `crawlsieve similar`: --render always (every page in Chromium) against
# --render auto (plain HTTP first, Chromium only where rendering could change the answer), on a
# loopback site of real documentation pages (Debian's rust-doc, python-django-doc,
# postgresql-doc-15 under their own paths) plus the app-shell pages of scripts/bench-render-site/
# (one identical HTML shell whose content a script writes); beside them the bare-Chromium
# floor (navigate + screenshot per page, no crawlsieve). Prints pages/s, CPU s per page, pages
# rendered, the speed-up and whether both modes put the same pages together.
#   scripts/bench-render.sh                     # PAGES=300 doc pages + 6 app shells, TABS=4, RUNS=1
#   PAGES=500 TABS=2 RUNS=3 scripts/bench-render.sh
# Other env: BUILD=1 (cargo build --release first; also done when the binary is missing),
# FLOOR=auto|node|cli|none (auto: node + playwright-core, else the chromium CLI loop),
# FLOOR_PAGES=20 (pages of the CLI loop, one browser start each), TWINS=10 (1 in TWINS
# postgres/django pages is the other Debian version's copy of a chosen page: real duplicate
# pairs), EXTRA_ARGS (more `similar` flags), OUT (result directory; default a new /tmp dir,
# kept), BIN (the crawlsieve binary), CHROMIUM (/usr/bin/chromium). Needs python3, chromium
# (apt-installed when missing), node/npm for the floor. Times: `bench-render.py --timeit`, a child
# subreaper, because GNU time misses about half of Chromium's CPU (its zygote's renderers are
# not reaped through the waited-for chain); every run's report, log and times stay in OUT.
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD

PAGES=${PAGES:-300}
TABS=${TABS:-4}
RUNS=${RUNS:-1}
FLOOR=${FLOOR:-auto}
FLOOR_PAGES=${FLOOR_PAGES:-20}
TWINS=${TWINS:-10}
EXTRA_ARGS=${EXTRA_ARGS:-}
BIN=${BIN:-target/release/crawlsieve}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
PY="python3 $ROOT/scripts/bench-render.py"
say() { printf '== %s\n' "$*" >&2; }

# -- tools --------------------------------------------------------------------------------------
if [ "${BUILD:-0}" = 1 ] || [ ! -x "$BIN" ]; then
    say "cargo build --release --bin crawlsieve"
    cargo build --release --bin crawlsieve
fi
if [ ! -x "$CHROMIUM" ]; then
    say "installing chromium"
    apt-get install -y -q chromium >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
fi

OUT=${OUT:-$(mktemp -d /tmp/bench-render.XXXXXX)}
mkdir -p "$OUT"
say "results in $OUT"

# -- the site -----------------------------------------------------------------------------------
corpus=$ROOT/$(sh scripts/fetch-doc-corpus.sh)
site=$OUT/site
rm -rf "$site" && mkdir -p "$site"
for d in "$corpus"/*/; do
    pkg=$(basename "$d")
    [ "$pkg" = debs ] && continue
    ln -s "${d%/}" "$site/$pkg"
done
ln -s "$ROOT/scripts/bench-render-site/app" "$site/app"

say "choosing $PAGES documentation pages"
$PY --pick "$corpus" "$PAGES" --twins "$TWINS" >"$OUT/paths.txt"
(cd scripts/bench-render-site && find app -maxdepth 1 -name '*.html' | LC_ALL=C sort) >>"$OUT/paths.txt"

server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# port 0: the kernel picks a free port, and http.server prints it
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$site" >"$OUT/server.log" 2>&1 &
server_pid=$!
PORT=
for _ in $(seq 1 200); do
    PORT=$(sed -n 's/^Serving HTTP on .* port \([0-9][0-9]*\) .*/\1/p' "$OUT/server.log" | head -1)
    [ -n "$PORT" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
    sleep 0.05
done
[ -n "$PORT" ] || { say "http.server did not start"; cat "$OUT/server.log" >&2; exit 1; }
BASE=http://127.0.0.1:$PORT
for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "$BASE/app/product-1.html" 2>/dev/null && break
    sleep 0.05
done
curl -fsS -o /dev/null "$BASE/app/product-1.html"
sed "s|^|$BASE/|" "$OUT/paths.txt" >"$OUT/urls.txt"
say "serving $site on $BASE: $(wc -l <"$OUT/urls.txt") URLs in $OUT/urls.txt"
# every page once (page cache, server warm), and every one must answer 200
$PY --warm "$BASE" "$OUT/urls.txt"
curl -fsS -o /dev/null "$BASE/app/data/guide-1.json"

# -- crawlsieve, both modes ---------------------------------------------------------------------
run_mode() { # mode run
    local mode=$1 rc=0
    say "crawlsieve similar --render $mode -t $TABS (run $2 of $RUNS)"
    # shellcheck disable=SC2086 # EXTRA_ARGS is a list of flags
    $PY --timeit "$OUT/$mode.json.time" -- "$BIN" similar -l "$OUT/urls.txt" -o "$OUT/$mode.json" \
        -t "$TABS" --render "$mode" --allow "127.0.0.1:$PORT" --chromium "$CHROMIUM" $EXTRA_ARGS \
        >"$OUT/$mode-$2.log" 2>&1 || rc=$?
    # 5: partial (some pages not rendered): the report is written all the same
    if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then
        say "crawlsieve --render $mode exited $rc:"
        tail -20 "$OUT/$mode-$2.log" >&2
        exit 1
    fi
    [ "$rc" = 5 ] && say "  (exit 5: partial, see $OUT/$mode-$2.log)"
    tail -1 "$OUT/$mode.json.time" | awk '{printf "   %s s wall, %.1f s CPU\n", $1, $2 + $3}' >&2
    cp "$OUT/$mode.json" "$OUT/$mode-$2.json"
}
rm -f "$OUT"/always.json.time "$OUT"/auto.json.time
# Chromium's binary and libraries into the page cache, so the first timed mode pays no cold start
prof=$(mktemp -d)
timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$prof" \
    --dump-dom "$BASE/app/product-1.html" >/dev/null 2>&1 || true
rm -rf "$prof"
# odd runs always first, even runs auto first
for i in $(seq 1 "$RUNS"); do
    if [ $((i % 2)) = 1 ]; then
        run_mode always "$i"; run_mode auto "$i"
    else
        run_mode auto "$i"; run_mode always "$i"
    fi
done

# -- the bare-Chromium floor --------------------------------------------------------------------
floor_args=
rm -f "$OUT/floor.json" "$OUT/floor.json.time"
node_dir=$ROOT/target/bench-render-node
if [ "$FLOOR" = auto ] || [ "$FLOOR" = node ]; then
    if command -v node >/dev/null && command -v npm >/dev/null; then
        if [ ! -f "$node_dir/node_modules/playwright-core/package.json" ]; then
            say "npm install --prefix target/bench-render-node playwright-core"
            mkdir -p "$node_dir"
            PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$node_dir" --no-audit --no-fund \
                playwright-core >"$OUT/npm.log" 2>&1 || say "npm install failed (see $OUT/npm.log)"
        fi
    fi
    if [ -f "$node_dir/node_modules/playwright-core/package.json" ]; then
        say "floor: playwright-core, one browser, $TABS tabs, goto + screenshot"
        if $PY --timeit "$OUT/floor.json.time" -- node scripts/bench-render-floor.mjs --tabs "$TABS" \
            --chromium "$CHROMIUM" --node-dir "$node_dir" --out "$OUT/floor.json" "$OUT/urls.txt" >&2; then
            floor_args="--floor $OUT/floor.json"
        else
            say "the node floor failed"
        fi
    elif [ "$FLOOR" = node ]; then
        say "FLOOR=node but no node/npm/playwright-core"; exit 1
    fi
fi
if [ "$FLOOR" = cli ] || { [ "$FLOOR" = auto ] && [ -z "$floor_args" ]; }; then
    n=$(wc -l <"$OUT/urls.txt")
    k=$(( n / FLOOR_PAGES )); [ "$k" -ge 1 ] || k=1
    awk -v k="$k" -v m="$FLOOR_PAGES" 'NR % k == 1 % k && c < m { print; c++ }' "$OUT/urls.txt" >"$OUT/floor-urls.txt"
    nf=$(wc -l <"$OUT/floor-urls.txt")
    say "floor: chromium CLI, one browser start per page, $nf pages, one at a time"
    cat >"$OUT/floor-cli.sh" <<EOF
#!/bin/sh
# one headless browser per URL: navigate, screenshot, exit
errors=0
while read -r url; do
    prof=\$(mktemp -d)
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --disable-dev-shm-usage --mute-audio --user-data-dir="\$prof" \
        --screenshot="$OUT/floor-cli.png" --window-size=1280,800 "\$url" >/dev/null 2>&1 || errors=\$((errors + 1))
    rm -rf "\$prof"
done <"$OUT/floor-urls.txt"
echo \$errors >"$OUT/floor-cli.errors"
EOF
    $PY --timeit "$OUT/floor.json.time" -- sh "$OUT/floor-cli.sh"
    read -r wall _ _ <"$OUT/floor.json.time"
    errs=$(cat "$OUT/floor-cli.errors")
    awk -v n="$nf" -v w="$wall" -v e="$errs" 'BEGIN {
        printf "{\"method\": \"chromium-cli\", \"tabs\": 1, \"pages\": %d, \"errors\": %d, \"loop_seconds\": %s, \"pages_per_s\": %f, \"ms_per_page\": %f, \"note\": \"%d pages, one at a time, each with its own browser start (chromium --headless --screenshot): an upper bound of the floor\"}\n", n, e, w, n / w, 1000 * w / n, n }' >"$OUT/floor.json"
    floor_args="--floor $OUT/floor.json"
fi

# -- the comparison -----------------------------------------------------------------------------
say "comparison"
# shellcheck disable=SC2086
$PY "$OUT/always.json" "$OUT/auto.json" $floor_args --json "$OUT/summary.json" | tee "$OUT/summary.txt"
say "reports, logs and summary.json in $OUT"
