//! `JoinHandle<T>`: the task it waits for, by id and state.

use serde_json::json;

use crate::error::{Error, Result};
use crate::future::{Decoded, FutureDecoder, Outcome};
use crate::model::NodeKind;
use crate::tokio::compat::leaves;
use crate::value::Value;

pub fn join_handle<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let header = value.path(leaves::JOIN_HANDLE_HEADER)?.read_pointer()?;
    let tasks = decoder
        .tasks()
        .ok_or_else(|| Error::layout("task layouts unavailable"))?;
    let task = tasks.read_header(header)?;
    let state = serde_json::to_value(task.state()).unwrap_or(json!(null));
    let state_text = state.as_str().unwrap_or("?").to_string();
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::JoinHandle,
        json!({"task_id": task.id, "task_state": state, "task_address": format!("{header:#x}")}),
        format!("JoinHandle -> task {} ({state_text})", task.id),
    )))
}
