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

/// tokio's own instrumentation of its sync primitives' futures (`tokio_unstable` with
/// `tracing`): `InstrumentedAsyncOp<F>{inner: F, ..}` around what `lock()` awaits.
pub const INSTRUMENTED_ASYNC_OP: (&str, &str) =
    ("tokio::util::trace::InstrumentedAsyncOp<", "inner");

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
/// A permits word (`batch_semaphore`'s `PERMIT_SHIFT` and `CLOSED`; an unbounded mpsc
/// channel's semaphore word counts its messages alike): `count << 1 | closed`.
pub const PERMITS_SHIFT: u32 = 1;
pub const PERMITS_CLOSED: u64 = 1;

/// The count and the closed bit of a permits word.
pub fn permits_word(word: u64) -> (u64, bool) {
    (word >> PERMITS_SHIFT, word & PERMITS_CLOSED != 0)
}
pub const BATCH_WAITERS: Paths = &[&[Field("waiters"), Locked, Field("queue")]];

/// `Notified{notify: *const Notify, state, ..}`; `Notify{state, waiters: Mutex<LinkedList>}`.
pub const NOTIFIED_NOTIFY: &str = "notify";
pub const NOTIFIED_STATE: &str = "state";
pub const NOTIFY_STATE: &str = "state";
/// `Notify.state`'s low two bits: EMPTY 0, WAITING 1, NOTIFIED 2 (a stored permit).
pub const NOTIFY_STATE_MASK: u64 = 0b11;
pub const NOTIFY_NOTIFIED: u64 = 2;
pub const NOTIFY_WAITERS: Paths = &[&[Field("waiters"), Locked]];

