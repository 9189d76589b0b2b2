//! `Notify::notified()`: the `Notify`, this waiter's state, and how many wait.

use super::{hex, list_len_at, plural};
use crate::error::Result;
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::tokio_futures as layout;
use crate::model::{Detail, NotifyWait};
use crate::value::Value;

pub fn notified<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let notify = value.field(layout::NOTIFIED_NOTIFY)?.pointee()?;
    let (state, _) = value.field(layout::NOTIFIED_STATE)?.variant_or_self()?;
    notify_leaf(&notify, state.to_lowercase(), "waiting for Notify")
}

/// A leaf for `notify` in `state`: its waiters and whether a permit is stored.
fn notify_leaf(notify: &Value<'_>, state: String, what: &str) -> Result<Outcome> {
    let waiters = list_len_at(notify, layout::NOTIFY_WAITERS)?;
    let permit_stored = notify.field(layout::NOTIFY_STATE)?.read_uint()?
        & layout::NOTIFY_STATE_MASK
        == layout::NOTIFY_NOTIFIED;
    let summary = format!(
        "{what} {} ({})",
        hex(notify.address),
        plural(waiters, "waiter")
    );
    let wait = NotifyWait {
        address: notify.address,
        notifiers: None,
        permit_stored,
        state,
        waiters,
    };
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Notified(wait),
        summary,
    )))
}

/// A `Notify` (or an `Arc` of one) a future keeps: the tasks waiting on it.
pub fn notify_held<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let notify = match crate::std_values::is_arc(&value.ty) {
        true => crate::std_values::arc_data(value)?,
        false => value.clone(),
    };
    notify_leaf(&notify, HELD_STATE.to_string(), "Notify")
}

/// The state a kept `Notify` is shown in: it is no waiter of its own.
const HELD_STATE: &str = "held";
