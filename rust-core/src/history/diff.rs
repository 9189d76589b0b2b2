//! `async diff`: each task of two stops is stuck (same state, same tree node for node,
//! progress fields included), moved (with the first node that differs), new or finished.

use super::snapshot::{NodeMark, Snapshot, TaskMark};
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
        .tasks
        .iter()
        .map(|task| match before.task(task.id) {
            Some(earlier) if earlier.same_as(task) => TaskChange {
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
                first_difference: Some(first_difference(earlier, task)),
            },
            None => change(task.id, Change::New),
        })
        .collect();
    tasks.extend(
        before
            .tasks
            .iter()
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

fn first_difference(before: &TaskMark, after: &TaskMark) -> FirstDifference {
    let label = |node: Option<&NodeMark>| node.map(|node| node.label.to_string());
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
    FirstDifference {
        depth: now.or(was).map_or(0, |node| node.depth as usize),
        before: label(was),
        after: label(now),
    }
}
