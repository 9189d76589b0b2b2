//! The pyo3 module the debugger glue imports. Everything crosses as plain strings and
//! integers; no Rust panic and no Rust error reaches Python as an exception.

use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::budget::{Budget, InterruptCheck};
use crate::core_file::CoreFileMemory;
use crate::dwarf::DebugInfo;
use crate::error::{Error, ErrorKind, Result};
use crate::inspect::{all_task_ids, inspect_within, Request};
use crate::memory::{Memory, PageCache, ProcessMemory};
use crate::model::{NodeKind, Report};
use crate::output::{self, Format};
use crate::panics::guarded;
use crate::render::{Style, TextOptions, View};

/// A loaded executable. Loading parses its DWARF once; keep it for the session.
#[pyclass(frozen, module = "tokio_async_glue._core")]
struct Binary {
    debug: Arc<DebugInfo>,
}

#[pymethods]
impl Binary {
    /// The entry point's link-time address.
    #[getter]
    fn entry(&self) -> u64 {
        self.debug.elf.entry
    }

    /// (compilation units indexed so far, units in the binary, bytes of DWARF in those
    /// units, in all): what the walks have read.
    #[getter]
    fn units_read(&self) -> (usize, usize, u64, u64) {
        let ((units, all_units), (bytes, all_bytes)) =
            (self.debug.units_indexed(), self.debug.unit_bytes_indexed());
        (units, all_units, bytes, all_bytes)
    }

    /// Indexes every unit now (the benchmark's measure of a whole index).
    fn index_all(&self, py: Python<'_>) {
        let debug = self.debug.clone();
        py.detach(move || debug.index_all());
    }
}

/// Memory read through a Python callable `read(address, size) -> bytes | None`. An
/// exception it raises is a read error that names it; Ctrl-C (KeyboardInterrupt) also
/// stops the command.
struct PythonMemory<'py> {
    read: Bound<'py, PyAny>,
    interrupted: Rc<Cell<bool>>,
}

impl Memory for PythonMemory<'_> {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let raised = |error: PyErr| {
            if error.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(self.read.py()) {
                self.interrupted.set(true);
                return Error::new(ErrorKind::Interrupted, "interrupted");
            }
            Error::new(
                ErrorKind::Memory,
                format!(
                    "cannot read {} bytes at {address:#x}: the debugger's read raised {error}",
                    buf.len()
                ),
            )
        };
        let result = self.read.call1((address, buf.len())).map_err(raised)?;
        let bytes = result
            .cast::<PyBytes>()
            .map_err(|_| Error::memory(address, buf.len()))?;
        let data = bytes.as_bytes();
        if data.len() != buf.len() {
            return Err(Error::memory(address, buf.len()));
        }
        buf.copy_from_slice(data);
        Ok(())
    }
}

/// `(kind, message)` for an error; `("ok", output)` for success.
type Outcome = (String, String);

fn outcome(result: Result<String>) -> Outcome {
    match result {
        Ok(output) => ("ok".to_string(), output),
        Err(error) => (error.kind.as_str().to_string(), error.message),
    }
}

/// Whether the user asked to stop: Python's pending KeyboardInterrupt (GDB raises it on
/// Ctrl-C), or the debugger's own interrupt check (`interrupted()`, LLDB), which also says
/// so by raising (LLDB delivers Ctrl-C as an exception).
fn user_asks_to_stop(py: Python<'_>, interrupted: Option<&Bound<'_, PyAny>>) -> bool {
    py.check_signals().is_err()
        || interrupted.is_some_and(|check| {
            check
                .call0()
                .map_or(true, |asked| asked.is_truthy().unwrap_or(false))
        })
}

/// How often a wait for the DWARF load looks for Ctrl-C.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// An executable's DWARF being loaded on a thread of its own, so that the work overlaps
/// the debugger's walk of the thread stacks (the two biggest costs of a first call).
#[pyclass(frozen, module = "tokio_async_glue._core")]
struct PendingBinary {
    load: Mutex<Option<Load>>,
}