/// mpsc `Receiver{chan: Rx{inner: Arc<Chan>}}`; `Chan{semaphore, tx_count, rx_fields:
/// UnsafeCell<RxFields{rx_closed, ..}>}`; a bounded channel's semaphore is `{semaphore:
/// batch Semaphore, bound}`, an unbounded one's a word.
pub const MPSC_CHAN: Path = &[Field("chan"), Field("inner"), Arc];
pub const MPSC_SEMAPHORE: &str = "semaphore";
pub const MPSC_SENDERS: &str = "tx_count";
pub const MPSC_RX_CLOSED: Paths = &[&[Field("rx_fields"), Unwrap, Field("rx_closed")]];
/// `RxFields.list: list::Rx{index, ..}`: the slot the receiver reads next, which counts the
/// values received.
pub const MPSC_RX_INDEX: Paths = &[&[Field("rx_fields"), Unwrap, Field("list"), Field("index")]];
pub const MPSC_BOUND: &str = "bound";
pub const MPSC_BOUNDED_PERMITS: Path = &[Field("semaphore"), Field("permits")];
/// oneshot `Sender`/`Receiver{inner: Option<Arc<Inner{state, ..}>>}`.
pub const ONESHOT_INNER: Path = &[Field("inner"), Some, Arc];
pub const ONESHOT_STATE: &str = "state";
/// oneshot `Inner.state` bits.
pub const ONESHOT_VALUE_SENT: u64 = 0b10;
pub const ONESHOT_CLOSED: u64 = 0b100;
/// watch `Receiver{shared: Arc<Shared{state, ref_count_rx, ..}>, version}`.
pub const WATCH_SHARED: Path = &[Field("shared"), Arc];
pub const WATCH_STATE: &str = "state";
/// watch's state word: the version in steps of 2, bit 0 closed.
pub const WATCH_CLOSED: u64 = 1;
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
/// What wraps one of tokio's I/O objects, by type name prefix, and the path to what it
/// wraps: split halves (`ReadHalf(&TcpStream)`, `OwnedReadHalf{inner: Arc<TcpStream>}`,
/// `io::split`'s `ReadHalf{inner: Arc<Inner{stream: std Mutex<T>}>}`) and buffers. References,
/// boxes, pins and `Arc`s on the way are looked through as well.
pub const IO_WRAPPERS: &[(&str, Path)] = &[
    ("tokio::net::tcp::split::ReadHalf", &[Field("__0")]),
    ("tokio::net::tcp::split::WriteHalf", &[Field("__0")]),
    (
        "tokio::net::tcp::split_owned::OwnedReadHalf",
        &[Field("inner")],
    ),
    (
        "tokio::net::tcp::split_owned::OwnedWriteHalf",
        &[Field("inner")],
    ),
    ("tokio::net::unix::split::ReadHalf", &[Field("__0")]),
    ("tokio::net::unix::split::WriteHalf", &[Field("__0")]),
    (
        "tokio::net::unix::split_owned::OwnedReadHalf",
        &[Field("inner")],
    ),
    (
        "tokio::net::unix::split_owned::OwnedWriteHalf",
        &[Field("inner")],
    ),
    (
        "tokio::io::split::ReadHalf<",
        &[Field("inner"), Arc, Field("stream"), Locked],
    ),
    (
        "tokio::io::split::WriteHalf<",
        &[Field("inner"), Arc, Field("stream"), Locked],
    ),
    ("tokio::io::util::buf_reader::BufReader<", &[Field("inner")]),
    ("tokio::io::util::buf_writer::BufWriter<", &[Field("inner")]),
    ("tokio::io::util::buf_stream::BufStream<", &[Field("inner")]),
    ("tokio::io::util::take::Take<", &[Field("inner")]),
];
/// `PollEvented{registration: Registration{shared: Arc<ScheduledIo>}}`;
/// `ScheduledIo{waiters: Mutex<Waiters{list: LinkedList<Waiter{interest, ..}>, reader:
/// Option<Waker>, writer: Option<Waker>}>}` (stable since 1.38): who waits on the fd.
pub const POLL_EVENTED_SCHEDULED_IO: Path = &[Field("registration"), Field("shared"), Arc];
pub const SCHEDULED_IO_WAITERS: Paths = &[&[Field("waiters"), Locked]];
pub const WAITERS_LIST: &str = "list";
pub const WAITERS_READER: &str = "reader";
pub const WAITERS_WRITER: &str = "writer";
pub const WAITER_INTEREST: &str = "interest";
/// `BufReader{buf, pos, cap}` (bytes `pos..cap` unread); `BufWriter{buf: Vec<u8>, written}`.
pub const BUF_READER: &str = "tokio::io::util::buf_reader::BufReader<";
pub const BUF_WRITER: &str = "tokio::io::util::buf_writer::BufWriter<";
pub const BUF_READER_POSITION: &str = "pos";
pub const BUF_READER_FILLED: &str = "cap";
pub const BUF_WRITER_BUFFER: &str = "buf";
/// `read_line`'s `ReadLine{reader: &mut R, read: bytes appended so far, ..}`.
pub const READ_LINE_READ: &str = "read";

/// `io::copy`: `Copy{reader: &mut R, writer: &mut W, buf: CopyBuffer}`; `copy_buf`:
/// `CopyBuf{reader, writer, amt}`, which copies out of the reader's own buffer.
pub const COPY_BUFFER: &str = "buf";
pub const COPY_BUF_AMOUNT: &str = "amt";
/// `CopyBuffer{read_done, need_flush, pos, cap, amt, buf}` (stable since 1.0): bytes
/// `pos..cap` read but not yet written, `amt` written.
pub mod copy_buffer {
    pub const READ_DONE: &str = "read_done";
    pub const NEED_FLUSH: &str = "need_flush";
    pub const POSITION: &str = "pos";
    pub const FILLED: &str = "cap";
    pub const AMOUNT: &str = "amt";
}
/// `copy_bidirectional_impl(a, b, ..)` keeps the two streams (`&mut A`, `&mut B`) and
/// each direction's `TransferState::{Running(CopyBuffer), ShuttingDown(u64), Done(u64)}`
/// as saved locals.
pub const BIDIRECTIONAL_A: &str = "a";
pub const BIDIRECTIONAL_B: &str = "b";
pub const BIDIRECTIONAL_A_TO_B: &str = "a_to_b";
pub const BIDIRECTIONAL_B_TO_A: &str = "b_to_a";
pub const TRANSFER_RUNNING: &str = "Running";
pub const TRANSFER_SHUTTING_DOWN: &str = "ShuttingDown";

