#!/usr/bin/env python3
"""A realistic heavy crawl scope for benchmarking the gate (issue 18): 10,000 allowed domains (the
stream's own most frequent hosts, so most URLs reach the rules) and 1,000 Nutch-style rules.

    python3 scripts/scope-bench-config.py target/bench-data/stream-1000000-seed42.txt target/bench-data/scope
    CRAWLSIEVE_CONFIG=$PWD/target/bench-data/scope/scope.toml scripts/bench-gate.sh

Writes OUT/scope.toml ([scope] allow_domains + files) and OUT/regex-urlfilter.txt (the same kinds
of rules as benches/scope.rs: per-host path denies, session parameters, pagination, archives, file
types; then `+.`).
"""
import collections
import pathlib
import re
import sys
import urllib.parse

stream, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
freq = collections.Counter()
for line in stream.open(errors="replace"):
    try:
        h = urllib.parse.urlsplit(line.strip()).hostname
    except ValueError:
        continue
    if h and "." in h and re.fullmatch(r"[a-z0-9.-]+", h):
        freq[h] += 1
hosts = [h for h, _ in freq.most_common(10_000)]
i = 0
while len(hosts) < 10_000:
    hosts.append(f"site{i}.example")
    i += 1
rules = []
for h in hosts[:500]:
    rules.append(r"^https?://([a-z0-9-]+\.)*" + re.escape(h).replace(r"\-", "-") + r"/(admin|login|cart|private)/")
for i in range(200):
    rules.append(rf"[?&](sessionid|sid|utm_x{i}|ref{i})=")
for i in range(150):
    rules.append(rf"/(tag|category|archive)/[^/]+/page/{i + 2}/?$")
for i in range(100):
    rules.append(rf"/{1990 + i}/\d{{2}}/\d{{2}}/.*\?replytocom=")
exts = "gif jpg png ico css zip ppt mpg xls gz rpm tgz mov exe jpeg bmp js mp3 mp4 iso dmg woff woff2 ttf svg".split()
i = 0
while len(rules) < 1000:
    rules.append(rf"(?i)/[a-z]{{{i % 7 + 1}}}[^/]*\.{exts[i % len(exts)]}$")
    i += 1
(out / "regex-urlfilter.txt").write_text("".join(f"-{r}\n" for r in rules) + "+.\n")
toml = "[scope]\nallow_domains = [\n" + "".join(f'  "{h}",\n' for h in hosts) + "]\n"
toml += f'files = ["{(out / "regex-urlfilter.txt").resolve()}"]\n'
(out / "scope.toml").write_text(toml)
print(f"{out}/scope.toml: {len(hosts)} domains ({len(freq)} distinct hosts in the stream), {len(rules)} rules")
