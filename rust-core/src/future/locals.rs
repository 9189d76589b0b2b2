//! Locals a suspended coroutine keeps across its `.await`, with the values of simple ones.

use rustc_hash::FxHashSet;
use serde_json::{json, Value as Json};

use crate::dwarf::TypeTag;
use crate::memory::MemoryExt;
use crate::model::Local;
use crate::value::Value;

/// Longest string value shown.
const MAX_STRING: u64 = 256;

/// The fields of a coroutine's active variant, but `skip` and compiler temporaries
/// (`__2`: drop flags, unnamed values), deduplicated by (name, offset): rustc lists upvars
/// once as saved and again at relocated offsets.
pub fn saved_locals(fields: &Value<'_>, skip: &str) -> Vec<Local> {
    let mut seen = FxHashSet::default();
    let mut locals = Vec::new();
    for field in &fields.ty.fields {
        let temporary = field
            .name
            .strip_prefix("__")
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()));
        if field.name == skip
            || field.name.is_empty()
            || temporary
            || !seen.insert((field.name.clone(), field.offset))
        {
            continue;
        }
        let Some(ty) = field.ty else { continue };
        let Some(address) = fields.address.checked_add(field.offset) else {
            continue;
        };
        let Ok(value) = fields.target.value(ty, address) else {
            continue;
        };
        locals.push(Local {
            name: field.name.clone(),
            type_name: value.ty.name.clone(),
            address: format!("{:#x}", value.address),
            value: simple_value(&value),
        });
    }
    locals
}

/// The value of integers, bools, chars, `&str`, `String` and `Option`s of them.
pub fn simple_value(value: &Value<'_>) -> Option<Json> {
    let name = value.ty.name.as_str();
    if value.ty.tag == TypeTag::Base {
        let size = value.ty.size?;
        let raw = value.target.memory.read_uint(value.address, size).ok()?;
        return Some(match name {
            "bool" => json!(raw != 0),
            "char" => json!(char::from_u32(raw as u32)?.to_string()),
            "f32" => json!(f32::from_bits(raw as u32)),
            "f64" => json!(f64::from_bits(raw)),
            _ if name.starts_with('i') || name == "isize" => {
                let shift = 64 - 8 * size;
                json!(((raw << shift) as i64) >> shift)
            }
            _ => json!(raw),
        });
    }
    if name == "&str" {
        let pointer = value.field("data_ptr").ok()?.read_pointer().ok()?;
        let length = value.field("length").ok()?.read_uint().ok()?;
        return read_text(value, pointer, length);
    }
    if name == "alloc::string::String" {
        let vec = value.field("vec").ok()?;
        let length = vec.field("len").ok()?.read_uint().ok()?;
        let pointer = vec
            .find_descendant(|ty| ty.tag == TypeTag::Pointer)
            .ok()?
            .read_pointer()
            .ok()?;
        return read_text(value, pointer, length);
    }
    if name.starts_with("core::option::Option<") {
        let (variant, payload) = value.variant().ok()?;
        return match variant.as_str() {
            "None" => Some(Json::Null),
            "Some" => simple_value(&payload.field("__0").ok()?),
            _ => None,
        };
    }
    None
}

fn read_text(value: &Value<'_>, pointer: u64, length: u64) -> Option<Json> {
    let shown = length.min(MAX_STRING);
    let bytes = value
        .target
        .memory
        .read_bytes(pointer, shown as usize)
        .ok()?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if shown < length {
        text.push('…');
    }
    Some(json!(text))
}
