//! The tables of a results digest (`results/README.md`) come from the runs'
//! own reports, never from typing.
//!
//! Two mechanisms, both run by `results-tables FILE --check` and by the
//! regression test:
//!
//! - **Generated blocks.** A block
//!   `<!-- table from=RUN/README.md#2 rows="ntex on tokio;A/A" cols=1,2,3 -->`
//!   … `<!-- end table -->` is replaced by table 2 of that run's README.md
//!   (which the regression test already re-derives from the run's raw logs),
//!   keeping the rows whose first cell starts with one of `rows` (in that
//!   order; all rows when absent) and the columns `cols` (1-based; all when
//!   absent).
//! - **Typed figures.** Every interval figure (`0.8316 ± 2.95 %`,
//!   `272,091 ± 2,666`) in a table row outside a generated block must appear,
//!   spaces aside, on one line of the reports of a run that the same section
//!   links to: as one string, or its value and its `± half-width` on the
//!   same line (a report may give them in two columns).

use std::path::Path;

use anyhow::{bail, Context};

const BEGIN: &str = "<!-- table ";
const END: &str = "<!-- end table -->";

/// One generated block's directive.
#[derive(Debug, PartialEq)]
struct Directive {
    /// Path of the source report, relative to the digest's directory.
    from: String,
    /// Which table of the report (1-based).
    index: usize,
    rows: Option<Vec<String>>,
    cols: Option<Vec<usize>>,
}

/// `key=value` and `key="value with spaces"` pairs.
fn attributes(s: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once('=')
            .with_context(|| format!("expected key=value in {s:?}"))?;
        let (value, after) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted
                .find('"')
                .with_context(|| format!("unclosed quote in {s:?}"))?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            after.split_at(after.find(' ').unwrap_or(after.len()))
        };
        out.push((key.trim().to_string(), value.to_string()));
        rest = after.trim_start();
    }
    Ok(out)
}

fn directive(line: &str) -> anyhow::Result<Directive> {
    let inner = line
        .trim()
        .strip_prefix(BEGIN)
        .and_then(|s| s.strip_suffix("-->"))
        .with_context(|| format!("not a table directive: {line:?}"))?;
    let mut d = Directive {
        from: String::new(),
        index: 0,
        rows: None,
        cols: None,
    };
    for (key, value) in attributes(inner)? {
        match key.as_str() {
            "from" => {
                let (path, index) = value
                    .rsplit_once('#')
                    .with_context(|| format!("from={value:?} names no table (#N)"))?;
                d.from = path.to_string();
                d.index =
                    index.parse().ok().filter(|&i| i >= 1).with_context(|| {
                        format!("from={value:?}: the table number is 1 or more")
                    })?;
            }
            "rows" => d.rows = Some(value.split(';').map(str::to_string).collect()),
            "cols" => {
                let cols = value
                    .split(',')
                    .map(|c| c.trim().parse::<usize>().ok().filter(|&c| c >= 1))
                    .collect::<Option<Vec<_>>>()
                    .with_context(|| format!("cols={value:?}: column numbers are 1 or more"))?;
                d.cols = Some(cols);
            }
            _ => bail!("unknown key {key:?} in {line:?}"),
        }
    }
    if d.from.is_empty() {
        bail!("{line:?} has no from=");
    }
    Ok(d)
}

/// The cells of a table row, trimmed.
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(str::trim).collect()
}

/// The `index`-th table (1-based) of a Markdown text: its lines.
fn nth_table(text: &str, index: usize) -> Option<Vec<&str>> {
    let mut tables: Vec<Vec<&str>> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with('|') {
            if !inside {
                tables.push(Vec::new());
                inside = true;
            }
            tables.last_mut().expect("pushed").push(line);
        } else {
            inside = false;
        }
    }
    tables.into_iter().nth(index - 1)
}

/// The block a directive stands for, from the report it names.
fn generate(d: &Directive, base: &Path) -> anyhow::Result<Vec<String>> {
    let path = base.join(&d.from);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let table = nth_table(&text, d.index)
        .with_context(|| format!("{} has no table {}", path.display(), d.index))?;
    if table.len() < 2 {
        bail!("{} table {} has no header", path.display(), d.index);
    }
    let (head, body) = table.split_at(2);
    let body: Vec<&str> = match &d.rows {
        None => body.to_vec(),
        Some(wanted) => wanted
            .iter()
            .map(|w| {
                body.iter()
                    .find(|line| {
                        cells(line)
                            .first()
                            .is_some_and(|c| c.starts_with(w.as_str()))
                    })
                    .copied()
                    .with_context(|| {
                        format!("{} table {} has no row {w:?}", path.display(), d.index)
                    })
            })
            .collect::<anyhow::Result<_>>()?,
    };
    head.iter()
        .chain(&body)
        .map(|line| {
            let c = cells(line);
            let kept: Vec<&str> = match &d.cols {
                None => c,
                Some(cols) => cols
                    .iter()
                    .map(|&i| {
                        c.get(i - 1).copied().with_context(|| {
                            format!("{} table {} has no column {i}", path.display(), d.index)
                        })
                    })
                    .collect::<anyhow::Result<_>>()?,
            };
            Ok(format!("| {} |", kept.join(" | ")))
        })
        .collect()
}

