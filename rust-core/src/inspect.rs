//! One command's work: from the debugger's threads to a `Report`. Reads each thread's
//! tokio context, finds the runtimes, walks their tasks and decodes the futures.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Deserialize;

use crate::block_on::{block_on_future, find_block_on_frame, BlockOnFuture};
use crate::budget::{Budget, Limits};
use crate::dwarf::DebugInfo;
use crate::error::{Error, ErrorKind, Result};
use crate::format::thousands;
use crate::future::{mark_running, FutureDecoder, LiveProcess};
use crate::groups::{group_tasks, shape_hash, Grouping, Members};
use crate::history::snapshot::Marks;
use crate::history::Snapshot;
use crate::memory::Memory;
use crate::model::{
    list_word, FoundBy, FutureNode, Report, ReportError, RuntimeReport, TakenAt, TaskReport,
    TaskState, ThreadReport, ThreadRole,
};
use crate::panics;
use crate::selection::{LeftOut, Selection, TaskFilter};
use crate::stack::{resolve_frames, FrameInput, ResolvedFrame};
use crate::task_decode::{
    read_task, DecoderSettings, Keep, Kept, ReadElsewhere, ReadInBlocks, SecondThreads,
    TASKS_FOR_TWO_THREADS, TASKS_PER_CACHE_GENERATION,
};
use crate::tokio::activity::{
    blocking_pool_function, current_thread_queue, task_ids, worker_activity,
};
use crate::tokio::anchors::Anchor;
use crate::tokio::context::{
    find_context_variable, find_local_set_variable, read_local_set_context, read_thread_context,
    RuntimeHandle,
};
use crate::tokio::sources::{TaskList, TaskSource};
use crate::tokio::tasks::{ShardHelper, TaskHeader, TaskReader, TaskWalk};
use crate::tokio::workers::{self, inject_queue};
use crate::value::{on_program, Target, Value};

/// What the debugger knows about one thread.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadInput {
    pub tid: u64,
    pub name: Option<String>,
    pub fs_base: Option<u64>,
    /// The thread's innermost frames, innermost first.
    #[serde(default)]
    pub frames: Vec<FrameInput>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub threads: Vec<ThreadInput>,
    /// Every task, not only the ones running now.
    pub all: bool,
    /// The pid when the process is live on this machine (not a core): lets decoders say
    /// how long a sleep has left and what a file descriptor is.
    #[serde(default)]
    pub live_pid: Option<u32>,
    /// Read each suspended coroutine's saved locals (`full`): costly over many tasks.
    #[serde(default)]
    pub locals: bool,
    /// Which of the tasks to report (all of them when empty).
    #[serde(default)]
    pub filter: TaskFilter,
    /// Merge tasks of the same shape into `Report::groups`.
    #[serde(default)]
    pub group: bool,
    /// Only the groups are printed (`--group` as text): of the tasks beyond each group's
    /// first, the report keeps only what the analysis reads.
    #[serde(default)]
    pub only_groups: bool,
    /// Keep every edge of the wait-for graph in `Report::waits` (`async waits`).
    #[serde(default)]
    pub wait_edges: bool,
    /// What the command may spend (`budget.rs`).
    #[serde(default)]
    pub limits: Limits,
    /// When the program stopped.
    #[serde(default)]
    pub clock: StopClock,
    /// The snapshot of the stop before this one (`history::store`), for `--stuck-for`
    /// and for the `since` each task carries.
    #[serde(skip)]
    pub previous: Option<Arc<Snapshot>>,
    /// This stop's own snapshot, kept by an earlier command at the same stop
    /// (`history::store::this_stop`): taken again it would be the same, so it is not.
    #[serde(skip)]
    pub this_stop: Option<Arc<Snapshot>>,
    /// Take this stop's snapshot (for `diff`, for history, or to be kept for the next
    /// stop); a one-shot command that compares with nothing skips it.
    #[serde(default = "snapshot_by_default")]
    pub snapshot: bool,
}

fn snapshot_by_default() -> bool {
    true
}

/// When the program stopped: on the wall clock (the report's `taken_at`), and for a live
/// process on CLOCK_MONOTONIC, which tokio's timers count in. Times left on sleeps are
/// against the stop, not against the moment the command runs.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub struct StopClock {
    #[serde(default)]
    pub taken_at: Option<TakenAt>,
    #[serde(default)]
    pub monotonic: Option<(i64, u32)>,
}

/// A report, and the snapshot of its stop when every task was walked (`history`).
pub struct Inspection {
    pub report: Report,
    pub snapshot: Option<Arc<Snapshot>>,
}

pub fn inspect(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    request: &Request,
) -> Result<Report> {
    inspect_within(
        debug,
        memory,
        load_bias,
        request,
        &Budget::new(request.limits, None),
    )
}

/// `inspect` within a budget, which also tells whether the user interrupted.
pub fn inspect_within(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    request: &Request,
    budget: &Budget<'_>,
) -> Result<Report> {
    inspect_over_time(debug, memory, load_bias, request, budget).map(|done| done.report)
}

/// `inspect_within`, keeping the stop's snapshot for the next commands.
pub fn inspect_over_time(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    request: &Request,
    budget: &Budget<'_>,
) -> Result<Inspection> {
    read_stop(debug, memory, load_bias, request, budget)
        .and_then(|read| analyse_stop(read, debug, request, budget))
}

/// What the memory of a stop gave, before the tasks are linked and their waits analysed:
/// nothing after this reads the memory, which its reader may let go of (the executable
/// frees its copy of the process).
pub struct ReadStop {
    report: Report,
    selection: Selection,
    left: LeftBehind,
}

impl ReadStop {
    /// How many tasks the walk left out of the report as it decoded them (`Showing`).
    pub fn tasks_left_out(&self) -> usize {
        self.left.left_out.as_ref().map_or(0, LeftOut::len)
    }
}

/// Split units not found, or units unreadable, may be why nothing could be read: say so.
fn with_debug_problems(debug: &DebugInfo, error: Error) -> Error {
    let problems = debug.problems();
    match problems.is_empty() {
        true => error,
        false => error.with_cause_note(format!(" ({})", problems.join("; "))),
    }
}

/// The first half of `inspect_over_time`: every task and thread read from `memory`.
pub fn read_stop(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    request: &Request,
    budget: &Budget<'_>,
) -> Result<ReadStop> {
    read_with_debug_info(debug, memory, load_bias, request, budget)
        .map_err(|error| with_debug_problems(debug, error))
}

