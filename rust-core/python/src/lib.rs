//! The pyo3 module the debugger glue imports. What crosses is typed: a user's command is
//! parsed here (`parse_command`) into a `Request` (`Request.of_command`), the glue's own
//! requests name only the stop's threads and whether every task is wanted (a thread with
//! a field the core does not know is an error), the stopped program is a `Process`, and a
//! failure an `Error` exception whose `kind` says what went wrong (`no_debuginfo`,
//! `not_tokio`, `memory`, `usage`, `interrupted`, ...). No Rust panic reaches Python: it
//! becomes an `Error` of kind `internal`.

use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use tokio_async_core::arch;
use tokio_async_core::budget::InterruptCheck;
use tokio_async_core::command::{Command, Prepared, Stop, HOW_TO_DIFF_IN_A_DEBUGGER};
use tokio_async_core::core_file::CoreFileMemory;
use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::error::{Error, ErrorKind, Result};
use tokio_async_core::inspect::{self, all_task_ids};
use tokio_async_core::memory::{Memory, PageCache, ProcessMemory, StoppedProcess};
use tokio_async_core::model::{ClockSource, NodeKind, Report, StackSource};
use tokio_async_core::native::glibc;
use tokio_async_core::panics::guarded;
use tokio_async_core::selection::TaskFilter;

mod frames;
mod sampling;
mod stepping;
mod unwinding;

create_exception!(
    _core,
    CoreError,
    PyException,
    "A command failed: `str(error)` is the one line to show, `error.kind` what kind of failure."
);

/// The Python exception for a core error, with its kind.
fn raise(py: Python<'_>, error: Error) -> PyErr {
    let exception = CoreError::new_err(error.message());
    // A fresh exception instance takes attributes.
    let _ = exception.value(py).setattr("kind", error.kind.as_str());
    exception
}

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

/// What a command asks.
type RequestFields = Command;

/// One command: a user's (`Request.of_command`), or the glue's own (`Request(threads)`).
#[pyclass(frozen, module = "tokio_async_glue._core")]
struct Request {
    fields: Mutex<Option<RequestFields>>,
}

#[pymethods]
impl Request {
    /// The glue's own request at a stop with these threads: with `all`, of every task
    /// (completion's task ids, a sample), else of the tasks running now (a frame's stack).
    #[new]
    #[pyo3(signature = (threads, *, all=false))]
    fn new(py: Python<'_>, threads: &Bound<'_, PyAny>, all: bool) -> PyResult<Request> {
        let (threads, stack_source) = threads_of(py, threads)?;
        Ok(Request {
            fields: Mutex::new(Some(Command {
                threads,
                stack_source,
                all,
                ..Command::default()
            })),
        })
    }

    /// The request of a parsed command (`parse_command`), at a stop with these threads
    /// (as `Request(threads)` takes them) and colours for text (none: plain).
    #[staticmethod]
    #[pyo3(signature = (parsed, threads, style=None))]
    fn of_command(
        py: Python<'_>,
        parsed: &ParsedCommand,
        threads: &Bound<'_, PyAny>,
        style: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Request> {
        let bad = |error| bad_request(py, error);
        let (threads, stack_source) = threads_of(py, threads)?;
        let style = style.map(pythonize::depythonize).transpose().map_err(bad)?;
        let command = parsed
            .command
            .lock()
            .ok()
            .and_then(|mut command| command.take())
            .ok_or_else(used_twice)?;
        Ok(Request {
            fields: Mutex::new(Some(Command {
                threads,
                stack_source,
                style,
                ..command
            })),
        })
    }
}

/// The threads of a request: unwound by the core (`unwind_threads`), or the debugger's
/// (a list of dicts, each frame as the debugger walked it).
fn threads_of(
    py: Python<'_>,
    threads: &Bound<'_, PyAny>,
) -> PyResult<(Vec<inspect::ThreadInput>, Option<StackSource>)> {
    match threads.cast::<unwinding::UnwoundThreads>() {
        Ok(unwound) => Ok((unwound.get().threads(), Some(StackSource::Core))),
        Err(_) => pythonize::depythonize(threads)
            .map(|threads| (threads, Some(StackSource::Debugger)))
            .map_err(|error| bad_request(py, error)),
    }
}

/// A request the glue made with a field the core does not take, or of the wrong type.
fn bad_request(py: Python<'_>, error: pythonize::PythonizeError) -> PyErr {
    raise(
        py,
        Error::new(
            ErrorKind::Internal,
            format!("bad request from the glue: {error}"),
        ),
    )
}

impl Request {
    /// The request's fields; a request is used once.
    fn take(&self) -> Result<RequestFields> {
        self.fields
            .lock()
            .ok()
            .and_then(|mut fields| fields.take())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Internal,
                    "internal error (a bug in tokio-async): a request used twice",
                )
            })
    }
}

