//! Page features and clustering on real-looking pages built here: one site template with
//! articles, ads, products, pagination, Chinese articles, and the rule classes' pages.

use std::collections::HashMap;

use crawlsieve::page::cluster::{cluster, Assignment};
use crawlsieve::page::pattern_sampler::{Sampler, Verdict};
use crawlsieve::page::rule_pages::Rule;
use crawlsieve::page::similarity::{compare, Thresholds};
use crawlsieve::page::Page;
use proptest::prelude::*;

mod common;

const EN: &[&str] = &[
    "The city council approved the new budget after a long debate on Tuesday evening.",
    "Officials said the plan would fund road repairs, schools and a new public library.",
    "Critics argued that the spending increase was larger than the town could afford.",
    "Supporters pointed to a decade of delayed maintenance on bridges and water pipes.",
    "The mayor promised quarterly reports so that residents can follow every project.",
    "A local business group welcomed the decision but asked for lower permit fees.",
    "Teachers attended the meeting to ask for smaller classes and better equipment.",
    "The library project includes a children's reading room and a community kitchen.",
    "Construction is expected to begin in the spring and last about eighteen months.",
    "Residents will be able to comment on the designs at three public workshops.",
    "The budget also sets aside money for parks, bicycle lanes and street lighting.",
    "Several council members said they would review the costs again next year.",
];

const ZH: &[&str] = &[
    "市政府周二晚上经过长时间讨论后通过了新的年度预算方案。",
    "官员表示该计划将用于道路维修、学校建设以及一座新的公共图书馆。",
    "批评者认为支出增幅超过了这座城市能够承受的范围。",
    "支持者指出桥梁和供水管道的维护已经拖延了整整十年。",
    "市长承诺每个季度发布报告，让居民能够跟踪每一个项目的进展。",
    "当地商会对这一决定表示欢迎，但希望降低各类许可证的费用。",
    "许多教师也参加了会议，要求缩小班级规模并改善教学设备。",
    "图书馆项目包括一个儿童阅读室和一个社区厨房。",
    "工程预计将在明年春天开工，工期大约十八个月。",
    "居民可以在三场公开研讨会上对设计方案提出意见。",
    "预算还为公园、自行车道和街道照明预留了专项资金。",
    "几位议员表示他们明年还会重新审查相关成本。",
];

const OTHER_ZH: &[&str] = &[
    "这家餐厅以手工拉面闻名，汤底需要熬煮超过十二个小时。",
    "厨师每天清晨挑选新鲜的牛骨和香料，坚持传统做法。",
    "周末排队的顾客常常从店门口一直延伸到街角。",
    "除了拉面，店里的凉拌黄瓜和卤牛肉也很受欢迎。",
    "老板说他希望把这门手艺传给下一代年轻人。",
    "餐厅的装修保留了上世纪八十年代的木质桌椅。",
    "很多外地游客专门慕名而来品尝这碗面。",
    "价格多年来只上涨了两次，依然十分实惠。",
];

/// The site template: header with navigation, the content, a sidebar with an ad, a footer, and
/// the scripts every page carries (with "error" and "404" in them).
fn page_html(title: &str, content: &str, ad: &str) -> String {
    format!(
        r#"<!doctype html><html><head><title>{title}</title>
<script>window.onerror = function(e) {{ if (e.status == 404) console.error("error 404 not found"); }};</script>
<style>.nav {{ color: red }}</style></head><body>
<header><nav class="nav"><a href="/">Home</a> <a href="/news">News</a> <a href="/login">Login</a> <a href="/about">About</a></nav></header>
<div class="wrap"><div class="content">{content}</div>
<aside class="sidebar"><div class="ad"><a href="https://ads.example/c">{ad}</a></div></aside></div>
<footer><p>Copyright 2026 Example Daily. All rights reserved.</p></footer>
</body></html>"#
    )
}

fn article(sentences: &[&str]) -> String {
    format!(
        "<article><h1>Budget approved</h1>{}</article>",
        sentences
            .iter()
            .map(|s| format!("<p>{s}</p>"))
            .collect::<String>()
    )
}

fn page(url: &str, status: u16, html: &str) -> Page {
    Page::new(url, url, status, "text/html; charset=utf-8", html)
}

