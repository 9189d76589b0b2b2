//! How tokio's runtime keeps its threads' contexts, its tasks and its queues (checked
//! against tokio 1.54.1; the alternatives of older versions, down to 1.38, newest first).

use super::Step::{Field, Locked, Unwrap, Variant};
use super::{Path, Paths, Wrapper};

/// The crate, as its symbols and source paths name it.
pub const CRATE: &str = "tokio";

/// tokio's own cells (`tokio::loom::std::unsafe_cell::UnsafeCell(core UnsafeCell)`), which
/// `Step::Unwrap` looks through as it does std's.
pub const WRAPPERS: &[Wrapper] = &[("tokio::loom::std::unsafe_cell::UnsafeCell<", &["__0"])];

/// tokio's internal `Mutex<T>`, by feature: with `parking_lot`, `(PhantomData,
/// lock_api::Mutex{raw, data})`; without, `(std::sync::Mutex{inner, poison, data})`. The
/// path to the data's cell, which `Step::Locked` then unwraps.
pub const MUTEXES: &[Wrapper] = &[
    ("tokio::loom::std::parking_lot::Mutex<", &["__1", "data"]),
    ("tokio::loom::std::mutex::Mutex<", &["__0", "data"]),
];

/// Whether tokio's internal `Mutex` is held, by feature: the path to its state word and the
/// bits that say locked. parking_lot's `RawMutex{state: AtomicU8}` (LOCKED 1, PARKED 2);
/// std's futex `Mutex{inner: sys Mutex{futex}}` (0 unlocked, 1 locked, 2 contended).
pub const MUTEX_LOCKED: &[(&str, &[&str], u64)] = &[
    (
        "tokio::loom::std::parking_lot::Mutex<",
        &["__1", "raw", "state"],
        0b1,
    ),
    (
        "tokio::loom::std::mutex::Mutex<",
        &["__0", "inner", "futex"],
        u64::MAX,
    ),
];

/// The spans tokio's own `tracing` instrumentation (`tokio_unstable` + feature `tracing`)
/// opens around every spawned, local and block_on future: seen through, not shown.
pub const OWN_SPANS: &[&str] = &["runtime.spawn"];

/// The runtime context thread-local: its DWARF variable lives under this namespace.
pub const CONTEXT_TLS_NAMESPACE: &str = "tokio::runtime::context::CONTEXT::";
pub const CONTEXT_TYPE: &str = "tokio::runtime::context::Context";

/// `Context.current.handle: RefCell<Option<scheduler::Handle>>`.
pub const CONTEXT_HANDLE: Paths = &[&[Field("current"), Field("handle"), Unwrap]];
/// `Context.scheduler: Scoped<scheduler::Context>{inner: Cell<*const _>}`.
pub const CONTEXT_SCHEDULER: Paths = &[&[Field("scheduler"), Field("inner"), Unwrap]];
/// `Context.current_task_id: Cell<Option<Id>>`.
pub const CONTEXT_CURRENT_TASK: Paths = &[&[Field("current_task_id"), Unwrap]];

/// Variants of `scheduler::Handle` and `scheduler::Context`, each holding its flavor's one
/// as a tuple field.
pub const MULTI_THREAD_VARIANT: &str = "MultiThread";
pub const CURRENT_THREAD_VARIANT: &str = "CurrentThread";

/// `worker::Context{worker: Arc<Worker{index, ..}>, core: RefCell<Option<Box<Core>>>}`.
pub const WORKER_CONTEXT_WORKER: &str = "worker";
pub const WORKER_INDEX: &str = "index";

/// The scheduler handle's `OwnedTasks`, for both flavors.
pub const HANDLE_OWNED_TASKS: Paths = &[&[Field("shared"), Field("owned")]];
/// `OwnedTasks.list: ShardedList{lists: Box<[Mutex<LinkedList>]>, ..}` (1.33+).
pub const OWNED_TASKS_SHARDS: Paths = &[&[Field("list"), Field("lists")]];
/// A shard's list.
pub const SHARD_LIST: Paths = &[&[Locked]];
/// `OwnedTasks.closed: AtomicBool`, set when the runtime starts shutting its tasks down.
pub const OWNED_TASKS_CLOSED: Path = &[Field("closed")];
/// `OwnedTasks.list.count`: the tasks tokio counts in the list (`num_alive_tasks`);
/// `MetricAtomicUsize{value: AtomicUsize}` from 1.39, a plain `AtomicUsize` before.
pub const OWNED_TASKS_COUNT: Paths = &[&[Field("list"), Field("count")]];

