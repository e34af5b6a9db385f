//! ntex glue: routes, the response mapping, and server settings.

use std::sync::Arc;

use anyhow::Context;
use app_core::codec::BodyError;
use app_core::{App, Launch, Reply, ReplyBody, ServerArgs};
use ntex::http::error::DispatchError;
use ntex::http::{
    h1, header, ConnectionType, HttpService, HttpServiceConfig, KeepAlive, Request, ResponseError,
    StatusCode,
};
use ntex::io::{Filter, Io, IoConfig};
use ntex::service::{apply_fn_factory, fn_service, ServiceFactory};
use ntex::time::Seconds;
use ntex::util::Bytes;
use ntex::web::types::{Payload, State};
use ntex::web::{self, HttpRequest, HttpResponse};
use ntex::SharedCfg;

use crate::strict;

/// Framework name and the exact version pinned in Cargo.toml.
pub const FRAMEWORK: &str = "ntex/3.12.3";

/// The listener's service name in ntex's server builder.
const SERVICE: &str = "ntex-server";

fn respond(reply: Reply) -> HttpResponse {
    let status = StatusCode::from_u16(reply.status).expect("app-core only uses valid statuses");
    let mut res = HttpResponse::build(status);
    res.set_header(header::CONTENT_TYPE, reply.content_type);
    if let Some(allow) = reply.allow {
        res.set_header(header::ALLOW, allow);
    }
    match reply.body {
        ReplyBody::Static(bytes) => res.body(Bytes::from_static(bytes)),
        // ntex's `Bytes` stores short values inline: no heap copy here.
        ReplyBody::Stack(answer) => res.body(Bytes::copy_from_slice(answer.as_bytes())),
        ReplyBody::Heap(vec) => res.body(vec),
    }
}

fn content_length(req: &HttpRequest) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

async fn get_count(app: State<Arc<App>>, req: HttpRequest, payload: Payload) -> HttpResponse {
    strict::leave_unread(&req, payload);
    respond(app.get())
}

async fn post_count(app: State<Arc<App>>, req: HttpRequest, mut payload: Payload) -> HttpResponse {
    if let Err(reply) = app.check_length(content_length(&req)) {
        strict::leave_unread(&req, payload);
        return respond(reply);
    }
    let mut body = app.body_buf();
    while let Some(chunk) = payload.recv().await {
        let pushed = match chunk {
            Ok(bytes) => body.push(&bytes),
            Err(_) => Err(BodyError::Unreadable),
        };
        if let Err(err) = pushed {
            strict::leave_unread(&req, payload);
            return respond(Reply::body_error(err));
        }
    }
    respond(app.post(&body))
}

async fn method_not_allowed(req: HttpRequest, payload: Payload) -> HttpResponse {
    strict::leave_unread(&req, payload);
    respond(Reply::method_not_allowed())
}

async fn not_found(req: HttpRequest, payload: Payload) -> HttpResponse {
    strict::leave_unread(&req, payload);
    respond(Reply::not_found())
}

/// ntex's connection timers tick once a second and fire on the tick after
/// their deadline: a 5 s keep-alive closes at 5-6 s (measured: 6.0 s on an
/// idle server, where actix closes at 4.8 s). One second less makes them fire
/// within (t-1, t], exactly t on an otherwise idle server, so the twins close
/// at the same time (the conformance tests check within 10 %). One second
/// stays one second: zero would switch the timer off.
fn ntex_secs(secs: u16) -> Seconds {
    Seconds(if secs > 1 { secs - 1 } else { secs })
}

fn keep_alive() -> KeepAlive {
    if cfg!(feature = "keepalive-os") {
        KeepAlive::Os
    } else {
        KeepAlive::Timeout(ntex_secs(app_core::KEEP_ALIVE_SECS))
    }
}

/// The connection policy `--client-timeout` asks for: the whole request head
/// within the time, however fast it trickles in (the byte rate that would
/// extend ntex's timer is never reached), or 408; 0 = off.
/// Heads up to [`app_core::MAX_HEAD_BYTES`], as actix reads them.
fn service_config(client_timeout: u16) -> HttpServiceConfig {
    let config = HttpServiceConfig::new()
        .set_keepalive(keep_alive())
        .set_max_buf_size(app_core::MAX_HEAD_BYTES);
    if client_timeout == 0 {
        config.set_client_timeout(Seconds::ZERO)
    } else {
        let secs = ntex_secs(client_timeout);
        config.set_headers_read_rate(secs, secs, u32::MAX)
    }
}

/// The listener's configuration: the connection policy, and with
/// `large-io-buffers` the buffers ntex's TechEmpower entries use (read and
/// write: 64 KiB high watermark, 2 KiB low, 128 cached buffers; ntex's
/// defaults are 16 KiB and 536 bytes). With `tls`, the TLS handshake's
/// time limit, actix-web's (ntex-tls's default is 5 s).
fn shared_config(client_timeout: u16) -> SharedCfg {
    let cfg = SharedCfg::new(SERVICE).add(service_config(client_timeout));
    #[cfg(feature = "tls")]
    let cfg = cfg.add(
        ntex::tls::TlsConfig::new()
            .set_handshake_timeout(Seconds(app_core::tls::HANDSHAKE_TIMEOUT_SECS)),
    );
    if cfg!(feature = "large-io-buffers") {
        cfg.add(
            IoConfig::new()
                .set_read_buf(64 * 1024, 2048, 128)
                .set_write_buf(64 * 1024, 2048, 128),
        )
        .into()
    } else {
        cfg.into()
    }
}

