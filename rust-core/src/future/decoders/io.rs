//! Waiting for a file descriptor: socket `accept`/`readable`/`writable`/`ready`, the
//! `AsyncReadExt`/`AsyncWriteExt` futures, and a bare `Readiness`. Reports the fd, the
//! interest, and (live, local processes) what the fd is.

use serde_json::json;

use super::{async_argument, async_self};
use crate::error::Result;
use crate::future::{Decoded, FutureDecoder, Outcome};
use crate::model::NodeKind;
use crate::tokio::compat::{self, leaves};
use crate::value::Value;

/// tokio `Interest` bits.
const INTEREST_NAMES: &[(u64, &str)] = &[
    (1, "read"),
    (2, "write"),
    (4, "aio"),
    (8, "lio"),
    (0x10, "priority"),
    (0x20, "error"),
];

fn interest_names(bits: u64) -> Vec<&'static str> {
    INTEREST_NAMES
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| *name)
        .collect()
}

/// What `/proc/PID/fd/N` says the descriptor is: socket, pipe, file, ...
fn fd_kind(decoder: &FutureDecoder<'_>, fd: i64) -> Option<String> {
    let pid = decoder.live().pid?;
    let link = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()?;
    let link = link.to_string_lossy();
    Some(match link.split(':').next() {
        Some("socket") => "socket".to_string(),
        Some("pipe") => "pipe".to_string(),
        Some("anon_inode") => link
            .trim_start_matches("anon_inode:")
            .trim_matches(|c| c == '[' || c == ']')
            .to_string(),
        _ if link.starts_with('/') => "file".to_string(),
        _ => link.to_string(),
    })
}

/// tokio-stream's `TcpListenerStream`/`UnixListenerStream`: accepting on its listener.
pub fn listener_stream<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    fd_leaf(
        decoder,
        &value.field(compat::tokio_stream::WRAPPER_INNER)?,
        vec!["read"],
        "accept",
    )
}

fn fd_leaf(
    decoder: &FutureDecoder<'_>,
    owner: &Value<'_>,
    interest: Vec<&str>,
    operation: &str,
) -> Result<Outcome> {
    let fd = owner.find_field(leaves::FD)?.read_uint()? as i32 as i64;
    let kind = fd_kind(decoder, fd);
    let detail = json!({"fd": fd, "interest": interest, "operation": operation, "fd_kind": kind});
    let what = kind.map(|kind| format!(" ({kind})")).unwrap_or_default();
    let summary = format!(
        "{operation} on fd {fd}{what}, waiting for {}",
        interest.join("+")
    );
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::IoReadiness,
        detail,
        summary,
    )))
}

/// `TcpListener::accept`, `UnixListener::accept`, `*::readable/writable/ready`.
pub fn socket_wait<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let socket = async_self(value)?;
    let operation = crate::names::split_path(&value.ty.name)
        .iter()
        .rev()
        .nth(1)
        .map(|s| s.to_string())
        .unwrap_or_default();
    let interest = match operation.as_str() {
        "writable" => vec!["write"],
        "ready" => {
            interest_names(async_argument(value, leaves::READY_INTEREST_ARGUMENT)?.read_uint()?)
        }
        _ => vec!["read"],
    };
    fd_leaf(decoder, &socket, interest, &operation)
}

/// `AsyncReadExt::read`/`read_exact`/`read_buf`: the reader's fd.
pub fn read<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    fd_leaf(
        decoder,
        &value.field(leaves::READ_SOURCE)?.pointee()?,
        vec!["read"],
        "read",
    )
}

/// `AsyncWriteExt::write`/`write_all`: the writer's fd.
pub fn write<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    fd_leaf(
        decoder,
        &value.field(leaves::WRITE_TARGET)?.pointee()?,
        vec!["write"],
        "write",
    )
}

/// A `Readiness` met on its own: the interest is known, the fd is not.
pub fn readiness_leaf<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let interest = interest_names(value.find_field(leaves::READINESS_INTEREST)?.read_uint()?);
    let summary = format!("waiting for I/O readiness ({})", interest.join("+"));
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::IoReadiness,
        json!({"fd": null, "interest": interest, "operation": null, "fd_kind": null}),
        summary,
    )))
}
