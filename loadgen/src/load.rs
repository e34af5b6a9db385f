//! The load mode (closed or open model): runs the workers, streams a record
//! per interval, prints the summary and ends with the verdict.

use std::process::ExitCode;

use crate::config::Config;
use crate::exit;
use crate::output::{Format, StreamSink};
use crate::run::run;

/// Runs `config`, writing its records to stdout in `format`. Exit 0, or 1
/// when the run failed or its verdict is against it (see
/// [`crate::SummaryRecord::verdict`]).
pub fn main(config: Config, format: Format, max_error_rate: Option<f64>) -> ExitCode {
    let stop = match exit::prepare(config.connections, config.threads) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let expected = config
        .total_duration()
        .map(|d| (d.as_nanos().div_ceil(config.interval.as_nanos())) as u64);
    let mut sink = StreamSink::new(std::io::stdout().lock(), format, expected);
    let summary = match run(config, &mut sink, stop) {
        Ok(s) => s,
        Err(e) => return exit::failed(e),
    };
    if let Err(e) = sink.summary(&summary) {
        return exit::failed(format!("writing the summary: {e}"));
    }
    match summary.verdict(max_error_rate) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => exit::failed(why),
    }
}
