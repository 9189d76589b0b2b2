//! The async-aware stack views (the core's `stack_view`) as typed objects, for the
//! debuggers' frame filters: the glue maps each to a frame decorator.

use pyo3::prelude::*;

use super::{debugger_memory, raise, reading_request, with_memory, Binary, Process, Request};
use tokio_async_core::budget::Budget;
use tokio_async_core::inspect::inspect_within;
use tokio_async_core::panics::guarded;
use tokio_async_core::selection::TaskFilter;
use tokio_async_core::stack_view::{self, ViewFrame};

/// A local a suspended coroutine keeps across its await: its value is read from
/// `address` as `type_name`; `value` is the core's own reading of simple ones.
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
pub struct HeldLocal {
    name: String,
    type_name: String,
    address: u64,
    value: Option<String>,
}

/// One frame of a view (see `stack_view::ViewFrame`); `kind` is `plain`, `async`, `glue`,
/// `block_on` or `suspended`.
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
pub struct StackFrame {
    level: usize,
    kind: &'static str,
    function: Option<String>,
    file: Option<String>,
    line: Option<u64>,
    elided: Vec<usize>,
    locals: Vec<Py<HeldLocal>>,
}

/// One thread's view: `frames` in the order `bt` prints them.
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
pub struct ThreadStack {
    tid: u64,
    frames: Vec<Py<StackFrame>>,
}

fn stack_frame(py: Python<'_>, frame: ViewFrame) -> PyResult<Py<StackFrame>> {
    let locals = frame
        .locals
        .into_iter()
        .map(|local| {
            Py::new(
                py,
                HeldLocal {
                    name: local.name,
                    type_name: local.type_name,
                    address: local.address,
                    value: local.value.map(|value| value.to_string()),
                },
            )
        })
        .collect::<PyResult<_>>()?;
    Py::new(
        py,
        StackFrame {
            level: frame.level,
            kind: frame.kind.name(),
            function: frame.function,
            file: frame.file,
            line: frame.line,
            elided: frame.elided,
            locals,
        },
    )
}

/// Each of the request's threads as `bt` should show it, with the block_on futures'
/// suspended chains and their locals. Raises `Error`.
#[pyfunction]
pub fn stack_views(
    binary: &Bound<'_, Binary>,
    process: &Bound<'_, Process>,
    request: &Bound<'_, Request>,
) -> PyResult<Vec<ThreadStack>> {
    let py = binary.py();
    let (binary, process) = (binary.get(), process.get());
    let result = guarded(|| {
        let mut inspect_request =
            reading_request(request.get(), process, false, TaskFilter::default())?;
        inspect_request.locals = true;
        inspect_request.snapshot = false;
        with_memory(process, debugger_memory(py, process), |memory, _| {
            let budget = Budget::new(inspect_request.limits, None);
            let report = inspect_within(
                &binary.debug,
                memory,
                process.load_bias,
                &inspect_request,
                &budget,
            )?;
            Ok(stack_view::stack_views(
                &binary.debug,
                process.load_bias,
                &inspect_request.threads,
                &report,
            ))
        })
    });
    let stacks = result.map_err(|error| raise(py, error))?;
    stacks
        .into_iter()
        .map(|stack| {
            let frames = stack
                .frames
                .into_iter()
                .map(|frame| stack_frame(py, frame))
                .collect::<PyResult<_>>()?;
            Ok(ThreadStack {
                tid: stack.tid,
                frames,
            })
        })
        .collect()
}
