//! A compact record of one stop: each task's state and its tree as marks, one per node,
//! that are equal exactly when the node did not move. Kept between commands (`store.rs`)
//! and compared (`diff.rs`); also read from a saved report (`saved.rs`).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};

use super::progress::Progress;
use crate::model::{BranchStatus, CoroutineState, NodeKind, Report, TakenAt, TaskState};

/// Deeper trees are cut here: every walk is bounded.
pub const MAX_DEPTH: usize = 256;

/// What a snapshot reads of a node, from a report's tree or a saved report's.
pub trait MarkedNode: Sized {
    fn kind(&self) -> NodeKind;
    fn type_name(&self) -> &str;
    fn function(&self) -> Option<&str>;
    fn coroutine_state(&self) -> Option<CoroutineState>;
    fn await_point(&self) -> Option<u64>;
    /// The short file and the line.
    fn place(&self) -> Option<(&str, u64)>;
    fn branch(&self) -> Option<(usize, BranchStatus)>;
    /// What says it made progress, for a node with facts (`None`: none to say).
    fn progress(&self) -> Option<Progress>;
    fn children(&self) -> &[Self];
}

/// One node as it was: where it sits and what it showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMark {
    pub depth: u16,
    /// Everything that counts, hashed.
    pub fingerprint: u64,
    /// What a person reads: `app::serve at main.rs:88`, `mutex_lock (permits_needed 1)`.
    pub label: Arc<str>,
}

#[derive(Debug, Clone)]
pub struct TaskMark {
    pub id: u64,
    pub state: TaskState,
    /// The tree in pre-order.
    pub nodes: Vec<NodeMark>,
    /// The `taken_at` (Unix seconds) of the earliest stop with this same mark.
    pub since: Option<f64>,
}

impl TaskMark {
    /// The same state and tree as `other`.
    pub fn same_as(&self, other: &TaskMark) -> bool {
        self.state == other.state && self.nodes == other.nodes
    }
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub taken_at: Option<TakenAt>,
    /// Ordered by id.
    pub tasks: Vec<TaskMark>,
}

impl Snapshot {
    /// The tasks of a report (all of them: taken before any filter), each carrying the
    /// `since` of `previous` where it has not moved since.
    pub fn of(report: &Report, previous: Option<&Snapshot>) -> Snapshot {
        let tasks = report
            .tasks
            .iter()
            .map(|task| (task.id, task.state, &task.root));
        Snapshot::from_trees(report.taken_at, tasks, previous)
    }

