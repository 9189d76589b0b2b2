//! tonic's `Streaming<T>`: a gRPC message stream (a server-streaming response on the client,
//! a client-streaming request on the server), waiting for its next message from the HTTP/2
//! body underneath.

use crate::error::Result;
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::libraries::tonic;
use crate::model::{Detail, GrpcStream};
use crate::std_values;
use crate::value::Value;

pub fn streaming<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (state, payload) = std_values::at_path(value, tonic::STATE)?.variant()?;
    let (direction, _) = std_values::at_path(value, tonic::DIRECTION)?.variant()?;
    let what = if direction == tonic::REQUEST {
        "request"
    } else {
        "response"
    };
    let (reading, length) = match state.as_str() {
        tonic::READ_HEADER => ("waiting for the next message", None),
        tonic::READ_BODY => (
            "reading a message body",
            payload.field(tonic::BODY_LENGTH)?.read_uint().ok(),
        ),
        _ => ("failed", None),
    };
    let length_text = length
        .map(|length| format!(" of {length} bytes"))
        .unwrap_or_default();
    let summary = format!("gRPC {what} stream: {reading}{length_text}");
    let stream = GrpcStream {
        direction: what,
        message_length: length,
        state: state.to_lowercase(),
    };
    Ok(Outcome::Node(Decoded::leaf(
        Detail::GrpcStream(stream),
        summary,
    )))
}
