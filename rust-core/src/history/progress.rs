//! What says a waiting future made progress although it waits at the same place: a new
//! deadline, permits handed over, values received, bytes copied. Two stops whose nodes
//! agree on these (and on their place in the tree) show a task that did not move.
//!
//! The fields are named as the `detail` keys of docs/schema.md, so the same struct reads a
//! saved report's `detail` (`saved.rs`); `every_recorded_report_reads_back_alike` keeps
//! the two ways equal.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use crate::model::{CopyWait, Detail, MonotonicTime, Transfer};

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// Calls `$visit` with each of `$fields` of `$progress` that is set, in the order given.
macro_rules! visit_each_set {
    ($progress:ident, $visit:ident, $($field:ident),* $(,)?) => {
        $(
            if let Some(value) = &$progress.$field {
                $visit(stringify!($field), value.as_field());
            }
        )*
    };
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

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        let mut any = false;
        self.each_set(|_, _| any = true);
        !any
    }

    /// Calls `visit` with each field that is set, by name, in the order of its JSON
    /// object's keys (by name).
    fn each_set(&self, mut visit: impl FnMut(&'static str, FieldValue<'_>)) {
        visit_each_set!(
            self,
            visit,
            a_to_b,
            activity,
            arrived,
            b_to_a,
            buffered,
            cancelled,
            closed,
            copied,
            deadline,
            done,
            generation,
            initialized,
            len,
            message_length,
            next,
            outputs_queued,
            pending,
            permit_stored,
            permits_available,
            permits_needed,
            queued,
            reading,
            received,
            set,
            state,
            stream_id,
            tail,
            task_id,
            tasks,
            unparsed,
            value_sent,
            version_current,
            version_seen,
            waiting,
            writing
        );
    }

    /// Writes `k v, k v` for the fields that are set, by name (the order of a JSON object's
    /// keys), as a label shows them. Written directly: every waiting node of a stop's
    /// snapshot has a label, and building a JSON value for each was a third of its time.
    pub fn describe_into(&self, out: &mut String) {
        let mut first = true;
        self.each_set(|name, value| {
            if !first {
                out.push_str(", ");
            }
            first = false;
            out.push_str(name);
            out.push(' ');
            // Writing to a String does not fail.
            let _ = match value {
                FieldValue::Number(number) => write!(out, "{number}"),
                FieldValue::Flag(flag) => write!(out, "{flag}"),
                FieldValue::Text(text) => out.write_str(text),
                FieldValue::Deadline(at) => {
                    write!(out, "{:.3}s", at.secs as f64 + f64::from(at.nanos) / 1e9)
                }
                // As JSON, the way a nested object is shown.
                FieldValue::Transfer(transfer) => {
                    out.write_str(&serde_json::to_string(transfer).unwrap_or_default())
                }
            };
        });
    }
}

/// Hashes the fields that are set, each with its name (equal progress, equal fields): a
/// stop's snapshot hashes the progress of every waiting node, most of whose fields are
/// unset.
impl Hash for Progress {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.each_set(|name, value| {
            name.hash(state);
            value.hash(state);
        });
    }
}

/// One field's value.
#[derive(Hash)]
enum FieldValue<'p> {
    Number(u64),
    Flag(bool),
    Text(&'p str),
    Deadline(MonotonicTime),
    Transfer(&'p TransferProgress),
}

/// A progress field's value as `each_set` passes it on.
trait AsField {
    fn as_field(&self) -> FieldValue<'_>;
}

impl AsField for u64 {
    fn as_field(&self) -> FieldValue<'_> {
        FieldValue::Number(*self)
    }
}

impl AsField for bool {
    fn as_field(&self) -> FieldValue<'_> {
        FieldValue::Flag(*self)
    }
}

impl AsField for String {
    fn as_field(&self) -> FieldValue<'_> {
        FieldValue::Text(self)
    }
}

impl AsField for MonotonicTime {
    fn as_field(&self) -> FieldValue<'_> {
        FieldValue::Deadline(*self)
    }
}

impl AsField for TransferProgress {
    fn as_field(&self) -> FieldValue<'_> {
        FieldValue::Transfer(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How labels said progress before they were written directly: the fields of its JSON
    /// object, in the object's order.
    fn described_through_json(progress: &Progress) -> String {
        match serde_json::to_value(progress) {
            Ok(serde_json::Value::Object(fields)) => fields
                .iter()
                .map(|(name, value)| match (name.as_str(), value) {
                    ("deadline", _) => {
                        let at = progress.deadline.unwrap();
                        format!("deadline {:.3}s", at.secs as f64 + at.nanos as f64 / 1e9)
                    }
                    (_, serde_json::Value::String(text)) => format!("{name} {text}"),
                    _ => format!("{name} {value}"),
                })
                .collect::<Vec<_>>()
                .join(", "),
            _ => String::new(),
        }
    }

    fn described(progress: &Progress) -> String {
        let mut text = String::new();
        progress.describe_into(&mut text);
        text
    }

    /// Every field, alone and all together, in the words and order labels had.
    #[test]
    fn progress_is_described_as_its_json_object_was() {
        let transfer = |waiting: Option<&str>| TransferProgress {
            buffered: 7,
            copied: 4096,
            waiting: waiting.map(str::to_string),
        };
        let every = Progress {
            deadline: Some(MonotonicTime {
                secs: 49_840,
                nanos: 643_600_351,
            }),
            task_id: Some(12),
            permits_available: Some(0),
            permits_needed: Some(1),
            permit_stored: Some(false),
            state: Some("waiting \"for\" it".to_string()),
            closed: Some(true),
            queued: Some(3),
            received: Some(u64::MAX),
            value_sent: Some(false),
            version_current: Some(5),
            version_seen: Some(4),
            next: Some(9),
            tail: Some(10),
            buffered: Some(11),
            copied: Some(12),
            waiting: Some("write".to_string()),
            a_to_b: Some(transfer(Some("read"))),
            b_to_a: Some(transfer(None)),
            len: Some(2),
            pending: Some(1),
            outputs_queued: Some(0),
            done: Some(true),
            activity: Some("idle".to_string()),
            reading: Some("body".to_string()),
            writing: Some("headers".to_string()),
            unparsed: Some(13),
            message_length: Some(14),
            cancelled: Some(false),
            tasks: Some(15),
            arrived: Some(16),
            generation: Some(17),
            initialized: Some(true),
            set: Some(false),
            stream_id: Some(18),
        };
        assert_eq!(described(&every), described_through_json(&every));
        assert_eq!(described(&Progress::default()), "");
        let every_json = serde_json::to_value(&every).unwrap();
        let names: Vec<&String> = every_json.as_object().unwrap().keys().collect();
        assert_eq!(
            names.len(),
            35,
            "a field is missing from the test: {names:?}"
        );
        for name in names {
            let mut alone = serde_json::Map::new();
            alone.insert(name.clone(), every_json[name].clone());
            let progress: Progress = serde_json::from_value(alone.into()).unwrap();
            assert_eq!(
                described(&progress),
                described_through_json(&progress),
                "{name}"
            );
        }
    }
}
