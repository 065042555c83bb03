use super::*;

fn page(url: &str, html: &str) -> Page {
    Page::new(url, url, 200, "text/html", html)
}

#[test]
fn a_trusted_host_is_checked_one_page_in_an_interval_that_never_ends() {
    let mut l = Learned::new(20);
    let u = |i: usize| {
        format!(
            "https://docs.example/manual/page-{}.html",
            (b'a' + (i % 26) as u8) as char
        )
    };
    // Nothing known: the first WARMUP pages are rendered to learn, the next wait.
    for i in 0..3 {
        assert_eq!(l.plan(&u(i), 3), Plan::Render(Why::Learning));
    }
    assert_eq!(l.plan(&u(3), 3), Plan::Wait);
    for i in 0..3 {
        l.learn(&u(i), Why::Learning, Some(true));
    }
    // Trusted: static, with a check every `interval` pages; over a long run the share of
    // checks settles at 1 in 20 and never reaches zero.
    let (mut checks, n) = (0, 2000);
    for i in 0..n {
        match l.plan(&u(i), 3) {
            Plan::Render(Why::Check) => {
                checks += 1;
                l.learn(&u(i), Why::Check, Some(true));
            }
            Plan::Static => {}
            p => panic!("{p:?}"),
        }
    }
    assert!((100..=130).contains(&checks), "{checks} checks of {n}");
}

#[test]
fn canonicals_rendered_first_teach_before_the_host_is_decided() {
    let mut l = Learned::new(20);
    let u = |i: usize| format!("https://docs.example/ref/{i}.html");
    for i in 0..10 {
        l.begin(&u(i));
    }
    // Ten renders of the host under way: its other pages wait for them.
    assert_eq!(
        l.plan("https://docs.example/guide/intro.html", 3),
        Plan::Wait
    );
    for i in 0..10 {
        l.learn(&u(i), Why::Canonical, Some(true));
    }
    // They agreed: the section is trusted with ten checks, no page rendered to learn, and
    // each canonical's render stands for one scheduled check.
    let rendered = (10..30)
        .filter(|&i| l.plan(&u(i), 3) != Plan::Static)
        .count();
    assert_eq!(rendered, 0, "the first check is a canonical's");
    let checks = (30..430)
        .filter(|&i| l.plan(&u(i), 3) == Plan::Render(Why::Check))
        .count();
    assert_eq!(
        checks,
        20 - 9,
        "one in twenty once the ten credits are spent"
    );
    // A signal page teaches its own pattern only.
    l.learn(
        "https://docs.example/app/shell",
        Why::Signal("app_root"),
        Some(false),
    );
    assert_eq!(
        l.plan("https://docs.example/app/shell", 3),
        Plan::Render(Why::Differs)
    );
    assert_eq!(l.evidence("s https://docs.example/app").differed, 0);
}

#[test]
fn a_pattern_that_differs_is_rendered_and_a_mixed_host_lends_no_trust() {
    let mut l = Learned::new(20);
    for i in 0..5 {
        l.learn(
            &format!("https://h.example/doc/{i}.html"),
            Why::Learning,
            Some(true),
        );
    }
    // One check of /app/{num} differs: that pattern is rendered from then on.
    l.learn("https://h.example/app/1", Why::Check, Some(false));
    for i in 2..50 {
        assert_eq!(
            l.plan(&format!("https://h.example/app/{i}"), 3),
            Plan::Render(Why::Differs)
        );
    }
    // The host is not mixed (1 of 6 differed): a new pattern elsewhere is trusted.
    assert_ne!(
        l.plan("https://h.example/blog/x.html", 3),
        Plan::Render(Why::Learning)
    );
    // Two more differences make it mixed (3 of 8): an unchecked pattern is rendered.
    l.learn("https://h.example/shop/1", Why::Check, Some(false));
    l.learn("https://h.example/cart/1", Why::Check, Some(false));
    assert_eq!(
        l.plan("https://h.example/new/thing", 3),
        Plan::Render(Why::Learning)
    );
    // A section checked on its own speaks for itself: /doc/ lends to its new patterns.
    assert_ne!(
        l.plan("https://h.example/doc/intro.html", 3),
        Plan::Render(Why::Learning)
    );
    // A pattern with its own agreement keeps it: /doc/ pages are still sampled.
    assert!(matches!(
        l.plan("https://h.example/doc/9.html", 3),
        Plan::Static | Plan::Render(Why::Check)
    ));
    // Another host knows nothing.
    assert_eq!(
        l.plan("https://other.example/", 3),
        Plan::Render(Why::Learning)
    );
}

#[test]
fn static_and_rendered_twins_agree_unless_a_script_wrote_the_page() {
    let text =
        "Reference manual: every function of the library, its arguments and what it returns. "
            .repeat(20);
    let doc = format!("<html><head><title>Manual</title></head><body><nav><a href=/>Home</a></nav><main><h1>Manual</h1><p>{text}</p></main></body></html>");
    // Chromium's DOM of a static page: the same tree (a script may add a node or two).
    let rendered = doc.replace("</body>", "<div class=toast></div></body>");
    assert!(agree(
        &page("https://h/a", &doc),
        &page("https://h/a", &rendered)
    ));
    // An app shell and what its script wrote.
    let shell = "<html><head><title>Shop</title></head><body><div id=root></div><script src=/app.js></script></body></html>";
    let written = shell.replace(
        "<div id=root></div>",
        &format!("<div id=root><main><p>{text}</p></main></div>"),
    );
    assert!(!agree(
        &page("https://h/p/1", shell),
        &page("https://h/p/1", &written)
    ));
    // A script redirect: another final URL.
    let mut moved = page("https://h/a", &doc);
    moved.final_url = "https://h/b".into();
    assert!(!agree(&page("https://h/a", &doc), &moved));
    // Two empty pages of the same shape agree.
    assert!(agree(
        &page("https://h/e", "<p></p>"),
        &page("https://h/e", "<p></p>")
    ));
}
