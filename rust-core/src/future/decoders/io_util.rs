//! tokio's copies and tokio-util's codecs: `io::copy`, `copy_buf`, `copy_bidirectional`
//! (each direction), and `Framed`/`FramedRead`/`FramedWrite`. Each says the fds, the bytes
//! moved so far and held on the way, and which side it waits for.

use super::io::{fd_leaf, fd_of};
use super::plural;
use crate::error::{Error, Result};
use crate::future::env::{active_variant, coroutine_state};
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome};
use crate::layouts::libraries::{self, tokio_util};
use crate::layouts::tokio_futures::{self as layout, copy_buffer};
use crate::model::{CopyBidirectional, CopyProgress, CopyWait, CoroutineState, Detail, Transfer};
use crate::value::Value;

/// What a `CopyBuffer` has moved and holds, and the side its copy waits for: bytes read but
/// not yet written wait for the writer; an empty buffer waits for the reader, or for the
/// writer's flush once the reader has ended.
fn buffer_transfer(buffer: &Value<'_>) -> Result<Transfer> {
    let position = buffer.field(copy_buffer::POSITION)?.read_uint()?;
    let filled = buffer.field(copy_buffer::FILLED)?.read_uint()?;
    let copied = buffer.field(copy_buffer::AMOUNT)?.read_uint()?;
    let read_done = buffer.field(copy_buffer::READ_DONE)?.read_uint()? != 0;
    let need_flush = buffer.field(copy_buffer::NEED_FLUSH)?.read_uint()? != 0;
    let buffered = filled.checked_sub(position).ok_or_else(|| {
        Error::layout(format!(
            "copy buffer at {:#x} is past its end",
            buffer.address
        ))
    })?;
    let waiting = if buffered > 0 {
        CopyWait::Write
    } else if read_done || need_flush {
        CopyWait::Flush
    } else {
        CopyWait::Read
    };
    Ok(Transfer {
        buffered,
        copied,
        waiting,
    })
}

fn fd_or_none(io: &Value<'_>) -> Option<i64> {
    fd_of(io).ok()
}

/// `fd 9` / `its reader`.
fn side(fd: Option<i64>, role: &str) -> String {
    fd.map(|fd| format!("fd {fd}"))
        .unwrap_or_else(|| format!("its {role}"))
}

/// `5 bytes copied, waiting to read fd 9` (the fd of the side waited for).
fn transfer_summary(transfer: &Transfer, reader: Option<i64>, writer: Option<i64>) -> String {
    let copied = plural(transfer.copied, "byte");
    let held = if transfer.buffered > 0 {
        format!(" ({} held)", transfer.buffered)
    } else {
        String::new()
    };
    let waiting = match transfer.waiting {
        CopyWait::Read => format!("waiting to read {}", side(reader, "reader")),
        CopyWait::Write => format!("waiting to write {}", side(writer, "writer")),
        CopyWait::Flush => format!("flushing {}", side(writer, "writer")),
        CopyWait::Shutdown => format!("shutting down {}", side(writer, "writer")),
        CopyWait::Done => "done".to_string(),
    };
    format!("{copied} copied{held}, {waiting}")
}

fn copy_leaf(transfer: Transfer, reader: &Value<'_>, writer: &Value<'_>, what: &str) -> Outcome {
    let reader_fd = fd_or_none(reader);
    let writer_fd = fd_or_none(writer);
    let summary = format!(
        "{what} {} → {}: {}",
        side(reader_fd, "reader"),
        side(writer_fd, "writer"),
        transfer_summary(&transfer, reader_fd, writer_fd)
    );
    let detail = Detail::IoCopy(CopyProgress {
        buffered: transfer.buffered,
        copied: transfer.copied,
        reader_fd,
        waiting: transfer.waiting,
        writer_fd,
    });
    Outcome::Node(Decoded::leaf(detail, summary))
}

/// `io::copy`'s `Copy{reader, writer, buf: CopyBuffer}`.
pub fn copy<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let reader = value.field(layout::READ_SOURCE)?;
    let writer = value.field(layout::WRITE_TARGET)?;
    let transfer = buffer_transfer(&value.field(layout::COPY_BUFFER)?)?;
    Ok(copy_leaf(transfer, &reader, &writer, "copy"))
}