/// `PollEvented{io: Option<mio type>, registration}`; mio's types hold an `IoSource{inner:
/// std type}`, and std's types an `OwnedFd` a few newtypes down.
pub const POLL_EVENTED_FD: Paths = &[
    &[
        Field("io"),
        Some,
        Field("inner"),
        Field("inner"),
        To(OWNED_FD_TYPE),
        Field(super::rust::OWNED_FD),
    ],
    // tokio's own sources (a child's `Pidfd{fd: File}`) hold the std type directly.
    &[
        Field("io"),
        Some,
        To(OWNED_FD_TYPE),
        Field(super::rust::OWNED_FD),
    ],
];
/// Types that keep a plain fd, not a `PollEvented`, and the path to it: `fs::File{std:
/// Arc<std::fs::File>, ..}` (read and written on the blocking pool).
pub const FD_HOLDERS: &[(&str, Path)] = &[(
    "tokio::fs::file::File",
    &[
        Field("std"),
        Arc,
        To(OWNED_FD_TYPE),
        Field(super::rust::OWNED_FD),
    ],
)];
/// `io::duplex`'s `DuplexStream{read: Arc<Mutex<SimplexStream>>, write: ..}` and
/// `SimplexStream{buffer: BytesMut, is_closed, max_buf_size, ..}`: an in-memory pipe.
pub const DUPLEX_STREAM: &str = "tokio::io::util::mem::DuplexStream";
pub const DUPLEX_READ: Path = &[Field("read"), Arc, Locked];
pub const DUPLEX_WRITE: Path = &[Field("write"), Arc, Locked];
pub const SIMPLEX_BUFFER: &str = "buffer";
pub const SIMPLEX_CAPACITY: &str = "max_buf_size";
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

/// Unix signals: `Signal{inner: RxFuture}`, `RxFuture{inner: ReusableBoxFuture<Receiver<()>>
/// {boxed: Pin<Box<dyn Future>>}}` boxing `make_future(rx)`, whose env keeps the watch
/// receiver `rx` of the signal's slot in the registry: the static
/// `tokio::signal::registry::globals::GLOBALS: OnceLock<Globals>` (tokio's own `OnceCell`
/// before 1.47), `Globals{registry: Registry{storage: OsStorage}}` with `OsStorage(Box<[
/// SignalInfo]>)` (a `Vec` before 1.50), each `SignalInfo{event_info: EventInfo{tx:
/// watch::Sender}}` at the signal's number.
pub const SIGNAL_RX_FUTURE: Paths = &[&[Field("inner"), Field("inner")], &[Field("inner")]];
pub const REUSABLE_BOX: &str = "boxed";
pub const SIGNAL_RECEIVER: &str = "rx";
pub const SIGNAL_GLOBALS_SYMBOL: &str = "5tokio6signal8registry7globals7GLOBALS";
pub const SIGNAL_GLOBALS_TYPES: &[&str] = &[
    "std::sync::once_lock::OnceLock<tokio::signal::registry::Globals>",
    "tokio::util::once_cell::OnceCell<tokio::signal::registry::Globals>",
];
pub const SIGNAL_STORAGE: Paths = &[&[Field("registry"), Field("storage")]];
/// The number of the signal in a storage's first slot: `OsStorage(Box<[_]>)` leaves out
/// signal 0 (1.50+), the `Vec` of older versions does not.
pub const SIGNAL_FIRST_SLOT_BOXED: u64 = 1;
pub const SIGNAL_FIRST_SLOT_VEC: u64 = 0;
pub const SIGNAL_SENDER_SHARED: Path = &[Field("event_info"), Field("tx"), Field("shared"), Arc];
/// Linux's signal names by number (`signal(7)`), for the ones a program listens to.
pub const SIGNAL_NAMES: &[(u64, &str)] = &[
    (1, "SIGHUP"),
    (2, "SIGINT"),
    (3, "SIGQUIT"),
    (10, "SIGUSR1"),
    (12, "SIGUSR2"),
    (13, "SIGPIPE"),
    (14, "SIGALRM"),
    (15, "SIGTERM"),
    (17, "SIGCHLD"),
    (28, "SIGWINCH"),
    (29, "SIGIO"),
];

