//! A compact record of one stop: each task's state and its tree as marks, one per node,
//! that are equal exactly when the node did not move. Kept between commands (`store.rs`)
//! and compared (`diff.rs`); also read from a saved report (`saved.rs`).

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

use super::progress::Progress;
use crate::model::{BranchStatus, CoroutineState, NodeKind, Report, TakenAt, TaskState};

/// Deeper trees are cut here: every walk is bounded.
pub const MAX_DEPTH: usize = 256;

/// What a snapshot reads of a node, from a report's tree or a saved report's.
pub trait MarkedNode: Sized {
    fn kind(&self) -> NodeKind;
    fn function(&self) -> Option<&str>;
    /// `model::names_hash` of its type name and function.
    fn names_hash(&self) -> u64;
    fn coroutine_state(&self) -> Option<CoroutineState>;
    fn await_point(&self) -> Option<u64>;
    /// The short file and the line.
    fn place(&self) -> Option<(&str, u64)>;
    fn branch(&self) -> Option<(usize, BranchStatus)>;
    /// What says it made progress, for a node with facts (`None`: none to say).
    fn progress(&self) -> Option<Progress>;
    fn children(&self) -> &[Self];
}

/// One node as it was: where it sits and what it showed. Two marks are equal when their
/// depth and fingerprint are: a fingerprint covers all its label says. Twelve bytes: a
/// million tasks make several million.
#[derive(Debug, Clone, Copy)]
pub struct NodeMark {
    /// The depth in the top byte, the fingerprint in the rest (as bytes: aligned to four
    /// bytes with the label, not eight).
    key: [u8; 8],
    /// Its label, in the labels of the part it belongs to.
    label: u32,
}

/// Labels are where each snapshot keeps them: only the key counts.
impl PartialEq for NodeMark {
    fn eq(&self, other: &NodeMark) -> bool {
        self.key == other.key
    }
}

/// Bits of a `NodeMark`'s key under its depth (`MAX_DEPTH` fits the byte above).
const FINGERPRINT_BITS: u32 = 56;

impl NodeMark {
    fn new(depth: usize, fingerprint: u64, label: u32) -> NodeMark {
        let key =
            (fingerprint & ((1 << FINGERPRINT_BITS) - 1)) | ((depth as u64) << FINGERPRINT_BITS);
        NodeMark {
            key: key.to_le_bytes(),
            label,
        }
    }

    fn key(&self) -> u64 {
        u64::from_le_bytes(self.key)
    }

    pub fn depth(&self) -> usize {
        (self.key() >> FINGERPRINT_BITS) as usize
    }

    /// Everything that counts, hashed (the low 56 bits of it).
    pub fn fingerprint(&self) -> u64 {
        self.key() & ((1 << FINGERPRINT_BITS) - 1)
    }
}

/// One task as it was; its node marks are in one part of the marks it belongs to.
#[derive(Debug, Clone)]
pub struct TaskMark {
    pub id: u64,
    /// The `taken_at` (Unix seconds) of the earliest stop with this same mark; NaN for
    /// none (eight bytes, not sixteen: `since()`).
    since: f64,
    /// Where its nodes are in its part's: the tree in pre-order.
    first_node: u32,
    node_count: u32,
    pub state: TaskState,
    /// Which of `Marks::parts` holds its nodes.
    part: u8,
}

impl TaskMark {
    pub fn since(&self) -> Option<f64> {
        (!self.since.is_nan()).then_some(self.since)
    }

    fn set_since(&mut self, since: Option<f64>) {
        self.since = since.unwrap_or(f64::NAN);
    }
}

/// The marks of many tasks in a few vectors: a million tasks' marks as one small
/// allocation each would scatter over the heap the report is freed from, and keep most
/// of its pages (a debugger held 900 MB after the command).
#[derive(Debug, Default)]
pub struct Marks {
    tasks: Vec<TaskMark>,
    /// The nodes, one part per thread that marked them: joined into one, a million tasks'
    /// marks would be copied again and held twice meanwhile (the peak of a debugger's
    /// first command).
    parts: Vec<NodeMarks>,
}

/// The nodes some tasks' marks hold, and their labels.
#[derive(Debug, Default)]
struct NodeMarks {
    nodes: Vec<NodeMark>,
    /// What a person reads of a node: `app::serve at main.rs:88`, `mutex_lock
    /// (permits_needed 1)`; shared by nodes of one fingerprint or one text, where recent.
    labels: LabelText,
    /// Where recent labels are in `labels`, while tasks are marked.
    recent: RecentLabels,
}

