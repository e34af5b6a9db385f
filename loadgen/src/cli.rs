//! Command-line options and their translation into a [`Config`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Parser};

use crate::config::{Config, Model, Sched};
use crate::exit::UsageError;
use crate::gate::{Gate, Half};
use crate::hold::HoldConfig;
use crate::output::Format;
use crate::request::{RequestSpec, Target};
use crate::slow::SlowConfig;

/// HTTP/1.1 load generator: streams one record per interval, counts only 2xx
/// as throughput, keeps latency in bounded memory.
#[derive(Debug, Parser)]
#[command(name = "loadgen", version)]
#[command(group(ArgGroup::new("body_source").args(["body", "body_file", "body_hex"])))]
pub struct Args {
    /// Target URL, e.g. http://127.0.0.1:8080/ or https://localhost:8443/
    pub url: String,

    /// https: trust the CAs in this PEM file instead of the system's.
    #[arg(long, value_name = "PEM")]
    pub ca_file: Option<PathBuf>,

    /// https: accept any certificate (a self-signed one on a test host).
    #[arg(long, conflicts_with = "ca_file")]
    pub insecure: bool,

    /// Close each connection after this many answers and open a new one
    /// (connection churn); new connections are counted per interval.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..),
          conflicts_with_all = ["hold", "slowloris"])]
    pub requests_per_connection: Option<u64>,

    /// Connections to keep open.
    #[arg(short = 'c', long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub connections: u32,

    /// Worker threads, each with its own event loop and connections.
    #[arg(short = 't', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: u32,

    /// Requests sent at once on each connection (closed model).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024), conflicts_with = "rate")]
    pub pipeline: u32,

    /// Open model: total requests per second, each from its own schedule;
    /// latency is measured from the intended send time.
    #[arg(long, value_name = "PER_SECOND", value_parser = positive_rate)]
    pub rate: Option<f64>,

    /// How long to measure, after the warm-up (e.g. 10s, 1m) [default: 10s unless -n is given].
    #[arg(short = 'd', long, value_parser = duration)]
    pub duration: Option<Duration>,

    /// Stop after this many requests in total (warm-up included).
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,

    /// Load that runs first and is left out of the summary; its records are
    /// marked warm-up. Rounded up to whole intervals.
    #[arg(long, default_value = "0s", value_parser = duration_or_zero)]
    pub warmup: Duration,

    /// Length of one record's interval.
    #[arg(long, default_value = "1s", value_parser = duration)]
    pub interval: Duration,

    /// A request unanswered for this long is a timeout error.
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub timeout: Duration,

    /// Request method [default: GET, or POST when a body is given].
    #[arg(short = 'm', long)]
    pub method: Option<String>,

    /// Extra request header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,

    /// Request body as text.
    #[arg(long)]
    pub body: Option<String>,

    /// Request body read from a file.
    #[arg(long, value_name = "PATH")]
    pub body_file: Option<PathBuf>,

    /// Request body as hex, e.g. f401 for the u16 500 little-endian.
    #[arg(long, value_name = "HEX")]
    pub body_hex: Option<String>,

    /// Record format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Name that tags every record, to merge loadgen processes later.
    #[arg(long, value_name = "NAME")]
    pub shard: Option<String>,

    /// Scheduling policy of the worker threads: `batch` keeps loadgen from
    /// preempting a server that shares its CPU (see README); `normal` runs
    /// as wrk does.
    #[arg(long, value_enum, default_value_t = Sched::Batch)]
    pub sched: Sched,

    /// Open model: wake this long before each due send and spin until it is
    /// due, for sends closer to their intended times at the cost of CPU
    /// (see README; at most 1ms). Default: wake at the due time.
    #[arg(long, value_name = "DURATION", value_parser = duration_or_zero, default_value = "0s")]
    pub spin_before: Duration,

    /// Start the load at this wall-clock time, Unix milliseconds: a barrier
    /// for several loadgen processes (interval boundaries then fall on the
    /// same instants in all of them). At most 10 min ahead; a time already
    /// more than 100 ms past is refused.
    #[arg(long, value_name = "UNIX_MS")]
    pub start_at: Option<u64>,

    /// Closed model: send new requests only in this half of every turn
    /// period (requests already sent are still answered), so that two
    /// loadgens started at one --start-at barrier take turns on their
    /// servers: each server has the CPU to itself while it is loaded, and
    /// both see the same machine state to within a turn. 2xx/s still counts
    /// over the whole interval.
    #[arg(long, value_enum, value_name = "HALF", conflicts_with_all = ["rate", "hold"])]
    pub active_half: Option<Half>,

    /// Turn period of --active-half; the interval must be a whole number of
    /// turns (each loadgen then has the same time in every interval)
    /// [default: the interval].
    #[arg(long, value_name = "DURATION", value_parser = duration, requires = "active_half")]
    pub turn: Option<Duration>,

    /// Hold mode: open -c connections, make one request on each, keep them
    /// all open this long without further requests, then close them all.
    /// Set-up is limited by --timeout. See README.
    #[arg(long, value_name = "DURATION", value_parser = duration,
          conflicts_with_all = ["rate", "pipeline", "duration", "requests", "start_at", "spin_before"])]
    pub hold: Option<Duration>,

    /// Slow-client mode: keep -c connections open, each sending its request
    /// head one byte this often and never finishing it; connections the
    /// server ends are counted and opened again. Runs for -d. See README.
    #[arg(long, value_name = "EVERY", value_parser = duration,
          conflicts_with_all = ["rate", "pipeline", "requests", "start_at", "spin_before", "hold", "active_half"])]
    pub slowloris: Option<Duration>,

    /// Exit 1 if errors and non-2xx exceed this fraction of requests (0..=1).
    #[arg(long, value_name = "FRACTION", value_parser = fraction)]
    pub max_error_rate: Option<f64>,
}

