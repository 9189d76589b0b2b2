//! The report: what the commands print, as serde types. Its JSON form is the contract
//! documented in docs/schema.md (version 2: `errors` are objects, they were strings in
//! version 1); new keys may be added, none removed.

use std::num::NonZeroU32;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use thin_vec::ThinVec;

use crate::error::{Error, ErrorKind};

mod analysed;
mod detail;
mod history;
mod tasks_json;
pub use analysed::*;
pub use detail::*;
pub use history::*;
pub use tasks_json::write_report;

pub const REPORT_VERSION: u32 = 2;
/// The versions whose tasks read alike (`--since`): version 1 differs in `errors` alone.
pub const READABLE_VERSIONS: [u32; 2] = [1, REPORT_VERSION];

/// What unwound the threads' stacks (`Report::stack_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StackSource {
    /// The core's unwinder, from the registers each thread stopped with.
    Core,
    /// The debugger's walk of each stack.
    Debugger,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub version: u32,
    pub threads: Vec<ThreadReport>,
    #[serde(serialize_with = "tasks_json::serialize")]
    pub tasks: Vec<TaskReport>,
    pub runtimes: Vec<RuntimeReport>,
    /// Problems that did not stop the report (a runtime whose task list was unreadable).
    pub errors: Vec<ReportError>,
    /// Where the inferior's memory was read: `process` (/proc/PID/mem), `core_file` (the
    /// core, mapped) or `debugger` (the debugger's read call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_source: Option<&'static str>,
    /// What unwound the threads' stacks: the core, from each thread's registers (the
    /// executable; the debuggers where the core reads the program's files itself), or the
    /// debugger's own walk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack_source: Option<StackSource>,
    /// With `--group`: the tasks whose trees have the same shape, largest group first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<TaskGroup>>,
    /// Tasks that wait for each other in a cycle (see `waits/`).
    pub deadlocks: Vec<Deadlock>,
    /// Futures kept idle in a task while they hold what others wait for (RFD 609).
    pub futurelocks: Vec<Futurelock>,
    /// Idle tasks outside the deadlocks' cycles that no live task or thread can let go on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stranded: Vec<Stranded>,
    /// With `async waits`: every edge of the wait-for graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits: Option<Vec<WaitEdge>>,
    /// When the stop happened, where that is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taken_at: Option<TakenAt>,
    /// With `async diff`: how each task changed since an earlier stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Diff>,
}

/// A problem that did not stop the report: of which kind, the one line the text output
/// shows, what it is about (a task, a thread, a runtime) where it is about one, and, where
/// it was met reading something, that line's parts: what was being read (the path,
/// outermost first) and what went wrong there (the cause).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ReportError {
    #[serde(serialize_with = "error_kind")]
    pub kind: ErrorKind,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "hex_option")]
    pub runtime: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

fn error_kind<S: serde::Serializer>(kind: &ErrorKind, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(kind.as_str())
}

impl ReportError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ReportError {
            kind,
            message: message.into(),
            task: None,
            thread: None,
            runtime: None,
            path: Vec::new(),
            cause: None,
        }
    }

    /// `error`, met reading `what` (`task 5 at 0x…: cannot read …`).
    pub fn from_error(what: impl std::fmt::Display, error: &Error) -> Self {
        ReportError::of(&error.clone().context(what))
    }

    /// `error` as the report keeps it: its line, and the line's parts where it has a path.
    pub fn of(error: &Error) -> Self {
        let (path, cause) = match error.path() {
            [] => (Vec::new(), None),
            path => (path.to_vec(), Some(error.cause().to_string())),
        };
        ReportError {
            path,
            cause,
            ..ReportError::new(error.kind, error.message())
        }
    }

    pub fn of_task(self, id: u64) -> Self {
        ReportError {
            task: Some(id),
            ..self
        }
    }

    pub fn of_thread(self, tid: u64) -> Self {
        ReportError {
            thread: Some(tid),
            ..self
        }
    }

    pub fn of_runtime(self, address: u64) -> Self {
        ReportError {
            runtime: Some(address),
            ..self
        }
    }
}

impl Report {
    /// A report of nothing yet, taken at `taken_at`.
    pub fn empty(taken_at: Option<TakenAt>) -> Report {
        Report {
            version: REPORT_VERSION,
            threads: Vec::new(),
            tasks: Vec::new(),
            runtimes: Vec::new(),
            errors: Vec::new(),
            memory_source: None,
            stack_source: None,
            groups: None,
            deadlocks: Vec::new(),
            futurelocks: Vec::new(),
            stranded: Vec::new(),
            waits: None,
            taken_at,
            diff: None,
        }
    }

    /// How many tasks the report selected: its groups' where it has them (printed as
    /// text, `tasks` then holds only each group's first).
    pub fn tasks_selected(&self) -> usize {
        match &self.groups {
            Some(groups) => groups.iter().map(|group| group.count).sum(),
            None => self.tasks.len(),
        }
    }
}

/// What kind of thing is waited for or held. Ordered by name: the wait-for graph lists
/// resources in this order.
#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ResourceKind {
    Broadcast,
    Mpsc,
    Mutex,
    Notify,
    Oneshot,
    Rwlock,
    Semaphore,
    /// A task, waited for through its `JoinHandle`.
    Task,
    Watch,
}

impl ResourceKind {
    /// As the JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            ResourceKind::Broadcast => "broadcast",
            ResourceKind::Mpsc => "mpsc",
            ResourceKind::Mutex => "mutex",
            ResourceKind::Notify => "notify",
            ResourceKind::Oneshot => "oneshot",
            ResourceKind::Rwlock => "rwlock",
            ResourceKind::Semaphore => "semaphore",
            ResourceKind::Task => "task",
            ResourceKind::Watch => "watch",
        }
    }

    /// Channels: their holders hold a sender.
    pub fn is_channel(self) -> bool {
        matches!(
            self,
            ResourceKind::Mpsc
                | ResourceKind::Oneshot
                | ResourceKind::Watch
                | ResourceKind::Broadcast
        )
    }
}

/// What is waited for or held: a lock, semaphore, channel, Notify or task.
#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Resource {
    pub kind: ResourceKind,
    /// The primitive, as its waiters' nodes name it (`detail.address`); for `task`, its header.
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
}

/// Who holds a resource or waits: a task, or a thread (its block_on future). A task is
/// written as its id, a thread as `{"thread": tid}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Party {
    Task(u64),
    Thread(u64),
}

impl std::fmt::Display for Party {
    /// `task 4` / `thread 1201`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Party::Task(id) => write!(f, "task {id}"),
            Party::Thread(tid) => write!(f, "thread {tid}"),
        }
    }
}

impl Serialize for Party {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Party::Task(id) => serializer.serialize_u64(*id),
            Party::Thread(tid) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("thread", tid)?;
                map.end()
            }
        }
    }
}

