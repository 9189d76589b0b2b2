//! The report a stop's `async bt all --json` gives (docs/schema.md), read as DAP's
//! threads (one per task), stack frames (its await chain) and variables (the locals each
//! keeps across its await).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// What of the report the proxy shows.
#[derive(Debug, Deserialize)]
pub struct Report {
    pub tasks: Vec<Task>,
    #[serde(default)]
    pub threads: Vec<ThreadEntry>,
}

/// A thread of the report: the task it polls now, and whether it runs a future at all
/// (that task's, or its block_on future).
#[derive(Debug, Deserialize)]
pub struct ThreadEntry {
    pub tid: u64,
    pub current_task: Option<u64>,
    #[serde(default)]
    pub future: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
pub struct Task {
    pub id: u64,
    pub state: String,
    pub root: Node,
}

#[derive(Debug, Deserialize)]
pub struct Node {
    pub kind: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub function: Option<String>,
    pub await_point: Option<u64>,
    pub location: Option<Location>,
    #[serde(default)]
    pub children: Vec<Node>,
    pub summary: Option<String>,
    #[serde(default)]
    pub running: bool,
    #[serde(default)]
    pub locals: Vec<HeldLocal>,
    #[serde(default)]
    pub address: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Location {
    pub line: u64,
    /// As the DWARF gives it: relative to a compilation directory for the user's files.
    pub path: String,
}

#[derive(Debug, Deserialize)]
pub struct HeldLocal {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub address: String,
    pub value: Option<serde_json::Value>,
}

/// DAP's `Thread`.
#[derive(Debug, Serialize, PartialEq)]
pub struct Thread {
    pub id: u64,
    pub name: String,
}

/// DAP's `StackFrame` (with the fields this proxy sets).
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StackFrame {
    pub id: u64,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    pub line: u64,
    pub column: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presentation_hint: Option<&'static str>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Source {
    pub name: String,
    pub path: String,
}

/// DAP's `Variable`.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Variable {
    pub name: String,
    pub value: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub variables_reference: u64,
    pub memory_reference: String,
    /// Whether the report spells the value (a number, a string, `None`); one it does not
    /// is made expandable through the adapter (`held.rs`).
    #[serde(skip)]
    pub spelled: bool,
}

/// The longest await chain shown (deeper nodes are left out): each depth has a frame id.
pub const MAX_CHAIN: usize = 4095;

impl Node {
    /// Its first child's chain to the leaf, this node first: what a task waits on.
    pub fn chain(&self) -> Vec<&Node> {
        let mut chain = vec![self];
        while let Some(child) = chain.last().and_then(|node| node.children.first()) {
            if chain.len() == MAX_CHAIN {
                break;
            }
            chain.push(child);
        }
        chain
    }

    fn is_coroutine(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "async_fn" | "async_block" | "async_closure"
        )
    }

    fn name(&self) -> String {
        let function = self.function.as_deref().unwrap_or(&self.type_name);
        match self.kind.as_str() {
            "async_fn" => format!("async fn {function}"),
            "async_block" => format!("async block {function}"),
            "async_closure" => format!("async closure {function}"),
            _ => self
                .summary
                .clone()
                .unwrap_or_else(|| self.type_name.clone()),
        }
    }
}

/// `task 42 · app::handler · waiting for Mutex 0x… (held by task 7)`.
pub fn thread_name(task: &Task) -> String {
    let root = task
        .root
        .function
        .as_deref()
        .unwrap_or(&task.root.type_name);
    let chain = task.root.chain();
    let leaf = chain.last().copied().unwrap_or(&task.root);
    let waiting = if leaf.running {
        "running".to_string()
    } else if let Some(summary) = &leaf.summary {
        summary.clone()
    } else {
        format!("{} ({})", leaf.name(), task.state)
    };
    format!("task {} · {root} · {waiting}", task.id)
}

/// A task's await chain as frames, innermost first; `frame_id(depth)` names each (depth 0
/// is the root). A leaf that is no coroutine is a label row.
pub fn stack_frames(
    task: &Task,
    frame_id: impl Fn(usize) -> u64,
    absolute: impl Fn(&str) -> String,
) -> Vec<StackFrame> {
    let chain = task.root.chain();
    chain
        .iter()
        .enumerate()
        .rev()
        .map(|(depth, node)| {
            let source = node.location.as_ref().map(|location| {
                let path = absolute(&location.path);
                let name = Path::new(&path)
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.clone());
                Source { name, path }
            });
            let mut name = node.name();
            if let (true, Some(point)) = (node.is_coroutine(), node.await_point) {
                name.push_str(&format!(" (await #{point})"));
            }
            StackFrame {
                id: frame_id(depth),
                name,
                line: node.location.as_ref().map_or(0, |location| location.line),
                column: 0,
                source,
                presentation_hint: (!node.is_coroutine()).then_some("label"),
            }
        })
        .collect()
}

