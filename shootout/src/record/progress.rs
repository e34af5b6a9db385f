//! Live progress of a paired run: on a terminal, one bar over every planned
//! block of every comparison, with the comparison, its running ratio and
//! interval, and the time left (indicatif's estimate from the blocks done
//! so far); elsewhere (a pipe, a log file, CI) one plain line per block, as
//! before, so a log keeps every block.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The run's progress display.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar over `blocks` planned blocks when stderr is a terminal.
    pub fn new(blocks: u64) -> Progress {
        Progress::with_target(blocks, std::io::stderr().is_terminal())
    }

    /// Plain lines only (a design that prints its own summaries).
    pub fn lines() -> Progress {
        Progress { bar: None }
    }

    fn with_target(blocks: u64, terminal: bool) -> Progress {
        let bar = terminal.then(|| {
            let bar = ProgressBar::with_draw_target(Some(blocks), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:.bold} [{bar:24}] {pos}/{len} blocks, {eta} left  {wide_msg}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        Progress { bar }
    }

    /// A comparison starts: its name on the bar.
    pub fn comparison(&self, row: &str, base: &str) {
        if let Some(b) = &self.bar {
            b.set_prefix(format!("{row} vs {base}"));
            b.set_message("");
        }
    }

    /// Block `n` of the comparison ended; `figures` are its running ratio
    /// and interval.
    pub fn block(&self, row: &str, base: &str, n: u32, order: &str, figures: &str) {
        match &self.bar {
            Some(b) => {
                b.inc(1);
                b.set_message(figures.to_string());
            }
            None => eprintln!("  {row} vs {base}: block {n} ({order}) {figures}"),
        }
    }

    /// Runs `f` (which prints a line) with the bar cleared, so the line
    /// stands above it.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// Removes the bar (the run's end, or an interruption).
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_terminal_there_is_no_bar_and_suspend_still_runs() {
        let p = Progress::with_target(8, false);
        assert!(p.bar.is_none());
        assert_eq!(p.suspend(|| 7), 7);
        p.comparison("ntex", "actix");
        p.block("ntex", "actix", 1, "ab", "2xx/s n/a");
    }

    #[test]
    fn a_bar_counts_blocks() {
        let p = Progress::with_target(8, true);
        let bar = p.bar.clone().expect("a bar");
        bar.set_draw_target(ProgressDrawTarget::hidden());
        p.comparison("ntex", "actix");
        p.block("ntex", "actix", 1, "ab", "2xx/s 0.8 ± 3%");
        p.block("ntex", "actix", 2, "ba", "2xx/s 0.8 ± 2%");
        assert_eq!(bar.position(), 2);
        assert_eq!(bar.message(), "2xx/s 0.8 ± 2%");
        assert_eq!(bar.prefix(), "ntex vs actix");
    }
}
