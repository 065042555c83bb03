//! Loading: built-in defaults → the file → `CRAWLSIEVE__…` environment → `--set` flags, then
//! one pass that types every key and collects every problem.

use std::path::Path;

use super::{Component, Config};

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML, or problems with its keys and values: every one found, a line each.
    #[error("{}", problems(.0))]
    Invalid(Vec<String>),
    /// The settings are right, but files they name cannot be read or are malformed (a scope
    /// file): every one found, a line each.
    #[error("{}", problems(.0))]
    Files(Vec<String>),
}

fn problems(v: &[String]) -> String {
    match v {
        [one] => one.clone(),
        many => {
            let mut s = format!("{} problems in the configuration:", many.len());
            for p in many {
                s.push_str("\n  - ");
                s.push_str(p);
            }
            s
        }
    }
}

impl ConfigError {
    fn one(m: impl Into<String>) -> ConfigError {
        ConfigError::Invalid(vec![m.into()])
    }

    /// The problems, one per entry (empty for a read error).
    pub fn problems(&self) -> &[String] {
        match self {
            ConfigError::Invalid(v) | ConfigError::Files(v) => v,
            ConfigError::Read { .. } => &[],
        }
    }
}

/// Build `component`'s configuration: its defaults, then `file` (if any), then environment
/// variables (`env` as (name, value) pairs; only `CRAWLSIEVE__*` are read), then `--set`
/// overrides.
pub fn load(
    component: Component,
    file: Option<&Path>,
    env: impl IntoIterator<Item = (String, String)>,
    sets: &[String],
) -> Result<Config, ConfigError> {
    let defaults = Config::defaults(component);
    let mut doc =
        toml::Table::try_from(&defaults).map_err(|e| ConfigError::one(format!("defaults: {e}")))?;
    // What the user wrote, all layers merged (to tell a default from a choice).
    let mut user = read_file(file)?;
    let mut errors = Vec::new();
    let env = env_paths(env);
    let origins = overlay(&mut user, env, sets, &mut errors);
    legacy(component, &mut user);
    merge(&mut doc, user);
    let from = errors.len();
    let cfg = typed(doc, &mut errors);
    let mut files = Vec::new();
    if let Some(cfg) = &cfg {
        errors.extend(cfg.problems(component));
        files = cfg.scope_problems(true);
    }
    name_origins(&mut errors[from..], &origins);
    match cfg {
        Some(cfg) if errors.is_empty() && files.is_empty() => Ok(cfg),
        // Only files at fault: an input error (exit 3), not a usage error.
        Some(_) if errors.is_empty() => Err(ConfigError::Files(files)),
        _ => {
            errors.extend(files);
            Err(ConfigError::Invalid(errors))
        }
    }
}

/// 1. The table `file` holds (an empty one without a file).
fn read_file(file: Option<&Path>) -> Result<toml::Table, ConfigError> {
    Ok(match file {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                path: p.display().to_string(),
                source,
            })?;
            // Not TOML at all: a malformed file (input), not a wrong setting.
            text.parse::<toml::Table>()
                .map_err(|e| ConfigError::Files(vec![format!("{}: {e}", p.display())]))?
        }
        None => toml::Table::new(),
    })
}

/// 2. The `CRAWLSIEVE__*` variables of `env` as sorted (dotted path, value, variable name).
fn env_paths(env: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String, String)> {
    let mut env: Vec<(String, String, String)> = env
        .into_iter()
        .filter_map(|(k, v)| {
            let path = k.strip_prefix("CRAWLSIEVE__")?;
            let mut parts: Vec<String> = path.split("__").map(|s| s.to_ascii_lowercase()).collect();
            // librdkafka property names are dotted, which environment names cannot be:
            // CRAWLSIEVE__KAFKA__CLIENT__SASL_PASSWORD sets kafka.client."sasl.password".
            if parts.len() == 3
                && parts[0] == "kafka"
                && matches!(parts[1].as_str(), "client" | "consumer" | "producer")
            {
                parts[2] = format!("\"{}\"", parts[2].replace('_', "."));
            }
            Some((parts.join("."), v, k))
        })
        .collect();
    env.sort();
    env
}

/// 3. Set the environment's, then the `--set` flags' values in `user`; where each key came from.
fn overlay(
    user: &mut toml::Table,
    env: Vec<(String, String, String)>,
    sets: &[String],
    errors: &mut Vec<String>,
) -> Vec<(String, String)> {
    // Where each `section.key` set outside the file came from (the last layer wins), so that a
    // problem with its value names the variable or flag to fix, not only the key.
    let mut origins: Vec<(String, String)> = Vec::new();
    let mut note = |path: &str, from: String| {
        // The whole path as `set` reads it (`kafka."batch_size"` is `kafka.batch_size`).
        let key = split_path(path).map_or_else(|_| path.to_string(), |p| p.join("."));
        origins.retain(|(k, _)| *k != key);
        origins.push((key, from));
    };
    for (path, value, name) in env {
        match set(user, &path, &value) {
            Err(e) => errors.push(format!("environment {name}: {e}")),
            Ok(()) => note(&path, format!("set by the environment variable {name}")),
        }
    }
    for s in sets {
        match s.split_once('=') {
            None => errors.push(format!("--set {s:?}: expected section.key=value")),
            Some((path, value)) => match set(user, path.trim(), value.trim()) {
                Err(e) => errors.push(format!("--set {s:?}: {e}")),
                Ok(()) => note(path.trim(), format!("set by --set {s:?}")),
            },
        }
    }
    origins
}

