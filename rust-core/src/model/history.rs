//! Time in the report: when its stop happened (`taken_at`), and how each task changed
//! since an earlier stop (`diff`). docs/schema.md documents both.

use serde::{Deserialize, Serialize};

/// When the stop a report describes happened, on the wall clock.
#[derive(Debug, Serialize, Deserialize, Clone, Copy, PartialEq)]
pub struct TakenAt {
    /// Seconds since the Unix epoch.
    pub unix_secs: f64,
    pub source: ClockSource,
}

/// Where `taken_at` comes from, most exact first.
#[derive(Debug, Serialize, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// The debugger's stop event (or the end of a resume of our own).
    StopEvent,
    /// No stop event was seen: the first command run at this stop.
    FirstCommand,
    /// The time systemd-coredump recorded with the core (`user.coredump.timestamp`).
    CoreDumpTime,
    /// The core file's modification time: when it was written, at or after the stop.
    CoreFileTime,
}

/// How the tasks changed between an earlier stop and this one.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct Diff {
    /// `previous_stop` (kept by the extension) or the saved report's path.
    pub against: String,
    /// Seconds between the two stops; null when either has no `taken_at`.
    pub interval_secs: Option<f64>,
    /// Every task of either stop, stuck first (longest first), then moved, new, finished.
    pub tasks: Vec<TaskChange>,
}

#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct TaskChange {
    pub id: u64,
    pub change: Change,
    /// Stuck tasks: the `taken_at` of the earliest stop with this same tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<f64>,
    /// Stuck tasks: seconds from `since` to this stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stuck_secs: Option<f64>,
    /// Moved tasks: the first node, in tree order, that differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<FirstDifference>,
}

#[derive(Debug, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The same state and the same tree, node for node, progress fields included.
    Stuck,
    Moved,
    New,
    Finished,
}

impl Change {
    pub fn name(self) -> &'static str {
        match self {
            Change::Stuck => "stuck",
            Change::Moved => "moved",
            Change::New => "new",
            Change::Finished => "finished",
        }
    }
}

/// The first node of a moved task's tree that differs: what it was and what it is, each
/// null where the tree has no node there (it grew or shrank).
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct FirstDifference {
    /// How deep in the tree (the root is 0).
    pub depth: usize,
    pub before: Option<String>,
    pub after: Option<String>,
}