/// One edge of the wait-for graph: `from` waits, at `location`, for `resource`, which `to`
/// holds (a lock), may send on (a channel), may notify (`possible`), or is (a task).
#[derive(Debug, Serialize, Clone)]
pub struct WaitEdge {
    pub from: Party,
    pub to: Party,
    pub resource: Resource,
    /// Where `from` waits: its deepest coroutine's await line (shared with its node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Arc<Location>>,
    /// Where `to` holds it: the await line of the coroutine keeping the guard or sender.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_at: Option<Arc<Location>>,
    /// A Notify's holders may notify, or may not: not evidence of waiting.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub possible: bool,
    /// `to` holds it in a future it keeps but does not poll (a futurelock).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub idle_future: bool,
    /// `to` keeps a guard or permit of the lock, but its holders keep more permits than the
    /// lock has taken: `to` may hold it or not. Never part of a deadlock or futurelock.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub uncertain: bool,
}

/// Tasks that each wait for the next, the last for the first: none can go on.
#[derive(Debug, Serialize, Clone)]
pub struct Deadlock {
    /// In the cycle's order, starting from the lowest id.
    pub tasks: Vec<u64>,
    pub edges: Vec<WaitEdge>,
}

/// A future a task keeps but does not poll, holding (or assigned) what others wait for,
/// while the task awaits something else.
#[derive(Debug, Serialize, Clone)]
pub struct Futurelock {
    pub task: u64,
    pub resource: Resource,
    /// The local that keeps the idle future.
    pub local: String,
    /// The await line of the coroutine keeping it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Arc<Location>>,
    /// Tasks waiting for the resource.
    pub blocked: Vec<u64>,
}

/// An idle task no live task or thread can let go on, though it is in no deadlock's cycle.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct Stranded {
    pub task: u64,
    #[serde(flatten)]
    pub why: StrandedWhy,
}

/// Why a task is stranded.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StrandedWhy {
    /// It waits on a lock whose guards keep permits, none of them in a task or a thread's
    /// block_on future: a guard forgotten, or kept where no task is (shared state, a thread
    /// outside the runtime). Claimed only when every task was read and none was running.
    NoHolder { resource: Resource },
    /// It waits only for tasks that cannot go on: deadlocked, or stranded themselves.
    WaitsForStuck { resource: Resource, tasks: Vec<u64> },
}

/// What a coroutine keeps that others may wait for.
#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum HoldingKind {
    LockGuard,
    Permit,
    Sender,
    /// A handle to a `Notify` (an `Arc<Notify>` or `&Notify`).
    Notify,
    /// Permits tokio assigned to an acquire future that is not being polled.
    Assigned,
}

/// Something a suspended coroutine keeps in its saved locals that others may wait for.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct Holding {
    pub kind: HoldingKind,
    pub resource: Resource,
    /// Where it is kept: the local's name, then fields (`queued.__awaitee`).
    pub local: String,
    /// Inside a future kept as a local, which nothing polls while the coroutine waits here.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub idle_future: bool,
    /// In a variable the coroutine captured (an async fn's argument): rustc keeps its bytes
    /// even after the body moved it away, so it may be stale.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub captured: bool,
    /// The lock's permits it keeps: a Mutex or read guard 1, a write guard every one, a
    /// semaphore permit its count, an idle acquire what tokio assigned it; none for senders
    /// and Notify handles, or where the count could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permits: Option<u64>,
    /// The lock's own state says it keeps nothing: none of the lock is taken (a guard moved
    /// out, `drop(guard)`, leaves its bytes in the coroutine until its scope ends), or it
    /// keeps no permit (a forgotten one). Set by the wait-for graph.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub released: bool,
    /// The lock's semaphore as read where the holding was found, for the wait-for graph to
    /// count the permits of its holders against.
    #[serde(skip)]
    pub lock: Option<LockPermits>,
}

/// A tokio lock's batch semaphore, read at one place: its permits available and, where
/// that place tells, how many the lock has in all (a Mutex 1, a RwLock `mr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockPermits {
    pub available: u64,
    pub total: Option<u64>,
}

/// Tasks whose trees are alike but for addresses, ids and values (see `groups.rs`).
#[derive(Debug, Serialize)]
pub struct TaskGroup {
    pub count: usize,
    /// Ids in increasing order.
    pub tasks: Vec<u64>,
    /// How many of them are in each state, most first.
    pub states: Vec<StateCount>,
    /// The first task's tree: its addresses and values are that task's.
    pub root: FutureNode,
}

#[derive(Debug, Serialize)]
pub struct StateCount {
    pub state: TaskState,
    pub count: usize,
}

#[derive(Debug, Serialize)]
pub struct RuntimeReport {
    /// A runtime's scheduler handle, or a LocalSet's shared state.
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    pub flavor: String,
    /// How it was found.
    pub found_by: FoundBy,
    /// The tasks tokio counts in its list (`num_alive_tasks`); null where tokio keeps no
    /// count (a LocalSet) or it could not be read.
    pub task_count: Option<u64>,
    /// The tasks read from its list.
    pub tasks_read: u64,
    /// Why fewer (or more) tasks were read than tokio counts, where that is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// The tokio version the executable was built with, from its DWARF source paths.
    pub tokio_version: Option<String>,
    /// Task ids in a multi_thread runtime's inject queue, oldest first (null for others).
    pub inject: Option<Vec<u64>>,
    /// The runtime has closed its task list to shut its tasks down (null for a LocalSet,
    /// or when that could not be read).
    pub shutting_down: Option<bool>,
}

/// The `flavor` a LocalSet's entry in `runtimes` has.
pub const LOCAL_SET_FLAVOR: &str = "LocalSet";

/// `runtime` / `LocalSet`: how a line names a task list of this flavor.
pub fn list_word(flavor: &str) -> &'static str {
    match flavor {
        LOCAL_SET_FLAVOR => LOCAL_SET_FLAVOR,
        _ => "runtime",
    }
}

/// How a runtime or LocalSet was found: the thread whose context names it, the future
/// (a thread's block_on future, a task's) that keeps or runs it, the task it owns that
/// another one's `JoinHandle` names, or the static that keeps it.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
#[serde(tag = "via", rename_all = "snake_case")]
pub enum FoundBy {
    /// The thread is inside the runtime (its `CONTEXT`).
    ThreadContext {
        thread: u64,
    },
    /// The thread polls, enters or drops the LocalSet now (its `CURRENT`).
    LocalSetContext {
        thread: u64,
    },
    BlockOnFuture {
        thread: u64,
    },
    TaskFuture {
        task: u64,
    },
    /// It owns the task, which a `JoinHandle` names.
    TaskOwner {
        task: u64,
    },
    Static {
        name: String,
    },
}

impl std::fmt::Display for FoundBy {
    /// `found in thread 1201's block_on future`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FoundBy::ThreadContext { thread } => write!(f, "thread {thread} is inside it"),
            FoundBy::LocalSetContext { thread } => write!(f, "thread {thread} runs it now"),
            FoundBy::BlockOnFuture { thread } => {
                write!(f, "found in thread {thread}'s block_on future")
            }
            FoundBy::TaskFuture { task } => write!(f, "found in task {task}'s future"),
            FoundBy::TaskOwner { task } => write!(f, "found as the owner of task {task}"),
            FoundBy::Static { name } => write!(f, "found in the static {name}"),
        }
    }
}