enum Load {
    Running(JoinHandle<Result<Arc<DebugInfo>>>),
    /// No thread could be started: loaded on the caller's.
    Done(Box<Result<Arc<DebugInfo>>>),
}

#[pymethods]
impl PendingBinary {
    /// Waits for the load: `(binary, None)` or `(None, (kind, message))`. Ctrl-C (or
    /// `interrupted()` turning true) stops the wait, not the load, which a later `wait`
    /// picks up.
    #[pyo3(signature = (interrupted=None))]
    fn wait(
        &self,
        py: Python<'_>,
        interrupted: Option<Bound<'_, PyAny>>,
    ) -> (Option<Py<Binary>>, Option<Outcome>) {
        let load = self.load.lock().ok().and_then(|mut load| load.take());
        let loaded = match load {
            Some(Load::Running(handle)) => {
                while !handle.is_finished() {
                    if user_asks_to_stop(py, interrupted.as_ref()) {
                        if let Ok(mut load) = self.load.lock() {
                            *load = Some(Load::Running(handle));
                        }
                        let message = "interrupted (Ctrl-C) while the program's DWARF loads; it goes on loading for the next command";
                        return (None, Some(("interrupted".into(), message.into())));
                    }
                    py.detach(|| std::thread::sleep(WAIT_POLL));
                }
                handle.join().unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorKind::Internal,
                        "internal error (a bug in tokio-async): the DWARF loader panicked",
                    ))
                })
            }
            Some(Load::Done(loaded)) => *loaded,
            None => Err(Error::new(
                ErrorKind::Internal,
                "internal error (a bug in tokio-async): waited twice for one load",
            )),
        };
        match loaded {
            Ok(debug) => match Py::new(py, Binary { debug }) {
                Ok(binary) => (Some(binary), None),
                Err(error) => (None, Some(("internal".into(), error.to_string()))),
            },
            Err(error) => (None, Some((error.kind.as_str().to_string(), error.message))),
        }
    }
}

/// Starts loading an executable's DWARF, looking for a separate debug file where the
/// debugger found one (`debugger_file`), in `debug_dirs` (the debugger's own setting) and
/// the system's; `wait()` on the result gives the binary.
/// With `only_if_tokio`, a program whose symbols do not name tokio is not loaded (a
/// `not_tokio` outcome): loading ahead of any command must not cost other programs.
/// Loading reads the units tokio's own; with `index_ahead`, a thread then indexes the rest.
#[pyfunction]
#[pyo3(signature = (path, debug_dirs=Vec::new(), only_if_tokio=false, debugger_file=None, index_ahead=true))]
fn start_loading(
    path: String,
    debug_dirs: Vec<String>,
    only_if_tokio: bool,
    debugger_file: Option<String>,
    index_ahead: bool,
) -> PendingBinary {
    let debug_dirs: Vec<PathBuf> = debug_dirs.into_iter().map(PathBuf::from).collect();
    let debugger_file = debugger_file.map(PathBuf::from);
    let load = move |path: PathBuf, debug_dirs: Vec<PathBuf>, debugger_file: Option<PathBuf>| {
        guarded(|| {
            let debug = Arc::new(crate::tokio::load_program(
                &path,
                &debug_dirs,
                debugger_file.as_deref(),
                only_if_tokio,
            )?);
            crate::future::prepare(&debug);
            // With `index_ahead`, the units no command has needed yet are indexed behind the
            // commands, which wait only for the units they touch.
            if index_ahead {
                let background = debug.clone();
                let _ = std::thread::Builder::new()
                    .name("tokio-async-index".into())
                    .spawn(move || {
                        let _ = guarded(|| {
                            background.index_all();
                            Ok(())
                        });
                    });
            }
            Ok(debug)
        })
    };
    let (thread_path, thread_dirs, thread_file) = (
        PathBuf::from(&path),
        debug_dirs.clone(),
        debugger_file.clone(),
    );
    let spawned = std::thread::Builder::new()
        .name("tokio-async-dwarf".into())
        .spawn(move || load(thread_path, thread_dirs, thread_file));
    let load = match spawned {
        Ok(handle) => Load::Running(handle),
        Err(_) => Load::Done(Box::new(load(
            PathBuf::from(path),
            debug_dirs,
            debugger_file,
        ))),
    };
    PendingBinary {
        load: Mutex::new(Some(load)),
    }
}

