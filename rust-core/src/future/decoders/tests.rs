//! Each decoder over a program of a few types (`crate::testing`) and the values a test
//! writes: its facts and summary on a value as tokio leaves it, and one damaged value,
//! which gives the node an error, not a panic. The layouts are those of the version table
//! (`crate::layouts`), alternatives included (tokio's Mutex with and without
//! `parking_lot`, older `Sleep`s).

use crate::dwarf::DebugInfo;
use crate::future::FutureDecoder;
use crate::model::*;
use crate::testing::{die_of, Program, TestMemory, Ty, Variant};
use crate::tokio::anchors::Anchor;
use crate::value::Target;

/// Decodes the value of type `type_name` at `address` over `memory`.
fn decode(debug: &DebugInfo, memory: &TestMemory, type_name: &str, address: u64) -> FutureNode {
    let target = Target::new(debug, memory, 0);
    FutureDecoder::new(&target).decode(die_of(debug, type_name), address)
}

/// The facts of a node, which must have decoded without error.
fn facts(node: &FutureNode) -> &Detail {
    assert_eq!(node.error(), None, "{node:?}");
    node.detail()
        .unwrap_or_else(|| panic!("no facts: {node:?}"))
}

/// A damaged value's node: an error that says `what`, and no facts.
fn assert_error(node: &FutureNode, what: &str) {
    let error = node.error().unwrap_or_else(|| panic!("no error: {node:?}"));
    assert!(error.contains(what), "{error:?} does not say {what:?}");
}

/// An async method's env: `__state` at `state_at`, and in its `Unresumed` (0) and first
/// suspended (3) variants the upvars `fields` (`self` first).
fn async_method(
    program: &mut Program,
    name: &str,
    size: u64,
    state_at: u64,
    fields: &[(&str, u64, Ty)],
) -> Ty {
    let u8 = program.u8();
    program.rust_enum(
        name,
        size,
        Some((state_at, u8)),
        &[
            Variant {
                name: "0",
                discriminant: Some(0),
                fields,
                payload_name: Some("Unresumed"),
            },
            Variant {
                name: "3",
                discriminant: Some(3),
                fields,
                payload_name: Some("Suspend0"),
            },
        ],
    )
}

/// tokio's batch semaphore and a waiter type, 40 bytes: `waiters: Mutex<Waitlist>` at +0
/// (the list's head at +8, tail at +16), `permits` at +32.
fn batch_semaphore(program: &mut Program, parking_lot: bool) -> Ty {
    let usize = program.usize();
    let bool = program.bool();
    let waiter = program.structure("tokio::sync::batch_semaphore::Waiter", 24, &[]);
    let pointers = program.pointers("tokio::sync::batch_semaphore::Waiter", waiter);
    program.fields(waiter, &[("pointers", 0, pointers), ("state", 16, usize)]);
    let list = program.linked_list("tokio::sync::batch_semaphore::Waiter", waiter);
    let waitlist = program.structure(
        "tokio::sync::batch_semaphore::Waitlist",
        24,
        &[("queue", 0, list), ("closed", 16, bool)],
    );
    let waiters = program.tokio_mutex(
        "tokio::sync::batch_semaphore::Waitlist",
        waitlist,
        24,
        parking_lot,
    );
    let permits = program.atomic_usize();
    program.structure(
        "tokio::sync::batch_semaphore::Semaphore",
        40,
        &[("waiters", 0, waiters), ("permits", 32, permits)],
    )
}

/// A semaphore at `at` with `available` permits and the waiter nodes `waiters` queued.
fn write_semaphore(
    memory: &mut TestMemory,
    at: u64,
    available: u64,
    closed: bool,
    waiters: &[u64],
) {
    memory.zero(at, 40);
    memory.write_u64(at + 32, available << 1 | u64::from(closed));
    for (i, &node) in waiters.iter().enumerate() {
        memory.zero(node, 24);
        let next = waiters.get(i + 1).copied().unwrap_or(0);
        memory.write_u64(node + 8, next);
    }
    memory.write_u64(at + 8, waiters.first().copied().unwrap_or(0));
    memory.write_u64(at + 16, waiters.last().copied().unwrap_or(0));
}

const MUTEX_LOCK: &str = "tokio::sync::mutex::{impl#10}::lock::{async_fn_env#0}<u32>";

fn mutex_program(parking_lot: bool) -> DebugInfo {
    let mut program = Program::new();
    let semaphore = batch_semaphore(&mut program, parking_lot);
    let u32 = program.u32();
    let mutex = program.structure(
        "tokio::sync::mutex::Mutex<u32>",
        48,
        &[("s", 0, semaphore), ("c", 40, u32)],
    );
    let this = program.reference("tokio::sync::mutex::Mutex<u32>", mutex);
    async_method(&mut program, MUTEX_LOCK, 64, 56, &[("self", 0, this)]);
    program.load()
}

#[test]
fn mutex_lock_names_the_mutex_its_permits_and_waiters_with_either_tokio_mutex() {
    for parking_lot in [true, false] {
        let debug = mutex_program(parking_lot);
        let mut memory = TestMemory::default();
        memory.zero(0x1000, 64);
        memory.write_u64(0x1000, 0x2000);
        memory.write_u8(0x1000 + 56, 3);
        write_semaphore(&mut memory, 0x2000, 0, false, &[0x3000, 0x3100]);
        let node = decode(&debug, &memory, MUTEX_LOCK, 0x1000);
        let wait = PermitWait {
            address: 0x2000,
            closed: false,
            holders: None,
            holders_certainty: None,
            // Its env keeps no acquire future to read it from.
            permits_assigned: None,
            permits_available: 0,
            permits_needed: 1,
            permits_total: Some(1),
            semaphore: 0x2000,
            waiters: 2,
        };
        assert_eq!(
            facts(&node),
            &Detail::MutexLock(wait),
            "parking_lot: {parking_lot}"
        );
        assert_eq!(node.kind, NodeKind::MutexLock);
        assert_eq!(
            node.summary.as_deref(),
            Some("waiting for Mutex 0x2000 (0 permits, 2 waiters)")
        );

        // `self` points nowhere.
        memory.write_u64(0x1000, 0x9000);
        assert_error(&decode(&debug, &memory, MUTEX_LOCK, 0x1000), "cannot read");
    }
}

