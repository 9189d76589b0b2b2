//! `async sample`'s side of the module: a `Sampler` the glue adds one stop at a time to,
//! and its report, folded stacks and flamegraph.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;

use super::{
    debugger_memory, raise, reading_request, user_asks_to_stop, with_memory, Binary, Process,
    Request,
};
use tokio_async_core::budget::{Budget, InterruptCheck};
use tokio_async_core::command::run_arguments;
use tokio_async_core::error::{Error, ErrorKind, Result};
use tokio_async_core::history;
use tokio_async_core::inspect::inspect_over_time;
use tokio_async_core::output;
use tokio_async_core::panics::guarded;
use tokio_async_core::render::render_sample;
use tokio_async_core::selection::TaskFilter;

/// `async sample`'s options, as the core's parser read them (`parse_sample`).
#[pyclass(frozen, get_all, module = "tokio_async_glue._core")]
pub struct SampleOptions {
    interval: f64,
    count: u64,
    /// Where folded stacks go (`--output`), absolute.
    folded: Option<PathBuf>,
    /// Where a flamegraph goes (`--svg`), absolute.
    svg: Option<PathBuf>,
}

/// `async sample`'s words (split as a shell splits them). Raises `Error` of kind `usage`
/// with the one line to show.
#[pyfunction]
pub fn parse_sample(py: Python<'_>, words: Vec<String>) -> PyResult<SampleOptions> {
    let options = run_arguments::parse_sample(&words).map_err(|error| raise(py, error))?;
    Ok(SampleOptions {
        interval: options.interval,
        count: options.count,
        folded: options.folded,
        svg: options.svg,
    })
}

/// The samples of one `async sample`.
#[pyclass(frozen, module = "tokio_async_glue._core")]
pub struct Sampler {
    inner: Mutex<history::Sampler>,
}

#[pymethods]
impl Sampler {
    #[new]
    fn new() -> Sampler {
        Sampler {
            inner: Mutex::new(history::Sampler::default()),
        }
    }

    /// The report as text, after writing the folded stacks to `folded` and the flamegraph
    /// to `svg` where asked. `note` says why sampling ended early, if it did.
    #[pyo3(signature = (*, interval, note=None, folded=None, svg=None))]
    fn report(
        &self,
        py: Python<'_>,
        interval: f64,
        note: Option<String>,
        folded: Option<PathBuf>,
        svg: Option<PathBuf>,
    ) -> PyResult<String> {
        let result = guarded(|| {
            let sampler = self.sampler()?;
            let summary = sampler.summary();
            let mut text = render_sample(&summary, interval, note.as_deref());
            let stacks = sampler.folded();
            if let Some(path) = &folded {
                output::write_folded(&stacks, path)?;
                text.push_str(&format!(
                    "wrote {} folded stacks to {}\n",
                    stacks.lines().count(),
                    path.display()
                ));
            }
            if let Some(path) = &svg {
                let title = format!(
                    "where tokio tasks wait: {} samples {interval} s apart",
                    summary.samples
                );
                output::write_flamegraph(&stacks, &title, path)?;
                text.push_str(&format!("wrote the flamegraph to {}\n", path.display()));
            }
            Ok(text)
        });
        result.map_err(|error| raise(py, error))
    }
}

impl Sampler {
    fn sampler(&self) -> Result<std::sync::MutexGuard<'_, history::Sampler>> {
        self.inner.lock().map_err(|_| {
            Error::new(
                ErrorKind::Internal,
                "internal error: a sample failed midway",
            )
        })
    }
}

/// Adds this stop to `sampler` (every task, nothing rendered) and keeps its snapshot as
/// the process's latest; returns how many tasks it had. Raises `Error`.
#[pyfunction]
pub fn sample(
    binary: &Bound<'_, Binary>,
    process: &Bound<'_, Process>,
    request: &Bound<'_, Request>,
    sampler: &Bound<'_, Sampler>,
) -> PyResult<usize> {
    let py = binary.py();
    let debug = binary.get().debug.clone();
    let process = process.get();
    let interrupted = process
        .interrupted
        .as_ref()
        .map(|check| check.bind(py).clone());
    let result = guarded(|| {
        let mut inspect_request =
            reading_request(request.get(), process, true, TaskFilter::default())?;
        let stop = process.stop();
        let history = stop.history(&debug, inspect_request.clock.taken_at);
        inspect_request.previous = history.previous;
        inspect_request.this_stop = history.this_stop;
        let check = || user_asks_to_stop(py, interrupted.as_ref());
        let check: &InterruptCheck<'_> = &check;
        let budget = Budget::new(inspect_request.limits, Some(check));
        let done = with_memory(process, debugger_memory(py, process), |memory, _| {
            inspect_over_time(&debug, memory, process.load_bias, &inspect_request, &budget)
        })?;
        let Some(snapshot) = done.snapshot else {
            return Err(Error::new(
                ErrorKind::Budget,
                "async sample: a sample did not reach every task (see its budget)",
            ));
        };
        // One snapshot of the stop serves the sampler and the store.
        sampler.get().sampler()?.add(&done.report, snapshot.clone());
        if let Some(key) = history.key {
            history::store::keep(key, snapshot, stop.memory_key);
        }
        Ok(done.report.tasks.len())
    });
    result.map_err(|error| raise(py, error))
}