/// The digest with every generated block rebuilt from its source.
pub fn fill(text: &str, base: &Path) -> anyhow::Result<String> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        out.push(line.to_string());
        if !line.trim_start().starts_with(BEGIN) {
            continue;
        }
        let d = directive(line).with_context(|| format!("line {}", n + 1))?;
        loop {
            match lines.next() {
                Some((_, l)) if l.trim() == END => break,
                Some(_) => {}
                None => bail!("line {}: the block has no {END}", n + 1),
            }
        }
        out.extend(generate(&d, base).with_context(|| format!("line {}", n + 1))?);
        out.push(END.to_string());
    }
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

/// An interval figure, spaces removed: its value and `±half-width[%]`.
#[derive(Debug, PartialEq)]
struct Figure {
    value: String,
    half: String,
}

impl Figure {
    fn text(&self) -> String {
        format!("{}{}", self.value, self.half)
    }

    /// On `line` (spaces removed) as one string, or value and half-width.
    fn on(&self, line: &str) -> bool {
        line.contains(&self.text()) || (line.contains(&self.value) && line.contains(&self.half))
    }
}

/// Interval figures in a line: `0.8316 ± 2.95 %`, `272,091 ± 2,666`.
fn figures(line: &str) -> Vec<Figure> {
    let number = |s: &str, from_end: bool| -> usize {
        let ok = |c: char| c.is_ascii_digit() || c == '.' || c == ',';
        if from_end {
            s.len() - s.trim_end_matches(ok).len()
        } else {
            s.len() - s.trim_start_matches(ok).len()
        }
    };
    let mut out = Vec::new();
    for (at, _) in line.match_indices('±') {
        let before = line[..at].trim_end();
        let after = line[at + '±'.len_utf8()..].trim_start();
        let (a, b) = (number(before, true), number(after, false));
        if a == 0 || b == 0 {
            continue;
        }
        let mut half = format!("±{}", &after[..b]);
        if after[b..].trim_start().starts_with('%') {
            half.push('%');
        }
        out.push(Figure {
            value: before[before.len() - a..].to_string(),
            half,
        });
    }
    out
}

