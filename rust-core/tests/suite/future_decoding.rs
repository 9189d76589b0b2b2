//! The decoding layer against real layouts: memory is synthesized from the fixture's DWARF
//! (state bytes written at the offsets the DWARF names), then decoded.

use crate::common;

use std::cell::RefCell;
use std::collections::BTreeMap;

use tokio_async_core::dwarf::{DebugInfo, DieRef};
use tokio_async_core::error::{Error, Result};
use tokio_async_core::future::FutureDecoder;
use tokio_async_core::memory::Memory;
use tokio_async_core::model::{CoroutineState, FutureNode, NodeKind};
use tokio_async_core::tokio::tasks::TaskReader;
use tokio_async_core::value::Target;

/// Zero-filled memory over [base, base + len), with bytes poked in by the test.
struct FakeMemory {
    base: u64,
    bytes: RefCell<Vec<u8>>,
    poked: BTreeMap<u64, u8>,
}

impl FakeMemory {
    fn new(base: u64, len: usize) -> Self {
        FakeMemory {
            base,
            bytes: RefCell::new(vec![0; len]),
            poked: BTreeMap::new(),
        }
    }

    fn poke(&mut self, address: u64, value: u8) {
        self.bytes.borrow_mut()[(address - self.base) as usize] = value;
        self.poked.insert(address, value);
    }
}

impl Memory for FakeMemory {
    fn read(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let bytes = self.bytes.borrow();
        let start = address
            .checked_sub(self.base)
            .ok_or_else(|| Error::memory(address, buf.len()))? as usize;
        let slice = bytes
            .get(start..start + buf.len())
            .ok_or_else(|| Error::memory(address, buf.len()))?;
        buf.copy_from_slice(slice);
        Ok(())
    }
}

/// Where the state byte of the env type `ty` sits, and for suspend point `index` where the
/// awaitee sits (both relative to the env).
fn offsets(debug: &DebugInfo, ty: DieRef, suspend: Option<u64>) -> (u64, Option<(u64, DieRef)>) {
    let info = debug.type_info(ty).unwrap();
    let part = info.variant_part.as_ref().unwrap();
    let state = part.discriminant.as_ref().unwrap().offset;
    let awaitee = suspend.map(|index| {
        let variant = part
            .variants
            .iter()
            .find(|v| v.discr_value == Some(3 + index))
            .unwrap();
        let fields = debug.type_info(variant.member.ty.unwrap()).unwrap();
        let field = fields.field("__awaitee").unwrap();
        (variant.member.offset + field.offset, field.ty.unwrap())
    });
    (state, awaitee)
}

/// (kind, function or type, state, await point, line) of one node.
type ChainEntry = (
    NodeKind,
    String,
    Option<CoroutineState>,
    Option<u64>,
    Option<u64>,
);

fn chain(node: &FutureNode) -> Vec<ChainEntry> {
    let mut out = Vec::new();
    let mut current = Some(node);
    while let Some(node) = current {
        out.push((
            node.kind,
            node.function().unwrap_or(node.type_name()).to_string(),
            node.state,
            node.await_point().map(u64::from),
            node.location.as_ref().map(|l| l.line),
        ));
        current = node.children.first();
    }
    out
}

const BASE: u64 = 0x7000_0000;

