//! What the command line says of itself beyond each flag's `///` help: the examples and the
//! exit codes `--help` shows after the flags, `crawlsieve man` (roff pages generated from the
//! same definitions as `--help`) and `crawlsieve completions`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use super::exit;
use super::Cli;

/// `dedup --help`'s examples.
pub(super) const DEDUP_EXAMPLES: &str = "Examples:
  crawlsieve dedup --base https://docs.example.org/guide/ candidates.txt > new.txt
  crawlsieve dedup --state seen.bloom --capacity 1000000 day1.txt      # remembered across runs
  crawlsieve dedup --redis redis://127.0.0.1:6379 --namespace crawl1 -  # shared through Redis
  crawlsieve dedup --format jsonl --context js strings.txt              # one verdict per line";

/// `check --help`'s examples.
pub(super) const CHECK_EXAMPLES: &str = "Examples:
  echo 'function(){return 1}' | crawlsieve check
  crawlsieve check --base https://h.example/a/ --allow-domain h.example links.txt
  crawlsieve check --context html_attr --scope-file regex-urlfilter.txt hrefs.txt";

/// `cluster --help`'s examples.
pub(super) const CLUSTER_EXAMPLES: &str =
    "Input: JSON Lines, one fetched page a line: url, final_url, status, content_type, html
(optional: redirect_chain, timings, phash, thumbnail, error); a record needs status, html or error.
Or --warc FILE: the response records of a WARC (wget --warc-file).

Examples:
  crawlsieve cluster pages.jsonl -o report.json
  crawlsieve cluster --warc crawl.warc.gz -o report.html";

/// `similar --help`'s examples.
pub(super) const SIMILAR_EXAMPLES: &str = "Examples:
  crawlsieve similar -l urls.txt -o result.json
  crawlsieve similar -l https://a.example/,https://a.example/x -o report.html
  crawlsieve similar -l local.txt -o r.csv --allow 127.0.0.1:8080   # a loopback test site";

/// The exit-code contract ([`exit`]), as `--help` shows it.
pub(super) const EXIT_CODES: &str = "Exit codes: 0 done; 1 failed while running; 2 usage (a flag or value is wrong, nothing done); \
3 input (a file, state file or record cannot be read or is malformed); 4 unreachable (Redis, Kafka or \
Chromium); 5 partial (finished, but some items not done: the summary says how many).";

/// `crawlsieve completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `crawlsieve man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `crawlsieve.1` and `crawlsieve-COMMAND.1` for every command into DIR instead of
    /// printing the main page.
    #[arg(long, env = "CRAWLSIEVE_MAN_DIR", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `crawlsieve man`: pages generated from the same definitions as `--help`.
pub(super) fn man(a: ManArgs) -> Result<()> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let Some(dir) = a.dir else {
        let mut out = io::stdout().lock();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        return Ok(out.flush()?);
    };
    if dir.exists() && !dir.is_dir() {
        return Err(exit::input(format!(
            "man --dir {}: is a file, not a directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the directory {}", dir.display()))?;
    let write = |name: &str, c: clap::Command| -> Result<()> {
        let path = dir.join(format!("{name}.1"));
        let mut f = BufWriter::new(
            File::create(&path).with_context(|| format!("cannot create {}", path.display()))?,
        );
        clap_mangen::Man::new(c)
            .render(&mut f)
            .and_then(|_| f.flush())
            .with_context(|| format!("writing {}", path.display()))
    };
    // Every command and sub-command (`crawlsieve-bloom-create.1`): the pages refer to each
    // other by these names. clap wants a 'static name: the few page names are leaked once per
    // run of this command.
    fn pages(prefix: &str, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands() {
            let name = format!("{prefix}-{}", sub.get_name());
            let title: &'static str = Box::leak(name.clone().into_boxed_str());
            out.push((name.clone(), sub.clone().name(title)));
            pages(&name, sub, out);
        }
    }
    let mut all = Vec::new();
    pages("crawlsieve", &cmd, &mut all);
    for (name, c) in all {
        write(&name, c)?;
    }
    write("crawlsieve", cmd)?;
    Ok(())
}

/// `crawlsieve completions`: the script for `a.shell`, generated from the same definitions as
/// `--help`.
pub(super) fn completions(a: CompletionsArgs) -> Result<()> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    // Into a buffer first: clap_complete panics on a closed pipe (`| head`).
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "crawlsieve", &mut buf);
    let mut out = io::stdout().lock();
    out.write_all(&buf)?;
    Ok(out.flush()?)
}

/// `after_help` with the report's legend after it (`cluster`, `similar`).
pub(super) fn with_legend(examples: &str) -> String {
    format!(
        "{examples}\n\nClasses and terms in the report:\n{}",
        crate::page::rule_pages::legend_text()
    )
}