/// `io::copy_buf`'s `CopyBuf{reader, writer, amt}`: the reader's own buffer holds what is
/// read and not yet written.
pub fn copy_buf<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let reader = value.field(layout::READ_SOURCE)?;
    let writer = value.field(layout::WRITE_TARGET)?;
    let copied = value.field(layout::COPY_BUF_AMOUNT)?.read_uint()?;
    let buffered = super::io::buffered_in(&reader)?.unwrap_or(0);
    let waiting = if buffered > 0 {
        CopyWait::Write
    } else {
        CopyWait::Read
    };
    let transfer = Transfer {
        buffered,
        copied,
        waiting,
    };
    Ok(copy_leaf(transfer, &reader, &writer, "copy_buf"))
}

/// One direction's `TransferState`.
fn transfer_state(state: &Value<'_>) -> Result<Transfer> {
    let (variant, payload) = state.variant()?;
    match variant.as_str() {
        layout::TRANSFER_RUNNING => {
            buffer_transfer(&payload.field(crate::layouts::rust::TUPLE_FIRST)?)
        }
        other => {
            let copied = payload
                .field(crate::layouts::rust::TUPLE_FIRST)?
                .read_uint()?;
            let waiting = if other == layout::TRANSFER_SHUTTING_DOWN {
                CopyWait::Shutdown
            } else {
                CopyWait::Done
            };
            Ok(Transfer {
                buffered: 0,
                copied,
                waiting,
            })
        }
    }
}

/// `copy_bidirectional_impl(a, b, ..)`, suspended in its `poll_fn`: both directions, from
/// its saved locals.
pub fn copy_bidirectional<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    if coroutine_state(value)? != CoroutineState::Suspended {
        return Err(Error::layout(format!(
            "{} is not suspended: no transfer to show",
            value.ty.name
        )));
    }
    let fields = active_variant(value)?.fields;
    let a_fd = fd_or_none(&fields.field(layout::BIDIRECTIONAL_A)?);
    let b_fd = fd_or_none(&fields.field(layout::BIDIRECTIONAL_B)?);
    let a_to_b = transfer_state(&fields.field(layout::BIDIRECTIONAL_A_TO_B)?)?;
    let b_to_a = transfer_state(&fields.field(layout::BIDIRECTIONAL_B_TO_A)?)?;
    let summary = format!(
        "copy_bidirectional {} ⇄ {}: a→b {}; b→a {}",
        side(a_fd, "a"),
        side(b_fd, "b"),
        transfer_summary(&a_to_b, a_fd, b_fd),
        transfer_summary(&b_to_a, b_fd, a_fd)
    );
    let detail = Detail::IoCopyBidirectional(CopyBidirectional {
        a_fd,
        a_to_b,
        b_fd,
        b_to_a,
    });
    Ok(Outcome::Node(Decoded::leaf(detail, summary)))
}

/// A `BytesMut`'s length.
fn bytes_len(bytes: &Value<'_>) -> Result<u64> {
    bytes.field(libraries::BYTES_LENGTH)?.read_uint()
}

/// tokio-util's `Framed`/`FramedRead`/`FramedWrite` polled as a stream or sink: reading
/// frames while the read buffer holds less than one, writing while the write buffer is
/// not yet out. A `Framed` waits on both; the side with bytes to write is named first.
pub fn framed<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let framed = crate::std_values::at_path(value, tokio_util::FRAMED_IMPL)?;
    let io = framed.field(tokio_util::FRAMED_IO)?;
    let state = framed.field(tokio_util::FRAMED_STATE)?;
    let (read, write) = if state.has_field(tokio_util::FRAMES_READ) {
        (
            Some(state.field(tokio_util::FRAMES_READ)?),
            Some(state.field(tokio_util::FRAMES_WRITE)?),
        )
    } else if value.ty.name.starts_with(tokio_util::FRAMED_TYPES[2]) {
        (None, Some(state))
    } else {
        (Some(state), None)
    };
    let to_write = match &write {
        Some(frame) => bytes_len(&frame.field(tokio_util::FRAME_BUFFER)?)?,
        None => 0,
    };
    if to_write > 0 || read.is_none() {
        return fd_leaf(context, &io, vec!["write"], "write frames", Some(to_write));
    }
    let read = read.expect("a reading codec");
    let buffered = bytes_len(&read.field(tokio_util::FRAME_BUFFER)?)?;
    fd_leaf(context, &io, vec!["read"], "read frame", Some(buffered))
}

/// futures' `Send`/`Feed` over a sink: the sink it feeds (a codec, a channel).
pub fn sink_feed<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let mut current = value.clone();
    if current.has_field(libraries::futures::SEND_FEED) {
        current = current.field(libraries::futures::SEND_FEED)?;
    }
    let sink = current.field(libraries::futures::FEED_SINK)?.pointee()?;
    Ok(Outcome::SeeThrough(Child::of(&sink)))
}