/// The stopped program as the debugger reaches it: where the executable was loaded, a
/// callable `read_memory(address, size) -> bytes | None`, the pid when it is a live process
/// on this machine, the core file when it is one, and `interrupted()`, the debugger's own
/// interrupt check, polled every few milliseconds.
#[pyclass(frozen, module = "tokio_async_glue._core")]
struct Process {
    load_bias: u64,
    read_memory: Py<PyAny>,
    live_pid: Option<u32>,
    core_path: Option<PathBuf>,
    /// Read everything through the debugger (to compare memory backends, or rule one out).
    read_through_debugger: bool,
    interrupted: Option<Py<PyAny>>,
    /// When the debugger saw the program stop: (Unix seconds, CLOCK_MONOTONIC seconds,
    /// what saw it).
    stop_clock: Option<(f64, f64, ClockSource)>,
    /// What names the target among others (`pid 1234`, `core /tmp/core`): the snapshots of
    /// its stops are kept under it (`history::store`).
    target: Option<String>,
    /// The debugger's stop key, which changes when the memory may have: a second command
    /// with the same takes the stop's snapshot the first kept.
    memory_key: Option<String>,
}

#[pymethods]
impl Process {
    #[new]
    #[pyo3(signature = (*, load_bias, read_memory, live_pid=None, core_path=None, read_through_debugger=false, interrupted=None, stop_clock=None, target=None, memory_key=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        load_bias: u64,
        read_memory: Py<PyAny>,
        live_pid: Option<u32>,
        core_path: Option<PathBuf>,
        read_through_debugger: bool,
        interrupted: Option<Py<PyAny>>,
        stop_clock: Option<(f64, f64, String)>,
        target: Option<String>,
        memory_key: Option<String>,
    ) -> PyResult<Process> {
        let stop_clock = stop_clock
            .map(|(unix_secs, monotonic, source)| {
                Ok((unix_secs, monotonic, debugger_clock_source(&source)?))
            })
            .transpose()
            .map_err(|error| raise(py, error))?;
        Ok(Process {
            load_bias,
            read_memory,
            live_pid,
            core_path,
            read_through_debugger,
            interrupted,
            stop_clock,
            target,
            memory_key,
        })
    }
}

/// What saw a debugger's stop, as the glue names it (`adapter.stop_clock`): a stop event,
/// or the first command at a stop whose event was not seen.
fn debugger_clock_source(name: &str) -> Result<ClockSource> {
    match name {
        "stop_event" => Ok(ClockSource::StopEvent),
        "first_command" => Ok(ClockSource::FirstCommand),
        _ => Err(Error::new(
            ErrorKind::Internal,
            format!("a stop clock's source is stop_event or first_command, not {name:?}"),
        )),
    }
}

