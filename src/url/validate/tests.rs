//! The validator's unit tests (moved out of `mod.rs`, which holds the rules).

use super::*;

fn v() -> Validator {
    Validator::default()
}

#[track_caller]
fn pass(s: &str) {
    assert_eq!(v().check(s), Ok(()), "{s:?} should pass");
}

#[track_caller]
fn reject(s: &str, r: Reason) {
    assert_eq!(v().check(s), Err(r), "{s:?} should be rejected as {r}");
}

#[test]
fn reference_false_rejections_now_pass() {
    // Every URL the seed's reference implementation wrongly rejected.
    for s in [
        "http://host/",
        "http://example.com/?page=2",
        "/?page=2",
        "/",
        "./",
        "../",
        "../../",
        "/files/document.pdf",
        "http://example.com/window.open/help",
        "//cdn.host/lib.js",
        "/wiki/%E7%BD%91%E7%BB%9C",
        "https://zh.wikipedia.org/wiki/%E7%BD%91%E7%BB%9C%E7%88%AC%E8%99%AB",
        "left-nav.html",
        "auto-login.php",
        "color-picker.js",
        "/search?q=a&&b",
        "?q=a&&b",
        "/%E4%B8%AD%E6%96%87",
        "document.pdf",
        "window.com",
        "http://example.com/St._Louis_(disambiguation)",
        "/wiki/Python_(programming_language)",
        "https://example.com/r?u=https%3A%2F%2Fexample.org%2Fa%3Fb%3D1",
        "localhost:8080/api",
        "www.example.com",
        "docs.python.org/3/library/",
        "/path with space.pdf",
        "/sale-50%-off",
        "/a,b,c",
        "/x;jsessionid=ABC",
        "/v1",
        "/123",
        "/text/editor",
        "/application_list",
        "/video/123?autoplay=1",
        // From the real corpus: code in a query is the page's content, not junk.
        "https://play.rust-lang.org/?code=%23!%5Ballow(unused)%5D%0Afn+main()+%7B%0A++++assert_eq!(i8::BITS,+8);%0A%7D&edition=2024",
        "../../std/vec/struct.Vec.html?search=option<T>%2C+(fnonce+(T)+->+bool)+->+option<T>&filter-crate=std",
        "https://en.wikipedia.org/wiki/NaN#Floating_point",
        "https://play.rust-lang.org/?code=fn+main()+%7B%0A++++let+mut+function_with_closure(1);%0A%7D",
        "https://play.rust-lang.org/?code=fn+main()+%7B%0A++++assert_eq!(function(),+0);%0A%7D&edition=2024",
        "https://msdn.microsoft.com/en-us/library/aa364428(v=vs.85).aspx",
        "https://intel.com/intrinsics-guide/index.html#text=_mm512_cvt_roundph_epu16",
        "/reset/Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXhxdXV4cXV1eA",
    ] {
        pass(s);
    }
}

/// Issue 27: printf conversions a program fills in, in any context; look-alikes pass. (A
/// whole `{name}` query value is not judged: GraphQL's `?query={hello}` is a request,
/// found by review.)
#[test]
fn printf_templates() {
    for s in [
        "/1/dictionaries/%s/batch",
        "https://github.com/o/r/commit/%s",
        "%s",
        "/items?page=%d",
        "/a/%1$s/b",
        "/u/%i.json",
    ] {
        reject(s, Reason::TemplateSyntax);
    }
    for s in [
        "/wiki/100%25_sure",
        "/a%20b/%D0%B4",
        "/x%d0%b4",
        "/p?filter={\"a\":1}",
        "/p?x={a}b",
        "/%u4E2D",
        "/graphql?query={hello}",
        "https://h.example/a%20$s/%zz",
        "/a%20$s/",
        "/x?id={id}&y=1",
    ] {
        assert!(v().check(s) != Err(Reason::TemplateSyntax), "{s:?}");
    }
}

