//! What each kind of node knows, as types: a node's `detail` is one `Detail`, a variant per
//! kind that has facts of its own (docs/schema.md lists them). Decoders fill them, the
//! wait-for graph and the links between tasks read and complete them, the JSON writer
//! writes them.
//!
//! Each struct's fields are declared in the order of their names: that is the order the
//! JSON has always had (report version 1), which `every_detail_writes_its_keys_sorted`
//! keeps.

use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::{hex_address, hex_option, Location, NodeKind, Party, TaskState};

/// The facts of one node, a variant per kind.
#[derive(Debug, Serialize, Clone, PartialEq)]
#[serde(untagged)]
pub enum Detail {
    /// A library's future in a state where it holds no future to show (`Map` complete).
    Future(WrapperState),
    Sleep(Deadline),
    Timeout(Deadline),
    JoinHandle(JoinTarget),
    MutexLock(PermitWait),
    RwlockRead(PermitWait),
    RwlockWrite(PermitWait),
    SemaphoreAcquire(PermitWait),
    Notified(NotifyWait),
    MpscRecv(MpscWait),
    OneshotRecv(OneshotWait),
    WatchChanged(WatchWait),
    BroadcastRecv(BroadcastWait),
    IoReadiness(IoWait),
    YieldNow(Empty),
    Pending(Empty),
    Ready(Empty),
    Instrumented(Span),
    Select(FutureSet),
    Join(FutureSet),
    FuturesUnordered(FutureSet),
    FuturesOrdered(FutureSet),
    JoinSet(FutureSet),
    JoinAll(FutureSet),
    SelectAll(FutureSet),
    StreamMap(FutureSet),
    StreamGenerator(Generator),
    HttpServerConnection(HttpServer),
    HttpClientConnection(HttpClient),
    TowerBufferResponse(BufferedRequest),
    TowerBufferWorker(BufferWorker),
    GrpcStream(GrpcStream),
    PollFn(PollFnClosure),
    IoCopy(CopyProgress),
    IoCopyBidirectional(CopyBidirectional),
    CancellationToken(CancellationWait),
    TaskTrackerWait(TrackerWait),
    SignalRecv(SignalWait),
    ChildWait(ChildWait),
    BarrierWait(BarrierWait),
    OnceCellInit(OnceCellWait),
    SetOnceWait(SetOnceWait),
    FuturesMpscRecv(QueuedChannelWait),
    FuturesOneshotRecv(FuturesOneshotWait),
    FlumeRecv(QueuedChannelWait),
    Http2Response(Http2Stream),
    LocalSet(LocalSetRun),
}

