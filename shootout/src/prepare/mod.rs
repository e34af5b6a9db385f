//! Prepare: what a file's rows need installed (nginx, iproute2, terminal
//! emulators, toolchains), and the builds of loadgen and every server
//! variant, once each.

pub mod build;
pub mod setup;
