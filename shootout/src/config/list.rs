//! `shootout list FILE`: one line per row with its settings.

use crate::config::scenario::{Design, ScenarioFile};

impl ScenarioFile {
    /// One line per scenario: name, variant, topology, sinks, load (`shootout list`).
    pub fn write_list(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{} ({}): {} scenarios",
            self.title,
            self.path.display(),
            self.scenarios.len()
        )?;
        if let Design::Paired(p) = &self.design {
            writeln!(
                out,
                "  paired against {:?}: {} schedule, {} run(s) of {} blocks of {} after {} settle per comparison{}",
                self.baseline.as_deref().unwrap_or(""),
                p.schedule_text(),
                p.runs,
                p.blocks,
                humantime::format_duration(p.block),
                humantime::format_duration(p.settle),
                match p.spread {
                    crate::config::scenario::Spread::Comparison => "",
                    crate::config::scenario::Spread::Sitting => ", blocks spread over the sitting",
                }
            )?;
        }
        if let Design::Memory(m) = &self.design {
            writeln!(
                out,
                "  memory rows: idle after {settle}, held {hold} (sampled {settle} after all are open), sampled again {} after they closed",
                humantime::format_duration(m.after),
                hold = humantime::format_duration(m.hold),
                settle = humantime::format_duration(m.settle),
            )?;
        }
        if let Design::Sinks(k) = &self.design {
            writeln!(
                out,
                "  sinks: each row's log lines sampled over {} of load, then written into its sink alone, {} runs of {} after {} uncounted",
                humantime::format_duration(k.sample),
                k.runs,
                humantime::format_duration(k.length),
                humantime::format_duration(k.settle),
            )?;
        }
        if let Design::Sweep(w) = &self.design {
            write_sweep(out, w)?;
        }
        let timed = matches!(self.design, Design::Sequential);
        for s in &self.scenarios {
            writeln!(
                out,
                "  {:<28} {:<45} {}{} log={} {} c={}{}{}{}{}{}{}",
                s.name,
                s.variant(),
                match &s.hosts {
                    Some(h) => format!("hosts:{}<-{}", h.server, h.load.join(",")),
                    None => format!("{:?}", s.topology),
                },
                match (&s.proxy, s.hosts.as_ref().and_then(|h| h.proxy.as_ref())) {
                    (Some(p), Some(host)) => format!("+nginx:{p}@{host}"),
                    (Some(p), None) => format!("+nginx:{p}"),
                    _ => String::new(),
                },
                log_cell(s),
                if matches!(self.design, Design::Memory(_)) {
                    "hold".to_string()
                } else {
                    format!("{:?}", s.request)
                },
                s.connections,
                if timed {
                    format!(" d={}", humantime::format_duration(s.duration))
                } else {
                    String::new()
                },
                if s.repetitions > 1 {
                    format!(" x{}", s.repetitions)
                } else {
                    String::new()
                },
                if s.tls { " https" } else { "" },
                s.requests_per_connection
                    .map_or(String::new(), |n| format!(" churn={n}")),
                s.slow.map_or(String::new(), |w| format!(
                    " slow={}/{}",
                    w.connections,
                    humantime::format_duration(w.every)
                )),
                s.against
                    .as_ref()
                    .map_or(String::new(), |a| format!(" against {a}")),
            )?;
        }
        Ok(())
    }
}

/// The row's log sink as `list` shows it (`+j`: xterm's jump scroll off).
fn log_cell(s: &crate::config::scenario::Scenario) -> String {
    let j = if s.jump_scroll { "" } else { "+j" };
    let cell = match &s.ssh_terminal {
        Some(t) => format!(
            "ssh-terminal@{}:{:?}{}",
            t.host,
            t.terminal,
            t.link_rate_bps
                .map_or(String::new(), |b| format!(",{b}bit/s"))
        ),
        None => format!("{:?}", s.log),
    };
    cell + j
}

/// The sweep design's settings (`shootout list`).
fn write_sweep(
    out: &mut impl std::io::Write,
    w: &crate::config::sweep::SweepSettings,
) -> std::io::Result<()> {
    writeln!(
        out,
        "  sweep to {}: {}, steps of at least {} and {} requests after {} settle, {} search(es) of {} bisection rounds",
        w.slos
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" and "),
        match &w.rates {
            Some(r) => format!("rates {r:?}"),
            None => format!(
                "from {}% of the closed-model rate ({} probe) up by {}x, at most {} steps",
                w.start_pct,
                humantime::format_duration(w.probe),
                w.factor,
                w.max_steps
            ),
        },
        humantime::format_duration(w.step),
        w.min_requests,
        humantime::format_duration(w.settle),
        w.repeats,
        w.bisect,
    )?;
    if w.interleave {
        writeln!(
            out,
            "  searches interleaved: each on a fresh stack, in rounds across the rows; a search pinned at an end of its bracket tries that end again, and past it"
        )?;
    }
    if !w.compare_at.is_empty() {
        writeln!(
            out,
            "  then compared with the baseline at {:?} % of its max rate at {}, {} blocks each (fresh processes, random order)",
            w.compare_at, w.slos[0], w.compare_blocks
        )?;
    }
    Ok(())
}
