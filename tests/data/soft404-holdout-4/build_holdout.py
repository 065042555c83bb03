#!/usr/bin/env python3
"""Rebuild the fourth soft-404 hold-out set from Debian 12 (bookworm) documentation packages.

Run:  python3 tests/data/soft404-holdout-4/build_holdout.py
Needs: apt-get, dpkg and an apt package list (run `apt-get update` once). Root is not needed.

For each package in PACKAGES the script runs `apt-get download <pkg>=<version>` (falling back
to the newest available version, with a warning, if that exact version is gone from the mirror)
and unpacks it with `dpkg -x` into a temporary directory. It reads only those unpacked files and
writes only under this directory. Set HOLDOUT4_DEB_DIR to a directory to keep and reuse the
downloaded .deb files between runs.

Labels were written by hand (see the site functions below), never from a detector's output.
"""
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

OUT = os.path.dirname(os.path.abspath(__file__))

# package -> version the set was built from (dpkg-deb -f <deb> Version)
PACKAGES = {
    "python-structlog-doc": "22.3.0-2",
    "python-typer-doc": "0.7.0-1",
    "libgcrypt20-doc": "1.10.1-3+deb12u1",
    "libjlha-java-doc-ja": "0.0.20050504-10.1",
    "nut-doc": "2.8.0-7",
    "libgeocode-glib-doc": "3.26.3-6",
    "doublecmd-help-ru": "1.0.10-1",
    "libopencc-doc": "1.1.6+ds1-1",
}

ROOT = None  # set in main(): directory holding one unpacked tree per package
MAX_PAGE = 300 * 1024
MAX_TOTAL = 15 * 1024 * 1024


# ---------------------------------------------------------------- fetching
def fetch_packages(root):
    keep = os.environ.get("HOLDOUT4_DEB_DIR")
    debdir = keep or os.path.join(root, "deb")
    os.makedirs(debdir, exist_ok=True)
    used = {}
    for pkg, ver in PACKAGES.items():
        debs = [d for d in glob.glob(os.path.join(debdir, pkg + "_*.deb"))
                if deb_field(d, "Package") == pkg]
        exact = [d for d in debs if deb_field(d, "Version") == ver]
        if exact:
            deb = exact[0]
        else:
            r = subprocess.run(["apt-get", "download", "%s=%s" % (pkg, ver)], cwd=debdir)
            if r.returncode != 0:
                print("warning: %s=%s not available, downloading the current version" % (pkg, ver),
                      file=sys.stderr)
                subprocess.run(["apt-get", "download", pkg], cwd=debdir, check=True)
            debs = [d for d in glob.glob(os.path.join(debdir, pkg + "_*.deb"))
                    if deb_field(d, "Package") == pkg]
            debs.sort(key=os.path.getmtime)
            deb = ([d for d in debs if deb_field(d, "Version") == ver] or debs)[-1]
        got = deb_field(deb, "Version")
        if got != ver:
            print("warning: %s: built from %s, the labels were written for %s" % (pkg, got, ver),
                  file=sys.stderr)
        subprocess.run(["dpkg", "-x", deb, os.path.join(root, pkg)], check=True)
        used[pkg] = got
    return used


def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], capture_output=True, text=True,
                          check=True).stdout.strip()


# ---------------------------------------------------------------- helpers
def rd(pkg, path):
    # latin-1 round-trips any byte sequence, so UTF-8, Shift_JIS and ASCII pages all survive untouched
    full = os.path.join(ROOT, pkg, path)
    if full.endswith(".gz"):
        with gzip.open(full, "rb") as f:
            return f.read().decode("latin-1")
    with open(full, "rb") as f:
        return f.read().decode("latin-1")


def u8(s):
    """Text typed here (UTF-8) re-expressed in the latin-1 byte-string convention above."""
    return s.encode("utf-8").decode("latin-1")


# absolute http(s), protocol-relative and file:// URLs
EXT = r"""\s*=\s*["']?(?:(?:https?:)?//|file:)"""


def strip_external(s):
    s = re.sub(r"<script\b[^>]*\bsrc" + EXT + r"[^>]*>\s*</script\s*>", "", s, flags=re.I)
    s = re.sub(r"<link\b[^>]*\bhref" + EXT + r"[^>]*>", "", s, flags=re.I)
    s = re.sub(r"<img\b[^>]*\bsrc" + EXT + r"[^>]*>", "", s, flags=re.I)
    return s


def count_external(s):
    return len(re.findall(r"<(?:script|link|img)\b[^>]*\b(?:src|href)" + EXT, s, flags=re.I))