#[test]
fn decodes_a_three_level_await_chain_from_synthesized_memory() {
    let markers = common::await_markers();
    for profile in ["dev", "release"] {
        let debug = DebugInfo::load(&common::fixture("tokio-app", profile)).unwrap();
        let level1 = debug
            .type_by_name("tokio_app::level1::{async_fn_env#0}", None)
            .unwrap();
        let size = debug.type_info(level1).unwrap().size.unwrap() as usize;
        let mut memory = FakeMemory::new(BASE, size);

        // level1 at await #0 -> level2 at await #1 -> level3 at await #0 -> Receiver.
        let mut address = BASE;
        let mut ty = level1;
        for name in ["level1", "level2", "level3"] {
            let index = markers[name].1;
            let (state, awaitee) = offsets(&debug, ty, Some(index));
            memory.poke(address + state, (3 + index) as u8);
            let (offset, next) = awaitee.unwrap();
            address += offset;
            ty = next;
        }

        let target = Target::new(&debug, &memory, 0);
        let root = FutureDecoder::new(&target).decode(level1, BASE);
        let suspended = |function: &str, marker: &str| {
            let (line, index) = markers[marker];
            (
                NodeKind::AsyncFn,
                function.to_string(),
                Some(CoroutineState::Suspended),
                Some(index),
                Some(line),
            )
        };
        assert_eq!(
            chain(&root),
            vec![
                suspended("tokio_app::level1", "level1"),
                suspended("tokio_app::level2", "level2"),
                suspended("tokio_app::level3", "level3"),
                (
                    NodeKind::OneshotRecv,
                    "tokio::sync::oneshot::Receiver<u32>".to_string(),
                    None,
                    None,
                    None
                ),
            ],
            "{profile}"
        );
        assert_eq!(
            &*root.location.as_ref().unwrap().file,
            "tokio-app/src/main.rs"
        );
    }
}

#[test]
fn unresumed_corrupt_and_unreadable_futures() {
    let debug = DebugInfo::load(&common::fixture("tokio-app", "dev")).unwrap();
    let child = debug
        .type_by_name("tokio_app::child_task::{async_fn_env#0}", None)
        .unwrap();
    let size = debug.type_info(child).unwrap().size.unwrap() as usize;
    let (state, _) = offsets(&debug, child, None);

    // All zero: unresumed, located at the fn header.
    let memory = FakeMemory::new(BASE, size);
    let target = Target::new(&debug, &memory, 0);
    let node = FutureDecoder::new(&target).decode(child, BASE);
    assert_eq!(node.state, Some(CoroutineState::Unresumed));
    assert_eq!(
        node.location.unwrap().line,
        common::fn_markers()["child_task"]
    );
    assert!(node.children.is_empty());

    // A state no variant has: the node says so and stops.
    let mut memory = FakeMemory::new(BASE, size);
    memory.poke(BASE + state, 200);
    let target = Target::new(&debug, &memory, 0);
    let node = FutureDecoder::new(&target).decode(child, BASE);
    assert_eq!(node.function(), Some("tokio_app::child_task"));
    assert!(node
        .error()
        .unwrap()
        .ends_with("has state 200, which no variant has (corrupt or freed memory?)"));

    // Unreadable memory: an error naming the address, no panic.
    let memory = FakeMemory::new(BASE, 0);
    let target = Target::new(&debug, &memory, 0);
    let node = FutureDecoder::new(&target).decode(child, BASE + 0x40);
    let error = node.error().unwrap();
    assert!(
        error.contains(&format!("at {:#x}", BASE + 0x40)) && error.contains("cannot read 1 bytes"),
        "{error}"
    );
}

#[test]
fn a_task_parked_at_yield_now_is_a_yield_now_leaf() {
    // A yield is never parked for long in a live process (the task runs again at once),
    // so this state is built in memory: level2 suspended at its `yield_now().await`.
    let debug = DebugInfo::load(&common::fixture("tokio-app", "dev")).unwrap();
    let level2 = debug
        .type_by_name("tokio_app::level2::{async_fn_env#0}", None)
        .unwrap();
    let size = debug.type_info(level2).unwrap().size.unwrap() as usize;
    let (state, awaitee) = offsets(&debug, level2, Some(0));
    let (awaitee_offset, awaitee_type) = awaitee.unwrap();
    let (inner_state, _) = offsets(&debug, awaitee_type, Some(0));
    let mut memory = FakeMemory::new(BASE, size);
    memory.poke(BASE + state, 3);
    memory.poke(BASE + awaitee_offset + inner_state, 3);
    let target = Target::new(&debug, &memory, 0);
    let root = FutureDecoder::new(&target).decode(level2, BASE);
    assert_eq!(root.children.len(), 1);
    let leaf = &root.children[0];
    assert_eq!(leaf.kind, NodeKind::YieldNow);
    assert_eq!(leaf.function(), Some("tokio::task::yield_now::yield_now"));
    assert_eq!(
        leaf.summary.as_deref(),
        Some("yield_now (runs again on the next poll)")
    );
}

