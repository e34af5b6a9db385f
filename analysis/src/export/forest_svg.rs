//! Forest plots, drawn as inline SVG text: each line a ratio with its 95 %
//! interval on a log axis, 1 marked. The run's own answers with the A/A's
//! interval shaded (what the run cannot tell from no difference), and each
//! comparison's earlier sittings (from `results/history.json`) up to this
//! run's.

use std::fmt::Write;

use crate::paired::answer::Answer;
use crate::sittings::history::Comparison;

use super::parts::esc;

/// One line of a forest plot.
pub struct Line {
    pub label: String,
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// Drawn stronger (the run's own sitting among earlier ones).
    pub strong: bool,
    /// A wider interval drawn thin behind it: a sitting's interval for the
    /// next sitting.
    pub next: Option<(f64, f64)>,
}

const WIDTH: f64 = 640.0;
const LEFT: f64 = 230.0;
const RIGHT: f64 = 620.0;
const ROW: f64 = 24.0;
const TOP: f64 = 30.0;

/// The run's answers; `band` is the A/A's interval, shaded.
pub fn answers(answers: &[Answer]) -> String {
    let lines: Vec<Line> = answers
        .iter()
        .map(|a| Line {
            label: a.name(),
            ratio: a.ratio.ratio,
            lo: a.ratio.lo,
            hi: a.ratio.hi,
            strong: !a.aa,
            next: None,
        })
        .collect();
    let band = answers
        .iter()
        .filter(|a| a.aa)
        .map(|a| (a.ratio.lo, a.ratio.hi))
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    forest(
        "forest-run",
        "This run: 2xx/s ratio and 95 % interval (log axis); shaded: the A/A's interval",
        &lines,
        band,
    )
}

/// Each comparison's sittings up to run `run` (its own drawn stronger).
pub fn sittings(history: &[Comparison], run: &str) -> String {
    let mut lines = Vec::new();
    for c in history {
        let id = &c.identity;
        let name = if id.aa {
            "A/A".to_string()
        } else {
            format!("{}/{}", id.row, id.against)
        };
        for s in &c.sittings {
            lines.push(Line {
                // Month, day and time: with the year, a long name's label
                // ran past the plot's left edge (the page clipped it).
                label: format!(
                    "{name} {}",
                    s.date.get(5..16).unwrap_or(&s.date).replace('T', " ")
                ),
                ratio: s.ratio,
                lo: s.lo,
                hi: s.hi,
                strong: s.run == run,
                next: s.next.as_ref().map(|n| (n.lo, n.hi)),
            });
        }
        // With three sittings or more, their pool (random effects).
        if let Some(a) = &c.across {
            lines.push(Line {
                label: format!("{name} across {}", a.sittings),
                ratio: a.ratio,
                lo: a.lo,
                hi: a.hi,
                strong: true,
                next: None,
            });
        }
    }
    forest(
        "forest-history",
        "The same comparisons in every committed sitting up to this one, and across them from three on (log axis; thin: a sitting's interval for the next sitting)",
        &lines,
        None,
    )
}

