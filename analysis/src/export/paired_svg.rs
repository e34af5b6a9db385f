//! The paired chart: each pair's 2xx/s ratio (row / baseline) over time,
//! one colour per compared row, with the line at 1.

use plotters::prelude::*;

use super::parts::{draw_err, legend};

use crate::paired::report::PairedTable;

/// Per-pair ratios against pair number (pairs in time order, blocks back
/// to back), so that drifts, outliers and slot effects can be seen.
pub fn ratios_over_time(table: &PairedTable) -> anyhow::Result<Vec<u8>> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let ratios = || {
            table
                .rows
                .iter()
                .flat_map(|r| r.windows.iter().map(|(w, _)| w.row_rps / w.base_rps))
        };
        let (lo, hi) = ratios().fold((1.0f64, 1.0f64), |(l, h), v| (l.min(v), h.max(v)));
        let pad = ((hi - lo) * 0.1).max(0.005);
        let n = table
            .rows
            .iter()
            .map(|r| r.windows.len())
            .max()
            .unwrap_or(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{}: 2xx/s ratio to the baseline per pair", table.title),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..n.max(2) as f64, (lo - pad)..(hi + pad))
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("pair (time order)")
            .y_desc("row / baseline")
            .y_label_formatter(&|v| format!("{v:.3}"))
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, 1.0), (n.max(2) as f64, 1.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(draw_err)?;
        for (i, row) in table.rows.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(row.windows.iter().enumerate().map(|(x, (w, _))| {
                    Circle::new((x as f64, w.row_rps / w.base_rps), 2, color.filled())
                }))
                .map_err(draw_err)?
                .label(row.label.clone())
                .legend(move |(x, y)| Circle::new((x + 8, y), 3, color.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg.into_bytes())
}