/// Builds the report. `request_json` is an `inspect::Request`; memory comes from
/// `/proc/PID/mem` when `live_pid` is given and readable, else from the core file at
/// `core_path` when it opens, else from `read_memory` (always, with `debugger_memory`).
/// With `output_path`, the report goes to that file and the output is one line saying so.
/// `presentation_json` is a `Presentation`: which view, and the colours of text output.
/// `interrupted()`, polled every few milliseconds, says whether the user asked to stop
/// (the debugger's own interrupt request); Python's pending KeyboardInterrupt also does.
#[pyfunction]
#[pyo3(signature = (binary, load_bias, request_json, read_memory, live_pid, as_json, full=false, output_path=None, core_path=None, debugger_memory=false, presentation_json="{}", interrupted=None))]
#[allow(clippy::too_many_arguments)]
fn backtrace(
    binary: &Bound<'_, Binary>,
    load_bias: u64,
    request_json: &str,
    read_memory: Bound<'_, PyAny>,
    live_pid: Option<u32>,
    as_json: bool,
    full: bool,
    output_path: Option<PathBuf>,
    core_path: Option<PathBuf>,
    debugger_memory: bool,
    presentation_json: &str,
    interrupted: Option<Bound<'_, PyAny>>,
) -> Outcome {
    let debug = binary.get().debug.clone();
    let py = binary.py();
    let read_interrupted = Rc::new(Cell::new(false));
    let user_interrupt = {
        let read_interrupted = read_interrupted.clone();
        // Also a read through the debugger that was interrupted.
        move || read_interrupted.get() || user_asks_to_stop(py, interrupted.as_ref())
    };
    outcome(guarded(|| {
        let bad_request = |error: serde_json::Error| {
            Error::new(
                ErrorKind::Internal,
                format!("bad request from the glue: {error}"),
            )
        };
        let mut request: Request = serde_json::from_str(request_json).map_err(bad_request)?;
        let presentation: Presentation =
            serde_json::from_str(presentation_json).map_err(bad_request)?;
        request.live_pid = live_pid;
        request.locals = full;
        let check: &InterruptCheck<'_> = &user_interrupt;
        let budget = Budget::new(request.limits, Some(check));
        let memory_read = PythonMemory {
            read: read_memory,
            interrupted: read_interrupted.clone(),
        };
        // A truncated core explains every read that fails: say so first, or with the one error.
        let truncated = core_path
            .as_deref()
            .and_then(crate::core_file::truncation_note);
        let mut report = with_memory(
            live_pid,
            core_path.as_deref(),
            debugger_memory,
            memory_read,
            |memory, source| {
                Ok(Report {
                    memory_source: Some(source),
                    ..inspect_within(&debug, memory, load_bias, &request, &budget)?
                })
            },
        )
        .map_err(|error| match &truncated {
            Some(note) => Error::new(error.kind, format!("{}; {note}", error.message)),
            None => error,
        })?;
        if let Some(note) = truncated {
            report.errors.insert(0, note);
        }
        let format = match as_json {
            true => Format::Json(presentation.view),
            // No colour in a file.
            false => Format::Text(TextOptions {
                locals: full,
                view: presentation.view,
                style: presentation
                    .style
                    .filter(|_| output_path.is_none())
                    .unwrap_or_default(),
            }),
        };
        let output = match &output_path {
            Some(path) => output::to_file(&report, &format, path),
            None => output::to_string(&report, &format),
        };
        drop(report);
        give_back_freed_memory();
        output
    }))
}

