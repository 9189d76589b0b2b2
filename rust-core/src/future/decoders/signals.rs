//! Unix signals: `Signal::recv()` (and `ctrl_c()`, SIGINT's) waits on the watch receiver of
//! its signal's slot in tokio's signal registry. The slot's index is the signal's number;
//! the registry is a static found by its symbol.

use super::boxed;
use crate::error::{Error, Result};
use crate::future::env::async_self;
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::tokio_futures as layout;
use crate::model::{Detail, SignalWait};
use crate::std_values;
use crate::value::Value;

/// The most registry slots read (Linux has 64 signals).
const MAX_SIGNALS: u64 = 128;

/// `Signal::recv()` / `RxFuture::recv()`: the signal awaited.
pub fn signal_recv<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    signal_leaf(context, &async_self(value)?)
}

/// A `Signal` a future keeps and polls from its own `poll` (`poll_recv`), as a server's
/// listener for its shutdown signals does.
pub fn signal_held<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    signal_leaf(context, value)
}

fn signal_leaf(context: &DecodeContext<'_>, receiver: &Value<'_>) -> Result<Outcome> {
    let signal = signal_number(context, receiver).ok();
    let name = signal.and_then(|number| {
        layout::SIGNAL_NAMES
            .iter()
            .find(|(known, _)| *known == number)
            .map(|(_, name)| name.to_string())
    });
    let summary = match (&name, signal) {
        (Some(name), _) => format!("waiting for signal {name}"),
        (None, Some(number)) => format!("waiting for signal {number}"),
        (None, None) => "waiting for a signal (which one cannot be read)".to_string(),
    };
    Ok(Outcome::Node(Decoded::leaf(
        Detail::SignalRecv(SignalWait { name, signal }),
        summary,
    )))
}

/// The number of the signal a `Signal` (or its `RxFuture`) listens to: the index of the
/// registry slot whose sender shares its receiver's channel.
fn signal_number(context: &DecodeContext<'_>, receiver: &Value<'_>) -> Result<u64> {
    let rx_future = std_values::follow_if_present(receiver, layout::SIGNAL_RX_FUTURE)?
        .filter(|inner| inner.has_field(layout::REUSABLE_BOX))
        .ok_or_else(|| Error::layout(format!("{} holds no RxFuture", receiver.ty.name)))?;
    let boxed_future = rx_future.field(layout::REUSABLE_BOX)?;
    let boxed_pointer = std_values::pin_pointer(&boxed_future)?;
    let (concrete, data) = boxed::concrete(context, &boxed_pointer)?;
    let env = context.target.value(concrete, data)?;
    let rx = crate::future::env::active_variant(&env)?
        .fields
        .field(layout::SIGNAL_RECEIVER)?;
    let channel = std_values::at_path(&rx, layout::WATCH_SHARED)?.address;
    let target = context.target;
    let link_address = target
        .debug
        .symbol_containing(layout::SIGNAL_GLOBALS_SYMBOL)
        .ok_or_else(|| Error::layout("no symbol for tokio's signal registry"))?;
    let address = link_address
        .checked_add(target.load_bias)
        .ok_or_else(|| Error::layout("signal registry past the address space"))?;
    let globals_type = layout::SIGNAL_GLOBALS_TYPES
        .iter()
        .find_map(|name| target.debug.type_named(name).ok().flatten())
        .ok_or_else(|| Error::layout("no DWARF type for tokio's signal registry"))?;
    let globals = std_values::at(
        &target.value_of_type(globals_type, address),
        crate::layouts::rust::ONCE_LOCK_VALUE,
    )?;
    let storage = std_values::at(&globals, layout::SIGNAL_STORAGE)?;
    let (slots, first) = if std_values::is_vec(&storage.ty) {
        (
            std_values::vec_elements(&storage, MAX_SIGNALS)?,
            layout::SIGNAL_FIRST_SLOT_VEC,
        )
    } else {
        (
            std_values::boxed_slice(
                &storage.field(crate::layouts::rust::TUPLE_FIRST)?,
                MAX_SIGNALS,
            )?,
            layout::SIGNAL_FIRST_SLOT_BOXED,
        )
    };
    for (index, slot) in slots.iter().enumerate() {
        if std_values::at_path(slot, layout::SIGNAL_SENDER_SHARED)?.address == channel {
            return Ok(index as u64 + first);
        }
    }
    Err(Error::layout(
        "no registry slot shares this signal's channel",
    ))
}
