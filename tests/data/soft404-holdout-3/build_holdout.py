#!/usr/bin/env python3
"""Rebuild the third soft-404 hold-out set from Debian 12 (bookworm) documentation packages.

Run:  python3 tests/data/soft404-holdout-3/build_holdout.py
Needs: apt-get, dpkg and an apt package list (run `apt-get update` once). Root is not needed.

For each package in PACKAGES the script runs `apt-get download <pkg>=<version>` (falling back
to the newest available version, with a warning, if that exact version is gone from the mirror)
and unpacks it with `dpkg -x` into a temporary directory. It reads only those unpacked files and
writes only under this directory. Set HOLDOUT3_DEB_DIR to a directory to keep and reuse the
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
    "weechat-doc": "3.8-1",
    "debian-policy-ja": "4.6.2.0",
    "lilypond-doc-html-es": "2.24.1-2",
    "python-petsc4py-doc": "3.18.5-1",
    "libcairo2-doc": "1.16.0-7",
    "sqlite3-doc": "3.40.1-2+deb12u2",
    "libjsoncpp-doc": "1.9.5-4",
    "libcommons-validator-java-doc": "1:1.7-1",
}

ROOT = None  # set in main(): directory holding one unpacked tree per package
MAX_PAGE = 300 * 1024


# ---------------------------------------------------------------- fetching
def fetch_packages(root):
    keep = os.environ.get("HOLDOUT3_DEB_DIR")
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
    # latin-1 round-trips any byte sequence, so UTF-8 and ASCII pages both survive untouched
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


def absolutize(s):
    """Make relative href/src/action URLs root-relative, as a catch-all error page must
    (it is served at any depth). Fragments, mailto:, javascript: and absolute URLs are kept."""
    return re.sub(r"""\b(href|src|action)=(["'])(?!https?:|mailto:|javascript:|#|/|["'])(?:\./|(?:\.\./)+)?""",
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


# ---------------------------------------------------------------- site 1: WeeChat, Asciidoctor, German (honest 404)
WC_NOTFOUND = u8("""<body class="article">
<div id="header">
<h1>Seite nicht gefunden</h1>
<div class="details">
<span id="revnumber">version 3.8</span>
</div>
</div>
<div id="content">
<div class="sect1">
<h2 id="not_found"><a class="anchor" href="#not_found"></a>Fehler 404</h2>
<div class="sectionbody">
<div class="paragraph">
<p>Die angeforderte Seite gibt es in der Dokumentation von WeeChat 3.8 nicht.</p>
</div>
<div class="paragraph">
<p>Vielleicht stammt der Link aus einer älteren Version: Die Dokumentation wird mit jeder
Version neu erzeugt, und nicht jede Anleitung ist in jeder Sprache übersetzt.
Die Dateinamen haben die Form <code>weechat_&lt;anleitung&gt;.&lt;sprache&gt;.html</code>,
zum Beispiel <code>weechat_faq.de.html</code>.</p>
</div>
<div class="ulist">
<ul>
<li>
<p><a href="/">Quickstart Anleitung</a></p>
</li>
<li>
<p><a href="/weechat_faq.de.html">FAQ (Häufig gestellte Fragen)</a></p>
</li>
<li>
<p><a href="/weechat_scripting.de.html">Skripten</a></p>
</li>
</ul>
</div>
</div>
</div>
</div>
<div id="footer">
<div id="footer-text">
Version 3.8<br>
Fehler 404
</div>
</div>
</body>
</html>
""")


def site_weechat():
    pkg, base = "weechat-doc", "usr/share/doc/weechat-doc/html/"
    real = [
        ("/", "weechat_quickstart.de.html", "German quickstart guide (home page; no index page is shipped)"),
        ("/weechat_quickstart.en.html", "weechat_quickstart.en.html", "English quickstart guide"),
        ("/weechat_quickstart.ja.html", "weechat_quickstart.ja.html", "Japanese quickstart guide"),
        ("/weechat_quickstart.ru.html", "weechat_quickstart.ru.html", "Russian quickstart guide"),
        ("/weechat_faq.de.html", "weechat_faq.de.html",
         "German FAQ: many questions about errors, things that do not work or are missing"),
        ("/weechat_faq.pl.html", "weechat_faq.pl.html", "Polish FAQ"),
        ("/weechat_scripting.de.html", "weechat_scripting.de.html", "German scripting guide"),
        ("/weechat_relay_protocol.en.html", "weechat_relay_protocol.en.html", "protocol reference, long"),
        ("/weechat_dev.en.html", "weechat_dev.en.html", "developer's guide, long"),
        ("/ChangeLog.txt", "../changelog.gz", "upstream ChangeLog (AsciiDoc source, plain text, long)"),
    ]
    pages = {u: strip_external(rd(pkg, os.path.normpath(base + f))) for u, f, _ in real}
    p = rd(pkg, base + "weechat_quickstart.de.html")
    head = p[:p.index("<body")]
    head = sub1(r"<title>.*?</title>", u8("<title>Seite nicht gefunden - WeeChat</title>"), head)
    head = sub1(r'<meta name="author"[^>]*>\n', "", head)
    nf = strip_external(head + WC_NOTFOUND)
    fake = [
        ("/weechat_user.de.html", "German user's guide: in the package but over 300 KB, so not mirrored"),
        ("/weechat_quikstart.en.html", "typo of a real page"),
        ("/files/doc/stable/weechat_faq.de.html", "weechat.org URL scheme (/files/doc/stable/)"),
        ("/weechat_faq.de", "extension-less variant of a real page"),
        ("/doc/de/", "language directory ending in '/'"),
        ("/weechat_scripting.php?lang=de", ".php script on a real page's stem, with a query string"),
    ]
    return dict(name="weechat-docs-de", kind={"kind": "honest_404", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 2: Debian Policy, Sphinx, Japanese (dynamic 200, full template)
DP_NOTFOUND = u8("""
  <section id="page-not-found">
<h1>ページが見つかりません<a class="headerlink" href="#page-not-found" title="この見出しへのパーマリンク">¶</a></h1>
<p>お探しのページは、Debian ポリシーマニュアル (バージョン 4.6.2.0) にはありません。</p>
<p>URL に誤りがないかご確認ください。各章のファイル名は <code class="docutils literal notranslate"><span class="pre">ch-*.html</span></code>、
付録のファイル名は <code class="docutils literal notranslate"><span class="pre">ap-*.html</span></code> の形式です。
以前の版で使われていたファイル名や節番号を含むアドレスは、現在は使われていないことがあります。</p>
<p>次のページから目的の項目をお探しください。</p>
<ul class="simple">
<li><p><a class="reference internal" href="/index.html"><span class="std std-doc">目次</span></a></p></li>
<li><p><a class="reference internal" href="/genindex.html"><span class="std std-ref">索引</span></a></p></li>
<li><p><a class="reference internal" href="/search.html"><span class="std std-ref">検索</span></a></p></li>
</ul>
</section>
""")


def site_policy():
    pkg, base = "debian-policy-ja", "usr/share/doc/debian-policy/ja/policy.html/"
    real = [
        ("/", "index.html", "title page and full table of contents (index page)"),
        ("/genindex.html", "genindex.html", "Sphinx general index with only two letters and four entries: nearly empty"),
        ("/search.html", "search.html", "Sphinx search page: a form and an empty results area"),
        ("/upgrading-checklist.html", "upgrading-checklist.html", "upgrading checklist: change log of every policy version (long)"),
        ("/ch-scope.html", "ch-scope.html", "chapter, Japanese with untranslated English paragraphs"),
        ("/ch-binary.html", "ch-binary.html", "chapter"),
        ("/ch-controlfields.html", "ch-controlfields.html", "long chapter"),
        ("/ch-docs.html", "ch-docs.html", "chapter left in English"),
        ("/ap-pkg-scope.html", "ap-pkg-scope.html", "appendix saying these appendices come from a deprecated manual"),
        ("/ap-flowcharts.html", "ap-flowcharts.html", "appendix that is mostly images (not mirrored): little text"),
        ("/ap-license.html", "ap-license.html", "short licence appendix"),
        ("/_sources/ap-license.rst.txt", "_sources/ap-license.rst.txt", "reStructuredText source of a page, plain text"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    # not-found page in the full Sphinx template, built from the search page, with the quick-search box
    # of the chapter pages in the sidebar and the request id / time in the footer
    p = rd(pkg, base + "search.html")
    p = sub1(r"<title>検索 &#8212;".encode("utf-8").decode("latin-1"),
             u8("<title>ページが見つかりません &#8212;"), p)
    p = sub1(u8(r'<li class="nav-item nav-item-this"><a href="">検索</a></li>'),
             u8('<li class="nav-item nav-item-this"><a href="">ページが見つかりません</a></li>'), p)
    p = p.replace(u8('<li class="nav-item nav-item-this"><a href="">検索</a></li>'),
                  u8('<li class="nav-item nav-item-this"><a href="">ページが見つかりません</a></li>'))
    p = sub1(r'<link rel="search" title="[^"]*" href="#" />',
             lambda m: m.group(0).replace('href="#"', 'href="search.html"'), p)
    p = sub1(r'\s*<script src="_static/searchtools.js"></script>\s*<script src="_static/language_data.js"></script>', "", p)
    p = sub1(r'\s*<script src="searchindex.js" defer></script>', "", p)
    p = sub1(r'(<div class="body" role="main">).*?(\n\s*<div class="clearer"></div>)',
             lambda m: m.group(1) + "\n" + DP_NOTFOUND + m.group(2), p)
    side = rd(pkg, base + "ch-scope.html")
    box = re.search(r'<div id="searchbox".*?</script>', side, flags=re.S).group(0)
    p = sub1(r'(<div class="sphinxsidebarwrapper">)\s*(</div>)', lambda m: m.group(1) + "\n" + box + "\n        " + m.group(2), p)
    p = sub1(r'(<div class="footer" role="contentinfo">.*?)(\n\s*</div>)',
             lambda m: m.group(1) + u8("<br/>\n      リクエスト ID: {{REQUEST_ID}} &#8212; {{TIME}}") + m.group(2), p)
    p = absolutize(p)
    p = p.replace('data-url_root="./"', 'data-url_root="/"')
    nf = strip_external(p)
    fake = [
        ("/ch-upgrading-checklist.html", "plausible chapter name (the checklist is upgrading-checklist.html)"),
        ("/ch-controlfields.htm", ".htm variant of a real page"),
        ("/4.5.1/ch-binary.html", "old version prefix"),
        ("/ap-flowcharts", "extension-less variant of a real page"),
        ("/search.php?q=Pre-Depends", "server-side search script with a query string"),
        ("/ja/", "language directory ending in '/'"),
    ]
    return dict(name="debian-policy-ja", kind={"kind": "dynamic_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 3: LilyPond web site, texi2html, Spanish (echo 200)
LP_NOTFOUND = u8("""<div id="main">
<a name="Pagina-no-encontrada"></a>

<a name="not-found"></a>
<h2 class="unnumberedsec">Página no encontrada</h2>

<div class="column-center-top"><a name="Pagina-no-encontrada-2"></a>
<h3 class="subheading">Error 404</h3>

<p>Lo sentimos: la página <code>{{PATH}}</code> no existe en el sitio web de LilyPond.
</p>
<p>Es posible que haya seguido un enlace antiguo. La documentación se reorganiza con cada
versión estable, y no todos los manuales están traducidos al español.
</p>
</div>
<div class="column-center-bottom">
<a name="Que-puede-hacer"></a>
<h3 class="subheading">¿Qué puede hacer?</h3>

<div class="keep-bullets"><ul>
<li>   Vuelva a la <a href="/">página principal</a>.
</li><li>   Busque la página en el <a href="/index_toc.es.html">Índice general</a> o en
  la lista de <a href="/manuals.es.html">Manuales</a>.
</li><li>   Si el enlace roto está en una de nuestras páginas, envíe un
  <a href="/bug-reports.es.html">informe de fallo</a>.
</li></ul>
</div>

</div>



</div>

<hr size="6">

<div id="footer">
<p id="languages">
Acerca de la <a href="http://www.lilypond.org/website/misc/browser-language">selección automática del idioma</a>.
</p>
</div>
<!-- FOOTER -->

<!-- end div#main here -->
</div>
""")


def site_lilypond():
    pkg, base = "lilypond-doc-html-es", "usr/share/doc/lilypond/html/Documentation/web/"
    real = [
        ("/", "index.es.html", "home page (news box, search form, JavaScript)"),
        ("/index.es.html", "index.es.html", "same document as /"),
        ("/index_toc.es.html", "index_toc.es.html", "table of contents (index page)"),
        ("/changes.es.html", "changes.es.html", "'Cambios': short page of three download links for the change list"),
        ("/news.es.html", "news.es.html", "news: release announcements (changelog), in English"),
        ("/bug-reports.es.html", "bug-reports.es.html", "how to report bugs: crashes, faulty output, known bugs"),
        ("/old-downloads.es.html", "old-downloads.es.html", "one untranslated English sentence: almost empty"),
        ("/source.es.html", "source.es.html", "short untranslated page with a warning box"),
        ("/tiny-examples.es.html", "tiny-examples.es.html", "minimal examples: 'nothing can be removed'"),
        ("/faq.es.html", "faq.es.html", "FAQ, short"),
        ("/manuals.es.html", "manuals.es.html", "list of manuals (index page)"),
        ("/download.es.html", "download.es.html", "download page, mostly untranslated"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    # not-found page in the site's texi2html template, built from changes.es.html
    p = rd(pkg, base + "changes.es.html")
    p = p.replace(u8("LilyPond: notación musical para todos: Cambios"),
                  u8("LilyPond: notación musical para todos: Página no encontrada"))
    p = re.sub(r'<link href="[^"]*" rel="(?:up|next|previous)"[^>]*>\n', "", p)
    p = sub1(r'<div id="main">.*?<!-- end div#main here -->\n</div>\n', lambda m: LP_NOTFOUND, p)
    p = p.replace('<li class="toc_current">', "<li>")
    p = absolutize(p)
    nf = strip_external(p)
    fake = [
        ("/attic.es.html", "'Desván' (old news), linked from the news page and every menu, but over 300 KB and not mirrored"),
        ("/index_abt.es.html", "'about this document' page named in every page's <link rel=help>; never generated"),
        ("/changes.html", "English version, linked from the 'Otros idiomas' footer; not in the Spanish package"),
        ("/doc/v2.22/Documentation/web/download.es.html", "lilypond.org URL scheme with an old version prefix"),
        ("/faq.es", "extension-less variant of a real page"),
        ("/search?q=site%3Alilypond.org+ligadura&btnG=B%C3%BAsqueda+de+Google",
         "the search form's query string on a path without extension"),
    ]
    return dict(name="lilypond-web-es", kind={"kind": "echo_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 4: petsc4py, Epydoc + docutils (dynamic 200, short)
PP_NOTFOUND = """<!doctype html>
<html lang=en>
<title>404 Not Found</title>
<h1>Not Found</h1>
<p>The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.</p>
<p><small>Request ID: {{REQUEST_ID}} &middot; {{TIME}}</small></p>
"""


def site_petsc4py():
    pkg, base = "python-petsc4py-doc", "usr/share/doc/python-petsc4py-doc/"
    real = [
        ("/", "index.html", "docutils landing page: links to the manual and the API reference"),
        ("/CHANGES.html", "CHANGES.html", "changelog (docutils)"),
        ("/apiref/index.html", "apiref/index.html", "Epydoc frameset: no text at all, only three frames"),
        ("/apiref/redirect.html", "apiref/redirect.html",
         "Epydoc auto-redirect page; its script says 'No documentation found for ...'"),
        ("/apiref/identifier-index-X.html", "apiref/identifier-index-X.html",
         "empty identifier index for the letter X: only the letter bar and navigation"),
        ("/apiref/toc-petsc4py-module.html", "apiref/toc-petsc4py-module.html", "tiny table-of-contents frame"),
        ("/apiref/petsc4py-module.html", "apiref/petsc4py-module.html", "module page (Epydoc 'Home')"),
        ("/apiref/petsc4py.PETSc.Error-class.html", "apiref/petsc4py.PETSc.Error-class.html", "exception class page"),
        ("/apiref/petsc4py.PETSc.KSP.ConvergedReason-class.html", "apiref/petsc4py.PETSc.KSP.ConvergedReason-class.html",
         "enum class page listing divergence / failure reasons"),
        ("/apiref/module-tree.html", "apiref/module-tree.html", "module hierarchy, short"),
        ("/apiref/help.html", "apiref/help.html", "Epydoc help page"),
        ("/usrman/search.html", "usrman/search.html", "Sphinx search page of the user manual: a form, empty results"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    fake = [
        ("/usrman/index.html", "user manual, linked from the landing page but not mirrored"),
        ("/apiref/petsc4py.PETSc.Vector-class.html", "plausible class name (the class is Vec)"),
        ("/apiref/petsc4py.PETSc.Error-class.htm", ".htm variant of a real page"),
        ("/3.17/apiref/index.html", "old version prefix"),
        ("/apiref/petsc4py-module", "extension-less variant of a real page"),
        ("/api/", "directory-style API path ending in '/'"),
    ]
    return dict(name="petsc4py-epydoc", kind={"kind": "dynamic_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=PP_NOTFOUND, fake=fake)


# ---------------------------------------------------------------- site 5: cairo, gtk-doc (styled 200)
CA_NOTFOUND = """<div class="chapter">
<div class="titlepage"><div><div><h1 class="title">
<a name="cairo-page-not-found"></a>Page not found</h1></div></div></div>
<p>The page you requested is not part of this manual.
This is the reference manual for cairo 1.16; pages of older manuals and of functions
that were never part of the public API do not exist here.</p>
<p>Start again from the <a href="/index.html">contents</a> or look the symbol up in the
<a href="/index-all.html">index of all symbols</a>.</p>
<div class="toc"><dl class="toc">
<dt><span class="chapter"><a href="/cairo-drawing.html">Drawing</a></span></dt>
<dt><span class="chapter"><a href="/cairo-fonts.html">Fonts</a></span></dt>
<dt><span class="chapter"><a href="/cairo-surfaces.html">Surfaces</a></span></dt>
<dt><span class="chapter"><a href="/cairo-support.html">Utilities</a></span></dt>
<dt><span class="index"><a href="/index-all.html">Index</a></span></dt>
</dl></div>
</div>
"""


def site_cairo():
    pkg, base = "libcairo2-doc", "usr/share/gtk-doc/html/cairo/"
    real = [
        ("/", "index.html", "book contents (index page)"),
        ("/cairo-support.html", "cairo-support.html", "chapter page that is only a four-item list"),
        ("/cairo-fonts.html", "cairo-fonts.html", "chapter page that is only a list"),
        ("/index-all.html", "index-all.html", "index of all symbols (long)"),
        ("/index-1.16.html", "index-1.16.html", "index of symbols new in 1.16 (a kind of changelog)"),
        ("/index-1.14.html", "index-1.14.html", "index of symbols new in 1.14: a handful of entries"),
        ("/cairo-Error-handling.html", "cairo-Error-handling.html",
         "error status reference: CAIRO_STATUS_FILE_NOT_FOUND, 'no error has occurred', ..."),
        ("/bindings-errors.html", "bindings-errors.html", "language-binding advice on error handling"),
        ("/cairo-Version-Information.html", "cairo-Version-Information.html", "reference page"),
        ("/cairo-Types.html", "cairo-Types.html", "short reference page"),
        ("/cairo-PNG-Support.html", "cairo-PNG-Support.html", "reference page"),
        ("/cairo-cairo-t.html", "cairo-cairo-t.html", "longest reference page"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    # a hand-written "page not found" in the gtk-doc chrome, built from cairo-support.html
    p = rd(pkg, base + "cairo-support.html")
    p = sub1(r"<title>Utilities:", "<title>Page not found:", p)
    p = sub1(r'<link rel="prev"[^>]*>\n<link rel="next"[^>]*>\n', "", p)
    p = sub1(r'<td><img src="up-insensitive.png"[^>]*></td>\n<td><a accesskey="p".*?</td>\n<td><a accesskey="n".*?</td>',
             '<td><a accesskey="u" href="index.html"><img src="up.png" width="16" height="16" border="0" alt="Up"></a></td>\n'
             '<td><img src="left-insensitive.png" width="16" height="16" border="0"></td>\n'
             '<td><img src="right-insensitive.png" width="16" height="16" border="0"></td>', p)
    p = sub1(r'<div class="chapter">.*?</dl></div>\n</div>\n', lambda m: CA_NOTFOUND, p)
    nf = strip_external(absolutize(p))
    fake = [
        ("/cairo-cairo-surface-t.html", "cairo_surface_t page, linked from most pages but not mirrored"),
        ("/cairo-PNG-Support.htm", ".htm variant of a real page"),
        ("/manual-1.2/cairo-Types.html", "old manual prefix as on the project web site"),
        ("/cairo-Version-Information", "extension-less variant of a real page"),
        ("/cairo-Paths.html?highlight=cairo_arc", "page that was not mirrored, with a query string"),
        ("/manual/", "manual directory URL ending in '/'"),
    ]
    return dict(name="cairo-gtkdoc", kind={"kind": "styled_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 6: SQLite, hand-written HTML (search 200)
def site_sqlite():
    pkg, base = "sqlite3-doc", "usr/share/doc/sqlite3/"
    real = [
        ("/", "index.html", "home page"),
        ("/docs.html", "docs.html", "documentation index (index page)"),
        ("/sqlite.html", "sqlite.html", "redirect stub: meta refresh and 'Redirect to ./cli.html', nothing else"),
        ("/cli.html", "cli.html", "command-line shell documentation, long"),
        ("/releaselog/3_40_1.html", "releaselog/3_40_1.html", "release notes of 3.40.1 (changelog)"),
        ("/rescode.html", "rescode.html", "result and error codes: SQLITE_NOTFOUND, SQLITE_CANTOPEN, ..."),
        ("/errlog.html", "errlog.html", "the error and warning log"),
        ("/c3ref/errcode.html", "c3ref/errcode.html", "short C API page about error codes and messages"),
        ("/faq.html", "faq.html", "frequently asked questions"),
        ("/doclist.html", "doclist.html", "alphabetical list of documents (index page)"),
        ("/omitted.html", "omitted.html", "'SQL Features That SQLite Does Not Implement': a page about missing things"),
        ("/c3ref/intro.html", "c3ref/intro.html", "short introduction page"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    # the search result page, as the package's own search CGI (search.gz, a Wapp/Tcl script) prints it
    # for a query without results: its header template, then the two result lines it writes
    cgi = rd(pkg, base + "search.gz")
    header = re.search(r"proc search_header \{\} \{\n  wapp \{\n(.*?)\n  \}\n\}", cgi, flags=re.S).group(1)
    body = """
<p>No Results for: <b>{{PATH}}</b>
<table border=0>
<p>Search results 1..0 of 0 for: <b>{{PATH}}</b>
</table>
<center>
<p>Page generated by <a href='fts5.html'>FTS5</a> in about 0.37 ms.
</center>
<script>
  window.addEventListener('load', function() {
    var w = document.getElementById("searchmenu");
    w.style.display = "block";
    w = document.getElementById("searchtype");
    w.value = "d"
    setTimeout(function(){
      var s = document.getElementById("searchbox");
      s.focus();
      s.select();
    }, 30);
  });
</script>
"""
    nf = strip_external(absolutize(header + body))
    fake = [
        ("/lang.html", "'SQL Syntax', linked from every page's sidebar, not mirrored"),
        ("/search?s=d&q=vacuum", "the site's own search URL (no extension) with a query string"),
        ("/lang_vacuum.htm", ".htm variant of a page that was not mirrored"),
        ("/releaselog/3_40_2.html", "release notes of a release that does not exist"),
        ("/c3ref/errcode", "extension-less variant of a real page"),
        ("/docs/", "directory-style variant of /docs.html ending in '/'"),
    ]
    return dict(name="sqlite-docs", kind={"kind": "search_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 7: JsonCpp, Doxygen (redirect)
def site_jsoncpp():
    pkg, base = "libjsoncpp-doc", "usr/share/doc/libjsoncpp-doc/"
    real = [
        ("/", "index.html", "main page (no <title> element: the package's custom header has none)"),
        ("/roadmap.html", "roadmap.html", "only 'JsonCpp roadmap / Moved to: <GitHub wiki link>'"),
        ("/jsoncpp_8dox.html", "jsoncpp_8dox.html", "empty Doxygen file reference: title and footer only"),
        ("/namespacemembers_vars.html", "namespacemembers_vars.html", "index with a single entry ('hex2 : Json')"),
        ("/pages.html", "pages.html", "list of related pages: two links"),
        ("/deprecated.html", "deprecated.html", "deprecated list, short"),
        ("/classes.html", "classes.html", "class index"),
        ("/hierarchy.html", "hierarchy.html", "class hierarchy (index page)"),
        ("/class_json_1_1_exception.html", "class_json_1_1_exception.html", "exception base class"),
        ("/struct_json_1_1_reader_1_1_structured_error.html", "struct_json_1_1_reader_1_1_structured_error.html",
         "'An error tagged with where in the JSON text it was encountered'"),
        ("/class_json_1_1_value.html", "class_json_1_1_value.html", "long class reference"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    fake = [
        ("/search.php?query=Value", "server-side search script named in the Doxygen menu, with a query"),
        ("/class_json_1_1_value_type.html", "plausible page for the ValueType enum (enums have no page)"),
        ("/jsoncpp-docs/doxygen/index.html", "project web site path prefix (linked as 'JsonCpp home page')"),
        ("/class_json_1_1_reader.htm", ".htm variant of a class page that was not mirrored"),
        ("/annotated", "extension-less Doxygen class list, not mirrored"),
        ("/doxygen/", "directory URL ending in '/'"),
    ]
    return dict(name="jsoncpp-doxygen", kind={"kind": "redirect", "location": "/"},
                package=pkg, real=real, pages=pages, notfound=None, fake=fake)


# ---------------------------------------------------------------- site 8: Commons Validator, javadoc 17 (honest 404, Tomcat body)
def site_validator():
    pkg, base = "libcommons-validator-java-doc", "usr/share/doc/libcommons-validator-java/api/"
    real = [
        ("/", "index.html", "overview: package list"),
        ("/overview-summary.html", "overview-summary.html", "redirect stub: a script redirect and one link"),
        ("/allclasses-index.html", "allclasses-index.html", "index of all classes"),
        ("/overview-tree.html", "overview-tree.html", "class hierarchy"),
        ("/deprecated-list.html", "deprecated-list.html", "deprecated API list"),
        ("/help-doc.html", "help-doc.html", "how the API documentation is organized"),
        ("/org/apache/commons/validator/ValidatorException.html", "org/apache/commons/validator/ValidatorException.html",
         "exception class page"),
        ("/org/apache/commons/validator/routines/UrlValidator.html",
         "org/apache/commons/validator/routines/UrlValidator.html", "class page about URL validation"),
        ("/org/apache/commons/validator/util/class-use/Flags.html",
         "org/apache/commons/validator/util/class-use/Flags.html",
         "class-use page whose only content is 'No usage of org.apache.commons.validator.util.Flags'"),
        ("/org/apache/commons/validator/package-summary.html", "org/apache/commons/validator/package-summary.html",
         "package summary"),
        ("/legal/ASSEMBLY_EXCEPTION", "legal/ASSEMBLY_EXCEPTION", "plain-text licence file with no extension"),
        ("/legal/jquery.md", "legal/jquery.md", "Markdown licence file, plain text"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    nf = ('<!doctype html><html lang="en"><head><title>HTTP Status 404 \u2013 Not Found</title>'
          '<style type="text/css">body {font-family:Tahoma,Arial,sans-serif;} h1, h2, h3, b '
          '{color:white;background-color:#525D76;} h1 {font-size:22px;} h2 {font-size:16px;} '
          'h3 {font-size:14px;} p {font-size:12px;} a {color:black;} .line '
          '{height:1px;background-color:#525D76;border:none;}</style></head><body>'
          '<h1>HTTP Status 404 \u2013 Not Found</h1><hr class="line" /><p><b>Type</b> Status Report</p>'
          '<p><b>Description</b> The origin server did not find a current representation for the target '
          'resource or is not willing to disclose that one exists.</p><hr class="line" />'
          '<h3>Apache Tomcat/10.1.6</h3></body></html>')
    nf = u8(nf)
    fake = [
        ("/org/apache/commons/validator/routines/EmailValidator", "extension-less class page (not mirrored)"),
        ("/apidocs/", "Maven site directory (commons.apache.org/.../apidocs/) ending in '/'"),
        ("/org/apache/commons/validator/routines/UrlValidator.htm", ".htm variant of a real page"),
        ("/1.6/org/apache/commons/validator/Validator.html", "old version prefix"),
        ("/org/apache/commons/validator/routines/package-frame.html?is-external=true",
         "frame page of older javadoc versions, with a query string"),
        ("/org/apache/commons/validator/ValidatorExeption.html", "typo of a real class page"),
    ]
    return dict(name="commons-validator-javadoc", kind={"kind": "honest_404", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


SITES = [site_weechat, site_policy, site_lilypond, site_petsc4py, site_cairo, site_sqlite, site_jsoncpp,
         site_validator]


def check(s):
    urls = [u for u, _, _ in s["real"]]
    assert len(set(urls)) == len(urls)
    assert all("?" not in u for u in urls), (s["name"], "query string on a real URL")
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
    for u in urls:
        assert len(s["pages"][u]) <= MAX_PAGE, (s["name"], u, "page over 300 KB")
        assert not re.search(r"<(?:script|link|img)\b[^>]*\b(?:src|href)" + EXT, s["pages"][u], flags=re.I), \
            (s["name"], u, "external request left")
    k = s["kind"]["kind"]
    if s["notfound"] is not None:
        nf = s["notfound"]
        assert not re.search(r"<(?:script|link|img)\b[^>]*\b(?:src|href)" + EXT, nf, flags=re.I), s["name"]
        if k in ("echo_200", "search_200"):
            assert "{{PATH}}" in nf, s["name"]
        if k == "dynamic_200":
            assert "{{REQUEST_ID}}" in nf and "{{TIME}}" in nf, s["name"]
    assert 8 <= len(urls) <= 12 and 4 <= len(s["fake"]) <= 6, s["name"]


def main():
    global ROOT
    tmp = tempfile.mkdtemp(prefix="holdout3-")
    try:
        ROOT = tmp
        used = fetch_packages(tmp)
        for fn in SITES:
            s = fn()
            check(s)
            d = os.path.join(OUT, s["name"])
            if os.path.isdir(d):
                shutil.rmtree(d)
            os.makedirs(d)
            for u, text in s["pages"].items():
                put(s["name"], page_file(u), text)
            if s["notfound"] is not None:
                put(s["name"], "notfound.html", s["notfound"])
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
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
