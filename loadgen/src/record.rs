//! The records loadgen writes: one definition, read back by the analysis.
//!
//! In `--format jsonl` every line is one [`Record`], tagged by `"type"`; the
//! schema is `loadgen/schema/record.schema.json` (a test validates output
//! against it). In text format an interval is one line the original study's
//! parser reads (see [`IntervalRecord::text_line`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{ErrorKind, Stats};

/// One line of jsonl output.
// One record a line, read or written one at a time: the summary's size
// costs nothing a box would save.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Interval(IntervalRecord),
    Summary(SummaryRecord),
    /// `--hold`: every connection that could be made is open and answered;
    /// the hold starts now.
    Held(HoldRecord),
    /// `--hold`: the hold is over and every connection is closed.
    HoldSummary(HoldRecord),
    /// `--slowloris`: what the slow clients met, at the end.
    SlowSummary(SlowRecord),
}

/// What `--slowloris` did: how many slow connections the server ended, how
/// long they lived, and what it answered before closing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlowRecord {
    pub shard: Option<String>,
    /// Slow connections kept open (`-c`).
    pub connections: u64,
    /// One byte per connection this often (ms).
    pub every_ms: f64,
    /// Connects that succeeded, reopenings included.
    pub opened: u64,
    /// Connects that failed (tried again a period later).
    pub connect_errors: u64,
    /// Head bytes sent, all connections together.
    pub bytes_sent: u64,
    /// Slow connections the server ended (a close or a reset).
    pub closed_by_server: u64,
    /// Of those, by what the server sent first: a status code, `0` for
    /// bytes that were not a response, `none` for a close without a word.
    pub answered: BTreeMap<String, u64>,
    /// How long the connections the server ended had lived, from the
    /// connect (ms); absent when it ended none.
    pub lifetime_ms: Option<SlowLifetime>,
    /// Slow connections open when the run ended.
    pub open_at_end: u64,
    pub start_unix_ms: u64,
    pub duration_s: f64,
    /// True when SIGINT or SIGTERM cut the run short.
    pub interrupted: bool,
}

/// Percentiles of the lifetimes of server-ended slow connections (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowLifetime {
    pub p10: u64,
    pub p50: u64,
    pub p90: u64,
    pub max: u64,
}

impl SlowRecord {
    /// The record in text form: one line.
    pub fn text_line(&self) -> String {
        let lived = self.lifetime_ms.map_or(String::new(), |l| {
            format!(
                " after {:.1} s (median; p10 {:.1} s, p90 {:.1} s)",
                l.p50 as f64 / 1e3,
                l.p10 as f64 / 1e3,
                l.p90 as f64 / 1e3
            )
        });
        let answered: Vec<String> = self
            .answered
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        format!(
            "slow clients: {} kept open, a byte each every {:.0} ms for {:.1} s; {} opened, {} failed to connect; the server ended {}{} (first sent: {}); {} open at the end{}",
            self.connections,
            self.every_ms,
            self.duration_s,
            self.opened,
            self.connect_errors,
            self.closed_by_server,
            lived,
            if answered.is_empty() { "-".into() } else { answered.join(", ") },
            self.open_at_end,
            if self.interrupted { " (interrupted)" } else { "" },
        )
    }
}

/// What `--hold` did: one record when the hold starts, one when it ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoldRecord {
    pub shard: Option<String>,
    /// Connections asked for (`-c`).
    pub connections: u64,
    /// Connections open and answered when the hold started.
    pub established: u64,
    /// Of those, answered 2xx.
    pub ok: u64,
    /// Answered with another status (still held unless the server closed).
    pub non_2xx: NonOk,
    /// Connections that failed before the hold, by kind.
    pub errors: Errors,
    /// Connections not tried: setting up took longer than `--timeout`, or
    /// loadgen was interrupted.
    pub not_attempted: u64,
    /// Held connections the server ended before loadgen closed them.
    pub closed_early: u64,
    /// Responses that arrived on held connections with nothing asked
    /// (a 408 before a close, for example).
    pub unsolicited: u64,
    /// Wall-clock start of the set-up, Unix ms.
    pub start_unix_ms: u64,
    /// How long opening and asking took.
    pub setup_ms: f64,
    /// How long the connections were held (0 in the `held` record).
    pub held_ms: f64,
    /// True when SIGINT or SIGTERM cut the run short.
    pub interrupted: bool,
}

