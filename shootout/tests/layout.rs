//! Guards the runner's layout (see the stage map in the crate README):
//! host kinds are decided in `src/place/` only; in shootout, analysis and
//! loadgen (`CRATES`), no function grows past 120 lines and the files under
//! `src/` import each other (by `crate::`, `super::` and `self::` paths)
//! without circles; the README names every source file and every
//! scenario file (and no file that is gone); and every doc keeps its line
//! limit (the top README, its findings, CONTRIBUTING.md, the crate READMEs).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose `src/` the layout checks read: name and `src/` below
/// shootout's manifest directory.
const CRATES: [(&str, &str); 3] = [
    ("shootout", "src"),
    ("analysis", "../analysis/src"),
    ("loadgen", "../loadgen/src"),
];

/// A crate's `src/` directory, from its entry in `CRATES`.
fn crate_src(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)
}

/// Every `.rs` file under `src` with its text, sorted by path.
fn sources(src: &Path) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(src, &mut out);
    out.sort();
    assert!(
        out.len() > 10,
        "found only {} files in {}",
        out.len(),
        src.display()
    );
    out
}

/// The file's path below `src`, e.g. `place/host.rs`.
fn rel(src: &Path, path: &Path) -> String {
    path.strip_prefix(src).unwrap().display().to_string()
}

#[test]
fn host_kinds_are_decided_in_the_place_folder_only() {
    let kinds = [
        "Host::Local",
        "Host::Netns",
        "Host::Remote",
        "Running::Here",
        "Running::There",
        "CpuReader::Here",
        "CpuReader::There",
        "is_remote(",
    ];
    let src = crate_src("src");
    let mut found = Vec::new();
    for (path, text) in sources(&src) {
        let rel = rel(&src, &path);
        if rel.starts_with("place/") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if let Some(k) = kinds.iter().find(|k| line.contains(*k)) {
                found.push(format!("{rel}:{}: {k}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "host kinds asked outside place/:\n{}",
        found.join("\n")
    );
}

/// The functions of the files under `src` longer than 120 lines, as
/// `{krate}: src/FILE:LINE: fn NAME: N lines`.
fn long_functions(krate: &str, src: &Path) -> Vec<String> {
    let mut long = Vec::new();
    for (path, text) in sources(src) {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let is_fn = ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn "]
                .iter()
                .any(|p| trimmed.starts_with(p));
            if !is_fn || line.trim_end().ends_with(';') {
                continue;
            }
            let indent = &line[..line.len() - trimmed.len()];
            let close = format!("{indent}}}");
            let Some(end) = lines[i..].iter().position(|l| *l == close) else {
                continue;
            };
            if end + 1 > 120 {
                let name: String = trimmed[trimmed.find("fn ").unwrap() + 3..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                long.push(format!(
                    "{krate}: src/{}:{}: fn {name}: {} lines",
                    rel(src, &path),
                    i + 1,
                    end + 1
                ));
            }
        }
    }
    long
}

#[test]
fn no_function_is_longer_than_120_lines() {
    let long: Vec<String> = CRATES
        .iter()
        .flat_map(|(krate, dir)| long_functions(krate, &crate_src(dir)))
        .collect();
    assert!(
        long.is_empty(),
        "functions over 120 lines:\n{}",
        long.join("\n")
    );
}

/// The module a file is, as path segments: `a/b.rs` and `a/b/mod.rs` are
/// `[a, b]`; `lib.rs` and `main.rs` are the crate root, `[]`.
fn module_of(file: &str) -> Vec<String> {
    let file = file.strip_suffix(".rs").unwrap_or(file);
    let mut parts: Vec<String> = file.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.pop();
    }
    parts
}

/// For each line of `text`, the inline modules (`mod tests { ... }`) it is
/// in, outermost first. Blocks close at the `}` with the `mod` line's indent.
fn inline_modules(lines: &[&str]) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new(); lines.len()];
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let item = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p))
            .unwrap_or(trimmed);
        let Some(name) = item.strip_prefix("mod ").and_then(|r| r.strip_suffix(" {")) else {
            continue;
        };
        let close = format!("{}}}", &line[..line.len() - trimmed.len()]);
        let end = lines[i..]
            .iter()
            .position(|l| *l == close)
            .map_or(lines.len(), |e| i + e);
        for inside in out.iter_mut().take(end).skip(i + 1) {
            inside.push(name.to_string());
        }
    }
    out
}

