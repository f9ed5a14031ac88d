//! Serial devices: opening real boards, and the virtual board used for tests and
//! the demo.

pub mod emulator;
pub mod serial;

pub use emulator::{Emulator, EmulatorConfig, EmulatorError};
