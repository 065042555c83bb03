//! Durations as they are written in flags and TOML files, parsed once (at load) into a
//! [`Duration`], and printed back in the shortest exact form.

use std::time::Duration;

/// A duration written `500ms`, `90s`, `15m`, `12h`, `30d` or any [`humantime`] form
/// (`1h 30m`, `2weeks`); a bare number is seconds. Parsed once, when the flag or the file is
/// read: a component never sees a string.
///
/// Months and years (`3months`, `1y`, and `M`, which [`humantime`] reads as months) are refused:
/// they have no fixed length (humantime counts 30.44 and 365.25 days), and `15M` for fifteen
/// minutes would silently mean fifteen months. Write days (`90d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub Duration);

/// `x` seconds (`1.5`), or why not (`shown` is how the value was written).
fn seconds(x: f64, shown: &str) -> Result<Dur, String> {
    Duration::try_from_secs_f64(x)
        .map(Dur)
        .map_err(|_| format!("{shown}: not a number of seconds (expected e.g. 1.5, 90s, 15m)"))
}

impl std::str::FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Dur, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("an empty duration: expected a number and a unit (ms, s, m, h, d)".into());
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            let n: u64 = s
                .parse()
                .map_err(|_| format!("{s:?}: too large a number of seconds"))?;
            return Ok(Dur(Duration::from_secs(n)));
        }
        // A bare decimal number is seconds too, as a bare integer is (`1.5` = 1.5 s).
        if s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && s.bytes().filter(|&b| b == b'.').count() == 1
        {
            return seconds(s.parse::<f64>().unwrap_or(f64::NAN), &format!("{s:?}"));
        }
        if let Some(unit) = s
            .split(|c: char| !c.is_ascii_alphabetic())
            .find(|u| matches!(*u, "M" | "month" | "months" | "y" | "year" | "years"))
        {
            return Err(format!(
                "{s:?}: {unit:?} is a month or year, which has no fixed length \
                 (write days, e.g. 90d; minutes are m)"
            ));
        }
        humantime::parse_duration(s)
            .map(Dur)
            .map_err(|e| format!("{s:?}: {e} (expected e.g. 500ms, 90s, 15m, 12h, 30d)"))
    }
}

impl std::fmt::Display for Dur {
    /// The largest unit that writes it exactly: `24h`, `90s`, `500ms`, `0s`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.0.as_millis();
        if !self.0.subsec_nanos().is_multiple_of(1_000_000) {
            return write!(f, "{}ns", self.0.as_nanos());
        }
        if ms == 0 {
            return f.write_str("0s");
        }
        for (unit, n) in [
            ("d", 86_400_000),
            ("h", 3_600_000),
            ("m", 60_000),
            ("s", 1_000),
        ] {
            if ms.is_multiple_of(n) {
                return write!(f, "{}{unit}", ms / n);
            }
        }
        write!(f, "{ms}ms")
    }
}

impl serde::Serialize for Dur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Dur {
    /// A string (`"90s"`) or a bare number of seconds.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration such as \"500ms\", \"90s\" or \"12h\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Dur, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Dur, E> {
                u64::try_from(v)
                    .map(|s| Dur(Duration::from_secs(s)))
                    .map_err(|_| E::custom("a negative duration"))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Dur, E> {
                Ok(Dur(Duration::from_secs(v)))
            }
            /// `hold = 1.5` in TOML (and `--set robots.hold=1.5`, read as TOML) is 1.5 s, as
            /// the string `"1.5"` is.
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Dur, E> {
                seconds(v, &v.to_string()).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl From<Dur> for Duration {
    fn from(d: Dur) -> Duration {
        d.0
    }
}

/// Default capacity of a new filter.
pub const DEFAULT_CAPACITY: u64 = 10_000_000;
/// Default FP target of a new filter.
pub const DEFAULT_FP_RATE: f64 = 1e-4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_bare_seconds_and_prints_back_exactly() {
        let d = |s: &str| s.parse::<Dur>().map(|d| d.0);
        assert_eq!(d("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(d("90"), Ok(Duration::from_secs(90)));
        assert_eq!(d("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(d("1h 30m"), Ok(Duration::from_secs(5_400)));
        assert!(d("3x").is_err());
        assert!(d("soon").is_err());
        for s in [
            "3months", "1month", "15M", "1y", "2years", "1year 2d", "1d 3M",
        ] {
            let e = d(s).unwrap_err();
            assert!(
                e.contains("no fixed length") && e.contains("90d"),
                "{s}: {e}"
            );
        }
        assert_eq!(d("2weeks"), Ok(Duration::from_secs(14 * 86_400)));
        assert_eq!(d("15m"), Ok(Duration::from_secs(900)));
        assert!(d("").is_err());
        for s in ["0s", "500ms", "90s", "15m", "12h", "1d", "30d", "1500ms"] {
            assert_eq!(s.parse::<Dur>().unwrap().to_string(), s);
        }
        assert_eq!("1h 30m".parse::<Dur>().unwrap().to_string(), "90m");
    }
}
