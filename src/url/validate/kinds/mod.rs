//! Issue 27: what a string *is*, recognised by its grammar, for candidates found in scripts and
//! in text — rules written from the kinds of junk an independent labelled set showed (listed
//! in the issue), never from the strings themselves, and measured on a hold-out set no rule
//! was written from (`tests/data/context-holdout/`).
//!
//! Each rule is a small recogniser of one kind of string (a CSS selector, a TeX macro, a
//! regular expression, a bundler request, a path into a package's dependencies, a device
//! file, a URL carrying a password, a character reference an extractor cut), with its own
//! reason code and, in its doc comment, why no request a crawler should make matches it in the
//! contexts where it runs. None runs on an `html_attr` or `css` candidate: there a page's
//! author wrote what the browser requests.

use crate::url::lex::scheme_of;
use crate::url::Context;
use crate::url::Reason;

/// Rules on the candidate as found (after the context's decoding, before the cleaning that
/// turns `\` into `/`): a backslash is still a backslash here.
pub(super) fn raw_rules(raw: &str, ctx: Context, keep_namespaces: bool) -> Option<Reason> {
    // A tag's `/>` (any context): cleaning would trim the `>` and leave the site's root.
    if raw.trim_start().starts_with("/>") {
        return Some(Reason::HtmlTag);
    }
    match ctx {
        Context::Js | Context::Text | Context::HtmlText => {}
        _ => return None,
    }
    let b = raw.trim().as_bytes();
    if b.is_empty() {
        return None;
    }
    if tex_macro(b) {
        return Some(Reason::TexMacro);
    }
    // An absolute URL's query and fragment are its site's: only its head is judged, as
    // `unknown`'s rule judges (a search for `(?:a|b)` is a request, and the canonical form of a
    // kept candidate, read again in its own context, must pass — cargo fuzz found
    // `https://docs.site.org/dir/page.html?f(??f(?9o?6(?:` rejected in a script).
    let judged = if scheme_of(b).is_some() || b.starts_with(b"//") {
        before_query(b)
    } else {
        b
    };
    if !judged.is_empty() && regex_source(judged, ctx == Context::Js) {
        return Some(Reason::RegexSource);
    }
    if ctx == Context::Js && !keep_namespaces && namespace_like(b) {
        return Some(Reason::XmlNamespace);
    }
    // Before cleaning: `&#39` would be a fragment (`#39`) to it, and gone.
    if ctx == Context::Text && char_ref_residue(b) {
        return Some(Reason::CharRefResidue);
    }
    None
}

/// A TeX or LaTeX macro: a backslash and a control word (`\frac{1}{2}`, `\mathrm`, `\left(`),
/// with no `/` or `.` anywhere.
///
/// Why no request matches: a browser reads `\` as `/` in an http(s) path, so `\frac{a}` would
/// be the root-relative path `/frac{a}`; no page is named with braces and TeX operators, and a
/// real relative path written with backslashes (`images\a.png`) has a `.` or a `/`, which this
/// rule leaves alone.
fn tex_macro(b: &[u8]) -> bool {
    if b[0] != b'\\' {
        return false;
    }
    let word = b[1..]
        .iter()
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    if word < 2 {
        return false;
    }
    let rest = &b[1 + word..];
    let next_ok = rest
        .first()
        .is_none_or(|c| matches!(c, b'{' | b'[' | b'(' | b'\\' | b' ' | b'^' | b'_'));
    next_ok && !b.iter().any(|&c| c == b'/' || c == b'.')
}

