//! Variants built against patched dependencies, each from a workspace of
//! its own that the builder writes under `target/patched/<features>/`
//! (the patch features, joined by `+`): the server's own manifest and
//! sources, the workspace's profiles, a copy of its `Cargo.lock`, and a
//! `[patch.crates-io]` entry for each patched crate naming its source as
//! crates.io published it, with a diff from `patches/` applied (`git
//! apply`) at build time. No copy of the crate is kept in the tree.
//! The project's `Cargo.lock` and its other builds never see the patch (a
//! `[patch]` in the workspace, or cargo's `--config patch...`, would
//! rewrite the lock file).

use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::tools::{git_apply, run};

use crate::{Server, Variant};

/// A feature that builds against a patched crate: the feature, the crate
/// it patches, and the diff (under the workspace root) applied to the
/// crate's published source.
pub const PATCHES: [(&str, &str, &str); 2] = [
    ("ntex-read-once", "ntex-net", "patches/ntex-net.diff"),
    (
        "ntex-call-nowait",
        "ntex-service",
        "patches/ntex-service.diff",
    ),
];

/// The patch a variant builds against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patch {
    pub feature: &'static str,
    pub krate: &'static str,
    pub diff: &'static str,
}

impl Variant {
    /// The patches this variant's features ask for (in [`PATCHES`]'
    /// order; none for most variants).
    pub fn patches(&self) -> Vec<Patch> {
        PATCHES
            .into_iter()
            .filter(|(f, _, _)| self.features.iter().any(|x| x == f))
            .map(|(feature, krate, diff)| Patch {
                feature,
                krate,
                diff,
            })
            .collect()
    }
}

/// Writes the workspace that builds `server` against `patches` (one or
/// more) into `target/patched/<features>/` and returns its manifest's path.
pub fn write_workspace(
    root: &Path,
    target: &Path,
    server: Server,
    patches: &[Patch],
) -> std::io::Result<PathBuf> {
    let name: Vec<&str> = patches.iter().map(|p| p.feature).collect();
    let dir = target.join("patched").join(name.join("+"));
    std::fs::create_dir_all(&dir)?;
    let server_dir = root.join(server_dir(server));
    let read = |p: PathBuf| {
        std::fs::read_to_string(&p)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))
    };
    let lock = read(root.join("Cargo.lock"))?;
    // Beside the workspace, not in it: a path dependency inside a
    // workspace's directory would become one of its members.
    let mut sources = Vec::new();
    for patch in patches {
        let dir = target.join("patched").join("sources").join(patch.feature);
        std::fs::create_dir_all(&dir)?;
        sources.push((patch.krate, patched_source(root, &dir, *patch, &lock)?));
    }
    let text = manifest(
        &read(server_dir.join("Cargo.toml"))?,
        &server_dir,
        &read(root.join("Cargo.toml"))?,
        &sources,
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

/// The version of `krate` that `lock` (a Cargo.lock) pins.
fn locked_version(lock: &str, krate: &str) -> Option<String> {
    let name = format!("name = \"{krate}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == name {
            let version = lines.next()?.trim().strip_prefix("version = \"")?;
            return Some(version.trim_end_matches('"').to_string());
        }
    }
    None
}

/// The crate's published source with the diff applied, under `dir`
/// (`<crate>-<version>/`; `dir` is emptied of nothing else): made again only when the diff or the locked
/// version changed (a stamp file holds the diff it was made with).
fn patched_source(root: &Path, dir: &Path, patch: Patch, lock: &str) -> std::io::Result<PathBuf> {
    let fail = |why: String| std::io::Error::other(why);
    let diff_path = root.join(patch.diff);
    let diff = std::fs::read_to_string(&diff_path)
        .map_err(|e| fail(format!("{}: {e}", diff_path.display())))?;
    let version = locked_version(lock, patch.krate)
        .ok_or_else(|| fail(format!("Cargo.lock pins no {}", patch.krate)))?;
    let release = format!("{}-{version}", patch.krate);
    // The diff says which release it was made against (`diff -ru
    // ntex-net-3.16.0/...`): applied to another, it could apply and mean
    // something else.
    if !diff.contains(&format!(" {release}/")) {
        return Err(fail(format!(
            "{} was made against another release than the {release} Cargo.lock pins: make it again against {release}",
            patch.diff
        )));
    }
    let source = dir.join(&release);
    let stamp = source.join(".shootout-patch");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(diff.as_str()) {
        return Ok(source);
    }
    let _ = std::fs::remove_dir_all(&source);
    let archive = published_crate(root, &release)?;
    // `tar` and `git` are on every machine that cloned this repository.
    run(Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(dir))?;
    git_apply(&diff_path, &source, dir)?;
    std::fs::write(&stamp, &diff)?;
    Ok(source)
}

