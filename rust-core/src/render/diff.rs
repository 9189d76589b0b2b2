//! `async diff` as text: the stuck tasks first, grouped by shape with how long they have
//! been stuck, then the tasks that moved (each with its first difference), then the new
//! and the finished.

use std::fmt::Write;

use rustc_hash::FxHashMap;

use super::counted;
use super::style::{id_preview, thousands, Style};
use super::table::where_it_stands;
use crate::groups::group_tasks;
use crate::model::{Change, Diff, Report, TaskChange, TaskReport};

/// Moved tasks listed one by one; past this many, the rest are counted.
const MOVED_SHOWN: usize = 20;

pub fn render_diff(out: &mut String, report: &Report, diff: &Diff, style: &Style) {
    let interval = match diff.interval_secs {
        Some(secs) => format!("{secs:.1} s"),
        None => "an unknown time".to_string(),
    };
    let _ = writeln!(out, "Since {} ({interval} before this stop):", diff.against);
    let changes: FxHashMap<u64, &TaskChange> = diff
        .tasks
        .iter()
        .map(|change| (change.id, change))
        .collect();
    let of = |change: Change| -> Vec<&TaskChange> {
        diff.tasks
            .iter()
            .filter(|task| task.change == change)
            .collect()
    };
    let stuck: Vec<&TaskReport> = report
        .tasks
        .iter()
        .filter(|task| {
            changes
                .get(&task.id)
                .is_some_and(|c| c.change == Change::Stuck)
        })
        .collect();
    for group in group_tasks(stuck.iter().copied()) {
        let least = group
            .tasks
            .iter()
            .filter_map(|id| changes.get(id).and_then(|change| change.stuck_secs))
            .min_by(f64::total_cmp);
        let how_long = match least {
            Some(secs) => format!(" for ≥ {secs:.1} s"),
            None => String::new(),
        };
        let [_, place, waits_on] = where_it_stands(&group.root, style);
        let _ = writeln!(
            out,
            "{} stuck{how_long} at {place} ({waits_on}): {}",
            counted_tasks(group.count),
            id_preview(&group.tasks)
        );
    }
    let moved = of(Change::Moved);
    render_moved(out, &moved);
    for (change, word) in [(Change::New, "new"), (Change::Finished, "finished")] {
        let ids: Vec<u64> = of(change).iter().map(|task| task.id).collect();
        if !ids.is_empty() {
            let _ = writeln!(
                out,
                "{} {word}: {}",
                counted_tasks(ids.len()),
                id_preview(&ids)
            );
        }
    }
    let _ = writeln!(
        out,
        "{}: {} stuck, {} moved, {} new, {} finished",
        counted(diff.tasks.len(), "task"),
        thousands(stuck.len() as u64),
        thousands(moved.len() as u64),
        thousands(of(Change::New).len() as u64),
        thousands(of(Change::Finished).len() as u64)
    );
}

/// The tasks that moved, each with the first place its tree differs (the first
/// `MOVED_SHOWN`).
fn render_moved(out: &mut String, moved: &[&TaskChange]) {
    if moved.is_empty() {
        return;
    }
    let _ = writeln!(out, "{} moved:", counted_tasks(moved.len()));
    for change in moved.iter().take(MOVED_SHOWN) {
        let difference = change
            .first_difference
            .as_ref()
            .map(|first| {
                format!(
                    "{} -> {}",
                    first.before.as_deref().unwrap_or("(nothing)"),
                    first.after.as_deref().unwrap_or("(nothing)")
                )
            })
            .unwrap_or_default();
        let _ = writeln!(out, "  task {}: {difference}", change.id);
    }
    if moved.len() > MOVED_SHOWN {
        let _ = writeln!(out, "  ... and {} more", moved.len() - MOVED_SHOWN);
    }
}

fn counted_tasks(count: usize) -> String {
    counted(count, "task")
}
