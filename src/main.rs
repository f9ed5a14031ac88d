use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = eboard_bridge::cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    eboard_bridge::cli::main(cli)
}