/// The paths a `crate::`, `super::` or `self::` path at the start of `rest`
/// names: one, or one per item of a `{a, b::c}` group after it.
fn named_paths(rest: &str) -> Vec<Vec<String>> {
    let path: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let head: Vec<String> = path
        .split("::")
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    let after = &rest[path.len()..];
    let group = after
        .strip_prefix('{')
        .filter(|_| path.is_empty() || path.ends_with("::"))
        .and_then(|g| g.split('}').next());
    let Some(group) = group else {
        return vec![head];
    };
    group
        .split(',')
        .map(|item| {
            let mut full = head.clone();
            full.extend(
                item.trim()
                    .split("::")
                    .map(|s| {
                        s.chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect::<String>()
                    })
                    .take_while(|s| !s.is_empty() && s != "self"),
            );
            full
        })
        .collect()
}

/// The files of `files` that `file` (its path below `src/`, e.g. `a/b.rs`)
/// names by `crate::`, `super::` (also `super::super::`) or `self::` paths:
/// the file of the longest prefix of the named module path (`a/b.rs` or
/// `a/b/mod.rs`); never the crate root. In `a/b.rs` (module `a::b`)
/// `super::x` is `a/x.rs` and `self::x` is `a/b/x.rs`; in `a/mod.rs`
/// (module `a`) `super::x` is `x.rs` and `self::x` is `a/x.rs`. Inside an
/// inline `mod tests { ... }` the module is one deeper (so its
/// `use super::*;` is the file itself). A `mod x;` declaration is not a use.
fn imports(file: &str, text: &str, files: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let lines: Vec<&str> = text.lines().collect();
    let inline = inline_modules(&lines);
    for (n, line) in lines.iter().enumerate() {
        // Code only: a doc link is not an import.
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut here = module_of(file);
        here.extend(inline[n].iter().cloned());
        for (at, _) in line.match_indices("::") {
            let before = &line[..at];
            let word_start = before
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            if line[..word_start].ends_with("::") {
                continue; // not the head of a path
            }
            let mut base = match &before[word_start..] {
                "crate" => Vec::new(),
                "self" => here.clone(),
                "super" => here[..here.len().saturating_sub(1)].to_vec(),
                _ => continue,
            };
            for mut path in named_paths(&line[at + 2..]) {
                while path.first().is_some_and(|p| p == "super") {
                    path.remove(0);
                    base.pop();
                }
                let mut full = base.clone();
                full.extend(path);
                // The longest prefix that is a file.
                for n in (1..=full.len()).rev() {
                    let stem = full[..n].join("/");
                    let found: Vec<String> = [format!("{stem}.rs"), format!("{stem}/mod.rs")]
                        .into_iter()
                        .filter(|c| files.contains(c))
                        .collect();
                    if !found.is_empty() {
                        out.extend(found);
                        break;
                    }
                }
            }
        }
    }
    out.remove(file);
    out
}