impl HoldRecord {
    /// The record in text form: one line.
    pub fn text_line(&self, held: bool) -> String {
        let what = if held { "holding" } else { "held" };
        format!(
            "{what} {} of {} connections ({} 2xx, {} non-2xx, {} failed, {} not attempted) set up in {:.0} ms; held {:.0} ms, {} closed early by the server, {} unsolicited responses{}",
            self.established,
            self.connections,
            self.ok,
            self.non_2xx.total(),
            self.errors.total(),
            self.not_attempted,
            self.setup_ms,
            self.held_ms,
            self.closed_early,
            self.unsolicited,
            if self.interrupted { " (interrupted)" } else { "" },
        )
    }
}

/// Errors by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Errors {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    pub timeout: u64,
    pub parse: u64,
    pub closed: u64,
    /// TLS handshakes that failed (absent in logs written before https).
    #[serde(default)]
    pub tls: u64,
}

impl Errors {
    pub(crate) fn from_stats(s: &Stats) -> Errors {
        let e = |k: ErrorKind| s.errors[k as usize];
        Errors {
            connect: e(ErrorKind::Connect),
            read: e(ErrorKind::Read),
            write: e(ErrorKind::Write),
            timeout: e(ErrorKind::Timeout),
            parse: e(ErrorKind::Parse),
            closed: e(ErrorKind::Closed),
            tls: e(ErrorKind::Tls),
        }
    }

    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout + self.parse + self.closed + self.tls
    }
}

/// Responses that were not 2xx, by status class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NonOk {
    #[serde(rename = "1xx")]
    pub c1xx: u64,
    #[serde(rename = "3xx")]
    pub c3xx: u64,
    #[serde(rename = "4xx")]
    pub c4xx: u64,
    #[serde(rename = "5xx")]
    pub c5xx: u64,
    /// A status outside 100..=599.
    pub other: u64,
}

impl NonOk {
    pub(crate) fn from_stats(s: &Stats) -> NonOk {
        let [c1xx, c3xx, c4xx, c5xx, other] = s.non_ok_by_class();
        NonOk {
            c1xx,
            c3xx,
            c4xx,
            c5xx,
            other,
        }
    }

    pub fn total(&self) -> u64 {
        self.c1xx + self.c3xx + self.c4xx + self.c5xx + self.other
    }
}

/// One closed interval, all worker threads merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// `--shard` name, if given.
    pub shard: Option<String>,
    /// 0-based interval number, warm-up included.
    pub index: u64,
    /// Wall-clock start of the interval, Unix milliseconds.
    pub start_unix_ms: u64,
    /// Measured length of the interval in milliseconds.
    pub length_ms: f64,
    /// True while `--warmup` runs: left out of the summary.
    pub warmup: bool,
    /// 2xx responses completed in this interval: the throughput count.
    pub ok: u64,
    pub non_2xx: NonOk,
    pub errors: Errors,
    /// Open model: requests sent later than intended because their
    /// connection was still busy.
    pub late: u64,
    /// Idle connections the server ended (nothing outstanding, so not an
    /// error); reopened.
    #[serde(default)]
    pub server_closed_idle: u64,
    /// Connections established in this interval (with https, once their
    /// handshake ended): churn shows here.
    #[serde(default)]
    pub connects: u64,
    /// https: TLS handshakes that ended in this interval, and their mean
    /// time in µs from the connect's start (absent over plain http).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshakes: Option<Handshakes>,
    /// 2xx responses since the start, warm-up included.
    pub total_ok: u64,
    /// Seconds since the start of the run at the end of this interval.
    pub elapsed_s: f64,
    pub latency_us: IntervalLatency,
    /// This interval's latency histogram (µs) at 2 significant digits,
    /// HdrHistogram V2 in base64 ([`crate::histlog`]); absent in
    /// logs written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    /// Open model: how long after their intended times this interval's
    /// requests left (µs); absent in the closed model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lateness_us: Option<IntervalLatency>,
}

