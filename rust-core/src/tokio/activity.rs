//! What a runtime's threads are doing, as tokio's own structures say: a worker's state
//! (running, searching, parked, idle) and its queues, a current_thread runtime's queue,
//! and the closure a blocking-pool thread runs.

use crate::layouts::tokio as runtime;
use crate::model::{ReportError, WorkerQueue, WorkerState};
use crate::stack::ResolvedFrame;
use crate::value::Value;

use super::tasks::TaskReader;

/// What a worker is doing and what it has queued.
pub fn worker_activity(
    task_reader: &TaskReader<'_>,
    context: &Value<'_>,
    running: bool,
    tid: u64,
    errors: &mut Vec<ReportError>,
) -> (Option<WorkerState>, Option<WorkerQueue>) {
    match super::workers::worker_core(context) {
        Ok(Some(core)) => {
            let state = if running {
                WorkerState::Running
            } else if core.searching {
                WorkerState::Searching
            } else if core.parked {
                WorkerState::Parked
            } else {
                WorkerState::Idle
            };
            let what = format!("thread {tid}: run queue");
            let lifo_slot = core.lifo_slot.and_then(|header| {
                task_ids(task_reader, &[header], &what, errors)
                    .first()
                    .copied()
            });
            let local = task_ids(task_reader, &core.run_queue, &what, errors);
            (Some(state), Some(WorkerQueue { lifo_slot, local }))
        }
        Ok(None) => (
            Some(if running {
                WorkerState::Running
            } else {
                WorkerState::Idle
            }),
            None,
        ),
        Err(error) => {
            let what = format!("thread {tid}: cannot read its worker's core");
            errors.push(ReportError::from_error(what, &error).of_thread(tid));
            (None, None)
        }
    }
}

/// A current_thread runtime's local run queue, as a queue without LIFO slot.
pub fn current_thread_queue(
    task_reader: &TaskReader<'_>,
    context: &Value<'_>,
    tid: u64,
    errors: &mut Vec<ReportError>,
) -> Option<WorkerQueue> {
    match super::workers::current_thread_queue(context) {
        Ok(headers) => headers.map(|headers| WorkerQueue {
            lifo_slot: None,
            local: task_ids(
                task_reader,
                &headers,
                &format!("thread {tid}: run queue"),
                errors,
            ),
        }),
        Err(error) => {
            let what = format!("thread {tid}: cannot read its current_thread run queue");
            errors.push(ReportError::from_error(what, &error).of_thread(tid));
            None
        }
    }
}

/// The ids of the tasks whose headers these are; unreadable ones become errors.
pub fn task_ids(
    task_reader: &TaskReader<'_>,
    headers: &[u64],
    what: &str,
    errors: &mut Vec<ReportError>,
) -> Vec<u64> {
    headers
        .iter()
        .filter_map(|&header| match task_reader.read_header(header) {
            Ok(task) => Some(task.id),
            Err(error) => {
                let what = format!("{what}: task at {header:#x}");
                errors.push(ReportError::from_error(what, &error));
                None
            }
        })
        .collect()
}

/// For a blocking-pool thread: `Some(the closure it runs)`, `Some(None)` when idle; `None`
/// for other threads.
pub fn blocking_pool_function(frames: &[ResolvedFrame<'_>]) -> Option<Option<String>> {
    let paths: Vec<Option<String>> = frames
        .iter()
        .map(ResolvedFrame::path_without_generics)
        .collect();
    if !paths
        .iter()
        .flatten()
        .any(|path| path == runtime::BLOCKING_POOL_RUN)
    {
        return None;
    }
    // Frames are innermost first: the closure is the nearest frame inside the poll.
    let poll = paths.iter().position(|path| {
        path.as_deref().is_some_and(|path| {
            path.starts_with(runtime::BLOCKING_TASK_MODULE)
                && path.rsplit("::").next() == Some(runtime::BLOCKING_TASK_POLL)
        })
    });
    let closure = poll.and_then(|poll| {
        paths[..poll]
            .iter()
            .rev()
            .flatten()
            .find(|path| {
                !runtime::CALL_SHIMS
                    .iter()
                    .any(|shim| path.starts_with(shim))
            })
            .cloned()
    });
    Some(closure)
}