#[test]
fn rwlock_read_and_write_need_one_permit_and_every_permit() {
    let mut program = Program::new();
    let semaphore = batch_semaphore(&mut program, true);
    let u32 = program.u32();
    let lock = program.structure(
        "tokio::sync::rwlock::RwLock<u32>",
        48,
        &[("s", 0, semaphore), ("mr", 40, u32)],
    );
    let this = program.reference("tokio::sync::rwlock::RwLock<u32>", lock);
    let read = "tokio::sync::rwlock::{impl#9}::read::{async_fn_env#0}<u32>";
    let write = "tokio::sync::rwlock::{impl#9}::write::{async_fn_env#0}<u32>";
    async_method(&mut program, read, 16, 8, &[("self", 0, this)]);
    async_method(&mut program, write, 16, 8, &[("self", 0, this)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    write_semaphore(&mut memory, 0x2000, 3, false, &[0x3000]);
    memory.write_u32(0x2000 + 40, 10);
    for (name, needed) in [(read, 1), (write, 10)] {
        memory.zero(0x1000, 16);
        memory.write_u64(0x1000, 0x2000);
        memory.write_u8(0x1008, 3);
        let node = decode(&debug, &memory, name, 0x1000);
        let wait = PermitWait {
            address: 0x2000,
            closed: false,
            holders: None,
            holders_certainty: None,
            permits_assigned: None,
            permits_available: 3,
            permits_needed: needed,
            permits_total: Some(10),
            semaphore: 0x2000,
            waiters: 1,
        };
        let expected = if needed == 1 {
            Detail::RwlockRead(wait)
        } else {
            Detail::RwlockWrite(wait)
        };
        assert_eq!(facts(&node), &expected);
        // A state no variant has.
        memory.write_u8(0x1008, 9);
        assert_error(
            &decode(&debug, &memory, name, 0x1000),
            "has state 9, which no variant has",
        );
    }
}

/// `batch_semaphore::Acquire{semaphore: &Semaphore, node: Waiter{state: permits still
/// needed}, num_permits, queued}`, 64 bytes, over `semaphore` (`batch_semaphore`'s).
fn acquire_type(program: &mut Program, semaphore: Ty) -> Ty {
    let usize = program.usize();
    let bool = program.bool();
    let waiter = program.named("tokio::sync::batch_semaphore::Waiter");
    let raw = program.reference("tokio::sync::batch_semaphore::Semaphore", semaphore);
    program.structure(
        "tokio::sync::batch_semaphore::Acquire",
        64,
        &[
            ("semaphore", 0, raw),
            ("node", 8, waiter),
            ("num_permits", 48, usize),
            ("queued", 56, bool),
        ],
    )
}

#[test]
fn a_lock_waiter_reads_the_permits_tokio_assigned_it_from_its_acquire_future() {
    // RwLock::write -> its `acquire` coroutine -> Acquire, as tokio 1.54 nests them.
    let mut program = Program::new();
    let semaphore = batch_semaphore(&mut program, true);
    let u32 = program.u32();
    let u8 = program.u8();
    let lock = program.structure(
        "tokio::sync::rwlock::RwLock<u32>",
        48,
        &[("s", 0, semaphore), ("mr", 40, u32)],
    );
    let this = program.reference("tokio::sync::rwlock::RwLock<u32>", lock);
    let acquire = acquire_type(&mut program, semaphore);
    let inner = "tokio::sync::rwlock::{impl#9}::write::{async_fn#0}::{async_block_env#0}<u32>";
    let inner_env = program.rust_enum(
        inner,
        80,
        Some((72, u8)),
        &[Variant {
            name: "3",
            discriminant: Some(3),
            fields: &[("__awaitee", 0, acquire)],
            payload_name: Some("Suspend0"),
        }],
    );
    let write = "tokio::sync::rwlock::{impl#9}::write::{async_fn_env#0}<u32>";
    program.rust_enum(
        write,
        96,
        Some((88, u8)),
        &[Variant {
            name: "3",
            discriminant: Some(3),
            fields: &[("self", 0, this), ("__awaitee", 8, inner_env)],
            payload_name: Some("Suspend0"),
        }],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    write_semaphore(&mut memory, 0x2000, 0, false, &[0x3000 + 8 + 8]);
    memory.write_u32(0x2000 + 40, 10);
    memory.zero(0x3000, 96);
    memory.write_u64(0x3000, 0x2000);
    memory.write_u8(0x3000 + 88, 3);
    memory.write_u8(0x3000 + 8 + 72, 3);
    // The writer asked for all 10, was given 8 as readers left, and needs 2 more.
    let acquire_at = 0x3000 + 8;
    memory.write_u64(acquire_at, 0x2000);
    memory.write_u64(acquire_at + 8 + 16, 2);
    memory.write_u64(acquire_at + 48, 10);
    memory.write_u8(acquire_at + 56, 1);
    let node = decode(&debug, &memory, write, 0x3000);
    let Detail::RwlockWrite(wait) = facts(&node) else {
        panic!("{node:?}")
    };
    assert_eq!(
        (
            wait.permits_assigned,
            wait.permits_needed,
            wait.permits_total
        ),
        (Some(8), 10, Some(10))
    );
    // Not queued yet: nothing assigned.
    memory.write_u8(acquire_at + 56, 0);
    let node = decode(&debug, &memory, write, 0x3000);
    let Detail::RwlockWrite(wait) = facts(&node) else {
        panic!("{node:?}")
    };
    assert_eq!(wait.permits_assigned, Some(0));
    // Needing more than it asked for: the count is unknown, the node still decodes.
    memory.write_u8(acquire_at + 56, 1);
    memory.write_u64(acquire_at + 8 + 16, 11);
    let node = decode(&debug, &memory, write, 0x3000);
    let Detail::RwlockWrite(wait) = facts(&node) else {
        panic!("{node:?}")
    };
    assert_eq!(wait.permits_assigned, None);
    // The inner coroutine in a state that awaits nothing: no acquire future to read.
    memory.write_u64(acquire_at + 8 + 16, 2);
    memory.write_u8(0x3000 + 8 + 72, 1);
    let node = decode(&debug, &memory, write, 0x3000);
    assert_eq!(node.error(), None);
    let Detail::RwlockWrite(wait) = facts(&node) else {
        panic!("{node:?}")
    };
    assert_eq!(wait.permits_assigned, None);
}

#[test]
fn guards_and_permits_keep_their_permits_and_see_their_locks_state() {
    let mut program = Program::new();
    let semaphore = batch_semaphore(&mut program, true);
    let u32 = program.u32();
    let usize = program.usize();
    let mutex = program.structure(
        "tokio::sync::mutex::Mutex<u32>",
        48,
        &[("s", 0, semaphore), ("c", 40, u32)],
    );
    let mutex_ref = program.reference("tokio::sync::mutex::Mutex<u32>", mutex);
    let mutex_guard = program.structure(
        "tokio::sync::mutex::MutexGuard<u32>",
        8,
        &[("lock", 0, mutex_ref)],
    );
    let rwlock = program.structure(
        "tokio::sync::rwlock::RwLock<u32>",
        48,
        &[("s", 0, semaphore), ("mr", 40, u32)],
    );
    let semaphore_ref = program.reference("tokio::sync::batch_semaphore::Semaphore", semaphore);
    let write_guard = program.structure(
        "tokio::sync::rwlock::write_guard::RwLockWriteGuard<u32>",
        24,
        &[("s", 0, semaphore_ref), ("permits_acquired", 16, u32)],
    );
    let rwlock_arc = program.arc("tokio::sync::rwlock::RwLock<u32>", rwlock, 48);
    let owned_read_guard = program.structure(
        "tokio::sync::rwlock::owned_read_guard::OwnedRwLockReadGuard<u32>",
        16,
        &[("lock", 0, rwlock_arc)],
    );
    let tokio_semaphore = program.structure(
        "tokio::sync::semaphore::Semaphore",
        40,
        &[("ll_sem", 0, semaphore)],
    );
    let tokio_semaphore_ref =
        program.reference("tokio::sync::semaphore::Semaphore", tokio_semaphore);
    let permit = program.structure(
        "tokio::sync::semaphore::SemaphorePermit",
        16,
        &[("sem", 0, tokio_semaphore_ref), ("permits", 8, usize)],
    );
    program.structure(
        "app::Guarded",
        56,
        &[
            ("guard", 0, mutex_guard),
            ("write", 8, write_guard),
            ("read", 32, owned_read_guard),
            ("permit", 40, permit),
        ],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    // A locked Mutex, a write-locked RwLock of 10 permits (its Arc's data at 0x5010), a
    // semaphore with 3 left.
    write_semaphore(&mut memory, 0x2000, 0, false, &[]);
    memory.write_u32(0x2000 + 40, 0);
    memory.zero(0x5000, 64);
    write_semaphore(&mut memory, 0x5010, 0, false, &[]);
    memory.write_u32(0x5010 + 40, 10);
    write_semaphore(&mut memory, 0x6000, 3, false, &[]);
    memory.zero(0x1000, 56);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u64(0x1000 + 8, 0x5010);
    memory.write_u32(0x1000 + 8 + 16, 10);
    memory.write_u64(0x1000 + 32, 0x5000);
    memory.write_u64(0x1000 + 40, 0x6000);
    memory.write_u64(0x1000 + 48, 2);
    let node = decode(&debug, &memory, "app::Guarded", 0x1000);
    let held = |local: &str, kind, resource: Resource, permits, available, total| Holding {
        kind,
        resource,
        local: local.into(),
        idle_future: false,
        captured: false,
        permits: Some(permits),
        released: false,
        lock: Some(LockPermits { available, total }),
    };
    let mutex_at = Resource {
        kind: ResourceKind::Mutex,
        address: 0x2000,
    };
    let rwlock_at = Resource {
        kind: ResourceKind::Rwlock,
        address: 0x5010,
    };
    let semaphore_at = Resource {
        kind: ResourceKind::Semaphore,
        address: 0x6000,
    };
    assert_eq!(
        node.holds(),
        vec![
            held(
                "self.guard",
                HoldingKind::LockGuard,
                mutex_at,
                1,
                0,
                Some(1)
            ),
            held(
                "self.write",
                HoldingKind::LockGuard,
                rwlock_at,
                10,
                0,
                Some(10)
            ),
            held(
                "self.read",
                HoldingKind::LockGuard,
                rwlock_at,
                1,
                0,
                Some(10)
            ),
            held("self.permit", HoldingKind::Permit, semaphore_at, 2, 3, None),
        ]
    );
    assert!(node.holds().iter().all(|holding| !holding.released));
    // A semaphore that cannot be read leaves its lock's state unknown, the permit found.
    memory.write_u64(0x1000 + 40, 0x9000);
    let node = decode(&debug, &memory, "app::Guarded", 0x1000);
    let permit = &node.holds()[3];
    assert_eq!(
        (permit.resource.address, permit.permits, permit.lock),
        (0x9000, Some(2), None)
    );
}

#[test]
fn semaphore_acquire_many_needs_its_argument_and_a_bare_acquire_its_count() {
    let mut program = Program::new();
    let inner = batch_semaphore(&mut program, false);
    let u32 = program.u32();
    let usize = program.usize();
    let bool = program.bool();
    let semaphore = program.structure(
        "tokio::sync::semaphore::Semaphore",
        40,
        &[("ll_sem", 0, inner)],
    );
    let this = program.reference("tokio::sync::semaphore::Semaphore", semaphore);
    let many = "tokio::sync::semaphore::{impl#0}::acquire_many::{async_fn_env#0}";
    async_method(
        &mut program,
        many,
        24,
        16,
        &[("self", 0, this), ("n", 8, u32)],
    );
    let raw = program.pointer("*const tokio::sync::batch_semaphore::Semaphore", inner);
    program.structure(
        "tokio::sync::batch_semaphore::Acquire",
        48,
        &[
            ("semaphore", 24, raw),
            ("num_permits", 32, usize),
            ("queued", 40, bool),
        ],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    write_semaphore(&mut memory, 0x2000, 1, true, &[]);
    memory.zero(0x1000, 24);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u32(0x1008, 5);
    memory.write_u8(0x1010, 3);
    let node = decode(&debug, &memory, many, 0x1000);
    let wait = PermitWait {
        address: 0x2000,
        closed: true,
        holders: None,
        holders_certainty: None,
        permits_assigned: None,
        permits_available: 1,
        permits_needed: 5,
        // tokio keeps no Semaphore's total.
        permits_total: None,
        semaphore: 0x2000,
        waiters: 0,
    };
    assert_eq!(facts(&node), &Detail::SemaphoreAcquire(wait.clone()));
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting for Semaphore 0x2000 (1 permit, 0 waiters, closed)")
    );

    memory.zero(0x4000, 48);
    memory.write_u64(0x4000 + 24, 0x2000);
    memory.write_u64(0x4000 + 32, 2);
    let node = decode(
        &debug,
        &memory,
        "tokio::sync::batch_semaphore::Acquire",
        0x4000,
    );
    assert_eq!(
        facts(&node),
        &Detail::SemaphoreAcquire(PermitWait {
            // The acquire future itself, not queued: none assigned.
            permits_assigned: Some(0),
            permits_needed: 2,
            ..wait
        })
    );
    // A null semaphore pointer.
    memory.write_u64(0x4000 + 24, 0);
    assert_error(
        &decode(
            &debug,
            &memory,
            "tokio::sync::batch_semaphore::Acquire",
            0x4000,
        ),
        "null pointer",
    );
}

#[test]
fn notified_counts_the_waiters_and_sees_a_stored_permit() {
    let mut program = Program::new();
    let waiter = program.structure("tokio::sync::notify::Waiter", 16, &[]);
    let pointers = program.pointers("tokio::sync::notify::Waiter", waiter);
    program.fields(waiter, &[("pointers", 0, pointers)]);
    let list = program.linked_list("tokio::sync::notify::Waiter", waiter);
    let waiters = program.tokio_mutex(
        "tokio::util::linked_list::LinkedList<tokio::sync::notify::Waiter>",
        list,
        16,
        true,
    );
    let state = program.atomic_usize();
    let notify = program.structure(
        "tokio::sync::notify::Notify",
        32,
        &[("state", 0, state), ("waiters", 8, waiters)],
    );
    let raw = program.pointer("*const tokio::sync::notify::Notify", notify);
    let stage = program.c_enum(
        "tokio::sync::notify::State",
        1,
        &[("Init", 0), ("Waiting", 1), ("Done", 2)],
    );
    program.structure(
        "tokio::sync::notify::Notified",
        64,
        &[("notify", 0, raw), ("state", 56, stage)],
    );
    program.arc("tokio::sync::notify::Notify", notify, 32);
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 64);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u8(0x1000 + 56, 1);
    memory.zero(0x2000, 32);
    memory.write_u64(0x2000, 2);
    memory.write_u64(0x2000 + 16, 0x3000);
    memory.write_u64(0x2000 + 24, 0x3000);
    memory.zero(0x3000, 16);
    let node = decode(&debug, &memory, "tokio::sync::notify::Notified", 0x1000);
    let wait = NotifyWait {
        address: 0x2000,
        notifiers: None,
        permit_stored: true,
        state: "waiting".into(),
        waiters: 1,
    };
    assert_eq!(facts(&node), &Detail::Notified(wait.clone()));
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting for Notify 0x2000 (1 waiter)")
    );
    // A Notify a future keeps (itself, or through an Arc at 0x1800) waits for nothing
    // of its own: it says who waits on it.
    let held = NotifyWait {
        state: "held".into(),
        ..wait
    };
    memory.zero(0x1800, 8);
    memory.write_u64(0x1800, 0x2000 - 16);
    for (kept, at) in [
        ("tokio::sync::notify::Notify", 0x2000),
        (
            "alloc::sync::Arc<tokio::sync::notify::Notify, alloc::alloc::Global>",
            0x1800,
        ),
    ] {
        let node = decode(&debug, &memory, kept, at);
        assert_eq!(facts(&node), &Detail::Notified(held.clone()), "{kept}");
        assert_eq!(node.summary.as_deref(), Some("Notify 0x2000 (1 waiter)"));
    }
    // A waiter list that loops.
    memory.write_u64(0x3000 + 8, 0x3000);
    assert_error(
        &decode(&debug, &memory, "tokio::sync::notify::Notified", 0x1000),
        "linked list loops",
    );
}

/// mpsc: `Chan{semaphore@0, tx_count@48, rx_fields@56 (rx_closed at +8)}`, bounded (a
/// batch semaphore and a bound) or unbounded (a word).
fn mpsc_program(bounded: bool) -> (DebugInfo, &'static str) {
    let mut program = Program::new();
    let usize = program.usize();
    let bool = program.bool();
    let semaphore = if bounded {
        let inner = batch_semaphore(&mut program, true);
        program.structure(
            "tokio::sync::mpsc::bounded::Semaphore",
            48,
            &[("semaphore", 0, inner), ("bound", 40, usize)],
        )
    } else {
        let word = program.atomic_usize();
        program.structure(
            "tokio::sync::mpsc::unbounded::Semaphore",
            8,
            &[("__0", 0, word)],
        )
    };
    let fields = program.structure(
        "tokio::sync::mpsc::chan::RxFields<u32>",
        16,
        &[("rx_closed", 8, bool)],
    );
    let rx_fields = program.tokio_cell("tokio::sync::mpsc::chan::RxFields<u32>", fields, 16);
    let tx_count = program.atomic_usize();
    let kind = if bounded { "bounded" } else { "unbounded" };
    let chan_name =
        format!("tokio::sync::mpsc::chan::Chan<u32, tokio::sync::mpsc::{kind}::Semaphore>");
    let chan = program.structure(
        &chan_name,
        72,
        &[
            ("semaphore", 0, semaphore),
            ("tx_count", 48, tx_count),
            ("rx_fields", 56, rx_fields),
        ],
    );
    let arc = program.arc(&chan_name, chan, 72);
    let rx = program.structure("tokio::sync::mpsc::chan::Rx<u32>", 8, &[("inner", 0, arc)]);
    let receiver_name = if bounded {
        "tokio::sync::mpsc::bounded::Receiver<u32>"
    } else {
        "tokio::sync::mpsc::unbounded::UnboundedReceiver<u32>"
    };
    let receiver = program.structure(receiver_name, 8, &[("chan", 0, rx)]);
    let this = program.pointer(&format!("&mut {receiver_name}"), receiver);
    let env: &'static str = if bounded {
        "tokio::sync::mpsc::bounded::{impl#6}::recv::{async_fn_env#0}<u32>"
    } else {
        "tokio::sync::mpsc::unbounded::{impl#3}::recv::{async_fn_env#0}<u32>"
    };
    async_method(&mut program, env, 16, 8, &[("self", 0, this)]);
    if bounded {
        program.structure(
            "tokio_stream::wrappers::mpsc_bounded::ReceiverStream<u32>",
            8,
            &[("inner", 0, receiver)],
        );
    }
    (program.load(), env)
}

#[test]
fn mpsc_recv_counts_what_is_queued_in_either_kind_of_channel() {
    for bounded in [true, false] {
        let (debug, env) = mpsc_program(bounded);
        let mut memory = TestMemory::default();
        memory.zero(0x1000, 16);
        memory.write_u64(0x1000, 0x1800);
        memory.write_u8(0x1008, 3);
        memory.write_u64(0x1800, 0x2000); // the receiver's Arc
        memory.zero(0x2000, 16 + 72);
        let chan = 0x2010;
        if bounded {
            write_semaphore(&mut memory, chan, 6, false, &[]);
            memory.write_u64(chan + 40, 8);
        } else {
            memory.write_u64(chan, 2 << 1);
        }
        memory.write_u64(chan + 48, 3);
        let node = decode(&debug, &memory, env, 0x1000);
        let wait = MpscWait {
            address: chan,
            capacity: bounded.then_some(8),
            closed: false,
            queued: 2,
            received: None,
            senders: 3,
            senders_held_by: None,
        };
        assert_eq!(
            facts(&node),
            &Detail::MpscRecv(wait.clone()),
            "bounded: {bounded}"
        );
        assert_eq!(
            node.summary.as_deref(),
            Some(format!("recv on mpsc {chan:#x} (2 queued, 3 senders)").as_str())
        );
        // A receiver a hand-written future keeps in a field reads the same.
        let receiver = match bounded {
            true => "tokio::sync::mpsc::bounded::Receiver<u32>",
            false => "tokio::sync::mpsc::unbounded::UnboundedReceiver<u32>",
        };
        let held = decode(&debug, &memory, receiver, 0x1800);
        assert_eq!(facts(&held), &Detail::MpscRecv(wait.clone()));
        assert_eq!(held.summary, node.summary);
        if bounded {
            memory.zero(0x5000, 8);
            memory.write_u64(0x5000, 0x2000);
            let stream = decode(
                &debug,
                &memory,
                "tokio_stream::wrappers::mpsc_bounded::ReceiverStream<u32>",
                0x5000,
            );
            assert_eq!(facts(&stream), &Detail::MpscRecv(wait));
        }
        // The channel's Arc points nowhere.
        memory.write_u64(0x1800, 0xdead_0000);
        assert_error(&decode(&debug, &memory, env, 0x1000), "cannot read");
    }
}

fn oneshot_program() -> DebugInfo {
    let mut program = Program::new();
    let usize = program.usize();
    let inner = program.structure(
        "tokio::sync::oneshot::Inner<u32>",
        48,
        &[("state", 32, usize)],
    );
    let arc = program.arc("tokio::sync::oneshot::Inner<u32>", inner, 48);
    let option = program.niche_option(
        "alloc::sync::Arc<tokio::sync::oneshot::Inner<u32>, alloc::alloc::Global>",
        arc,
        8,
    );
    program.structure(
        "tokio::sync::oneshot::Receiver<u32>",
        8,
        &[("inner", 0, option)],
    );
    program.structure(
        "tokio::sync::oneshot::Sender<u32>",
        8,
        &[("inner", 0, option)],
    );
    program.load()
}

#[test]
fn oneshot_recv_says_whether_a_value_was_sent_or_the_sender_dropped() {
    let debug = oneshot_program();
    let receiver = "tokio::sync::oneshot::Receiver<u32>";
    let mut memory = TestMemory::default();
    memory.write_u64(0x1000, 0x2000);
    memory.zero(0x2000, 64);
    let inner = 0x2010;
    for (state, sent, closed, what) in [
        (1, false, false, "nothing sent"),
        (0b110, true, true, "value sent"),
        (0b101, false, true, "sender dropped"),
    ] {
        memory.write_u64(inner + 32, state);
        let node = decode(&debug, &memory, receiver, 0x1000);
        let wait = OneshotWait {
            address: Some(inner),
            closed,
            sender_task: None,
            senders_held_by: None,
            value_sent: Some(sent),
        };
        assert_eq!(facts(&node), &Detail::OneshotRecv(wait));
        assert_eq!(
            node.summary.as_deref(),
            Some(format!("recv on oneshot {inner:#x} ({what})").as_str())
        );
    }
    memory.write_u64(0x1000, 0);
    let node = decode(&debug, &memory, receiver, 0x1000);
    let received = OneshotWait {
        address: None,
        closed: true,
        sender_task: None,
        senders_held_by: None,
        value_sent: None,
    };
    assert_eq!(facts(&node), &Detail::OneshotRecv(received));
    // The receiver itself is unreadable.
    assert_error(&decode(&debug, &memory, receiver, 0x7000), "cannot read");
}

#[test]
fn watch_changed_compares_the_versions_and_broadcast_recv_its_position_with_the_tail() {
    let mut program = Program::new();
    let usize = program.usize();
    let u64 = program.u64();
    let bool = program.bool();
    let shared = program.structure(
        "tokio::sync::watch::Shared<u32>",
        16,
        &[("state", 0, usize), ("ref_count_rx", 8, usize)],
    );
    let arc = program.arc("tokio::sync::watch::Shared<u32>", shared, 16);
    let receiver = program.structure(
        "tokio::sync::watch::Receiver<u32>",
        16,
        &[("shared", 0, arc), ("version", 8, usize)],
    );
    let this = program.pointer("&mut tokio::sync::watch::Receiver<u32>", receiver);
    let changed = "tokio::sync::watch::{impl#4}::changed::{async_fn_env#0}<u32>";
    async_method(&mut program, changed, 16, 8, &[("self", 0, this)]);
    let tail = program.structure(
        "tokio::sync::broadcast::Tail",
        24,
        &[("pos", 0, u64), ("rx_cnt", 8, usize), ("closed", 16, bool)],
    );
    let locked = program.tokio_mutex("tokio::sync::broadcast::Tail", tail, 24, true);
    let shared = program.structure(
        "tokio::sync::broadcast::Shared<u32>",
        40,
        &[("tail", 0, locked), ("num_tx", 32, usize)],
    );
    let arc = program.arc("tokio::sync::broadcast::Shared<u32>", shared, 40);
    let receiver = program.structure(
        "tokio::sync::broadcast::Receiver<u32>",
        16,
        &[("shared", 0, arc), ("next", 8, u64)],
    );
    let this = program.pointer("&mut tokio::sync::broadcast::Receiver<u32>", receiver);
    let recv = "tokio::sync::broadcast::{impl#9}::recv::{async_fn_env#0}<u32>";
    async_method(&mut program, recv, 16, 8, &[("self", 0, this)]);
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 0x1800);
    memory.write_u8(0x1008, 3);
    memory.write_u64(0x1800, 0x2000);
    memory.write_u64(0x1808, 4);
    memory.zero(0x2000, 32);
    memory.write_u64(0x2010, 4);
    memory.write_u64(0x2018, 2);
    let node = decode(&debug, &memory, changed, 0x1000);
    let wait = WatchWait {
        address: 0x2010,
        closed: false,
        receivers: 2,
        senders_held_by: None,
        version_current: 4,
        version_seen: 4,
    };
    assert_eq!(facts(&node), &Detail::WatchChanged(wait.clone()));
    assert_eq!(
        node.summary.as_deref(),
        Some("watch changed 0x2010 (version 4 seen, 4 current)")
    );
    // Kept in a field rather than awaited, the receiver reads the same.
    let held = decode(&debug, &memory, "tokio::sync::watch::Receiver<u32>", 0x1800);
    assert_eq!(facts(&held), &Detail::WatchChanged(wait));

    memory.write_u64(0x1800, 0x3000);
    memory.write_u64(0x1808, 7);
    memory.zero(0x3000, 56);
    let shared = 0x3010;
    memory.write_u64(shared + 8, 9); // pos
    memory.write_u8(shared + 8 + 16, 1); // closed
    memory.write_u64(shared + 32, 1);
    let node = decode(&debug, &memory, recv, 0x1000);
    let wait = BroadcastWait {
        address: shared,
        closed: true,
        next: 7,
        queued: 2,
        senders: 1,
        senders_held_by: None,
        tail: 9,
    };
    assert_eq!(facts(&node), &Detail::BroadcastRecv(wait.clone()));
    assert_eq!(
        node.summary.as_deref(),
        Some("recv on broadcast 0x3010 (2 queued, 1 sender, closed)")
    );
    let held = decode(
        &debug,
        &memory,
        "tokio::sync::broadcast::Receiver<u32>",
        0x1800,
    );
    assert_eq!(facts(&held), &Detail::BroadcastRecv(wait));
    assert_eq!(held.summary, node.summary);
    // The shared state's Arc is null.
    memory.write_u64(0x1800, 0);
    assert_error(&decode(&debug, &memory, recv, 0x1000), "null pointer");
}

/// `Sleep` as tokio 1.53 on lays it out (`deadline`), 1.49 to 1.52 (`entry:
/// Timer::Traditional(TimerEntry{deadline})`) and 1.38 to 1.48 (`entry: TimerEntry{deadline}`).
fn sleep_program(version: &str) -> DebugInfo {
    let mut program = Program::new();
    let instant = program.tokio_instant();
    match version {
        "1.53" => {
            program.structure(
                "tokio::time::sleep::Sleep",
                32,
                &[("deadline", 16, instant)],
            );
        }
        "1.49" => {
            let entry = program.structure(
                "tokio::runtime::time::entry::TimerEntry",
                16,
                &[("deadline", 0, instant)],
            );
            let u64 = program.u64();
            let timer = program.rust_enum(
                "tokio::runtime::time::Timer",
                24,
                Some((0, u64)),
                &[
                    Variant::new("Traditional", Some(0), &[("__0", 8, entry)]),
                    Variant::new("Alternative", Some(1), &[]),
                ],
            );
            program.structure("tokio::time::sleep::Sleep", 32, &[("entry", 8, timer)]);
        }
        _ => {
            let entry = program.structure(
                "tokio::runtime::time::entry::TimerEntry",
                16,
                &[("deadline", 0, instant)],
            );
            program.structure("tokio::time::sleep::Sleep", 32, &[("entry", 16, entry)]);
        }
    }
    program.load()
}

#[test]
fn sleep_reads_its_deadline_in_each_version_and_the_time_left_when_live() {
    for (version, deadline_at) in [("1.53", 0x1010), ("1.49", 0x1010), ("1.38", 0x1010)] {
        let debug = sleep_program(version);
        let mut memory = TestMemory::default();
        memory.zero(0x1000, 32);
        memory.write_u64(deadline_at, 100);
        memory.write_u32(deadline_at + 8, 500_000_000);
        let node = decode(&debug, &memory, "tokio::time::sleep::Sleep", 0x1000);
        let deadline = Deadline {
            deadline: Some(MonotonicTime {
                nanos: 500_000_000,
                secs: 100,
            }),
            period_secs: None,
            remaining_secs: None,
            since_last_tick_secs: None,
        };
        assert_eq!(facts(&node), &Detail::Sleep(deadline), "tokio {version}");
        assert_eq!(
            node.summary.as_deref(),
            Some("Sleep until 100.500s on the monotonic clock")
        );

        let target = Target::new(&debug, &memory, 0);
        let live = crate::future::LiveProcess {
            pid: None,
            now: Some((98, 0)),
        };
        let node = FutureDecoder::new(&target)
            .with_live_process(live)
            .decode(die_of(&debug, "tokio::time::sleep::Sleep"), 0x1000);
        assert_eq!(node.summary.as_deref(), Some("Sleep until +2.5s"));
        let Some(Detail::Sleep(deadline)) = node.detail() else {
            panic!("{node:?}")
        };
        assert_eq!(deadline.remaining_secs, Some(2.5));

        // Nanoseconds past a second: corrupt.
        memory.write_u32(deadline_at + 8, 2_000_000_000);
        assert_error(
            &decode(&debug, &memory, "tokio::time::sleep::Sleep", 0x1000),
            "instant with 2000000000 nanoseconds",
        );
    }
}