/// Regular-expression source: a regex escape (`\.`, or `\d`, `\w`, `\s`, `\b` and their
/// negations not followed by a letter or digit; in scripts also `\/`), a group construct
/// (`(?:`, `(?=`, `(?!`, `(?<`), a negated class (`[^`), or a leading `^` anchor.
///
/// Why no request matches: these sequences are regex syntax, not URL text. A URL never starts
/// with `^` (a browser would percent-encode it); `\.` makes a path segment start with a dot
/// after a separator (`www\.host\.org` → `www/.host/.org`), which no page is; `(?:` and `[^`
/// are not characters of a link anyone writes. A Windows-style relative path keeps its letters
/// after the backslash (`..\docs\index.html`: `\d` followed by `o`), and passes.
fn regex_source(b: &[u8], js: bool) -> bool {
    if b[0] == b'^' {
        return true;
    }
    for (i, w) in b.windows(2).enumerate() {
        match w {
            [b'\\', b'.'] => return true,
            [b'\\', b'/'] if js => return true,
            [b'\\', b'd' | b'w' | b's' | b'b' | b'D' | b'W' | b'S']
                if !b.get(i + 2).is_some_and(|n| n.is_ascii_alphanumeric()) =>
            {
                return true;
            }
            [b'[', b'^'] => return true,
            [b'(', b'?'] => {
                if matches!(b.get(i + 2), Some(b':' | b'=' | b'!' | b'<')) {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// `b` before its query or fragment: up to the first `#`, or the first `?` that opens no
/// regex group (`(?:`).
fn before_query(b: &[u8]) -> &[u8] {
    let end = (0..b.len())
        .find(|&i| b[i] == b'#' || b[i] == b'?' && (i == 0 || b[i - 1] != b'('))
        .unwrap_or(b.len());
    &b[..end]
}

/// (No context) regular-expression syntax no link has: a leading `^`, or before any `?`/`#` a
/// group construct (`(?:`, `(?=`, `(?!`, `(?<`) or a negated class (`[^`). Not the escapes of
/// [`regex_source`]: where the context is not said, `img\b.gif` may be an `href` written with
/// Windows separators, and a query may carry a regex search (`?q=(?:a|b)`, found by review).
pub(super) fn regex_syntax(b: &[u8]) -> bool {
    if b[0] == b'^' {
        return true;
    }
    let head = before_query(b);
    memchr::memchr2_iter(b'(', b'[', head).any(|i| match (head[i], head.get(i + 1)) {
        (b'(', Some(b'?')) => matches!(head.get(i + 2), Some(b':' | b'=' | b'!' | b'<')),
        (b'[', Some(b'^')) => true,
        _ => false,
    })
}

/// (Scripts) the identifier of an XML or RDF vocabulary beyond the fixed list of
/// [`super::xml_namespace`]: an absolute http(s) URL with no query on a namespace host
/// (`xmlns.…`, `schemas.…`, and the vocabularies' own hosts `ns.adobe.com`, `purl.org`), or
/// whose path *ends* in a `ns` segment followed by a fragment (`…/ns#`, `…/ns/#term`). Not any host starting with `ns.`
/// (`ns.nl` is a railway's site) nor a `ns` segment inside a path (`/jobs/ns/halifax`,
/// `/ns/index.html`): found by review. (Not every URL ending in `#`: on the shared corpus that took JSON
/// Schema's `http://json-schema.org/draft-07/schema#`, which serves the meta-schema.)
///
/// Why no request matches: a script holds these as names to compare element and attribute
/// namespaces with (`createElementNS`, RDF/XMP parsers); they are never fetched, and many
/// answer nothing or a generic page. A page a script really loads by absolute URL has a
/// document name or a query, not a vocabulary's name.
fn namespace_like(b: &[u8]) -> bool {
    let Some(s) = scheme_of(b) else {
        return false;
    };
    if !s.eq_ignore_ascii_case(b"http") && !s.eq_ignore_ascii_case(b"https") {
        return false;
    }
    let rest = &b[s.len() + 1..];
    let Some(rest) = rest.strip_prefix(b"//") else {
        return false;
    };
    if rest.contains(&b'?') {
        return false;
    }
    let host_end = rest
        .iter()
        .position(|&c| matches!(c, b'/' | b'#'))
        .unwrap_or(rest.len());
    let host = rest[..host_end].to_ascii_lowercase();
    if host.starts_with(b"xmlns.")
        || host.starts_with(b"schemas.")
        || host == b"purl.org"
        || host == b"ns.adobe.com"
    {
        return true;
    }
    if modelling_vocabulary(&host, &rest[host_end..], s.eq_ignore_ascii_case(b"http")) {
        return true;
    }
    // The `ns` segment only with the fragment a vocabulary's terms hang on (`…/ns#`,
    // `…/ns/#term`): without one, `https://site/ns` is also the canonical form of a script's
    // `'/ns'` on that site, which must pass as it did (cargo fuzz, reading a kept candidate's
    // canonical form back in its own context).
    let path = &rest[host_end..];
    let Some(hash) = path.iter().position(|&c| c == b'#') else {
        return false;
    };
    let path = &path[..hash];
    let path = path.strip_suffix(b"/").unwrap_or(path);
    path.rsplit(|&c| c == b'/').next() == Some(&b"ns"[..])
}

/// (Scripts) the namespace URI of a modelling tool's XML or EMF vocabulary (issue 46), by the
/// way these are written: the OMG's specification URIs, dated (`http://www.omg.org/spec/BPMN/20100524/MODEL`,
/// `http://schema.omg.org/spec/XMI/2.1`; not `https://www.omg.org/spec/PYTH/1.2/PDF`, a page), Eclipse's EMF, UML2, GMF and XSD packages
/// (`http://www.eclipse.org/emf/2002/Ecore`, `http://www.eclipse.org/uml2/5.0.0/UML`), the
/// BPMN vendors' extensions (`http://bpmn.io/schema/bpmn`, `http://camunda.org/schema/1.0/bpmn`,
/// `http://activiti.org/bpmn`), and, on `http:` only, a path ending `…/schema/NAME/1.0/`
/// (a dotted version last).
///
/// Why no request matches: modellers (bpmn-js, diagram-js, EMF's JavaScript ports) hold these
/// as the names they compare element namespaces with, never as pages; most answer nothing or
/// redirect to a home page. The generic form is limited to `http:` (namespaces are written so
/// by convention; an API a script calls is `https:` today) and to a dotted version last
/// (`https://api.site/schema/v1/users`, `http://api.site/schema/2/users` pass). The projects'
/// own pages pass (found by review): `https://www.eclipse.org/emf/docs/`,
/// `https://www.omg.org/spec/BPMN/20100501/BPMN20.xsd`, `http://yaml.org/spec/1.2/#intro`.
fn modelling_vocabulary(host: &[u8], path: &[u8], http: bool) -> bool {
    let host = host.strip_prefix(b"www.").unwrap_or(host);
    // Most absolute URLs are none of these: no segment list for them.
    let known = matches!(
        host,
        b"omg.org"
            | b"schema.omg.org"
            | b"eclipse.org"
            | b"bpmn.io"
            | b"camunda.org"
            | b"activiti.org"
    );
    let schema_path = http && memchr::memmem::find(path, b"/schema/").is_some();
    if !known && !schema_path {
        return false;
    }
    let date8 = |s: &[u8]| s.len() == 8 && s.iter().all(u8::is_ascii_digit);
    // A version: digits with a dot (`1.0`, `5.0.0`), a year (`2002`) or a date (`20100524`);
    // not a bare number, which is an id (`/spec/41234/config`).
    let version = |s: &[u8]| {
        s.first().is_some_and(u8::is_ascii_digit)
            && s.iter().all(|&c| c.is_ascii_digit() || c == b'.')
            && (s.contains(&b'.') || s.len() == 4 || s.len() == 8)
    };
    let file_name = |s: &[u8]| s.contains(&b'.') && !version(s);
    // The path without its fragment (`http://yaml.org/spec/1.2/#intro` is a page's section).
    let path = &path[..path.iter().position(|&c| c == b'#').unwrap_or(path.len())];
    let segs: Vec<&[u8]> = path
        .split(|&c| c == b'/')
        .filter(|s| !s.is_empty())
        .collect();
    let first = segs.first().copied().unwrap_or_default();
    let last = segs.last().copied().unwrap_or_default();
    match host {
        // Not the specifications' own pages (`https://www.omg.org/spec/PYTH/1.2/PDF`, found
        // on the shared corpus): a namespace carries the date of its schema, `20100524`.
        b"omg.org" => return first == b"spec" && segs.iter().any(|s| date8(s)) && !file_name(last),
        b"schema.omg.org" if first == b"spec" => return true,
        // A package's namespace has its year or version next (`/emf/2002/Ecore`,
        // `/uml2/5.0.0/UML`); `https://www.eclipse.org/emf/docs/` is the project's page.
        b"eclipse.org" => {
            return matches!(first, b"emf" | b"uml2" | b"gmf" | b"xsd" | b"ocl")
                && segs.get(1).is_some_and(|s| version(s))
        }
        b"bpmn.io" | b"camunda.org" if first == b"schema" => return true,
        b"activiti.org" if first == b"bpmn" => return true,
        _ => {}
    }
    // Elsewhere, on `http:` only: `…/schema/NAME/1.0/` (pdf.js's XFA namespaces,
    // `http://www.xfa.org/schema/xfa-data/1.0/`): a `schema` segment, a name, and a dotted
    // version last. Not `spec` (`http://www.yaml.org/spec/1.2/errata` is a page, found by
    // review) nor a bare number (`http://api.site.com/schema/2/users`).
    http && segs.len() >= 3
        && segs[segs.len() - 3] == b"schema"
        && last.contains(&b'.')
        && version(last)
}

/// The rules for a candidate whose context is not said (`unknown`, no scheme): only what the
/// string itself shows it is, whatever it was found in — a CSS selector with a combinator,
/// pseudo-class or attribute test (`.nav > .item`, `.btn:hover`: no file is named so), a
/// loader request, a device file. Not a bare `.name` or `.a.b`: linked from a page, `.env`
/// or `.env.local` is a file a security scanner must see. Not the script-only rules
/// (`ace/mode/x` may be an `href`), nor `package_internal` (an `href` may link a
/// dependency's folder by hand).
///
/// `code_punct`: the candidate holds a byte of code punctuation (`!`, `(`, `[`, a space…);
/// without one, no loader request can match.
pub(super) fn shape_kinds(b: &[u8], code_punct: bool) -> Option<Reason> {
    if b[0] == b'.' && dot_name(b) == Some(Reason::CssSelector) && selector_syntax(b) {
        return Some(Reason::CssSelector);
    }
    if code_punct && loader_request(b) && loader_chain(b) {
        return Some(Reason::LoaderRequest);
    }
    // Not `/sys/…` here: a site's `/sys/class/2024/` or `/sys/bus/routes` reads as sysfs (found
    // by review), and an `href` may hold it.
    if device_path(b, false) {
        return Some(Reason::DevicePath);
    }
    None
}

/// Selector syntax after a leading class name, as no file name has it (found by review:
/// `.env~`, `.htaccess,v` and `.env:Zone.Identifier` are files): a combinator or list
/// separator followed, after spaces, by a selector's start (`.`, `#`, `[`, `*`, `:`); a
/// pseudo-class or pseudo-element of CSS's common ones; an attribute test `[name…]`.
fn selector_syntax(b: &[u8]) -> bool {
    const PSEUDO: [&[u8]; 16] = [
        b"hover",
        b"focus",
        b"active",
        b"visited",
        b"disabled",
        b"checked",
        b"before",
        b"after",
        b"not(",
        b"first-child",
        b"last-child",
        b"nth-child(",
        b"focus-within",
        b"focus-visible",
        b"empty",
        b"placeholder",
    ];
    b.iter().enumerate().skip(1).any(|(i, &c)| match c {
        b' ' | b'>' | b'+' | b'~' | b',' => {
            let next = b[i + 1..].iter().find(|&&n| n != b' ');
            matches!(next, Some(b'.' | b'#' | b'[' | b'*' | b':'))
        }
        b':' => {
            let rest = &b[i + 1..];
            let rest = rest.strip_prefix(b":").unwrap_or(rest);
            PSEUDO.iter().any(|p| rest.starts_with(p))
        }
        b'[' => b.get(i + 1).is_some_and(u8::is_ascii_alphabetic) && b[i..].contains(&b']'),
        _ => false,
    })
}

/// A loader request proper, where the context is not said: a loader's name ending in `loader`,
/// a chain starting with `!`/`-!`, or a plugin followed by `./`/`../` (found by review:
/// `Yahoo!/news.html` and `Help!/` are folders of sites).
fn loader_chain(b: &[u8]) -> bool {
    let Some(bang) = b.iter().position(|&c| c == b'!') else {
        return false;
    };
    let prefix = &b[..bang];
    // The request after the last `!`: a module (`./x.css`, `../y`), not a query's value.
    let last = &b[b.iter().rposition(|&c| c == b'!').unwrap_or(bang) + 1..];
    let module = last.starts_with(b"./") || last.starts_with(b"../");
    prefix.is_empty()
        || prefix == b"-"
        || module
            && prefix.iter().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'@' | b'?' | b'=')
            })
}

/// The rules for a relative candidate found in a script (no scheme, not `//host`), run with
/// the other JavaScript rules.
pub(super) fn js_kinds(b: &[u8]) -> Option<Reason> {
    if let Some(r) = dot_name(b) {
        return Some(r);
    }
    if loader_request(b) {
        return Some(Reason::LoaderRequest);
    }
    if package_internal(b) {
        return Some(Reason::PackageInternal);
    }
    if device_path(b, true) {
        return Some(Reason::DevicePath);
    }
    None
}

/// (Scripts) a name that starts with a dot and has no `/`: a CSS selector (`.menu .item`,
/// `.a.b`, `.btn:hover`, `.x > .y`, `.a,.b`) is `css_selector`; a bare `.name` (a class
/// name, a hidden file's name, a build target such as `.PHONY`) is `dot_name`. A file with a
/// web extension (`.min.js`, `.eslintrc.json`) passes.
///
/// Why no request matches: relative to the page, `.menu` names a hidden file in its directory,
/// which web servers refuse or do not have; a script that loads a file names it with its
/// extension, and one that loads from a hidden directory (`.well-known/…`) has a `/`. In a
/// script, strings that start with a dot are selectors for `querySelector`, class names and
/// the like.
fn dot_name(b: &[u8]) -> Option<Reason> {
    if b.len() < 2 || b[0] != b'.' {
        return None;
    }
    let first = b[1];
    if !(first.is_ascii_alphabetic() || first == b'_' || first == b'-') {
        return None;
    }
    if b.contains(&b'/') || super::js::has_web_extension(b) {
        return None;
    }
    let selector = b[1..].iter().any(|c| {
        matches!(
            c,
            b' ' | b':' | b'>' | b'+' | b'~' | b',' | b'[' | b'(' | b'.'
        )
    });
    Some(if selector {
        Reason::CssSelector
    } else {
        Reason::DotName
    })
}

/// (Scripts) a bundler or module-loader request: loaders chained with `!`
/// (`style-loader!css-loader?modules!./x.css`, `!!raw-loader!./y`, `-!babel-loader!./z`) or
/// a loader plugin's prefix (`text!./tpl.html`, `json!./data.json`, RequireJS).
///
/// Why no request matches: the string is an instruction to the bundler or loader, which
/// resolves the path after the last `!` itself at build or load time. Relative to the page the
/// whole string names nothing. A real path with a `!` (`/wiki/Yahoo!`) has a `/` before it
/// and no `loader` there, and passes.
fn loader_request(b: &[u8]) -> bool {
    let Some(bang) = b.iter().position(|&c| c == b'!') else {
        return false;
    };
    if bang + 1 >= b.len() {
        return false;
    }
    let prefix = &b[..bang];
    if prefix.is_empty() || prefix == b"-" {
        return true; // `!!raw-loader!x`, `-!loader!x`
    }
    let name = prefix.split(|&c| c == b'?').next().unwrap_or(prefix);
    if !name
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'@' | b'/'))
    {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    // A loader's name (`css-loader`, `babel_loader`, `loader`), not a path or a word that ends
    // so (found by review: `/tools/downloader?title=Wow!Great`, `imageloader?src=a!b`).
    if !lower.starts_with(b"/")
        && (lower.ends_with(b"-loader") || lower.ends_with(b"_loader") || lower == b"loader")
    {
        return true;
    }
    // A loader plugin (`text!./tpl.html`): a bare name, no query, then a path (found by review:
    // `search?q=wow!great` is a search, not a plugin).
    let after = &b[bang + 1..];
    !prefix.contains(&b'?')
        && !lower.contains(&b'/')
        && !lower.contains(&b'.')
        && lower.first().is_some_and(u8::is_ascii_alphabetic)
        && (after.starts_with(b"./") || after.starts_with(b"../") || after.contains(&b'/'))
}

/// (Scripts) a path into a package's dependencies or its manifest: a `node_modules` module id
/// (`../node_modules/x/lib/util`, a bundler's `/../node_modules/x/index.js`) or a
/// `package.json` at the end (`./package.json`).
///
/// Why no request matches: bundlers and Node resolve these at build time; a published script
/// does not ask the browser for files by their place in its author's `node_modules` tree,
/// relative to whatever page it runs on. (A page that links a dependency by hand, in an
/// attribute, is not judged here.)
fn package_internal(b: &[u8]) -> bool {
    let path = b.split(|&c| c == b'?').next().unwrap_or(b);
    let last = path.rsplit(|&c| c == b'/').next().unwrap_or(path);
    if last == b"package.json" {
        return true;
    }
    // A file a site serves from its `node_modules` (`/node_modules/jquery/dist/jquery.min.js`
    // in a service worker's precache list) is requested: only module ids count — no web
    // extension, or a bundler's `/../node_modules/…` (found by review).
    path.split(|&c| c == b'/').any(|s| s == b"node_modules")
        && (!super::js::has_web_extension(last) || path.starts_with(b"/../"))
}

/// A device or kernel file of a Unix system: `/dev/null`, `/dev/tty0`, `/dev/stdin`,
/// `/dev/sda1`, `/proc/self/…`, `/proc/123/status`, `/proc/cpuinfo`, `/sys/class/…`.
///
/// Why no request matches: these are paths of the machine a program runs on, written in
/// scripts (Node code shipped to the browser) and manuals; as root-relative URLs they would
/// ask the site for `/dev/null`, which no site serves as a page. Only these device and kernel
/// names count: a site's own `/dev/` section (`/dev/blog/`) passes.
pub(super) fn device_path(b: &[u8], sysfs: bool) -> bool {
    if !(b.starts_with(b"/dev/") || b.starts_with(b"/proc/") || sysfs && b.starts_with(b"/sys/")) {
        return false;
    }
    // A page under such a name is a site's (found by review: `/sys/class/2024/schedule.html`,
    // with a query too).
    let b = &b[..b
        .iter()
        .position(|&c| c == b'?' || c == b'#')
        .unwrap_or(b.len())];
    let last = b.rsplit(|&c| c == b'/').next().unwrap_or(b);
    if super::js::has_web_extension(last) {
        return false;
    }
    // Whole segments only (found by review: `/dev/sdk/…`, `/dev/standards/`, `/dev/hdr-guide`
    // and `/proc/2021/paper.pdf` are pages of sites).
    fn seg(rest: &[u8]) -> (&[u8], &[u8]) {
        match rest.iter().position(|&c| c == b'/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, &[]),
        }
    }
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let letter_digits = |s: &[u8], prefix: &[u8]| {
        s.strip_prefix(prefix).is_some_and(|r| {
            r.first().is_some_and(u8::is_ascii_lowercase) && r.len() <= 3 && digits(&r[1..])
        })
    };
    if let Some(rest) = b.strip_prefix(b"/dev/") {
        let (name, after) = seg(rest);
        // A device is a file: nothing under it, but for the directories `fd/`, `pts/`, `shm/`.
        if !after.is_empty() && !matches!(name, b"fd" | b"pts" | b"shm") {
            return false;
        }
        return matches!(
            name,
            b"null"
                | b"zero"
                | b"random"
                | b"urandom"
                | b"stdin"
                | b"stdout"
                | b"stderr"
                | b"shm"
                | b"pts"
                | b"fd"
        ) || name
            .strip_prefix(b"tty")
            .is_some_and(|r| r.len() <= 4 && r.iter().all(u8::is_ascii_alphanumeric))
            || letter_digits(name, b"sd")
            || letter_digits(name, b"hd")
            || name
                .strip_prefix(b"loop")
                .is_some_and(|r| !r.is_empty() && digits(r))
            || name
                .strip_prefix(b"nvme")
                .is_some_and(|r| r.first().is_some_and(u8::is_ascii_digit));
    }
    if let Some(rest) = b.strip_prefix(b"/proc/") {
        let (name, after) = seg(rest);
        if matches!(name, b"self" | b"cpuinfo" | b"meminfo" | b"mounts") {
            return true;
        }
        // `/proc/<pid>/status`: a process id, then one of a process's files.
        let (file, _) = seg(after.strip_prefix(b"/").unwrap_or(after));
        return !name.is_empty()
            && digits(name)
            && matches!(
                file,
                b"status" | b"cmdline" | b"maps" | b"environ" | b"stat" | b"fd" | b"exe"
            );
    }
    if let Some(rest) = b.strip_prefix(b"/sys/") {
        let (name, after) = seg(rest);
        return matches!(name, b"class" | b"devices" | b"kernel" | b"block" | b"bus")
            && !after.is_empty();
    }
    false
}

/// The rules for a candidate found in text (`text`, `html_text`), after cleaning.
pub(super) fn text_kinds(
    b: &[u8],
    scheme: Option<&[u8]>,
    keep_placeholder_hosts: bool,
) -> Option<Reason> {
    if credentials(b, scheme) {
        return Some(Reason::Credentials);
    }
    if !keep_placeholder_hosts {
        if let Some(r) = placeholder_host(b, scheme, true) {
            return Some(r);
        }
    }
    if scheme.is_none() && device_path(b, true) {
        return Some(Reason::DevicePath);
    }
    None
}

/// (JavaScript, text) an email address written without `mailto:` (`user@example.com`,
/// `실례@example.com`, a contact address in a script or a page's text): nothing but one `@`
/// between a local part and a host name of two labels or more, whose top-level name a registry
/// delegates (the Public Suffix List's ICANN section). A browser would request it as a relative
/// path, which names no page. `icon@2x.png` is an image (`png` is no top-level name),
/// `clip@2x.mov` one too (a scale factor before the dot), and `core-js@3.4.1` a package;
/// anything with `/` or `:` is judged as a path.
pub(super) fn email_address(b: &[u8]) -> bool {
    let Some(at) = memchr::memchr(b'@', b) else {
        return false;
    };
    let (local, host) = (&b[..at], &b[at + 1..]);
    let local_ok = |c: &u8| {
        c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'%' | b'+' | b'-') || *c >= 0x80
    };
    let host_ok = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-') || *c >= 0x80;
    if local.is_empty() || !local.iter().all(local_ok) || !host.iter().all(host_ok) {
        return false;
    }
    let labels: Vec<&[u8]> = host.split(|&c| c == b'.').collect();
    if labels.len() < 2 || labels.iter().any(|l| l.is_empty()) {
        return false;
    }
    // `push-button@2x.mov`: a scale factor, and a file whose extension is also a top-level
    // name (`.mov`, `.zip`; found by review).
    let (first, tld) = (labels[0], labels[labels.len() - 1]);
    if first.last() == Some(&b'x')
        && first.len() > 1
        && first[..first.len() - 1]
            .iter()
            .all(|c| c.is_ascii_digit() || *c == b'.')
    {
        return false;
    }
    if tld.len() < 2 || !tld.iter().all(u8::is_ascii_alphabetic) {
        return false;
    }
    let lower = host.to_ascii_lowercase();
    psl::suffix(&lower).is_some_and(|s| s.is_known() && s.typ() == Some(psl::Type::Icann))
}

