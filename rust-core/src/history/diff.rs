//! `async diff`: each task of two stops is stuck (same state, same tree node for node,
//! progress fields included), moved (with the first node that differs), new or finished.

use super::snapshot::{Snapshot, TaskView};
use crate::model::{Change, Diff, FirstDifference, TaskChange};

/// How the tasks changed from `before` to `after`. `after` must have been taken against
/// `before` (`Snapshot::of(report, Some(before))`), so that its `since` carry over.
pub fn diff(before: &Snapshot, after: &Snapshot, against: String) -> Diff {
    let interval_secs = match (before.taken_at, after.taken_at) {
        (Some(earlier), Some(later)) => Some(rounded(later.unix_secs - earlier.unix_secs)),
        _ => None,
    };
    let now = after.taken_at.map(|at| at.unix_secs);
    let mut tasks: Vec<TaskChange> = after
        .tasks()
        .map(|task| match before.task(task.id) {
            Some(earlier) if earlier.same_as(&task) => TaskChange {
                id: task.id,
                change: Change::Stuck,
                since: task.since,
                stuck_secs: task.since.zip(now).map(|(since, now)| rounded(now - since)),
                first_difference: None,
            },
            Some(earlier) => TaskChange {
                id: task.id,
                change: Change::Moved,
                since: None,
                stuck_secs: None,
                first_difference: Some(first_difference(&earlier, &task)),
            },
            None => change(task.id, Change::New),
        })
        .collect();
    tasks.extend(
        before
            .tasks()
            .filter(|task| after.task(task.id).is_none())
            .map(|task| change(task.id, Change::Finished)),
    );
    // Stuck longest first, then by change and id.
    tasks.sort_by(|a, b| {
        a.change
            .cmp(&b.change)
            .then(
                b.stuck_secs
                    .unwrap_or(0.0)
                    .total_cmp(&a.stuck_secs.unwrap_or(0.0)),
            )
            .then(a.id.cmp(&b.id))
    });
    Diff {
        against,
        interval_secs,
        tasks,
    }
}

fn change(id: u64, change: Change) -> TaskChange {
    TaskChange {
        id,
        change,
        since: None,
        stuck_secs: None,
        first_difference: None,
    }
}

/// To the millisecond, as the report gives times.
fn rounded(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

fn first_difference(before: &TaskView<'_>, after: &TaskView<'_>) -> FirstDifference {
    if before.state != after.state && before.nodes == after.nodes {
        return FirstDifference {
            depth: 0,
            before: Some(format!("task {}", before.state.name())),
            after: Some(format!("task {}", after.state.name())),
        };
    }
    let at = (0..before.nodes.len().max(after.nodes.len()))
        .find(|&at| before.nodes.get(at) != after.nodes.get(at))
        .unwrap_or(0);
    let (was, now) = (before.nodes.get(at), after.nodes.get(at));
    let before_label = was.map(|node| before.label(node).to_string());
    let mut after_label = now.map(|node| after.label(node).to_string());
    // The node stands where it stood, but what counts beside its place (its progress
    // fields, its values) changed: said, rather than the same text twice.
    if after_label.is_some() && after_label == before_label {
        after_label = after_label.map(|same| format!("{same} (its progress changed)"));
    }
    FirstDifference {
        depth: now.or(was).map_or(0, |node| node.depth()),
        before: before_label,
        after: after_label,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(fingerprints: &[u64]) -> Snapshot {
        let nodes: Vec<(u16, u64, String)> = fingerprints
            .iter()
            .enumerate()
            .map(|(depth, &fingerprint)| {
                let label = format!("app::spawner at main.rs:{}", 73 + depth);
                (depth as u16, fingerprint, label)
            })
            .collect();
        Snapshot::of_one_task(&nodes)
    }

    fn differ(before: &Snapshot, after: &Snapshot) -> FirstDifference {
        first_difference(&before.task(14).unwrap(), &after.task(14).unwrap())
    }

    /// The first node that differs is named before and after; where only what it keeps
    /// changed (its place is the same), the after side says so.
    #[test]
    fn a_moved_task_names_the_first_node_that_differs() {
        let before = mark(&[1, 2]);
        let moved_inside = differ(&before, &mark(&[1, 3]));
        assert_eq!(moved_inside.depth, 1);
        assert_eq!(
            moved_inside.before.as_deref(),
            Some("app::spawner at main.rs:74")
        );
        assert_eq!(
            moved_inside.after.as_deref(),
            Some("app::spawner at main.rs:74 (its progress changed)")
        );
        let deeper = differ(&before, &mark(&[1, 2, 5]));
        assert_eq!(
            (deeper.before, deeper.after.as_deref()),
            (None, Some("app::spawner at main.rs:75"))
        );
    }
}
