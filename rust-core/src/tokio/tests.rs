//! The tokio readers over programs of a few types (`crate::testing`): a runtime's task
//! lists and each task's header and future, a worker's queues, the inject queue, and a
//! thread's `CONTEXT`; each as tokio leaves it, and damaged.

use super::context::{find_context_variable, read_thread_context};
use super::tasks::{ShardHelper, TaskFuture, TaskReader, TASKS_FOR_TWO_WALKERS};
use super::workers::{
    current_thread_queue, inject_locked, inject_queue, shutting_down, worker_core,
};
use crate::budget::{Budget, Limits, Metered};
use crate::dwarf::TlsSegment;
use crate::error::{Error, ErrorKind};
use crate::model::TaskState;
use crate::testing::{die_of, Program, TaskTypes, TestMemory, Ty, Variant, TASK_STAGE};
use crate::value::Target;
use std::sync::atomic::{AtomicBool, Ordering};

const HANDLE: &str = "tokio::runtime::scheduler::current_thread::Handle";

/// A runtime handle whose `shared.owned` task list has shards of `Mutex<LinkedList>` (24
/// bytes each: the list at +8) in a boxed slice at +0, tokio's count at +16, `closed` at
/// +24 and the list's id at +32.
fn runtime_program(parking_lot: bool) -> (Program, TaskTypes) {
    let mut program = Program::new();
    let u64 = program.u64();
    let types = program.task_types("u64", u64, 8);
    let list = program.linked_list("tokio::runtime::task::core::Header", types.header);
    let shard_name = "tokio::util::linked_list::LinkedList<tokio::runtime::task::core::Header>";
    let shard = program.tokio_mutex(shard_name, list, 16, parking_lot);
    let mutex_name = if parking_lot {
        format!("tokio::loom::std::parking_lot::Mutex<{shard_name}>")
    } else {
        format!("tokio::loom::std::mutex::Mutex<{shard_name}>")
    };
    let shards = program.boxed_slice(&mutex_name, shard);
    let bool = program.bool();
    let usize = program.usize();
    let sharded = program.structure(
        "tokio::util::sharded_list::ShardedList<()>",
        24,
        &[("lists", 0, shards), ("count", 16, usize)],
    );
    let owned = program.structure(
        "tokio::runtime::task::list::OwnedTasks<()>",
        40,
        &[
            ("list", 0, sharded),
            ("closed", 24, bool),
            ("id", 32, usize),
        ],
    );
    let shared = program.structure(
        "tokio::runtime::scheduler::current_thread::Shared",
        40,
        &[("owned", 0, owned)],
    );
    program.structure(HANDLE, 40, &[("shared", 0, shared)]);
    (program, types)
}

/// The id tokio gave the runtime's task list in these tests.
const RUNTIME_LIST_ID: u64 = 9;

/// Two shards at 0x5000 (24 bytes each): the first lists `first`, the second `second`;
/// tokio counts them all.
fn write_runtime(memory: &mut TestMemory, types: &TaskTypes, first: &[u64], second: &[u64]) {
    memory.write_vtable(types);
    memory.zero(0x4000, 40);
    memory.write_u64(0x4000, 0x5000);
    memory.write_u64(0x4008, 2);
    memory.write_u64(0x4010, (first.len() + second.len()) as u64);
    memory.write_u64(0x4020, RUNTIME_LIST_ID);
    memory.zero(0x5000, 48);
    for (shard, tasks) in [(0x5000, first), (0x5018, second)] {
        memory.write_u64(shard + 8, tasks.first().copied().unwrap_or(0));
        memory.write_u64(shard + 16, tasks.last().copied().unwrap_or(0));
        for (i, &task) in tasks.iter().enumerate() {
            let next = tasks.get(i + 1).copied().unwrap_or(0);
            memory.write_task(types, task, task >> 12, 0b1000 | 3 << 6, next);
            memory.write_u64(task + 24, RUNTIME_LIST_ID);
            let previous = if i == 0 { 0 } else { tasks[i - 1] };
            memory.write_u64(task + crate::testing::TASK_TRAILER, previous);
        }
    }
}

#[test]
fn the_task_list_lists_every_shard_and_each_task_reads_its_id_state_and_future() {
    for parking_lot in [true, false] {
        let (program, types) = runtime_program(parking_lot);
        let debug = program.load();
        let mut memory = TestMemory::default();
        write_runtime(&mut memory, &types, &[0x10000, 0x11000], &[0x12000]);
        let target = Target::new(&debug, &memory, 0);
        let reader = TaskReader::new(&target).unwrap();
        let handle = target.value(die_of(&debug, HANDLE), 0x4000).unwrap();
        let walk = reader.task_addresses(&handle).unwrap();
        assert_eq!(
            walk.addresses,
            [0x10000, 0x11000, 0x12000],
            "parking_lot: {parking_lot}"
        );
        assert!(walk.problems.is_empty(), "{:?}", walk.problems);
        let header = reader.read_header(0x11000).unwrap();
        assert_eq!((header.id, header.state()), (0x11, TaskState::Idle));
        match reader.future(&header).unwrap() {
            TaskFuture::Running { ty, address } => {
                assert_eq!(debug.type_info(ty).unwrap().name, "u64");
                assert_eq!(address, 0x11000 + TASK_STAGE + 8);
            }
            TaskFuture::Gone { .. } => panic!("the future is in place"),
        }
        memory.write_u32(0x11000 + TASK_STAGE, 1);
        let target = Target::new(&debug, &memory, 0);
        let reader = TaskReader::new(&target).unwrap();
        let header = reader.read_header(0x11000).unwrap();
        assert!(
            matches!(reader.future(&header).unwrap(), TaskFuture::Gone { stage, .. } if stage == "finished")
        );
        assert!(!shutting_down(&target.value(die_of(&debug, HANDLE), 0x4000).unwrap()).unwrap());
    }
}

