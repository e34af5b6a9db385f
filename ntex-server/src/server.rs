//! ntex glue: routes, the response mapping, and server settings.

use std::sync::Arc;

use anyhow::Context;
use app_core::codec::BodyError;
use app_core::{App, Launch, Reply, ReplyBody, ServerArgs};
use ntex::http::{header, HttpServiceConfig, KeepAlive, StatusCode};
use ntex::time::Seconds;
use ntex::util::Bytes;
use ntex::web::types::{Payload, State};
use ntex::web::{self, HttpRequest, HttpResponse, HttpServer};

/// Framework name and the exact version pinned in Cargo.toml.
pub const FRAMEWORK: &str = "ntex/3.12.3";

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

async fn get_count(app: State<Arc<App>>) -> HttpResponse {
    respond(app.get())
}

async fn post_count(app: State<Arc<App>>, req: HttpRequest, mut payload: Payload) -> HttpResponse {
    if let Err(reply) = app.check_length(content_length(&req)) {
        return respond(reply);
    }
    let mut body = app.body_buf();
    while let Some(chunk) = payload.recv().await {
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

fn keep_alive() -> KeepAlive {
    if cfg!(feature = "keepalive-os") {
        KeepAlive::Os
    } else {
        KeepAlive::Timeout(Seconds(app_core::KEEP_ALIVE_SECS))
    }
}

/// Runs the server until SIGTERM or SIGINT, then stops it gracefully.
pub async fn serve(args: ServerArgs) -> anyhow::Result<()> {
    let (launch, listener) = Launch::prepare(&args)?;
    let state = launch.app.clone();
    #[allow(clippy::let_and_return)]
    let server = HttpServer::new(async move || {
        let app = web::App::new()
            .state(state.clone())
            .service(
                web::resource("/")
                    .route(web::get().to(get_count))
                    .route(web::post().to(post_count))
                    .default_service(web::route().to(method_not_allowed)),
            )
            .default_service(web::route().to(not_found));
        #[cfg(any(feature = "log-stdout", feature = "log-file"))]
        let app = app.middleware(web::middleware::Logger::default());
        app
    })
    .workers(launch.workers)
    .config(
        ntex::SharedCfg::new("ntex-server")
            .add(HttpServiceConfig::new().set_keepalive(keep_alive())),
    )
    .shutdown_timeout(Seconds(app_core::SHUTDOWN_TIMEOUT_SECS))
    .disable_signals()
    .listen(listener)
    .context("handing the listener to ntex")?
    .run();

    let handle = server.clone();
    app_core::shutdown::on_signal(move || {
        // The stop command is sent when `stop` is called; the returned future
        // only waits for completion, which `server.await` below does.
        drop(handle.stop(true));
    })
    .context("installing signal handlers")?;
    launch.announce("ntex-server", FRAMEWORK);
    server.await.context("running ntex")?;
    launch.finish()
}