/// `util::linked_list::LinkedList{head, tail}`; a node's `Pointers{inner: UnsafeCell<
/// PointersInner{prev, next}>}`.
pub const LINKED_LIST_HEAD: &str = "head";
pub const LINKED_LIST_TAIL: &str = "tail";
pub const POINTERS_NEXT: Paths = &[&[Field("inner"), Unwrap, Field("next")]];
pub const POINTERS_PREV: Paths = &[&[Field("inner"), Unwrap, Field("prev")]];
/// The field of a linked-list node (a waiter) holding its `Pointers`.
pub const NODE_POINTERS: &str = "pointers";

/// A LocalSet is known by its `Shared`, which everything that leads to it shares: the
/// `LocalSet{context: Rc<Context{shared: Arc<Shared>, ..}>}` itself, the `Rc<Context>` of
/// the `CURRENT` thread-local while it is polled or dropped, and each of its tasks, whose
/// scheduler is an `Arc<Shared>`. (1.38 to 1.54.)
pub const LOCAL_SET_TYPE: &str = "tokio::task::local::LocalSet";
pub const LOCAL_SET_SHARED: Path = &[
    Field("context"),
    super::Step::Rc,
    Field("shared"),
    super::Step::Arc,
];
/// To the `Arc<Shared>` itself, whose strong count is its LocalSet's and its tasks'.
pub const LOCAL_SET_SHARED_ARC: Path = &[Field("context"), super::Step::Rc, Field("shared")];
/// From the `Rc<Context>` the `CURRENT` thread-local holds to the `Shared`.
pub const LOCAL_CONTEXT_SHARED: Path = &[super::Step::Rc, Field("shared"), super::Step::Arc];
/// The type of a LocalSet task's scheduler (its `Core.scheduler`), an `Arc` of it.
pub const LOCAL_SHARED_TYPE: &str = "tokio::task::local::Shared";
/// `Shared.local_state.owned: LocalOwnedTasks{inner: UnsafeCell<OwnedTasksInner{list,
/// closed}>, id}`. tokio keeps no count of a LocalSet's tasks.
pub const LOCAL_SHARED_OWNED_TASKS: Paths = &[&[Field("local_state"), Field("owned")]];
pub const LOCAL_OWNED_LIST: Paths = &[&[Field("inner"), Unwrap, Field("list")]];
/// `Shared.local_state.owner: ThreadId(NonZeroU64)`, tokio's own count of threads.
pub const LOCAL_SHARED_OWNER: Paths = &[&[Field("local_state"), Field("owner")]];
/// Set when the LocalSet is dropped and shuts its tasks down.
pub const LOCAL_OWNED_CLOSED: Paths = &[&[Field("inner"), Unwrap, Field("closed")]];

/// `tokio::task::local::CURRENT: LocalData{ctx: RcCell{inner: UnsafeCell<Option<Rc<
/// Context>>>}}`, set while a LocalSet is polled, entered or dropped on the thread.
pub const LOCAL_TLS_NAMESPACE: &str = "tokio::task::local::CURRENT::";
pub const LOCAL_DATA_TYPE: &str = "tokio::task::local::LocalData";
pub const LOCAL_DATA_CONTEXT: Paths = &[&[Field("ctx"), Field("inner"), Unwrap]];

/// The runtime handle every way to a runtime ends in: `Runtime.handle`, `LocalRuntime.handle`
/// and `Handle` (`Handle{inner: scheduler::Handle}`) all hold one, as do `Sleep.driver`,
/// I/O registrations and each thread's `CONTEXT`. An enum of `Arc`s of each flavor's own
/// handle (`MULTI_THREAD_VARIANT`, `CURRENT_THREAD_VARIANT`).
pub const SCHEDULER_HANDLE_TYPE: &str = "tokio::runtime::scheduler::Handle";
/// A runtime task's scheduler (its `Core.scheduler`): an `Arc` of its flavor's handle.
pub const FLAVOR_HANDLE_TYPES: &[(&str, &str)] = &[
    (
        "tokio::runtime::scheduler::current_thread::Handle",
        CURRENT_THREAD_VARIANT,
    ),
    (
        "tokio::runtime::scheduler::multi_thread::handle::Handle",
        MULTI_THREAD_VARIANT,
    ),
];
/// `LocalSet::run_until` awaits `RunUntil{local_set: &LocalSet, future}`.
pub const RUN_UNTIL_LOCAL_SET: &str = "local_set";
pub const RUN_UNTIL_FUTURE: &str = "future";

/// `LocalOwnedTasks.id` / `OwnedTasks.id`: what the `owner_id` of each task it owns says.
pub const OWNED_TASKS_ID: &str = "id";

