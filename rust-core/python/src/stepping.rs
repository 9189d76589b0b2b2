//! The stepping commands' side of the module: what the glue needs to follow one task as it
//! runs (the core's `stepping`), as typed objects. The glue drives the debugger with them.

use pyo3::prelude::*;
use pyo3::types::PyList;
use rustc_hash::FxHashMap;
use serde::Deserialize;

use super::{debugger_memory, raise, reading_request, with_memory, Binary, Process, Request};
use tokio_async_core::arch::DWARF_REGISTER_NAMES;
use tokio_async_core::budget::Budget;
use tokio_async_core::dwarf::FrameRegisters;
use tokio_async_core::error::{Error, ErrorKind, Result};
use tokio_async_core::inspect::{self, inspect_within};
use tokio_async_core::model::Report;
use tokio_async_core::panics::guarded;
use tokio_async_core::selection::TaskFilter;
use tokio_async_core::stepping::{self, FrameState};

/// A stepping command's arguments, as the core's parser read them (`parse_stepping`).
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
pub struct SteppingArguments {
    task: Option<u64>,
    own_frame: bool,
}

/// Stepping command `command`'s words (split at whitespace). Raises `Error` of kind
/// `usage` with the one line to show.
#[pyfunction]
pub fn parse_stepping(
    py: Python<'_>,
    command: &str,
    words: Vec<String>,
) -> PyResult<SteppingArguments> {
    let arguments = tokio_async_core::command::run_arguments::parse_stepping(command, &words)
        .map_err(|error| raise(py, error))?;
    Ok(SteppingArguments {
        task: arguments.task,
        own_frame: arguments.own_frame,
    })
}

/// One coroutine instance to stop at: `stops` is `[(address, [register, ...])]`, a
/// breakpoint at `address` on the condition that one of the registers holds `address`.
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
pub struct Coroutine {
    address: u64,
    type_name: String,
    function: String,
    file: Option<String>,
    line: Option<u64>,
    users_own: bool,
    declared_line: Option<u64>,
    stops: Vec<(u64, Vec<String>)>,
    unstoppable: Option<String>,
    state_offset: Option<u64>,
    state_size: u64,
    frame: Option<usize>,
}

#[pymethods]
impl Coroutine {
    /// Whether its state discriminant's bytes (`state_size` of them read at
    /// `address + state_offset`) say it has returned.
    fn has_returned(&self, state: &[u8]) -> bool {
        stepping::has_returned(state)
    }
}

impl From<stepping::Coroutine> for Coroutine {
    fn from(found: stepping::Coroutine) -> Self {
        Coroutine {
            address: found.address,
            type_name: found.type_name,
            function: found.function,
            file: found.file,
            line: found.line,
            users_own: found.users_own,
            declared_line: found.declared_line,
            stops: found
                .stops
                .into_iter()
                .map(|stop| {
                    let registers = stop.registers.iter().map(|r| r.to_string()).collect();
                    (stop.address, registers)
                })
                .collect(),
            unstoppable: found.unstoppable,
            state_offset: found.state_offset,
            state_size: found.state_size,
            frame: found.frame,
        }
    }
}

/// What the selected frame runs: `task` (None in a block_on future), `chain` (its coroutine,
/// then those awaiting it, outward), `awaitees` (the async fns its line awaits).
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
pub struct StepPlan {
    task: Option<u64>,
    chain: Vec<Py<Coroutine>>,
    awaitees: Vec<Py<Coroutine>>,
    awaited: Option<String>,
}

/// Task N's state word, and the bit a wake sets in it.
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
pub struct WakeWatch {
    address: u64,
    size: u64,
    notified_mask: u64,
    notified_now: bool,
    waking_functions: Vec<String>,
}

/// A frame as the glue gives it: registers by name.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FrameInput {
    pc: u64,
    inlined: bool,
    file: Option<String>,
    line: Option<u64>,
    #[serde(default)]
    registers: FxHashMap<String, u64>,
}

impl FrameInput {
    fn state(self) -> FrameState {
        let mut registers: FrameRegisters = [None; 17];
        for (number, name) in DWARF_REGISTER_NAMES.iter().enumerate() {
            registers[number] = self.registers.get(*name).copied();
        }
        FrameState {
            pc: self.pc,
            inlined: self.inlined,
            file: self.file,
            line: self.line,
            registers,
        }
    }
}