impl Process {
    /// The stop as the core's commands take it.
    fn stop(&self) -> Stop {
        Stop {
            load_bias: self.load_bias,
            live_pid: self.live_pid,
            core_path: self.core_path.clone(),
            stop_clock: self.stop_clock,
            target: self.target.clone(),
            memory_key: self.memory_key.clone(),
            how_to_diff: HOW_TO_DIFF_IN_A_DEBUGGER,
        }
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
    /// Waits for the load and gives the binary, or raises `Error`. Ctrl-C (or
    /// `interrupted()` turning true) stops the wait, not the load (an `Error` of kind
    /// `interrupted`), which a later `wait` picks up.
    #[pyo3(signature = (interrupted=None))]
    fn wait(&self, py: Python<'_>, interrupted: Option<Bound<'_, PyAny>>) -> PyResult<Py<Binary>> {
        let load = self.load.lock().ok().and_then(|mut load| load.take());
        let loaded = match load {
            Some(Load::Running(handle)) => {
                while !handle.is_finished() {
                    if user_asks_to_stop(py, interrupted.as_ref()) {
                        if let Ok(mut load) = self.load.lock() {
                            *load = Some(Load::Running(handle));
                        }
                        let message = "interrupted (Ctrl-C) while the program's DWARF loads; it goes on loading for the next command";
                        return Err(raise(py, Error::new(ErrorKind::Interrupted, message)));
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
        let debug = loaded.map_err(|error| raise(py, error))?;
        Py::new(py, Binary { debug })
    }
}

/// How long after a load the rest of its units start being indexed ahead of the commands.
/// A script's first command (`gdb -batch -ex 'async bt all'`) comes sooner and runs
/// without that thread taking a core from it, and a session that ends sooner never pays
/// for it (0.07 of the 0.54 CPU-seconds of such a session on tokio-app); a person's first
/// command comes later, when the index is done.
const INDEX_AHEAD_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Starts loading an executable's DWARF, looking for a separate debug file where the
/// debugger found one (`debugger_file`), in `debug_dirs` (the debugger's own setting) and
/// the system's; `wait()` on the result gives the binary.
/// With `only_if_tokio`, a program whose symbols do not name tokio is not loaded (an
/// `Error` of kind `not_tokio`): loading ahead of any command must not cost other programs.
/// Loading reads the units tokio's own; with `index_ahead`, a thread then indexes the rest.
#[pyfunction]
#[pyo3(signature = (path, *, debug_dirs=Vec::new(), only_if_tokio=false, debugger_file=None, index_ahead=true))]
fn start_loading(
    path: PathBuf,
    debug_dirs: Vec<PathBuf>,
    only_if_tokio: bool,
    debugger_file: Option<PathBuf>,
    index_ahead: bool,
) -> PendingBinary {
    let load = move |path: PathBuf, debug_dirs: Vec<PathBuf>, debugger_file: Option<PathBuf>| {
        guarded(|| {
            let debug = Arc::new(tokio_async_core::tokio::load_program(
                &path,
                &debug_dirs,
                debugger_file.as_deref(),
                only_if_tokio,
            )?);
            tokio_async_core::future::prepare(&debug);
            // With `index_ahead`, the units no command has needed yet are indexed behind the
            // commands, which wait only for the units they touch; from a little after the
            // load (`INDEX_AHEAD_AFTER`).
            if index_ahead {
                let background = debug.clone();
                let _ = std::thread::Builder::new()
                    .name("tokio-async-index".into())
                    .spawn(move || {
                        tokio_async_core::threads::block_signals();
                        std::thread::sleep(INDEX_AHEAD_AFTER);
                        let _ = guarded(|| {
                            background.index_all();
                            tokio_async_core::tokio::statics::prepare(&background);
                            Ok(())
                        });
                    });
            }
            Ok(debug)
        })
    };
    let (thread_path, thread_dirs, thread_file) =
        (path.clone(), debug_dirs.clone(), debugger_file.clone());
    let spawned = std::thread::Builder::new()
        .name("tokio-async-dwarf".into())
        .spawn(move || {
            tokio_async_core::threads::block_signals();
            load(thread_path, thread_dirs, thread_file)
        });
    let load = match spawned {
        Ok(handle) => Load::Running(handle),
        Err(_) => Load::Done(Box::new(load(path, debug_dirs, debugger_file))),
    };
    PendingBinary {
        load: Mutex::new(Some(load)),
    }
}

/// The report a command asks for, as text or JSON (or the one line saying where it was
/// written, with `output`). Raises `Error`.
#[pyfunction]
fn backtrace(
    binary: &Bound<'_, Binary>,
    process: &Bound<'_, Process>,
    request: &Bound<'_, Request>,
) -> PyResult<String> {
    let py = binary.py();
    let debug = binary.get().debug.clone();
    let process = process.get();
    let read_interrupted = Rc::new(Cell::new(false));
    let interrupted = process
        .interrupted
        .as_ref()
        .map(|check| check.bind(py).clone());
    let user_interrupt = {
        let read_interrupted = read_interrupted.clone();
        // Also a read through the debugger that was interrupted.
        move || read_interrupted.get() || user_asks_to_stop(py, interrupted.as_ref())
    };
    wait_for_freeing();
    let result = guarded(|| {
        let stop = process.stop();
        let prepared = Prepared::new(&debug, &stop, request.get().take()?)?;
        let memory_read = PythonMemory {
            read: process.read_memory.bind(py).clone(),
            interrupted: read_interrupted.clone(),
        };
        let check: &InterruptCheck<'_> = &user_interrupt;
        let inspection = with_memory(process, memory_read, |memory, source| {
            prepared.read(&debug, process.load_bias, memory, source, Some(check))
        })?;
        let (output, report) = prepared.write_keeping(inspection)?;
        free_later(report);
        Ok(output)
    });
    result.map_err(|error| raise(py, error))
}

/// The last command's report, being freed by a thread of its own (`free_later`).
static FREEING: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

/// Frees `report` on a thread of its own, then gives the heap back: a 100,000-task report
/// takes a tenth of a second to free, which the command's output need not wait for. The
/// next command waits for it first (`wait_for_freeing`): two reports are never held at once.
fn free_later(report: Report) {
    let spawned = std::thread::Builder::new()
        .name("tokio-async-free".into())
        .spawn(move || {
            tokio_async_core::threads::block_signals();
            drop(report);
            give_back_freed_memory();
        });
    match spawned {
        Ok(thread) => {
            if let Ok(mut slot) = FREEING.lock() {
                *slot = Some(thread);
            }
        }
        // Refused: the thread's closure, and the report, were dropped here.
        Err(_) => give_back_freed_memory(),
    }
}

/// Waits until the last command's report is freed (`free_later`).
fn wait_for_freeing() {
    let thread = FREEING.lock().ok().and_then(|mut slot| slot.take());
    if let Some(thread) = thread {
        // A panic while freeing leaves nothing to do.
        let _ = thread.join();
    }
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

/// Runs `body` over the inferior's memory: `/proc/PID/mem` when the process is live here
/// and that is readable, else the core file when it opens, else the debugger's reads
/// (always, with `read_through_debugger`). `body` is told which (`process`, `core_file`,
/// `debugger`).
fn with_memory<T>(
    process: &Process,
    read_memory: PythonMemory<'_>,
    body: impl FnOnce(&dyn Memory, &'static str) -> Result<T>,
) -> Result<T> {
    let direct = !process.read_through_debugger;
    let live = process
        .live_pid
        .filter(|_| direct)
        .and_then(|pid| ProcessMemory::open(pid).ok());
    let core = process
        .core_path
        .as_deref()
        .filter(|_| direct && live.is_none())
        .and_then(|path| CoreFileMemory::open(path).ok());
    match (live, core) {
        (Some(live), _) => body(&StoppedProcess(PageCache::new(live)), "process"),
        // Mapped: no page cache needed.
        (None, Some(core)) => body(&core, "core_file"),
        (None, None) => body(&PageCache::new(read_memory), "debugger"),
    }
}

/// Every task id, lowest first, without decoding futures (what completing `async task
/// <TAB>` offers). Raises `Error`.
#[pyfunction]
fn task_ids(
    binary: &Bound<'_, Binary>,
    process: &Bound<'_, Process>,
    request: &Bound<'_, Request>,
) -> PyResult<Vec<u64>> {
    let py = binary.py();
    let debug = binary.get().debug.clone();
    let process = process.get();
    let result = guarded(|| {
        let inspect_request = reading_request(request.get(), process, true, TaskFilter::default())?;
        with_memory(process, debugger_memory(py, process), |memory, _| {
            all_task_ids(&debug, memory, process.load_bias, &inspect_request)
        })
    });
    result.map_err(|error| raise(py, error))
}

/// A request that reads the program without rendering it: no locals, groups or wait edges.
fn reading_request(
    request: &Request,
    process: &Process,
    all: bool,
    filter: TaskFilter,
) -> Result<inspect::Request> {
    let fields = request.take()?;
    Ok(inspect::Request {
        threads: fields.threads,
        all,
        live_pid: process.live_pid,
        locals: false,
        filter,
        group: false,
        only_groups: false,
        wait_edges: false,
        limits: fields.limits,
        clock: process.stop().clock(),
        previous: None,
        this_stop: None,
        snapshot: true,
    })
}

/// The debugger's memory reads, for commands that take no Ctrl-C of their own.
fn debugger_memory<'py>(py: Python<'py>, process: &Process) -> PythonMemory<'py> {
    PythonMemory {
        read: process.read_memory.bind(py).clone(),
        interrupted: Rc::default(),
    }
}

/// One command's words as the core's parser read them (`parse_command`): kept whole for
/// `Request.of_command`, so that no field crosses the boundary by name. The glue reads
/// what it decides on (`json`, `output`); `filter` is for its tests.
#[pyclass(frozen, module = "tokio_async_glue._core")]
struct ParsedCommand {
    command: Mutex<Option<Command>>,
}

impl ParsedCommand {
    fn read<T>(&self, read: impl FnOnce(&Command) -> T) -> PyResult<T> {
        let command = self.command.lock().map_err(|_| used_twice())?;
        command.as_ref().map(read).ok_or_else(used_twice)
    }
}

fn used_twice() -> PyErr {
    CoreError::new_err("internal error (a bug in tokio-async): a parsed command used twice")
}

#[pymethods]
impl ParsedCommand {
    /// JSON rather than text.
    #[getter]
    fn json(&self) -> PyResult<bool> {
        self.read(|command| command.json)
    }

    /// `--verbose`: how the stacks were unwound, said before the report.
    #[getter]
    fn verbose(&self) -> PyResult<bool> {
        self.read(|command| command.verbose)
    }

    /// The file `--output` names, made absolute.
    #[getter]
    fn output(&self) -> PyResult<Option<String>> {
        self.read(|command| {
            command
                .output
                .as_ref()
                .map(|path| path.display().to_string())
        })
    }

    /// The task selection, with the criteria given (as the JSON of the core's filter).
    #[getter]
    fn filter<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let filter = self.read(|command| command.filter.clone())?;
        pythonize::pythonize(py, &filter).map_err(|error| CoreError::new_err(error.to_string()))
    }
}

/// One command's words (`async tasks --limit 10`, split as a shell does) read by the core's
/// parser, the executable's too. Raises `Error` of kind `usage` with the one line to show.
#[pyfunction]
fn parse_command(py: Python<'_>, command: &str, words: Vec<String>) -> PyResult<ParsedCommand> {
    let view = tokio_async_core::command::arguments::view_named(command).ok_or_else(|| {
        raise(
            py,
            Error::new(ErrorKind::Internal, format!("no command {command:?}")),
        )
    })?;
    let parsed = tokio_async_core::command::arguments::parse(view, &words, "async ")
        .map_err(|error| raise(py, error))?;
    Ok(ParsedCommand {
        command: Mutex::new(Some(parsed)),
    })
}

/// `{tid: thread pointer}` from glibc's own thread list (`native::glibc`), for debuggers
/// that give no `fs_base`: `symbol_address(name) -> int | None`, `read_static(address,
/// size) -> bytes | None` (constant data, from the library file where a core lacks it),
/// `read_memory(address, size) -> bytes | None`. Raises `Error` with the one line.
#[pyfunction]
fn glibc_thread_pointers(
    py: Python<'_>,
    symbol_address: Bound<'_, PyAny>,
    read_static: Bound<'_, PyAny>,
    read_memory: Bound<'_, PyAny>,
) -> PyResult<std::collections::HashMap<u64, u64>> {
    let symbol = |name: &str| {
        symbol_address
            .call1((name,))
            .ok()
            .and_then(|found| found.extract::<Option<u64>>().ok().flatten())
    };
    let read = |address: u64, size: usize| {
        read_static
            .call1((address, size))
            .ok()
            .and_then(|data| data.extract::<Option<Vec<u8>>>().ok().flatten())
    };
    let memory = PythonMemory {
        read: read_memory,
        interrupted: Rc::default(),
    };
    let library = glibc::Glibc {
        symbol_address: &symbol,
        read_static: &read,
    };
    guarded(|| glibc::thread_pointers_of(&library, &memory))
        .map(|pointers| pointers.into_iter().collect())
        .map_err(|error| raise(py, error))
}

/// Whether `value` can be a thread pointer (`%fs:0` holds it) in the memory
/// `read_memory(address, size) -> bytes | None` reads.
#[pyfunction]
fn is_thread_pointer(value: u64, read_memory: Bound<'_, PyAny>) -> bool {
    let memory = PythonMemory {
        read: read_memory,
        interrupted: Rc::default(),
    };
    guarded(|| Ok(glibc::is_thread_pointer(value, &memory))).unwrap_or(false)
}

/// One `async` command as the debuggers' help and completion show it (`command_table`).
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
struct CommandHelp {
    name: &'static str,
    /// `report` (commands.py runs it), `stepping` (stepping.py) or `sample` (sampling.py).
    runs_in: &'static str,
    usage: String,
    help: String,
    /// Its words besides flags (`all`, `full`).
    words: Vec<&'static str>,
    flags: Vec<FlagHelp>,
}

/// One flag of a command: its names, its value's name (None: a switch), its help, and the
/// values it may take where those are fixed.
#[derive(Clone)]
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
struct FlagHelp {
    long: &'static str,
    short: &'static str,
    value: Option<&'static str>,
    help: &'static str,
    choices: Vec<&'static str>,
}

/// Every `async` command, from the core's parser: the glue's help, completion and LLDB's
/// parsed options are made from it.
#[pyfunction]
fn command_table() -> Vec<CommandHelp> {
    use tokio_async_core::command::{arguments, run_arguments};
    let report = arguments::REPORT_COMMANDS
        .iter()
        .map(|&(name, view)| CommandHelp {
            name,
            runs_in: "report",
            usage: arguments::usage(view, "async "),
            help: arguments::help(view),
            words: arguments::words_of(view).to_vec(),
            flags: arguments::flag_help(view)
                .into_iter()
                .map(|flag| FlagHelp {
                    long: flag.long,
                    short: flag.short,
                    value: flag.value,
                    help: flag.help,
                    choices: flag.choices,
                })
                .collect(),
        });
    let stepping = run_arguments::STEPPING_COMMANDS
        .iter()
        .map(|&(name, usage, help)| CommandHelp {
            name,
            runs_in: "stepping",
            usage: usage.into(),
            help: help.into(),
            words: Vec::new(),
            flags: Vec::new(),
        });
    let sample = CommandHelp {
        name: "sample",
        runs_in: "sample",
        usage: run_arguments::SAMPLE_USAGE.into(),
        help: run_arguments::SAMPLE_HELP.into(),
        words: Vec::new(),
        flags: Vec::new(),
    };
    report.chain(stepping).chain([sample]).collect()
}

/// The `kind` of every node, as JSON names it (what `--waiting-on` takes).
#[pyfunction]
fn node_kinds() -> Vec<&'static str> {
    NodeKind::ALL.iter().map(|kind| kind.name()).collect()
}

/// The GNU build id of the ELF file at `path`, in hex; None without one or when unreadable.
#[pyfunction]
fn build_id(path: PathBuf) -> Option<String> {
    guarded(|| Ok(tokio_async_core::dwarf::build_id_of(&path)))
        .ok()
        .flatten()
}

/// How the debuggers name the registers the glue reads (the architecture's, `arch`).
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
struct RegisterNames {
    /// The general registers, which may hold a coroutine's address at a stepping stop.
    general: Vec<&'static str>,
    /// Every register the unwind starts from, by DWARF number (`unwind_threads`).
    by_dwarf_number: Vec<&'static str>,
    frame_pointer: &'static str,
    thread_pointer: &'static str,
}

#[pyfunction]
fn register_names() -> RegisterNames {
    RegisterNames {
        general: arch::general_register_names().to_vec(),
        by_dwarf_number: arch::DWARF_REGISTER_NAMES.to_vec(),
        frame_pointer: arch::FRAME_POINTER_NAME,
        thread_pointer: arch::THREAD_POINTER_NAME,
    }
}

/// `[(function prefix, local name)]` of frames that hold a `block_on` future.
#[pyfunction]
fn block_on_frames() -> Vec<(&'static str, &'static str)> {
    tokio_async_core::block_on::block_on_frames().to_vec()
}

#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Binary>()?;
    module.add_class::<PendingBinary>()?;
    module.add_class::<Request>()?;
    module.add_class::<ParsedCommand>()?;
    module.add_class::<Process>()?;
    module.add_class::<unwinding::UnwoundThreads>()?;
    module.add_function(wrap_pyfunction!(unwinding::unwind_threads, module)?)?;
    module.add("Error", module.py().get_type::<CoreError>())?;
    module.add_function(wrap_pyfunction!(start_loading, module)?)?;
    module.add_function(wrap_pyfunction!(backtrace, module)?)?;
    module.add_function(wrap_pyfunction!(block_on_frames, module)?)?;
    module.add_function(wrap_pyfunction!(task_ids, module)?)?;
    module.add_function(wrap_pyfunction!(node_kinds, module)?)?;
    module.add_function(wrap_pyfunction!(parse_command, module)?)?;
    module.add_class::<CommandHelp>()?;
    module.add_class::<FlagHelp>()?;
    module.add_function(wrap_pyfunction!(command_table, module)?)?;
    module.add_function(wrap_pyfunction!(glibc_thread_pointers, module)?)?;
    module.add_function(wrap_pyfunction!(is_thread_pointer, module)?)?;
    module.add_function(wrap_pyfunction!(build_id, module)?)?;
    module.add_class::<RegisterNames>()?;
    module.add_function(wrap_pyfunction!(register_names, module)?)?;
    module.add_class::<frames::HeldLocal>()?;
    module.add_class::<frames::StackFrame>()?;
    module.add_class::<frames::ThreadStack>()?;
    module.add_function(wrap_pyfunction!(frames::stack_views, module)?)?;
    module.add_class::<sampling::Sampler>()?;
    module.add_function(wrap_pyfunction!(sampling::sample, module)?)?;
    module.add_class::<sampling::SampleOptions>()?;
    module.add_function(wrap_pyfunction!(sampling::parse_sample, module)?)?;
    module.add_class::<stepping::Coroutine>()?;
    module.add_class::<stepping::StepPlan>()?;
    module.add_class::<stepping::WakeWatch>()?;
    module.add_function(wrap_pyfunction!(stepping::step_plan, module)?)?;
    module.add_class::<stepping::SteppingArguments>()?;
    module.add_function(wrap_pyfunction!(stepping::parse_stepping, module)?)?;
    module.add_function(wrap_pyfunction!(stepping::poll_targets, module)?)?;
    module.add_function(wrap_pyfunction!(stepping::wake_watch, module)?)?;
    Ok(())
}