/// A task: `Header{state, queue_next, vtable: &Vtable, owner_id, ..}`; its `Vtable{poll,
/// .., trailer_offset, scheduler_offset (of the Core), id_offset}`;
/// `Trailer{owned: Pointers<Header>, waker, ..}`.
pub const HEADER_TYPE: &str = "tokio::runtime::task::core::Header";
pub const HEADER_STATE: &str = "state";
pub const HEADER_VTABLE: &str = "vtable";
pub const HEADER_QUEUE_NEXT: &str = "queue_next";
/// `Header.owner_id: UnsafeCell<Option<NonZeroU64>>`: the id of the list that owns it.
pub const HEADER_OWNER_ID: Paths = &[&[Field("owner_id"), Unwrap]];
pub const VTABLE_POLL: &str = "poll";
pub const VTABLE_TRAILER_OFFSET: &str = "trailer_offset";
pub const VTABLE_CORE_OFFSET: &str = "scheduler_offset";
pub const VTABLE_ID_OFFSET: &str = "id_offset";
pub const TRAILER_TYPE: &str = "tokio::runtime::task::core::Trailer";
pub const TRAILER_POINTERS: &str = "owned";
/// `Core<T, S>.scheduler: S`: an `Arc` of a runtime's handle, or of a LocalSet's `Shared`.
pub const CORE_SCHEDULER: &str = "scheduler";
/// `raw::poll<T, S>`'s template parameters: the future and the scheduler.
pub const POLL_FUTURE_PARAM: &str = "T";
pub const POLL_SCHEDULER_PARAM: &str = "S";
/// `Core<T, S>{scheduler, task_id, [spawned_at,] stage: CoreStage{stage: UnsafeCell<Stage>}}`.
pub const CORE_TYPE_PREFIX: &str = "tokio::runtime::task::core::Core<";
pub const CORE_STAGE: Paths = &[&[Field("stage"), Field("stage"), Unwrap]];
/// `Stage::Running(T)`; `Finished` and `Consumed` hold no future.
pub const STAGE_RUNNING: &str = "Running";
/// `Core.spawned_at: &'static Location`, only in `tokio_unstable` builds (tokio 1.46 on).
pub const CORE_SPAWNED_AT: &str = "spawned_at";

/// How tokio was built, as its DWARF shows it (what an unknown layout names): a feature,
/// and the prefix of the type names only that feature compiles in.
pub const FEATURE_MARKS: &[(&str, &str)] = &[
    (
        "rt-multi-thread",
        "tokio::runtime::scheduler::multi_thread::",
    ),
    ("parking_lot", "tokio::loom::std::parking_lot::"),
    ("taskdump", "tokio::runtime::task::trace::"),
    ("tracing", "tokio::util::trace::AsyncOpTracingCtx"),
];
/// The cfg `tokio_unstable`, shown by `CORE_SPAWNED_AT` (1.46 on).
pub const UNSTABLE_CFG: &str = "tokio_unstable";

/// The `task::state::State` methods a wake sets `NOTIFIED` in (`transition_to_notified_by_val`,
/// `_by_ref`, `_for_cancellation`, `_and_cancel`; 1.x). A failed compare-and-swap elsewhere
/// also writes the word back, with the bit a wake on another thread just set.
pub const WAKE_TRANSITIONS: &[&str] = &["State::transition_to_notified"];

/// `task::state` bits (stable since 1.0).
pub mod state_bits {
    pub const RUNNING: u64 = 0b1;
    pub const COMPLETE: u64 = 0b10;
    pub const NOTIFIED: u64 = 0b100;
    pub const CANCELLED: u64 = 0b100000;
    /// The reference count is the state word above its six flag bits.
    pub const REF_COUNT_SHIFT: u32 = 6;
}

/// multi_thread workers (1.54): `worker::Context.core: RefCell<Option<Box<Core>>>`;
/// `Core{lifo_slot: Option<Notified>, run_queue: queue::Local{inner: Arc<queue::Inner{head:
/// u64 (steal << 32 | real), tail: u32, buffer: *mut [UnsafeCell<MaybeUninit<Notified>>;
/// N]}>}, is_searching, park: Option<Parker> (taken while the worker parks)}`. A current_thread
/// `Core` keeps its local run queue in `tasks: VecDeque<Notified>`.
pub mod workers {
    use super::super::Step::{Field, Unwrap};
    use super::super::{Path, Paths};
    pub const CONTEXT_CORE: Paths = &[&[Field("core"), Unwrap]];
    pub const LIFO_SLOT: &str = "lifo_slot";
    pub const RUN_QUEUE: Path = &[Field("run_queue"), Field("inner"), super::super::Step::Arc];
    pub const QUEUE_HEAD: &str = "head";
    pub const QUEUE_TAIL: &str = "tail";
    pub const QUEUE_BUFFER: &str = "buffer";
    /// The real head is the low half of `head`.
    pub const QUEUE_REAL_HEAD_BITS: u32 = 32;
    pub const IS_SEARCHING: &str = "is_searching";
    pub const PARKER: &str = "park";
    pub const CURRENT_THREAD_TASKS: &str = "tasks";
    /// From a `Notified(Task{raw: RawTask{ptr}})`, or a run queue slot holding one, to the
    /// task's header pointer.
    pub const NOTIFIED_HEADER: Paths = &[&[Unwrap, Field("__0"), Field("raw"), Field("ptr")]];
}

