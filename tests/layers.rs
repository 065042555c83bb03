//! The crate's layers point one way (issue 15): `cli/` may import everything, nothing below it
//! may import `cli`. Every `.rs` file under `src/` except `main.rs` and `src/cli/` is read, and a
//! path into the command-line layer (`crate::cli`, `super::cli`, `super::super::cli`) fails.

fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn nothing_below_the_command_line_imports_it() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "read the sources: {}", files.len());
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if rel == "main.rs" || rel.starts_with("cli/") || rel == "cli.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if ["crate::cli", "super::cli", "super::super::cli"]
                .iter()
                .any(|p| code.contains(p))
            {
                bad.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "imports of the command line from below it:\n{}",
        bad.join("\n")
    );
}
