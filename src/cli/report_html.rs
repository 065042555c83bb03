//! `similar`/`cluster -o report.html`: the cluster report as one self-contained HTML file a
//! person can look at — clusters as rows of thumbnails, the canonical page first, each member's
//! URL, status, rule class and distance to the canonical; filterable by host and class and
//! sortable without a server.
//!
//! Self-contained means opening it makes no request: styles and the script are inline,
//! thumbnails are `data:` URIs (small JPEGs, [`crate::render::thumb::thumbnail`]), and a Content-Security-Policy
//! (`default-src 'none'`, images from `data:` only, the one inline script allowed by its
//! SHA-256) makes the browser refuse anything else, so
//! a URL or title taken from a crawled page can never make the report fetch it. Every text from
//! a page is HTML-escaped; links to the pages are plain `<a href>`s (followed only when clicked,
//! and only `http(s)` URLs become links).

use super::lines::count_of;
use std::fmt::Write as _;

use crate::render::thumb::base64;

/// Whether `s` is a thumbnail this report may embed: a base64 `data:` URI of a PNG or JPEG and
/// nothing else (a thumbnail given in `cluster`'s input is untrusted).
pub fn is_data_image(s: &str) -> bool {
    let body = s
        .strip_prefix("data:image/jpeg;base64,")
        .or_else(|| s.strip_prefix("data:image/png;base64,"));
    body.is_some_and(|b| {
        !b.is_empty()
            && b.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='))
    })
}

/// `s` escaped for HTML text and attribute values.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// One page as the report shows it.
pub struct Member<'a> {
    /// The report's id of the page (1-based, as in the JSON report).
    pub id: usize,
    pub url: &'a str,
    pub final_url: &'a str,
    pub status: u16,
    pub title: &'a str,
    /// The rule class (`E1` …), if a rule clustered it.
    pub class: Option<&'static str>,
    /// 1 − similarity to the cluster's canonical page (0 for the canonical); none where nothing
    /// was measured (a page in no cluster, a rule-cluster member without HTML).
    pub distance: Option<f64>,
    pub error: &'a str,
    /// A `data:` URI ([`thumbnail`]); none: a placeholder.
    pub thumb: Option<&'a str>,
    /// Whether Chromium rendered it (`Some(false)`: seen over HTTP, compared on content and
    /// structure; `None`: not said).
    pub rendered: Option<bool>,
}

/// One cluster: its id, class, members (the canonical first).
pub struct Group<'a> {
    pub id: &'a str,
    pub class: Option<&'static str>,
    pub members: Vec<Member<'a>>,
}

/// The host of a URL, for the host filter.
fn host(url: &str) -> &str {
    crate::url::lex::host_port(url)
}

/// The whole report. `unclustered`: the pages in no cluster (errors, non-HTML, singletons).
pub fn render(
    command: &str,
    generated_at: &str,
    total_pages: usize,
    groups: &[Group],
    unclustered: &[Member],
    probes: &[(String, String, String)],
    learned: &[crate::page::params::Learned],
) -> String {
    let mut h = String::with_capacity(64 * 1024);
    head(
        &mut h,
        command,
        generated_at,
        total_pages,
        groups,
        unclustered,
    );
    selectors(&mut h, groups, unclustered);
    clusters(&mut h, groups);
    probes_table(&mut h, probes);
    learned_table(&mut h, learned);
    legend(&mut h);
    if !unclustered.is_empty() {
        h.push_str(
            "<details id=\"unclustered\"><summary>Pages in no cluster</summary><div class=\"row\">",
        );
        for m in unclustered {
            member(&mut h, m, false);
        }
        h.push_str("</div></details>\n");
    }
    let _ = write!(h, "<script>{SCRIPT}</script>\n</body></html>\n");
    h
}

/// 1. Write the head (Content-Security-Policy, title, styles) and the header's summary line.
fn head(
    h: &mut String,
    command: &str,
    generated_at: &str,
    total_pages: usize,
    groups: &[Group],
    unclustered: &[Member],
) {
    h.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    // The one script runs by its hash: escaping is not the only barrier against a page's text
    // becoming code.
    let script_hash = {
        use sha2::Digest as _;
        base64(&sha2::Sha256::digest(SCRIPT.as_bytes()))
    };
    let _ = writeln!(
        h,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'\">"
    );
    let _ = write!(
        h,
        "<title>crawlsieve {} report</title>\n<style>{CSS}</style></head><body>\n",
        esc(command)
    );
    let _ = writeln!(
        h,
        "<header><h1>crawlsieve {}</h1><p id=\"summary\">{}, <b id=\"cluster-count\">{}</b> {}, {} in no cluster; generated {}</p>",
        esc(command),
        count_of(total_pages as u64, "page", "pages"),
        groups.len(),
        if groups.len() == 1 { "cluster" } else { "clusters" },
        count_of(unclustered.len() as u64, "page", "pages"),
        esc(generated_at)
    );
}

