//! The README's runnable examples, executed (issue 28: the docs must not drift from the binary
//! again). Every ` ```console ` block of `README.md` is a session: lines starting with `$ ` are
//! shell commands (run by `sh -c` in the repository's root, with this build's `crawlsieve`
//! first on `PATH`), the lines after each, up to the next `$ ` or the block's end, are its
//! exact standard output. A command whose expected output is `...` alone is only required to
//! succeed. (`trycmd` does the same for one binary without a shell; the README's examples pipe
//! `echo` into commands, so a shell is needed.)

use std::path::Path;
use std::process::Command;

/// One example: the command and its expected stdout (`None`: only success is checked).
struct Example {
    line: usize,
    command: String,
    expected: Option<String>,
}

fn examples(readme: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut current: Option<(usize, String, Vec<String>)> = None;
    let flush = |cur: &mut Option<(usize, String, Vec<String>)>, out: &mut Vec<Example>| {
        if let Some((line, command, lines)) = cur.take() {
            let expected = if lines.len() == 1 && lines[0] == "..." {
                None
            } else {
                Some(lines.iter().map(|l| format!("{l}\n")).collect())
            };
            out.push(Example {
                line,
                command,
                expected,
            });
        }
    };
    for (i, l) in readme.lines().enumerate() {
        if !in_block {
            if l.trim_start() == "```console" {
                in_block = true;
            }
            continue;
        }
        if l.trim_start().starts_with("```") {
            flush(&mut current, &mut out);
            in_block = false;
            continue;
        }
        if let Some(cmd) = l.strip_prefix("$ ") {
            flush(&mut current, &mut out);
            current = Some((i + 1, cmd.to_string(), Vec::new()));
        } else if let Some((_, _, lines)) = &mut current {
            lines.push(l.to_string());
        }
    }
    out
}

#[test]
fn the_readme_examples_print_what_the_readme_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let ex = examples(&readme);
    assert!(
        ex.len() >= 5,
        "the README has runnable examples (```console blocks)"
    );
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_crawlsieve"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failed = Vec::new();
    for e in &ex {
        let o = Command::new("sh")
            .arg("-c")
            .arg(&e.command)
            .current_dir(root)
            .env("PATH", &path)
            .env_remove("CRAWLSIEVE_LOG")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let ok = o.status.success() && e.expected.as_ref().is_none_or(|want| *want == stdout);
        if !ok {
            failed.push(format!(
                "README.md:{}: $ {}\n  exit: {:?}\n  expected:\n{}\n  got:\n{}\n  stderr:\n{}",
                e.line,
                e.command,
                o.status.code(),
                e.expected.as_deref().unwrap_or("(success)"),
                stdout,
                String::from_utf8_lossy(&o.stderr)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    println!("{} README examples run", ex.len());
}
