//! tokio's one-shot synchronisation: `Barrier::wait()` (who has arrived), `OnceCell::
//! get_or_init()` while another task initializes the cell, and `SetOnce::wait()`.

use super::hex;
use crate::error::Result;
use crate::future::env::{active_variant, async_self, coroutine_state};
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome};
use crate::layouts::rust::coroutine;
use crate::layouts::tokio_futures as layout;
use crate::model::{BarrierWait, CoroutineState, Detail, OnceCellWait, SetOnceWait};
use crate::std_values;
use crate::value::Value;

/// `Barrier::wait()`: how many of the tasks it waits for have arrived.
pub fn barrier_wait<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let barrier = async_self(value)?;
    let state = std_values::at(&barrier, layout::BARRIER_STATE)?;
    let arrived = state.field(layout::BARRIER_ARRIVED)?.read_uint()?;
    let generation = state.field(layout::BARRIER_GENERATION)?.read_uint()?;
    let needed = barrier.field(layout::BARRIER_NEEDED)?.read_uint()?;
    let summary = format!(
        "waiting at Barrier {} ({arrived} of {needed} arrived)",
        hex(barrier.address)
    );
    let detail = Detail::BarrierWait(BarrierWait {
        address: barrier.address,
        arrived,
        generation,
        needed,
    });
    Ok(Outcome::Node(Decoded::leaf(detail, summary)))
}

/// `OnceCell::get_or_init()`: waiting for the permit another task's initialization holds
/// is a node naming the cell, over that permit's wait; the task that initializes it shows
/// its init future as any async fn would.
pub fn once_cell_get_or_init<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    if coroutine_state(value)? != CoroutineState::Suspended {
        return Ok(Outcome::Default);
    }
    let Ok(awaitee) = active_variant(value)?.fields.field(coroutine::AWAITEE) else {
        return Ok(Outcome::Default);
    };
    if !awaitee.ty.name.starts_with(layout::ONCE_CELL_PERMIT_AWAIT) {
        return Ok(Outcome::Default);
    }
    let cell = async_self(value)?;
    let initialized = cell.field(layout::ONCE_CELL_SET)?.read_uint()? != 0;
    let summary = format!(
        "waiting for OnceCell {} to be initialized by another task",
        hex(cell.address)
    );
    let detail = Detail::OnceCellInit(OnceCellWait {
        address: cell.address,
        initialized,
    });
    Ok(Outcome::Node(Decoded::with_children(
        detail,
        summary,
        vec![Child::of(&awaitee)],
    )))
}

/// `SetOnce::wait()`: until a value is set.
pub fn set_once_wait<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let cell = async_self(value)?;
    let set = cell.field(layout::SET_ONCE_SET)?.read_uint()? != 0;
    let summary = format!("waiting for SetOnce {} to be set", hex(cell.address));
    let detail = Detail::SetOnceWait(SetOnceWait {
        address: cell.address,
        set,
    });
    Ok(Outcome::Node(Decoded::leaf(detail, summary)))
}
