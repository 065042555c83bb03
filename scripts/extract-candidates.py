#!/usr/bin/env python3
"""Extract URL candidates *with the context they were found in*, the way aggressive crawler
extractors do (issue 17's labelled set is built from this output, then labelled by hand).

    scripts/extract-candidates.py FILE...  > candidates.tsv

Output: one line per distinct (context, candidate, file): `context<TAB>candidate<TAB>file`.

Contexts (the `context` field of schemas/url-event.v1.json):
  html_attr  the raw value of href/src/action/data-*/… attributes, before entity decoding
  html_text  URL-looking strings in an HTML page's text
  js         string and template literals in JavaScript (files, and inline <script>),
             picked by LinkFinder's regular expression (what security crawlers use)
  css        url(...) values
  text       URL-looking strings in any other file

Nothing here decides what is junk: it only records where each string came from.
"""
import html.parser
import pathlib
import re
import sys

# LinkFinder's expression (GerbenJavado/LinkFinder), the extractor most JS crawlers copy.
LINKFINDER = re.compile(
    r"""(?:"|'|`)(((?:[a-zA-Z]{1,10}://|//)[^"'/]{1,}\.[a-zA-Z]{2,}[^"']{0,})|"""
    r"""((?:/|\.\./|\./)[^"'><,;| *()(%%$^/\\\[\]][^"'><,;|()]{1,})|"""
    r"""([a-zA-Z0-9_\-/]{1,}/[a-zA-Z0-9_\-/.]{1,}\.(?:[a-zA-Z]{1,4}|action)(?:[\?|#][^"|']{0,}|))|"""
    r"""([a-zA-Z0-9_\-/]{1,}/[a-zA-Z0-9_\-/]{3,}(?:[\?|#][^"|']{0,}|))|"""
    r"""([a-zA-Z0-9_\-]{1,}\.(?:php|asp|aspx|jsp|json|action|html|js|txt|xml)(?:[\?|#][^"|']{0,}|)))(?:"|'|`)""",
    re.VERBOSE,
)
TEXT_URL = re.compile(r"""(?:https?://|www\.)[^\s"'<>()\[\]{}]+""")
CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")
URL_ATTRS = {"href", "src", "action", "formaction", "poster", "data", "cite", "background",
             "longdesc", "manifest", "srcset", "data-src", "data-href", "data-url", "content"}


class Page(html.parser.HTMLParser):
    """Attribute values raw (convert_charrefs off, and the raw start tag re-read)."""

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.out = []
        self.in_script = False
        self.script = []

    def handle_starttag(self, tag, attrs):
        raw = self.get_starttag_text() or ""
        for m in re.finditer(r"""([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*("([^"]*)"|'([^']*)'|([^\s"'>]+))""", raw):
            name = m.group(1).lower()
            value = m.group(3) if m.group(3) is not None else m.group(4) if m.group(4) is not None else m.group(5)
            if name in URL_ATTRS and value:
                if name == "srcset":
                    for part in value.split(","):
                        u = part.strip().split(" ")[0]
                        if u:
                            self.out.append(("html_attr", u))
                else:
                    self.out.append(("html_attr", value))
            if name == "style":
                for c in CSS_URL.finditer(value):
                    self.out.append(("css", c.group(2)))
        self.in_script = tag == "script"

    def handle_endtag(self, tag):
        if tag == "script" and self.in_script:
            self.out.extend(("js", c) for c in js_candidates("".join(self.script)))
            self.script = []
        self.in_script = False

    def handle_data(self, data):
        if self.in_script:
            self.script.append(data)
        else:
            self.out.extend(("html_text", m.group(0)) for m in TEXT_URL.finditer(data))


def js_candidates(text):
    for m in LINKFINDER.finditer(text):
        yield m.group(1)


def candidates(path):
    text = path.read_text(errors="replace")
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm", ".xhtml"):
        p = Page()
        p.feed(text)
        return p.out
    if suffix in (".js", ".mjs", ".cjs"):
        return [("js", c) for c in js_candidates(text)]
    if suffix == ".css":
        return [("css", m.group(2)) for m in CSS_URL.finditer(text)]
    return [("text", m.group(0)) for m in TEXT_URL.finditer(text)]


def main():
    seen = set()
    for name in sys.argv[1:]:
        path = pathlib.Path(name)
        for ctx, cand in candidates(path):
            cand = cand.replace("\t", " ").replace("\n", " ")
            key = (ctx, cand, name)
            if key not in seen:
                seen.add(key)
                print(f"{ctx}\t{cand}\t{name}")


if __name__ == "__main__":
    main()
