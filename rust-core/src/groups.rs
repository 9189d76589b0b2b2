//! `--group`: tasks whose trees have the same shape are merged, so that 10,000 tasks
//! parked in a few places read as a few groups. The same shape means the same kinds,
//! functions, types, coroutine states, await points, lines and branches, node for node;
//! addresses, ids, values and summaries do not count.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use crate::model::{FutureNode, StateCount, TaskGroup, TaskReport, TaskState};

/// The groups of `tasks`, largest first (ties: lowest first id first).
pub fn group_tasks<'a>(tasks: impl IntoIterator<Item = &'a TaskReport>) -> Vec<TaskGroup> {
    // Hash, then compare for real within a bucket: a collision must not merge two shapes.
    let mut buckets: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    let mut members: Vec<Vec<&'a TaskReport>> = Vec::new();
    for task in tasks {
        let bucket = buckets.entry(shape_hash(&task.root)).or_default();
        match bucket
            .iter()
            .find(|&&group| same_shape(&members[group][0].root, &task.root))
        {
            Some(&group) => members[group].push(task),
            None => {
                bucket.push(members.len());
                members.push(vec![task]);
            }
        }
    }
    in_order(members.into_iter().map(group_of).collect())
}

fn group_of(tasks: Vec<&TaskReport>) -> TaskGroup {
    let members = tasks.iter().map(|task| (task.id, task.state)).collect();
    let first = tasks
        .iter()
        .min_by_key(|task| task.id)
        .map(|task| task.root.clone());
    group_of_members(members, first.expect("a group has a task"))
}

/// A group of the tasks `members` (id, state), whose first task's tree is `root`.
fn group_of_members(members: Vec<(u64, TaskState)>, root: FutureNode) -> TaskGroup {
    let mut ids: Vec<u64> = members.iter().map(|&(id, _)| id).collect();
    ids.sort_unstable();
    let mut states: Vec<StateCount> = Vec::new();
    for &(_, state) in &members {
        match states.iter_mut().find(|counted| counted.state == state) {
            Some(counted) => counted.count += 1,
            None => states.push(StateCount { state, count: 1 }),
        }
    }
    states.sort_by(|a, b| b.count.cmp(&a.count).then(a.state.cmp(&b.state)));
    TaskGroup {
        count: ids.len(),
        tasks: ids,
        states,
        root,
    }
}

fn in_order(mut groups: Vec<TaskGroup>) -> Vec<TaskGroup> {
    groups.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.tasks.first().cmp(&b.tasks.first()))
    });
    groups
}

/// The hash of a tree's shape: trees of one shape hash alike.
pub fn shape_hash(root: &FutureNode) -> u64 {
    let mut hasher = FxHasher::default();
    hash_shape(root, &mut hasher);
    hasher.finish()
}

/// Tasks sorted into groups one by one, as a walk reads them, each group keeping only its
/// first task (the lowest id) whole: what `group_tasks` makes of all of them, holding one
/// tree per group.
#[derive(Default)]
pub struct Grouping {
    /// Shape hash -> the groups of that hash (a collision must not merge two shapes).
    buckets: FxHashMap<u64, Vec<usize>>,
    groups: Vec<Grouped>,
}

struct Grouped {
    first: TaskReport,
    members: Vec<(u64, TaskState)>,
}

impl Grouping {
    /// Adds `task` (whose `shape_hash` is `hash`) to its group; gives back the task the
    /// group does not keep whole: `task`, or the group's former first.
    pub fn add(&mut self, task: TaskReport, hash: u64) -> Option<TaskReport> {
        let bucket = self.buckets.entry(hash).or_default();
        let found = bucket
            .iter()
            .copied()
            .find(|&group| same_shape(&self.groups[group].first.root, &task.root));
        let Some(group) = found else {
            bucket.push(self.groups.len());
            self.groups.push(Grouped {
                members: vec![(task.id, task.state)],
                first: task,
            });
            return None;
        };
        let group = &mut self.groups[group];
        group.members.push((task.id, task.state));
        match task.id < group.first.id {
            true => Some(std::mem::replace(&mut group.first, task)),
            false => Some(task),
        }
    }

    /// Each group's first task, and what makes the groups once those are linked and
    /// analysed with the other tasks (`Members::groups`).
    pub fn into_firsts(self) -> (Vec<TaskReport>, Members) {
        let (firsts, members) = self
            .groups
            .into_iter()
            .map(|group| {
                let id = group.first.id;
                (group.first, (id, group.members))
            })
            .unzip();
        (firsts, Members(members))
    }
}

/// The members of each group, by the id of its first task.
#[derive(Debug, Default)]
pub struct Members(Vec<(u64, Vec<(u64, TaskState)>)>);

impl Members {
    /// The groups, largest first, each with its first task's tree as `tasks` has it.
    pub fn groups(self, tasks: &[TaskReport]) -> Vec<TaskGroup> {
        let groups = self
            .0
            .into_iter()
            .filter_map(|(first, members)| {
                let at = tasks.binary_search_by_key(&first, |task| task.id).ok()?;
                Some(group_of_members(members, tasks[at].root.clone()))
            })
            .collect();
        in_order(groups)
    }
}

/// What a node contributes to its tree's shape; children are compared separately.
fn own_shape(node: &FutureNode) -> impl Eq + Hash + '_ {
    (
        (
            node.kind,
            node.function(),
            node.type_name(),
            node.state,
            node.await_point,
        ),
        node.location.as_ref().map(|at| (&*at.path, at.line)),
        node.macro_location().map(|at| (&*at.path, at.line)),
        node.boxed,
        node.branch().map(|branch| {
            (
                branch.index,
                branch.status,
                branch.name.as_deref(),
                branch.location.as_ref().map(|at| at.line),
            )
        }),
        node.via(),
        node.running,
        node.error().is_some(),
        node.children.len(),
    )
}

fn hash_shape(node: &FutureNode, hasher: &mut FxHasher) {
    own_shape(node).hash(hasher);
    for child in &node.children {
        hash_shape(child, hasher);
    }
}

fn same_shape(a: &FutureNode, b: &FutureNode) -> bool {
    own_shape(a) == own_shape(b)
        && a.children
            .iter()
            .zip(&b.children)
            .all(|(a, b)| same_shape(a, b))
}
