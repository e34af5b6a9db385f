//! `ntex-server`: the click counter on ntex. See the crate README.

use std::process::ExitCode;

mod server;
mod strict;

#[cfg(not(any(
    feature = "rt-tokio",
    feature = "rt-neon",
    feature = "rt-uring",
    feature = "rt-compio"
)))]
compile_error!(
    "ntex-server needs a runtime feature: rt-tokio (the default), rt-neon, rt-uring or rt-compio"
);

fn main() -> ExitCode {
    let args = app_core::ServerArgs::parse_or_exit("ntex-server");
    // Before the runtime starts: an io_uring build on a kernel that refuses
    // io_uring says so in one line instead of panicking in every worker.
    if let Err(e) = app_core::runtime::check() {
        eprintln!("ntex-server: error: {e}");
        return ExitCode::FAILURE;
    }
    run(args)
}

#[ntex::main]
async fn run(args: app_core::ServerArgs) -> ExitCode {
    app_core::exit_code("ntex-server", server::serve(args).await)
}