/// The second half of `inspect_over_time`: the tasks read, linked, their waits analysed,
/// and selected as the request asks. Reads no memory.
pub fn analyse_stop(
    read: ReadStop,
    debug: &DebugInfo,
    request: &Request,
    budget: &Budget<'_>,
) -> Result<Inspection> {
    let ReadStop {
        mut report,
        selection,
        mut left,
    } = read;
    let (analysed, dropped) = match left.left_out.as_mut() {
        Some(left_out) => (&mut left_out.analysed[..], &left_out.dropped[..]),
        None => (&mut [][..], &[][..]),
    };
    crate::links::link_tasks(&mut report, analysed);
    crate::links::link_blocking_threads(&mut report);
    crate::links::link_local_sets(&mut report, analysed, dropped);
    crate::waits::analyse(&mut report, analysed, request.wait_edges);
    if let Some(stop) = budget.stopped() {
        say_once_where_the_budget_ran_out(&mut report.errors, &stop);
    }
    // Units the walk (or the indexing behind it) could not read: what the report may lack.
    report.errors.extend(
        debug
            .unreadable_units()
            .into_iter()
            .map(|unit| ReportError::new(ErrorKind::Binary, unit)),
    );
    select(report, request, &selection, left, budget)
        .map_err(|error| with_debug_problems(debug, error))
}

fn read_with_debug_info(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    request: &Request,
    budget: &Budget<'_>,
) -> Result<ReadStop> {
    on_program(debug, memory, load_bias, Some(budget), |target| {
        read_on_target(target, memory, request, budget)
    })
}

/// `read_with_debug_info` on its target; `program_memory` is the memory under it, which
/// the walk's second threads read with targets of their own.
fn read_on_target(
    target: &Target<'_>,
    program_memory: &dyn Memory,
    request: &Request,
    budget: &Budget<'_>,
) -> Result<ReadStop> {
    let (debug, load_bias) = (target.debug, target.load_bias);
    let selection = Selection::new(&request.filter)?;
    let threads = read_threads(target, request)?;
    let task_reader = TaskReader::new(target)?;
    let live = LiveProcess {
        pid: request.live_pid,
        now: request
            .live_pid
            .and_then(|_| request.clock.monotonic.or_else(monotonic_now)),
    };
    let settings = DecoderSettings {
        live,
        with_locals: request.locals,
    };
    let decoder = settings.decoder(target, &task_reader);
    let (mut discovery, block_on_futures) =
        Discovery::start(target, &task_reader, &decoder, &threads)?;
    let mut report = Report::empty(request.clock.taken_at);
    // Split units whose files are missing: the report is still made, without their types.
    report.errors.extend(
        debug
            .load_problems
            .iter()
            .map(|problem| ReportError::new(ErrorKind::NoDebugInfo, problem.clone())),
    );
    let showing = Showing::new(&selection, request);
    let keep = |task| showing.keep(task);
    let (running_roots, left_out, not_taken) = {
        let second_threads = SecondThreads {
            debug,
            memory: program_memory,
            load_bias,
            settings,
            list_lengths: &target.list_lengths,
            keep: &keep,
        };
        let mut walker = TaskWalker::new(&task_reader, &decoder, &threads, request.all)
            .with_second_threads(second_threads)
            .showing(&keep, showing.leaves_out());
        walker.walk_everything(&mut discovery, &mut report);
        (walker.roots_by_id, walker.left_out, walker.not_taken)
    };
    report.errors.append(&mut discovery.problems);
    report.tasks.sort_by_key(|task| task.id);
    let left = showing.finish(&mut report.tasks, left_out, &not_taken);
    let left_out = left.left_out.as_ref().map_or(0, LeftOut::len);
    interrupted_walk(budget, report.tasks.len() + left_out)?;
    report.threads = thread_reports(
        &task_reader,
        threads,
        block_on_futures,
        &running_roots,
        &mut report.errors,
    );
    Ok(ReadStop {
        report,
        selection,
        left,
    })
}

/// What the walk kept of the tasks it left out (where it left some out): their ids, every
/// task's marks, and the groups' members.
struct LeftBehind {
    left_out: Option<LeftOut>,
    marks: Option<Marks>,
    grouped: Option<Members>,
}

/// Which decoded tasks the report shows whole. With a filter that each task's own tree
/// decides, a task the filter refuses keeps only the record of what linking and the wait
/// analysis read of it (`waits::trim`): a filtered command over a million tasks holds the
/// trees it prints, not a million. The stop's snapshot, of every task, is then marked task
/// by task before any is left out.
struct Showing<'s> {
    leaving_out: Option<&'s Selection>,
    /// With only the groups printed, the tasks selected, grouped as they are decoded.
    grouping: Option<Mutex<Grouping>>,
    /// The marks of every task decoded, where a snapshot is taken (shared by the threads
    /// that decode: a lock per task).
    marking: Option<Mutex<Marks>>,
    /// The walk's own thread: a task decoded on another is read ahead of the walk.
    walk_thread: ThreadId,
}

impl<'s> Showing<'s> {
    fn new(selection: &'s Selection, request: &Request) -> Showing<'s> {
        let leaving_out = selection.decides_per_task().then_some(selection);
        let grouping =
            request.group && request.only_groups && request.all && selection.takes_every_selected();
        let marking = request.all
            && (request.snapshot || selection.needs_history())
            && request.this_stop.is_none();
        Showing {
            leaving_out,
            grouping: grouping.then(Mutex::default),
            marking: ((leaving_out.is_some() || grouping) && marking).then(Mutex::default),
            walk_thread: std::thread::current().id(),
        }
    }

    fn leaves_out(&self) -> bool {
        self.leaving_out.is_some() || self.grouping.is_some()
    }

    /// Once every task is decoded (`tasks`, by id), what was kept of those left out; each
    /// group's first task goes back among `tasks`, whole. `not_taken`: the tasks read ahead
    /// that the walk did not take.
    fn finish(
        self,
        tasks: &mut Vec<TaskReport>,
        mut left_out: Option<LeftOut>,
        not_taken: &FxHashSet<u64>,
    ) -> LeftBehind {
        let marks = self
            .marking
            .map(|marking| marking.into_inner().unwrap_or_else(PoisonError::into_inner));
        let grouping = self.grouping.map(|grouping| {
            grouping
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner)
        });
        if let Some(left_out) = left_out.as_mut() {
            left_out.analysed.sort_by_key(|task| task.id);
        }
        let grouped = match (grouping, left_out.as_mut()) {
            (Some(grouping), Some(left_out)) => {
                let (firsts, members) = grouping.into_firsts(not_taken);
                restore_firsts(tasks, left_out, firsts);
                Some(members)
            }
            _ => None,
        };
        LeftBehind {
            left_out,
            marks,
            grouped,
        }
    }