/// The labels of recent fingerprints and of recent texts, direct-mapped: tasks parked
/// alike share a few labels, each written once. A million sleeps' fingerprints differ
/// (their deadlines, to the nanosecond) while their labels (to the millisecond) mostly
/// repeat the one before: those are found by their text. A map of every fingerprint was
/// a tenth of a snapshot's time, most of it waiting on memory; a label met again after
/// its slot was taken is written again, which costs text, not correctness (marks compare
/// by fingerprint).
#[derive(Debug, Default)]
struct RecentLabels {
    /// `(fingerprint, label)` by fingerprint; empty until the first label.
    by_fingerprint: Vec<(u64, u32)>,
    /// `(hash of the text, label)` by that hash.
    by_text: Vec<(u64, u32)>,
}

/// Slots of each of `RecentLabels`' tables (256 KiB, within a core's cache).
const RECENT_LABELS: usize = 1 << 14;

fn slot(hash: u64) -> usize {
    (hash % RECENT_LABELS as u64) as usize
}

fn recently(slots: &[(u64, u32)], hash: u64) -> Option<u32> {
    slots
        .get(slot(hash))
        .filter(|&&(held, label)| held == hash && label != u32::MAX)
        .map(|&(_, label)| label)
}

fn remember(slots: &mut Vec<(u64, u32)>, hash: u64, label: u32) {
    if slots.is_empty() {
        *slots = vec![(0, u32::MAX); RECENT_LABELS];
    }
    slots[slot(hash)] = (hash, label);
}

/// Labels end to end in one string: a million tasks' sleeps each have a label of their
/// own (it says the deadline), and as many small strings would scatter over the heap.
#[derive(Debug, Default)]
struct LabelText {
    text: String,
    /// Where each label ends in `text`; it starts where the one before ends.
    ends: Vec<u32>,
}

impl LabelText {
    /// The label `write` writes: the index of an equal recent one (the text written is
    /// taken back), else of the one added.
    fn push(&mut self, recent: &mut RecentLabels, write: impl FnOnce(&mut String)) -> u32 {
        let start = self.text.len();
        write(&mut self.text);
        let mut hasher = FxHasher::default();
        self.text[start..].hash(&mut hasher);
        let hash = hasher.finish();
        if let Some(at) =
            recently(&recent.by_text, hash).filter(|&at| self.get(at) == &self.text[start..])
        {
            self.text.truncate(start);
            return at;
        }
        self.ends
            .push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
        let at = u32::try_from(self.ends.len() - 1).unwrap_or(u32::MAX);
        remember(&mut recent.by_text, hash, at);
        at
    }

    fn get(&self, at: u32) -> &str {
        let at = at as usize;
        let start = match at {
            0 => 0,
            _ => self.ends.get(at - 1).map_or(0, |&end| end as usize),
        };
        let end = self.ends.get(at).map_or(0, |&end| end as usize);
        self.text.get(start..end).unwrap_or_default()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ends.len()
    }
}

impl NodeMarks {
    /// The marks of a tree, in pre-order.
    fn mark_tree<N: MarkedNode>(&mut self, root: &N) {
        let mut pending = vec![(root, 0usize)];
        while let Some((node, depth)) = pending.pop() {
            if depth >= MAX_DEPTH {
                continue;
            }
            // Facts that say nothing count as none (a coroutine's absent facts, mostly).
            let progress = node.progress().filter(|progress| !progress.is_empty());
            let fingerprint = fingerprint(node, depth, progress.as_ref());
            let label = match recently(&self.recent.by_fingerprint, fingerprint) {
                Some(at) => at,
                None => {
                    let at = self.labels.push(&mut self.recent, |text| {
                        write_label(text, node, progress.as_ref())
                    });
                    remember(&mut self.recent.by_fingerprint, fingerprint, at);
                    at
                }
            };
            self.nodes.push(NodeMark::new(depth, fingerprint, label));
            for child in node.children().iter().rev() {
                pending.push((child, depth + 1));
            }
        }
    }
}

