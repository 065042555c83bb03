#!/usr/bin/env python3
"""Rebuild the soft-404 hold-out set from Debian documentation on this machine.

Run:  python3 tests/data/soft404-holdout/build_holdout.py
It only reads /usr/share/doc and only writes under this directory.
Labels were written by hand (see SITES below), never from a detector's output.
"""
import json
import os
import re
import shutil

DOC = "/usr/share/doc"
OUT = os.path.dirname(os.path.abspath(__file__))


def rd(path):
    # latin-1 round-trips any byte sequence, so UTF-8 and ISO-8859-1 pages both survive untouched
    with open(os.path.join(DOC, path), "rb") as f:
        return f.read().decode("latin-1")


def u8(s):
    """Text typed here (UTF-8) re-expressed in the latin-1 byte-string convention above."""
    return s.encode("utf-8").decode("latin-1")


EXT = r"""\s*=\s*["']?(?:https?:)?//"""


def strip_external(s):
    s = re.sub(r"<script\b[^>]*\bsrc" + EXT + r"[^>]*>\s*</script\s*>", "", s, flags=re.I)
    s = re.sub(r"<link\b[^>]*\bhref" + EXT + r"[^>]*>", "", s, flags=re.I)
    s = re.sub(r"<img\b[^>]*\bsrc" + EXT + r"[^>]*>", "", s, flags=re.I)
    return s


def wrap(s, header, footer):
    s, n = re.subn(r"(<body\b[^>]*>)", lambda m: m.group(1) + header, s, count=1, flags=re.I)
    assert n == 1, "no <body>"
    idx = [m.start() for m in re.finditer(r"</body\s*>", s, flags=re.I)]
    assert idx, "no </body>"
    return s[: idx[-1]] + footer + s[idx[-1]:]


def put(site, rel, text):
    path = os.path.join(OUT, site, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text.encode("latin-1"))


def page_file(url):
    if url == "/":
        return "pages/index.html"
    return "pages" + url


