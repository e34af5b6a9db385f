//! When a sitting measured: the start of its first measured interval and
//! the end of its last, read from its raw loadgen records. The coverage
//! plan (`docs/coverage-plan.md`) needs its sittings at least an hour
//! apart, and its reference an hour from every judged sitting.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The plan's least gap between two sittings, in minutes.
pub const MIN_GAP_MIN: f64 = 60.0;

/// A sitting's measured span, in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub start_ms: f64,
    pub end_ms: f64,
}

impl Span {
    /// Minutes from the end of the earlier span to the start of the later
    /// (negative when they overlap).
    pub fn gap_min(&self, other: &Span) -> f64 {
        let (a, b) = if self.start_ms <= other.start_ms {
            (self, other)
        } else {
            (other, self)
        };
        (b.start_ms - a.end_ms) / 60_000.0
    }
}

/// The span of the measured (not warm-up) intervals in every jsonl file
/// under `dir`.
pub fn span(dir: &Path) -> anyhow::Result<Span> {
    let mut found: Option<Span> = None;
    for file in jsonl_files(dir) {
        let text = crate::input::raw::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        for line in text.lines() {
            let Ok(r) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if r["type"] != "interval" || r["warmup"] == true {
                continue;
            }
            let (Some(start), Some(len)) = (r["start_unix_ms"].as_f64(), r["length_ms"].as_f64())
            else {
                continue;
            };
            let s = found.get_or_insert(Span {
                start_ms: start,
                end_ms: start + len,
            });
            s.start_ms = s.start_ms.min(start);
            s.end_ms = s.end_ms.max(start + len);
        }
    }
    found.with_context(|| format!("{}: no measured interval in its raw files", dir.display()))
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    crate::input::raw::walk(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect()
}

/// Refuses sittings closer than [`MIN_GAP_MIN`] to the one before them
/// (in the order given), or to the reference.
pub fn check_gaps(reference: (&str, Span), sittings: &[(&str, Span)]) -> anyhow::Result<()> {
    for pair in sittings.windows(2) {
        let ((a, sa), (b, sb)) = (pair[0], pair[1]);
        anyhow::ensure!(
            sb.start_ms >= sa.start_ms,
            "sitting {b} ran before {a}: give the sittings in the order run"
        );
        let gap = sa.gap_min(&sb);
        anyhow::ensure!(
            gap >= MIN_GAP_MIN,
            "sitting {b} began {gap:.1} min after {a} ended; the plan needs at least {MIN_GAP_MIN:.0} (docs/coverage-plan.md)"
        );
    }
    let (r, sr) = reference;
    for (s, ss) in sittings {
        let gap = sr.gap_min(ss);
        anyhow::ensure!(
            gap >= MIN_GAP_MIN,
            "sitting {s} is {gap:.1} min from the reference {r}; the plan needs at least {MIN_GAP_MIN:.0} (docs/coverage-plan.md)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start_min: f64, end_min: f64) -> Span {
        Span {
            start_ms: start_min * 60_000.0,
            end_ms: end_min * 60_000.0,
        }
    }

    #[test]
    fn sittings_an_hour_apart_pass_and_closer_ones_are_refused() {
        let reference = ("ref", at(0.0, 8.0));
        let ok = [("s1", at(68.0, 76.0)), ("s2", at(136.0, 144.0))];
        check_gaps(reference, &ok).unwrap();
        // 42 minutes after the one before: refused, naming both.
        let close = [("s1", at(68.0, 76.0)), ("s2", at(118.0, 126.0))];
        let e = check_gaps(reference, &close).unwrap_err().to_string();
        assert!(e.contains("s2 began 42.0 min after s1"), "{e}");
        // Out of order.
        let e = check_gaps(reference, &[ok[1], ok[0]])
            .unwrap_err()
            .to_string();
        assert!(e.contains("ran before"), "{e}");
        // Too close to the reference, on either side of it.
        let e = check_gaps(("ref", at(100.0, 108.0)), &ok)
            .unwrap_err()
            .to_string();
        assert!(e.contains("from the reference"), "{e}");
    }

    #[test]
    fn the_span_covers_measured_intervals_only() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("row/run-01");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(
            sub.join("block-01-ab.row.jsonl"),
            "{\"type\":\"interval\",\"warmup\":true,\"start_unix_ms\":0,\"length_ms\":1000}\n\
             {\"type\":\"interval\",\"warmup\":false,\"start_unix_ms\":1000,\"length_ms\":1000}\n\
             {\"type\":\"summary\"}\n",
        )
        .unwrap();
        std::fs::write(
            sub.join("block-02-ba.row.jsonl"),
            "{\"type\":\"interval\",\"start_unix_ms\":5000,\"length_ms\":500}\n",
        )
        .unwrap();
        let s = span(dir.path()).unwrap();
        assert_eq!((s.start_ms, s.end_ms), (1000.0, 5500.0));
        assert!(span(&dir.path().join("row")).is_ok());
        let empty = tempfile::tempdir().unwrap();
        assert!(span(empty.path()).is_err());
    }
}