#[test]
fn reference_false_acceptances_now_rejected() {
    reject("/undefined", Reason::JsArtifact);
    reject("/null", Reason::JsArtifact);
    reject("/null/", Reason::JsArtifact);
    reject("/application/json/", Reason::MimeType);
    reject("/[object Object]", Reason::JsArtifact);
    reject("%5Bobject%20Object%5D", Reason::JsArtifact); // (cargo fuzz) a segment once resolved
                                                         // (cargo fuzz) session removal joins `**` and `/` into a comment marker.
    reject("a/**;jsessionid=77/x", Reason::CommentMarker);
    pass("/x;jsessionid=ABC/y");
    reject("http://example.com/api/undefined/items", Reason::JsArtifact);
    reject("/${path}/x", Reason::TemplateSyntax);
    reject("/posts/{id}", Reason::TemplateSyntax);
    reject("/users/:id/edit", Reason::TemplateSyntax);
    // Regression (cargo fuzz): relative to an https base, `https::id` is the path `:id`.
    reject("https::oodma%2E%2E::::x", Reason::TemplateSyntax);
    reject("https:$4", Reason::TemplateSyntax); // (cargo fuzz) the path `$4` to an https base
    reject("https:/*x", Reason::CommentMarker);
    pass("http:example.com/path");
    // Regression (cargo fuzz): `%2E` decodes to the `.` of a method call.
    reject("62/wjK.no2e(),v)%2Eswitch(%2Ey6A4", Reason::JsCode);
    reject("e%2Etarget%2Evalue", Reason::JsCode);
    reject("e.target.value", Reason::JsCode);
    reject("this.props.url", Reason::JsCode);
    reject("new Date()", Reason::JsCode);
    reject("/application/x-shockwave-flash", Reason::MimeType);
    reject(
        "http://testphp.vulnweb.com/application/x-shockwave-flash",
        Reason::MimeType,
    );
    reject("http://testphp.vulnweb.com/AJAX/text/xml", Reason::MimeType);
    reject("/AJAX/text/xml", Reason::MimeType);
}