fn by_url<'a>(pages: &'a [Page], a: &'a [Assignment]) -> HashMap<&'a str, &'a Assignment> {
    pages.iter().map(|p| p.url.as_str()).zip(a).collect()
}

fn product(name: &str, desc: &[&str]) -> String {
    format!(
        "<div class=product><h1>{name}</h1><table><tr><td>Price</td><td>19.99</td></tr></table>{}</div>",
        desc.iter().map(|s| format!("<p>{s}</p>")).collect::<String>()
    )
}

fn corpus() -> Vec<Page> {
    let mut pages = Vec::new();
    // The same article with different ads (and one with a different sidebar entirely).
    for (i, ad) in [
        "Buy shoes today",
        "Cheap flights to Rome",
        "New phones on sale",
    ]
    .iter()
    .enumerate()
    {
        pages.push(page(
            &format!("https://news.example/a/budget?ref={i}"),
            200,
            &page_html("Budget approved", &article(EN), ad),
        ));
    }
    // One product template, different products.
    let products = [
        ("Oak desk", &EN[0..6]),
        ("Steel lamp", &EN[6..12]),
        ("Wool rug", &[EN[1], EN[3], EN[5], EN[7], EN[9], EN[11]][..]),
    ];
    for (i, (name, desc)) in products.iter().enumerate() {
        pages.push(page(
            &format!("https://shop.example/item/{i}"),
            200,
            &page_html(name, &product(name, desc), "ad"),
        ));
    }
    // Chinese: the same article with one sentence changed, and another article.
    let mut zh2: Vec<&str> = ZH.to_vec();
    zh2[5] = "当地商会对这一决定表示支持，同时建议简化审批流程。";
    let zh_all: Vec<&str> = ZH.iter().chain(ZH).copied().collect();
    let zh2_all: Vec<&str> = zh2.iter().chain(ZH).copied().collect();
    let other: Vec<&str> = OTHER_ZH
        .iter()
        .chain(OTHER_ZH)
        .chain(OTHER_ZH)
        .copied()
        .collect();
    pages.push(page(
        "https://zh.example/news/1",
        200,
        &page_html("预算通过", &article(&zh_all), "广告"),
    ));
    pages.push(page(
        "https://zh.example/news/1?from=app",
        200,
        &page_html("预算通过", &article(&zh2_all), "广告"),
    ));
    pages.push(page(
        "https://zh.example/food/9",
        200,
        &page_html("拉面", &article(&other), "广告"),
    ));
    // Rule pages.
    let error_page = page_html(
        "404 Not Found",
        "<h1>Page not found</h1><p>Sorry, the page you asked for does not exist.</p>",
        "ad",
    );
    pages.push(page("https://news.example/missing1", 404, &error_page));
    pages.push(page("https://news.example/missing2", 404, &error_page));
    pages.push(page(
        "https://news.example/broken",
        503,
        "<html><body>Service Unavailable</body></html>",
    ));
    pages.push(page(
        "https://news.example/broken2",
        502,
        "<html><body>Bad gateway</body></html>",
    ));
    let login = page_html(
        "Sign in",
        r#"<form action="/session" method="post"><input name="user"><input type="password" name="pw"><button>Sign in</button></form>"#,
        "ad",
    );
    pages.push(page("https://news.example/account", 200, &login));
    pages.push(page("https://news.example/settings", 200, &login));
    let waf = "<html><head><title>Just a moment...</title></head><body><h1>Checking your browser before accessing news.example</h1><p>This process is automatic. Cloudflare Ray ID: 7a1b2c</p></body></html>";
    pages.push(page("https://news.example/a/hot?x=1", 403, waf));
    pages.push(page("https://blog.example/post/1", 200, waf));
    let maint = page_html(
        "系统维护中",
        "<h1>系统维护中</h1><p>网站正在升级，请稍后再来。</p>",
        "广告",
    );
    pages.push(page("https://zh.example/app", 200, &maint));
    pages.push(page(
        "https://news.example/thin1",
        200,
        "<html><body>ok</body></html>",
    ));
    pages.push(page(
        "https://news.example/thin2",
        200,
        "<html><body>ok</body></html>",
    ));
    // Redirects: two URLs, one final page.
    let mut r1 = page(
        "https://news.example/go?id=1",
        200,
        &page_html("Moved", &article(&EN[..8]), "ad"),
    );
    r1.final_url = "https://news.example/final".into();
    let mut r2 = r1.clone();
    r2.url = "https://news.example/go?id=2".into();
    pages.push(r1);
    pages.push(r2);
    pages
}

