//! `--group`: tasks whose trees have the same shape are merged, so that 10,000 tasks
//! parked in a few places read as a few groups. The same shape means the same kinds,
//! functions, types, coroutine states, await points, lines and branches, node for node;
//! addresses, ids, values and summaries do not count.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

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

/// Tasks sorted into groups one by one, as a walk reads them, each group keeping whole
/// only what can be its first task (the lowest id): what `group_tasks` makes of all of
/// them, holding a tree or a few per group.
///
/// The walk's own thread keeps every task it reads, so of its tasks only the lowest so far
/// is kept whole. A second thread reads ahead, and the walk may stop before taking all it
/// read (the budget): the tasks taken are a prefix of what it read, so of its tasks each
/// group keeps whole every one lower than all before it, the lowest of any prefix.
#[derive(Default)]
pub struct Grouping {
    /// Shape hash -> the groups of that hash (a collision must not merge two shapes).
    buckets: FxHashMap<u64, Vec<usize>>,
    groups: Vec<Grouped>,
}

#[derive(Default)]
struct Grouped {
    /// The lowest of the tasks the walk's own thread read.
    first: Option<TaskReport>,
    /// Of the tasks read ahead, each lower than all read ahead before it (ids falling).
    ahead: Vec<TaskReport>,
    /// Each member's id and state, and whether it was read ahead.
    members: Vec<(u64, TaskState, bool)>,
}

impl Grouped {
    fn any_tree(&self) -> Option<&FutureNode> {
        self.first
            .as_ref()
            .or(self.ahead.last())
            .map(|task| &task.root)
    }
}

impl Grouping {
    /// Adds `task` (whose `shape_hash` is `hash`; `read_ahead` by the second thread) to
    /// its group; gives back the task the group does not keep whole, if any.
    pub fn add(&mut self, task: TaskReport, hash: u64, read_ahead: bool) -> Option<TaskReport> {
        let bucket = self.buckets.entry(hash).or_default();
        let found = bucket.iter().copied().find(|&group| {
            self.groups[group]
                .any_tree()
                .is_some_and(|root| same_shape(root, &task.root))
        });
        let group = match found {
            Some(group) => group,
            None => {
                bucket.push(self.groups.len());
                self.groups.push(Grouped::default());
                self.groups.len() - 1
            }
        };
        let group = &mut self.groups[group];
        group.members.push((task.id, task.state, read_ahead));
        if read_ahead {
            let lowest = group.ahead.last().is_none_or(|last| task.id < last.id);
            return match lowest {
                true => {
                    group.ahead.push(task);
                    None
                }
                false => Some(task),
            };
        }
        match &group.first {
            Some(first) if first.id <= task.id => Some(task),
            _ => group.first.replace(task),
        }
    }

    /// Each group's first task, and what makes the groups once those are linked and
    /// analysed with the other tasks (`Members::groups`). `not_taken`: the ids of the tasks
    /// read ahead that the walk did not take (it stopped before them).
    pub fn into_firsts(self, not_taken: &FxHashSet<u64>) -> (Vec<TaskReport>, Members) {
        let mut firsts = Vec::new();
        let mut members = Vec::new();
        for group in self.groups {
            let ids: Vec<(u64, TaskState)> = group
                .members
                .into_iter()
                .filter(|&(id, _, ahead)| !(ahead && not_taken.contains(&id)))
                .map(|(id, state, _)| (id, state))
                .collect();
            let ahead = group
                .ahead
                .into_iter()
                .filter(|task| !not_taken.contains(&task.id));
            let first = group
                .first
                .into_iter()
                .chain(ahead)
                .min_by_key(|task| task.id);
            if let Some(first) = first {
                members.push((first.id, ids));
                firsts.push(first);
            }
        }
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
            node.await_point(),
        ),
        node.location.as_ref().map(|at| (&*at.path, at.line)),
        node.macro_location().map(|at| (&*at.path, at.line)),
        node.boxed(),
        node.branch().map(|branch| {
            (
                branch.index,
                branch.status,
                branch.name.as_deref(),
                branch.location.as_ref().map(|at| at.line),
            )
        }),
        node.via(),
        node.running(),
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
