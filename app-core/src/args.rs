//! The command line both servers take, flag for flag.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

use crate::workers::Workers;

/// Flags shared by `actix-server` and `ntex-server`.
#[derive(Debug, Clone, Parser)]
#[command(
    version,
    about = "The shootout click counter: GET / reads the count, POST / adds 0..=500."
)]
pub struct ServerArgs {
    /// Address to listen on; port 0 lets the OS choose (the start-up line names it).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// Worker threads: a number, `logical` (one per logical CPU) or
    /// `physical` (one per physical core); the same rule for both frameworks.
    #[arg(long, default_value = "logical", value_name = "N|logical|physical")]
    pub workers: Workers,

    /// Listen backlog (pending connections the kernel queues).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(i32).range(1..=65535))]
    pub backlog: i32,

    /// Counter file for the `mmap-backend` feature (created when missing).
    #[arg(long, value_name = "PATH")]
    pub counter_file: Option<PathBuf>,

    /// Access log file for the `log-file` feature (appended to).
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<PathBuf>,

    /// About this many ns of CPU work added to every GET and POST, as loop
    /// iterations timed at start (`calibrate` builds only): the known cost
    /// `shootout calibrate` must detect.
    #[arg(long, value_name = "NS")]
    pub spin_ns: Option<u64>,

    /// Time allowed for the first request head on a new connection, in whole
    /// seconds (ntex's timers count whole seconds): past it, `408` with
    /// `connection: close`, then the connection is closed. The same rule on
    /// both frameworks; 0 = off (`keepalive-os` builds only). An idle
    /// connection after a response is the keep-alive's (5 s, or the OS's with
    /// `keepalive-os`).
    #[arg(long, default_value_t = 5, value_name = "SECS")]
    pub client_timeout: u16,

    /// Longest graceful stop on SIGINT or SIGTERM, in whole seconds: the
    /// server stops accepting, gives requests in flight this long, then
    /// exits. The same rule on both frameworks.
    #[arg(long, default_value_t = crate::SHUTDOWN_TIMEOUT_SECS, value_name = "SECS",
          value_parser = clap::value_parser!(u16).range(1..=300))]
    pub shutdown_timeout: u16,

    /// Largest request body in bytes; a larger one gets 413 unread.
    #[arg(long, default_value_t = 64, value_name = "BYTES")]
    pub max_body: usize,

    /// Serve HTTPS (`tls` builds only): the certificate chain, PEM, leaf
    /// first. Needs --tls-key.
    #[arg(long, value_name = "PATH", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert's certificate, PEM (PKCS#8, PKCS#1 or
    /// SEC1). Needs --tls-cert.
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// clap's error text as one line: its first, and when that ends in a
/// colon (`the following required arguments were not provided:`) the
/// indented lines it introduces, so the line names the missing flag.
fn one_line(text: &str) -> String {
    let mut lines = text.lines();
    let mut line = lines
        .next()
        .unwrap_or("bad usage")
        .trim_start_matches("error: ")
        .to_string();
    if line.ends_with(':') {
        for more in lines.take_while(|l| l.starts_with(' ')) {
            line.push(' ');
            line.push_str(more.trim());
        }
    }
    line
}

impl ServerArgs {
    /// Parses the command line; a bad flag is one line on stderr
    /// (`BINARY: error: ...`, clap's usage block left out) and exit 2.
    pub fn parse_or_exit(binary: &str) -> ServerArgs {
        use clap::error::ErrorKind;
        match ServerArgs::try_parse() {
            Ok(args) => args,
            Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
                e.exit()
            }
            Err(e) => {
                eprintln!("{binary}: error: {}", one_line(&e.render().to_string()));
                std::process::exit(2)
            }
        }
    }

    /// Worker count after applying the rule.
    pub fn workers(&self) -> usize {
        self.workers.resolve()
    }

    /// Refuses flags this build cannot honour, so nothing is silently ignored.
    pub fn check_against_features(&self) -> Result<(), String> {
        if self.counter_file.is_some() && !cfg!(feature = "mmap-backend") {
            return Err("--counter-file needs a build with the mmap-backend feature".into());
        }
        if self.counter_file.is_none() && cfg!(feature = "mmap-backend") {
            return Err("this build has the mmap-backend feature: pass --counter-file PATH".into());
        }
        if self.log_file.is_some() && !cfg!(feature = "log-file") {
            return Err("--log-file needs a build with the log-file feature".into());
        }
        if self.log_file.is_none() && cfg!(feature = "log-file") {
            return Err("this build has the log-file feature: pass --log-file PATH".into());
        }
        if self.client_timeout == 0 && !cfg!(feature = "keepalive-os") {
            // Otherwise the twins would differ: ntex's keep-alive timer also
            // closes a new connection that never sent a request, actix's not.
            return Err(
                "--client-timeout 0 needs a build with the keepalive-os feature: with a timed keep-alive, ntex would still close a silent new connection and actix-web would not".into(),
            );
        }
        if self.spin_ns.is_some() && !cfg!(feature = "calibrate") {
            return Err("--spin-ns needs a build with the calibrate feature".into());
        }
        if self.tls_cert.is_some() && !cfg!(feature = "tls") {
            return Err("--tls-cert and --tls-key need a build with the tls feature".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ServerArgs, clap::Error> {
        ServerArgs::try_parse_from(std::iter::once("server").chain(args.iter().copied()))
    }

    /// `args` with the flags this build's other features require.
    fn fitting(args: &[&str]) -> ServerArgs {
        let mut all = args.to_vec();
        if cfg!(feature = "mmap-backend") {
            all.extend(["--counter-file", "count"]);
        }
        if cfg!(feature = "log-file") {
            all.extend(["--log-file", "access.log"]);
        }
        parse(&all).unwrap()
    }

    #[test]
    fn the_tls_flags_come_both_or_neither() {
        let both = parse(&["--tls-cert", "c.pem", "--tls-key", "k.pem"]).unwrap();
        assert_eq!(both.tls_cert, Some(PathBuf::from("c.pem")));
        assert_eq!(both.tls_key, Some(PathBuf::from("k.pem")));
        let neither = parse(&[]).unwrap();
        assert_eq!((neither.tls_cert, neither.tls_key), (None, None));
        for (one, missing) in [
            (["--tls-cert", "c.pem"], "--tls-key <PATH>"),
            (["--tls-key", "k.pem"], "--tls-cert <PATH>"),
        ] {
            let err = parse(&one).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::MissingRequiredArgument,
                "{one:?}"
            );
            // The one line the server prints names the flag missing.
            assert_eq!(
                one_line(&err.render().to_string()),
                format!("the following required arguments were not provided: {missing}")
            );
        }
    }

    #[test]
    fn the_tls_flags_need_the_tls_feature() {
        let args = fitting(&["--tls-cert", "c.pem", "--tls-key", "k.pem"]);
        let checked = args.check_against_features();
        if cfg!(feature = "tls") {
            assert_eq!(checked, Ok(()));
        } else {
            assert_eq!(
                checked.unwrap_err(),
                "--tls-cert and --tls-key need a build with the tls feature"
            );
        }
        // A tls build without them serves plain HTTP: nothing to refuse.
        assert_eq!(fitting(&[]).check_against_features(), Ok(()));
    }
}