/// 4. Add to each message the variables or flags that set a key it names.
fn name_origins(errors: &mut [String], origins: &[(String, String)]) {
    // Every key a message names, as a whole word (`kafka.batch` is not `kafka.batch_size`).
    let names = |e: &str, k: &str| {
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        e.match_indices(k).any(|(i, _)| {
            let before = e[..i].chars().next_back();
            let mut after = e[i + k.len()..].chars();
            let (a0, a1) = (after.next(), after.next());
            let boundary_before = !ident(before) && before != Some('.');
            let boundary_after = !(ident(a0) || a0 == Some('.') && ident(a1));
            boundary_before && boundary_after
        })
    };
    for e in errors {
        let named: Vec<&str> = origins
            .iter()
            .filter(|(k, _)| names(e, k))
            .map(|(_, o)| o.as_str())
            .collect();
        if !named.is_empty() {
            e.push_str(&format!(" ({})", named.join("; ")));
        }
    }
}

/// Names kept for configurations written before they changed: the render stage's output was
/// `kafka.fetch_topic` (it is `kafka.results_topic`).
fn legacy(component: Component, user: &mut toml::Table) {
    if component != Component::Render {
        return;
    }
    if let Some(toml::Value::Table(k)) = user.get_mut("kafka") {
        if !k.contains_key("results_topic") {
            if let Some(v) = k.remove("fetch_topic") {
                tracing::warn!(
                    "kafka.fetch_topic names the render stage's output in an older format: read as kafka.results_topic"
                );
                k.insert("results_topic".into(), v);
            }
        }
    }
}

/// Type the merged document. Every key of every section is tried on its own first (the
/// sections default every field), so each unknown key and each value of the wrong type is
/// reported, not just the first; `None` when any was.
fn typed(mut doc: toml::Table, errors: &mut Vec<String>) -> Option<Config> {
    let before = errors.len();
    // Sections and keys that do not type: said, then left out, so that the rest is typed and
    // its own problems (ranges, combinations) are listed in the same run, not one run later.
    let mut drop_sections = Vec::new();
    let mut drop_keys = Vec::new();
    for (section, v) in &doc {
        let Some(table) = v.as_table() else {
            errors.push(format!("{section}: expected a section (a table)"));
            drop_sections.push(section.clone());
            continue;
        };
        let mut empty = toml::Table::new();
        empty.insert(section.clone(), toml::Value::Table(toml::Table::new()));
        if toml::Value::Table(empty).try_into::<Config>().is_err() {
            errors.push(format!("[{section}]: unknown section"));
            drop_sections.push(section.clone());
            continue;
        }
        for (key, value) in table {
            let mut one = toml::Table::new();
            one.insert(key.clone(), value.clone());
            let mut probe = toml::Table::new();
            probe.insert(section.clone(), toml::Value::Table(one));
            if let Err(e) = toml::Value::Table(probe).try_into::<Config>() {
                let m = e.message().trim();
                // `--set scope.allow=a,b` is one string: say how a list is written.
                let hint = if m.contains("expected a sequence") && value.is_str() {
                    let items: Vec<String> = value
                        .as_str()
                        .unwrap_or_default()
                        .split(',')
                        .map(|s| format!("{:?}", s.trim()))
                        .collect();
                    format!(" (a list is written [{}])", items.join(", "))
                } else {
                    String::new()
                };
                errors.push(format!("{section}.{key}: {m}{hint}"));
                drop_keys.push((section.clone(), key.clone()));
            }
        }
    }
    for s in drop_sections {
        doc.remove(&s);
    }
    for (s, k) in drop_keys {
        if let Some(toml::Value::Table(t)) = doc.get_mut(&s) {
            t.remove(&k);
        }
    }
    match toml::Value::Table(doc).try_into::<Config>() {
        Ok(c) => Some(c),
        // Every key typed alone, but not together: say it, unless that was said already.
        Err(e) => {
            if errors.len() == before {
                errors.push(e.to_string());
            }
            None
        }
    }
}

/// Overlay `over` on `base`, table by table.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Set `path` (dotted; a quoted last part may contain dots: `kafka.client."security.protocol"`)
/// to `value` read as a TOML scalar or array if it is one (`render.allow=["127.0.0.1"]`), else
/// as a string.
fn set(doc: &mut toml::Table, path: &str, value: &str) -> Result<(), String> {
    let parts = split_path(path)?;
    let (last, tables) = parts.split_last().ok_or("empty key")?;
    let mut t = doc;
    for p in tables {
        let entry = t
            .entry(p.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = entry
            .as_table_mut()
            .ok_or_else(|| format!("{p} is a value, not a section"))?;
    }
    let parsed = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut tb| tb.remove("v"))
        .filter(|v| !v.is_table());
    t.insert(
        last.clone(),
        parsed.unwrap_or_else(|| toml::Value::String(value.to_string())),
    );
    Ok(())
}

fn split_path(path: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"').ok_or("unclosed quote")?;
            out.push(r[..end].to_string());
            rest = r[end + 1..].strip_prefix('.').unwrap_or(&r[end + 1..]);
        } else {
            let (head, tail) = rest.split_once('.').unwrap_or((rest, ""));
            if head.is_empty() {
                return Err(format!("empty part in {path:?}"));
            }
            out.push(head.to_string());
            rest = tail;
        }
    }
    Ok(out)
}
