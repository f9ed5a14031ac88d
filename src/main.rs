use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::prelude::*;

/// mimalloc, with freed memory returned at once: see `eboard_bridge::memory`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Sets mimalloc's options before the first allocation (a constructor, run
/// before Rust's runtime starts): see `eboard_bridge::memory`.
#[used]
#[unsafe(link_section = ".init_array")]
static LEAN_MEMORY: extern "C" fn() = lean_memory;

extern "C" fn lean_memory() {
    eboard_bridge::memory::return_freed_memory_at_once();
}

fn main() -> ExitCode {
    let cli = eboard_bridge::cli::Cli::parse();
    let journal = std::env::var_os("JOURNAL_STREAM").is_some();
    // The daemon and the recorder say what they do (boards connected or waited
    // for, games, irregularities) at `info`; the demo's terminal view and the
    // one-shot commands only warnings. `RUST_LOG` overrides either.
    let level = match cli.command {
        eboard_bridge::cli::CliCommand::Run { .. } | eboard_bridge::cli::CliCommand::Record { .. } => "info",
        _ => "warn",
    };
    let filter = || {
        tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level))
    };
    // Under systemd (stderr connected to the journal), log to the journal with
    // structured fields; elsewhere, to stderr, coloured only on a terminal.
    match journal.then(|| tracing_journald::layer().ok()).flatten() {
        Some(layer) => tracing_subscriber::registry()
            .with(layer.with_filter(filter()))
            .init(),
        None => tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_env_filter(filter())
            .init(),
    }
    eboard_bridge::cli::main(cli)
}
