//! How rustc lays out Rust's own values (rustc 1.95; alternatives for older toolchains where
//! known): coroutines, enums, pointers, std's collections, cells, time and thread-locals.

use super::Step::{Field, Unwrap};
use super::{Paths, Wrapper};

/// A coroutine's discriminant (`__state`): 0 unresumed, 1 returned, 2 panicked, 3 + k
/// suspended at its await k.
pub mod coroutine {
    pub const UNRESUMED: u64 = 0;
    pub const RETURNED: u64 = 1;
    pub const PANICKED: u64 = 2;
    pub const FIRST_SUSPEND: u64 = 3;
    /// The future a suspended coroutine awaits, among its saved locals.
    pub const AWAITEE: &str = "__awaitee";
    /// The captured receiver of an async method (`&self`, `&mut self`, `Arc<Self>`).
    pub const ASYNC_SELF: &str = "self";
    /// Compiler temporaries among the saved locals: this prefix, then digits (`__4`).
    pub const TEMPORARY_PREFIX: &str = "__";
}

/// What `select!`/`join!` leave in the coroutine that awaits them. rustc keeps a macro's
/// futures as sibling locals of the `PollFn` it awaits, not inside it.
pub mod macros {
    /// `tokio::select!`/`join!`/`try_join!` keep their branch futures in a local tuple;
    /// `select!` also a bit mask of the branches it no longer polls.
    pub const TOKIO_BRANCHES: &str = "futures";
    pub const TOKIO_SELECT_DISABLED: &str = "disabled";
    /// `futures::join!` keeps each future in a local `_fut0`, `_fut1`, ...
    pub const FUTURES_JOIN_PREFIX: &str = "_fut";
    /// `futures::select!` polls the user's own futures through references its `PollFn`
    /// closure (field `f`) captures as `_ref__NAME`.
    pub const POLL_FN_CLOSURE: &str = "f";
    pub const REFERENCE_CAPTURE_PREFIX: &str = "_ref__";
    /// The enum `futures::select!` declares for its result, beside its closure: what tells
    /// its `PollFn` from any other.
    pub const FUTURES_SELECT_RESULT: &str = "__PrivResult";
    /// The `PollFn` these macros await: core's (tokio 1.41+), tokio's own (before), and the
    /// futures crate's.
    pub const POLL_FNS: &[&str] = &[
        "core::future::poll_fn::PollFn<",
        "tokio::future::poll_fn::PollFn<",
        "futures_util::future::poll_fn::PollFn<",
    ];
    /// What the macros call on each branch expression; it returns the branch's own type.
    pub const INTO_FUTURE: &str = "into_future";
}

/// Where a type's `Future::poll` or `Stream::poll_next` code is: a byte of its mangled
/// linkage name to search for, and the demangled name's end after the type.
pub const POLL_IMPLS: &[(&[u8], &str)] = &[
    (b"4poll", " as core::future::future::Future>::poll"),
    (
        b"9poll_next",
        " as futures_core::stream::Stream>::poll_next",
    ),
];

/// A tuple's (and a tuple struct's) fields: `__0`, `__1`, ...
pub const TUPLE_FIRST: &str = "__0";
pub const TUPLE_SECOND: &str = "__1";

/// The name of field `index` of a tuple.
pub fn tuple_field(index: usize) -> String {
    format!("__{index}")
}

/// `Option<T>`: its variants; `Some` holds the value as a one-field tuple.
pub const OPTION_PREFIX: &str = "core::option::Option<";
pub const SOME: &str = "Some";

/// `core::pin::Pin<P>` and its pointer (`__pointer` in newer std, `pointer` before).
pub const PIN_PREFIX: &str = "core::pin::Pin<";
pub const PIN_POINTER: Paths = &[&[Field("__pointer")], &[Field("pointer")]];
/// The names a `Pin`'s one field has had.
pub const PIN_POINTER_FIELDS: &[&str] = &["__pointer", "pointer"];

/// Pointer types by name.
pub const BOX_PREFIX: &str = "alloc::boxed::Box<";
pub const MUT_REFERENCE_PREFIX: &str = "&mut ";
pub const SHARED_REFERENCE_PREFIX: &str = "&";
pub const MUT_POINTER_PREFIX: &str = "*mut ";
pub const NON_NULL_PREFIX: &str = "core::ptr::non_null::NonNull<";
/// A trait-object fat pointer (`Box<dyn T>`, `&mut dyn T`): its data and its vtable.
pub const FAT_POINTER_DATA: &str = "pointer";
pub const FAT_POINTER_VTABLE: &str = "vtable";