impl Marks {
    /// Marks one task's tree.
    pub fn mark<N: MarkedNode>(&mut self, id: u64, state: TaskState, root: &N) {
        if self.parts.is_empty() {
            self.parts.push(NodeMarks::default());
        }
        let part = self.parts.len() - 1;
        let nodes = &mut self.parts[part];
        let first = nodes.nodes.len();
        nodes.mark_tree(root);
        self.tasks.push(TaskMark {
            id,
            since: f64::NAN,
            first_node: u32::try_from(first).unwrap_or(u32::MAX),
            node_count: u32::try_from(nodes.nodes.len() - first).unwrap_or(u32::MAX),
            state,
            part: u8::try_from(part).unwrap_or(u8::MAX),
        });
    }

    /// Adds `other`'s tasks after these, its parts beside these (nothing copied but the
    /// tasks).
    fn append(&mut self, other: Marks) {
        let part_base = u8::try_from(self.parts.len()).unwrap_or(u8::MAX);
        self.tasks
            .extend(other.tasks.into_iter().map(|task| TaskMark {
                part: task.part.saturating_add(part_base),
                ..task
            }));
        self.parts.extend(other.parts);
    }

    fn view(&self, task: &TaskMark) -> TaskView<'_> {
        let part = self.parts.get(task.part as usize);
        let first = task.first_node as usize;
        let nodes = part
            .and_then(|part| {
                part.nodes
                    .get(first..first.saturating_add(task.node_count as usize))
            })
            .unwrap_or_default();
        TaskView {
            id: task.id,
            state: task.state,
            since: task.since(),
            nodes,
            labels: part.map(|part| &part.labels),
        }
    }
}

/// One task of a snapshot, with its nodes.
#[derive(Clone, Copy)]
pub struct TaskView<'s> {
    pub id: u64,
    pub state: TaskState,
    pub since: Option<f64>,
    /// The tree in pre-order.
    pub nodes: &'s [NodeMark],
    labels: Option<&'s LabelText>,
}

/// Its nodes with their labels, not where the labels are kept: two snapshots of one stop
/// print alike however their marks were gathered.
impl std::fmt::Debug for TaskView<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes: Vec<(usize, u64, &str)> = self
            .nodes
            .iter()
            .map(|node| (node.depth(), node.fingerprint(), self.label(node)))
            .collect();
        write!(
            formatter,
            "task {} {:?} since {:?}: {nodes:?}",
            self.id, self.state, self.since
        )
    }
}

impl TaskView<'_> {
    /// The same state and tree as `other`.
    pub fn same_as(&self, other: &TaskView<'_>) -> bool {
        self.state == other.state && self.nodes == other.nodes
    }

    /// What a person reads of one of its nodes.
    pub fn label(&self, node: &NodeMark) -> &str {
        self.labels.map_or("", |labels| labels.get(node.label))
    }
}

#[derive(Debug)]
pub struct Snapshot {
    pub taken_at: Option<TakenAt>,
    /// Tasks ordered by id.
    marks: Marks,
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

    /// The snapshot of tasks marked as they were read (`Marks::mark`), in any order; a task
    /// marked twice counts once.
    pub fn from_marks(
        taken_at: Option<TakenAt>,
        mut marks: Marks,
        previous: Option<&Snapshot>,
    ) -> Snapshot {
        marks.tasks.sort_by_key(|task| task.id);
        marks.tasks.dedup_by_key(|task| task.id);
        // Only marking needs them.
        for part in &mut marks.parts {
            part.recent = RecentLabels::default();
        }
        let now = taken_at.map(|at| at.unix_secs);
        for index in 0..marks.tasks.len() {
            let view = marks.view(&marks.tasks[index]);
            let since = match previous
                .and_then(|previous| previous.task(view.id))
                .filter(|before| before.same_as(&view))
            {
                Some(before) => before.since.or(now),
                None => now,
            };
            marks.tasks[index].set_since(since);
        }
        Snapshot { taken_at, marks }
    }

    /// How long task `id` has been as it is now, in seconds.
    pub fn stuck_secs(&self, id: u64) -> Option<f64> {
        let now = self.taken_at?.unix_secs;
        Some(now - self.task(id)?.since?)
    }

    pub fn task(&self, id: u64) -> Option<TaskView<'_>> {
        let tasks = &self.marks.tasks;
        let at = tasks.binary_search_by_key(&id, |task| task.id).ok()?;
        Some(self.marks.view(&tasks[at]))
    }

    /// Every task, by id.
    pub fn tasks(&self) -> impl Iterator<Item = TaskView<'_>> {
        self.marks.tasks.iter().map(|task| self.marks.view(task))
    }
}