/// The legend: what each class, the distance and the gate's reasons mean.
fn legend(h: &mut String) {
    h.push_str("<details id=\"legend\" open><summary>Legend</summary><table>");
    for (k, v) in crate::page::rule_pages::LEGEND {
        let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    h.push_str("</table></details>\n");
}

/// 2. Write the host, class and sort selectors, closing the header and opening the clusters.
fn selectors(h: &mut String, groups: &[Group], unclustered: &[Member]) {
    let mut hosts: Vec<&str> = groups
        .iter()
        .flat_map(|g| g.members.iter())
        .chain(unclustered)
        .map(|m| host(m.final_url))
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    let mut classes: Vec<&str> = groups
        .iter()
        .map(|g| g.class.unwrap_or("similar"))
        .collect();
    classes.sort_unstable();
    classes.dedup();

    h.push_str("<label>Host <select id=\"host\"><option value=\"\">all hosts</option>");
    for x in &hosts {
        let _ = write!(h, "<option>{}</option>", esc(x));
    }
    h.push_str(
        "</select></label> <label>Class <select id=\"cls\"><option value=\"\">all classes</option>",
    );
    for c in &classes {
        let _ = write!(h, "<option>{}</option>", esc(c));
    }
    h.push_str("</select></label> <label>Sort <select id=\"sort\"><option value=\"size\">largest first</option><option value=\"host\">by host</option><option value=\"class\">by class</option><option value=\"order\">report order</option></select></label> <span id=\"shown\"></span></header>\n<main id=\"clusters\">\n");
}

/// 3. Write each cluster as a section: a row of its members, the canonical first.
fn clusters(h: &mut String, groups: &[Group]) {
    for (i, g) in groups.iter().enumerate() {
        let class = g.class.unwrap_or("similar");
        let canon_host = g.members.first().map_or("", |m| host(m.final_url));
        let hosts_of: Vec<&str> = g.members.iter().map(|m| host(m.final_url)).collect();
        let _ = write!(
            h,
            "<section class=\"cluster\" data-order=\"{i}\" data-size=\"{}\" data-class=\"{}\" data-host=\"{}\" data-hosts=\"{}\"><h2>{} <span class=\"cls\">{}</span> <span class=\"n\">{}</span></h2><div class=\"row\">",
            g.members.len(),
            esc(class),
            esc(canon_host),
            esc(&format!(" {} ", hosts_of.join(" "))),
            esc(g.id),
            esc(class),
            count_of(g.members.len() as u64, "page", "pages")
        );
        for (k, m) in g.members.iter().enumerate() {
            member(h, m, k == 0);
        }
        h.push_str("</div></section>\n");
    }
    h.push_str("</main>\n");
}

/// 4. Write the table of soft-404 probes, if there were any.
fn probes_table(h: &mut String, probes: &[(String, String, String)]) {
    if !probes.is_empty() {
        h.push_str("<section id=\"soft404\"><h2>Soft-404 probes</h2><p>One URL that cannot exist per host and first path segment; pages matching a soft-404 answer are class <code>soft_404</code>.</p><table><tr><th>scope</th><th>probe</th><th>answer</th></tr>");
        for (scope, probe, answer) in probes {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(scope),
                esc(probe),
                esc(answer)
            );
        }
        h.push_str("</table></section>\n");
    }
}

/// 5. Write the table of parameters learned to change nothing, if any were.
fn learned_table(h: &mut String, learned: &[crate::page::params::Learned]) {
    if !learned.is_empty() {
        h.push_str("<section id=\"learned\"><h2>Parameters that change nothing</h2><p>Query parameters whose value did not change the page (same main text and DOM shape) on at least five values over three paths, with no counter-example: the render stage publishes such rules and the gate deduplicates that host's URLs without the parameter (<code>crawlsieve rules list</code>).</p><table><tr><th>host</th><th>parameter</th><th>values</th><th>paths</th><th>example</th></tr>");
        for l in learned {
            let _ = write!(
                h,
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&l.host),
                esc(&l.param),
                l.values,
                l.paths,
                esc(&l.example)
            );
        }
        h.push_str("</table></section>\n");
    }
}

