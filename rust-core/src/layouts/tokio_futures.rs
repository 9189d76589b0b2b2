//! tokio's own futures, for the decoders under `future/decoders/`, and the values a task
//! keeps that others wait for (tokio 1.54 names; older layouts as their alternatives,
//! newest first).

use super::rust::OWNED_FD_TYPE;
use super::Step::{Arc, Deref, Field, Locked, Some, To, Unwrap, Variant};
use super::{Path, Paths};
use crate::model::{HoldingKind, ResourceKind};

/// tokio's `trace::Root<F>{future}` (task dumps) and `coop::Coop<F>{fut}` only wrap a future.
pub const TRACE_ROOT_FUTURE: &str = "future";
pub const COOP_FUTURE: &str = "fut";

/// `Sleep`'s deadline `Instant`: `deadline` (1.53+); `entry: Timer::Traditional(TimerEntry)`
/// (1.49–1.52); `entry: TimerEntry` (1.38–1.48).
pub const SLEEP_DEADLINE: Paths = &[
    &[Field("deadline")],
    &[
        Field("entry"),
        Variant("Traditional"),
        Field("__0"),
        Field("deadline"),
    ],
    &[Field("entry"), Field("deadline")],
];
/// `Interval{delay: Pin<Box<Sleep>>, period: Duration, ..}`.
pub const INTERVAL_SLEEP: &str = "delay";
pub const INTERVAL_PERIOD: &str = "period";
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
/// `batch_semaphore::Acquire{semaphore: *const Semaphore, num_permits, node: Waiter{state:
/// permits still needed, ..}, queued}`.
pub const ACQUIRE_TYPE: &str = "tokio::sync::batch_semaphore::Acquire";
pub const ACQUIRE_SEMAPHORE: Path = &[Field("semaphore"), Deref];
pub const ACQUIRE_PERMITS: &str = "num_permits";
/// Set once the waiter is queued or has permits assigned, until they are handed over.
pub const ACQUIRE_QUEUED: &str = "queued";
pub const ACQUIRE_REMAINING: Paths = &[&[Field("node"), Field("state")]];
/// `batch_semaphore::Semaphore{permits: AtomicUsize (available << 1 | closed), waiters:
/// Mutex<Waitlist{queue: LinkedList, closed}>}`.
pub const BATCH_PERMITS: &str = "permits";
pub const BATCH_WAITERS: Paths = &[&[Field("waiters"), Locked, Field("queue")]];

/// `Notified{notify: *const Notify, state, ..}`; `Notify{state, waiters: Mutex<LinkedList>}`.
pub const NOTIFIED_NOTIFY: &str = "notify";
pub const NOTIFIED_STATE: &str = "state";
pub const NOTIFY_STATE: &str = "state";
pub const NOTIFY_WAITERS: Paths = &[&[Field("waiters"), Locked]];

/// mpsc `Receiver{chan: Rx{inner: Arc<Chan>}}`; `Chan{semaphore, tx_count, rx_fields:
/// UnsafeCell<RxFields{rx_closed, ..}>}`; a bounded channel's semaphore is `{semaphore:
/// batch Semaphore, bound}`, an unbounded one's a word.
pub const MPSC_CHAN: Path = &[Field("chan"), Field("inner"), Arc];
pub const MPSC_SEMAPHORE: &str = "semaphore";
pub const MPSC_SENDERS: &str = "tx_count";
pub const MPSC_RX_CLOSED: Paths = &[&[Field("rx_fields"), Unwrap, Field("rx_closed")]];
pub const MPSC_BOUND: &str = "bound";
pub const MPSC_BOUNDED_PERMITS: Path = &[Field("semaphore"), Field("permits")];
/// oneshot `Sender`/`Receiver{inner: Option<Arc<Inner{state, ..}>>}`.
pub const ONESHOT_INNER: Path = &[Field("inner"), Some, Arc];
pub const ONESHOT_STATE: &str = "state";
/// watch `Receiver{shared: Arc<Shared{state, ref_count_rx, ..}>, version}`.
pub const WATCH_SHARED: Path = &[Field("shared"), Arc];
pub const WATCH_STATE: &str = "state";
pub const WATCH_VERSION_SEEN: &str = "version";
pub const WATCH_RECEIVERS: &str = "ref_count_rx";
/// broadcast `Receiver{shared: Arc<Shared{tail: Mutex<Tail{pos, closed}>, num_tx}>, next}`.
pub const BROADCAST_SHARED: Path = &[Field("shared"), Arc];
pub const BROADCAST_NEXT: &str = "next";
pub const BROADCAST_TAIL: Paths = &[&[Field("tail"), Locked]];
pub const BROADCAST_TAIL_POSITION: &str = "pos";
pub const BROADCAST_CLOSED: &str = "closed";
pub const BROADCAST_SENDERS: &str = "num_tx";