impl Detail {
    /// The kind of node these facts belong to.
    pub fn kind(&self) -> NodeKind {
        match self {
            Detail::Future(_) => NodeKind::Future,
            Detail::Sleep(_) => NodeKind::Sleep,
            Detail::Timeout(_) => NodeKind::Timeout,
            Detail::JoinHandle(_) => NodeKind::JoinHandle,
            Detail::MutexLock(_) => NodeKind::MutexLock,
            Detail::RwlockRead(_) => NodeKind::RwlockRead,
            Detail::RwlockWrite(_) => NodeKind::RwlockWrite,
            Detail::SemaphoreAcquire(_) => NodeKind::SemaphoreAcquire,
            Detail::Notified(_) => NodeKind::Notified,
            Detail::MpscRecv(_) => NodeKind::MpscRecv,
            Detail::OneshotRecv(_) => NodeKind::OneshotRecv,
            Detail::WatchChanged(_) => NodeKind::WatchChanged,
            Detail::BroadcastRecv(_) => NodeKind::BroadcastRecv,
            Detail::IoReadiness(_) => NodeKind::IoReadiness,
            Detail::YieldNow(_) => NodeKind::YieldNow,
            Detail::Pending(_) => NodeKind::Pending,
            Detail::Ready(_) => NodeKind::Ready,
            Detail::Instrumented(_) => NodeKind::Instrumented,
            Detail::Select(_) => NodeKind::Select,
            Detail::Join(_) => NodeKind::Join,
            Detail::FuturesUnordered(_) => NodeKind::FuturesUnordered,
            Detail::FuturesOrdered(_) => NodeKind::FuturesOrdered,
            Detail::JoinSet(_) => NodeKind::JoinSet,
            Detail::JoinAll(_) => NodeKind::JoinAll,
            Detail::SelectAll(_) => NodeKind::SelectAll,
            Detail::StreamMap(_) => NodeKind::StreamMap,
            Detail::StreamGenerator(_) => NodeKind::StreamGenerator,
            Detail::HttpServerConnection(_) => NodeKind::HttpServerConnection,
            Detail::HttpClientConnection(_) => NodeKind::HttpClientConnection,
            Detail::TowerBufferResponse(_) => NodeKind::TowerBufferResponse,
            Detail::TowerBufferWorker(_) => NodeKind::TowerBufferWorker,
            Detail::GrpcStream(_) => NodeKind::GrpcStream,
            Detail::PollFn(_) => NodeKind::PollFn,
            Detail::IoCopy(_) => NodeKind::IoCopy,
            Detail::IoCopyBidirectional(_) => NodeKind::IoCopyBidirectional,
            Detail::CancellationToken(_) => NodeKind::CancellationToken,
            Detail::TaskTrackerWait(_) => NodeKind::TaskTrackerWait,
            Detail::SignalRecv(_) => NodeKind::SignalRecv,
            Detail::ChildWait(_) => NodeKind::ChildWait,
            Detail::BarrierWait(_) => NodeKind::BarrierWait,
            Detail::OnceCellInit(_) => NodeKind::OnceCellInit,
            Detail::SetOnceWait(_) => NodeKind::SetOnceWait,
            Detail::FuturesMpscRecv(_) => NodeKind::FuturesMpscRecv,
            Detail::FuturesOneshotRecv(_) => NodeKind::FuturesOneshotRecv,
            Detail::FlumeRecv(_) => NodeKind::FlumeRecv,
            Detail::Http2Response(_) => NodeKind::Http2Response,
            Detail::LocalSet(_) => NodeKind::LocalSet,
        }
    }

    /// A set of futures of the kind `kind` names (`select!`, `join!`, `JoinSet`, ...).
    pub fn future_set(kind: SetKind, set: FutureSet) -> Detail {
        match kind {
            SetKind::Select => Detail::Select(set),
            SetKind::Join => Detail::Join(set),
            SetKind::FuturesUnordered => Detail::FuturesUnordered(set),
            SetKind::FuturesOrdered => Detail::FuturesOrdered(set),
            SetKind::JoinSet => Detail::JoinSet(set),
            SetKind::JoinAll => Detail::JoinAll(set),
            SetKind::SelectAll => Detail::SelectAll(set),
            SetKind::StreamMap => Detail::StreamMap(set),
        }
    }
}

/// The kinds of node that are a set of futures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    Select,
    Join,
    FuturesUnordered,
    FuturesOrdered,
    JoinSet,
    JoinAll,
    SelectAll,
    StreamMap,
}

/// No facts: the kind says it all (`yield_now`, `pending`, `ready`).
#[derive(Debug, Serialize, Clone, PartialEq, Default)]
pub struct Empty {}

/// A wrapper enum's state, lowercased (`complete`, `gone`).
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct WrapperState {
    pub state: String,
}

/// A point on CLOCK_MONOTONIC, as tokio's `Instant` keeps it.
#[derive(Debug, Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MonotonicTime {
    pub nanos: u32,
    pub secs: i64,
}

/// When a `Sleep` (or a `Timeout`'s) fires.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Deadline {
    /// Null for a `Timeout` whose sleep is not made yet.
    pub deadline: Option<MonotonicTime>,
    /// An `Interval`'s period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_secs: Option<f64>,
    /// Live processes only, to the millisecond.
    pub remaining_secs: Option<f64>,
    /// An `Interval`'s: how long before the stop it last ticked (its next deadline less
    /// its period), where the stop's time is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_last_tick_secs: Option<f64>,
}

/// The task a `JoinHandle` waits for.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct JoinTarget {
    /// The blocking-pool thread running it, for a blocking task running now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocking_thread: Option<u64>,
    #[serde(serialize_with = "hex_address")]
    pub task_address: u64,
    pub task_id: u64,
    pub task_state: TaskState,
}

