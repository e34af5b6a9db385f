//! A latency target: `"p99 <= 1ms"`, any of p50, p90, p99 and p99.9, any
//! duration humantime reads.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

/// A latency percentile a target can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Quantile {
    #[serde(rename = "p50")]
    P50,
    #[serde(rename = "p90")]
    P90,
    #[serde(rename = "p99")]
    P99,
    #[serde(rename = "p99.9")]
    P999,
}

impl Quantile {
    /// As a fraction, for a histogram.
    pub fn fraction(self) -> f64 {
        match self {
            Quantile::P50 => 0.5,
            Quantile::P90 => 0.9,
            Quantile::P99 => 0.99,
            Quantile::P999 => 0.999,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Quantile::P50 => "p50",
            Quantile::P90 => "p90",
            Quantile::P99 => "p99",
            Quantile::P999 => "p99.9",
        }
    }
}

/// `QUANTILE <= LIMIT`: the step meets it when that percentile of its
/// latency (coordinated omission corrected) is at most the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slo {
    pub quantile: Quantile,
    pub limit: Duration,
}

impl Slo {
    /// The limit in microseconds, loadgen's latency unit.
    pub fn limit_us(&self) -> f64 {
        self.limit.as_secs_f64() * 1e6
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} <= {}",
            self.quantile.name(),
            humantime::format_duration(self.limit)
        )
    }
}

impl Serialize for Slo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Slo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Slo, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for Slo {
    type Err = String;

    fn from_str(text: &str) -> Result<Slo, String> {
        let usage =
            "write it as QUANTILE <= DURATION, e.g. \"p99 <= 1ms\" (p50, p90, p99 or p99.9)";
        let (q, limit) = text
            .split_once("<=")
            .ok_or_else(|| format!("bad slo {text:?}: {usage}"))?;
        let quantile = match q.trim() {
            "p50" => Quantile::P50,
            "p90" => Quantile::P90,
            "p99" => Quantile::P99,
            "p99.9" | "p999" => Quantile::P999,
            other => {
                return Err(format!(
                    "bad slo {text:?}: no percentile {other:?}; {usage}"
                ))
            }
        };
        let limit = humantime::parse_duration(limit.trim())
            .map_err(|e| format!("bad slo {text:?}: {e}; {usage}"))?;
        if limit.is_zero() {
            return Err(format!(
                "bad slo {text:?}: the limit must be more than zero"
            ));
        }
        Ok(Slo { quantile, limit })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_and_print_back() {
        let s: Slo = "p99 <= 1ms".parse().unwrap();
        assert_eq!(s.quantile, Quantile::P99);
        assert_eq!(s.limit, Duration::from_millis(1));
        assert_eq!(s.limit_us(), 1000.0);
        assert_eq!(s.to_string(), "p99 <= 1ms");
        let s: Slo = " p99.9<=10ms ".parse().unwrap();
        assert_eq!((s.quantile, s.limit_us()), (Quantile::P999, 10_000.0));
        assert_eq!(s.to_string(), "p99.9 <= 10ms");
    }

    #[test]
    fn bad_targets_say_what_is_wrong() {
        for (text, says) in [
            ("p99 <= banana", "bad slo \"p99 <= banana\""),
            ("p98 <= 1ms", "no percentile \"p98\""),
            ("p99 < 1ms", "QUANTILE <= DURATION"),
            ("p99 <= 0ms", "more than zero"),
        ] {
            let e = text.parse::<Slo>().unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
