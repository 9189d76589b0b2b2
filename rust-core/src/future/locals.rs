//! Locals a suspended coroutine keeps across its `.await`, with the values of simple ones.

use rustc_hash::FxHashSet;

use crate::dwarf::TypeTag;
use crate::layouts::rust::{coroutine, OPTION_PREFIX};
use crate::memory::MemoryExt;
use crate::model::{Local, SimpleValue};
use crate::std_values;
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
            .strip_prefix(coroutine::TEMPORARY_PREFIX)
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
            address: value.address,
            value: simple_value(&value),
        });
    }
    locals
}

/// The value of integers, bools, chars, `&str`, `String` and `Option`s of them.
pub fn simple_value(value: &Value<'_>) -> Option<SimpleValue> {
    let name = value.ty.name.as_str();
    if value.ty.tag == TypeTag::Base {
        let size = value.ty.size?;
        let raw = value.target.memory.read_uint(value.address, size).ok()?;
        return Some(match name {
            "bool" => SimpleValue::Bool(raw != 0),
            "char" => SimpleValue::Text(char::from_u32(raw as u32)?.to_string()),
            "f32" => SimpleValue::Float(f64::from(f32::from_bits(raw as u32))),
            "f64" => SimpleValue::Float(f64::from_bits(raw)),
            _ if name.starts_with('i') || name == "isize" => {
                let shift = 64 - 8 * size;
                SimpleValue::Signed(((raw << shift) as i64) >> shift)
            }
            _ => SimpleValue::Unsigned(raw),
        });
    }
    if std_values::is_text(&value.ty) {
        let (mut text, cut) = std_values::text(value, MAX_STRING).ok()?;
        if cut {
            text.push('…');
        }
        return Some(SimpleValue::Text(text));
    }
    if name.starts_with(OPTION_PREFIX) {
        return match std_values::option(value).ok()? {
            None => Some(SimpleValue::Null),
            Some(inner) => simple_value(&inner),
        };
    }
    None
}
