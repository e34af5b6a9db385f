//! `shootout ab CMD_A CMD_B`: two servers' commands in the paired design,
//! with an A/A (A against a second process of A), through the same runner,
//! decision rule, page and history as `shootout run`. `shootout ab --rev A
//! --rev B` does the same for a twin built at two commits of this
//! repository.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::{duration, BuildArgs};
use crate::config::scenario::ScenarioFile;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Server A, the baseline: one string, split as a shell splits it, with
    /// {port} and optionally {host}, {cpus}, {workers}.
    #[arg(required_unless_present = "revs", conflicts_with = "revs")]
    cmd_a: Option<String>,
    /// Server B, compared with A.
    #[arg(required_unless_present = "revs", conflicts_with = "revs")]
    cmd_b: Option<String>,
    /// Instead of two commands: a twin built at two commits of this
    /// repository (sha, tag or branch), A the baseline: `--rev A --rev B`.
    #[arg(long = "rev", value_name = "REV", action = clap::ArgAction::Append)]
    revs: Vec<String>,
    /// With --rev: the twin.
    #[arg(long, default_value = "ntex", value_parser = ["actix", "ntex"], requires = "revs")]
    server: String,
    /// With --rev: its features, comma-separated.
    #[arg(long, default_value = "global-counter,keepalive-os", requires = "revs")]
    features: String,
    /// Blocks per comparison (even, at least 4), fixed before it starts.
    #[arg(long, default_value_t = 8, value_parser = blocks)]
    blocks: u32,
    /// The measured part of each block.
    #[arg(long, default_value = "4s", value_parser = duration)]
    block: Duration,
    /// The load before each block's measured part, left out.
    #[arg(long, default_value = "2s", value_parser = super::run::settle)]
    settle: Duration,
    /// Connections loadgen keeps open.
    #[arg(short = 'c', long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    connections: u32,
    /// The request: get, post (body `500`) or binary.
    #[arg(long, default_value = "get", value_parser = ["get", "post", "binary"])]
    request: String,
    /// The path requested (and probed for readiness).
    #[arg(long, default_value = "/")]
    path: String,
    /// How long each server may take to answer GET PATH with 200 after it
    /// starts.
    #[arg(long, default_value = "20s", value_parser = duration)]
    ready_within: Duration,
    /// Where both servers run (one after the other's turn, side by side).
    #[arg(long, default_value = "1")]
    server_cpus: String,
    /// Where their loadgens run.
    #[arg(long, default_value = "0")]
    loadgen_cpus: String,
    /// `{workers}` in the commands.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    workers: u32,
    /// Seed of the block order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where run directories go.
    #[arg(long, default_value = "results", value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    build: BuildArgs,
}

fn blocks(s: &str) -> Result<u32, String> {
    let n = s.parse::<u32>().map_err(|e| e.to_string())?;
    crate::config::paired::checked_blocks(n)
}

/// What A and B are: two commands, or a twin at two commits.
enum Side {
    Command(Vec<String>),
    Rev(String),
}

