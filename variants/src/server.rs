//! The twin servers.

use std::fmt;

/// Which twin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Server {
    Actix,
    Ntex,
}

impl Server {
    /// Both twins, actix first.
    pub const ALL: [Server; 2] = [Server::Actix, Server::Ntex];
    /// Same as [`Server::ALL`].
    pub const BOTH: [Server; 2] = Server::ALL;

    /// The cargo package.
    pub fn package(self) -> &'static str {
        match self {
            Server::Actix => "shootout-actix",
            Server::Ntex => "shootout-ntex",
        }
    }

    /// The binary the package builds.
    pub fn binary(self) -> &'static str {
        match self {
            Server::Actix => "actix-server",
            Server::Ntex => "ntex-server",
        }
    }

    /// The framework crate whose version the start-up line names.
    pub fn framework_crate(self) -> &'static str {
        match self {
            Server::Actix => "actix-web",
            Server::Ntex => "ntex",
        }
    }

    /// `actix` or `ntex`, as scenario files spell it.
    pub fn name(self) -> &'static str {
        match self {
            Server::Actix => "actix",
            Server::Ntex => "ntex",
        }
    }

    /// The server [`Server::name`] names.
    pub fn from_name(name: &str) -> Option<Server> {
        Server::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Server::ALL {
            assert_eq!(Server::from_name(s.name()), Some(s));
        }
        assert_eq!(Server::from_name("nginx"), None);
        assert_eq!(Server::from_name("Actix"), None);
    }

    #[test]
    fn package_binary_and_framework() {
        assert_eq!(Server::Actix.package(), "shootout-actix");
        assert_eq!(Server::Ntex.binary(), "ntex-server");
        assert_eq!(Server::Ntex.framework_crate(), "ntex");
        assert_eq!(Server::Actix.to_string(), "actix");
    }
}
