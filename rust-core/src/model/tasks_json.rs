//! A large report's tasks serialized on two threads: chunks of tasks alternate between
//! the serializer's own thread and a helper, which hands its chunks back as finished JSON
//! (`RawValue`s, written as they are), in order, two chunks ahead at most. Half of a
//! million tasks' JSON is then made while the other half is written, and the bytes are
//! those one thread writes.

use std::sync::mpsc::sync_channel;

use serde::ser::{Error as _, SerializeSeq, Serializer};
use serde_json::value::RawValue;

use super::TaskReport;

/// Tasks per chunk: enough that handing a chunk over costs little beside making it.
const CHUNK: usize = 256;

/// Four chunks in nine are made by the serializer's thread, which also writes them all
/// (a third each way left it idle a third of the time at a million tasks).
fn mine(chunk: usize) -> bool {
    matches!(chunk % 9, 0 | 2 | 4 | 6)
}

pub fn serialize<S: Serializer>(tasks: &[TaskReport], serializer: S) -> Result<S::Ok, S::Error> {
    if tasks.len() < 2 * CHUNK {
        return serializer.collect_seq(tasks);
    }
    let mut seq = serializer.serialize_seq(Some(tasks.len()))?;
    std::thread::scope(|scope| {
        let (finished, receiver) = sync_channel(2);
        // The helper stops when the receiver is dropped. Without one (no thread to be had),
        // every chunk is made here.
        let helped = crate::threads::spawn_scoped(scope, "tokio-async-json", move || {
            let theirs = tasks
                .chunks(CHUNK)
                .enumerate()
                .filter(|(index, _)| !mine(*index));
            for (_, chunk) in theirs {
                let json: Result<Vec<Box<RawValue>>, _> =
                    chunk.iter().map(serde_json::value::to_raw_value).collect();
                if finished.send(json).is_err() {
                    return;
                }
            }
        })
        .is_ok();
        for (index, chunk) in tasks.chunks(CHUNK).enumerate() {
            if !helped || mine(index) {
                for task in chunk {
                    seq.serialize_element(task)?;
                }
                continue;
            }
            let json = receiver
                .recv()
                .map_err(|_| S::Error::custom("the thread writing tasks stopped"))?
                .map_err(S::Error::custom)?;
            for task in &json {
                seq.serialize_element(task)?;
            }
        }
        seq.end()
    })
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

    /// Tasks made on two threads are the bytes one thread makes, in order, whatever the
    /// count against the chunks (none, less than two, a chunk and a bit, many).
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
            let report = Report {
                tasks: (0..count as u64).map(task).collect(),
                ..Report::empty(None)
            };
            // A vector of tasks on its own is written by one thread.
            let one_thread = serde_json::to_string(&report.tasks).unwrap();
            let json = serde_json::to_string(&report).unwrap();
            let expected =
                format!(r#"{{"version":2,"threads":[],"tasks":{one_thread},"runtimes":[]"#);
            assert!(json.starts_with(&expected), "{count} tasks");
        }
    }
}