#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ThreadRole {
    Worker,
    BlockOn,
    /// A thread of the runtime's blocking pool (`spawn_blocking`, `block_in_place`).
    Blocking,
    Other,
}

#[derive(Debug, Serialize)]
pub struct ThreadReport {
    pub tid: u64,
    pub name: Option<String>,
    pub role: ThreadRole,
    pub worker: Option<u64>,
    pub current_task: Option<u64>,
    /// A worker's activity: running a task, searching for work, parked, or idle (no core,
    /// or between states); null for other threads.
    pub state: Option<WorkerState>,
    /// A worker's queued tasks: its LIFO slot and local run queue; null for other threads.
    pub queue: Option<WorkerQueue>,
    /// What the thread polls now: its current task's future, else its block_on future.
    pub future: Option<FutureNode>,
    /// A current_thread runtime's block_on future while that thread runs one of its tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_on_future: Option<FutureNode>,
    /// A blocking-pool thread's closure, as its stack names it (absent when idle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocking_function: Option<String>,
    /// The id of the blocking task that closure is (what a `JoinHandle` of it names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocking_task: Option<u64>,
    /// How many identical copies of the block_on future an optimized stack holds, where no
    /// pointer tells which one `block_on` pinned (the tree is the same in each).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_on_copies: Option<u64>,
    /// The runtime handle this thread is inside of.
    #[serde(serialize_with = "hex_option")]
    pub runtime: Option<u64>,
    /// The LocalSet this thread polls, enters or drops now (its shared state).
    #[serde(serialize_with = "hex_option", skip_serializing_if = "Option::is_none")]
    pub local_set: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ThreadReport {
    /// The thread's block_on future, not the task it may be running (that is a task's).
    pub fn own_block_on_future(&self) -> Option<&FutureNode> {
        if self.current_task.is_none() {
            self.future.as_ref()
        } else {
            self.block_on_future.as_ref()
        }
    }

    pub fn own_block_on_future_mut(&mut self) -> Option<&mut FutureNode> {
        if self.current_task.is_none() {
            self.future.as_mut()
        } else {
            self.block_on_future.as_mut()
        }
    }
}

#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    Running,
    Searching,
    Parked,
    Idle,
}

#[derive(Debug, Serialize, Clone, Default)]
pub struct WorkerQueue {
    /// The task the worker runs next (the LIFO slot).
    pub lifo_slot: Option<u64>,
    /// Its local run queue, next first.
    pub local: Vec<u64>,
}

#[derive(Debug, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Idle,
    Scheduled,
    Running,
    Complete,
    Cancelled,
}

impl TaskState {
    pub const ALL: [TaskState; 5] = [
        TaskState::Idle,
        TaskState::Scheduled,
        TaskState::Running,
        TaskState::Complete,
        TaskState::Cancelled,
    ];

    /// As the JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            TaskState::Idle => "idle",
            TaskState::Scheduled => "scheduled",
            TaskState::Running => "running",
            TaskState::Complete => "complete",
            TaskState::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug)]
pub struct TaskReport {
    pub id: u64,
    pub address: u64,
    pub state: TaskState,
    pub root: FutureNode,
    pub runtime: u64,
    /// Where the task was spawned, where tokio records it (`tokio_unstable` builds):
    /// shared by the tasks spawned at one place.
    pub spawned_at: Option<Arc<Location>>,
    pub error: Option<String>,
}

impl Serialize for TaskReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut task = serializer.serialize_struct("TaskReport", 7)?;
        self.write_fields(&mut StructFields(&mut task))?;
        task.end()
    }
}

impl TaskReport {
    /// The task's fields, as its JSON has them (`spawned_at` and `error` where known).
    pub(crate) fn write_fields<F: Fields>(&self, out: &mut F) -> Result<(), F::Error> {
        out.entry("id", &self.id)?;
        out.address("address", self.address)?;
        out.entry("state", &self.state)?;
        out.node("root", &self.root)?;
        out.address("runtime", self.runtime)?;
        if let Some(at) = &self.spawned_at {
            out.entry("spawned_at", at)?;
        }
        if let Some(error) = &self.error {
            out.entry("error", error)?;
        }
        Ok(())
    }

    /// Whether its tree may keep guards memory does not show: it runs, mid-poll with what
    /// it took since its last await, or its future could not be read.
    pub fn may_hide_holdings(&self) -> bool {
        self.state == TaskState::Running || self.error.is_some()
    }
}

/// What a node is. Coroutines and plain futures, then the resources a task can wait on,
/// then trees of futures. docs/schema.md lists each kind's `detail` keys.
#[derive(Debug, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    AsyncFn,
    AsyncBlock,
    AsyncClosure,
    Future,
    Sleep,
    Timeout,
    JoinHandle,
    MutexLock,
    RwlockRead,
    RwlockWrite,
    SemaphoreAcquire,
    Notified,
    MpscRecv,
    OneshotRecv,
    WatchChanged,
    BroadcastRecv,
    IoReadiness,
    YieldNow,
    Pending,
    Ready,
    Instrumented,
    Select,
    Join,
    FuturesUnordered,
    FuturesOrdered,
    JoinSet,
    JoinAll,
    SelectAll,
    StreamMap,
    StreamGenerator,
    HttpServerConnection,
    HttpClientConnection,
    TowerBufferResponse,
    TowerBufferWorker,
    GrpcStream,
    PollFn,
    IoCopy,
    IoCopyBidirectional,
    CancellationToken,
    TaskTrackerWait,
    SignalRecv,
    ChildWait,
    BarrierWait,
    OnceCellInit,
    SetOnceWait,
    FuturesMpscRecv,
    FuturesOneshotRecv,
    FlumeRecv,
    Http2Response,
    LocalSet,
}

