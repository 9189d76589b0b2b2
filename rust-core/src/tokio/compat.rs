//! Every name and field path this tool relies on in tokio, in Rust's standard library and
//! in the libraries it decodes (hyper, tower, tonic, tokio-stream, async-stream), in one place. Where versions differ, each constant lists the alternatives, newest first.
//! Checked against tokio 1.54.1 and rustc 1.95; see docs/layouts.md for what changed when.

use crate::dwarf::PIN_POINTER_FIELDS;

/// The runtime context thread-local: its DWARF variable lives under this namespace.
pub const CONTEXT_TLS_NAMESPACE: &str = "tokio::runtime::context::CONTEXT::";
pub const CONTEXT_TYPE: &str = "tokio::runtime::context::Context";

/// The std TLS storage wraps the value; `state` says whether it was initialised.
pub const TLS_STORAGE_STATE_FIELD: &str = "state";
pub const TLS_STORAGE_ALIVE_VARIANT: &str = "Alive";

/// `Context.current.handle`: `RefCell<Option<scheduler::Handle>>`, then its value.
pub const CONTEXT_HANDLE: &[&[&str]] = &[&["current", "handle", "value", "value"]];
/// `Context.scheduler`: `Scoped<scheduler::Context>` holding a raw pointer.
pub const CONTEXT_SCHEDULER: &[&[&str]] = &[
    &["scheduler", "inner", "value", "value"],
    &["scheduler", "inner", "value"],
];
/// `Context.current_task_id`: `Cell<Option<Id>>`.
pub const CONTEXT_CURRENT_TASK: &[&[&str]] = &[
    &["current_task_id", "value", "value"],
    &["current_task_id", "value"],
];

/// Variants of `scheduler::Handle` and `scheduler::Context`.
pub const MULTI_THREAD_VARIANT: &str = "MultiThread";
pub const CURRENT_THREAD_VARIANT: &str = "CurrentThread";

/// `worker::Context.worker: Arc<Worker>`, `Worker.index`.
pub const WORKER_INDEX: &[&str] = &["index"];

/// The scheduler handle's `OwnedTasks`, for both flavors.
pub const HANDLE_OWNED_TASKS: &[&[&str]] = &[&["shared", "owned"]];
/// `OwnedTasks.list: ShardedList{lists: Box<[Mutex<LinkedList>]>}` (1.33+).
pub const OWNED_TASKS_SHARDS: &[&[&str]] = &[&["list", "lists"]];
pub const OWNED_TASKS_COUNT: &[&[&str]] = &[&["list", "count", "v", "value"], &["list", "count"]];
/// `OwnedTasks.closed: AtomicBool`, set when the runtime starts shutting its tasks down.
pub const OWNED_TASKS_CLOSED: &str = "closed";
pub const LINKED_LIST_TYPE_PREFIX: &str = "tokio::util::linked_list::LinkedList<";
pub const LINKED_LIST_HEAD: &str = "head";
pub const LINKED_LIST_TAIL: &str = "tail";

/// `LocalSet.context: Rc<Context>` -> (`RcInner.value`) -> `Context.shared: Arc<Shared>` (1.38+).
pub const LOCAL_SET_CONTEXT: &str = "context";
pub const RC_INNER_VALUE: &str = "value";
pub const LOCAL_CONTEXT_SHARED: &str = "shared";
/// `Shared.local_state.owned: LocalOwnedTasks`.
pub const LOCAL_SHARED_OWNED_TASKS: &[&[&str]] = &[&["local_state", "owned"]];
/// `LocalSet::run_until` awaits `RunUntil{local_set: &LocalSet, future}`.
pub const RUN_UNTIL_LOCAL_SET: &str = "local_set";
pub const RUN_UNTIL_FUTURE: &str = "future";