    /// The task as the walk keeps it.
    fn keep(&self, task: TaskReport) -> Kept {
        if let Some(marking) = &self.marking {
            let mut marks = marking.lock().unwrap_or_else(PoisonError::into_inner);
            marks.mark(task.id, task.state, &task.root);
        }
        let selected = self
            .leaving_out
            .is_none_or(|selection| selection.selects(&task, None));
        let Some(grouping) = self.grouping.as_ref().filter(|_| selected) else {
            return match selected {
                true => Kept::Shown(task),
                false => for_analysis_only(&task),
            };
        };
        // Its group keeps it whole if it is the group's first; the walk, what the analysis reads.
        let hash = shape_hash(&task.root);
        let kept = for_analysis_only(&task);
        let read_ahead = std::thread::current().id() != self.walk_thread;
        let spare = grouping
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(task, hash, read_ahead);
        drop(spare);
        kept
    }
}

/// What the analysis reads of `task` (`waits::trim`), which the report leaves out.
fn for_analysis_only(task: &TaskReport) -> Kept {
    match crate::waits::trim::for_analysis(task) {
        Some(analysed) => Kept::ForAnalysis(analysed),
        None => Kept::Dropped {
            id: task.id,
            runtime: task.runtime,
        },
    }
}

/// Puts each group's first task, whole, among the tasks the walk kept (sorted by id),
/// shown: the analysis links it as any other.
fn restore_firsts(tasks: &mut Vec<TaskReport>, left_out: &mut LeftOut, firsts: Vec<TaskReport>) {
    let ids: FxHashSet<u64> = firsts.iter().map(|task| task.id).collect();
    left_out.analysed.retain(|task| !ids.contains(&task.id));
    left_out.dropped.retain(|(_, id)| !ids.contains(id));
    if !firsts.is_empty() {
        tasks.extend(firsts);
        tasks.sort_by_key(|task| task.id);
    }
}

/// Where an interrupt (Ctrl-C) ended the walk, the error saying after how many tasks.
fn interrupted_walk(budget: &Budget<'_>, decoded: usize) -> Result<()> {
    match budget.stopped() {
        Some(stop) if stop.kind == ErrorKind::Interrupted => Err(Error::new(
            ErrorKind::Interrupted,
            format!(
                "interrupted (Ctrl-C) after decoding {} tasks",
                thousands(decoded as u64)
            ),
        )),
        _ => Ok(()),
    }
}

/// The report as the request wants it, from every task linked: the stop's snapshot (of
/// every task, before any filter; not when the budget cut the walk short), then the
/// tasks selected (after linking, so that a selected task reads as it does among all of
/// them) and grouped.
fn select(
    mut report: Report,
    request: &Request,
    selection: &Selection,
    left: LeftBehind,
    budget: &Budget<'_>,
) -> Result<Inspection> {
    let wanted = request.snapshot || selection.needs_history();
    let previous = request.previous.as_deref();
    let snapshot = (wanted && request.all && budget.stopped().is_none()).then(|| {
        match (&request.this_stop, left.marks) {
            (Some(kept), _) => kept.clone(),
            (None, Some(marks)) => Arc::new(Snapshot::from_marks(report.taken_at, marks, previous)),
            (None, None) => Arc::new(Snapshot::of(&report, previous)),
        }
    });
    if selection.needs_history() && snapshot.is_none() {
        return Err(Error::new(
            ErrorKind::Budget,
            "--stuck-for: the walk did not reach every task (see its budget), so how long each has been \
             stuck is not known",
        ));
    }
    let history = snapshot.as_deref().filter(|_| request.previous.is_some());
    selection.apply(&mut report, history, left.left_out.as_ref())?;
    if request.group {
        report.groups = Some(match left.grouped {
            Some(members) => members.groups(&report.tasks),
            None => group_tasks(&report.tasks),
        });
    }
    Ok(Inspection { report, snapshot })
}

/// The ids of every task of every runtime and LocalSet, lowest first, without decoding any
/// future but the threads' block_on futures (what completing `async task <TAB>` needs).
pub fn all_task_ids(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    request: &Request,
) -> Result<Vec<u64>> {
    on_program(debug, memory, load_bias, None, |target| {
        task_ids_on_target(target, request)
    })
}

fn task_ids_on_target(target: &Target<'_>, request: &Request) -> Result<Vec<u64>> {
    let threads = read_threads(target, request)?;
    let task_reader = TaskReader::new(target)?;
    let decoder = FutureDecoder::new(target).with_tasks(&task_reader);
    let (mut discovery, _) = Discovery::start(target, &task_reader, &decoder, &threads)?;
    let mut ids = Vec::new();
    while let Some((source, _)) = discovery.next_source() {
        let Ok(list) = task_reader.task_list(&source) else {
            continue;
        };
        ids.extend(list.walk.addresses.iter().filter_map(|&address| {
            task_reader
                .read_header(address)
                .ok()
                .map(|header| header.id)
        }));
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// The id of the task thread `tid` polls now, as its tokio context says (a worker's, a
/// current_thread runtime's or a LocalSet's task); `None` in a block_on future or outside
/// any task. Reads no future.
pub fn current_task_of(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    request: &Request,
    tid: u64,
) -> Result<Option<u64>> {
    on_program(debug, memory, load_bias, None, |target| {
        let threads = read_threads(target, request)?;
        Ok(threads
            .iter()
            .find(|state| state.input.tid == tid)
            .and_then(|state| state.current_task))
    })
}

/// What one thread is to tokio, from its context thread-locals and its stack.
struct ThreadState<'t> {
    input: &'t ThreadInput,
    frames: Vec<ResolvedFrame<'t>>,
    runtime: Option<RuntimeHandle<'t>>,
    /// The LocalSet the thread polls, enters or drops now (its `Shared`).
    local_set: Option<Value<'t>>,
    worker: Option<u64>,
    worker_context: Option<Value<'t>>,
    current_thread_context: Option<Value<'t>>,
    current_task: Option<u64>,
    /// Why its tokio context could not be read, as an error of its kind.
    error: Option<Error>,
}

/// Phase 1: each thread's tokio context (sorted by tid): the runtime it is in, the
/// LocalSet it runs now.
fn read_threads<'t>(target: &'t Target<'t>, request: &'t Request) -> Result<Vec<ThreadState<'t>>> {
    let context_variable = find_context_variable(target.debug)?;
    let local_set_variable = find_local_set_variable(target.debug);
    let mut inputs: Vec<&ThreadInput> = request.threads.iter().collect();
    inputs.sort_by_key(|thread| thread.tid);
    let mut threads = Vec::new();
    for input in inputs {
        let frames = resolve_frames(target.debug, target.load_bias, &input.frames);
        let mut state = ThreadState {
            input,
            frames,
            runtime: None,
            local_set: None,
            worker: None,
            worker_context: None,
            current_thread_context: None,
            current_task: None,
            error: None,
        };
        let Some(fs_base) = input.fs_base else {
            state.error = Some(Error::layout(
                "the debugger gave no thread pointer (fs_base) for this thread",
            ));
            threads.push(state);
            continue;
        };
        match read_thread_context(target, &context_variable, fs_base) {
            Ok(Some(context)) => {
                state.runtime = context.handle;
                state.worker = context.worker_index;
                state.worker_context = context.worker_context;
                state.current_thread_context = context.current_thread_context;
                state.current_task = context.current_task;
            }
            Ok(None) => {}
            Err(error) => state.error = Some(error.context("cannot read its tokio context")),
        }
        if let Some(variable) = &local_set_variable {
            match read_local_set_context(target, variable, fs_base) {
                Ok(shared) => state.local_set = shared,
                Err(error) => {
                    state
                        .error
                        .get_or_insert_with(|| error.context("cannot read which LocalSet it runs"));
                }
            }
        }
        threads.push(state);
    }
    Ok(threads)
}