impl NodeKind {
    /// Every kind, in declaration order (keep in step with the enum).
    pub const ALL: &'static [NodeKind] = &[
        NodeKind::AsyncFn,
        NodeKind::AsyncBlock,
        NodeKind::AsyncClosure,
        NodeKind::Future,
        NodeKind::Sleep,
        NodeKind::Timeout,
        NodeKind::JoinHandle,
        NodeKind::MutexLock,
        NodeKind::RwlockRead,
        NodeKind::RwlockWrite,
        NodeKind::SemaphoreAcquire,
        NodeKind::Notified,
        NodeKind::MpscRecv,
        NodeKind::OneshotRecv,
        NodeKind::WatchChanged,
        NodeKind::BroadcastRecv,
        NodeKind::IoReadiness,
        NodeKind::YieldNow,
        NodeKind::Pending,
        NodeKind::Ready,
        NodeKind::Instrumented,
        NodeKind::Select,
        NodeKind::Join,
        NodeKind::FuturesUnordered,
        NodeKind::FuturesOrdered,
        NodeKind::JoinSet,
        NodeKind::JoinAll,
        NodeKind::SelectAll,
        NodeKind::StreamMap,
        NodeKind::StreamGenerator,
        NodeKind::HttpServerConnection,
        NodeKind::HttpClientConnection,
        NodeKind::TowerBufferResponse,
        NodeKind::TowerBufferWorker,
        NodeKind::GrpcStream,
        NodeKind::PollFn,
        NodeKind::IoCopy,
        NodeKind::IoCopyBidirectional,
        NodeKind::CancellationToken,
        NodeKind::TaskTrackerWait,
        NodeKind::SignalRecv,
        NodeKind::ChildWait,
        NodeKind::BarrierWait,
        NodeKind::OnceCellInit,
        NodeKind::SetOnceWait,
        NodeKind::FuturesMpscRecv,
        NodeKind::FuturesOneshotRecv,
        NodeKind::FlumeRecv,
        NodeKind::Http2Response,
        NodeKind::LocalSet,
    ];

    /// As the JSON writes it (what `--waiting-on` takes).
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::AsyncFn => "async_fn",
            NodeKind::AsyncBlock => "async_block",
            NodeKind::AsyncClosure => "async_closure",
            NodeKind::Future => "future",
            NodeKind::Sleep => "sleep",
            NodeKind::Timeout => "timeout",
            NodeKind::JoinHandle => "join_handle",
            NodeKind::MutexLock => "mutex_lock",
            NodeKind::RwlockRead => "rwlock_read",
            NodeKind::RwlockWrite => "rwlock_write",
            NodeKind::SemaphoreAcquire => "semaphore_acquire",
            NodeKind::Notified => "notified",
            NodeKind::MpscRecv => "mpsc_recv",
            NodeKind::OneshotRecv => "oneshot_recv",
            NodeKind::WatchChanged => "watch_changed",
            NodeKind::BroadcastRecv => "broadcast_recv",
            NodeKind::IoReadiness => "io_readiness",
            NodeKind::YieldNow => "yield_now",
            NodeKind::Pending => "pending",
            NodeKind::Ready => "ready",
            NodeKind::Instrumented => "instrumented",
            NodeKind::Select => "select",
            NodeKind::Join => "join",
            NodeKind::FuturesUnordered => "futures_unordered",
            NodeKind::FuturesOrdered => "futures_ordered",
            NodeKind::JoinSet => "join_set",
            NodeKind::JoinAll => "join_all",
            NodeKind::SelectAll => "select_all",
            NodeKind::StreamMap => "stream_map",
            NodeKind::StreamGenerator => "stream_generator",
            NodeKind::HttpServerConnection => "http_server_connection",
            NodeKind::HttpClientConnection => "http_client_connection",
            NodeKind::TowerBufferResponse => "tower_buffer_response",
            NodeKind::TowerBufferWorker => "tower_buffer_worker",
            NodeKind::GrpcStream => "grpc_stream",
            NodeKind::PollFn => "poll_fn",
            NodeKind::IoCopy => "io_copy",
            NodeKind::IoCopyBidirectional => "io_copy_bidirectional",
            NodeKind::CancellationToken => "cancellation_token",
            NodeKind::TaskTrackerWait => "task_tracker_wait",
            NodeKind::SignalRecv => "signal_recv",
            NodeKind::ChildWait => "child_wait",
            NodeKind::BarrierWait => "barrier_wait",
            NodeKind::OnceCellInit => "once_cell_init",
            NodeKind::SetOnceWait => "set_once_wait",
            NodeKind::FuturesMpscRecv => "futures_mpsc_recv",
            NodeKind::FuturesOneshotRecv => "futures_oneshot_recv",
            NodeKind::FlumeRecv => "flume_recv",
            NodeKind::Http2Response => "http2_response",
            NodeKind::LocalSet => "local_set",
        }
    }

    pub fn is_coroutine(self) -> bool {
        matches!(
            self,
            NodeKind::AsyncFn | NodeKind::AsyncBlock | NodeKind::AsyncClosure
        )
    }
}

/// Where a child sits in a tree of futures (a `select!` or `join!` branch, a set member).
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct Branch {
    pub index: usize,
    pub status: BranchStatus,
    /// The local the branch's future lives in, where the macro names it (`futures::select!`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where the branch's future is written in the user's macro call, when the code shows
    /// it: shared by the branches at one place of a macro (the decoder's plan for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Arc<Location>>,
}

impl Branch {
    pub fn new(index: usize, status: BranchStatus) -> Branch {
        Branch {
            index,
            status,
            name: None,
            location: None,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum BranchStatus {
    /// Still being polled.
    Pending,
    /// Finished; its output is held.
    Done,
    /// Finished and its output taken, or its future dropped.
    Gone,
    /// A `select!` branch that completed or whose precondition was false.
    Disabled,
}

impl BranchStatus {
    /// As the JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            BranchStatus::Pending => "pending",
            BranchStatus::Done => "done",
            BranchStatus::Gone => "gone",
            BranchStatus::Disabled => "disabled",
        }
    }
}

/// A local variable saved across an `.await`.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Local {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(serialize_with = "hex_address")]
    pub address: u64,
    /// The value, for simple types (integers, bools, strings and Options of them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<SimpleValue>,
}

/// The value of a simple local: a number, a bool, a char or string (as text), or `None`.
#[derive(Debug, Serialize, Clone, PartialEq)]
#[serde(untagged)]
pub enum SimpleValue {
    Bool(bool),
    Signed(i64),
    Unsigned(u64),
    Float(f64),
    Text(String),
    /// An `Option` that is `None`.
    Null,
}

impl std::fmt::Display for SimpleValue {
    /// As JSON writes it (strings quoted).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self).map_err(|_| std::fmt::Error)?)
    }
}

#[derive(Debug, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum CoroutineState {
    Unresumed,
    Suspended,
    Returned,
    Panicked,
}

/// A place in the source. Made by `Location::new`, which writes its JSON once: the nodes
/// suspended at one await share one, and writing each node's again was a twentieth of
/// writing a report. Read its fields; a changed one would not change its JSON.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "LocationFields")]
pub struct Location {
    /// Shortened for display (see `names::short_path`).
    pub file: Arc<str>,
    pub line: u64,
    /// As the DWARF gives it.
    pub path: Arc<str>,
    json: Box<RawValue>,
}

/// A location's JSON object, as it is written and read.
#[derive(Serialize, Deserialize)]
struct LocationFields {
    file: Arc<str>,
    line: u64,
    path: Arc<str>,
}

impl Location {
    pub fn new(file: Arc<str>, line: u64, path: Arc<str>) -> Location {
        let fields = LocationFields { file, line, path };
        let json = raw_json(&fields);
        let LocationFields { file, line, path } = fields;
        Location {
            file,
            line,
            path,
            json,
        }
    }

    /// The same place at another line.
    pub fn at_line(&self, line: u64) -> Location {
        Location::new(self.file.clone(), line, self.path.clone())
    }
}

impl From<LocationFields> for Location {
    fn from(fields: LocationFields) -> Location {
        Location::new(fields.file, fields.line, fields.path)
    }
}