#[test]
fn fixtures_cluster_as_a_crawler_expects() {
    let pages = corpus();
    let a = cluster(&pages, &Thresholds::default());
    let m = by_url(&pages, &a);
    let id = |u: &str| m[u].cluster_id.as_str();
    // Same article, different ads: one cluster, one canonical.
    let art = id("https://news.example/a/budget?ref=0");
    assert!(
        art.starts_with("cluster-"),
        "{:?}",
        m["https://news.example/a/budget?ref=0"]
    );
    assert_eq!(id("https://news.example/a/budget?ref=1"), art);
    assert_eq!(id("https://news.example/a/budget?ref=2"), art);
    let canon: Vec<bool> = (0..3)
        .map(|i| m[format!("https://news.example/a/budget?ref={i}").as_str()].is_canonical)
        .collect();
    assert_eq!(canon.iter().filter(|c| **c).count(), 1);
    // One template, different products: not clustered together.
    let p: Vec<&str> = (0..3)
        .map(|i| id(&format!("https://shop.example/item/{i}")))
        .collect::<Vec<_>>();
    for i in 0..3 {
        for j in i + 1..3 {
            assert!(
                p[i].is_empty() || p[i] != p[j],
                "products {i} and {j} merged"
            );
        }
    }
    // Chinese: one sentence changed → same cluster; a different article → not.
    let zh = id("https://zh.example/news/1");
    assert!(!zh.is_empty());
    assert_eq!(id("https://zh.example/news/1?from=app"), zh);
    assert_ne!(id("https://zh.example/food/9"), zh);
    // Rule classes and their id formats.
    let rule = |u: &str| m[u].rule;
    assert_eq!(rule("https://news.example/missing1"), Some(Rule::E3));
    assert_eq!(
        id("https://news.example/missing1"),
        id("https://news.example/missing2")
    );
    assert!(id("https://news.example/missing1").starts_with("errtpl-https://news.example-"));
    assert_eq!(rule("https://news.example/broken"), Some(Rule::E1));
    assert_eq!(
        id("https://news.example/broken"),
        "err5xx-https://news.example"
    );
    assert_eq!(
        id("https://news.example/broken2"),
        "err5xx-https://news.example"
    );
    assert_eq!(rule("https://news.example/account"), Some(Rule::L1));
    assert_eq!(
        id("https://news.example/account"),
        id("https://news.example/settings")
    );
    assert_eq!(
        rule("https://news.example/a/hot?x=1"),
        Some(Rule::E3),
        "a 403 challenge is an error status first"
    );
    assert_eq!(rule("https://blog.example/post/1"), Some(Rule::W1));
    assert_eq!(rule("https://zh.example/app"), Some(Rule::M1));
    assert_eq!(rule("https://news.example/thin1"), Some(Rule::T1));
    assert_eq!(
        id("https://news.example/thin1"),
        id("https://news.example/thin2")
    );
    assert_eq!(rule("https://news.example/go?id=1"), Some(Rule::R1));
    assert_eq!(
        id("https://news.example/go?id=1"),
        id("https://news.example/go?id=2")
    );
    assert!(id("https://news.example/go?id=1").starts_with("redir-"));
    // The article pages were not mistaken for errors or login walls by their scripts and nav.
    assert_eq!(m["https://news.example/a/budget?ref=0"].rule, None);
}

#[test]
fn the_seed_thresholds_are_stricter() {
    // At the seed's scale the Chinese pair with one changed sentence is not a duplicate.
    let pages = corpus();
    let zh1 = pages
        .iter()
        .find(|p| p.url == "https://zh.example/news/1")
        .unwrap();
    let zh2 = pages
        .iter()
        .find(|p| p.url == "https://zh.example/news/1?from=app")
        .unwrap();
    let d = (zh1.features.simhash ^ zh2.features.simhash).count_ones();
    let seed = compare(&zh1.features, &zh2.features, &Thresholds::seed());
    assert_eq!(seed.is_duplicate(&Thresholds::seed()), d == 0);
    let ours = compare(&zh1.features, &zh2.features, &Thresholds::default());
    assert!(
        ours.is_duplicate(&Thresholds::default()),
        "d = {d}, {ours:?}"
    );
}

