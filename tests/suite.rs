//! Every integration test in one test binary (issue 59): cargo runs test
//! binaries one after another, but the tests of one binary side by side
//! (`RUST_TEST_THREADS` in `.cargo/config.toml`), and most of ours wait on
//! emulated boards, brokers and restarts in real time. One binary also links
//! once instead of thirty times. Each module is a file or folder of `tests/` where
//! it always was (a folder's module is its `main.rs` and the files beside it);
//! the helpers in `tests/common/` are built once, here, and each module takes
//! them with `use crate::common;`.
//!
//! `cargo test` runs them all; `cargo test --test suite NAME::` runs one module
//! (`cargo test --test suite faults::`), as `--test NAME` did.

mod common;

#[path = "abuse.rs"]
mod abuse;
#[path = "blitz.rs"]
mod blitz;
#[path = "captures.rs"]
mod captures;
#[path = "classes.rs"]
mod classes;
#[path = "cli.rs"]
mod cli;
#[path = "clock.rs"]
mod clock;
#[path = "completions.rs"]
mod completions;
#[path = "console/main.rs"]
mod console;
#[path = "console_security/main.rs"]
mod console_security;
#[path = "ctl/main.rs"]
mod ctl;
#[path = "daemon/main.rs"]
mod daemon;
#[path = "delay/main.rs"]
mod delay;
#[path = "demo.rs"]
mod demo;
#[path = "emulator.rs"]
mod emulator;
#[path = "event/main.rs"]
mod event;
#[path = "faults/main.rs"]
mod faults;
#[path = "http/main.rs"]
mod http;
#[path = "layers/main.rs"]
mod layers;
#[path = "lichess/main.rs"]
mod lichess;
#[path = "livechess_clients.rs"]
mod livechess_clients;
#[path = "messages.rs"]
mod messages;
#[path = "mqtt/main.rs"]
mod mqtt;
#[path = "packaging.rs"]
mod packaging;
#[path = "policy/main.rs"]
mod policy;
#[path = "polled.rs"]
mod polled;
#[path = "properties.rs"]
mod properties;
#[path = "recordings.rs"]
mod recordings;
#[path = "replay.rs"]
mod replay;
#[path = "scenarios.rs"]
mod scenarios;
#[path = "supervise.rs"]
mod supervise;
#[path = "when_asked.rs"]
mod when_asked;
