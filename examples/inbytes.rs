//! Makes a sensor log from an "inbytes" capture (one base64 line per serial read)
//! and prints it on stdout; the times are rebuilt from the clock
//! (`eboard_bridge::log::import::from_inbytes` says how):
//!
//! ```text
//! cargo run --example inbytes -- tests/data/captures/1.inbytes > tests/data/captures/1.esl
//! ```
//!
//! The log's `source` header field is the capture's file name (without its folder),
//! so the output does not depend on where the command runs.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use eboard_bridge::log::{self, import};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path] = args.as_slice() else {
        eprintln!("usage: cargo run --example inbytes -- CAPTURE.inbytes > LOG.esl");
        return ExitCode::from(2);
    };
    let path = Path::new(path);
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let converted = log::read_text(path, &path.display().to_string())
        .and_then(|text| import::from_inbytes(&text, &name))
        .map_err(|e| e.to_string())
        .and_then(|log| log::to_string(&log.header, &log.records).map_err(|e| e.to_string()));
    match converted {
        Ok(text) => match std::io::stdout().write_all(text.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("inbytes: cannot write the log: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("inbytes: {e}");
            ExitCode::from(2)
        }
    }
}
