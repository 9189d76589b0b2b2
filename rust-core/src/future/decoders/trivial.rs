//! Futures whose type says it all: `yield_now`, `pending`, `ready`, and streams that are
//! ready whenever polled.

use crate::error::Result;
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::model::{Detail, Empty};
use crate::value::Value;

pub fn yield_now<'a>(_: &DecodeContext<'a>, _: &Value<'a>) -> Result<Outcome> {
    let summary = "yield_now (runs again on the next poll)".to_string();
    Ok(Outcome::Node(Decoded::leaf(
        Detail::YieldNow(Empty {}),
        summary,
    )))
}

pub fn pending<'a>(_: &DecodeContext<'a>, _: &Value<'a>) -> Result<Outcome> {
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Pending(Empty {}),
        "pending (never completes)".to_string(),
    )))
}

pub fn ready<'a>(_: &DecodeContext<'a>, _: &Value<'a>) -> Result<Outcome> {
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Ready(Empty {}),
        "ready (completes when polled)".to_string(),
    )))
}

/// futures' `stream::iter(iterator)`: a stream that yields each item when polled.
pub fn iter_stream<'a>(_: &DecodeContext<'a>, _: &Value<'a>) -> Result<Outcome> {
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Ready(Empty {}),
        "stream::iter (yields its next item when polled)".to_string(),
    )))
}

/// hickory-net's `UdpClientStream`: ready whenever polled, it holds nothing to wait on (its
/// requests wait on sockets of their own, in the futures their callers hold).
pub fn udp_client_stream<'a>(_: &DecodeContext<'a>, _: &Value<'a>) -> Result<Outcome> {
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Ready(Empty {}),
        "UdpClientStream (ready when polled; its requests wait in their callers' futures)"
            .to_string(),
    )))
}
