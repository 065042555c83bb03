#!/usr/bin/env python3
"""Helper of scripts/bench-render.sh (`similar --render always` against `--render auto`).

  bench-render.py ALWAYS.json AUTO.json [--floor FLOOR.json] [--app-prefix /app/] [--json OUT]
      Compare two cluster reports side by side: pages, wall seconds, pages/s, CPU seconds per
      page, pages rendered (the url rows' `rendered`; a missing field counts as rendered),
      speed-up, and cluster agreement (unordered url pairs sharing a non-empty cluster_id), on
      all pages and on the app-shell pages (url path under --app-prefix). Timings come from a
      sidecar REPORT.time (one line per run: "wall user sys" seconds, GNU time's
      `-f '%e %U %S'`); the median run is shown. FLOOR.json is bench-render-floor.mjs's output
      (or the chromium-CLI loop's), with FLOOR.json.time beside it. Exits 2 if a report is
      missing or unreadable.
  bench-render.py --pick ROOT N [--twins K]
      Print N documentation pages of target/doc-corpus (ROOT/<package>/<version>/...) as URL
      paths relative to ROOT, chosen deterministically: N split evenly over the packages; in
      each package's newest version the .html files are grouped by directory and taken one
      directory-round at a time (a round spread evenly over the sorted directories, each
      directory's files in an evenly spreading order); where a package has two versions,
      1 in K of its pages is the other version's copy of a page already chosen (a version
      twin: a real near-duplicate pair). Counts go to stderr.
  bench-render.py --warm BASE_URL URLS.txt
      GET every URL once (fills the page cache and checks the site); exits 1 if one is not 200.
  bench-render.py --timeit FILE -- CMD ARGS...
      Run CMD as a child subreaper (PR_SET_CHILD_SUBREAPER), so orphaned descendants
      (Chromium's processes) are reaped here and their CPU is counted; append "wall user sys"
      to FILE (wall until CMD exits; CPU of CMD and every descendant). Exits with CMD's status.
"""

import hashlib
import json
import os
import re
import statistics
import sys
import time
import urllib.parse
import urllib.request