#[test]
fn a_shard_a_thread_holds_is_said_to_be_changing() {
    for parking_lot in [true, false] {
        let (program, types) = runtime_program(parking_lot);
        let debug = program.load();
        let mut memory = TestMemory::default();
        write_runtime(&mut memory, &types, &[0x10000], &[0x12000]);
        // The second shard's lock: parking_lot's LOCKED bit, std's futex word 2 (contended).
        memory.write_u32(0x5018, if parking_lot { 1 } else { 2 });
        let target = Target::new(&debug, &memory, 0);
        let reader = TaskReader::new(&target).unwrap();
        let walk = reader
            .task_addresses(&target.value(die_of(&debug, HANDLE), 0x4000).unwrap())
            .unwrap();
        assert_eq!(walk.locked_shards, [1], "parking_lot: {parking_lot}");
        // parking_lot's PARKED bit alone is not held.
        if parking_lot {
            memory.write_u32(0x5018, 2);
            let target = Target::new(&debug, &memory, 0);
            let reader = TaskReader::new(&target).unwrap();
            let walk = reader
                .task_addresses(&target.value(die_of(&debug, HANDLE), 0x4000).unwrap())
                .unwrap();
            assert!(walk.locked_shards.is_empty());
        }
    }
}

#[test]
fn a_broken_link_loses_only_its_task_the_list_is_read_back_from_its_tail() {
    let (program, types) = runtime_program(true);
    let debug = program.load();
    let mut memory = TestMemory::default();
    write_runtime(&mut memory, &types, &[0x10000, 0x11000, 0x12000], &[]);
    // The middle task's vtable is gone: its link cannot be read.
    memory.write_u64(0x11000 + 16, 0xdead_0000);
    let target = Target::new(&debug, &memory, 0);
    let reader = TaskReader::new(&target).unwrap();
    let walk = reader
        .task_addresses(&target.value(die_of(&debug, HANDLE), 0x4000).unwrap())
        .unwrap();
    assert_eq!(walk.addresses, [0x10000, 0x11000, 0x12000]);
    assert_eq!(
        walk.unreadable.iter().copied().collect::<Vec<_>>(),
        [0x11000]
    );
    // The problem says where it was met, step by step, apart from what went wrong there.
    let problem = &walk.problems[0];
    assert_eq!(problem.kind, ErrorKind::Layout);
    assert_eq!(
        problem.path()[..2],
        ["task list shard 0", "cannot follow the task at 0x11000"],
        "{problem}"
    );
    assert!(problem.cause().starts_with("cannot read"), "{problem}");
    assert!(reader.read_header(0x11000).is_err());
}

/// A runtime's shards walked by two threads (every other shard by a helper, with a target
/// of its own) are the walk one thread makes: the tasks, the problems shard by shard, what
/// could not be read. A task in both halves (a corrupt list) has the shards walked again by
/// one thread, which stops that shard there as it does alone.
#[test]
fn shards_walked_by_two_threads_are_the_walk_of_one() {
    let (program, types) = runtime_program(true);
    let debug = program.load();
    type Case<'c> = (&'c [u64], &'c [u64], Option<u64>);
    let cases: [Case<'_>; 3] = [
        (&[0x10000, 0x11000, 0x12000], &[0x13000, 0x14000], None),
        // The first shard's middle task's vtable is gone: read back from its tail.
        (&[0x10000, 0x11000, 0x12000], &[0x13000], Some(0x11000)),
        // 0x11000 in both shards.
        (&[0x10000, 0x11000], &[0x13000, 0x11000], None),
    ];
    for (case, (first, second, broken)) in cases.into_iter().enumerate() {
        let mut memory = TestMemory::default();
        write_runtime(&mut memory, &types, first, second);
        if let Some(task) = broken {
            memory.write_u64(task + 16, 0xdead_0000);
        }
        // Each walk reads through a budget of its own, which it spends as one walk would.
        let walk = |helper: Option<ShardHelper<'_>>| {
            let budget = Budget::new(Limits::default(), None);
            let metered = Metered {
                inner: &memory,
                budget: &budget,
            };
            let target = Target::new(&debug, &metered, 0).with_budget(&budget);
            let reader = TaskReader::new(&target).unwrap();
            let handle = target.value(die_of(&debug, HANDLE), 0x4000).unwrap();
            let walk = reader
                .task_addresses_helped(&handle, Some(TASKS_FOR_TWO_WALKERS), helper)
                .unwrap();
            (walk, budget.spent())
        };
        let (alone, spent_alone) = walk(None);
        let helped = AtomicBool::new(false);
        let helper: ShardHelper<'_> = Box::new(|lists, stopped| {
            helped.store(true, Ordering::Relaxed);
            let budget = Budget::unlimited();
            let metered = Metered {
                inner: &memory,
                budget: &budget,
            };
            let target = Target::new(&debug, &metered, 0).with_budget(&budget);
            let reader = TaskReader::new(&target).ok()?;
            let lists = lists
                .iter()
                .map(|(index, ty, address)| (*index, target.value_of_type(ty.clone(), *address)))
                .collect();
            let mut walked = reader
                .walk_shards(lists, &|| stopped.load(Ordering::Relaxed))
                .ok()?;
            walked.bytes_read = budget.spent().1;
            Some(walked)
        });
        let (two, spent_by_two) = walk(Some(helper));
        assert!(helped.load(Ordering::Relaxed), "case {case}");
        assert_eq!(spent_by_two, spent_alone, "case {case}");
        let unreadable = |walk: &super::tasks::TaskWalk| {
            let mut unreadable: Vec<u64> = walk.unreadable.iter().copied().collect();
            unreadable.sort_unstable();
            unreadable
        };
        assert_eq!(two.addresses, alone.addresses, "case {case}");
        let lines = |walk: &super::tasks::TaskWalk| {
            let problems = walk.problems.iter();
            problems.map(Error::message).collect::<Vec<_>>()
        };
        assert_eq!(lines(&two), lines(&alone), "case {case}");
        assert_eq!(unreadable(&two), unreadable(&alone), "case {case}");
        assert_eq!(two.locked_shards, alone.locked_shards, "case {case}");
        if case == 1 {
            assert_eq!(unreadable(&two), [0x11000]);
        }
        if case == 2 {
            assert_eq!(two.addresses, [0x10000, 0x11000, 0x13000]);
        }
    }
}

