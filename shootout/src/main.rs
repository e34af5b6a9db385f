//! `shootout`: see the crate README. Parsing and dispatch live in
//! [`shootout::commands`], one file per subcommand.

fn main() -> std::process::ExitCode {
    shootout::commands::main()
}