impl Serialize for Location {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(serializer)
    }
}

impl PartialEq for Location {
    fn eq(&self, other: &Location) -> bool {
        (&self.file, self.line, &self.path) == (&other.file, other.line, &other.path)
    }
}

impl Eq for Location {}

#[derive(Debug, Clone)]
pub struct FutureNode {
    pub kind: NodeKind,
    /// The type's name and coroutine function: one pair shared by every node of the type
    /// (100,000 tasks make half a million nodes).
    names: Arc<NodeNames>,
    pub state: Option<CoroutineState>,
    /// The coroutine's suspension point (`await_point`), one more than its number: four
    /// bytes, as the node's flags and kind fit beside it in eight.
    await_point_after: Option<NonZeroU32>,
    /// Shared by the nodes suspended at one await (the decoder's plan for it).
    pub location: Option<Arc<Location>>,
    /// A thin vector (one pointer, no allocation while empty): most nodes are leaves or
    /// have one child, and a million tasks make several million nodes.
    pub children: ThinVec<FutureNode>,
    /// Shown as `0x…`: kept as a number, since formatting half a million of them up front
    /// costs more than writing them out.
    pub address: u64,
    /// Kind-specific facts (docs/schema.md), of the node's kind: set with `set_detail`.
    /// Behind a pointer, as most nodes (coroutines) have none; shared where equal (a
    /// million `select!`s have a few sets between them: `future::recent`); copied on a
    /// change.
    detail: Option<Arc<Detail>>,
    /// One line saying what the node waits for, as the text output shows it: shared, as
    /// the details are (a million sleeps have a few to the tenth of a second).
    pub summary: Option<Arc<str>>,
    /// `boxed`, `held`, `running`, `field_search`, `shared`, a bit each.
    flags: NodeFlags,
    /// What few nodes have (see `Extra`); none for most. Shared, as details are: the
    /// branches of a million `select!`s are a few lists.
    extras: Option<Arc<Extras>>,
}

/// A node's yes-or-no facts, a bit each: a million tasks make several million nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct NodeFlags(u8);

impl NodeFlags {
    const BOXED: u8 = 1;
    const HELD: u8 = 2;
    const RUNNING: u8 = 4;
    const FIELD_SEARCH: u8 = 8;
    const SHARED: u8 = 16;

    fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    fn set(&mut self, flag: u8, on: bool) {
        match on {
            true => self.0 |= flag,
            false => self.0 &= !flag,
        }
    }
}

/// A future type's name and, for a coroutine, the function it belongs to.
#[derive(Debug, Clone)]
pub struct NodeNames {
    type_name: Arc<str>,
    function: Option<Arc<str>>,
    /// Both as JSON, made once: a million nodes' names would otherwise be escaped again
    /// for each node written (a quarter of the time spent writing a report).
    type_json: Box<RawValue>,
    function_json: Box<RawValue>,
    /// Both hashed (`names_hash`), made once: a stop's snapshot hashes every node's names.
    hash: u64,
}

impl NodeNames {
    pub fn new(type_name: impl Into<Arc<str>>, function: Option<Arc<str>>) -> NodeNames {
        let type_name = type_name.into();
        NodeNames {
            type_json: raw_json(&*type_name),
            function_json: raw_json(&function),
            hash: names_hash(&type_name, function.as_deref()),
            type_name,
            function,
        }
    }
}

/// A hash of a node's type name and function, the same for a node of a report and one
/// read back from its JSON.
pub fn names_hash(type_name: &str, function: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = rustc_hash::FxHasher::default();
    type_name.hash(&mut hasher);
    function.hash(&mut hasher);
    hasher.finish()
}

impl PartialEq for NodeNames {
    fn eq(&self, other: &NodeNames) -> bool {
        (&self.type_name, &self.function) == (&other.type_name, &other.function)
    }
}

impl Eq for NodeNames {}

/// `value` as JSON text, kept to be written as it is.
fn raw_json(value: &(impl Serialize + ?Sized)) -> Box<RawValue> {
    serde_json::value::to_raw_value(value)
        // A string or null always encodes; `null` keeps the type total.
        .unwrap_or_else(|_| RawValue::from_string("null".to_string()).unwrap_or_default())
}

/// The facts few nodes have, each once; shared by the nodes that have the same
/// (`FutureNode::share_extras`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extras(ThinVec<Extra>);

/// One of the facts few nodes have. A node keeps a list of those it has, each once: a
/// million nodes carry one pointer, and a node with one such fact (a `select!` branch, a
/// macro's await) a list it may share.
#[derive(Debug, Clone, PartialEq)]
enum Extra {
    /// For an await written inside a macro (`select!`, `join!`): the macro's own source
    /// line, which DWARF gives; `location` is then the user's line of the macro call.
    MacroLocation(Arc<Location>),
    Branch(Branch),
    /// The field path from the parent, for a future found by searching its fields
    /// (`inner.conn.dispatch.in_flight`).
    Via(Box<str>),
    /// Locals saved across the await (suspended coroutines).
    Locals(Vec<Local>),
    /// Guards, permits, senders and Notify handles among those locals.
    Holds(Vec<Holding>),
    Error(Box<str>),
}

/// Where a node's or a task's fields go, in the schema's order (docs/schema.md): serde's
/// struct, or the bytes of a task chunk (`tasks_json`), which write the keys as they are
/// rather than escape each (a million tasks have fifty million keys).
pub(crate) trait Fields {
    type Error;
    fn entry<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error>;
    fn address(&mut self, key: &'static str, address: u64) -> Result<(), Self::Error> {
        self.entry(key, &Hex(address))
    }
    fn node(&mut self, key: &'static str, node: &FutureNode) -> Result<(), Self::Error>;
    fn nodes(&mut self, key: &'static str, nodes: &[FutureNode]) -> Result<(), Self::Error>;
}

/// `Fields` into serde's struct.
struct StructFields<'a, S>(&'a mut S);

impl<S: serde::ser::SerializeStruct> Fields for StructFields<'_, S> {
    type Error = S::Error;
    fn entry<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), S::Error> {
        self.0.serialize_field(key, value)
    }
    fn node(&mut self, key: &'static str, node: &FutureNode) -> Result<(), S::Error> {
        self.0.serialize_field(key, node)
    }
    fn nodes(&mut self, key: &'static str, nodes: &[FutureNode]) -> Result<(), S::Error> {
        self.0.serialize_field(key, nodes)
    }
}

/// Written field by field as the schema orders them (docs/schema.md), the extras among
/// the others, each left out when it says nothing.
impl Serialize for FutureNode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut node = serializer.serialize_struct("FutureNode", 20)?;
        self.write_fields(&mut StructFields(&mut node))?;
        node.end()
    }
}