/// `Arc<T>` points to an `ArcInner{strong, weak, data: T}`; `Rc<T>` to `RcInner{.., value}`.
pub const ARC_PREFIX: &str = "alloc::sync::Arc<";
pub const ARC_DATA: &str = "data";
pub const RC_PREFIX: &str = "alloc::rc::Rc<";
/// `ArcInner<T>{strong, weak, data}`: how many `Arc`s share it, and how many `Weak`s (one
/// more while any `Arc` is left). `RcInner<T>{strong, weak, value}` names its counts alike.
pub const ARC_INNER_PREFIX: &str = "alloc::sync::ArcInner<";
pub const ARC_STRONG: &str = "strong";
pub const ARC_WEAK: &str = "weak";
pub const RC_VALUE: &str = "value";
/// What an `Arc<T>`, `Rc<T>`, `Vec<T>`, `VecDeque<T>`, `HashSet<T>` or `BTreeSet<T>` holds
/// (for `Arc<[T]>` and `Rc<[T]>`, the slice's element); a map's keys and values.
pub const ELEMENT_PARAM: &str = "T";
pub const KEY_PARAM: &str = "K";
pub const VALUE_PARAM: &str = "V";

/// `Box<[T]>`, `&[T]`, `&str` and `*const str`: their data and its length.
pub const SLICE_DATA: &str = "data_ptr";
pub const SLICE_LENGTH: &str = "length";
/// Slices behind owning pointers, fat pointers `{data_ptr, length}`: a `Box<[T]>`'s points
/// to the first element; an `Arc<[T]>`'s (`Rc<[T]>`'s) to its `ArcInner` (`RcInner`), whose
/// `data` (`value`) field DWARF types as the first element (rustc 1.95).
pub const BOX_SLICE_PREFIX: &str = "alloc::boxed::Box<[";
pub const ARC_SLICE_PREFIX: &str = "alloc::sync::Arc<[";
pub const RC_SLICE_PREFIX: &str = "alloc::rc::Rc<[";
/// `&str` and `String{vec: Vec<u8>}`.
pub const STR_TYPE: &str = "&str";
pub const STRING_TYPE: &str = "alloc::string::String";
pub const STRING_BYTES: &str = "vec";

/// `Vec<T>{buf: RawVec{inner: RawVecInner{ptr, cap, ..}}, len}` (the pointer is
/// type-erased since rustc 1.83; `buf: RawVec{ptr, cap}` before).
pub const VEC_PREFIX: &str = "alloc::vec::Vec<";
pub const VEC_LENGTH: &str = "len";
pub const VEC_POINTER: Paths = &[
    &[Field("buf"), Field("inner"), Field("ptr")],
    &[Field("buf"), Field("ptr")],
];
pub const VEC_CAPACITY: Paths = &[
    &[Field("buf"), Field("inner"), Field("cap")],
    &[Field("buf"), Field("cap")],
];

/// `VecDeque<T>{head, len, buf: RawVec}` (rustc 1.67 on): a ring of `len` elements from
/// `head`, `cap` of them in the buffer.
pub mod vec_deque {
    use super::super::Paths;
    use super::super::Step::Field;
    pub const PREFIX: &str = "alloc::collections::vec_deque::VecDeque<";
    pub const HEAD: &str = "head";
    pub const LEN: &str = "len";
    pub const POINTER: Paths = &[
        &[Field("buf"), Field("inner"), Field("ptr")],
        &[Field("buf"), Field("ptr")],
    ];
    pub const CAPACITY: Paths = &[
        &[Field("buf"), Field("inner"), Field("cap")],
        &[Field("buf"), Field("cap")],
    ];
}