/// The host a candidate is *written* with (an absolute or protocol-relative URL), lowercased,
/// without user info, port or a trailing dot; `None` for a relative candidate (whose host is
/// its page's: never judged here, so a crawl of a test site follows its relative links).
///
/// The host as the WHATWG parser reads it (percent-decoded, IDNA-mapped: `www。example。com`
/// is `www.example.com`); an IP address in any spelling (`0xd83ad6ce`) is no name: `None`, the
/// address policy judges it (found by review).
fn written_host(b: &[u8], scheme: Option<&[u8]>) -> Option<String> {
    let rest = match scheme {
        Some(s) => &b[s.len() + 1..],
        None => b,
    };
    if !rest.starts_with(b"//") {
        // `http:/h/x` and `http:h/x` are `http://h/x` to the parser wherever the base's scheme
        // is another (WHATWG: a special scheme takes the first segment as its host): judged as
        // that host (cargo fuzz: `http:/h` was kept in a script, its canonical `http://h/`
        // rejected). Against a base of the same scheme they are relative paths, and a text's
        // `http:/server/x` is a mistyped URL either way.
        if let Some(s) = scheme {
            let hostish = rest.iter().position(|&c| c != b'/' && c != b'\\');
            if let (true, Some(i)) = (
                s.eq_ignore_ascii_case(b"http") || s.eq_ignore_ascii_case(b"https"),
                hostish,
            ) {
                let mut framed = b"//".to_vec();
                framed.extend_from_slice(&rest[i..]);
                return written_host(&framed, None);
            }
            return None;
        }
        // `intranet:8080/x` is `https://intranet:8080/x` to canonicalization: the same host
        // (a newcomer's review found it kept while its canonical form was rejected).
        if super::super::lex::is_host_port(b) {
            let mut framed = b"//".to_vec();
            framed.extend_from_slice(b);
            return written_host(&framed, None);
        }
        return None;
    }
    // The common case without the parser: a host of ASCII letters, digits, `-` and `.` whose
    // last label starts with a letter (so no IPv4 spelling) and holds no `xn--` label (which the
    // parser validates): what the parser gives is its lower-case form.
    let auth = &rest[2..];
    let auth = &auth[..auth
        .iter()
        .position(|&c| matches!(c, b'/' | b'?' | b'#' | b'\\'))
        .unwrap_or(auth.len())];
    let host = match auth.iter().rposition(|&c| c == b'@') {
        Some(at) => &auth[at + 1..],
        None => auth,
    };
    let colon = host.iter().position(|&c| c == b':').unwrap_or(host.len());
    let (host, port) = host.split_at(colon);
    let trimmed = host.strip_suffix(b".").unwrap_or(host);
    let last = trimmed.rsplit(|&c| c == b'.').next().unwrap_or(trimmed);
    // A port the parser refuses (`:port`, `:99999`) makes no URL: the parser says so.
    let port_ok = port.len() <= 1
        || port.len() <= 6 && port[1..].iter().all(u8::is_ascii_digit) && {
            port[1..]
                .iter()
                .fold(0u32, |n, d| n * 10 + u32::from(d - b'0'))
                <= 65535
        };
    if port_ok
        && !trimmed.is_empty()
        && last.first().is_some_and(u8::is_ascii_alphabetic)
        && trimmed
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.'))
        && !trimmed.windows(4).any(|w| w.eq_ignore_ascii_case(b"xn--"))
        && !trimmed.windows(2).any(|w| w == b"..")
    {
        return Some(String::from_utf8_lossy(trimmed).to_ascii_lowercase());
    }
    parsed_host(rest)
}