#[cfg(test)]
impl Snapshot {
    /// One idle task, id 14, of these node marks: (depth, fingerprint, label).
    pub(super) fn of_one_task(nodes: &[(u16, u64, String)]) -> Snapshot {
        let mut part = NodeMarks::default();
        for (depth, fingerprint, label) in nodes {
            let label = part
                .labels
                .push(&mut part.recent, |text| text.push_str(label));
            part.nodes
                .push(NodeMark::new(*depth as usize, *fingerprint, label));
        }
        let marks = Marks {
            tasks: vec![TaskMark {
                id: 14,
                since: f64::NAN,
                first_node: 0,
                node_count: nodes.len() as u32,
                state: TaskState::Idle,
                part: 0,
            }],
            parts: vec![part],
        };
        Snapshot {
            taken_at: None,
            marks,
        }
    }
}

/// The marks of `trees`, in their order: a long list's second half on a thread of its own
/// (each half interning its own labels; equal fingerprints compare equal). Every debugger
/// command takes a snapshot of its stop, a tenth of its time at 100,000 tasks.
fn task_marks<N: MarkedNode + Sync>(trees: &[(u64, TaskState, &N)]) -> Marks {
    let marks_of = |trees: &[(u64, TaskState, &N)]| -> Marks {
        let mut marks = Marks {
            tasks: Vec::with_capacity(trees.len()),
            ..Marks::default()
        };
        for &(id, state, root) in trees {
            marks.mark(id, state, root);
        }
        marks
    };
    if trees.len() < crate::threads::MANY_TASKS {
        return marks_of(trees);
    }
    let (first, second) = trees.split_at(trees.len() / 2);
    let (mut marks, rest) =
        crate::threads::in_two_halves("tokio-async-marks", first, second, marks_of);
    marks.append(rest);
    marks
}

fn fingerprint<N: MarkedNode>(node: &N, depth: usize, progress: Option<&Progress>) -> u64 {
    let mut hasher = FxHasher::default();
    depth.hash(&mut hasher);
    node.kind().hash(&mut hasher);
    node.names_hash().hash(&mut hasher);
    node.coroutine_state().hash(&mut hasher);
    node.await_point().hash(&mut hasher);
    node.place().hash(&mut hasher);
    node.branch().hash(&mut hasher);
    progress.hash(&mut hasher);
    hasher.finish()
}

/// Writes `app::serve at main.rs:88`, `[1 pending] mutex_lock (permits_available 0, ...)`
/// at the end of `text`.
fn write_label<N: MarkedNode>(text: &mut String, node: &N, progress: Option<&Progress>) {
    // Writing to a String does not fail.
    if let Some((index, status)) = node.branch() {
        let _ = write!(text, "[{index} {}] ", status.name());
    }
    match node.function() {
        Some(function) if node.kind().is_coroutine() => text.push_str(function),
        _ => text.push_str(node.kind().name()),
    }
    if let Some((file, line)) = node.place() {
        let _ = write!(text, " at {file}:{line}");
    }
    if node.coroutine_state() == Some(CoroutineState::Unresumed) {
        text.push_str(" (not started)");
    }
    if let Some(progress) = progress {
        text.push_str(" (");
        progress.describe_into(text);
        text.push(')');
    }
}

impl MarkedNode for crate::model::FutureNode {
    fn kind(&self) -> NodeKind {
        self.kind
    }
    fn function(&self) -> Option<&str> {
        crate::model::FutureNode::function(self)
    }
    fn names_hash(&self) -> u64 {
        crate::model::FutureNode::names_hash(self)
    }
    fn coroutine_state(&self) -> Option<CoroutineState> {
        self.state
    }
    fn await_point(&self) -> Option<u64> {
        crate::model::FutureNode::await_point(self).map(u64::from)
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
        let roots: Vec<FutureNode> = (0..crate::threads::MANY_TASKS as u64 + 3)
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
        let mut one_thread = Marks::default();
        for &(id, state, root) in &trees {
            one_thread.mark(id, state, root);
        }
        let two_threads = task_marks(&trees);
        assert_eq!(two_threads.tasks.len(), trees.len());
        let labels = |marks: &Marks, task: &TaskMark| -> Vec<(u16, u64, String)> {
            let view = marks.view(task);
            view.nodes
                .iter()
                .map(|node| {
                    (
                        node.depth() as u16,
                        node.fingerprint(),
                        view.label(node).to_string(),
                    )
                })
                .collect()
        };
        for (index, task) in two_threads.tasks.iter().enumerate() {
            assert_eq!(task.id, index as u64);
            let alone = &one_thread.tasks[index];
            assert_eq!(
                labels(&two_threads, task),
                labels(&one_thread, alone),
                "task {index}"
            );
        }
    }