/// A multi_thread worker's core: `lifo_slot: Option<Notified>` at +0 (tag, header at +8),
/// `run_queue: Local{inner: Arc<Inner{head: u64, tail: u32, buffer: *mut [slot; 4]}>}` at
/// +16, `is_searching` at +24, `park: Option<Parker>` at +32; a `worker::Context{worker:
/// Arc<Worker{index}>, core: RefCell<Option<Box<Core>>>}`.
fn worker_program() -> (crate::dwarf::DebugInfo, TaskTypes) {
    let mut program = Program::new();
    let u64 = program.u64();
    let u32 = program.u32();
    let usize = program.usize();
    let bool = program.bool();
    let types = program.task_types("u64", u64, 8);
    let header_ptr = program.non_null("tokio::runtime::task::core::Header", types.header);
    let raw = program.structure(
        "tokio::runtime::task::raw::RawTask",
        8,
        &[("ptr", 0, header_ptr)],
    );
    let task = program.structure("tokio::runtime::task::Task<()>", 8, &[("raw", 0, raw)]);
    let notified = program.structure("tokio::runtime::task::Notified<()>", 8, &[("__0", 0, task)]);
    let lifo = program.option("tokio::runtime::task::Notified<()>", notified, 8, 16);
    let manually = program.structure(
        "core::mem::manually_drop::ManuallyDrop<tokio::runtime::task::Notified<()>>",
        8,
        &[("value", 0, notified)],
    );
    let uninit = program.structure(
        "core::mem::maybe_uninit::MaybeUninit<tokio::runtime::task::Notified<()>>",
        8,
        &[("value", 0, manually)],
    );
    let slot = program.tokio_cell(
        "core::mem::maybe_uninit::MaybeUninit<tokio::runtime::task::Notified<()>>",
        uninit,
        8,
    );
    let array = program.array(slot, 4);
    let buffer = program.pointer("*mut [slot; 4]", array);
    let inner = program.structure(
        "tokio::runtime::scheduler::multi_thread::queue::Inner<()>",
        24,
        &[("head", 0, u64), ("tail", 8, u32), ("buffer", 16, buffer)],
    );
    let arc = program.arc(
        "tokio::runtime::scheduler::multi_thread::queue::Inner<()>",
        inner,
        24,
    );
    let local = program.structure(
        "tokio::runtime::scheduler::multi_thread::queue::Local<()>",
        8,
        &[("inner", 0, arc)],
    );
    let parker = program.structure(
        "tokio::runtime::scheduler::multi_thread::park::Parker",
        8,
        &[("inner", 0, usize)],
    );
    let park = program.niche_option(
        "tokio::runtime::scheduler::multi_thread::park::Parker",
        parker,
        8,
    );
    let core = program.structure(
        "tokio::runtime::scheduler::multi_thread::worker::Core",
        40,
        &[
            ("lifo_slot", 0, lifo),
            ("run_queue", 16, local),
            ("is_searching", 24, bool),
            ("park", 32, park),
        ],
    );
    let boxed = program.boxed(
        "tokio::runtime::scheduler::multi_thread::worker::Core",
        core,
    );
    let option = program.niche_option("alloc::boxed::Box<tokio::runtime::scheduler::multi_thread::worker::Core, alloc::alloc::Global>", boxed, 8);
    let cell = program.structure("core::cell::UnsafeCell<core::option::Option<alloc::boxed::Box<tokio::runtime::scheduler::multi_thread::worker::Core>>>", 8, &[("value", 0, option)]);
    let refcell = program.structure("core::cell::RefCell<core::option::Option<alloc::boxed::Box<tokio::runtime::scheduler::multi_thread::worker::Core>>>", 16, &[("borrow", 0, usize), ("value", 8, cell)]);
    let worker = program.structure(
        "tokio::runtime::scheduler::multi_thread::worker::Worker",
        8,
        &[("index", 0, usize)],
    );
    let worker_arc = program.arc(
        "tokio::runtime::scheduler::multi_thread::worker::Worker",
        worker,
        8,
    );
    program.structure(
        "tokio::runtime::scheduler::multi_thread::worker::Context",
        24,
        &[("worker", 0, worker_arc), ("core", 8, refcell)],
    );
    // The inject queue of a current_thread runtime: `shared.inject.synced: Mutex<Synced{head}>`.
    let next = program.named(
        "core::option::Option<core::ptr::non_null::NonNull<tokio::runtime::task::core::Header>>",
    );
    let synced = program.structure(
        "tokio::runtime::scheduler::inject::synced::Synced",
        16,
        &[("head", 0, next), ("tail", 8, next)],
    );
    let locked = program.tokio_mutex(
        "tokio::runtime::scheduler::inject::synced::Synced",
        synced,
        16,
        false,
    );
    let inject = program.structure(
        "tokio::runtime::scheduler::inject::Inject<()>",
        24,
        &[("synced", 0, locked)],
    );
    let shared = program.structure(
        "tokio::runtime::scheduler::current_thread::Shared",
        24,
        &[("inject", 0, inject)],
    );
    program.structure(HANDLE, 24, &[("shared", 0, shared)]);
    (program.load(), types)
}