def die(msg, code=2):
    print(f"bench-render.py: {msg}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------------------------------------
# --pick


def natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def spread_order(m):
    """0..m-1 in an order whose every prefix is spread evenly (van der Corput, middle first)."""
    seen, out, k = set(), [], 1
    while len(out) < m and k < 8 * m + 64:
        x, f, v = k, 0.5, 0.0
        while x:
            if x & 1:
                v += f
            x >>= 1
            f /= 2
        j = int(v * m)
        if j not in seen:
            seen.add(j)
            out.append(j)
        k += 1
    out.extend(j for j in range(m) if j not in seen)
    return out


def evenly(items, r):
    n = len(items)
    if r >= n:
        return list(items)
    return [items[int((i + 0.5) * n / r)] for i in range(r)]


def html_files(vdir):
    out = []
    for dp, dns, fns in os.walk(vdir):
        dns.sort()
        for f in fns:
            p = os.path.join(dp, f)
            if f.endswith(".html") and os.path.isfile(p) and not os.path.islink(p):
                out.append(os.path.relpath(p, vdir))
    return sorted(out)


def is_stub(path):
    """A redirect page: small, with a meta refresh."""
    if os.path.getsize(path) > 2048:
        return False
    with open(path, "rb") as f:
        return b'http-equiv="refresh"' in f.read().lower()


def pick_package(files, q):
    by_dir = {}
    for f in files:
        by_dir.setdefault(os.path.dirname(f), []).append(f)
    dirs = sorted(by_dir)
    orders = {d: [by_dir[d][j] for j in spread_order(len(by_dir[d]))] for d in dirs}
    chosen, r = [], 0
    while len(chosen) < q:
        rnd = [orders[d][r] for d in dirs if r < len(orders[d])]
        if not rnd:
            break
        chosen.extend(evenly(rnd, q - len(chosen)))
        r += 1
    return chosen


def cmd_pick(argv):
    if len(argv) < 2:
        die("usage: --pick ROOT N [--twins K]")
    root, n = argv[0], int(argv[1])
    twins = 10
    if "--twins" in argv:
        twins = int(argv[argv.index("--twins") + 1])
    pkgs = sorted(
        p for p in os.listdir(root) if p != "debs" and os.path.isdir(os.path.join(root, p))
    )
    pkgs = [p for p in pkgs if os.listdir(os.path.join(root, p))]
    if not pkgs:
        die(f"no package under {root}")
    quotas = [n // len(pkgs) + (1 if i < n % len(pkgs) else 0) for i in range(len(pkgs))]
    out = []
    for pkg, q in zip(pkgs, quotas):
        versions = sorted(os.listdir(os.path.join(root, pkg)), key=natural_key)
        newest = versions[-1]
        files = html_files(os.path.join(root, pkg, newest))
        t = q // twins if (twins > 0 and len(versions) > 1) else 0
        # redirect stubs (rustdoc's meta-refresh pages) at their share of the tree: taken by
        # directory rounds they would be over-represented (whole directories hold only them)
        vdir = os.path.join(root, pkg, newest)
        stubs = [f for f in files if is_stub(os.path.join(vdir, f))]
        stub_set = set(stubs)
        others = [f for f in files if f not in stub_set]
        qs = round((q - t) * len(stubs) / len(files)) if files else 0
        primary = pick_package(others, q - t - qs) + pick_package(stubs, qs)
        twin_pages = []
        if t:
            other = versions[-2]
            for f in primary:
                if len(twin_pages) == t:
                    break
                if os.path.isfile(os.path.join(root, pkg, other, f)):
                    twin_pages.append(f"{pkg}/{other}/{f}")
        # fill up from the newest version if too few twins exist
        if len(primary) + len(twin_pages) < q:
            extra = [f for f in pick_package(others, q) if f not in set(primary)]
            primary += extra[: q - len(primary) - len(twin_pages)]
        pages = [f"{pkg}/{newest}/{f}" for f in primary] + twin_pages
        redirects = sum(1 for p in pages if is_stub(os.path.join(root, p)))
        ndirs = len({os.path.dirname(p.split("/", 2)[2]) for p in pages})
        print(
            f"  {pkg} {newest}: {len(pages)} pages ({len(twin_pages)} version twins from "
            f"{versions[-2] if twin_pages else '-'}), {ndirs} directories, {redirects} "
            f"redirect stubs (meta refresh), of {len(files)} .html files ({len(stubs)} stubs)",
            file=sys.stderr,
        )
        out.extend(pages)
    # one deterministic shuffle, so the list mixes packages and directories
    out.sort(key=lambda p: hashlib.sha1(p.encode()).hexdigest())
    for p in out:
        print(urllib.parse.quote(p))


# ---------------------------------------------------------------------------------------------
# --warm


def cmd_warm(argv):
    if len(argv) != 2:
        die("usage: --warm BASE_URL URLS.txt")
    urls = [u.strip() for u in open(argv[1]) if u.strip() and not u.startswith("#")]
    bad, t0 = [], time.monotonic()
    for u in urls:
        try:
            with urllib.request.urlopen(u, timeout=10) as r:
                r.read()
                if r.status != 200:
                    bad.append((u, r.status))
        except Exception as e:  # noqa: BLE001 - report every failure
            bad.append((u, str(e)))
    print(
        f"  warm-up: {len(urls)} URLs in {time.monotonic() - t0:.1f} s, {len(bad)} not 200",
        file=sys.stderr,
    )
    for u, why in bad[:10]:
        print(f"    {why} {u}", file=sys.stderr)
    sys.exit(1 if bad else 0)


# ---------------------------------------------------------------------------------------------
# --timeit


def children_of(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def cmd_timeit(argv):
    if len(argv) < 3 or argv[1] != "--":
        die("usage: --timeit FILE -- CMD ARGS...")
    out, cmd = argv[0], argv[2:]
    import ctypes
    import resource
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        print("bench-render.py: PR_SET_CHILD_SUBREAPER failed; orphans' CPU is lost", file=sys.stderr)
    reap_wait = float(os.environ.get("REAP_WAIT", "20"))
    t0 = time.monotonic()
    main = os.posix_spawnp(cmd[0], cmd, os.environ)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, lambda sig, _f: os.kill(main, sig))
    status = None
    while status is None:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == main:
            status = st
    wall = time.monotonic() - t0
    # descendants left behind (reparented to us): give them REAP_WAIT seconds, then end them
    deadline, killed = time.monotonic() + reap_wait, 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            continue
        if time.monotonic() > deadline:
            for k in children_of(os.getpid()):
                try:
                    os.kill(k, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 5
        time.sleep(0.05)
    if killed:
        print(f"bench-render.py: {killed} descendants still ran {reap_wait:.0f} s after "
              f"{cmd[0]} exited; killed", file=sys.stderr)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "a") as f:
        f.write(f"{wall:.2f} {ru.ru_utime:.2f} {ru.ru_stime:.2f}\n")
    code = os.waitstatus_to_exitcode(status) if status is not None else 1
    sys.exit(code if code >= 0 else 128 - code)


# ---------------------------------------------------------------------------------------------
# compare


def load_report(path):
    if not os.path.isfile(path):
        die(f"report missing: {path}")
    try:
        with open(path) as f:
            r = json.load(f)
        rows = r["urls"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        die(f"report unreadable: {path}: {e}")
    return r, rows


def load_times(path):
    """Median run of the sidecar's "wall user sys" lines, and the number of runs."""
    runs = []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 3:
                    try:
                        runs.append(tuple(float(x) for x in p[:3]))
                    except ValueError:
                        pass  # GNU time's "Command exited with non-zero status" line
    except OSError:
        return None, 0
    if not runs:
        return None, 0
    runs.sort()
    return runs[(len(runs) - 1) // 2], len(runs)


def url_path(u):
    return urllib.parse.urlsplit(u).path


def pairs_of(rows, keep=lambda u: True):
    groups = {}
    for r in rows:
        c = r.get("cluster_id") or ""
        if c and keep(r["url"]):
            groups.setdefault(c, set()).add(r["url"])
    out = set()
    for urls in groups.values():
        s = sorted(urls)
        for i in range(len(s)):
            for j in range(i + 1, len(s)):
                out.add((s[i], s[j]))
    return out


def agreement(a, b):
    both = a & b
    return {
        "pairs_always": len(a),
        "pairs_auto": len(b),
        "always_pairs_kept_by_auto": len(both) / len(a) if a else 1.0,
        "auto_only_share": len(b - a) / len(b) if b else 0.0,
        "missing_in_auto": sorted(a - b),
        "only_in_auto": sorted(b - a),
    }


def mode_stats(rows, times, nruns):
    n = len(rows)
    rendered = sum(1 for r in rows if r.get("rendered", True) is not False)
    s = {
        "pages": n,
        "rendered": rendered,
        "rendered_share": rendered / n if n else 0.0,
        "rendered_field_present": all("rendered" in r for r in rows),
        "errors": sum(1 for r in rows if r.get("error")),
        "clusters": len({r.get("cluster_id") for r in rows if r.get("cluster_id")}),
        "runs": nruns,
    }
    if times:
        wall, user, sys_ = times
        s.update(
            wall_s=wall,
            pages_per_s=n / wall if wall else None,
            cpu_s=user + sys_,
            cpu_s_per_page=(user + sys_) / n if n else None,
        )
    return s


def fmt(v, spec):
    if v is None:
        return "n/a"
    return format(v, spec)


def app_key(u):
    """The content an app-shell page shows: its file name less .html and a trailing letter
    (product-3b shows what product-3 shows)."""
    name = url_path(u).rsplit("/", 1)[-1]
    name = re.sub(r"\.html$", "", name)
    return re.sub(r"(\d+)[a-z]$", r"\1", name)


def cmd_compare(argv):
    pos, floor_path, prefix, json_out = [], None, "/app/", None
    it = iter(argv)
    for a in it:
        if a == "--floor":
            floor_path = next(it, None)
        elif a == "--app-prefix":
            prefix = next(it, "/app/")
        elif a == "--json":
            json_out = next(it, None)
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            pos.append(a)
    if len(pos) != 2:
        die("usage: bench-render.py ALWAYS.json AUTO.json [--floor FLOOR.json] [--json OUT]")
    (_, always), (_, auto) = load_report(pos[0]), load_report(pos[1])
    ta, na = load_times(pos[0] + ".time")
    tb, nb = load_times(pos[1] + ".time")
    sa, sb = mode_stats(always, ta, na), mode_stats(auto, tb, nb)
    is_app = lambda u: url_path(u).startswith(prefix)  # noqa: E731

    floor = None
    if floor_path:
        try:
            with open(floor_path) as f:
                floor = json.load(f)
            ft, _ = load_times(floor_path + ".time")
            if ft:
                floor["cpu_s"] = ft[1] + ft[2]
                floor["total_wall_s"] = ft[0]
                if floor.get("pages"):
                    floor["cpu_s_per_page"] = floor["cpu_s"] / floor["pages"]
        except (OSError, ValueError) as e:
            print(f"bench-render.py: floor unreadable: {floor_path}: {e}", file=sys.stderr)

    fl = floor or {}
    floor_head = "floor"
    if floor:
        floor_head = f"floor ({fl.get('method', '?')}, {fl.get('tabs', '?')} tab(s))"
    cols = ["", "always", "auto", floor_head]
    w0, w = 34, 18
    lines = [f"{cols[0]:<{w0}}{cols[1]:>{w}}{cols[2]:>{w}}   {cols[3] if floor else ''}"]

    def row(label, a, b, f=""):
        lines.append(f"{label:<{w0}}{a:>{w}}{b:>{w}}   {f if floor else ''}".rstrip())

    row("pages", str(sa["pages"]), str(sb["pages"]), str(fl.get("pages", "")))
    row("runs (median shown)", str(sa["runs"]), str(sb["runs"]), "1")
    row("wall seconds", fmt(sa.get("wall_s"), ".1f"), fmt(sb.get("wall_s"), ".1f"),
        fmt(fl.get("loop_seconds"), ".1f") + (f" (page loop; {fl['total_wall_s']:.1f} with start)"
                                              if fl.get("launch_seconds") and fl.get("total_wall_s") else ""))
    row("pages/s", fmt(sa.get("pages_per_s"), ".2f"), fmt(sb.get("pages_per_s"), ".2f"),
        fmt(fl.get("pages_per_s"), ".2f"))
    row("ms per page (wall)",
        fmt(1000 / sa["pages_per_s"] if sa.get("pages_per_s") else None, ".0f"),
        fmt(1000 / sb["pages_per_s"] if sb.get("pages_per_s") else None, ".0f"),
        fmt(fl.get("ms_per_page"), ".0f") + (f" (one page alone: median {fl['page_ms_median']:.0f})"
                                            if fl.get("page_ms_median") else ""))
    row("CPU seconds per page", fmt(sa.get("cpu_s_per_page"), ".3f"),
        fmt(sb.get("cpu_s_per_page"), ".3f"),
        f"{fmt(fl.get('cpu_s_per_page'), '.3f')} (browser start included)")

    def rend(s):
        note = "" if s["rendered_field_present"] else "*"
        return f"{s['rendered']} ({100 * s['rendered_share']:.1f}%){note}"

    row("pages rendered", rend(sa), rend(sb), str(fl.get("pages", "")))
    row("pages with an error", str(sa["errors"]), str(sb["errors"]), str(fl.get("errors", "")))
    row("clusters", str(sa["clusters"]), str(sb["clusters"]))
    speed = None
    if sa.get("wall_s") and sb.get("wall_s"):
        speed = sa["wall_s"] / sb["wall_s"]
    row("speed-up (always wall / auto wall)", "", fmt(speed, ".2f") + ("x" if speed else ""))
    if floor and fl.get("method") == "playwright-core" and fl.get("pages_per_s") and sa.get("pages_per_s"):
        row("share of the floor's pages/s", f"{100 * sa['pages_per_s'] / fl['pages_per_s']:.0f}%",
            f"{100 * sb['pages_per_s'] / fl['pages_per_s']:.0f}%" if sb.get("pages_per_s") else "n/a")
    if not (sa["rendered_field_present"] and sb["rendered_field_present"]):
        lines.append("  * some rows have no `rendered` field: counted as rendered")
    if floor and fl.get("note"):
        lines.append(f"  floor: {fl['note']}")

    ag_all = agreement(pairs_of(always), pairs_of(auto))
    ag_app = agreement(pairs_of(always, is_app), pairs_of(auto, is_app))
    for title, ag in (("all pages", ag_all), (f"app-shell pages ({prefix})", ag_app)):
        lines.append("")
        lines.append(f"cluster agreement, {title}: {ag['pairs_always']} pairs together in "
                     f"always, {ag['pairs_auto']} in auto")
        lines.append(f"  pairs together in always also together in auto: "
                     f"{ag['always_pairs_kept_by_auto']:.3f}")
        lines.append(f"  pairs only auto puts together (share of auto's pairs): "
                     f"{ag['auto_only_share']:.3f}")
        for label, key in (("missing in auto", "missing_in_auto"), ("only in auto", "only_in_auto")):
            for u, v in ag[key][:5]:
                lines.append(f"    {label}: {url_path(u)}  {url_path(v)}")
            if len(ag[key]) > 5:
                lines.append(f"    ... {len(ag[key]) - 5} more {label}")

    # the app-shell pages one by one, and against what they show
    app_a = {r["url"]: r for r in always if is_app(r["url"])}
    app_b = {r["url"]: r for r in auto if is_app(r["url"])}
    app_urls = sorted(set(app_a) | set(app_b), key=url_path)
    truth = set()
    for i, u in enumerate(app_urls):
        for v in app_urls[i + 1:]:
            if app_key(u) == app_key(v):
                truth.add(tuple(sorted((u, v))))
    app_rows = []
    if app_urls:
        lines.append("")
        same = ", ".join(f"{url_path(u)} = {url_path(v)}" for u, v in sorted(truth)) or "none"
        lines.append(f"app-shell pages (showing the same content: {same}):")
        lines.append(f"  {'path':<28}{'rendered in auto':>18}  {'cluster (always)':<22}{'cluster (auto)':<22}")
        for u in app_urls:
            ra, rb = app_a.get(u, {}), app_b.get(u, {})
            rend_b = rb.get("rendered", True) if rb else None
            app_rows.append({"url": u, "rendered_in_auto": rend_b,
                             "cluster_always": ra.get("cluster_id", ""),
                             "cluster_auto": rb.get("cluster_id", "")})
            short = lambda c: (c[:20] + "…") if len(c) > 21 else (c or "-")  # noqa: E731
            rtxt = {True: "yes", False: "NO", None: "absent"}[rend_b]
            err = f"  error: {rb.get('error')}" if rb.get("error") else ""
            lines.append(f"  {url_path(u):<28}{rtxt:>18}  {short(ra.get('cluster_id', '')):<22}"
                         f"{short(rb.get('cluster_id', '')):<22}{err}")
        for name, rows in (("always", always), ("auto", auto)):
            got = pairs_of(rows, is_app)
            ok = got == truth
            lines.append(f"  {name}: app-shell pairs {'as expected' if ok else 'NOT as expected'}"
                         f" ({len(got & truth)}/{len(truth)} expected pairs found, "
                         f"{len(got - truth)} wrong pairs)")
    print("\n".join(lines))

    if json_out:
        def strip(ag):
            return {k: v for k, v in ag.items() if not isinstance(v, list)}
        with open(json_out, "w") as f:
            json.dump({"always": sa, "auto": sb, "floor": floor, "speed_up": speed,
                       "agreement": strip(ag_all), "agreement_app": strip(ag_app),
                       "app_pages": app_rows}, f, indent=1)
    return 0


def main(argv):
    if argv and argv[0] == "--pick":
        return cmd_pick(argv[1:])
    if argv and argv[0] == "--warm":
        return cmd_warm(argv[1:])
    if argv and argv[0] == "--timeit":
        return cmd_timeit(argv[1:])
    return cmd_compare(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