    /// Sleeps whose deadlines differ in the nanosecond (so in their fingerprints) but read
    /// alike to the millisecond share one label: a million sleeps are a few thousand.
    #[test]
    fn nodes_that_read_alike_share_their_label() {
        use crate::model::{Deadline, Detail, MonotonicTime};
        let roots: Vec<FutureNode> = (0..1000u32)
            .map(|nanos| {
                let mut sleep = FutureNode::new(NodeKind::Sleep, "tokio::time::Sleep", 0x20);
                sleep.set_detail(Detail::Sleep(Deadline {
                    deadline: Some(MonotonicTime { secs: 7, nanos }),
                    period_secs: None,
                    remaining_secs: None,
                    since_last_tick_secs: None,
                }));
                sleep
            })
            .collect();
        let mut marks = Marks::default();
        for (id, root) in roots.iter().enumerate() {
            marks.mark(id as u64, TaskState::Idle, root);
        }
        let fingerprints: std::collections::HashSet<u64> = marks.parts[0]
            .nodes
            .iter()
            .map(NodeMark::fingerprint)
            .collect();
        assert_eq!(fingerprints.len(), roots.len());
        assert_eq!(marks.parts[0].labels.len(), 1);
        let view = marks.view(&marks.tasks[999]);
        assert_eq!(view.label(&view.nodes[0]), "sleep (deadline 7.000s)");
    }

    /// A node's mark keeps its depth and fingerprint apart in twelve bytes.
    #[test]
    fn a_node_mark_holds_its_depth_and_fingerprint() {
        let mark = NodeMark::new(MAX_DEPTH - 1, u64::MAX, 3);
        assert_eq!(mark.depth(), MAX_DEPTH - 1);
        assert_eq!(mark.fingerprint(), (1 << FINGERPRINT_BITS) - 1);
        let other = NodeMark::new(2, 0x1234_5678_9abc, 3);
        assert_eq!((other.depth(), other.fingerprint()), (2, 0x1234_5678_9abc));
        assert_ne!(NodeMark::new(1, 5, 0), NodeMark::new(2, 5, 0));
        assert_eq!(NodeMark::new(1, 5, 0), NodeMark::new(1, 5, 9));
        assert_eq!(std::mem::size_of::<NodeMark>(), 12);
        assert!(std::mem::size_of::<TaskMark>() <= 32);
    }

    /// More distinct labels than `RecentLabels` has slots (a sleep's names its deadline),
    /// between tasks that share one: every node reads the label its own facts make, and
    /// the shared one is written about once.
    #[test]
    fn labels_read_right_when_recent_ones_are_forgotten() {
        use crate::model::{Deadline, Detail, MonotonicTime};
        let sleeping = |secs: i64| {
            let mut root = FutureNode::new(NodeKind::AsyncFn, "app::serve", 0x10);
            let mut sleep = FutureNode::new(NodeKind::Sleep, "tokio::time::Sleep", 0x20);
            sleep.set_detail(Detail::Sleep(Deadline {
                deadline: Some(MonotonicTime { secs, nanos: 5 }),
                period_secs: None,
                remaining_secs: None,
                since_last_tick_secs: None,
            }));
            root.children.push(sleep);
            root
        };
        let roots: Vec<FutureNode> = (0..3 * RECENT_LABELS as i64)
            .map(|index| match index % 2 {
                0 => sleeping(index),
                _ => sleeping(-1),
            })
            .collect();
        let mut marks = Marks::default();
        for (id, root) in roots.iter().enumerate() {
            marks.mark(id as u64, TaskState::Idle, root);
        }
        let expected = |node: &FutureNode| {
            let mut text = String::new();
            let progress = node.progress().filter(|progress| !progress.is_empty());
            write_label(&mut text, node, progress.as_ref());
            text
        };
        for (task, root) in marks.tasks.iter().zip(&roots) {
            let view = marks.view(task);
            let labels: Vec<&str> = view.nodes.iter().map(|node| view.label(node)).collect();
            assert_eq!(labels, [expected(root), expected(&root.children[0])]);
        }
        // Per task, its sleep's label or the shared one; the coroutine's once.
        let labels = marks.parts[0].labels.len();
        assert!(labels < roots.len() / 2 + 100, "{labels}");
    }
}