fn member(h: &mut String, m: &Member, canonical: bool) {
    let _ = write!(
        h,
        "<figure class=\"member{}\" data-id=\"{}\">",
        if canonical { " canonical" } else { "" },
        m.id
    );
    match m.thumb.filter(|t| is_data_image(t)) {
        Some(t) => {
            let _ = write!(h, "<img class=\"thumb\" alt=\"\" src=\"{t}\">");
        }
        None if m.rendered == Some(false) && m.error.is_empty() => h.push_str(
            "<div class=\"thumb none\" title=\"fetched over HTTP, not rendered: compared on content and structure\">HTML only</div>",
        ),
        None => h.push_str("<div class=\"thumb none\">no screenshot</div>"),
    }
    let link = if m.final_url.starts_with("http://") || m.final_url.starts_with("https://") {
        format!(
            "<a href=\"{0}\" rel=\"noreferrer noopener\" target=\"_blank\">{0}</a>",
            esc(m.final_url)
        )
    } else {
        esc(m.final_url)
    };
    let asked = if m.url != m.final_url && !m.url.is_empty() {
        format!("<br><span class=\"meta\">asked {}</span>", esc(m.url))
    } else {
        String::new()
    };
    let _ = write!(
        h,
        "<figcaption>{link}{asked}<br><span class=\"meta\">{}{} · {}{}</span>{}{}</figcaption></figure>",
        if canonical { "canonical · " } else { "" },
        if m.status == 0 { "no status".to_string() } else { format!("HTTP {}", m.status) },
        esc(m.class.unwrap_or("similar")),
        m.distance.map_or(String::new(), |d| format!(" · distance {d:.3}")),
        if m.title.is_empty() { String::new() } else { format!("<br><span class=\"title\">{}</span>", esc(m.title)) },
        if m.error.is_empty() { String::new() } else { format!("<br><span class=\"error\">{}</span>", esc(m.error)) },
    );
}

const CSS: &str = "body{font:14px system-ui,sans-serif;margin:0 1em;color:#222}header{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ccc}h1{font-size:1.2em;margin:.2em 0}.cluster{border-bottom:1px solid #eee;padding:.4em 0}.cluster h2{font-size:1em;margin:.2em 0}.cls{background:#eef;padding:0 .4em;border-radius:3px}.n{color:#666;font-weight:normal}.row{display:flex;gap:.6em;overflow-x:auto;padding-bottom:.3em}.member{margin:0;width:170px;flex:none}.member.canonical .thumb{outline:3px solid #2a7}.thumb{width:160px;height:100px;object-fit:cover;object-position:top;border:1px solid #ccc;display:block}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;word-break:break-all}.thumb.none{display:flex;align-items:center;justify-content:center;color:#999;background:#f6f6f6}figcaption{font-size:11px;word-break:break-all}.meta{color:#555}.error{color:#b00}.title{color:#333}[hidden]{display:none!important}";

const SCRIPT: &str = "(function(){var host=document.getElementById('host'),cls=document.getElementById('cls'),sort=document.getElementById('sort'),main=document.getElementById('clusters'),shown=document.getElementById('shown');function apply(){var hv=host.value,cv=cls.value,n=0;var cs=Array.prototype.slice.call(main.querySelectorAll('.cluster'));cs.forEach(function(c){var ok=(!hv||c.dataset.hosts.indexOf(' '+hv+' ')>=0)&&(!cv||c.dataset.class===cv);c.hidden=!ok;if(ok)n++;});var k=sort.value;cs.sort(function(a,b){if(k==='size')return b.dataset.size-a.dataset.size||a.dataset.order-b.dataset.order;if(k==='host')return a.dataset.host.localeCompare(b.dataset.host)||a.dataset.order-b.dataset.order;if(k==='class')return a.dataset.class.localeCompare(b.dataset.class)||a.dataset.order-b.dataset.order;return a.dataset.order-b.dataset.order;});cs.forEach(function(c){main.appendChild(c);});shown.textContent=n+' shown';}host.onchange=cls.onchange=sort.onchange=apply;apply();})();";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_data_images_are_embedded_and_page_text_is_escaped() {
        assert!(is_data_image("data:image/jpeg;base64,/9j/4AAQ=="));
        assert!(!is_data_image("https://evil.example/x.png"));
        assert!(!is_data_image("data:image/svg+xml;base64,PHN2Zz4="));
        assert!(!is_data_image("data:image/png;base64,AA\" onerror=\"x"));
        let m = Member {
            id: 1,
            url: "https://h.example/<x>",
            final_url: "https://h.example/\"><script>alert(1)</script>",
            status: 200,
            title: "<b>t</b>",
            class: None,
            distance: Some(0.0),
            error: "",
            thumb: Some("https://evil.example/t.png"),
            rendered: None,
        };
        let g = [Group {
            id: "c1",
            class: Some("E3"),
            members: vec![m],
        }];
        let html = render("cluster", "now", 1, &g, &[], &[], &[]);
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(
            !html.contains("evil.example"),
            "an untrusted thumbnail is not embedded"
        );
        assert!(html.contains("no screenshot"));
        assert!(html.contains("&lt;b&gt;t&lt;/b&gt;"));
        assert!(html.contains("default-src 'none'"));
        assert!(
            html.contains("script-src 'sha256-") && !html.contains("script-src 'unsafe-inline'")
        );
    }
}