pub const HEADER_TYPE: &str = "tokio::runtime::task::core::Header";
pub const TRAILER_TYPE: &str = "tokio::runtime::task::core::Trailer";
/// `Trailer.owned: Pointers<Header>`, the task's links in its owner's list.
pub const TRAILER_POINTERS: &str = "owned";
/// Inside a `linked_list::Pointers<T>`: `inner: UnsafeCell<PointersInner{prev, next}>`.
pub const POINTERS_NEXT: &[&[&str]] = &[
    &["inner", "value", "next"],
    &["inner", "__0", "value", "next"],
];
pub const POINTERS_PREV: &[&[&str]] = &[
    &["inner", "value", "prev"],
    &["inner", "__0", "value", "prev"],
];
/// The field of a tokio linked-list node holding its `Pointers`.
pub const NODE_POINTERS: &str = "pointers";
/// `core::pin::Pin<P>`'s pointer (renamed `__pointer` in newer std).
pub const PIN_POINTER: &[&[&str]] = &[&[PIN_POINTER_FIELDS[0]], &[PIN_POINTER_FIELDS[1]]];
pub const CORE_TYPE_PREFIX: &str = "tokio::runtime::task::core::Core<";
pub const STAGE_TYPE_PREFIX: &str = "tokio::runtime::task::core::Stage<";
pub const STAGE_RUNNING_VARIANT: &str = "Running";
pub const STAGE_RUNNING_FUTURE: &str = "__0";
/// `Core.spawned_at: &'static Location`, only in `tokio_unstable` builds (tokio 1.46 on).
pub const CORE_SPAWNED_AT: &str = "spawned_at";
/// `core::panic::Location`'s file: `filename: NonNull<str>` in newer std, `file: &str` before.
pub const LOCATION_FILE: &[&[&str]] = &[&["filename", FAT_POINTER_FIELD], &["file"]];
pub const LOCATION_LINE: &str = "line";
const FAT_POINTER_FIELD: &str = "pointer";
/// A `&str` / `*const str`: its bytes and their count.
pub const STR_DATA: &str = "data_ptr";
pub const STR_LENGTH: &str = "length";

/// `task::state` bits (stable since 1.0).
pub mod state_bits {
    pub const RUNNING: u64 = 0b1;
    pub const COMPLETE: u64 = 0b10;
    pub const NOTIFIED: u64 = 0b100;
    pub const CANCELLED: u64 = 0b100000;
    /// The reference count is the state word above its six flag bits.
    pub const REF_COUNT_SHIFT: u32 = 6;
}

/// Functions whose local holds the future a thread blocks on, as `Pin<&mut F>`:
/// (DWARF path without generics, local name). Their template parameter `F` is its type.
pub const BLOCK_ON_FRAMES: &[(&str, &str)] = &[
    ("tokio::runtime::park::CachedParkThread::block_on", "f"),
    (
        "tokio::runtime::scheduler::current_thread::CoreGuard::block_on",
        "future",
    ),
];
pub const BLOCK_ON_FUTURE_PARAM: &str = "F";
/// Before 1.54 `CoreGuard::block_on<F>` took `future: F` with F = `Pin<&mut X>`: the local
/// then holds the pointer to X itself, and X is the future.
pub const BLOCK_ON_BY_VALUE_FRAME: &str =
    "tokio::runtime::scheduler::current_thread::CoreGuard::block_on";
pub const MUT_REFERENCE_PREFIX: &str = "&mut ";
pub const NON_NULL_PREFIX: &str = "core::ptr::non_null::NonNull<";

/// The `PollFn` that `select!`/`join!`/`try_join!` await: core's (tokio 1.41+), tokio's own
/// (before), and the futures crate's.
pub const MACRO_POLL_FNS: &[&str] = &[
    "core::future::poll_fn::PollFn<",
    "tokio::future::poll_fn::PollFn<",
    "futures_util::future::poll_fn::PollFn<",
];

