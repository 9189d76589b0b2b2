//! hyper's HTTP/1 connections (`proto::h1::dispatch::Dispatcher`): what the connection is
//! doing, from its read and write states, and for a server the in-flight service future
//! (the handler) and the response body it writes as children.

use super::channels::oneshot_channel;
use super::io;
use crate::dwarf::TypeTag;
use crate::error::Result;
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome};
use crate::layouts::libraries::{self, hyper};
use crate::model::{Detail, HttpClient, HttpServer};
use crate::std_values;
use crate::value::Value;

/// The variant name of a state enum, lowercased (`Init`, `Body`, `KeepAlive`, `Closed`).
fn state(dispatcher: &Value<'_>, path: crate::layouts::Path) -> Result<String> {
    Ok(std_values::at_path(dispatcher, path)?
        .variant_or_self()?
        .0
        .to_lowercase())
}

/// The value inside `Pin<Box<Option<F>>>` / `Option<F>`, if there is one.
fn some<'a>(value: &Value<'a>) -> Result<Option<Value<'a>>> {
    let mut value = value.clone();
    for _ in 0..4 {
        if std_values::is_option(&value.ty) {
            return std_values::option(&value);
        }
        value = if value.ty.tag == TypeTag::Pointer {
            value.pointee()?
        } else {
            std_values::pin_pointer(&value)?
        };
    }
    Ok(None)
}

pub fn server_connection<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let reading = state(value, hyper::READING)?;
    let writing = state(value, hyper::WRITING)?;
    let handler = some(&std_values::at_path(value, hyper::IN_FLIGHT)?)?;
    let unparsed = std_values::at_path(value, hyper::CONN_READ_BUFFER)?
        .field(libraries::BYTES_LENGTH)?
        .read_uint()?;
    let doing = if handler.is_some() {
        "running the service for a request"
    } else if writing == hyper::STATE_BODY {
        "writing a response"
    } else if reading == hyper::STATE_BODY || reading == hyper::STATE_CONTINUE {
        "reading a request body"
    } else if reading == hyper::STATE_CLOSED || writing == hyper::STATE_CLOSED {
        "closing"
    } else if unparsed > 0 {
        // Part of a request head has arrived; hyper parses it once the head is whole.
        "reading a request head"
    } else {
        "waiting for a request"
    };
    let mut children: Vec<Child> = handler
        .iter()
        .map(|future| Child {
            via: Some(hyper::IN_FLIGHT_VIA.to_string()),
            ..Child::of(future)
        })
        .collect();
    // The response body it writes: what the body streams from (a file, a channel).
    if writing == hyper::STATE_BODY {
        if let Some(body) = some(&value.field(hyper::BODY_RX)?)? {
            children.push(Child {
                via: Some(hyper::BODY_RX.to_string()),
                held: true,
                ..Child::of(&body)
            });
        }
    }
    let fd = connection_fd(value)?;
    let summary = summary("HTTP/1 server connection", fd, doing, &reading, &writing);
    let detail = Detail::HttpServerConnection(HttpServer {
        activity: doing,
        fd,
        unparsed,
        reading,
        writing,
    });
    Ok(Outcome::Node(Decoded::with_children(
        detail, summary, children,
    )))
}

pub fn client_connection<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let reading = state(value, hyper::READING)?;
    let writing = state(value, hyper::WRITING)?;
    // The request's response goes back through a oneshot whose sender the callback holds.
    let callback = some(&std_values::at_path(value, hyper::CALLBACK)?)?;
    let waiting = callback.is_some();
    let responds_on = match &callback {
        Some(callback) => {
            let (_, retry_or_not) = callback.variant()?;
            match some(&retry_or_not.field(hyper::CALLBACK_SENDER)?)? {
                Some(sender) => oneshot_channel(&sender)?,
                None => None,
            }
        }
        None => None,
    };
    let doing = if writing == hyper::STATE_BODY {
        "writing a request body"
    } else if reading == hyper::STATE_BODY {
        "reading a response body"
    } else if waiting {
        "waiting for the response"
    } else if reading == hyper::STATE_CLOSED || writing == hyper::STATE_CLOSED {
        "closing"
    } else {
        "idle, no request"
    };
    let fd = connection_fd(value)?;
    let summary = summary("HTTP/1 client connection", fd, doing, &reading, &writing);
    let detail = Detail::HttpClientConnection(HttpClient {
        activity: doing,
        fd,
        holds_sender_of: responds_on,
        reading,
        writing,
    });
    Ok(Outcome::Node(Decoded::leaf(detail, summary)))
}

fn summary(what: &str, fd: Option<i64>, doing: &str, reading: &str, writing: &str) -> String {
    let on = fd.map(|fd| format!(" on fd {fd}")).unwrap_or_default();
    format!("{what}{on}: {doing} (reading: {reading}, writing: {writing})")
}

/// The fd of the connection's socket, where the I/O tables lead to one (not through TLS).
fn connection_fd(dispatcher: &Value<'_>) -> Result<Option<i64>> {
    let connection_io = std_values::at_path(dispatcher, hyper::CONN_IO)?;
    match io::io_object(&connection_io)? {
        Some(object) => Ok(Some(io::fd_of(&object)?)),
        None => Ok(None),
    }
}

/// h2's client `ResponseFuture`: the response's headers on its stream.
pub fn http2_response<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let stream_id =
        crate::std_values::at_path(value, crate::layouts::libraries::h2::STREAM_ID)?.read_uint()?;
    let summary = format!("waiting for the HTTP/2 response on stream {stream_id}");
    Ok(Outcome::Node(Decoded::leaf(
        Detail::Http2Response(crate::model::Http2Stream { stream_id }),
        summary,
    )))
}