fn duration(s: &str) -> Result<Duration, String> {
    let d = duration_or_zero(s)?;
    if d.is_zero() {
        return Err("must be more than zero".into());
    }
    Ok(d)
}

fn duration_or_zero(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (examples: 500ms, 10s, 2m)"))
}

fn positive_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err("must be a number of requests per second above zero".into()),
    }
}

fn fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err("must be a fraction between 0 and 1".into()),
    }
}

/// What the arguments ask for: one of the three modes, checked and ready.
#[derive(Debug)]
pub enum Mode {
    /// Load (closed or open model): records per interval, a summary, a verdict.
    Load {
        config: Config,
        format: Format,
        max_error_rate: Option<f64>,
    },
    /// `--hold`: connections held open.
    Hold(HoldConfig, Format),
    /// `--slowloris`: slow clients.
    Slow(SlowConfig, Format),
}

impl Args {
    /// The mode these arguments ask for, or why they cannot be run.
    pub fn into_mode(self) -> Result<Mode, UsageError> {
        let format = self.format;
        if self.hold.is_some() {
            return Ok(Mode::Hold(self.into_hold_config()?, format));
        }
        if self.slowloris.is_some() {
            return Ok(Mode::Slow(self.into_slow_config()?, format));
        }
        let max_error_rate = self.max_error_rate;
        Ok(Mode::Load {
            config: self.into_config()?,
            format,
            max_error_rate,
        })
    }

    /// Reads the body and resolves the target: the request every mode sends.
    /// Also returns whether it is a HEAD request (answers without a body).
    fn target(&self) -> Result<(Target, bool), UsageError> {
        let body = if let Some(text) = &self.body {
            Some(text.clone().into_bytes())
        } else if let Some(path) = &self.body_file {
            Some(std::fs::read(path).map_err(|e| {
                UsageError(format!("cannot read body file {}: {e}", path.display()))
            })?)
        } else if let Some(hex) = &self.body_hex {
            Some(decode_hex(hex)?)
        } else {
            None
        };
        let method = match &self.method {
            Some(m) => m.clone(),
            None if body.is_some() => "POST".into(),
            None => "GET".into(),
        };
        let head_only = method == "HEAD";
        let spec = RequestSpec {
            method,
            headers: self.headers.clone(),
            body,
        };
        let trust = crate::tls::Trust {
            ca_file: self.ca_file.as_deref(),
            insecure: self.insecure,
        };
        Ok((Target::trusting(&self.url, &spec, &trust)?, head_only))
    }

    /// The `--slowloris` run these arguments describe.
    pub fn into_slow_config(self) -> Result<SlowConfig, UsageError> {
        let every = self
            .slowloris
            .ok_or_else(|| UsageError("not a --slowloris run".into()))?;
        if self.warmup > Duration::ZERO {
            return Err(UsageError(
                "--warmup has no meaning with --slowloris".into(),
            ));
        }
        let (target, _) = self.target()?;
        if target.tls.is_some() {
            return Err(UsageError("--slowloris speaks plain http only".into()));
        }
        Ok(SlowConfig {
            target,
            connections: self.connections as usize,
            every,
            duration: self.duration.unwrap_or(Duration::from_secs(10)),
            shard: self.shard,
        })
    }

    /// The `--hold` run these arguments describe.
    pub fn into_hold_config(self) -> Result<HoldConfig, UsageError> {
        let hold = self
            .hold
            .ok_or_else(|| UsageError("not a --hold run".into()))?;
        if self.warmup > Duration::ZERO {
            return Err(UsageError("--warmup has no meaning with --hold".into()));
        }
        let (target, head_only) = self.target()?;
        if target.tls.is_some() {
            return Err(UsageError("--hold speaks plain http only".into()));
        }
        Ok(HoldConfig {
            target,
            connections: self.connections as usize,
            hold,
            timeout: self.timeout,
            head_only,
            shard: self.shard,
        })
    }

