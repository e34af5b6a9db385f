//! `ntex-server`: the click counter on ntex. See the crate README.

use std::process::ExitCode;

mod server;

#[ntex::main]
async fn main() -> ExitCode {
    let args = app_core::ServerArgs::parse_or_exit("ntex-server");
    app_core::exit_code("ntex-server", server::serve(args).await)
}
