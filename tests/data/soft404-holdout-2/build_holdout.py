#!/usr/bin/env python3
"""Rebuild the second soft-404 hold-out set from Debian 12 (bookworm) documentation packages.

Run:  python3 tests/data/soft404-holdout-2/build_holdout.py
Needs: apt-get, dpkg and an apt package list (run `apt-get update` once). Root is not needed.

For each package in PACKAGES the script runs `apt-get download <pkg>=<version>` (falling back
to the newest available version, with a warning, if that exact version is gone from the mirror)
and unpacks it with `dpkg -x` into a temporary directory. It reads only those unpacked files and
writes only under this directory. Set HOLDOUT2_DEB_DIR to a directory to keep and reuse the
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
    "mkdocs-doc": "1.4.2+dfsg-2",
    "developers-reference-fr": "12.18",
    "git-doc": "1:2.39.5-0+deb12u3",
    "debian-reference-ja": "2.100",
    "libjsoup-java-doc": "1.15.3-1",
    "libglfw3-doc": "3.3.8-1",
    "octave-doc": "7.3.0-2",
    "lynx-common": "2.9.0dev.12-1",
}

ROOT = None  # set in main(): directory holding one unpacked tree per package
MAX_PAGE = 300 * 1024


# ---------------------------------------------------------------- fetching
def fetch_packages(root):
    keep = os.environ.get("HOLDOUT2_DEB_DIR")
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


# ---------------------------------------------------------------- site 1: MkDocs (search 200)
MK_SEARCH_REAL = """
    <div class="row-fluid">
      <div id="main-content" class="span12">
        <h1 id="search">Search Results</h1>
        <form id="content_search" action="/search.html" method="get">
          <input name="q" id="mkdocs-search-query-page" type="text" class="form-control" placeholder="Search the Docs" autocomplete="off" title="Type search term here">
        </form>
        <div id="mkdocs-search-results-page">
          <p>Enter one or more words in the box above to search the MkDocs documentation.
          Every page of the User Guide, the Developer Guide and the release notes is indexed.</p>
          <p>You can also press <kbd>s</kbd> on any page to open the search dialog.</p>
        </div>
      </div>
    </div>
"""
MK_SEARCH_NONE = """
    <div class="row-fluid">
      <div id="main-content" class="span12">
        <h1 id="search">Search Results</h1>
        <form id="content_search" action="/search.html" method="get">
          <input name="q" id="mkdocs-search-query-page" type="text" class="form-control" placeholder="Search the Docs" autocomplete="off" title="Type search term here">
        </form>
        <div id="mkdocs-search-results-page">
          <p>No results found for &ldquo;{{PATH}}&rdquo;.</p>
          <p>Check the spelling of your search terms, try fewer or more general words, or browse the
          <a href="/user-guide/index.html">User Guide</a> and the
          <a href="/dev-guide/index.html">Developer Guide</a> from the menu above.</p>
        </div>
      </div>
    </div>
