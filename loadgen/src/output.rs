//! Writing records to stdout as each interval closes, and the progress bar.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};

use crate::record::{IntervalRecord, Record, SummaryRecord};
use crate::run::Sink;

/// Output format of the records on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One line per interval in the original study's form, then a summary block.
    Text,
    /// One JSON object per interval, then one summary object.
    Jsonl,
}

/// Writes each record and flushes it at once, so a reader (the runner, a
/// pipe into a file) sees it as the interval closes.
pub struct StreamSink<W: Write> {
    out: W,
    format: Format,
    progress: Option<ProgressBar>,
}

impl<W: Write> StreamSink<W> {
    /// `expected_intervals` sizes the progress bar, shown only when stderr is a terminal.
    pub fn new(out: W, format: Format, expected_intervals: Option<u64>) -> Self {
        let progress = std::io::stderr().is_terminal().then(|| {
            let bar = match expected_intervals {
                Some(n) => ProgressBar::new(n),
                None => ProgressBar::new_spinner(),
            };
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} intervals {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        StreamSink {
            out,
            format,
            progress,
        }
    }

    /// Writes the summary (text block or last jsonl object) and clears the bar.
    pub fn summary(&mut self, summary: &SummaryRecord) -> std::io::Result<()> {
        if let Some(bar) = self.progress.take() {
            bar.finish_and_clear();
        }
        match self.format {
            Format::Text => write!(self.out, "{}", summary.text_block())?,
            Format::Jsonl => {
                serde_json::to_writer(&mut self.out, &Record::Summary(summary.clone()))?;
                writeln!(self.out)?;
            }
        }
        self.out.flush()
    }
}

impl<W: Write> Sink for StreamSink<W> {
    fn interval(&mut self, record: &IntervalRecord) -> std::io::Result<()> {
        match self.format {
            Format::Text => writeln!(self.out, "{}", record.text_line())?,
            Format::Jsonl => {
                serde_json::to_writer(&mut self.out, &Record::Interval(record.clone()))?;
                writeln!(self.out)?;
            }
        }
        self.out.flush()?;
        if let Some(bar) = &self.progress {
            bar.inc(1);
            bar.set_message(format!("{:.0} 2xx/s", record.rps()));
        }
        Ok(())
    }
}