/// Run directory names in a line: `2026-11-23T16-13-44Z-runtimes-interleave`.
fn run_dirs(line: &str) -> Vec<&str> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 21 <= b.len() {
        let stamp = &b[i..i + 21];
        let shape = stamp.iter().enumerate().all(|(k, &c)| match k {
            4 | 7 | 13 | 16 => c == b'-',
            10 => c == b'T',
            19 => c == b'Z',
            20 => c == b'-',
            _ => c.is_ascii_digit(),
        });
        if shape {
            let end = line[i + 21..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .map_or(line.len(), |e| i + 21 + e);
            out.push(&line[i..end]);
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// The lines of the reports of the runs a section links to, spaces removed.
fn section_sources(section: &[&str], base: &Path) -> Vec<String> {
    let mut text = String::new();
    let mut dirs: Vec<&str> = section.iter().copied().flat_map(run_dirs).collect();
    dirs.sort_unstable();
    dirs.dedup();
    for d in dirs {
        let dir = base.join(d);
        let mut files = vec![dir.join("README.md")];
        if let Ok(entries) = std::fs::read_dir(&dir) {
            files.extend(
                entries
                    .flatten()
                    .map(|e| e.path().join("README.md"))
                    .filter(|p| p.is_file()),
            );
        }
        for f in files {
            if let Ok(s) = std::fs::read_to_string(f) {
                text.push_str(&s);
            }
        }
    }
    text.lines()
        .map(|l| l.split_whitespace().collect())
        .collect()
}

/// Interval figures typed into table rows outside generated blocks that no
/// run linked from their section reports: `line N: FIGURE`.
pub fn unsourced_figures(text: &str, base: &Path) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut problems = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        let end = (start + 1..lines.len())
            .find(|&i| lines[i].starts_with("## ") || lines[i].starts_with("### "))
            .unwrap_or(lines.len());
        let section = &lines[start..end];
        let mut sources: Option<Vec<String>> = None;
        let mut generated = false;
        for (k, line) in section.iter().enumerate() {
            if line.trim_start().starts_with(BEGIN) {
                generated = true;
            } else if line.trim() == END {
                generated = false;
            }
            if generated || !line.starts_with('|') {
                continue;
            }
            for fig in figures(line) {
                let src = sources.get_or_insert_with(|| section_sources(section, base));
                if !src.iter().any(|l| fig.on(l)) {
                    problems.push(format!(
                        "line {}: {} is in no report of the runs its section links to",
                        start + k + 1,
                        fig.text()
                    ));
                }
            }
        }
        start = end;
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_parse_and_bad_ones_say_why() {
        let d = directive(r#"<!-- table from=R/README.md#2 rows="a b;c" cols=1,3 -->"#).unwrap();
        assert_eq!(
            d,
            Directive {
                from: "R/README.md".into(),
                index: 2,
                rows: Some(vec!["a b".into(), "c".into()]),
                cols: Some(vec![1, 3]),
            }
        );
        for bad in [
            "<!-- table rows=a -->",
            "<!-- table from=R/README.md -->",
            "<!-- table from=R/README.md#0 -->",
            "<!-- table from=R/README.md#1 cols=0 -->",
            "<!-- table from=R/README.md#1 colour=red -->",
            r#"<!-- table from=R/README.md#1 rows="a -->"#,
        ] {
            assert!(directive(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_block_is_rebuilt_from_its_report_and_a_typed_figure_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let run = "2026-01-02T03-04-05Z-demo";
        std::fs::create_dir_all(dir.path().join(run)).unwrap();
        std::fs::write(
            dir.path().join(run).join("README.md"),
            "# R\n\n| a | b |\n|---|---|\n| x | 1 |\n\n| Row | ratio | cpu |\n|---|---:|---:|\n| A/A | 1.0010 ± 0.50% | 0.99 |\n| ntex | 0.8316 ± 2.95% | 1.21 |\n",
        )
        .unwrap();
        let digest = format!(
            "# D\n\n## S\n\n[{run}]({run}/README.md)\n\n<!-- table from={run}/README.md#2 rows=\"ntex;A/A\" cols=1,2 -->\n| stale |\n<!-- end table -->\n\n| typed | 0.8316 ± 2.95 % |\n| wrong | 0.8317 ± 2.95 % |\n"
        );
        let filled = fill(&digest, dir.path()).unwrap();
        assert!(filled.contains(&format!(
            "rows=\"ntex;A/A\" cols=1,2 -->\n| Row | ratio |\n| --- | ---: |\n| ntex | 0.8316 ± 2.95% |\n| A/A | 1.0010 ± 0.50% |\n{END}\n"
        )), "{filled}");
        assert!(!filled.contains("stale"));
        // Rebuilding again changes nothing.
        assert_eq!(fill(&filled, dir.path()).unwrap(), filled);
        let problems = unsourced_figures(&filled, dir.path());
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("0.8317±2.95%"), "{problems:?}");
        // A row the report lacks is an error, not a silent gap.
        let missing = digest.replace("rows=\"ntex;A/A\"", "rows=\"actix\"");
        let e = fill(&missing, dir.path()).unwrap_err();
        assert!(format!("{e:#}").contains("no row \"actix\""), "{e:#}");
    }

    #[test]
    fn figures_and_run_names_are_found_in_a_line() {
        let found: Vec<String> =
            figures("| 272,091 ± 2,666 | 0.8316 ± 2.95 % across | ±5 | 1.2±0.3% |")
                .iter()
                .map(Figure::text)
                .collect();
        assert_eq!(found, vec!["272,091±2,666", "0.8316±2.95%", "1.2±0.3%"]);
        // A report may give the value and its half-width in two cells.
        let f = &figures("| 95,751 ± 30,073 |")[0];
        assert!(f.on("|Baseline|95,751|23,580|±30,073|"));
        assert!(!f.on("|Baseline|95,751|23,580|±30,074|"));
        assert_eq!(
            run_dirs("see [x](2026-11-23T16-13-44Z-runtimes-interleave/README.md) and 2026-11-22T12-06-04Z-calibration."),
            vec!["2026-11-23T16-13-44Z-runtimes-interleave", "2026-11-22T12-06-04Z-calibration"]
        );
    }
}
