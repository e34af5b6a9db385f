//! The server variants and their one builder, shared by the runner
//! (`shootout`) and the black-box tests (`conformance`).

mod build;
mod patched;
mod prebuilt;
pub mod rev;
mod server;
mod tools;
mod variant;

pub use build::{
    target_dir, workspace_root, BuildError, Builder, Profile, UnknownProfile, DEV_SHARED_DEPS,
};
pub use patched::{Patch, PATCHES};
pub use server::Server;
pub use variant::{Libc, Variant, FILE_FLAGS};