/// A thread's block_on future: none, decoded, or why it cannot be.
type BlockOnResult = Option<std::result::Result<BlockOnFuture, String>>;

/// Decodes each thread's block_on future, noting what it leads to.
fn decode_block_on_futures(
    target: &Target<'_>,
    decoder: &FutureDecoder<'_>,
    threads: &[ThreadState<'_>],
    discovery: &mut Discovery<'_>,
) -> Vec<BlockOnResult> {
    threads
        .iter()
        .map(|thread| {
            let found = find_block_on_frame(&thread.frames)
                .map(|frame| block_on_future(target, decoder, &thread.frames, frame));
            discovery.add_anchors(
                decoder.take_anchors(),
                &FoundBy::BlockOnFuture {
                    thread: thread.input.tid,
                },
            );
            found
        })
        .collect()
}

/// The task lists found so far, each with how it was found, walked in the order found;
/// and the tasks other tasks name, whose owners lead to lists no thread names.
struct Discovery<'a> {
    target: &'a Target<'a>,
    tasks: &'a TaskReader<'a>,
    sources: Vec<(TaskSource<'a>, FoundBy)>,
    known: FxHashSet<u64>,
    /// The first source not walked yet.
    next: usize,
    /// Tasks named by `JoinHandle`s, and those of them already looked at.
    referenced: Vec<u64>,
    looked_at: FxHashSet<u64>,
    /// Every task read from a list.
    listed: FxHashSet<u64>,
    /// The lists a task may be off without damage: closed (their owner is shutting their
    /// tasks down, taking each off first) or being changed (a shard locked).
    unsettled: FxHashSet<u64>,
    problems: Vec<ReportError>,
}

/// The most task lists one command walks: each runtime and LocalSet is one.
const MAX_SOURCES: usize = 4096;

impl<'a> Discovery<'a> {
    fn new(target: &'a Target<'a>, tasks: &'a TaskReader<'a>) -> Self {
        Discovery {
            target,
            tasks,
            sources: Vec::new(),
            known: FxHashSet::default(),
            next: 0,
            referenced: Vec::new(),
            looked_at: FxHashSet::default(),
            listed: FxHashSet::default(),
            unsettled: FxHashSet::default(),
            problems: Vec::new(),
        }
    }

    /// What leads to task lists before any task is decoded: the threads' contexts, their
    /// block_on futures (decoded first: they find the LocalSets they run), the statics; or
    /// the error that says none leads anywhere.
    fn start(
        target: &'a Target<'a>,
        tasks: &'a TaskReader<'a>,
        decoder: &FutureDecoder<'_>,
        threads: &[ThreadState<'a>],
    ) -> Result<(Self, Vec<BlockOnResult>)> {
        let mut discovery = Discovery::new(target, tasks);
        discovery.add_thread_contexts(threads);
        let block_on_futures = decode_block_on_futures(target, decoder, threads, &mut discovery);
        discovery.add_statics();
        discovery.require_any(threads)?;
        Ok((discovery, block_on_futures))
    }

    /// Adds a source not known yet; true if it was new. What a thread's context names is
    /// live; what a value keeps may be a stale copy, and is checked first.
    fn add(&mut self, source: TaskSource<'a>, found_by: FoundBy) -> bool {
        if self.sources.len() >= MAX_SOURCES || self.known.contains(&source.address()) {
            return false;
        }
        let from_context = matches!(
            found_by,
            FoundBy::ThreadContext { .. }
                | FoundBy::LocalSetContext { .. }
                | FoundBy::TaskOwner { .. }
        );
        if !from_context && !source.is_plausible(self.tasks) {
            return false;
        }
        self.known.insert(source.address());
        self.sources.push((source, found_by));
        true
    }

    /// The runtimes threads are inside of, and the LocalSets they run now.
    fn add_thread_contexts(&mut self, threads: &[ThreadState<'a>]) {
        for thread in threads {
            let tid = thread.input.tid;
            if let Some(runtime) = &thread.runtime {
                self.add(
                    TaskSource::of_runtime(runtime),
                    FoundBy::ThreadContext { thread: tid },
                );
            }
            if let Some(shared) = &thread.local_set {
                self.add(
                    TaskSource::of_local_shared(shared.clone()),
                    FoundBy::LocalSetContext { thread: tid },
                );
            }
        }
    }

    /// Runtimes and LocalSets kept in the program's statics.
    fn add_statics(&mut self) {
        let (anchors, problems) = crate::tokio::statics::anchors_in_statics(self.target);
        self.problems.extend(
            problems
                .into_iter()
                .map(|problem| ReportError::of(&problem)),
        );
        for (name, anchor) in anchors {
            self.add_anchors(vec![anchor], &FoundBy::Static { name });
        }
    }

    fn add_anchors(&mut self, anchors: impl IntoIterator<Item = Anchor>, found_by: &FoundBy) {
        for anchor in anchors {
            if let Anchor::Task(header) = anchor {
                if self.looked_at.insert(header) {
                    self.referenced.push(header);
                }
                continue;
            }
            // What a value keeps may be a stale copy leading to freed memory: one that
            // cannot be read is no list, as one that reads as no live list.
            if let Ok(Some(source)) = TaskSource::of_anchor(self.target, anchor) {
                self.add(source, found_by.clone());
            }
        }
    }

    /// The next source to walk.
    fn next_source(&mut self) -> Option<(TaskSource<'a>, FoundBy)> {
        let next = self.sources.get(self.next).cloned();
        self.next += next.is_some() as usize;
        next
    }

    /// Adds the owners of tasks others name that no list read so far holds; true if one
    /// was new. Those whose owner was walked without them are said to be missing.
    fn owners_of_referenced(&mut self) -> bool {
        let mut added = false;
        for header in std::mem::take(&mut self.referenced) {
            if self.listed.contains(&header) {
                continue;
            }
            let Ok(task) = self.tasks.read_header(header) else {
                continue;
            };
            // Finished tasks leave their list; their JoinHandles may outlive them.
            if matches!(task.state(), TaskState::Complete | TaskState::Cancelled) {
                continue;
            }
            match TaskSource::owner_of(self.tasks, &task) {
                Ok(Some(owner)) => {
                    let address = owner.address();
                    if self.add(owner, FoundBy::TaskOwner { task: task.id }) {
                        added = true;
                    } else if !self.unsettled.contains(&address) {
                        let message = format!(
                            "task {} at {header:#x} is named by a JoinHandle and owned by {address:#x}, \
                             but its list does not hold it (freed, or the list is damaged)",
                            task.id
                        );
                        self.problems
                            .push(ReportError::new(ErrorKind::Layout, message).of_task(task.id));
                    }
                }
                Ok(None) => {}
                Err(error) => {
                    let what = format!(
                        "task {} at {header:#x}, named by a JoinHandle: cannot read which list owns it",
                        task.id
                    );
                    self.problems
                        .push(ReportError::from_error(what, &error).of_task(task.id));
                }
            }
        }
        added
    }

    /// Fails the command when nothing leads to any task list.
    fn require_any(&self, threads: &[ThreadState<'_>]) -> Result<()> {
        if !self.sources.is_empty() {
            return Ok(());
        }
        if let Some(error) = threads.iter().find_map(|state| {
            Some(format!(
                "thread {}: {}",
                state.input.tid,
                state.error.as_ref()?.message()
            ))
        }) {
            return Err(Error::new(ErrorKind::Memory, error));
        }
        Err(Error::new(
            ErrorKind::NoRuntime,
            "tokio is linked in, but no thread is inside a tokio runtime and no static keeps one \
             (not started yet, or already shut down)",
        ))
    }
}

/// How often the walk, done with its half of a list, looks for Ctrl-C while the second
/// thread reads the other (the budget polls the interrupt every 64 looks).
const WAITING_POLL: std::time::Duration = std::time::Duration::from_micros(500);

/// Phase 2 and 3: walks every task list found, each runtime's with its inject queue,
/// decoding the tasks (all of them, or only those a thread is running) into the report,
/// and what their futures lead to, until no list is left.
struct TaskWalker<'w, 'a> {
    task_reader: &'w TaskReader<'a>,
    decoder: &'w FutureDecoder<'a>,
    /// The task each thread is polling: a worker's, or a current_thread runtime's block_on
    /// thread between polls of its own future. A worker's current task id also names its
    /// own blocking task while it idles; only ids found in a task list are tasks.
    running: FxHashMap<u64, &'w [ResolvedFrame<'w>]>,
    all: bool,
    /// The roots of the running tasks, by task id.
    roots_by_id: FxHashMap<u64, FutureNode>,
    /// Where the memory allows, long lists are read by two threads.
    second_thread: Option<SecondThreads<'w>>,
    /// What is kept of each task decoded (`Showing`).
    keep: Keep<'w>,
    /// With `keep` leaving tasks out, what it left out.
    left_out: Option<LeftOut>,
    /// The tasks a second thread read that the walk did not take (it stopped first).
    not_taken: FxHashSet<u64>,
}

impl<'w, 'a> TaskWalker<'w, 'a> {
    fn new(
        task_reader: &'w TaskReader<'a>,
        decoder: &'w FutureDecoder<'a>,
        threads: &'w [ThreadState<'w>],
        all: bool,
    ) -> Self {
        TaskWalker {
            task_reader,
            decoder,
            running: threads
                .iter()
                .filter_map(|state| state.current_task.map(|id| (id, state.frames.as_slice())))
                .collect(),
            all,
            roots_by_id: FxHashMap::default(),
            second_thread: None,
            keep: SHOW_ALL,
            left_out: None,
            not_taken: FxHashSet::default(),
        }
    }

    /// Keeps of each task what `keep` says; with `leaves_out`, records what it left out.
    fn showing(self, keep: Keep<'w>, leaves_out: bool) -> Self {
        TaskWalker {
            keep,
            left_out: leaves_out.then(LeftOut::default),
            ..self
        }
    }

    /// Adds a decoded task to the report, as much of it as is kept.
    fn add_task(&mut self, task: Kept, report: &mut Report) {
        match (task, &mut self.left_out) {
            (Kept::Shown(task), _) => report.tasks.push(task),
            (Kept::ForAnalysis(task), Some(left_out)) => left_out.analysed.push(task),
            (Kept::Dropped { id, runtime }, Some(left_out)) => left_out.dropped.push((runtime, id)),
            // Only a walk that leaves tasks out keeps a record or drops them.
            (Kept::ForAnalysis(_) | Kept::Dropped { .. }, None) => {}
        }
    }

    fn with_second_threads(self, second_threads: SecondThreads<'w>) -> Self {
        TaskWalker {
            second_thread: Some(second_threads),
            ..self
        }
    }

    fn walk_everything(&mut self, discovery: &mut Discovery<'a>, report: &mut Report) {
        loop {
            while let Some((source, found_by)) = discovery.next_source() {
                self.walk_source(&source, found_by, discovery, report);
            }
            if !discovery.owners_of_referenced() {
                break;
            }
        }
    }

    fn walk_source(
        &mut self,
        source: &TaskSource<'a>,
        found_by: FoundBy,
        discovery: &mut Discovery<'a>,
        report: &mut Report,
    ) {
        let address = source.address();
        let debug = self.decoder.target().debug;
        // Where the memory gives another reader, a runtime's many shards are walked by two.
        let helper = self
            .second_thread
            .and_then(|setup| setup.second_thread())
            .map(|second| -> ShardHelper<'_> {
                Box::new(move |lists, stopped| second.walk_shards(lists, stopped))
            });
        let list = match self.task_reader.task_list_helped(source, helper) {
            Ok(list) => list,
            Err(error) => {
                let what = format!(
                    "{} {address:#x}: cannot walk its task list",
                    list_word(source.flavor())
                );
                let error = with_build_shape(debug, error);
                report
                    .errors
                    .push(ReportError::from_error(what, &error).of_runtime(address));
                TaskList::default()
            }
        };
        let TaskList {
            mut walk,
            counted,
            closed,
        } = list;
        report.errors.extend(walk.problems.iter().map(|problem| {
            let what = format!("{} {address:#x}", list_word(source.flavor()));
            ReportError::from_error(what, problem).of_runtime(address)
        }));
        let inject = source
            .runtime_handle()
            .and_then(|handle| self.inject_queue(address, handle, report));
        if let Some(budget) = self.decoder.target().budget {
            budget.expect_tasks(counted.unwrap_or(walk.addresses.len() as u64));
        }
        discovery.listed.extend(walk.addresses.iter().copied());
        if closed == Some(true) || !walk.locked_shards.is_empty() {
            discovery.unsettled.insert(address);
        }
        // In memory order: tokio shards its task list, so list order would visit the heap
        // once per shard. In this order the pages of tasks already decoded are not read
        // again, and the page cache is emptied as it goes: 100,000 tasks touch 70 MB.
        walk.addresses.sort_unstable();
        let (read, stopped) = self.decode_tasks(address, &walk, discovery, report);
        let missing = why_missing(counted, read, &walk, stopped);
        report.runtimes.push(RuntimeReport {
            address,
            flavor: source.flavor().to_string(),
            found_by,
            task_count: counted,
            tasks_read: read,
            missing,
            tokio_version: crate::tokio::version(debug),
            inject,
            shutting_down: closed,
        });
    }

    /// A runtime's inject queue, by task id; its length is checked against tokio's.
    fn inject_queue(
        &self,
        address: u64,
        handle: &Value<'_>,
        report: &mut Report,
    ) -> Option<Vec<u64>> {
        let debug = self.decoder.target().debug;
        match inject_queue(handle) {
            Ok(headers) => {
                let ids = task_ids(
                    self.task_reader,
                    &headers,
                    &format!("runtime {address:#x}: inject queue"),
                    &mut report.errors,
                );
                // A thread in the middle of a push or pop holds the lock: the two may
                // disagree until it is done.
                let settled = workers::inject_locked(handle) != Some(true);
                if let (Ok(counted), true) = (workers::inject_len(handle), settled) {
                    if counted != headers.len() as u64 {
                        let message = format!(
                            "runtime {address:#x}: tokio counts {} in its inject queue; {} read",
                            counted_tasks(counted),
                            headers.len()
                        );
                        report
                            .errors
                            .push(ReportError::new(ErrorKind::Layout, message).of_runtime(address));
                    }
                }
                Some(ids)
            }
            Err(error) => {
                let what = format!("runtime {address:#x}: cannot read its inject queue");
                let error = with_build_shape(debug, error);
                report
                    .errors
                    .push(ReportError::from_error(what, &error).of_runtime(address));
                None
            }
        }
    }

    /// Decodes the tasks of one list (addresses in memory order) into `report`; returns
    /// how many were read, and where the budget or an interrupt stopped the walk. A long
    /// list whose memory two threads can read is read by two: the second half by another
    /// thread while this one reads the first, then taken in order.
    fn decode_tasks(
        &mut self,
        source: u64,
        walk: &TaskWalk,
        discovery: &mut Discovery<'a>,
        report: &mut Report,
    ) -> (u64, Option<String>) {
        let count = walk.addresses.len();
        if self.all && self.left_out.is_none() {
            // 100,000 reports: growing by doubling would hold one and a half copies at once.
            report.tasks.reserve_exact(count);
        }
        self.decoder.target().memory.release_cache();
        let second = self
            .second_thread
            .filter(|_| self.all && count >= TASKS_FOR_TWO_THREADS)
            .and_then(|setup| setup.second_thread());
        let Some(second) = second else {
            return self.decode_range(source, walk, 0..count, discovery, report);
        };
        let half = count / 2;
        let running: FxHashSet<u64> = self.running.keys().copied().collect();
        let abandon = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let helper = crate::threads::spawn_scoped(scope, "tokio-async-walk", || {
                panics::on_helper_thread(|| {
                    second.read(source, &walk.addresses[half..], &running, &abandon)
                })
            });
            let Ok(helper) = helper else {
                // No thread to be had (a process at its limit): this one reads them all.
                return self.decode_range(source, walk, 0..count, discovery, report);
            };
            let (read, mut stopped) = self.decode_range(source, walk, 0..half, discovery, report);
            // Ctrl-C still counts while the second thread finishes.
            let target = self.decoder.target();
            while stopped.is_none() && !helper.is_finished() {
                if !target.go_on() {
                    stopped = Some(self.stopped_at(source, half, walk, report));
                }
                std::thread::sleep(WAITING_POLL);
            }
            if stopped.is_some() {
                abandon.store(true, Ordering::Relaxed);
                // What it read, or a panic while reading it, is past where the walk stopped.
                if let Ok(Ok(tasks)) = helper.join() {
                    self.note_not_taken(tasks);
                }
                return (read, stopped);
            }
            let read_elsewhere = match helper.join() {
                Ok(Ok(tasks)) => tasks,
                Ok(Err(caught)) => panics::resume(caught),
                Err(payload) => std::panic::resume_unwind(payload),
            };
            let (more, stopped) =
                self.take_read_elsewhere(source, walk, half, read_elsewhere, discovery, report);
            (read + more, stopped)
        })
    }

    /// Decodes the tasks at `range` of the list (see `decode_tasks`).
    fn decode_range(
        &mut self,
        source: u64,
        walk: &TaskWalk,
        range: Range<usize>,
        discovery: &mut Discovery<'a>,
        report: &mut Report,
    ) -> (u64, Option<String>) {
        let target = self.decoder.target();
        let mut read = 0;
        for index in range {
            let address = walk.addresses[index];
            if index % TASKS_PER_CACHE_GENERATION == TASKS_PER_CACHE_GENERATION - 1 {
                target.memory.release_cache();
            }
            if !target.go_on() {
                return (read, Some(self.stopped_at(source, index, walk, report)));
            }
            let header = match self.task_reader.read_header(address) {
                Ok(header) => header,
                Err(error) => {
                    if !walk.unreadable.contains(&address) {
                        let what = format!("task at {address:#x}");
                        report.errors.push(ReportError::from_error(what, &error));
                    }
                    continue;
                }
            };
            read += 1;
            if let Some(task) = self.decode_task(source, &header, report) {
                let task = (self.keep)(task);
                self.add_task(task, report);
                discovery.add_anchors(
                    self.decoder.take_anchors(),
                    &FoundBy::TaskFuture { task: header.id },
                );
            }
        }
        (read, None)
    }

    /// Says where the walk of a list stopped, at the task at `index`.
    fn stopped_at(
        &self,
        source: u64,
        index: usize,
        walk: &TaskWalk,
        report: &mut Report,
    ) -> String {
        let stop = self
            .decoder
            .target()
            .budget
            .and_then(|budget| budget.stopped());
        let kind = stop.as_ref().map_or(ErrorKind::Budget, |stop| stop.kind);
        let at = format!(
            "{} at task {} of {} (in memory order); the tasks before it are listed",
            stop.map(|stop| stop.message())
                .unwrap_or_else(|| "stopped".into()),
            thousands(index as u64 + 1),
            thousands(walk.addresses.len() as u64)
        );
        report
            .errors
            .push(ReportError::new(kind, format!("runtime {source:#x}: {at}")).of_runtime(source));
        at
    }

    /// Takes what the second thread read of the list from `start` on, task by task, as
    /// `decode_range` would have read it: a task its budget cannot pay for now, and every
    /// one after, is decoded here again, so that the walk stops at the very same node.
    fn take_read_elsewhere(
        &mut self,
        source: u64,
        walk: &TaskWalk,
        start: usize,
        read_elsewhere: ReadInBlocks,
        discovery: &mut Discovery<'a>,
        report: &mut Report,
    ) -> (u64, Option<String>) {
        let target = self.decoder.target();
        let reached = start + read_elsewhere.len();
        let mut read = 0;
        let mut tasks = (start..).zip(read_elsewhere);
        while let Some((index, task)) = tasks.next() {
            let spent = match &task {
                ReadElsewhere::Running => None,
                ReadElsewhere::Unreadable { spent, .. } | ReadElsewhere::Read { spent, .. } => {
                    Some(*spent)
                }
            };
            let paid = spent.map(|(nodes, bytes)| match target.budget {
                Some(budget) => budget.spend_as_decoded_elsewhere(nodes, bytes),
                None => true,
            });
            match (task, paid) {
                (task, Some(false)) => {
                    self.note_not_taken(std::iter::once(task).chain(tasks.map(|(_, task)| task)));
                    let end = walk.addresses.len();
                    let (rest, stopped) =
                        self.decode_range(source, walk, index..end, discovery, report);
                    return (read + rest, stopped);
                }
                (ReadElsewhere::Running, _) => {
                    let (one, stopped) =
                        self.decode_range(source, walk, index..index + 1, discovery, report);
                    read += one;
                    if stopped.is_some() {
                        self.note_not_taken(tasks.map(|(_, task)| task));
                        return (read, stopped);
                    }
                }
                (ReadElsewhere::Unreadable { error, .. }, _) => {
                    let address = walk.addresses[index];
                    if !walk.unreadable.contains(&address) {
                        let what = format!("task at {address:#x}");
                        report.errors.push(ReportError::from_error(what, &error));
                    }
                }
                (
                    ReadElsewhere::Read {
                        task,
                        errors,
                        anchors,
                        ..
                    },
                    _,
                ) => {
                    read += 1;
                    report.errors.extend(errors);
                    let id = task.id();
                    self.add_task(task, report);
                    discovery.add_anchors(anchors, &FoundBy::TaskFuture { task: id });
                }
            }
        }
        // What the second thread did not reach (it could not set up its readers).
        let end = walk.addresses.len();
        let (rest, stopped) = self.decode_range(source, walk, reached..end, discovery, report);
        (read + rest, stopped)
    }

    /// Notes the tasks a second thread read that the walk does not take.
    fn note_not_taken(&mut self, tasks: impl IntoIterator<Item = ReadElsewhere>) {
        self.not_taken
            .extend(tasks.into_iter().filter_map(|task| match task {
                ReadElsewhere::Read { task, .. } => Some(task.id()),
                _ => None,
            }));
    }

    /// One task's report (`None` when only running tasks are asked for and it is not one).
    fn decode_task(
        &mut self,
        source: u64,
        header: &TaskHeader,
        report: &mut Report,
    ) -> Option<TaskReport> {
        let running_on = self.running.get(&header.id).copied();
        if !self.all && running_on.is_none() {
            return None;
        }
        let task = read_task(
            self.task_reader,
            self.decoder,
            source,
            header,
            running_on,
            &mut report.errors,
        );
        if running_on.is_some() {
            self.roots_by_id.insert(header.id, task.root.clone());
        }
        Some(task)
    }
}

