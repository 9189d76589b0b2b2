//! A report's JSON with its tasks made on two threads. The report is written as its
//! `Serialize` says, the tasks left out (a marker in their place), and the tasks then
//! written in that place in chunks of finished bytes, which the writing thread and a helper
//! make side by side (`write_tasks`). The bytes are those `serde_json::to_writer(report)`
//! writes on one thread, with no task's JSON made twice or held as a value of its own.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;

use serde::Serializer;

use super::{Fields, FutureNode, Hex, Report, TaskReport};

/// Tasks per chunk: enough that handing a chunk over costs little beside making it.
const CHUNK: usize = 256;
/// Chunks the writing thread makes ahead of the one it waits for, at most.
const MADE_AHEAD: usize = 4;

/// What the report says in place of its tasks while `write_report` writes them apart: a
/// string no task list can be, since nothing else is written as the value of a `tasks` key.
const LEFT_OUT: &str = "\u{0}tasks written apart\u{0}";

thread_local! {
    /// Set while `write_report` writes a report without its tasks.
    static TASKS_LEFT_OUT: Cell<bool> = const { Cell::new(false) };
}

/// Leaves the tasks out of the reports serialized on this thread while it lives.
struct LeavingTasksOut;

impl LeavingTasksOut {
    fn start() -> Self {
        TASKS_LEFT_OUT.with(|left_out| left_out.set(true));
        LeavingTasksOut
    }
}

impl Drop for LeavingTasksOut {
    fn drop(&mut self) {
        TASKS_LEFT_OUT.with(|left_out| left_out.set(false));
    }
}

/// The report's `tasks`: every task, or the marker while `write_report` writes them.
pub fn serialize<S: Serializer>(tasks: &[TaskReport], serializer: S) -> Result<S::Ok, S::Error> {
    if TASKS_LEFT_OUT.with(Cell::get) {
        return serializer.serialize_str(LEFT_OUT);
    }
    serializer.collect_seq(tasks)
}

fn encoding_error(error: serde_json::Error) -> io::Error {
    io::Error::other(error)
}

/// Writes `report`'s JSON to `out`, the bytes `serde_json::to_writer` writes, its tasks
/// made on two threads. `out` gets few and large writes: it needs no buffer of its own.
pub fn write_report(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let without_tasks = {
        let _left_out = LeavingTasksOut::start();
        serde_json::to_vec(report).map_err(encoding_error)?
    };
    let mut marker = b"\"tasks\":".to_vec();
    serde_json::to_writer(&mut marker, LEFT_OUT).map_err(encoding_error)?;
    let mut places = without_tasks
        .windows(marker.len())
        .enumerate()
        .filter(|(_, window)| *window == marker.as_slice())
        .map(|(at, _)| at);
    let (Some(at), None) = (places.next(), places.next()) else {
        // Not one place (a value said the marker as the key tasks: never seen): one thread.
        let mut buffered = io::BufWriter::new(out);
        serde_json::to_writer(&mut buffered, report).map_err(encoding_error)?;
        return buffered.flush();
    };
    let key_end = at + b"\"tasks\":".len();
    out.write_all(&without_tasks[..key_end])?;
    write_tasks(&report.tasks, out)?;
    out.write_all(&without_tasks[at + marker.len()..])
}

/// Appends chunk `index` (`tasks`) to `bytes`, each task after a comma but the list's first.
fn write_chunk(index: usize, tasks: &[TaskReport], bytes: &mut Vec<u8>) -> io::Result<()> {
    for (at, task) in tasks.iter().enumerate() {
        if index > 0 || at > 0 {
            bytes.push(b',');
        }
        write_task(bytes, task).map_err(encoding_error)?;
    }
    Ok(())
}

/// `Fields` as JSON bytes: the keys as they are (names of the schema, which need no
/// escaping), each value as `serde_json` writes it; the bytes `serde_json::to_writer`
/// writes for the whole.
struct JsonFields<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl JsonFields<'_> {
    fn key(&mut self, key: &'static str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }
}

