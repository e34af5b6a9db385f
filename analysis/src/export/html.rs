//! `index.html`: one page per run, to open in a browser from the run
//! directory (`file://`), on a phone or a desktop. No network: the CSS is
//! inline, the answers' forest plots are inline SVG, and the README's charts
//! are the run's own SVG files beside the page, shown as images (inlined,
//! they doubled every chart's bytes in `results/`: 5.5 of its 129 MiB on
//! 2026-11-29).
//!
//! Order: what the run decides first (the answer lines of every paired
//! table), then per comparison its ratios with their intervals, CPU per
//! request and latency percentiles, then the whole README (every table,
//! with its charts where the README links them), then the machine
//! and commit from `meta.json` and links to the raw files.

use std::fmt::Write;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

pub use super::parts::esc;
use crate::latency::RowLatency;
use crate::paired::answer::{Answer, Verdict};
use crate::paired::report::{Metric, PairedRow, PairedTable};
use crate::paired::stats::RatioCi;
use crate::report::{Report, Source};

/// Renders `index.html` from a report, its README (Markdown) and its
/// charts (file name, SVG bytes).
pub fn page(report: &Report, readme: &str, charts: &[(String, Vec<u8>)]) -> String {
    let src = &report.source;
    let title = title_of(report);
    let mut out = String::new();
    head(&mut out, &title);
    let _ = writeln!(out, "<header><h1>{}</h1>", esc(&title));
    let _ = writeln!(
        out,
        "<p class=\"sub\">Run <code>{}</code></p>",
        esc(&src.run)
    );
    let _ = writeln!(out, "{}</header>", machine_line(src));
    for t in &report.paired {
        paired_section(&mut out, t, src);
    }
    let _ = writeln!(
        out,
        "<section id=\"report\"><h2>The full report</h2>\n<p class=\"note\">The run's README.md, \
         with its charts.</p>"
    );
    out += &markdown(readme, charts);
    let _ = writeln!(out, "</section>");
    machine_section(&mut out, src);
    files_section(&mut out, src);
    let _ = writeln!(out, "</main>\n</body>\n</html>");
    out
}

/// A page for a run the analysis cannot read (a script's run): its README
/// and raw files only.
pub fn page_from_readme(src: &Source, readme: &str) -> String {
    let title = readme
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .unwrap_or(&src.run)
        .to_string();
    let mut out = String::new();
    head(&mut out, &title);
    let _ = writeln!(
        out,
        "<header><h1>{}</h1>\n<p class=\"sub\">Run <code>{}</code></p>\n{}</header>",
        esc(&title),
        esc(&src.run),
        machine_line(src)
    );
    let _ = writeln!(out, "<section id=\"report\">");
    out += &markdown(readme, &[]);
    let _ = writeln!(out, "</section>");
    machine_section(&mut out, src);
    files_section(&mut out, src);
    let _ = writeln!(out, "</main>\n</body>\n</html>");
    out
}

fn title_of(report: &Report) -> String {
    let titles: Vec<&str> = report
        .paired
        .iter()
        .map(|t| t.title.as_str())
        .chain(report.tables.iter().map(|t| t.title.as_str()))
        .chain(report.memory.iter().map(|t| t.title.as_str()))
        .collect();
    match titles.as_slice() {
        [] => report.source.run.clone(),
        [one] => (*one).to_string(),
        many => many.join("; "),
    }
}

