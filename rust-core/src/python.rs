//! The pyo3 module the debugger glue imports. Everything crosses as plain strings and
//! integers; no Rust panic and no Rust error reaches Python as an exception.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Once};
use std::thread::JoinHandle;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::core_file::CoreFileMemory;
use crate::dwarf::DebugInfo;
use crate::error::{Error, ErrorKind, Result};
use crate::inspect::{inspect, Request};
use crate::memory::{Memory, PageCache, ProcessMemory};
use crate::model::Report;
use crate::output::{self, Format};
use crate::render::TextOptions;

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
}

/// Memory read through a Python callable `read(address, size) -> bytes | None`.
struct PythonMemory<'py> {
    read: Bound<'py, PyAny>,
}

impl Memory for PythonMemory<'_> {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let result = self.read.call1((address, buf.len())).map_err(|_| Error::memory(address, buf.len()))?;
        let bytes = result.cast::<PyBytes>().map_err(|_| Error::memory(address, buf.len()))?;
        let data = bytes.as_bytes();
        if data.len() != buf.len() {
            return Err(Error::memory(address, buf.len()));
        }
        buf.copy_from_slice(data);
        Ok(())
    }
}

/// Runs `body`, turning a panic into an `Internal` error.
fn guarded<T>(body: impl FnOnce() -> Result<T>) -> Result<T> {
    static QUIET_PANICS: Once = Once::new();
    QUIET_PANICS.call_once(|| {
        // Panics become one error line; the default hook would also spray stderr.
        std::panic::set_hook(Box::new(|_| {}));
    });
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::new(ErrorKind::Internal, format!("internal error (a bug in tokio-async): {message}")))
        }
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

/// An executable's DWARF being loaded on a thread of its own, so that the work overlaps
/// the debugger's walk of the thread stacks (the two biggest costs of a first call).
#[pyclass(frozen, module = "tokio_async_glue._core")]
struct PendingBinary {
    load: Mutex<Option<Load>>,
}

enum Load {
    Running(JoinHandle<Result<DebugInfo>>),
    /// No thread could be started: loaded on the caller's.
    Done(Box<Result<DebugInfo>>),
}

#[pymethods]
impl PendingBinary {
    /// Waits for the load: `(binary, None)` or `(None, (kind, message))`.
    fn wait(&self, py: Python<'_>) -> (Option<Py<Binary>>, Option<Outcome>) {
        let load = self.load.lock().ok().and_then(|mut load| load.take());
        let loaded = match load {
            Some(Load::Running(handle)) => py.detach(|| handle.join()).unwrap_or_else(|_| {
                Err(Error::new(ErrorKind::Internal, "internal error (a bug in tokio-async): the DWARF loader panicked"))
            }),
            Some(Load::Done(loaded)) => *loaded,
            None => Err(Error::new(ErrorKind::Internal, "internal error (a bug in tokio-async): waited twice for one load")),
        };
        match loaded {
            Ok(debug) => match Py::new(py, Binary { debug: Arc::new(debug) }) {
                Ok(binary) => (Some(binary), None),
                Err(error) => (None, Some(("internal".into(), error.to_string()))),
            },
            Err(error) => (None, Some((error.kind.as_str().to_string(), error.message))),
        }
    }
}

/// Starts loading an executable's DWARF, looking for a separate debug file in `debug_dirs`
/// (the debugger's own setting) and the system's; `wait()` on the result gives the binary.
/// With `only_if_tokio`, a program whose symbols do not name tokio is not loaded (a
/// `not_tokio` outcome): loading ahead of any command must not cost other programs.
#[pyfunction]
#[pyo3(signature = (path, debug_dirs=Vec::new(), only_if_tokio=false))]
fn start_loading(path: String, debug_dirs: Vec<String>, only_if_tokio: bool) -> PendingBinary {
    let debug_dirs: Vec<PathBuf> = debug_dirs.into_iter().map(PathBuf::from).collect();
    let load = move |path: PathBuf, debug_dirs: Vec<PathBuf>| {
        guarded(|| {
            let debug = match only_if_tokio {
                true => DebugInfo::load_if_tokio(&path, &debug_dirs)?,
                false => DebugInfo::load_searching(&path, &debug_dirs)?,
            };
            debug.prepare_call_sites();
            Ok(debug)
        })
    };
    let (thread_path, thread_dirs) = (PathBuf::from(&path), debug_dirs.clone());
    let spawned = std::thread::Builder::new()
        .name("tokio-async-dwarf".into())
        .spawn(move || load(thread_path, thread_dirs));
    let load = match spawned {
        Ok(handle) => Load::Running(handle),
        Err(_) => Load::Done(Box::new(load(PathBuf::from(path), debug_dirs))),
    };
    PendingBinary { load: Mutex::new(Some(load)) }
}

/// Builds the report. `request_json` is an `inspect::Request`; memory comes from
/// `/proc/PID/mem` when `live_pid` is given and readable, else from the core file at
/// `core_path` when it opens, else from `read_memory` (always, with `debugger_memory`).
/// With `output_path`, the report goes to that file and the output is one line saying so.
#[pyfunction]
#[pyo3(signature = (binary, load_bias, request_json, read_memory, live_pid, as_json, full=false, output_path=None, core_path=None, debugger_memory=false))]
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
) -> Outcome {
    let debug = binary.get().debug.clone();
    outcome(guarded(|| {
        let mut request: Request = serde_json::from_str(request_json)
            .map_err(|error| Error::new(ErrorKind::Internal, format!("bad request from the glue: {error}")))?;
        request.live_pid = live_pid;
        request.locals = full;
        let process = live_pid.filter(|_| !debugger_memory).and_then(|pid| ProcessMemory::open(pid).ok());
        let core = core_path.filter(|_| !debugger_memory && process.is_none()).and_then(|path| CoreFileMemory::open(&path).ok());
        let report = match (process, core) {
            (Some(process), _) => Report { memory_source: Some("process"), ..inspect(&debug, &PageCache::new(process), load_bias, &request)? },
            // Mapped: no page cache needed.
            (None, Some(core)) => Report { memory_source: Some("core_file"), ..inspect(&debug, &core, load_bias, &request)? },
            (None, None) => Report {
                memory_source: Some("debugger"),
                ..inspect(&debug, &PageCache::new(PythonMemory { read: read_memory }), load_bias, &request)?
            },
        };
        let format = if as_json { Format::Json } else { Format::Text(TextOptions { locals: full }) };
        match &output_path {
            Some(path) => output::to_file(&report, format, path),
            None => output::to_string(&report, format),
        }
    }))
}

/// `[(function prefix, local name)]` of frames that hold a `block_on` future.
#[pyfunction]
fn block_on_frames() -> Vec<(String, String)> {
    crate::block_on::block_on_frames().iter().map(|(f, l)| (f.to_string(), l.to_string())).collect()
}

#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Binary>()?;
    module.add_class::<PendingBinary>()?;
    module.add_function(wrap_pyfunction!(start_loading, module)?)?;
    module.add_function(wrap_pyfunction!(backtrace, module)?)?;
    module.add_function(wrap_pyfunction!(block_on_frames, module)?)?;
    Ok(())
}
