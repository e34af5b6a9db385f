//! One server build: a server, its cargo features and its C library.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::Server;

/// The C library a server is built against: glibc (the host's), or musl
/// (a static `x86_64-unknown-linux-musl` build, with musl's malloc when no
/// allocator feature is on).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Libc {
    #[default]
    Glibc,
    Musl,
}

impl Libc {
    /// The cargo `--target` of a musl build.
    pub const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

    /// The cargo `--target` of this libc, if not the host's.
    pub fn target(self) -> Option<&'static str> {
        match self {
            Libc::Glibc => None,
            Libc::Musl => Some(Libc::MUSL_TARGET),
        }
    }
}

/// The features that need a file: (feature, the server's flag naming the
/// file, the file's name in the server's directory).
pub const FILE_FLAGS: [(&str, &str, &str); 2] = [
    ("mmap-backend", "--counter-file", "count"),
    ("log-file", "--log-file", "access.log"),
];

/// One server build: a server, its cargo features (in order) and its libc.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Variant {
    pub server: Server,
    pub features: Vec<String>,
    pub libc: Libc,
}

impl Variant {
    /// A glibc build of `server` with `features`.
    pub fn new(server: Server, features: impl IntoIterator<Item: Into<String>>) -> Variant {
        Variant {
            server,
            features: features.into_iter().map(Into::into).collect(),
            libc: Libc::Glibc,
        }
    }

    /// `actix-server+global-counter+keepalive-os`, with `@musl` at the end
    /// for a musl build: one build per distinct name.
    pub fn name(&self) -> String {
        let mut name = self.server.binary().to_string();
        for f in &self.features {
            name.push('+');
            name.push_str(f);
        }
        if self.libc == Libc::Musl {
            name.push_str("@musl");
        }
        name
    }

    /// The variant [`Variant::name`] names (`ntex-server+rt-neon@musl`);
    /// none for a name of no server.
    pub fn from_name(name: &str) -> Option<Variant> {
        let (name, libc) = match name.strip_suffix("@musl") {
            Some(n) => (n, Libc::Musl),
            None => (name, Libc::Glibc),
        };
        let mut parts = name.split('+');
        let binary = parts.next()?;
        let server = Server::ALL.into_iter().find(|s| s.binary() == binary)?;
        Some(Variant {
            libc,
            ..Variant::new(server, parts)
        })
    }

    /// Whether the build needs `--no-default-features`: ntex's own runtimes
    /// replace the servers' default feature, `rt-tokio`.
    pub fn replaces_default_features(&self) -> bool {
        self.features
            .iter()
            .any(|f| app_core::runtime::REPLACES_DEFAULT.contains(&f.as_str()))
    }

    /// For each of this variant's features in [`FILE_FLAGS`]: the flag and
    /// its file in `dir`.
    pub fn file_args(&self, dir: &Path) -> Vec<(&'static str, PathBuf)> {
        FILE_FLAGS
            .into_iter()
            .filter(|(feature, _, _)| self.features.iter().any(|f| f == feature))
            .map(|(_, flag, file)| (flag, dir.join(file)))
            .collect()
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_is_binary_then_features_in_order_then_libc() {
        assert_eq!(Variant::new(Server::Ntex, [""; 0]).name(), "ntex-server");
        let v = Variant::new(Server::Actix, ["global-counter", "keepalive-os"]);
        assert_eq!(v.name(), "actix-server+global-counter+keepalive-os");
        let musl = Variant {
            libc: Libc::Musl,
            ..Variant::new(Server::Ntex, vec!["rt-neon".to_string()])
        };
        assert_eq!(musl.name(), "ntex-server+rt-neon@musl");
        assert_eq!(musl.to_string(), musl.name());
        for n in [
            "ntex-server+rt-neon@musl",
            "actix-server+global-counter+keepalive-os",
            "ntex-server",
        ] {
            assert_eq!(Variant::from_name(n).unwrap().name(), n);
        }
        assert_eq!(Variant::from_name("nginx+x"), None);
    }

    #[test]
    fn only_ntex_own_runtimes_replace_the_default_features() {
        for rt in ["rt-neon", "rt-uring", "rt-compio"] {
            assert!(Variant::new(Server::Ntex, ["no-alloc", rt]).replaces_default_features());
        }
        assert!(!Variant::new(Server::Ntex, ["rt-tokio"]).replaces_default_features());
        assert!(!Variant::new(Server::Actix, [""; 0]).replaces_default_features());
        // Not a prefix rule: only the named runtimes.
        assert!(!Variant::new(Server::Ntex, ["rt-other"]).replaces_default_features());
    }

    #[test]
    fn file_args_follow_the_table_order() {
        let dir = Path::new("/srv/x");
        let v = Variant::new(
            Server::Actix,
            ["log-file", "global-counter", "mmap-backend"],
        );
        assert_eq!(
            v.file_args(dir),
            [
                ("--counter-file", dir.join("count")),
                ("--log-file", dir.join("access.log")),
            ]
        );
        assert!(Variant::new(Server::Ntex, ["log-stdout"])
            .file_args(dir)
            .is_empty());
    }

    #[test]
    fn libc_target() {
        assert_eq!(Libc::default(), Libc::Glibc);
        assert_eq!(Libc::Glibc.target(), None);
        assert_eq!(Libc::Musl.target(), Some("x86_64-unknown-linux-musl"));
    }
}