#[test]
fn pagination_is_one_similar_pattern_but_separate_pages() {
    let list = |n: usize| {
        let items: String = (0..20)
            .map(|i| {
                format!(
                    "<li><a href=/item/{}>{}</a></li>",
                    n * 20 + i,
                    EN[(n + i) % EN.len()]
                )
            })
            .collect();
        page_html(
            "All news",
            &format!(
                "<ul class=list>{items}</ul><div class=pager><a href=?page={}>next</a></div>",
                n + 1
            ),
            "ad",
        )
    };
    let pages: Vec<Page> = (1..=3)
        .map(|n| {
            page(
                &format!("https://news.example/list?page={n}"),
                200,
                &list(n),
            )
        })
        .collect();
    let mut s = Sampler::new(3, 0.85);
    let mut v = Verdict::Sampling;
    for p in &pages {
        v = s.sample("https://news.example/list?page={num}", p.features.clone());
    }
    assert!(matches!(v, Verdict::Similar(x) if x >= 0.85), "{v:?}");
    // Different products under one template are measured different by content, not by DOM.
    let shop: Vec<Page> = corpus()
        .into_iter()
        .filter(|p| p.url.contains("shop.example"))
        .collect();
    let t = Thresholds::default();
    assert!(!compare(&shop[0].features, &shop[1].features, &t).is_duplicate(&t));
}

#[test]
fn a_failed_sample_does_not_decide_a_pattern() {
    let mut s = Sampler::new(3, 0.85);
    let p = page(
        "https://x.example/a?id=1",
        200,
        &page_html("t", &article(EN), "ad"),
    );
    s.failed("pat");
    s.failed("pat");
    assert_eq!(s.verdict("pat"), Verdict::Sampling);
    assert!(s.wants("pat"));
    assert_eq!(s.sample("pat", p.features.clone()), Verdict::Sampling);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// The same pages in any order get the same cluster ids and canonicals.
    #[test]
    fn assignments_do_not_depend_on_order(seed in any::<u64>()) {
        let pages = corpus();
        let base = cluster(&pages, &Thresholds::default());
        let want: HashMap<&str, (String, bool)> = pages
            .iter()
            .zip(&base)
            .map(|(p, a)| (p.url.as_str(), (a.cluster_id.clone(), a.is_canonical)))
            .collect();
        let mut order: Vec<usize> = (0..pages.len()).collect();
        let mut x = seed | 1;
        for i in (1..order.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let shuffled: Vec<Page> = order.iter().map(|&i| pages[i].clone()).collect();
        let got = cluster(&shuffled, &Thresholds::default());
        for (p, a) in shuffled.iter().zip(&got) {
            prop_assert_eq!(&want[p.url.as_str()], &(a.cluster_id.clone(), a.is_canonical), "{}", p.url);
        }
    }
}

/// `crawlsieve cluster` on JSON Lines: the JSON report validates against its schema; the CSV is
/// real CSV (a title with commas and quotes survives); a broken line is skipped, not fatal.
#[test]
fn the_cluster_command_writes_the_seed_report() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("pages.jsonl");
    let title = "Budget, \"approved\", finally";
    let mut lines: Vec<String> = (0..3)
        .map(|i| {
            serde_json::json!({
                "url": format!("https://news.example/a/budget?ref={i}"),
                "status": 200,
                "content_type": "text/html",
                "html": page_html(title, &article(EN), ["x", "y", "z"][i]),
            })
            .to_string()
        })
        .collect();
    lines.push(r#"{"url": "https://news.example/broken", "status": 503, "html": "oops"}"#.into());
    lines.push("{not json".into());
    std::fs::write(&input, lines.join("\n")).unwrap();
    let run = |out: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .arg("cluster")
            .arg(&input)
            .arg("-o")
            .arg(dir.path().join(out))
            .output()
            .unwrap();
        // The report is written; the line that is not JSON makes the run partial (exit 5).
        assert_eq!(
            o.status.code(),
            Some(5),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::read_to_string(dir.path().join(out)).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&run("r.json")).unwrap();
    if let Err(e) = common::schema_validator("cluster-report").validate(&json) {
        panic!("{e}: {json}");
    }
    assert_eq!(json["meta"]["total_urls"], 4);
    assert_eq!(json["meta"]["unreadable_lines"], 1);
    assert_eq!(json["meta"]["sim_threshold"], 0.85);
    // websiteSimilar's -sim-threshold: the structure threshold, echoed in meta; checked.
    let with = |v: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
            .args(["cluster", "--sim-threshold", v])
            .arg(&input)
            .output()
            .unwrap()
    };
    let o = with("0.9");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["meta"]["sim_threshold"], 0.9);
    assert_eq!(j["meta"]["thresholds"]["structure"], 0.9);
    let o = with("1.5");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a similarity between 0 and 1"));
    let urls = json["urls"].as_array().unwrap();
    let cid = urls[0]["cluster_id"].as_str().unwrap();
    assert!(cid.starts_with("cluster-"));
    assert!(urls[..3].iter().all(|u| u["cluster_id"] == cid));
    assert_eq!(urls.iter().filter(|u| u["is_canonical"] == true).count(), 2);
    assert_eq!(urls[3]["rule"], "E1");
    let csv_text = run("r.csv");
    let mut rd = csv::Reader::from_reader(csv_text.as_bytes());
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(&rows[0][8], title);
    assert_eq!(&rows[0][9], cid);
}