#[test]
fn a_worker_says_what_it_has_queued_and_a_runtime_its_inject_queue() {
    let (debug, types) = worker_program();
    let mut memory = TestMemory::default();
    memory.write_vtable(&types);
    for (header, id) in [(0x10000, 16), (0x11000, 17), (0x12000, 18), (0x13000, 19)] {
        memory.write_task(&types, header, id, 0b100 | 2 << 6, 0);
    }
    // worker::Context at 0x1000: worker 3, core at 0x2000.
    memory.zero(0x1000, 24);
    memory.write_u64(0x1000, 0x1800);
    memory.zero(0x1800, 24);
    memory.write_u64(0x1810, 3);
    memory.write_u64(0x1010, 0x2000);
    memory.zero(0x2000, 40);
    memory.write_u64(0x2000, 1);
    memory.write_u64(0x2008, 0x10000);
    memory.write_u64(0x2010, 0x3000);
    memory.write_u8(0x2018, 1);
    memory.write_u64(0x2020, 0x9000); // the parker is in its place: not parked
                                      // The run queue: slots 1 and 2 of 4, head (real) 1, tail 3.
    memory.zero(0x3000, 16 + 24);
    memory.write_u64(0x3010, 1 | 5 << 32);
    memory.write_u32(0x3018, 3);
    memory.write_u64(0x3020, 0x3800);
    memory.zero(0x3800, 32);
    memory.write_u64(0x3808, 0x11000);
    memory.write_u64(0x3810, 0x12000);
    let target = Target::new(&debug, &memory, 0);
    let context = target
        .value(
            die_of(
                &debug,
                "tokio::runtime::scheduler::multi_thread::worker::Context",
            ),
            0x1000,
        )
        .unwrap();
    let core = worker_core(&context)
        .unwrap()
        .expect("the worker has its core");
    assert_eq!((core.searching, core.parked), (true, false));
    assert_eq!(core.lifo_slot, Some(0x10000));
    assert_eq!(core.run_queue, [0x11000, 0x12000]);

    // Inject queue of two, linked by `queue_next`.
    memory.zero(0x4000, 24);
    memory.write_u64(0x4008, 0x12000);
    memory.write_u64(0x4010, 0x13000);
    memory.write_u64(0x12000 + 8, 0x13000);
    let target = Target::new(&debug, &memory, 0);
    let handle = target.value(die_of(&debug, HANDLE), 0x4000).unwrap();
    assert_eq!(inject_queue(&handle).unwrap(), [0x12000, 0x13000]);
    // Its lock is free: tokio's count of it may be compared with what was read.
    assert_eq!(inject_locked(&handle), Some(false));
    // Held (a push or pop half done: head and length may disagree).
    memory.write_u32(0x4000, 1);
    let target = Target::new(&debug, &memory, 0);
    let handle = target.value(die_of(&debug, HANDLE), 0x4000).unwrap();
    assert_eq!(inject_locked(&handle), Some(true));
    memory.write_u32(0x4000, 0);
    // A queue that loops is an error, not a hang.
    memory.write_u64(0x13000 + 8, 0x12000);
    let target = Target::new(&debug, &memory, 0);
    let handle = target.value(die_of(&debug, HANDLE), 0x4000).unwrap();
    assert!(inject_queue(&handle)
        .unwrap_err()
        .message()
        .contains("inject queue loops"));
    // A run queue that claims more tasks than it has slots.
    memory.write_u32(0x3018, 9);
    let target = Target::new(&debug, &memory, 0);
    let context = target
        .value(
            die_of(
                &debug,
                "tokio::runtime::scheduler::multi_thread::worker::Context",
            ),
            0x1000,
        )
        .unwrap();
    assert!(worker_core(&context)
        .err()
        .unwrap()
        .message()
        .contains("run queue claims 8 tasks in 4 slots"));
}

