//! Variants built against a patched copy of a dependency (`patches/` at the
//! workspace root), each from a workspace of its own that the builder writes
//! under `target/patched/<feature>/`: the server's own manifest and sources,
//! the workspace's profiles, a copy of its `Cargo.lock`, and a
//! `[patch.crates-io]` entry. The project's `Cargo.lock` and its other
//! builds never see the patch (a `[patch]` in the workspace, or cargo's
//! `--config patch...`, would rewrite the lock file).

use std::path::{Component, Path, PathBuf};

use crate::{Server, Variant};

/// A feature that builds against a patched crate: the feature, the crate
/// it patches, and the patched copy's directory under the workspace root.
pub const PATCHES: [(&str, &str, &str); 1] = [("ntex-read-once", "ntex-net", "patches/ntex-net")];

/// The patch a variant builds against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patch {
    pub feature: &'static str,
    pub krate: &'static str,
    pub copy: &'static str,
}

impl Variant {
    /// The patch this variant's features ask for, if any.
    pub fn patch(&self) -> Option<Patch> {
        PATCHES
            .into_iter()
            .find(|(f, _, _)| self.features.iter().any(|x| x == f))
            .map(|(feature, krate, copy)| Patch {
                feature,
                krate,
                copy,
            })
    }
}

/// Writes the workspace that builds `server` against `patch` into
/// `target/patched/<feature>/` and returns its manifest's path.
pub fn write_workspace(
    root: &Path,
    target: &Path,
    server: Server,
    patch: Patch,
) -> std::io::Result<PathBuf> {
    let dir = target.join("patched").join(patch.feature);
    std::fs::create_dir_all(&dir)?;
    let server_dir = root.join(server_dir(server));
    let read = |p: PathBuf| {
        std::fs::read_to_string(&p)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))
    };
    let text = manifest(
        &read(server_dir.join("Cargo.toml"))?,
        &server_dir,
        &read(root.join("Cargo.toml"))?,
        patch.krate,
        &root.join(patch.copy),
    )
    .map_err(std::io::Error::other)?;
    let path = dir.join("Cargo.toml");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&path, text)?;
    }
    // The workspace's versions, every build: cargo then changes only what
    // the patch changes.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))?;
    Ok(path)
}

/// The server crate's directory under the workspace root.
fn server_dir(server: Server) -> &'static str {
    match server {
        Server::Actix => "actix-server",
        Server::Ntex => "ntex-server",
    }
}

/// The patched workspace's manifest: the server's manifest (its relative
/// paths made absolute from `server_dir`), then the workspace's manifest
/// without its members (profiles and `[workspace.package]` as they are, the
/// server the only member), then the patch.
fn manifest(
    server: &str,
    server_dir: &Path,
    workspace: &str,
    krate: &str,
    copy: &Path,
) -> Result<String, String> {
    let mut out = String::from(
        "# Written by the variant builder (variants/src/patched.rs) for a patched\n\
         # build; see patches/README.md. Not part of the project's workspace.\n\n",
    );
    for line in server.lines() {
        out.push_str(&absolute_path(line, server_dir));
        out.push('\n');
    }
    out.push('\n');
    let mut in_members = false;
    let mut had_workspace = false;
    for line in workspace.lines() {
        let t = line.trim_start();
        had_workspace |= t == "[workspace]";
        if t.starts_with("members") && t.contains('=') {
            in_members = !t.contains(']');
            continue;
        }
        if in_members {
            in_members = !t.contains(']');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !had_workspace {
        return Err("the workspace's Cargo.toml has no [workspace] table".into());
    }
    out.push_str(&format!(
        "\n[patch.crates-io]\n{krate} = {{ path = \"{}\" }}\n",
        copy.display()
    ));
    Ok(out)
}

/// `line` with a relative `path = "..."` value made absolute from `dir`.
fn absolute_path(line: &str, dir: &Path) -> String {
    const KEY: &str = "path = \"";
    let Some(at) = line.find(KEY) else {
        return line.to_string();
    };
    let start = at + KEY.len();
    let Some(len) = line[start..].find('"') else {
        return line.to_string();
    };
    let rel = &line[start..start + len];
    if rel.starts_with('/') {
        return line.to_string();
    }
    let mut abs = dir.to_path_buf();
    for c in Path::new(rel).components() {
        match c {
            Component::ParentDir => {
                abs.pop();
            }
            Component::Normal(n) => abs.push(n),
            _ => {}
        }
    }
    format!(
        "{}{}{}",
        &line[..start],
        abs.display(),
        &line[start + len..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_patch_feature_asks_for_a_patch() {
        let v = Variant::new(Server::Ntex, ["global-counter", "ntex-read-once"]);
        assert_eq!(
            v.patch(),
            Some(Patch {
                feature: "ntex-read-once",
                krate: "ntex-net",
                copy: "patches/ntex-net"
            })
        );
        assert_eq!(Variant::new(Server::Ntex, ["global-counter"]).patch(), None);
    }

    #[test]
    fn the_manifest_keeps_the_server_and_profiles_drops_the_members_and_patches() {
        let server = "[package]\nname = \"shootout-ntex\"\n[[bin]]\npath = \"src/main.rs\"\n\
                      [dependencies]\napp-core = { path = \"../app-core\" }\nntex = \"3\"\n";
        let workspace = "[workspace]\nresolver = \"3\"\nmembers = [\"a\",\n  \"b\"]\n\n\
                         [workspace.package]\nversion = \"0.1.0\"\n[profile.release]\nlto = \"fat\"\n";
        let m = manifest(
            server,
            Path::new("/w/ntex-server"),
            workspace,
            "ntex-net",
            Path::new("/w/patches/ntex-net"),
        )
        .unwrap();
        assert!(m.contains("path = \"/w/ntex-server/src/main.rs\""), "{m}");
        assert!(m.contains("app-core = { path = \"/w/app-core\" }"), "{m}");
        assert!(!m.contains("members") && !m.contains("\"b\""), "{m}");
        assert!(m.contains("[workspace]\nresolver = \"3\"\n"), "{m}");
        assert!(m.contains("[profile.release]\nlto = \"fat\"\n"), "{m}");
        assert!(
            m.ends_with("[patch.crates-io]\nntex-net = { path = \"/w/patches/ntex-net\" }\n"),
            "{m}"
        );
        let parsed: Result<(), String> =
            manifest(server, Path::new("/w"), "[package]\n", "x", Path::new("/p")).map(|_| ());
        assert_eq!(
            parsed,
            Err("the workspace's Cargo.toml has no [workspace] table".into())
        );
    }
}