/// A forest plot `id` of `lines` under `title`, `band` shaded.
pub fn forest(id: &str, title: &str, lines: &[Line], band: Option<(f64, f64)>) -> String {
    let ends = |l: &Line| l.next.unwrap_or((l.lo, l.hi));
    let mut lo = lines
        .iter()
        .map(|l| l.lo.min(ends(l).0))
        .fold(1.0f64, f64::min);
    let mut hi = lines
        .iter()
        .map(|l| l.hi.max(ends(l).1))
        .fold(1.0f64, f64::max);
    if let Some((a, b)) = band {
        lo = lo.min(a);
        hi = hi.max(b);
    }
    let (lo, hi) = (lo.ln() - 0.02, hi.ln() + 0.02);
    let x = |r: f64| LEFT + (r.ln() - lo) / (hi - lo) * (RIGHT - LEFT);
    let height = TOP + ROW * lines.len() as f64 + 30.0;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg id=\"{id}\" class=\"forest\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" \
         role=\"img\" aria-label=\"{t}\" font-family=\"sans-serif\" font-size=\"12\">\
         <text x=\"4\" y=\"16\" font-size=\"13\">{t}</text>",
        t = esc(title)
    );
    let bottom = height - 24.0;
    if let Some((a, b)) = band {
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#d0d7de\" opacity=\"0.6\"/>",
            x(a),
            (x(b) - x(a)).max(1.0),
            bottom - TOP
        );
    }
    let _ = write!(
        out,
        "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{TOP}\" y2=\"{bottom:.1}\" stroke=\"#57606a\" stroke-dasharray=\"4 3\"/>",
        x(1.0)
    );
    for (i, l) in lines.iter().enumerate() {
        let y = TOP + ROW * (i as f64 + 0.5);
        let (colour, weight) = if l.strong {
            ("#1b1f24", "600")
        } else {
            ("#57606a", "400")
        };
        let mut tip = format!("{} {:.3} ({:.3}-{:.3})", l.label, l.ratio, l.lo, l.hi);
        if let Some((a, b)) = l.next {
            let _ = write!(tip, ", for the next sitting {a:.3}-{b:.3}");
            let _ = write!(
                out,
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#8c959f\" stroke-width=\"1\"/>",
                x(a),
                x(b)
            );
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-weight=\"{weight}\" fill=\"{colour}\">{}</text>\
             <line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>\
             <circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{colour}\"><title>{}</title></circle>",
            LEFT - 8.0,
            y + 4.0,
            esc(&l.label),
            x(l.lo),
            x(l.hi),
            x(l.ratio),
            esc(&tip)
        );
    }
    for t in ticks(lo.exp(), hi.exp()) {
        let _ = write!(
            out,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{bottom:.1}\" y2=\"{1:.1}\" stroke=\"#1b1f24\"/>\
             <text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{t:.2}</text>",
            x(t),
            bottom + 4.0,
            bottom + 18.0
        );
    }
    out += "</svg>";
    out
}

/// Up to six round values between `lo` and `hi` for the axis.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    let step = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
        .into_iter()
        .find(|s| span / s <= 6.0)
        .unwrap_or(1.0);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_is_drawn_with_its_interval_and_the_band_is_shaded() {
        let lines = [
            Line {
                label: "ntex/actix".into(),
                ratio: 0.8,
                lo: 0.78,
                hi: 0.82,
                strong: true,
                next: Some((0.70, 0.9)),
            },
            Line {
                label: "A/A <1>".into(),
                ratio: 1.0,
                lo: 0.98,
                hi: 1.02,
                strong: false,
                next: None,
            },
        ];
        let svg = forest("f", "t", &lines, Some((0.98, 1.02)));
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("<rect"), "{svg}");
        assert!(svg.contains("A/A &lt;1&gt;"), "{svg}");
        assert!(svg.contains("viewBox"));
        // The next sitting's interval: one thin line, in the tip too, and
        // the axis reaches its ends.
        assert_eq!(svg.matches("stroke-width=\"1\"").count(), 1, "{svg}");
        assert!(svg.contains("for the next sitting 0.700-0.900"), "{svg}");
        assert!(
            svg.contains(">0.70</text>") || svg.contains(">0.72</text>"),
            "{svg}"
        );
        assert!(!ticks(0.75, 1.05).is_empty());
    }

    #[test]
    fn the_sittings_plot_adds_the_pool_once_there_are_three() {
        let sitting = |run: &str, ratio: f64| crate::sittings::history::Sitting {
            run: run.into(),
            date: format!("2026-11-2{}T10:00:00Z", run.len()),
            git_sha: String::new(),
            git_dirty: false,
            kernel: String::new(),
            cpu_model: String::new(),
            ratio,
            lo: ratio * 0.98,
            hi: ratio * 1.02,
            runs: 1,
            df: 7.0,
            se_log: crate::sittings::history::Sitting::se_of(ratio * 0.98, ratio * 1.02, 7.0),
            next: None,
        };
        let mut c = Comparison {
            identity: crate::sittings::history::Identity {
                file: "scenarios/quick.toml".into(),
                row: "ntex".into(),
                against: "actix".into(),
                aa: false,
                row_variant: String::new(),
                base_variant: String::new(),
                schedule: String::new(),
                placement: String::new(),
                load: String::new(),
                machine: String::new(),
                nginx: String::new(),
            },
            sittings: vec![sitting("a", 0.82), sitting("bb", 0.83)],
            across: None,
        };
        c.across = crate::sittings::history::across(&c.sittings);
        let two = sittings(std::slice::from_ref(&c), "bb");
        assert!(!two.contains("ntex/actix across"), "{two}");
        c.sittings.push(sitting("ccc", 0.81));
        c.across = crate::sittings::history::across(&c.sittings);
        let three = sittings(std::slice::from_ref(&c), "ccc");
        assert!(three.contains(">ntex/actix across 3</text>"), "{three}");
        assert_eq!(three.matches("<circle").count(), 4);
    }
}