impl FutureNode {
    /// The node's fields, as its JSON has them.
    pub(crate) fn write_fields<F: Fields>(&self, out: &mut F) -> Result<(), F::Error> {
        out.entry("kind", &self.kind)?;
        out.entry("type", &*self.names.type_json)?;
        out.entry("function", &*self.names.function_json)?;
        out.entry("state", &self.state)?;
        out.entry("await_point", &self.await_point())?;
        out.entry("location", &self.location)?;
        if let Some(at) = self.macro_location() {
            out.entry("macro_location", at)?;
        }
        out.nodes("children", &self.children)?;
        out.address("address", self.address)?;
        if let Some(detail) = &self.detail {
            out.entry("detail", detail)?;
        }
        if let Some(summary) = &self.summary {
            out.entry("summary", summary)?;
        }
        if self.boxed() {
            out.entry("boxed", &true)?;
        }
        if let Some(branch) = self.branch() {
            out.entry("branch", branch)?;
        }
        if let Some(via) = self.via() {
            out.entry("via", via)?;
        }
        if self.held() {
            out.entry("held", &true)?;
        }
        if self.shared() {
            out.entry("shared", &true)?;
        }
        if !self.locals().is_empty() {
            out.entry("locals", self.locals())?;
        }
        if !self.holds().is_empty() {
            out.entry("holds", self.holds())?;
        }
        if self.running() {
            out.entry("running", &true)?;
        }
        if self.field_search() {
            out.entry("field_search", &true)?;
        }
        if let Some(error) = self.error() {
            out.entry("error", error)?;
        }
        Ok(())
    }
}

impl FutureNode {
    /// The facts of the node's kind.
    pub fn detail(&self) -> Option<&Detail> {
        self.detail.as_deref()
    }

    /// The facts of the node's kind, to change: its own copy if they were shared.
    pub fn detail_mut(&mut self) -> Option<&mut Detail> {
        self.detail.as_mut().map(Arc::make_mut)
    }

    /// `detail_mut` where `wanted` says these are facts the caller changes, else none:
    /// a pass over every node asks first, or it would copy every shared detail it meets.
    pub fn detail_mut_if(&mut self, wanted: impl FnOnce(&Detail) -> bool) -> Option<&mut Detail> {
        let detail = self.detail.as_mut().filter(|detail| wanted(detail))?;
        Some(Arc::make_mut(detail))
    }

    /// The facts of the node's kind, as shared, to share with another node.
    pub fn shared_detail(&self) -> Option<&Arc<Detail>> {
        self.detail.as_ref()
    }

    /// Sets the node's facts, and its kind to theirs.
    pub fn set_detail(&mut self, detail: Detail) {
        self.set_shared_detail(Arc::new(detail));
    }

    /// `set_detail` with facts other nodes may have too.
    pub fn set_shared_detail(&mut self, detail: Arc<Detail>) {
        self.kind = detail.kind();
        self.detail = Some(detail);
    }

    /// Adds a note to the summary, inside its closing parenthesis if it ends with one:
    /// `recv on oneshot 0x… (nothing sent)` -> `recv on oneshot 0x… (nothing sent; note)`.
    pub fn add_note(&mut self, note: &str) {
        // Two findings may say the same (a link and the wait-for graph): once is enough.
        if self.summary.as_deref().is_some_and(|summary| {
            summary.contains(&format!("({note})")) || summary.contains(&format!("; {note}"))
        }) {
            return;
        }
        self.summary = self
            .summary
            .take()
            .map(|summary| match summary.strip_suffix(')') {
                Some(open) => format!("{open}; {note})").into(),
                None => format!("{summary} ({note})").into(),
            });
    }

    /// The coroutine's suspension point, numbered from 0 as rustc numbers its suspend
    /// states (`env::state_of`).
    pub fn await_point(&self) -> Option<u32> {
        self.await_point_after.map(|after| after.get() - 1)
    }

    /// Sets the suspension point; none for a number past the last one a node keeps
    /// (rustc's are a few per await).
    pub fn set_await_point(&mut self, point: Option<u32>) {
        self.await_point_after = point.and_then(|point| NonZeroU32::new(point.checked_add(1)?));
    }

    /// Reached through a `Box<dyn Future>` / `Pin<Box<dyn Future>>` / `&mut dyn Future`.
    pub fn boxed(&self) -> bool {
        self.flags.has(NodeFlags::BOXED)
    }

    pub fn set_boxed(&mut self, boxed: bool) {
        self.flags.set(NodeFlags::BOXED, boxed);
    }

    /// Kept in that field by a future that polls it from its own `poll` (a hand-written
    /// future's channel, timer or socket), rather than awaited.
    pub fn held(&self) -> bool {
        self.flags.has(NodeFlags::HELD)
    }

    pub fn set_held(&mut self, held: bool) {
        self.flags.set(NodeFlags::HELD, held);
    }

    /// Reached again by another path in the same tree (a `Shared` future, one future two
    /// parents poll): shown where it was first reached, and not decoded again here.
    pub fn shared(&self) -> bool {
        self.flags.has(NodeFlags::SHARED)
    }

    pub fn set_shared(&mut self, shared: bool) {
        self.flags.set(NodeFlags::SHARED, shared);
    }

    /// True for the coroutine a worker is executing right now: its location is where it
    /// runs (from the thread's stack), and its memory state is from its last suspension.
    pub fn running(&self) -> bool {
        self.flags.has(NodeFlags::RUNNING)
    }

    pub fn set_running(&mut self, running: bool) {
        self.flags.set(NodeFlags::RUNNING, running);
    }

    /// What the node says was found by searching for a field by name below a value (the
    /// fallback where the layout table has no path for a type), which may have bound the
    /// wrong field.
    pub fn field_search(&self) -> bool {
        self.flags.has(NodeFlags::FIELD_SEARCH)
    }

    pub fn set_field_search(&mut self, field_search: bool) {
        self.flags.set(NodeFlags::FIELD_SEARCH, field_search);
    }

    /// A node with only its kind, type and address known.
    pub fn new(kind: NodeKind, type_name: impl Into<Arc<str>>, address: u64) -> FutureNode {
        FutureNode::named(kind, Arc::new(NodeNames::new(type_name, None)), address)
    }

    /// A node of a type whose names are known (and shared).
    pub fn named(kind: NodeKind, names: Arc<NodeNames>, address: u64) -> FutureNode {
        FutureNode {
            kind,
            names,
            state: None,
            await_point_after: None,
            location: None,
            children: ThinVec::new(),
            address,
            detail: None,
            summary: None,
            flags: NodeFlags::default(),
            extras: None,
        }
    }

    /// The node without its contents: kind, names, state, place, address and flags, with
    /// no detail, summary, children or extras.
    pub fn bare(&self) -> FutureNode {
        FutureNode {
            state: self.state,
            await_point_after: self.await_point_after,
            location: self.location.clone(),
            flags: self.flags,
            ..FutureNode::named(self.kind, Arc::clone(&self.names), self.address)
        }
    }

    pub fn type_name(&self) -> &str {
        &self.names.type_name
    }

    /// The coroutine's function (`None` for other futures).
    pub fn function(&self) -> Option<&str> {
        self.names.function.as_deref()
    }

    /// `names_hash` of its type name and function.
    pub fn names_hash(&self) -> u64 {
        self.names.hash
    }

