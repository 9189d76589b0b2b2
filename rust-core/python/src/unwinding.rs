//! The threads of a stop unwound by the core from the registers the debugger gives
//! (`unwind_threads`), as the `tokio-async` executable unwinds them: GDB's own walk of the
//! stacks expands the symbol table of every function on them (0.55 of the 1.46
//! CPU-seconds `async bt all` took on a core of tokio-app), and the core's DWARF index
//! already names each pc.
//! Where the core cannot open the program's files itself (a remote target, a minidump),
//! the glue sends the debugger's frames instead.

use pyo3::prelude::*;
use serde::Deserialize;

use super::{debugger_memory, raise, with_memory, Binary, Process};
use tokio_async_core::arch::DWARF_REGISTER_COUNT;
use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::error::{Error, ErrorKind, Result};
use tokio_async_core::inspect::ThreadInput;
use tokio_async_core::memory::Memory;
use tokio_async_core::native::core_notes::{auxv_value, CoreNotes};
use tokio_async_core::native::modules::Modules;
use tokio_async_core::native::registers::Registers;
use tokio_async_core::native::{self, proc, thread_inputs, NativeThread, AT_SYSINFO_EHDR};
use tokio_async_core::panics::guarded;

/// One thread as the debugger gives it for the core to unwind: its registers where it
/// stopped, by DWARF number (`register_names().by_dwarf_number`), `None` where unknown.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThreadRegisters {
    tid: u64,
    name: Option<String>,
    fs_base: Option<u64>,
    registers: Vec<Option<u64>>,
}

/// The threads of one stop with their frames, unwound by the core: what `Request` takes
/// in place of a list of the debugger's threads (kept by the glue for the stop).
#[pyclass(frozen, module = "tokio_async_glue._core")]
pub struct UnwoundThreads {
    threads: Vec<ThreadInput>,
    /// What `--verbose` says of the unwinds, each naming its thread.
    notes: Vec<String>,
}

#[pymethods]
impl UnwoundThreads {
    /// Frames found other than by call frame information, and stacks that ended short of
    /// their outermost frame: one line each (`thread TID: ...`).
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

impl UnwoundThreads {
    pub fn threads(&self) -> Vec<ThreadInput> {
        self.threads.clone()
    }
}

/// The threads `threads` (`ThreadRegisters` as dicts) with their stacks unwound in the
/// program's memory. Raises `Error` where the core cannot list the program's mapped files
/// itself (no live process on this machine, no core file it reads).
#[pyfunction]
pub fn unwind_threads(
    binary: &Bound<'_, Binary>,
    process: &Bound<'_, Process>,
    threads: &Bound<'_, PyAny>,
) -> PyResult<UnwoundThreads> {
    let py = binary.py();
    let debug = binary.get().debug.clone();
    let process = process.get();
    let threads: Vec<ThreadRegisters> = pythonize::depythonize(threads).map_err(|error| {
        raise(
            py,
            Error::new(
                ErrorKind::Internal,
                format!("bad threads from the glue: {error}"),
            ),
        )
    })?;
    let result = guarded(|| {
        let threads = threads
            .into_iter()
            .map(native_thread)
            .collect::<Result<Vec<_>>>()?;
        with_memory(process, debugger_memory(py, process), |memory, _| {
            let modules = modules_of(&debug, process, memory)?;
            let (threads, notes) =
                thread_inputs(&debug, process.load_bias, &modules, memory, threads);
            Ok(UnwoundThreads { threads, notes })
        })
    });
    result.map_err(|error| raise(py, error))
}

fn native_thread(thread: ThreadRegisters) -> Result<NativeThread> {
    if thread.registers.len() != DWARF_REGISTER_COUNT {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "thread {}: {} registers from the glue, not {DWARF_REGISTER_COUNT}",
                thread.tid,
                thread.registers.len()
            ),
        ));
    }
    let mut registers = Registers::default();
    for (number, value) in (0u16..).zip(thread.registers) {
        registers.set(number, value);
    }
    Ok(NativeThread {
        tid: thread.tid,
        name: thread.name,
        fs_base: thread.fs_base,
        registers,
    })
}

/// The files mapped into the program, where the core can list them itself: a live process
/// on this machine (`/proc/PID/maps`), a core file (its `NT_FILE` note).
fn modules_of(debug: &DebugInfo, process: &Process, memory: &dyn Memory) -> Result<Modules> {
    let executable = (debug.path.as_path(), process.load_bias);
    if let Some(pid) = process.live_pid {
        let vdso = auxv_value(&proc::auxv(pid)?, AT_SYSINFO_EHDR);
        return Ok(native::process_modules(pid, executable, vdso, memory));
    }
    if let Some(core) = &process.core_path {
        return Ok(native::core_modules(
            &CoreNotes::read(core)?,
            executable,
            memory,
        ));
    }
    Err(Error::new(
        ErrorKind::Binary,
        "the program's mapped files are not readable here (no live process on this machine, no core file)",
    ))
}
