//! Record: what meta.json keeps about each row, block and comparison, the
//! run's metadata, and what the run prints and renders.

pub mod comparison;
pub mod history;
pub mod meta;
pub mod progress;
pub mod report;
pub mod row;
