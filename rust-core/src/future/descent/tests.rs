//! The search of a hand-written future through what it owns, one shape of container at a
//! time, over programs of a few types laid out as rustc 1.95 lays out std's (see
//! `crate::testing`): the futures found with the path to each, what is never read (plain
//! data, tokio's own shared state), and damaged containers, which give the node an error
//! line and stop, never a hang or a panic.

use crate::dwarf::DebugInfo;
use crate::future::FutureDecoder;
use crate::model::{FutureNode, NodeKind};
use crate::testing::{die_of, Program, TestMemory, Ty};
use crate::value::Target;

/// The future every test looks for: `Ready<u32>`, 8 bytes, which its decoder never reads.
const READY: &str = "core::future::ready::Ready<u32>";
/// The hand-written future whose fields are searched.
const LISTENER: &str = "app::Listener";

fn ready(program: &mut Program) -> Ty {
    program.memo(READY, |p| p.structure(READY, 8, &[]))
}

fn decode(debug: &DebugInfo, memory: &TestMemory, address: u64) -> FutureNode {
    let target = Target::new(debug, memory, 0);
    FutureDecoder::new(&target).decode(die_of(debug, LISTENER), address)
}

/// The futures found in the listener, by path and address; each must be held there.
fn found(node: &FutureNode) -> Vec<(String, u64)> {
    node.children
        .iter()
        .map(|child| {
            assert!(child.held(), "{child:?}");
            (child.via().expect("a path").to_string(), child.address)
        })
        .collect()
}

fn paths(found: &[(&str, u64)]) -> Vec<(String, u64)> {
    found
        .iter()
        .map(|(path, address)| (path.to_string(), *address))
        .collect()
}

fn error_of(node: &FutureNode) -> &str {
    node.error().unwrap_or_else(|| panic!("no error: {node:?}"))
}

/// A `Vec` at `at`: its capacity, pointer and length (`Program::vec`'s layout).
fn write_vec(memory: &mut TestMemory, at: u64, capacity: u64, pointer: u64, len: u64) {
    memory.write_u64(at, capacity);
    memory.write_u64(at + 8, pointer);
    memory.write_u64(at + 16, len);
}

