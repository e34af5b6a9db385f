//! Renders a config from `nginx/` into a private prefix and runs nginx as a
//! child in the foreground. The system's nginx configuration is never read.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::procs::Proc;

/// The nginx binary, or a one-line error naming the fix.
pub fn binary() -> anyhow::Result<PathBuf> {
    match crate::setup::find(crate::setup::NGINX.program) {
        Some(p) => Ok(p),
        None => bail!("nginx not found: install it (apt-get install -y nginx-light)"),
    }
}

/// `nginx -v`, e.g. `nginx/1.22.1`.
pub fn version() -> Option<String> {
    let out = Command::new(binary().ok()?).arg("-v").output().ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    text.split_whitespace()
        .find(|t| t.starts_with("nginx/"))
        .map(str::to_owned)
}

/// Fills the placeholders of `nginx/<name>.conf`.
pub fn render(
    root: &Path,
    name: &str,
    prefix: &Path,
    workers: usize,
    listen: SocketAddr,
    upstream: Option<SocketAddr>,
) -> anyhow::Result<String> {
    let path = root.join("nginx").join(format!("{name}.conf"));
    let template = std::fs::read_to_string(&path)
        .with_context(|| format!("nginx config {name:?}: reading {}", path.display()))?;
    Ok(template
        .replace("{{WORKERS}}", &workers.to_string())
        .replace("{{PREFIX}}", &prefix.display().to_string())
        .replace("{{LISTEN}}", &listen.to_string())
        .replace(
            "{{UPSTREAM}}",
            &upstream.map_or("127.0.0.1:1".into(), |u| u.to_string()),
        )
        .replace("{{ACCESS_LOG}}", "off"))
}

/// Writes the rendered config into `prefix` and starts nginx on it.
/// `wrap` is prepended to the command (netns exec, taskset).
pub fn start(config: &str, prefix: &Path, wrap: &[String]) -> anyhow::Result<Proc> {
    std::fs::create_dir_all(prefix.join("tmp"))
        .with_context(|| format!("creating {}", prefix.display()))?;
    let conf = prefix.join("nginx.conf");
    std::fs::write(&conf, config).with_context(|| format!("writing {}", conf.display()))?;
    let nginx = binary()?;
    let mut argv: Vec<String> = wrap.to_vec();
    argv.push(nginx.display().to_string());
    argv.extend([
        "-p".into(),
        prefix.display().to_string(),
        "-c".into(),
        conf.display().to_string(),
        "-g".into(),
        "daemon off;".into(),
    ]);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Proc::spawn("nginx", &mut cmd)
}