/// Waiting for permits of tokio's batch semaphore: a Mutex, an RwLock, a Semaphore.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct PermitWait {
    /// The primitive (the Mutex, RwLock or Semaphore).
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    pub closed: bool,
    /// Who holds it (the wait-for graph's finding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holders: Option<Vec<HolderNote>>,
    /// How sure that list is, from the lock's permits; with `holders`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holders_certainty: Option<HolderCertainty>,
    /// Permits tokio assigned to this waiter so far, toward `permits_needed`; null where
    /// its acquire future was not found.
    pub permits_assigned: Option<u64>,
    pub permits_available: u64,
    pub permits_needed: u64,
    /// The permits the lock has in all: a Mutex 1, a RwLock its most readers (`mr`); null
    /// for a Semaphore, whose total tokio does not keep.
    pub permits_total: Option<u64>,
    /// The batch semaphore inside, which the holders' guards and permits point to.
    #[serde(serialize_with = "hex_address")]
    pub semaphore: u64,
    pub waiters: u64,
}

/// How the holders a lock's waiter lists were told from the lock's permits: the permits
/// taken by guards are its total, less those available and those tokio assigned to waiters.
#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HolderCertainty {
    /// Their guards keep the permits taken: each holds its part.
    Certain,
    /// Their guards keep more than is taken (a guard moved out keeps its bytes): some of
    /// them hold it, and memory cannot tell which.
    Ambiguous,
    /// Their guards keep fewer than is taken: others, not found, hold the rest.
    Incomplete,
    /// The lock's total is not known (a Semaphore's), so their permits are not counted.
    Unchecked,
}

/// Waiting in `Notify::notified()`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct NotifyWait {
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    /// Tasks that hold the Notify and so may notify it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notifiers: Option<Vec<HolderNote>>,
    /// A `notify_one` is stored for the next waiter.
    pub permit_stored: bool,
    /// The waiter's state, lowercased (`init`, `waiting`, `done`).
    pub state: String,
    pub waiters: u64,
}

/// Receiving from an mpsc channel.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct MpscWait {
    /// The channel's shared state.
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    /// Null for an unbounded channel.
    pub capacity: Option<u64>,
    pub closed: bool,
    pub queued: u64,
    /// Values received so far (the receive position), where the layout shows it.
    pub received: Option<u64>,
    pub senders: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders_held_by: Option<Vec<HolderNote>>,
}

/// Receiving from a oneshot channel.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct OneshotWait {
    /// The channel's shared state; null once the value was received.
    #[serde(serialize_with = "hex_option")]
    pub address: Option<u64>,
    pub closed: bool,
    /// The task whose future holds the sender (`crate::links`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_task: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders_held_by: Option<Vec<HolderNote>>,
    /// Null once the value was received.
    pub value_sent: Option<bool>,
}

/// Waiting in `watch::Receiver::changed()`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct WatchWait {
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    pub closed: bool,
    pub receivers: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders_held_by: Option<Vec<HolderNote>>,
    pub version_current: u64,
    pub version_seen: u64,
}

/// Receiving from a broadcast channel.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct BroadcastWait {
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    pub closed: bool,
    /// The position this receiver reads next.
    pub next: u64,
    pub queued: u64,
    pub senders: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders_held_by: Option<Vec<HolderNote>>,
    /// The position the next value is written at.
    pub tail: u64,
}

/// Waiting for a file descriptor to be ready.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct IoWait {
    /// Bytes kept in a buffer on the way (a `BufReader`'s, a codec's, a line read so far).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffered: Option<u64>,
    /// Null where only the readiness is known.
    pub fd: Option<i64>,
    /// What `/proc/PID/fd/N` says the descriptor is (live processes on this machine).
    pub fd_kind: Option<String>,
    pub interest: Vec<&'static str>,
    /// `accept`, `read`, `write`, `readable`, ...
    pub operation: Option<String>,
}

/// A tracing span's name.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Span {
    pub span: Option<String>,
}

