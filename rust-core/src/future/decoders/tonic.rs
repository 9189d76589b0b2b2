//! tonic's `Streaming<T>`: a gRPC message stream (a server-streaming response on the client,
//! a client-streaming request on the server), waiting for its next message from the HTTP/2
//! body underneath.

use serde_json::json;

use crate::error::Result;
use crate::future::{Decoded, FutureDecoder, Outcome};
use crate::model::NodeKind;
use crate::tokio::compat::tonic;
use crate::value::Value;

pub fn streaming<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (state, payload) = value.path(tonic::STATE)?.variant()?;
    let (direction, _) = value.path(tonic::DIRECTION)?.variant()?;
    let what = if direction == "Request" {
        "request"
    } else {
        "response"
    };
    let (reading, length) = match state.as_str() {
        "ReadHeader" => ("waiting for the next message", None),
        "ReadBody" => (
            "reading a message body",
            payload.field(tonic::BODY_LENGTH)?.read_uint().ok(),
        ),
        _ => ("failed", None),
    };
    let length_text = length
        .map(|length| format!(" of {length} bytes"))
        .unwrap_or_default();
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::GrpcStream,
        json!({"direction": what, "state": state.to_lowercase(), "message_length": length}),
        format!("gRPC {what} stream: {reading}{length_text}"),
    )))
}
