//! tokio-async core: reads tokio's tasks and the state machines of Rust futures out of a
//! stopped process (or core file) using the executable's DWARF, and renders async
//! backtraces. Data flows one way: memory + DWARF -> layouts -> tokio runtime walk ->
//! future decoding -> model -> rendering.

pub mod block_on;
pub mod budget;
pub mod core_file;
pub mod dwarf;
pub mod error;
pub mod format;
pub mod future;
pub mod groups;
pub mod inspect;
pub mod links;
pub mod memory;
pub mod model;
pub mod names;
pub mod output;
pub mod panics;
pub mod render;
pub mod selection;
pub mod stack;
pub mod tokio;
pub mod value;
pub mod waits;

#[cfg(feature = "python")]
mod python;
