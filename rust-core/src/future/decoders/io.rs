//! Waiting for a file descriptor: socket `accept`/`readable`/`writable`/`ready`, the
//! `AsyncReadExt`/`AsyncWriteExt` futures, and a bare `Readiness`. Reports the fd, the
//! interest, and (live, local processes) what the fd is.

use crate::error::Result;
use crate::future::env::{async_argument, async_self};
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::libraries::tokio_stream;
use crate::layouts::tokio_futures as layout;
use crate::model::{Detail, IoWait};
use crate::names;
use crate::std_values;
use crate::value::Value;

fn interest_names(bits: u64) -> Vec<&'static str> {
    layout::INTEREST_BITS
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| *name)
        .collect()
}

/// What `/proc/PID/fd/N` says the descriptor is: socket, pipe, file, ...
fn fd_kind(context: &DecodeContext<'_>, fd: i64) -> Option<String> {
    let pid = context.live.pid?;
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

/// The fd of a tokio I/O type, through the layout table: where the type keeps its
/// `PollEvented`, then the fd inside it. A type the table does not know is searched for a
/// field named `fd`, which the node then says.
fn fd_of(owner: &Value<'_>) -> Result<i64> {
    let known = layout::IO_OWNERS
        .iter()
        .find(|(prefix, _)| owner.ty.name.starts_with(prefix));
    let fd = match known {
        Some((_, path)) => {
            let poll_evented = std_values::at_path(owner, path)?;
            std_values::at(&poll_evented, layout::POLL_EVENTED_FD)?
        }
        None => owner.search_field(layout::FD_SEARCHED)?,
    };
    Ok(fd.read_uint()? as i32 as i64)
}

/// tokio-stream's `TcpListenerStream`/`UnixListenerStream`: accepting on its listener.
pub fn listener_stream<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    fd_leaf(
        context,
        &value.field(tokio_stream::WRAPPER_INNER)?,
        vec!["read"],
        "accept",
    )
}

fn fd_leaf(
    context: &DecodeContext<'_>,
    owner: &Value<'_>,
    interest: Vec<&'static str>,
    operation: &str,
) -> Result<Outcome> {
    let fd = fd_of(owner)?;
    let kind = fd_kind(context, fd);
    let what = kind
        .as_ref()
        .map(|kind| format!(" ({kind})"))
        .unwrap_or_default();
    let summary = format!(
        "{operation} on fd {fd}{what}, waiting for {}",
        interest.join("+")
    );
    let wait = IoWait {
        fd: Some(fd),
        fd_kind: kind,
        interest,
        operation: Some(operation.to_string()),
    };
    Ok(Outcome::Node(Decoded::leaf(
        Detail::IoReadiness(wait),
        summary,
    )))
}

/// `TcpListener::accept`, `UnixListener::accept`, `*::readable/writable/ready`.
pub fn socket_wait<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let socket = async_self(value)?;
    let operation = names::split_path(&value.ty.name)
        .iter()
        .rev()
        .nth(1)
        .map(|s| s.to_string())
        .unwrap_or_default();
    let interest = match operation.as_str() {
        layout::WRITABLE_FN => vec!["write"],
        layout::READY_FN => {
            interest_names(async_argument(value, layout::READY_INTEREST_ARGUMENT)?.read_uint()?)
        }
        _ => vec!["read"],
    };
    fd_leaf(context, &socket, interest, &operation)
}

/// `AsyncReadExt::read`/`read_exact`/`read_buf`: the reader's fd.
pub fn read<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    fd_leaf(
        context,
        &value.field(layout::READ_SOURCE)?.pointee()?,
        vec!["read"],
        "read",
    )
}

/// `AsyncWriteExt::write`/`write_all`: the writer's fd.
pub fn write<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    fd_leaf(
        context,
        &value.field(layout::WRITE_TARGET)?.pointee()?,
        vec!["write"],
        "write",
    )
}

/// A `Readiness` met on its own: the interest is known, the fd is not.
pub fn readiness_leaf<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let interest = interest_names(std_values::at(value, layout::READINESS_INTEREST)?.read_uint()?);
    let summary = format!("waiting for I/O readiness ({})", interest.join("+"));
    let wait = IoWait {
        fd: None,
        fd_kind: None,
        interest,
        operation: None,
    };
    Ok(Outcome::Node(Decoded::leaf(
        Detail::IoReadiness(wait),
        summary,
    )))
}
