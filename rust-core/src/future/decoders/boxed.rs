//! `Box<dyn Future>`, `Pin<Box<dyn Future>>`, `&mut dyn Future`, and the same for `dyn
//! Stream`: a fat pointer whose vtable names the concrete type. rustc emits one DWARF
//! variable per vtable, `<T as core::future::future::Future>::{vtable}` (or
//! `futures_core::stream::Stream`), whose type's `containing_type` is T.

use crate::dwarf::{DieRef, TypeInfo};
use crate::error::{Error, Result};
use crate::future::outcome::{Child, DecodeContext, Outcome};
use crate::layouts::rust;
use crate::value::Value;

/// Trait objects that are futures: `dyn Future`, `dyn Stream`.
const DYN_FUTURES: &[&str] = &[
    "dyn core::future::future::Future",
    "dyn futures_core::stream::Stream",
];
const DYN_BODY: &[&str] = &["dyn http_body::Body"];
/// The traits whose vtables name a future's concrete type (or a body's, which may stream
/// from a future of its own).
const FUTURE_TRAITS: &[&str] = &[
    "core::future::future::Future",
    "futures_core::stream::Stream",
    "http_body::Body",
];
/// Owning or exclusive fat pointers; shared ones (`Arc<dyn Future>`) point at their
/// reference counts, not at the future.
const FAT_POINTERS: &[&str] = &[
    rust::BOX_PREFIX,
    rust::MUT_REFERENCE_PREFIX,
    rust::MUT_POINTER_PREFIX,
];
const BOX: &[&str] = &[rust::BOX_PREFIX];

/// Whether `info` is one of `pointers` to a trait object of one of `traits` itself (not to
/// something merely generic over one, like `Arc<dyn Executor<Pin<Box<dyn Future>>>>`).
fn fat_pointer_to(info: &TypeInfo, pointers: &[&str], traits: &[&str]) -> bool {
    let Some(pointee) = pointers
        .iter()
        .find_map(|prefix| info.name.strip_prefix(prefix))
    else {
        return false;
    };
    let pointee = pointee.strip_prefix('(').unwrap_or(pointee);
    traits
        .iter()
        .any(|trait_object| pointee.starts_with(trait_object))
        && info.field(rust::FAT_POINTER_DATA).is_some()
        && info.field(rust::FAT_POINTER_VTABLE).is_some()
}

/// A fat pointer to a `dyn Future` or `dyn Stream`.
pub fn is_dyn_future(info: &TypeInfo) -> bool {
    fat_pointer_to(info, FAT_POINTERS, DYN_FUTURES)
}

/// A `Box<dyn http_body::Body>`: not a future, but a body may stream from one (a gRPC
/// server's response stream), so the structural search looks inside.
pub fn is_dyn_body(info: &TypeInfo) -> bool {
    fat_pointer_to(info, BOX, DYN_BODY)
}

/// A trait object's concrete value, through its vtable (a `dyn Future`/`Stream`, or a
/// `dyn Body` reached through a wrapper).
pub fn dyn_future<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (concrete, data) = concrete(context, value)?;
    Ok(Outcome::SeeThrough(Child {
        boxed: true,
        ..Child::at(concrete, data)
    }))
}

/// Whether a trait object's data pointer is null (an empty `Option<Box<dyn Body>>` niche).
pub fn is_null(value: &Value<'_>) -> Result<bool> {
    Ok(value.field(rust::FAT_POINTER_DATA)?.read_pointer()? == 0)
}

/// The concrete type behind a trait-object fat pointer, from its vtable, and its address.
pub fn concrete(context: &DecodeContext<'_>, value: &Value<'_>) -> Result<(DieRef, u64)> {
    let target = context.target;
    let data = value.field(rust::FAT_POINTER_DATA)?.read_pointer()?;
    let vtable = value.field(rust::FAT_POINTER_VTABLE)?.read_pointer()?;
    let concrete = target
        .debug
        .vtable_type(vtable.wrapping_sub(target.load_bias), FUTURE_TRAITS)
        .and_then(|vtable_type| target.debug.type_info(vtable_type).ok())
        .and_then(|info| info.containing_type)
        .ok_or_else(|| {
            Error::layout(format!(
                "no DWARF vtable at {vtable:#x}: cannot tell the boxed value's type"
            ))
        })?;
    Ok((concrete, data))
}
