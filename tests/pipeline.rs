//! `scripts/pipeline.sh` (issue 26): the whole pipeline on loopback in one command — broker,
//! Redis, sample site, gate, render stage, gate again — ends with the report and the summary the
//! README shows. Run here with this build's binary, so the README's promise is tested.

#[test]
fn the_pipeline_script_runs_every_stage_and_ends_with_the_report() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = std::process::Command::new("bash")
        .arg(root.join("scripts/pipeline.sh"))
        .env("CRAWLSIEVE_BIN", env!("CARGO_BIN_EXE_crawlsieve"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}\n{err}");
    let line = |start: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} line in\n{out}"))
            .to_string()
    };
    // The sample candidates: 41 in, junk and repeats out, each new URL once.
    assert!(
        line("gate, first candidates")
            .contains("consumed  41, new  30, duplicate   3, rejected   8"),
        "{out}"
    );
    // Later candidates: the learned `sid` rule makes pages already fetched duplicates.
    assert!(
        line("gate, candidates found later")
            .contains("consumed   6, new   1, duplicate   2, rejected   3"),
        "{out}"
    );
    for reason in [
        "js_code 1",
        "html_tag 1",
        "template_syntax 1",
        "private_address 1",
        "trap_repeated_path 1",
        "pattern_similar 3",
    ] {
        assert!(
            line("rejected by reason").contains(reason),
            "{reason}: {out}"
        );
    }
    assert!(line("render stage").contains("30 pages"), "{out}");
    // Issue 45: the summary's pages and clusters are the report's, counted as it counts them.
    let counted = line("report (every fetched URL)");
    assert!(counted.contains("soft_404 3"), "{out}");
    assert!(
        line("learned rule").contains("`sid` changes nothing"),
        "{out}"
    );
    let report = root.join("target/pipeline/report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        html.starts_with("<!doctype html>") || html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..100.min(html.len())]
    );
    assert!(html.contains("soft_404"), "the report lists the soft 404s");
    let header = html
        .split("id=\"summary\">")
        .nth(1)
        .and_then(|h| h.split("; generated").next())
        .unwrap();
    let plain = header
        .replace("<b id=\"cluster-count\">", "")
        .replace("</b>", "");
    assert!(
        counted.contains(&plain),
        "summary {counted:?} and report header {plain:?} disagree"
    );
    // The clean URL is the canonical of its cluster (the learned rule says `sid` changes
    // nothing), and the URL that redirects to it is in that cluster, not one of its own.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("target/pipeline/report.json")).unwrap())
            .unwrap();
    let urls = report["urls"].as_array().unwrap();
    let intro = urls
        .iter()
        .find(|u| u["url"].as_str().unwrap().ends_with("/docs/intro"))
        .unwrap();
    assert_eq!(intro["is_canonical"], true, "{intro}");
    let old = urls
        .iter()
        .find(|u| u["url"].as_str().unwrap().ends_with("/old-intro"))
        .unwrap();
    assert_eq!(old["cluster_id"], intro["cluster_id"], "{old}");
    for u in urls
        .iter()
        .filter(|u| u["url"].as_str().unwrap().contains("/docs/intro?sid="))
    {
        assert_eq!(u["cluster_id"], intro["cluster_id"], "{u}");
    }
}
