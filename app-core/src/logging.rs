//! Logging sinks. Exactly one of these is compiled in, or none:
//!
//! - `log-stdout`: env_logger writing to stdout; the framework's access-log
//!   middleware logs one line per request at info. Level from `RUST_LOG`
//!   (default `info`).
//! - `log-file`: a tracing subscriber writing through tracing-appender's
//!   non-blocking writer to `--log-file`; the same middleware's `log` records
//!   reach it through the tracing-log bridge. The writer is lossless (it
//!   applies back-pressure instead of dropping lines) and is flushed when the
//!   returned guard drops.
//! - neither: nothing is initialised and the middleware is not compiled in.

#[cfg(all(feature = "log-stdout", feature = "log-file"))]
compile_error!(
    "features `log-stdout` and `log-file` are two sinks for the same access log: enable only one"
);

/// Keeps the log sink alive; dropping it flushes buffered lines.
#[must_use = "dropping the guard flushes and closes the log sink"]
pub struct LogGuard {
    #[cfg(feature = "log-file")]
    _worker: tracing_appender::non_blocking::WorkerGuard,
}

/// Starts the compiled-in sink. `log_file` is the `--log-file` flag.
#[cfg_attr(not(feature = "log-file"), allow(unused_variables))]
pub fn init(log_file: Option<&std::path::Path>) -> Result<LogGuard, String> {
    #[cfg(feature = "log-stdout")]
    {
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
            .target(env_logger::Target::Stdout)
            .try_init()
            .map_err(|e| format!("starting the stdout logger: {e}"))?;
    }
    #[cfg(feature = "log-file")]
    {
        use tracing_subscriber::EnvFilter;
        let path = log_file.ok_or("this build has the log-file feature: pass --log-file PATH")?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("opening log file {}: {e}", path.display()))?;
        let (writer, worker) = tracing_appender::non_blocking::NonBlockingBuilder::default()
            .lossy(false)
            .finish(file);
        let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(writer)
            .with_ansi(false)
            .try_init()
            .map_err(|e| format!("starting the file logger: {e}"))?;
        Ok(LogGuard { _worker: worker })
    }
    #[cfg(not(feature = "log-file"))]
    Ok(LogGuard {})
}