    /// Reads the body, resolves the target and checks what clap cannot.
    pub fn into_config(self) -> Result<Config, UsageError> {
        let (target, head_only) = self.target()?;
        if self.interval < Duration::from_millis(10) {
            return Err(UsageError("--interval must be at least 10ms".into()));
        }
        if self.threads > self.connections {
            return Err(UsageError(format!(
                "{} threads for {} connections: each thread needs a connection",
                self.threads, self.connections
            )));
        }
        if !self.spin_before.is_zero() && self.rate.is_none() {
            return Err(UsageError(
                "--spin-before needs --rate (the open model)".into(),
            ));
        }
        if self.spin_before > Duration::from_millis(1) {
            return Err(UsageError("--spin-before must be at most 1ms".into()));
        }
        let start_at = self.start_at.map(start_time).transpose()?;
        let gate = self.active_half.map(|half| Gate {
            half,
            period: self.turn.unwrap_or(self.interval),
        });
        if let Some(g) = gate {
            let (i, p) = (self.interval.as_nanos(), g.period.as_nanos());
            if p < 2_000_000 || !i.is_multiple_of(p) {
                return Err(UsageError(format!(
                    "--turn {} must be at least 2ms and divide --interval {} evenly",
                    humantime::format_duration(g.period),
                    humantime::format_duration(self.interval)
                )));
            }
        }
        let duration = match (self.duration, self.requests) {
            (None, None) => Some(Duration::from_secs(10)),
            (d, _) => d,
        };
        let model = match self.rate {
            Some(rate) => Model::Open { rate },
            None => Model::Closed {
                pipeline: self.pipeline as usize,
            },
        };
        Ok(Config {
            target,
            connections: self.connections as usize,
            threads: self.threads as usize,
            model,
            duration,
            requests: self.requests,
            warmup: self.warmup,
            interval: self.interval,
            timeout: self.timeout,
            head_only,
            shard: self.shard,
            sched: self.sched,
            spin_before: self.spin_before,
            start_at,
            gate,
            requests_per_connection: self.requests_per_connection,
        })
    }
}

/// Checks a `--start-at` time against the clock now.
fn start_time(unix_ms: u64) -> Result<std::time::SystemTime, UsageError> {
    use std::time::{SystemTime, UNIX_EPOCH};
    let at = UNIX_EPOCH + Duration::from_millis(unix_ms);
    let now = SystemTime::now();
    match at.duration_since(now) {
        Ok(ahead) if ahead > Duration::from_secs(600) => Err(UsageError(format!(
            "--start-at {unix_ms} is {} s ahead: at most 600 s",
            ahead.as_secs()
        ))),
        Ok(_) => Ok(at),
        Err(e) if e.duration() > Duration::from_millis(100) => Err(UsageError(format!(
            "--start-at {unix_ms} passed {} ms ago: the barrier was missed",
            e.duration().as_millis()
        ))),
        Err(_) => Ok(at),
    }
}

fn decode_hex(hex: &str) -> Result<Vec<u8>, UsageError> {
    let hex = hex.trim();
    let bad = || {
        UsageError(format!(
            "--body-hex {hex:?} is not an even number of hex digits"
        ))
    };
    if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| bad()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_at_must_be_near() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        assert!(start_time(now + 500).is_ok());
        let late = start_time(now - 5_000).unwrap_err().to_string();
        assert!(late.contains("barrier was missed"), "{late}");
        let far = start_time(now + 3_600_000).unwrap_err().to_string();
        assert!(far.contains("at most 600 s"), "{far}");
    }

    #[test]
    fn hex_bodies() {
        assert_eq!(decode_hex("f401").unwrap(), vec![0xf4, 0x01]);
        assert!(decode_hex("f40").is_err());
        assert!(decode_hex("zz").is_err());
    }

    #[test]
    fn body_implies_post_and_defaults_apply() {
        let args = Args::parse_from(["loadgen", "--body", "500", "http://127.0.0.1:1/"]);
        let cfg = args.into_config().unwrap();
        assert!(cfg.target.request.starts_with(b"POST / HTTP/1.1\r\n"));
        assert_eq!(cfg.duration, Some(Duration::from_secs(10)));
        let args = Args::parse_from(["loadgen", "-n", "5", "http://127.0.0.1:1/"]);
        assert_eq!(args.into_config().unwrap().duration, None);
    }

    #[test]
    fn active_half_is_for_the_closed_model() {
        let args = Args::parse_from(["loadgen", "--active-half", "second", "http://127.0.0.1:1/"]);
        let gate = args.into_config().unwrap().gate.unwrap();
        assert_eq!(
            (gate.half, gate.period),
            (Half::Second, Duration::from_secs(1))
        );
        let turns = [
            "loadgen",
            "--active-half",
            "first",
            "--turn",
            "100ms",
            "http://127.0.0.1:1/",
        ];
        let gate = Args::parse_from(turns).into_config().unwrap().gate.unwrap();
        assert_eq!(gate.period, Duration::from_millis(100));
        let uneven = [
            "loadgen",
            "--active-half",
            "first",
            "--turn",
            "300ms",
            "http://127.0.0.1:1/",
        ];
        let e = Args::parse_from(uneven)
            .into_config()
            .unwrap_err()
            .to_string();
        assert!(e.contains("divide --interval 1s evenly"), "{e}");
        let open = [
            "loadgen",
            "--active-half",
            "first",
            "--rate",
            "10",
            "http://127.0.0.1:1/",
        ];
        assert!(Args::try_parse_from(open).is_err());
    }
}