/// A blocking-pool thread runs `blocking::pool::Inner::run`; while it runs a closure, the
/// closure is called from `<BlockingTask<T> as Future>::poll` (DWARF: `task::{impl#N}::poll`),
/// through `FnOnce::call_once` shims for fn items.
pub const BLOCKING_POOL_RUN: &str = "tokio::runtime::blocking::pool::Inner::run";
pub const BLOCKING_TASK_MODULE: &str = "tokio::runtime::blocking::task::";
pub const BLOCKING_TASK_POLL: &str = "poll";
pub const CALL_SHIMS: &[&str] = &["core::ops::function::"];

/// `Box<T>`: a pointer type of that name (a fat one, with data and vtable, for `dyn`).
pub const BOX_PREFIX: &str = "alloc::boxed::Box<";
/// `Vec<T>`: `buf: RawVec{inner: RawVecInner{ptr, ..}}` (type-erased pointer), `len`.
pub const VEC_PREFIX: &str = "alloc::vec::Vec<";
pub const VEC_LENGTH: &str = "len";
pub const VEC_POINTER: &str = "ptr";
pub const VEC_ELEMENT_PARAM: &str = "T";
/// rustc's trait-object fat pointers (`Box<dyn T>`, `&mut dyn T`): data and vtable.
pub const FAT_POINTER_DATA: &str = "pointer";
pub const FAT_POINTER_VTABLE: &str = "vtable";
/// The upvar an async method keeps its receiver in.
pub const ASYNC_SELF: &str = "self";
/// A tuple's fields.
pub const TUPLE_FIRST: &str = "__0";
pub const TUPLE_SECOND: &str = "__1";

/// tokio-stream (0.1): `StreamMap<K, V>{entries: Vec<(K, V)>}`; the `wrappers` hold what
/// they adapt in `inner`.
pub mod tokio_stream {
    pub const STREAM_MAP_TYPE: &str = "tokio_stream::stream_map::StreamMap<";
    pub const STREAM_MAP_ENTRIES: &str = "entries";
    pub const RECEIVER_STREAM: &str = "tokio_stream::wrappers::mpsc_bounded::ReceiverStream<";
    pub const UNBOUNDED_RECEIVER_STREAM: &str =
        "tokio_stream::wrappers::mpsc_unbounded::UnboundedReceiverStream<";
    pub const TCP_LISTENER_STREAM: &str = "tokio_stream::wrappers::tcp_listener::TcpListenerStream";
    pub const UNIX_LISTENER_STREAM: &str =
        "tokio_stream::wrappers::unix_listener::UnixListenerStream";
    pub const WRAPPER_INNER: &str = "inner";
}

/// async-stream (0.3): `AsyncStream<T, U>{rx: Receiver<T>, done: bool, generator: U}`.
pub mod async_stream {
    pub const STREAM_TYPE: &str = "async_stream::async_stream::AsyncStream<";
    pub const GENERATOR: &str = "generator";
    pub const DONE: &str = "done";
}

/// hyper 1.x HTTP/1 connections: `proto::h1::dispatch::Dispatcher<D, Bs, I, T>{conn: Conn{state:
/// State{reading, writing, ..}, ..}, dispatch: D, ..}` with `D` = `Server{in_flight:
/// Pin<Box<Option<S::Future>>>, ..}` or `Client{callback: Option<Callback>, ..}`.
pub mod hyper {
    pub const SERVER_DISPATCHER: &str =
        "hyper::proto::h1::dispatch::Dispatcher<hyper::proto::h1::dispatch::Server<";
    pub const CLIENT_DISPATCHER: &str =
        "hyper::proto::h1::dispatch::Dispatcher<hyper::proto::h1::dispatch::Client<";
    pub const READING: &[&str] = &["conn", "state", "reading"];
    pub const WRITING: &[&str] = &["conn", "state", "writing"];
    pub const IN_FLIGHT: &[&str] = &["dispatch", "in_flight"];
    pub const CALLBACK: &[&str] = &["dispatch", "callback"];
}

