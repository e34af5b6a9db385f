//! Start-up and shutdown steps both servers run around their framework.

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use crate::counter::CounterOptions;
use crate::logging::{self, LogGuard};
use crate::{App, ServerArgs};

/// A server that is ready to hand its listener to the framework.
pub struct Launch {
    pub app: Arc<App>,
    pub workers: usize,
    /// `count`, `logical` or `physical` (see [`crate::workers::Workers`]).
    pub worker_rule: &'static str,
    pub addr: SocketAddr,
    /// `--client-timeout` in seconds, 0 = off.
    pub client_timeout: u16,
    /// `--shutdown-timeout` in seconds.
    pub shutdown_timeout: u16,
    backlog: i32,
    /// The open-file limit in force: raised to the hard limit at start.
    pub nofile: u64,
    /// With `--tls-cert` and `--tls-key` (`tls` builds): the listener's TLS
    /// configuration, for the server crate's TLS acceptor.
    #[cfg(feature = "tls")]
    pub tls: Option<crate::tls::ServerConfig>,
    /// Whether the listener serves HTTPS: the start-up line says `tls=on`.
    serves_tls: bool,
    log: LogGuard,
}

impl Launch {
    /// Checks the flags against the build, starts logging, opens the counter
    /// and binds the listener.
    pub fn prepare(args: &ServerArgs) -> anyhow::Result<(Launch, TcpListener)> {
        args.check_against_features().map_err(anyhow::Error::msg)?;
        // Before anything else opens: a bad certificate or key is one line.
        #[cfg(feature = "tls")]
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(crate::tls::server_config(cert, key)?),
            _ => None,
        };
        let log = logging::init(args.log_file.as_deref()).map_err(anyhow::Error::msg)?;
        // Every connection is a file: as many as the hard limit allows.
        let nofile =
            rlimit::increase_nofile_limit(u64::MAX).context("raising the open-file limit")?;
        let workers = args.workers();
        let counter = CounterOptions {
            workers,
            file: args.counter_file.clone(),
        };
        let app = App::new(counter, args.max_body)?.with_spin_ns(args.spin_ns.unwrap_or(0));
        let listener = crate::net::listen(args.bind, args.backlog)
            .with_context(|| format!("listening on {}", args.bind))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let launch = Launch {
            app: Arc::new(app),
            workers,
            worker_rule: args.workers.rule(),
            addr,
            client_timeout: args.client_timeout,
            shutdown_timeout: args.shutdown_timeout,
            backlog: args.backlog,
            nofile,
            serves_tls: args.tls_cert.is_some(),
            #[cfg(feature = "tls")]
            tls,
            log,
        };
        Ok((launch, listener))
    }

    /// Prints the start-up line on stderr (see [`crate::startup_line`]).
    pub fn announce(&self, binary: &'static str, framework: &str) {
        eprintln!(
            "{}{}",
            crate::startup_line(
                binary,
                framework,
                (self.addr, self.serves_tls),
                (self.workers, self.worker_rule),
                self.backlog,
                (self.client_timeout, self.shutdown_timeout),
                self.nofile
            ),
            self.app.spin().describe()
        );
        if cfg!(feature = "alloc-reclaim") {
            if let Err(e) = crate::reclaim::spawn(binary, self.addr) {
                eprintln!("{binary}: reclaim: cannot start its thread: {e}; reclaim is off");
            }
        }
    }

    /// After the framework stopped: syncs the counter, then flushes the log.
    pub fn finish(self) -> anyhow::Result<()> {
        self.app.sync()?;
        drop(self.log);
        Ok(())
    }
}

/// Turns the outcome of a server run into one error line and an exit code.
pub fn exit_code(binary: &str, outcome: anyhow::Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{binary}: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