    /// The function's name if it has one, else the type's: shared, to keep.
    pub fn shared_name(&self) -> Arc<str> {
        self.names
            .function
            .clone()
            .unwrap_or_else(|| self.names.type_name.clone())
    }

    /// Lets `share` put an equal list other nodes have in place of the node's extras.
    pub fn share_extras(&mut self, share: impl FnOnce(Arc<Extras>) -> Arc<Extras>) {
        if let Some(extras) = self.extras.take() {
            self.extras = Some(share(extras));
        }
    }

    fn extra<T: ?Sized>(&self, pick: impl Fn(&Extra) -> Option<&T>) -> Option<&T> {
        self.extras.as_ref()?.0.iter().find_map(pick)
    }

    /// The extra `pick` finds, to change, in the node's own copy of its list: where
    /// `has` finds one (else the list stays shared).
    fn extra_mut<T: ?Sized>(
        &mut self,
        has: impl Fn(&Extra) -> bool,
        pick: impl Fn(&mut Extra) -> Option<&mut T>,
    ) -> Option<&mut T> {
        let extras = self
            .extras
            .as_mut()
            .filter(|extras| extras.0.iter().any(has))?;
        Arc::make_mut(extras).0.iter_mut().find_map(pick)
    }

    /// Sets `extra`, in place of the one of its kind the node has.
    fn set_extra(&mut self, extra: Extra) {
        let kind = std::mem::discriminant(&extra);
        let extras = Arc::make_mut(self.extras.get_or_insert_with(Default::default));
        match extras
            .0
            .iter_mut()
            .find(|kept| std::mem::discriminant(*kept) == kind)
        {
            Some(kept) => *kept = extra,
            None => {
                // Exactly as many as it has: a node has one or two.
                extras.0.reserve_exact(1);
                extras.0.push(extra);
            }
        }
    }

    pub fn macro_location(&self) -> Option<&Location> {
        self.extra(|extra| match extra {
            Extra::MacroLocation(at) => Some(at.as_ref()),
            _ => None,
        })
    }

    pub fn set_macro_location(&mut self, at: Arc<Location>) {
        self.set_extra(Extra::MacroLocation(at));
    }

    pub fn branch(&self) -> Option<&Branch> {
        self.extra(|extra| match extra {
            Extra::Branch(branch) => Some(branch),
            _ => None,
        })
    }

    pub fn set_branch(&mut self, branch: Branch) {
        self.set_extra(Extra::Branch(branch));
    }

    pub fn via(&self) -> Option<&str> {
        self.extra(|extra| match extra {
            Extra::Via(via) => Some(&**via),
            _ => None,
        })
    }

    pub fn set_via(&mut self, via: impl Into<Box<str>>) {
        self.set_extra(Extra::Via(via.into()));
    }

    pub fn locals(&self) -> &[Local] {
        self.extra(|extra| match extra {
            Extra::Locals(locals) => Some(locals.as_slice()),
            _ => None,
        })
        .unwrap_or(&[])
    }

    pub fn set_locals(&mut self, locals: Vec<Local>) {
        self.set_extra(Extra::Locals(locals));
    }

    pub fn holds(&self) -> &[Holding] {
        self.extra(|extra| match extra {
            Extra::Holds(holds) => Some(holds.as_slice()),
            _ => None,
        })
        .unwrap_or(&[])
    }

    pub fn holds_mut(&mut self) -> &mut [Holding] {
        let has = |extra: &Extra| matches!(extra, Extra::Holds(_));
        self.extra_mut(has, |extra| match extra {
            Extra::Holds(holds) => Some(holds.as_mut_slice()),
            _ => None,
        })
        .unwrap_or(&mut [])
    }

    pub fn set_holds(&mut self, holds: Vec<Holding>) {
        self.set_extra(Extra::Holds(holds));
    }

    pub fn error(&self) -> Option<&str> {
        self.extra(|extra| match extra {
            Extra::Error(error) => Some(&**error),
            _ => None,
        })
    }

    pub fn set_error(&mut self, error: impl Into<String>) {
        self.set_extra(Extra::Error(error.into().into_boxed_str()));
    }
}

/// Addresses are numbers until written: `0x…` in JSON.
pub(crate) fn hex_address<S: serde::Serializer>(
    address: &u64,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    Hex(*address).serialize(serializer)
}

/// An address as `{:#x}` writes it, made on the stack: a million tasks' reports hold
/// several million addresses, and the formatting machinery was a tenth of writing them.
struct Hex(u64);

impl Hex {
    /// `0x…` as bytes: the buffer and how much of it is the text.
    fn text(&self) -> ([u8; 18], usize) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; 18];
        let digits = ((64 - self.0.leading_zeros() as usize).div_ceil(4)).max(1);
        text[..2].copy_from_slice(b"0x");
        for (place, slot) in text[2..2 + digits].iter_mut().rev().enumerate() {
            *slot = DIGITS[((self.0 >> (4 * place)) & 0xf) as usize];
        }
        (text, 2 + digits)
    }
}

impl Serialize for Hex {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (text, len) = self.text();
        // Only ASCII digits were written.
        serializer.serialize_str(std::str::from_utf8(&text[..len]).unwrap_or("0x?"))
    }
}