const CSS: &str = "\
:root{color-scheme:light;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa;\
--slow:#b35900;--fast:#1a7f37;--none:#57606a}\
*{box-sizing:border-box}\
body{margin:0;font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);background:var(--bg)}\
main{max-width:1100px;margin:0 auto;padding:16px}\
h1{font-size:1.5rem;margin:.2em 0}h2{font-size:1.25rem;margin-top:2em;border-bottom:1px solid var(--line)}\
h3{font-size:1.05rem}\
.sub,.note,.machine{color:var(--muted);font-size:.9rem;margin:.2em 0}\
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85em}\
pre{background:var(--soft);padding:8px;overflow-x:auto;white-space:pre}\
.scroll{overflow-x:auto;max-width:100%}\
table{border-collapse:collapse;margin:.5em 0;font-size:.9rem}\
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}\
th{background:var(--soft)}td.num{text-align:right;white-space:nowrap}\
.answers td{font-size:1rem}.answers .verdict{font-weight:600}\
.slower{color:var(--slow)}.faster{color:var(--fast)}.unresolved{color:var(--none)}\
.resolution{background:var(--soft);border-left:4px solid var(--line);padding:6px 10px}\
figure{margin:1em 0}figure svg,img{max-width:100%;height:auto;display:block}figure svg.forest{max-width:720px}\
details{margin:1em 0}summary{cursor:pointer}\
ul.files{columns:2 18em;font-size:.85rem;padding-left:1.2em}\
@media (max-width:600px){body{font-size:15px}main{padding:10px}th,td{padding:3px 5px}table.answers,.answers tbody,.answers tr,.answers td{display:block;border:0}.answers thead{display:none}.answers tr{border:1px solid var(--line);margin:6px 0;padding:4px}.answers td.num{text-align:left}}";

pub(crate) fn head(out: &mut String, title: &str) {
    let _ = writeln!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>",
        esc(title)
    );
}

fn meta_str<'a>(src: &'a Source, key: &str) -> Option<&'a str> {
    src.meta.as_ref()?.get(key)?.as_str()
}

/// One line: commit, date, machine.
fn machine_line(src: &Source) -> String {
    let Some(_) = &src.meta else {
        return "<p class=\"machine\">No meta.json: machine and commit unknown.</p>".into();
    };
    let sha = meta_str(src, "git_sha").unwrap_or("?");
    let dirty = match src.meta.as_ref().and_then(|m| m.get("git_dirty")) {
        Some(serde_json::Value::Bool(true)) => " (uncommitted changes)",
        Some(serde_json::Value::Bool(false)) => " (clean tree)",
        _ => "",
    };
    format!(
        "<p class=\"machine\">Commit <code>{}</code>{dirty}, started {}; {}. Absolute figures \
         belong to this machine on this day; the ratios are the result.</p>",
        esc(&sha[..sha.len().min(12)]),
        esc(meta_str(src, "date").unwrap_or("?")),
        esc(meta_str(src, "cpu_model").unwrap_or("machine unknown")),
    )
}

fn verdict_class(v: &Verdict) -> &'static str {
    match v {
        Verdict::Slower { .. } => "slower",
        Verdict::Faster { .. } => "faster",
        _ => "unresolved",
    }
}

fn paired_section(out: &mut String, t: &PairedTable, src: &Source) {
    let _ = writeln!(
        out,
        "<section class=\"paired\" id=\"{}\"><h2>{}</h2>",
        esc(&t.name),
        esc(&t.title)
    );
    if let Some(effect) = crate::paired::report::schedule_effect(&t.schedule) {
        let _ = writeln!(out, "<p class=\"note\">Schedule {}.</p>", esc(effect));
    }
    if !t.answers.is_empty() {
        answers_table(out, &t.answers);
        let _ = writeln!(
            out,
            "<figure>{}</figure>",
            super::forest_svg::answers(&t.answers)
        );
        sittings_figure(out, t, src);
    }
    let _ = writeln!(out, "<h3>Each comparison</h3>");
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><table class=\"comparisons\"><thead><tr><th>Comparison</th>\
         <th>2xx/s ratio (95 % CI)</th><th>CPU per request ratio (95 % CI)</th><th>Blocks</th>\
         <th>2xx/s row / baseline</th><th>CPU µs per request row / baseline</th></tr></thead><tbody>"
    );
    for r in &t.rows {
        let _ = writeln!(
            out,
            "<tr data-row=\"{}\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{:.0} / {:.0}</td><td class=\"num\">{} / {}</td></tr>",
            esc(&r.name),
            esc(&compared_label(r, t)),
            rps_cell(r),
            cpu_cell(r),
            r.blocks,
            r.row_rps_mean,
            r.base_rps_mean,
            opt(r.row_cpu_us_mean, 2),
            opt(r.base_cpu_us_mean, 2),
        );
    }
    let _ = writeln!(out, "</tbody></table></div>");
    latency_table(out, t);
    let _ = writeln!(out, "</section>");
}

