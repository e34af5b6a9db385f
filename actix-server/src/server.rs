//! actix-web glue: routes, the response mapping, and server settings.

use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{App as ActixApp, HttpRequest, HttpResponse, HttpServer};
use anyhow::Context;
use app_core::codec::BodyError;
use app_core::{App, Launch, Reply, ReplyBody, ServerArgs};
use futures_util::StreamExt;

/// `large-io-buffers`: the HTTP/1 write buffer, actix-web's only buffer
/// setting, as large as ntex-server's buffers with the feature.
const LARGE_BUFFER: usize = 64 * 1024;

/// Framework name and the exact version pinned in Cargo.toml.
pub const FRAMEWORK: &str = "actix-web/4.18.1";

fn respond(reply: Reply) -> HttpResponse {
    let status = StatusCode::from_u16(reply.status).expect("app-core only uses valid statuses");
    let mut res = HttpResponse::build(status);
    res.insert_header((header::CONTENT_TYPE, reply.content_type));
    if let Some(allow) = reply.allow {
        res.insert_header((header::ALLOW, allow));
    }
    match reply.body {
        ReplyBody::Static(bytes) => res.body(Bytes::from_static(bytes)),
        // `bytes::Bytes` has no inline storage: this is the one copy to the
        // heap actix-web's body types force on the no-alloc path.
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

async fn get_count(app: web::Data<App>) -> HttpResponse {
    respond(app.get())
}

async fn post_count(
    app: web::Data<App>,
    req: HttpRequest,
    mut payload: web::Payload,
) -> HttpResponse {
    if let Err(reply) = app.check_length(content_length(&req)) {
        return respond(reply);
    }
    let mut body = app.body_buf();
    while let Some(chunk) = payload.next().await {
        let pushed = match chunk {
            Ok(bytes) => body.push(&bytes),
            Err(_) => Err(BodyError::Unreadable),
        };
        if let Err(err) = pushed {
            return respond(Reply::body_error(err));
        }
    }
    respond(app.post(&body))
}

async fn method_not_allowed() -> HttpResponse {
    respond(Reply::method_not_allowed())
}

async fn not_found() -> HttpResponse {
    respond(Reply::not_found())
}

fn keep_alive() -> actix_web::http::KeepAlive {
    if cfg!(feature = "keepalive-os") {
        actix_web::http::KeepAlive::Os
    } else {
        Duration::from_secs(app_core::KEEP_ALIVE_SECS.into()).into()
    }
}

/// Runs the server until SIGTERM or SIGINT, then stops it gracefully.
pub async fn serve(args: ServerArgs) -> anyhow::Result<()> {
    let (launch, listener) = Launch::prepare(&args)?;
    let data = web::Data::from(launch.app.clone());
    #[allow(clippy::let_and_return)]
    let server = HttpServer::new(move || {
        let app = ActixApp::new()
            .app_data(data.clone())
            .service(
                web::resource("/")
                    .route(web::get().to(get_count))
                    .route(web::post().to(post_count))
                    .default_service(web::to(method_not_allowed)),
            )
            .default_service(web::to(not_found));
        #[cfg(any(feature = "log-stdout", feature = "log-file"))]
        let app = app.wrap(actix_web::middleware::Logger::default());
        app
    })
    .workers(launch.workers)
    .keep_alive(keep_alive())
    // 0 switches it off, as in ntex-server.
    .client_request_timeout(Duration::from_secs(launch.client_timeout.into()))
    .h1_write_buffer_size(if cfg!(feature = "large-io-buffers") {
        LARGE_BUFFER
    } else {
        // actix-web's default.
        32 * 1024
    })
    .shutdown_timeout(launch.shutdown_timeout.into())
    .disable_signals();
    #[cfg(feature = "tls")]
    let server = match launch.tls.clone() {
        Some(mut config) => {
            // actix-http puts `http/1.1` first in the ALPN list itself (and
            // `h2` with actix-web's http2 feature, which is off here).
            config.alpn_protocols.clear();
            let handshake = Duration::from_secs(app_core::tls::HANDSHAKE_TIMEOUT_SECS.into());
            server
                .tls_handshake_timeout(handshake)
                .listen_rustls_0_23(listener, config)
        }
        None => server.listen(listener),
    };
    #[cfg(not(feature = "tls"))]
    let server = server.listen(listener);
    let server = server.context("handing the listener to actix-web")?.run();

    let handle = server.handle();
    app_core::shutdown::on_signal(launch.shutdown_timeout, move || {
        // The stop command is sent when `stop` is called; the returned future
        // only waits for completion, which `server.await` below does.
        drop(handle.stop(true));
    })
    .context("installing signal handlers")?;
    launch.announce("actix-server", FRAMEWORK);
    server.await.context("running actix-web")?;
    launch.finish()
}
