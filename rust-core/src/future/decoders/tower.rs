//! tower's `Buffer`: a caller's response future waits for the Buffer's worker task to take
//! its request, and the worker holds at most one request while its service is not ready.
//! Both name the oneshot channel the response comes back on, so the report can say which
//! worker task holds a caller's request (`crate::links`).

use super::channels::oneshot_channel;
use crate::error::Result;
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome, SearchRoot};
use crate::layouts::libraries::tower;
use crate::model::{BufferWorker, BufferedRequest, Detail};
use crate::std_values;
use crate::value::Value;

pub fn buffer_response<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (state, payload) = value.field(tower::RESPONSE_STATE)?.variant()?;
    if state == tower::STATE_POLLING {
        return Ok(Outcome::SeeThrough(Child::of(
            &payload.field(tower::POLLING_FUTURE)?,
        )));
    }
    if state != tower::STATE_WAITING {
        let request = BufferedRequest {
            channel: None,
            state: state.to_lowercase(),
            worker_task: None,
        };
        let summary = "tower Buffer request failed".to_string();
        return Ok(Outcome::Node(Decoded::leaf(
            Detail::TowerBufferResponse(request),
            summary,
        )));
    }
    let receiver = payload.field(tower::WAITING_RECEIVER)?;
    let channel = oneshot_channel(&receiver)?;
    let request = BufferedRequest {
        channel,
        state: "queued".to_string(),
        worker_task: None,
    };
    let summary = "request queued in a tower Buffer, waiting for its worker".to_string();
    Ok(Outcome::Node(Decoded::with_children(
        Detail::TowerBufferResponse(request),
        summary,
        vec![Child::of(&receiver)],
    )))
}

pub fn buffer_worker<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let holding = match std_values::option(&value.field(tower::WORKER_MESSAGE)?)? {
        Some(message) => oneshot_channel(&message.field(tower::MESSAGE_SENDER)?)?,
        None => None,
    };
    let summary = match holding {
        Some(_) => "tower Buffer worker: holding a request until its service is ready",
        None => "tower Buffer worker: waiting for requests",
    };
    // What the service waits on to become ready (a concurrency limit's semaphore, say).
    let service = value.field(tower::WORKER_SERVICE)?;
    let detail = Detail::TowerBufferWorker(BufferWorker {
        holds_sender_of: holding,
    });
    let mut decoded = Decoded::leaf(detail, summary.to_string());
    decoded.searches = vec![SearchRoot::fields_of(&service, tower::WORKER_SERVICE)];
    Ok(Outcome::Node(decoded))
}
