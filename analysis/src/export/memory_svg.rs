//! The memory chart: for each row, three bars (idle, held, after
//! disconnect), in MiB.

use plotters::prelude::*;

use super::parts::{draw_err, legend};

use crate::memory::report::{MemoryRow, MemoryTable};

/// Which sample of a row a bar shows.
type Phase = fn(&MemoryRow) -> f64;

pub fn chart(table: &MemoryTable) -> anyhow::Result<Vec<u8>> {
    let mut svg = String::new();
    {
        let rows = table.rows.len().max(1);
        let height = (120 + 36 * rows) as u32;
        let root = SVGBackend::with_string(&mut svg, (960, height.max(360))).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let top = table
            .rows
            .iter()
            .map(|r| r.held_kib.max.max(r.after_kib.max) / 1024.0)
            .fold(1.0f64, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{}: resident memory (MiB)", table.title),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(330)
            .build_cartesian_2d(0.0..top * 1.3, rows as f64..0.0)
            .map_err(draw_err)?;
        let labels: Vec<String> = table.rows.iter().map(|r| r.label.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("MiB")
            // A label at each row's middle (i + 0.5), none elsewhere.
            .y_labels(rows * 2 + 1)
            .y_label_formatter(&|v| {
                let i = v.floor();
                if (v - i - 0.5).abs() < 0.01 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(draw_err)?;
        let phases: [(&str, RGBColor, Phase); 3] = [
            ("idle", RGBColor(120, 160, 220), |r| r.idle_kib.median),
            ("held", RGBColor(220, 110, 90), |r| r.held_kib.median),
            ("after disconnect", RGBColor(110, 180, 110), |r| {
                r.after_kib.median
            }),
        ];
        for (k, (name, color, value)) in phases.into_iter().enumerate() {
            chart
                .draw_series(table.rows.iter().enumerate().map(|(i, r)| {
                    // Three thin bars inside the row's band [i, i + 1].
                    let y0 = i as f64 + 0.12 + 0.26 * k as f64;
                    Rectangle::new([(0.0, y0), (value(r) / 1024.0, y0 + 0.22)], color.filled())
                }))
                .map_err(draw_err)?
                .label(name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg.into_bytes())
}
