#!/usr/bin/env python3
"""Rebuild the *unlabelled* candidate sample behind labels.tsv (TRAINING set for a learned scorer).

    tests/data/context-train/build.py WORKDIR            # download, unpack, extract, sample
    tests/data/context-train/build.py WORKDIR --offline  # reuse WORKDIR/src
    tests/data/context-train/build.py WORKDIR --offline --counts  # population per (package, context)

Prints `context<TAB>candidate<TAB>source` for the sampled rows, in labels.tsv order.
Labels were then assigned by hand (reading each string's surrounding source); this
script never assigns labels and never runs the crawlsieve tool.

Steps: `npm pack NAME@VERSION` / `apt-get download PKG=VERSION` into WORKDIR/dl, unpack to
WORKDIR/src/NAME-VERSION/ (npm tarballs keep their `package/` prefix; a scoped name @a/b is
packed by npm as a-b-VERSION.tgz; debs via dpkg-deb -x), run scripts/extract-candidates.py's
candidates() over every non-binary, non-symlink file (images, fonts, .gz, .map, .md5, .zip,
.mo, .pdf, .wasm, .ktx2, .glb, .b3dm, .pbf skipped), keep the first (context, candidate) pair
seen walking packages and files in sorted order, then per (package, context) take QUOTA rows
at sorted positions floor(i*n/q), i = 0..q-1 (all rows when n <= q; css capped per package).
"""
import collections, importlib.util, pathlib, re, subprocess, sys

NPM = ["cesium@1.113.0", "chart.js@4.4.1", "grapesjs@0.21.8", "katex@0.16.9", "luxon@3.4.4",
       "markdown-it@14.0.0", "prismjs@1.29.0", "quill@2.0.2", "@shoelace-style/shoelace@2.12.0",
       "tinymce@6.8.2", "@webcomponents/webcomponentsjs@2.8.0"]
DEB = ["libcommons-lang3-java-doc=3.12.0-2+deb12u1", "libharfbuzz-doc=6.0.0+dfsg-3",
       "libsoup-3.0-doc=3.2.3-0+deb12u2", "libxerces-c-doc=3.2.4+debian-1",
       "python-h5py-doc=3.7.0-8", "r-doc-html=4.2.2.20221110-2"]
QUOTA = {  # fixed before labelling; "*" is the default for packages not named
 "js": {"cesium":95,"shoelace-style-shoelace":95,"quill":60,"katex":50,"libxerces-c-doc":45,
        "grapesjs":50,"tinymce":50,"markdown-it":35,"luxon":30,"webcomponents-webcomponentsjs":25,
        "python-h5py-doc":20,"prismjs":20,"libcommons-lang3-java-doc":17,"chart.js":9,
        "libsoup":4},
 "text": {"cesium":15,"chart.js":10,"grapesjs":10,"katex":10,"libcommons-lang3-java-doc":5,
          "libharfbuzz-doc":8,"libsoup":5,"libxerces-c-doc":4,"luxon":8,"markdown-it":10,
          "prismjs":12,"python-h5py-doc":12,"quill":8,"r-doc-html":6,"shoelace-style-shoelace":12,
          "tinymce":8,"webcomponents-webcomponentsjs":8},
 "html_text": {"libcommons-lang3-java-doc":25,"libharfbuzz-doc":7,"libsoup":7,
               "libxerces-c-doc":25,"python-h5py-doc":14,"r-doc-html":42},
 "html_attr": {"katex":3,"libcommons-lang3-java-doc":22,"libharfbuzz-doc":15,"libsoup":18,
               "libxerces-c-doc":22,"python-h5py-doc":10,"r-doc-html":10},
 "css": {"cesium":9,"katex":9,"tinymce":9,"libxerces-c-doc":8,"*":10**6},
}
SKIP = {".png",".jpg",".jpeg",".gif",".gz",".map",".svg",".ico",".woff",".woff2",".ttf",
        ".eot",".md5",".devhelp2",".zip",".mo",".pdf",".wasm",".ktx2",".glb",".b3dm",".pbf",
        ".otf",".webp",".dds",".crn",".bin",".terrain"}
REPO = pathlib.Path(__file__).resolve().parents[3]


def npm_dir(spec):
    name, ver = spec.rsplit("@", 1)
    return f"{name.lstrip('@').replace('/', '-')}-{ver}"


def fetch(work):
    dl, src = work / "dl", work / "src"
    dl.mkdir(parents=True, exist_ok=True); src.mkdir(exist_ok=True)
    for spec in NPM:
        out = subprocess.run(["npm", "pack", spec], cwd=dl, check=True, capture_output=True, text=True)
        tgz = dl / out.stdout.strip().splitlines()[-1]
        d = src / tgz.name[:-4]; d.mkdir(exist_ok=True)
        subprocess.run(["tar", "xzf", str(tgz), "-C", str(d)], check=True)
    subprocess.run(["apt-get", "download", *DEB], cwd=dl, check=True, stdout=sys.stderr)
    for deb in sorted(dl.glob("*.deb")):
        f = lambda k: subprocess.run(["dpkg-deb", "-f", str(deb), k], capture_output=True, text=True).stdout.strip()
        d = src / f"{f('Package')}-{f('Version')}"; d.mkdir(exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(d)], check=True)


def short(pkg):
    return re.match(r"(.+?)-\d", pkg).group(1)


def population(work):
    spec = importlib.util.spec_from_file_location("ec", REPO / "scripts" / "extract-candidates.py")
    ec = importlib.util.module_from_spec(spec); spec.loader.exec_module(ec)
    wanted = {npm_dir(s) for s in NPM} | {s.replace("=", "-") for s in DEB}
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
    return groups


def main():
    work = pathlib.Path(sys.argv[1])
    if "--offline" not in sys.argv:
        fetch(work)
    groups = population(work)
    if "--counts" in sys.argv:
        for (pkg, ctx), items in sorted(groups.items()):
            print(f"{pkg}\t{ctx}\t{len(items)}")
        return
    for (pkg, ctx), items in sorted(groups.items()):
        q = QUOTA[ctx].get(short(pkg), QUOTA[ctx].get("*", 0))
        items.sort(); n = len(items); q = min(q, n)
        for i in sorted({(i * n) // q for i in range(q)}) if q else []:
            print(f"{ctx}\t{items[i][0]}\t{items[i][1]}")


if __name__ == "__main__":
    main()