/// [`written_host`] by the WHATWG parser, for `rest` starting with `//`.
fn parsed_host(rest: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(rest).ok()?;
    let u = url::Url::parse(&format!("http:{text}")).ok()?;
    match u.host()? {
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.');
            (!d.is_empty()).then(|| d.to_ascii_lowercase())
        }
        url::Host::Ipv4(_) | url::Host::Ipv6(_) => None,
    }
}

/// (Text) a URL written with a host no crawl of the public web reaches: a name reserved for
/// documentation and tests — `example.com`, `example.net`, `example.org` and their subdomains
/// (RFC 2606), the top-level names `.example`, `.test`, `.invalid` (RFC 2606, RFC 6761) —
/// (`reserved_host`); a single label (`http://server/x`, `http://intranet:8080/`), which
/// resolves only inside someone's network (`single_label_host`); or a top-level name that is
/// not delegated at all (`http://www.another.url`, `http://nas.lan/`: `unknown_tld`) — the
/// Public Suffix List compiled into the binary (the `psl` crate) is the list of names that are
/// (it also holds a few the public DNS does not serve, `.onion` and `home.arpa`: they pass).
/// `localhost` names and IP literals are the address policy's (`private_address`).
///
/// Why no request matches: manuals and READMEs write these to show the form of a URL
/// (`https://example.com/api/v1`, `http://yourserver/`); the names are reserved never to be
/// delegated, or, with one label, are not names on the public web at all. A policy, off in
/// `loose` and with `keep_placeholder_hosts` (an intranet crawl). Only the host a candidate is
/// written with is judged: a relative link of a page on a test site still resolves and passes.
///
/// In scripts (`documentation_names` false) only the names no public resolver answers are
/// judged — one label, `.test`, `.example`, `.invalid`, an undelegated top-level name: a
/// request there cannot succeed (`//mce_host`, `http://server/`). `example.com`, `.net` and
/// `.org` *are* delegated and serve a page, and a script may really load one as its default
/// (Swagger UI's `https://example.com/`): kept there. Not with no context: a user's first
/// try writes `https://shop.example/` in a file and must see it kept.
pub(super) fn placeholder_host(
    b: &[u8],
    scheme: Option<&[u8]>,
    documentation_names: bool,
) -> Option<Reason> {
    let host = written_host(b, scheme)?;
    if host == "localhost" || host.ends_with(".localhost") {
        return None;
    }
    let reserved_second = ["example.com", "example.net", "example.org"];
    if documentation_names
        && reserved_second.iter().any(|r| {
            host.strip_suffix(r)
                .is_some_and(|p| p.is_empty() || p.ends_with('.'))
        })
    {
        return Some(Reason::ReservedHost);
    }
    let tld = host.rsplit('.').next().unwrap_or(&host);
    if host.contains('.') && matches!(tld, "example" | "test" | "invalid") {
        return Some(Reason::ReservedHost);
    }
    // One label (IP literals in any spelling were parsed as addresses above).
    if !host.contains('.') {
        return Some(Reason::SingleLabelHost);
    }
    if placeholder_name(&host) {
        return Some(Reason::PlaceholderHost);
    }
    // A top-level name no registry delegates (`www.another.url`, `site.domain`, `host.lan`):
    // the Public Suffix List (its ICANN section holds every delegated TLD, as IDNA A-labels
    // too, which is how the parser gives hosts) does not know its suffix, and `psl` falls back
    // to its implicit `*` rule.
    if !psl::suffix(host.as_bytes()).is_some_and(|s| s.is_known()) {
        return Some(Reason::UnknownTld);
    }
    None
}