#[test]
fn an_interval_tick_is_its_sleep_with_the_period_and_a_timeout_its_deadline_over_its_future() {
    let mut program = Program::new();
    let instant = program.tokio_instant();
    let sleep = program.structure("tokio::time::sleep::Sleep", 16, &[("deadline", 0, instant)]);
    let boxed = program.boxed("tokio::time::sleep::Sleep", sleep);
    let pinned = program.pin(
        "alloc::boxed::Box<tokio::time::sleep::Sleep, alloc::alloc::Global>",
        boxed,
        8,
    );
    let u64 = program.u64();
    let u32 = program.u32();
    let nanos = program.named("core::num::niche_types::Nanoseconds");
    let _ = u32;
    let duration = program.structure(
        "core::time::Duration",
        16,
        &[("secs", 0, u64), ("nanos", 8, nanos)],
    );
    let interval = program.structure(
        "tokio::time::interval::Interval",
        24,
        &[("delay", 0, pinned), ("period", 8, duration)],
    );
    let this = program.pointer("&mut tokio::time::interval::Interval", interval);
    let tick = "tokio::time::interval::{impl#0}::tick::{async_fn_env#0}";
    async_method(&mut program, tick, 16, 8, &[("self", 0, this)]);
    let pending = program.pending();
    let timeout_name = "tokio::time::timeout::Timeout<core::future::pending::Pending<()>>";
    program.structure(
        timeout_name,
        24,
        &[("value", 0, pending), ("delay", 8, sleep)],
    );
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u8(0x1008, 3);
    memory.zero(0x2000, 24);
    memory.write_u64(0x2000, 0x3000);
    memory.write_u64(0x2008, 1);
    memory.write_u32(0x2010, 250_000_000);
    memory.zero(0x3000, 16);
    memory.write_u64(0x3000, 7);
    let node = decode(&debug, &memory, tick, 0x1000);
    let deadline = Deadline {
        deadline: Some(MonotonicTime { nanos: 0, secs: 7 }),
        period_secs: Some(1.25),
        remaining_secs: None,
        since_last_tick_secs: None,
    };
    assert_eq!(facts(&node), &Detail::Sleep(deadline));
    // Stopped at 6.5 s: the next tick is 0.5 s off, so the last was 0.75 s before.
    let target = Target::new(&debug, &memory, 0);
    let live = crate::future::LiveProcess {
        pid: None,
        now: Some((6, 500_000_000)),
    };
    let node = FutureDecoder::new(&target)
        .with_live_process(live)
        .decode(die_of(&debug, tick), 0x1000);
    let Some(Detail::Sleep(deadline)) = node.detail() else {
        panic!("{node:?}")
    };
    assert_eq!(
        (deadline.remaining_secs, deadline.since_last_tick_secs),
        (Some(0.5), Some(0.75))
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("Sleep until +0.5s (an Interval's: last tick 0.8s ago)")
    );

    memory.zero(0x4000, 24);
    memory.write_u64(0x4008, 9);
    let node = decode(&debug, &memory, timeout_name, 0x4000);
    let deadline = Deadline {
        deadline: Some(MonotonicTime { nanos: 0, secs: 9 }),
        period_secs: None,
        remaining_secs: None,
        since_last_tick_secs: None,
    };
    assert_eq!(facts(&node), &Detail::Timeout(deadline));
    assert_eq!(
        node.summary.as_deref(),
        Some("Timeout until 9.000s on the monotonic clock")
    );
    assert_eq!(node.children.len(), 1);
    assert_eq!(node.children[0].kind, NodeKind::Pending);
    // The interval's sleep is gone.
    memory.write_u64(0x2000, 0);
    assert_error(&decode(&debug, &memory, tick, 0x1000), "null pointer");
}

/// tokio's TCP types down to their fd: `TcpStream`/`TcpListener{io: PollEvented{io:
/// Option<mio type>@8}}`, mio's `{inner: IoSource{inner: std type}}`, std's newtypes to an
/// `OwnedFd{fd}`. The fd lies 16 bytes into the tokio value.
fn socket_types(program: &mut Program, kind: &str) -> Ty {
    let i32 = program.base("i32", 4);
    let owned = program.memo_struct("std::os::fd::owned::OwnedFd", 4, &[("fd", 0, i32)]);
    let file = program.memo_struct("std::sys::fd::unix::FileDesc", 4, &[("__0", 0, owned)]);
    let socket = program.memo_struct(
        "std::sys::net::connection::socket::unix::Socket",
        4,
        &[("__0", 0, file)],
    );
    let sys = program.structure(
        &format!("std::sys::net::connection::socket::{kind}"),
        4,
        &[("inner", 0, socket)],
    );
    let std = program.structure(&format!("std::net::tcp::{kind}"), 4, &[("__0", 0, sys)]);
    let source = program.structure(
        &format!("mio::io_source::IoSource<std::net::tcp::{kind}>"),
        8,
        &[("inner", 0, std)],
    );
    let module = if kind == "TcpStream" {
        "stream"
    } else {
        "listener"
    };
    let mio_name = format!("mio::net::tcp::{module}::{kind}");
    let mio = program.structure(&mio_name, 8, &[("inner", 0, source)]);
    let option = program.option(&mio_name, mio, 8, 16);
    let evented_name = format!("tokio::io::poll_evented::PollEvented<{mio_name}>");
    let evented = program.structure(&evented_name, 24, &[("io", 8, option)]);
    program.structure(
        &format!("tokio::net::tcp::{module}::{kind}"),
        24,
        &[("io", 0, evented)],
    )
}

impl Program {
    /// A struct made once under its name.
    fn memo_struct(&mut self, name: &str, size: u64, fields: &[(&str, u64, Ty)]) -> Ty {
        if let Some(ty) = self.find(name) {
            return ty;
        }
        self.structure(name, size, fields)
    }
}

const TCP_STREAM: &str = "tokio::net::tcp::stream::TcpStream";

/// tokio's `TcpStream` (`socket_types`) and a `&mut` to one, as the io futures hold it.
fn tcp_stream(program: &mut Program) -> (Ty, Ty) {
    let stream = socket_types(program, "TcpStream");
    let reference = program.pointer(&format!("&mut {TCP_STREAM}"), stream);
    (stream, reference)
}

/// A TCP value at `at` whose fd is `fd` (its `Option` says `Some`).
fn write_socket(memory: &mut TestMemory, at: u64, fd: u32) {
    memory.zero(at, 24);
    memory.write_u64(at + 8, 1);
    memory.write_u32(at + 16, fd);
}

#[test]
fn io_waits_name_the_fd_of_a_listener_a_stream_and_a_listener_stream() {
    let mut program = Program::new();
    let listener = socket_types(&mut program, "TcpListener");
    let (_, reader) = tcp_stream(&mut program);
    let this = program.reference("tokio::net::tcp::listener::TcpListener", listener);
    let accept = "tokio::net::tcp::listener::{impl#0}::accept::{async_fn_env#0}";
    async_method(&mut program, accept, 16, 8, &[("self", 0, this)]);
    let read = format!("tokio::io::util::read::Read<{TCP_STREAM}>");
    program.structure(&read, 24, &[("reader", 0, reader)]);
    let write = format!("tokio::io::util::write::Write<{TCP_STREAM}>");
    program.structure(&write, 24, &[("writer", 0, reader)]);
    let wrapper = "tokio_stream::wrappers::tcp_listener::TcpListenerStream";
    program.structure(wrapper, 24, &[("inner", 0, listener)]);
    let usize = program.usize();
    let interest = program.structure("tokio::io::interest::Interest", 8, &[("__0", 0, usize)]);
    let waiter = program.structure(
        "tokio::runtime::io::scheduled_io::Waiter",
        48,
        &[("interest", 32, interest)],
    );
    let cell = program.structure(
        "core::cell::UnsafeCell<tokio::runtime::io::scheduled_io::Waiter>",
        48,
        &[("value", 0, waiter)],
    );
    program.structure(
        "tokio::runtime::io::scheduled_io::Readiness",
        64,
        &[("waiter", 8, cell)],
    );
    let debug = program.load();

    let mut memory = TestMemory::default();
    write_socket(&mut memory, 0x2000, 9);
    write_socket(&mut memory, 0x2100, 12);
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u8(0x1008, 3);
    let node = decode(&debug, &memory, accept, 0x1000);
    let wait = IoWait {
        buffered: None,
        fd: Some(9),
        fd_kind: None,
        interest: vec!["read"],
        operation: Some("accept".into()),
    };
    assert_eq!(facts(&node), &Detail::IoReadiness(wait.clone()));
    assert_eq!(
        node.summary.as_deref(),
        Some("accept on fd 9, waiting for read")
    );
    assert!(!node.field_search());

    let listener_stream = decode(&debug, &memory, wrapper, 0x2000);
    assert_eq!(facts(&listener_stream), &Detail::IoReadiness(wait));

    memory.zero(0x3000, 24);
    memory.write_u64(0x3000, 0x2100);
    for (name, operation, interest) in [(read, "read", "read"), (write, "write", "write")] {
        let node = decode(&debug, &memory, &name, 0x3000);
        let wait = IoWait {
            buffered: None,
            fd: Some(12),
            fd_kind: None,
            interest: vec![interest],
            operation: Some(operation.into()),
        };
        assert_eq!(facts(&node), &Detail::IoReadiness(wait));
    }

    memory.zero(0x4000, 64);
    memory.write_u64(0x4000 + 8 + 32, 0b11);
    let node = decode(
        &debug,
        &memory,
        "tokio::runtime::io::scheduled_io::Readiness",
        0x4000,
    );
    let wait = IoWait {
        buffered: None,
        fd: None,
        fd_kind: None,
        interest: vec!["read", "write"],
        operation: None,
    };
    assert_eq!(facts(&node), &Detail::IoReadiness(wait));
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting for I/O readiness (read+write)")
    );

    // The listener's mio socket is gone (`None`).
    memory.write_u64(0x2008, 0);
    assert_error(&decode(&debug, &memory, accept, 0x1000), "holds None");
}