/// The head (`Option<RawTask>`) of a runtime's inject queue, linked by `Header.queue_next`:
/// 1.54 multi_thread `Shared.inject: CachePadded<InjectQueue::Locked(Inject{synced:
/// Mutex<inject::Synced{head}>})>`; before, the `Synced` of the worker `Shared.synced:
/// Mutex<worker::Synced{inject, ..}>`; current_thread (1.38 to 1.54) `Shared.inject:
/// Inject{synced: Mutex<Synced{head}>}`.
pub const INJECT_HEAD: Paths = &[
    &[
        Field("shared"),
        Field("inject"),
        Field("value"),
        Variant("Locked"),
        Field("__0"),
        Field("synced"),
        Locked,
        Field("head"),
    ],
    &[
        Field("shared"),
        Field("synced"),
        Locked,
        Field("inject"),
        Field("head"),
    ],
    &[
        Field("shared"),
        Field("inject"),
        Field("synced"),
        Locked,
        Field("head"),
    ],
];

/// The Mutex a runtime's inject queue is changed under (its head and its length), paths as
/// for `INJECT_HEAD`.
pub const INJECT_LOCK: Paths = &[
    &[
        Field("shared"),
        Field("inject"),
        Field("value"),
        Variant("Locked"),
        Field("__0"),
        Field("synced"),
    ],
    &[Field("shared"), Field("synced")],
    &[Field("shared"), Field("inject"), Field("synced")],
];

/// The length tokio keeps of a runtime's inject queue, alternatives as for `INJECT_HEAD`:
/// `Inject{shared: inject::Shared{len}, synced}` in 1.54 multi_thread and current_thread;
/// the worker `Shared.inject: inject::Shared{len}` before 1.54.
pub const INJECT_LEN: Paths = &[
    &[
        Field("shared"),
        Field("inject"),
        Field("value"),
        Variant("Locked"),
        Field("__0"),
        Field("shared"),
        Field("len"),
    ],
    &[
        Field("shared"),
        Field("inject"),
        Field("shared"),
        Field("len"),
    ],
    &[Field("shared"), Field("inject"), Field("len")],
];

/// Functions whose local holds the future a thread blocks on, as `Pin<&mut F>`: (DWARF path
/// without generics, local name). Their template parameter `F` is its type.
pub const BLOCK_ON_FRAMES: &[(&str, &str)] = &[
    ("tokio::runtime::park::CachedParkThread::block_on", "f"),
    (
        "tokio::runtime::scheduler::current_thread::CoreGuard::block_on",
        "future",
    ),
];
pub const BLOCK_ON_FUTURE_PARAM: &str = "F";
/// Before 1.54 `CoreGuard::block_on<F>` took `future: F` with F = `Pin<&mut X>`: the local
/// then holds the pointer to X itself, and X is the future. The parameter's DWARF type says
/// which signature a build has; where it cannot be read, this frame is taken for the old one.
pub const BLOCK_ON_BY_VALUE_FRAME: &str =
    "tokio::runtime::scheduler::current_thread::CoreGuard::block_on";

/// A blocking-pool thread runs `blocking::pool::Inner::run`; while it runs a closure, the
/// closure is called from `<BlockingTask<T> as Future>::poll` (DWARF: `task::{impl#N}::poll`),
/// through `FnOnce::call_once` shims for fn items.
pub const BLOCKING_POOL_RUN: &str = "tokio::runtime::blocking::pool::Inner::run";
pub const BLOCKING_TASK_MODULE: &str = "tokio::runtime::blocking::task::";
pub const BLOCKING_TASK_POLL: &str = "poll";
pub const CALL_SHIMS: &[&str] = &["core::ops::function::"];

/// tokio's own code between a worker (or `block_on`) and the future it polls: the harness,
/// the scheduler, coop budgets, the park and context plumbing (DWARF paths, generics
/// dropped). A debugger's `bt` folds these into one frame (`stack_view`).
pub const POLL_GLUE_MODULES: &[&str] = &[
    "tokio::runtime::",
    "tokio::task::coop::",
    "tokio::coop::",
    "tokio::loom::",
    "tokio::macros::scoped_tls::",
    "tokio::task::local::",
    "tokio::util::",
];
/// The functions that poll one task: the innermost of them on a worker's stack polls the
/// task its context names as current.
pub const TASK_POLL_FUNCTIONS: &[&str] = &[
    "tokio::runtime::task::harness::Harness::poll",
    "tokio::runtime::task::raw::poll",
];
