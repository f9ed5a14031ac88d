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
//! (`cargo test --test suite faults::`), as `--test NAME` did. The filter is a
//! part of the test's name: `clock::` also runs `daemon::clock::`.
//!
//! A new file `tests/NAME.rs` or folder `tests/NAME/main.rs` is a module here
//! (`Cargo.toml` has `autotests = false`: cargo no longer finds them itself);
//! `every_test_file_is_a_module_of_the_suite` fails until it is.

mod common;
/// The faulty serial line between an emulated board and the daemon, of the fault
/// and event campaigns (`faults`, `event`).
mod relay;

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

/// Every `tests/NAME.rs` and `tests/NAME/main.rs` is a module above: cargo does not
/// make test binaries of them any more, so one left out would never run.
#[test]
fn every_test_file_is_a_module_of_the_suite() {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let suite = std::fs::read_to_string(tests.join("suite.rs")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&tests).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = if path.is_dir() && path.join("main.rs").is_file() {
            format!("#[path = \"{name}/main.rs\"]\nmod {name};")
        } else if name.ends_with(".rs") && name != "suite.rs" {
            format!("#[path = \"{name}\"]\nmod {};", name.trim_end_matches(".rs"))
        } else {
            continue;
        };
        if !suite.contains(&module) {
            missing.push(module);
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "not in tests/suite.rs: {missing:?}");
}