/// TLS handshakes over a span: how many ended, their mean time (µs, from
/// the connect's start).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Handshakes {
    pub count: u64,
    pub mean_us: f64,
}

impl Handshakes {
    /// Over https: the count and mean; none over plain http.
    fn of(stats: &Stats, https: bool) -> Option<Handshakes> {
        https.then(|| Handshakes {
            count: stats.handshakes,
            mean_us: if stats.handshakes == 0 {
                0.0
            } else {
                stats.handshake_us as f64 / stats.handshakes as f64
            },
        })
    }
}

/// Latency of one interval's responses, microseconds (0 when there were none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntervalLatency {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl IntervalLatency {
    /// p50, p99 and max of `h`, or none when it is empty.
    fn of(h: &hdrhistogram::Histogram<u64>) -> Option<IntervalLatency> {
        (!h.is_empty()).then(|| IntervalLatency {
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        })
    }
}

impl IntervalRecord {
    /// Builds the record for one interval's merged stats.
    pub fn new(
        head: IntervalHead,
        stats: &Stats,
        total_ok: u64,
        shard: Option<&str>,
    ) -> IntervalRecord {
        let h = &stats.latency_us;
        IntervalRecord {
            shard: shard.map(str::to_owned),
            index: head.index,
            start_unix_ms: head.start_unix_ms,
            length_ms: head.length_ms,
            warmup: head.warmup,
            ok: stats.ok(),
            non_2xx: NonOk::from_stats(stats),
            errors: Errors::from_stats(stats),
            late: stats.late,
            server_closed_idle: stats.idle_closed_total(),
            connects: stats.connects,
            handshakes: Handshakes::of(stats, head.https),
            total_ok,
            elapsed_s: head.elapsed_s,
            latency_us: IntervalLatency {
                p50: h.value_at_quantile(0.5),
                p99: h.value_at_quantile(0.99),
                max: h.max(),
            },
            histogram: Some(crate::histlog::encode_coarse(h)),
            send_lateness_us: IntervalLatency::of(&stats.send_lateness_us),
        }
    }

    /// 2xx responses per second in this interval.
    pub fn rps(&self) -> f64 {
        if self.length_ms > 0.0 {
            self.ok as f64 * 1000.0 / self.length_ms
        } else {
            0.0
        }
    }

    /// The text form. The original study's parser reads it: the last token
    /// before `ms:` is the measured interval length in ms, the first token
    /// after it the interval's 2xx count. Non-2xx and error counts follow,
    /// then `warmup` during warm-up and the shard name.
    ///
    /// `Total requests: 231044. Requests in the last 1001ms: 230877 [1.001s total] [230646 avg. RPS] 2xx=230877 non-2xx=0 errors=0`
    pub fn text_line(&self) -> String {
        let mut line = format!(
            "Total requests: {}. Requests in the last {:.0}ms: {} [{:.3}s total] [{:.0} avg. RPS] 2xx={} non-2xx={} errors={}",
            self.total_ok,
            self.length_ms,
            self.ok,
            self.elapsed_s,
            self.rps(),
            self.ok,
            self.non_2xx.total(),
            self.errors.total(),
        );
        if self.late > 0 {
            line.push_str(&format!(" late={}", self.late));
        }
        if self.warmup {
            line.push_str(" warmup");
        }
        if let Some(shard) = &self.shard {
            line.push_str(&format!(" shard={shard}"));
        }
        line
    }
}

/// Timing facts of one interval, from the collector.
#[derive(Debug, Clone, Copy)]
pub struct IntervalHead {
    pub index: u64,
    pub start_unix_ms: u64,
    pub length_ms: f64,
    pub elapsed_s: f64,
    pub warmup: bool,
    /// The run speaks https: its records count handshakes, none or not.
    pub https: bool,
}

/// Latency over the measured part of the run, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SummaryLatency {
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p99: u64,
    #[serde(rename = "p99.9")]
    pub p99_9: u64,
    pub max: u64,
    pub mean: f64,
}