/// `crawlsieve cluster --warc` on a gzipped WARC: responses are read, a redirect is followed
/// inside the archive, and the two URLs of one final page are an R1 cluster.
#[test]
fn the_cluster_command_reads_a_gzipped_warc() {
    let dir = tempfile::tempdir().unwrap();
    let rec = |uri: &str, http: String| {
        format!(
            "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
            http.len()
        )
    };
    let html = page_html("Budget approved", &article(EN), "ad");
    let warc = [
        rec(
            "https://news.example/a",
            format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n{html}"),
        ),
        rec(
            "https://news.example/old",
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /a\r\n\r\n".into(),
        ),
        rec(
            "https://news.example/gone",
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\n\r\n<h1>Not found</h1>".into(),
        ),
    ]
    .concat();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, warc.as_bytes()).unwrap();
    let path = dir.path().join("crawl.warc.gz");
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let out = dir.path().join("r.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .args(["cluster", "--warc"])
        .arg(&path)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let urls = json["urls"].as_array().unwrap();
    assert_eq!(urls.len(), 3);
    let old = urls
        .iter()
        .find(|u| u["url"] == "https://news.example/old")
        .unwrap();
    assert_eq!(old["final_url"], "https://news.example/a");
    assert_eq!(
        old["redirect_chain"],
        serde_json::json!(["https://news.example/old", "https://news.example/a"])
    );
    assert_eq!(old["rule"], "R1");
    assert_eq!(urls[0]["cluster_id"], old["cluster_id"]);
    assert_eq!(urls[2]["rule"], "E3");
}

