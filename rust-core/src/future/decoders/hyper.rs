//! hyper's HTTP/1 connections (`proto::h1::dispatch::Dispatcher`): what the connection is
//! doing, from its read and write states, and for a server the in-flight service future
//! (the handler) as the child.

use serde_json::json;

use super::channels::oneshot_channel;
use super::hex;
use crate::error::Result;
use crate::future::{Child, Decoded, FutureDecoder, Outcome};
use crate::links::HOLDS_SENDER_OF;
use crate::model::NodeKind;
use crate::tokio::compat::{hyper, TUPLE_FIRST};
use crate::value::Value;

/// The variant name of a state enum, lowercased (`Init`, `Body`, `KeepAlive`, `Closed`).
fn state(dispatcher: &Value<'_>, path: &[&str]) -> Result<String> {
    Ok(dispatcher.path(path)?.variant_or_self()?.0.to_lowercase())
}

/// The value inside `Pin<Box<Option<F>>>` / `Option<F>`, if there is one.
fn some<'a>(value: &Value<'a>) -> Result<Option<Value<'a>>> {
    let mut value = value.clone();
    for _ in 0..4 {
        if value.ty.name.starts_with("core::option::Option<") {
            let (variant, payload) = value.variant()?;
            return (variant == "Some")
                .then(|| payload.field(TUPLE_FIRST))
                .transpose();
        }
        value = if value.ty.tag == crate::dwarf::TypeTag::Pointer {
            value.pointee()?
        } else {
            value.first_path(crate::tokio::compat::PIN_POINTER)?
        };
    }
    Ok(None)
}

pub fn server_connection<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let reading = state(value, hyper::READING)?;
    let writing = state(value, hyper::WRITING)?;
    let handler = some(&value.path(hyper::IN_FLIGHT)?)?;
    let doing = if handler.is_some() {
        "running the service for a request"
    } else if writing == "body" {
        "writing a response"
    } else if reading == "body" || reading == "continue" {
        "reading a request body"
    } else if reading == "closed" || writing == "closed" {
        "closing"
    } else {
        "waiting for a request"
    };
    let children = handler
        .iter()
        .map(|future| Child {
            via: Some(hyper::IN_FLIGHT.join(".")),
            ..Child::of(future)
        })
        .collect();
    Ok(connection(
        NodeKind::HttpServerConnection,
        "HTTP/1 server connection",
        doing,
        &reading,
        &writing,
        children,
    ))
}

pub fn client_connection<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let reading = state(value, hyper::READING)?;
    let writing = state(value, hyper::WRITING)?;
    // The request's response goes back through a oneshot whose sender the callback holds.
    let callback = some(&value.path(hyper::CALLBACK)?)?;
    let waiting = callback.is_some();
    let responds_on = match &callback {
        Some(callback) => {
            let (_, retry_or_not) = callback.variant()?;
            match some(&retry_or_not.field(TUPLE_FIRST)?)? {
                Some(sender) => oneshot_channel(&sender)?,
                None => None,
            }
        }
        None => None,
    };
    let doing = if writing == "body" {
        "writing a request body"
    } else if reading == "body" {
        "reading a response body"
    } else if waiting {
        "waiting for the response"
    } else if reading == "closed" || writing == "closed" {
        "closing"
    } else {
        "idle, no request"
    };
    let mut outcome = connection(
        NodeKind::HttpClientConnection,
        "HTTP/1 client connection",
        doing,
        &reading,
        &writing,
        Vec::new(),
    );
    if let Outcome::Node(Decoded {
        detail: Some(serde_json::Value::Object(detail)),
        ..
    }) = &mut outcome
    {
        detail.insert(HOLDS_SENDER_OF.to_string(), json!(responds_on.map(hex)));
    }
    Ok(outcome)
}

fn connection(
    kind: NodeKind,
    what: &str,
    doing: &str,
    reading: &str,
    writing: &str,
    children: Vec<Child>,
) -> Outcome {
    Outcome::Node(Decoded {
        kind,
        detail: Some(json!({"activity": doing, "reading": reading, "writing": writing})),
        summary: Some(format!(
            "{what}: {doing} (reading: {reading}, writing: {writing})"
        )),
        children,
    })
}