/// The whole run after warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRecord {
    pub shard: Option<String>,
    /// Measured seconds (warm-up excluded).
    pub duration_s: f64,
    /// Requests that completed or failed: responses plus errors.
    pub requests: u64,
    pub ok: u64,
    /// 2xx responses per second: the throughput.
    pub rps: f64,
    /// 2xx as a percentage of requests.
    pub availability_pct: f64,
    pub non_2xx: NonOk,
    pub errors: Errors,
    pub late: u64,
    pub reconnects: u64,
    /// Connections established (see the interval records).
    #[serde(default)]
    pub connects: u64,
    /// https: handshakes that ended and their mean time (µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshakes: Option<Handshakes>,
    /// https: the TLS version and cipher suite agreed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cipher: Option<String>,
    /// Idle connections the server ended (reopened; not errors) ...
    #[serde(default)]
    pub server_closed_idle: u64,
    /// ... by the status of the response it sent first, `none` for a plain
    /// close or reset (e.g. `{"408": 12}` for ntex's client timeout).
    #[serde(default)]
    pub server_closed_idle_status: BTreeMap<String, u64>,
    pub bytes_read: u64,
    pub latency_us: SummaryLatency,
    /// Responses per status code.
    pub status: BTreeMap<String, u64>,
    /// Measured (non-warm-up) intervals.
    pub intervals: u64,
    /// The measured part's latency histogram (µs), encoded as in the
    /// interval records; absent in logs written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    /// Open model: how long after their intended times requests left (µs);
    /// absent in the closed model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lateness_us: Option<SummaryLatency>,
    /// Open model: the lateness of requests due while their connection was
    /// idle, the client's own delay (see `Stats::client_lateness_us`);
    /// absent in the closed model and in logs written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_lateness_us: Option<SummaryLatency>,
}

impl SummaryLatency {
    /// The percentiles of `h`, or none when it is empty.
    fn of(h: &hdrhistogram::Histogram<u64>) -> Option<SummaryLatency> {
        let q = |x| h.value_at_quantile(x);
        (!h.is_empty()).then(|| SummaryLatency {
            p50: q(0.5),
            p75: q(0.75),
            p90: q(0.9),
            p99: q(0.99),
            p99_9: q(0.999),
            max: h.max(),
            mean: h.mean(),
        })
    }
}

/// Non-zero counts indexed by status code, keyed by the code (index 0 by
/// `zero`: a status outside 100..=599, or none at all).
fn by_status(counts: &[u64], zero: &str) -> BTreeMap<String, u64> {
    counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(code, n)| {
            let name = if code == 0 {
                zero.to_string()
            } else {
                code.to_string()
            };
            (name, *n)
        })
        .collect()
}

impl SummaryRecord {
    /// The verdict on a finished run: `Err` (exit 1, with why) when no
    /// request succeeded or the error rate passed `max_error_rate`.
    pub fn verdict(&self, max_error_rate: Option<f64>) -> Result<(), String> {
        if self.ok == 0 {
            return Err(format!(
                "no request succeeded ({} requests, {} errors, {} non-2xx)",
                self.requests,
                self.errors.total(),
                self.non_2xx.total()
            ));
        }
        if let Some(max) = max_error_rate {
            let rate = self.error_rate();
            if rate > max {
                return Err(format!(
                    "error rate {rate:.4} is over --max-error-rate {max}"
                ));
            }
        }
        Ok(())
    }

    pub fn new(stats: &Stats, duration_s: f64, intervals: u64, shard: Option<&str>) -> Self {
        let h = &stats.latency_us;
        let q = |x| h.value_at_quantile(x);
        let ok = stats.ok();
        let requests = stats.responses() + stats.error_total();
        let status = by_status(&stats.status[..], "other");
        SummaryRecord {
            shard: shard.map(str::to_owned),
            duration_s,
            requests,
            ok,
            rps: if duration_s > 0.0 {
                ok as f64 / duration_s
            } else {
                0.0
            },
            availability_pct: if requests > 0 {
                ok as f64 * 100.0 / requests as f64
            } else {
                0.0
            },
            non_2xx: NonOk::from_stats(stats),
            errors: Errors::from_stats(stats),
            late: stats.late,
            reconnects: stats.reconnects,
            connects: stats.connects,
            // The collector puts the run's first agreement in `tls`.
            handshakes: Handshakes::of(stats, stats.tls.is_some()),
            tls_version: stats.tls.map(|(v, _)| v.to_string()),
            tls_cipher: stats.tls.map(|(_, c)| c.to_string()),
            server_closed_idle: stats.idle_closed_total(),
            server_closed_idle_status: by_status(&stats.idle_closed[..], "none"),
            bytes_read: stats.bytes_read,
            latency_us: SummaryLatency {
                p50: q(0.5),
                p75: q(0.75),
                p90: q(0.9),
                p99: q(0.99),
                p99_9: q(0.999),
                max: h.max(),
                mean: if h.is_empty() { 0.0 } else { h.mean() },
            },
            status,
            intervals,
            histogram: Some(crate::histlog::encode(h)),
            send_lateness_us: SummaryLatency::of(&stats.send_lateness_us),
            client_lateness_us: SummaryLatency::of(&stats.client_lateness_us),
        }
    }

