//! Waiting for a file descriptor: socket `accept`/`readable`/`writable`/`ready`, the
//! `AsyncReadExt`/`AsyncWriteExt` futures (`read_line` too), a bare `Readiness`, and a
//! socket a hand-written future keeps and polls itself. Reports the fd, the interest, bytes
//! buffered on the way where a buffer holds some, and (live, local processes) what the fd is.
//! The fd is found through the wrappers an I/O object comes in (split halves, buffers,
//! codecs, `Arc`s and references: `io_object`).

use crate::dwarf::{TypeInfo, TypeTag};
use crate::error::Result;
use crate::future::env::{async_argument, async_self};
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome};
use crate::layouts::libraries::{self, tokio_stream, tokio_util};
use crate::layouts::{rust, tokio_futures as layout, Path};
use crate::model::{Detail, IoWait};
use crate::names;
use crate::std_values;
use crate::value::Value;

use super::linked_list_nodes;

/// How many wrappers, references and `Arc`s `io_object` goes through.
const MAX_IO_WRAPPERS: usize = 16;
/// The most waiters on one fd whose interest is read.
const MAX_IO_WAITERS: u64 = 1024;

pub fn interest_names(bits: u64) -> Vec<&'static str> {
    layout::INTEREST_BITS
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| *name)
        .collect()
}

/// What a reference (or references) to a value point to; any other value itself.
fn pointee_of<'a>(value: &Value<'a>) -> Result<Value<'a>> {
    let mut current = value.clone();
    for _ in 0..MAX_IO_WRAPPERS {
        if current.ty.tag != TypeTag::Pointer {
            break;
        }
        current = current.pointee()?;
    }
    Ok(current)
}

/// What `/proc/PID/fd/N` says the descriptor is: socket, pipe, file, ...
pub fn fd_kind(context: &DecodeContext<'_>, fd: i64) -> Option<String> {
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

fn owner_path(type_name: &str) -> Option<Path> {
    layout::IO_OWNERS
        .iter()
        .find(|(prefix, _)| type_name.starts_with(prefix))
        .map(|(_, path)| *path)
}

fn wrapper_path(type_name: &str) -> Option<Path> {
    layout::IO_WRAPPERS
        .iter()
        .chain(tokio_util::IO_WRAPPERS)
        .chain(libraries::IO_WRAPPERS)
        .find(|(prefix, _)| type_name.starts_with(prefix))
        .map(|(_, path)| *path)
}

/// Whether a type is one of tokio's I/O objects (a socket, a pipe, a `PollEvented`).
pub fn is_io_object(info: &TypeInfo) -> bool {
    owner_path(&info.name).is_some()
}

/// The tokio I/O object `value` is or wraps, through references, boxes, pins, `Arc`s and
/// the wrapper tables; `None` where none of them leads to one.
pub fn io_object<'a>(value: &Value<'a>) -> Result<Option<Value<'a>>> {
    unwrap_io(value, &|name| owner_path(name).is_some())
}

/// The path from a type that keeps a plain fd (a `tokio::fs::File`) to it.
fn fd_holder_path(type_name: &str) -> Option<Path> {
    layout::FD_HOLDERS
        .iter()
        .find(|(prefix, _)| type_name.starts_with(prefix))
        .map(|(_, path)| *path)
}

/// Through what wraps I/O, down to the first value whose type name `stops`.
fn unwrap_io<'a>(value: &Value<'a>, stops: &dyn Fn(&str) -> bool) -> Result<Option<Value<'a>>> {
    let mut current = value.clone();
    for _ in 0..MAX_IO_WRAPPERS {
        if stops(&current.ty.name) {
            return Ok(Some(current));
        }
        current = if let Some(concrete) = std_values::trait_object(&current)? {
            concrete
        } else if current.ty.tag == TypeTag::Pointer {
            current.pointee()?
        } else if std_values::is_arc(&current.ty) {
            std_values::arc_data(&current)?
        } else if current.ty.name.starts_with(rust::PIN_PREFIX) {
            std_values::pin_pointer(&current)?
        } else if let Some(path) = wrapper_path(&current.ty.name) {
            match std_values::follow(&current, path)? {
                Some(inner) => inner,
                None => return Ok(None),
            }
        } else {
            return Ok(None);
        };
    }
    Ok(None)
}

/// The `PollEvented` of an I/O object.
fn poll_evented<'a>(object: &Value<'a>) -> Result<Value<'a>> {
    let path = owner_path(&object.ty.name).unwrap_or(&[]);
    std_values::at_path(object, path)
}

