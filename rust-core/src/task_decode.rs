//! One task's report, read from its header; and the second thread that reads half of a
//! long task list where the memory lets two threads read it at once (a process's copy, a
//! core file). Each thread has readers and caches of its own; the walk takes what the
//! second thread read in list order, as if it had read it itself: the same errors,
//! anchors and budget.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rustc_hash::FxHashSet;
use thin_vec::ThinVec;

use crate::budget::{Budget, Metered};
use crate::dwarf::DebugInfo;
use crate::error::{Error, ErrorKind};
use crate::future::{error_node, mark_running, FutureDecoder, LiveProcess, TaskRef};
use crate::memory::Memory;
use crate::model::{AnalysedTask, ReportError, TaskReport};
use crate::panics;
use crate::stack::ResolvedFrame;
use crate::tokio::anchors::Anchor;
use crate::tokio::tasks::{ShardList, ShardsWalked, TaskFuture, TaskHeader, TaskReader};
use crate::value::{ListLengths, Target, WithExecutable};

/// Tasks decoded between two emptyings of a reader's page cache.
pub const TASKS_PER_CACHE_GENERATION: usize = 1000;

/// A list shorter than this is read by one thread: starting another costs more.
pub const TASKS_FOR_TWO_THREADS: usize = 32;

/// What the walk keeps of a task it decoded (`inspect` decides).
pub type Keep<'m> = &'m (dyn Fn(TaskReport) -> Kept + Sync);

/// A decoded task as the walk keeps it.
pub enum Kept {
    /// Whole: the report may show it.
    Shown(TaskReport),
    /// Left out of the report: only what linking and the wait analysis read of it.
    ForAnalysis(AnalysedTask),
    /// Left out, and nothing of it is read: its id, and the runtime it is in.
    Dropped { id: u64, runtime: u64 },
}

impl Kept {
    pub fn id(&self) -> u64 {
        match self {
            Kept::Shown(task) => task.id,
            Kept::ForAnalysis(task) => task.id,
            Kept::Dropped { id, .. } => *id,
        }
    }
}

/// How every thread decodes futures, set once per command.
#[derive(Clone, Copy)]
pub struct DecoderSettings {
    pub live: LiveProcess,
    /// Read the locals each suspended coroutine saves.
    pub with_locals: bool,
}

impl DecoderSettings {
    pub fn decoder<'a>(
        &self,
        target: &'a Target<'a>,
        tasks: &'a TaskReader<'a>,
    ) -> FutureDecoder<'a> {
        FutureDecoder::new(target)
            .with_tasks(tasks)
            .with_live_process(self.live)
            .with_locals(self.with_locals)
    }
}

