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

/// The layers of `src/lib.rs`'s map, lowest first. A module may import from its own layer or
/// below; a new top-level module must be placed here (the test fails until it is).
const LAYERS: &[&[&str]] = &[
    &["url", "bloom", "page", "input", "decision", "robots"],
    &[
        "net",
        "sieve",
        "scope",
        "redis_filter",
        "events",
        "pattern_verdicts",
        "params",
        "outcomes",
    ],
    &["config"],
    &["observe"],
    &["stage"],
    &["gate", "render", "serve"],
    &["cli"],
];

fn layer_of(m: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&m))
}

/// Top-level module → the top-level modules it names through `crate::…`.
fn import_graph() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut g: std::collections::BTreeMap<_, std::collections::BTreeSet<_>> = Default::default();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if rel == "main.rs" || rel == "lib.rs" {
            continue;
        }
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        let entry = g.entry(top.clone()).or_default();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            let mut rest = code;
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != top {
                    entry.insert(name);
                }
            }
        }
    }
    g
}

type Graph = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

/// What is wrong with `g`: imports pointing up, modules not placed, cycles.
fn problems(g: &Graph) -> Vec<String> {
    let mut bad = Vec::new();
    for (m, deps) in g {
        let Some(lm) = layer_of(m) else {
            bad.push(format!("{m}: not placed in LAYERS (and lib.rs's map)"));
            continue;
        };
        for d in deps {
            match layer_of(d) {
                None => bad.push(format!("{m} -> {d}: {d} not placed in LAYERS")),
                Some(ld) if ld > lm => bad.push(format!(
                    "{m} (layer {}) imports {d} (layer {}): an import pointing up",
                    lm + 1,
                    ld + 1
                )),
                _ => {}
            }
        }
    }
    // No cycle, also within a layer: repeatedly remove modules that import no remaining one.
    let mut left = g.clone();
    loop {
        let leaves: Vec<String> = left
            .iter()
            .filter(|(_, deps)| deps.iter().all(|d| !left.contains_key(d)))
            .map(|(m, _)| m.clone())
            .collect();
        if leaves.is_empty() {
            break;
        }
        for l in leaves {
            left.remove(&l);
        }
    }
    if !left.is_empty() {
        bad.push(format!(
            "an import cycle among {:?}",
            left.keys().collect::<Vec<_>>()
        ));
    }
    bad
}

#[test]
fn imports_point_down_the_layers_and_form_no_cycle() {
    let g = import_graph();
    assert!(g.len() >= 12, "read the modules: {:?}", g.keys());
    assert!(
        g["gate"].contains("stage") && g["stage"].contains("config"),
        "the graph holds real imports: {g:?}"
    );
    let bad = problems(&g);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The checker itself: an import pointing up, a cycle inside one layer, and an unplaced
/// module are each reported.
#[test]
fn the_layer_rule_catches_up_imports_cycles_and_strays() {
    let graph = |edges: &[(&str, &str)]| -> Graph {
        let mut g = Graph::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert!(problems(&graph(&[("gate", "stage"), ("stage", "config")])).is_empty());
    let up = problems(&graph(&[("config", "stage")]));
    assert!(up.len() == 1 && up[0].contains("pointing up"), "{up:?}");
    let cycle = problems(&graph(&[("gate", "serve"), ("serve", "gate")]));
    assert!(cycle.len() == 1 && cycle[0].contains("cycle"), "{cycle:?}");
    let stray = problems(&graph(&[("newthing", "url")]));
    assert!(
        stray.len() == 1 && stray[0].contains("not placed"),
        "{stray:?}"
    );
}

/// Inside `url`, the validator and the canonicalizer share `url::lex` and never import each
/// other (issue 15).
#[test]
fn validate_and_canon_do_not_import_each_other() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/url");
    let mut files = Vec::new();
    rust_files(&src.join("validate"), &mut files);
    let mut bad = Vec::new();
    for (files, other) in [
        (files, "canon::"),
        (vec![src.join("canon.rs")], "validate::"),
    ] {
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains(other) {
                    bad.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The child modules a module file declares (`mod x;`, `pub mod x;`, not `#[cfg(test)]` ones).
fn declared_children(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut test_attr = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("#[cfg(test)]") {
            test_attr = true;
            continue;
        }
        let decl = t
            .strip_prefix("pub mod ")
            .or_else(|| t.strip_prefix("pub(crate) mod "))
            .or_else(|| t.strip_prefix("mod "));
        if let Some(rest) = decl.and_then(|r| r.strip_suffix(';')) {
            if !test_attr {
                out.push(rest.trim().to_string());
            }
        }
        if !t.starts_with("#[") {
            test_attr = false;
        }
    }
    out
}

/// Issue 44: every module's map (its `//!` doc) names each child it declares — as `name`,
/// `name.rs`, `name/` or [`name`] — so a newcomer reading the map finds every file.
#[test]
fn every_module_map_names_its_children() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        let children = declared_children(&text);
        if children.is_empty() || !(name == "mod.rs" || name == "lib.rs" || name.ends_with(".rs")) {
            continue;
        }
        checked += 1;
        let map: String = text
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        for c in children {
            let named = [
                format!("`{c}`"),
                format!("{c}.rs"),
                format!("{c}/"),
                format!("[`{c}`]"),
                format!("`{c}::"),
                format!("[`{c}::"),
            ]
            .iter()
            .any(|p| map.contains(p.as_str()));
            if !named {
                let rel = f.strip_prefix(&src).unwrap().display().to_string();
                bad.push(format!("src/{rel}: its map does not name `{c}`"));
            }
        }
    }
    assert!(checked >= 8, "read the module files: {checked}");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Issue 44: every Redis key is named in `src/redis_filter/layout.rs` (`Keys`): no other file
/// writes a `cs:` key literal.
#[test]
fn every_redis_key_is_named_in_the_layout() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().display().to_string();
        if rel == "redis_filter/layout.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let body = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in body.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("\"cs:") {
                bad.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "Redis keys built outside layout.rs:\n{}",
        bad.join("\n")
    );
}