/// The fd of whatever I/O `owner` is or wraps. A type the tables do not lead through is
/// searched for a tokio I/O object below it, then for a field named `fd`: fallbacks the
/// node then says it used.
pub fn fd_of(owner: &Value<'_>) -> Result<i64> {
    let either = |name: &str| owner_path(name).is_some() || fd_holder_path(name).is_some();
    if let Some(found) = unwrap_io(owner, &either)? {
        if let Some(path) = fd_holder_path(&found.ty.name) {
            return Ok(std_values::at_path(&found, path)?.read_uint()? as i32 as i64);
        }
    }
    let object = match io_object(owner)? {
        Some(object) => object,
        None => match pointee_of(owner)?.search_type("tokio I/O object", &is_io_object) {
            Ok(object) => object,
            Err(_) => {
                let fd = pointee_of(owner)?.search_field(layout::FD_SEARCHED)?;
                return Ok(fd.read_uint()? as i32 as i64);
            }
        },
    };
    let fd = std_values::at(&poll_evented(&object)?, layout::POLL_EVENTED_FD)?;
    Ok(fd.read_uint()? as i32 as i64)
}

/// What the tasks waiting on an I/O object registered: `read` for a reader's waker (a
/// `poll_read`), `write` for a writer's, and each readiness waiter's own interest.
pub fn registered_interest(object: &Value<'_>) -> Result<Vec<&'static str>> {
    let shared = std_values::at_path(&poll_evented(object)?, layout::POLL_EVENTED_SCHEDULED_IO)?;
    let waiters = std_values::at(&shared, layout::SCHEDULED_IO_WAITERS)?;
    let mut bits = 0;
    if std_values::option(&waiters.field(layout::WAITERS_READER)?)?.is_some() {
        bits |= 1;
    }
    if std_values::option(&waiters.field(layout::WAITERS_WRITER)?)?.is_some() {
        bits |= 2;
    }
    let (nodes, node_type) =
        linked_list_nodes(&waiters.field(layout::WAITERS_LIST)?, MAX_IO_WAITERS)?;
    for node in nodes {
        let waiter = waiters.target.value_of_type(node_type.clone(), node);
        bits |= waiter.field(layout::WAITER_INTEREST)?.read_uint()?;
    }
    Ok(interest_names(bits))
}

/// Bytes a buffer around the I/O holds on the way: a `BufReader`'s unread ones, a
/// `BufWriter`'s unwritten ones.
pub fn buffered_in(owner: &Value<'_>) -> Result<Option<u64>> {
    let current = pointee_of(owner)?;
    let name = &current.ty.name;
    if name.starts_with(layout::BUF_READER) {
        let position = current.field(layout::BUF_READER_POSITION)?.read_uint()?;
        let filled = current.field(layout::BUF_READER_FILLED)?.read_uint()?;
        return Ok(Some(filled.saturating_sub(position)));
    }
    if name.starts_with(layout::BUF_WRITER) {
        let buffer = current.field(layout::BUF_WRITER_BUFFER)?;
        return Ok(Some(std_values::vec_len(&buffer)?));
    }
    Ok(None)
}

/// tokio-stream's `TcpListenerStream`/`UnixListenerStream`: accepting on its listener.
pub fn listener_stream<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    fd_leaf(
        context,
        &value.field(tokio_stream::WRAPPER_INNER)?,
        vec!["read"],
        "accept",
        None,
    )
}

