//! The sweep chart: p99 and p99.9 latency (log scale) against achieved
//! 2xx/s for every row, each target's limit as a line (the first black,
//! the others grey), and each row's max rate at a target as a vertical
//! marker (fainter for later targets). Steps invalid for the first target
//! (the client was the limit) are hollow.

use plotters::prelude::*;

use super::parts::{draw_err, legend, COLORS};

use crate::sweep::report::SweepTable;

pub fn chart(table: &SweepTable) -> anyhow::Result<Vec<u8>> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 540)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        // A row appears once per target with the same steps: draw its
        // curves once.
        let mut rows: Vec<&crate::sweep::report::SweepRow> = Vec::new();
        for r in &table.rows {
            if !rows.iter().any(|x| x.row == r.row) {
                rows.push(r);
            }
        }
        let steps = || rows.iter().flat_map(|r| r.steps.iter());
        let x_max = steps().map(|s| s.step.achieved).fold(1.0f64, f64::max) * 1.05;
        let mut targets: Vec<(String, f64)> = Vec::new();
        for r in &table.rows {
            if let Ok(slo) = r.slo.parse::<crate::sweep::Slo>() {
                if !targets.iter().any(|(t, _)| *t == r.slo) {
                    targets.push((r.slo.clone(), slo.limit_us()));
                }
            }
        }
        let limit = targets.iter().map(|(_, l)| *l).reduce(f64::max);
        let y_max = steps()
            .map(|s| s.step.p999_us.max(s.step.p99_us))
            .chain(limit)
            .fold(10.0f64, f64::max)
            * 2.0;
        let y_min = steps()
            .map(|s| s.step.p99_us)
            .filter(|v| *v > 0.0)
            .fold(y_max, f64::min)
            .max(1.0)
            / 2.0;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{}: latency against load", table.title),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x_max, (y_min..y_max).log_scale())
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("achieved 2xx/s")
            .y_desc("latency µs (log)")
            .draw()
            .map_err(draw_err)?;
        for (k, (name, l)) in targets.iter().enumerate() {
            let style = if k == 0 {
                BLACK.stroke_width(2)
            } else {
                RGBColor(128, 128, 128).stroke_width(2)
            };
            chart
                .draw_series(LineSeries::new([(0.0, *l), (x_max, *l)], style))
                .map_err(draw_err)?
                .label(format!("target {name}"))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
        }
        for (i, r) in rows.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            let p99: Vec<(f64, f64)> = r
                .steps
                .iter()
                .filter(|s| s.step.p99_us > 0.0)
                .map(|s| (s.step.achieved, s.step.p99_us))
                .collect();
            chart
                .draw_series(LineSeries::new(p99, c.stroke_width(2)))
                .map_err(draw_err)?
                .label(format!("{} p99", r.row))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2)));
            let p999: Vec<(f64, f64)> = r
                .steps
                .iter()
                .filter(|s| s.step.p999_us > 0.0)
                .map(|s| (s.step.achieved, s.step.p999_us))
                .collect();
            chart
                .draw_series(LineSeries::new(p999, c.mix(0.5).stroke_width(1)))
                .map_err(draw_err)?
                .label(format!("{} p99.9", r.row))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.mix(0.5)));
            chart
                .draw_series(r.steps.iter().filter(|s| s.step.p99_us > 0.0).map(|s| {
                    let style = if s.valid {
                        c.filled()
                    } else {
                        c.stroke_width(1)
                    };
                    Circle::new((s.step.achieved, s.step.p99_us), 4, style)
                }))
                .map_err(draw_err)?;
        }
        for r in &table.rows {
            let i = rows.iter().position(|x| x.row == r.row).unwrap_or(0);
            let first = targets.first().is_none_or(|(t, _)| *t == r.slo);
            let c = COLORS[i % COLORS.len()].mix(if first { 0.6 } else { 0.25 });
            if let Some(m) = r.max_rate_at_slo {
                chart
                    .draw_series(LineSeries::new([(m, y_min), (m, y_max)], c.stroke_width(1)))
                    .map_err(draw_err)?;
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg.into_bytes())
}
