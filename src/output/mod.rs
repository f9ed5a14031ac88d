//! Output formats of `replay` (and later of the daemon).

pub mod replay;
pub mod sensors;
