//! Channels of other crates than tokio, which many libraries use: the futures crate's
//! (futures-channel 0.3) mpsc and oneshot receivers, and flume's `recv_async`.

use super::{hex, plural};
use crate::error::Result;
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::libraries::{flume, futures_channel as layout};
use crate::model::{Detail, FuturesOneshotWait, QueuedChannelWait};
use crate::std_values;
use crate::value::Value;

pub fn mpsc_receiver<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let Some(inner) = std_values::follow(value, layout::MPSC_INNER)? else {
        let detail = Detail::FuturesMpscRecv(QueuedChannelWait {
            address: 0,
            capacity: None,
            closed: true,
            queued: 0,
            senders: 0,
        });
        let summary = "recv on a futures mpsc channel that has ended".to_string();
        return Ok(Outcome::Node(Decoded::leaf(detail, summary)));
    };
    let state = inner.field(layout::MPSC_STATE)?.read_uint()?;
    let closed = state & layout::MPSC_OPEN_BIT == 0;
    let queued = state & !layout::MPSC_OPEN_BIT;
    let senders = inner.field(layout::MPSC_SENDERS)?.read_uint()?;
    let capacity = match inner.has_field(layout::MPSC_BUFFER) {
        true => Some(inner.field(layout::MPSC_BUFFER)?.read_uint()?),
        false => None,
    };
    let summary = format!(
        "recv on futures mpsc {} ({queued} queued, {}{})",
        hex(inner.address),
        plural(senders, "sender"),
        if closed { ", closed" } else { "" }
    );
    let detail = Detail::FuturesMpscRecv(QueuedChannelWait {
        address: inner.address,
        capacity,
        closed,
        queued,
        senders,
    });
    Ok(Outcome::Node(Decoded::leaf(detail, summary)))
}

pub fn oneshot_receiver<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let inner = std_values::at_path(value, layout::ONESHOT_INNER)?;
    let complete = inner.field(layout::ONESHOT_COMPLETE)?.read_uint()? != 0;
    let value_sent = std_values::option(&std_values::at(&inner, layout::ONESHOT_DATA)?)?.is_some();
    // `complete` without a value: the sender is gone.
    let closed = complete && !value_sent;
    let what = match (value_sent, closed) {
        (true, _) => "value sent",
        (false, true) => "sender dropped",
        (false, false) => "nothing sent",
    };
    let summary = format!("recv on futures oneshot {} ({what})", hex(inner.address));
    let detail = Detail::FuturesOneshotRecv(FuturesOneshotWait {
        address: inner.address,
        closed,
        value_sent,
    });
    Ok(Outcome::Node(Decoded::leaf(detail, summary)))
}

/// flume's `RecvFut` (`Receiver::recv_async`, `into_recv_async`).
pub fn flume_recv<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let receiver = value.field(flume::RECEIVER)?;
    let (variant, _) = receiver.variant()?;
    let path = match variant == flume::OWNED_VARIANT {
        true => flume::OWNED,
        false => flume::BORROWED,
    };
    let receiver = std_values::at_path(&receiver, path)?;
    let shared = std_values::at_path(&receiver, flume::SHARED)?;
    let chan = std_values::at_path(&shared, flume::CHAN)?;
    let capacity = match std_values::option(&chan.field(flume::SENDING)?)? {
        Some(sending) => Some(sending.field(flume::CAPACITY)?.read_uint()?),
        None => None,
    };
    let queued = chan
        .field(flume::QUEUE)?
        .field(crate::layouts::rust::vec_deque::LEN)?
        .read_uint()?;
    let closed = shared.field(flume::DISCONNECTED)?.read_uint()? != 0;
    let senders = shared.field(flume::SENDERS)?.read_uint()?;
    let summary = format!(
        "recv on flume channel {} ({queued} queued, {}{})",
        hex(shared.address),
        plural(senders, "sender"),
        if closed { ", disconnected" } else { "" }
    );
    let detail = Detail::FlumeRecv(QueuedChannelWait {
        address: shared.address,
        capacity,
        closed,
        queued,
        senders,
    });
    Ok(Outcome::Node(Decoded::leaf(detail, summary)))
}
