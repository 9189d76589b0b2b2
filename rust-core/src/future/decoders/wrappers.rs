//! Futures that only wrap another: the node shows the wrapped future instead (marked
//! `boxed` through a `Box`). `Instrumented` keeps a node, for its span's name.

use crate::error::{Error, Result};
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome};
use crate::layouts::libraries::{self, futures};
use crate::layouts::{rust, tokio, tokio_futures};
use crate::model::{Detail, LocalSetRun, Span, WrapperState};
use crate::std_values;
use crate::tokio::anchors::Anchor;
use crate::value::Value;

fn see_through(value: &Value<'_>) -> Outcome {
    Outcome::SeeThrough(Child::of(value))
}

/// `&mut F`, `&F`, `Box<F>` (thin): the pointee.
pub fn pointer<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let boxed = value.ty.name.starts_with(rust::BOX_PREFIX);
    let pointee = value.pointee()?;
    Ok(Outcome::SeeThrough(Child {
        boxed,
        ..Child::of(&pointee)
    }))
}

/// `Pin<P>`: the pointer inside.
pub fn pin<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    Ok(see_through(&std_values::pin_pointer(value)?))
}

pub fn taskdump_root<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    Ok(see_through(&value.field(tokio_futures::TRACE_ROOT_FUTURE)?))
}

/// `ManuallyDrop<F>` and `MaybeDangling<F>` (inside `Instrumented`): what they hold.
pub fn single_field<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let inner = std_values::unwrapped(value)?;
    if inner.address == value.address && inner.ty.die == value.ty.die {
        return Err(Error::layout(format!(
            "{} wraps nothing this tool knows",
            value.ty.name
        )));
    }
    Ok(see_through(&inner))
}

pub fn coop<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    Ok(see_through(&value.field(tokio_futures::COOP_FUTURE)?))
}

/// `StreamExt::next()`: the stream it polls.
pub fn stream_next<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    Ok(see_through(&value.field(futures::NEXT_STREAM)?))
}

/// An enum wrapper: the payload field `field` of the active variant, if it has one; else a
/// plain node saying which state it is in (`Complete`, `Done`, `Gone`, `Empty`).
fn enum_payload<'a>(value: &Value<'a>, fields: &[&str]) -> Result<Outcome> {
    // Some combinators wrap the enum in a newtype struct (`TryFlatten` around `try_flatten::TryFlatten`).
    let mut value = value.clone();
    for _ in 0..4 {
        if value.ty.variant_part.is_some() || value.ty.fields.len() != 1 {
            break;
        }
        let only = value.ty.fields[0].name.clone();
        value = value.field(&only)?;
    }
    let (variant, payload) = value.variant()?;
    for field in fields {
        if let Ok(inner) = payload.field(field) {
            return Ok(see_through(&inner));
        }
    }
    let state = variant.to_lowercase();
    let summary = format!("{} ({state})", short_name(&value.ty.name));
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Future(WrapperState { state }),
        summary,
    )))
}

fn short_name(type_name: &str) -> &str {
    let base = type_name.split('<').next().unwrap_or(type_name);
    base.rsplit("::").next().unwrap_or(base)
}

pub fn futures_map<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    enum_payload(
        &value.field(futures::COMBINATOR_INNER)?,
        futures::MAP_FUTURE,
    )
}

/// `Then` and `AndThen` hold a `Flatten`/`TryFlatten`: first the mapped future, then the
/// one it produced.
pub fn futures_then<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    enum_payload(
        &value.field(futures::COMBINATOR_INNER)?,
        futures::FLATTEN_FUTURE,
    )
}

pub fn futures_and_then<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    futures_then(context, value)
}

pub fn futures_fuse<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    enum_payload(
        &value.field(futures::COMBINATOR_INNER)?,
        futures::FUSE_FUTURE,
    )
}