fn coroutines(py: Python<'_>, found: Vec<stepping::Coroutine>) -> PyResult<Vec<Py<Coroutine>>> {
    found
        .into_iter()
        .map(|coroutine| Py::new(py, Coroutine::from(coroutine)))
        .collect()
}

/// The report of the request's threads and of task `id`, its whole tree.
fn report_of_task(
    binary: &Binary,
    process: &Process,
    request: &Request,
    memory: &dyn tokio_async_core::memory::Memory,
    id: u64,
) -> Result<Report> {
    let filter = TaskFilter {
        ids: Some(vec![id]),
        ..TaskFilter::default()
    };
    let inspect_request = reading_request(request, process, true, filter)?;
    let budget = Budget::new(inspect_request.limits, None);
    inspect_within(
        &binary.debug,
        memory,
        process.load_bias,
        &inspect_request,
        &budget,
    )
}

/// What the frame `selected` of thread `tid` runs (`frames`: that thread's, innermost
/// first, each `{pc, inlined, file, line, registers: {name: value}}`). Raises `Error`.
#[pyfunction]
pub fn step_plan(
    binary: &Bound<'_, Binary>,
    process: &Bound<'_, Process>,
    request: &Bound<'_, Request>,
    tid: u64,
    frames: &Bound<'_, PyList>,
    selected: usize,
) -> PyResult<StepPlan> {
    let py = binary.py();
    let frames: Vec<FrameInput> = pythonize::depythonize(frames.as_any()).map_err(|error| {
        raise(
            py,
            Error::new(
                ErrorKind::Internal,
                format!("bad frames from the glue: {error}"),
            ),
        )
    })?;
    let (binary, process) = (binary.get(), process.get());
    let result = guarded(|| {
        let frames: Vec<FrameState> = frames.into_iter().map(FrameInput::state).collect();
        with_memory(process, debugger_memory(py, process), |memory, _| {
            let inspect_request =
                reading_request(request.get(), process, false, TaskFilter::default())?;
            let task = inspect::current_task_of(
                &binary.debug,
                memory,
                process.load_bias,
                &inspect_request,
                tid,
            )?;
            let plan = stepping::plan_for_frames(
                &binary.debug,
                memory,
                process.load_bias,
                &frames,
                selected,
            )?;
            Ok((task, plan))
        })
    });
    let (task, plan) = result.map_err(|error| raise(py, error))?;
    Ok(StepPlan {
        task,
        chain: coroutines(py, plan.chain)?,
        awaitees: coroutines(py, plan.awaitees)?,
        awaited: plan.awaited,
    })
}

/// The innermost coroutines task `id` is suspended in. Raises `Error`.
#[pyfunction]
pub fn poll_targets(
    binary: &Bound<'_, Binary>,
    process: &Bound<'_, Process>,
    request: &Bound<'_, Request>,
    id: u64,
) -> PyResult<Vec<Py<Coroutine>>> {
    let py = binary.py();
    let (binary, process) = (binary.get(), process.get());
    let result = guarded(|| {
        with_memory(process, debugger_memory(py, process), |memory, _| {
            let report = report_of_task(binary, process, request.get(), memory, id)?;
            stepping::suspended_leaves(&binary.debug, &report, id, process.load_bias)
        })
    });
    coroutines(py, result.map_err(|error| raise(py, error))?)
}

/// Task `id`'s state word to watch for a wake. Raises `Error`.
#[pyfunction]
pub fn wake_watch(
    binary: &Bound<'_, Binary>,
    process: &Bound<'_, Process>,
    request: &Bound<'_, Request>,
    id: u64,
) -> PyResult<WakeWatch> {
    let py = binary.py();
    let (binary, process) = (binary.get(), process.get());
    let result = guarded(|| {
        with_memory(process, debugger_memory(py, process), |memory, _| {
            let report = report_of_task(binary, process, request.get(), memory, id)?;
            stepping::wake_watch(&binary.debug, memory, &report, id)
        })
    });
    let watch = result.map_err(|error| raise(py, error))?;
    Ok(WakeWatch {
        address: watch.address,
        size: watch.size,
        notified_mask: watch.notified_mask,
        notified_now: watch.notified_now,
        waking_functions: watch
            .waking_functions
            .iter()
            .map(|name| name.to_string())
            .collect(),
    })
}