#[test]
fn a_failing_decoder_marks_its_node_and_the_parent_still_prints() {
    // chain_top suspended at its JoinHandle await, the handle pointing at unreadable memory.
    let debug = DebugInfo::load(&common::fixture("waits-app", "dev")).unwrap();
    let chain_top = debug
        .type_by_name("waits_app::chain_top::{async_fn_env#0}", None)
        .unwrap();
    let size = debug.type_info(chain_top).unwrap().size.unwrap() as usize;
    let (state, awaitee) = offsets(&debug, chain_top, Some(0));
    let (handle_offset, _) = awaitee.unwrap();
    let mut memory = FakeMemory::new(BASE, size);
    memory.poke(BASE + state, 3);
    memory.poke(BASE + handle_offset, 0x10); // JoinHandle.raw.ptr = 0x10
    let target = Target::new(&debug, &memory, 0);
    let tasks = TaskReader::new(&target).unwrap();
    let root = FutureDecoder::new(&target)
        .with_tasks(&tasks)
        .decode(chain_top, BASE);
    assert_eq!(root.function(), Some("waits_app::chain_top"));
    assert_eq!(root.state, Some(CoroutineState::Suspended));
    assert!(root.error().is_none());
    let handle = &root.children[0];
    assert_eq!(
        handle.type_name(),
        "tokio::runtime::task::join::JoinHandle<()>"
    );
    let error = handle
        .error()
        .expect("the decoder's failure is on the node");
    // The error names the path that led to it: each frame above, with its await point.
    assert_eq!(error, "waits_app::chain_top await #0 → tokio::runtime::task::join::JoinHandle<()>: cannot read 8 bytes at 0x10");
}

#[test]
fn only_types_that_can_hold_a_future_are_searched() {
    // Decided from the type graph alone: buffers, maps and shared state of plain data hold
    // no future (collections, Boxes and Arcs are followed to the types they hold, no other
    // pointer); wrappers of futures do, and so do sockets, which a hand-written future keeps
    // and polls (found as held waits).
    let debug = DebugInfo::load(&common::fixture("waits-app", "dev")).unwrap();
    let memory = FakeMemory::new(BASE, 8);
    let target = Target::new(&debug, &memory, 0);
    let decoder = FutureDecoder::new(&target);
    let holds = |name: &str| {
        let die = debug
            .type_by_name(name, None)
            .unwrap_or_else(|| panic!("no type {name}"));
        decoder.can_hold_future(die)
    };
    for name in [
        "alloc::vec::Vec<u8, alloc::alloc::Global>",
        "alloc::string::String",
        "alloc::sync::Arc<tokio::sync::mutex::Mutex<u32>, alloc::alloc::Global>",
        "std::collections::hash::map::HashMap<u64, u64, std::hash::random::RandomState>",
    ] {
        if debug.type_by_name(name, None).is_some() {
            assert!(!holds(name), "{name} was taken for a future holder");
        }
    }
    assert!(!holds("alloc::vec::Vec<u8, alloc::alloc::Global>"));
    assert!(holds("tokio::net::tcp::stream::TcpStream"));
    assert!(holds("tokio::time::sleep::Sleep"));
    assert!(holds("core::option::Option<tokio::time::sleep::Sleep>"));
    assert!(holds(
        "futures_util::future::future::fuse::Fuse<tokio::time::sleep::Sleep>"
    ));
    assert!(holds(
        "core::pin::Pin<alloc::boxed::Box<tokio::time::sleep::Sleep, alloc::alloc::Global>>"
    ));
}
