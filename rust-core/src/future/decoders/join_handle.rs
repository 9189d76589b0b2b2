//! `JoinHandle<T>`: the task it waits for, by id and state.

use crate::error::{Error, Result};
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::tokio_futures as layout;
use crate::model::{Detail, JoinTarget};
use crate::std_values;
use crate::tokio::anchors::Anchor;
use crate::value::Value;

pub fn join_handle<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let header = std_values::at_path(value, layout::JOIN_HANDLE_HEADER)?.read_pointer()?;
    let tasks = context
        .tasks
        .ok_or_else(|| Error::layout("task layouts unavailable"))?;
    let task = tasks.read_header(header)?;
    // A task no list walked so far holds leads to its owner's list.
    context.note(Anchor::Task(header));
    let state = task.state();
    let summary = format!("JoinHandle -> task {} ({})", task.id, state.name());
    let target = JoinTarget {
        blocking_thread: None,
        task_address: header,
        task_id: task.id,
        task_state: state,
    };
    Ok(Outcome::Node(Decoded::leaf(
        Detail::JoinHandle(target),
        summary,
    )))
}