#[test]
fn a_current_thread_core_lists_its_local_queue_front_first() {
    let mut program = Program::new();
    let u64 = program.u64();
    let usize = program.usize();
    let types = program.task_types("u64", u64, 8);
    let header_ptr = program.non_null("tokio::runtime::task::core::Header", types.header);
    let raw = program.structure(
        "tokio::runtime::task::raw::RawTask",
        8,
        &[("ptr", 0, header_ptr)],
    );
    let task = program.structure("tokio::runtime::task::Task<()>", 8, &[("raw", 0, raw)]);
    let notified = program.structure("tokio::runtime::task::Notified<()>", 8, &[("__0", 0, task)]);
    let u8 = program.u8();
    let non_null = program.non_null("u8", u8);
    let unique = program.structure(
        "core::ptr::unique::Unique<u8>",
        8,
        &[("pointer", 0, non_null)],
    );
    let inner = program.structure(
        "alloc::raw_vec::RawVecInner<alloc::alloc::Global>",
        16,
        &[("cap", 0, usize), ("ptr", 8, unique)],
    );
    let buf = program.structure("alloc::raw_vec::RawVec<()>", 16, &[("inner", 0, inner)]);
    let deque_name = "alloc::collections::vec_deque::VecDeque<tokio::runtime::task::Notified<()>, alloc::alloc::Global>";
    let deque = program.structure(
        deque_name,
        32,
        &[("buf", 0, buf), ("head", 16, usize), ("len", 24, usize)],
    );
    program.template_param(deque, "T", notified);
    let core = program.structure(
        "tokio::runtime::scheduler::current_thread::Core",
        32,
        &[("tasks", 0, deque)],
    );
    let boxed = program.boxed("tokio::runtime::scheduler::current_thread::Core", core);
    let option = program.niche_option(
        "alloc::boxed::Box<tokio::runtime::scheduler::current_thread::Core, alloc::alloc::Global>",
        boxed,
        8,
    );
    let cell = program.structure("core::cell::UnsafeCell<core::option::Option<alloc::boxed::Box<tokio::runtime::scheduler::current_thread::Core>>>", 8, &[("value", 0, option)]);
    let refcell = program.structure("core::cell::RefCell<core::option::Option<alloc::boxed::Box<tokio::runtime::scheduler::current_thread::Core>>>", 16, &[("borrow", 0, usize), ("value", 8, cell)]);
    program.structure(
        "tokio::runtime::scheduler::current_thread::Context",
        16,
        &[("core", 0, refcell)],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 16);
    memory.write_u64(0x1008, 0x2000);
    // A ring of 4 slots at 0x3000, 3 tasks from slot 2: slots 2, 3, 0.
    memory.zero(0x2000, 32);
    memory.write_u64(0x2000, 4);
    memory.write_u64(0x2008, 0x3000);
    memory.write_u64(0x2010, 2);
    memory.write_u64(0x2018, 3);
    memory.zero(0x3000, 32);
    memory.write_u64(0x3010, 0xa000);
    memory.write_u64(0x3018, 0xb000);
    memory.write_u64(0x3000, 0xc000);
    let target = Target::new(&debug, &memory, 0);
    let context = target
        .value(
            die_of(&debug, "tokio::runtime::scheduler::current_thread::Context"),
            0x1000,
        )
        .unwrap();
    assert_eq!(
        current_thread_queue(&context).unwrap(),
        Some(vec![0xa000, 0xb000, 0xc000])
    );
    // Its core taken away (by another block_on): nothing to say.
    memory.write_u64(0x1008, 0);
    let target = Target::new(&debug, &memory, 0);
    let context = target
        .value(
            die_of(&debug, "tokio::runtime::scheduler::current_thread::Context"),
            0x1000,
        )
        .unwrap();
    assert_eq!(current_thread_queue(&context).unwrap(), None);
    // A deque longer than its buffer.
    memory.write_u64(0x1008, 0x2000);
    memory.write_u64(0x2018, 9);
    let target = Target::new(&debug, &memory, 0);
    let context = target
        .value(
            die_of(&debug, "tokio::runtime::scheduler::current_thread::Context"),
            0x1000,
        )
        .unwrap();
    assert!(current_thread_queue(&context)
        .unwrap_err()
        .message()
        .contains("claims 9 elements from 2 in 4 slots"));
}

/// The `CONTEXT` thread-local: `Storage<Context>{val@0, state@48}`, `Context{current:
/// HandleCell{handle: RefCell<Option<scheduler::Handle>>}@0, scheduler: Scoped@24,
/// current_task_id: Cell<Option<Id>>@32}`.
fn context_program() -> crate::dwarf::DebugInfo {
    let mut program = Program::new();
    let usize = program.usize();
    let u64 = program.u64();
    let handle = program.structure(
        "tokio::runtime::scheduler::multi_thread::handle::Handle",
        8,
        &[("x", 0, usize)],
    );
    let arc = program.arc(
        "tokio::runtime::scheduler::multi_thread::handle::Handle",
        handle,
        8,
    );
    let scheduler_handle = program.rust_enum(
        "tokio::runtime::scheduler::Handle",
        16,
        Some((0, u64)),
        &[
            Variant::new("CurrentThread", Some(0), &[("__0", 8, arc)]),
            Variant::new("MultiThread", Some(1), &[("__0", 8, arc)]),
        ],
    );
    let option = program.option("tokio::runtime::scheduler::Handle", scheduler_handle, 0, 16);
    let cell = program.structure(
        "core::cell::UnsafeCell<core::option::Option<tokio::runtime::scheduler::Handle>>",
        16,
        &[("value", 0, option)],
    );
    let refcell = program.structure(
        "core::cell::RefCell<core::option::Option<tokio::runtime::scheduler::Handle>>",
        24,
        &[("borrow", 0, usize), ("value", 8, cell)],
    );
    let current = program.structure(
        "tokio::runtime::context::current::HandleCell",
        24,
        &[("handle", 0, refcell)],
    );
    let index = program.structure(
        "tokio::runtime::scheduler::multi_thread::worker::Worker",
        8,
        &[("index", 0, usize)],
    );
    let worker = program.arc(
        "tokio::runtime::scheduler::multi_thread::worker::Worker",
        index,
        8,
    );
    let worker_context = program.structure(
        "tokio::runtime::scheduler::multi_thread::worker::Context",
        8,
        &[("worker", 0, worker)],
    );
    let scheduler_context = program.rust_enum(
        "tokio::runtime::scheduler::Context",
        16,
        Some((0, u64)),
        &[
            Variant::new("CurrentThread", Some(0), &[("__0", 8, worker_context)]),
            Variant::new("MultiThread", Some(1), &[("__0", 8, worker_context)]),
        ],
    );
    let raw = program.pointer(
        "*const tokio::runtime::scheduler::Context",
        scheduler_context,
    );
    let raw_cell = program.structure(
        "core::cell::UnsafeCell<*const tokio::runtime::scheduler::Context>",
        8,
        &[("value", 0, raw)],
    );
    let raw_cell = program.structure(
        "core::cell::Cell<*const tokio::runtime::scheduler::Context>",
        8,
        &[("value", 0, raw_cell)],
    );
    let scoped = program.structure(
        "tokio::runtime::context::scoped::Scoped<tokio::runtime::scheduler::Context>",
        8,
        &[("inner", 0, raw_cell)],
    );
    let id = program.structure("tokio::runtime::task::id::Id", 8, &[("__0", 0, u64)]);
    let task = program.option("tokio::runtime::task::id::Id", id, 8, 16);
    let task_cell = program.structure(
        "core::cell::UnsafeCell<core::option::Option<tokio::runtime::task::id::Id>>",
        16,
        &[("value", 0, task)],
    );
    let task_cell = program.structure(
        "core::cell::Cell<core::option::Option<tokio::runtime::task::id::Id>>",
        16,
        &[("value", 0, task_cell)],
    );
    let context = program.structure(
        "tokio::runtime::context::Context",
        48,
        &[
            ("current", 0, current),
            ("scheduler", 24, scoped),
            ("current_task_id", 32, task_cell),
        ],
    );
    let value = program.structure(
        "core::cell::UnsafeCell<tokio::runtime::context::Context>",
        48,
        &[("value", 0, context)],
    );
    let state = program.c_enum(
        "std::sys::thread_local::native::eager::State",
        1,
        &[("Initial", 0), ("Alive", 1), ("Destroyed", 2)],
    );
    let state_value = program.structure(
        "core::cell::UnsafeCell<std::sys::thread_local::native::eager::State>",
        1,
        &[("value", 0, state)],
    );
    let state_cell = program.structure(
        "core::cell::Cell<std::sys::thread_local::native::eager::State>",
        1,
        &[("value", 0, state_value)],
    );
    let storage = program.structure(
        "std::sys::thread_local::native::eager::Storage<tokio::runtime::context::Context>",
        56,
        &[("val", 0, value), ("state", 48, state_cell)],
    );
    program.thread_local(
        "tokio::runtime::context::CONTEXT::{constant#0}::{closure#0}::__RUST_STD_INTERNAL_VAL",
        storage,
        0x40,
    );
    let mut debug = program.load();
    debug.elf.tls = Some(TlsSegment {
        memsz: 0x100,
        align: 0x40,
    });
    debug
}