/// One task's report; what cannot be read of it goes to `errors`. `running_on`: the frames
/// of the thread that polls it now.
pub fn read_task(
    task_reader: &TaskReader<'_>,
    decoder: &FutureDecoder<'_>,
    source: u64,
    header: &TaskHeader,
    running_on: Option<&[ResolvedFrame<'_>]>,
    errors: &mut Vec<ReportError>,
) -> TaskReport {
    let address = header.address;
    let task = TaskRef {
        id: header.id,
        address,
    };
    let future = panics::reading_task(task.id, task.address, || task_reader.future(header));
    let (root, mut error, future_in_place) = match future {
        Ok(TaskFuture::Running { ty, address }) => {
            let mut root = panics::reading_task(task.id, task.address, || {
                decoder.decode_task(ty, address, task)
            });
            if let Some(frames) = running_on {
                mark_running(&mut root, frames);
            }
            (root, None, true)
        }
        Ok(TaskFuture::Gone { ty, stage }) => {
            let mut node = decoder.describe_type(ty, address);
            node.set_error(format!("the future is gone (task stage: {stage})"));
            (node, None, false)
        }
        Err(error) => (
            error_node("<unknown>", address, error.clone()),
            Some(error.message()),
            false,
        ),
    };
    if let Some(problem) = header.freed_problem(future_in_place) {
        let message = format!("task {} at {address:#x}: {problem}", header.id);
        errors.push(ReportError::new(ErrorKind::Memory, message).of_task(header.id));
        error.get_or_insert_with(|| problem.to_string());
    }
    let spawned_at = task_reader
        .spawn_location(header)
        .unwrap_or_else(|problem| {
            let what = format!("task {}: cannot read where it was spawned", header.id);
            errors.push(ReportError::from_error(what, &problem).of_task(header.id));
            None
        });
    TaskReport {
        id: header.id,
        address,
        state: header.state(),
        root,
        runtime: source,
        spawned_at,
        error,
    }
}

/// A task as the second thread read it, with the nodes and bytes reading it spent.
// Nearly every one is `Read`: boxing the report would cost an allocation per task.
#[allow(clippy::large_enum_variant)]
pub enum ReadElsewhere {
    /// Its header could not be read.
    Unreadable { error: Error, spent: (u64, u64) },
    /// A task a thread polls now: the walk reads it, with that thread's frames. Also the
    /// place of a task left to be read again (`SecondThread::read`) when the walk stopped
    /// first.
    Running,
    Read {
        task: Kept,
        // Thin: most tasks have none, and half a million wait here at a time.
        errors: ThinVec<ReportError>,
        anchors: ThinVec<Anchor>,
        spent: (u64, u64),
    },
}

/// Bytes of each block of `ReadInBlocks`: above glibc's largest threshold for giving an
/// allocation pages of its own (32 MiB), so that each block goes back to the system when
/// it is freed.
const READ_BLOCK_BYTES: usize = 34 << 20;
const READ_BLOCK: usize = READ_BLOCK_BYTES / std::mem::size_of::<ReadElsewhere>();

/// The second thread's tasks, in order, in blocks: the walk empties each into the report
/// and frees it as it goes. As one vector (half a million tasks' 125 MB) it was freed only
/// once the report had grown by as much again: 90 MB more at the peak of a million tasks.
#[derive(Default)]
pub struct ReadInBlocks {
    blocks: Vec<Vec<ReadElsewhere>>,
}

impl ReadInBlocks {
    /// Adds the next task, `more` after it still to come.
    fn push(&mut self, task: ReadElsewhere, more: usize) {
        match self.blocks.last_mut() {
            Some(block) if block.len() < READ_BLOCK => block.push(task),
            _ => {
                let mut block = Vec::with_capacity(READ_BLOCK.min(more + 1));
                block.push(task);
                self.blocks.push(block);
            }
        }
    }

    fn set(&mut self, index: usize, task: ReadElsewhere) {
        self.blocks[index / READ_BLOCK][index % READ_BLOCK] = task;
    }

    pub fn len(&self) -> usize {
        self.blocks.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl IntoIterator for ReadInBlocks {
    type Item = ReadElsewhere;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<ReadElsewhere>>>;

    /// The tasks in order; each block is freed once its last task is taken.
    fn into_iter(self) -> Self::IntoIter {
        self.blocks.into_iter().flatten()
    }
}

/// The second thread's share of a list: its reader of the memory and how to decode.
pub struct SecondThread<'m> {
    pub debug: &'m DebugInfo,
    pub memory: Box<dyn Memory + Send + 'm>,
    pub load_bias: u64,
    pub settings: DecoderSettings,
    pub list_lengths: Arc<ListLengths>,
    pub keep: Keep<'m>,
}

impl SecondThread<'_> {
    /// Reads the tasks at `addresses` (in memory order) until `abandon` is set. Fewer than
    /// asked (none when its readers cannot be set up): the walk reads the rest itself.
    pub fn read(
        self,
        source: u64,
        addresses: &[u64],
        running: &FxHashSet<u64>,
        abandon: &AtomicBool,
    ) -> ReadInBlocks {
        self.on_own_target(|target, budget| {
            let Ok(task_reader) = TaskReader::new(target) else {
                return ReadInBlocks::default();
            };
            let decoder = self.settings.decoder(target, &task_reader);
            let reader = OneTask {
                task_reader: &task_reader,
                decoder: &decoder,
                budget,
                running,
                source,
                keep: self.keep,
            };
            reader.read_all(addresses, abandon)
        })
    }

    /// Runs `work` over a target of this thread's own: its reader of the memory (and the
    /// executable's), the lists the walk's thread counts, and a budget of no limit that
    /// counts what it spends, for the walk's budget to spend in turn.
    fn on_own_target<R>(&self, work: impl FnOnce(&Target<'_>, &Budget<'_>) -> R) -> R {
        let memory = WithExecutable {
            inner: &*self.memory,
            debug: self.debug,
            load_bias: self.load_bias,
        };
        let budget = Budget::unlimited();
        let metered = Metered {
            inner: &memory,
            budget: &budget,
        };
        let target = Target::new(self.debug, &metered, self.load_bias)
            .with_budget(&budget)
            .sharing_list_lengths(&self.list_lengths);
        work(&target, &budget)
    }

    /// Walks the shards `lists` of a runtime's task list (`TaskReader::walk_shards`)
    /// until `stopped` is set; `None` where its readers cannot be set up or the walk fails
    /// (the walk's thread then walks every shard itself).
    pub fn walk_shards(self, lists: &[ShardList], stopped: &AtomicBool) -> Option<ShardsWalked> {
        self.on_own_target(|target, budget| {
            let task_reader = TaskReader::new(target).ok()?;
            let lists = lists
                .iter()
                .map(|(index, ty, address)| (*index, target.value_of_type(ty.clone(), *address)))
                .collect();
            let mut walked = task_reader
                .walk_shards(lists, &|| stopped.load(Ordering::Relaxed))
                .ok()?;
            walked.bytes_read = budget.spent().1;
            Some(walked)
        })
    }
}

/// What reads one task on the second thread.
struct OneTask<'r, 'a> {
    task_reader: &'r TaskReader<'a>,
    decoder: &'r FutureDecoder<'a>,
    budget: &'r Budget<'r>,
    running: &'r FxHashSet<u64>,
    source: u64,
    keep: Keep<'r>,
}

impl OneTask<'_, '_> {
    /// The tasks at `addresses`, in order, until `abandon` is set.
    fn read_all(&self, addresses: &[u64], abandon: &AtomicBool) -> ReadInBlocks {
        let target = self.decoder.target();
        // A task that meets a list the walk's thread is counting is read again after the
        // others, by when the count is done, rather than waited for.
        target.defer_busy_lists(true);
        let mut read = ReadInBlocks::default();
        let mut again = Vec::new();
        for (index, &address) in addresses.iter().enumerate() {
            if abandon.load(Ordering::Relaxed) {
                break;
            }
            if index % TASKS_PER_CACHE_GENERATION == TASKS_PER_CACHE_GENERATION - 1 {
                target.memory.release_cache();
            }
            let more = addresses.len() - index - 1;
            match self.read(address) {
                Some(task) => read.push(task, more),
                None => {
                    again.push(index);
                    // Its place, until it is read again (or, abandoned, read by the walk).
                    read.push(ReadElsewhere::Running, more);
                }
            }
        }
        target.defer_busy_lists(false);
        target.memory.release_cache();
        for index in again {
            if abandon.load(Ordering::Relaxed) {
                break;
            }
            if let Some(task) = self.read(addresses[index]) {
                read.set(index, task);
            }
        }
        read
    }

    /// The task at `address`; `None` where it met a list another thread counts now
    /// (what was read of it is dropped).
    fn read(&self, address: u64) -> Option<ReadElsewhere> {
        let before = self.budget.spent();
        let spent = || {
            let (nodes, bytes) = self.budget.spent();
            (nodes - before.0, bytes - before.1)
        };
        let header = match self.task_reader.read_header(address) {
            Ok(header) => header,
            Err(error) => {
                return Some(ReadElsewhere::Unreadable {
                    error,
                    spent: spent(),
                })
            }
        };
        if self.running.contains(&header.id) {
            return Some(ReadElsewhere::Running);
        }
        let mut errors = Vec::new();
        let task = read_task(
            self.task_reader,
            self.decoder,
            self.source,
            &header,
            None,
            &mut errors,
        );
        let anchors = self.decoder.take_anchors();
        if self.decoder.target().take_met_busy_list() {
            return None;
        }
        Some(ReadElsewhere::Read {
            task: (self.keep)(task),
            errors: errors.into(),
            anchors: anchors.into(),
            spent: spent(),
        })
    }
}

/// What gives each long list its second thread: the memory the walk reads (below the
/// walk's own wrappers), and how to decode.
#[derive(Clone, Copy)]
pub struct SecondThreads<'m> {
    pub debug: &'m DebugInfo,
    pub memory: &'m dyn Memory,
    pub load_bias: u64,
    pub settings: DecoderSettings,
    /// The walk's own, so that a list both threads meet is counted once.
    pub list_lengths: &'m Arc<ListLengths>,
    pub keep: Keep<'m>,
}

