//! One command's work: from the debugger's threads to a `Report`. Reads each thread's
//! tokio context, finds the runtimes, walks their tasks and decodes the futures.

use std::collections::HashMap;

use serde::Deserialize;

use crate::dwarf::DebugInfo;
use crate::error::{Error, ErrorKind, Result};
use crate::future::{error_node, mark_running, FutureDecoder};
use crate::memory::Memory;
use crate::model::{FutureNode, Report, RuntimeReport, TaskReport, ThreadReport, ThreadRole, REPORT_VERSION};
use crate::names;
use crate::tokio::compat;
use crate::tokio::context::{find_context_variable, read_thread_context, RuntimeHandle};
use crate::tokio::tasks::{TaskFuture, TaskReader};
use crate::value::Target;

/// What the debugger knows about one thread.
#[derive(Debug, Deserialize)]
pub struct ThreadInput {
    pub tid: u64,
    pub name: Option<String>,
    pub fs_base: Option<u64>,
    /// The frame that blocks on a future (see `compat::BLOCK_ON_FRAMES`), if any.
    pub block_on: Option<BlockOnFrame>,
    /// The thread's innermost frames, innermost first (to see what a worker executes).
    #[serde(default)]
    pub frames: Vec<FrameInput>,
}

#[derive(Debug, Deserialize)]
pub struct FrameInput {
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub struct BlockOnFrame {
    /// The frame's function as the debugger names it, generic arguments included.
    pub function: String,
    /// The bytes of the local holding `Pin<&mut F>`, hex; `None` if the debugger could
    /// not read it (optimized out).
    pub local_bytes: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Request {
    pub threads: Vec<ThreadInput>,
    /// Every task, not only the ones running now.
    pub all: bool,
}

pub fn inspect(debug: &DebugInfo, memory: &dyn Memory, load_bias: u64, request: &Request) -> Result<Report> {
    let target = Target { debug, memory, load_bias };
    let context_variable = find_context_variable(debug)?;
    let decoder = FutureDecoder::new(&target);

    struct ThreadState<'t> {
        input: &'t ThreadInput,
        runtime: Option<RuntimeHandle<'t>>,
        worker: Option<u64>,
        current_task: Option<u64>,
        error: Option<String>,
    }

    let mut threads: Vec<&ThreadInput> = request.threads.iter().collect();
    threads.sort_by_key(|thread| thread.tid);
    let mut states = Vec::new();
    let mut runtimes: Vec<RuntimeHandle<'_>> = Vec::new();
    for input in threads {
        let mut state = ThreadState { input, runtime: None, worker: None, current_task: None, error: None };
        match input.fs_base {
            None => state.error = Some("the debugger gave no thread pointer (fs_base) for this thread".into()),
            Some(fs_base) => match read_thread_context(&target, &context_variable, fs_base) {
                Ok(Some(context)) => {
                    if let Some(handle) = &context.handle {
                        if !runtimes.iter().any(|known| known.handle.address == handle.handle.address) {
                            runtimes.push(handle.clone());
                        }
                    }
                    state.runtime = context.handle;
                    state.worker = context.worker_index;
                    state.current_task = context.current_task;
                }
                Ok(None) => {}
                Err(error) => state.error = Some(format!("cannot read this thread's tokio context: {error}")),
            },
        }
        states.push(state);
    }
    if runtimes.is_empty() {
        if let Some(error) = states.iter().find_map(|state| state.error.clone()) {
            return Err(Error::new(ErrorKind::Memory, error));
        }
        return Err(Error::new(
            ErrorKind::NoRuntime,
            "tokio is linked in, but no thread is inside a tokio runtime (not started yet, or already shut down)",
        ));
    }

    let mut report =
        Report { version: REPORT_VERSION, threads: Vec::new(), tasks: Vec::new(), runtimes: Vec::new(), errors: Vec::new() };
    // A worker's current task id also names its own blocking task while it idles; only
    // ids found in a runtime's task list are tasks it runs.
    let running: HashMap<u64, &ThreadInput> = states
        .iter()
        .filter(|state| state.worker.is_some())
        .filter_map(|state| state.current_task.map(|id| (id, state.input)))
        .collect();
    let task_reader = TaskReader::new(&target)?;
    let mut roots_by_id: HashMap<u64, FutureNode> = HashMap::new();
    for runtime in &runtimes {
        let runtime_address = format!("{:#x}", runtime.handle.address);
        let walk = match task_reader.task_addresses(&runtime.handle) {
            Ok(walk) => walk,
            Err(error) => {
                report.errors.push(format!("runtime {runtime_address}: cannot walk its task list: {error}"));
                Default::default()
            }
        };
        report.errors.extend(walk.problems.iter().map(|problem| format!("runtime {runtime_address}: {problem}")));
        let addresses = walk.addresses;
        report.runtimes.push(RuntimeReport {
            address: runtime_address.clone(),
            flavor: runtime.flavor.clone(),
            task_count: addresses.len(),
        });
        for address in addresses {
            let header = match task_reader.read_header(address) {
                Ok(header) => header,
                Err(error) => {
                    if !walk.unreadable.contains(&address) {
                        report.errors.push(format!("task at {address:#x}: {error}"));
                    }
                    continue;
                }
            };
            let running_on = running.get(&header.id);
            if !request.all && running_on.is_none() {
                continue;
            }
            let (root, error) = match task_reader.future(&header) {
                Ok(TaskFuture::Running { ty, address }) => {
                    let mut root = decoder.decode(ty, address);
                    if let Some(thread) = running_on {
                        mark_running(&mut root, &thread.frames);
                    }
                    (root, None)
                }
                Ok(TaskFuture::Gone { ty, stage }) => {
                    let mut node = decoder.describe_type(ty, address);
                    node.error = Some(format!("the future is gone (task stage: {stage})"));
                    (node, None)
                }
                Err(error) => (error_node("<unknown>", address, error.clone()), Some(error.message)),
            };
            roots_by_id.insert(header.id, root.clone());
            report.tasks.push(TaskReport {
                id: header.id,
                address: format!("{address:#x}"),
                state: header.state(),
                root,
                runtime: runtime_address.clone(),
                error,
            });
        }
    }
    report.tasks.sort_by_key(|task| task.id);

    for state in states {
        let block_on = state.input.block_on.as_ref();
        let role = if state.worker.is_some() {
            ThreadRole::Worker
        } else if block_on.is_some() {
            ThreadRole::BlockOn
        } else if state.runtime.is_some() {
            ThreadRole::Other
        } else {
            continue;
        };
        let mut error = state.error;
        let future = match role {
            ThreadRole::Worker => state.current_task.and_then(|id| roots_by_id.get(&id).cloned()),
            ThreadRole::BlockOn => match block_on_future(&target, &decoder, block_on.unwrap()) {
                Ok(mut node) => {
                    mark_running(&mut node, &state.input.frames);
                    Some(node)
                }
                Err(message) => {
                    error = Some(message);
                    None
                }
            },
            ThreadRole::Other => None,
        };
        report.threads.push(ThreadReport {
            tid: state.input.tid,
            name: state.input.name.clone(),
            role,
            worker: state.worker,
            current_task: state.current_task.filter(|id| role == ThreadRole::Worker && roots_by_id.contains_key(id)),
            future,
            runtime: state.runtime.map(|runtime| format!("{:#x}", runtime.handle.address)),
            error,
        });
    }
    Ok(report)
}

/// The future a `block_on` frame polls: its type from the frame function's generic
/// argument, its address from the `Pin<&mut F>` local.
fn block_on_future(target: &Target<'_>, decoder: &FutureDecoder<'_>, frame: &BlockOnFrame) -> std::result::Result<FutureNode, String> {
    if let Some(error) = &frame.error {
        return Err(format!("cannot read the block_on future: {error}"));
    }
    let future_type = generic_argument(&frame.function)
        .ok_or_else(|| format!("cannot tell the future type from frame `{}`", frame.function))?;
    let die = target
        .debug
        .index
        .type_by_name(future_type)
        .ok_or_else(|| format!("no DWARF type {future_type} (the block_on future)"))?;
    let bytes = frame
        .local_bytes
        .as_deref()
        .and_then(parse_hex)
        .filter(|bytes| bytes.len() >= 8)
        .ok_or_else(|| "the block_on future's pointer is optimized out in this build".to_string())?;
    let address = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    Ok(decoder.decode(die, address))
}

/// `a::b::f<X<Y>, Z>` -> `X<Y>, Z`: the generic arguments of the last path segment.
fn generic_argument(function: &str) -> Option<&str> {
    let last = names::split_path(function).pop()?;
    let open = last.find('<')?;
    let inner = last[open + 1..].strip_suffix('>')?;
    Some(inner.trim())
}

fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

/// Frames the glue must look for, for `block_on` futures.
pub fn block_on_frames() -> &'static [(&'static str, &'static str)] {
    compat::BLOCK_ON_FRAMES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_argument_of_block_on_frame() {
        assert_eq!(
            generic_argument("tokio::runtime::park::CachedParkThread::block_on<tokio_app::main::{async_block_env#2}>"),
            Some("tokio_app::main::{async_block_env#2}")
        );
        assert_eq!(generic_argument("a::f"), None);
    }
}
