//! Output formats of `replay` (and later of the daemon).

pub mod sensors;
