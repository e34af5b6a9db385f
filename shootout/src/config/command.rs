//! A command row: a server the project did not build, started from the
//! command line the row gives (`command = ["./server", "--port", "{port}"]`),
//! with its environment, working directory, readiness probe and request.
//! Every rule is checked at the line that breaks it, before anything is
//! built or started; whether it starts and answers is checked next, also
//! before anything is measured ([`crate::stack::command::preflight`]).

use std::path::{Path, PathBuf};

use toml::Spanned;

use crate::config::command_row::{CommandRow, Ready, READY_WITHIN};
use crate::config::scenario::ScenarioError;
use crate::config::settings::{ReadyToml, Settings};
use crate::config::spans::Err;

/// The placeholders a command may hold, each replaced when the row starts.
pub const PLACEHOLDERS: [&str; 4] = ["{port}", "{host}", "{cpus}", "{workers}"];

/// The row's command, when it has one: `o` is the row, `d` the defaults
/// (which may not name a command). A command row names no server and no
/// features: those build the twins.
pub fn command_of(
    o: &Settings,
    d: &Settings,
    err: &Err,
) -> Result<Option<CommandRow>, ScenarioError> {
    refuse_misplaced(o, d, err)?;
    let Some(cmd) = &o.command else {
        return Ok(None);
    };
    let at = cmd.span().start;
    if let Some(s) = &o.server {
        return Err(err(
            s.span().start,
            "a row has a server or a command, not both".into(),
        ));
    }
    if let Some(f) = o.features.as_ref() {
        return Err(err(
            f.span().start,
            "features build the twins: a command row runs its own program".into(),
        ));
    }
    let argv = cmd.get_ref().clone();
    if argv.is_empty() || argv[0].is_empty() {
        return Err(err(at, "command is empty: name a program first".into()));
    }
    check_placeholders(&argv).map_err(|m| err(at, m))?;
    let needs = [
        (
            "{cpus}",
            o.server_cpus.is_some() || d.server_cpus.is_some(),
            "server_cpus",
        ),
        (
            "{workers}",
            o.workers.is_some() || d.workers.is_some(),
            "workers",
        ),
    ];
    for (ph, set, key) in needs {
        if !set && argv.iter().any(|a| a.contains(ph)) {
            return Err(err(
                at,
                format!("command uses {ph} but the row sets no {key}"),
            ));
        }
    }
    let cwd = match &o.cwd {
        None => None,
        Some(c) => {
            let dir = absolute(Path::new(c.get_ref()));
            if !dir.is_dir() {
                return Err(err(
                    c.span().start,
                    format!("cwd {:?} is not a directory", c.get_ref()),
                ));
            }
            Some(dir)
        }
    };
    let build = match &o.build {
        None => None,
        Some(b) if b.get_ref().is_empty() => {
            return Err(err(
                b.span().start,
                "build is empty: name a program first".into(),
            ))
        }
        Some(b) => {
            resolve(&b.get_ref()[0], cwd.as_deref())
                .map_err(|m| err(b.span().start, format!("build: {m}")))?;
            Some(b.get_ref().clone())
        }
    };
    // A program that its build makes is looked for once it has run.
    let program = match (&build, argv[0].contains('/')) {
        (Some(_), true) => Ok(from_dir(Path::new(&argv[0]), cwd.as_deref())),
        _ => resolve(&argv[0], cwd.as_deref()),
    }
    .map_err(|m| err(at, m))?;
    let written = argv.clone();
    let mut argv = argv;
    argv[0] = program.display().to_string();
    let env = o
        .env
        .as_ref()
        .map(|e| e.get_ref().clone().into_iter().collect())
        .unwrap_or_default();
    let ready = ready(o.ready.as_ref(), err)?;
    let path = match &o.path {
        None => "/".to_string(),
        Some(p) if p.get_ref().starts_with('/') && !p.get_ref().contains(char::is_whitespace) => {
            p.get_ref().clone()
        }
        Some(p) => {
            return Err(err(
                p.span().start,
                format!("path {:?} must start with / and hold no space", p.get_ref()),
            ))
        }
    };
    Ok(Some(CommandRow {
        argv,
        env,
        cwd,
        ready,
        path,
        line: err(at, String::new()).line,
        written,
        build,
    }))
}

/// The keys only a command row takes, where they may not be: in
/// `[defaults]` (each belongs to one row), or in a row with no command.
fn refuse_misplaced(o: &Settings, d: &Settings, err: &Err) -> Result<(), ScenarioError> {
    for (key, at) in [
        ("command", d.command.as_ref().map(|c| c.span().start)),
        ("env", d.env.as_ref().map(|c| c.span().start)),
        ("cwd", d.cwd.as_ref().map(|c| c.span().start)),
        ("ready", d.ready.as_ref().map(|c| c.span().start)),
        ("build", d.build.as_ref().map(|c| c.span().start)),
    ] {
        if let Some(at) = at {
            return Err(err(
                at,
                format!("[defaults] cannot set {key}: it belongs to one command row"),
            ));
        }
    }
    if o.command.is_some() {
        return Ok(());
    }
    for (key, at) in [
        ("env", o.env.as_ref().map(|c| c.span().start)),
        ("cwd", o.cwd.as_ref().map(|c| c.span().start)),
        ("ready", o.ready.as_ref().map(|c| c.span().start)),
        ("path", o.path.as_ref().map(|c| c.span().start)),
        ("build", o.build.as_ref().map(|c| c.span().start)),
    ] {
        if let Some(at) = at {
            return Err(err(
                at,
                format!("{key} is a command row's key: this row has no command"),
            ));
        }
    }
    Ok(())
}