/// Returns the heap the report freed to the system. glibc keeps freed memory for reuse
/// otherwise, and the debugger's RSS would stay at a 100,000-task report's peak.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap pages; it is safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs `body` over the inferior's memory: `/proc/PID/mem` when `live_pid` is given and
/// readable, else the core file at `core_path` when it opens, else `read_memory` (always,
/// with `debugger_memory`). `body` is told which (`process`, `core_file`, `debugger`).
fn with_memory<T>(
    live_pid: Option<u32>,
    core_path: Option<&std::path::Path>,
    debugger_memory: bool,
    read_memory: PythonMemory<'_>,
    body: impl FnOnce(&dyn Memory, &'static str) -> Result<T>,
) -> Result<T> {
    let process = live_pid
        .filter(|_| !debugger_memory)
        .and_then(|pid| ProcessMemory::open(pid).ok());
    let core = core_path
        .filter(|_| !debugger_memory && process.is_none())
        .and_then(|path| CoreFileMemory::open(path).ok());
    match (process, core) {
        (Some(process), _) => body(&PageCache::new(process), "process"),
        // Mapped: no page cache needed.
        (None, Some(core)) => body(&core, "core_file"),
        (None, None) => body(&PageCache::new(read_memory), "debugger"),
    }
}

/// Every task id, lowest first, without decoding futures: `("ok", [ids])` or `(kind, message)`.
#[pyfunction]
#[pyo3(signature = (binary, load_bias, request_json, read_memory, live_pid, core_path=None))]
fn task_ids(
    binary: &Bound<'_, Binary>,
    load_bias: u64,
    request_json: &str,
    read_memory: Bound<'_, PyAny>,
    live_pid: Option<u32>,
    core_path: Option<PathBuf>,
) -> (String, Vec<u64>, String) {
    let debug = binary.get().debug.clone();
    let result = guarded(|| {
        let request: Request = serde_json::from_str(request_json).map_err(|error| {
            Error::new(
                ErrorKind::Internal,
                format!("bad request from the glue: {error}"),
            )
        })?;
        let memory_read = PythonMemory {
            read: read_memory,
            interrupted: Rc::default(),
        };
        with_memory(
            live_pid,
            core_path.as_deref(),
            false,
            memory_read,
            |memory, _| all_task_ids(&debug, memory, load_bias, &request),
        )
    });
    match result {
        Ok(ids) => ("ok".into(), ids, String::new()),
        Err(error) => (error.kind.as_str().into(), Vec::new(), error.message),
    }
}

/// The `kind` of every node, as JSON names it (what `--waiting-on` takes).
#[pyfunction]
fn node_kinds() -> Vec<String> {
    NodeKind::ALL
        .iter()
        .filter_map(|kind| {
            serde_json::to_value(kind)
                .ok()?
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

/// How the report is shown, apart from its format.
#[derive(serde::Deserialize)]
struct Presentation {
    #[serde(default)]
    view: View,
    /// Colours for text; none when colour is off.
    #[serde(default)]
    style: Option<Style>,
}

/// The GNU build id of the ELF file at `path`, in hex; None without one or when unreadable.
#[pyfunction]
fn build_id(path: String) -> Option<String> {
    guarded(|| Ok(crate::dwarf::build_id_of(std::path::Path::new(&path))))
        .ok()
        .flatten()
}

/// `[(function prefix, local name)]` of frames that hold a `block_on` future.
#[pyfunction]
fn block_on_frames() -> Vec<(String, String)> {
    crate::block_on::block_on_frames()
        .iter()
        .map(|(f, l)| (f.to_string(), l.to_string()))
        .collect()
}

#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Binary>()?;
    module.add_class::<PendingBinary>()?;
    module.add_function(wrap_pyfunction!(start_loading, module)?)?;
    module.add_function(wrap_pyfunction!(backtrace, module)?)?;
    module.add_function(wrap_pyfunction!(block_on_frames, module)?)?;
    module.add_function(wrap_pyfunction!(task_ids, module)?)?;
    module.add_function(wrap_pyfunction!(node_kinds, module)?)?;
    module.add_function(wrap_pyfunction!(build_id, module)?)?;
    Ok(())
}