/// tokio's I/O types and where each keeps its `PollEvented` (by type name prefix).
pub const IO_OWNERS: &[(&str, Path)] = &[
    ("tokio::net::tcp::stream::TcpStream", &[Field("io")]),
    ("tokio::net::tcp::listener::TcpListener", &[Field("io")]),
    ("tokio::net::udp::UdpSocket", &[Field("io")]),
    ("tokio::net::unix::stream::UnixStream", &[Field("io")]),
    ("tokio::net::unix::listener::UnixListener", &[Field("io")]),
    (
        "tokio::net::unix::datagram::socket::UnixDatagram",
        &[Field("io")],
    ),
    ("tokio::net::unix::pipe::Sender", &[Field("io")]),
    ("tokio::net::unix::pipe::Receiver", &[Field("io")]),
    ("tokio::io::poll_evented::PollEvented<", &[]),
];
/// `PollEvented{io: Option<mio type>, registration}`; mio's types hold an `IoSource{inner:
/// std type}`, and std's types an `OwnedFd` a few newtypes down.
pub const POLL_EVENTED_FD: Paths = &[&[
    Field("io"),
    Some,
    Field("inner"),
    Field("inner"),
    To(OWNED_FD_TYPE),
    Field(super::rust::OWNED_FD),
]];
/// The field searched for where a type is not in `IO_OWNERS` (a user's own I/O type).
pub const FD_SEARCHED: &str = "fd";
/// `io::util::Read{reader: &mut R}`, `Write{writer: &mut W}`, and their kin.
pub const READ_SOURCE: &str = "reader";
pub const WRITE_TARGET: &str = "writer";
/// `Readiness{waiter: UnsafeCell<Waiter{interest, ..}>}`; `Interest(usize)` bits.
pub const READINESS_INTEREST: Paths = &[&[Field("waiter"), Unwrap, Field("interest")]];
/// The socket methods whose interest is not `read`: `writable()`, and `ready(interest)`.
pub const WRITABLE_FN: &str = "writable";
pub const READY_FN: &str = "ready";
/// `readiness(interest)` / `ready(interest)` argument.
pub const READY_INTEREST_ARGUMENT: &str = "interest";
/// tokio `Interest` bits and their names.
pub const INTEREST_BITS: &[(u64, &str)] = &[
    (1, "read"),
    (2, "write"),
    (4, "aio"),
    (8, "lio"),
    (0x10, "priority"),
    (0x20, "error"),
];

/// `JoinHandle{raw: RawTask{ptr: NonNull<Header>}}`.
pub const JOIN_HANDLE_HEADER: Path = &[Field("raw"), Field("ptr")];
/// `JoinSet{inner: IdleNotifiedSet{lists: Arc<Mutex<ListsInner{notified, idle}>>}}`, each
/// list's entries `ListEntry{value: UnsafeCell<ManuallyDrop<JoinHandle>>, ..}`.
pub const JOIN_SET_LISTS: Paths = &[&[Field("inner"), Field("lists"), Arc, Locked]];
pub const JOIN_SET_LIST_NAMES: &[&str] = &["notified", "idle"];
pub const JOIN_SET_ENTRY_HANDLE: Paths = &[&[Field("value"), Unwrap]];