impl<'m> SecondThreads<'m> {
    /// A second thread's share, where the memory can give it a reader.
    pub fn second_thread(&self) -> Option<SecondThread<'m>> {
        Some(SecondThread {
            debug: self.debug,
            memory: self.memory.second_reader()?,
            load_bias: self.load_bias,
            settings: self.settings,
            list_lengths: Arc::clone(self.list_lengths),
            keep: self.keep,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tasks kept in blocks come back in order, across blocks, with those set again in
    /// their places; a block is a few tens of MB, whatever the tasks are.
    #[test]
    fn tasks_read_in_blocks_come_back_in_order() {
        assert!(READ_BLOCK * std::mem::size_of::<ReadElsewhere>() > 32 << 20);
        let count = 2 * READ_BLOCK + 5;
        let unreadable = |at: usize| ReadElsewhere::Unreadable {
            error: Error::new(ErrorKind::Memory, "gone"),
            spent: (at as u64, 0),
        };
        let mut read = ReadInBlocks::default();
        for at in 0..count {
            read.push(ReadElsewhere::Running, count - at - 1);
        }
        let again = [0, READ_BLOCK - 1, READ_BLOCK, 2 * READ_BLOCK + 4];
        for at in again {
            read.set(at, unreadable(at));
        }
        assert_eq!(read.len(), count);
        let places: Vec<usize> = read
            .into_iter()
            .enumerate()
            .filter_map(|(at, task)| match task {
                ReadElsewhere::Unreadable { spent, .. } => {
                    assert_eq!(spent.0, at as u64);
                    Some(at)
                }
                _ => None,
            })
            .collect();
        assert_eq!(places, again);
    }
}
