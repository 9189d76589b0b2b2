//! `--group`: tasks whose trees have the same shape are merged, so that 10,000 tasks
//! parked in a few places read as a few groups. The same shape means the same kinds,
//! functions, types, coroutine states, await points, lines and branches, node for node;
//! addresses, ids, values and summaries do not count.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use crate::model::{FutureNode, StateCount, TaskGroup, TaskReport};

/// The groups of `tasks`, largest first (ties: lowest first id first).
pub fn group_tasks<'a>(tasks: impl IntoIterator<Item = &'a TaskReport>) -> Vec<TaskGroup> {
    // Hash, then compare for real within a bucket: a collision must not merge two shapes.
    let mut buckets: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    let mut members: Vec<Vec<&'a TaskReport>> = Vec::new();
    for task in tasks {
        let mut hasher = FxHasher::default();
        hash_shape(&task.root, &mut hasher);
        let bucket = buckets.entry(hasher.finish()).or_default();
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
    let mut groups: Vec<TaskGroup> = members.into_iter().map(group_of).collect();
    groups.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.tasks.first().cmp(&b.tasks.first()))
    });
    groups
}

fn group_of(tasks: Vec<&TaskReport>) -> TaskGroup {
    let mut ids: Vec<u64> = tasks.iter().map(|task| task.id).collect();
    ids.sort_unstable();
    let mut states: Vec<StateCount> = Vec::new();
    for task in &tasks {
        match states
            .iter_mut()
            .find(|counted| counted.state == task.state)
        {
            Some(counted) => counted.count += 1,
            None => states.push(StateCount {
                state: task.state,
                count: 1,
            }),
        }
    }
    states.sort_by(|a, b| b.count.cmp(&a.count).then(a.state.cmp(&b.state)));
    let first = tasks
        .iter()
        .min_by_key(|task| task.id)
        .map(|task| task.root.clone());
    TaskGroup {
        count: ids.len(),
        tasks: ids,
        states,
        root: first.expect("a group has a task"),
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
