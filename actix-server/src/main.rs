//! `actix-server`: the click counter on actix-web. See the crate README.

use std::process::ExitCode;

mod server;

#[actix_web::main]
async fn main() -> ExitCode {
    let args = app_core::ServerArgs::parse_or_exit("actix-server");
    app_core::exit_code("actix-server", server::serve(args).await)
}