#[test]
fn a_thread_context_names_its_runtime_worker_and_task() {
    let debug = context_program();
    let variable = find_context_variable(&debug).unwrap();
    let fs_base = 0x10100;
    let storage = fs_base - 0x100 + 0x40;
    let mut memory = TestMemory::default();
    memory.zero(storage, 56);
    memory.write_u8(storage + 48, 1);
    memory.write_u64(storage + 8, 1); // Some(MultiThread(arc))
    memory.write_u64(storage + 8, 1);
    memory.write_u64(storage + 16, 0x2000);
    memory.zero(0x2000, 24);
    memory.write_u64(storage + 24, 0x3000); // the scheduler context
    memory.zero(0x3000, 16);
    memory.write_u64(0x3000, 1);
    memory.write_u64(0x3008, 0x4000);
    memory.zero(0x4000, 24);
    memory.write_u64(0x4010, 2);
    memory.write_u64(storage + 32, 1);
    memory.write_u64(storage + 40, 77);
    let target = Target::new(&debug, &memory, 0);
    let context = read_thread_context(&target, &variable, fs_base)
        .unwrap()
        .expect("alive");
    let handle = context.handle.expect("in a runtime");
    assert_eq!(
        (handle.flavor.as_str(), handle.handle.address),
        ("MultiThread", 0x2010)
    );
    assert_eq!(
        (context.worker_index, context.current_task),
        (Some(2), Some(77))
    );

    // Not yet initialised on this thread.
    memory.write_u8(storage + 48, 0);
    let target = Target::new(&debug, &memory, 0);
    assert!(read_thread_context(&target, &variable, fs_base)
        .unwrap()
        .is_none());
    // Its memory is gone (a core that lost the thread's TLS).
    let target = Target::new(&debug, &memory, 0);
    assert!(read_thread_context(&target, &variable, 0x90000).is_err());
}

/// Types of a task's future for `join_handle`'s test: a `JoinHandle{raw: RawTask{ptr}}`.
pub fn join_handle_types(program: &mut Program, types: &TaskTypes) -> Ty {
    let header_ptr = program.non_null("tokio::runtime::task::core::Header", types.header);
    let raw = program.structure(
        "tokio::runtime::task::raw::RawTask",
        8,
        &[("ptr", 0, header_ptr)],
    );
    program.structure(
        "tokio::runtime::task::join::JoinHandle<u64>",
        8,
        &[("raw", 0, raw)],
    )
}

#[test]
fn a_runtime_list_is_read_beside_tokio_s_count_and_its_tasks_name_it_as_their_owner() {
    use super::sources::{SourceKind, TaskSource};
    let (program, types) = runtime_program(true);
    let debug = program.load();
    let mut memory = TestMemory::default();
    write_runtime(&mut memory, &types, &[0x10000, 0x11000], &[0x12000]);
    let target = Target::new(&debug, &memory, 0);
    let reader = TaskReader::new(&target).unwrap();
    let source = TaskSource {
        kind: SourceKind::Runtime("CurrentThread".into()),
        value: target.value(die_of(&debug, HANDLE), 0x4000).unwrap(),
    };
    let list = reader.task_list(&source).unwrap();
    assert_eq!(
        (list.walk.addresses.len(), list.counted, list.closed),
        (3, Some(3), Some(false))
    );
    assert!(source.is_plausible(&reader));
    // A list whose first task another list owns is not this runtime's.
    memory.write_u64(0x10000 + 24, RUNTIME_LIST_ID + 1);
    let target = Target::new(&debug, &memory, 0);
    let reader = TaskReader::new(&target).unwrap();
    let source = TaskSource {
        kind: SourceKind::Runtime("CurrentThread".into()),
        value: target.value(die_of(&debug, HANDLE), 0x4000).unwrap(),
    };
    assert!(!source.is_plausible(&reader));
}

