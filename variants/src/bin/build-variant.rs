//! `build-variant PROFILE NAME...`: builds each named variant
//! (`ntex-server+ntex-read-once`) with the variant builder, as the runner
//! and the tests do, and prints where its binary is. `scripts/test-variants`
//! builds the patched variants this way (their workspace is the builder's).

use std::process::ExitCode;

use variants::{Builder, Profile, Variant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((profile, names)) = args.split_first() else {
        eprintln!("usage: build-variant release|dev NAME...");
        return ExitCode::from(2);
    };
    let profile: Profile = match profile.parse() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("build-variant: {e}");
            return ExitCode::from(2);
        }
    };
    let builder = Builder::new(profile);
    for name in names {
        let Some(variant) = Variant::from_name(name) else {
            eprintln!(
                "build-variant: {name:?} names no server (actix-server+... or ntex-server+...)"
            );
            return ExitCode::from(2);
        };
        match builder.server(&variant) {
            Ok(path) => println!("{}", path.display()),
            Err(e) => {
                eprintln!("build-variant: {name}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
