#!/usr/bin/env python3
"""The sample site of scripts/pipeline.sh, on 127.0.0.1:PORT (argument). Like many real sites:

- /docs/NAME          documentation pages, each its own text
- /print/NAME         the same text in a bare print layout (a near-duplicate of /docs/NAME)
- /news?page=N        a paginated list: one template, different items
- /item/N             product pages (one template)
- any page ?sid=S     a session id, which changes nothing
- /login              a sign-in form
- /old-intro          a permanent redirect to /docs/intro
- anything else       200 with a styled "page not found" page (a soft 404)
"""
import http.server
import sys
from urllib.parse import parse_qs, urlsplit

DOCS = {
    "intro": "crawlsieve sits between a crawler's link extractor and its fetchers. It removes junk candidates, repeats and pages that are near-identical, so the fetchers spend their time on pages worth fetching.",
    "install": "Install the Rust toolchain, clone the repository and run cargo install with the path of the checkout. The binary has no runtime dependency beyond the C library; Kafka and Redis are needed only by the stages that use them.",
    "config": "Every stage reads one TOML file. Sections name the part they configure: kafka for the broker and topics, redis for the shared filter, sieve for the junk rules, scope for what may be crawled, render for the browser.",
    "faq": "Why does a URL I expected not come out? Look at the audit topic: every rejection carries a reason code. Why do two different URLs count as one? Canonicalization sorts the query and drops tracking parameters.",
    "metrics": "Each stage serves Prometheus metrics when metrics.listen is set: messages consumed, URLs emitted and rejected by reason, the filter's fill ratio and false-positive estimate, and the browser's health.",
}
PRODUCTS = ["kettle", "toaster", "blender", "grinder", "scale", "timer"]


def page(title, main, nav=True):
    links = "".join(f'<a href="/docs/{d}">{d}</a> ' for d in DOCS)
    header = f"<header><nav><a href=/>Home</a> {links}<a href=/news?page=1>News</a></nav></header>" if nav else ""
    footer = "<footer>Sample Site - a demonstration for crawlsieve's pipeline. Contact the maintainers.</footer>" if nav else ""
    return f"<!doctype html><html><head><title>{title}</title></head><body>{header}<main><h1>{title}</h1>{main}</main>{footer}</body></html>"


def prose(name, text):
    return "".join(f"<p>{text} (Part {i} of the {name} chapter.)</p>" for i in range(1, 6))


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, status, body, location=None):
        data = body.encode()
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        u = urlsplit(self.path)
        q = parse_qs(u.query)
        parts = [p for p in u.path.split("/") if p]
        if not parts:
            items = "".join(f'<li><a href="/item/{i}">{p}</a></li>' for i, p in enumerate(PRODUCTS))
            return self.send(200, page("Sample Site", "<p>Welcome to the sample site. It has documentation pages and their print versions, a paginated news list, a small shop whose links carry a session id, a sign-in page, an old address that redirects, and it answers every unknown address with a friendly page instead of an error, as many real sites do.</p>" * 2 + f"<ul>{items}</ul>"))
        if len(parts) == 2 and parts[0] == "docs" and parts[1] in DOCS:
            return self.send(200, page(f"{parts[1]} - Docs", prose(parts[1], DOCS[parts[1]])))
        if len(parts) == 2 and parts[0] == "print" and parts[1] in DOCS:
            return self.send(200, page(f"{parts[1]} - Docs", prose(parts[1], DOCS[parts[1]]), nav=False))
        if parts == ["news"]:
            v = (q.get("page") or ["1"])[0]
            n = int(v) if v.isdigit() else 1
            items = "".join(
                f"<li><a href=/news/{n * 10 + i}>Story {n * 10 + i}: the council voted on plan {n * 7 + i}, and residents in district {i} asked about route {n + i}</a></li>"
                for i in range(10)
            )
            return self.send(200, page(f"News, page {n}", f"<ul>{items}</ul>"))
        if len(parts) == 2 and parts[0] == "item" and parts[1].isdigit() and int(parts[1]) < len(PRODUCTS):
            p = PRODUCTS[int(parts[1])]
            sid = (q.get("sid") or [""])[0]
            body = "".join(f"<p>The {p} model {k}: a sturdy {p} with a two-year warranty, spare parts for ten years and a manual in twelve languages.</p>" for k in range(8))
            return self.send(200, page(f"The {p}", body + f'<a href="/item/{parts[1]}?sid={sid}">permalink</a>'))
        if parts == ["login"]:
            return self.send(200, page("Sign in", "<form method=post><input name=user><input type=password name=pass><button>Sign in</button></form>"))
        if parts == ["old-intro"]:
            return self.send(301, "", location="/docs/intro")
        return self.send(200, page("Page not found", "<p>Sorry, we could not find that page. It may have moved, or the link may be wrong. Try the home page or the search.</p>"))


if __name__ == "__main__":
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
