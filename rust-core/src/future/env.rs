//! A coroutine's env as rustc lays it out (`layouts::rust::coroutine`): its state from the
//! `__state` discriminant, the fields of its active variant (saved locals and upvars), and
//! an async method's receiver. What every decoder of an async fn and the coroutine decoder
//! share; it decodes nothing itself.

use crate::error::{Error, Result};
use crate::layouts::rust::coroutine;
use crate::memory::MemoryExt;
use crate::model::CoroutineState;
use crate::std_values;
use crate::value::{offset, Value};

/// The active variant of a coroutine env: its discriminant and its fields.
pub struct ActiveVariant<'a> {
    pub raw_state: u64,
    pub fields: Value<'a>,
    /// Its index in the env type's variant part.
    pub index: usize,
}

pub fn active_variant<'a>(value: &Value<'a>) -> Result<ActiveVariant<'a>> {
    let info = &value.ty;
    let address = value.address;
    let part = info
        .variant_part
        .as_ref()
        .ok_or_else(|| Error::layout(format!("coroutine {} has no variant part", info.name)))?;
    let discriminant = part
        .discriminant
        .as_ref()
        .ok_or_else(|| Error::layout(format!("coroutine {} has no discriminant", info.name)))?;
    let target = value.target;
    let size = match discriminant.ty {
        Some(ty) => target.debug.type_info(ty)?.size.unwrap_or(1),
        None => 1,
    };
    let raw_state = target
        .memory
        .read_uint(offset(address, discriminant.offset)?, size)
        .map_err(|error| error.context(format!("state of {} at {address:#x}", info.name)))?;
    let (index, variant) = part
        .variants
        .iter()
        .enumerate()
        .find(|(_, variant)| variant.discr_value == Some(raw_state))
        .ok_or_else(|| {
            Error::layout(format!(
                "{} at {address:#x} has state {raw_state}, which no variant has (corrupt or freed memory?)",
                info.name
            ))
        })?;
    let variant_ty = variant
        .member
        .ty
        .ok_or_else(|| Error::layout("coroutine variant without a type"))?;
    Ok(ActiveVariant {
        raw_state,
        fields: target.value(variant_ty, offset(address, variant.member.offset)?)?,
        index,
    })
}

/// A coroutine env's state, without decoding anything else.
pub fn coroutine_state(value: &Value<'_>) -> Result<CoroutineState> {
    active_variant(value).map(|active| state_of(active.raw_state).0)
}

/// The state a discriminant stands for, and for a suspension its await point.
pub fn state_of(raw: u64) -> (CoroutineState, Option<u32>) {
    match raw {
        coroutine::UNRESUMED => (CoroutineState::Unresumed, None),
        coroutine::RETURNED => (CoroutineState::Returned, None),
        coroutine::PANICKED => (CoroutineState::Panicked, None),
        suspended => (
            CoroutineState::Suspended,
            // The state is one of the type's DWARF variants, a few per await: a number
            // past u32 is none of them.
            u32::try_from(suspended - coroutine::FIRST_SUSPEND).ok(),
        ),
    }
}

/// The `self` an async method was called on: the upvar of the coroutine's active variant,
/// dereferenced (`&self`, `&mut self`, `Arc<Self>`).
pub fn async_self<'a>(env: &Value<'a>) -> Result<Value<'a>> {
    let receiver = active_variant(env)?.fields.field(coroutine::ASYNC_SELF)?;
    if std_values::is_arc(&receiver.ty) {
        return std_values::arc_data(&receiver);
    }
    receiver.pointee()
}

/// An upvar (argument) of an async fn, from the active variant.
pub fn async_argument<'a>(env: &Value<'a>, name: &str) -> Result<Value<'a>> {
    active_variant(env)?.fields.field(name)
}

/// Where a coroutine keeps what it captured (an async fn's arguments): the fields of its
/// `Unresumed` variant, by offset in the env and name.
pub fn captured_variables(env: &Value<'_>) -> Vec<(u64, String)> {
    let Some(part) = env.ty.variant_part.as_ref() else {
        return Vec::new();
    };
    let Some(unresumed) = part
        .variants
        .iter()
        .find(|variant| variant.discr_value == Some(coroutine::UNRESUMED))
    else {
        return Vec::new();
    };
    let Some(info) = unresumed
        .member
        .ty
        .and_then(|ty| env.target.debug.type_info(ty).ok())
    else {
        return Vec::new();
    };
    info.fields
        .iter()
        .map(|field| (unresumed.member.offset + field.offset, field.name.clone()))
        .collect()
}
