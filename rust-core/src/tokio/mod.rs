//! tokio's runtime as seen from memory: each thread's `CONTEXT`, the runtimes they point
//! to, and each runtime's owned tasks.

pub mod compat;
pub mod context;
pub mod tasks;
pub mod workers;
