//! SVG charts with plotters: interval RPS over time, and mean RPS with its
//! 95% confidence interval, one pair per table. Returned as bytes.

use plotters::prelude::*;

use super::parts::{bar_label, draw_err, legend};
use super::{ci_chart_name, time_chart_name};
use crate::report::{Report, TableReport};

const SIZE: (u32, u32) = (960, 480);

/// 300000.0 -> "300k" on the RPS axes.
fn rps_label(v: &f64) -> String {
    if *v >= 1000.0 {
        format!("{:.0}k", v / 1000.0)
    } else {
        format!("{v:.0}")
    }
}

/// Every chart of the report: (file name, SVG bytes).
pub fn charts(report: &Report) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for table in &report.tables {
        out.push((time_chart_name(table), over_time(table)?));
        out.push((ci_chart_name(table), with_ci(table)?));
    }
    for table in &report.paired {
        out.push((
            super::paired_chart_name(table),
            super::paired_svg::ratios_over_time(table)?,
        ));
    }
    for table in &report.memory {
        out.push((
            super::memory_chart_name(table),
            super::memory_svg::chart(table)?,
        ));
    }
    for table in report.sweeps.iter().filter(|t| !t.rows.is_empty()) {
        out.push((
            super::sweep_chart_name(table),
            super::sweep_svg::chart(table)?,
        ));
        if table.rows.iter().any(|r| !r.searches.is_empty()) {
            out.push((
                super::sweep_max_chart_name(table),
                super::sweep_max_svg::chart(table)?,
            ));
        }
    }
    for (_, svg) in &mut out {
        *svg = slim(svg);
    }
    Ok(out)
}

/// `svg` without the attributes plotters writes at their SVG defaults
/// (`opacity="1"`, `stroke-width="1"`), which draw the same without them:
/// a quarter of a scatter chart's bytes, kept in every committed run.
fn slim(svg: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(svg)
        .replace(" opacity=\"1\"", "")
        .replace(" stroke-width=\"1\"", "")
        .into_bytes()
}

fn over_time(table: &TableReport) -> anyhow::Result<Vec<u8>> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let points = table.rows.iter().flat_map(|r| r.series.iter().flatten());
        let (x_max, y_max) = points.fold((1.0f64, 1.0f64), |(x, y), (t, v)| (x.max(*t), y.max(*v)));
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{}: requests/s per interval", table.title),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max * 1.1)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("seconds after warm-up")
            .y_label_formatter(&rps_label)
            .y_desc("2xx requests/s")
            .draw()
            .map_err(draw_err)?;
        for (i, row) in table.rows.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            for (rep, series) in row.series.iter().enumerate() {
                let drawn = chart
                    .draw_series(LineSeries::new(
                        series.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(draw_err)?;
                if rep == 0 {
                    drawn.label(row.label.clone()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                    });
                }
            }
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg.into_bytes())
}

fn with_ci(table: &TableReport) -> anyhow::Result<Vec<u8>> {
    let mut svg = String::new();
    {
        let n = table.rows.len();
        // Wide enough that the row names under the bars do not overlap.
        let longest = table.rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
        let width = SIZE.0.max(100 + n as u32 * (longest as u32 * 5 + 20));
        let root = SVGBackend::with_string(&mut svg, (width, SIZE.1)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let y_max = table
            .rows
            .iter()
            .map(|r| {
                r.rps.mean
                    + if r.rps.ci95.is_finite() {
                        r.rps.ci95
                    } else {
                        0.0
                    }
            })
            .fold(1.0f64, f64::max);
        let labels: Vec<String> = table.rows.iter().map(|r| r.name.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{}: mean requests/s, 95% CI", table.title),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(60)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..y_max * 1.1)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| bar_label(&labels, *x))
            .y_label_formatter(&rps_label)
            .y_desc("2xx requests/s")
            .draw()
            .map_err(draw_err)?;
        for (i, row) in table.rows.iter().enumerate() {
            let x = i as f64;
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.35, 0.0), (x + 0.35, row.rps.mean)],
                    color.filled(),
                )))
                .map_err(draw_err)?;
            if row.rps.ci95.is_finite() {
                chart
                    .draw_series(std::iter::once(ErrorBar::new_vertical(
                        x,
                        row.rps.mean - row.rps.ci95,
                        row.rps.mean,
                        row.rps.mean + row.rps.ci95,
                        BLACK.stroke_width(2),
                        12,
                    )))
                    .map_err(draw_err)?;
            }
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slim_drops_only_attributes_at_their_defaults() {
        let svg = br##"<circle cx="1" cy="2" r="2" opacity="1" fill="#E6194B" stroke="none" stroke-width="1"/><line opacity="0.1" stroke-width="10" x1="1"/><text opacity="1.5">a</text>"##;
        assert_eq!(
            String::from_utf8(slim(svg)).unwrap(),
            r##"<circle cx="1" cy="2" r="2" fill="#E6194B" stroke="none"/><line opacity="0.1" stroke-width="10" x1="1"/><text opacity="1.5">a</text>"##
        );
    }
}
