//! Output formats behind one seam: each exporter turns a [`Report`] into
//! bytes and never writes anywhere itself; the caller decides where bytes go.

mod forest_svg;
pub mod html;
mod json;
mod markdown;
mod memory_md;
mod memory_svg;
mod paired_md;
mod paired_svg;
mod parts;
pub mod runs_html;
pub mod sink_law_md;
pub mod sink_law_svg;
mod sinks_md;
mod svg;
mod sweep_max_svg;
mod sweep_md;
mod sweep_svg;

pub use json::JsonExporter;
pub use markdown::MarkdownExporter;
pub use svg::charts;

use crate::report::{Report, TableReport};

/// One output format.
pub trait Exporter {
    fn serialize(&self, report: &Report) -> anyhow::Result<Vec<u8>>;
}

/// File name of a table's RPS-over-time chart.
pub fn time_chart_name(table: &TableReport) -> String {
    format!("{}-rps-over-time.svg", table.name)
}

/// File name of a paired table's chart of per-window ratios over time.
pub fn paired_chart_name(table: &crate::paired::report::PairedTable) -> String {
    format!("{}-paired-ratios.svg", table.name)
}

/// File name of a memory table's chart.
pub fn memory_chart_name(table: &crate::memory::report::MemoryTable) -> String {
    format!("{}-memory.svg", table.name)
}

/// File name of a sweep table's latency-against-load chart.
pub fn sweep_chart_name(table: &crate::sweep::report::SweepTable) -> String {
    format!("{}-latency-vs-load.svg", table.name)
}

/// File name of a sweep table's max-rate chart.
pub fn sweep_max_chart_name(table: &crate::sweep::report::SweepTable) -> String {
    format!("{}-max-rate.svg", table.name)
}

/// File name of a table's mean-with-CI bar chart.
pub fn ci_chart_name(table: &TableReport) -> String {
    format!("{}-rps-ci.svg", table.name)
}
