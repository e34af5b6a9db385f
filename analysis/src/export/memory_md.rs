//! Markdown for memory tables: the study's summary (server × allocator:
//! idle, N connections, after disconnect, after reclaim), then every row
//! with its spread and the server's own reclaim figures.

use std::fmt::Write;

use super::memory_chart_name;
use crate::memory::report::{MemoryTable, Spread};

/// Appends every memory table (nothing when there are none).
pub fn sections(out: &mut String, tables: &[MemoryTable]) -> std::fmt::Result {
    if tables.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "Memory rows: the server's resident set size (VmRSS) after start and a verification request \
         (idle), while `loadgen --hold` keeps N connections open (each made one GET), and a settle \
         time after loadgen closed them all (after disconnect). Builds with `alloc-reclaim` ask the \
         allocator to give memory back once the open connections are back to zero, so their \"after \
         disconnect\" is after reclaim; the server's own line gives RSS just before and after its \
         call. Figures are medians over the repetitions, in MiB (KiB / 1024), with the range when \
         there are several. KiB per connection = (held - idle) / connections established.\n"
    )?;
    for t in tables {
        table(out, t)?;
    }
    Ok(())
}

fn mib(kib: f64) -> String {
    format!("{:.1}", kib / 1024.0)
}

fn spread(s: &Spread, reps: usize) -> String {
    let (lo, hi) = (mib(s.min), mib(s.max));
    if reps > 1 && lo != hi {
        format!("{} ({lo}-{hi})", mib(s.median))
    } else {
        mib(s.median)
    }
}

fn table(out: &mut String, t: &MemoryTable) -> std::fmt::Result {
    writeln!(out, "## {}\n", t.title)?;
    writeln!(out, "| Server | Allocator | Workers | Connections | Idle MiB | Held MiB | After disconnect MiB | After reclaim MiB |")?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|")?;
    let opt = |v: Option<f64>| v.map_or("-".to_string(), mib);
    for s in &t.summary {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            s.server,
            s.allocator,
            s.workers.map_or("?".into(), |w| w.to_string()),
            s.connections,
            mib(s.idle_kib),
            mib(s.held_kib),
            opt(s.after_disconnect_kib),
            opt(s.after_reclaim_kib),
        )?;
    }
    writeln!(out)?;
    writeln!(out, "Every row:\n")?;
    writeln!(out, "| Configuration | Reps | Held / asked | Closed early | Idle MiB | Held MiB | Peak MiB | After MiB | KiB per connection | Held PSS MiB | Server's reclaim: before → after MiB (µs) |")?;
    writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )?;
    for r in &t.rows {
        let reps = r.repetitions;
        let reclaim = match (
            &r.reclaim_before_kib,
            &r.reclaim_after_kib,
            &r.reclaim_took_us,
        ) {
            (Some(b), Some(a), Some(us)) => {
                format!("{} → {} ({:.0})", mib(b.median), mib(a.median), us.median)
            }
            _ if r.reclaim_feature => "none seen".into(),
            _ => "-".into(),
        };
        writeln!(
            out,
            "| {}{} | {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.label,
            if r.failed > 0 {
                format!(" ({} failed)", r.failed)
            } else {
                String::new()
            },
            reps,
            r.established_min,
            r.connections,
            r.closed_early,
            spread(&r.idle_kib, reps),
            spread(&r.held_kib, reps),
            spread(&r.held_peak_kib, reps),
            spread(&r.after_kib, reps),
            r.kib_per_connection
                .map_or("-".into(), |k| format!("{:.1}", k.median)),
            r.held_pss_kib
                .as_ref()
                .map_or("-".into(), |p| mib(p.median)),
            reclaim,
        )?;
    }
    writeln!(out, "\n![memory]({})\n", memory_chart_name(t))
}