def absolutize(s):
    """Make relative href/src/action URLs root-relative, as a catch-all error page must
    (it is served at any depth). Fragments, mailto:, javascript: and absolute URLs are kept."""
    return re.sub(r"""\b(href|src|action)=(["'])(?!https?:|file:|data:|mailto:|javascript:|#|/|["'])(?:\./|(?:\.\./)+)?""",
                  r"\1=\2/", s)


def put(site, rel, text):
    path = os.path.join(OUT, site, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text.encode("latin-1"))


def page_file(url):
    if url == "/":
        return "pages/index.html"
    return "pages" + url


def sub1(pattern, repl, s, flags=re.S):
    out, n = re.subn(pattern, repl, s, count=1, flags=flags)
    assert n == 1, "pattern not found: " + pattern
    return out


def load_pages(pkg, base, real):
    """Copy each real page; remember how many external requests were removed from it."""
    pages, removed = {}, {}
    for u, f, _ in real:
        raw = rd(pkg, os.path.normpath(base + f))
        pages[u] = strip_external(raw)
        n = count_external(raw)
        if n:
            removed[u] = n
    return pages, removed


# ---------------------------------------------------------------- site 1: structlog, Sphinx + Furo (styled 200)
SL_NOTFOUND = u8("""
          <section id="page-not-found">
<h1>Page not found<a class="headerlink" href="#page-not-found" title="Permalink to this heading">#</a></h1>
<p>Sorry, there is no page at this address in the <em>structlog</em> 22.3.0 documentation.</p>
<p>Pages are sometimes renamed or merged when the documentation is reorganized, so an old bookmark
or a link from another site can point to a page that no longer exists under that name.</p>
<p>You can start again from the <a class="reference internal" href="index.html">front page</a>,
look a name up in the <a class="reference internal" href="genindex.html">index</a>, or use the search
box in the sidebar.</p>
</section>

""")