#[test]
fn imports_resolve_crate_super_and_self_paths_to_files() {
    let files: BTreeSet<String> = [
        "lib.rs",
        "top.rs",
        "a/mod.rs",
        "a/b.rs",
        "a/x.rs",
        "a/b/deep.rs",
        "x/mod.rs",
        "a/y/mod.rs",
        "a/y/z.rs",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    let of = |file: &str, text: &str| -> Vec<String> {
        imports(file, text, &files).into_iter().collect()
    };
    // a/b.rs is module a::b.
    assert_eq!(of("a/b.rs", "use super::x::Thing;"), ["a/x.rs"]);
    assert_eq!(of("a/b.rs", "use super::y::z::f;"), ["a/y/z.rs"]);
    assert_eq!(of("a/b.rs", "use super::y::Item;"), ["a/y/mod.rs"]);
    assert_eq!(of("a/b.rs", "let v = self::deep::f();"), ["a/b/deep.rs"]);
    assert_eq!(of("a/b.rs", "use super::super::top::T;"), ["top.rs"]);
    assert_eq!(of("a/b.rs", "use super::Shared;"), ["a/mod.rs"]);
    assert_eq!(
        of("a/b.rs", "use super::{x, y::z};"),
        ["a/x.rs", "a/y/z.rs"]
    );
    assert_eq!(of("a/b.rs", "use crate::a::x::{self, T};"), ["a/x.rs"]);
    // a/mod.rs is module a.
    assert_eq!(of("a/mod.rs", "use super::x::T;"), ["x/mod.rs"]);
    assert_eq!(of("a/mod.rs", "use super::top::T;"), ["top.rs"]);
    assert_eq!(of("a/mod.rs", "pub use self::x::T;"), ["a/x.rs"]);
    // Declaring children, the crate root, comments, other paths: no import.
    assert!(of("a/mod.rs", "mod b;\npub mod x;\nmod y;").is_empty());
    assert!(of("top.rs", "use super::Root;\nuse crate::Root;").is_empty());
    assert!(of("a/b.rs", "/// See [`super::x`].\n// crate::top").is_empty());
    assert!(of("a/b.rs", "use std::fmt::self_x;\nlet s = Self::new();").is_empty());
    // An inline test module's `super::*` is the file itself.
    let tests = "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::x::T;\n}\nuse super::x::U;";
    assert_eq!(of("a/b.rs", tests), ["a/x.rs"]);
    // The resolver can fail: the wrong answer is not accepted.
    assert_ne!(of("a/b.rs", "use super::x::Thing;"), ["x/mod.rs"]);
    assert_ne!(of("a/mod.rs", "use self::x::T;"), ["x/mod.rs"]);
}

/// A circle in `graph` (file to the files it imports), if there is one.
fn find_circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| s == next).unwrap();
                    let mut circle = stack[from..].to_vec();
                    circle.push(next.clone());
                    return Some(circle);
                }
                0 => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The import graph of the files under `src`: file to the files it imports.
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let sources = sources(src);
    let files: BTreeSet<String> = sources.iter().map(|(p, _)| rel(src, p)).collect();
    sources
        .iter()
        .map(|(p, text)| {
            let me = rel(src, p);
            let to = imports(&me, text, &files);
            (me, to.into_iter().filter(|t| t != "lib.rs").collect())
        })
        .collect()
}