/// A set of futures: how many, and how many still pending.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct FutureSet {
    pub len: usize,
    /// A `FuturesOrdered`'s outputs waiting for an earlier future.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs_queued: Option<u64>,
    pub pending: usize,
}

/// An `async_stream` generator.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Generator {
    pub done: bool,
}

/// An HTTP/1 server connection: what it does, and its read and write states.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct HttpServer {
    pub activity: &'static str,
    /// The connection's socket, where its I/O is one of tokio's (not behind TLS).
    pub fd: Option<i64>,
    pub reading: String,
    /// Bytes read and not yet parsed (part of a request head).
    pub unparsed: u64,
    pub writing: String,
}

/// An HTTP/1 client connection, with the oneshot its current request's response goes
/// back on.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct HttpClient {
    pub activity: &'static str,
    /// The connection's socket, as for a server connection.
    pub fd: Option<i64>,
    #[serde(serialize_with = "hex_option")]
    pub holds_sender_of: Option<u64>,
    pub reading: String,
    pub writing: String,
}

/// A request queued in a tower `Buffer`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct BufferedRequest {
    /// The oneshot the response comes back on.
    #[serde(serialize_with = "hex_option")]
    pub channel: Option<u64>,
    /// `queued`, or the failed state's name.
    pub state: String,
    /// The worker task holding the request (`crate::links`).
    pub worker_task: Option<u64>,
}

/// A tower `Buffer`'s worker, with the oneshot of the request it holds.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct BufferWorker {
    #[serde(serialize_with = "hex_option")]
    pub holds_sender_of: Option<u64>,
}

/// A tonic message stream.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct GrpcStream {
    /// `request` or `response`.
    pub direction: &'static str,
    pub message_length: Option<u64>,
    pub state: String,
}

/// A `poll_fn` no macro made: the closure it polls (its captured futures are the node's
/// children).
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct PollFnClosure {
    /// The closure's function path.
    pub closure: Option<String>,
}

/// Which side of a copy is waited for.
#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CopyWait {
    /// The reader has nothing to give.
    Read,
    /// The writer takes nothing more (its peer does not read).
    Write,
    /// The writer is being flushed.
    Flush,
    /// The writer is being shut down (the reader has ended).
    Shutdown,
    /// The copy has finished.
    Done,
}

impl CopyWait {
    pub fn name(self) -> &'static str {
        match self {
            CopyWait::Read => "read",
            CopyWait::Write => "write",
            CopyWait::Flush => "flush",
            CopyWait::Shutdown => "shutdown",
            CopyWait::Done => "done",
        }
    }
}

/// `io::copy`/`copy_buf`: bytes copied so far, bytes read but not yet written, and which
/// side it waits for.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct CopyProgress {
    pub buffered: u64,
    pub copied: u64,
    /// The reader's descriptor, where it has one.
    pub reader_fd: Option<i64>,
    pub waiting: CopyWait,
    pub writer_fd: Option<i64>,
}

/// One direction of `copy_bidirectional`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Transfer {
    pub buffered: u64,
    pub copied: u64,
    pub waiting: CopyWait,
}

/// `io::copy_bidirectional(a, b)`: both directions.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct CopyBidirectional {
    pub a_fd: Option<i64>,
    pub a_to_b: Transfer,
    pub b_fd: Option<i64>,
    pub b_to_a: Transfer,
}

/// tokio-util's `CancellationToken::cancelled()`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct CancellationWait {
    /// The token's shared tree node.
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    pub cancelled: bool,
}

/// tokio-util's `TaskTracker::wait()`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct TrackerWait {
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    pub closed: bool,
    /// Tasks still tracked.
    pub tasks: u64,
}

/// A unix signal stream's `recv()` (`ctrl_c()` is SIGINT's).
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct SignalWait {
    /// `SIGINT`, ...; null where the signal cannot be told.
    pub name: Option<String>,
    pub signal: Option<u64>,
}

/// `process::Child::wait()`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct ChildWait {
    pub pid: Option<u64>,
    /// The pidfd tokio's reaper polls, where it has one (Linux 5.3+).
    pub pidfd: Option<i64>,
}

