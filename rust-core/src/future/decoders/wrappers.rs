//! Futures that only wrap another: the node shows the wrapped future instead (marked
//! `boxed` through a `Box`). `Instrumented` keeps a node, for its span's name.

use serde_json::json;

use crate::error::{Error, Result};
use crate::future::{Child, Decoded, FutureDecoder, Outcome};
use crate::model::NodeKind;
use crate::tokio::compat;
use crate::value::Value;

fn see_through(value: &Value<'_>) -> Outcome {
    Outcome::SeeThrough(Child::of(value))
}

/// `&mut F`, `&F`, `Box<F>` (thin): the pointee.
pub fn pointer<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let boxed = value.ty.name.starts_with(compat::BOX_PREFIX);
    let pointee = value.pointee()?;
    Ok(Outcome::SeeThrough(Child {
        boxed,
        ..Child::of(&pointee)
    }))
}

/// `Pin<P>`: the pointer inside.
pub fn pin<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    Ok(see_through(&value.first_path(compat::PIN_POINTER)?))
}

pub fn taskdump_root<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    Ok(see_through(&value.field("future")?))
}

/// `ManuallyDrop<F>` and `MaybeDangling<F>` (inside `Instrumented`): their only field.
pub fn single_field<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let field = value
        .ty
        .fields
        .first()
        .ok_or_else(|| Error::layout(format!("{} has no field", value.ty.name)))?;
    Ok(see_through(&value.field(&field.name.clone())?))
}

pub fn coop<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    Ok(see_through(&value.field("fut")?))
}

/// `StreamExt::next()`: the stream it polls.
pub fn stream_next<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    Ok(see_through(&value.field("stream")?))
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
    Ok(Outcome::Node(Decoded {
        kind: NodeKind::Future,
        detail: Some(json!({"state": variant.to_lowercase()})),
        summary: Some(format!(
            "{} ({})",
            short_name(&value.ty.name),
            variant.to_lowercase()
        )),
        children: Vec::new(),
    }))
}

fn short_name(type_name: &str) -> &str {
    let base = type_name.split('<').next().unwrap_or(type_name);
    base.rsplit("::").next().unwrap_or(base)
}

pub fn futures_map<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    enum_payload(&value.field("inner")?, &["future"])
}

/// `Then` and `AndThen` hold a `Flatten`/`TryFlatten`: first the mapped future, then the
/// one it produced.
pub fn futures_then<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    enum_payload(&value.field("inner")?, &["f"])
}

pub fn futures_and_then<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    futures_then(decoder, value)
}

pub fn futures_fuse<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    enum_payload(&value.field("inner")?, &["__0"])
}

pub fn futures_maybe_done<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (variant, payload) = value.variant()?;
    if variant == "Future" {
        return Ok(see_through(&payload.field("__0")?));
    }
    enum_payload(value, &[])
}

pub fn futures_either<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    enum_payload(value, &["__0"])
}

/// `tracing::Instrumented<F>`: a node naming the span, with F as its child.
pub fn instrumented<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let inner = value.field("inner")?;
    let span = span_name(&value.field("span")?).ok();
    let summary = match &span {
        Some(name) => format!("in span `{name}`"),
        None => "in a span (its name is not readable)".to_string(),
    };
    Ok(Outcome::Node(Decoded {
        kind: NodeKind::Instrumented,
        detail: Some(json!({"span": span})),
        summary: Some(summary),
        children: vec![Child::of(&inner)],
    }))
}

/// `Span.meta: Option<&'static Metadata>` -> `Metadata.name: &str`.
fn span_name(span: &Value<'_>) -> Result<String> {
    let (variant, payload) = span.field("meta")?.variant()?;
    if variant != "Some" {
        return Err(Error::layout("disabled span"));
    }
    let metadata = payload.field("__0")?.pointee()?;
    match crate::future::locals::simple_value(&metadata.field("name")?) {
        Some(serde_json::Value::String(name)) => Ok(name),
        _ => Err(Error::layout("span name unreadable")),
    }
}

/// `LocalSet::run_until`'s inner future: the future it runs, and the `LocalSet` noted so
/// its tasks are listed.
pub fn local_set_run_until<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    if let Ok(local_set) = value
        .field(compat::RUN_UNTIL_LOCAL_SET)
        .and_then(|field| field.pointee())
    {
        decoder.note_local_set(local_set.ty.die, local_set.address);
    }
    Ok(see_through(&value.field(compat::RUN_UNTIL_FUTURE)?))
}
