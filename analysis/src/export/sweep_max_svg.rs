//! The sweep's max-rate chart: each row's max rate at each target as a
//! bar, with its 95 % interval over the searches as a whisker and its
//! ratio to the baseline's max rate at the same target written above it;
//! one colour per target. Lines without a searched max rate (a bound, or
//! none) are left out, as the README's table says why.

use plotters::prelude::*;

use super::parts::{bar_label, draw_err, COLORS};

use crate::sweep::report::SweepTable;

pub fn chart(table: &SweepTable) -> anyhow::Result<Vec<u8>> {
    let lines: Vec<&crate::sweep::report::SweepRow> = table
        .rows
        .iter()
        .filter(|r| !r.searches.is_empty() && r.max_rate_at_slo.is_some())
        .collect();
    let baseline = table
        .rows
        .iter()
        .find_map(|r| r.vs_baseline.as_ref().map(|v| v.against.as_str()));
    let mut targets: Vec<&str> = Vec::new();
    for r in &lines {
        if !targets.contains(&r.slo.as_str()) {
            targets.push(&r.slo);
        }
    }
    let hi = |r: &crate::sweep::report::SweepRow| {
        let m = r.max_rate_at_slo.unwrap_or(0.0);
        m * (1.0 + r.max_rate_ci95_pct.unwrap_or(0.0) / 100.0)
    };
    let y_max = lines.iter().map(|r| hi(r)).fold(1.0f64, f64::max) * 1.15;
    let n = lines.len().max(1);
    let longest = lines
        .iter()
        .map(|r| r.row.len() + r.slo.len() + 3)
        .max()
        .unwrap_or(0);
    let width = 960u32.max(120 + n as u32 * (longest as u32 * 5 + 16));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 540)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let labels: Vec<String> = lines
            .iter()
            .map(|r| format!("{} ({})", r.row, r.slo))
            .collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Max rate at each target (95% CI over searches); label: ratio to the baseline",
                ("sans-serif", 16),
            )
            .margin(12)
            .x_label_area_size(60)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..y_max)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| bar_label(&labels, *x))
            .y_label_formatter(&|v| format!("{:.0}k", v / 1000.0))
            .y_desc("2xx requests/s at the target")
            .draw()
            .map_err(draw_err)?;
        for (i, r) in lines.iter().enumerate() {
            let x = i as f64;
            let m = r.max_rate_at_slo.unwrap_or(0.0);
            let t = targets.iter().position(|t| *t == r.slo).unwrap_or(0);
            let color = COLORS[t % COLORS.len()];
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.35, 0.0), (x + 0.35, m)],
                    color.mix(0.8).filled(),
                )))
                .map_err(draw_err)?;
            if let Some(ci) = r.max_rate_ci95_pct {
                let h = m * ci / 100.0;
                chart
                    .draw_series(std::iter::once(ErrorBar::new_vertical(
                        x,
                        m - h,
                        m,
                        m + h,
                        BLACK.stroke_width(2),
                        12,
                    )))
                    .map_err(draw_err)?;
            }
            let text = match &r.vs_baseline {
                Some(v) => format!("{:.2}x", v.ratio),
                None if baseline == Some(r.row.as_str()) => "baseline".into(),
                None => String::new(),
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    text,
                    (x - 0.2, hi(r) + y_max * 0.02),
                    ("sans-serif", 13),
                )))
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg.into_bytes())
}