const SHARED: &str = "tokio::task::local::Shared";
const LOCAL_SET: &str = "tokio::task::local::LocalSet";
/// Where the LocalSet's pieces lie: `ArcInner<Shared>` (its `Shared` 16 bytes in),
/// `RcInner<Context>`, the `LocalSet` itself.
const SHARED_ARC: u64 = 0x3000;
const SHARED_AT: u64 = SHARED_ARC + 16;
const CONTEXT_RC: u64 = 0x2800;
const LOCAL_SET_AT: u64 = 0x2000;
const LOCAL_LIST_ID: u64 = 7;

/// A LocalSet `{context: Rc<Context{shared: Arc<Shared>}>}` whose `Shared.local_state.owned`
/// is `LocalOwnedTasks{id, inner: UnsafeCell<OwnedTasksInner{list, closed}>}`, and tasks
/// whose scheduler is an `Arc<Shared>`.
fn local_set_program() -> (crate::dwarf::DebugInfo, TaskTypes) {
    let mut program = Program::new();
    let u64 = program.u64();
    let usize = program.usize();
    let bool = program.bool();
    // The tasks' scheduler is an `Arc<Shared>`, whose list holds their headers.
    let shared = program.structure(SHARED, 40, &[]);
    let arc = program.arc(SHARED, shared, 40);
    let types = program.task_types_scheduled_by(
        "u64",
        u64,
        8,
        "alloc::sync::Arc<tokio::task::local::Shared, alloc::alloc::Global>",
        arc,
    );
    let list = program.linked_list("tokio::runtime::task::core::Header", types.header);
    let inner = program.structure(
        "tokio::runtime::task::list::OwnedTasksInner<()>",
        24,
        &[("list", 0, list), ("closed", 16, bool)],
    );
    let cell = program.tokio_cell("tokio::runtime::task::list::OwnedTasksInner<()>", inner, 24);
    let owned = program.structure(
        "tokio::runtime::task::list::LocalOwnedTasks<()>",
        32,
        &[("id", 0, usize), ("inner", 8, cell)],
    );
    let state = program.structure(
        "tokio::task::local::LocalState",
        40,
        &[("owner", 0, usize), ("owned", 8, owned)],
    );
    program.fields(shared, &[("local_state", 0, state)]);
    program.local_set(arc);
    (program.load(), types)
}

/// The LocalSet with `tasks` on its list, each scheduled by its `Shared`.
fn write_local_set(memory: &mut TestMemory, types: &TaskTypes, tasks: &[u64]) {
    memory.write_vtable(types);
    memory.zero(LOCAL_SET_AT, 16);
    memory.write_u64(LOCAL_SET_AT, CONTEXT_RC);
    memory.zero(CONTEXT_RC, 24);
    memory.write_u64(CONTEXT_RC, 1);
    memory.write_u64(CONTEXT_RC + 16, SHARED_ARC);
    memory.zero(SHARED_ARC, 56);
    memory.write_u64(SHARED_ARC, 1 + tasks.len() as u64);
    memory.write_u64(SHARED_ARC + 8, 1);
    memory.write_u64(SHARED_AT, 3);
    memory.write_u64(SHARED_AT + 8, LOCAL_LIST_ID);
    memory.write_u64(SHARED_AT + 16, tasks.first().copied().unwrap_or(0));
    memory.write_u64(SHARED_AT + 24, tasks.last().copied().unwrap_or(0));
    for (i, &task) in tasks.iter().enumerate() {
        let next = tasks.get(i + 1).copied().unwrap_or(0);
        memory.write_task(types, task, task >> 12, 0b1000 | 3 << 6, next);
        memory.write_u64(task + 24, LOCAL_LIST_ID);
        memory.write_u64(task + crate::testing::TASK_CORE, SHARED_ARC);
        let previous = if i == 0 { 0 } else { tasks[i - 1] };
        memory.write_u64(task + crate::testing::TASK_TRAILER, previous);
    }
}

#[test]
fn a_local_set_is_known_by_its_shared_state_from_itself_and_from_its_tasks() {
    use super::anchors::Anchor;
    use super::sources::{SourceKind, TaskSource};
    let (debug, types) = local_set_program();
    let mut memory = TestMemory::default();
    write_local_set(&mut memory, &types, &[0x10000, 0x11000]);
    let target = Target::new(&debug, &memory, 0);
    let reader = TaskReader::new(&target).unwrap();
    let anchor = Anchor::LocalSet(die_of(&debug, LOCAL_SET), LOCAL_SET_AT);
    let source = TaskSource::of_anchor(&target, anchor).unwrap().unwrap();
    assert_eq!(
        (source.kind.clone(), source.address()),
        (SourceKind::LocalSet, SHARED_AT)
    );
    assert!(source.is_plausible(&reader));
    let list = reader.task_list(&source).unwrap();
    assert_eq!(list.walk.addresses, [0x10000, 0x11000]);
    // tokio keeps no count of a LocalSet's tasks.
    assert_eq!((list.counted, list.closed), (None, Some(false)));
    // A task names the list that owns it through its scheduler, an `Arc<Shared>`.
    let header = reader.read_header(0x11000).unwrap();
    let owner = TaskSource::owner_of(&reader, &header).unwrap().unwrap();
    assert_eq!(
        (owner.kind.clone(), owner.address()),
        (SourceKind::LocalSet, SHARED_AT)
    );
    // A task reference leads nowhere by itself: its owner does.
    assert!(TaskSource::of_anchor(&target, Anchor::Task(0x11000))
        .unwrap()
        .is_none());
}

