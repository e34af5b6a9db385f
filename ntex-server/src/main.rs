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

#[cfg(all(
    feature = "ntex-read-once",
    any(feature = "rt-neon", feature = "rt-uring", feature = "rt-compio")
))]
compile_error!("ntex-read-once patches ntex's tokio read path: with rt-tokio only");

// ntex-read-once builds against the patched ntex-net (patches/README.md),
// which the variant builder supplies; the published crate lacks this
// constant, so a plain `cargo build --features ntex-read-once` fails here
// instead of building stock ntex under the patched name.
#[cfg(feature = "ntex-read-once")]
const _: () = assert!(ntex_net::SHOOTOUT_READ_ONCE);
// Likewise ntex-call-nowait and the patched ntex-service.
#[cfg(feature = "ntex-call-nowait")]
const _: () = assert!(ntex_service::SHOOTOUT_CALL_NOWAIT);

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