"""


def mk_shell(title, main):
    p = rd("mkdocs-doc", "usr/share/doc/mkdocs/html/404.html")
    p = sub1(r"<title>MkDocs</title>", "<title>%s - MkDocs</title>" % title, p)
    p = sub1(r'\n    <div class="row-fluid">\s*<div id="main-content".*?</div>\s*</div>\n', lambda m: main, p)
    return strip_external(p)


def site_mkdocs():
    pkg, base = "mkdocs-doc", "usr/share/doc/mkdocs/html/"
    real = [
        ("/", "index.html", "home page with dropdown navigation"),
        ("/getting-started.html", "getting-started.html", "tutorial"),
        ("/user-guide/index.html", "user-guide/index.html", "section landing page, short list of links"),
        ("/user-guide/installation.html", "user-guide/installation.html", "installation guide"),
        ("/user-guide/custom-themes.html", "user-guide/custom-themes.html",
         "redirect stub: only 'Redirecting...' and a meta refresh to a moved page"),
        ("/user-guide/cli.html", "user-guide/cli.html", "command line reference"),
        ("/dev-guide/translations.html", "dev-guide/translations.html", "developer guide page"),
        ("/about/release-notes.html", "about/release-notes.html", "changelog / release notes (long)"),
        ("/about/license.html", "about/license.html", "licence text"),
        ("/search.html", None, "hand-made search page with an empty query, same chrome as the not-found page"),
    ]
    pages = {}
    for u, f, _ in real:
        pages[u] = strip_external(rd(pkg, base + f)) if f else mk_shell("Search", MK_SEARCH_REAL)
    nf = mk_shell("Search", MK_SEARCH_NONE)
    fake = [
        ("/about/release-notes/", "footer link on the real pages (/about/release-notes/#maintenance-team); directory URL with no index file"),
        ("/user-guide/installation", "extension-less variant of a real page"),
        ("/user-guide/configuration.htm", ".htm variant of a page that was not mirrored"),
        ("/1.3/getting-started.html", "old version prefix"),
        ("/dev-guide/translation.html", "singular typo of /dev-guide/translations.html"),
        ("/search.php?q=theme", "server-side search script with a query string"),
    ]
    return dict(name="mkdocs-docs", kind={"kind": "search_200", "body_file": "notfound.html"},
                package="mkdocs-doc", real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 2: Developer's Reference, French (styled 200)
DR_NOTFOUND = u8("""
  <section id="page-introuvable">
