//! Why a task is not running: what each multi_thread worker is doing (running a task,
//! searching for work, parked) and what is queued for it (its LIFO slot and local run
//! queue), a current_thread runtime's local run queue, and each runtime's inject queue.
//! Queues hold task header addresses.

use rustc_hash::FxHashSet;

use crate::error::{Error, Result};
use crate::layouts::tokio::{self as runtime, workers};
use crate::memory::MemoryExt;
use crate::std_values;
use crate::value::Value;

/// The most tasks read from one queue (a local queue holds 256; the inject queue is
/// unbounded, so corrupt links must not run away).
const MAX_QUEUED: usize = 100_000;

/// A worker's core, as its thread's scheduler context holds it.
pub struct WorkerCore {
    pub searching: bool,
    /// The worker took its parker out of the core to park on it.
    pub parked: bool,
    pub lifo_slot: Option<u64>,
    pub run_queue: Vec<u64>,
}

/// The core of the worker whose `worker::Context` this is; `None` when the worker has
/// handed its core away (`block_in_place`) or not taken it yet.
pub fn worker_core(context: &Value<'_>) -> Result<Option<WorkerCore>> {
    let Some(core) = context_core(context)? else {
        return Ok(None);
    };
    let searching = core.field(workers::IS_SEARCHING)?.read_uint()? != 0;
    let parked = std_values::option(&core.field(workers::PARKER)?)?.is_none();
    let lifo_slot = match std_values::option(&core.field(workers::LIFO_SLOT)?)? {
        Some(notified) => Some(notified_header(&notified)?),
        None => None,
    };
    Ok(Some(WorkerCore {
        searching,
        parked,
        lifo_slot,
        run_queue: run_queue(&core)?,
    }))
}

/// The headers in a worker's local run queue, oldest first.
fn run_queue(core: &Value<'_>) -> Result<Vec<u64>> {
    let inner = std_values::at_path(core, workers::RUN_QUEUE)?;
    let head = inner.field(workers::QUEUE_HEAD)?.read_uint()?
        & ((1u64 << workers::QUEUE_REAL_HEAD_BITS) - 1);
    let tail = inner.field(workers::QUEUE_TAIL)?.read_uint()?;
    let buffer = inner.field(workers::QUEUE_BUFFER)?;
    let array = inner.target.debug.type_info(buffer.pointer_target()?)?;
    let slot = inner.target.debug.type_info(
        array
            .target
            .ok_or_else(|| Error::layout("run queue buffer has no element type"))?,
    )?;
    let (Some(capacity), Some(stride)) = (array.array_len, slot.size.filter(|&size| size > 0))
    else {
        return Err(Error::layout("run queue buffer has no length"));
    };
    let queued = (tail as u32).wrapping_sub(head as u32) as u64;
    if capacity == 0 || !capacity.is_power_of_two() || queued > capacity {
        return Err(Error::layout(format!(
            "run queue claims {queued} tasks in {capacity} slots (corrupt or mid-update?)"
        )));
    }
    let base = buffer.read_pointer()?;
    (0..queued)
        .map(|i| {
            let index = head.wrapping_add(i) & (capacity - 1);
            let address = index
                .checked_mul(stride)
                .and_then(|at| base.checked_add(at))
                .ok_or_else(|| Error::layout("run queue slot past the address space"))?;
            notified_header(&inner.target.value_of_type(slot.clone(), address))
        })
        .collect()
}

/// The headers in a current_thread runtime's local run queue, oldest first, as the
/// `current_thread::Context` of the thread driving it holds its core; `None` while the core
/// is out of the context (taken by another `block_on`, say).
pub fn current_thread_queue(context: &Value<'_>) -> Result<Option<Vec<u64>>> {
    let Some(core) = context_core(context)? else {
        return Ok(None);
    };
    let tasks = std_values::vec_deque_items(
        &core.field(workers::CURRENT_THREAD_TASKS)?,
        MAX_QUEUED as u64,
    )?;
    tasks
        .iter()
        .map(notified_header)
        .collect::<Result<Vec<u64>>>()
        .map(Some)
}

/// Whether the runtime is shutting down: it has closed its task list, so it takes no new
/// task and shuts down (drops) those it still lists.
pub fn shutting_down(handle: &Value<'_>) -> Result<bool> {
    let owned = std_values::at(handle, runtime::HANDLE_OWNED_TASKS)?;
    Ok(std_values::at_path(&owned, runtime::OWNED_TASKS_CLOSED)?.read_uint()? != 0)
}

/// The headers in a runtime's inject queue, oldest first.
/// How many tasks tokio counts in a runtime's inject queue.
/// Whether a thread holds the inject queue's lock: its head and length may disagree then
/// (a push or pop half done). `None` where the lock cannot be read.
pub fn inject_locked(handle: &Value<'_>) -> Option<bool> {
    let lock = std_values::at(handle, runtime::INJECT_LOCK).ok()?;
    std_values::tokio_mutex_locked(&lock).ok().flatten()
}

pub fn inject_len(handle: &Value<'_>) -> Result<u64> {
    std_values::at(handle, runtime::INJECT_LEN)?.read_uint()
}

pub fn inject_queue(handle: &Value<'_>) -> Result<Vec<u64>> {
    let head = std_values::at(handle, runtime::INJECT_HEAD)?.read_pointer()?;
    let header_type = handle
        .target
        .debug
        .type_named(runtime::HEADER_TYPE)?
        .ok_or_else(|| Error::layout(format!("no type {}", runtime::HEADER_TYPE)))?;
    let next_offset = header_type
        .field(runtime::HEADER_QUEUE_NEXT)
        .ok_or_else(|| {
            Error::layout(format!(
                "{} has no `{}`",
                runtime::HEADER_TYPE,
                runtime::HEADER_QUEUE_NEXT
            ))
        })?
        .offset;
    let mut headers = Vec::new();
    let mut seen = FxHashSet::default();
    let mut node = head;
    while node != 0 {
        if !seen.insert(node) || headers.len() >= MAX_QUEUED {
            return Err(Error::layout(format!(
                "inject queue loops or runs past {MAX_QUEUED} tasks at {node:#x}"
            )));
        }
        headers.push(node);
        let link = node
            .checked_add(next_offset)
            .ok_or_else(|| Error::layout("inject queue link past the address space"))?;
        node = handle.target.memory.read_u64(link)?;
    }
    Ok(headers)
}

/// The core a scheduler context holds (`core: RefCell<Option<Box<Core>>>`, both flavors).
fn context_core<'a>(context: &Value<'a>) -> Result<Option<Value<'a>>> {
    match std_values::option(&std_values::at(context, workers::CONTEXT_CORE)?)? {
        Some(core) => core.pointee().map(Some),
        None => Ok(None),
    }
}

fn notified_header(notified: &Value<'_>) -> Result<u64> {
    std_values::at(notified, workers::NOTIFIED_HEADER)?.read_pointer()
}
