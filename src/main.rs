use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::prelude::*;

fn main() -> ExitCode {
    let cli = eboard_bridge::cli::Cli::parse();
    let journal = std::env::var_os("JOURNAL_STREAM").is_some();
    let filter = || {
        tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(if journal { "info" } else { "warn" }))
    };
    // Under systemd (stderr connected to the journal), log to the journal with
    // structured fields; elsewhere, to stderr.
    match journal.then(|| tracing_journald::layer().ok()).flatten() {
        Some(layer) => tracing_subscriber::registry()
            .with(layer.with_filter(filter()))
            .init(),
        None => tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(filter())
            .init(),
    }
    eboard_bridge::cli::main(cli)
}