/// Every `{...}` in the command is one of [`PLACEHOLDERS`], and `{port}`
/// is there: the runner picks the port and must tell the server.
pub fn check_placeholders(argv: &[String]) -> Result<(), String> {
    for arg in argv {
        let mut rest = arg.as_str();
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                return Err(format!(
                    "command argument {arg:?} opens a {{ it never closes"
                ));
            };
            let ph = &rest[open..open + close + 1];
            if !PLACEHOLDERS.contains(&ph) {
                return Err(format!(
                    "command argument {arg:?}: unknown placeholder {ph} (use {})",
                    PLACEHOLDERS.join(", ")
                ));
            }
            rest = &rest[open + close + 1..];
        }
    }
    if !argv.iter().any(|a| a.contains("{port}")) {
        return Err(
            "command has no {port}: the runner picks the port and the server must take it from the command line".into(),
        );
    }
    Ok(())
}

/// `program` as an absolute path: a path (with a `/`) from `cwd` or the
/// runner's directory, else looked up on `$PATH`; an error when it is not
/// an executable file.
pub fn resolve(program: &str, cwd: Option<&Path>) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let full = from_dir(Path::new(program), cwd);
        return if executable(&full) {
            Ok(full)
        } else if full.exists() {
            Err(format!("command program {program:?} is not executable"))
        } else {
            Err(format!(
                "command program {program:?} does not exist ({})",
                full.display()
            ))
        };
    }
    // `$PATH` as the runner spawns it (not `setup::find`, which adds the
    // sbin directories for the runner's own tools; config/ reads no stage).
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
        .ok_or_else(|| format!("command program {program:?} is not on PATH"))
}

/// Path `p` from `cwd`, else from the runner's directory.
fn from_dir(p: &Path, cwd: Option<&Path>) -> PathBuf {
    match cwd {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => absolute(p),
    }
}

/// `p` from the runner's directory.
fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_owned()
    } else {
        std::env::current_dir().map_or_else(|_| p.to_owned(), |d| d.join(p))
    }
}

fn ready(r: Option<&Spanned<ReadyToml>>, err: &Err) -> Result<Ready, ScenarioError> {
    let Some(r) = r else {
        return Ok(Ready {
            method: "GET".into(),
            path: "/".into(),
            status: 200,
            within: READY_WITHIN,
        });
    };
    let at = r.span().start;
    let t = r.get_ref();
    let method = t.method.clone().unwrap_or_else(|| "GET".into());
    if method.is_empty() || !method.chars().all(|c| c.is_ascii_uppercase()) {
        return Err(err(
            at,
            format!("ready method {method:?}: use GET, HEAD, POST..."),
        ));
    }
    let path = t.path.clone().unwrap_or_else(|| "/".into());
    if !path.starts_with('/') || path.contains(char::is_whitespace) {
        return Err(err(
            at,
            format!("ready path {path:?} must start with / and hold no space"),
        ));
    }
    let status = t.status.unwrap_or(200);
    if !(100..=599).contains(&status) {
        return Err(err(
            at,
            format!("ready status {status} is not an HTTP status"),
        ));
    }
    let within = match &t.within {
        None => READY_WITHIN,
        Some(w) => match humantime::parse_duration(w) {
            Ok(d) if !d.is_zero() => d,
            _ => {
                return Err(err(
                    at,
                    format!("ready within {w:?}: a duration above zero, such as 20s"),
                ))
            }
        },
    };
    Ok(Ready {
        method,
        path,
        status,
        within,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_known_and_port_is_required() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        check_placeholders(&v(&["srv", "--port", "{port}", "--cpus={cpus}"])).unwrap();
        let e = check_placeholders(&v(&["srv", "--port", "{prot}"])).unwrap_err();
        assert!(e.contains("unknown placeholder {prot}"), "{e}");
        let e = check_placeholders(&v(&["srv", "--port", "8080"])).unwrap_err();
        assert!(e.contains("no {port}"), "{e}");
        let e = check_placeholders(&v(&["srv", "{port"])).unwrap_err();
        assert!(e.contains("never closes"), "{e}");
    }

    #[test]
    fn a_program_is_found_or_named() {
        assert!(resolve("sh", None).unwrap().is_absolute());
        let e = resolve("no-such-server-here", None).unwrap_err();
        assert!(e.contains("not on PATH"), "{e}");
        let e = resolve("./no/such/server", None).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
    }
}
