//! Receiving from tokio channels: mpsc (bounded and unbounded), oneshot, watch, broadcast.

use super::hex;
use super::plural;
use crate::error::Result;
use crate::future::env::async_self;
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::libraries::tokio_stream;
use crate::layouts::tokio_futures as layout;
use crate::model::{BroadcastWait, Detail, MpscWait, OneshotWait, WatchWait};
use crate::std_values;
use crate::value::Value;

/// `Receiver::recv()` on an mpsc channel. A bounded channel's queue length is its bound
/// minus the free permits (a reserved but unsent permit counts as queued); an unbounded
/// channel counts messages in its semaphore word.
pub fn mpsc_recv<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    mpsc_receiver_leaf(&async_self(value)?)
}

/// An mpsc receiver a future keeps and polls from its own `poll`.
pub fn mpsc_receiver_held<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    mpsc_receiver_leaf(value)
}

/// tokio-stream's `ReceiverStream`/`UnboundedReceiverStream`: the receiver it polls.
pub fn mpsc_receiver_stream<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    mpsc_receiver_leaf(&value.field(tokio_stream::WRAPPER_INNER)?)
}

fn mpsc_receiver_leaf(receiver: &Value<'_>) -> Result<Outcome> {
    let chan = std_values::at_path(receiver, layout::MPSC_CHAN)?;
    let semaphore = chan.field(layout::MPSC_SEMAPHORE)?;
    let senders = chan.field(layout::MPSC_SENDERS)?.read_uint()?;
    let rx_closed = std_values::at(&chan, layout::MPSC_RX_CLOSED)?.read_uint()? != 0;
    let (queued, capacity, closed) = if semaphore.has_field(layout::MPSC_BOUND) {
        let bound = semaphore.field(layout::MPSC_BOUND)?.read_uint()?;
        let permits = std_values::at_path(&semaphore, layout::MPSC_BOUNDED_PERMITS)?.read_uint()?;
        let (available, closed) = layout::permits_word(permits);
        (bound.saturating_sub(available), Some(bound), closed)
    } else {
        let (queued, closed) = layout::permits_word(semaphore.read_uint()?);
        (queued, None, closed)
    };
    let closed = closed || rx_closed;
    let received = std_values::at(&chan, layout::MPSC_RX_INDEX)
        .and_then(|index| index.read_uint())
        .ok();
    let wait = MpscWait {
        address: chan.address,
        capacity,
        closed,
        queued,
        received,
        senders,
        senders_held_by: None,
    };
    let summary = recv_summary("mpsc", chan.address, queued, senders, closed);
    Ok(Outcome::Node(Decoded::leaf(
        Detail::MpscRecv(wait),
        summary,
    )))
}

/// The shared state of a tokio oneshot end (`Sender` or `Receiver`): its address, if the
/// end still has one.
pub fn oneshot_channel(end: &Value<'_>) -> Result<Option<u64>> {
    Ok(std_values::follow(end, layout::ONESHOT_INNER)?.map(|inner| inner.address))
}

pub fn oneshot_recv<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let Some(inner) = std_values::follow(value, layout::ONESHOT_INNER)? else {
        let wait = OneshotWait {
            address: None,
            closed: true,
            sender_task: None,
            senders_held_by: None,
            value_sent: None,
        };
        let summary = "recv on oneshot (already received)".to_string();
        return Ok(Outcome::Node(Decoded::leaf(
            Detail::OneshotRecv(wait),
            summary,
        )));
    };
    let state = inner.field(layout::ONESHOT_STATE)?.read_uint()?;
    let sent = state & layout::ONESHOT_VALUE_SENT != 0;
    let closed = state & layout::ONESHOT_CLOSED != 0;
    let wait = OneshotWait {
        address: Some(inner.address),
        closed,
        sender_task: None,
        senders_held_by: None,
        value_sent: Some(sent),
    };
    let what = match (sent, closed) {
        (true, _) => "value sent",
        (false, true) => "sender dropped",
        (false, false) => "nothing sent",
    };
    let summary = format!("recv on oneshot {} ({what})", hex(inner.address));
    Ok(Outcome::Node(Decoded::leaf(
        Detail::OneshotRecv(wait),
        summary,
    )))
}

pub fn watch_changed<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    watch_receiver_leaf(&async_self(value)?)
}

/// A watch receiver a future keeps and polls from its own `poll`.
pub fn watch_receiver_held<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    watch_receiver_leaf(value)
}

fn watch_receiver_leaf(receiver: &Value<'_>) -> Result<Outcome> {
    let receiver = receiver.clone();
    let shared = std_values::at_path(&receiver, layout::WATCH_SHARED)?;
    let word = shared.field(layout::WATCH_STATE)?.read_uint()?;
    let seen = receiver.field(layout::WATCH_VERSION_SEEN)?.read_uint()?;
    let current = word & !layout::WATCH_CLOSED;
    let closed = word & layout::WATCH_CLOSED != 0;
    let receivers = shared.field(layout::WATCH_RECEIVERS)?.read_uint()?;
    let wait = WatchWait {
        address: shared.address,
        closed,
        receivers,
        senders_held_by: None,
        version_current: current,
        version_seen: seen,
    };
    let summary = format!(
        "watch changed {} (version {seen} seen, {current} current{})",
        hex(shared.address),
        if closed { ", closed" } else { "" }
    );
    Ok(Outcome::Node(Decoded::leaf(
        Detail::WatchChanged(wait),
        summary,
    )))
}

pub fn broadcast_recv<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    broadcast_receiver_leaf(&async_self(value)?)
}

/// A broadcast receiver a future keeps and polls from its own `poll`.
pub fn broadcast_receiver_held<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    broadcast_receiver_leaf(value)
}

fn broadcast_receiver_leaf(receiver: &Value<'_>) -> Result<Outcome> {
    let receiver = receiver.clone();
    let shared = std_values::at_path(&receiver, layout::BROADCAST_SHARED)?;
    let next = receiver.field(layout::BROADCAST_NEXT)?.read_uint()?;
    let tail = std_values::at(&shared, layout::BROADCAST_TAIL)?;
    let position = tail.field(layout::BROADCAST_TAIL_POSITION)?.read_uint()?;
    let closed = tail.field(layout::BROADCAST_CLOSED)?.read_uint()? != 0;
    let senders = shared.field(layout::BROADCAST_SENDERS)?.read_uint()?;
    let queued = position.saturating_sub(next);
    let wait = BroadcastWait {
        address: shared.address,
        closed,
        next,
        queued,
        senders,
        senders_held_by: None,
        tail: position,
    };
    let summary = recv_summary("broadcast", shared.address, queued, senders, closed);
    Ok(Outcome::Node(Decoded::leaf(
        Detail::BroadcastRecv(wait),
        summary,
    )))
}

/// `recv on mpsc 0x… (1 queued, 2 senders, closed)`.
fn recv_summary(channel: &str, address: u64, queued: u64, senders: u64, closed: bool) -> String {
    format!(
        "recv on {channel} {} ({queued} queued, {}{})",
        hex(address),
        plural(senders, "sender"),
        if closed { ", closed" } else { "" }
    )
}
