//! Streams: `tokio_stream::StreamMap` (each stream a child, named by its key where the key
//! is a string or number) and `async_stream`'s `stream!` generators (the generator's async
//! block as the child). Adapters (`Map`, `Filter`, `Next`, ...) need no decoder: the
//! structural search sees through them.

use crate::error::Result;
use crate::future::locals::simple_value;
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome, MAX_CHILDREN};
use crate::layouts::libraries::{async_stream, tokio_stream};
use crate::layouts::rust::{TUPLE_FIRST, TUPLE_SECOND};
use crate::model::{Branch, BranchStatus, Detail, Generator, SetKind, SimpleValue};
use crate::std_values;
use crate::value::Value;

pub fn stream_map<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let entries = std_values::vec_elements(
        &value.field(tokio_stream::STREAM_MAP_ENTRIES)?,
        MAX_CHILDREN as u64,
    )?;
    let mut children = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let key = entry
            .field(TUPLE_FIRST)
            .ok()
            .and_then(|key| simple_value(&key));
        let name = key.map(|key| match key {
            SimpleValue::Text(text) => text,
            other => other.to_string(),
        });
        let stream = entry.field(TUPLE_SECOND)?;
        let branch = Branch {
            name,
            ..Branch::new(index, BranchStatus::Pending)
        };
        children.push(Child {
            branch: Some(branch),
            ..Child::of(&stream)
        });
    }
    Ok(Outcome::Node(Decoded::set(
        SetKind::StreamMap,
        "StreamMap",
        children,
        None,
    )))
}

/// `stream! { ... }`: the generator is an async block that yields through a channel.
pub fn async_stream<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let done = value.field(async_stream::DONE)?.read_uint()? != 0;
    let generator = value.field(async_stream::GENERATOR)?;
    let (summary, children) = if done {
        ("stream! generator (done)".to_string(), Vec::new())
    } else {
        ("stream! generator".to_string(), vec![Child::of(&generator)])
    };
    Ok(Outcome::Node(Decoded::with_children(
        Detail::StreamGenerator(Generator { done }),
        summary,
        children,
    )))
}
