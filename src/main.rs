use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Generate the built-in tables (retrograde analysis) into a directory.
    Generate {
        /// Largest number of pieces, kings included (3 or 4).
        #[arg(long, default_value_t = 4)]
        pieces: usize,
        #[arg(long, default_value = "builtin-tables")]
        out: PathBuf,
    },
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    match Cli::parse().command {
        Some(Command::Generate { pieces, out }) => match tbserver::builtin::run_generate(pieces, &out) {
            Ok(_) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                std::process::ExitCode::FAILURE
            }
        },
        None => std::process::ExitCode::SUCCESS,
    }
}
