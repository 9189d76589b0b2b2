//! tokio-util's waits: `CancellationToken::cancelled()` and `TaskTracker::wait()`; a
//! tracked task's `TrackedFuture` only wraps the task's future.

use super::{hex, plural};
use crate::error::Result;
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome};
use crate::layouts::libraries::tokio_util as layout;
use crate::model::{CancellationWait, Detail, TrackerWait};
use crate::std_values;
use crate::value::Value;

/// `cancelled()`/`cancelled_owned()`: the token's tree node, and whether it is cancelled.
pub fn cancelled<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let node = std_values::at(value, layout::CANCELLED_TREE_NODE)?;
    let cancelled = std_values::at(&node, layout::TREE_NODE_CANCELLED)?.read_uint()? != 0;
    let summary = format!(
        "waiting for CancellationToken {} to be cancelled{}",
        hex(node.address),
        if cancelled { " (it is)" } else { "" }
    );
    let detail = Detail::CancellationToken(CancellationWait {
        address: node.address,
        cancelled,
    });
    Ok(Outcome::Node(Decoded::leaf(detail, summary)))
}

/// `TaskTracker::wait()`: until it is closed and its tasks have ended.
pub fn tracker_wait<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let Some(inner) = std_values::follow(value, layout::TRACKER_WAIT_INNER)? else {
        let detail = Detail::TaskTrackerWait(TrackerWait {
            address: 0,
            closed: true,
            tasks: 0,
        });
        return Ok(Outcome::Node(Decoded::leaf(
            detail,
            "TaskTracker wait, done".to_string(),
        )));
    };
    let state = inner.field(layout::TRACKER_STATE)?.read_uint()?;
    let closed = state & layout::TRACKER_CLOSED != 0;
    let tasks = state >> layout::TRACKER_TASKS_SHIFT;
    let summary = format!(
        "waiting for TaskTracker {} ({} left, {})",
        hex(inner.address),
        plural(tasks, "task"),
        if closed {
            "closed"
        } else {
            "open: waits for close() too"
        }
    );
    let detail = Detail::TaskTrackerWait(TrackerWait {
        address: inner.address,
        closed,
        tasks,
    });
    Ok(Outcome::Node(Decoded::leaf(detail, summary)))
}

/// `TrackedFuture<F>`: F.
pub fn tracked_future<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    Ok(Outcome::SeeThrough(Child::of(
        &value.field(layout::TRACKED_FUTURE_INNER)?,
    )))
}