/// A leaf waiting on `owner`'s fd for `interest`, `buffered` bytes held on the way.
pub fn fd_leaf(
    context: &DecodeContext<'_>,
    owner: &Value<'_>,
    interest: Vec<&'static str>,
    operation: &str,
    buffered: Option<u64>,
) -> Result<Outcome> {
    let is_duplex = |name: &str| name.starts_with(layout::DUPLEX_STREAM);
    if let Some(duplex) = unwrap_io(owner, &is_duplex)? {
        return duplex_leaf(&duplex, interest, operation);
    }
    // A file has no readiness: it is read and written on the blocking pool.
    let is_file = |name: &str| fd_holder_path(name).is_some();
    let interest = match unwrap_io(owner, &is_file)? {
        Some(_) => Vec::new(),
        None => interest,
    };
    let fd = fd_of(owner)?;
    let kind = fd_kind(context, fd);
    let summary = fd_summary(operation, fd, kind.as_deref(), &interest, buffered);
    let wait = IoWait {
        buffered,
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

/// Reading or writing one end of `io::duplex`, an in-memory pipe: no fd, and the bytes in
/// the pipe the way it goes (to read from, or not yet read by the other end).
fn duplex_leaf(
    duplex: &Value<'_>,
    interest: Vec<&'static str>,
    operation: &str,
) -> Result<Outcome> {
    let writing = interest.contains(&"write") && !interest.contains(&"read");
    let pipe = match writing {
        true => layout::DUPLEX_WRITE,
        false => layout::DUPLEX_READ,
    };
    let simplex = std_values::at_path(duplex, pipe)?;
    let buffered = simplex
        .field(layout::SIMPLEX_BUFFER)?
        .field(libraries::BYTES_LENGTH)?
        .read_uint()?;
    let capacity = simplex.field(layout::SIMPLEX_CAPACITY)?.read_uint()?;
    // A reader waits only on an empty pipe, a writer only on a full one.
    let blocked = match writing {
        true => buffered >= capacity,
        false => buffered == 0,
    };
    let state = match blocked {
        true => format!("waiting for {}", interest.join("+")),
        false => "ready".to_string(),
    };
    let summary = format!(
        "{operation} on an in-memory duplex stream, {} buffered, {state}",
        super::plural(buffered, "byte")
    );
    Ok(Outcome::Node(Decoded::leaf(
        Detail::IoReadiness(IoWait {
            buffered: Some(buffered),
            fd: None,
            fd_kind: None,
            interest,
            operation: Some(operation.to_string()),
        }),
        summary,
    )))
}

/// `read on fd 9 (socket), 7 bytes buffered, waiting for read`.
pub fn fd_summary(
    operation: &str,
    fd: i64,
    kind: Option<&str>,
    interest: &[&str],
    buffered: Option<u64>,
) -> String {
    let what = kind.map(|kind| format!(" ({kind})")).unwrap_or_default();
    let buffered = buffered
        .map(|bytes| format!(", {} buffered", super::plural(bytes, "byte")))
        .unwrap_or_default();
    let waiting = if interest.is_empty() {
        "no waiter registered".to_string()
    } else {
        format!("waiting for {}", interest.join("+"))
    };
    format!("{operation} on fd {fd}{what}{buffered}, {waiting}")
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
    fd_leaf(context, &socket, interest, &operation, None)
}

/// A reader that is a stream adapter (tokio-util's `StreamReader`) reads no fd: what it
/// waits for is the stream it adapts, shown instead.
fn adapted_stream<'a>(reader: &Value<'a>) -> Result<Option<Value<'a>>> {
    let current = pointee_of(reader)?;
    if current.ty.name.starts_with(tokio_util::STREAM_READER) {
        return current.field(tokio_util::STREAM_READER_STREAM).map(Some);
    }
    Ok(None)
}

/// `AsyncReadExt::read`/`read_exact`/`read_buf`: the reader's fd.
pub fn read<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let reader = value.field(layout::READ_SOURCE)?;
    if let Some(stream) = adapted_stream(&reader)? {
        return Ok(Outcome::SeeThrough(Child::of(&stream)));
    }
    let buffered = buffered_in(&reader)?;
    fd_leaf(context, &reader, vec!["read"], "read", buffered)
}

/// `AsyncBufReadExt::read_line`: the reader's fd, and the bytes of the line read so far.
pub fn read_line<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let reader = value.field(layout::READ_SOURCE)?;
    let read = value.field(layout::READ_LINE_READ)?.read_uint()?;
    fd_leaf(context, &reader, vec!["read"], "read_line", Some(read))
}

/// `AsyncWriteExt::write`/`write_all`: the writer's fd.
pub fn write<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let writer = value.field(layout::WRITE_TARGET)?;
    let buffered = buffered_in(&writer)?;
    fd_leaf(context, &writer, vec!["write"], "write", buffered)
}

/// A `Readiness` met on its own: the interest is known, the fd is not.
pub fn readiness_leaf<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let interest = interest_names(std_values::at(value, layout::READINESS_INTEREST)?.read_uint()?);
    let summary = format!("waiting for I/O readiness ({})", interest.join("+"));
    let wait = IoWait {
        buffered: None,
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

/// A socket (or pipe, or `PollEvented`) a future keeps and polls from its own `poll`: its
/// fd and the interest its waiters registered.
pub fn held_io<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let interest = registered_interest(value)?;
    fd_leaf(context, value, interest, "poll", None)
}

/// tokio-util's `ReaderStream`: reading chunks from its reader.
pub fn reader_stream<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    match std_values::follow(value, tokio_util::READER_STREAM_READER)? {
        Some(reader) => fd_leaf(context, &reader, vec!["read"], "read", None),
        None => Ok(Outcome::Node(Decoded::leaf(
            Detail::IoReadiness(IoWait {
                buffered: None,
                fd: None,
                fd_kind: None,
                interest: Vec::new(),
                operation: Some("read".to_string()),
            }),
            "ReaderStream at its end (its reader is gone)".to_string(),
        ))),
    }
}