/// An optional address: `0x…`, or null.
pub(crate) fn hex_option<S: serde::Serializer>(
    address: &Option<u64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match address {
        Some(address) => hex_address(address, serializer),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error met reading something keeps, beside its line, the line's parts: what was
    /// being read (outermost first) and what went wrong there; one with no path, its line.
    #[test]
    fn a_report_error_writes_its_path_and_cause() {
        let error = Error::memory(0x10, 8).context("vtable of task 0x2000");
        let written = ReportError::from_error("runtime 0x1000", &error).of_runtime(0x1000);
        assert_eq!(
            serde_json::to_value(&written).unwrap(),
            serde_json::json!({
                "kind": "memory",
                "message": "runtime 0x1000: vtable of task 0x2000: cannot read 8 bytes at 0x10",
                "runtime": "0x1000",
                "path": ["runtime 0x1000", "vtable of task 0x2000"],
                "cause": "cannot read 8 bytes at 0x10",
            })
        );
        let plain = ReportError::of(&Error::layout("the list is damaged"));
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            serde_json::json!({"kind": "layout", "message": "the list is damaged"})
        );
    }

    /// A node's flags and await point are kept apart, each as set.
    #[test]
    fn flags_and_await_point_are_kept_small_and_apart() {
        let mut node = FutureNode::new(NodeKind::AsyncFn, "app::f", 0x10);
        assert_eq!(node.await_point(), None);
        for point in [0, 7, u32::MAX - 1] {
            node.set_await_point(Some(point));
            assert_eq!(node.await_point(), Some(point));
        }
        node.set_await_point(Some(u32::MAX));
        assert_eq!(node.await_point(), None);
        node.set_held(true);
        node.set_field_search(true);
        assert!(node.held() && node.field_search() && !node.boxed() && !node.running());
        node.set_held(false);
        node.set_running(true);
        assert!(!node.held() && node.field_search() && node.running());
    }

    /// Nodes sharing one list of extras each change only their own.
    #[test]
    fn shared_extras_are_copied_when_one_node_changes_them() {
        let mut first = FutureNode::new(NodeKind::Sleep, "app::F", 0x10);
        first.set_branch(Branch::new(0, BranchStatus::Pending));
        let mut kept = None;
        first.share_extras(|extras| kept.insert(extras).clone());
        let mut second = FutureNode::new(NodeKind::Sleep, "app::F", 0x20);
        second.set_branch(Branch::new(0, BranchStatus::Pending));
        second.share_extras(|extras| {
            assert_eq!(extras, *kept.as_ref().unwrap());
            kept.clone().unwrap()
        });
        second.set_branch(Branch::new(1, BranchStatus::Disabled));
        second.set_via("inner");
        assert_eq!(first.branch().map(|branch| branch.index), Some(0));
        assert_eq!(first.via(), None);
        assert_eq!(second.branch().map(|branch| branch.index), Some(1));
        assert_eq!(second.via(), Some("inner"));
        // A list with nothing to change stays shared.
        assert!(first.holds_mut().is_empty());
        first.share_extras(|extras| {
            assert!(Arc::ptr_eq(&extras, kept.as_ref().unwrap()));
            extras
        });
    }

    /// Nodes sharing one detail each change only their own: the first change copies it.
    #[test]
    fn a_shared_detail_is_copied_when_one_node_changes_it() {
        let shared = Arc::new(Detail::Join(FutureSet {
            len: 2,
            outputs_queued: None,
            pending: 2,
        }));
        let mut first = FutureNode::new(NodeKind::Future, "app::F", 0x10);
        let mut second = FutureNode::new(NodeKind::Future, "app::F", 0x20);
        first.set_shared_detail(Arc::clone(&shared));
        second.set_shared_detail(Arc::clone(&shared));
        assert_eq!(first.kind, NodeKind::Join);
        if let Some(Detail::Join(set)) = first.detail_mut() {
            set.pending = 1;
        }
        assert!(matches!(first.detail(), Some(Detail::Join(set)) if set.pending == 1));
        assert!(matches!(second.detail(), Some(Detail::Join(set)) if set.pending == 2));
        // Asked for facts of another kind, the node leaves its own shared.
        let sleeps = |detail: &Detail| matches!(detail, Detail::Sleep(_));
        assert!(second.detail_mut_if(sleeps).is_none());
        assert!(Arc::ptr_eq(second.shared_detail().unwrap(), &shared));
        assert!(second.detail_mut_if(|_| true).is_some());
        assert!(!Arc::ptr_eq(second.shared_detail().unwrap(), &shared));
    }

    /// A location's JSON, written once when it is made, is the object of its fields, with
    /// a path that needs escaping; read back, it is the same location and writes the same.
    #[test]
    fn a_location_writes_the_json_of_its_fields() {
        let at = Location::new("src/a\"b.rs".into(), 7, "/app/src/a\"b.rs".into());
        let json = serde_json::to_string(&at).unwrap();
        assert_eq!(
            json,
            r#"{"file":"src/a\"b.rs","line":7,"path":"/app/src/a\"b.rs"}"#
        );
        let back: Location = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (&*back.file, back.line, &*back.path),
            ("src/a\"b.rs", 7, "/app/src/a\"b.rs")
        );
        assert_eq!(back, at);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        assert_eq!(
            serde_json::to_string(&at.at_line(9)).unwrap(),
            json.replace(":7,", ":9,")
        );
    }

    /// Half a million nodes per 100,000 tasks: what few nodes have stays boxed, and what
    /// many share (the type's names, the await's location) is shared.
    #[test]
    fn a_node_keeps_its_rare_facts_out_of_line() {
        // A million tasks' several million nodes are most of a report; at 72 bytes a node
        // in a one-child list is a 96-byte allocation.
        let size = std::mem::size_of::<FutureNode>();
        assert!(size <= 72, "FutureNode is {size} bytes");
        // A select! branch or a macro's await: one allocation of one small entry.
        let size = std::mem::size_of::<Extra>();
        assert!(size <= 56, "Extra is {size} bytes");
    }

    /// The extras are written among the other fields in the schema's order, each only when
    /// it says something: the JSON is the same whether a field is boxed or not.
    #[test]
    fn a_node_writes_its_fields_in_the_schemas_order() {
        let at = |line| Location::new("src/main.rs".into(), line, "/app/src/main.rs".into());
        let mut node = FutureNode::new(NodeKind::Future, "app::F", 0x10);
        assert_eq!(
            serde_json::to_string(&node).unwrap(),
            r#"{"kind":"future","type":"app::F","function":null,"state":null,"await_point":null,"location":null,"children":[],"address":"0x10"}"#
        );
        node.location = Some(Arc::new(at(3)));
        node.summary = Some("waits".into());
        node.set_boxed(true);
        node.set_held(true);
        node.set_shared(true);
        node.set_running(true);
        node.set_field_search(true);
        // Set out of the schema's order, as the decoders come to them.
        node.set_error("cannot read");
        node.set_locals(vec![Local {
            name: "n".into(),
            type_name: "u8".into(),
            address: 0x20,
            value: None,
        }]);
        node.set_via("inner");
        node.set_branch(Branch::new(1, BranchStatus::Pending));
        node.set_macro_location(Arc::new(at(4)));
        let json = serde_json::to_string(&node).unwrap();
        // Each key's first appearance is its own (the nested ones come after it).
        let positions: Vec<Option<usize>> = [
            "kind",
            "type",
            "function",
            "state",
            "await_point",
            "location",
            "macro_location",
            "children",
            "address",
            "summary",
            "boxed",
            "branch",
            "via",
            "held",
            "shared",
            "locals",
            "running",
            "field_search",
            "error",
        ]
        .iter()
        .map(|key| json.find(&format!("\"{key}\":")))
        .collect();
        assert!(positions.iter().all(Option::is_some), "{json}");
        assert!(positions.is_sorted(), "{json}");
    }

    /// Addresses are written as `{:#x}` writes them, at every width.
    #[test]
    fn addresses_are_written_as_hex() {
        for address in [0, 1, 0xf, 0x10, 0x555f_62f3_2e00, u64::MAX, 1 << 63] {
            let json = serde_json::to_string(&Hex(address)).unwrap();
            assert_eq!(json, format!("\"{address:#x}\""));
        }
    }

    /// A note said twice (a link between tasks and the wait-for graph may both find who
    /// holds a channel's sender) is written once.
    #[test]
    fn a_note_is_added_once() {
        let mut node = FutureNode::new(NodeKind::OneshotRecv, "Receiver", 0x10);
        node.summary = Some("recv on oneshot 0x10 (nothing sent)".into());
        node.add_note("sender held by task 8");
        node.add_note("sender held by task 8");
        node.add_note("sender held by task 9");
        assert_eq!(
            node.summary.as_deref(),
            Some(
                "recv on oneshot 0x10 (nothing sent; sender held by task 8; sender held by task 9)"
            )
        );
    }
}