/// Issue 14: rustdoc-like item pages — a short item description above a long block of shared
/// trait boilerplate — are not merged with each other, while the same item page in two versions
/// (a version string changed) is; in every content cluster each member is within the thresholds
/// of its canonical and any two members within the documented bound (SimHash distance ≤ 2k,
/// estimated Jaccard ≥ 2·text − 1).
#[test]
fn boilerplate_does_not_make_pages_duplicates_and_clusters_stay_tight() {
    use crawlsieve::page::features::jaccard_estimate;
    let boiler: String = (0..40)
        .map(|i| format!("<p>impl Any for T where T: 'static fn type_id(&self) returns the TypeId of self, trait method number {i} documented at length here.</p>"))
        .collect();
    // Each item's own text uses the boilerplate's words (as rustdoc item pages do: the same
    // vocabulary of types and traits) in its own order: word counts alike, sentences not — the
    // case a word SimHash cannot tell apart.
    let words: Vec<&str> = "impl Any for T where T static fn type_id self returns the TypeId of self trait method documented at length here"
        .split(' ')
        .collect();
    let item = |name: &str, version: &str| {
        let seed = name
            .bytes()
            .fold(7u64, |a, b| a.wrapping_mul(31).wrapping_add(b as u64));
        let own: String = (0..14)
            .map(|i| {
                // A Fisher–Yates shuffle under a xorshift seeded by the item and paragraph.
                let mut x = seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut s = words.clone();
                for j in (1..s.len()).rev() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    s.swap(j, (x % (j as u64 + 1)) as usize);
                }
                format!("<p>{}</p>", s.join(" "))
            })
            .collect();
        format!(
            "<!doctype html><html><head><title>{name} in std - Rust {version}</title></head><body>\
             <nav>std {version} navigation</nav><main><h1>Struct {name}</h1>{own}{boiler}</main></body></html>"
        )
    };
    let names = [
        "MutexGuard",
        "SendError",
        "DirBuilder",
        "Output",
        "Reverse",
        "TrySendError",
    ];
    let mut pages = Vec::new();
    for v in ["1.62", "1.63"] {
        for n in names {
            pages.push(page(
                &format!("https://doc.example/{v}/{n}.html"),
                200,
                &item(n, v),
            ));
        }
    }
    let t = Thresholds::default();
    let a = cluster(&pages, &t);
    for (i, n) in names.iter().enumerate() {
        let (x, y) = (&a[i], &a[i + names.len()]);
        assert!(
            !x.cluster_id.is_empty() && x.cluster_id == y.cluster_id,
            "{n}: its two versions: {a:?}"
        );
        for (j, m) in names.iter().enumerate().skip(i + 1) {
            assert_ne!(x.cluster_id, a[j].cluster_id, "{n} merged with {m}");
        }
    }
    // The bound, on every pair of every content cluster.
    let k = t.max_content_distance();
    let mut by: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, x) in a.iter().enumerate() {
        if x.rule.is_none() && !x.cluster_id.is_empty() {
            by.entry(&x.cluster_id).or_default().push(i);
        }
    }
    for m in by.values() {
        for &i in m {
            let c = a[i].canonical;
            let f = |i: usize| &pages[i].features;
            assert!((f(i).simhash ^ f(c).simhash).count_ones() <= k);
            assert!(jaccard_estimate(&f(i).minhash, &f(c).minhash).unwrap() >= t.text);
            for &j in m {
                assert!((f(i).simhash ^ f(j).simhash).count_ones() <= 2 * k);
                assert!(
                    jaccard_estimate(&f(i).minhash, &f(j).minhash).unwrap() >= 2.0 * t.text - 1.0
                );
            }
        }
    }
}

/// Issue 14: U1 (URL variants) is confirmed by content. `/shop/Item` and `/shop/item/` serving
/// the same page are one U1 cluster; a case-sensitive server's `/shop/ITEM` with another page
/// is not merged with them.
#[test]
fn url_variants_merge_only_when_their_pages_agree() {
    let same = page_html("Budget approved", &article(EN), "ad");
    let other = page_html("Noodles", &article(OTHER_ZH), "ad");
    let pages = vec![
        page("https://shop.example/shop/Item", 200, &same),
        page("https://shop.example/shop/item/", 200, &same),
        page("https://shop.example/shop/ITEM", 200, &other),
    ];
    let a = cluster(&pages, &Thresholds::default());
    assert_eq!(a[0].rule, Some(Rule::U1), "{a:?}");
    assert_eq!(a[0].cluster_id, a[1].cluster_id);
    assert_ne!(a[2].rule, Some(Rule::U1), "{a:?}");
    assert_ne!(a[2].cluster_id, a[0].cluster_id);
}