/// `HashMap<K, V>` and `HashSet<T>`, std's (`{base: hashbrown::HashMap}`) and hashbrown's
/// own, keep their entries in a `hashbrown::raw::RawTable<T>`, `T` a `(K, V)` tuple (`(T, ())`
/// for a set): `{table: RawTableInner{ctrl: NonNull<u8>, bucket_mask, growth_left, items}}`.
/// It has `bucket_mask + 1` buckets (a power of two) of `size_of::<T>()` bytes each, laid
/// out backwards before the control bytes: bucket `i` ends where `ctrl - i * size` does.
/// Control byte `i` says whether bucket `i` is full: its top bit clear (the rest is 7 bits
/// of the key's hash); `0xFF` is empty, `0x80` deleted. Checked against rustc 1.95; older
/// toolchains are not known to this table.
pub mod hash_table {
    use super::super::Path;
    use super::super::Step::Field;
    /// Map and set types, whether they map keys to values, and the path to their table.
    pub const TABLES: &[(&str, bool, Path)] = &[
        (
            "std::collections::hash::map::HashMap<",
            true,
            &[Field("base"), Field("table")],
        ),
        (
            "std::collections::hash::set::HashSet<",
            false,
            &[Field("base"), Field("map"), Field("table")],
        ),
        ("hashbrown::map::HashMap<", true, &[Field("table")]),
        (
            "hashbrown::set::HashSet<",
            false,
            &[Field("map"), Field("table")],
        ),
    ];
    pub const CTRL: Path = &[Field("table"), Field("ctrl")];
    pub const BUCKET_MASK: Path = &[Field("table"), Field("bucket_mask")];
    pub const ITEMS: Path = &[Field("table"), Field("items")];
    /// A control byte with this bit clear is a full bucket's.
    pub const EMPTY_OR_DELETED_BIT: u8 = 0x80;
}

/// `BTreeMap<K, V>{root: Option<NodeRef{height, node: NonNull<LeafNode<K, V>>}>, length}`
/// and `BTreeSet<T>{map: BTreeMap<T, SetValZST>}`. A node of height 0 is a `LeafNode{parent:
/// Option<NonNull<InternalNode>>, parent_idx, len: u16, keys: [MaybeUninit<K>; 11], vals:
/// [MaybeUninit<V>; 11]}`, `len` of each in use; a higher one an `InternalNode{data:
/// LeafNode, edges: [MaybeUninit<NonNull<LeafNode>>; 12]}`, its `len + 1` edges to nodes one
/// level down, edge `i` to the keys before key `i`. Checked against rustc 1.95; older
/// toolchains are not known to this table.
pub mod btree {
    use super::super::{Path, Step};
    pub const MAP_PREFIX: &str = "alloc::collections::btree::map::BTreeMap<";
    pub const SET_PREFIX: &str = "alloc::collections::btree::set::BTreeSet<";
    pub const SET_MAP: &str = "map";
    pub const ROOT: Path = &[Step::Field("root"), Step::Some];
    pub const LENGTH: &str = "length";
    pub const HEIGHT: &str = "height";
    pub const NODE: &str = "node";
    pub const LEN: &str = "len";
    pub const KEYS: &str = "keys";
    pub const VALS: &str = "vals";
    /// A leaf's `parent`, whose pointee type is the internal node's.
    pub const PARENT: &str = "parent";
    pub const EDGES: &str = "edges";
}

/// Types that only hold one value, and the path to it: what `Step::Unwrap` looks through.
pub const WRAPPERS: &[Wrapper] = &[
    ("core::cell::UnsafeCell<", &["value"]),
    ("core::cell::Cell<", &["value"]),
    ("core::cell::RefCell<", &["value"]),
    ("core::mem::manually_drop::ManuallyDrop<", &["value"]),
    // Inside `ManuallyDrop` in newer std.
    ("core::mem::maybe_dangling::MaybeDangling<", &["__0"]),
    // A union of `uninit: ()` and `value: ManuallyDrop<T>`.
    ("core::mem::maybe_uninit::MaybeUninit<", &["value"]),
];

/// std's `Mutex<T>{inner, poison, data: UnsafeCell<T>}` (`std::sync::poison::mutex::` in
/// newer std, `std::sync::mutex::` before): the path to the data's cell, which
/// `Step::Locked` looks through as it does tokio's own Mutex.
pub const STD_MUTEXES: &[Wrapper] = &[
    ("std::sync::poison::mutex::Mutex<", &["data"]),
    ("std::sync::mutex::Mutex<", &["data"]),
];

