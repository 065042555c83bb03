#!/usr/bin/env python3
"""What a slow start would add to fetch outcomes (issue 46's goal beyond: the share of 404s among
everything published from scripts over the whole run). A replay, not the gate: the outcomes of
`scripts/outcomes-data.py` (SET's published.jsonl, context js), shuffled (20 seeds) and sent in
WAVES waves. The gate's rule as built (a source with a miss and no hit, or a directory with 3
misses, holds; a directory hit lifts; module paths never held; one held candidate in 20 a probe)
with held candidates put back when a hit lifts a key, outcomes of each wave counted before the
next, then rounds until nothing new is published. Plus, not built: a source with no outcome yet
publishes at most N guesses, the rest kept until one of its outcomes arrives (N = 0: off), its
`source` key being the script (or, `srcdir`, the script's directory).

    SET=design scripts/outcomes-data.py > target/bench-data/outcomes/design/published.jsonl
    scripts/outcomes-slowstart.py target/bench-data/outcomes/design/published.jsonl ...

Prints per set, waves and variant: the whole run's 404 share without outcomes -> with, and the
real (2xx) pages never published by the end (per shuffle, of those there are).
"""
import collections
import json
import random
import re
import sys
import zlib

MODULE = re.compile(r"^\.\.?/.*\.(js|mjs|cjs)$")


def directory(u):
    return u[: u.rfind("/") + 1]


def replay(rows, seed, waves, n_first, outcomes=True, srcdir=False):
    rng = random.Random(seed)
    rs = rows[:]
    rng.shuffle(rs)
    total = len(rs)
    parts = [rs[i * total // waves:(i + 1) * total // waves] for i in range(waves)]
    status = {r["url"]: r["status"] for r in rows}
    src_counts = collections.defaultdict(lambda: [0, 0])
    dir_counts = collections.defaultdict(lambda: [0, 0])
    in_flight = collections.Counter()
    published, kept, fresh = {}, {}, []

    def sk(r):
        return (r["context"], directory(r["source"]) if srcdir else r["source"])

    def dk(r):
        return (r["context"], directory(r["url"]))

    def passes(r):
        if not outcomes or MODULE.match(r["input"]):
            return True
        s, d = src_counts[sk(r)], dir_counts[dk(r)]
        if d[0] > 0:
            return True
        hold = (s[0] == 0 and s[1] >= 1) or d[1] >= 3
        if not hold and n_first and s == [0, 0] and in_flight[sk(r)] >= n_first:
            hold = True
        if hold and zlib.crc32(r["url"].encode()) % 20 == 0:
            return True  # a probe
        return not hold

    def offer(r):
        if r["url"] in published:
            return
        if passes(r):
            published[r["url"]] = r
            fresh.append(r)
            in_flight[sk(r)] += 1
        else:
            kept.setdefault(r["url"], []).append(r)

    def fetch():
        nonlocal fresh
        batch, fresh = fresh, []
        lifted = set()
        for r in batch:
            in_flight[sk(r)] -= 1
            st = status[r["url"]]
            f = 0 if st // 100 == 2 else 1 if st in (404, 410) else None
            if f is None:
                continue
            src_counts[sk(r)][f] += 1
            dir_counts[dk(r)][f] += 1
            if f == 0:
                lifted |= {("s",) + sk(r), ("d",) + dk(r)}
        back = [r for rows_ in kept.values() for r in rows_
                if ("s",) + sk(r) in lifted or ("d",) + dk(r) in lifted]
        for r in back:
            left = [x for x in kept.get(r["url"], []) if x is not r]
            if left:
                kept[r["url"]] = left
            else:
                kept.pop(r["url"], None)
            offer(r)

    for part in parts:
        for r in part:
            offer(r)
        fetch()
    while fresh:
        fetch()
    missed = sum(status[u] in (404, 410) for u in published)
    real = {u for u, s in status.items() if s // 100 == 2}
    return len(published), missed, len(real), len(real - set(published))


def main():
    for path in sys.argv[1:]:
        rows = [json.loads(l) for l in open(path)]
        rows = [r for r in rows if r["context"] == "js"]
        name = path.rstrip("/").split("/")[-2]
        for waves in (2, 10):
            for srcdir, n_first in ((False, 0), (False, 2), (False, 5), (True, 2)):
                t, b = [0] * 4, [0] * 4
                for seed in range(20):
                    t = [a + x for a, x in zip(t, replay(rows, seed, waves, n_first, srcdir=srcdir))]
                    b = [a + x for a, x in zip(b, replay(rows, seed, waves, 0, outcomes=False))]
                variant = "as built" if not n_first else f"slow start N={n_first}{' srcdir' if srcdir else ''}"
                print(f"{name:9} waves={waves:<2} {variant:24} 404 share {b[1] / b[0] * 100:5.1f}% -> "
                      f"{t[1] / t[0] * 100:5.1f}%, real pages never published {t[3] / 20:.1f} of {t[2] / 20:.0f} "
                      f"({t[3] / t[2] * 100:.2f}%)")


if __name__ == "__main__":
    main()