/// tower 0.5 `Buffer`: callers' `future::ResponseFuture{state: ResponseState::{Failed{error},
/// Rx{rx: oneshot::Receiver}, Poll{fut}}}`; the worker task's `worker::Worker{current_message:
/// Option<Message{request, tx: oneshot::Sender, ..}>, service, ..}`.
pub mod tower {
    pub const BUFFER_RESPONSE: &str = "tower::buffer::future::ResponseFuture<";
    pub const BUFFER_WORKER: &str = "tower::buffer::worker::Worker<";
    pub const RESPONSE_STATE: &str = "state";
    pub const STATE_WAITING: &str = "Rx";
    pub const STATE_POLLING: &str = "Poll";
    pub const WAITING_RECEIVER: &str = "rx";
    pub const POLLING_FUTURE: &str = "fut";
    pub const WORKER_MESSAGE: &str = "current_message";
    pub const MESSAGE_SENDER: &str = "tx";
    pub const WORKER_SERVICE: &str = "service";
}

/// tokio `oneshot::Sender`/`Receiver`: `inner: Option<Arc<Inner>>`.
pub const ONESHOT_INNER: &str = "inner";

/// tonic 0.14 `codec::decode::Streaming<T>{inner: StreamingInner{state: State::{ReadHeader,
/// ReadBody{len, ..}, Error}, direction: Direction::{Request, Response(StatusCode), ..}, ..}}`.
pub mod tonic {
    pub const STREAMING: &str = "tonic::codec::decode::Streaming<";
    pub const STATE: &[&str] = &["inner", "state"];
    pub const DIRECTION: &[&str] = &["inner", "direction"];
    pub const BODY_LENGTH: &str = "len";
}

/// tokio's leaf futures, for the decoders under `future/decoders/` (tokio 1.54 names; older
/// layouts get their alternatives here, newest first, as their versions are tested).
pub mod leaves {
    /// `time::Instant` wraps std's, which wraps a CLOCK_MONOTONIC `Timespec`.
    pub const INSTANT_SECONDS: &str = "tv_sec";
    pub const INSTANT_NANOS: &str = "tv_nsec";
    /// `Sleep`'s deadline `Instant`: `deadline` (1.53+); `entry: Timer::Traditional(TimerEntry)`
    /// (1.49–1.52); `entry: TimerEntry` (1.38–1.48).
    pub const SLEEP_DEADLINE: &[&[&str]] = &[
        &["deadline"],
        &["entry", "Traditional", "__0", "deadline"],
        &["entry", "deadline"],
    ];
    /// `Interval{delay: Pin<Box<Sleep>>, period: Duration{secs, nanos}}`.
    pub const INTERVAL_SLEEP: &str = "delay";
    pub const INTERVAL_PERIOD: &str = "period";
    pub const DURATION_SECONDS: &str = "secs";
    pub const DURATION_NANOS: &str = "nanos";
    /// `Timeout{value: F, delay: Sleep}` (`Option<Sleep>` where it is made lazily).
    pub const TIMEOUT_FUTURE: &str = "value";
    pub const TIMEOUT_SLEEP: &str = "delay";

    /// `Mutex.s`, `RwLock.s` (+ `mr`, the most readers), `Semaphore.ll_sem`: the batch semaphore.
    pub const MUTEX_SEMAPHORE: &str = "s";
    pub const RWLOCK_SEMAPHORE: &str = "s";
    pub const RWLOCK_MAX_READERS: &str = "mr";
    pub const SEMAPHORE_INNER: &str = "ll_sem";
    /// `Semaphore::acquire_many(n)`.
    pub const ACQUIRE_MANY_COUNT: &str = "n";
    /// `batch_semaphore::Acquire{semaphore: *const Semaphore, num_permits, ..}`.
    pub const ACQUIRE_SEMAPHORE: &str = "semaphore";
    pub const ACQUIRE_PERMITS: &str = "num_permits";
    /// `batch_semaphore::Semaphore{permits: AtomicUsize (available << 1 | closed), waiters: Mutex<Waitlist{queue: LinkedList}>}`.
    pub const BATCH_PERMITS: &str = "permits";
    pub const BATCH_WAITERS: &str = "waiters";

