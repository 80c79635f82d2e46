//! `fixture-game`: see the library docs for the subcommands and the world layout.

fn main() -> std::process::ExitCode {
    fixture_game::cli::main()
}