pub fn futures_maybe_done<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (variant, payload) = value.variant()?;
    if variant == futures::MAYBE_DONE_PENDING {
        return Ok(see_through(&std_values::at(
            &payload,
            futures::MAYBE_DONE_FUTURE,
        )?));
    }
    enum_payload(value, &[])
}

/// `Shared`: the future every clone polls, while none has completed it; its output, once
/// one has (each clone takes a copy when polled).
pub fn futures_shared<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (state, summary) = match std_values::follow(value, futures::SHARED_STATE)? {
        Some(state) => {
            let (variant, payload) = state.variant()?;
            if variant == futures::SHARED_PENDING {
                return Ok(see_through(&payload.field(futures::SHARED_FUTURE)?));
            }
            (
                "output",
                "Shared (its output ready: each clone takes a copy)",
            )
        }
        // The clone that completed it has taken the `Arc`: polled again, it panics.
        None => ("taken", "Shared (its output taken)"),
    };
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Future(WrapperState {
            state: state.into(),
        }),
        summary.to_string(),
    )))
}

pub fn futures_either<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    enum_payload(value, futures::EITHER_FUTURE)
}

/// `tracing::Instrumented<F>`: a node naming the span, with F as its child; seen through
/// when the span is one tokio's own instrumentation opens around every task (the
/// `tokio_unstable` + `tracing` build), as its task-dump `Root` is.
pub fn instrumented<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let inner = value.field(libraries::INSTRUMENTED_FUTURE)?;
    let name = span_name(&value.field(libraries::INSTRUMENTED_SPAN)?);
    if let Ok(Some(name)) = &name {
        if tokio::OWN_SPANS.contains(&name.as_str()) {
            return Ok(see_through(&inner));
        }
    }
    let summary = match &name {
        Ok(Some(name)) => format!("in span `{name}`"),
        // No subscriber wanted it: `Span::none()` keeps no metadata.
        Ok(None) => "in a disabled span".to_string(),
        Err(_) => "in a span (its name is not readable)".to_string(),
    };
    let span = name.ok().flatten();
    Ok(Outcome::Node(Decoded::with_children(
        Detail::Instrumented(Span { span }),
        summary,
        vec![Child::of(&inner)],
    )))
}

/// Longest span name read.
const MAX_SPAN_NAME: u64 = 256;

/// `Span.meta: Option<&'static Metadata>` -> `Metadata.name: &str`; `None` for a span
/// without metadata (disabled).
fn span_name(span: &Value<'_>) -> Result<Option<String>> {
    let Some(metadata) = std_values::option(&span.field(libraries::SPAN_METADATA)?)? else {
        return Ok(None);
    };
    let metadata = metadata.pointee()?;
    let (mut name, cut) = std_values::text(
        &std_values::at_path(&metadata, libraries::METADATA_NAME)?,
        MAX_SPAN_NAME,
    )?;
    if cut {
        name.push('…');
    }
    Ok(Some(name))
}

/// `LocalSet::run_until`'s inner future: the future it runs, and the `LocalSet` noted so
/// its tasks are listed.
pub fn local_set_run_until<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    if let Ok(local_set) = value
        .field(tokio::RUN_UNTIL_LOCAL_SET)
        .and_then(|field| field.pointee())
    {
        context.note(Anchor::LocalSet(local_set.ty.die, local_set.address));
    }
    Ok(see_through(&value.field(tokio::RUN_UNTIL_FUTURE)?))
}

/// A `LocalSet` polled as a future: a leaf that runs the LocalSet's own tasks, noted so
/// that they are listed.
pub fn local_set<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    context.note(Anchor::LocalSet(value.ty.die, value.address));
    let shared = std_values::at_path(value, tokio::LOCAL_SET_SHARED)?;
    Ok(Outcome::Node(Decoded::leaf(
        Detail::LocalSet(LocalSetRun {
            address: shared.address,
            tasks: None,
        }),
        format!("LocalSet {:#x} (runs its own tasks)", shared.address),
    )))
}