/// A host whose registrable name is a placeholder that documentation and sample code tell the
/// reader to replace (issue 46): `your` followed by `domain`, `site`, `website`, `server`,
/// `host`, `hostname`, `company` or `url` (`yourdomain.com`, `your-site.org`,
/// `api.your-server.net`), and `mysite` / `mywebsite` under `.com`, `.net`, `.org`; registered
/// under a registry's suffix, not a hosting platform's. Not the bare word `domain`
/// (`domain.com.au` is a real-estate site and `domain.com` a registrar), nor other `my…` names
/// (`mydomain.com` is a registrar, `myapp` a brand).
///
/// Why no request matches: a script or a manual that writes `https://yourdomain.com/api` says
/// "put your own host here"; the names are registered by squatters or no one, and serve no page
/// of the site being crawled. Not `example.com` in scripts (a page a script may load as its default: see `reserved_host`).
fn placeholder_name(host: &str) -> bool {
    // Most hosts hold neither word: no suffix lookup for them (`check` in text, ~5% of its time).
    let h = host.as_bytes();
    if memchr::memmem::find(h, b"your").is_none() && memchr::memmem::find(h, b"site").is_none() {
        return false;
    }
    let Some(domain) = psl::domain(host.as_bytes()) else {
        return false;
    };
    // A registry's name, not a hosting platform's (`mysite.github.io`, `yoursite.netlify.app`
    // are someone's real site: found by review).
    let suffix = domain.suffix();
    if suffix.typ() != Some(psl::Type::Icann) {
        return false;
    }
    let label = domain
        .as_bytes()
        .split(|&c| c == b'.')
        .next()
        .unwrap_or_default();
    fn word(rest: &[u8]) -> &[u8] {
        rest.strip_prefix(b"-")
            .or_else(|| rest.strip_prefix(b"_"))
            .unwrap_or(rest)
    }
    if let Some(rest) = label.strip_prefix(b"your") {
        return matches!(
            word(rest),
            b"domain"
                | b"site"
                | b"website"
                | b"server"
                | b"host"
                | b"hostname"
                | b"company"
                | b"url"
        );
    }
    // `my…` names are also businesses' (`mydomain.com` is a registrar, `my-host.de` may be a
    // host): only `mysite` and `mywebsite` under `.com`, `.net` and `.org`.
    if let Some(rest) = label.strip_prefix(b"my") {
        return matches!(word(rest), b"site" | b"website")
            && matches!(suffix.as_bytes(), b"com" | b"net" | b"org");
    }
    false
}