/// `Barrier::wait()`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct BarrierWait {
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    /// Tasks at the barrier in this generation.
    pub arrived: u64,
    pub generation: u64,
    /// Tasks the barrier waits for.
    pub needed: u64,
}

/// `OnceCell::get_or_init()` while another initializes the cell.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct OnceCellWait {
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    pub initialized: bool,
}

/// `SetOnce::wait()`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct SetOnceWait {
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    pub set: bool,
}

/// Receiving from a channel of another crate than tokio (the futures crate's mpsc, flume).
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct QueuedChannelWait {
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    /// Null for an unbounded channel.
    pub capacity: Option<u64>,
    pub closed: bool,
    pub queued: u64,
    pub senders: u64,
}

/// Receiving from the futures crate's oneshot channel.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct FuturesOneshotWait {
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    /// The sender is gone.
    pub closed: bool,
    pub value_sent: bool,
}

/// An HTTP/2 client request waiting for its response.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Http2Stream {
    pub stream_id: u64,
}

/// A `LocalSet` polled as a future (`rt.block_on(local)`, `local.await`): it runs the
/// tasks spawned on it, which the report lists under the LocalSet of this address.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct LocalSetRun {
    /// The LocalSet's shared state: the `address` of its entry in `runtimes`.
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    /// Its tasks' ids, lowest first, once they are read (null where its list was not).
    pub tasks: Option<Vec<u64>>,
}

/// One holder of what a node waits for, as the node lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct HolderNote {
    pub party: Party,
    /// The await line of the coroutine keeping it.
    pub location: Option<Arc<Location>>,
    /// The local keeping it.
    pub local: String,
    pub idle_future: bool,
    /// The lock's permits it keeps (`Holding::permits`), for a lock.
    pub permits: Option<u64>,
}