/// What the stack of the thread polling `task` gets below its poll frame: a label row
/// naming the task, then what its innermost running coroutine awaits, suspended
/// (innermost first). `frame_id(depth)` as for `stack_frames`; the label is `label_id`.
pub fn polled_task_frames(
    task: &Task,
    label_id: u64,
    frame_id: impl Fn(usize) -> u64,
    absolute: impl Fn(&str) -> String,
) -> Vec<StackFrame> {
    let root = task
        .root
        .function
        .as_deref()
        .unwrap_or(&task.root.type_name);
    let mut frames = vec![StackFrame {
        id: label_id,
        name: format!("task {} · {root}", task.id),
        source: None,
        line: 0,
        column: 0,
        presentation_hint: Some("label"),
    }];
    let chain = task.root.chain();
    let running = chain.iter().rposition(|node| node.running);
    if let Some(innermost) = running {
        let all = stack_frames(task, &frame_id, absolute);
        // `all` is innermost first: the nodes below the running one are its first entries.
        let suspended = chain.len() - 1 - innermost;
        frames.extend(all.into_iter().take(suspended));
    }
    frames
}

/// The coroutine at `depth` of a task's chain whose locals a frame shows: its type, its
/// address and the await it is suspended at.
pub fn holder(task: &Task, depth: usize) -> Option<(String, u64, u64)> {
    let node = *task.root.chain().get(depth)?;
    let address = node.address.as_deref()?.trim_start_matches("0x");
    Some((
        node.type_name.clone(),
        u64::from_str_radix(address, 16).ok()?,
        node.await_point?,
    ))
}

/// The locals the node at `depth` of a task's chain keeps across its await.
pub fn variables(task: &Task, depth: usize) -> Vec<Variable> {
    let chain = task.root.chain();
    let Some(node) = chain.get(depth) else {
        return Vec::new();
    };
    node.locals
        .iter()
        .map(|local| Variable {
            name: local.name.clone(),
            value: match &local.value {
                Some(serde_json::Value::String(text)) => format!("{text:?}"),
                Some(value) => value.to_string(),
                None => format!("{} at {}", local.type_name, local.address),
            },
            type_name: local.type_name.clone(),
            variables_reference: 0,
            memory_reference: local.address.clone(),
            spelled: local.value.is_some(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASK: &str = r#"{"id": 3, "state": "idle", "root": {
        "kind": "async_fn", "type": "app::level1::{async_fn_env#0}", "function": "app::level1",
        "await_point": 0, "location": {"file": "src/main.rs", "line": 65, "path": "src/main.rs"},
        "locals": [{"name": "rx", "type": "Receiver<u32>", "address": "0x10"},
                   {"name": "n", "type": "u32", "address": "0x18", "value": 7}],
        "children": [{"kind": "oneshot_recv", "type": "tokio::sync::oneshot::Receiver<u32>",
                      "function": null, "await_point": null, "location": null,
                      "summary": "recv on oneshot 0x20 (nothing sent)"}]}}"#;

    #[test]
    fn a_polled_task_adds_its_label_and_what_its_running_coroutine_awaits() {
        let running = r#"{"id": 9, "state": "running", "root": {
            "kind": "async_fn", "type": "E", "function": "app::run", "running": true,
            "location": {"line": 5, "path": "/s.rs"},
            "children": [{"kind": "async_fn", "type": "F", "function": "app::child",
                          "await_point": 1, "location": {"line": 9, "path": "/s.rs"}}]}}"#;
        let task: Task = serde_json::from_str(running).unwrap();
        let frames = polled_task_frames(&task, 99, |depth| 10 + depth as u64, str::to_string);
        let names: Vec<(u64, &str, Option<&str>)> = frames
            .iter()
            .map(|frame| (frame.id, frame.name.as_str(), frame.presentation_hint))
            .collect();
        assert_eq!(
            names,
            vec![
                (99, "task 9 · app::run", Some("label")),
                (11, "async fn app::child (await #1)", None)
            ]
        );
    }

    #[test]
    fn a_task_reads_as_a_thread_its_chain_as_frames_and_its_locals_as_variables() {
        let task: Task = serde_json::from_str(TASK).unwrap();
        assert_eq!(
            thread_name(&task),
            "task 3 · app::level1 · recv on oneshot 0x20 (nothing sent)"
        );
        let frames = stack_frames(
            &task,
            |depth| 100 + depth as u64,
            |path| format!("/w/{path}"),
        );
        assert_eq!(
            frames,
            vec![
                StackFrame {
                    id: 101,
                    name: "recv on oneshot 0x20 (nothing sent)".into(),
                    source: None,
                    line: 0,
                    column: 0,
                    presentation_hint: Some("label"),
                },
                StackFrame {
                    id: 100,
                    name: "async fn app::level1 (await #0)".into(),
                    source: Some(Source {
                        name: "main.rs".into(),
                        path: "/w/src/main.rs".into()
                    }),
                    line: 65,
                    column: 0,
                    presentation_hint: None,
                },
            ]
        );
        let held: Vec<(String, String)> = variables(&task, 0)
            .into_iter()
            .map(|variable| (variable.name, variable.value))
            .collect();
        assert_eq!(
            held,
            vec![
                ("rx".into(), "Receiver<u32> at 0x10".into()),
                ("n".into(), "7".into())
            ]
        );
        assert!(variables(&task, 1).is_empty());
    }
}