    /// `Notified{notify: *const Notify, state, ..}`; `Notify{state, waiters: Mutex<LinkedList>}`.
    pub const NOTIFIED_NOTIFY: &str = "notify";
    pub const NOTIFIED_STATE: &str = "state";
    pub const NOTIFY_STATE: &str = "state";
    pub const NOTIFY_WAITERS: &str = "waiters";

    /// mpsc `Receiver{chan: Rx{inner: Arc<Chan>}}`; `Chan{semaphore, tx_count, rx_fields{rx_closed, ..}}`;
    /// a bounded channel's semaphore is `{semaphore: batch Semaphore, bound}`, an unbounded one's a word.
    pub const MPSC_CHAN: &[&str] = &["chan", "inner"];
    pub const MPSC_SEMAPHORE: &str = "semaphore";
    pub const MPSC_SENDERS: &str = "tx_count";
    pub const MPSC_RX_CLOSED: &str = "rx_closed";
    pub const MPSC_BOUND: &str = "bound";
    pub const MPSC_BOUNDED_PERMITS: &[&str] = &["semaphore", "permits"];
    /// oneshot `Inner.state`.
    pub const ONESHOT_STATE: &str = "state";
    /// watch `Receiver{shared: Arc<Shared{state, ref_count_rx, ..}>, version}`.
    pub const WATCH_SHARED: &str = "shared";
    pub const WATCH_STATE: &str = "state";
    pub const WATCH_VERSION_SEEN: &str = "version";
    pub const WATCH_RECEIVERS: &str = "ref_count_rx";
    /// broadcast `Receiver{shared: Arc<Shared{tail: Mutex<Tail{pos, closed}>, num_tx}>, next}`.
    pub const BROADCAST_SHARED: &str = "shared";
    pub const BROADCAST_NEXT: &str = "next";
    pub const BROADCAST_TAIL: &str = "tail";
    pub const BROADCAST_TAIL_POSITION: &str = "pos";
    pub const BROADCAST_CLOSED: &str = "closed";
    pub const BROADCAST_SENDERS: &str = "num_tx";

    /// The raw fd, a dozen wrappers below a socket (`PollEvented.io…OwnedFd.fd`).
    pub const FD: &str = "fd";
    /// `io::util::Read{reader: &mut R}`, `Write{writer: &mut W}`; `Readiness.waiter.interest`.
    pub const READ_SOURCE: &str = "reader";
    pub const WRITE_TARGET: &str = "writer";
    pub const READINESS_INTEREST: &str = "interest";
    /// `readiness(interest)` / `ready(interest)` argument.
    pub const READY_INTEREST_ARGUMENT: &str = "interest";

    /// `JoinHandle{raw: RawTask{ptr: NonNull<Header>}}`.
    pub const JOIN_HANDLE_HEADER: &[&str] = &["raw", "ptr"];
    pub const JOIN_HANDLE_TYPE: &str = "tokio::runtime::task::join::JoinHandle<";
    /// `JoinSet{inner: IdleNotifiedSet{lists: Arc<Mutex<ListsInner{notified, idle}>>}}`, entries' `value`.
    pub const JOIN_SET_LISTS: &[&str] = &["inner", "lists"];
    pub const JOIN_SET_LIST_NAMES: &[&str] = &["notified", "idle"];
    pub const JOIN_SET_ENTRY_VALUE: &str = "value";
}