/// Each answer's comparison in every committed sitting up to this run
/// (from `results/history.json`), where one has more than this sitting.
fn sittings_figure(out: &mut String, t: &PairedTable, src: &Source) {
    let ours: Vec<crate::sittings::history::Comparison> = src
        .history
        .iter()
        .filter(|c| {
            t.answers
                .iter()
                .any(|a| a.row == c.identity.row && a.against == c.identity.against)
        })
        .cloned()
        .collect();
    if ours.iter().all(|c| c.sittings.len() < 2) {
        return;
    }
    let _ = writeln!(
        out,
        "<figure>{}<figcaption class=\"note\">Each comparison as <code>shootout history</code> \
         keys it (builds, schedule, placement, load); this run's sitting in bold.</figcaption></figure>",
        super::forest_svg::sittings(&ours, &src.run)
    );
}

fn answers_table(out: &mut String, answers: &[Answer]) {
    let _ = writeln!(
        out,
        "<h3>What this run decides</h3>\n<div class=\"scroll\"><table class=\"answers\"><thead><tr>\
         <th>Comparison</th><th>2xx/s ratio (95 % CI)</th><th>Answer</th></tr></thead><tbody>"
    );
    for a in answers {
        let _ = writeln!(
            out,
            "<tr data-row=\"{}\"><td>{}</td><td class=\"num\">{}</td><td class=\"verdict {}\">{}</td></tr>",
            esc(&a.row),
            esc(&a.name()),
            esc(&a.figure()),
            verdict_class(&a.verdict),
            esc(&a.words())
        );
    }
    let _ = writeln!(out, "</tbody></table></div>");
    let resolution: Vec<String> = answers
        .iter()
        .filter(|a| a.aa)
        .map(|a| format!("A/A {}: {}.", a.figure(), a.words()))
        .collect();
    let text = if resolution.is_empty() {
        "No A/A row in this table: a difference decides when its interval excludes 1.".to_string()
    } else {
        format!(
            "{} A difference decides when its interval excludes 1 and its ratio lies \
             farther from 1 than the A/A's interval reaches.",
            resolution.join(" ")
        )
    };
    let _ = writeln!(out, "<p class=\"resolution\">{}</p>", esc(&text));
}

fn compared_label(r: &PairedRow, t: &PairedTable) -> String {
    format!(
        "{} against {}",
        r.label,
        r.against_label.as_deref().unwrap_or(&t.baseline_label)
    )
}

fn rps_cell(r: &PairedRow) -> String {
    across_cell(r, r.across_runs, r.rps.as_ref())
}

fn cpu_cell(r: &PairedRow) -> String {
    across_cell(r, r.cpu_across_runs, r.cpu.as_ref())
}

/// The interval over runs of a repeated comparison, else over blocks.
fn across_cell(r: &PairedRow, across: Option<RatioCi>, blocks: Option<&Metric>) -> String {
    match across {
        Some(ci) => format!(
            "{:.4} ({:.4}-{:.4}, {} runs)",
            ci.ratio,
            ci.lo,
            ci.hi,
            r.runs.len()
        ),
        None => metric_cell(blocks),
    }
}

fn metric_cell(m: Option<&Metric>) -> String {
    m.map_or("n/a".into(), |m| {
        format!("{:.4} ({:.4}-{:.4})", m.ratio, m.ci.lo, m.ci.hi)
    })
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("n/a".into(), |v| format!("{v:.digits$}"))
}

