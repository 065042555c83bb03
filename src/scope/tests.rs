use super::patterns::{need, usable};
use super::*;
use proptest::prelude::*;

fn lits(p: &str) -> Option<Vec<Vec<u8>>> {
    usable(need(&regex_syntax::parse(p).unwrap())).map(|mut v| {
        v.sort();
        v
    })
}

fn s(v: &[&str]) -> Option<Vec<Vec<u8>>> {
    Some(v.iter().map(|x| x.as_bytes().to_vec()).collect())
}

#[test]
fn the_literals_a_pattern_needs() {
    assert_eq!(
        lits(r"^https?://([a-z0-9-]+\.)*example\.com/(admin|login)/"),
        s(&["example.com/admin/", "example.com/login/"])
    );
    assert_eq!(lits(r"[?&](sessionid|sid)="), s(&["sessionid=", "sid="]));
    assert_eq!(lits(r"(?i)\.PDF$"), s(&[".pdf"]));
    assert_eq!(lits(r"(?i)/x[^/]*\.(js|css)$"), s(&[".css", ".js"]));
    assert_eq!(lits(r"(ab)+cdef"), s(&["cdef"]));
    // Nothing usable: the pattern runs on every URL.
    assert_eq!(lits(r"."), None);
    assert_eq!(lits(r"^https?://"), s(&["http"]));
    assert_eq!(lits(r"(abc)?x"), None);
    assert_eq!(lits(r"abc|."), None);
    assert_eq!(lits(r"[a-c]def"), s(&["def"]));
}

fn naive(pats: &[String], url: &str) -> Option<usize> {
    pats.iter()
        .position(|p| regex::Regex::new(p).unwrap().is_match(url))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// The prefilter never hides a match: first and any match agree with trying every
    /// pattern in turn.
    #[test]
    fn the_prefilter_never_hides_a_match(
        pats in prop::collection::vec(
            prop::sample::select(vec![
                r"^https?://([a-z0-9-]+\.)*ab\.com/", r"(?i)\.PDF$", r"[?&](sid|ref)=",
                r"/page/\d+/?$", r"(?i)/[a-z]{2}[^/]*\.(js|css)$", r"^https://", r"\.", r"x",
                r"(?i)ADMIN", r"abc|xyz", r"(ab)?cd", r"^http://a", r"/a/b/c", r"\?",
            ]).prop_map(String::from),
            1..12,
        ),
        url in r"https?://(www\.)?(ab|cd|xn--x)\.com(/[a-zA-Z0-9.]{0,6}){0,4}(\?(sid|ref|q)=[a-z0-9]{0,3})?",
    ) {
        let rules: Vec<Rule> = pats.iter().enumerate().map(|(i, p)| Rule {
            allow: i % 2 == 0, pattern: p.clone(), origin: format!("t[{i}]"),
        }).collect();
        let p = Patterns::build(&rules, true).unwrap();
        let want = naive(&pats, &url);
        prop_assert_eq!(p.first_match(&url), want, "{:?} {}", pats, url);
        prop_assert_eq!(p.any_match(&url), want.is_some());
    }
}
