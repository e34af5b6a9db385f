//! `actix-server`: the click counter on actix-web. See the crate README.

use std::process::ExitCode;

mod server;

#[cfg(any(feature = "rt-neon", feature = "rt-uring", feature = "rt-compio"))]
compile_error!("actix-web runs on tokio only: rt-neon, rt-uring and rt-compio are ntex's runtimes");

#[cfg(feature = "ntex-read-once")]
compile_error!("ntex-read-once patches ntex's tokio read path: ntex only");
#[cfg(feature = "ntex-call-nowait")]
compile_error!("ntex-call-nowait patches ntex's service calls: ntex only");

#[actix_web::main]
async fn main() -> ExitCode {
    let args = app_core::ServerArgs::parse_or_exit("actix-server");
    app_core::exit_code("actix-server", server::serve(args).await)
}