/// `process::Child{child: FusedChild::{Child(ChildDropGuard{inner: imp::Child}), Done(_)}}`;
/// `imp::Child::{PidfdReaper(PidfdReaper{inner: Option<PidfdReaperInner{inner: std Child,
/// pidfd: PollEvented<Pidfd>}>}), SignalReaper(Reaper{inner: Option<std Child>, ..})}`;
/// std's `Child{handle: Process{pid, ..}}`.
pub const CHILD_REAPER: Path = &[
    Field("child"),
    Variant("Child"),
    Field("__0"),
    Field("inner"),
];
pub const PIDFD_REAPER: &str = "PidfdReaper";
pub const REAPER_INNER: Path = &[Field("__0"), Field("inner"), Some];
pub const PIDFD_REAPER_CHILD: &str = "inner";
pub const PIDFD_REAPER_PIDFD: &str = "pidfd";
pub const STD_CHILD_PID: Path = &[Field("handle"), Field("pid")];

/// `Barrier{state: Mutex<BarrierState{arrived, generation, ..}>, n, ..}` (stable since 1.0).
pub const BARRIER_STATE: Paths = &[&[Field("state"), Locked]];
pub const BARRIER_ARRIVED: &str = "arrived";
pub const BARRIER_GENERATION: &str = "generation";
pub const BARRIER_NEEDED: &str = "n";
/// `OnceCell{value_set: AtomicBool, semaphore, ..}`: `get_or_init` awaits the semaphore's
/// permit (another task initializes the cell meanwhile), then the init future.
pub const ONCE_CELL_SET: &str = "value_set";
pub const ONCE_CELL_PERMIT_AWAIT: &str = "tokio::sync::semaphore::";
/// `SetOnce{value_set: AtomicBool, notify, ..}` (1.47+).
pub const SET_ONCE_SET: &str = "value_set";

/// `JoinHandle{raw: RawTask{ptr: NonNull<Header>}}`.
pub const JOIN_HANDLE_HEADER: Path = &[Field("raw"), Field("ptr")];
/// `JoinSet{inner: IdleNotifiedSet{lists: Arc<Mutex<ListsInner{notified, idle}>>}}`, each
/// list's entries `ListEntry{value: UnsafeCell<ManuallyDrop<JoinHandle>>, ..}`.
pub const JOIN_SET_LISTS: Paths = &[&[Field("inner"), Field("lists"), Arc, Locked]];
pub const JOIN_SET_LIST_NAMES: &[&str] = &["notified", "idle"];
pub const JOIN_SET_ENTRY_HANDLE: Paths = &[&[Field("value"), Unwrap]];

/// tokio keeps its own state behind `Arc`s (a channel's `Chan`, a runtime's handle), which
/// the decoders read: the search through what a future owns follows no `Arc` or `Rc` to a
/// type of tokio's (a kept mpsc `Sender` would lead it to the `Notify` of its channel), but
/// to these, which keep the program's own values.
pub const OWN_STATE_PREFIX: &str = "tokio::";
pub const PROGRAM_VALUE_HOLDERS: &[&str] = &[
    "tokio::sync::mutex::Mutex<",
    "tokio::sync::rwlock::RwLock<",
    "tokio::sync::once_cell::OnceCell<",
    "tokio::sync::set_once::SetOnce<",
];

