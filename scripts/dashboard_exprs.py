"""The PromQL expressions of a Grafana dashboard, with its variables substituted.

Used by scripts/check-dashboard.sh and tests/observability.rs (which queries each one on a real
Prometheus scraping running stages).
"""
import json
import sys

SUBST = {
    "$__rate_interval": "30s",
    "$__range": "5m",
    "$__interval": "15s",
    '=~"$job"': '=~".*"',
}


def exprs(dashboard):
    """(panel title, expression) for every target of every panel, rows included."""
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                e = t["expr"]
                for k, v in SUBST.items():
                    e = e.replace(k, v)
                out.append((p.get("title", ""), e))
            walk(p.get("panels", []))

    walk(dashboard.get("panels", []))
    return out


if __name__ == "__main__":
    # One JSON line per expression: {"title", "expr"}.
    for title, e in exprs(json.load(open(sys.argv[1]))):
        print(json.dumps({"title": title, "expr": e}))
