//! `Box<dyn Future>`, `Pin<Box<dyn Future>>`, `&mut dyn Future`: a fat pointer whose vtable
//! names the concrete type. rustc emits one DWARF variable per vtable,
//! `<T as core::future::future::Future>::{vtable}`, whose type's `containing_type` is T.

use crate::dwarf::TypeInfo;
use crate::error::{Error, Result};
use crate::future::{Child, FutureDecoder, Outcome};
use crate::value::Value;

pub fn is_dyn_future(info: &TypeInfo) -> bool {
    info.name.contains("dyn core::future::future::Future") && info.field("pointer").is_some() && info.field("vtable").is_some()
}

pub fn dyn_future<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let target = decoder.target();
    let data = value.field("pointer")?.read_pointer()?;
    let vtable = value.field("vtable")?.read_pointer()?;
    let concrete = target
        .debug
        .index
        .vtable_type(vtable.wrapping_sub(target.load_bias))
        .and_then(|vtable_type| target.debug.type_info(vtable_type).ok())
        .and_then(|info| info.containing_type)
        .ok_or_else(|| Error::layout(format!("no DWARF vtable at {vtable:#x}: cannot tell the boxed future's type")))?;
    Ok(Outcome::SeeThrough(Child { ty: concrete, address: data, boxed: true, branch: None, describe_only: false, prepared: None }))
}