/// What a coroutine may keep that others wait for: guards and permits of tokio's
/// semaphore-based locks, channel senders, Notify handles. Each type (by name prefix) with
/// the path from a value of it to the resource's key: for locks the `batch_semaphore::
/// Semaphore` inside the primitive (their waiters' nodes name it as `semaphore`), for
/// channels their shared state, for a Notify itself.
pub type HoldingType = (&'static str, HoldingKind, ResourceKind, Path);

pub const HOLDING_TYPES: &[HoldingType] = &[
    (
        "tokio::sync::mutex::MutexGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Mutex,
        &[Field("lock"), Deref, Field("s")],
    ),
    (
        "tokio::sync::mutex::OwnedMutexGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Mutex,
        &[Field("lock"), Arc, Field("s")],
    ),
    (
        "tokio::sync::mutex::MappedMutexGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Mutex,
        &[Field("s"), Deref],
    ),
    (
        "tokio::sync::mutex::OwnedMappedMutexGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Mutex,
        &[Field("lock"), Arc, Field("s")],
    ),
    (
        "tokio::sync::rwlock::read_guard::RwLockReadGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Rwlock,
        &[Field("s"), Deref],
    ),
    (
        "tokio::sync::rwlock::write_guard::RwLockWriteGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Rwlock,
        &[Field("s"), Deref],
    ),
    (
        "tokio::sync::rwlock::write_guard_mapped::RwLockMappedWriteGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Rwlock,
        &[Field("s"), Deref],
    ),
    (
        "tokio::sync::rwlock::owned_read_guard::OwnedRwLockReadGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Rwlock,
        &[Field("lock"), Arc, Field("s")],
    ),
    (
        "tokio::sync::rwlock::owned_write_guard::OwnedRwLockWriteGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Rwlock,
        &[Field("lock"), Arc, Field("s")],
    ),
    (
        "tokio::sync::rwlock::owned_write_guard_mapped::OwnedRwLockMappedWriteGuard<",
        HoldingKind::LockGuard,
        ResourceKind::Rwlock,
        &[Field("lock"), Arc, Field("s")],
    ),
    (
        "tokio::sync::semaphore::SemaphorePermit",
        HoldingKind::Permit,
        ResourceKind::Semaphore,
        &[Field("sem"), Deref, Field("ll_sem")],
    ),
    (
        "tokio::sync::semaphore::OwnedSemaphorePermit",
        HoldingKind::Permit,
        ResourceKind::Semaphore,
        &[Field("sem"), Arc, Field("ll_sem")],
    ),
    (
        "tokio::sync::mpsc::bounded::Sender<",
        HoldingKind::Sender,
        ResourceKind::Mpsc,
        &[Field("chan"), Field("inner"), Arc],
    ),
    (
        "tokio::sync::mpsc::unbounded::UnboundedSender<",
        HoldingKind::Sender,
        ResourceKind::Mpsc,
        &[Field("chan"), Field("inner"), Arc],
    ),
    (
        "tokio::sync::oneshot::Sender<",
        HoldingKind::Sender,
        ResourceKind::Oneshot,
        &[Field("inner"), Some, Arc],
    ),
    (
        "tokio::sync::watch::Sender<",
        HoldingKind::Sender,
        ResourceKind::Watch,
        &[Field("shared"), Arc],
    ),
    (
        "tokio::sync::broadcast::Sender<",
        HoldingKind::Sender,
        ResourceKind::Broadcast,
        &[Field("shared"), Arc],
    ),
    (
        "alloc::sync::Arc<tokio::sync::notify::Notify",
        HoldingKind::Notify,
        ResourceKind::Notify,
        &[Arc],
    ),
    (
        "&tokio::sync::notify::Notify",
        HoldingKind::Notify,
        ResourceKind::Notify,
        &[Deref],
    ),
];
