//! Which tasks a command shows: `async task N` and the filters of `async backtrace all` and
//! `async tasks` (`--name`, `--state`, `--waiting-on`, `--runtime`, `--limit`). Applied
//! once every task is decoded and linked, so a selected task reads exactly as it does in
//! the whole report.

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::history::Snapshot;
use crate::model::{AnalysedTask, FutureNode, NodeKind, Report, TaskReport, TaskState};

/// The selection as the glue sends it; every given criterion must hold.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFilter {
    /// Only these task ids (`async task N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<u64>>,
    /// A regex searched in every frame's function and type name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The `kind` of a leaf of the task's tree (any leaf of a `select!`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<String>,
    /// A runtime's (or LocalSet's) address, as the report prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// At most this many tasks, lowest ids first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Only tasks unchanged for at least this many seconds (`history`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_for: Option<f64>,
}

impl TaskFilter {
    pub fn is_empty(&self) -> bool {
        self.ids.is_none()
            && self.name.is_none()
            && self.state.is_none()
            && self.waiting_on.is_none()
            && self.runtime.is_none()
            && self.limit.is_none()
            && self.stuck_for.is_none()
    }
}

fn usage(message: String) -> Error {
    Error::new(ErrorKind::Usage, message)
}

/// The tasks a walk left out of the report as it decoded them, `selects` (without
/// history) having refused them.
#[derive(Debug, Default)]
pub struct LeftOut {
    /// What linking and the wait analysis read of them (`waits::trim`), by id.
    pub analysed: Vec<AnalysedTask>,
    /// Tasks the analysis reads nothing of, not kept at all: (runtime, id).
    pub dropped: Vec<(u64, u64)>,
}

impl LeftOut {
    pub fn len(&self) -> usize {
        self.analysed.len() + self.dropped.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn has(&self, id: u64) -> bool {
        self.analysed
            .binary_search_by_key(&id, |task| task.id)
            .is_ok()
            || self.dropped.iter().any(|&(_, dropped)| dropped == id)
    }
}

/// A filter checked and compiled; made before any memory is read, so a typo costs nothing.
pub struct Selection {
    ids: Option<Vec<u64>>,
    name: Option<Regex>,
    state: Option<TaskState>,
    waiting_on: Option<NodeKind>,
    runtime: Option<u64>,
    limit: Option<usize>,
    stuck_for: Option<f64>,
}

impl Selection {
    pub fn new(filter: &TaskFilter) -> Result<Selection> {
        let name = filter
            .name
            .as_deref()
            .map(|pattern| {
                Regex::new(pattern).map_err(|error| {
                    usage(format!(
                        "--name: bad regex {pattern:?}: {}",
                        first_line(&error.to_string())
                    ))
                })
            })
            .transpose()?;
        let state = filter.state.as_deref().map(parse_state).transpose()?;
        let waiting_on = filter.waiting_on.as_deref().map(parse_kind).transpose()?;
        let runtime = filter.runtime.as_deref().map(parse_address).transpose()?;
        Ok(Selection {
            ids: filter.ids.clone(),
            name,
            state,
            waiting_on,
            runtime,
            limit: filter.limit,
            stuck_for: filter.stuck_for,
        })
    }

    /// Whether the filter leaves tasks out by what each task's own tree says (its id,
    /// names, state, leaves, runtime), which linking does not change: tasks `selects`
    /// (without history) refuses may be left out as soon as they are decoded.
    pub fn decides_per_task(&self) -> bool {
        self.ids.is_some()
            || self.name.is_some()
            || self.state.is_some()
            || self.waiting_on.is_some()
            || self.runtime.is_some()
    }

    /// Whether every task `selects` (without history) takes is in the report: no
    /// `--limit` or `--stuck-for` to leave some out once all are read.
    pub fn takes_every_selected(&self) -> bool {
        self.limit.is_none() && self.stuck_for.is_none()
    }

    /// Whether the filter needs the tasks' history (`--stuck-for`).
    pub fn needs_history(&self) -> bool {
        self.stuck_for.is_some()
    }