/// Issue 14: hostile input to `crawlsieve cluster` — invalid UTF-8, a document nested 100,000
/// deep, one with 200,000 attributes, a truncated last line — each ends in a per-record error
/// or a skipped line with its number; every other page is reported.
#[test]
fn the_cluster_command_survives_hostile_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("pages.jsonl");
    let html = page_html("Budget approved", &article(EN), "ad");
    let line = |url: &str, html: &str| {
        serde_json::json!({"url": url, "status": 200, "content_type": "text/html", "html": html})
            .to_string()
            .into_bytes()
    };
    let mut latin1 = line("https://news.example/latin1", &html);
    // "café" in Latin-1 inside the JSON string: one invalid UTF-8 byte.
    let at = latin1.windows(6).position(|w| w == b"Budget").unwrap();
    latin1.splice(at..at, b"caf\xe9 ".iter().copied());
    let attrs: String = (0..200_000).map(|i| format!(" a{i}=x")).collect();
    let mut all: Vec<Vec<u8>> = vec![
        line("https://news.example/a", &html),
        latin1,
        line("https://news.example/deep", &"<div>".repeat(100_000)),
        line("https://news.example/wide", &format!("<div{attrs}>x</div>")),
        line("https://news.example/b", &html),
    ];
    let mut cut = line("https://news.example/cut", &html);
    cut.truncate(cut.len() / 2);
    all.push(cut);
    std::fs::write(&input, all.join(&b"\n"[..])).unwrap();
    let out = dir.path().join("r.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .arg("cluster")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // Written, with a skipped line and pages over the parser's bounds: partial (exit 5).
    assert_eq!(o.status.code(), Some(5), "{err}");
    assert!(err.contains(":2: invalid UTF-8 replaced"), "{err}");
    assert!(
        err.contains(":6: skipped: not a JSON object of a fetched page (EOF while parsing"),
        "{err}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    if let Err(e) = common::schema_validator("cluster-report").validate(&json) {
        panic!("{e}: {json}");
    }
    assert_eq!(json["meta"]["unreadable_lines"], 1);
    let urls = json["urls"].as_array().unwrap();
    let by = |u: &str| {
        urls.iter()
            .find(|x| x["url"] == format!("https://news.example/{u}"))
            .unwrap_or_else(|| panic!("{u} missing: {json}"))
    };
    assert_eq!(urls.len(), 5);
    assert_eq!(by("a")["error"], "");
    assert_eq!(by("b")["cluster_id"], by("a")["cluster_id"]);
    assert_eq!(by("latin1")["error"], "");
    assert_eq!(by("latin1")["cluster_id"], by("a")["cluster_id"]);
    assert!(
        by("deep")["error"]
            .as_str()
            .unwrap()
            .starts_with("unparsable: elements nested more than 512 deep"),
        "{}",
        by("deep")
    );
    assert!(
        by("wide")["error"]
            .as_str()
            .unwrap()
            .starts_with("unparsable: a tag with more than 1024 attributes"),
        "{}",
        by("wide")
    );
    assert_eq!(by("deep")["cluster_id"], "");
}

/// The streaming assignment: near-duplicates join the first page's cluster, rule pages get the
/// batch's rule ids, and memory per host stays bounded.
#[test]
fn online_assignment_matches_the_batch_on_the_fixtures_and_stays_bounded() {
    use crawlsieve::page::online::OnlineClusterer;
    let pages = corpus();
    let batch = cluster(&pages, &Thresholds::default());
    let mut on = OnlineClusterer::new(Thresholds::default(), 1000);
    let got: Vec<_> = pages.iter().map(|p| on.assign(p)).collect();
    let m: HashMap<&str, _> = pages.iter().map(|p| p.url.as_str()).zip(&got).collect();
    let art = &m["https://news.example/a/budget?ref=0"];
    assert!(art.is_canonical && art.cluster_id.starts_with("cluster-"));
    for i in 1..3 {
        let x = &m[format!("https://news.example/a/budget?ref={i}").as_str()];
        assert_eq!(x.cluster_id, art.cluster_id);
        assert!(!x.is_canonical);
    }
    assert_eq!(
        m["https://zh.example/news/1?from=app"].cluster_id,
        m["https://zh.example/news/1"].cluster_id
    );
    assert_ne!(
        m["https://zh.example/food/9"].cluster_id,
        m["https://zh.example/news/1"].cluster_id
    );
    for (p, (b, o)) in pages.iter().zip(batch.iter().zip(&got)) {
        if matches!(b.rule, Some(r) if r != Rule::R1 && r != Rule::U1) {
            assert_eq!(b.cluster_id, o.cluster_id, "{}", p.url);
        }
    }
    // Bounded: 5,000 distinct pages of one host, at most 2 × 100 canonicals remembered.
    let mut small = OnlineClusterer::new(Thresholds::default(), 100);
    let base = &pages[0];
    for i in 0..5000u64 {
        let mut p = base.clone();
        p.url = format!("https://news.example/n/{i}");
        p.final_url = p.url.clone();
        p.features.simhash = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        small.assign(&p);
        assert!(small.remembered("https://news.example") < 200);
    }
}
