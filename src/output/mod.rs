//! Output formats of `replay` (and later of the daemon).

pub mod live;
pub mod replay;
pub mod sensors;