impl Fields for JsonFields<'_> {
    type Error = serde_json::Error;

    fn entry<T: serde::Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        self.key(key);
        serde_json::to_writer(&mut *self.out, value)
    }

    fn address(&mut self, key: &'static str, address: u64) -> Result<(), serde_json::Error> {
        self.key(key);
        let (text, len) = Hex(address).text();
        self.out.push(b'"');
        self.out.extend_from_slice(&text[..len]);
        self.out.push(b'"');
        Ok(())
    }

    fn node(&mut self, key: &'static str, node: &FutureNode) -> Result<(), serde_json::Error> {
        self.key(key);
        write_node(self.out, node)
    }

    fn nodes(&mut self, key: &'static str, nodes: &[FutureNode]) -> Result<(), serde_json::Error> {
        self.key(key);
        self.out.push(b'[');
        for (at, node) in nodes.iter().enumerate() {
            if at > 0 {
                self.out.push(b',');
            }
            write_node(self.out, node)?;
        }
        self.out.push(b']');
        Ok(())
    }
}

/// A JSON object of the fields `write` writes, as `serde_json::to_writer` writes a struct.
fn write_object(
    out: &mut Vec<u8>,
    write: impl FnOnce(&mut JsonFields<'_>) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error> {
    out.push(b'{');
    write(&mut JsonFields { out, first: true })?;
    out.push(b'}');
    Ok(())
}

fn write_node(out: &mut Vec<u8>, node: &FutureNode) -> Result<(), serde_json::Error> {
    write_object(out, |fields| node.write_fields(fields))
}

/// `task`'s JSON, as `serde_json::to_writer` writes it.
fn write_task(out: &mut Vec<u8>, task: &TaskReport) -> Result<(), serde_json::Error> {
    write_object(out, |fields| task.write_fields(fields))
}

/// A chunk made, or why it could not be.
type Made = (usize, io::Result<Vec<u8>>);

/// The tasks as a JSON array, in chunks made by this thread and a helper, each taking the
/// next chunk nobody took: the helper hands its chunks over (two ahead at most), this
/// thread writes them in order and makes one whenever the next to write is not ready. The
/// share each makes follows what writing costs (a copy into memory, or a file's kernel
/// time: with a fixed share, one of them waited on the other).
fn write_tasks(tasks: &[TaskReport], out: &mut dyn Write) -> io::Result<()> {
    out.write_all(b"[")?;
    let chunks: Vec<&[TaskReport]> = tasks.chunks(CHUNK).collect();
    let next = AtomicUsize::new(0);
    let take = || Some(next.fetch_add(1, Ordering::Relaxed)).filter(|&at| at < chunks.len());
    let make = |index: usize, mut bytes: Vec<u8>| {
        bytes.clear();
        write_chunk(index, chunks[index], &mut bytes).map(|()| bytes)
    };
    std::thread::scope(|scope| {
        let (finished, made) = sync_channel::<Made>(2);
        // Chunks written go back to the helper to be filled again.
        let (spare, spares) = sync_channel::<Vec<u8>>(4);
        if chunks.len() > 1 {
            // The helper stops when `made` is dropped. Without one (no thread to be had),
            // every chunk is made here.
            let _ = crate::threads::spawn_scoped(scope, "tokio-async-json", move || {
                while let Some(index) = take() {
                    let bytes = spares.try_recv().unwrap_or_default();
                    if finished.send((index, make(index, bytes))).is_err() {
                        return;
                    }
                }
            });
        } else {
            drop(finished);
        }
        let mut ready: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        for index in 0..chunks.len() {
            let bytes = loop {
                if let Some(bytes) = ready.remove(&index) {
                    break bytes;
                }
                let waiting = || {
                    made.recv()
                        .map_err(|_| io::Error::other("the thread writing tasks stopped"))
                };
                let (at, bytes) = match made.try_recv() {
                    Ok(done) => done,
                    // Made ahead already: the next to write is the helper's (a helper that
                    // gets no time must not have the whole JSON made here meanwhile).
                    Err(_) if ready.len() >= MADE_AHEAD => waiting()?,
                    Err(_) => match take() {
                        Some(at) => (at, make(at, Vec::new())),
                        // Every chunk is taken: the one to write next is the helper's.
                        None => waiting()?,
                    },
                };
                ready.insert(at, bytes?);
            };
            out.write_all(&bytes)?;
            let _ = spare.try_send(bytes);
        }
        Ok::<_, io::Error>(())
    })?;
    out.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FutureNode, NodeKind, Report, TaskState};

    fn task(id: u64) -> TaskReport {
        let mut root = FutureNode::new(NodeKind::AsyncFn, "app::f", 0x9000 + id);
        root.summary = Some(format!("task {id} \"waits\"").into());
        if id.is_multiple_of(7) {
            root.set_error(format!("cannot read {id}"));
        }
        TaskReport {
            id,
            address: 0x7000 + id,
            state: TaskState::Idle,
            root,
            runtime: 0x100,
            spawned_at: None,
            error: None,
        }
    }

    /// A task whose nodes have every field is written as serde writes it: the keys as
    /// they are, each value as serde_json writes it, in the same order.
    #[test]
    fn a_task_with_every_field_is_the_json_serde_writes() {
        use crate::model::{Branch, BranchStatus, Deadline, Detail, Location, MonotonicTime};
        use std::sync::Arc;
        let at = |line| {
            Arc::new(Location::new(
                "src/main.rs".into(),
                line,
                "/a/\"q\".rs".into(),
            ))
        };
        let mut leaf = FutureNode::new(NodeKind::Sleep, "tokio::time::Sleep", 0);
        leaf.set_detail(Detail::Sleep(Deadline {
            deadline: Some(MonotonicTime { secs: 5, nanos: 7 }),
            period_secs: Some(0.25),
            remaining_secs: Some(-0.0),
            since_last_tick_secs: None,
        }));
        leaf.summary = Some("Sleep \"until\" +1.0s\n".into());
        leaf.set_branch(Branch::new(1, BranchStatus::Disabled));
        leaf.set_via("inner.\u{e9}");
        leaf.set_boxed(true);
        leaf.set_held(true);
        leaf.set_running(true);
        leaf.set_field_search(true);
        leaf.set_error("cannot read");
        let mut root = FutureNode::new(NodeKind::AsyncFn, "app::f", u64::MAX);
        root.location = Some(at(3));
        root.set_macro_location(at(4));
        root.set_await_point(Some(2));
        root.children.push(leaf);
        root.children
            .push(FutureNode::new(NodeKind::Pending, "Pending", 0x10));
        let task = TaskReport {
            id: 9,
            address: 0xabc,
            state: TaskState::Running,
            root,
            runtime: 0,
            spawned_at: Some(at(5)),
            error: Some("partly read".into()),
        };
        let mut fast = Vec::new();
        write_task(&mut fast, &task).unwrap();
        assert_eq!(
            String::from_utf8(fast).unwrap(),
            serde_json::to_string(&task).unwrap()
        );
    }

    /// The report written with its tasks made on two threads is the bytes serde writes
    /// on one, in order, whatever the count against the chunks (none, less than two, a
    /// chunk and a bit, many), with fields after the tasks, and a message that says what the
    /// marker in the tasks' place says.
    #[test]
    fn tasks_written_on_two_threads_are_the_same_json() {
        for count in [
            0,
            1,
            2 * CHUNK - 1,
            2 * CHUNK,
            3 * CHUNK + 1,
            10 * CHUNK + 17,
        ] {
            let mut report = Report {
                tasks: (0..count as u64).map(task).collect(),
                ..Report::empty(None)
            };
            report.errors.push(crate::model::ReportError::new(
                crate::error::ErrorKind::Layout,
                LEFT_OUT,
            ));
            report.memory_source = Some("process");
            let one_thread = serde_json::to_vec(&report).unwrap();
            let mut two_threads = Vec::new();
            write_report(&report, &mut two_threads).unwrap();
            assert_eq!(
                String::from_utf8(two_threads).unwrap(),
                String::from_utf8(one_thread).unwrap(),
                "{count} tasks"
            );
        }
    }
}
