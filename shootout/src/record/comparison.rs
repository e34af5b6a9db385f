//! What meta.json keeps about a paired comparison and each of its blocks.
//! The analysis reads these fields; their names and order are the format.

use serde::Serialize;

use crate::check::counter::CounterCheck;

/// One block, as meta.json keeps it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BlockRecord {
    pub block: u32,
    pub order: String,
    pub row_startup_line: Option<String>,
    pub base_startup_line: Option<String>,
    /// The terminal emulators the servers ran in (`log = "xterm"` rows).
    pub row_terminal: Option<String>,
    pub base_terminal: Option<String>,
    pub row_counter: Option<CounterCheck>,
    pub base_counter: Option<CounterCheck>,
    pub row_loadgen_exit: Option<i32>,
    pub base_loadgen_exit: Option<i32>,
    pub row_server_exit: Option<i32>,
    pub base_server_exit: Option<i32>,
    pub seconds: f64,
    pub error: Option<String>,
}

/// One comparison, as meta.json keeps it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ComparisonRecord {
    pub row: String,
    pub baseline: String,
    pub row_variant: String,
    pub base_variant: String,
    pub server_cpus: Option<String>,
    pub loadgen_cpus: Option<String>,
    pub settings: String,
    pub blocks: Vec<BlockRecord>,
    pub pairs: usize,
    pub seconds: f64,
    /// `target`, `budget`, `interrupted` or `error`.
    pub stopped_by: String,
    pub rps_ratio: Option<f64>,
    pub rps_ci95_pct: Option<f64>,
    pub cpu_ratio: Option<f64>,
    pub cpu_ci95_pct: Option<f64>,
    pub netem: Option<String>,
    pub error: Option<String>,
}

impl ComparisonRecord {
    /// `2xx/s 0.9981 ± 0.41%, CPU/request 1.0030 ± 0.38% (96 pairs)`.
    pub fn progress(&self) -> String {
        let m = |r: Option<f64>, ci: Option<f64>| match (r, ci) {
            (Some(r), Some(ci)) => format!("{r:.4} ± {ci:.2}%"),
            _ => "n/a".into(),
        };
        format!(
            "2xx/s {}, CPU/request {} ({} pairs)",
            m(self.rps_ratio, self.rps_ci95_pct),
            m(self.cpu_ratio, self.cpu_ci95_pct),
            self.pairs
        )
    }
}