#[test]
fn a_stale_or_damaged_local_set_is_not_taken_for_a_live_one() {
    use super::sources::TaskSource;
    let (debug, types) = local_set_program();
    for damage in [
        "no id",
        "another owner",
        "head without tail",
        "no Arc",
        "no thread",
    ] {
        let mut memory = TestMemory::default();
        write_local_set(&mut memory, &types, &[0x10000, 0x11000]);
        match damage {
            "no id" => memory.write_u64(SHARED_AT + 8, 0),
            "another owner" => memory.write_u64(0x10000 + 24, LOCAL_LIST_ID + 1),
            "head without tail" => memory.write_u64(SHARED_AT + 24, 0),
            "no Arc" => memory.write_u64(SHARED_ARC, 0),
            _ => memory.write_u64(SHARED_AT, 0),
        }
        let target = Target::new(&debug, &memory, 0);
        let reader = TaskReader::new(&target).unwrap();
        let shared = target.value(die_of(&debug, SHARED), SHARED_AT).unwrap();
        assert!(
            !TaskSource::of_local_shared(shared).is_plausible(&reader),
            "{damage}"
        );
    }
    // An empty LocalSet is a live one.
    let mut memory = TestMemory::default();
    write_local_set(&mut memory, &types, &[]);
    let target = Target::new(&debug, &memory, 0);
    let reader = TaskReader::new(&target).unwrap();
    let shared = target.value(die_of(&debug, SHARED), SHARED_AT).unwrap();
    assert!(TaskSource::of_local_shared(shared).is_plausible(&reader));
}

#[test]
fn anchors_are_found_through_what_a_value_owns_and_in_set_once_cells_only() {
    use super::anchors::{Anchor, AnchorTypes};
    let mut program = Program::new();
    let u32 = program.u32();
    let usize = program.usize();
    let local_set = program.structure(LOCAL_SET, 16, &[("tick", 8, usize)]);
    let boxed = program.boxed(LOCAL_SET, local_set);
    let vec = program.vec(
        &format!("alloc::boxed::Box<{LOCAL_SET}, alloc::alloc::Global>"),
        boxed,
    );
    let handle = program.rust_enum(
        "tokio::runtime::scheduler::Handle",
        16,
        Some((0, usize)),
        &[Variant::new("CurrentThread", Some(0), &[("__0", 8, usize)])],
    );
    // `OnceLock<Handle>{once: Once{inner: futex::Once{state_and_queued}}, value:
    // UnsafeCell<MaybeUninit<Handle>>}`: the union's `value` member.
    let futex = program.structure(
        "std::sys::sync::once::futex::Once",
        4,
        &[("state_and_queued", 0, u32)],
    );
    let once = program.structure("std::sync::once::Once", 4, &[("inner", 0, futex)]);
    let uninit = program.structure(
        "core::mem::maybe_uninit::MaybeUninit<tokio::runtime::scheduler::Handle>",
        16,
        &[("value", 0, handle)],
    );
    let cell = program.structure(
        "core::cell::UnsafeCell<core::mem::maybe_uninit::MaybeUninit<tokio::runtime::scheduler::Handle>>",
        16,
        &[("value", 0, uninit)],
    );
    let once_lock = program.structure(
        "std::sync::once_lock::OnceLock<tokio::runtime::scheduler::Handle>",
        24,
        &[("value", 0, cell), ("once", 16, once)],
    );
    let plain = program.structure("app::Plain", 8, &[("count", 0, usize)]);
    program.structure(
        "app::Keeper",
        56,
        &[
            ("plain", 0, plain),
            ("sets", 8, vec),
            ("handle", 32, once_lock),
        ],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    // Two boxed LocalSets in the Vec; the OnceLock set (COMPLETE) around a handle.
    memory.zero(0x1000, 56);
    memory.write_u64(0x1008, 2);
    memory.write_u64(0x1008 + 8, 0x2000);
    memory.write_u64(0x1008 + 16, 2);
    memory.write_u64(0x2000, 0x3000);
    memory.write_u64(0x2008, 0x3100);
    memory.zero(0x3000, 16);
    memory.zero(0x3100, 16);
    memory.write_u32(0x1020 + 16, crate::layouts::rust::ONCE_COMPLETE as u32);
    let target = Target::new(&debug, &memory, 0);
    let types = AnchorTypes::default();
    assert!(!types.reach(&debug, die_of(&debug, "app::Plain")));
    let keeper = target.value(die_of(&debug, "app::Keeper"), 0x1000).unwrap();
    assert_eq!(
        types.find_in(&keeper),
        [
            Anchor::LocalSet(die_of(&debug, LOCAL_SET), 0x3000),
            Anchor::LocalSet(die_of(&debug, LOCAL_SET), 0x3100),
            Anchor::RuntimeHandle(die_of(&debug, "tokio::runtime::scheduler::Handle"), 0x1020),
        ]
    );
    // An unset OnceLock's bytes are not a value.
    memory.write_u32(0x1020 + 16, 3);
    let target = Target::new(&debug, &memory, 0);
    let keeper = target.value(die_of(&debug, "app::Keeper"), 0x1000).unwrap();
    assert_eq!(types.find_in(&keeper).len(), 2);
}