/// multi_thread workers (1.54): `worker::Context{core: RefCell<Option<Box<Core>>>}`;
/// `Core{lifo_slot: Option<Notified>, run_queue: queue::Local{inner: Arc<queue::Inner{head:
/// u64 (steal << 32 | real), tail: u32, buffer: *mut [UnsafeCell<MaybeUninit<Notified>>; N]}>},
/// is_searching, park: Option<Parker> (taken while the worker parks)}`; a `Notified` is
/// `Task{raw: RawTask{ptr}}`. The runtime's inject queue: `Shared.inject: CachePadded<
/// InjectQueue::Locked(Inject{synced: Mutex<Synced{head, ..}>})>`, linked by `Header.queue_next`.
pub mod workers {
    pub const CONTEXT_CORE: &[&str] = &["core", "value", "value"];
    pub const LIFO_SLOT: &str = "lifo_slot";
    pub const RUN_QUEUE: &[&str] = &["run_queue", "inner"];
    pub const QUEUE_HEAD: &str = "head";
    pub const QUEUE_TAIL: &str = "tail";
    pub const QUEUE_BUFFER: &str = "buffer";
    /// The real head is the low half of `head`.
    pub const QUEUE_REAL_HEAD_BITS: u32 = 32;
    pub const IS_SEARCHING: &str = "is_searching";
    pub const PARKER: &str = "park";
    /// From a `Notified` (or a run queue slot holding one: tokio's `loom` `UnsafeCell(std
    /// UnsafeCell{value: MaybeUninit{value: ManuallyDrop{value: Notified}}})`, where newer
    /// std's `ManuallyDrop` holds `MaybeDangling(Notified)`) to the task's header pointer.
    pub const NOTIFIED_HEADER: &[&[&str]] = &[
        &["__0", "raw", "ptr"],
        &["__0", "value", "value", "value", "__0", "__0", "raw", "ptr"],
        &["__0", "value", "value", "value", "__0", "raw", "ptr"],
    ];
    /// The inject queue's head (`Option<RawTask>`): 1.54 `Shared.inject: CachePadded<
    /// InjectQueue::Locked(Inject{synced: Mutex<inject::Synced{head}>})>`; before, the queue's
    /// `Synced` sits in the worker `Shared.synced: Mutex<worker::Synced{inject, ..}>`.
    /// current_thread (1.38 to 1.54): `Shared.inject: Inject{synced: Mutex<Synced{head}>}`.
    pub const INJECT_HEAD: &[&[&str]] = &[
        &[
            "shared", "inject", "value", "Locked", "__0", "synced", "__1", "data", "value", "head",
        ],
        &["shared", "synced", "__1", "data", "value", "inject", "head"],
        &["shared", "inject", "synced", "__1", "data", "value", "head"],
    ];
    /// A current_thread `Core`'s local run queue, a `VecDeque<Notified>`.
    pub const CURRENT_THREAD_TASKS: &str = "tasks";
    pub const HEADER_QUEUE_NEXT: &str = "queue_next";
}

/// std's `VecDeque<T>` (rustc 1.67 on): a ring of `len` elements from `head` in a `RawVec`
/// whose `ptr` and `cap` (in elements) sit in nested wrappers.
pub mod vec_deque {
    pub const HEAD: &str = "head";
    pub const LEN: &str = "len";
    pub const BUFFER: &str = "buf";
    pub const POINTER: &str = "ptr";
    pub const CAPACITY: &str = "cap";
    pub const ELEMENT_PARAM: &str = "T";
}

/// What a coroutine may keep that others wait for: guards and permits of tokio's
/// semaphore-based locks, channel senders, Notify handles. Each type (by name prefix) with
/// the steps from a value of it to the resource's key: for locks the `batch_semaphore::
/// Semaphore` inside the primitive (their waiters' nodes name it as `detail.semaphore`),
/// for channels their shared state, for a Notify itself.
pub mod holdings {
    /// One step from a value toward the resource.
    #[derive(Debug, Clone, Copy)]
    pub enum Step {
        Field(&'static str),
        /// Through a reference or raw pointer.
        Deref,
        /// Through an `Arc` to its data.
        Arc,
        /// Into an `Option`'s `Some` (nothing is held when `None`).
        Some,
    }
    use Step::{Arc, Deref, Field, Some};

    /// (type name prefix, holding kind, resource kind, steps)
    pub type HoldingType = (&'static str, &'static str, &'static str, &'static [Step]);

