//! `shootout ab CMD_A CMD_B`: two servers' commands in the paired design,
//! with an A/A (A against a second process of A), through the same runner,
//! decision rule, page and history as `shootout run`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::{duration, BuildArgs};
use crate::config::scenario::ScenarioFile;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Server A, the baseline: one string, split as a shell splits it, with
    /// {port} and optionally {host}, {cpus}, {workers}.
    cmd_a: String,
    /// Server B, compared with A.
    cmd_b: String,
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

/// The scenario file `shootout ab` runs, as TOML text (left in the run
/// folder as `ab.toml`, for `shootout run` to repeat), and the lines of
/// its two commands.
fn scenario_text(a: &[String], b: &[String], args: &Args) -> (String, [usize; 2]) {
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
    for (i, (name, cmd, against)) in [("a", a, None), ("b", b, Some("a")), ("aa", a, Some("a"))]
        .into_iter()
        .enumerate()
    {
        lines.push(String::new());
        lines.push("[[scenario]]".into());
        lines.push(format!("name = \"{name}\""));
        lines.push(format!("label = {}", toml_string(&cmd.join(" "))));
        if let Some(base) = against {
            lines.push(format!("against = \"{base}\""));
        }
        lines.push(format!("path = {}", toml_string(&args.path)));
        lines.push(ready.clone());
        lines.push(format!("command = {}", list(cmd)));
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
    let (cmd_a, cmd_b) = match (split("A", &a.cmd_a), split("B", &a.cmd_b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("shootout: ab: {e}");
            return ExitCode::from(2);
        }
    };
    let (text, at) = scenario_text(&cmd_a, &cmd_b, &a);
    let name = std::path::Path::new("ab.toml");
    let which = |line: usize| match line {
        l if l == at[0] => "command A: ",
        l if l == at[1] => "command B: ",
        _ => "",
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
