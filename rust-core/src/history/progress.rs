//! What says a waiting future made progress although it waits at the same place: a new
//! deadline, permits handed over, values received, bytes copied. Two stops whose nodes
//! agree on these (and on their place in the tree) show a task that did not move.
//!
//! The fields are named as the `detail` keys of docs/schema.md, so the same struct reads a
//! saved report's `detail` (`saved.rs`); `every_recorded_report_reads_back_alike` keeps
//! the two ways equal.

use serde::{Deserialize, Serialize};

use crate::model::{CopyWait, Detail, MonotonicTime, Transfer};

#[derive(Debug, Default, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Progress {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<MonotonicTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permits_available: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permits_needed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permit_stored: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_sent: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_current: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_seen: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffered: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copied: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_to_b: Option<TransferProgress>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_to_a: Option<TransferProgress>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs_queued: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reading: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writing: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unparsed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_length: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrived: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initialized: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_id: Option<u64>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct TransferProgress {
    pub buffered: u64,
    pub copied: u64,
    pub waiting: Option<String>,
}

fn transfer(transfer: &Transfer) -> TransferProgress {
    TransferProgress {
        buffered: transfer.buffered,
        copied: transfer.copied,
        waiting: Some(transfer.waiting.name().to_string()),
    }
}

fn waiting(wait: CopyWait) -> Option<String> {
    Some(wait.name().to_string())
}

impl Progress {
    /// The progress fields of a node's facts.
    pub fn of(detail: &Detail) -> Progress {
        let none = Progress::default();
        match detail {
            Detail::Future(wrapper) => Progress {
                state: Some(wrapper.state.clone()),
                ..none
            },
            Detail::Sleep(deadline) | Detail::Timeout(deadline) => Progress {
                deadline: deadline.deadline,
                ..none
            },
            Detail::JoinHandle(target) => Progress {
                task_id: Some(target.task_id),
                ..none
            },
            Detail::MutexLock(wait)
            | Detail::RwlockRead(wait)
            | Detail::RwlockWrite(wait)
            | Detail::SemaphoreAcquire(wait) => Progress {
                closed: Some(wait.closed),
                permits_available: Some(wait.permits_available),
                permits_needed: Some(wait.permits_needed),
                ..none
            },
            Detail::Notified(wait) => Progress {
                permit_stored: Some(wait.permit_stored),
                state: Some(wait.state.clone()),
                ..none
            },
            Detail::MpscRecv(wait) => Progress {
                closed: Some(wait.closed),
                queued: Some(wait.queued),
                received: wait.received,
                ..none
            },
            Detail::OneshotRecv(wait) => Progress {
                closed: Some(wait.closed),
                value_sent: wait.value_sent,
                ..none
            },
            Detail::WatchChanged(wait) => Progress {
                closed: Some(wait.closed),
                version_current: Some(wait.version_current),
                version_seen: Some(wait.version_seen),
                ..none
            },
            Detail::BroadcastRecv(wait) => Progress {
                closed: Some(wait.closed),
                next: Some(wait.next),
                queued: Some(wait.queued),
                tail: Some(wait.tail),
                ..none
            },
            Detail::IoReadiness(wait) => Progress {
                buffered: wait.buffered,
                ..none
            },
            Detail::YieldNow(_)
            | Detail::Pending(_)
            | Detail::Ready(_)
            | Detail::Instrumented(_)
            | Detail::PollFn(_)
            | Detail::SignalRecv(_)
            | Detail::ChildWait(_)
            | Detail::TowerBufferWorker(_) => none,
            Detail::Select(set)
            | Detail::Join(set)
            | Detail::FuturesUnordered(set)
            | Detail::FuturesOrdered(set)
            | Detail::JoinSet(set)
            | Detail::JoinAll(set)
            | Detail::SelectAll(set)
            | Detail::StreamMap(set) => Progress {
                len: Some(set.len as u64),
                outputs_queued: set.outputs_queued,
                pending: Some(set.pending as u64),
                ..none
            },
            Detail::StreamGenerator(generator) => Progress {
                done: Some(generator.done),
                ..none
            },
            Detail::HttpServerConnection(server) => Progress {
                activity: Some(server.activity.to_string()),
                reading: Some(server.reading.clone()),
                unparsed: Some(server.unparsed),
                writing: Some(server.writing.clone()),
                ..none
            },
            Detail::HttpClientConnection(client) => Progress {
                activity: Some(client.activity.to_string()),
                reading: Some(client.reading.clone()),
                writing: Some(client.writing.clone()),
                ..none
            },
            Detail::TowerBufferResponse(request) => Progress {
                state: Some(request.state.clone()),
                ..none
            },
            Detail::GrpcStream(stream) => Progress {
                message_length: stream.message_length,
                state: Some(stream.state.clone()),
                ..none
            },
            Detail::IoCopy(copy) => Progress {
                buffered: Some(copy.buffered),
                copied: Some(copy.copied),
                waiting: waiting(copy.waiting),
                ..none
            },
            Detail::IoCopyBidirectional(copy) => Progress {
                a_to_b: Some(transfer(&copy.a_to_b)),
                b_to_a: Some(transfer(&copy.b_to_a)),
                ..none
            },
            Detail::CancellationToken(wait) => Progress {
                cancelled: Some(wait.cancelled),
                ..none
            },
            Detail::TaskTrackerWait(wait) => Progress {
                closed: Some(wait.closed),
                tasks: Some(wait.tasks),
                ..none
            },
            Detail::BarrierWait(wait) => Progress {
                arrived: Some(wait.arrived),
                generation: Some(wait.generation),
                ..none
            },
            Detail::OnceCellInit(wait) => Progress {
                initialized: Some(wait.initialized),
                ..none
            },
            Detail::SetOnceWait(wait) => Progress {
                set: Some(wait.set),
                ..none
            },
            Detail::FuturesMpscRecv(wait) | Detail::FlumeRecv(wait) => Progress {
                closed: Some(wait.closed),
                queued: Some(wait.queued),
                ..none
            },
            Detail::FuturesOneshotRecv(wait) => Progress {
                closed: Some(wait.closed),
                value_sent: Some(wait.value_sent),
                ..none
            },
            Detail::Http2Response(stream) => Progress {
                stream_id: Some(stream.stream_id),
                ..none
            },
            // Its tasks are tasks of their own, each with its progress.
            Detail::LocalSet(_) => none,
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Progress::default()
    }

    /// `k v, k v` for the fields that are set, as a label shows them.
    pub fn describe(&self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(fields)) => fields
                .iter()
                .map(|(name, value)| match (name.as_str(), value) {
                    ("deadline", _) => match self.deadline {
                        Some(at) => {
                            format!("deadline {:.3}s", at.secs as f64 + at.nanos as f64 / 1e9)
                        }
                        None => "no deadline".to_string(),
                    },
                    (_, serde_json::Value::String(text)) => format!("{name} {text}"),
                    _ => format!("{name} {value}"),
                })
                .collect::<Vec<_>>()
                .join(", "),
            _ => String::new(),
        }
    }
}
