//! The sink law's chart: measured 2xx/s against the sink's drain rate,
//! both on log scales, one colour per placement, with each placement's
//! prediction (drain ÷ lines per request up to its no-logging ceiling) as
//! a line and the measured 95 % interval as a bar.

use plotters::prelude::*;

use super::parts::{draw_err, legend, COLORS};

use crate::sinks::law::Law;

pub fn chart(law: &Law) -> anyhow::Result<Vec<u8>> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let xs = || law.rows.iter().map(|r| r.drain_lines_per_s);
        let ys = || {
            law.rows
                .iter()
                .map(|r| r.measured_rps)
                .chain(law.ceilings.iter().map(|c| c.rps))
        };
        let x_min = xs().fold(f64::MAX, f64::min).max(1.0) / 2.0;
        let x_max = xs().fold(1.0, f64::max) * 2.0;
        let y_min = ys().fold(f64::MAX, f64::min).max(1.0) / 2.0;
        let y_max = ys().fold(1.0, f64::max) * 2.0;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Log sinks: measured 2xx/s against drain rate",
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d((x_min..x_max).log_scale(), (y_min..y_max).log_scale())
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("drain rate of the sink alone, lines/s (log)")
            .y_desc("measured 2xx/s (log)")
            .draw()
            .map_err(draw_err)?;
        for (i, c) in law.ceilings.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let lpr = law
                .rows
                .iter()
                .find(|r| r.placement == c.placement)
                .map_or(1.0, |r| r.lines_per_request);
            // The prediction: the sink's rate up to the ceiling, then flat.
            let knee = c.rps * lpr;
            let line: Vec<(f64, f64)> = [x_min, knee.clamp(x_min, x_max), x_max]
                .iter()
                .map(|&x| (x, (x / lpr).min(c.rps)))
                .collect();
            chart
                .draw_series(LineSeries::new(line, color.mix(0.6).stroke_width(2)))
                .map_err(draw_err)?
                .label(format!(
                    "predicted, {} (ceiling {:.0}/s)",
                    c.placement, c.rps
                ))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
            let rows: Vec<_> = law
                .rows
                .iter()
                .filter(|r| r.placement == c.placement)
                .collect();
            chart
                .draw_series(rows.iter().map(|r| {
                    let half = r.measured_rps * r.measured_ci95_pct.unwrap_or(0.0) / 100.0;
                    ErrorBar::new_vertical(
                        r.drain_lines_per_s,
                        (r.measured_rps - half).max(y_min),
                        r.measured_rps,
                        r.measured_rps + half,
                        color.filled(),
                        8,
                    )
                }))
                .map_err(draw_err)?;
            chart
                .draw_series(
                    rows.iter().map(|r| {
                        Circle::new((r.drain_lines_per_s, r.measured_rps), 4, color.filled())
                    }),
                )
                .map_err(draw_err)?
                .label(format!("measured, {}", c.placement))
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg.into_bytes())
}