fn latency_table(out: &mut String, t: &PairedTable) {
    if t.rows
        .iter()
        .all(|r| r.row_latency_us.is_none() && r.base_latency_us.is_none())
    {
        return;
    }
    let _ = writeln!(
        out,
        "<h3>Latency</h3>\n<p class=\"note\">Percentiles of every block's merged histogram, in \
         milliseconds, under the closed-model load of the comparison (each loadgen keeps its \
         connections busy: at saturation these are mostly queueing, not what a user sees at a \
         lower load).</p>\n<div class=\"scroll\"><table class=\"latency\"><thead><tr><th>Comparison</th>\
         <th>Side</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>Responses</th></tr></thead><tbody>"
    );
    for r in &t.rows {
        let base = r.against_label.as_deref().unwrap_or(&t.baseline_label);
        for (side, l) in [
            (&r.label, &r.row_latency_us),
            (&base.to_string(), &r.base_latency_us),
        ] {
            let Some(l) = l else { continue };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td>{}</tr>",
                esc(&r.name),
                esc(side),
                latency_cells(l)
            );
        }
    }
    let _ = writeln!(out, "</tbody></table></div>");
}

fn latency_cells(l: &RowLatency) -> String {
    let ms = |us: Option<f64>| us.map_or("n/a".into(), |v| format!("{:.2}", v / 1000.0));
    format!(
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
        ms(Some(l.p50)),
        ms(l.p90),
        ms(Some(l.p99)),
        ms(l.p99_9),
        ms(l.max),
        l.samples.map_or("n/a".into(), |n| n.to_string())
    )
}

/// Markdown to HTML; an image whose file is one of `charts` (a file the
/// page's folder holds) becomes that image at its own size, any other image
/// its alt text (nothing is fetched from elsewhere); tables scroll sideways
/// on a narrow screen instead of widening the page.
fn markdown(text: &str, charts: &[(String, Vec<u8>)]) -> String {
    let mut events = Vec::new();
    let mut in_image: Option<(String, String)> = None;
    for e in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match (&mut in_image, e) {
            (None, Event::Start(Tag::Image { dest_url, .. })) => {
                in_image = Some((dest_url.to_string(), String::new()));
            }
            (Some((url, alt)), Event::End(TagEnd::Image)) => {
                let size = charts
                    .iter()
                    .find(|(n, _)| n == url)
                    .map(|(_, b)| svg_size(&String::from_utf8_lossy(b)));
                let html = match size {
                    Some(Some((w, h))) => format!(
                        "<figure><img src=\"{}\" alt=\"{}\" width=\"{w}\" height=\"{h}\"></figure>",
                        esc(url),
                        esc(alt)
                    ),
                    Some(None) => format!(
                        "<figure><img src=\"{}\" alt=\"{}\"></figure>",
                        esc(url),
                        esc(alt)
                    ),
                    None => format!("<span class=\"note\">(chart {})</span>", esc(url)),
                };
                events.push(Event::Html(html.into()));
                in_image = None;
            }
            (Some((_, alt)), Event::Text(t)) => alt.push_str(&t),
            (Some(_), _) => {}
            (None, Event::Start(Tag::Table(a))) => {
                events.push(Event::Html("<div class=\"scroll\">".into()));
                events.push(Event::Start(Tag::Table(a)));
            }
            (None, Event::End(TagEnd::Table)) => {
                events.push(Event::End(TagEnd::Table));
                events.push(Event::Html("</div>".into()));
            }
            (None, e) => events.push(e),
        }
    }
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    html
}

/// An SVG file's width and height from its root element, so that the page
/// keeps the chart's place while it loads.
fn svg_size(svg: &str) -> Option<(u32, u32)> {
    let start = svg.find("<svg")?;
    let tag = &svg[start..start + svg[start..].find('>')?];
    let attr = |name: &str| -> Option<u32> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[at..].split('"').next()?.parse().ok()
    };
    Some((attr("width")?, attr("height")?))
}

fn machine_section(out: &mut String, src: &Source) {
    let Some(meta) = &src.meta else { return };
    let _ = writeln!(
        out,
        "<section id=\"machine\"><h2>Machine and commit</h2>\n<div class=\"scroll\"><table><tbody>"
    );
    let keys = [
        "git_sha",
        "git_dirty",
        "date",
        "scenario_file",
        "script",
        "design",
        "cpu_model",
        "cores",
        "runner_cpus",
        "kernel",
        "rustc",
        "nginx",
        "interrupted",
    ];
    for k in keys {
        let Some(v) = meta.get(k) else { continue };
        let text = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&text));
    }
    // A finished run's is gzip'd (`input::raw::pack`); an interrupted one's not.
    let name = match src.files.iter().any(|f| f == "meta.json.gz") {
        true => "meta.json.gz",
        false => "meta.json",
    };
    let _ = writeln!(
        out,
        "</tbody></table></div>\n<p class=\"note\">Everything else is in \
         <a href=\"{name}\">{name}</a>.</p></section>"
    );
}