/// A path segment that is a glob or a pattern: `*` or `**`, `*` before or after a dot
/// (`*.js`, `jquery-*.min.js`, `(.*)`), or a trailing `*` (`img*`, `[a-z]*`,
/// `django.security.*`). Not a `*` inside a name (found by review: Wikipedia's
/// `A*_search_algorithm`, `Q*bert`, `M*A*S*H_(TV_series)`, esm.sh's `/v135/*react-dom@18.2.0/…`).
fn glob_segment(seg: &[u8]) -> bool {
    seg == b"*"
        || seg == b"**"
        || seg.ends_with(b"*")
        || seg.windows(2).any(|w| w == b"*." || w == b".*")
}

/// SVG path data (`m39.99,17.51c-15.28,11.1-15.28,33.88,0,44.98`): a moveto (`M`/`m` and a
/// number) followed only by path commands (`MmZzLlHhVvCcSsQqTtAa`), numbers (with `.`, signs,
/// exponents), commas and spaces — at least four numbers, a comma, space or second command, and
/// no run of three letters (so `m1.html`, `M2e5.htm` and `M2024-01-15-2` stay paths). Scripts drawing icons hold these (mermaid's bundles:
/// 20 of hold-out 4's 29 script 404s left after fetch outcomes); no server path is written so.
pub(super) fn svg_path(b: &[u8]) -> bool {
    if b.len() < 8 || !matches!(b[0], b'M' | b'm') {
        return false;
    }
    let mut numbers = 0;
    let mut letters = 0;
    // Commas, spaces and commands after the moveto: `m1-2-3-4` (or a date) has none.
    let mut marks = 0;
    let mut in_number = false;
    let mut after_exp = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' | b'.' => {
                if !in_number {
                    numbers += 1;
                    in_number = true;
                }
                letters = 0;
                after_exp = false;
            }
            b'e' | b'E' if in_number => {
                in_number = true;
                after_exp = true;
                letters = 0;
            }
            b'-' | b'+' => {
                // A sign starts a number, except right after an exponent's `e`.
                if !after_exp {
                    in_number = false;
                }
                after_exp = false;
                letters = 0;
            }
            b',' | b' ' => {
                in_number = false;
                letters = 0;
                marks += 1;
            }
            b'M' | b'm' | b'Z' | b'z' | b'L' | b'l' | b'H' | b'h' | b'V' | b'v' | b'C' | b'c'
            | b'S' | b's' | b'Q' | b'q' | b'T' | b't' | b'A' | b'a' => {
                in_number = false;
                after_exp = false;
                letters += 1;
                marks += usize::from(i > 0);
                if letters >= 3 {
                    return false;
                }
                // The moveto is followed by its coordinates.
                if i == 0 && !matches!(b.get(1), Some(b'0'..=b'9' | b'.' | b'-' | b'+' | b' ')) {
                    return false;
                }
            }
            _ => return false,
        }
    }
    numbers >= 4 && marks > 0
}

