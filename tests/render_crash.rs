//! A Chromium that dies is replaced: a test binary of its own, because it kills every Chromium
//! this process started.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::site::serve;
use crawlsieve::render::Renderer;

/// Chromium processes whose parent is this process.
fn our_chromiums() -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = &stat[stat.find('(').map_or(0, |i| i + 1)..close];
        let ppid = stat[close + 2..].split_whitespace().nth(1).unwrap_or("");
        if comm.starts_with("chrom") && ppid == me {
            out.push(pid);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_is_relaunched() {
    let base = serve();
    let r = Renderer::new(common::site::local_render_config())
        .await
        .unwrap();
    let url = format!("{base}/a1");
    assert!(r.render(&url).await.error.is_empty());
    let pids = our_chromiums();
    assert!(!pids.is_empty(), "the browser is a child of this process");
    for p in pids {
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The page that meets the dead browser may fail (an error record, not a hang or a panic);
    // the next one is rendered by a new browser.
    let first = r.render(&url).await;
    let second = if first.error.is_empty() {
        first
    } else {
        r.render(&url).await
    };
    assert!(second.error.is_empty(), "{second:?}");
    assert!(second.html.contains("public library"));
    assert!(r.launches.load(Ordering::Relaxed) >= 2);
}