    /// Keeps the tasks every criterion selects, then the first `limit` of them (the report's
    /// tasks are in id order). Asking for a task id that no runtime has is an error.
    /// `left_out`: what the walk left out as it went (the tasks not shown are there only
    /// for the analysis).
    pub fn apply(
        &self,
        report: &mut Report,
        history: Option<&Snapshot>,
        left_out: Option<&LeftOut>,
    ) -> Result<()> {
        if let Some(missing) = self.ids.iter().flatten().find(|&&id| {
            !report.tasks.iter().any(|task| task.id == id)
                && !left_out.is_some_and(|left_out| left_out.has(id))
        }) {
            let total: u64 = report
                .runtimes
                .iter()
                .map(|runtime| runtime.tasks_read)
                .sum();
            return Err(usage(format!("no task {missing} among the {total} tasks of this program (`async tasks` lists them)")));
        }
        let stuck_for = match (self.stuck_for, history) {
            (Some(_), None) => return Err(usage(
                "--stuck-for: no earlier stop of this program is known to compare with; run `async tasks` now, \
                 let the program run, stop it again, then ask again (or `async diff --since FILE`)".to_string(),
            )),
            (Some(seconds), Some(history)) => Some((seconds, history)),
            (None, _) => None,
        };
        // The tasks the walk left out are not among them.
        report.tasks.retain(|task| self.selects(task, stuck_for));
        if let Some(limit) = self.limit {
            report.tasks.truncate(limit);
        }
        Ok(())
    }
}

impl Selection {
    /// Whether every criterion but the limit holds for `task`; `stuck_for` is the
    /// `--stuck-for` seconds with the history that tells them.
    pub fn selects(&self, task: &TaskReport, stuck_for: Option<(f64, &Snapshot)>) -> bool {
        stuck_for.is_none_or(|(seconds, history)| {
            history
                .stuck_secs(task.id)
                .is_some_and(|stuck| stuck >= seconds)
        }) && self.ids.as_ref().is_none_or(|ids| ids.contains(&task.id))
            && self.state.is_none_or(|state| task.state == state)
            && self.runtime.is_none_or(|runtime| task.runtime == runtime)
            && self
                .waiting_on
                .is_none_or(|kind| any_leaf(&task.root, &|leaf| leaf.kind == kind))
            && self.name.as_ref().is_none_or(|name| {
                any_node(&task.root, &|node| {
                    name.is_match(node.type_name())
                        || node
                            .function()
                            .is_some_and(|function| name.is_match(function))
                })
            })
    }

    /// The `--stuck-for` seconds asked, if any.
    pub fn stuck_for(&self) -> Option<f64> {
        self.stuck_for
    }
}

fn first_line(text: &str) -> String {
    text.lines()
        .rfind(|line| !line.trim().is_empty())
        .unwrap_or(text)
        .trim()
        .to_string()
}

const STATES: &str = "idle, scheduled, running, complete, cancelled";

fn parse_state(word: &str) -> Result<TaskState> {
    serde_json::from_value(serde_json::Value::from(word.to_ascii_lowercase()))
        .map_err(|_| usage(format!("--state: unknown state {word:?}; one of {STATES}")))
}

fn parse_kind(word: &str) -> Result<NodeKind> {
    serde_json::from_value(serde_json::Value::from(word.to_ascii_lowercase().replace('-', "_"))).map_err(|_| {
        usage(format!("--waiting-on: unknown kind {word:?}; kinds are the `kind` values of docs/schema.md, such as mutex_lock, sleep, io_readiness, mpsc_recv, join_handle"))
    })
}

fn parse_address(text: &str) -> Result<u64> {
    let digits = text
        .trim()
        .trim_start_matches("0x")
        .trim_start_matches("0X");
    u64::from_str_radix(digits, 16)
        .map_err(|_| usage(format!("--runtime: {text:?} is not an address (0x…)")))
}

fn any_node(node: &FutureNode, test: &dyn Fn(&FutureNode) -> bool) -> bool {
    test(node) || node.children.iter().any(|child| any_node(child, test))
}

fn any_leaf(node: &FutureNode, test: &dyn Fn(&FutureNode) -> bool) -> bool {
    match node.children.is_empty() {
        true => test(node),
        false => node.children.iter().any(|child| any_leaf(child, test)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_criteria_with_one_line() {
        let bad = |filter: TaskFilter| {
            Selection::new(&filter)
                .err()
                .map(|error| (error.kind, error.message()))
        };
        let (kind, message) = bad(TaskFilter {
            name: Some("(".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(kind, ErrorKind::Usage);
        assert!(message.starts_with("--name: bad regex \"(\""), "{message}");
        assert!(!message.contains('\n'));
        assert!(bad(TaskFilter {
            state: Some("sleepy".into()),
            ..Default::default()
        })
        .unwrap()
        .1
        .contains("idle, scheduled"));
        assert!(bad(TaskFilter {
            waiting_on: Some("nothing".into()),
            ..Default::default()
        })
        .is_some());
        assert!(bad(TaskFilter {
            runtime: Some("zz".into()),
            ..Default::default()
        })
        .is_some());
        assert!(bad(TaskFilter {
            waiting_on: Some("Mutex-Lock".into()),
            ..Default::default()
        })
        .is_none());
        assert_eq!(parse_address("0x5555AB").unwrap(), 0x5555ab);
    }
}
