//! `Notify::notified()`: the `Notify`, this waiter's state, and how many wait.

use serde_json::json;

use super::{hex, linked_list_len, plural};
use crate::error::Result;
use crate::future::{Decoded, FutureDecoder, Outcome};
use crate::model::NodeKind;
use crate::tokio::compat::{self, leaves};
use crate::value::Value;

/// `Notify.state` low bits (tokio::sync::notify).
const NOTIFY_STATE_MASK: u64 = 0b11;
const NOTIFIED: u64 = 2;

pub fn notified<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let notify = value.field(leaves::NOTIFIED_NOTIFY)?.pointee()?;
    let (state, _) = value.field(leaves::NOTIFIED_STATE)?.variant_or_self()?;
    let waiters = linked_list_len(
        &notify
            .field(leaves::NOTIFY_WAITERS)?
            .find_descendant(|ty| ty.name.starts_with(compat::LINKED_LIST_TYPE_PREFIX))?,
    )?;
    let permit_stored =
        notify.field(leaves::NOTIFY_STATE)?.read_uint()? & NOTIFY_STATE_MASK == NOTIFIED;
    let detail = json!({
        "address": hex(notify.address),
        "state": state.to_lowercase(),
        "waiters": waiters,
        "permit_stored": permit_stored,
    });
    let summary = format!(
        "waiting for Notify {} ({})",
        hex(notify.address),
        plural(waiters, "waiter")
    );
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::Notified,
        detail,
        summary,
    )))
}
