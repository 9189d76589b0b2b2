//! A report saved with `--json` (from an earlier stop, or another core of the same
//! process) read back as a snapshot, for `async diff --since FILE`.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::progress::Progress;
use super::snapshot::{MarkedNode, Snapshot};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{
    BranchStatus, CoroutineState, NodeKind, TakenAt, TaskState, READABLE_VERSIONS, REPORT_VERSION,
};

#[derive(Deserialize)]
struct SavedReport {
    version: u32,
    #[serde(default)]
    taken_at: Option<TakenAt>,
    tasks: Vec<SavedTask>,
}

#[derive(Deserialize)]
struct SavedTask {
    id: u64,
    state: TaskState,
    root: SavedNode,
}

#[derive(Deserialize)]
struct SavedLocation {
    file: Arc<str>,
    line: u64,
}

#[derive(Deserialize)]
struct SavedBranch {
    index: usize,
    status: BranchStatus,
}

#[derive(Deserialize)]
struct SavedNode {
    kind: NodeKind,
    #[serde(rename = "type")]
    type_name: Arc<str>,
    #[serde(default)]
    function: Option<Arc<str>>,
    #[serde(default)]
    state: Option<CoroutineState>,
    #[serde(default)]
    await_point: Option<u64>,
    #[serde(default)]
    location: Option<SavedLocation>,
    #[serde(default)]
    branch: Option<SavedBranch>,
    #[serde(default)]
    children: Vec<SavedNode>,
    #[serde(default)]
    detail: Option<Progress>,
}

impl MarkedNode for SavedNode {
    fn kind(&self) -> NodeKind {
        self.kind
    }
    fn function(&self) -> Option<&str> {
        self.function.as_deref()
    }
    fn names_hash(&self) -> u64 {
        crate::model::names_hash(&self.type_name, self.function.as_deref())
    }
    fn coroutine_state(&self) -> Option<CoroutineState> {
        self.state
    }
    fn await_point(&self) -> Option<u64> {
        self.await_point
    }
    fn place(&self) -> Option<(&str, u64)> {
        self.location
            .as_ref()
            .map(|location| (&*location.file, location.line))
    }
    fn branch(&self) -> Option<(usize, BranchStatus)> {
        self.branch
            .as_ref()
            .map(|branch| (branch.index, branch.status))
    }
    fn progress(&self) -> Option<Progress> {
        self.detail.clone()
    }
    fn children(&self) -> &[Self] {
        &self.children
    }
}

/// A saved report's text as a snapshot.
pub fn snapshot_from_json(text: &str) -> std::result::Result<Snapshot, String> {
    let saved: SavedReport = serde_json::from_str(text).map_err(|error| error.to_string())?;
    if !READABLE_VERSIONS.contains(&saved.version) {
        return Err(format!(
            "it is a report of version {}, this tokio-async reads versions 1 to {REPORT_VERSION}",
            saved.version
        ));
    }
    let tasks = saved
        .tasks
        .iter()
        .map(|task| (task.id, task.state, &task.root));
    Ok(Snapshot::from_trees(saved.taken_at, tasks, None))
}

/// The saved report at `path` (`async backtrace all --json --output FILE`).
pub fn snapshot_from_file(path: &Path) -> Result<Snapshot> {
    let unreadable = |why: String| {
        Error::new(
            ErrorKind::Usage,
            format!(
                "cannot read {} as a saved report ({why}); save one with `async tasks --json --output FILE`",
                path.display()
            ),
        )
    };
    let text = std::fs::read_to_string(path).map_err(|error| unreadable(error.to_string()))?;
    snapshot_from_json(&text).map_err(unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(version: u32, errors: &str) -> String {
        format!(
            r#"{{"version":{version},"threads":[],"tasks":[{{"id":7,"state":"idle","root":
            {{"kind":"async_fn","type":"app::f::{{async_fn_env#0}}","function":"app::f",
            "state":"suspended","await_point":1,"children":[],"address":"0x10"}}}}],
            "runtimes":[],"errors":{errors}}}"#
        )
    }

    /// Version 1 (errors as strings) and 2 (errors as objects) read alike; a later one is
    /// refused with a line saying which it reads.
    #[test]
    fn reports_of_both_versions_read_back() {
        let one = snapshot_from_json(&report(1, r#"["task 3: cannot read"]"#)).unwrap();
        let two = snapshot_from_json(&report(
            2,
            r#"[{"kind":"memory","message":"task 3: cannot read","task":3}]"#,
        ))
        .unwrap();
        assert!(one.task(7).is_some());
        assert_eq!(format!("{one:?}"), format!("{two:?}"));
        assert_eq!(
            snapshot_from_json(&report(3, "[]")).err().unwrap(),
            "it is a report of version 3, this tokio-async reads versions 1 to 2"
        );
    }
}