    pub const TYPES: &[HoldingType] = &[
        (
            "tokio::sync::mutex::MutexGuard<",
            "lock_guard",
            "mutex",
            &[Field("lock"), Deref, Field("s")],
        ),
        (
            "tokio::sync::mutex::OwnedMutexGuard<",
            "lock_guard",
            "mutex",
            &[Field("lock"), Arc, Field("s")],
        ),
        (
            "tokio::sync::mutex::MappedMutexGuard<",
            "lock_guard",
            "mutex",
            &[Field("s"), Deref],
        ),
        (
            "tokio::sync::mutex::OwnedMappedMutexGuard<",
            "lock_guard",
            "mutex",
            &[Field("lock"), Arc, Field("s")],
        ),
        (
            "tokio::sync::rwlock::read_guard::RwLockReadGuard<",
            "lock_guard",
            "rwlock",
            &[Field("s"), Deref],
        ),
        (
            "tokio::sync::rwlock::write_guard::RwLockWriteGuard<",
            "lock_guard",
            "rwlock",
            &[Field("s"), Deref],
        ),
        (
            "tokio::sync::rwlock::write_guard_mapped::RwLockMappedWriteGuard<",
            "lock_guard",
            "rwlock",
            &[Field("s"), Deref],
        ),
        (
            "tokio::sync::rwlock::owned_read_guard::OwnedRwLockReadGuard<",
            "lock_guard",
            "rwlock",
            &[Field("lock"), Arc, Field("s")],
        ),
        (
            "tokio::sync::rwlock::owned_write_guard::OwnedRwLockWriteGuard<",
            "lock_guard",
            "rwlock",
            &[Field("lock"), Arc, Field("s")],
        ),
        (
            "tokio::sync::rwlock::owned_write_guard_mapped::OwnedRwLockMappedWriteGuard<",
            "lock_guard",
            "rwlock",
            &[Field("lock"), Arc, Field("s")],
        ),
        (
            "tokio::sync::semaphore::SemaphorePermit",
            "permit",
            "semaphore",
            &[Field("sem"), Deref, Field("ll_sem")],
        ),
        (
            "tokio::sync::semaphore::OwnedSemaphorePermit",
            "permit",
            "semaphore",
            &[Field("sem"), Arc, Field("ll_sem")],
        ),
        (
            "tokio::sync::mpsc::bounded::Sender<",
            "sender",
            "mpsc",
            &[Field("chan"), Field("inner"), Arc],
        ),
        (
            "tokio::sync::mpsc::unbounded::UnboundedSender<",
            "sender",
            "mpsc",
            &[Field("chan"), Field("inner"), Arc],
        ),
        (
            "tokio::sync::oneshot::Sender<",
            "sender",
            "oneshot",
            &[Field("inner"), Some, Arc],
        ),
        (
            "tokio::sync::watch::Sender<",
            "sender",
            "watch",
            &[Field("shared"), Arc],
        ),
        (
            "tokio::sync::broadcast::Sender<",
            "sender",
            "broadcast",
            &[Field("shared"), Arc],
        ),
        (
            "alloc::sync::Arc<tokio::sync::notify::Notify",
            "notify",
            "notify",
            &[Arc],
        ),
        ("&tokio::sync::notify::Notify", "notify", "notify", &[Deref]),
    ];

    /// The future every semaphore-based acquire awaits; permits tokio assigned to its waiter
    /// are held though nobody has them yet.
    pub const ACQUIRE_TYPE: &str = "tokio::sync::batch_semaphore::Acquire";
    pub const ACQUIRE_SEMAPHORE: &[Step] = &[Field("semaphore"), Deref];
    pub const ACQUIRE_PERMITS: &str = "num_permits";
    /// Set once the waiter is queued or has permits assigned, until they are handed over.
    pub const ACQUIRE_QUEUED: &str = "queued";
    /// The waiter's count of permits still needed.
    pub const ACQUIRE_REMAINING: &[&str] = &["node", "state"];
}
