//! Markdown for sink tables: each sink's drain rate with its interval over
//! runs, and the request rate it allows.

use std::fmt::Write;

use crate::sinks::SinkTable;

/// Appends every sink table (nothing when there are none).
pub fn sections(out: &mut String, tables: &[SinkTable]) -> std::fmt::Result {
    if tables.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "Log sinks alone: each row's server was loaded for a short sample with its stdout in a \
         file, which gives the lines it logs per request and the lines themselves; then, in \
         each run, a fresh sink of the row's kind took a writer that wrote those lines, one \
         write(2) each, as fast as the sink took them (pinned where the server runs; terminals \
         and their display are not pinned, as for the rows). Drain = a run's lines written / its \
         measured seconds (first write's start to last write's return), the mean of the runs' \
         rates with a 95 % interval over runs (Student's t). Line bytes count the newline; MB \
         = 10^6 bytes. Allows = drain ÷ \
         lines per request: the most requests per second a server logging into this sink can \
         answer, whatever its framework.\n"
    )?;
    for t in tables {
        writeln!(out, "## {}\n", t.title)?;
        writeln!(
            out,
            "| Configuration | Sink | Lines per request | Line bytes | Drain lines/s | 95% CI over runs | Drain MB/s | Allows requests/s | Runs (lines/s) |"
        )?;
        writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---|")?;
        for r in &t.rows {
            let ci = r
                .drain_ci95_pct
                .map_or("-".into(), |c| format!("± {c:.1}%"));
            let runs: Vec<String> = r.runs.iter().map(|x| format!("{x:.0}")).collect();
            writeln!(
                out,
                "| {} | {}{} ({}{}) | {:.3} | {:.1} | {:.0} | {ci} | {} | {:.0} | {} |",
                r.label,
                r.sink,
                if r.jump_scroll == Some(false) {
                    " +j"
                } else {
                    ""
                },
                r.log_level,
                r.host
                    .as_ref()
                    .map_or(String::new(), |h| format!(", on host {h}"))
                    + &r.writer_gap_us.map_or(String::new(), |g| format!(
                        ", a line every {g:.0} µs at most"
                    )),
                r.lines_per_request,
                r.line_bytes,
                r.drain_lines_per_s,
                mb(r.drain_bytes_per_s / 1e6),
                r.max_rps,
                runs.join(", ")
            )?;
        }
        writeln!(out)?;
        for r in &t.rows {
            if let Some(term) = &r.terminal {
                writeln!(out, "- {}: {term}", r.label)?;
            }
        }
        if t.rows.iter().any(|r| r.terminal.is_some()) {
            writeln!(out)?;
        }
        if let Some(r) = t.rows.iter().find(|r| r.settle_s > 0.0) {
            writeln!(
                out,
                "Each run wrote for {} s first, uncounted, so that the buffers between the writer and \
                 what drains it (a pseudo-terminal, ssh's channel window, TCP) were full before \
                 counting: until then a slow sink takes writes faster than it drains them.\n",
                r.settle_s
            )?;
        }
        if t.rows.iter().any(|r| r.writer_gap_us.is_some()) {
            writeln!(
                out,
                "\"A line every G µs at most\": the writer let at least G µs pass from one line's \
                 write to the next (`writer_gap`), so lines reached the sink one at a time, as a \
                 server writes them at up to 1e6 / G lines a second, not back to back. The sink law \
                 takes only back-to-back drains.\n"
            )?;
        }
    }
    Ok(())
}

/// MB/s with three significant digits below 10 (a slow sink's 0.12), one
/// decimal above.
fn mb(x: f64) -> String {
    if x < 10.0 {
        format!(
            "{:.*}",
            (2 - x.abs().log10().floor().max(-3.0) as i32).max(1) as usize,
            x
        )
    } else {
        format!("{x:.1}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn slow_sinks_keep_three_digits() {
        assert_eq!(super::mb(0.1237), "0.124");
        assert_eq!(super::mb(1.3), "1.30");
        assert_eq!(super::mb(52.44), "52.4");
        assert_eq!(super::mb(922.3), "922.3");
    }
}
