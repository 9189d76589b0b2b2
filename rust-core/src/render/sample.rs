//! `async sample`'s report: where the task-samples were parked, most first, and the tasks
//! that never moved.

use std::fmt::Write;

use super::style::{id_preview, thousands};
use crate::history::SampleSummary;

/// Places listed; the rest are summed in one line.
const PLACES_SHOWN: usize = 30;

pub fn render_sample(summary: &SampleSummary, interval_secs: f64, note: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} samples {interval_secs} s apart, {} task-samples",
        thousands(summary.samples),
        thousands(summary.task_samples)
    );
    if let Some(note) = note {
        let _ = writeln!(out, "{note}");
    }
    let total = summary.task_samples.max(1) as f64;
    for (place, count) in summary.places.iter().take(PLACES_SHOWN) {
        let _ = writeln!(
            out,
            "{:>6.1}%  {:>9}  {place}",
            *count as f64 * 100.0 / total,
            thousands(*count)
        );
    }
    if summary.places.len() > PLACES_SHOWN {
        let rest: u64 = summary.places[PLACES_SHOWN..]
            .iter()
            .map(|(_, count)| count)
            .sum();
        let _ = writeln!(
            out,
            "{:>6.1}%  {:>9}  ({} other places)",
            rest as f64 * 100.0 / total,
            thousands(rest),
            summary.places.len() - PLACES_SHOWN
        );
    }
    match summary.never_moved.len() {
        _ if summary.samples < 2 => {}
        0 => out.push_str("Every task moved at least once.\n"),
        count => {
            let _ = writeln!(
                out,
                "{} never moved in any sample: {}",
                super::counted(count, "task"),
                id_preview(&summary.never_moved)
            );
        }
    }
    out
}