#[test]
fn a_vec_of_pairs_shows_each_future_by_index_and_field_and_plain_data_is_never_read() {
    let mut program = Program::new();
    let ready = ready(&mut program);
    let u32 = program.u32();
    let u64 = program.u64();
    let pair = program.pair(("u32", u32), (READY, ready), 8, 16);
    let signals = program.vec(&format!("(u32, {READY})"), pair);
    let bytes = program.vec("u64", u64);
    program.structure(
        LISTENER,
        48,
        &[("buffer", 0, bytes), ("signals", 24, signals)],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    // A buffer of plain data whose pointer leads nowhere: never read.
    write_vec(&mut memory, 0x1000, 1 << 40, 0xdead_0000, 1 << 40);
    write_vec(&mut memory, 0x1018, 4, 0x2000, 3);
    memory.zero(0x2000, 64);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(node.error(), None);
    assert_eq!(
        found(&node),
        paths(&[
            ("signals[0].1", 0x2008),
            ("signals[1].1", 0x2018),
            ("signals[2].1", 0x2028),
        ])
    );
    assert!(node
        .children
        .iter()
        .all(|child| child.kind == NodeKind::Ready));
    // An empty one holds none now.
    write_vec(&mut memory, 0x1018, 4, 0x2000, 0);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!((node.children.len(), node.error()), (0, None));
    assert!(node.summary.unwrap().contains("holds no future now"));
}

#[test]
fn a_vec_of_boxed_futures_shows_each_by_its_concrete_type() {
    let mut program = Program::new();
    let u64 = program.u64();
    let job = program.structure("app::Job", 8, &[("n", 0, u64)]);
    program.vtable("app::Job", job, "core::future::future::Future", 0x50_0000);
    let dyn_name = "(dyn core::future::future::Future<Output=()> + core::marker::Send)";
    let boxed_name = format!("alloc::boxed::Box<{dyn_name}, alloc::alloc::Global>");
    let boxed = program.boxed_dyn(dyn_name);
    let pinned = program.pin(&boxed_name, boxed, 16);
    let jobs = program.vec(&format!("core::pin::Pin<{boxed_name}>"), pinned);
    program.structure(LISTENER, 24, &[("jobs", 0, jobs)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    write_vec(&mut memory, 0x1000, 2, 0x2000, 2);
    for (slot, job) in [(0x2000, 0x3000), (0x2010, 0x3100)] {
        memory.write_u64(slot, job);
        memory.write_u64(slot + 8, 0x50_0000);
        memory.write_u64(job, 7);
    }
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(node.error(), None);
    assert_eq!(
        found(&node),
        paths(&[("jobs[0]", 0x3000), ("jobs[1]", 0x3100)])
    );
    assert!(node
        .children
        .iter()
        .all(|child| child.boxed() && child.type_name() == "app::Job"));
}

#[test]
fn a_vec_deque_is_searched_front_first_across_its_wrap() {
    let mut program = Program::new();
    let ready = ready(&mut program);
    let deque = program.vec_deque(READY, ready);
    program.structure(LISTENER, 32, &[("queue", 0, deque)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    // Four slots, three in use from slot 3: slots 3, 0, 1.
    memory.write_u64(0x1000, 4);
    memory.write_u64(0x1008, 0x2000);
    memory.write_u64(0x1010, 3);
    memory.write_u64(0x1018, 3);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(node.error(), None);
    assert_eq!(
        found(&node),
        paths(&[
            ("queue[0]", 0x2018),
            ("queue[1]", 0x2000),
            ("queue[2]", 0x2008)
        ])
    );
    // A head past its buffer.
    memory.write_u64(0x1010, 9);
    let node = decode(&debug, &memory, 0x1000);
    assert!(error_of(&node).contains("queue: "), "{node:?}");
    assert!(error_of(&node).contains("(corrupt?)"), "{node:?}");
}

#[test]
fn arrays_options_boxes_and_boxed_slices_are_seen_through() {
    let mut program = Program::new();
    let ready = ready(&mut program);
    let array = program.array(ready, 2);
    let option = program.option(READY, ready, 8, 16);
    let boxed = program.boxed(READY, ready);
    let boxed_name = format!("alloc::boxed::Box<{READY}, alloc::alloc::Global>");
    let maybe_boxed = program.niche_option(&boxed_name, boxed, 8);
    let slice = program.boxed_slice(READY, ready);
    program.structure(
        LISTENER,
        64,
        &[
            ("pair", 0, array),
            ("next", 16, option),
            ("later", 32, maybe_boxed),
            ("rest", 40, slice),
        ],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 64);
    memory.write_u64(0x1010, 1);
    memory.write_u64(0x1020, 0x2000);
    memory.write_u64(0x1028, 0x3000);
    memory.write_u64(0x1030, 2);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(node.error(), None);
    assert_eq!(
        found(&node),
        paths(&[
            ("pair[0]", 0x1000),
            ("pair[1]", 0x1008),
            ("next", 0x1018),
            ("later", 0x2000),
            ("rest[0]", 0x3000),
            ("rest[1]", 0x3008),
        ])
    );
    // None and a null box hold nothing; nothing is read behind them.
    memory.write_u64(0x1010, 0);
    memory.write_u64(0x1020, 0);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(node.children.len(), 4);
}

/// `Shared{job: Ready<u32>, next: Option<Arc<Shared>>}`, 16 bytes, and `Arc<Shared>`.
fn shared_state(program: &mut Program) -> Ty {
    let ready = ready(program);
    let shared = program.structure("app::Shared", 16, &[("job", 0, ready)]);
    let arc = program.arc("app::Shared", shared, 16);
    let arc_name = "alloc::sync::Arc<app::Shared, alloc::alloc::Global>";
    let next = program.niche_option(arc_name, arc, 8);
    program.fields(shared, &[("next", 8, next)]);
    arc
}

#[test]
fn an_arc_or_rc_is_searched_where_it_is_the_one_owner_and_once() {
    let mut program = Program::new();
    let arc = shared_state(&mut program);
    let ready = ready(&mut program);
    let rc = program.rc(READY, ready, 8);
    program.structure(
        LISTENER,
        24,
        &[("state", 0, arc), ("pool", 8, arc), ("local", 16, rc)],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    // `state` is the one owner of its `ArcInner` at 0x2000, whose `next` leads back to
    // itself (a count that says otherwise is corrupt): it is searched once.
    memory.write_u64(0x1000, 0x2000);
    memory.zero(0x2000, 32);
    memory.write_u64(0x2000, 1);
    memory.write_u64(0x2018, 0x2000);
    // `pool` shares 0x4000 with another owner, as a client's handle does its pool's
    // registry of requests: what it holds is not the listener's to await.
    memory.write_u64(0x1008, 0x4000);
    memory.zero(0x4000, 32);
    memory.write_u64(0x4000, 2);
    memory.write_u64(0x1010, 0x3000);
    memory.zero(0x3000, 24);
    memory.write_u64(0x3000, 1);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(node.error(), None);
    assert_eq!(
        found(&node),
        paths(&[("state.job", 0x2010), ("local", 0x3010)])
    );
    // Once the Rc has a second owner, its value is no longer searched either.
    memory.write_u64(0x3000, 2);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(found(&node), paths(&[("state.job", 0x2010)]));
}

#[test]
fn tokios_own_shared_state_is_left_to_the_decoders_but_its_mutex_is_searched() {
    let mut program = Program::new();
    let ready = ready(&mut program);
    // A channel's state keeps a `Notify` of its own, which is no wait of the listener's.
    let usize = program.usize();
    let notify = program.structure("tokio::sync::notify::Notify", 8, &[("state", 0, usize)]);
    let chan_name = "tokio::sync::mpsc::chan::Chan<u32>";
    let chan = program.structure(chan_name, 8, &[("notify_rx_closed", 0, notify)]);
    let to_chan = program.arc(chan_name, chan, 8);
    let mutex_name = format!("tokio::sync::mutex::Mutex<{READY}>");
    let mutex = program.structure(&mutex_name, 16, &[("c", 8, ready)]);
    let to_mutex = program.arc(&mutex_name, mutex, 16);
    program.structure(
        LISTENER,
        16,
        &[("sender", 0, to_chan), ("state", 8, to_mutex)],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.write_u64(0x1000, 0x2000);
    memory.write_u64(0x1008, 0x3000);
    memory.zero(0x2000, 24);
    memory.zero(0x3000, 32);
    memory.write_u64(0x3000, 1);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(node.error(), None);
    assert_eq!(found(&node), paths(&[("state.c", 0x3018)]));
}

#[test]
fn a_hash_map_shows_its_values_under_their_keys() {
    let mut program = Program::new();
    let ready = ready(&mut program);
    let key = program.str_ref();
    let entry = program.pair(("&str", key), (READY, ready), 16, 24);
    let map = program.hash_map(("&str", key), (READY, ready), entry);
    let u64 = program.u64();
    let numbered_entry = program.pair(("u64", u64), (READY, ready), 8, 16);
    let numbered = program.hash_map(("u64", u64), (READY, ready), numbered_entry);
    program.structure(LISTENER, 96, &[("queues", 0, map), ("by_id", 48, numbered)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    // Eight buckets of 24 bytes before the control bytes at 0x3000; buckets 1 and 6 full.
    memory.zero(0x1000, 96);
    memory.write_u64(0x1000, 0x3000);
    memory.write_u64(0x1008, 7);
    memory.write_u64(0x1018, 2);
    memory.write(0x3000, &[0xff, 0x12, 0xff, 0x80, 0xff, 0xff, 0x05, 0xff]);
    memory.zero(0x3000 - 8 * 24, 8 * 24);
    for (bucket, text) in [(1, "orders"), (6, "audit")] {
        let at = 0x3000 - (bucket + 1) * 24;
        memory.write_u64(at, 0x4000 + bucket * 0x10);
        memory.write_u64(at + 8, text.len() as u64);
        memory.write_str(0x4000 + bucket * 0x10, text);
    }
    // Keys of numbers; four buckets of 16 bytes, bucket 2 full.
    memory.write_u64(0x1030, 0x5000);
    memory.write_u64(0x1038, 3);
    memory.write_u64(0x1048, 1);
    memory.write(0x5000, &[0xff, 0xff, 0x44, 0xff]);
    memory.zero(0x5000 - 64, 64);
    memory.write_u64(0x5000 - 48, 7);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(node.error(), None);
    assert_eq!(
        found(&node),
        paths(&[
            ("queues[\"orders\"]", 0x3000 - 2 * 24 + 16),
            ("queues[\"audit\"]", 0x3000 - 7 * 24 + 16),
            ("by_id[7]", 0x5000 - 48 + 8),
        ])
    );
    // A mask that is no power of two less one, and control bytes that cannot be read.
    memory.write_u64(0x1008, 6);
    assert!(error_of(&decode(&debug, &memory, 0x1000)).contains("queues: "));
    memory.write_u64(0x1008, 7);
    memory.write_u64(0x1000, 0xdead_0000);
    let node = decode(&debug, &memory, 0x1000);
    assert!(error_of(&node).contains("cannot read"), "{node:?}");
    assert_eq!(found(&node), paths(&[("by_id[7]", 0x5000 - 48 + 8)]));
}

/// A B-tree node at `at`: its entries' keys and values' addresses are its own (the values
/// hold nothing), `children` its edges.
fn write_btree_node(memory: &mut TestMemory, at: u64, keys: &[u32], children: &[u64]) {
    memory.zero(at, 240);
    for (index, key) in keys.iter().enumerate() {
        memory.write_u32(at + 96 + 4 * index as u64, *key);
    }
    memory.write(at + 142, &(keys.len() as u16).to_le_bytes());
    for (index, child) in children.iter().enumerate() {
        memory.write_u64(at + 144 + 8 * index as u64, *child);
    }
}

#[test]
fn a_btree_map_of_two_levels_is_searched_in_key_order() {
    let mut program = Program::new();
    let ready = ready(&mut program);
    let u32 = program.u32();
    let map = program.btree_map(("u32", u32), (READY, ready));
    program.structure(LISTENER, 24, &[("workers", 0, map)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    // Twelve entries: a root of one key over two leaves of six and five.
    memory.write_u64(0x1000, 0x2000);
    memory.write_u64(0x1008, 1);
    memory.write_u64(0x1010, 12);
    write_btree_node(&mut memory, 0x2000, &[6], &[0x3000, 0x4000]);
    write_btree_node(&mut memory, 0x3000, &[0, 1, 2, 3, 4, 5], &[]);
    write_btree_node(&mut memory, 0x4000, &[7, 8, 9, 10, 11], &[]);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(node.error(), None);
    let value = |node: u64, index: u64| node + 8 + 8 * index;
    let mut expected: Vec<(String, u64)> = (0..6)
        .map(|key| (format!("workers[{key}]"), value(0x3000, key)))
        .collect();
    expected.push(("workers[6]".into(), value(0x2000, 0)));
    expected.extend((7..12).map(|key| (format!("workers[{key}]"), value(0x4000, key - 7))));
    assert_eq!(found(&node), expected);
    // An empty map, then a node that claims more entries than it has room for, then a
    // tree taller than any.
    memory.write_u64(0x1000, 0);
    assert_eq!(decode(&debug, &memory, 0x1000).children.len(), 0);
    memory.write_u64(0x1000, 0x2000);
    memory.write(0x4000 + 142, &40u16.to_le_bytes());
    let node = decode(&debug, &memory, 0x1000);
    assert!(
        error_of(&node).contains("a node at 0x4000 claims 40 entries in room for 11 (corrupt?)"),
        "{node:?}"
    );
    memory.write_u64(0x1008, 1 << 40);
    assert!(error_of(&decode(&debug, &memory, 0x1000)).contains("levels tall (corrupt?)"));
    // Edges that lead back to their own node: the walk ends.
    memory.write_u64(0x1008, 20);
    write_btree_node(&mut memory, 0x2000, &[6], &[0x2000, 0x2000]);
    let node = decode(&debug, &memory, 0x1000);
    assert!(
        error_of(&node).contains("more nodes than entries"),
        "{node:?}"
    );
}

#[test]
fn huge_and_corrupt_collections_stop_with_an_error_line() {
    let mut program = Program::new();
    let ready = ready(&mut program);
    // An element whose tag must be read, so that each element costs a read.
    let option = program.option(READY, ready, 8, 16);
    let options = program.vec(&format!("core::option::Option<{READY}>"), option);
    let readies = program.vec(READY, ready);
    program.structure(
        LISTENER,
        96,
        &[
            ("slots", 0, options),
            ("a", 24, readies),
            ("b", 48, readies),
            ("c", 72, readies),
        ],
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    memory.zero(0x1000, 96);
    // More elements than room for them.
    write_vec(&mut memory, 0x1000, 2, 0x2000, 3);
    let node = decode(&debug, &memory, 0x1000);
    assert!(
        error_of(&node).starts_with("app::Listener: slots: alloc::vec::Vec<"),
        "{node:?}"
    );
    assert!(error_of(&node).contains("claims 3 elements in room for 2 (corrupt?)"));
    // A billion elements at a pointer that leads nowhere: the read of each fails, and the
    // search of the collection stops at its bound.
    write_vec(&mut memory, 0x1000, 1 << 30, 0xdead_0000, 1 << 30);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(
        error_of(&node),
        "app::Listener: slots: holds 1073741824 values, the first 4096 searched"
    );
    assert!(node.children.is_empty());
    write_vec(&mut memory, 0x1000, 0, 0, 0);
    // Ten thousand futures: the first 4096 are searched.
    write_vec(&mut memory, 0x1018, 10_000, 0x10_0000, 10_000);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(
        error_of(&node),
        "app::Listener: a: holds 10000 values, the first 4096 searched"
    );
    assert_eq!(node.children.len(), 4096);
    assert_eq!(node.children[4095].via(), Some("a[4095]"));
    // Three collections of 4000: the search stops after 8192 values, the four fields among
    // them.
    for at in [0x1018, 0x1030, 0x1048] {
        write_vec(&mut memory, at, 4000, 0x10_0000, 4000);
    }
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(
        error_of(&node),
        "app::Listener: search stopped after 8192 values"
    );
    assert_eq!(node.children.len(), 8192 - 4);
}

#[test]
fn a_search_root_names_what_it_finds_and_what_stopped_it_from_its_own_path() {
    use crate::future::outcome::SearchRoot;
    let mut program = Program::new();
    let ready = ready(&mut program);
    let jobs = program.vec(READY, ready);
    program.structure(LISTENER, 24, &[("jobs", 0, jobs)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    write_vec(&mut memory, 0x1000, 2, 0x2000, 2);
    let target = Target::new(&debug, &memory, 0);
    let decoder = FutureDecoder::new(&target);
    let listener = target.value(die_of(&debug, LISTENER), 0x1000).unwrap();
    // A closure's capture that is a collection of futures, and a service's fields.
    let vec = listener.field("jobs").unwrap();
    let (children, incomplete) = decoder.search(&SearchRoot::value(&vec, "jobs")).unwrap();
    let vias: Vec<_> = children
        .iter()
        .map(|c| (c.via.clone().unwrap(), c.held))
        .collect();
    assert_eq!(vias, [("jobs[0]".into(), false), ("jobs[1]".into(), false)]);
    assert!(incomplete.is_none());
    write_vec(&mut memory, 0x1000, 1, 0x2000, 2);
    let target = Target::new(&debug, &memory, 0);
    let decoder = FutureDecoder::new(&target);
    let listener = target.value(die_of(&debug, LISTENER), 0x1000).unwrap();
    let root = SearchRoot::fields_of(&listener, "service");
    let (children, incomplete) = decoder.search(&root).unwrap();
    assert!(children.is_empty());
    let message = incomplete.expect("an error").message();
    assert!(
        message.starts_with("service: jobs: alloc::vec::Vec<"),
        "{message}"
    );
}

#[test]
fn a_future_two_parents_reach_is_decoded_once_and_marked_shared_not_a_cycle() {
    let mut program = Program::new();
    let ready = ready(&mut program);
    let boxed = program.boxed(READY, ready);
    program.structure(LISTENER, 16, &[("first", 0, boxed), ("second", 8, boxed)]);
    let debug = program.load();
    let mut memory = TestMemory::default();
    // Both boxes lead to one Ready at 0x2000 (as clones of a `Shared` lead to its future).
    memory.write_u64(0x1000, 0x2000);
    memory.write_u64(0x1008, 0x2000);
    memory.zero(0x2000, 8);
    let node = decode(&debug, &memory, 0x1000);
    assert_eq!(
        found(&node),
        paths(&[("first", 0x2000), ("second", 0x2000)])
    );
    let flags: Vec<(bool, Option<&str>)> = node
        .children
        .iter()
        .map(|child| (child.shared(), child.error()))
        .collect();
    assert_eq!(flags, [(false, None), (true, None)]);
    assert_eq!(node.error(), None);
}

#[test]
fn a_future_that_leads_back_to_itself_is_a_cycle() {
    let mut program = Program::new();
    let dyn_name = "(dyn core::future::future::Future<Output=()> + core::marker::Send)";
    let boxed_name = format!("alloc::boxed::Box<{dyn_name}, alloc::alloc::Global>");
    let boxed = program.boxed_dyn(dyn_name);
    let pinned = program.pin(&boxed_name, boxed, 16);
    let listener = program.structure(LISTENER, 16, &[("inner", 0, pinned)]);
    program.vtable(
        LISTENER,
        listener,
        "core::future::future::Future",
        0x50_0000,
    );
    let debug = program.load();
    let mut memory = TestMemory::default();
    // The listener's boxed future is the listener itself.
    memory.write_u64(0x1000, 0x1000);
    memory.write_u64(0x1008, 0x50_0000);
    let node = decode(&debug, &memory, 0x1000);
    let [child] = &node.children[..] else {
        panic!("one child: {node:?}")
    };
    assert_eq!((child.address, child.type_name()), (0x1000, LISTENER));
    assert!(!child.shared());
    assert!(error_of(child).contains("cycle: this future awaits itself, at 0x1000"));
}