/// What a walk keeps of each task unless told otherwise: all of it.
const SHOW_ALL: Keep<'static> = &Kept::Shown;

/// Why `read` differs from what tokio counts, where the walk knows: the first link it could
/// not follow, where the budget stopped it; `None` when they agree (or tokio keeps no count).
fn why_missing(
    counted: Option<u64>,
    read: u64,
    walk: &TaskWalk,
    stopped: Option<String>,
) -> Option<String> {
    let counted = counted?;
    if counted == read {
        return None;
    }
    let locked = match walk.locked_shards.as_slice() {
        [] => None,
        [shard] => Some(format!(
            "shard {shard} is locked: a thread is adding or removing a task"
        )),
        shards => Some(format!(
            "shards {} are locked: threads are adding or removing tasks",
            shards
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    Some(match (stopped, walk.problems.first(), locked) {
        (Some(stop), _, _) => stop,
        (None, Some(problem), _) => problem.message(),
        (None, None, Some(locked)) => locked,
        (None, None, None) if read > counted => {
            "more tasks in the list than tokio counts: a thread may have been changing it".to_string()
        }
        (None, None, None) => {
            "the list ended before the count: a thread may have been changing it, or its links are damaged"
                .to_string()
        }
    })
}

/// `1 task` / `12 tasks`.
fn counted_tasks(count: u64) -> String {
    match count {
        1 => "1 task".to_string(),
        _ => format!("{} tasks", thousands(count)),
    }
}

/// Phase 4: one report per runtime thread and block_on thread, with what each worker is
/// doing and has queued.
fn thread_reports(
    task_reader: &TaskReader<'_>,
    threads: Vec<ThreadState<'_>>,
    block_on_futures: Vec<BlockOnResult>,
    running_roots: &FxHashMap<u64, FutureNode>,
    errors: &mut Vec<ReportError>,
) -> Vec<ThreadReport> {
    threads
        .into_iter()
        .zip(block_on_futures)
        .filter_map(|(state, block_on_result)| {
            thread_report(task_reader, state, block_on_result, running_roots, errors)
        })
        .collect()
}

/// One thread's report; `None` for a thread with no part in tokio (whose context, if it
/// could not be read, is said in `errors`).
fn thread_report(
    task_reader: &TaskReader<'_>,
    state: ThreadState<'_>,
    block_on_result: BlockOnResult,
    running_roots: &FxHashMap<u64, FutureNode>,
    errors: &mut Vec<ReportError>,
) -> Option<ThreadReport> {
    let blocking = blocking_pool_function(&state.frames);
    let Some(role) = thread_role(&state, block_on_result.is_some(), blocking.is_some()) else {
        // Not shown: a thread whose context could not be read must still be accounted for.
        if let Some(error) = &state.error {
            let what = format!("thread {}", state.input.tid);
            errors.push(ReportError::from_error(what, error).of_thread(state.input.tid));
        }
        return None;
    };
    let mut error = state.error.map(|error| error.message());
    let current_task = state
        .current_task
        .filter(|id| running_roots.contains_key(id));
    let (worker_state, queue) = match (&state.worker_context, &state.current_thread_context) {
        (Some(context), _) => worker_activity(
            task_reader,
            context,
            current_task.is_some(),
            state.input.tid,
            errors,
        ),
        (None, Some(context)) => (
            None,
            current_thread_queue(task_reader, context, state.input.tid, errors),
        ),
        (None, None) => (None, None),
    };
    let mut block_on_copies = None;
    let block_on_node = match block_on_result {
        Some(Ok(BlockOnFuture { mut node, copies })) => {
            if current_task.is_none() {
                mark_running(&mut node, &state.frames);
            }
            block_on_copies = (copies > 1).then_some(copies as u64);
            Some(node)
        }
        Some(Err(message)) => {
            error = Some(message);
            None
        }
        None => None,
    };
    // The future being polled now: the current task's, else the block_on future.
    let (future, block_on_future_node) = match current_task {
        Some(id) => (running_roots.get(&id).cloned(), block_on_node),
        None => (block_on_node, None),
    };
    Some(ThreadReport {
        tid: state.input.tid,
        name: state.input.name.clone(),
        role,
        worker: state.worker,
        current_task,
        state: worker_state,
        queue,
        future,
        block_on_future: block_on_future_node,
        // A blocking-pool thread running a closure runs it as the task its context names.
        // (Workers run as blocking tasks of the pool too: theirs is not shown.)
        blocking_task: match (&blocking, role) {
            (Some(Some(_)), ThreadRole::Blocking) => state.current_task,
            _ => None,
        },
        blocking_function: blocking.flatten(),
        block_on_copies,
        runtime: state.runtime.map(|runtime| runtime.handle.address),
        local_set: state.local_set.map(|shared| shared.address),
        error,
    })
}

/// What a thread is to tokio, if anything: a worker, a thread inside `block_on`, one of
/// the blocking pool's, or another inside a runtime or LocalSet.
fn thread_role(
    state: &ThreadState<'_>,
    blocks_on: bool,
    in_blocking_pool: bool,
) -> Option<ThreadRole> {
    if state.worker.is_some() {
        Some(ThreadRole::Worker)
    } else if blocks_on {
        Some(ThreadRole::BlockOn)
    } else if in_blocking_pool {
        Some(ThreadRole::Blocking)
    } else if state.runtime.is_some() || state.local_set.is_some() {
        Some(ThreadRole::Other)
    } else {
        None
    }
}

/// Once the budget is spent every read fails alike: keep one line, the one saying where.
fn say_once_where_the_budget_ran_out(errors: &mut Vec<ReportError>, stop: &Error) {
    let stop_line = stop.message();
    let says = |error: &ReportError| error.message.contains(&stop_line);
    let mentions: Vec<usize> = (0..errors.len()).filter(|&i| says(&errors[i])).collect();
    let kept = mentions
        .iter()
        .copied()
        .find(|&i| errors[i].message.contains(" at task "))
        .or(mentions.first().copied());
    let line = kept
        .map(|i| errors[i].clone())
        .unwrap_or_else(|| ReportError::of(stop));
    errors.retain(|error| !says(error));
    errors.push(line);
}

/// CLOCK_MONOTONIC of this machine, which a live local process shares: (seconds,
/// nanoseconds).
pub fn monotonic_now() -> Option<(i64, u32)> {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    Some((now.tv_sec(), u32::try_from(now.tv_nsec()).ok()?))
}

/// A runtime-level error; an unknown layout also says how tokio was built (its version
/// and the features its DWARF shows), since both change tokio's structures.
fn with_build_shape(debug: &DebugInfo, error: Error) -> Error {
    match error.kind {
        ErrorKind::Layout => {
            error.with_cause_note(format!(" ({})", crate::tokio::build_shape(debug)))
        }
        _ => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(problems: &[&str], locked_shards: &[usize]) -> TaskWalk {
        TaskWalk {
            problems: problems
                .iter()
                .map(|&problem| Error::layout(problem))
                .collect(),
            locked_shards: locked_shards.to_vec(),
            ..TaskWalk::default()
        }
    }

    /// Why the tasks read differ from tokio's count: where the walk stopped, the first link
    /// it could not follow, a shard a thread holds; said only where they differ.
    #[test]
    fn what_is_missing_says_why_where_it_is_known() {
        assert_eq!(why_missing(Some(3), 3, &walk(&["x"], &[1]), None), None);
        assert_eq!(why_missing(None, 3, &walk(&[], &[]), None), None);
        let budget = Some("stopped after 10 nodes at task 4 of 9".to_string());
        assert_eq!(
            why_missing(Some(9), 3, &walk(&["link"], &[]), budget.clone()),
            budget
        );
        assert_eq!(
            why_missing(
                Some(9),
                8,
                &walk(&["task list shard 2: cannot follow"], &[2]),
                None
            )
            .as_deref(),
            Some("task list shard 2: cannot follow")
        );
        assert_eq!(
            why_missing(Some(9), 8, &walk(&[], &[2]), None).as_deref(),
            Some("shard 2 is locked: a thread is adding or removing a task")
        );
        assert_eq!(
            why_missing(Some(9), 10, &walk(&[], &[]), None).as_deref(),
            Some("more tasks in the list than tokio counts: a thread may have been changing it")
        );
        assert!(why_missing(Some(9), 8, &walk(&[], &[]), None)
            .is_some_and(|why| why.starts_with("the list ended before the count")));
    }
}
