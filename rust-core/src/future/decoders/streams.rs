//! Streams: `tokio_stream::StreamMap` (each stream a child, named by its key where the key
//! is a string or number) and `async_stream`'s `stream!` generators (the generator's async
//! block as the child). Adapters (`Map`, `Filter`, `Next`, ...) need no decoder: the
//! structural search sees through them.

use serde_json::json;

use super::vec_elements;
use crate::error::Result;
use crate::future::locals::simple_value;
use crate::future::{Child, Decoded, FutureDecoder, Outcome, MAX_CHILDREN};
use crate::model::{Branch, BranchStatus, NodeKind};
use crate::tokio::compat::{async_stream, tokio_stream, TUPLE_FIRST, TUPLE_SECOND};
use crate::value::Value;

pub fn stream_map<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let entries = vec_elements(
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
            serde_json::Value::String(text) => text,
            other => other.to_string(),
        });
        let stream = entry.field(TUPLE_SECOND)?;
        children.push(Child {
            branch: Some(Branch {
                name,
                ..Branch::new(index, BranchStatus::Pending)
            }),
            ..Child::of(&stream)
        });
    }
    Ok(Outcome::Node(Decoded::tree(
        NodeKind::StreamMap,
        "StreamMap",
        children,
        json!({}),
    )))
}

/// `stream! { ... }`: the generator is an async block that yields through a channel.
pub fn async_stream<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let done = value.field(async_stream::DONE)?.read_uint()? != 0;
    let generator = value.field(async_stream::GENERATOR)?;
    let (summary, children) = if done {
        ("stream! generator (done)".to_string(), Vec::new())
    } else {
        ("stream! generator".to_string(), vec![Child::of(&generator)])
    };
    Ok(Outcome::Node(Decoded {
        kind: NodeKind::StreamGenerator,
        detail: Some(json!({"done": done})),
        summary: Some(summary),
        children,
    }))
}