    /// Error rate: errors and non-2xx as a fraction of requests.
    pub fn error_rate(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            1.0 - self.ok as f64 / self.requests as f64
        }
    }

    /// The human-readable block printed at the end in text format.
    pub fn text_block(&self) -> String {
        let l = &self.latency_us;
        let e = &self.errors;
        let status: Vec<String> = self
            .status
            .iter()
            .map(|(c, n)| format!("{c}={n}"))
            .collect();
        let mut out = String::new();
        out.push_str("Summary:\n");
        if let Some(shard) = &self.shard {
            out.push_str(&format!("  shard:        {shard}\n"));
        }
        out.push_str(&format!(
            "  requests:     {} in {:.3}s (2xx {}, non-2xx {}, errors {})\n",
            self.requests,
            self.duration_s,
            self.ok,
            self.non_2xx.total(),
            e.total()
        ));
        out.push_str(&format!(
            "  throughput:   {:.1} 2xx responses/s, availability {:.3}%\n",
            self.rps, self.availability_pct
        ));
        out.push_str(&format!(
            "  latency (us): p50 {} p75 {} p90 {} p99 {} p99.9 {} max {} mean {:.1}\n",
            l.p50, l.p75, l.p90, l.p99, l.p99_9, l.max, l.mean
        ));
        if let Some(l) = &self.send_lateness_us {
            out.push_str(&format!(
                "  send lateness (us): p50 {} p90 {} p99 {} p99.9 {} max {}\n",
                l.p50, l.p90, l.p99, l.p99_9, l.max
            ));
        }
        if let Some(l) = &self.client_lateness_us {
            out.push_str(&format!(
                "  of those due on an idle connection (the client's own delay): p50 {} p90 {} p99 {} p99.9 {} max {}\n",
                l.p50, l.p90, l.p99, l.p99_9, l.max
            ));
        }
        out.push_str(&format!(
            "  errors:       connect {} read {} write {} timeout {} parse {} closed {}\n",
            e.connect, e.read, e.write, e.timeout, e.parse, e.closed
        ));
        out.push_str(&format!("  status:       {}\n", status.join(" ")));
        out.push_str(&format!(
            "  bytes read:   {}, reconnects {}, late sends {}, idle connections the server ended {}\n",
            self.bytes_read, self.reconnects, self.late, self.server_closed_idle
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule from the original study's analysis script.
    fn original_parse(line: &str) -> (f64, f64) {
        let (before, after) = line.split_once("ms:").unwrap();
        let ms = before.split_whitespace().last().unwrap().parse().unwrap();
        let count = after.split_whitespace().next().unwrap().parse().unwrap();
        (ms, count)
    }

    #[test]
    fn text_line_parses_with_the_original_rule() {
        let mut stats = Stats::default();
        for _ in 0..1234 {
            stats.response(200, 50);
        }
        stats.response(500, 50);
        let head = IntervalHead {
            index: 3,
            start_unix_ms: 1,
            length_ms: 1000.6,
            elapsed_s: 4.0,
            warmup: true,
            https: false,
        };
        let rec = IntervalRecord::new(head, &stats, 5000, Some("a"));
        let line = rec.text_line();
        assert_eq!(original_parse(&line), (1001.0, 1234.0), "{line}");
        assert!(
            line.ends_with(" 2xx=1234 non-2xx=1 errors=0 warmup shard=a"),
            "{line}"
        );
    }
}
