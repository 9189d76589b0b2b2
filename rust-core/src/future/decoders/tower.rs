//! tower's `Buffer`: a caller's response future waits for the Buffer's worker task to take
//! its request, and the worker holds at most one request while its service is not ready.
//! Both name the oneshot channel the response comes back on, so the report can say which
//! worker task holds a caller's request (`crate::links`).

use serde_json::json;

use super::channels::oneshot_channel;
use super::hex;
use crate::error::Result;
use crate::future::{Child, Decoded, FutureDecoder, Outcome};
use crate::links::HOLDS_SENDER_OF;
use crate::model::NodeKind;
use crate::tokio::compat::{tower, TUPLE_FIRST};
use crate::value::Value;

pub fn buffer_response<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (state, payload) = value.field(tower::RESPONSE_STATE)?.variant()?;
    if state == tower::STATE_POLLING {
        return Ok(Outcome::SeeThrough(Child::of(
            &payload.field(tower::POLLING_FUTURE)?,
        )));
    }
    if state != tower::STATE_WAITING {
        return Ok(Outcome::Node(Decoded::leaf(
            NodeKind::TowerBufferResponse,
            json!({"state": state.to_lowercase(), "channel": null, "worker_task": null}),
            "tower Buffer request failed".to_string(),
        )));
    }
    let receiver = payload.field(tower::WAITING_RECEIVER)?;
    let channel = oneshot_channel(&receiver)?;
    Ok(Outcome::Node(Decoded {
        kind: NodeKind::TowerBufferResponse,
        detail: Some(json!({"state": "queued", "channel": channel.map(hex), "worker_task": null})),
        summary: Some("request queued in a tower Buffer, waiting for its worker".to_string()),
        children: vec![Child::of(&receiver)],
    }))
}

pub fn buffer_worker<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (variant, message) = value.field(tower::WORKER_MESSAGE)?.variant()?;
    let holding = if variant == "Some" {
        oneshot_channel(&message.field(TUPLE_FIRST)?.field(tower::MESSAGE_SENDER)?)?
    } else {
        None
    };
    let summary = match holding {
        Some(_) => "tower Buffer worker: holding a request until its service is ready",
        None => "tower Buffer worker: waiting for requests",
    };
    // What the service waits on to become ready (a concurrency limit's semaphore, say).
    let service = value.field(tower::WORKER_SERVICE)?;
    let via = |found: &str| format!("{}.{found}", tower::WORKER_SERVICE);
    let children = decoder
        .inner_futures(&service)?
        .into_iter()
        .map(|found| Child {
            via: Some(via(&found.via)),
            ..Child::of(&found.value)
        })
        .collect();
    Ok(Outcome::Node(Decoded {
        kind: NodeKind::TowerBufferWorker,
        detail: Some(json!({HOLDS_SENDER_OF: holding.map(hex)})),
        summary: Some(summary.to_string()),
        children,
    }))
}