/// The scenario file `shootout ab` runs, as TOML text (left in the run
/// folder as `ab.toml`, for `shootout run` to repeat), and the lines of
/// its two commands (or revs).
fn scenario_text(a: &Side, b: &Side, args: &Args) -> (String, [usize; 2]) {
    let list = |v: &[String]| {
        let quoted: Vec<String> = v.iter().map(|s| toml_string(s)).collect();
        format!("[{}]", quoted.join(", "))
    };
    let mut lines = vec![
        "# Written by `shootout ab`: A against B, and A against a second".to_string(),
        "# process of A (the A/A), in the paired design.".into(),
        "title = \"shootout ab: B against A, with an A/A\"".into(),
        "baseline = \"a\"".into(),
        "design = \"paired\"".into(),
        String::new(),
        "[paired]".into(),
        "schedule = \"interleave\"".into(),
        "turn = \"200ms\"".into(),
        format!(
            "block = {}",
            toml_string(&humantime::format_duration(args.block).to_string())
        ),
        format!(
            "settle = {}",
            toml_string(&humantime::format_duration(args.settle).to_string())
        ),
        format!("blocks = {}", args.blocks),
        format!("seed = {}", args.seed),
        String::new(),
        "[defaults]".into(),
        format!("request = {}", toml_string(&args.request)),
        format!("connections = {}", args.connections),
        "threads = 1".into(),
        format!("workers = {}", args.workers),
        format!("server_cpus = {}", toml_string(&args.server_cpus)),
        format!("loadgen_cpus = {}", toml_string(&args.loadgen_cpus)),
    ];
    let ready = format!(
        "ready = {{ method = \"GET\", path = {}, status = 200, within = {} }}",
        toml_string(&args.path),
        toml_string(&humantime::format_duration(args.ready_within).to_string())
    );
    let mut at = [0; 2];
    for (i, (name, side, against)) in [("a", a, None), ("b", b, Some("a")), ("aa", a, Some("a"))]
        .into_iter()
        .enumerate()
    {
        lines.push(String::new());
        lines.push("[[scenario]]".into());
        lines.push(format!("name = \"{name}\""));
        let label = match side {
            Side::Command(cmd) => cmd.join(" "),
            Side::Rev(rev) => format!("{} at {rev}", args.server),
        };
        lines.push(format!("label = {}", toml_string(&label)));
        if let Some(base) = against {
            lines.push(format!("against = \"{base}\""));
        }
        match side {
            Side::Command(cmd) => {
                lines.push(format!("path = {}", toml_string(&args.path)));
                lines.push(ready.clone());
                lines.push(format!("command = {}", list(cmd)));
            }
            Side::Rev(rev) => {
                let features: Vec<String> = args
                    .features
                    .split(',')
                    .map(str::trim)
                    .filter(|f| !f.is_empty())
                    .map(String::from)
                    .collect();
                lines.push(format!("server = {}", toml_string(&args.server)));
                lines.push(format!("features = {}", list(&features)));
                lines.push(format!("rev = {}", toml_string(rev)));
            }
        }
        if i < 2 {
            at[i] = lines.len();
        }
    }
    (lines.join("\n") + "\n", at)
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

pub(super) fn run(a: Args) -> ExitCode {
    crate::place::orphans::mark_runner();
    let split = |which: &str, cmd: &str| -> Result<Vec<String>, String> {
        match shlex::split(cmd) {
            Some(v) if !v.is_empty() => Ok(v),
            Some(_) => Err(format!("command {which} is empty")),
            None => Err(format!("command {which} has an unclosed quote: {cmd}")),
        }
    };
    let sides = match (&a.cmd_a, &a.cmd_b, a.revs.as_slice()) {
        (Some(x), Some(y), []) => match (split("A", x), split("B", y)) {
            (Ok(x), Ok(y)) => Ok((Side::Command(x), Side::Command(y))),
            (Err(e), _) | (_, Err(e)) => Err(e),
        },
        (None, None, [x, y]) => Ok((Side::Rev(x.clone()), Side::Rev(y.clone()))),
        (None, None, revs) => Err(format!(
            "--rev takes two commits, A then B (--rev A --rev B), not {}",
            revs.len()
        )),
        _ => Err("give two commands, or --rev A --rev B, not both".into()),
    };
    let (side_a, side_b) = match sides {
        Ok(s) => s,
        Err(e) => {
            eprintln!("shootout: ab: {e}");
            return ExitCode::from(2);
        }
    };
    let (text, at) = scenario_text(&side_a, &side_b, &a);
    let name = std::path::Path::new("ab.toml");
    let what = if a.revs.is_empty() { "command" } else { "rev" };
    let which = |line: usize| match line {
        l if l == at[0] => format!("{what} A: "),
        l if l == at[1] => format!("{what} B: "),
        _ => String::new(),
    };
    let file: ScenarioFile = match crate::config::parse::parse(name, &text) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("shootout: ab: {}{}", which(e.line), e.message);
            return ExitCode::from(2);
        }
    };
    if let Err(e) = crate::stack::command::preflight(&file.path, &file.scenarios) {
        eprintln!("shootout: ab: {}{}", which(e.line), e.message);
        return ExitCode::from(2);
    }
    // Its history, as the main command's: begun in a results folder that
    // has none, so that each `ab` into it adds a sitting.
    if !a.out.join("history.json").is_file() {
        let begun = std::fs::create_dir_all(&a.out)
            .map_err(anyhow::Error::from)
            .and_then(|_| {
                crate::record::history::write(&a.out, &crate::prepare::build::workspace_root())
            });
        if let Err(e) = begun {
            eprintln!("shootout: ab: {}: {e:#}", a.out.display());
            return ExitCode::FAILURE;
        }
    }
    super::run::run_parsed(
        file,
        super::run::Overrides::default(),
        a.out,
        a.build.profile(),
        Some(("ab.toml", text)),
    )
}
