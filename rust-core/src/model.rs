//! The report: what the commands print, as serde types. Its JSON form is the contract
//! documented in the issue tracker (version 1); new keys may be added, none removed.

use serde::Serialize;

pub const REPORT_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct Report {
    pub version: u32,
    pub threads: Vec<ThreadReport>,
    pub tasks: Vec<TaskReport>,
    pub runtimes: Vec<RuntimeReport>,
    /// Problems that did not stop the report (a runtime whose task list was unreadable).
    pub errors: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RuntimeReport {
    pub address: String,
    pub flavor: String,
    pub task_count: usize,
}

#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ThreadRole {
    Worker,
    BlockOn,
    Other,
}

#[derive(Debug, Serialize)]
pub struct ThreadReport {
    pub tid: u64,
    pub name: Option<String>,
    pub role: ThreadRole,
    pub worker: Option<u64>,
    pub current_task: Option<u64>,
    pub future: Option<FutureNode>,
    /// The runtime handle this thread is inside of.
    pub runtime: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Idle,
    Scheduled,
    Running,
    Complete,
    Cancelled,
}

#[derive(Debug, Serialize)]
pub struct TaskReport {
    pub id: u64,
    pub address: String,
    pub state: TaskState,
    pub root: FutureNode,
    pub runtime: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    AsyncFn,
    AsyncBlock,
    AsyncClosure,
    Future,
}

#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CoroutineState {
    Unresumed,
    Suspended,
    Returned,
    Panicked,
}

#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct Location {
    /// Shortened for display (see `names::short_path`).
    pub file: String,
    pub line: u64,
    /// As the DWARF gives it.
    pub path: String,
}

#[derive(Debug, Serialize, Clone)]
pub struct FutureNode {
    pub kind: NodeKind,
    #[serde(rename = "type")]
    pub type_name: String,
    pub function: Option<String>,
    pub state: Option<CoroutineState>,
    pub await_point: Option<u64>,
    pub location: Option<Location>,
    pub children: Vec<FutureNode>,
    pub address: String,
    /// True for the coroutine a worker is executing right now: its location is where it
    /// runs (from the thread's stack), and its memory state is from its last suspension.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
