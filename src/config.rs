//! Values every component's configuration shares, below the command line: durations as they are
//! written in flags and TOML files, and a new filter's defaults. (Issue 15's first step: the
//! layers below `cli` take these from here, never from `crate::cli`; a test enforces it.)

use std::time::Duration;

/// A duration written `500ms`, `90s`, `15m`, `12h` or `30d` (a bare number is seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl std::str::FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Dur, String> {
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let n: u64 = num
            .parse()
            .map_err(|_| format!("{s:?}: expected a number and a unit (ms, s, m, h, d)"))?;
        let ms = match unit {
            "ms" => n,
            "" | "s" => n.saturating_mul(1000),
            "m" => n.saturating_mul(60_000),
            "h" => n.saturating_mul(3_600_000),
            "d" => n.saturating_mul(86_400_000),
            _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m, h, d)")),
        };
        Ok(Dur(Duration::from_millis(ms)))
    }
}

/// Default capacity of a new filter.
pub const DEFAULT_CAPACITY: u64 = 10_000_000;
/// Default FP target of a new filter.
pub const DEFAULT_FP_RATE: f64 = 1e-4;
