//! `async sample`: where tasks wait, over many stops. Each sample adds every task once:
//! to the count of its await point (the deepest place in the program's own code), to its
//! folded stack (`root;fn_a;fn_b;leaf`, for flamegraphs), and to whether it ever moved.

use std::fmt::Write as _;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::snapshot::{Snapshot, MAX_DEPTH};
use crate::model::{BranchStatus, FutureNode, Report};
use crate::names::is_users_own;

#[derive(Default)]
pub struct Sampler {
    samples: u64,
    task_samples: u64,
    places: FxHashMap<String, u64>,
    stacks: FxHashMap<String, u64>,
    /// By task id: samples it was in, and whether it ever changed between two of them.
    tasks: FxHashMap<u64, (u64, bool)>,
    previous: Option<Arc<Snapshot>>,
}

/// Per await point, its share of the task-samples; the tasks in every sample that never
/// moved.
pub struct SampleSummary {
    pub samples: u64,
    pub task_samples: u64,
    /// (place, task-samples there), most first.
    pub places: Vec<(String, u64)>,
    pub never_moved: Vec<u64>,
}

impl Sampler {
    /// Adds a stop: its report and the snapshot `inspect` took of it (only its marks are
    /// compared here, so whatever stop its `since` were carried from does not matter).
    pub fn add(&mut self, report: &Report, snapshot: Arc<Snapshot>) {
        for task in &report.tasks {
            self.task_samples += 1;
            *self.places.entry(place(&task.root)).or_default() += 1;
            *self.stacks.entry(folded_stack(&task.root)).or_default() += 1;
            let moved = match (self.previous.as_ref(), snapshot.task(task.id)) {
                (Some(previous), Some(now)) => previous
                    .task(task.id)
                    .is_none_or(|before| !before.same_as(&now)),
                _ => false,
            };
            let seen = self.tasks.entry(task.id).or_insert((0, false));
            seen.0 += 1;
            seen.1 |= moved;
        }
        self.samples += 1;
        self.previous = Some(snapshot);
    }

    pub fn summary(&self) -> SampleSummary {
        let mut places: Vec<(String, u64)> = self
            .places
            .iter()
            .map(|(place, count)| (place.clone(), *count))
            .collect();
        places.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut never_moved: Vec<u64> = self
            .tasks
            .iter()
            .filter(|(_, (seen, moved))| *seen == self.samples && self.samples > 1 && !moved)
            .map(|(id, _)| *id)
            .collect();
        never_moved.sort_unstable();
        SampleSummary {
            samples: self.samples,
            task_samples: self.task_samples,
            places,
            never_moved,
        }
    }

    /// Folded stacks, one line each: `frame;frame;frame count`, sorted.
    pub fn folded(&self) -> String {
        let mut stacks: Vec<(&String, &u64)> = self.stacks.iter().collect();
        stacks.sort();
        let mut text = String::new();
        for (stack, count) in stacks {
            let _ = writeln!(text, "{stack} {count}");
        }
        text
    }
}

/// The path a task waits down: from the root, the first pending child at each level (the
/// first child where none says).
fn waiting_path(root: &FutureNode) -> Vec<&FutureNode> {
    let mut path = vec![root];
    let mut node = root;
    while path.len() < MAX_DEPTH {
        let next = node
            .children
            .iter()
            .find(|child| {
                child
                    .branch()
                    .is_none_or(|branch| branch.status == BranchStatus::Pending)
            })
            .or(node.children.first());
        match next {
            Some(child) => {
                path.push(child);
                node = child;
            }
            None => break,
        }
    }
    path
}

/// The deepest await in the program's own code (`app::handle at handlers.rs:88`), else the
/// deepest with a line, else the root's name.
fn place(root: &FutureNode) -> String {
    let path = waiting_path(root);
    let with_line = |own: bool| {
        path.iter().rev().find_map(|node| {
            let location = node.location.as_ref()?;
            (!own || is_users_own(&location.path)).then(|| {
                format!(
                    "{} at {}:{}",
                    node.function().unwrap_or(node.type_name()),
                    location.file,
                    location.line
                )
            })
        })
    };
    with_line(true)
        .or_else(|| with_line(false))
        .unwrap_or_else(|| frame_name(root))
}

fn frame_name(node: &FutureNode) -> String {
    let name = match (node.function(), &node.location) {
        (Some(function), Some(location)) if node.kind.is_coroutine() => {
            format!("{function} ({}:{})", location.file, location.line)
        }
        (Some(function), None) if node.kind.is_coroutine() => function.to_string(),
        _ => node.kind.name().to_string(),
    };
    // `;` separates frames and the last space the count: array types have both.
    name.replace(';', ",")
}

fn folded_stack(root: &FutureNode) -> String {
    waiting_path(root)
        .into_iter()
        .map(frame_name)
        .collect::<Vec<_>>()
        .join(";")
}