/// ntex's h1 control service with one change: the response to a protocol
/// error (400, 408, 431…) or to a service error (a head [`strict`] refuses)
/// says `connection: close`, as actix-web's does, because ntex closes the
/// connection after it anyway.
async fn control<F: Filter, E: ResponseError>(
    msg: h1::Control<F, E>,
) -> Result<h1::ControlAck<F>, std::io::Error> {
    use h1::control::Reason;
    Ok(match msg {
        h1::Control::Disconnect(Reason::ProtocolError(err)) => {
            let mut res = err.err().error_response();
            res.head_mut().set_connection_type(ConnectionType::Close);
            err.fail_with(res)
        }
        h1::Control::Disconnect(Reason::Error(err)) => {
            let mut res = err.get_ref().error_response();
            res.head_mut().set_connection_type(ConnectionType::Close);
            err.fail_with(res)
        }
        // A head [`strict`] refuses gets no `100 Continue` first (actix-http
        // refuses it before it reads `Expect`); failing an expectation
        // answers and closes the connection.
        h1::Control::Expect(msg) => match strict::check(msg.get_ref()) {
            Err(refused) => {
                let mut res = refused.error_response();
                res.head_mut().set_connection_type(ConnectionType::Close);
                msg.fail_with(res)
            }
            Ok(()) => msg.ack(),
        },
        other => other.ack(),
    })
}

/// The HTTP service on one connection, plain TCP or TLS (`F`): the app
/// behind [`strict`]'s checks, with the h1 control service [`control`].
fn http<F: Filter>(
    state: Arc<App>,
) -> impl ServiceFactory<Io<F>, SharedCfg, Response = (), Error = DispatchError, InitError = ()> {
    let app = web::App::new()
        .state(state)
        .service(
            web::resource("/")
                .route(web::get().to(get_count))
                .route(web::post().to(post_count))
                .default_service(web::route().to(method_not_allowed)),
        )
        .default_service(web::route().to(not_found));
    #[cfg(any(feature = "log-stdout", feature = "log-file"))]
    let app = app.middleware(web::middleware::Logger::default());
    let app = apply_fn_factory(app, async |req: Request, app| {
        strict::check(&req).map_err(strict::Failure::Refused)?;
        let close = strict::asks_close(&req);
        let mut res = app.call(req).await?;
        if close {
            res.response_mut()
                .head_mut()
                .set_connection_type(ConnectionType::Close);
        }
        Ok::<_, strict::Failure>(res)
    });
    HttpService::new(app).h1_control(fn_service(control))
}

/// With `--tls-cert` (`tls` builds): rustls's handshake in front of
/// [`http`]; its time limit is in [`shared_config`].
#[cfg(feature = "tls")]
fn https(
    config: Arc<app_core::tls::ServerConfig>,
    state: Arc<App>,
) -> impl ServiceFactory<Io, SharedCfg, Response = (), InitError = ()> {
    use ntex::server::SslError;
    ntex::service::chain_factory(ntex::tls::rustls::TlsAcceptor::new(config))
        .map_err(|e| SslError::Ssl(Box::new(e)))
        .and_then(http(state).map_err(SslError::Service))
}

/// Runs the server until SIGTERM or SIGINT, then stops it gracefully.
///
/// Built on ntex's server builder and `HttpService` rather than
/// `web::HttpServer`, which has no way to set the h1 control service.
pub async fn serve(args: ServerArgs) -> anyhow::Result<()> {
    let (launch, listener) = Launch::prepare(&args)?;
    let state = launch.app.clone();
    let server = ntex::server::build()
        .workers(launch.workers)
        .shutdown_timeout(Seconds(launch.shutdown_timeout))
        .disable_signals();
    #[cfg(feature = "tls")]
    let server = match launch.tls.clone() {
        Some(config) => {
            let config = Arc::new(config);
            server.listen(SERVICE, listener, async move |_| {
                https(config.clone(), state.clone())
            })
        }
        None => server.listen(SERVICE, listener, async move |_| http(state.clone())),
    };
    #[cfg(not(feature = "tls"))]
    let server = server.listen(SERVICE, listener, async move |_| http(state.clone()));
    let server = server
        .context("handing the listener to ntex")?
        .config(SERVICE, shared_config(launch.client_timeout))
        .run();

    let handle = server.clone();
    app_core::shutdown::on_signal(launch.shutdown_timeout, move || {
        // The stop command is sent when `stop` is called; the returned future
        // only waits for completion, which `server.await` below does.
        drop(handle.stop(true));
    })
    .context("installing signal handlers")?;
    launch.announce("ntex-server", FRAMEWORK);
    server.await.context("running ntex")?;
    launch.finish()
}