/// `std::sync::OnceLock<T>{once, value: UnsafeCell<MaybeUninit<T>>}` (and tokio's own
/// `OnceCell` of older versions, laid out alike): the value, once set.
pub const ONCE_LOCK_VALUE: Paths = &[&[Field("value"), super::Step::Unwrap]];

/// Cells that hold their value in a union until their `Once` completes, which statics
/// keep values in (rustc 1.95's std): (type prefix, path to the `Once`'s state word, path
/// to the value). `OnceLock<T>{once, value: UnsafeCell<MaybeUninit<T>>}`;
/// `LazyLock<T, F>{once, data: UnsafeCell<union Data{value: ManuallyDrop<T>, f}>}`.
pub const ONCE_CELLS: &[(&str, super::Path, super::Path)] = &[
    (
        "std::sync::once_lock::OnceLock<",
        &[Field("once"), Field("inner"), Field("state_and_queued")],
        &[Field("value"), Unwrap],
    ),
    (
        "std::sync::lazy_lock::LazyLock<",
        &[Field("once"), Field("inner"), Field("state_and_queued")],
        &[Field("data"), Unwrap, Field("value"), Unwrap],
    ),
];
/// The futex `Once`'s state word: its low two bits are the state, the next bit says threads
/// wait. rustc 1.95's std counts down, COMPLETE 0 once the value is set (INCOMPLETE 3,
/// POISONED 2, RUNNING 1; read in a live process), where older std counted up (COMPLETE 3).
pub const ONCE_STATE_MASK: u64 = 0b11;
pub const ONCE_COMPLETE: u64 = 0;
/// What `Arc<T>`, `Rc<T>` and `Box<T>` share or own, as their DWARF names it.
pub const SHARED_VALUE_PARAM: &str = "T";

/// `tokio::time::Instant{std}`, `std::time::Instant(sys::Instant{t: Timespec})`, and
/// `Timespec{tv_sec, tv_nsec: Nanoseconds(u32)}` on unix.
pub const TOKIO_INSTANT_TIMESPEC: Paths = &[&[Field("std"), Field("__0"), Field("t")]];
pub const STD_INSTANT_TIMESPEC: Paths = &[&[Field("__0"), Field("t")]];
pub const TIMESPEC_SECONDS: &str = "tv_sec";
pub const TIMESPEC_NANOS: &str = "tv_nsec";
/// `Duration{secs, nanos: Nanoseconds(u32)}`.
pub const DURATION_SECONDS: &str = "secs";
pub const DURATION_NANOS: &str = "nanos";

/// `core::panic::Location{file, line, col}`: `filename: NonNull<str>` in newer std, `file:
/// &str` before.
pub const LOCATION_FILE: Paths = &[&[Field("filename"), Field("pointer")], &[Field("file")]];
pub const LOCATION_LINE: &str = "line";

/// A `#[thread_local]` of std's native TLS: `Storage<T>{val: UnsafeCell<T>, state:
/// Cell<State>}`, live in state `Alive`.
pub const TLS_STORAGE_STATE: Paths = &[&[Field("state"), Unwrap]];
pub const TLS_STORAGE_VALUE: Paths = &[&[Field("val"), Unwrap]];
pub const TLS_ALIVE: &str = "Alive";

/// A file descriptor: std's sockets and files wrap an `OwnedFd{fd}` in newtypes.
pub const OWNED_FD_TYPE: &str = "std::os::fd::owned::OwnedFd";
pub const OWNED_FD: &str = "fd";

/// The standard library's frames between a caller and what it calls back: closure and
/// `FnOnce` shims, `catch_unwind`, thread-local access, `Pin` and `&mut F` polls, thread
/// and program start (DWARF paths, generics dropped; a trait impl's `<` ignored). A
/// debugger's `bt` folds them with tokio's poll glue (`stack_view`).
pub const CALL_GLUE_MODULES: &[&str] = &[
    "core::ops::function::",
    "core::panic::unwind_safe::",
    "core::pin::",
    "core::future::future::",
    "std::panicking::",
    "std::panic::catch_unwind",
    "std::thread::local::",
    "std::thread::lifecycle::",
    "std::sys::backtrace::",
    "std::sys::thread::",
    "std::sys::pal::unix::thread::",
    "std::rt::",
    "alloc::boxed::",
];
