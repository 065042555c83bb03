//! Pages/s of the renderer with features, hashing and clustering, beside bare Chromium
//! navigation + the same screenshot, on the same local pages in the same run; and the browser's
//! memory (PSS of every Chromium process, from /proc/*/smaps_rollup).
//!
//! Run: `cargo bench --bench render` (`RENDER_PAGES`, default 60; `RENDER_TABS`, default 2;
//! `RENDER_SETTLE_MS`, the settle budget, default the renderer's own — the settle wait is part
//! of what `similar` and the render stage pay per page, so it is measured).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::env_or as env;
use crawlsieve::page::online::OnlineClusterer;
use crawlsieve::page::similarity::Thresholds;
use crawlsieve::page::Page;
use crawlsieve::render::safety::Policy;
use crawlsieve::render::{RenderConfig, Renderer};
use futures::StreamExt;

/// Total PSS (kB) of the Chromium processes on the machine.
fn chromium_pss_kb() -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let p = e.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if !comm.trim().starts_with("chrom") {
            continue;
        }
        let roll = std::fs::read_to_string(p.join("smaps_rollup")).unwrap_or_default();
        for l in roll.lines() {
            if let Some(v) = l.strip_prefix("Pss:") {
                total += v
                    .trim()
                    .trim_end_matches(" kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap_or(0);
            }
        }
    }
    total
}

async fn bare(urls: &[String], tabs: usize) -> (f64, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = chromiumoxide::BrowserConfig::builder()
        .chrome_executable("/usr/bin/chromium")
        .user_data_dir(dir.path())
        .window_size(1280, 800)
        .no_sandbox()
        .launch_timeout(Duration::from_secs(60))
        .args(crawlsieve::render::CHROMIUM_SWITCHES)
        .build()
        .unwrap();
    let (browser, mut handler) = chromiumoxide::Browser::launch(cfg).await.unwrap();
    let h = tokio::spawn(async move { while handler.next().await.is_some() {} });
    let browser = std::sync::Arc::new(browser);
    let start = Instant::now();
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(tabs));
    let tasks: Vec<_> = urls
        .iter()
        .map(|u| {
            let (b, u, sem) = (browser.clone(), u.clone(), sem.clone());
            tokio::spawn(async move {
                let _p = sem.acquire().await.unwrap();
                let page = b.new_page(u.as_str()).await.unwrap();
                let _ = page.wait_for_navigation().await;
                let png = page
                    .screenshot(crawlsieve::render::screenshot_params((1280, 800)))
                    .await
                    .unwrap_or_default();
                let _ = page.close().await;
                png
            })
        })
        .collect();
    let mut png = Vec::new();
    for t in tasks {
        let p = t.await.unwrap();
        if png.is_empty() {
            png = p;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    drop(browser);
    h.abort();
    (urls.len() as f64 / secs, png)
}

fn main() {
    let n: usize = env("RENDER_PAGES", 60);
    let tabs: usize = env("RENDER_TABS", 2);
    let settle_ms: u64 = env(
        "RENDER_SETTLE_MS",
        RenderConfig::default().settle_max.as_millis() as u64,
    );
    let base = common::site::serve();
    let paths = ["/a1", "/a2", "/js", "/login"];
    let urls: Vec<String> = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                format!("{base}/p/{i}")
            } else {
                format!("{base}{}?v={i}", paths[i % paths.len()])
            }
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let (bare_rate, png) = bare(&urls, tabs).await;
        let h0 = Instant::now();
        for _ in 0..50 {
            std::hint::black_box(crawlsieve::render::hashes(&png).unwrap());
        }
        let hash_ms = h0.elapsed().as_secs_f64() * 1000.0 / 50.0;
        let r = std::sync::Arc::new(
            Renderer::new(RenderConfig {
                tabs,
                settle_max: Duration::from_millis(settle_ms),
                policy: Policy { allow: vec!["127.0.0.1".into()] },
                ..RenderConfig::default()
            })
            .await
            .unwrap(),
        );
        let mut clusterer = OnlineClusterer::new(Thresholds::default(), 10_000);
        let start = Instant::now();
        let mut peak = 0;
        let tasks: Vec<_> = urls
            .iter()
            .map(|u| {
                let (r, u) = (r.clone(), u.clone());
                tokio::spawn(async move { r.render(&u).await })
            })
            .collect();
        let mut feature_secs = 0.0;
        for t in tasks {
            let x = t.await.unwrap();
            let f0 = Instant::now();
            let mut p = Page::new(&x.url, &x.final_url, x.status, &x.content_type, &x.html);
            p.features.phash = x.phash;
            clusterer.assign(&p);
            feature_secs += f0.elapsed().as_secs_f64();
            peak = peak.max(chromium_pss_kb());
        }
        let ours = n as f64 / start.elapsed().as_secs_f64();
        println!(
            "render/{n} pages, {tabs} tabs, settle budget {settle_ms} ms: bare navigation + screenshot {bare_rate:.2} pages/s; crawlsieve render + features + hashes + clustering {ours:.2} pages/s ({:+.1}%); features + clustering {:.2} ms per page, screenshot hashing {hash_ms:.2} ms per page (bare page time {:.0} ms); Chromium PSS peak {:.0} MiB",
            100.0 * (bare_rate / ours - 1.0),
            1000.0 * feature_secs / n as f64,
            1000.0 * tabs as f64 / bare_rate,
            peak as f64 / 1024.0
        );
    });
}
