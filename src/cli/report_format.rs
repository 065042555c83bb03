//! Which report `-o FILE` writes (JSON, CSV or HTML), by the file's extension.

use anyhow::Result;

/// What `-o` writes, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// `.json` (also what stdout gets).
    Json,
    /// `.csv`.
    Csv,
    /// `.html` / `.htm`: the self-contained report.
    Html,
}

/// The report format `path` names (`.json`, `.csv`, `.html`/`.htm`); any other name is a
/// usage error, before any work is done (a `report.txt` silently written as JSON surprised).
pub fn report_format(path: &std::path::Path) -> Result<ReportFormat> {
    if path.is_dir() {
        return Err(super::exit::input(format!(
            "-o {}: is a directory; name the report file in it ({}/report.html, .json or .csv)",
            path.display(),
            path.display()
        )));
    }
    // The directory must be there before any page is rendered, not after.
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !dir.is_dir() {
        return Err(super::exit::input(format!(
            "-o {}: the directory {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("json") => Ok(ReportFormat::Json),
        Some("csv") => Ok(ReportFormat::Csv),
        Some("html" | "htm") => Ok(ReportFormat::Html),
        _ => Err(super::exit::usage(format!(
            "-o {}: name the report .json, .csv or .html (the extension says which to write)",
            path.display()
        ))),
    }
}
