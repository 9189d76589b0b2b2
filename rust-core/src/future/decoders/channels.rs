//! Receiving from tokio channels: mpsc (bounded and unbounded), oneshot, watch, broadcast.

use serde_json::json;

use super::{async_self, hex, plural};
use crate::error::Result;
use crate::future::{Decoded, FutureDecoder, Outcome};
use crate::model::NodeKind;
use crate::tokio::compat::{self, leaves};
use crate::value::Value;

/// `Receiver::recv()` on an mpsc channel. A bounded channel's queue length is its bound
/// minus the free permits (a reserved but unsent permit counts as queued); an unbounded
/// channel counts messages in its semaphore word.
pub fn mpsc_recv<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    mpsc_receiver_leaf(&async_self(value)?)
}

/// tokio-stream's `ReceiverStream`/`UnboundedReceiverStream`: the receiver it polls.
pub fn mpsc_receiver_stream<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    mpsc_receiver_leaf(&value.field(compat::tokio_stream::WRAPPER_INNER)?)
}

fn mpsc_receiver_leaf(receiver: &Value<'_>) -> Result<Outcome> {
    let chan = receiver.path(leaves::MPSC_CHAN)?.arc_data()?;
    let semaphore = chan.field(leaves::MPSC_SEMAPHORE)?;
    let senders = chan.field(leaves::MPSC_SENDERS)?.read_uint()?;
    let rx_closed = chan.find_field(leaves::MPSC_RX_CLOSED)?.read_uint()? != 0;
    let (queued, bound, closed) = if semaphore.has_field(leaves::MPSC_BOUND) {
        let bound = semaphore.field(leaves::MPSC_BOUND)?.read_uint()?;
        let permits = semaphore.path(leaves::MPSC_BOUNDED_PERMITS)?.read_uint()?;
        (
            bound.saturating_sub(permits >> 1),
            Some(bound),
            permits & 1 == 1,
        )
    } else {
        let word = semaphore.read_uint()?;
        (word >> 1, None, word & 1 == 1)
    };
    let closed = closed || rx_closed;
    let detail = json!({
        "address": hex(chan.address),
        "queued": queued,
        "capacity": bound,
        "senders": senders,
        "closed": closed,
    });
    let summary = recv_summary("mpsc", chan.address, queued, senders, closed);
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::MpscRecv,
        detail,
        summary,
    )))
}

/// The shared state of a tokio oneshot end (`Sender` or `Receiver`): its address, if the
/// end still has one.
pub fn oneshot_channel(end: &Value<'_>) -> Result<Option<u64>> {
    let (variant, payload) = end.field(compat::ONESHOT_INNER)?.variant()?;
    if variant != "Some" {
        return Ok(None);
    }
    Ok(Some(
        payload.field(compat::TUPLE_FIRST)?.arc_data()?.address,
    ))
}

/// oneshot `Inner.state` bits.
const VALUE_SENT: u64 = 0b10;
const CLOSED: u64 = 0b100;

pub fn oneshot_recv<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (variant, payload) = value.field(compat::ONESHOT_INNER)?.variant()?;
    if variant != "Some" {
        return Ok(Outcome::Node(Decoded::leaf(
            NodeKind::OneshotRecv,
            json!({"address": null, "value_sent": null, "closed": true}),
            "recv on oneshot (already received)".to_string(),
        )));
    }
    let inner = payload.field(compat::TUPLE_FIRST)?.arc_data()?;
    let state = inner.field(leaves::ONESHOT_STATE)?.read_uint()?;
    let sent = state & VALUE_SENT != 0;
    let closed = state & CLOSED != 0;
    let detail = json!({"address": hex(inner.address), "value_sent": sent, "closed": closed});
    let what = match (sent, closed) {
        (true, _) => "value sent",
        (false, true) => "sender dropped",
        (false, false) => "nothing sent",
    };
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::OneshotRecv,
        detail,
        format!("recv on oneshot {} ({what})", hex(inner.address)),
    )))
}

/// watch's state word: version in steps of 2, bit 0 = closed.
const WATCH_CLOSED: u64 = 1;

pub fn watch_changed<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let receiver = async_self(value)?;
    let shared = receiver.field(leaves::WATCH_SHARED)?.arc_data()?;
    let word = shared.field(leaves::WATCH_STATE)?.read_uint()?;
    let seen = receiver.field(leaves::WATCH_VERSION_SEEN)?.read_uint()?;
    let current = word & !WATCH_CLOSED;
    let closed = word & WATCH_CLOSED != 0;
    let receivers = shared.field(leaves::WATCH_RECEIVERS)?.read_uint()?;
    let detail = json!({
        "address": hex(shared.address),
        "version_seen": seen,
        "version_current": current,
        "closed": closed,
        "receivers": receivers,
    });
    let summary = format!(
        "watch changed {} (version {seen} seen, {current} current{})",
        hex(shared.address),
        if closed { ", closed" } else { "" }
    );
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::WatchChanged,
        detail,
        summary,
    )))
}

pub fn broadcast_recv<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let receiver = async_self(value)?;
    let shared = receiver.field(leaves::BROADCAST_SHARED)?.arc_data()?;
    let next = receiver.field(leaves::BROADCAST_NEXT)?.read_uint()?;
    let tail = shared.field(leaves::BROADCAST_TAIL)?;
    let position = tail
        .find_field(leaves::BROADCAST_TAIL_POSITION)?
        .read_uint()?;
    let closed = tail.find_field(leaves::BROADCAST_CLOSED)?.read_uint()? != 0;
    let senders = shared.field(leaves::BROADCAST_SENDERS)?.read_uint()?;
    let queued = position.saturating_sub(next);
    let detail = json!({
        "address": hex(shared.address),
        "queued": queued,
        "next": next,
        "tail": position,
        "senders": senders,
        "closed": closed,
    });
    let summary = recv_summary("broadcast", shared.address, queued, senders, closed);
    Ok(Outcome::Node(Decoded::leaf(
        NodeKind::BroadcastRecv,
        detail,
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