#[test]
fn every_rule_family_has_a_code() {
    reject("", Reason::Empty);
    reject("   ", Reason::Empty);
    reject(&format!("/{}", "a".repeat(3000)), Reason::TooLong);
    reject("/a\u{0}b", Reason::ControlChars);
    reject("javascript:alert(1)", Reason::NonFetchableScheme);
    reject("JavaScript:void(0)", Reason::NonFetchableScheme);
    reject("data:text/html,<b>", Reason::NonFetchableScheme);
    reject("mailto:a@b.c", Reason::NonFetchableScheme);
    reject("tel:+123", Reason::NonFetchableScheme);
    reject("blob:https://example.com/123", Reason::NonFetchableScheme);
    reject("about:blank", Reason::NonFetchableScheme);
    reject("#", Reason::PureSymbols);
    reject("?", Reason::PureSymbols);
    reject("?%2A=", Reason::PureSymbols);
    reject("//", Reason::PureSymbols);
    reject("#BFBFBF", Reason::ColorValue);
    reject("rgba(0,0,0,.5)", Reason::ColorValue);
    reject("#section-2", Reason::FragmentOnly);
    reject("),t.focus(", Reason::JsFragment);
    reject(",r=this.opt.log", Reason::JsFragment);
    reject("<script>alert(1)</script>", Reason::HtmlTag);
    reject("</div>", Reason::HtmlTag);
    reject("<a href=\"x\">", Reason::HtmlTag);
    reject("/* comment", Reason::CommentMarker);
    reject("// TODO fix", Reason::CommentMarker);
    reject("{{variable}}", Reason::TemplateSyntax);
    reject("<%=value%>", Reason::TemplateSyntax);
    reject("<?php echo $x; ?>", Reason::TemplateSyntax);
    reject("function() { return true; }", Reason::JsCode);
    reject("var x = 123;", Reason::JsCode);
    reject("let y = 456;", Reason::JsCode);
    reject("const z = 789;", Reason::JsCode);
    reject("console.log('test')", Reason::JsCode);
    reject("window.location.href", Reason::JsCode);
    reject("document.getElementById", Reason::JsCode);
    reject("a.b === c", Reason::JsCode);
    reject("x => x.id", Reason::JsCode);
    reject(
        "http://example.com/path?code=function(){}=>return",
        Reason::JsCode,
    );
    reject("n.selection.select(n.$(", Reason::JsCode);
    reject("return", Reason::JsKeyword);
    reject("prototype", Reason::JsKeyword);
    reject("display", Reason::CssKeyword);
    reject("background-color", Reason::CssKeyword);
    reject("12px", Reason::CssValue);
    reject("100%", Reason::CssValue);
    reject("123", Reason::BareNumber);
    reject("-0.0", Reason::BareNumber);
    reject("/application/json", Reason::MimeType);
    reject("text/html; charset=utf-8", Reason::MimeType);
    reject("font/woff2", Reason::MimeType);
    reject("image/svg+xml", Reason::MimeType);
    reject(
        "http://example.com/%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20",
        Reason::EncodingRatio,
    );
    reject("/sale%/50%off", Reason::BadPercentEncoding);
    // (cargo fuzz) an `href`'s canonical form, read again with no context, passes.
    pass("https://example.com/dir/88a[^ht");
    reject("88a[^ht", Reason::RegexSource);
    reject("%m/%d/%Y", Reason::TemplateSyntax); // a strftime format: `%d/` (issue 27)
    reject(
        "AQEAOjAAAAEAAAAAAA0AEAAAAEikSaSUuZW5w7zEvOK/47+uyK/IV8pYytHV0tUBAQA6MAAAAQ==",
        Reason::EncodedBlob,
    );
    reject("www.dailymotion.com/embed/video/$1", Reason::TemplateSyntax);
    reject("[url=$1]$2[/url]", Reason::TemplateSyntax);
    reject("translate(-.301)", Reason::CssValue);
    reject("0.76,0,0.24,1", Reason::BareNumber);
    reject("$attrs.class", Reason::JsFragment);
    reject("?(d.value=!1,a.value=!1):a.value=!0,n(", Reason::JsCode);
    reject("http://example.com/a?x={{y}}", Reason::TemplateSyntax);
    reject("/a?next=<script>alert(1)</script>", Reason::HtmlTag);
}

#[test]
fn regression_canonical_forms_of_kept_candidates_are_kept() {
    // Found by cargo fuzz: escapes the canonicalizer writes itself (`%60`, `%20`) counted
    // as needless, so a kept candidate's canonical form was rejected on a second look.
    let k = crate::url::Canonicalizer::default();
    for s in [
        "/a b c d e",
        "/my file (1).pdf",
        "/x\"y\"z",
        "/a|b^c{d",
        "/%E4%B8%AD b",
    ] {
        assert_eq!(v().check(s), Ok(()), "{s}");
        let c = k.canonicalize(s, None).unwrap().url;
        assert_eq!(v().check(&c), Ok(()), "{s} → {c}");
    }
    reject("h-foo````````d/x", Reason::JsCode);
    reject("/a   b", Reason::EncodingRatio);
    reject("/a%20%20%20b", Reason::EncodingRatio);
    pass("/path%20with%20space");
}