    /// The snapshot of tasks given as (id, state, root), from a report or a saved one.
    pub(super) fn from_trees<'a, N: MarkedNode + Sync + 'a>(
        taken_at: Option<TakenAt>,
        tasks: impl Iterator<Item = (u64, TaskState, &'a N)>,
        previous: Option<&Snapshot>,
    ) -> Snapshot {
        let trees: Vec<(u64, TaskState, &N)> = tasks.collect();
        Snapshot::from_marks(taken_at, task_marks(&trees), previous)
    }

    /// The snapshot of tasks marked as they were read (`Marker`), in any order; a task
    /// marked twice counts once.
    pub fn from_marks(
        taken_at: Option<TakenAt>,
        mut tasks: Vec<TaskMark>,
        previous: Option<&Snapshot>,
    ) -> Snapshot {
        tasks.sort_by_key(|task| task.id);
        tasks.dedup_by_key(|task| task.id);
        let now = taken_at.map(|at| at.unix_secs);
        for task in &mut tasks {
            let unchanged = previous
                .and_then(|previous| previous.task(task.id))
                .filter(|before| before.same_as(task));
            task.since = match unchanged {
                Some(before) => before.since.or(now),
                None => now,
            };
        }
        Snapshot { taken_at, tasks }
    }

    /// How long task `id` has been as it is now, in seconds.
    pub fn stuck_secs(&self, id: u64) -> Option<f64> {
        let now = self.taken_at?.unix_secs;
        Some(now - self.task(id)?.since?)
    }

    pub fn task(&self, id: u64) -> Option<&TaskMark> {
        self.tasks
            .binary_search_by_key(&id, |task| task.id)
            .ok()
            .map(|at| &self.tasks[at])
    }
}

/// Tasks from which the marks are made on two threads.
const TASKS_FOR_TWO_THREADS: usize = 20_000;

/// The marks of `trees`, in their order: a long list's second half on a thread of its own
/// (each half interning its own labels; equal labels compare equal). Every debugger
/// command takes a snapshot of its stop, a tenth of its time at 100,000 tasks.
fn task_marks<N: MarkedNode + Sync>(trees: &[(u64, TaskState, &N)]) -> Vec<TaskMark> {
    let marks_of = |trees: &[(u64, TaskState, &N)]| -> Vec<TaskMark> {
        let mut labels = Labels::default();
        trees
            .iter()
            .map(|&(id, state, root)| TaskMark {
                id,
                state,
                nodes: marks(root, &mut labels),
                since: None,
            })
            .collect()
    };
    if trees.len() < TASKS_FOR_TWO_THREADS {
        return marks_of(trees);
    }
    let (first, second) = trees.split_at(trees.len() / 2);
    let (mut marks, rest) =
        crate::threads::in_two_halves("tokio-async-marks", first, second, marks_of);
    marks.extend(rest);
    marks
}

/// Marks tasks one by one, as a walk reads them, sharing labels as `Snapshot::of` does.
#[derive(Default)]
pub struct Marker(Labels);

impl Marker {
    pub fn mark<N: MarkedNode>(&mut self, id: u64, state: TaskState, root: &N) -> TaskMark {
        TaskMark {
            id,
            state,
            nodes: marks(root, &mut self.0),
            since: None,
        }
    }
}

/// Labels shared between nodes, by fingerprint: 10,000 tasks parked alike make a few
/// distinct ones, each written once. A fingerprint covers all a label says (and depth and
/// type besides), so nodes of one fingerprint have one label.
#[derive(Default)]
struct Labels(FxHashMap<u64, Arc<str>>);

impl Labels {
    fn intern(&mut self, fingerprint: u64, label: impl FnOnce() -> String) -> Arc<str> {
        self.0
            .entry(fingerprint)
            .or_insert_with(|| Arc::from(label()))
            .clone()
    }
}

/// The marks of a tree, in pre-order.
fn marks<N: MarkedNode>(root: &N, labels: &mut Labels) -> Vec<NodeMark> {
    let mut marks = Vec::new();
    let mut pending = vec![(root, 0usize)];
    while let Some((node, depth)) = pending.pop() {
        if depth >= MAX_DEPTH {
            continue;
        }
        // Facts that say nothing count as none (a coroutine's absent facts, mostly).
        let progress = node.progress().filter(|progress| !progress.is_empty());
        let fingerprint = fingerprint(node, depth, progress.as_ref());
        marks.push(NodeMark {
            depth: depth as u16,
            fingerprint,
            label: labels.intern(fingerprint, || label(node, progress.as_ref())),
        });
        for child in node.children().iter().rev() {
            pending.push((child, depth + 1));
        }
    }
    marks
}

fn fingerprint<N: MarkedNode>(node: &N, depth: usize, progress: Option<&Progress>) -> u64 {
    let mut hasher = FxHasher::default();
    depth.hash(&mut hasher);
    node.kind().hash(&mut hasher);
    node.type_name().hash(&mut hasher);
    node.function().hash(&mut hasher);
    node.coroutine_state().hash(&mut hasher);
    node.await_point().hash(&mut hasher);
    node.place().hash(&mut hasher);
    node.branch().hash(&mut hasher);
    progress.hash(&mut hasher);
    hasher.finish()
}

/// `app::serve at main.rs:88`, `[1 pending] mutex_lock (permits_available 0, ...)`.
pub fn label<N: MarkedNode>(node: &N, progress: Option<&Progress>) -> String {
    let mut text = String::new();
    if let Some((index, status)) = node.branch() {
        text.push_str(&format!("[{index} {}] ", status.name()));
    }
    match node.function() {
        Some(function) if node.kind().is_coroutine() => text.push_str(function),
        _ => text.push_str(node.kind().name()),
    }
    if let Some((file, line)) = node.place() {
        text.push_str(&format!(" at {file}:{line}"));
    }
    if node.coroutine_state() == Some(CoroutineState::Unresumed) {
        text.push_str(" (not started)");
    }
    if let Some(progress) = progress {
        text.push_str(&format!(" ({})", progress.describe()));
    }
    text
}

impl MarkedNode for crate::model::FutureNode {
    fn kind(&self) -> NodeKind {
        self.kind
    }
    fn type_name(&self) -> &str {
        crate::model::FutureNode::type_name(self)
    }
    fn function(&self) -> Option<&str> {
        crate::model::FutureNode::function(self)
    }
    fn coroutine_state(&self) -> Option<CoroutineState> {
        self.state
    }
    fn await_point(&self) -> Option<u64> {
        self.await_point
    }
    fn place(&self) -> Option<(&str, u64)> {
        self.location
            .as_ref()
            .map(|location| (&*location.file, location.line))
    }
    fn branch(&self) -> Option<(usize, BranchStatus)> {
        crate::model::FutureNode::branch(self).map(|branch| (branch.index, branch.status))
    }
    fn progress(&self) -> Option<Progress> {
        self.detail().map(Progress::of)
    }
    fn children(&self) -> &[Self] {
        &self.children
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FutureNode;

    /// A long list is marked on two threads, each interning its own labels: the marks are
    /// those one thread makes, in the list's order.
    #[test]
    fn two_threads_mark_a_long_list_as_one_does() {
        let roots: Vec<FutureNode> = (0..TASKS_FOR_TWO_THREADS as u64 + 3)
            .map(|index| {
                let kind = match index % 3 {
                    0 => NodeKind::Sleep,
                    1 => NodeKind::Pending,
                    _ => NodeKind::YieldNow,
                };
                let mut root = FutureNode::new(NodeKind::AsyncFn, "app::serve", index);
                root.children.push(FutureNode::new(kind, "leaf", index + 1));
                root
            })
            .collect();
        let trees: Vec<(u64, TaskState, &FutureNode)> = roots
            .iter()
            .enumerate()
            .map(|(id, root)| (id as u64, TaskState::Idle, root))
            .collect();
        let mut labels = Labels::default();
        let one_thread: Vec<Vec<NodeMark>> = trees
            .iter()
            .map(|(_, _, root)| marks(*root, &mut labels))
            .collect();
        let two_threads = task_marks(&trees);
        assert_eq!(two_threads.len(), trees.len());
        for (index, task) in two_threads.iter().enumerate() {
            assert_eq!(task.id, index as u64);
            assert_eq!(task.nodes, one_thread[index]);
        }
    }
}
