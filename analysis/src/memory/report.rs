//! A memory table's numbers: per row the median and range over its
//! repetitions, and the study's summary (framework × allocator: idle, N
//! connections, after disconnect, after reclaim).

use std::path::Path;

use serde::Serialize;

use super::MemoryRecord;
use crate::input::{Problem, TableInput};

/// Median and range over repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct MemoryRow {
    pub name: String,
    pub label: String,
    pub server: String,
    pub allocator: String,
    pub reclaim_feature: bool,
    pub workers: Option<u32>,
    pub connections: u64,
    /// Repetitions measured without error.
    pub repetitions: usize,
    pub failed: usize,
    /// Fewest connections established in a repetition.
    pub established_min: u64,
    /// Held connections the server closed early, all repetitions.
    pub closed_early: u64,
    pub idle_kib: Spread,
    pub held_kib: Spread,
    pub held_peak_kib: Spread,
    pub after_kib: Spread,
    pub held_pss_kib: Option<Spread>,
    pub kib_per_connection: Option<Spread>,
    /// The server's own reclaim line: RSS just before and after its call.
    pub reclaim_before_kib: Option<Spread>,
    pub reclaim_after_kib: Option<Spread>,
    pub reclaim_took_us: Option<Spread>,
}

/// One line of the study-like summary: a server and allocator at N
/// connections; "after reclaim" is the `alloc-reclaim` build's row.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    pub server: String,
    pub allocator: String,
    pub workers: Option<u32>,
    pub connections: u64,
    pub idle_kib: f64,
    pub held_kib: f64,
    pub after_disconnect_kib: Option<f64>,
    pub after_reclaim_kib: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MemoryTable {
    pub name: String,
    pub title: String,
    pub rows: Vec<MemoryRow>,
    pub summary: Vec<SummaryRow>,
}

/// Reads every `*.memory.json` of the table.
pub fn read(dir: &Path, problems: &mut Vec<Problem>) -> Vec<MemoryRecord> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".memory.json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<MemoryRecord>(&t).map_err(|e| e.to_string()))
        {
            Ok(r) => out.push(r),
            Err(e) => problems.push(Problem(format!("{}: {e}", path.display()))),
        }
    }
    out
}

/// The table, rows in `table.toml` order (then any others by name).
pub fn build(table: &TableInput, problems: &mut Vec<Problem>) -> Option<MemoryTable> {
    let records = read(&table.dir, problems);
    if records.is_empty() {
        problems.push(Problem(format!(
            "{}: a memory table without memory records",
            table.dir.display()
        )));
        return None;
    }
    let mut names: Vec<String> = table
        .spec
        .row
        .iter()
        .map(|r| r.name.clone())
        .filter(|n| records.iter().any(|r| &r.scenario == n))
        .collect();
    let mut others: Vec<String> = records
        .iter()
        .map(|r| r.scenario.clone())
        .filter(|n| !names.contains(n))
        .collect();
    others.sort();
    others.dedup();
    names.extend(others);
    let rows: Vec<MemoryRow> = names
        .iter()
        .filter_map(|name| {
            let label = table
                .spec
                .row
                .iter()
                .find(|r| &r.name == name)
                .and_then(|r| r.label.clone())
                .unwrap_or_else(|| name.clone());
            let of: Vec<&MemoryRecord> = records.iter().filter(|r| &r.scenario == name).collect();
            row(name, label, &of)
        })
        .collect();
    let summary = summary(&rows);
    Some(MemoryTable {
        name: table.name.clone(),
        title: table
            .spec
            .title
            .clone()
            .unwrap_or_else(|| table.name.clone()),
        rows,
        summary,
    })
}

fn row(name: &str, label: String, records: &[&MemoryRecord]) -> Option<MemoryRow> {
    let good: Vec<&MemoryRecord> = records
        .iter()
        .copied()
        .filter(|r| r.error.is_none())
        .collect();
    let first = good.first()?;
    let kib = |f: &dyn Fn(&MemoryRecord) -> Option<f64>| {
        Spread::of(&good.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
    };
    let last_reclaim = |r: &MemoryRecord| r.reclaims.last().cloned();
    Some(MemoryRow {
        name: name.to_string(),
        label,
        server: first.server.clone(),
        allocator: first.allocator.clone(),
        reclaim_feature: first.reclaim_feature,
        workers: first.workers,
        connections: first.connections,
        repetitions: good.len(),
        failed: records.len() - good.len(),
        established_min: good
            .iter()
            .filter_map(|r| r.hold.as_ref().map(|h| h.established))
            .min()
            .unwrap_or(0),
        closed_early: good
            .iter()
            .filter_map(|r| r.hold.as_ref().map(|h| h.closed_early))
            .sum(),
        idle_kib: kib(&|r| Some(r.idle.rss_kib as f64))?,
        held_kib: kib(&|r| Some(r.held.rss_kib as f64))?,
        held_peak_kib: kib(&|r| Some(r.held_peak_rss_kib as f64))?,
        after_kib: kib(&|r| Some(r.after.rss_kib as f64))?,
        held_pss_kib: kib(&|r| r.held.pss_kib.map(|v| v as f64)),
        kib_per_connection: kib(&|r| r.kib_per_connection()),
        reclaim_before_kib: kib(&|r| last_reclaim(r).map(|x| x.rss_before_kib as f64)),
        reclaim_after_kib: kib(&|r| last_reclaim(r).map(|x| x.rss_after_kib as f64)),
        reclaim_took_us: kib(&|r| last_reclaim(r).map(|x| x.took_us as f64)),
    })
}

/// Server × allocator × N, in the order first seen; idle and held from the
/// build without reclaim when there is one.
fn summary(rows: &[MemoryRow]) -> Vec<SummaryRow> {
    let mut out: Vec<SummaryRow> = Vec::new();
    for r in rows {
        let same = |s: &SummaryRow| {
            s.server == r.server
                && s.allocator == r.allocator
                && s.workers == r.workers
                && s.connections == r.connections
        };
        let i = match out.iter().position(same) {
            Some(i) => i,
            None => {
                out.push(SummaryRow {
                    server: r.server.clone(),
                    allocator: r.allocator.clone(),
                    workers: r.workers,
                    connections: r.connections,
                    idle_kib: r.idle_kib.median,
                    held_kib: r.held_kib.median,
                    after_disconnect_kib: None,
                    after_reclaim_kib: None,
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        if r.reclaim_feature {
            s.after_reclaim_kib = Some(r.after_kib.median);
        } else {
            s.idle_kib = r.idle_kib.median;
            s.held_kib = r.held_kib.median;
            s.after_disconnect_kib = Some(r.after_kib.median);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_median_and_range() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of(&[1.0, 4.0]).unwrap().median, 2.5);
        assert!(Spread::of(&[]).is_none());
    }
}
