//! What the charts and pages of this module share: escaping, the series
//! colours, bar labels, plotters errors as ours, and the legend. Each
//! chart imports it; it imports none of them.

use plotters::prelude::*;

/// HTML-escapes text.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Series colours (the sweep, max-rate and sink-law charts).
pub(super) const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// The label of the bar at `x` (bars sit at 0, 1, 2...; nothing between).
pub(super) fn bar_label(labels: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        labels.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// A plotters error as ours (every chart of this module's siblings).
pub(super) fn draw_err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e}")
}

/// The legend every chart draws: the series labels in a white box with a
/// black border, at `position`.
pub(super) fn legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(position)
        .draw()
        .map_err(draw_err)
}
