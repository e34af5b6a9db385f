//! The click-counter application, independent of any framework: the server
//! crates turn a [`Reply`] into their own response type and nothing else.

use crate::body::{check_declared_length, BodyBuf};
use crate::codec::{ActiveCodec, BodyError, Codec};
use crate::counter::{Counter, CounterError, CounterOptions, CounterStore};
use crate::spin::Spin;

/// `Allow` header sent with a 405 on `/`.
pub const ALLOW: &str = "GET, POST";
const TEXT: &str = "text/plain";

/// A response body: static text, a count on the stack, or a count on the heap.
#[derive(Debug)]
pub enum ReplyBody {
    Static(&'static [u8]),
    Stack(crate::codec::Answer),
    Heap(Vec<u8>),
}

impl ReplyBody {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            ReplyBody::Static(b) => b,
            ReplyBody::Stack(a) => a.as_bytes(),
            ReplyBody::Heap(v) => v,
        }
    }
}

/// Everything a server sends back: status, content type, optional `Allow`, body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub allow: Option<&'static str>,
    pub body: ReplyBody,
}

impl Reply {
    fn text(status: u16, message: &'static str) -> Reply {
        Reply {
            status,
            content_type: TEXT,
            allow: None,
            body: ReplyBody::Static(message.as_bytes()),
        }
    }

    /// 404 for any path other than `/`.
    pub fn not_found() -> Reply {
        Reply::text(404, "not found: the only resource is /\n")
    }

    /// 405 for any method other than GET and POST on `/`.
    pub fn method_not_allowed() -> Reply {
        Reply {
            allow: Some(ALLOW),
            ..Reply::text(405, "method not allowed: use GET or POST on /\n")
        }
    }

    /// 400 or 413 for a refused body.
    pub fn body_error(err: BodyError) -> Reply {
        Reply::text(err.status(), err.message())
    }

    fn count(count: u64) -> Reply {
        let answer = ActiveCodec::encode(count);
        // Without `no-alloc` the answer goes to the heap, as `count.to_string()`
        // in a plain handler would; with it, it stays on the stack.
        let body = if cfg!(feature = "no-alloc") {
            ReplyBody::Stack(answer)
        } else {
            ReplyBody::Heap(answer.as_bytes().to_vec())
        };
        Reply {
            status: 200,
            content_type: ActiveCodec::CONTENT_TYPE,
            allow: None,
            body,
        }
    }
}

/// The application state every worker shares.
#[derive(Debug)]
pub struct App {
    counter: Counter,
    max_body: usize,
    /// `calibrate` builds: CPU work added to every request.
    spin: Spin,
}

impl App {
    pub fn new(counter: CounterOptions, max_body: usize) -> Result<App, CounterError> {
        Ok(App {
            counter: Counter::open(&counter)?,
            max_body,
            spin: Spin::NONE,
        })
    }

    /// Adds about `ns` nanoseconds of CPU work to every GET and POST (the
    /// positive control of `shootout calibrate`; only `calibrate` builds
    /// accept `--spin-ns`, see [`crate::ServerArgs::check_against_features`]).
    /// The conversion into loop iterations is timed here, see [`crate::spin`].
    pub fn with_spin_ns(mut self, ns: u64) -> App {
        self.spin = Spin::calibrated(ns);
        self
    }

    /// The per-request spin (none unless `--spin-ns` was given).
    pub fn spin(&self) -> Spin {
        self.spin
    }

    #[inline]
    fn add_spin(&self) {
        if cfg!(feature = "calibrate") {
            self.spin.once();
        }
    }

    /// `GET /`.
    pub fn get(&self) -> Reply {
        self.add_spin();
        Reply::count(self.counter.get())
    }

    /// Checks a declared `Content-Length` before reading the body.
    pub fn check_length(&self, content_length: Option<u64>) -> Result<(), Reply> {
        match content_length {
            Some(len) => check_declared_length(len, self.max_body).map_err(Reply::body_error),
            None => Ok(()),
        }
    }

    /// A fresh collector for one request body.
    pub fn body_buf(&self) -> BodyBuf {
        BodyBuf::new(self.max_body)
    }

    /// `POST /` once the body is collected: adds the value, answers the new total.
    pub fn post(&self, body: &BodyBuf) -> Reply {
        self.add_spin();
        match body.decode() {
            Ok(value) => Reply::count(self.counter.add(u64::from(value))),
            Err(err) => Reply::body_error(err),
        }
    }

    /// Makes the count durable; call once the server has stopped.
    pub fn sync(&self) -> Result<(), CounterError> {
        self.counter.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(any(feature = "binary-payload", feature = "mmap-backend")))]
    fn app() -> App {
        App::new(
            CounterOptions {
                workers: 2,
                file: None,
            },
            64,
        )
        .unwrap()
    }

    #[cfg(not(any(feature = "binary-payload", feature = "mmap-backend")))]
    fn post(app: &App, chunks: &[&[u8]]) -> Reply {
        let mut body = app.body_buf();
        for c in chunks {
            if let Err(e) = body.push(c) {
                return Reply::body_error(e);
            }
        }
        app.post(&body)
    }

    #[test]
    #[cfg(not(any(feature = "binary-payload", feature = "mmap-backend")))]
    fn post_adds_and_answers_the_total_and_errors_change_nothing() {
        let app = app();
        assert_eq!(post(&app, &[b"500"]).body.as_bytes(), b"500");
        assert_eq!(post(&app, &[b"2", b"5"]).body.as_bytes(), b"525");
        for bad in [&b""[..], b"501", b"-1", b"1234", b"x"] {
            assert_eq!(post(&app, &[bad]).status, 400);
        }
        assert_eq!(post(&app, &[&[b'1'; 65]]).status, 413);
        assert_eq!(app.check_length(Some(65)).unwrap_err().status, 413);
        let got = app.get();
        assert_eq!((got.status, got.body.as_bytes()), (200, &b"525"[..]));
        assert_eq!(got.content_type, "text/plain");
    }

    #[test]
    #[cfg(all(
        feature = "calibrate",
        not(any(feature = "binary-payload", feature = "mmap-backend"))
    ))]
    fn spin_adds_cpu_per_request() {
        let plain = app();
        let spun = app().with_spin_ns(2_000_000);
        let start = std::time::Instant::now();
        for _ in 0..5 {
            plain.get();
        }
        let plain_time = start.elapsed();
        let start = std::time::Instant::now();
        for _ in 0..5 {
            spun.get();
        }
        // Five requests of about 2 ms of CPU work each; half of it as a lower
        // bound leaves room for the loop's cost changing after it was timed.
        assert!(start.elapsed() >= std::time::Duration::from_millis(5));
        assert!(plain_time < start.elapsed());
    }

    #[test]
    fn refusals_carry_their_headers() {
        let r = Reply::method_not_allowed();
        assert_eq!((r.status, r.allow), (405, Some(ALLOW)));
        assert_eq!(Reply::not_found().status, 404);
    }
}
