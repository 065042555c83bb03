//! Issue 26: the HTML report (`cluster`/`similar -o report.html`), opened in a real browser.
//! Debian's Chromium (installed by scripts/test.sh) loads the file headless with every request
//! it might make sent to a loopback recorder (`--proxy-server`, no bypass): the report shows
//! every cluster of the JSON report made from the same input, with the thumbnails given, and
//! the recorder is never reached.

use std::path::Path;
use std::process::Command;

use crawlsieve::render::thumb::thumbnail;

mod common;

/// A screenshot-like PNG: a white page with dark "text" lines and a coloured banner.
fn page_png(seed: u32, banner: [u8; 3]) -> Vec<u8> {
    let (w, h) = (320u32, 200u32);
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    let img = image::RgbImage::from_fn(w, h, |px, py| {
        if py < 30 {
            return image::Rgb(banner);
        }
        let line = (py - 30) / 12;
        let in_text = (py - 30) % 12 < 7 && px > 10 && px < 300 - (line * 37 % 90);
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        if in_text && !x.is_multiple_of(3) {
            image::Rgb([30, 30, 30])
        } else {
            image::Rgb([255, 255, 255])
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// Pages as `cluster` reads them: near-duplicate product pages, error pages, distinct articles.
fn pages(n_products: usize, thumbs: bool) -> Vec<serde_json::Value> {
    let mut v = Vec::new();
    let product = |i: usize| {
        format!("<html><head><title>Product {i}</title></head><body><nav><a href=/>Home</a><a href=/shop>Shop</a></nav><main><h1>Blue kettle model {i}</h1><p>A kettle that boils water quickly and quietly. Stainless steel, 1.7 litres, automatic shut-off, boil-dry protection and a washable filter.</p><p>Price 29 euros. Delivery in two days.</p></main><footer>Shop footer text</footer></body></html>")
    };
    let article = |i: usize| {
        let words = [
            "river",
            "mountain",
            "library",
            "orchestra",
            "volcano",
            "harbour",
        ];
        let w = words[i % words.len()];
        format!("<html><head><title>{w}</title></head><body><article><h1>The {w} {i}</h1>{}</article></body></html>", format!("<p>{w} {i} is described here at length with its own words and history.</p>").repeat(8 + i))
    };
    for i in 0..n_products {
        v.push(serde_json::json!({
            "url": format!("https://shop.example/item/{i}"),
            "status": 200, "content_type": "text/html", "html": product(i),
            "thumbnail": thumbs.then(|| thumbnail(&page_png(i as u32, [200, 20, 20])).unwrap()),
        }));
    }
    for i in 0..3 {
        v.push(serde_json::json!({
            "url": format!("https://docs.example/missing/{i}"),
            "status": 404, "content_type": "text/html",
            "html": "<html><head><title>Not found</title></head><body><h1>404 Not Found</h1><p>The page does not exist.</p></body></html>",
            "thumbnail": thumbs.then(|| thumbnail(&page_png(100 + i, [20, 20, 200])).unwrap()),
        }));
    }
    for i in 0..4 {
        v.push(serde_json::json!({
            "url": format!("https://blog.example/post/{i}"),
            "status": 200, "content_type": "text/html", "html": article(i),
            "thumbnail": thumbs.then(|| thumbnail(&page_png(200 + i as u32, [20, 160, 20])).unwrap()),
        }));
    }
    // One hostile page: its title and URL must stay text, its thumbnail a remote URL (ignored).
    v.push(serde_json::json!({
        "url": "https://evil.example/\"><img src=https://evil.example/x.png>",
        "status": 200, "content_type": "text/html",
        "html": "<html><head><title><script>fetch('https://evil.example/t')</script></title></head><body><p>x</p></body></html>",
        "thumbnail": "https://evil.example/thumb.png",
    }));
    v
}

fn cluster(input: &Path, out: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .arg("cluster")
        .arg(input)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn chromium(args: &[String], file: &Path, proxy: u16, profile: &Path) -> std::process::Output {
    let bin = std::env::var("CRAWLSIEVE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    Command::new(bin)
        // The renderer's own switches, and headless without a sandbox (a test machine).
        .args(
            crawlsieve::render::CHROMIUM_SWITCHES
                .iter()
                .map(|s| format!("--{s}")),
        )
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-default-apps",
            "--virtual-time-budget=3000",
            "--proxy-bypass-list=<-loopback>",
        ])
        .arg(format!("--proxy-server=http://127.0.0.1:{proxy}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("run chromium (scripts/test.sh installs it)")
}

#[test]
fn the_html_report_shows_every_cluster_with_its_thumbnails_and_requests_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("pages.jsonl");
    let lines: Vec<String> = pages(6, true).iter().map(|v| v.to_string()).collect();
    std::fs::write(&input, lines.join("\n")).unwrap();
    let (json, html) = (dir.path().join("r.json"), dir.path().join("r.html"));
    cluster(&input, &json);
    cluster(&input, &html);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let clusters = report["clusters"].as_array().unwrap();
    assert!(clusters.len() >= 2, "the input makes clusters: {report}");
    let text = std::fs::read_to_string(&html).unwrap();
    // Page text stays text: the hostile URL's tag and the title's script are escaped.
    assert!(!text.contains("<img src=https://evil"), "URL escaped");
    assert!(!text.contains("<script>fetch"), "title escaped");
    assert!(text.contains("&lt;img src=https://evil.example/x.png&gt;"));

    let rec = common::site::recorder();
    let port = rec.port;
    let profile = tempfile::tempdir().unwrap();
    let o = chromium(&["--dump-dom".into()], &html, port, profile.path());
    let dom = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        dom.contains("id=\"clusters\""),
        "Chromium loaded the report: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Every cluster of the JSON report, with its members, the canonical first.
    let sections = dom.matches("<section class=\"cluster\"").count();
    assert_eq!(sections, clusters.len(), "clusters shown");
    for c in clusters {
        let id = c["cluster_id"].as_str().unwrap();
        assert!(
            dom.contains(&format!("{id} <span class=\"cls\">")),
            "{id} shown"
        );
    }
    // The script ran (it writes how many clusters the filters show).
    assert!(
        dom.contains(&format!(">{} shown<", clusters.len())),
        "filter script ran"
    );
    // A thumbnail for every page given one (all but the hostile page), none from elsewhere.
    let pages_n = report["urls"].as_array().unwrap().len();
    assert_eq!(dom.matches("<img class=\"thumb\"").count(), pages_n - 1);
    assert_eq!(
        dom.matches("src=\"data:image/jpeg;base64,").count(),
        pages_n - 1
    );
    assert!(!dom.contains("evil.example/thumb.png"));

    // A screenshot: the thumbnails are drawn (the product pages' red banners are on screen).
    let shot = dir.path().join("shot.png");
    let profile = tempfile::tempdir().unwrap();
    let o = chromium(
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,1200".into(),
        ],
        &html,
        port,
        profile.path(),
    );
    assert!(
        shot.exists(),
        "screenshot taken: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let img = image::open(&shot).unwrap().to_rgb8();
    let red = img
        .pixels()
        .filter(|p| p[0] > 150 && p[1] < 80 && p[2] < 80)
        .count();
    assert!(red > 2_000, "red thumbnail banners visible: {red} pixels");
    let from_report = report_requests(&rec.requests.lock().unwrap());
    assert!(
        from_report.is_empty(),
        "the report made requests: {from_report:?}"
    );

    // The harness catches a page's request: the same browser run on a control file that loads
    // one image from a host records it.
    let control = dir.path().join("control.html");
    std::fs::write(
        &control,
        "<!doctype html><img src=\"http://report-probe.example/x.png\">",
    )
    .unwrap();
    let rec = common::site::recorder();
    let profile = tempfile::tempdir().unwrap();
    chromium(&["--dump-dom".into()], &control, rec.port, profile.path());
    let caught = report_requests(&rec.requests.lock().unwrap());
    assert!(
        caught.iter().any(|r| r.contains("report-probe.example")),
        "the recorder sees a page's requests: {caught:?}"
    );
}

/// The requests recorded that did not come from Chromium itself: its own services (time,
/// component updates, accounts, on Google's hosts) contact the proxy whatever the page is.
fn report_requests(seen: &[String]) -> Vec<String> {
    seen.iter()
        .filter(|r| {
            let target = r.split(' ').nth(1).unwrap_or("");
            let host = target
                .trim_start_matches("http://")
                .trim_start_matches("https://")
                .split(['/', ':'])
                .next()
                .unwrap_or("");
            !["google.com", "googleapis.com", "gstatic.com", "gvt1.com"]
                .iter()
                .any(|d| host == *d || host.ends_with(&format!(".{d}")))
        })
        .cloned()
        .collect()
}

/// 500 pages with thumbnails stay under 5 MB.
#[test]
fn a_report_of_500_pages_stays_under_5_mb() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("pages.jsonl");
    let lines: Vec<String> = pages(500 - 8, true).iter().map(|v| v.to_string()).collect();
    std::fs::write(&input, lines.join("\n")).unwrap();
    let html = dir.path().join("r.html");
    cluster(&input, &html);
    let size = std::fs::metadata(&html).unwrap().len();
    println!("report of 500 pages: {size} bytes");
    assert!(size < 5 << 20, "{size} bytes");
}

/// `similar -o report.html`: the pages rendered in Chromium, their screenshots embedded as
/// thumbnails (one per page rendered; a refused page gets the placeholder).
#[test]
fn similar_writes_an_html_report_with_the_screenshots() {
    let base = common::site::serve();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let list = format!("{base}/a1,{base}/a2,{base}/login,http://10.0.0.9/");
    let o = Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["similar", "-l", &list, "-o"])
        .arg(&out)
        .args(["-t", "2", "--page-timeout", "15s", "--allow", "127.0.0.1"])
        .output()
        .unwrap();
    // The report is written; the refused private address makes the run partial (exit 5), and
    // the summary says so and how to allow one (issue 28).
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(5), "{err}");
    assert!(
        err.contains("1 refused by the address policy") && err.contains("--allow"),
        "{err}"
    );
    assert!(!err.contains("WS Invalid message"), "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        html.matches("src=\"data:image/jpeg;base64,").count(),
        3,
        "three pages rendered"
    );
    assert_eq!(html.matches("no screenshot").count(), 1, "the refused one");
    assert!(
        html.contains("<section class=\"cluster\""),
        "a1 and a2 cluster"
    );
    // The soft-404 probe of the site's one scope, in its own section.
    assert!(html.contains("<section id=\"soft404\">"), "probes listed");
    assert!(html.contains("/cs"), "the probe URL is shown");
}

/// Issue 45: a small site of ten ~600-byte pages of one template (all thin: under 1 KiB of HTML)
/// — four product pages that differ in a word or two, six pages of their own — gives the
/// clusters a person would: the four products together, the six apart; a legend; a distance
/// only where one was measured (0 for a canonical, none for pages alone).
#[test]
fn a_small_site_of_thin_pages_of_one_template_clusters_as_a_person_would() {
    let page = |title: &str, body: &str| {
        format!(
            "<!doctype html><html><head><title>{title} | Tiny Shop</title></head><body>\
             <nav><a href=/>Home</a> <a href=/shop>Shop</a> <a href=/about>About</a></nav>\
             <main><h1>{title}</h1><p>{body}</p></main><footer>Tiny Shop, 2026</footer></body></html>"
        )
    };
    let product = |colour: &str, price: u32| {
        page(
            &format!("Garden hose, {colour}"),
            &format!(
                "This garden hose is fifteen metres long and made of reinforced rubber that \
                 does not kink in the sun. It fits every standard tap and comes with a brass \
                 nozzle, a wall hook and a two year warranty. Colour: {colour}. Price: {price} \
                 euros, delivered within three working days."
            ),
        )
    };
    let mut site: Vec<(String, String)> = vec![
        ("/shop/hose-green".into(), product("green", 24)),
        ("/shop/hose-red".into(), product("red", 24)),
        ("/shop/hose-blue".into(), product("blue", 26)),
        ("/shop/hose-black".into(), product("black", 26)),
    ];
    for (path, title, body) in [
        ("/", "Welcome", "Tiny Shop sells a few well made things for small gardens: hoses, trowels, seed trays and gloves. Everything is tested by the two of us before it goes on sale, and we answer every message ourselves."),
        ("/about", "About us", "We started Tiny Shop in a shed behind our house in 2019 after our own hose burst for the third summer in a row. Today we work with four family workshops in the region and keep our range deliberately small."),
        ("/contact", "Contact", "Write to hello at tiny shop dot example or call us on weekdays between nine and five. Parcels can be returned to the shed address printed on your invoice within thirty days, no questions asked."),
        ("/shipping", "Shipping", "Orders placed before noon leave the same day. Delivery inside the country takes one to three working days; abroad it takes up to a week and costs a flat eight euros whatever the size of the parcel."),
        ("/faq", "Questions", "Can a hose stay outside in winter? Drain it and it will. Are the gloves washable? At thirty degrees. Do you sell spare nozzles? Yes, write to us and we will send one with your next order."),
        ("/blog/watering", "Watering in July", "Water early in the morning, at the roots, and less often but deeply: a lawn watered every evening grows shallow roots and suffers more in a heat wave than one soaked twice a week."),
    ] {
        site.push((path.into(), page(title, body)));
    }
    for (_, html) in &site {
        assert!(
            (400..1024).contains(&html.len()),
            "a thin page of 400–1023 bytes: {}",
            html.len()
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("site.jsonl");
    let lines: Vec<String> = site
        .iter()
        .map(|(path, html)| {
            let url = format!("https://tiny-shop.example{path}");
            serde_json::json!({"url": url, "final_url": url, "status": 200, "content_type": "text/html", "html": html})
                .to_string()
        })
        .collect();
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let json = dir.path().join("r.json");
    cluster(&input, &json);
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let urls = r["urls"].as_array().unwrap();
    let id_of = |path: &str| -> String {
        let u = urls
            .iter()
            .find(|u| u["url"] == format!("https://tiny-shop.example{path}"))
            .unwrap();
        assert_eq!(u["rule"], "T1", "{u}");
        u["cluster_id"].as_str().unwrap().to_string()
    };
    let products: Vec<String> = site[..4].iter().map(|(p, _)| id_of(p)).collect();
    assert!(
        products.iter().all(|c| c == &products[0]),
        "the four products in one cluster: {products:?}"
    );
    let others: std::collections::HashSet<String> =
        site[4..].iter().map(|(p, _)| id_of(p)).collect();
    assert_eq!(others.len(), 6, "the six other pages apart: {others:?}");
    assert!(!others.contains(&products[0]));
    for u in urls {
        if u["is_canonical"] == true {
            assert_eq!(
                u["similarity_to_canonical"], 1.0,
                "a canonical against itself: {u}"
            );
        }
        assert_eq!(u["similarity_measured"], true, "{u}");
    }
    let html_path = dir.path().join("r.html");
    cluster(&input, &html_path);
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains("id=\"legend\"") && html.contains("<th>T1</th>"),
        "a legend"
    );
    assert_eq!(
        html.matches("distance 0.000").count(),
        7,
        "0 for each of the 7 canonicals"
    );
}