/// What a coroutine may keep that others wait for: guards and permits of tokio's
/// semaphore-based locks, channel senders, Notify handles. Each type (by name prefix) with
/// the path from a value of it to the resource's key: for locks the `batch_semaphore::
/// Semaphore` inside the primitive (their waiters' nodes name it as `semaphore`), for
/// channels their shared state, for a Notify itself. For locks also the permits it keeps
/// and what it tells of the lock's total, which the wait-for graph counts against the
/// permits the lock says are taken.
pub struct HoldingType {
    /// The type's name, or the start of it.
    pub type_prefix: &'static str,
    pub kind: HoldingKind,
    pub resource: ResourceKind,
    pub to_resource: Path,
    pub permits: HeldPermits,
    pub lock_total: LockTotal,
}

/// How many of its lock's permits a holding keeps.
#[derive(Debug, Clone, Copy)]
pub enum HeldPermits {
    /// Not a lock's: a channel's sender, a Notify handle.
    NotPermits,
    /// A Mutex guard, a read guard.
    One,
    /// The count in this field of the holding: a write guard's, a semaphore permit's.
    Field(&'static str),
}

/// What a holding tells of its lock's total permits.
#[derive(Debug, Clone, Copy)]
pub enum LockTotal {
    /// Nothing: a borrowed read guard, a semaphore permit (tokio keeps no total).
    Unknown,
    /// A Mutex's (`MUTEX_PERMITS`).
    Mutex,
    /// The count at this path from the holding: an owned guard's `RwLock.mr`, or a write
    /// guard's own permits, which are every permit of its lock.
    At(Path),
}

/// `Mutex::new` makes a batch semaphore of one permit.
pub const MUTEX_PERMITS: u64 = 1;
/// `RwLockWriteGuard{permits_acquired: u32, ..}` (mapped and owned alike): `mr`, every permit.
pub const WRITE_GUARD_PERMITS: &str = "permits_acquired";
/// `SemaphorePermit{sem, permits}`, `OwnedSemaphorePermit{sem, permits}` (0 once forgotten).
pub const SEMAPHORE_PERMIT_PERMITS: &str = "permits";
/// An owned RwLock guard's `lock: Arc<RwLock{mr, ..}>`.
const OWNED_RWLOCK_MAX_READERS: Path = &[Field("lock"), Arc, Field(RWLOCK_MAX_READERS)];

const fn mutex_guard(type_prefix: &'static str, to_resource: Path) -> HoldingType {
    HoldingType {
        type_prefix,
        kind: HoldingKind::LockGuard,
        resource: ResourceKind::Mutex,
        to_resource,
        permits: HeldPermits::One,
        lock_total: LockTotal::Mutex,
    }
}

const fn rwlock_guard(
    type_prefix: &'static str,
    to_resource: Path,
    permits: HeldPermits,
    lock_total: LockTotal,
) -> HoldingType {
    HoldingType {
        type_prefix,
        kind: HoldingKind::LockGuard,
        resource: ResourceKind::Rwlock,
        to_resource,
        permits,
        lock_total,
    }
}

const fn semaphore_permit(type_prefix: &'static str, to_resource: Path) -> HoldingType {
    HoldingType {
        type_prefix,
        kind: HoldingKind::Permit,
        resource: ResourceKind::Semaphore,
        to_resource,
        permits: HeldPermits::Field(SEMAPHORE_PERMIT_PERMITS),
        lock_total: LockTotal::Unknown,
    }
}

const fn handle(
    type_prefix: &'static str,
    kind: HoldingKind,
    resource: ResourceKind,
    to_resource: Path,
) -> HoldingType {
    HoldingType {
        type_prefix,
        kind,
        resource,
        to_resource,
        permits: HeldPermits::NotPermits,
        lock_total: LockTotal::Unknown,
    }
}

const WRITE_GUARD_OWN_PERMITS: Path = &[Field(WRITE_GUARD_PERMITS)];

pub const HOLDING_TYPES: &[HoldingType] = &[
    mutex_guard(
        "tokio::sync::mutex::MutexGuard<",
        &[Field("lock"), Deref, Field("s")],
    ),
    mutex_guard(
        "tokio::sync::mutex::OwnedMutexGuard<",
        &[Field("lock"), Arc, Field("s")],
    ),
    mutex_guard(
        "tokio::sync::mutex::MappedMutexGuard<",
        &[Field("s"), Deref],
    ),
    mutex_guard(
        "tokio::sync::mutex::OwnedMappedMutexGuard<",
        &[Field("lock"), Arc, Field("s")],
    ),
    rwlock_guard(
        "tokio::sync::rwlock::read_guard::RwLockReadGuard<",
        &[Field("s"), Deref],
        HeldPermits::One,
        LockTotal::Unknown,
    ),
    rwlock_guard(
        "tokio::sync::rwlock::write_guard::RwLockWriteGuard<",
        &[Field("s"), Deref],
        HeldPermits::Field(WRITE_GUARD_PERMITS),
        LockTotal::At(WRITE_GUARD_OWN_PERMITS),
    ),
    rwlock_guard(
        "tokio::sync::rwlock::write_guard_mapped::RwLockMappedWriteGuard<",
        &[Field("s"), Deref],
        HeldPermits::Field(WRITE_GUARD_PERMITS),
        LockTotal::At(WRITE_GUARD_OWN_PERMITS),
    ),
    rwlock_guard(
        "tokio::sync::rwlock::owned_read_guard::OwnedRwLockReadGuard<",
        &[Field("lock"), Arc, Field("s")],
        HeldPermits::One,
        LockTotal::At(OWNED_RWLOCK_MAX_READERS),
    ),
    rwlock_guard(
        "tokio::sync::rwlock::owned_write_guard::OwnedRwLockWriteGuard<",
        &[Field("lock"), Arc, Field("s")],
        HeldPermits::Field(WRITE_GUARD_PERMITS),
        LockTotal::At(OWNED_RWLOCK_MAX_READERS),
    ),
    rwlock_guard(
        "tokio::sync::rwlock::owned_write_guard_mapped::OwnedRwLockMappedWriteGuard<",
        &[Field("lock"), Arc, Field("s")],
        HeldPermits::Field(WRITE_GUARD_PERMITS),
        LockTotal::At(OWNED_RWLOCK_MAX_READERS),
    ),
    semaphore_permit(
        "tokio::sync::semaphore::SemaphorePermit",
        &[Field("sem"), Deref, Field("ll_sem")],
    ),
    semaphore_permit(
        "tokio::sync::semaphore::OwnedSemaphorePermit",
        &[Field("sem"), Arc, Field("ll_sem")],
    ),
    handle(
        "tokio::sync::mpsc::bounded::Sender<",
        HoldingKind::Sender,
        ResourceKind::Mpsc,
        &[Field("chan"), Field("inner"), Arc],
    ),
    handle(
        "tokio::sync::mpsc::unbounded::UnboundedSender<",
        HoldingKind::Sender,
        ResourceKind::Mpsc,
        &[Field("chan"), Field("inner"), Arc],
    ),
    handle(
        "tokio::sync::oneshot::Sender<",
        HoldingKind::Sender,
        ResourceKind::Oneshot,
        &[Field("inner"), Some, Arc],
    ),
    handle(
        "tokio::sync::watch::Sender<",
        HoldingKind::Sender,
        ResourceKind::Watch,
        &[Field("shared"), Arc],
    ),
    handle(
        "tokio::sync::broadcast::Sender<",
        HoldingKind::Sender,
        ResourceKind::Broadcast,
        &[Field("shared"), Arc],
    ),
    handle(
        "alloc::sync::Arc<tokio::sync::notify::Notify",
        HoldingKind::Notify,
        ResourceKind::Notify,
        &[Arc],
    ),
    handle(
        "&tokio::sync::notify::Notify",
        HoldingKind::Notify,
        ResourceKind::Notify,
        &[Deref],
    ),
];