fn files_section(out: &mut String, src: &Source) {
    if src.files.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<section id=\"files\"><h2>Raw files</h2>\n<details><summary>{} files in this run \
         directory</summary>\n<ul class=\"files\">",
        src.files.len()
    );
    for f in &src.files {
        let _ = writeln!(out, "<li><a href=\"{0}\">{0}</a></li>", esc(f));
    }
    let _ = writeln!(out, "</ul></details>");
    if !src.packed.is_empty() {
        let archive = src
            .files
            .iter()
            .find(|f| crate::input::raw::is_archive(f))
            .map_or(crate::input::raw::ARCHIVE, String::as_str);
        let _ = writeln!(
            out,
            "<details><summary>{} raw record files in <a href=\"{1}\">{1}</a> \
             (<code>tar xf {1}</code> puts them where they were written)</summary>\n\
             <ul class=\"files\">",
            src.packed.len(),
            esc(archive)
        );
        for line in packed_lines(&src.packed) {
            let _ = writeln!(out, "<li>{line}</li>");
        }
        let _ = writeln!(out, "</ul></details>");
    }
    let _ = writeln!(out, "</section>");
}

/// The packed files (sorted) as list items: a folder of more than three
/// as one line with its count, first and last (`tar tf` lists them all; a
/// sweep packs hundreds), the others by name.
fn packed_lines(packed: &[String]) -> Vec<String> {
    let folder = |f: &str| f.rsplit_once('/').map_or("", |(d, _)| d).to_string();
    let mut out = Vec::new();
    let mut i = 0;
    while i < packed.len() {
        let dir = folder(&packed[i]);
        let n = packed[i..].iter().take_while(|f| folder(f) == dir).count();
        let group = &packed[i..i + n];
        if n > 3 {
            let name = |f: &str| esc(f.rsplit_once('/').map_or(f, |(_, n)| n));
            out.push(format!(
                "{}/: {n} files, {} … {}",
                esc(&dir),
                name(&group[0]),
                name(&group[n - 1])
            ));
        } else {
            out.extend(group.iter().map(|f| esc(f)));
        }
        i += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_folders_of_many_files_are_one_line_each() {
        let packed: Vec<String> = [
            "a.jsonl",
            "q/aa/b1.jsonl",
            "q/aa/b2.jsonl",
            "q/aa/b3.jsonl",
            "q/aa/b4.jsonl",
            "q/bb/<x>.jsonl",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            packed_lines(&packed),
            [
                "a.jsonl",
                "q/aa/: 4 files, b1.jsonl … b4.jsonl",
                "q/bb/&lt;x&gt;.jsonl"
            ]
        );
    }

    #[test]
    fn the_runs_charts_are_images_at_their_size_and_nothing_else_is_fetched() {
        let charts = vec![(
            "a.svg".to_string(),
            b"<?xml version=\"1.0\"?>\n<svg width=\"960\" height=\"480\" xmlns=\"x\"></svg>"
                .to_vec(),
        )];
        let html = markdown(
            "# T\n\n![chart & more](a.svg)\n\n![other](b.svg)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
            &charts,
        );
        assert!(
            html.contains(
                "<figure><img src=\"a.svg\" alt=\"chart &amp; more\" width=\"960\" height=\"480\"></figure>"
            ),
            "{html}"
        );
        assert!(!html.contains("<svg"), "{html}");
        assert!(!html.contains("b.svg\""), "{html}");
        assert!(html.contains("(chart b.svg)"));
        assert!(html.contains("<div class=\"scroll\"><table>"), "{html}");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }
}
