//! Requests that actix-http's HTTP/1 parser refuses, refused here too, so
//! the twins answer them alike (issue 27; `conformance/README.md` lists the
//! differences that remain).
//!
//! actix-http refuses, with a 400 and no body, then closes the connection:
//! a head with two `Host` headers, and an HTTP/1.1 head without one. ntex's
//! codec serves both. Here the service in front of the app returns
//! [`Refused`] for them; ntex hands a service error to the h1 control
//! service (`server::control` answers it with `connection: close`) and then
//! ends the connection, as actix does, without reading anything after it.
//!
//! A `close` option in any `Connection` header closes the connection after
//! the answer, as in actix-http ([`asks_close`]); ntex's codec reads only
//! the last such header.
//!
//! The checks are three header lookups per request, the work actix-http's
//! parser does on every request too.

use std::fmt;

use ntex::http::{header, HttpMessage, Request, Response, ResponseError, StatusCode, Version};

/// Why a request head was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    DuplicateHost,
    MissingHost,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refused::DuplicateHost => "multiple Host headers",
            Refused::MissingHost => "an HTTP/1.1 request without a Host header",
        })
    }
}

impl std::error::Error for Refused {}

impl ResponseError for Refused {
    /// actix-http's answer to a head it cannot parse: 400, empty body.
    fn error_response(&self) -> Response {
        Response::new(StatusCode::BAD_REQUEST)
    }
}

/// The service's error: a refused head, or the app's own error.
#[derive(Debug)]
pub enum Failure {
    Refused(Refused),
    App(ntex::web::Error),
}

impl From<ntex::web::Error> for Failure {
    fn from(e: ntex::web::Error) -> Failure {
        Failure::App(e)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Refused(r) => r.fmt(f),
            Failure::App(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Failure {}

impl ResponseError for Failure {
    fn error_response(&self) -> Response {
        match self {
            Failure::Refused(r) => r.error_response(),
            Failure::App(e) => e.error_response(),
        }
    }
}

/// What actix-http's parser would say about `req`'s head.
pub fn check(req: &Request) -> Result<(), Refused> {
    let mut hosts = req.headers().get_all(header::HOST);
    match (hosts.next(), hosts.next()) {
        (Some(_), Some(_)) => Err(Refused::DuplicateHost),
        (None, _) if req.version() == Version::HTTP_11 => Err(Refused::MissingHost),
        _ => Ok(()),
    }
}

/// Whether actix-http would close the connection after `req` for its
/// `Connection` headers: a `close` option in any of them, whatever else
/// they say (actix-http's decoder lets `close` win over `keep-alive` and
/// `upgrade`). ntex's codec reads the first option of the last header
/// only, so `Connection: close` then `Connection: keep-alive` kept the
/// connection (the fuzzer's `conflicting-connection` class). One header
/// lookup per request; the benchmark's load sends no `Connection` header.
pub fn asks_close(req: &Request) -> bool {
    req.headers().get_all(header::CONNECTION).any(|value| {
        value
            .to_str()
            .is_ok_and(|v| v.split(',').any(|o| o.trim().eq_ignore_ascii_case("close")))
    })
}

/// A handler is done with `payload` without reading it to the end.
///
/// actix-http then drains a chunked body after the answer and keeps the
/// connection (a body with a `Content-Length` it does not drain: it closes
/// the connection after the answer). ntex closes the connection as soon as
/// a handler drops an unfinished body of either kind. So a chunked body is
/// drained here, by a task that outlives the handler; any other is dropped.
/// Requests without a body (every GET of the benchmark's load) only cost
/// the header lookup.
pub fn leave_unread(req: &ntex::web::HttpRequest, mut payload: ntex::web::types::Payload) {
    if req.chunked().unwrap_or(false) {
        ntex::rt::spawn(async move { while let Some(Ok(_)) = payload.recv().await {} });
    }
}
