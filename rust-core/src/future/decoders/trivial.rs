//! Futures whose type says it all: `yield_now`, `pending`, `ready`.

use serde_json::json;

use crate::error::Result;
use crate::future::{Decoded, FutureDecoder, Outcome};
use crate::model::NodeKind;
use crate::value::Value;

pub fn yield_now<'a>(_: &FutureDecoder<'a>, _: &Value<'a>) -> Result<Outcome> {
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::YieldNow,
        json!({}),
        "yield_now (runs again on the next poll)".into(),
    )))
}

pub fn pending<'a>(_: &FutureDecoder<'a>, _: &Value<'a>) -> Result<Outcome> {
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::Pending,
        json!({}),
        "pending (never completes)".into(),
    )))
}

pub fn ready<'a>(_: &FutureDecoder<'a>, _: &Value<'a>) -> Result<Outcome> {
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::Ready,
        json!({}),
        "ready (completes when polled)".into(),
    )))
}
