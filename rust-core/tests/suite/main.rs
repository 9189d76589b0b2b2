//! The integration tests, one module per concern, in one test binary: one link and one
//! copy of the crate's generic code for all of them, where a binary each cost thirteen.
//! (`tests/panic_hook.rs` stays a binary of its own: it installs the process's panic hook.)

#[path = "../common/mod.rs"]
mod common;
#[path = "../fuzzing/mod.rs"]
mod fuzzing;

mod corrupt_memory;
mod debug_files;
mod dwarf_layouts;
mod frame_locals;
mod future_decoding;
mod fuzz_corpus;
mod history;
mod lazy_dwarf;
mod left_out_tasks;
mod recorded_reports;
mod stepping_plans;
mod two_threads;