#[test]
fn an_io_type_the_table_lacks_is_searched_for_its_fd_and_marked_so() {
    let mut program = Program::new();
    let i32 = program.base("i32", 4);
    let inner = program.structure("app::Connection", 8, &[("id", 0, i32), ("fd", 4, i32)]);
    let socket = program.structure("app::Socket", 8, &[("conn", 0, inner)]);
    let reader = program.pointer("&mut app::Socket", socket);
    let read = "tokio::io::util::read::Read<app::Socket>";
    program.structure(read, 8, &[("reader", 0, reader)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.write_u64(0x1000, 0x2000);
    memory.write_u32(0x2000, 1);
    memory.write_u32(0x2004, 33);
    let target = Target::new(&debug, &memory, 0);
    let node = FutureDecoder::new(&target).decode(die_of(&debug, read), 0x1000);
    let wait = IoWait {
        buffered: None,
        fd: Some(33),
        fd_kind: None,
        interest: vec!["read"],
        operation: Some("read".into()),
    };
    assert_eq!(facts(&node), &Detail::IoReadiness(wait));
    assert!(node.field_search(), "{node:?}");
    assert_eq!(target.field_searches.get(), 1);
    assert!(serde_json::to_string(&node)
        .unwrap()
        .contains(r#""field_search":true"#));
}

/// The kinds of a node's children.
fn child_kinds(node: &FutureNode) -> Vec<NodeKind> {
    node.children.iter().map(|child| child.kind).collect()
}

fn branch_statuses(node: &FutureNode) -> Vec<BranchStatus> {
    node.children
        .iter()
        .map(|child| child.branch().expect("a branch").status)
        .collect()
}

/// `FuturesUnordered<F>{head_all: AtomicPtr<Task>@8}`, its tasks `Task{future:
/// UnsafeCell<Option<F>>@0 (tag, then F at +8), next_all: AtomicPtr@16}`, 24 bytes.
fn futures_unordered(program: &mut Program, future_name: &str, future: Ty) -> Ty {
    let set_name =
        format!("futures_util::stream::futures_unordered::FuturesUnordered<{future_name}>");
    let task_name = format!("futures_util::stream::futures_unordered::task::Task<{future_name}>");
    let task = program.structure(&task_name, 24, &[]);
    let option = program.option(future_name, future, 8, 16);
    let cell = program.structure(
        &format!("core::cell::UnsafeCell<core::option::Option<{future_name}>>"),
        16,
        &[("value", 0, option)],
    );
    let raw = program.pointer(&format!("*mut {task_name}"), task);
    let raw_cell = program.structure(
        &format!("core::cell::UnsafeCell<*mut {task_name}>"),
        8,
        &[("value", 0, raw)],
    );
    let atomic = program.structure(
        &format!("core::sync::atomic::AtomicPtr<{task_name}>"),
        8,
        &[("p", 0, raw_cell)],
    );
    program.fields(task, &[("future", 0, cell), ("next_all", 16, atomic)]);
    program.structure(&set_name, 24, &[("head_all", 8, atomic)])
}

/// A `FuturesUnordered` at `at` whose tasks are at `tasks`, each holding its future or none.
fn write_unordered(memory: &mut TestMemory, at: u64, tasks: &[(u64, bool)]) {
    memory.zero(at, 24);
    memory.write_u64(at + 8, tasks.first().map_or(0, |task| task.0));
    for (i, &(task, holds)) in tasks.iter().enumerate() {
        memory.zero(task, 24);
        memory.write_u64(task, u64::from(holds));
        memory.write_u64(task + 16, tasks.get(i + 1).map_or(0, |next| next.0));
    }
}

#[test]
fn futures_unordered_and_ordered_list_their_futures_as_pending_branches() {
    let mut program = Program::new();
    let pending = program.pending();
    let pending_name = "core::future::pending::Pending<()>";
    futures_unordered(&mut program, pending_name, pending);
    let usize = program.usize();
    let wrapper_name =
        format!("futures_util::stream::futures_ordered::OrderWrapper<{pending_name}>");
    let wrapper = program.structure(
        &wrapper_name,
        8,
        &[("data", 0, pending), ("index", 0, usize)],
    );
    let in_progress = futures_unordered(&mut program, &wrapper_name, wrapper);
    let output = program.structure(
        "futures_util::stream::futures_ordered::OrderWrapper<()>",
        8,
        &[("index", 0, usize)],
    );
    let outputs = program.vec(
        "futures_util::stream::futures_ordered::OrderWrapper<()>",
        output,
    );
    let heap = program.structure(
        "alloc::collections::binary_heap::BinaryHeap<()>",
        24,
        &[("data", 0, outputs)],
    );
    let ordered_name =
        format!("futures_util::stream::futures_ordered::FuturesOrdered<{pending_name}>");
    program.structure(
        &ordered_name,
        48,
        &[
            ("queued_outputs", 0, heap),
            ("in_progress_queue", 24, in_progress),
        ],
    );
    let debug = program.load();

    let mut memory = TestMemory::default();
    write_unordered(
        &mut memory,
        0x1000,
        &[(0x2000, true), (0x2100, false), (0x2200, true)],
    );
    let unordered =
        format!("futures_util::stream::futures_unordered::FuturesUnordered<{pending_name}>");
    let node = decode(&debug, &memory, &unordered, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::FuturesUnordered(FutureSet {
            len: 2,
            outputs_queued: None,
            pending: 2
        })
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("FuturesUnordered of 2 (2 pending)")
    );
    assert_eq!(child_kinds(&node), [NodeKind::Pending, NodeKind::Pending]);

    memory.zero(0x3000, 48);
    memory.write_u64(0x3000 + 16, 4); // outputs queued
    write_unordered(&mut memory, 0x3000 + 24, &[(0x2300, true)]);
    let node = decode(&debug, &memory, &ordered_name, 0x3000);
    assert_eq!(
        facts(&node),
        &Detail::FuturesOrdered(FutureSet {
            len: 1,
            outputs_queued: Some(4),
            pending: 1
        })
    );

    // A task list that loops.
    memory.write_u64(0x2200 + 16, 0x2000);
    assert_error(
        &decode(&debug, &memory, &unordered, 0x1000),
        "FuturesUnordered list loops",
    );
}

#[test]
fn join_all_select_all_and_select_show_each_future_with_its_status() {
    let mut program = Program::new();
    let pending = program.pending();
    let name = "core::future::pending::Pending<()>";
    let u64 = program.u64();
    let maybe_done_name = format!("futures_util::future::maybe_done::MaybeDone<{name}>");
    let maybe_done = program.rust_enum(
        &maybe_done_name,
        8,
        Some((0, u64)),
        &[
            Variant::new("Future", Some(0), &[("__0", 8, pending)]),
            Variant::new("Done", Some(1), &[("__0", 8, u64)]),
            Variant::new("Gone", Some(2), &[]),
        ],
    );
    program.template_param(maybe_done, "Fut", pending);
    let slice = program.boxed_slice(&maybe_done_name, maybe_done);
    let pinned = program.pin(
        &format!("alloc::boxed::Box<[{maybe_done_name}], alloc::alloc::Global>"),
        slice,
        16,
    );
    let ordered = program.structure(
        &format!("futures_util::stream::futures_ordered::FuturesOrdered<{name}>"),
        8,
        &[],
    );
    let collect = program.structure(
        "futures_util::stream::stream::collect::Collect<()>",
        8,
        &[("stream", 0, ordered)],
    );
    let kind = program.rust_enum(
        &format!("futures_util::future::join_all::JoinAllKind<{name}>"),
        24,
        Some((0, u64)),
        &[
            Variant::new("Small", Some(0), &[("elems", 8, pinned)]),
            Variant::new("Big", Some(1), &[("fut", 8, collect)]),
        ],
    );
    let join_all = format!("futures_util::future::join_all::JoinAll<{name}>");
    program.structure(&join_all, 24, &[("kind", 0, kind)]);
    let futures = program.vec(name, pending);
    let select_all = format!("futures_util::future::select_all::SelectAll<{name}>");
    program.structure(&select_all, 24, &[("inner", 0, futures)]);
    let pair = program.structure(
        &format!("({name}, {name})"),
        0,
        &[("__0", 0, pending), ("__1", 0, pending)],
    );
    let option = program.option(&format!("({name}, {name})"), pair, 8, 8);
    let select = format!("futures_util::future::select::Select<{name}, {name}>");
    program.structure(&select, 8, &[("inner", 0, option)]);
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.zero(0x1000, 24);
    memory.write_u64(0x1008, 0x2000);
    memory.write_u64(0x1010, 3);
    memory.zero(0x2000, 24);
    memory.write_u64(0x2008, 1);
    memory.write_u64(0x2010, 2);
    let node = decode(&debug, &memory, &join_all, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::JoinAll(FutureSet {
            len: 3,
            outputs_queued: None,
            pending: 1
        })
    );
    assert_eq!(
        branch_statuses(&node),
        [
            BranchStatus::Pending,
            BranchStatus::Done,
            BranchStatus::Gone
        ]
    );
    assert_eq!(
        node.children[1].type_name(),
        name,
        "a finished branch shows its future's type"
    );

    memory.zero(0x3000, 24);
    memory.write_u64(0x3008, 0x4000);
    memory.write_u64(0x3010, 2);
    memory.zero(0x4000, 8);
    let node = decode(&debug, &memory, &select_all, 0x3000);
    assert_eq!(
        facts(&node),
        &Detail::SelectAll(FutureSet {
            len: 2,
            outputs_queued: None,
            pending: 2
        })
    );
    assert_eq!(child_kinds(&node), [NodeKind::Pending, NodeKind::Pending]);

    memory.zero(0x5000, 8);
    memory.write_u64(0x5000, 1);
    let node = decode(&debug, &memory, &select, 0x5000);
    assert_eq!(
        facts(&node),
        &Detail::Select(FutureSet {
            len: 2,
            outputs_queued: None,
            pending: 2
        })
    );
    memory.write_u64(0x5000, 0);
    let done = decode(&debug, &memory, &select, 0x5000);
    assert_eq!(
        facts(&done),
        &Detail::Select(FutureSet {
            len: 0,
            outputs_queued: None,
            pending: 0
        })
    );

    // A slice that claims more elements than any set holds.
    memory.write_u64(0x1010, 1 << 40);
    assert_error(
        &decode(&debug, &memory, &join_all, 0x1000),
        "claims 1099511627776 elements",
    );
}

#[test]
fn a_stream_map_names_its_streams_by_key_and_a_generator_shows_its_block_until_done() {
    let mut program = Program::new();
    let pending = program.pending();
    let name = "core::future::pending::Pending<()>";
    let str_ref = program.str_ref();
    let entry = program.structure(
        &format!("(&str, {name})"),
        16,
        &[("__0", 0, str_ref), ("__1", 16, pending)],
    );
    let entries = program.vec(&format!("(&str, {name})"), entry);
    let map = format!("tokio_stream::stream_map::StreamMap<&str, {name}>");
    program.structure(&map, 24, &[("entries", 0, entries)]);
    let bool = program.bool();
    let generator = format!("async_stream::async_stream::AsyncStream<u32, {name}>");
    program.structure(
        &generator,
        16,
        &[("done", 8, bool), ("generator", 16, pending)],
    );
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.zero(0x1000, 24);
    memory.write_u64(0x1008, 0x2000);
    memory.write_u64(0x1010, 2);
    memory.zero(0x2000, 32);
    for (at, key, text) in [(0x2000, 0x3000, "alpha"), (0x2010, 0x3100, "beta")] {
        memory.write_u64(at, key);
        memory.write_u64(at + 8, text.len() as u64);
        memory.write_str(key, text);
    }
    let node = decode(&debug, &memory, &map, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::StreamMap(FutureSet {
            len: 2,
            outputs_queued: None,
            pending: 2
        })
    );
    let names: Vec<_> = node
        .children
        .iter()
        .map(|child| child.branch().unwrap().name.clone())
        .collect();
    assert_eq!(names, [Some("alpha".to_string()), Some("beta".to_string())]);

    memory.zero(0x4000, 16);
    let node = decode(&debug, &memory, &generator, 0x4000);
    assert_eq!(
        facts(&node),
        &Detail::StreamGenerator(Generator { done: false })
    );
    assert_eq!(child_kinds(&node), [NodeKind::Pending]);
    memory.write_u8(0x4008, 1);
    let node = decode(&debug, &memory, &generator, 0x4000);
    assert_eq!(
        facts(&node),
        &Detail::StreamGenerator(Generator { done: true })
    );
    assert!(node.children.is_empty());

    // Entries past the address space.
    memory.write_u64(0x1008, u64::MAX - 8);
    assert_error(
        &decode(&debug, &memory, &map, 0x1000),
        "past the address space",
    );
}

#[test]
fn trivial_futures_say_what_they_are() {
    let mut program = Program::new();
    program.pending();
    program.structure("core::future::ready::Ready<u32>", 8, &[]);
    program.structure(
        "futures_util::stream::iter::Iter<core::ops::range::Range<u32>>",
        8,
        &[],
    );
    async_method(
        &mut program,
        "tokio::task::yield_now::yield_now::{async_fn_env#0}",
        8,
        0,
        &[],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 8);
    for (name, detail, summary) in [
        (
            "core::future::pending::Pending<()>",
            Detail::Pending(Empty {}),
            "pending (never completes)",
        ),
        (
            "core::future::ready::Ready<u32>",
            Detail::Ready(Empty {}),
            "ready (completes when polled)",
        ),
        (
            "tokio::task::yield_now::yield_now::{async_fn_env#0}",
            Detail::YieldNow(Empty {}),
            "yield_now (runs again on the next poll)",
        ),
        (
            "futures_util::stream::iter::Iter<core::ops::range::Range<u32>>",
            Detail::Ready(Empty {}),
            "stream::iter (yields its next item when polled)",
        ),
    ] {
        let node = decode(&debug, &memory, name, 0x1000);
        assert_eq!(facts(&node), &detail);
        assert_eq!(node.summary.as_deref(), Some(summary));
    }
    // Their memory is not read: no damage reaches them, and the trivial decoders have no
    // inputs to damage.
}

#[test]
fn a_join_handle_names_its_task_and_a_join_set_lists_its_handles() {
    let mut program = Program::new();
    let u64 = program.u64();
    let types = program.task_types("u64", u64, 8);
    let handle = crate::tokio::tests::join_handle_types(&mut program, &types);
    let handle_name = "tokio::runtime::task::join::JoinHandle<u64>";
    let entry = program.structure("tokio::util::idle_notified_set::ListEntry<()>", 32, &[]);
    let pointers = program.pointers("tokio::util::idle_notified_set::ListEntry<()>", entry);
    let manually = program.structure(
        &format!("core::mem::manually_drop::ManuallyDrop<{handle_name}>"),
        8,
        &[("value", 0, handle)],
    );
    let value = program.tokio_cell(
        &format!("core::mem::manually_drop::ManuallyDrop<{handle_name}>"),
        manually,
        8,
    );
    program.fields(entry, &[("pointers", 0, pointers), ("value", 24, value)]);
    let list = program.linked_list("tokio::util::idle_notified_set::ListEntry<()>", entry);
    let lists = program.structure(
        "tokio::util::idle_notified_set::ListsInner<()>",
        32,
        &[("notified", 0, list), ("idle", 16, list)],
    );
    let locked = program.tokio_mutex(
        "tokio::util::idle_notified_set::ListsInner<()>",
        lists,
        32,
        true,
    );
    let arc = program.arc(
        "tokio::loom::std::parking_lot::Mutex<tokio::util::idle_notified_set::ListsInner<()>>",
        locked,
        40,
    );
    let set = program.structure(
        "tokio::util::idle_notified_set::IdleNotifiedSet<()>",
        16,
        &[("lists", 0, arc)],
    );
    let join_set = program.structure(
        "tokio::task::join_set::JoinSet<u64>",
        16,
        &[("inner", 0, set)],
    );
    let this = program.pointer("&mut tokio::task::join_set::JoinSet<u64>", join_set);
    let join_next = "tokio::task::join_set::{impl#1}::join_next::{async_fn_env#0}<u64>";
    async_method(&mut program, join_next, 16, 8, &[("self", 0, this)]);
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.write_vtable(&types);
    memory.write_task(&types, 0x10000, 12, 0b1010 | 1 << 6, 0);
    memory.write_task(&types, 0x11000, 13, 0b1001 | 2 << 6, 0);
    memory.write_u64(0x1000, 0x10000);
    let target = Target::new(&debug, &memory, 0);
    let tasks = crate::tokio::tasks::TaskReader::new(&target).unwrap();
    let decoder = FutureDecoder::new(&target).with_tasks(&tasks);
    let node = decoder.decode(die_of(&debug, handle_name), 0x1000);
    let joined = JoinTarget {
        blocking_thread: None,
        task_address: 0x10000,
        task_id: 12,
        task_state: TaskState::Complete,
    };
    assert_eq!(facts(&node), &Detail::JoinHandle(joined));
    assert_eq!(
        node.summary.as_deref(),
        Some("JoinHandle -> task 12 (complete)")
    );

    // A JoinSet: one handle notified, one idle.
    memory.zero(0x2000, 16);
    memory.write_u64(0x2000, 0x3000);
    memory.zero(0x3000, 56);
    let lists = 0x3010 + 8;
    memory.write_u64(lists, 0x4000);
    memory.write_u64(lists + 8, 0x4000);
    memory.write_u64(lists + 16, 0x4100);
    memory.write_u64(lists + 24, 0x4100);
    for (entry, header) in [(0x4000, 0x10000), (0x4100, 0x11000)] {
        memory.zero(entry, 32);
        memory.write_u64(entry + 24, header);
    }
    // A `join_next()` future on it, suspended.
    memory.zero(0x2800, 16);
    memory.write_u64(0x2800, 0x2000);
    memory.write_u8(0x2808, 3);
    let target = Target::new(&debug, &memory, 0);
    let tasks = crate::tokio::tasks::TaskReader::new(&target).unwrap();
    let decoder = FutureDecoder::new(&target).with_tasks(&tasks);
    let node = decoder.decode(
        die_of(&debug, "tokio::task::join_set::JoinSet<u64>"),
        0x2000,
    );
    assert_eq!(
        facts(&node),
        &Detail::JoinSet(FutureSet {
            len: 2,
            outputs_queued: None,
            pending: 2
        })
    );
    let ids: Vec<_> = node
        .children
        .iter()
        .map(|child| match child.detail() {
            Some(Detail::JoinHandle(target)) => (target.task_id, target.task_state),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, [(12, TaskState::Complete), (13, TaskState::Running)]);
    // `join_next()` on it, suspended: the same set.
    let next = decoder.decode(die_of(&debug, join_next), 0x2800);
    assert_eq!(next.detail(), node.detail());
    assert_eq!(next.children.len(), 2);
    assert_eq!(next.summary, node.summary);

    // A handle to freed memory.
    memory.write_u64(0x1000, 0x7000_0000);
    let target = Target::new(&debug, &memory, 0);
    let tasks = crate::tokio::tasks::TaskReader::new(&target).unwrap();
    let node = FutureDecoder::new(&target)
        .with_tasks(&tasks)
        .decode(die_of(&debug, handle_name), 0x1000);
    assert_error(&node, "cannot read");
}

#[test]
fn wrappers_show_the_future_they_wrap() {
    let mut program = Program::new();
    let pending = program.pending();
    let name = "core::future::pending::Pending<()>";
    let u64 = program.u64();
    let reference = program.pointer(&format!("&mut {name}"), pending);
    program.pin(&format!("&mut {name}"), reference, 8);
    // Pointer types have no name to be looked up by: a struct holds one.
    program.structure("app::Holder", 8, &[("reference", 0, reference)]);
    program.structure(
        &format!("core::mem::manually_drop::ManuallyDrop<{name}>"),
        0,
        &[("value", 0, pending)],
    );
    program.structure(
        &format!("tokio::task::coop::Coop<{name}>"),
        8,
        &[("fut", 0, pending)],
    );
    program.structure(
        &format!("tokio::runtime::task::trace::Root<{name}>"),
        8,
        &[("future", 0, pending)],
    );
    program.structure(
        &format!("futures_util::stream::stream::next::Next<{name}>"),
        8,
        &[("stream", 0, reference)],
    );
    let map_inner = program.rust_enum(
        &format!("futures_util::future::future::map::Map<{name}, ()>"),
        16,
        Some((0, u64)),
        &[
            Variant::new(
                "Incomplete",
                Some(0),
                &[("future", 8, pending), ("f", 8, u64)],
            ),
            Variant::new("Complete", Some(1), &[]),
        ],
    );
    program.structure(
        &format!("futures_util::future::future::Map<{name}, ()>"),
        16,
        &[("inner", 0, map_inner)],
    );
    let fuse = program.option(name, pending, 8, 8);
    program.structure(
        &format!("futures_util::future::future::fuse::Fuse<{name}>"),
        8,
        &[("inner", 0, fuse)],
    );
    program.rust_enum(
        &format!("futures_util::future::either::Either<{name}, {name}>"),
        8,
        Some((0, u64)),
        &[
            Variant::new("Left", Some(0), &[("__0", 8, pending)]),
            Variant::new("Right", Some(1), &[("__0", 8, pending)]),
        ],
    );
    let usize = program.usize();
    let local_set = program.structure("tokio::task::local::LocalSet", 8, &[("tick", 0, usize)]);
    let local_set_ref = program.reference("tokio::task::local::LocalSet", local_set);
    program.structure(
        &format!("tokio::task::local::RunUntil<{name}>"),
        8,
        &[("local_set", 0, local_set_ref), ("future", 8, pending)],
    );
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 0x2000);
    memory.zero(0x2000, 8);
    let reference = {
        let holder = debug.type_info(die_of(&debug, "app::Holder")).unwrap();
        holder
            .field("reference")
            .and_then(|field| field.ty)
            .unwrap()
    };
    let target = Target::new(&debug, &memory, 0);
    let node = FutureDecoder::new(&target).decode(reference, 0x1000);
    assert_eq!((node.kind, node.type_name()), (NodeKind::Pending, name));
    for wrapper in [
        format!("core::pin::Pin<&mut {name}>"),
        format!("core::mem::manually_drop::ManuallyDrop<{name}>"),
        format!("tokio::task::coop::Coop<{name}>"),
        format!("tokio::runtime::task::trace::Root<{name}>"),
        format!("futures_util::stream::stream::next::Next<{name}>"),
    ] {
        let node = decode(&debug, &memory, &wrapper, 0x1000);
        assert_eq!(
            (node.kind, node.type_name()),
            (NodeKind::Pending, name),
            "{wrapper}"
        );
    }
    // Enums: `Either::Left`; `Map` while incomplete shows its future, complete its state;
    // `Fuse` likewise (its `Option`'s tag at +0).
    memory.zero(0x1800, 16);
    let either = format!("futures_util::future::either::Either<{name}, {name}>");
    assert_eq!(
        decode(&debug, &memory, &either, 0x1800).kind,
        NodeKind::Pending
    );
    let map = format!("futures_util::future::future::Map<{name}, ()>");
    assert_eq!(
        decode(&debug, &memory, &map, 0x1800).kind,
        NodeKind::Pending
    );
    memory.write_u64(0x1800, 1);
    let done = decode(&debug, &memory, &map, 0x1800);
    assert_eq!(
        facts(&done),
        &Detail::Future(WrapperState {
            state: "complete".into()
        })
    );
    assert_eq!(done.summary.as_deref(), Some("Map (complete)"));
    let fuse = format!("futures_util::future::future::fuse::Fuse<{name}>");
    assert_eq!(
        decode(&debug, &memory, &fuse, 0x1800).kind,
        NodeKind::Pending
    );
    memory.write_u64(0x1800, 0);
    assert_eq!(
        facts(&decode(&debug, &memory, &fuse, 0x1800)),
        &Detail::Future(WrapperState {
            state: "none".into()
        })
    );

    // `run_until` notes its LocalSet for the caller to walk.
    memory.write_u64(0x1000, 0x2000);
    let target = Target::new(&debug, &memory, 0);
    let decoder = FutureDecoder::new(&target);
    let node = decoder.decode(
        die_of(&debug, &format!("tokio::task::local::RunUntil<{name}>")),
        0x1000,
    );
    assert_eq!(node.kind, NodeKind::Pending);
    assert_eq!(
        decoder.take_anchors(),
        [Anchor::LocalSet(
            die_of(&debug, "tokio::task::local::LocalSet"),
            0x2000
        )]
    );
    assert_eq!(decoder.take_anchors(), []);

    // A reference to nothing.
    memory.write_u64(0x1000, 0);
    let target = Target::new(&debug, &memory, 0);
    assert_error(
        &FutureDecoder::new(&target).decode(reference, 0x1000),
        "null pointer",
    );
}

/// `Shared<Fut>{inner: Option<Arc<Inner{future_or_output: UnsafeCell<FutureOrOutput>,
/// ..}>>, waker_key}` as futures-util 0.3 lays it out, with the Arc's data at `arc`.
fn shared_program() -> (DebugInfo, String) {
    let mut program = Program::new();
    let pending = program.pending();
    let name = "core::future::pending::Pending<()>";
    let u64 = program.u64();
    let state_name = format!("futures_util::future::future::shared::FutureOrOutput<{name}>");
    let state = program.rust_enum(
        &state_name,
        16,
        Some((0, u64)),
        &[
            Variant::new("Future", Some(0), &[("__0", 8, pending)]),
            Variant::new("Output", Some(1), &[("__0", 8, u64)]),
        ],
    );
    let cell_name = format!("core::cell::UnsafeCell<{state_name}>");
    let cell = program.structure(&cell_name, 16, &[("value", 0, state)]);
    let inner_name = format!("futures_util::future::future::shared::Inner<{name}>");
    let inner = program.structure(
        &inner_name,
        24,
        &[("notifier", 0, u64), ("future_or_output", 8, cell)],
    );
    let arc = program.arc(&inner_name, inner, 24);
    let arc_name = format!("alloc::sync::Arc<{inner_name}, alloc::alloc::Global>");
    let option = program.niche_option(&arc_name, arc, 8);
    let shared = format!("futures_util::future::future::shared::Shared<{name}>");
    program.structure(&shared, 16, &[("inner", 0, option), ("waker_key", 8, u64)]);
    (program.load(), shared)
}

#[test]
fn a_shared_future_shows_the_future_its_clones_poll() {
    let (debug, shared) = shared_program();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 0x2000);
    // ArcInner{strong, weak, data: Inner{notifier, future_or_output: Future(Pending)}}.
    memory.zero(0x2000, 40);
    memory.write_u64(0x2000, 2);
    memory.write_u64(0x2008, 1);
    let node = decode(&debug, &memory, &shared, 0x1000);
    assert_eq!(
        (node.kind, node.type_name(), node.error()),
        (
            NodeKind::Pending,
            "core::future::pending::Pending<()>",
            None
        )
    );

    // Completed: the output is there for the clones to copy.
    memory.write_u64(0x2018, 1);
    let node = decode(&debug, &memory, &shared, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::Future(WrapperState {
            state: "output".into()
        })
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("Shared (its output ready: each clone takes a copy)")
    );

    // The clone that completed it took the Arc.
    memory.write_u64(0x1000, 0);
    let node = decode(&debug, &memory, &shared, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::Future(WrapperState {
            state: "taken".into()
        })
    );

    // An Arc to freed memory.
    memory.write_u64(0x1000, 0x7000_0000);
    assert_error(&decode(&debug, &memory, &shared, 0x1000), "cannot read");
}

#[test]
fn hickorys_udp_client_stream_is_ready_whenever_polled() {
    let mut program = Program::new();
    let u64 = program.u64();
    let name = "hickory_net::udp::udp_client_stream::UdpClientStream<hickory_net::runtime::tokio_runtime::TokioRuntimeProvider>";
    program.structure(name, 16, &[("timeout", 0, u64), ("is_shutdown", 8, u64)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    let node = decode(&debug, &memory, name, 0x1000);
    assert_eq!(facts(&node), &Detail::Ready(Empty {}));
    assert_eq!(
        node.summary.as_deref(),
        Some("UdpClientStream (ready when polled; its requests wait in their callers' futures)")
    );
}

#[test]
fn an_instrumented_future_names_its_span() {
    let mut program = Program::new();
    let pending = program.pending();
    let name = "core::future::pending::Pending<()>";
    let str_ref = program.str_ref();
    let metadata = program.structure(
        "tracing_core::metadata::Metadata",
        16,
        &[("name", 0, str_ref)],
    );
    let reference = program.reference("tracing_core::metadata::Metadata", metadata);
    let meta = program.niche_option("&tracing_core::metadata::Metadata", reference, 8);
    let span = program.structure("tracing::span::Span", 8, &[("meta", 0, meta)]);
    let inner = program.structure(
        &format!("core::mem::manually_drop::ManuallyDrop<{name}>"),
        0,
        &[("value", 0, pending)],
    );
    let instrumented = format!("tracing::instrument::Instrumented<{name}>");
    program.structure(&instrumented, 8, &[("inner", 0, inner), ("span", 0, span)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.write_u64(0x1000, 0x2000);
    memory.write_u64(0x2000, 0x3000);
    memory.write_u64(0x2008, 7);
    memory.write_str(0x3000, "request");
    let node = decode(&debug, &memory, &instrumented, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::Instrumented(Span {
            span: Some("request".into())
        })
    );
    assert_eq!(node.summary.as_deref(), Some("in span `request`"));
    assert_eq!(child_kinds(&node), [NodeKind::Pending]);
    // Its name is unreadable: the span stays unnamed, the future is still shown.
    memory.write_u64(0x2000, 0x9000);
    let node = decode(&debug, &memory, &instrumented, 0x1000);
    assert_eq!(facts(&node), &Detail::Instrumented(Span { span: None }));
    assert_eq!(
        node.summary.as_deref(),
        Some("in a span (its name is not readable)")
    );
}

#[test]
fn a_boxed_future_is_its_concrete_type_through_its_vtable() {
    let mut program = Program::new();
    let u64 = program.u64();
    let concrete = program.structure("app::Job", 8, &[("n", 0, u64)]);
    program.vtable(
        "app::Job",
        concrete,
        "core::future::future::Future",
        0x50_0000,
    );
    let usize = program.usize();
    let array = program.array(usize, 4);
    let vtable = program.pointer("&[usize; 4]", array);
    let dyn_future = program.structure(
        "(dyn core::future::future::Future<Output=()> + core::marker::Send)",
        0,
        &[],
    );
    let data = program.pointer(
        "*mut (dyn core::future::future::Future<Output=()> + core::marker::Send)",
        dyn_future,
    );
    let boxed = "alloc::boxed::Box<(dyn core::future::future::Future<Output=()> + core::marker::Send), alloc::alloc::Global>";
    program.structure(boxed, 16, &[("pointer", 0, data), ("vtable", 8, vtable)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.write_u64(0x1000, 0x2000);
    memory.write_u64(0x1008, 0x50_0000);
    memory.write_u64(0x2000, 42);
    let node = decode(&debug, &memory, boxed, 0x1000);
    assert_eq!(
        (node.type_name(), node.address, node.boxed()),
        ("app::Job", 0x2000, true)
    );
    // A vtable no DWARF names.
    memory.write_u64(0x1008, 0x60_0000);
    assert_error(
        &decode(&debug, &memory, boxed, 0x1000),
        "no DWARF vtable at 0x600000",
    );
}

/// hyper's dispatcher states: `Reading`/`Writing` enums of one byte, `Conn{state:
/// State{reading@0, writing@1}}` at +0, the dispatch at +8.
fn hyper_states(program: &mut Program) -> Ty {
    let reading = program.c_enum(
        "hyper::proto::h1::conn::Reading",
        1,
        &[
            ("Init", 0),
            ("Continue", 1),
            ("Body", 2),
            ("KeepAlive", 3),
            ("Closed", 4),
        ],
    );
    let writing = program.c_enum(
        "hyper::proto::h1::conn::Writing",
        1,
        &[("Init", 0), ("Body", 1), ("KeepAlive", 2), ("Closed", 3)],
    );
    let state = program.structure(
        "hyper::proto::h1::conn::State",
        2,
        &[("reading", 0, reading), ("writing", 1, writing)],
    );
    // An I/O that is none of tokio's (a test double): no fd to name. The read buffer's
    // length is the byte at +2 (`read_buf.len`).
    let io = program.structure("test::Io", 0, &[]);
    let u8 = program.u8();
    let read_buffer = program.structure("bytes::bytes_mut::BytesMut", 1, &[("len", 0, u8)]);
    let buffered = program.structure(
        "hyper::proto::h1::io::Buffered<test::Io, ()>",
        1,
        &[("io", 0, io), ("read_buf", 0, read_buffer)],
    );
    program.structure(
        "hyper::proto::h1::conn::Conn<()>",
        8,
        &[("state", 0, state), ("io", 2, buffered)],
    )
}

#[test]
fn http_connections_say_what_they_do_and_a_server_shows_its_handler() {
    let mut program = Program::new();
    let conn = hyper_states(&mut program);
    let pending = program.pending();
    let name = "core::future::pending::Pending<()>";
    let option = program.option(name, pending, 8, 8);
    let boxed = program.boxed(&format!("core::option::Option<{name}>"), option);
    let in_flight = program.pin(
        &format!("alloc::boxed::Box<core::option::Option<{name}>, alloc::alloc::Global>"),
        boxed,
        8,
    );
    let server = program.structure(
        "hyper::proto::h1::dispatch::Server<(), ()>",
        8,
        &[("in_flight", 0, in_flight)],
    );
    let server_name = "hyper::proto::h1::dispatch::Dispatcher<hyper::proto::h1::dispatch::Server<(), ()>, (), (), ()>";
    program.structure(
        server_name,
        16,
        &[("conn", 0, conn), ("dispatch", 8, server)],
    );
    let usize = program.usize();
    let inner = program.structure("tokio::sync::oneshot::Inner<()>", 8, &[("state", 0, usize)]);
    let arc = program.arc("tokio::sync::oneshot::Inner<()>", inner, 8);
    let sender_inner =
        program.niche_option("alloc::sync::Arc<tokio::sync::oneshot::Inner<()>>", arc, 8);
    let sender = program.structure(
        "tokio::sync::oneshot::Sender<()>",
        8,
        &[("inner", 0, sender_inner)],
    );
    let maybe_sender = program.niche_option("tokio::sync::oneshot::Sender<()>", sender, 8);
    let u64 = program.u64();
    let callback = program.rust_enum(
        "hyper::client::dispatch::Callback<(), ()>",
        16,
        Some((0, u64)),
        &[
            Variant::new("Retry", Some(0), &[("__0", 8, maybe_sender)]),
            Variant::new("NoRetry", Some(1), &[("__0", 8, maybe_sender)]),
        ],
    );
    let maybe_callback =
        program.option("hyper::client::dispatch::Callback<(), ()>", callback, 8, 24);
    let client = program.structure(
        "hyper::proto::h1::dispatch::Client<()>",
        24,
        &[("callback", 0, maybe_callback)],
    );
    let client_name = "hyper::proto::h1::dispatch::Dispatcher<hyper::proto::h1::dispatch::Client<()>, (), (), ()>";
    program.structure(
        client_name,
        32,
        &[("conn", 0, conn), ("dispatch", 8, client)],
    );
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1008, 0x2000);
    memory.zero(0x2000, 8);
    memory.write_u64(0x2000, 1); // a request's service future in flight
    let node = decode(&debug, &memory, server_name, 0x1000);
    let server = HttpServer {
        activity: "running the service for a request",
        fd: None,
        unparsed: 0,
        reading: "init".into(),
        writing: "init".into(),
    };
    assert_eq!(facts(&node), &Detail::HttpServerConnection(server));
    assert_eq!(child_kinds(&node), [NodeKind::Pending]);
    assert_eq!(node.children[0].via(), Some("dispatch.in_flight"));
    memory.write_u64(0x2000, 0);
    // Part of a request head read, none parsed: not the same as a connection with none.
    memory.write_u8(0x1002, 5);
    let server = HttpServer {
        activity: "reading a request head",
        fd: None,
        unparsed: 5,
        reading: "init".into(),
        writing: "init".into(),
    };
    assert_eq!(
        facts(&decode(&debug, &memory, server_name, 0x1000)),
        &Detail::HttpServerConnection(server)
    );
    memory.write_u8(0x1002, 0);
    memory.write_u8(0x1000, 4);
    let server = HttpServer {
        activity: "closing",
        fd: None,
        unparsed: 0,
        reading: "closed".into(),
        writing: "init".into(),
    };
    assert_eq!(
        facts(&decode(&debug, &memory, server_name, 0x1000)),
        &Detail::HttpServerConnection(server)
    );

    // A client waiting for the response its callback's oneshot carries back: callback
    // `Some` at +8, `Retry` at +16, the sender's Arc at +24.
    memory.zero(0x3000, 32);
    memory.write_u64(0x3008, 1);
    memory.write_u64(0x3018, 0x4000);
    memory.zero(0x4000, 24);
    let node = decode(&debug, &memory, client_name, 0x3000);
    let client = HttpClient {
        activity: "waiting for the response",
        fd: None,
        holds_sender_of: Some(0x4010),
        reading: "init".into(),
        writing: "init".into(),
    };
    assert_eq!(facts(&node), &Detail::HttpClientConnection(client));
    assert_eq!(
        node.summary.as_deref(),
        Some("HTTP/1 client connection: waiting for the response (reading: init, writing: init)")
    );

    // A dispatcher whose state byte is no state.
    memory.write_u8(0x1000, 9);
    assert_error(
        &decode(&debug, &memory, server_name, 0x1000),
        "holds unknown value 9",
    );
}

#[test]
fn a_tower_buffer_request_names_its_channel_and_its_worker_the_one_it_holds() {
    let mut program = Program::new();
    let usize = program.usize();
    let u64 = program.u64();
    let inner = program.structure("tokio::sync::oneshot::Inner<()>", 8, &[("state", 0, usize)]);
    let arc = program.arc("tokio::sync::oneshot::Inner<()>", inner, 8);
    let end = program.niche_option("alloc::sync::Arc<tokio::sync::oneshot::Inner<()>>", arc, 8);
    let receiver = program.structure(
        "tokio::sync::oneshot::Receiver<()>",
        8,
        &[("inner", 0, end)],
    );
    let sender = program.structure("tokio::sync::oneshot::Sender<()>", 8, &[("inner", 0, end)]);
    let pending = program.pending();
    let state = program.rust_enum(
        "tower::buffer::future::ResponseState<()>",
        16,
        Some((0, u64)),
        &[
            Variant::new("Failed", Some(0), &[]),
            Variant::new("Rx", Some(1), &[("rx", 8, receiver)]),
            Variant::new("Poll", Some(2), &[("fut", 8, pending)]),
        ],
    );
    let response = "tower::buffer::future::ResponseFuture<()>";
    program.structure(response, 16, &[("state", 0, state)]);
    let message = program.structure(
        "tower::buffer::message::Message<(), ()>",
        8,
        &[("tx", 0, sender)],
    );
    let current = program.option("tower::buffer::message::Message<(), ()>", message, 8, 16);
    let worker = "tower::buffer::worker::Worker<(), ()>";
    let service = program.structure("app::LimitedService", 0, &[("limit", 0, pending)]);
    program.structure(
        worker,
        24,
        &[("current_message", 0, current), ("service", 16, service)],
    );
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 1);
    memory.write_u64(0x1008, 0x2000);
    memory.zero(0x2000, 24);
    memory.write_u64(0x2010, 1);
    let node = decode(&debug, &memory, response, 0x1000);
    let request = BufferedRequest {
        channel: Some(0x2010),
        state: "queued".into(),
        worker_task: None,
    };
    assert_eq!(facts(&node), &Detail::TowerBufferResponse(request));
    assert_eq!(child_kinds(&node), [NodeKind::OneshotRecv]);
    // Polling its response future: it shows that one.
    memory.write_u64(0x1000, 2);
    assert_eq!(
        decode(&debug, &memory, response, 0x1000).kind,
        NodeKind::Pending
    );

    memory.zero(0x3000, 24);
    memory.write_u64(0x3000, 1);
    memory.write_u64(0x3008, 0x2000);
    let node = decode(&debug, &memory, worker, 0x3000);
    assert_eq!(
        facts(&node),
        &Detail::TowerBufferWorker(BufferWorker {
            holds_sender_of: Some(0x2010)
        })
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("tower Buffer worker: holding a request until its service is ready")
    );
    assert_eq!(
        child_kinds(&node),
        [NodeKind::Pending],
        "what its service waits on"
    );
    assert_eq!(node.children[0].via(), Some("service.limit"));
    // A state no variant has.
    memory.write_u64(0x1000, 7);
    assert_error(
        &decode(&debug, &memory, response, 0x1000),
        "holds no known variant",
    );
}

#[test]
fn a_grpc_stream_says_whether_it_waits_for_a_message_or_reads_one() {
    let mut program = Program::new();
    let u64 = program.u64();
    let usize = program.usize();
    let state = program.rust_enum(
        "tonic::codec::decode::State",
        16,
        Some((0, u64)),
        &[
            Variant::new("ReadHeader", Some(0), &[]),
            Variant::new("ReadBody", Some(1), &[("len", 8, usize)]),
            Variant::new("Error", Some(2), &[]),
        ],
    );
    let direction = program.rust_enum(
        "tonic::codec::decode::Direction",
        8,
        Some((0, u64)),
        &[
            Variant::new("Request", Some(0), &[]),
            Variant::new("Response", Some(1), &[]),
        ],
    );
    let inner = program.structure(
        "tonic::codec::decode::StreamingInner",
        24,
        &[("state", 0, state), ("direction", 16, direction)],
    );
    let streaming = "tonic::codec::decode::Streaming<()>";
    program.structure(streaming, 24, &[("inner", 0, inner)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 24);
    memory.write_u64(0x1010, 1);
    let node = decode(&debug, &memory, streaming, 0x1000);
    let stream = GrpcStream {
        direction: "response",
        message_length: None,
        state: "readheader".into(),
    };
    assert_eq!(facts(&node), &Detail::GrpcStream(stream));
    assert_eq!(
        node.summary.as_deref(),
        Some("gRPC response stream: waiting for the next message")
    );
    memory.write_u64(0x1000, 1);
    memory.write_u64(0x1008, 320);
    memory.write_u64(0x1010, 0);
    let node = decode(&debug, &memory, streaming, 0x1000);
    assert_eq!(
        node.summary.as_deref(),
        Some("gRPC request stream: reading a message body of 320 bytes")
    );
    memory.write_u64(0x1000, 5);
    assert_error(
        &decode(&debug, &memory, streaming, 0x1000),
        "holds no known variant",
    );
}

/// A LocalSet polled as a future (`rt.block_on(local)`, `local.await`): a leaf naming its
/// shared state, noted so that its tasks are listed; a dangling one is an error line.
#[test]
fn a_local_set_awaited_names_its_shared_state_and_is_noted() {
    let mut program = Program::new();
    let usize = program.usize();
    let shared = program.structure("tokio::task::local::Shared", 8, &[("tick", 0, usize)]);
    let arc = program.arc("tokio::task::local::Shared", shared, 8);
    program.local_set(arc);
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 0x2000);
    memory.zero(0x2000, 24);
    memory.write_u64(0x2010, 0x3000);
    memory.zero(0x3000, 24);
    let target = Target::new(&debug, &memory, 0);
    let decoder = FutureDecoder::new(&target);
    let local_set = die_of(&debug, "tokio::task::local::LocalSet");
    let node = decoder.decode(local_set, 0x1000);
    assert_eq!(node.kind, NodeKind::LocalSet);
    assert_eq!(
        facts(&node),
        &Detail::LocalSet(LocalSetRun {
            address: 0x3010,
            tasks: None
        })
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("LocalSet 0x3010 (runs its own tasks)")
    );
    assert_eq!(
        decoder.take_anchors(),
        [Anchor::LocalSet(local_set, 0x1000)]
    );
    memory.write_u64(0x1000, 0x9_0000);
    assert_error(
        &decode(&debug, &memory, "tokio::task::local::LocalSet", 0x1000),
        "cannot read 8 bytes at 0x90010",
    );
}

/// futures-channel's mpsc receivers (bounded, with `buffer`; unbounded, without) and its
/// oneshot receiver, as futures-channel 0.3 lays them out.
fn futures_channels_program() -> DebugInfo {
    let mut program = Program::new();
    let usize = program.usize();
    let u8 = program.u8();
    let u32 = program.u32();
    for (kind, receiver, fields) in [
        (
            "BoundedInner",
            "Receiver",
            &[
                ("buffer", 0, usize),
                ("state", 8, usize),
                ("num_senders", 16, usize),
            ][..],
        ),
        (
            "UnboundedInner",
            "UnboundedReceiver",
            &[("state", 0, usize), ("num_senders", 8, usize)][..],
        ),
    ] {
        let inner_name = format!("futures_channel::mpsc::{kind}<u32>");
        let inner = program.structure(&inner_name, 48, fields);
        let arc = program.arc(&inner_name, inner, 48);
        let option = program.niche_option(
            &format!("alloc::sync::Arc<{inner_name}, alloc::alloc::Global>"),
            arc,
            8,
        );
        program.structure(
            &format!("futures_channel::mpsc::{receiver}<u32>"),
            8,
            &[("inner", 0, option)],
        );
    }
    let data = program.option("u32", u32, 8, 16);
    let cell = program.structure(
        "core::cell::UnsafeCell<core::option::Option<u32>>",
        16,
        &[("value", 0, data)],
    );
    let lock = program.structure(
        "futures_channel::lock::Lock<core::option::Option<u32>>",
        24,
        &[("locked", 0, u8), ("data", 8, cell)],
    );
    let inner = program.structure(
        "futures_channel::oneshot::Inner<u32>",
        32,
        &[("complete", 0, u8), ("data", 8, lock)],
    );
    let arc = program.arc("futures_channel::oneshot::Inner<u32>", inner, 32);
    program.structure(
        "futures_channel::oneshot::Receiver<u32>",
        8,
        &[("inner", 0, arc)],
    );
    program.load()
}

#[test]
fn futures_mpsc_recv_reads_the_state_word_and_an_ended_channel() {
    let debug = futures_channels_program();
    let open = 1u64 << 63;
    for (receiver, capacity) in [
        ("futures_channel::mpsc::Receiver<u32>", Some(8)),
        ("futures_channel::mpsc::UnboundedReceiver<u32>", None),
    ] {
        let mut memory = TestMemory::default();
        memory.write_u64(0x1000, 0x2000);
        memory.zero(0x2000, 64);
        let inner = 0x2010;
        let (state_at, senders_at) = match capacity {
            Some(buffer) => {
                memory.write_u64(inner, buffer);
                (inner + 8, inner + 16)
            }
            None => (inner, inner + 8),
        };
        memory.write_u64(senders_at, 3);
        for (state, closed, queued, said) in [
            (open | 2, false, 2, "(2 queued, 3 senders)"),
            (1, true, 1, "(1 queued, 3 senders, closed)"),
        ] {
            memory.write_u64(state_at, state);
            let node = decode(&debug, &memory, receiver, 0x1000);
            let wait = QueuedChannelWait {
                address: inner,
                capacity,
                closed,
                queued,
                senders: 3,
            };
            assert_eq!(facts(&node), &Detail::FuturesMpscRecv(wait), "{receiver}");
            assert_eq!(
                node.summary.as_deref(),
                Some(format!("recv on futures mpsc {inner:#x} {said}").as_str())
            );
        }
        // Every sender gone and the queue drained: the receiver let its Arc go.
        memory.write_u64(0x1000, 0);
        let node = decode(&debug, &memory, receiver, 0x1000);
        assert_eq!(
            node.summary.as_deref(),
            Some("recv on a futures mpsc channel that has ended")
        );
        memory.write_u64(0x1000, 0xdead_0000);
        assert_error(&decode(&debug, &memory, receiver, 0x1000), "cannot read");
    }
}

#[test]
fn futures_oneshot_recv_tells_a_sent_value_from_a_dropped_sender() {
    let debug = futures_channels_program();
    let receiver = "futures_channel::oneshot::Receiver<u32>";
    let mut memory = TestMemory::default();
    memory.write_u64(0x1000, 0x2000);
    memory.zero(0x2000, 48);
    let inner = 0x2010;
    for (complete, sent, closed, what) in [
        (0, false, false, "nothing sent"),
        (1, true, false, "value sent"),
        (1, false, true, "sender dropped"),
    ] {
        memory.write_u8(inner, complete);
        memory.write_u64(inner + 8 + 8, u64::from(sent)); // Option<u32>'s tag
        memory.write_u64(inner + 8 + 8 + 8, 42);
        let node = decode(&debug, &memory, receiver, 0x1000);
        let wait = FuturesOneshotWait {
            address: inner,
            closed,
            value_sent: sent,
        };
        assert_eq!(facts(&node), &Detail::FuturesOneshotRecv(wait));
        assert_eq!(
            node.summary.as_deref(),
            Some(format!("recv on futures oneshot {inner:#x} ({what})").as_str())
        );
    }
    memory.write_u64(0x1000, 0xdead_0000);
    assert_error(&decode(&debug, &memory, receiver, 0x1000), "cannot read");
}

/// flume's `RecvFut` over a bounded channel (`sending: Some((capacity, hooks))`) and an
/// unbounded one (`None`), its receiver owned or borrowed.
fn flume_program() -> DebugInfo {
    let mut program = Program::new();
    let usize = program.usize();
    let u8 = program.u8();
    let u32 = program.u32();
    let hooks = program.vec_deque("u8", u8);
    let sending_pair = program.pair(("usize", usize), ("hooks", hooks), 8, 40);
    let sending = program.option("(usize, hooks)", sending_pair, 8, 48);
    let queue = program.vec_deque("u32", u32);
    let chan = program.structure(
        "flume::Chan<u32>",
        80,
        &[("sending", 0, sending), ("queue", 48, queue)],
    );
    let cell = program.structure(
        "core::cell::UnsafeCell<flume::Chan<u32>>",
        80,
        &[("value", 0, chan)],
    );
    let mutex = program.structure(
        "std::sync::poison::mutex::Mutex<flume::Chan<u32>>",
        88,
        &[("data", 8, cell)],
    );
    let shared = program.structure(
        "flume::Shared<u32>",
        104,
        &[
            ("chan", 0, mutex),
            ("disconnected", 88, u8),
            ("sender_count", 96, usize),
        ],
    );
    let arc = program.arc("flume::Shared<u32>", shared, 104);
    let receiver = program.structure("flume::Receiver<u32>", 8, &[("shared", 0, arc)]);
    let borrowed = program.pointer("&flume::Receiver<u32>", receiver);
    let tag = program.u64();
    let owned_or_ref = program.rust_enum(
        "flume::r#async::OwnedOrRef<flume::Receiver<u32>>",
        16,
        Some((0, tag)),
        &[
            Variant::new("Owned", Some(0), &[("__0", 8, receiver)]),
            Variant::new("Ref", Some(1), &[("__0", 8, borrowed)]),
        ],
    );
    program.structure(
        "flume::async::RecvFut<u32>",
        16,
        &[("receiver", 0, owned_or_ref)],
    );
    program.load()
}

#[test]
fn flume_recv_reads_its_channel_through_an_owned_or_a_borrowed_receiver() {
    let debug = flume_program();
    let future = "flume::async::RecvFut<u32>";
    let mut memory = TestMemory::default();
    memory.zero(0x3000, 16 + 104);
    memory.write_u64(0x2000, 0x3000); // a Receiver: its Arc
    let shared = 0x3010;
    memory.write_u64(shared + 8 + 48 + 24, 4); // queue.len
    memory.write_u64(shared + 96, 2); // sender_count
    for (sending, capacity) in [(0, None), (1, Some(16))] {
        memory.write_u64(shared + 8, sending); // sending's tag
        memory.write_u64(shared + 8 + 8, 16); // its capacity
        for (tag, receiver) in [(0, 0x3000), (1, 0x2000)] {
            memory.write_u64(0x1000, tag);
            memory.write_u64(0x1008, receiver);
            for (disconnected, said) in [(0, ""), (1, ", disconnected")] {
                memory.write_u8(shared + 88, disconnected);
                let node = decode(&debug, &memory, future, 0x1000);
                let wait = QueuedChannelWait {
                    address: shared,
                    capacity,
                    closed: disconnected == 1,
                    queued: 4,
                    senders: 2,
                };
                assert_eq!(facts(&node), &Detail::FlumeRecv(wait), "tag {tag}");
                assert_eq!(
                    node.summary.as_deref(),
                    Some(
                        format!("recv on flume channel {shared:#x} (4 queued, 2 senders{said})")
                            .as_str()
                    )
                );
            }
        }
    }
    memory.write_u64(0x1000, 7); // no such variant
    assert!(decode(&debug, &memory, future, 0x1000).error().is_some());
}

#[test]
fn barrier_wait_counts_who_has_arrived_and_set_once_wait_sees_whether_it_is_set() {
    let mut program = Program::new();
    let usize = program.usize();
    let u8 = program.u8();
    let state = program.structure(
        "tokio::sync::barrier::BarrierState",
        24,
        &[("arrived", 8, usize), ("generation", 16, usize)],
    );
    let mutex = program.tokio_mutex("tokio::sync::barrier::BarrierState", state, 24, true);
    let barrier = program.structure(
        "tokio::sync::barrier::Barrier",
        48,
        &[("state", 0, mutex), ("n", 40, usize)],
    );
    let this = program.pointer("&tokio::sync::barrier::Barrier", barrier);
    let barrier_wait = "tokio::sync::barrier::{impl#0}::wait::{async_fn_env#0}";
    async_method(&mut program, barrier_wait, 16, 8, &[("self", 0, this)]);
    let cell = program.structure(
        "tokio::sync::set_once::SetOnce<u32>",
        32,
        &[("value_set", 0, u8)],
    );
    let this = program.pointer("&tokio::sync::set_once::SetOnce<u32>", cell);
    let set_once_wait = "tokio::sync::set_once::{impl#3}::wait::{async_fn_env#0}<u32>";
    async_method(&mut program, set_once_wait, 16, 8, &[("self", 0, this)]);
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u8(0x1008, 3);
    memory.zero(0x2000, 48);
    memory.write_u64(0x2008 + 8, 2); // arrived
    memory.write_u64(0x2008 + 16, 1); // generation
    memory.write_u64(0x2000 + 40, 5); // n
    let node = decode(&debug, &memory, barrier_wait, 0x1000);
    let wait = BarrierWait {
        address: 0x2000,
        arrived: 2,
        generation: 1,
        needed: 5,
    };
    assert_eq!(facts(&node), &Detail::BarrierWait(wait));
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting at Barrier 0x2000 (2 of 5 arrived)")
    );
    memory.write_u64(0x1000, 0xdead_0000);
    assert_error(
        &decode(&debug, &memory, barrier_wait, 0x1000),
        "cannot read",
    );

    memory.write_u64(0x1000, 0x3000);
    memory.zero(0x3000, 32);
    for set in [false, true] {
        memory.write_u8(0x3000, u8::from(set));
        let node = decode(&debug, &memory, set_once_wait, 0x1000);
        let wait = SetOnceWait {
            address: 0x3000,
            set,
        };
        assert_eq!(facts(&node), &Detail::SetOnceWait(wait));
        assert_eq!(
            node.summary.as_deref(),
            Some("waiting for SetOnce 0x3000 to be set")
        );
    }
}

#[test]
fn cancelled_reads_the_tokens_node_borrowed_or_owned_and_tracker_wait_its_state_word() {
    let mut program = Program::new();
    let u8 = program.u8();
    let usize = program.usize();
    let inner = program.structure(
        "tokio_util::sync::cancellation_token::tree_node::Inner",
        16,
        &[("is_cancelled", 8, u8)],
    );
    let cell = program.structure(
        "core::cell::UnsafeCell<tokio_util::sync::cancellation_token::tree_node::Inner>",
        16,
        &[("value", 0, inner)],
    );
    let mutex = program.structure(
        "std::sync::poison::mutex::Mutex<tokio_util::sync::cancellation_token::tree_node::Inner>",
        24,
        &[("data", 8, cell)],
    );
    let node = program.structure(
        "tokio_util::sync::cancellation_token::tree_node::TreeNode",
        24,
        &[("inner", 0, mutex)],
    );
    let arc = program.arc(
        "tokio_util::sync::cancellation_token::tree_node::TreeNode",
        node,
        24,
    );
    let token = program.structure(
        "tokio_util::sync::cancellation_token::CancellationToken",
        8,
        &[("inner", 0, arc)],
    );
    let borrowed = program.pointer(
        "&tokio_util::sync::cancellation_token::CancellationToken",
        token,
    );
    let waiting = "tokio_util::sync::cancellation_token::WaitForCancellationFuture";
    program.structure(waiting, 16, &[("cancellation_token", 0, borrowed)]);
    let owned = "tokio_util::sync::cancellation_token::WaitForCancellationFutureOwned";
    program.structure(owned, 16, &[("cancellation_token", 0, token)]);
    let tracker = program.structure(
        "tokio_util::task::task_tracker::TaskTrackerInner",
        16,
        &[("state", 0, usize)],
    );
    let reference = program.pointer("&tokio_util::task::task_tracker::TaskTrackerInner", tracker);
    let option = program.niche_option(
        "&tokio_util::task::task_tracker::TaskTrackerInner",
        reference,
        8,
    );
    let tracker_wait = "tokio_util::task::task_tracker::TaskTrackerWaitFuture";
    program.structure(tracker_wait, 16, &[("inner", 0, option)]);
    let debug = program.load();

    let mut memory = TestMemory::default();
    memory.write_u64(0x1000, 0x2000); // the borrowed token
    memory.write_u64(0x2000, 0x3000); // its Arc
    memory.write_u64(0x1800, 0x3000); // the owned token's Arc
    memory.zero(0x3000, 16 + 24);
    let tree_node = 0x3010;
    for cancelled in [false, true] {
        memory.write_u8(tree_node + 8 + 8, u8::from(cancelled));
        for (future, at) in [(waiting, 0x1000), (owned, 0x1800)] {
            let node = decode(&debug, &memory, future, at);
            let wait = CancellationWait {
                address: tree_node,
                cancelled,
            };
            assert_eq!(facts(&node), &Detail::CancellationToken(wait), "{future}");
            let it_is = if cancelled { " (it is)" } else { "" };
            assert_eq!(
                node.summary.as_deref(),
                Some(
                    format!("waiting for CancellationToken {tree_node:#x} to be cancelled{it_is}")
                        .as_str()
                )
            );
        }
    }
    memory.write_u64(0x2000, 0xdead_0000);
    assert_error(&decode(&debug, &memory, waiting, 0x1000), "cannot read");

    memory.write_u64(0x4000, 0x5000);
    for (state, closed, tasks, said) in [
        (
            3 << 1,
            false,
            3,
            "3 tasks left, open: waits for close() too",
        ),
        (1 << 1 | 1, true, 1, "1 task left, closed"),
    ] {
        memory.write_u64(0x5000, state);
        let node = decode(&debug, &memory, tracker_wait, 0x4000);
        let wait = TrackerWait {
            address: 0x5000,
            closed,
            tasks,
        };
        assert_eq!(facts(&node), &Detail::TaskTrackerWait(wait));
        assert_eq!(
            node.summary.as_deref(),
            Some(format!("waiting for TaskTracker 0x5000 ({said})").as_str())
        );
    }
    // Woken and done: the future let its reference go.
    memory.write_u64(0x4000, 0);
    let node = decode(&debug, &memory, tracker_wait, 0x4000);
    assert_eq!(node.summary.as_deref(), Some("TaskTracker wait, done"));
}

#[test]
fn once_cell_get_or_init_names_the_cell_while_another_task_initializes_it() {
    let mut program = Program::new();
    let u8 = program.u8();
    let cell = program.structure(
        "tokio::sync::once_cell::OnceCell<u32>",
        48,
        &[("value_set", 40, u8)],
    );
    let this = program.pointer("&tokio::sync::once_cell::OnceCell<u32>", cell);
    let acquire = program.structure("tokio::sync::semaphore::Acquire", 8, &[]);
    let other = program.structure("app::Other", 8, &[]);
    let env = "tokio::sync::once_cell::{impl#5}::get_or_init::{async_fn_env#0}<u32, app::init>";
    async_method(
        &mut program,
        env,
        32,
        24,
        &[("self", 0, this), ("__awaitee", 8, acquire)],
    );
    let elsewhere =
        "tokio::sync::once_cell::{impl#5}::get_or_try_init::{async_fn_env#0}<u32, app::init>";
    async_method(
        &mut program,
        elsewhere,
        32,
        24,
        &[("self", 0, this), ("__awaitee", 8, other)],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 32);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u8(0x1000 + 24, 3);
    memory.zero(0x2000, 48);
    let node = decode(&debug, &memory, env, 0x1000);
    let wait = OnceCellWait {
        address: 0x2000,
        initialized: false,
    };
    assert_eq!(facts(&node), &Detail::OnceCellInit(wait));
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting for OnceCell 0x2000 to be initialized by another task")
    );
    assert_eq!(node.children.len(), 1, "the permit's wait below it");
    // Not yet started, or awaiting the user's own init future: an async fn like any other.
    memory.write_u8(0x1000 + 24, 0);
    assert!(decode(&debug, &memory, env, 0x1000).detail().is_none());
    memory.write_u8(0x1000 + 24, 3);
    assert!(decode(&debug, &memory, elsewhere, 0x1000)
        .detail()
        .is_none());
    // The cell itself unreadable.
    memory.write_u64(0x1000, 0xdead_0000);
    assert_error(&decode(&debug, &memory, env, 0x1000), "cannot read");
}

/// futures-util's `Then` and `AndThen` show the future their `Flatten` (or the newtype
/// `TryFlatten` around it) runs now, first or second, and its state once it has none;
/// `MaybeDone` its future while pending, else whether it is done or gone.
#[test]
fn then_and_then_and_maybe_done_show_the_future_they_run_or_their_state() {
    let mut program = Program::new();
    let pending = program.pending();
    let name = "core::future::pending::Pending<()>";
    let u64 = program.u64();
    let flatten_variants = |program: &mut Program, enum_name: &str| {
        program.rust_enum(
            enum_name,
            16,
            Some((0, u64)),
            &[
                Variant::new("First", Some(0), &[("f", 8, pending)]),
                Variant::new("Second", Some(1), &[("f", 8, pending)]),
                Variant::new("Empty", Some(2), &[]),
            ],
        )
    };
    let flatten = flatten_variants(
        &mut program,
        &format!("futures_util::future::future::flatten::Flatten<{name}, {name}>"),
    );
    let then = format!("futures_util::future::future::Then<{name}, {name}, ()>");
    program.structure(&then, 16, &[("inner", 0, flatten)]);
    let try_flatten_enum = flatten_variants(
        &mut program,
        &format!("futures_util::future::try_future::try_flatten::TryFlatten<{name}, {name}>"),
    );
    let try_flatten = program.structure(
        &format!("futures_util::future::try_future::TryFlatten<{name}, {name}>"),
        16,
        &[("inner", 0, try_flatten_enum)],
    );
    let and_then = format!("futures_util::future::try_future::AndThen<{name}, {name}, ()>");
    program.structure(&and_then, 16, &[("inner", 0, try_flatten)]);
    let maybe_done = format!("futures_util::future::maybe_done::MaybeDone<{name}>");
    program.rust_enum(
        &maybe_done,
        16,
        Some((0, u64)),
        &[
            Variant::new("Future", Some(0), &[("__0", 8, pending)]),
            Variant::new("Done", Some(1), &[("__0", 8, u64)]),
            Variant::new("Gone", Some(2), &[]),
        ],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    for (discriminant, what) in [(0, "first"), (1, "second")] {
        memory.write_u64(0x1000, discriminant);
        for combinator in [&then, &and_then] {
            let node = decode(&debug, &memory, combinator, 0x1000);
            assert_eq!(
                (node.kind, node.type_name()),
                (NodeKind::Pending, name),
                "{combinator}, {what} future"
            );
        }
    }
    memory.write_u64(0x1000, 2);
    let empty = decode(&debug, &memory, &then, 0x1000);
    assert_eq!(
        facts(&empty),
        &Detail::Future(WrapperState {
            state: "empty".into()
        })
    );
    assert_eq!(empty.summary.as_deref(), Some("Flatten (empty)"));
    let empty = decode(&debug, &memory, &and_then, 0x1000);
    assert_eq!(empty.summary.as_deref(), Some("TryFlatten (empty)"));

    memory.write_u64(0x1000, 0);
    assert_eq!(
        decode(&debug, &memory, &maybe_done, 0x1000).kind,
        NodeKind::Pending
    );
    for (discriminant, state) in [(1, "done"), (2, "gone")] {
        memory.write_u64(0x1000, discriminant);
        let node = decode(&debug, &memory, &maybe_done, 0x1000);
        assert_eq!(
            facts(&node),
            &Detail::Future(WrapperState {
                state: state.into()
            })
        );
        assert_eq!(
            node.summary.as_deref(),
            Some(&*format!("MaybeDone ({state})"))
        );
    }
    // A discriminant no variant has: one error, not a guess.
    memory.write_u64(0x1000, 7);
    assert!(decode(&debug, &memory, &then, 0x1000).error().is_some());
}

/// A `poll_fn` the program wrote is a node naming its closure, with the futures the
/// closure captures (through references, `_ref__` names shortened) as children and the
/// rest left out; a task tracker's `TrackedFuture` is the future it tracks.
#[test]
fn a_poll_fn_shows_the_futures_its_closure_captures_and_a_tracked_future_its_own() {
    let mut program = Program::new();
    let pending = program.pending();
    let name = "core::future::pending::Pending<()>";
    let u64 = program.u64();
    let pending_ref = program.reference(name, pending);
    let closure = "app::serve::{async_fn#0}::{closure_env#0}";
    let closure_ty = program.structure(
        closure,
        24,
        &[
            ("_ref__shutdown", 0, pending_ref),
            ("polls", 8, u64),
            ("idle", 16, pending),
        ],
    );
    let poll_fn = format!("core::future::poll_fn::PollFn<{closure}>");
    program.structure(&poll_fn, 24, &[("f", 0, closure_ty)]);
    let tracked = format!("tokio_util::task::task_tracker::TrackedFuture<{name}>");
    program.structure(&tracked, 16, &[("future", 0, pending), ("token", 8, u64)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 24);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u64(0x1008, 41);
    memory.zero(0x2000, 8);

    let node = decode(&debug, &memory, &poll_fn, 0x1000);
    assert_eq!(node.kind, NodeKind::PollFn);
    assert_eq!(
        facts(&node),
        &Detail::PollFn(PollFnClosure {
            closure: Some("app::serve::{closure#0}".into())
        })
    );
    // No DWARF declaration of the closure here: no line to give.
    assert_eq!(node.summary.as_deref(), Some("poll_fn"));
    let children: Vec<(NodeKind, &str, u64)> = node
        .children
        .iter()
        .map(|child| (child.kind, child.type_name(), child.address))
        .collect();
    assert_eq!(
        children,
        [
            (NodeKind::Pending, name, 0x2000),
            (NodeKind::Pending, name, 0x1010)
        ]
    );
    assert_eq!(
        node.children
            .iter()
            .map(|child| child.via())
            .collect::<Vec<_>>(),
        [Some("shutdown"), Some("idle")]
    );

    let node = decode(&debug, &memory, &tracked, 0x1000);
    assert_eq!((node.kind, node.type_name()), (NodeKind::Pending, name));
}

/// A socket a hand-written future keeps and polls itself: its fd, and the interest its
/// registration's waiters say (the reader and writer wakers tokio keeps, and the list).
#[test]
fn a_socket_kept_in_a_field_names_its_fd_and_the_interest_registered_on_it() {
    let mut program = Program::new();
    socket_types(&mut program, "TcpStream");
    let waker = program.structure("core::task::wake::Waker", 16, &[]);
    let usize = program.usize();
    let interest = program.structure("tokio::io::interest::Interest", 8, &[("__0", 0, usize)]);
    let waiter = program.structure(
        "tokio::runtime::io::scheduled_io::Waiter",
        48,
        &[("interest", 32, interest)],
    );
    let pointers = program.pointers("tokio::runtime::io::scheduled_io::Waiter", waiter);
    program.fields(waiter, &[("pointers", 0, pointers)]);
    let list = program.linked_list("tokio::runtime::io::scheduled_io::Waiter", waiter);
    let option = program.option("core::task::wake::Waker", waker, 8, 24);
    let waiters = program.structure(
        "tokio::runtime::io::scheduled_io::Waiters",
        64,
        &[
            ("list", 0, list),
            ("reader", 16, option),
            ("writer", 40, option),
        ],
    );
    let locked = program.tokio_mutex(
        "tokio::runtime::io::scheduled_io::Waiters",
        waiters,
        64,
        true,
    );
    let scheduled = program.structure(
        "tokio::runtime::io::scheduled_io::ScheduledIo",
        72,
        &[("waiters", 0, locked)],
    );
    let arc = program.arc(
        "tokio::runtime::io::scheduled_io::ScheduledIo",
        scheduled,
        72,
    );
    let registration = program.structure(
        "tokio::runtime::io::registration::Registration",
        8,
        &[("shared", 0, arc)],
    );
    // The registration beside the io (socket_types leaves the first 8 bytes free).
    let evented = program
        .find("tokio::io::poll_evented::PollEvented<mio::net::tcp::stream::TcpStream>")
        .unwrap();
    program.fields(evented, &[("registration", 0, registration)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    write_socket(&mut memory, 0x2000, 7);
    memory.write_u64(0x2000, 0x3000 - 16);
    // ScheduledIo at 0x3000: its Waiters at +8 (the lock's data); reader Some, writer None.
    memory.zero(0x3000, 72);
    let waiters_at = 0x3008;
    memory.write_u64(waiters_at + 16, 1);
    let held = decode(&debug, &memory, TCP_STREAM, 0x2000);
    let wait = |interest| IoWait {
        buffered: None,
        fd: Some(7),
        fd_kind: None,
        interest,
        operation: Some("poll".into()),
    };
    assert_eq!(facts(&held), &Detail::IoReadiness(wait(vec!["read"])));
    assert_eq!(
        held.summary.as_deref(),
        Some("poll on fd 7, waiting for read")
    );
    memory.write_u64(waiters_at + 40, 1);
    let held = decode(&debug, &memory, TCP_STREAM, 0x2000);
    assert_eq!(
        facts(&held),
        &Detail::IoReadiness(wait(vec!["read", "write"]))
    );
    // Nobody registered: the fd, and no interest.
    memory.write_u64(waiters_at + 16, 0);
    memory.write_u64(waiters_at + 40, 0);
    let held = decode(&debug, &memory, TCP_STREAM, 0x2000);
    assert_eq!(facts(&held), &Detail::IoReadiness(wait(Vec::new())));
    // A waiter in the list (a `readable()`/`writable()` call) for writing.
    memory.zero(0x4000, 48);
    memory.write_u64(0x4000 + 32, 0b10);
    memory.write_u64(waiters_at, 0x4000);
    memory.write_u64(waiters_at + 8, 0x4000);
    let held = decode(&debug, &memory, TCP_STREAM, 0x2000);
    assert_eq!(facts(&held), &Detail::IoReadiness(wait(vec!["write"])));
}

/// tokio's `CopyBuffer{read_done@0, need_flush@1, pos@8, cap@16, amt@24}`, 48 bytes.
fn copy_buffer(program: &mut Program) -> Ty {
    let u64 = program.u64();
    let bool = program.bool();
    program.structure(
        "tokio::io::util::copy::CopyBuffer",
        48,
        &[
            ("read_done", 0, bool),
            ("need_flush", 1, bool),
            ("pos", 8, u64),
            ("cap", 16, u64),
            ("amt", 24, u64),
        ],
    )
}

/// `io::copy` says both fds, what it copied and holds, and the side it waits for;
/// `copy_buf` reads what its reader's own buffer holds; `read_line` the bytes appended
/// so far; tokio-util's `ReaderStream` its reader, or that it ended; futures' `Send` and
/// `Feed` are the sink they feed.
#[test]
fn copies_read_line_a_reader_stream_and_a_sink_feed_name_their_fds_and_bytes() {
    let mut program = Program::new();
    let (stream, socket) = tcp_stream(&mut program);
    let stream_name = TCP_STREAM;
    let u64 = program.u64();
    let buffer = copy_buffer(&mut program);
    let copy = format!("tokio::io::util::copy::Copy<{stream_name}, {stream_name}>");
    program.structure(
        &copy,
        64,
        &[
            ("reader", 0, socket),
            ("writer", 8, socket),
            ("buf", 16, buffer),
        ],
    );
    // A BufReader around the stream: bytes pos..cap unread.
    let buf_reader_name = format!("tokio::io::util::buf_reader::BufReader<{stream_name}>");
    let buf_reader = program.structure(
        &buf_reader_name,
        48,
        &[("inner", 0, stream), ("pos", 24, u64), ("cap", 32, u64)],
    );
    let buf_reader_ref = program.pointer(&format!("&mut {buf_reader_name}"), buf_reader);
    let copy_buf = format!("tokio::io::util::copy_buf::CopyBuf<{buf_reader_name}, {stream_name}>");
    program.structure(
        &copy_buf,
        24,
        &[
            ("reader", 0, buf_reader_ref),
            ("writer", 8, socket),
            ("amt", 16, u64),
        ],
    );
    let read_line = format!("tokio::io::util::read_line::ReadLine<{stream_name}>");
    program.structure(&read_line, 16, &[("reader", 0, socket), ("read", 8, u64)]);
    let option = program.option(stream_name, stream, 8, 32);
    let reader_stream = format!("tokio_util::io::reader_stream::ReaderStream<{stream_name}>");
    program.structure(&reader_stream, 32, &[("reader", 0, option)]);
    let pending = program.pending();
    let pending_name = "core::future::pending::Pending<()>";
    let sink = program.pointer(&format!("&mut {pending_name}"), pending);
    let feed = format!("futures_util::sink::feed::Feed<{pending_name}, u64>");
    let feed_ty = program.structure(&feed, 16, &[("sink", 0, sink), ("item", 8, u64)]);
    let send = format!("futures_util::sink::send::Send<{pending_name}, u64>");
    program.structure(&send, 16, &[("feed", 0, feed_ty)]);
    let debug = program.load();

    let mut memory = TestMemory::default();
    write_socket(&mut memory, 0x2000, 9);
    write_socket(&mut memory, 0x2100, 12);
    memory.zero(0x1000, 64);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u64(0x1008, 0x2100);
    memory.write_u64(0x1010 + 8, 100); // pos
    memory.write_u64(0x1010 + 16, 164); // cap: 64 held
    memory.write_u64(0x1010 + 24, 4096); // amt
    let node = decode(&debug, &memory, &copy, 0x1000);
    let progress = |buffered, waiting| CopyProgress {
        buffered,
        copied: 4096,
        reader_fd: Some(9),
        waiting,
        writer_fd: Some(12),
    };
    assert_eq!(facts(&node), &Detail::IoCopy(progress(64, CopyWait::Write)));
    assert_eq!(
        node.summary.as_deref(),
        Some("copy fd 9 → fd 12: 4096 bytes copied (64 held), waiting to write fd 12")
    );
    // All written: it reads; the reader ended: it flushes.
    memory.write_u64(0x1010 + 8, 164);
    assert_eq!(
        facts(&decode(&debug, &memory, &copy, 0x1000)),
        &Detail::IoCopy(progress(0, CopyWait::Read))
    );
    memory.write_u8(0x1010, 1);
    assert_eq!(
        facts(&decode(&debug, &memory, &copy, 0x1000)),
        &Detail::IoCopy(progress(0, CopyWait::Flush))
    );
    // A position past the end is damage, said once.
    memory.write_u64(0x1010 + 8, 200);
    assert_error(&decode(&debug, &memory, &copy, 0x1000), "past its end");

    // copy_buf out of a BufReader on fd 9 holding 10 unread bytes.
    memory.zero(0x3000, 48);
    memory.write_u64(0x3000 + 8, 1);
    memory.write_u32(0x3000 + 16, 9);
    memory.write_u64(0x3000 + 24, 6);
    memory.write_u64(0x3000 + 32, 16);
    memory.zero(0x1800, 24);
    memory.write_u64(0x1800, 0x3000);
    memory.write_u64(0x1808, 0x2100);
    memory.write_u64(0x1810, 77);
    let node = decode(&debug, &memory, &copy_buf, 0x1800);
    assert_eq!(
        facts(&node),
        &Detail::IoCopy(CopyProgress {
            buffered: 10,
            copied: 77,
            reader_fd: Some(9),
            waiting: CopyWait::Write,
            writer_fd: Some(12),
        })
    );
    assert!(node
        .summary
        .as_deref()
        .unwrap()
        .starts_with("copy_buf fd 9 → fd 12: 77 bytes copied (10 held)"));

    // read_line, 5 bytes of its line read.
    memory.zero(0x1c00, 16);
    memory.write_u64(0x1c00, 0x2000);
    memory.write_u64(0x1c08, 5);
    let node = decode(&debug, &memory, &read_line, 0x1c00);
    assert_eq!(
        facts(&node),
        &Detail::IoReadiness(IoWait {
            buffered: Some(5),
            fd: Some(9),
            fd_kind: None,
            interest: vec!["read"],
            operation: Some("read_line".into()),
        })
    );

    // ReaderStream over the stream at 0x4000 (its Option's tag at +0, the stream at +8).
    memory.zero(0x4000, 32);
    memory.write_u64(0x4000, 1);
    memory.write_u64(0x4000 + 8 + 8, 1);
    memory.write_u32(0x4000 + 8 + 16, 14);
    let node = decode(&debug, &memory, &reader_stream, 0x4000);
    let Detail::IoReadiness(wait) = facts(&node) else {
        panic!("{node:?}")
    };
    assert_eq!(
        (wait.fd, wait.operation.as_deref(), wait.interest.clone()),
        (Some(14), Some("read"), vec!["read"])
    );
    memory.write_u64(0x4000, 0);
    let ended = decode(&debug, &memory, &reader_stream, 0x4000);
    assert_eq!(
        ended.summary.as_deref(),
        Some("ReaderStream at its end (its reader is gone)")
    );

    // Send and Feed: the sink (a pending future here) they feed.
    memory.zero(0x5000, 16);
    memory.write_u64(0x5000, 0x5800);
    memory.zero(0x5800, 8);
    for sink_future in [&send, &feed] {
        let node = decode(&debug, &memory, sink_future, 0x5000);
        assert_eq!(
            (node.kind, node.type_name(), node.address),
            (NodeKind::Pending, pending_name, 0x5800),
            "{sink_future}"
        );
    }
}

/// `Child::wait()` names the pid its reaper waits for (SIGCHLD's reaper here), says when
/// the child has exited already (`FusedChild::Done`) and when the reaper holds no child.
#[test]
fn child_wait_names_the_pid_or_says_the_child_exited() {
    let mut program = Program::new();
    let i32 = program.base("i32", 4);
    let u64 = program.u64();
    let process = program.structure(
        "std::sys::process::unix::unix::Process",
        4,
        &[("pid", 0, i32)],
    );
    let std_child = program.structure("std::process::Child", 4, &[("handle", 0, process)]);
    let option = program.option("std::process::Child", std_child, 8, 16);
    let reaper = program.structure(
        "tokio::process::imp::reap::Reaper<std::process::Child>",
        16,
        &[("inner", 0, option)],
    );
    let imp_child = program.rust_enum(
        "tokio::process::imp::Child",
        24,
        Some((0, u64)),
        &[
            Variant::new("SignalReaper", Some(0), &[("__0", 8, reaper)]),
            Variant::new("PidfdReaper", Some(1), &[]),
        ],
    );
    let guard = program.structure(
        "tokio::process::ChildDropGuard<tokio::process::imp::Child>",
        24,
        &[("inner", 0, imp_child)],
    );
    let fused = program.rust_enum(
        "tokio::process::FusedChild",
        32,
        Some((0, u64)),
        &[
            Variant::new("Child", Some(0), &[("__0", 8, guard)]),
            Variant::new("Done", Some(1), &[("__0", 8, u64)]),
        ],
    );
    let child = program.structure("tokio::process::Child", 32, &[("child", 0, fused)]);
    let this = program.pointer("&mut tokio::process::Child", child);
    let wait = "tokio::process::{impl#4}::wait::{async_fn_env#0}";
    async_method(&mut program, wait, 16, 8, &[("self", 0, this)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u8(0x1008, 3);
    memory.zero(0x2000, 32);
    memory.write_u64(0x2010, 1); // the reaper's Option: Some
    memory.write_u32(0x2018, 4242);
    let node = decode(&debug, &memory, wait, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::ChildWait(ChildWait {
            pid: Some(4242),
            pidfd: None
        })
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting for process 4242 to exit (SIGCHLD)")
    );
    // The reaper has given its child up.
    memory.write_u64(0x2010, 0);
    let node = decode(&debug, &memory, wait, 0x1000);
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting for a child process (its pid is gone)")
    );
    // Exited: its status is in, `wait` returns it when next polled.
    memory.write_u64(0x2000, 1);
    let node = decode(&debug, &memory, wait, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::ChildWait(ChildWait {
            pid: None,
            pidfd: None
        })
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting for a child process that has exited")
    );
}

/// tokio-util's `Framed` reads a frame while nothing waits to be written, else writes
/// (the side with bytes to write first); `FramedRead` only reads, `FramedWrite` only
/// writes; each with the bytes its buffer holds.
#[test]
fn framed_codecs_read_or_write_frames_with_the_bytes_they_hold() {
    let mut program = Program::new();
    let stream = socket_types(&mut program, "TcpStream");
    let stream_name = TCP_STREAM;
    let usize = program.usize();
    let bytes = program.structure("bytes::bytes_mut::BytesMut", 32, &[("len", 8, usize)]);
    let read_frame = program.structure(
        "tokio_util::codec::framed_impl::ReadFrame",
        40,
        &[("buffer", 0, bytes)],
    );
    let write_frame = program.structure(
        "tokio_util::codec::framed_impl::WriteFrame",
        40,
        &[("buffer", 0, bytes)],
    );
    let frames = program.structure(
        "tokio_util::codec::framed_impl::RWFrames",
        80,
        &[("read", 0, read_frame), ("write", 40, write_frame)],
    );
    let codec = "tokio_util::codec::lines_codec::LinesCodec";
    let framed_type = |program: &mut Program, outer: &str, state: Ty, state_name: &str| {
        let inner = program.structure(
            &format!(
                "tokio_util::codec::framed_impl::FramedImpl<{stream_name}, {codec}, {state_name}>"
            ),
            104,
            &[("inner", 0, stream), ("state", 24, state)],
        );
        let name = format!("{outer}<{stream_name}, {codec}>");
        program.structure(&name, 104, &[("inner", 0, inner)]);
        name
    };
    let framed = framed_type(
        &mut program,
        "tokio_util::codec::framed::Framed",
        frames,
        "tokio_util::codec::framed_impl::RWFrames",
    );
    let framed_read = framed_type(
        &mut program,
        "tokio_util::codec::framed_read::FramedRead",
        read_frame,
        "tokio_util::codec::framed_impl::ReadFrame",
    );
    let framed_write = framed_type(
        &mut program,
        "tokio_util::codec::framed_write::FramedWrite",
        write_frame,
        "tokio_util::codec::framed_impl::WriteFrame",
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 104);
    write_socket(&mut memory, 0x1000, 9);
    // RWFrames at +24: the read buffer's len at +32, the write buffer's at +72.
    memory.write_u64(0x1000 + 24 + 8, 3);
    let wait = |operation: &str, buffered, interest| IoWait {
        buffered: Some(buffered),
        fd: Some(9),
        fd_kind: None,
        interest: vec![interest],
        operation: Some(operation.into()),
    };
    let node = decode(&debug, &memory, &framed, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::IoReadiness(wait("read frame", 3, "read"))
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("read frame on fd 9, 3 bytes buffered, waiting for read")
    );
    memory.write_u64(0x1000 + 24 + 48, 10);
    let node = decode(&debug, &memory, &framed, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::IoReadiness(wait("write frames", 10, "write"))
    );
    // The halves alone: their one buffer at +24 (len at +32).
    assert_eq!(
        facts(&decode(&debug, &memory, &framed_read, 0x1000)),
        &Detail::IoReadiness(wait("read frame", 3, "read"))
    );
    assert_eq!(
        facts(&decode(&debug, &memory, &framed_write, 0x1000)),
        &Detail::IoReadiness(wait("write frames", 3, "write"))
    );
}

/// `copy_bidirectional` says both fds and each direction's transfer: running (bytes
/// copied and held, the side it waits for), shutting down its writer, or done; not yet
/// started, it has no transfer to show.
#[test]
fn copy_bidirectional_says_each_directions_transfer() {
    let mut program = Program::new();
    let (_, socket) = tcp_stream(&mut program);
    let stream_name = TCP_STREAM;
    let u64 = program.u64();
    let buffer = copy_buffer(&mut program);
    let transfer = program.rust_enum(
        "tokio::io::util::copy_bidirectional::TransferState",
        56,
        Some((0, u64)),
        &[
            Variant::new("Running", Some(0), &[("__0", 8, buffer)]),
            Variant::new("ShuttingDown", Some(1), &[("__0", 8, u64)]),
            Variant::new("Done", Some(2), &[("__0", 8, u64)]),
        ],
    );
    let env = format!(
        "tokio::io::util::copy_bidirectional::copy_bidirectional_impl::{{async_fn_env#0}}<{stream_name}, {stream_name}>"
    );
    async_method(
        &mut program,
        &env,
        136,
        128,
        &[
            ("a", 0, socket),
            ("b", 8, socket),
            ("a_to_b", 16, transfer),
            ("b_to_a", 72, transfer),
        ],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    write_socket(&mut memory, 0x2000, 9);
    write_socket(&mut memory, 0x2100, 12);
    memory.zero(0x1000, 136);
    memory.write_u64(0x1000, 0x2000);
    memory.write_u64(0x1008, 0x2100);
    memory.write_u8(0x1000 + 128, 3);
    // a→b running: 10 bytes read, 4 written of them, 100 copied before.
    memory.write_u64(0x1010 + 8 + 8, 4);
    memory.write_u64(0x1010 + 8 + 16, 10);
    memory.write_u64(0x1010 + 8 + 24, 100);
    // b→a shutting down after 7 bytes.
    memory.write_u64(0x1048, 1);
    memory.write_u64(0x1048 + 8, 7);
    let node = decode(&debug, &memory, &env, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::IoCopyBidirectional(CopyBidirectional {
            a_fd: Some(9),
            a_to_b: Transfer {
                buffered: 6,
                copied: 100,
                waiting: CopyWait::Write,
            },
            b_fd: Some(12),
            b_to_a: Transfer {
                buffered: 0,
                copied: 7,
                waiting: CopyWait::Shutdown,
            },
        })
    );
    assert_eq!(
        node.summary.as_deref(),
        Some(
            "copy_bidirectional fd 9 ⇄ fd 12: a→b 100 bytes copied (6 held), waiting to write fd 12; \
             b→a 7 bytes copied, shutting down fd 9"
        )
    );
    memory.write_u64(0x1048, 2);
    let Detail::IoCopyBidirectional(both) = facts(&decode(&debug, &memory, &env, 0x1000)).clone()
    else {
        panic!("not a bidirectional copy")
    };
    assert_eq!(both.b_to_a.waiting, CopyWait::Done);
    // Not started: no transfer yet, one error.
    memory.write_u8(0x1000 + 128, 0);
    assert_error(&decode(&debug, &memory, &env, 0x1000), "is not suspended");
}

/// h2's client `ResponseFuture` names the stream whose response it waits for.
#[test]
fn an_http2_response_names_its_stream() {
    let mut program = Program::new();
    let u32 = program.u32();
    let stream_id = program.structure("h2::frame::stream_id::StreamId", 4, &[("__0", 0, u32)]);
    let key = program.structure(
        "h2::proto::streams::store::Key",
        8,
        &[("stream_id", 4, stream_id)],
    );
    let stream_ref = program.structure(
        "h2::proto::streams::streams::OpaqueStreamRef",
        16,
        &[("key", 8, key)],
    );
    program.structure(
        "h2::client::ResponseFuture",
        16,
        &[("inner", 0, stream_ref)],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u32(0x1000 + 8 + 4, 7);
    let node = decode(&debug, &memory, "h2::client::ResponseFuture", 0x1000);
    assert_eq!(node.kind, NodeKind::Http2Response);
    assert_eq!(
        facts(&node),
        &Detail::Http2Response(Http2Stream { stream_id: 7 })
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting for the HTTP/2 response on stream 7")
    );
}

/// `Signal::recv()` (and a `Signal` kept in a field) names its signal: the slot of
/// tokio's registry (the static GLOBALS, by its symbol) whose sender shares the channel
/// of the receiver its boxed future holds; a channel no slot shares is said so.
#[test]
fn a_signal_is_named_by_the_registry_slot_that_shares_its_channel() {
    let mut program = Program::new();
    let usize = program.usize();
    let shared = program.structure("tokio::sync::watch::Shared<()>", 16, &[("state", 0, usize)]);
    let arc = program.arc("tokio::sync::watch::Shared<()>", shared, 16);
    let receiver = program.structure(
        "tokio::sync::watch::Receiver<()>",
        16,
        &[("shared", 0, arc), ("version", 8, usize)],
    );
    let env = "tokio::signal::make_future::{async_fn_env#0}";
    let env_ty = async_method(&mut program, env, 24, 16, &[("rx", 0, receiver)]);
    program.vtable(env, env_ty, "core::future::future::Future", 0x50_0000);
    let dyn_name = "(dyn core::future::future::Future<Output=tokio::sync::watch::Receiver<()>> + core::marker::Send)";
    let boxed_name = format!("alloc::boxed::Box<{dyn_name}, alloc::alloc::Global>");
    let boxed = program.boxed_dyn(dyn_name);
    let pinned = program.pin(&boxed_name, boxed, 16);
    let reusable = program.structure(
        "tokio::signal::reusable_box::ReusableBoxFuture<tokio::sync::watch::Receiver<()>>",
        16,
        &[("boxed", 0, pinned)],
    );
    let rx_future = program.structure("tokio::signal::RxFuture", 16, &[("inner", 0, reusable)]);
    let signal = program.structure(
        "tokio::signal::unix::Signal",
        16,
        &[("inner", 0, rx_future)],
    );
    let this = program.pointer("&mut tokio::signal::unix::Signal", signal);
    let recv = "tokio::signal::unix::{impl#3}::recv::{async_fn_env#0}";
    async_method(&mut program, recv, 16, 8, &[("self", 0, this)]);
    // The registry: GLOBALS, a OnceLock<Globals{registry: Registry{storage: OsStorage(Box<[SignalInfo]>)}}>.
    let sender = program.structure("tokio::sync::watch::Sender<()>", 8, &[("shared", 0, arc)]);
    let event_info = program.structure(
        "tokio::signal::registry::EventInfo",
        8,
        &[("tx", 0, sender)],
    );
    let slot = program.structure(
        "tokio::signal::unix::SignalInfo",
        8,
        &[("event_info", 0, event_info)],
    );
    let slots = program.boxed_slice("tokio::signal::unix::SignalInfo", slot);
    let storage = program.structure("tokio::signal::unix::OsStorage", 16, &[("__0", 0, slots)]);
    let registry = program.structure(
        "tokio::signal::registry::Registry<tokio::signal::unix::OsStorage>",
        16,
        &[("storage", 0, storage)],
    );
    let globals = program.structure(
        "tokio::signal::registry::Globals",
        16,
        &[("registry", 0, registry)],
    );
    let uninit = program.structure(
        "core::mem::maybe_uninit::MaybeUninit<tokio::signal::registry::Globals>",
        16,
        &[("value", 0, globals)],
    );
    let cell = program.structure(
        "core::cell::UnsafeCell<core::mem::maybe_uninit::MaybeUninit<tokio::signal::registry::Globals>>",
        16,
        &[("value", 0, uninit)],
    );
    program.structure(
        "std::sync::once_lock::OnceLock<tokio::signal::registry::Globals>",
        24,
        &[("value", 0, cell)],
    );
    program.symbol(
        "_ZN5tokio6signal8registry7globals7GLOBALS17h0123456789abcdefE",
        0x7000,
    );
    let debug = program.load();

    let mut memory = TestMemory::default();
    // recv()'s env at 0x1000 on the Signal at 0x1800, whose boxed future is at 0x3000.
    memory.zero(0x1000, 16);
    memory.write_u64(0x1000, 0x1800);
    memory.write_u8(0x1008, 3);
    memory.write_u64(0x1800, 0x3000);
    memory.write_u64(0x1808, 0x50_0000);
    memory.zero(0x3000, 24);
    memory.write_u64(0x3000, 0x4000); // rx.shared: the channel's data at 0x4010
    memory.write_u8(0x3010, 3);
    memory.zero(0x4000, 32);
    // Three slots, for signals 1, 2 and 3: the second shares the channel.
    memory.write_u64(0x7000, 0x8000);
    memory.write_u64(0x7008, 3);
    memory.write_u64(0x8000, 0x5000);
    memory.write_u64(0x8008, 0x4000);
    memory.write_u64(0x8010, 0x5100);
    let sigint = SignalWait {
        name: Some("SIGINT".into()),
        signal: Some(2),
    };
    let node = decode(&debug, &memory, recv, 0x1000);
    assert_eq!(facts(&node), &Detail::SignalRecv(sigint.clone()));
    assert_eq!(node.summary.as_deref(), Some("waiting for signal SIGINT"));
    let held = decode(&debug, &memory, "tokio::signal::unix::Signal", 0x1800);
    assert_eq!(facts(&held), &Detail::SignalRecv(sigint));
    // No slot shares it: the signal cannot be named, and the node says so.
    memory.write_u64(0x8008, 0x5200);
    let node = decode(&debug, &memory, recv, 0x1000);
    assert_eq!(
        facts(&node),
        &Detail::SignalRecv(SignalWait {
            name: None,
            signal: None
        })
    );
    assert_eq!(
        node.summary.as_deref(),
        Some("waiting for a signal (which one cannot be read)")
    );
}

/// The decoder tests, run again by `every_registry_entry_is_decoded_by_a_test`.
const DECODER_TESTS: &[fn()] = &[
    a_signal_is_named_by_the_registry_slot_that_shares_its_channel,
    an_http2_response_names_its_stream,
    copy_bidirectional_says_each_directions_transfer,
    framed_codecs_read_or_write_frames_with_the_bytes_they_hold,
    child_wait_names_the_pid_or_says_the_child_exited,
    copies_read_line_a_reader_stream_and_a_sink_feed_name_their_fds_and_bytes,
    a_socket_kept_in_a_field_names_its_fd_and_the_interest_registered_on_it,
    a_poll_fn_shows_the_futures_its_closure_captures_and_a_tracked_future_its_own,
    then_and_then_and_maybe_done_show_the_future_they_run_or_their_state,
    mutex_lock_names_the_mutex_its_permits_and_waiters_with_either_tokio_mutex,
    rwlock_read_and_write_need_one_permit_and_every_permit,
    a_lock_waiter_reads_the_permits_tokio_assigned_it_from_its_acquire_future,
    guards_and_permits_keep_their_permits_and_see_their_locks_state,
    semaphore_acquire_many_needs_its_argument_and_a_bare_acquire_its_count,
    notified_counts_the_waiters_and_sees_a_stored_permit,
    mpsc_recv_counts_what_is_queued_in_either_kind_of_channel,
    oneshot_recv_says_whether_a_value_was_sent_or_the_sender_dropped,
    watch_changed_compares_the_versions_and_broadcast_recv_its_position_with_the_tail,
    sleep_reads_its_deadline_in_each_version_and_the_time_left_when_live,
    an_interval_tick_is_its_sleep_with_the_period_and_a_timeout_its_deadline_over_its_future,
    io_waits_name_the_fd_of_a_listener_a_stream_and_a_listener_stream,
    an_io_type_the_table_lacks_is_searched_for_its_fd_and_marked_so,
    futures_unordered_and_ordered_list_their_futures_as_pending_branches,
    join_all_select_all_and_select_show_each_future_with_its_status,
    a_stream_map_names_its_streams_by_key_and_a_generator_shows_its_block_until_done,
    trivial_futures_say_what_they_are,
    a_join_handle_names_its_task_and_a_join_set_lists_its_handles,
    wrappers_show_the_future_they_wrap,
    a_shared_future_shows_the_future_its_clones_poll,
    hickorys_udp_client_stream_is_ready_whenever_polled,
    an_instrumented_future_names_its_span,
    a_boxed_future_is_its_concrete_type_through_its_vtable,
    http_connections_say_what_they_do_and_a_server_shows_its_handler,
    a_tower_buffer_request_names_its_channel_and_its_worker_the_one_it_holds,
    a_grpc_stream_says_whether_it_waits_for_a_message_or_reads_one,
    a_local_set_awaited_names_its_shared_state_and_is_noted,
    futures_mpsc_recv_reads_the_state_word_and_an_ended_channel,
    futures_oneshot_recv_tells_a_sent_value_from_a_dropped_sender,
    flume_recv_reads_its_channel_through_an_owned_or_a_borrowed_receiver,
    barrier_wait_counts_who_has_arrived_and_set_once_wait_sees_whether_it_is_set,
    cancelled_reads_the_tokens_node_borrowed_or_owned_and_tracker_wait_its_state_word,
    once_cell_get_or_init_names_the_cell_while_another_task_initializes_it,
];

/// The decoder each entry of the registry's table names (`module::function`), read from
/// its source: entries that share one are covered by a test of any of them.
fn registry_decoders() -> Vec<String> {
    let source = include_str!("../registry.rs");
    let table = &source[source.find("const TABLE").expect("the table")..];
    let table = &table[..table.find("\n];").expect("its end")];
    // The second element of each `(pattern, decoder),`: after a comma (a pattern's own
    // constant follows a parenthesis).
    let entry_end = regex::Regex::new(r",\s*(\w+::\w+)\s*,?\s*\),").expect("a regex");
    entry_end
        .captures_iter(table)
        .map(|found| found[1].to_string())
        .collect()
}

/// Each decoder the registry's table names is reached by one of the tests above through
/// one of its entries.
#[test]
fn every_registry_decoder_is_reached_by_a_test() {
    crate::future::registry::USED.with(|used| used.borrow_mut().clear());
    for test in DECODER_TESTS {
        test();
    }
    let used = crate::future::registry::USED.with(|used| used.borrow().clone());
    let decoders = registry_decoders();
    assert_eq!(decoders.len(), crate::future::registry::entries().len());
    let reached: rustc_hash::FxHashSet<&str> =
        used.iter().map(|&entry| decoders[entry].as_str()).collect();
    let mut untested: Vec<&str> = decoders
        .iter()
        .map(String::as_str)
        .filter(|decoder| !reached.contains(decoder))
        .collect();
    untested.sort_unstable();
    untested.dedup();
    assert!(
        untested.is_empty(),
        "registry decoders no test reaches: {untested:#?}"
    );
}