# ---------------------------------------------------------------- site 1: libxslt (honest 404)
def site_libxslt():
    base = "libxslt1-dev/html/"
    real = [
        ("/", "index.html", "home page with long left-hand menu"),
        ("/intro.html", "intro.html", "introduction"),
        ("/FAQ.html", "FAQ.html", "FAQ"),
        ("/news.html", "news.html", "changelog / release news (long)"),
        ("/downloads.html", "downloads.html", "downloads page"),
        ("/help.html", "help.html", "short 'how to help' page"),
        ("/APIchunk12.html", "APIchunk12.html", "API alphabetic index chunk (index page)"),
        ("/html/index.html", "html/index.html", "API reference table of contents"),
        ("/EXSLT/index.html", "EXSLT/index.html", "libexslt sub-site home"),
    ]
    pages = {u: strip_external(rd(base + f)) for u, f, _ in real}
    idx = rd(base + "index.html")
    start = idx.rfind('<td bgcolor="#fffacd">') + len('<td bgcolor="#fffacd">')
    end = idx.find("</td>", start)
    body = (
        "<h2>404 - Document not found</h2>"
        "<p>The page you requested is not part of the libxslt web site. It may have "
        "been removed when the site was regenerated from the XML sources, or the link "
        "you followed is out of date.</p>"
        "<p>Please use the menu on the left to browse the documentation, look at the "
        '<a href="html/index.html">API menu</a> or the <a href="APIchunk0.html">alphabetic '
        "index</a>, or search the mailing-list archive.</p>"
        "<p>If you think this is a broken link on our side, report it as described in "
        '<a href="bugs.html">Reporting bugs and getting help</a>.</p>'
        '<p><a href="bugs.html">Daniel Veillard</a></p>'
    )
    nf = idx[:start] + body + idx[end:]
    nf = nf.replace("<title>libxslt</title>", "<title>libxslt - 404 Not Found</title>")
    nf = strip_external(nf)
    fake = [
        ("/ChangeLog.html", "linked from the main menu of every page but not on the site"),
        ("/search.php?query=xsltproc&submit=Search+...", "target of the search form in the menu"),
        ("/APIchunk13.html", "next chunk after the last real API index chunk"),
        ("/html/libxslt-transform.htm", "API page with .htm instead of .html, not mirrored"),
        ("/EXSLT/functions/date", "deep extension-less path"),
        ("/tutorial/libxslttutorial.html", "linked from the home page, not mirrored"),
    ]
    return dict(name="libxslt-docs", kind={"kind": "honest_404", "body_file": "notfound.html"},
                packages=["libxslt1-dev"], real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 2: Node.js API (search 200)
def node_shell(title, data_id, content):
    p = rd("nodejs/api/policy.html")
    p = p.replace("<title>Policies | Node.js", "<title>%s | Node.js" % title)
    p = p.replace('data-id="policy"', 'data-id="%s"' % data_id)
    p = p.replace('id="api-section-policy"', 'id="api-section-%s"' % data_id)
    p = p.replace('href="policy.json"', 'href="%s.json"' % data_id)
    p = re.sub(r'<li class="edit_on_github">.*?</li>', "", p)
    # the per-page table-of-contents picker and details
    p = re.sub(r'<li class="picker-header">\s*<a href="#toc-picker".*?</ul></div></div>\s*</li>', "", p, count=1, flags=re.S)
    p = re.sub(r'<details role="navigation" id="toc".*?</details>', "", p, count=1, flags=re.S)
    p = re.sub(r'(<div role="main" id="apicontent">).*?(<!-- API END -->)',
               lambda m: m.group(1) + "\n" + content + "\n        " + m.group(2), p, count=1, flags=re.S)
    # alt-docs picker points at policy.html on other versions: drop it for these pages
    p = re.sub(r'<li class="picker-header">\s*<a href="#alt-docs".*?</ol></div>\s*</li>', "", p, count=1, flags=re.S)
    return strip_external(p)


def site_node():
    base = "nodejs/api/"
    real = [
        ("/", "index.html", "index / table of contents, long navigation"),
        ("/documentation.html", "documentation.html", "about this documentation"),
        ("/synopsis.html", "synopsis.html", "usage and example"),
        ("/policy.html", "policy.html", "almost no content (one sentence) inside long navigation"),
        ("/corepack.html", "corepack.html", "corepack"),
        ("/punycode.html", "punycode.html", "deprecated module page"),
        ("/querystring.html", "querystring.html", "querystring"),
        ("/string_decoder.html", "string_decoder.html", "string_decoder"),
    ]
    pages = {u: strip_external(rd(base + f)) for u, f, _ in real}
    search_real = """        <h2>Search the documentation<span><a class="mark" href="#search" id="search">#</a></span></h2>
<form action="search.html" method="get" class="search-form">
  <input type="search" name="q" value="" placeholder="e.g. fs.readFile, Buffer.from, AbortSignal" aria-label="Search terms">
  <button type="submit">Search</button>
</form>
<p>Enter one or more words to search the Node.js v20.20.2 API documentation.
Results are ranked by relevance. Names of API members such as <code>fs.readFile()</code>
or <code>Buffer.from()</code> are matched exactly; other words are matched against
section headings first and then against the text of each module page.</p>
<p>To browse instead of searching, start from the <a href="index.html">table of contents</a>
or read <a href="documentation.html">About this documentation</a> to learn how the
stability index and the JSON output work.</p>"""
    pages["/search.html"] = node_shell("Search", "search", search_real)
    real.append(("/search.html", None, "the site's own (empty) search page; hand-made in the Node.js doc chrome"))
    nf = node_shell("Search results", "search", """        <h2>Search results<span><a class="mark" href="#search-results" id="search-results">#</a></span></h2>
<form action="search.html" method="get" class="search-form">
  <input type="search" name="q" value="{{PATH}}" aria-label="Search terms">
  <button type="submit">Search</button>
</form>
<p>Your search for <strong>{{PATH}}</strong> did not match any documents.</p>
<p>Suggestions:</p>
<ul>
<li>Make sure that all words are spelled correctly.</li>
<li>Try different keywords, or the name of a module such as <code>fs</code> or <code>http</code>.</li>
<li>Try more general keywords.</li>
<li>Browse the <a href="index.html">table of contents</a> or view the documentation <a href="all.html">on a single page</a>.</li>
</ul>""")
    fake = [
        ("/fs.html", "linked from the navigation of every page, not on this site"),
        ("/synopsys.html", "typo of /synopsis.html"),
        ("/api/querystring.html", "old path with /api/ prefix"),
        ("/docs/latest-v18.x/api/punycode.html", "old versioned deep path"),
        ("/string-decoder", "no extension, dash instead of underscore"),
        ("/policy.php?lang=en", ".php with a query string"),
    ]
    return dict(name="nodejs-api", kind={"kind": "search_200", "body_file": "notfound.html"},
                packages=["nodejs"], real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 3: Valgrind (styled 200, English, long)
def site_valgrind():
    base = "valgrind/html/"
    real = [
        ("/", "index.html", "top-level table of contents, little text"),
        ("/QuickStart.html", "QuickStart.html", "book title page, only a table of contents"),
        ("/FAQ.html", "FAQ.html", "book title page with a one-entry table of contents (very little text)"),
        ("/quick-start.html", "quick-start.html", "quick start guide"),
        ("/licenses.html", "licenses.html", "tiny table-of-contents page"),
        ("/nl-manual.html", "nl-manual.html", "Nulgrind chapter: a few sentences"),
        ("/design-impl.html", "design-impl.html", "short technical page"),
        ("/manual.html", "manual.html", "long table of contents"),
        ("/tech-docs.html", "tech-docs.html", "table of contents"),
        ("/dist.news.old.html", "dist.news.old.html", "old NEWS file (changelog, long)"),
    ]
    pages = {u: strip_external(rd(base + f)) for u, f, _ in real}
    idx = rd(base + "index.html")
    toc = idx[idx.find('<div class="toc">'): idx.find("</dl>", idx.find('<div class="toc">')) + len("</dl>\n</div>")]
    nf = u8("""<html>
<head>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<title>Page not found</title>
<link rel="stylesheet" type="text/css" href="vg_basic.css">
<meta name="generator" content="DocBook XSL Stylesheets Vsnapshot">
<link rel="home" href="index.html" title="Valgrind Documentation">
<link rel="up" href="index.html" title="Valgrind Documentation">
</head>
<body bgcolor="white" text="black" link="#0000FF" vlink="#840084" alink="#0000FF">
<div><table class="nav" width="100%" cellspacing="3" cellpadding="3" border="0" summary="Navigation header"><tr>
<td width="25px" align="center" valign="middle"><a accesskey="u" href="index.html"><img src="images/up.png" width="21" height="18" border="0" alt="Up"></a></td>
<td width="31px" align="center" valign="middle"><a accesskey="h" href="index.html"><img src="images/home.png" width="27" height="20" border="0" alt="Up"></a></td>
<th align="center" valign="middle">Valgrind Documentation</th>
</tr></table></div>
<div class="chapter">
<div class="titlepage"><div><div><h1 class="title">
<a name="not-found"></a>Page not found</h1></div></div></div>
<p>Sorry, the page you were looking for could not be found in the Valgrind
documentation for release 3.19.0.</p>
<p>Pages of the manual are generated from the DocBook sources each time a new
version of Valgrind is released, and chapters are sometimes split, merged or
renamed when that happens. If you followed a link from a mailing-list post, a
bug report or an old bookmark, the section you want most likely still exists
under a slightly different name.</p>
<p>Here are some places to start looking:</p>
<div class="itemizedlist"><ul class="itemizedlist" style="list-style-type: disc; ">
<li class="listitem"><p>If you are new to Valgrind, read the
<a class="xref" href="quick-start.html" title="The Valgrind Quick Start Guide">Quick Start Guide</a>,
which explains how to run your program under Memcheck and how to read its error messages.</p></li>
<li class="listitem"><p>For the command-line options of the core and of each tool, see the
<a class="xref" href="manual.html" title="Valgrind User Manual">Valgrind User Manual</a>.</p></li>
<li class="listitem"><p>Answers to the most common questions (for example, why Valgrind
reports errors in system libraries, or why a program behaves differently under Valgrind)
are collected in the <a class="xref" href="FAQ.html" title="Valgrind FAQ">FAQ</a>.</p></li>
<li class="listitem"><p>The release notes of every version are in the
<a class="xref" href="dist.html" title="Valgrind Distribution Documents">distribution documents</a>.</p></li>
</ul></div>
<p>The complete list of documents is:</p>
""") + toc + u8("""
<p>If you believe a link inside the manual itself is broken, please report it on the
valgrind-users mailing list and mention the page you came from.</p>
</div>
<div>
<br><table class="nav" width="100%" cellspacing="3" cellpadding="2" border="0" summary="Navigation footer">
<tr>
<td rowspan="2" width="40%" align="left"> </td>
<td width="20%" align="center"><a accesskey="u" href="index.html">Up</a></td>
<td rowspan="2" width="40%" align="right"> </td>
</tr>
<tr><td width="20%" align="center"><a accesskey="h" href="index.html">Home</a></td></tr>
</table>
</div>
</body>
</html>
""")
    fake = [
        ("/mc-manual.html", "Memcheck chapter, linked from manual.html but not on this site"),
        ("/quick-start-guide.html", "plausible variant of /quick-start.html"),
        ("/manual-core.htm", ".htm, chapter not mirrored"),
        ("/dist/news.html", "deep variant of the NEWS page"),
        ("/faq", "extension-less variant of the FAQ"),
        ("/index.php?title=Memcheck", "wiki-style query URL"),
    ]
    return dict(name="valgrind-manual", kind={"kind": "styled_200", "body_file": "notfound.html"},
                packages=["valgrind"], real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 4: libffi (echo 200, French)
FFI_HEAD = u8("""
<div class="miroir-entete" style="background:#23395d;color:#fff;padding:8px 14px;font-family:sans-serif">
<strong>Miroir de documentation</strong> &mdash; libffi 3.4.4
<span style="float:right">
<a style="color:#fff" href="index.html">Accueil</a> |
<a style="color:#fff" href="Introduction.html">Introduction</a> |
<a style="color:#fff" href="Using-libffi.html">Utiliser libffi</a> |
<a style="color:#fff" href="Index.html">Index</a>
</span>
</div>
""")
FFI_FOOT = u8("""
<div class="miroir-pied" style="border-top:1px solid #ccc;margin-top:2em;padding:8px 14px;font:small sans-serif;color:#555">
Copie fidèle du manuel de libffi (texte original en anglais, &copy; Anthony Green et Red Hat, Inc.).
Ce miroir est mis à jour automatiquement à chaque nouvelle version du paquet.
</div>
""")


def site_libffi():
    base = "libffi8/html/"
    real = [
        ("/", "index.html", "manual top page / table of contents"),
        ("/Index.html", "Index.html", "alphabetic concept index (index page)"),
        ("/Introduction.html", "Introduction.html", "introduction"),
        ("/Using-libffi.html", "Using-libffi.html", "section menu only, very little text"),
        ("/Types.html", "Types.html", "section menu only, very little text"),
        ("/Simple-Example.html", "Simple-Example.html", "example with code"),
        ("/The-Closure-API.html", "The-Closure-API.html", "API description"),
        ("/Missing-Features.html", "Missing-Features.html", "short page"),
    ]
    pages = {u: wrap(strip_external(rd(base + f)), FFI_HEAD, FFI_FOOT) for u, f, _ in real}
    nf = u8("""<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">
<html lang="fr">
<head>
<meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<title>Page introuvable (libffi: the portable foreign function interface library)</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<link href="index.html" rel="start" title="Top">
<link href="Index.html" rel="index" title="Index">
</head>
<body lang="fr">""") + FFI_HEAD + u8("""
<div class="header">
<p>
Haut : <a href="index.html" accesskey="u" rel="up">libffi</a> &nbsp; [<a href="Index.html" title="Index" rel="index">Index</a>]</p>
</div>
<hr>
<h2 class="chapter">Page introuvable</h2>
<p>La page demandée, <code>{{PATH}}</code>, n’existe pas sur ce miroir.</p>
<p>Le manuel de libffi est découpé en une page par section&nbsp;; les noms de fichiers
reprennent le titre anglais de la section (par exemple <code>The-Closure-API.html</code>).
Vérifiez l’orthographe de l’adresse ou repartez de la
<a href="index.html">table des matières</a> ou de l’<a href="Index.html">index</a>.</p>
<hr>
""") + FFI_FOOT + "\n</body>\n</html>\n"
    fake = [
        ("/Structures.html", "linked from Types.html, not mirrored"),
        ("/Closure-Example.htm", ".htm, page not mirrored"),
        ("/Primitive_Types.html", "underscore variant of a section name"),
        ("/fr/Introduction.html", "language-prefixed copy of a real page"),
        ("/The-Closure-API.php?id=3", ".php with query string on a real page's stem"),
    ]
    return dict(name="libffi-manual-fr", kind={"kind": "echo_200", "body_file": "notfound.html"},
                packages=["libffi8"], real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 5: Rickshaw examples (dynamic 200)
def site_rickshaw():
    base = "libjs-rickshaw/examples/"
    real = [
        ("/", "index.html", "gallery index of examples"),
        ("/simple.html", "simple.html", "script-only page, no visible text"),
        ("/start.html", "start.html", "script-only page, no visible text"),
        ("/bars.html", "bars.html", "chart page, almost no text"),
        ("/lines.html", "lines.html", "chart page, almost no text"),
        ("/negative.html", "negative.html", "script-only page"),
        ("/scatterplot.html", "scatterplot.html", "script-only page"),
        ("/extensions.html", "extensions.html", "interactive demo with controls"),
        ("/hover.html", "hover.html", "chart page with hover detail"),
    ]
    pages = {u: strip_external(rd(base + f)) for u, f, _ in real}
    nf = """<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>404 Not Found</title>
<link type="text/css" rel="stylesheet" href="/css/graph.css">
<style>body{font-family:Arial,Helvetica,sans-serif;font-size:13px;color:#282828;margin:3em auto;width:600px}small{color:#999}</style>
</head>
<body>
<h1>404 Not Found</h1>
<p>There is no example at this address.</p>
<p><a href="/">Back to the Rickshaw examples</a></p>
<hr>
<small>request id {{REQUEST_ID}} &middot; {{TIME}}</small>
</body>
</html>
"""
    fake = [
        ("/examples/simple.html", "old path with /examples/ prefix"),
        ("/line.html", "typo of /lines.html"),
        ("/scatter-plot.html", "variant of /scatterplot.html"),
        ("/bar-chart", "extension-less plausible page"),
        ("/hover.php?series=2", ".php with query string"),
    ]
    return dict(name="rickshaw-examples", kind={"kind": "dynamic_200", "body_file": "notfound.html"},
                packages=["libjs-rickshaw"], real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 6: Bootstrap 4 examples (styled 200, German)
def hugo_render(src):
    m = re.match(r"---\n(.*?)\n---\n", src, flags=re.S)
    front, body = m.group(1), src[m.end():]
    meta = {"extra_css": [], "extra_js": []}
    cur = None
    for line in front.splitlines():
        if line.startswith("  - "):
            meta[cur].append(line[4:].strip().strip('"'))
            continue
        k, _, v = line.partition(":")
        cur = k.strip()
        v = v.strip().strip('"')
        if v:
            meta[cur] = v

    def ph(mm):
        a = dict(re.findall(r'(\w+)="([^"]*)"', mm.group(1)))
        w, h = a.get("width", "100%"), a.get("height", "180")
        text = a.get("text", "%sx%s" % (w, h))
        title = a.get("title", "Placeholder")
        cls = ("bd-placeholder-img " + a.get("class", "")).strip()
        return ('<svg class="%s" width="%s" height="%s" xmlns="http://www.w3.org/2000/svg" role="img" '
                'aria-label="Placeholder: %s" preserveAspectRatio="xMidYMid slice" focusable="false">'
                '<title>%s</title><rect width="100%%" height="100%%" fill="%s"/>'
                '<text x="50%%" y="50%%" fill="%s" dy=".3em">%s</text></svg>'
                % (cls, w, h, text.strip(), title, a.get("background", "#868e96"), a.get("color", "#dee2e6"), text))

    body = re.sub(r"\{\{< placeholder (.*?) >\}\}", ph, body)
    body = re.sub(r'\{\{< docsref "([^"]*)" >\}\}', lambda mm: "/docs/4.6" + mm.group(1) + "/", body)
    body = body.replace("{{< param docs_version >}}", "4.6").replace("{{< year >}}", "2021")
    assert "{{" not in body, body[body.find("{{") - 50: body.find("{{") + 50]
    return meta, body


BS_HEAD = """<!doctype html>
<html lang="en"%(html_class)s>
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1, shrink-to-fit=no">
    <meta name="description" content="">
    <meta name="author" content="Mark Otto, Jacob Thornton, and Bootstrap contributors">
    <meta name="generator" content="Hugo 0.88.1">
    <title>%(title)s · Bootstrap v4.6</title>
    <!-- Bootstrap core CSS -->
    <link href="/docs/4.6/dist/css/bootstrap.min.css" rel="stylesheet">
    <style>
      .bd-placeholder-img {
        font-size: 1.125rem;
        text-anchor: middle;
        -webkit-user-select: none;
        -moz-user-select: none;
        -ms-user-select: none;
        user-select: none;
      }

      @media (min-width: 768px) {
        .bd-placeholder-img-lg {
          font-size: 3.5rem;
        }
      }
    </style>
%(css)s
  </head>
  <body%(body_class)s>
"""
BS_JS = """    <script src="/docs/4.6/assets/js/vendor/jquery.slim.min.js"></script>
    <script src="/docs/4.6/dist/js/bootstrap.bundle.min.js"></script>
"""


def bs_page(meta, body):
    css = "".join('    <link href="%s" rel="stylesheet">\n' % c for c in meta["extra_css"])
    out = BS_HEAD % dict(
        title=meta["title"], css=css,
        html_class=' class="%s"' % meta["html_class"] if meta.get("html_class") else "",
        body_class=' class="%s"' % meta["body_class"] if meta.get("body_class") else "")
    out += body
    if meta.get("include_js") != "false":
        out += BS_JS
        out += "".join('    <script src="%s"></script>\n' % j for j in meta["extra_js"])
    out += "  </body>\n</html>\n"
    return strip_external(u8(out))


def site_bootstrap():
    base = "libjs-bootstrap4/examples/"
    real = [
        ("/", "jumbotron/index.html", "jumbotron marketing home page"),
        ("/album/index.html", "album/index.html", "album grid of placeholder cards"),
        ("/blog/index.html", "blog/index.html", "blog home with archive navigation"),
        ("/pricing/index.html", "pricing/index.html", "pricing table"),
        ("/sign-in/index.html", "sign-in/index.html", "sign-in form, very little text"),
        ("/checkout/index.html", "checkout/index.html", "checkout form"),
        ("/dashboard/index.html", "dashboard/index.html", "dashboard with long side navigation and table"),
        ("/sticky-footer/index.html", "sticky-footer/index.html", "two sentences of text"),
        ("/cover/index.html", "cover/index.html", "cover page, one paragraph"),
    ]
    pages = {}
    for u, f, _ in real:
        meta, body = hugo_render(rd(base + f))
        pages[u] = bs_page(meta, body)
    nf_body = """
<nav class="navbar navbar-expand-md navbar-dark bg-dark mb-4">
  <a class="navbar-brand" href="/">Bootstrap-Beispiele</a>
  <button class="navbar-toggler" type="button" data-toggle="collapse" data-target="#navbarsDefault" aria-controls="navbarsDefault" aria-expanded="false" aria-label="Navigation umschalten">
    <span class="navbar-toggler-icon"></span>
  </button>
  <div class="collapse navbar-collapse" id="navbarsDefault">
    <ul class="navbar-nav mr-auto">
      <li class="nav-item"><a class="nav-link" href="/">Startseite</a></li>
      <li class="nav-item"><a class="nav-link" href="/album/index.html">Album</a></li>
      <li class="nav-item"><a class="nav-link" href="/blog/index.html">Blog</a></li>
      <li class="nav-item"><a class="nav-link" href="/pricing/index.html">Preise</a></li>
      <li class="nav-item"><a class="nav-link" href="/dashboard/index.html">Dashboard</a></li>
    </ul>
    <a class="btn btn-outline-light my-2 my-sm-0" href="/sign-in/index.html">Anmelden</a>
  </div>
</nav>

<main role="main" class="container">
  <div class="py-5 text-center">
    <h1 class="display-4">Seite nicht gefunden</h1>
    <p class="lead">Die von Ihnen aufgerufene Seite gibt es leider nicht (mehr).</p>
    <p>Vielleicht haben Sie sich bei der Adresse vertippt, oder die Seite wurde verschoben oder gelöscht.
    Nutzen Sie die Navigation oben oder kehren Sie zur Startseite zurück.</p>
    <p><a class="btn btn-primary btn-lg" href="/" role="button">Zur Startseite</a></p>
  </div>
</main>

<footer class="container">
  <p class="text-muted">&copy; 2017–2021 Bootstrap-Beispiele · <a href="/impressum/">Impressum</a> · <a href="/datenschutz/">Datenschutz</a></p>
</footer>
"""
    nf = bs_page({"title": "Seite nicht gefunden", "extra_css": [], "extra_js": []}, nf_body)
    nf = nf.replace('<html lang="en">', '<html lang="de">', 1)
    fake = [
        ("/albums/index.html", "plural typo of /album/"),
        ("/blog/2019/03/sample-post.html", "deep blog post URL, no such post"),
        ("/checkout.php", ".php variant of the checkout page"),
        ("/dashboard/settings", "extension-less sub-page of the dashboard"),
        ("/signin/index.html", "variant of /sign-in/"),
        ("/kontakt.html", "German contact page, not on the site"),
    ]
    return dict(name="bootstrap-examples-de", kind={"kind": "styled_200", "body_file": "notfound.html"},
                packages=["libjs-bootstrap4"], real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 7: socat (redirect to /)
def site_socat():
    base = "socat/"
    real = [
        ("/", "index.html", "tiny index page: five links and a title"),
        ("/socat.html", "socat.html", "long manual page"),
        ("/socat-genericsocket.html", "socat-genericsocket.html", "howto"),
        ("/socat-multicast.html", "socat-multicast.html", "howto"),
        ("/socat-openssltunnel.html", "socat-openssltunnel.html", "howto"),
        ("/socat-tun.html", "socat-tun.html", "howto"),
    ]
    pages = {u: strip_external(rd(base + f)) for u, f, _ in real}
    fake = [
        ("/socat-ssl.html", "plausible howto name, not present"),
        ("/socat-tun.htm", ".htm typo of a real page"),
        ("/doc/socat.html", "old /doc/ path"),
        ("/socat-multicast", "extension-less variant of a real page"),
        ("/download.php?file=socat-1.7.4.4.tar.gz", "download script with query string"),
    ]
    return dict(name="socat-docs", kind={"kind": "redirect", "location": "/"},
                packages=["socat"], real=real, pages=pages, notfound=None, fake=fake)


# ---------------------------------------------------------------- site 8: spec library (honest 404, minimal body)
LIB_HEAD = """
<div style="background:#eee;border-bottom:1px solid #999;padding:6px 10px;font:13px sans-serif">
<b>Spec Library</b> &nbsp;
<a href="/">Shared MIME-info</a> &middot;
<a href="/fontconfig/fontconfig-user.html">Fontconfig</a> &middot;
<a href="/expat/reference.html">Expat</a> &middot;
<a href="/zlib/zlib_how.html">zlib</a> &middot;
<a href="/bc/bc.html">bc</a>
</div>
"""
LIB_FOOT = """
<div style="border-top:1px solid #999;margin-top:2em;padding:6px 10px;font:11px sans-serif;color:#666">
Documents are copied unchanged from their upstream distributions; see each document for its licence.
</div>
"""


def site_speclib():
    real = [
        ("/", "shared-mime-info/shared-mime-info-spec.html/index.html", "spec title page and table of contents"),
        ("/x34.html", "shared-mime-info/shared-mime-info-spec.html/x34.html", "main spec text"),
        ("/x497.html", "shared-mime-info/shared-mime-info-spec.html/x497.html", "short section"),
        ("/b518.html", "shared-mime-info/shared-mime-info-spec.html/b518.html", "bibliography, little text"),
        ("/fontconfig/fontconfig-user.html", "fontconfig/fontconfig-user.html", "fontconfig user manual"),
        ("/expat/reference.html", "libexpat1-dev/expat.html/reference.html", "Expat reference, long TOC"),
        ("/zlib/zlib_how.html", "zlib1g-dev/examples/zlib_how.html", "zlib usage example"),
        ("/bc/bc.html", "bc/bc.html", "bc manual"),
    ]
    pages = {u: wrap(strip_external(rd(f)), LIB_HEAD, LIB_FOOT) for u, f, _ in real}
    nf = """<html>
<head><title>404 Not Found</title></head>
<body>
<center><h1>404 Not Found</h1></center>
<hr><center>nginx</center>
</body>
</html>
"""
    fake = [
        ("/fontconfig/fontconfig-devel.html", "sibling of the user manual, not on the site"),
        ("/expat/index.html", "directory index that does not exist"),
        ("/x35.html", "neighbour of a real section id"),
        ("/zlib/zlib_how.htm", ".htm typo of a real page"),
        ("/bc/bc", "extension-less variant of a real page"),
    ]
    return dict(name="spec-library", kind={"kind": "honest_404", "body_file": "notfound.html"},
                packages=["shared-mime-info", "fontconfig", "libexpat1-dev", "zlib1g-dev", "bc"],
                real=real, pages=pages, notfound=nf, fake=fake)


SITES = [site_libxslt, site_node, site_valgrind, site_libffi, site_rickshaw, site_bootstrap, site_socat, site_speclib]


def main():
    for fn in SITES:
        s = fn()
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
        print(s["name"], s["kind"]["kind"], len(s["real"]), len(s["fake"]), fake_label)


if __name__ == "__main__":
    main()