/// (Scripts, text) a path of a build script's file system, not of a site (issue 46): a
/// root-relative path whose `..` segments climb above the root (`/../dist/app.js`,
/// `/a/../../lib`, from `__dirname + '/../dist'`), or a glob (`src/**/*.js`, `lib/*.js`,
/// `assets/{a,b}.css`: a segment of [`glob_segment`], or a brace list with a comma). Relative
/// candidates only, before any query or fragment. (The issue names `/../` above the root as a
/// build script's: a browser would request `/dist/app.js` for `/../dist/app.js`, which is not
/// the file the script meant, and no page links its own site so.)
///
/// Why no request matches: a browser resolves `/../x` to `/x`, which is not what the script
/// named (a file beside its project folder on the build machine); a glob is a pattern a build
/// tool expands over files, not an address, and a server reads `*` and `{a,b}` literally.
/// A relative `../x` climbs from its page and passes; an absolute URL with `*` (a web
/// archive's `/web/*/…`) is not judged here.
pub(super) fn build_path(b: &[u8]) -> bool {
    let end = memchr::memchr2(b'?', b'#', b).unwrap_or(b.len());
    let path = &b[..end];
    if memchr::memchr(b'*', path).is_some() && path.split(|&c| c == b'/').any(glob_segment) {
        return true;
    }
    if let Some(open) = memchr::memchr(b'{', path) {
        if let Some(close) = memchr::memchr(b'}', &path[open..]) {
            if memchr::memchr(b',', &path[open..open + close]).is_some() {
                return true;
            }
        }
    }
    // Only a root-relative path with a `..` segment can climb above the root.
    if path.first() != Some(&b'/')
        || path.get(1) == Some(&b'/')
        || memchr::memmem::find(path, b"/..").is_none()
    {
        return false;
    }
    let mut depth = 0usize;
    for seg in path[1..].split(|&c| c == b'/') {
        match seg {
            b".." => {
                if depth == 0 {
                    return true;
                }
                depth -= 1;
            }
            b"." | b"" => {}
            _ => depth += 1,
        }
    }
    false
}

