//! tokio-async core: reads tokio's tasks and the state machines of Rust futures out of a
//! stopped process (or core file) using the executable's DWARF, and renders async
//! backtraces.
//!
//! The layers, each using only those before it (CONTRIBUTING.md draws them):
//! - base: `error`, `format`, `names`, `model` (the report's types), `panics`, `arch`,
//!   `threads`;
//! - memory: `memory`, `core_file`, `budget`;
//! - `dwarf`: ELF and DWARF facts, nothing of tokio or x86; `stack` names the debugger's
//!   frames with it;
//! - `value`: typed views of memory through DWARF;
//! - `layouts`: the version table, data only; `std_values` follows it, and `collections`
//!   reads std's containers with it;
//! - `tokio` (the runtime's threads, tasks, queues) and `future` (decoding futures);
//!   `block_on`: the future a thread blocks on;
//! - `links`, `waits`, `groups`, `selection`: what joins tasks, and which are shown;
//!   `history`: snapshots of stops, compared over time;
//! - `inspect`: one command's work, from threads to a report; `stepping`: where the
//!   stepping commands stop to follow one coroutine instance;
//! - `native`: what a debugger gives the core (threads, registers, frames), read without
//!   one, for the `tokio-async` executable;
//! - `render`, `output`: text and JSON; `command`: one report command, request to output;
//! - `top`: the live terminal view; `cli`: the `tokio-async` executable. The boundary
//!   with the debuggers' glue, the pyo3 module, is a crate over this one (`python/`).

pub mod arch;
pub mod block_on;
pub mod budget;
pub mod cli;
pub mod collections;
pub mod command;
pub mod core_file;
pub mod dap;
pub mod dwarf;
pub mod error;
pub mod format;
pub mod future;
pub mod groups;
pub mod history;
pub mod inspect;
pub mod layouts;
pub mod links;
pub mod memory;
pub mod model;
pub mod names;
pub mod native;
pub mod output;
pub mod panics;
pub mod render;
pub mod selection;
pub mod stack;
pub mod stack_view;
pub mod std_values;
pub mod stepping;
pub mod task_decode;
pub mod threads;
pub mod tokio;
pub mod top;
pub mod value;
pub mod waits;

#[cfg(test)]
pub mod testing;