def site_structlog():
    pkg, base = "python-structlog-doc", "usr/share/doc/python-structlog-doc/html/"
    real = [
        ("/", "index.html", "front page: introduction and the full table of contents (index page)"),
        ("/genindex.html", "genindex.html", "Sphinx general index (index page)"),
        ("/search.html", "search.html", "Sphinx search page: a search form and an empty results area"),
        ("/changelog.html", "changelog.html.gz",
         "changelog (the package ships it gzip-compressed; served decompressed, text unchanged)"),
        ("/_sources/changelog.md.txt", "_sources/changelog.md.txt",
         "Markdown source of the changelog page: a single include directive, 33 bytes of plain text"),
        ("/_modules/index.html", "_modules/index.html",
         "'Overview: module code': the index page of the _modules/ directory, a short list of links"),
        ("/_modules/structlog/exceptions.html", "_modules/structlog/exceptions.html",
         "highlighted source of structlog.exceptions: one exception class, 'technically not an error'"),
        ("/py-modindex.html", "py-modindex.html", "Python module index: a short list"),
        ("/license.html", "license.html", "license and credits, short"),
        ("/logging-best-practices.html", "logging-best-practices.html", "prose page"),
        ("/testing.html", "testing.html", "prose page about capturing log output in tests"),
        ("/typing.html", "typing.html", "short prose page"),
    ]
    pages, removed = load_pages(pkg, base, real)
    # a hand-written "page not found" in the Furo template, built from license.html
    p = rd(pkg, base + "license.html")
    p = sub1(r"<title>License and Hall of Fame - ", "<title>Page not found - ", p)
    p = sub1(r'<link rel="next"[^>]*/><link rel="prev"[^>]*/>', "", p)
    p = sub1(r'<ul class="current">\n<li class="toctree-l1 current current-page"><a class="current reference internal" href="#">',
             '<ul>\n<li class="toctree-l1"><a class="reference internal" href="license.html">', p)
    p = sub1(r'(<article role="main">).*?(</article>)', lambda m: m.group(1) + SL_NOTFOUND + "        " + m.group(2), p)
    p = sub1(r'(<div class="related-pages">).*?(</div>\s*<div class="bottom-of-page">)',
             lambda m: m.group(1) + "\n        " + m.group(2), p)
    p = sub1(r'(<div class="toc-tree">).*?(</div>)',
             lambda m: m.group(1) + '\n            <ul>\n<li><a class="reference internal" href="#">Page not found</a></li>\n</ul>\n\n          ' + m.group(2), p)
    p = p.replace('data-url_root="./"', 'data-url_root="/"')
    nf = absolutize(strip_external(p))
    fake = [
        ("/api.html", "API reference, linked from every page's sidebar; over 300 KB, so not mirrored"),
        ("/en/stable/", "Read the Docs URL scheme: version directory ending in '/'"),
        ("/en/latest/index.html", "Read the Docs URL scheme: index.html under a version directory"),
        ("/getting-started", "extension-less (dirhtml-style) name of a page that was not mirrored"),
        ("/_modules/structlog/exception.html", "typo of a real page (exceptions.html)"),
        ("/search?q=ProcessorFormatter&check_keywords=yes&area=default",
         "Sphinx search query sent to a path without extension"),
    ]
    return dict(name="structlog-sphinx", kind={"kind": "styled_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, removed=removed, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 2: Typer, MkDocs (search 200)
TY_RESULTS = u8("""<div id="mkdocs-search-results" class="search-results" data-no-results-text="No results found">
    <p>No results found for <strong>{{PATH}}</strong>.</p>
    <p>Check the spelling, try fewer or shorter words, or browse the tutorial from the menu on the left.</p>
  </div>""")


def site_typer():
    pkg, base = "python-typer-doc", "usr/share/doc/python-typer-doc/html/"
    real = [
        ("/", "index.html", "home page: introduction, feature list and examples"),
        ("/search.html", "search.html",
         "MkDocs search page: 'Search Results', a form and a results area that says 'Searching...'"),
        ("/release-notes/index.html", "release-notes/index.html",
         "release notes (changelog); the directory index file named explicitly"),
        ("/tutorial/index.html", "tutorial/index.html", "tutorial introduction; directory index file"),
        ("/tutorial/arguments/index.html", "tutorial/arguments/index.html",
         "section intro of two sentences and no heading: near-empty"),
        ("/tutorial/options/index.html", "tutorial/options/index.html",
         "section intro of two sentences and no heading: near-empty"),
        ("/tutorial/multiple-values/index.html", "tutorial/multiple-values/index.html",
         "section intro of two sentences and no heading: near-empty"),
        ("/tutorial/exceptions/index.html", "tutorial/exceptions/index.html",
         "'Exceptions and Errors': tracebacks and error output"),
        ("/tutorial/terminating/index.html", "tutorial/terminating/index.html",
         "exiting with an error code, 'Aborted!'; no <h1> heading"),
        ("/tutorial/parameter-types/path/index.html", "tutorial/parameter-types/path/index.html",
         "Path parameters, with example output saying a file does not exist"),
        ("/features/index.html", "features/index.html", "feature list"),
        ("/typer-cli/index.html", "typer-cli/index.html", "the typer command-line tool"),
    ]
    pages, removed = load_pages(pkg, base, real)
    # the search page, as a server-side search would print it for a query with no results
    p = rd(pkg, base + "search.html")
    p = sub1(r'<input name="q" id="mkdocs-search-query" type="text"',
             '<input name="q" id="mkdocs-search-query" type="text" value="{{PATH}}"', p)
    p = sub1(r'<div id="mkdocs-search-results"[^>]*>\s*Searching\.\.\.\s*</div>', lambda m: TY_RESULTS, p)
    p = sub1(r'\s*<script src="\./search/main\.js" defer></script>', "", p)
    p = p.replace("var base_url = '.';", "var base_url = '/';")
    p = p.replace('href="./."', 'href="/"')
    nf = absolutize(strip_external(p))
    fake = [
        ("/tutorial/commands/index.html", "'Commands Intro', linked from every page's menu; not mirrored"),
        ("/tutorial/parameter-types/list/", "plausible parameter-type directory ending in '/'; no such page"),
        ("/tutorial/options/prompt", "menu link without its trailing '/'; page not mirrored"),
        ("/search/?q=callback", "search directory with a query string"),
        ("/release-notes.md", "Markdown source name of a real page"),
        ("/en/latest/tutorial/testing/", "Read the Docs style prefix, directory URL ending in '/'"),
    ]
    return dict(name="typer-mkdocs", kind={"kind": "search_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, removed=removed, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 3: Libgcrypt, Texinfo/makeinfo (echo 200)
GC_NOTFOUND = """<div class="chapter" id="Node-not-found">
<div class="header">
<p>
Up: <a href="index.html" accesskey="u" rel="up">The Libgcrypt Library</a> &nbsp; [<a href="index.html#SEC_Contents" title="Table of contents" rel="contents">Contents</a>][<a href="Concept-Index.html" title="Index" rel="index">Index</a>]</p>
</div>
<hr>
<span id="Node-not-found-1"></span><h2 class="chapter">Node not found</h2>

<p>This manual has no node at <code>{{PATH}}</code>.
</p>
<p>The file name of a node is made from its title: spaces become hyphens and other special
characters are written as <code>_00<var>xx</var></code>, so the node &lsquo;Working with
S-expressions&rsquo; is in <samp>Working-with-S_002dexpressions.html</samp>.  A link typed by hand
from a node title can easily miss.
</p>
<p>Look the topic up in the <a href="Concept-Index.html">Concept Index</a> or in the
<a href="Function-and-Data-Index.html">Function and Data Index</a>, or start again from the
<a href="index.html">Top</a> node.
</p>
</div>
"""


def site_gcrypt():
    pkg, base = "libgcrypt20-doc", "usr/share/doc/libgcrypt20-doc/html/"
    real = [
        ("/", "index.html", "Top node: short introduction and the full table of contents (index page)"),
        ("/Concept-Index.html", "Concept-Index.html", "concept index (index page)"),
        ("/fig_003afips_002dfsm.html", "fig_003afips_002dfsm.html",
         "makeinfo anchor stub: meta refresh and only 'The node you are looking for is at Figure B.1.'"),
        ("/gcry_005fmpi_005fec_005fnew.html", "gcry_005fmpi_005fec_005fnew.html",
         "makeinfo anchor stub: 'The node you are looking for is at gcry_mpi_ec_new.'"),
        ("/Tools.html", "Tools.html", "chapter page with a heading and a single menu entry: near-empty"),
        ("/Error-Handling.html", "Error-Handling.html", "how errors are reported"),
        ("/Error-Codes.html", "Error-Codes.html", "list of error codes: GPG_ERR_EOF, GPG_ERR_GENERAL ..."),
        ("/Error-Strings.html", "Error-Strings.html", "turning error values into messages, short"),
        ("/Working-with-hash-algorithms.html", "Working-with-hash-algorithms.html", "API reference section"),
        ("/FIPS-Mode.html", "FIPS-Mode.html", "appendix with a menu"),
        ("/Library-Copying.html", "Library-Copying.html", "licence text, long"),
        ("/Function-and-Data-Index.html", "Function-and-Data-Index.html", "function index, long list"),
    ]
    pages, removed = load_pages(pkg, base, real)
    p = rd(pkg, base + "Tools.html")
    p = sub1(r"<title>Tools \(", "<title>Node not found (", p)
    p = sub1(r'<link href="Configuration.html" rel="next"[^>]*>\n<link href="Utilities.html" rel="prev"[^>]*>\n', "", p)
    p = sub1(r'<div class="chapter" id="Tools">.*?</div>\n(?=\s*</body>)', lambda m: GC_NOTFOUND, p)
    nf = absolutize(strip_external(p))
    fake = [
        ("/Working-with-cipher-handles.html", "section linked from the real pages' menus; not mirrored"),
        ("/manual/", "directory URL ending in '/'"),
        ("/documentation/manuals/gcrypt/index.html", "gnupg.org manual URL scheme"),
        ("/Error_002dCodes.html", "wrongly encoded variant of a real node file name"),
        ("/Error-Codes", "extension-less variant of a real page"),
        ("/gcrypt.html", "single-file (--no-split) manual name; not in the package"),
    ]
    return dict(name="gcrypt-texinfo", kind={"kind": "echo_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, removed=removed, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 4: jlha, javadoc 11 layout, Shift_JIS (dynamic 200, short)
JL_NOTFOUND = u8("""<!DOCTYPE html>
<html lang="ja">
<head>
<meta charset="UTF-8">
<title>ページが見つかりません</title>
</head>
<body>
<h1>ページが見つかりません</h1>
<p>指定されたページは見つかりませんでした。URL をご確認ください。</p>
<p><small>リクエスト ID: {{REQUEST_ID}} / {{TIME}}</small></p>
</body>
</html>
""")


def site_jlha():
    pkg, base = "libjlha-java-doc-ja", "usr/share/doc/libjlha-java-doc-ja/api/"
    jp = "jp/gr/java_conf/dangan/"
    real = [
        ("/", "index.html", "overview: package list (declared Shift_JIS, like every page here)"),
        ("/allclasses.html", "allclasses.html", "plain list of all classes, without navigation bars"),
        ("/index-files/index-10.html", "index-files/index-10.html", "index of names starting with J: only the four package names"),
        ("/" + jp + "lang/reflect/package-use.html", jp + "lang/reflect/package-use.html",
         "'No usage of jp.gr.java_conf.dangan.lang.reflect': navigation and one sentence"),
        ("/" + jp + "io/NotEnoughBitsException.html", jp + "io/NotEnoughBitsException.html",
         "exception class page; its Japanese comments were garbled to '?' by the javadoc build"),
        ("/" + jp + "util/lha/BadHuffmanTableException.html", jp + "util/lha/BadHuffmanTableException.html",
         "exception class page (garbled Japanese comments)"),
        ("/" + jp + "util/lha/LhaFile.html", jp + "util/lha/LhaFile.html", "class page"),
        ("/" + jp + "util/lha/package-summary.html", jp + "util/lha/package-summary.html", "package summary"),
        ("/constant-values.html", "constant-values.html", "constant field values"),
        ("/serialized-form.html", "serialized-form.html", "serialized form: exception classes"),
        ("/help-doc.html", "help-doc.html", "how the API documentation is organized"),
        ("/element-list", "element-list", "plain-text list of the four package names, no extension"),
    ]
    pages, removed = load_pages(pkg, base, real)
    fake = [
        ("/" + jp + "util/lha/LhaInputStream.html", "class page linked from the package summary and allclasses.html; not mirrored"),
        ("/" + jp + "util/zip/", "plausible package directory ending in '/'; no such package"),
        ("/" + jp + "util/lha/index.html", "index.html in a package directory (javadoc writes none)"),
        ("/allclasses-frame.html", "frame page of older javadoc versions"),
        ("/index-files/index-27.html", "index page past the last one (index-20.html)"),
        ("/" + jp + "util/lha/LhaFile", "extension-less variant of a real page"),
    ]
    return dict(name="jlha-javadoc-ja", kind={"kind": "dynamic_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, removed=removed, notfound=JL_NOTFOUND, fake=fake)


# ---------------------------------------------------------------- site 5: Network UPS Tools, AsciiDoc -> DocBook XSL (honest 404)
NU_BODY = u8("""<div class="article"><div class="titlepage"><div><div><h2 class="title"><a id="_page_not_found"></a>Page not found</h2></div></div></div><p>The page you asked for is not part of the Network UPS Tools 2.8.0 documentation.</p><p>The guides are published both as single pages and split into one page per section, and
section file names such as <code class="literal">ar01s07.html</code> change when sections are added or
removed, so links into an older release often break.</p><p>Start again from the <a class="link" href="/user-manual/index.html" title="Network UPS Tools User Manual">User Manual</a>,
the <a class="link" href="/FAQ/index.html">FAQ</a> or the <a class="link" href="/developer-guide/index.html">Developer Guide</a>.</p></div>""")


def site_nut():
    pkg, base = "nut-doc", "usr/share/doc/nut-doc/html/"
    real = [
        ("/", "FAQ.html",
         "single-page FAQ, the only page at the top of the package's html/ directory; its <title> is empty"),
        ("/user-manual/index.html", "user-manual/index.html", "user manual table of contents; directory index file"),
        ("/FAQ/index.html", "FAQ/index.html", "table of contents of the split FAQ, empty <title>; directory index file"),
        ("/solaris-usb/index.html", "solaris-usb/index.html", "first page of an article with two sections; directory index file"),
        ("/developer-guide/index.html", "developer-guide/index.html", "developer guide table of contents"),
        ("/cables/index.html", "cables/index.html", "table of contents of the cables article and nothing else, empty <title>"),
        ("/user-manual/apd.html", "user-manual/apd.html",
         "'Hardware Compatibility List': only 'Refer to the online HCL.': near-empty"),
        ("/user-manual/apis08.html", "user-manual/apis08.html",
         "upgrading notes 2.6.2 to 2.6.3: only 'nothing that affects upgraded systems.'"),
        ("/user-manual/apis01.html", "user-manual/apis01.html", "upgrading notes 2.7.4 to 2.8.0 (changelog), long"),
        ("/FAQ/ar01s03.html", "FAQ/ar01s03.html", "'My favorite UPS driver disappeared after an upgrade. What now?'"),
        ("/FAQ/ar01s06.html", "FAQ/ar01s06.html", "'I get a not listening on... error from upsd.'"),
        ("/user-manual/ar01s07.html", "user-manual/ar01s07.html", "advanced usage and scheduling notes"),
    ]
    pages, removed = load_pages(pkg, base, real)
    # honest 404 whose body is a "page not found" in the DocBook XSL chrome of the guides (from apd.html)
    p = rd(pkg, base + "user-manual/apd.html")
    p = sub1(r"<title>D\.[^<]*Hardware Compatibility List</title>", "<title>Page not found</title>", p)
    p = sub1(r'<link rel="up"[^>]*/><link rel="prev"[^>]*/><link rel="next"[^>]*/>', "", p)
    p = sub1(r'<div class="appendix">.*?</div>(?=<div xmlns="" class="navfooter nut_footer">)', lambda m: NU_BODY, p)
    # drop the Prev/Next links of the navigation header and footer (two of each)
    for a in ('<a accesskey="p" href="apcs03.html">Prev</a>', '<a accesskey="n" href="ape.html">Next</a>'):
        assert p.count(a) == 2
        p = p.replace(a, "")
    p = p.replace('href="index.html"', 'href="/user-manual/index.html"')
    p = p.replace('href="docbook-xsl.css"', 'href="/user-manual/docbook-xsl.css"')
    nf = absolutize(strip_external(p))
    fake = [
        ("/user-manual/apm.html", "appendix after the last one (apl.html) in the split user manual"),
        ("/docs/", "networkupstools.org documentation directory ending in '/'"),
        ("/docs/user-manual.chunked/index.html", "networkupstools.org URL of the split user manual"),
        ("/FAQ/ar01s58.html", "FAQ section after the last one (there are 57)"),
        ("/UPGRADING", "relative link 'UPGRADING' on the FAQ page, resolved at the site root"),
        ("/user-manual.html", "single-page user manual name; not in the package"),
    ]
    return dict(name="nut-asciidoc", kind={"kind": "honest_404", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, removed=removed, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 6: geocode-glib, GTK-Doc (honest 404, Apache body)
GE_NOTFOUND = """<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">
<html><head>
<title>404 Not Found</title>
</head><body>
<h1>Not Found</h1>
<p>The requested URL was not found on this server.</p>
<hr>
<address>Apache/2.4.62 (Debian) Server at localhost Port 80</address>
</body></html>
"""


def site_geocode():
    pkg, base = "libgeocode-glib-doc", "usr/share/gtk-doc/html/geocode-glib-2/"
    real = [
        ("/", "index.html", "book contents (index page)"),
        ("/ch01.html", "ch01.html", "chapter page that is only the list of sections (nearly the same as /)"),
        ("/annotation-glossary.html", "annotation-glossary.html", "glossary of four annotations: near-empty"),
        ("/api-index-full.html", "api-index-full.html", "index of all symbols"),
        ("/geocode-glib-2-geocode-error.html", "geocode-glib-2-geocode-error.html",
         "error helper functions: GEOCODE_ERROR_NO_MATCH, GEOCODE_ERROR_NOT_SUPPORTED ..."),
        ("/GeocodeBackend.html", "GeocodeBackend.html", "interface reference"),
        ("/GeocodeForward.html", "GeocodeForward.html", "class reference: forward geocoding, search"),
        ("/GeocodeLocation.html", "GeocodeLocation.html", "class reference"),
        ("/GeocodeNominatim.html", "GeocodeNominatim.html", "class reference, short"),
        ("/GeocodePlace.html", "GeocodePlace.html", "longest class reference"),
        ("/GeocodeBoundingBox.html", "GeocodeBoundingBox.html", "class reference, short"),
        ("/geocode-glib-2.devhelp2", "geocode-glib-2.devhelp2", "Devhelp XML index of the book, not HTML"),
    ]
    pages, removed = load_pages(pkg, base, real)
    fake = [
        ("/geocode-glib-2-geocode-mock-backend.html", "section linked from the contents page; not mirrored"),
        ("/geocode-glib/", "library.gnome.org style module directory ending in '/'"),
        ("/devel/geocode-glib/stable/index.html", "library.gnome.org URL scheme (the contents page names /devel/geocode-glib/)"),
        ("/GeocodeMockBackend.html", "plausible class page name (the real file is named differently)"),
        ("/api-index-deprecated.html", "standard GTK-Doc index page; not generated for this book"),
        ("/geocode-glib-GeocodeError.html", "older GTK-Doc file name scheme for the error section"),
    ]
    return dict(name="geocode-gtkdoc", kind={"kind": "honest_404", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, removed=removed, notfound=GE_NOTFOUND, fake=fake)


# ---------------------------------------------------------------- site 7: Double Commander help, hand-written HTML, Russian (dynamic 200, full template)
DC_BODY = u8("""<div class="dchelpage">
      <div>
        <h1>Страница не найдена</h1>
      </div>

      <div>
        <p>Запрошенной страницы нет в справке Double Commander.</p>
        <p>Возможно, ссылка устарела: разделы справки время от времени переименовываются и объединяются,
           а некоторые страницы есть только в справке на других языках.</p>
        <p>Начните с <a href="index.html">содержания справки</a> или перейдите в один из разделов:</p>
        <ul>
          <li><p><a href="about.html">Что такое Double Commander?</a></p></li>
          <li><p><a href="faq.html">Часто задаваемые вопросы (FAQ)</a></p></li>
          <li><p><a href="help.html">Общий раздел</a></p></li>
        </ul>
        <p><small>Идентификатор запроса: {{REQUEST_ID}}<br>
           Время запроса: {{TIME}}</small></p>
        <br>
      </div>
    </div>
""")


def site_doublecmd():
    pkg, base = "doublecmd-help-ru", "usr/share/doublecmd/doc/ru/"
    real = [
        ("/", "index.html", "contents of the help (index page)"),
        ("/about.html", "about.html", "'What is Double Commander?': short"),
        ("/faq.html", "faq.html", "FAQ: questions about things that do not work ('Ctrl+A не работает, где включить?')"),
        ("/findfiles.html", "findfiles.html", "the file search dialog"),
        ("/commandline.html", "commandline.html", "command-line parameters, short"),
        ("/cm_options.html", "cm_options.html", "options of the internal commands, short"),
        ("/toolbar.html", "toolbar.html", "toolbar"),
        ("/syncdirs.html", "syncdirs.html", "directory synchronization"),
        ("/copymove.html", "copymove.html", "copying and moving files"),
        ("/regexp.html", "regexp.html", "regular expressions"),
        ("/cmds.html", "cmds.html", "internal commands, long (237 KB)"),
    ]
    pages, removed = load_pages(pkg, base, real)
    p = rd(pkg, base + "about.html")
    p = sub1(u8(r"<title>DC - Что такое Double Commander\?</title>"), u8("<title>DC - Страница не найдена</title>"), p)
    nav = u8('<div class="footer"><div class="nav"><a title="Начало" href="index.html">Начало</a></div></div>')
    p, n = re.subn(r'<div class="footer"><div class="nav">.*?</div></div>', lambda m: nav, p)
    assert n == 2
    p = sub1(r'<div class="dchelpage">.*?\n    </div>\n(?=    <div class="footer">)', lambda m: DC_BODY, p)
    nf = absolutize(strip_external(p))
    fake = [
        ("/multiarc.html", "'Working with archives', linked from the contents page; not mirrored"),
        ("/ru/", "language directory ending in '/'"),
        ("/en/index.html", "English help contents (doc/en/ is another package)"),
        ("/faq.htm", ".htm variant of a real page"),
        ("/viewer", "extension-less name of a page that was not mirrored"),
        ("/wiki/Plugins", "wiki-style link (the header links to the project wiki)"),
    ]
    return dict(name="doublecmd-help-ru", kind={"kind": "dynamic_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, removed=removed, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 8: OpenCC, Doxygen, English/Chinese (redirect)
def site_opencc():
    pkg, base = "libopencc-doc", "usr/share/doc/opencc/html/"
    real = [
        ("/", "index.html", "main page: the project README in English and Chinese"),
        ("/search/nomatches.html", "search/nomatches.html",
         "Doxygen search helper page: empty <title>, body only 'No Matches' (500 bytes)"),
        ("/classopencc_1_1_file_not_found.html", "classopencc_1_1_file_not_found.html",
         "'opencc::FileNotFound Class Reference': exception class"),
        ("/classopencc_1_1_should_not_be_here.html", "classopencc_1_1_should_not_be_here.html",
         "'opencc::ShouldNotBeHere Class Reference': exception class with no members of its own"),
        ("/classopencc_1_1_exception-members.html", "classopencc_1_1_exception-members.html",
         "member list of opencc::Exception, short"),
        ("/dir_1563a38af0d3a5e4a6330d6d45e9792a.html", "dir_1563a38af0d3a5e4a6330d6d45e9792a.html",
         "'tools Directory Reference' with nothing in it: near-empty"),
        ("/modules.html", "modules.html", "list of three modules (index page)"),
        ("/group__opencc__simple__api.html", "group__opencc__simple__api.html", "module page with one class"),
        ("/classes.html", "classes.html", "class index"),
        ("/hierarchy.html", "hierarchy.html", "class hierarchy"),
        ("/_exception_8hpp_source.html", "_exception_8hpp_source.html", "source listing of Exception.hpp"),
        ("/classopencc_1_1_simple_converter.html", "classopencc_1_1_simple_converter.html", "class reference"),
    ]
    pages, removed = load_pages(pkg, base, real)
    fake = [
        ("/search.php?query=Converter", "server-side search script named in the Doxygen menu, with a query"),
        ("/classopencc_1_1_converter.html", "class page linked from the class index; not mirrored"),
        ("/zh-TW/", "language directory ending in '/'"),
        ("/opencc/html/index.html", "path of the documentation inside the Debian package"),
        ("/classopencc_1_1_file_not_found", "extension-less variant of a real page"),
        ("/group__opencc__c__api.html", "'OpenCC C API' module, linked from the module list; not mirrored"),
    ]
    return dict(name="opencc-doxygen", kind={"kind": "redirect", "location": "/"},
                package=pkg, real=real, pages=pages, removed=removed, notfound=None, fake=fake)


SITES = [site_structlog, site_typer, site_gcrypt, site_jlha, site_nut, site_geocode, site_doublecmd,
         site_opencc]


def check(s):
    urls = [u for u, _, _ in s["real"]]
    assert len(set(urls)) == len(urls)
    assert all("?" not in u for u in urls), (s["name"], "query string on a real URL")
    assert all(u == "/" or not u.endswith("/") for u in urls), (s["name"], "directory URL other than /")
    files = {page_file(u) for u in urls}
    lower = {f.lower() for f in files}
    dirs = set()
    for f in files:
        d = os.path.dirname(f)
        while d and d != "pages":
            dirs.add(d)
            d = os.path.dirname(d)
    for u, _ in s["fake"]:
        f = page_file(u.split("?", 1)[0])
        assert f not in files, (s["name"], u, "fake path names a real file")
        assert f.lower() not in lower, (s["name"], u, "fake path differs from a real one only in case")
        assert f.rstrip("/") not in dirs, (s["name"], u, "fake path names a directory of pages/")
    paths = [u.split("?", 1)[0] for u, _ in s["fake"]]
    assert any(p.endswith("/") for p in paths), (s["name"], "no unknown directory URL ending in '/'")
    assert any(p.endswith("/index.html") for p in paths), (s["name"], "no unknown .../index.html")
    for u in urls:
        assert len(s["pages"][u]) <= MAX_PAGE, (s["name"], u, "page over 300 KB")
        assert count_external(s["pages"][u]) == 0, (s["name"], u, "external request left")
    k = s["kind"]["kind"]
    if s["notfound"] is not None:
        nf = s["notfound"]
        assert count_external(nf) == 0, s["name"]
        assert not re.search(r"""\b(?:src|href|action)\s*=\s*["']?/+file:""", nf, flags=re.I), s["name"]
        if k in ("echo_200", "search_200"):
            assert "{{PATH}}" in nf, s["name"]
        if k == "dynamic_200":
            assert "{{REQUEST_ID}}" in nf and "{{TIME}}" in nf, s["name"]
    else:
        assert k == "redirect", s["name"]
    assert 8 <= len(urls) <= 12 and 4 <= len(s["fake"]) <= 6, s["name"]


def main():
    global ROOT
    tmp = tempfile.mkdtemp(prefix="holdout4-")
    try:
        ROOT = tmp
        used = fetch_packages(tmp)
        total = 0
        for fn in SITES:
            s = fn()
            check(s)
            d = os.path.join(OUT, s["name"])
            if os.path.isdir(d):
                shutil.rmtree(d)
            os.makedirs(d)
            for u, text in s["pages"].items():
                put(s["name"], page_file(u), text)
                total += len(text)
            if s["notfound"] is not None:
                put(s["name"], "notfound.html", s["notfound"])
                total += len(s["notfound"])
            with open(os.path.join(d, "behaviour.json"), "w") as f:
                json.dump(s["kind"], f)
                f.write("\n")
            fake_label = "hard404" if s["kind"]["kind"] == "honest_404" else "soft404"
            with open(os.path.join(d, "labels.tsv"), "w", encoding="utf-8") as f:
                for u, _, note in s["real"]:
                    f.write("%s\treal\t%s\n" % (u, note))
                for u, note in s["fake"]:
                    f.write("%s\t%s\t%s\n" % (u, fake_label, note))
            print(s["name"], s["package"], used[s["package"]], s["kind"]["kind"],
                  len(s["real"]), len(s["fake"]), fake_label)
            for u, n in sorted(s["removed"].items()):
                print("  removed %d external request(s) from %s" % (n, u))
        assert total <= MAX_TOTAL, "set over 15 MB"
        print("total bytes written: %d" % total)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
