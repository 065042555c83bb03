#!/usr/bin/env python3
"""Fetch outcomes of script-guessed URLs, as data (issue 46): which keys tell a miss coming.

    scripts/outcomes-data.py [BIN] > target/bench-data/outcomes/published.jsonl

Unpacks the npm packages in target/bench-data/outcomes/*.tgz (`npm pack NAME@VERSION` there)
into one loopback site (one directory per package), takes every quoted path-like string of
their scripts (context `js`, the script as the base) and every href/src of their HTML pages
(context `html_attr`), judges each with `crawlsieve check --base SCRIPT --context …` (the sieve the
gate runs), fetches every distinct URL it keeps from the loopback site, and writes one JSON line
per kept candidate: source, context, canonical URL, status. `scripts/outcomes-keys.py` reads it.
"""
import concurrent.futures
import functools
import http.server
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import tarfile
import threading
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target/debug/crawlsieve")
DATA = ROOT / "target/bench-data/outcomes" / os.environ.get("SET", "design")
SITE = DATA / "site"
MAX_SCRIPTS = int(os.environ.get("MAX_SCRIPTS", "120"))  # per package, sampled by a fixed seed

STRING = re.compile(r"""(["'`])([^"'`\s\\]{2,300})\1""")
ATTR = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)


def path_like(s):
    return ("/" in s or re.search(r"\.[A-Za-z0-9]{1,5}$", s)) and not s.startswith("//#")


def unpack():
    SITE.mkdir(parents=True, exist_ok=True)
    for tgz in sorted(DATA.glob("*.tgz")):
        name = tgz.name[: -len(".tgz")]
        dest = SITE / name
        if dest.exists():
            continue
        with tarfile.open(tgz) as t:
            t.extractall(dest, filter="data")


class Quiet(http.server.SimpleHTTPRequestHandler):
    """A static host as they are configured in the wild: no directory listings (a directory
    without an index.html is a 404, as on nginx without autoindex, S3 or GitHub Pages)."""

    def log_message(self, *a):
        pass

    def list_directory(self, path):
        self.send_error(404, "Not Found")
        return None

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass


def serve():
    handler = functools.partial(Quiet, directory=str(SITE))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}"


def candidates(base):
    rng = random.Random(46)
    for pkg in sorted(p for p in SITE.iterdir() if p.is_dir()):
        files = sorted(pkg.rglob("*"))
        scripts = [f for f in files if f.suffix in (".js", ".mjs") and f.stat().st_size < 3_000_000]
        if len(scripts) > MAX_SCRIPTS:
            scripts = sorted(rng.sample(scripts, MAX_SCRIPTS))
        pages = [f for f in files if f.suffix in (".html", ".htm")]
        for f, ctx, rx, group in [(s, "js", STRING, 2) for s in scripts] + [(p, "html_attr", ATTR, 1) for p in pages]:
            text = f.read_text(errors="replace")
            strings = {m.group(group) for m in rx.finditer(text)}
            strings = sorted(s for s in strings if ctx == "html_attr" or path_like(s))
            if strings:
                yield f"{base}/{f.relative_to(SITE).as_posix()}", ctx, strings


def check(source, ctx, strings):
    out = subprocess.run(
        [BIN, "check", "--base", source, "--context", ctx, "--allow-private", "127.0.0.1"],
        input="\n".join(strings) + "\n", capture_output=True, text=True, check=True,
    ).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def status(url):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=10) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception:
        return 0


def main():
    unpack()
    base = serve()
    rows = []
    for source, ctx, strings in candidates(base):
        for v in check(source, ctx, strings):
            if v["verdict"] == "keep" and v["canonical"].startswith(base):
                rows.append({"source": source, "context": ctx, "input": v["input"], "url": v["canonical"]})
    urls = sorted({r["url"] for r in rows})
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        got = dict(zip(urls, ex.map(status, urls)))
    for r in rows:
        r["status"] = got[r["url"]]
        r["url"] = r["url"][len(base):]
        r["source"] = r["source"][len(base):]
        print(json.dumps(r))
    n404 = sum(1 for u in urls if got[u] == 404)
    print(f"{len(rows)} kept same-site candidates, {len(urls)} distinct URLs, {n404} 404s "
          f"({100 * n404 / max(1, len(urls)):.0f}%)", file=sys.stderr)


if __name__ == "__main__":
    main()