#[test]
fn modules_import_each_other_without_circles() {
    let mut circles = Vec::new();
    for (krate, dir) in CRATES {
        if let Some(c) = find_circle(&import_graph(&crate_src(dir))) {
            let c: Vec<String> = c.iter().map(|f| format!("src/{f}")).collect();
            circles.push(format!("{krate}: {}", c.join(" -> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles (one per crate shown):\n{}",
        circles.join("\n")
    );
}

/// Every `.rs` file of the workspace's crates (not target/, not results/).
fn workspace_sources(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "results" {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") {
                out.push(std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    out
}

/// Whether `item` is defined (fn, struct, enum, trait, type, const,
/// static, mod, or an enum variant at the start of a line) in `sources`.
fn defined(item: &str, sources: &[String]) -> bool {
    let kinds = [
        "fn ", "struct ", "enum ", "trait ", "type ", "const ", "static ", "mod ",
    ];
    sources.iter().any(|text| {
        text.lines().any(|line| {
            let line = line.trim_start();
            let line = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub(super) "))
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            kinds.iter().any(|k| {
                line.strip_prefix(k).is_some_and(|rest| {
                    rest.strip_prefix(item).is_some_and(|after| {
                        !after.starts_with(|c: char| c.is_alphanumeric() || c == '_')
                    })
                })
            }) || line
                .strip_prefix(item)
                .is_some_and(|after| after.starts_with([',', '(', ' ', '{']))
        })
    })
}

/// CONTRIBUTING.md cites files and code by name: every path it quotes
/// exists (from the root, shootout/ or shootout/src/; `NAME` is a placeholder),
/// and every Rust item it quotes (`a::b`, `Type::method`, `snake_case`,
/// `CamelCase`, `job.method()`) is defined somewhere in the workspace.
#[test]
fn contributing_cites_files_and_items_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("CONTRIBUTING.md")).unwrap();
    let sources = workspace_sources(&root);
    let mut missing = Vec::new();
    for (i, quoted) in text.split('`').enumerate() {
        if i % 2 == 0 || quoted.contains(' ') || quoted.is_empty() {
            continue;
        }
        let file_like =
            quoted.contains('/') || [".rs", ".md", ".toml"].iter().any(|e| quoted.ends_with(e));
        if file_like {
            // Build output (`target/lint`) exists only once something
            // built it: not a file the code has.
            if quoted.contains("NAME") || quoted.starts_with("--") || quoted.starts_with("target/")
            {
                continue;
            }
            let found = [
                root.clone(),
                root.join("shootout"),
                root.join("shootout/src"),
            ]
            .iter()
            .any(|base| base.join(quoted).exists())
                || (!quoted.contains('/') && quoted.ends_with(".rs"));
            if !found {
                missing.push(format!("file {quoted}"));
            }
            continue;
        }
        // Rust items: the last segment of a path, the method of `x.m()`.
        let item = quoted.trim_end_matches("()");
        let ident = |s: &str| {
            !s.is_empty()
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !s.starts_with(|c: char| c.is_ascii_digit())
        };
        let last = item.rsplit([':', '.']).next().unwrap_or(item);
        let segments_ok = item.split("::").all(|s| s.split('.').all(ident));
        if !segments_ok {
            continue;
        }
        let pathy = item.contains("::") || item.contains('.');
        let snake = last.contains('_') && last.chars().any(|c| c.is_ascii_lowercase());
        let camel = last.starts_with(|c: char| c.is_ascii_uppercase())
            && last.chars().any(|c| c.is_ascii_lowercase());
        if (pathy || snake || camel) && !defined(last, &sources) {
            missing.push(format!("item {quoted}"));
        }
    }
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md cites what the code does not have: {missing:?}"
    );
}

/// The crate README's text between the heading `## {title}` and the next
/// `## ` heading.
fn readme_section(title: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let text = std::fs::read_to_string(path).unwrap();
    let heading = format!("## {title}\n");
    let start = text
        .find(&heading)
        .unwrap_or_else(|| panic!("shootout/README.md has no `## {title}` section"));
    let body = &text[start + heading.len()..];
    let end = body.find("\n## ").unwrap_or(body.len());
    body[..end].to_string()
}

/// The backticked words of `text` that end in `ext`.
fn quoted_with(text: &str, ext: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|q| q.ends_with(ext))
        .map(str::to_string)
        .collect()
}

/// The README's stage map names every `.rs` file under `src/` and no other.
/// The rule: the table has one row per folder, its first cell the folder
/// below `src/` in backticks (`` `config/` ``), or `` `src/` `` for the files
/// at the top of `src/` (`lib.rs`, `main.rs`, ...). A file `src/F/x.rs` is
/// named when the row of `F/` quotes `` `x.rs` `` (the bare file name, in
/// backticks); and every `` `*.rs` `` a row quotes must be a file of that
/// row's folder (so a row quotes no paths, and no other folder's files).
#[test]
fn readme_stage_map_names_every_source_file_and_no_other() {
    let map = readme_section("Stage map");
    let mut rows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in map.lines().filter(|l| l.starts_with("| `")) {
        let folder = row.split('`').nth(1).unwrap();
        let folder = if folder == "src/" { "" } else { folder };
        let rest = &row[row[2..].find('|').unwrap() + 2..];
        rows.entry(folder.to_string())
            .or_default()
            .extend(quoted_with(rest, ".rs"));
    }
    assert!(rows.len() > 5, "no stage map table in shootout/README.md");
    let src = crate_src("src");
    let files: BTreeSet<String> = sources(&src).iter().map(|(p, _)| rel(&src, p)).collect();
    let mut problems = Vec::new();
    for file in &files {
        let (folder, name) = match file.rfind('/') {
            Some(at) => (&file[..=at], &file[at + 1..]),
            None => ("", file.as_str()),
        };
        if !rows.get(folder).is_some_and(|names| names.contains(name)) {
            let row = if folder.is_empty() { "src/" } else { folder };
            problems.push(format!(
                "src/{file} is not named: add `{name}` to the `{row}` row"
            ));
        }
    }
    for (folder, names) in &rows {
        for name in names {
            if !files.contains(&format!("{folder}{name}")) {
                let row = if folder.is_empty() { "src/" } else { folder };
                problems.push(format!(
                    "the `{row}` row names `{name}`, but src/{folder}{name} does not exist"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "shootout/README.md's stage map and src/ disagree:\n{}",
        problems.join("\n")
    );
}

/// The README's "Scenario files" section lists every `scenarios/*.toml` by
/// its file name in backticks (`` `quick.toml` ``), and every `` `*.toml` ``
/// it quotes (bare or as `scenarios/NAME.toml`) is a file in `scenarios/`.
#[test]
fn readme_lists_every_scenario_file_and_no_other() {
    let section = readme_section("Scenario files");
    let listed: BTreeSet<String> = quoted_with(&section, ".toml")
        .into_iter()
        .map(|q| q.trim_start_matches("scenarios/").to_string())
        .collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".toml"))
        .collect();
    assert!(
        files.len() > 20,
        "found only {} scenario files",
        files.len()
    );
    let mut problems: Vec<String> = files
        .difference(&listed)
        .map(|f| format!("scenarios/{f} is not listed: add a line for `{f}`"))
        .collect();
    problems.extend(
        listed
            .difference(&files)
            .map(|f| format!("`{f}` is listed, but scenarios/{f} does not exist")),
    );
    assert!(
        problems.is_empty(),
        "shootout/README.md's \"Scenario files\" and scenarios/ disagree:\n{}",
        problems.join("\n")
    );
}

/// The lines of the repository file `path` (relative to the root).
fn doc_lines(path: &str) -> Vec<String> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    text.lines().map(str::to_string).collect()
}

/// `None` when the doc at `path` has at most `limit` lines, else the
/// message: how many it has and what to do.
fn over_limit(path: &str, limit: usize, what_to_do: &str) -> Option<String> {
    let n = doc_lines(path).len();
    (n > limit).then(|| format!("{path} has {n} lines, over {limit}: {what_to_do}"))
}

/// The top README is a door: what the project is, how to start, one line
/// per finding; the accounts sit one link deeper. At most 200 lines.
#[test]
fn top_readme_stays_within_200_lines() {
    if let Some(problem) = over_limit("README.md", 200, "move the detail behind a link") {
        panic!("{problem}");
    }
}

/// CONTRIBUTING.md says where things go, the habits, and how to run and
/// time the tests: at most 250 lines. Timings of the past go to the
/// CHANGELOG ("Test timings before 0.1.0"), long accounts to `docs/`.
#[test]
fn contributing_stays_within_250_lines() {
    if let Some(problem) = over_limit(
        "CONTRIBUTING.md",
        250,
        "move past timings to CHANGELOG.md and accounts to a page under docs/",
    ) {
        panic!("{problem}");
    }
}

/// The runner's README is a door too: the stage map, the scenario files and
/// their keys, and a few lines per design; each design's full account is a
/// page under `docs/` (`docs/design-paired.md`, `docs/design-sweep.md`, ...).
/// At most 400 lines.
#[test]
fn shootout_readme_stays_within_400_lines() {
    if let Some(problem) = over_limit(
        "shootout/README.md",
        400,
        "keep a few lines per design and move the account to its page under docs/",
    ) {
        panic!("{problem}");
    }
}

/// The top README's "What we found": one line per finding, the answer, its
/// interval and a link to its account (`docs/findings.md` holds each in
/// full), so every line of the section stays within 200 characters
/// (characters, not bytes; markdown links count) and every finding links.
#[test]
fn top_readme_findings_are_one_short_line_each() {
    let lines = doc_lines("README.md");
    let start = lines
        .iter()
        .position(|l| l == "## What we found")
        .expect("README.md has no `## What we found` section");
    let mut problems = Vec::new();
    let mut findings = 0;
    for (n, line) in lines.iter().enumerate().skip(start + 1) {
        if line.starts_with("## ") {
            break;
        }
        let chars = line.chars().count();
        if chars > 200 {
            problems.push(format!("README.md:{}: {chars} characters", n + 1));
        }
        if line.starts_with("- ") {
            findings += 1;
            if !line.contains("](") {
                problems.push(format!("README.md:{}: a finding without a link", n + 1));
            }
        }
    }
    assert!(findings > 5, "found only {findings} findings in README.md");
    assert!(
        problems.is_empty(),
        "README.md's findings must be one line of at most 200 characters each, \
         linking to the account (move the detail to docs/findings.md):\n{}",
        problems.join("\n")
    );
}

/// Every crate's README (a folder of the root with a `Cargo.toml`) says
/// what the crate owns and how to run it: at most 300 lines, the runner's
/// at most 400 (above). Accounts go to a page under `docs/`.
#[test]
fn crate_readmes_stay_within_300_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut crates: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file() && e.path().join("README.md").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "shootout")
        .collect();
    crates.sort();
    assert!(
        crates.iter().any(|c| c == "loadgen") && crates.iter().any(|c| c == "analysis"),
        "found no crate READMEs beside the runner: {crates:?}"
    );
    let problems: Vec<String> = crates
        .iter()
        .filter_map(|c| {
            over_limit(
                &format!("{c}/README.md"),
                300,
                "say what the crate owns and how to run it; move accounts to a page under docs/",
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The relative link targets (`[text](path#anchor)`, outside code blocks)
/// of `text`: the path part, without the anchor; web links left out.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        for (at, _) in line.match_indices("](") {
            let target: String = line[at + 2..]
                .chars()
                .take_while(|c| *c != ')' && !c.is_whitespace())
                .collect();
            let path = target.split('#').next().unwrap_or("");
            if !path.is_empty() && !path.contains("://") && !path.starts_with("mailto:") {
                out.push(path.to_string());
            }
        }
    }
    out
}

#[test]
fn relative_links_are_read_outside_code_blocks() {
    let text = "see [a](docs/x.md#y), [b](https://e.org/) and [c](#here)\n```\n[d](gone.md)\n```\n";
    assert_eq!(relative_links(text), ["docs/x.md"]);
}

/// The doors and the pages behind them link to files that exist, inside
/// the repository: every relative link of the top README, CONTRIBUTING.md,
/// the crate READMEs and `docs/*.md`. A page moved or renamed gets its
/// links changed with it.
#[test]
fn doc_links_point_at_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut pages = vec!["README.md".to_string(), "CONTRIBUTING.md".to_string()];
    for entry in std::fs::read_dir(&root).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().join("Cargo.toml").is_file() && entry.path().join("README.md").is_file() {
            pages.push(format!("{name}/README.md"));
        }
    }
    for entry in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    pages.sort();
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        let dir = Path::new(page).parent().unwrap_or(Path::new(""));
        for link in relative_links(&text) {
            // Inside the repository: never climbing above its root.
            let mut depth: i64 = 0;
            let mut inside = true;
            for part in dir.join(&link).components() {
                match part {
                    std::path::Component::ParentDir => depth -= 1,
                    std::path::Component::Normal(_) => depth += 1,
                    _ => {}
                }
                inside &= depth >= 0;
            }
            if !inside {
                broken.push(format!("{page}: {link} is outside the repository"));
            } else if !root.join(dir).join(&link).exists() {
                broken.push(format!("{page}: {link} does not exist"));
            }
        }
    }
    assert!(pages.len() > 10, "found only {} pages", pages.len());
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