/// The `.crate` archive of `release` (`ntex-net-3.16.0`) in cargo's
/// registry cache, fetched first when it is not there yet.
fn published_crate(root: &Path, release: &str) -> std::io::Result<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
        PathBuf::from,
    );
    let find = || -> Option<PathBuf> {
        std::fs::read_dir(cargo_home.join("registry").join("cache"))
            .ok()?
            .flatten()
            .map(|index| index.path().join(format!("{release}.crate")))
            .find(|p| p.is_file())
    };
    if let Some(found) = find() {
        return Ok(found);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(cargo)
        .args(["fetch", "--quiet", "--manifest-path"])
        .arg(root.join("Cargo.toml")))?;
    find().ok_or_else(|| {
        std::io::Error::other(format!(
            "{release}.crate is not in cargo's registry cache after `cargo fetch`"
        ))
    })
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
/// server the only member), then the patches: each crate and its patched
/// source.
fn manifest(
    server: &str,
    server_dir: &Path,
    workspace: &str,
    patched: &[(&str, PathBuf)],
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
    out.push_str("\n[patch.crates-io]\n");
    for (krate, copy) in patched {
        out.push_str(&format!("{krate} = {{ path = \"{}\" }}\n", copy.display()));
    }
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
    fn the_locked_version_is_read_from_cargo_lock() {
        let lock = "[[package]]\nname = \"ntex\"\nversion = \"3.2.0\"\n\n\
                    [[package]]\nname = \"ntex-net\"\nversion = \"3.16.0\"\n";
        assert_eq!(locked_version(lock, "ntex-net").as_deref(), Some("3.16.0"));
        assert_eq!(locked_version(lock, "ntex").as_deref(), Some("3.2.0"));
        assert_eq!(locked_version(lock, "tokio"), None);
    }

    #[test]
    fn a_diff_made_against_another_release_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("patches")).unwrap();
        std::fs::write(
            dir.path().join("patches/x.diff"),
            "diff -ru ntex-net-3.15.0/src/lib.rs ntex-net/src/lib.rs\n",
        )
        .unwrap();
        let patch = Patch {
            feature: "f",
            krate: "ntex-net",
            diff: "patches/x.diff",
        };
        let lock = "[[package]]\nname = \"ntex-net\"\nversion = \"3.16.0\"\n";
        let e = patched_source(dir.path(), dir.path(), patch, lock).unwrap_err();
        assert!(
            e.to_string()
                .contains("make it again against ntex-net-3.16.0"),
            "{e}"
        );
    }

    #[test]
    fn only_patch_features_ask_for_patches_each_its_own() {
        let v = Variant::new(Server::Ntex, ["global-counter", "ntex-read-once"]);
        let once = Patch {
            feature: "ntex-read-once",
            krate: "ntex-net",
            diff: "patches/ntex-net.diff",
        };
        assert_eq!(v.patches(), [once]);
        let both = Variant::new(Server::Ntex, ["ntex-call-nowait", "ntex-read-once"]);
        let nowait = Patch {
            feature: "ntex-call-nowait",
            krate: "ntex-service",
            diff: "patches/ntex-service.diff",
        };
        assert_eq!(both.patches(), [once, nowait]);
        assert!(Variant::new(Server::Ntex, ["global-counter"])
            .patches()
            .is_empty());
    }

    #[test]
    fn the_manifest_keeps_the_server_and_profiles_drops_the_members_and_patches() {
        let server = "[package]\nname = \"shootout-ntex\"\n[[bin]]\npath = \"src/main.rs\"\n\
                      [dependencies]\napp-core = { path = \"../app-core\" }\nntex = \"3\"\n";
        let workspace = "[workspace]\nresolver = \"3\"\nmembers = [\"a\",\n  \"b\"]\n\n\
                         [workspace.package]\nversion = \"0.1.0\"\n[profile.release]\nlto = \"fat\"\n";
        let patched = [
            ("ntex-net", PathBuf::from("/w/patches/ntex-net")),
            ("ntex-service", PathBuf::from("/w/patches/ntex-service")),
        ];
        let m = manifest(server, Path::new("/w/ntex-server"), workspace, &patched).unwrap();
        assert!(m.contains("path = \"/w/ntex-server/src/main.rs\""), "{m}");
        assert!(m.contains("app-core = { path = \"/w/app-core\" }"), "{m}");
        assert!(!m.contains("members") && !m.contains("\"b\""), "{m}");
        assert!(m.contains("[workspace]\nresolver = \"3\"\n"), "{m}");
        assert!(m.contains("[profile.release]\nlto = \"fat\"\n"), "{m}");
        assert!(
            m.ends_with(
                "[patch.crates-io]\nntex-net = { path = \"/w/patches/ntex-net\" }\n\
                 ntex-service = { path = \"/w/patches/ntex-service\" }\n"
            ),
            "{m}"
        );
        let parsed: Result<(), String> =
            manifest(server, Path::new("/w"), "[package]\n", &patched).map(|_| ());
        assert_eq!(
            parsed,
            Err("the workspace's Cargo.toml has no [workspace] table".into())
        );
    }
}
