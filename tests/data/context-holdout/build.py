#!/usr/bin/env python3
"""Rebuild the *unlabelled* candidate sample behind labels.tsv (hold-out set, measurement only).

    tests/data/context-holdout/build.py WORKDIR            # download, unpack, extract, sample
    tests/data/context-holdout/build.py WORKDIR --offline  # reuse WORKDIR/src

Prints `context<TAB>candidate<TAB>source` for the sampled rows, in labels.tsv order.
Labels were then assigned by hand (reading each string's surrounding source); this
script never assigns labels and never runs the crawlsieve tool.

Steps: `npm pack NAME@VERSION` / `apt-get download PKG=VERSION` into WORKDIR/dl, unpack to
WORKDIR/src/NAME-VERSION/ (npm tarballs keep their `package/` prefix, debs via dpkg-deb -x),
run scripts/extract-candidates.py's candidates() over every non-binary file (images, fonts,
.gz, .map, .md5, .devhelp2 skipped), keep the first (context, candidate) pair seen walking
packages and files in sorted order, then per (package, context) take QUOTA rows at sorted
positions floor(i*n/q), i = 0..q-1 (all rows when n <= q; all css rows).
"""
import collections, importlib.util, pathlib, re, subprocess, sys

NPM = ["alpinejs@3.13.5", "cytoscape@3.28.1", "htmx.org@1.9.10", "localforage@1.10.0",
       "photoswipe@4.1.3", "react-dom@18.2.0", "video.js@8.10.0"]
DEB = ["gettext-doc=0.21-12", "junit4-doc=4.13.2-3", "libglib2.0-doc=2.74.6-2+deb12u9",
       "libsdl2-doc=2.26.5+dfsg-1", "python-click-doc=8.1.3-2"]
QUOTA = {
 "js": {"alpinejs":25,"cytoscape":30,"htmx.org":9,"junit4-doc":20,"libsdl2-doc":25,
        "localforage":15,"photoswipe":15,"react-dom":20,"video.js":25},
 "html_attr": {"gettext-doc":35,"junit4-doc":40,"libglib2.0-doc":40,"libsdl2-doc":32,
               "photoswipe":15,"python-click-doc":30,"video.js":10},
 "html_text": {"gettext-doc":18,"junit4-doc":8,"libglib2.0-doc":10,"libsdl2-doc":15,
               "photoswipe":1,"python-click-doc":5},
 "css": {"*": 10**6},
 "text": {"alpinejs":2,"cytoscape":15,"gettext-doc":10,"htmx.org":15,"junit4-doc":8,
          "libglib2.0-doc":6,"libsdl2-doc":3,"localforage":15,"photoswipe":15,
          "python-click-doc":10,"react-dom":6,"video.js":25},
}
SKIP = {".png",".jpg",".jpeg",".gif",".gz",".map",".svg",".ico",".woff",".woff2",".ttf",
        ".eot",".md5",".devhelp2",".zip",".mo",".pdf"}
REPO = pathlib.Path(__file__).resolve().parents[3]


def fetch(work):
    dl, src = work / "dl", work / "src"
    dl.mkdir(parents=True, exist_ok=True); src.mkdir(exist_ok=True)
    for spec in NPM:
        out = subprocess.run(["npm", "pack", spec], cwd=dl, check=True, capture_output=True, text=True)
        tgz = dl / out.stdout.strip().splitlines()[-1]
        d = src / tgz.name[:-4]; d.mkdir(exist_ok=True)
        subprocess.run(["tar", "xzf", str(tgz), "-C", str(d)], check=True)
    subprocess.run(["apt-get", "download", *DEB], cwd=dl, check=True)
    for deb in sorted(dl.glob("*.deb")):
        f = lambda k: subprocess.run(["dpkg-deb", "-f", str(deb), k], capture_output=True, text=True).stdout.strip()
        d = src / f"{f('Package')}-{f('Version')}"; d.mkdir(exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(d)], check=True)


def main():
    work = pathlib.Path(sys.argv[1])
    if "--offline" not in sys.argv:
        fetch(work)
    spec = importlib.util.spec_from_file_location("ec", REPO / "scripts" / "extract-candidates.py")
    ec = importlib.util.module_from_spec(spec); spec.loader.exec_module(ec)
    wanted = {s.replace("@", "-") for s in NPM} | {s.replace("=", "-") for s in DEB}
    src = work / "src"; seen = set(); groups = collections.defaultdict(list)
    for pkg in sorted(p.name for p in src.iterdir() if p.name in wanted):
        for f in sorted((src / pkg).rglob("*")):
            if not f.is_file() or f.is_symlink() or f.suffix.lower() in SKIP:
                continue
            if b"\0" in f.read_bytes()[:4096]:
                continue
            name = f"{pkg}/{f.relative_to(src / pkg)}"
            for ctx, cand in ec.candidates(f):
                cand = cand.replace("\t", " ").replace("\n", " ")
                if (ctx, cand) not in seen:
                    seen.add((ctx, cand)); groups[(pkg, ctx)].append((cand, name))
    for (pkg, ctx), items in sorted(groups.items()):
        short = re.match(r"(.+?)-\d", pkg).group(1)
        q = QUOTA[ctx].get("*", QUOTA[ctx].get(short, 0))
        items.sort(); n = len(items); q = min(q, n)
        for i in sorted({(i * n) // q for i in range(q)}) if q else []:
            print(f"{ctx}\t{items[i][0]}\t{items[i][1]}")


if __name__ == "__main__":
    main()
