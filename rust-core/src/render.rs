//! Text rendering of a report, one frame a line in the spirit of `bt`:
//! the task's own future first (#0), each next line what the one above awaits.

use std::fmt::Write;

use crate::model::{CoroutineState, FutureNode, NodeKind, Report, TaskReport, ThreadReport, ThreadRole};

pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    for thread in &report.threads {
        render_thread(&mut out, thread);
    }
    for task in &report.tasks {
        render_task(&mut out, task);
    }
    for error in &report.errors {
        let _ = writeln!(out, "error: {error}");
    }
    if report.threads.is_empty() && report.tasks.is_empty() {
        out.push_str("No tokio threads or tasks found.\n");
    }
    out
}

fn render_thread(out: &mut String, thread: &ThreadReport) {
    let name = thread.name.as_deref().map(|name| format!(" \"{name}\"")).unwrap_or_default();
    let role = match thread.role {
        ThreadRole::Worker => {
            let index = thread.worker.map(|w| w.to_string()).unwrap_or_else(|| "?".into());
            match thread.current_task {
                Some(task) => format!("worker {index}, running task {task}"),
                None => format!("worker {index}, idle"),
            }
        }
        ThreadRole::BlockOn => "block_on".to_string(),
        ThreadRole::Other => "runtime thread".to_string(),
    };
    let _ = writeln!(out, "Thread {}{name}: {role}", thread.tid);
    if let Some(error) = &thread.error {
        let _ = writeln!(out, "  error: {error}");
    }
    if let Some(future) = &thread.future {
        render_stack(out, future);
    }
    out.push('\n');
}

fn render_task(out: &mut String, task: &TaskReport) {
    let state = serde_json::to_value(task.state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let _ = writeln!(out, "Task {} ({state})", task.id);
    render_stack(out, &task.root);
    out.push('\n');
}

/// One line per frame; a node with several children lists each branch indented.
fn render_stack(out: &mut String, root: &FutureNode) {
    let mut lines = Vec::new();
    collect_lines(root, 0, "", &mut lines);
    let width = lines.iter().filter(|line| !line.tail.is_empty()).map(|line| line.head.chars().count()).max().unwrap_or(0);
    for line in lines {
        if line.tail.is_empty() {
            let _ = writeln!(out, "{}", line.head);
        } else {
            let _ = writeln!(out, "{:<width$}  {}", line.head, line.tail);
        }
    }
}

struct Line {
    head: String,
    tail: String,
}

fn collect_lines(node: &FutureNode, frame: usize, indent: &str, lines: &mut Vec<Line>) {
    let label = match node.kind {
        NodeKind::AsyncFn => "async fn ",
        NodeKind::AsyncBlock => "async block ",
        NodeKind::AsyncClosure => "async closure ",
        NodeKind::Future => "",
    };
    let name = node.function.as_deref().unwrap_or(&node.type_name);
    let head = format!("{indent}#{frame} {label}{name}");
    let mut tail = String::new();
    if let Some(location) = &node.location {
        let _ = write!(tail, "at {}:{}", location.file, location.line);
    }
    let state = match (node.state, node.await_point) {
        _ if node.running => "(running)".to_string(),
        (Some(CoroutineState::Suspended), Some(point)) => format!("(await #{point})"),
        (Some(CoroutineState::Unresumed), _) => "(not started)".to_string(),
        (Some(CoroutineState::Returned), _) => "(returned)".to_string(),
        (Some(CoroutineState::Panicked), _) => "(panicked)".to_string(),
        _ => String::new(),
    };
    if !state.is_empty() {
        if !tail.is_empty() {
            tail.push_str("  ");
        }
        tail.push_str(&state);
    }
    lines.push(Line { head, tail });
    if let Some(error) = &node.error {
        lines.push(Line { head: format!("{indent}   error: {error}"), tail: String::new() });
    }
    match node.children.as_slice() {
        [] => {}
        [only] => collect_lines(only, frame + 1, indent, lines),
        branches => {
            for (i, branch) in branches.iter().enumerate() {
                lines.push(Line { head: format!("{indent}   branch {i}:"), tail: String::new() });
                collect_lines(branch, frame + 1, &format!("{indent}    "), lines);
            }
        }
    }
}