/// (Text) an absolute or protocol-relative URL with a user name and password in it
/// (`http://user:secret@host/…`).
///
/// Why no request matches: in manuals and READMEs these are examples of how to pass
/// credentials (`http://user:pass@proxy:3128`), not pages; browsers ask before sending them,
/// and a crawler must not send a password it found in text to anyone.
fn credentials(b: &[u8], scheme: Option<&[u8]>) -> bool {
    let rest = match scheme {
        Some(s) => &b[s.len() + 1..],
        None => b,
    };
    let Some(rest) = rest.strip_prefix(b"//") else {
        return false;
    };
    let auth_end = rest
        .iter()
        .position(|&c| matches!(c, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let auth = &rest[..auth_end];
    match auth.iter().rposition(|&c| c == b'@') {
        Some(at) => auth[..at].contains(&b':'),
        None => false,
    }
}

/// (Plain text) a numeric character reference cut before its `;` (`…/page&#39`, `&#x27`
/// followed by more text): what an extractor leaves when it copies a URL out of HTML source
/// without decoding it and stops at the `;`.
///
/// Why no request matches: `&#39` is not part of any URL the page meant (it stands for the
/// quote that ended the attribute); with it, the request goes to a URL that does not exist.
/// Only plain text: in HTML text and attributes the context decodes references first, as a
/// browser does.
fn char_ref_residue(b: &[u8]) -> bool {
    let mut i = 0;
    while let Some(p) = b[i..].windows(2).position(|w| w == b"&#") {
        let start = i + p + 2;
        let (hex, digits_from) = match b.get(start) {
            Some(b'x' | b'X') => (true, start + 1),
            _ => (false, start),
        };
        let n = b[digits_from..]
            .iter()
            .take_while(|c| {
                if hex {
                    c.is_ascii_hexdigit()
                } else {
                    c.is_ascii_digit()
                }
            })
            .count();
        if n > 0 && b.get(digits_from + n) != Some(&b';') {
            return true;
        }
        i = start;
    }
    false
}

#[cfg(test)]
mod tests;