<h1>Page introuvable<a class="headerlink" href="#page-introuvable" title="Lien permanent vers cette rubrique">¶</a></h1>
<p>Désolé, la page que vous avez demandée n'existe pas, ou plus, dans cette version du
Guide de référence du développeur Debian.</p>
<p>Lors du passage du guide au format reStructuredText, les chapitres ont changé de nom&nbsp;:
les anciennes adresses du type <code class="docutils literal notranslate"><span class="pre">ch-scope.fr.html</span></code>
ne sont plus valables. Si vous avez suivi un lien depuis un autre site, il est sans doute périmé.</p>
<p>Vous pouvez&nbsp;:</p>
<ul class="simple">
<li><p>repartir de la <a class="reference internal" href="/index.html"><span class="std std-ref">table des matières</span></a>&nbsp;;</p></li>
<li><p>utiliser la <a class="reference internal" href="/search.html"><span class="std std-ref">recherche</span></a>&nbsp;;</p></li>
<li><p>signaler un lien cassé sur la liste de diffusion <a class="reference external" href="mailto:debian-l10n-french&#64;lists.debian.org">debian-l10n-french&#64;lists.debian.org</a>.</p></li>
</ul>
</section>
""")


def site_devref():
    pkg, base = "developers-reference-fr", "usr/share/developers-reference/fr/"
    real = [
        ("/", "index.html", "title page and full table of contents (index page)"),
        ("/scope.html", "scope.html", "short chapter (five paragraphs)"),
        ("/new-maintainer.html", "new-maintainer.html", "chapter"),
        ("/developer-duties.html", "developer-duties.html", "chapter"),
        ("/resources.html", "resources.html", "chapter, long"),
        ("/pkgs.html", "pkgs.html", "longest chapter"),
        ("/beyond-pkging.html", "beyond-pkging.html", "chapter"),
        ("/l10n.html", "l10n.html", "chapter"),
        ("/tools.html", "tools.html", "chapter, long list of tools"),
        ("/search.html", "search.html", "Sphinx search page: a form and an empty results area"),
        ("/_sources/scope.rst.txt", "_sources/scope.rst.txt", "reStructuredText source of a chapter, plain text"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    # 404 page in the site's own template, built from the search page (sphinx-notfound-page style: absolute URLs)
    p = rd(pkg, base + "search.html")
    p = p.replace("<title>Recherche &#8212;", u8("<title>Page introuvable &#8212;"))
    p = p.replace('<li class="nav-item nav-item-this"><a href="">Recherche</a></li>',
                  '<li class="nav-item nav-item-this"><a href="">Page introuvable</a></li>')
    p = p.replace('<link rel="search" title="Recherche" href="#" />',
                  '<link rel="search" title="Recherche" href="/search.html" />')
    p = sub1(r'\s*<script src="_static/searchtools.js"></script>\s*<script src="_static/language_data.js"></script>', "\n", p)
    p = sub1(r'\s*<script src="searchindex.js" defer></script>', "", p)
    p = sub1(r'(<div class="body" role="main">).*?(\n\s*<div class="clearer"></div>)',
             lambda m: m.group(1) + "\n" + DR_NOTFOUND + m.group(2), p)
    side = rd(pkg, base + "scope.html")
    box = re.search(r'<div id="searchbox".*?</script>', side, flags=re.S).group(0)
    p = sub1(r'(<div class="sphinxsidebarwrapper">)\s*(</div>)', lambda m: m.group(1) + "\n" + box + "\n        " + m.group(2), p)
    p = re.sub(r'(href|src)="(?!https?:|mailto:|#|/)([^"]+)"', r'\1="/\2"', p)
    p = p.replace('data-url_root="./"', 'data-url_root="/"').replace('action="search.html"', 'action="/search.html"')
    nf = strip_external(p)
    fake = [
        ("/genindex.html", "Sphinx general index name; this build has none"),
        ("/scope.fr.html", "content-negotiation style name as used on www.debian.org"),
        ("/beyond-packaging.html", "spelled-out variant of /beyond-pkging.html"),
        ("/l10n.htm", ".htm variant of a real page"),
        ("/tools", "extension-less variant of a real page"),
        ("/search.php?q=lintian&check_keywords=yes", "search script with a query string"),
    ]
    return dict(name="developers-reference-fr", kind={"kind": "styled_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 3: Git manual pages (honest 404)
def site_git():
    pkg, base = "git-doc", "usr/share/doc/git-doc/"
    real = [
        ("/", "git.html", "git(1): main page with the long command list (index.html is a symlink to it)"),
        ("/git-stage.html", "git-stage.html", "synonym page: two sentences pointing to git-add"),
        ("/git-init-db.html", "git-init-db.html", "synonym page: two sentences pointing to git-init"),
        ("/git-version.html", "git-version.html", "very short manual page"),
        ("/git-init.html", "git-init.html", "manual page"),
        ("/gitglossary.html", "gitglossary.html", "glossary"),
        ("/giteveryday.html", "giteveryday.html", "guide"),
        ("/howto-index.html", "howto-index.html", "index of the howto documents"),
        ("/technical/api-index.html", "technical/api-index.html", "short index of API documents (five links)"),
        ("/howto/revert-a-faulty-merge.html", "howto/revert-a-faulty-merge.html", "howto (mail-style text)"),
        ("/user-manual.html", "user-manual.html", "user manual (long, own table of contents)"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    css = re.search(r'<style type="text/css">.*?</style>', rd(pkg, base + "git-stage.html"), flags=re.S).group(0)
    nf = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN"
    "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en">
<head>
<meta http-equiv="Content-Type" content="application/xhtml+xml; charset=UTF-8" />
<meta name="generator" content="AsciiDoc 10.2.0" />
<title>404 Not Found - Git documentation</title>
""" + css + """
</head>
<body class="article">
<div id="header">
<h1>Page not found</h1>
</div>
<div id="content">
<div class="sect1">
<h2 id="_the_page_you_requested_does_not_exist">The page you requested does not exist</h2>
<div class="sectionbody">
<div class="paragraph"><p>There is no document at this address in the Git 2.39 documentation.
Manual pages are named after the command they describe, for example
<a href="/git-init.html">git-init.html</a> for <em>git init</em>.</p></div>
<div class="ulist"><ul>
<li><p>Start from <a href="/">git(1)</a>, which lists every command.</p></li>
<li><p>Read the <a href="/user-manual.html">Git User Manual</a> or the <a href="/howto-index.html">howto documents</a>.</p></li>
</ul></div>
</div>
</div>
</div>
<div id="footnotes"><hr /></div>
<div id="footer">
<div id="footer-text">
Error 404
</div>
</div>
</body>
</html>
"""
    fake = [
        ("/git-comit.html", "typo of git-commit.html"),
        ("/git-stash.htm", ".htm variant of a manual page that was not mirrored"),
        ("/docs/git-init", "git-scm.com style path without extension"),
        ("/2.38.0/git-version.html", "old version prefix"),
        ("/howto/maintain-git", "extension-less howto path"),
        ("/technical/api-index.php?lang=en", ".php with query string on a real page's stem"),
    ]
    return dict(name="git-manual", kind={"kind": "honest_404", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 4: Debian Reference, Japanese (echo 200)
def site_debref():
    pkg, base = "debian-reference-ja", "usr/share/debian-reference/"
    real = [
        ("/", "index.ja.html", "title page and full table of contents (index page)"),
        ("/index.ja.html", "index.ja.html", "same document as /"),
        ("/pr01.ja.html", "pr01.ja.html", "preface"),
        ("/ch03.ja.html", "ch03.ja.html", "chapter"),
        ("/ch04.ja.html", "ch04.ja.html", "chapter"),
        ("/ch05.ja.html", "ch05.ja.html", "chapter"),
        ("/ch07.ja.html", "ch07.ja.html", "chapter"),
        ("/ch08.ja.html", "ch08.ja.html", "short chapter"),
        ("/ch12.ja.html", "ch12.ja.html", "chapter"),
        ("/apa.ja.html", "apa.ja.html", "appendix, short"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    nf = u8("""<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">
<html xmlns="http://www.w3.org/1999/xhtml">
  <head>
    <title>ページが見つかりません</title>
    <link rel="stylesheet" type="text/css" href="/debian-reference.css"/>
    <meta name="generator" content="DocBook XSL Stylesheets Vsnapshot"/>
    <meta http-equiv="Content-Type" content="text/html; charset=UTF-8"/>
    <link rel="home" href="/index.ja.html" title="Debian リファレンス"/>
  </head>
  <body>
    <div class="navheader">
      <table width="100%" summary="Navigation header">
        <tr>
          <th colspan="3" align="center">ページが見つかりません</th>
        </tr>
        <tr>
          <td align="left"> </td>
          <th width="60%" align="center"> </th>
          <td align="right"> </td>
        </tr>
      </table>
      <hr/>
    </div>
    <div class="chapter">
      <div class="titlepage">
        <div>
          <div>
            <h1 class="title"><a id="_not_found"/>ページが見つかりません</h1>
          </div>
        </div>
      </div>
      <p>お探しのページ <code class="literal">{{PATH}}</code> はこのサイトにはありません。</p>
      <p>URL に誤りがないかご確認ください。Debian リファレンスの各章は
<code class="literal">ch01.ja.html</code> から <code class="literal">ch12.ja.html</code>、付録は
<code class="literal">apa.ja.html</code> というファイル名になっています。古い版 (第1版) の URL は現在は使われていません。</p>
      <p><a class="link" href="/index.ja.html">目次</a>から目的の章をお探しください。</p>
    </div>
    <div class="navfooter">
      <hr/>
      <table width="100%" summary="Navigation footer">
        <tr>
          <td align="left"> </td>
          <td align="center"> </td>
          <td align="right"> </td>
        </tr>
        <tr>
          <td align="left" valign="top"> </td>
          <td align="center">
            <a accesskey="h" href="/index.ja.html">
              <img src="/images/home.png" alt="ホーム"/>
            </a>
          </td>
          <td align="right" valign="top"> </td>
        </tr>
      </table>
    </div>
  </body>
</html>
""")
    fake = [
        ("/ch01.ja.html", "chapter 1, linked from the table of contents and from other chapters, but over 300 KB and not mirrored"),
        ("/ch03.en.html", "English content-negotiation variant, not on the site"),
        ("/ch3.ja.html", "typo: chapter number without the leading zero"),
        ("/ja/ch05.html", "language-directory variant of a real page"),
        ("/ch08.ja", "real page without .html"),
        ("/index.php?lang=ja", "script with a query string"),
    ]
    return dict(name="debian-reference-ja", kind={"kind": "echo_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 5: jsoup javadoc (dynamic 200, full template)
JS_NOTFOUND = """<div class="header">
<h1 title="Page Not Found" class="title">Page Not Found</h1>
</div>
<div class="contentContainer">
<div class="block">
<p>The page you requested is not part of the jsoup Java HTML Parser 1.15.3 API documentation.</p>
<p>Classes are sometimes moved between packages or removed from one release to the next, so a link from
an older version of this documentation may no longer work. Use the <a href="/index.html">Overview</a>,
the <a href="/allclasses-index.html">list of all classes</a> or the <a href="/index-all.html">Index</a>
to find what you were looking for.</p>
</div>
</div>
</main>"""


def site_jsoup():
    pkg, base = "libjsoup-java-doc", "usr/share/doc/libjsoup-java/api/"
    real = [
        ("/", "index.html", "overview with package list"),
        ("/overview-summary.html", "overview-summary.html", "redirect stub: a script redirect and one link, almost no text"),
        ("/deprecated-list.html", "deprecated-list.html", "empty deprecated list: a title and 'Contents' only"),
        ("/org/jsoup/class-use/HttpStatusException.html", "org/jsoup/class-use/HttpStatusException.html",
         "class-use page whose only content is 'No usage of org.jsoup.HttpStatusException'"),
        ("/org/jsoup/Jsoup.html", "org/jsoup/Jsoup.html", "main class page"),
        ("/org/jsoup/nodes/Element.html", "org/jsoup/nodes/Element.html", "long class page"),
        ("/allclasses-index.html", "allclasses-index.html", "index of all classes"),
        ("/overview-tree.html", "overview-tree.html", "class hierarchy"),
        ("/help-doc.html", "help-doc.html", "how this API document is organized"),
        ("/org/jsoup/select/package-summary.html", "org/jsoup/select/package-summary.html", "package summary"),
        ("/org/jsoup/examples/ListLinks.html", "org/jsoup/examples/ListLinks.html", "small example class"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    p = rd(pkg, base + "deprecated-list.html")
    p = p.replace("Deprecated List (jsoup Java HTML Parser 1.15.3 API)", "Page Not Found (jsoup Java HTML Parser 1.15.3 API)")
    p = p.replace('<li class="navBarCell1Rev">Deprecated</li>', '<li><a href="deprecated-list.html">Deprecated</a></li>')
    p = sub1(r'<main role="main">\s*<div class="header">.*?</main>', lambda m: '<main role="main">\n' + JS_NOTFOUND, p)
    p = p.replace('var pathtoroot = "./";', 'var pathtoroot = "/";')
    p = sub1(r'(<p class="legalCopy"><small>.*?)(</small></p>)',
             lambda m: m.group(1) + "<br>Request ID: {{REQUEST_ID}} &middot; Served {{TIME}}" + m.group(2), p)
    p = re.sub(r'(href|src)="(?!https?:|mailto:|#|/)([^"]+)"', r'\1="/\2"', p)
    nf = strip_external(p)
    fake = [
        ("/org/jsoup/nodes/Elements.html", "class is in org.jsoup.select: wrong package"),
        ("/org/jsoup/Jsoup.htm", ".htm variant of a real page"),
        ("/1.14.3/org/jsoup/Jsoup.html", "old version prefix"),
        ("/org/jsoup/select/Selector", "extension-less class page (Selector.html was not mirrored)"),
        ("/overview-frame.html", "frame page of older javadoc versions"),
        ("/org/jsoup/nodes/package-frame.html?is-external=true", "old frame page with a query string"),
    ]
    return dict(name="jsoup-javadoc", kind={"kind": "dynamic_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 6: GLFW Doxygen (dynamic 200, short)
def site_glfw():
    pkg, base = "libglfw3-doc", "usr/share/doc/libglfw3-dev/html/"
    real = [
        ("/", "index.html", "main page, short"),
        ("/build_8dox.html", "build_8dox.html", "empty Doxygen file reference: title and footer only"),
        ("/search/nomatches.html", "search/nomatches.html", "Doxygen search frame whose only text is 'No Matches'"),
        ("/news.html", "news.html", "release notes (changelog)"),
        ("/modules.html", "modules.html", "reference index of modules"),
        ("/pages.html", "pages.html", "list of related pages (index page)"),
        ("/deprecated.html", "deprecated.html", "deprecated list, short"),
        ("/quick_guide.html", "quick_guide.html", "tutorial"),
        ("/structGLFWimage.html", "structGLFWimage.html", "small struct reference"),
        ("/group__mods.html", "group__mods.html", "small group of constants"),
        ("/files.html", "files.html", "file list"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    nf = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>404 Not Found</title>
</head>
<body>
<h1>404 Not Found</h1>
<p>The requested document was not found on this server.</p>
<hr>
<p><small>Request ID: {{REQUEST_ID}}<br>Time: {{TIME}}</small></p>
</body>
</html>
"""
    fake = [
        ("/group__keyboard.html", "plausible group page name (keys are in group__keys.html)"),
        ("/quick.html", "page name used by GLFW 3.0 documentation"),
        ("/docs/3.2/window_guide.html", "versioned path prefix as on the project web site"),
        ("/search.php?query=glfwInit", "server-side search script named in the Doxygen menu, with a query"),
        ("/structGLFWwindow.html", "opaque type: there is no struct page"),
        ("/quick_guide", "extension-less variant of a real page"),
    ]
    return dict(name="glfw-docs", kind={"kind": "dynamic_200", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


# ---------------------------------------------------------------- site 7: GNU Octave manual (redirect to /)
def site_octave():
    pkg, base = "octave-doc", "usr/share/doc/octave/octave.html/"
    real = [
        ("/", "index.html", "top page with the full table of contents"),
        ("/Preface.html", "Preface.html", "preface, short"),
        ("/Interpolation.html", "Interpolation.html", "chapter page that is only a two-item menu"),
        ("/Grammar-and-Parser.html", "Grammar-and-Parser.html", "stub appendix: one sentence ('will eventually contain')"),
        ("/XREFcos.html", "XREFcos.html", "makeinfo redirect stub: 'The node you are looking for is at XREFcos'"),
        ("/Concept-Index.html", "Concept-Index.html", "concept index (index page)"),
        ("/Trigonometry.html", "Trigonometry.html", "function reference"),
        ("/Searching-in-Strings.html", "Searching-in-Strings.html", "function reference about searching"),
        ("/Basic-Vectorization.html", "Basic-Vectorization.html", "section text"),
        ("/Copying.html", "Copying.html", "GPL licence text"),
    ]
    pages = {u: strip_external(rd(pkg, base + f)) for u, f, _ in real}
    fake = [
        ("/Function-Index.html", "function index, linked from the top page but over 300 KB, not mirrored"),
        ("/XREFcosine.html", "plausible XREF name for a function that does not exist"),
        ("/Trigonometry.htm", ".htm variant of a real page"),
        ("/doc/v6.1.0/Trigonometry.html", "old version prefix as on the project web site"),
        ("/Basic-Vectorization", "extension-less variant of a real page"),
        ("/index.php?title=Interpolation", "wiki-style script with a query string"),
    ]
    return dict(name="octave-manual", kind={"kind": "redirect", "location": "/"},
                package=pkg, real=real, pages=pages, notfound=None, fake=fake)


# ---------------------------------------------------------------- site 8: Lynx help (honest 404, Apache body)
def site_lynx():
    pkg, base = "lynx-common", "usr/share/doc/lynx-common/lynx_help/"
    real = [
        ("/", "lynx_help_main.html.gz", "help start page: lists of links"),
        ("/about_lynx.html", "about_lynx.html.gz", "credits and copyright"),
        ("/lynx-dev.html", "lynx-dev.html.gz", "mailing list page, short"),
        ("/alphatoc.html", "alphatoc.html.gz", "alphabetical table of contents of lynx.cfg settings (index page)"),
        ("/cattoc.html", "cattoc.html.gz", "table of contents of lynx.cfg settings by category (index page)"),
        ("/Lynx_users_guide.html", "Lynx_users_guide.html.gz", "users guide (long)"),
        ("/lynx_url_support.html", "lynx_url_support.html.gz", "supported URL schemes"),
        ("/keystrokes/keystroke_help.html", "keystrokes/keystroke_help.html.gz", "key table"),
        ("/keystrokes/bookmark_help.html", "keystrokes/bookmark_help.html.gz", "short help page"),
        ("/keystrokes/xterm_help.html", "keystrokes/xterm_help.html.gz", "very short help page"),
    ]

    def fix(s):
        # the Debian package ships the pages gzip-compressed and links to "*.html.gz"; publish them as .html
        return re.sub(r'(\bhref\s*=\s*"?)([^"\s>:]*?)\.html\.gz\b', r"\1\2.html", s, flags=re.I)

    pages = {u: strip_external(fix(rd(pkg, base + f))) for u, f, _ in real}
    nf = """<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">
<html><head>
<title>404 Not Found</title>
</head><body>
<h1>Not Found</h1>
<p>The requested URL was not found on this server.</p>
<hr>
<address>Apache/2.4.57 (Debian) Server at localhost Port 80</address>
</body></html>
"""
    fake = [
        ("/body.html", "lynx.cfg reference, target of every link in both tables of contents, not mirrored"),
        ("/keystrokes/bookmark_help.html.gz", "link name as shipped in the Debian package"),
        ("/keystrokes/key_help.html", "shortened variant of keystroke_help.html"),
        ("/lynx_help/about_lynx.html", "old /lynx_help/ directory prefix"),
        ("/lynx_url_support", "extension-less variant of a real page"),
        ("/cgi-bin/lynx-search?q=cookies", "search script with a query string"),
    ]
    return dict(name="lynx-help", kind={"kind": "honest_404", "body_file": "notfound.html"},
                package=pkg, real=real, pages=pages, notfound=nf, fake=fake)


SITES = [site_mkdocs, site_devref, site_git, site_debref, site_jsoup, site_glfw, site_octave, site_lynx]


def check(s):
    urls = [u for u, _, _ in s["real"]]
    assert len(set(urls)) == len(urls)
    files = {page_file(u) for u in urls}
    lower = {f.lower() for f in files}
    for u, _ in s["fake"]:
        f = page_file(u.split("?", 1)[0])
        assert f not in files, (s["name"], u, "fake path names a real file")
        assert f.lower() not in lower, (s["name"], u, "fake path differs from a real one only in case")
    for u in urls:
        assert len(s["pages"][u]) <= MAX_PAGE, (s["name"], u, "page over 300 KB")
    k = s["kind"]["kind"]
    if s["notfound"] is not None:
        nf = s["notfound"]
        if k in ("echo_200", "search_200"):
            assert "{{PATH}}" in nf, s["name"]
        if k == "dynamic_200":
            assert "{{REQUEST_ID}}" in nf and "{{TIME}}" in nf, s["name"]


def main():
    global ROOT
    tmp = tempfile.mkdtemp(prefix="holdout2-")
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
