//! What a debugger gives the core, done without one (the `tokio-async` executable): a
//! live process's threads stopped and their registers (`ptrace`), a core's from its notes
//! (`core_notes`), the files mapped into the program (`modules`), each thread's stack
//! unwound by their call frame information (`unwind`), and its frames as a debugger lists
//! them (`frames`), into the same `ThreadInput`s the debugger glue sends.

pub mod core_notes;
pub mod frames;
pub mod glibc;
pub mod memory_copy;
pub mod modules;
pub mod proc;
pub mod ptrace;
pub mod registers;
pub mod unwind;

use std::path::{Path, PathBuf};

use crate::dwarf::DebugInfo;
use crate::inspect::ThreadInput;
use crate::memory::Memory;
use core_notes::CoreNotes;
use modules::Modules;
use registers::Registers;

/// Auxiliary vector keys: the program's entry point, and where the vDSO is mapped.
pub const AT_ENTRY: u64 = 9;
pub const AT_SYSINFO_EHDR: u64 = 33;

/// The files mapped into live process `pid` on this machine: its mappings, each file
/// opened under the process's own root (a container's files are its own).
pub fn process_modules(
    pid: u32,
    executable: (&Path, u64),
    vdso: Option<u64>,
    memory: &dyn Memory,
) -> Modules {
    let root = PathBuf::from(format!("/proc/{pid}/root"));
    Modules::load(&proc::mappings(pid), Some(&root), executable, vdso, memory)
}

/// The files mapped into the process a core file was written from, as its notes list them.
pub fn core_modules(notes: &CoreNotes, executable: (&Path, u64), memory: &dyn Memory) -> Modules {
    let vdso = notes.auxv_value(AT_SYSINFO_EHDR);
    Modules::load(&notes.mappings, None, executable, vdso, memory)
}

/// One thread as ptrace or a core note gives it.
pub struct NativeThread {
    pub tid: u64,
    pub name: Option<String>,
    pub fs_base: Option<u64>,
    pub registers: Registers,
}

/// The threads as the core's `inspect` takes them: each unwound, its frames named; with
/// what `--verbose` says of the unwinds (`Unwound::notes`), each line naming its thread.
pub fn thread_inputs(
    debug: &DebugInfo,
    load_bias: u64,
    modules: &Modules,
    memory: &dyn Memory,
    threads: Vec<NativeThread>,
) -> (Vec<ThreadInput>, Vec<String>) {
    let mut symbols = frames::Symbols::default();
    let mut unwinder = unwind::Unwinder::new(modules);
    let mut notes = Vec::new();
    let inputs = threads
        .into_iter()
        .map(|thread| {
            let unwound = unwinder.unwind(memory, thread.registers);
            let tid = thread.tid;
            notes.extend(
                unwound
                    .notes()
                    .into_iter()
                    .map(|note| format!("thread {tid}: {note}")),
            );
            ThreadInput {
                tid: thread.tid,
                name: thread.name,
                fs_base: thread.fs_base,
                frames: frames::frames_of(
                    debug,
                    &mut symbols,
                    load_bias,
                    memory,
                    &unwound.frames,
                    unwind::MAX_FRAMES,
                ),
            }
        })
        .collect();
    (inputs, notes)
}
