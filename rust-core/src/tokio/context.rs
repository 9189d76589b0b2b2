//! A thread's tokio `CONTEXT` thread-local: which runtime it is in, whether it is a worker,
//! and which task it is running.

use crate::arch;
use crate::dwarf::{DebugInfo, ThreadLocalPlace, ThreadLocalSearch};
use crate::error::{Error, ErrorKind, Result};
use crate::layouts::{rust, tokio as layout};
use crate::std_values;
use crate::value::{Target, Value};

/// Finds the `CONTEXT` variable (the search is kept with the binary: it scans the ELF
/// symbols).
pub fn find_context_variable(debug: &DebugInfo) -> Result<ThreadLocalPlace> {
    let found = debug.thread_local(layout::CONTEXT_TLS_NAMESPACE, ThreadLocalSearch::Required);
    if let Some(variable) = found? {
        return Ok(variable);
    }
    let message = if debug.type_by_name(layout::CONTEXT_TYPE, None).is_some() {
        format!(
            "{} uses tokio, but its runtime context thread-local is not where this tool looks \
             (unsupported tokio or rustc version?)",
            debug.path.display()
        )
    } else {
        format!(
            "{} is not a tokio program: it has no tokio runtime in its DWARF",
            debug.path.display()
        )
    };
    Err(Error::new(ErrorKind::NotTokio, message))
}

/// The LocalSet `CURRENT` thread-local; `None` in a program without LocalSets (only its
/// decoys are left where the linker dropped it).
pub fn find_local_set_variable(debug: &DebugInfo) -> Option<ThreadLocalPlace> {
    debug
        .thread_local(layout::LOCAL_TLS_NAMESPACE, ThreadLocalSearch::IfLinked)
        .ok()
        .flatten()
}

/// The address of a variable in the main executable's static TLS block.
pub fn tls_address(debug: &DebugInfo, fs_base: u64, tls_offset: u64) -> Result<u64> {
    let segment = debug
        .elf
        .tls
        .ok_or_else(|| Error::layout("the executable has no PT_TLS segment"))?;
    Ok(arch::static_tls_address(
        fs_base,
        segment.memsz,
        segment.align,
        tls_offset,
    ))
}

/// What one thread's `CONTEXT` says.
pub struct ThreadContext<'a> {
    /// The runtime handle (the scheduler's `Handle` struct) this thread is inside of.
    pub handle: Option<RuntimeHandle<'a>>,
    pub worker_index: Option<u64>,
    /// A multi_thread worker's `worker::Context` (its core, see `workers.rs`).
    pub worker_context: Option<Value<'a>>,
    /// A current_thread runtime's `current_thread::Context`, on the thread driving it.
    pub current_thread_context: Option<Value<'a>>,
    pub current_task: Option<u64>,
}

#[derive(Clone)]
pub struct RuntimeHandle<'a> {
    pub flavor: String,
    pub handle: Value<'a>,
}

pub fn read_thread_context<'a>(
    target: &'a Target<'a>,
    variable: &ThreadLocalPlace,
    fs_base: u64,
) -> Result<Option<ThreadContext<'a>>> {
    let address = tls_address(target.debug, fs_base, variable.tls_offset)?;
    let storage = target.value(variable.storage_type, address)?;
    let Some(context) = std_values::thread_local(&storage)? else {
        return Ok(None);
    };
    if context.ty.name != layout::CONTEXT_TYPE {
        return Err(Error::layout(format!(
            "the CONTEXT thread-local holds a {}, not a {} (unknown layout)",
            context.ty.name,
            layout::CONTEXT_TYPE
        )));
    }
    let handle = match std_values::option(&std_values::at(&context, layout::CONTEXT_HANDLE)?)? {
        Some(handle) => {
            let (flavor, payload) = handle.variant()?;
            Some(RuntimeHandle {
                handle: std_values::arc_data(&payload.field(rust::TUPLE_FIRST)?)?,
                flavor,
            })
        }
        None => None,
    };
    let scheduler = read_scheduler_context(&context).unwrap_or(None);
    let current_thread_context = match &scheduler {
        Some((flavor, payload)) if flavor == layout::CURRENT_THREAD_VARIANT => {
            Some(payload.clone())
        }
        _ => None,
    };
    let (worker_index, worker_context) = match scheduler {
        Some((flavor, payload)) if flavor == layout::MULTI_THREAD_VARIANT => {
            read_worker(payload).ok().unzip()
        }
        _ => (None, None),
    };
    let current_task =
        match std_values::option(&std_values::at(&context, layout::CONTEXT_CURRENT_TASK)?)? {
            Some(id) => Some(id.read_uint()?),
            None => None,
        };
    Ok(Some(ThreadContext {
        handle,
        worker_index,
        worker_context,
        current_thread_context,
        current_task,
    }))
}

/// The scheduler context the thread is inside of: its flavor and the flavor's `Context`.
fn read_scheduler_context<'a>(context: &Value<'a>) -> Result<Option<(String, Value<'a>)>> {
    let pointer = std_values::at(context, layout::CONTEXT_SCHEDULER)?;
    if pointer.read_pointer()? == 0 {
        return Ok(None);
    }
    let (flavor, payload) = pointer.pointee()?.variant()?;
    Ok(Some((flavor, payload.field(rust::TUPLE_FIRST)?)))
}

/// A multi_thread worker's index and its `worker::Context`.
fn read_worker(worker_context: Value<'_>) -> Result<(u64, Value<'_>)> {
    let worker = std_values::arc_data(&worker_context.field(layout::WORKER_CONTEXT_WORKER)?)?;
    Ok((
        worker.field(layout::WORKER_INDEX)?.read_uint()?,
        worker_context,
    ))
}

/// The `Shared` of the LocalSet the thread is polling, entering or dropping now, from its
/// `CURRENT` thread-local; `None` outside any.
pub fn read_local_set_context<'a>(
    target: &'a Target<'a>,
    variable: &ThreadLocalPlace,
    fs_base: u64,
) -> Result<Option<Value<'a>>> {
    let address = tls_address(target.debug, fs_base, variable.tls_offset)?;
    let storage = target.value(variable.storage_type, address)?;
    let Some(data) = std_values::thread_local(&storage)? else {
        return Ok(None);
    };
    if data.ty.name != layout::LOCAL_DATA_TYPE {
        return Err(Error::layout(format!(
            "the LocalSet thread-local holds a {}, not a {} (unknown layout)",
            data.ty.name,
            layout::LOCAL_DATA_TYPE
        )));
    }
    match std_values::option(&std_values::at(&data, layout::LOCAL_DATA_CONTEXT)?)? {
        Some(context) => Ok(Some(std_values::at_path(
            &context,
            layout::LOCAL_CONTEXT_SHARED,
        )?)),
        None => Ok(None),
    }
}