#[test]
fn extraction_residue_is_trimmed() {
    assert_eq!(
        clean("http://static.example.com/jQuery.js\"></script>"),
        "http://static.example.com/jQuery.js"
    );
    assert_eq!(clean("h\tt\ntp://h/a\tb"), "http://h/ab");
    assert_eq!(
        clean("https:\\/\\/example.com\\/a\\/b?x=\\y"),
        "https://example.com/a/b?x=\\y"
    );
    assert_eq!(clean("/a\\b"), "/a/b");
    // Regression (cargo fuzz): residue before a fragment is trailing residue.
    assert_eq!(clean("6'#26A4"), "6");
    assert_eq!(clean("#top"), "#top");
    // Regression (cargo fuzz): an empty query goes before the residue; a dot segment stays.
    assert_eq!(clean("ii(&'?"), "ii(&");
    assert_eq!(clean("X--Yom;./..'"), "X--Yom;./..'");
    reject("ii(&'?", Reason::JsCode);
    // Regression (cargo fuzz): a space before the trimmed `'` is the end too.
    reject("i e( '", Reason::JsCode);
    // Regression (cargo fuzz): a stray high escape before raw text scores as before escaping.
    let k = crate::url::Canonicalizer::default();
    let raw = "https://h.com//w1c-areer67.c%dE中文ter67.c%dE中文t=23";
    assert_eq!(v().check(raw), Ok(()));
    assert_eq!(v().check(&k.canonicalize(raw, None).unwrap().url), Ok(()));
    reject("java\tscript:alert(1)", Reason::NonFetchableScheme);
    assert_eq!(clean("http://localhost:8080'"), "http://localhost:8080");
    assert_eq!(
        clean("https://github.com/rust-lang/rust/issues/74840>"),
        "https://github.com/rust-lang/rust/issues/74840"
    );
    assert_eq!(
        clean("../../alloc/trait.Allocator.html\\\\"),
        "../../alloc/trait.Allocator.html"
    );
    assert_eq!(clean(" /a "), "/a");
    // Relative code is not cut into something that looks like a path.
    assert_eq!(clean("/api/\" + id"), "/api/\" + id");
    pass("http://static.example.com/jQuery.js\"></script>");
}

#[test]
fn profiles_change_thresholds() {
    let long = format!("http://example.com/{}", "a".repeat(600));
    assert_eq!(
        Validator::with_profile(Profile::Strict).check(&long),
        Err(Reason::TooLong)
    );
    assert_eq!(
        Validator::with_profile(Profile::Standard).check(&long),
        Ok(())
    );
    let spaced = "/path with space.pdf";
    assert_eq!(
        Validator::with_profile(Profile::Strict).check(spaced),
        Err(Reason::Whitespace)
    );
    assert_eq!(
        Validator::with_profile(Profile::Loose).check(spaced),
        Ok(())
    );
    // 10 needless escapes in 61 bytes: ratio 0.49.
    let enc = "http://example.com/a%2Db%2Dc%2Dd%2De%2Df%2Dg%2Dh%2Di%2Dj%2Dk";
    assert_eq!(Validator::with_profile(Profile::Loose).check(enc), Ok(()));
    assert_eq!(
        Validator::with_profile(Profile::Standard).check(enc),
        Err(Reason::EncodingRatio)
    );
}

#[test]
fn bad_config_is_an_error() {
    assert!(Validator::new(ValidatorConfig {
        encoding_ratio: 0.0,
        ..ValidatorConfig::default()
    })
    .is_err());
    assert!(Validator::new(ValidatorConfig {
        max_len: 0,
        ..ValidatorConfig::default()
    })
    .is_err());
    assert!(Validator::new(ValidatorConfig {
        fetchable_schemes: vec![],
        ..ValidatorConfig::default()
    })
    .is_err());
}

#[test]
fn bytes_never_panic() {
    let v = v();
    assert_eq!(v.check_bytes(b"\xff\xfe/a"), Err(Reason::InvalidUtf8));
    assert_eq!(v.check_bytes(b"  /a/b  ").as_deref(), Ok("/a/b"));
    assert_eq!(v.check_bytes(b"%"), Err(Reason::PureSymbols));
    assert_eq!(v.check_bytes(b"%E4%B8"), Err(Reason::PureSymbols));
    assert_eq!(v.check_bytes(b"a%").as_deref(), Ok("a%"));
}