impl Serialize for HolderNote {
    /// `{"idle_future"?: true, "local", "location", "permits"?: n, "task": id}` or
    /// `"thread": tid`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if self.idle_future {
            map.serialize_entry("idle_future", &true)?;
        }
        map.serialize_entry("local", &self.local)?;
        map.serialize_entry("location", &self.location)?;
        if let Some(permits) = self.permits {
            map.serialize_entry("permits", &permits)?;
        }
        match self.party {
            Party::Task(id) => map.serialize_entry("task", &id)?,
            Party::Thread(tid) => map.serialize_entry("thread", &tid)?,
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(detail: &Detail) -> Vec<String> {
        let value = serde_json::to_value(detail).unwrap();
        value.as_object().unwrap().keys().cloned().collect()
    }

    fn written_keys(detail: &Detail) -> Vec<String> {
        // serde_json's Map sorts; the text keeps the order written.
        let text = serde_json::to_string(detail).unwrap();
        let mut found = Vec::new();
        let mut rest = text.as_str();
        let mut depth = 0;
        while let Some(at) = rest.find(['"', '{', '}', '[', ']']) {
            let c = rest.as_bytes()[at];
            rest = &rest[at + 1..];
            match c {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                _ => {
                    let end = rest.find('"').unwrap();
                    if depth == 1 && rest[end + 1..].starts_with(':') {
                        found.push(rest[..end].to_string());
                    }
                    rest = &rest[end + 1..];
                }
            }
        }
        found
    }

    #[test]
    fn every_detail_writes_its_keys_sorted() {
        let note = HolderNote {
            party: Party::Task(3),
            location: None,
            local: "guard".into(),
            idle_future: true,
            permits: Some(1),
        };
        let wait = PermitWait {
            address: 1,
            closed: false,
            holders: Some(vec![note.clone()]),
            holders_certainty: Some(HolderCertainty::Ambiguous),
            permits_assigned: Some(0),
            permits_available: 0,
            permits_needed: 1,
            permits_total: Some(1),
            semaphore: 2,
            waiters: 1,
        };
        let set = FutureSet {
            len: 2,
            outputs_queued: Some(1),
            pending: 1,
        };
        let deadline = Deadline {
            deadline: Some(MonotonicTime { nanos: 1, secs: 2 }),
            period_secs: Some(0.5),
            remaining_secs: Some(1.0),
            since_last_tick_secs: None,
        };
        let details = [
            Detail::Future(WrapperState {
                state: "complete".into(),
            }),
            Detail::Sleep(deadline.clone()),
            Detail::Timeout(deadline),
            Detail::JoinHandle(JoinTarget {
                blocking_thread: Some(7),
                task_address: 1,
                task_id: 2,
                task_state: TaskState::Idle,
            }),
            Detail::MutexLock(wait),
            Detail::Notified(NotifyWait {
                address: 1,
                notifiers: Some(vec![note.clone()]),
                permit_stored: false,
                state: "waiting".into(),
                waiters: 1,
            }),
            Detail::MpscRecv(MpscWait {
                address: 1,
                capacity: Some(4),
                closed: false,
                queued: 0,
                received: Some(7),
                senders: 1,
                senders_held_by: Some(vec![note.clone()]),
            }),
            Detail::OneshotRecv(OneshotWait {
                address: Some(1),
                closed: false,
                sender_task: Some(4),
                senders_held_by: Some(vec![note.clone()]),
                value_sent: Some(false),
            }),
            Detail::WatchChanged(WatchWait {
                address: 1,
                closed: false,
                receivers: 2,
                senders_held_by: Some(vec![note.clone()]),
                version_current: 2,
                version_seen: 2,
            }),
            Detail::BroadcastRecv(BroadcastWait {
                address: 1,
                closed: false,
                next: 1,
                queued: 0,
                senders: 1,
                senders_held_by: Some(vec![note]),
                tail: 1,
            }),
            Detail::IoReadiness(IoWait {
                buffered: Some(4),
                fd: Some(3),
                fd_kind: None,
                interest: vec!["read"],
                operation: Some("read".into()),
            }),
            Detail::YieldNow(Empty {}),
            Detail::Instrumented(Span { span: None }),
            Detail::Select(set),
            Detail::StreamGenerator(Generator { done: false }),
            Detail::HttpServerConnection(HttpServer {
                activity: "closing",
                fd: Some(9),
                reading: "closed".into(),
                unparsed: 0,
                writing: "init".into(),
            }),
            Detail::HttpClientConnection(HttpClient {
                activity: "closing",
                fd: None,
                holds_sender_of: None,
                reading: "closed".into(),
                writing: "init".into(),
            }),
            Detail::TowerBufferResponse(BufferedRequest {
                channel: Some(1),
                state: "queued".into(),
                worker_task: Some(3),
            }),
            Detail::TowerBufferWorker(BufferWorker {
                holds_sender_of: None,
            }),
            Detail::GrpcStream(GrpcStream {
                direction: "request",
                message_length: None,
                state: "readheader".into(),
            }),
        ];
        for detail in &details {
            let written = written_keys(detail);
            assert_eq!(
                written,
                keys(detail),
                "{:?} writes its keys out of order",
                detail.kind()
            );
        }
        let note = serde_json::to_string(&HolderNote {
            party: Party::Thread(9),
            location: None,
            local: "tx".into(),
            idle_future: false,
            permits: None,
        })
        .unwrap();
        assert_eq!(note, r#"{"local":"tx","location":null,"thread":9}"#);
        let guard = serde_json::to_string(&HolderNote {
            party: Party::Task(4),
            location: None,
            local: "_held".into(),
            idle_future: true,
            permits: Some(2),
        })
        .unwrap();
        assert_eq!(
            guard,
            r#"{"idle_future":true,"local":"_held","location":null,"permits":2,"task":4}"#
        );
    }

    #[test]
    fn a_detail_names_its_kind_and_an_empty_one_writes_an_object() {
        assert_eq!(Detail::Pending(Empty {}).kind(), NodeKind::Pending);
        assert_eq!(
            serde_json::to_string(&Detail::Ready(Empty {})).unwrap(),
            "{}"
        );
        let set = FutureSet {
            len: 1,
            outputs_queued: None,
            pending: 1,
        };
        assert_eq!(
            Detail::future_set(SetKind::JoinAll, set).kind(),
            NodeKind::JoinAll
        );
    }
}
