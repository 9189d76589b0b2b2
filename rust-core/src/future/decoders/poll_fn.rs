//! A `poll_fn` no macro made (the program's own, or a library's): a node at its closure's
//! line, with the futures the closure captures as children. Captures that are no futures
//! (counters, the I/O objects it polls by hand) are left out. (`select!` and `join!` are
//! recognised from what they make, in `coroutine.rs`, before this.)

use crate::error::Result;
use crate::future::await_lines::location_of;
use crate::future::outcome::{DecodeContext, Decoded, Outcome, SearchRoot};
use crate::layouts::rust::{macros, SHARED_REFERENCE_PREFIX};
use crate::model::{Detail, PollFnClosure};
use crate::names;
use crate::value::Value;

/// References a capture goes through (`&mut &mut T` for a captured `&mut self`).
const MAX_CAPTURE_REFERENCES: usize = 3;

pub fn poll_fn<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let closure = value.field(macros::POLL_FN_CLOSURE)?;
    let function = names::resume_function_name(&closure.ty.name);
    let location = context
        .target
        .debug
        .function_declaration(&function, closure.ty.die)
        .map(|decl| location_of(&decl));
    let readable: Vec<&str> = names::split_path(&function)
        .into_iter()
        .filter(|segment| !segment.starts_with("{async_fn#"))
        .collect();
    let summary = match &location {
        Some(at) => format!("poll_fn at {}:{}", at.file, at.line),
        None => "poll_fn".to_string(),
    };
    let mut decoded = Decoded::leaf(
        Detail::PollFn(PollFnClosure {
            closure: Some(readable.join("::")),
        }),
        summary,
    );
    decoded.location = location;
    for field in &closure.ty.fields {
        let mut capture = closure.field(&field.name)?;
        for _ in 0..MAX_CAPTURE_REFERENCES {
            if !capture.ty.name.starts_with(SHARED_REFERENCE_PREFIX) {
                break;
            }
            capture = capture.pointee()?;
        }
        let name = field
            .name
            .strip_prefix(macros::REFERENCE_CAPTURE_PREFIX)
            .unwrap_or(&field.name);
        decoded.searches.push(SearchRoot::value(&capture, name));
    }
    Ok(Outcome::Node(decoded))
}
