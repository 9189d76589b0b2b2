//! `async waits`: the wait-for graph, one line per edge grouped by what is waited for,
//! then each deadlock as its chain, each futurelock and each stranded task. `async
//! backtrace` ends with those lines too.

use std::fmt::Write;
use std::sync::Arc;

use super::style::Style;
use crate::format::task_list;
use crate::model::{
    Deadlock, Futurelock, Location, Party, Report, Resource, ResourceKind, Stranded, StrandedWhy,
    WaitEdge,
};

pub fn render_waits(out: &mut String, report: &Report, style: &Style) {
    let edges = report.waits.as_deref().unwrap_or_default();
    if edges.is_empty() {
        out.push_str("No task waits for another that the tool can name.\n");
    }
    let mut current: Option<&Resource> = None;
    for edge in edges {
        if current != Some(&edge.resource) {
            let _ = writeln!(out, "{}:", resource_name(&edge.resource, edge.to));
            current = Some(&edge.resource);
        }
        let _ = writeln!(out, "  {}", edge_line(edge, style));
    }
    out.push('\n');
    render_locks(out, report, style);
    if report.deadlocks.is_empty() {
        out.push_str("No deadlock found.\n");
    }
}

/// The `deadlock:`, `futurelock:` and `stranded:` lines.
pub fn render_locks(out: &mut String, report: &Report, style: &Style) {
    for deadlock in &report.deadlocks {
        let _ = writeln!(out, "{}", deadlock_line(deadlock, style));
    }
    for futurelock in &report.futurelocks {
        let _ = writeln!(out, "{}", futurelock_line(futurelock, style));
    }
    for stranded in &report.stranded {
        let _ = writeln!(out, "stranded: {}", stranded_text(stranded));
    }
}

/// `task 9 waits on Mutex 0x…, which no task or thread holds (…)`; `task 3 waits on Mutex
/// 0x… for task 1, which cannot go on`.
pub fn stranded_text(stranded: &Stranded) -> String {
    let task = stranded.task;
    match &stranded.why {
        StrandedWhy::NoHolder { resource } => format!(
            "task {task} waits on {}, which no task or thread holds (a guard forgotten, or kept outside every task)",
            resource_name(resource, Party::Task(task))
        ),
        StrandedWhy::WaitsForStuck { resource, tasks } => {
            let whom = task_list(tasks);
            match resource.kind {
                ResourceKind::Task => {
                    format!("task {task} waits for {whom} to finish, which cannot go on")
                }
                _ => format!(
                    "task {task} waits on {} for {whom}, which cannot go on",
                    resource_name(resource, Party::Task(task))
                ),
            }
        }
    }
}

fn at(location: &Option<Arc<Location>>, style: &Style) -> String {
    location
        .as_deref()
        .map(|at| style.file(&format!("{}:{}", at.file, at.line)))
        .unwrap_or_else(|| "?".into())
}

/// `Mutex 0x…` / `JoinHandle of task 8` (the task waited for, `to`).
fn resource_name(resource: &Resource, to: Party) -> String {
    let kind = match resource.kind {
        ResourceKind::Mutex => "Mutex",
        ResourceKind::Rwlock => "RwLock",
        ResourceKind::Semaphore => "Semaphore",
        ResourceKind::Notify => "Notify",
        ResourceKind::Task => return format!("JoinHandle of {to}"),
        other => other.name(),
    };
    format!("{kind} {:#x}", resource.address)
}

/// `task 4 at src/main.rs:47 waits for task 3 (holding it at src/main.rs:45)`; `… may wait
/// for task 3 (a guard at …, maybe moved out: …)` where the lock's permits cannot tell.
fn edge_line(edge: &WaitEdge, style: &Style) -> String {
    let from = format!("{} at {}", edge.from, at(&edge.location, style));
    let to = edge.to.to_string();
    match (edge.resource.kind, edge.possible) {
        (ResourceKind::Task, _) => format!("{from} waits for {to} to finish"),
        (_, true) => format!(
            "{from} may be woken by {to} (it holds the Notify at {})",
            at(&edge.held_at, style)
        ),
        (kind, _) if kind.is_channel() => {
            format!(
                "{from} waits for {to} to send (it holds a sender at {})",
                at(&edge.held_at, style)
            )
        }
        _ if edge.uncertain => format!(
            "{from} may wait for {to} (a guard at {}, maybe moved out: more are kept than the lock has taken)",
            at(&edge.held_at, style)
        ),
        _ if edge.idle_future => format!(
            "{from} waits for {to} (holding it at {}, in an idle future: a futurelock)",
            at(&edge.held_at, style)
        ),
        _ => format!(
            "{from} waits for {to} (holding it at {})",
            at(&edge.held_at, style)
        ),
    }
}

/// `deadlock: task 3 (src/main.rs:47) → Mutex 0x… → task 4 (src/main.rs:47) → Mutex 0x… → task 3`.
pub fn deadlock_line(deadlock: &Deadlock, style: &Style) -> String {
    let mut line = String::from("deadlock:");
    for edge in &deadlock.edges {
        let _ = write!(
            line,
            " {} ({}) → {} →",
            edge.from,
            at(&edge.location, style),
            resource_name(&edge.resource, edge.to)
        );
    }
    match deadlock.edges.first() {
        Some(first) => line.push_str(&format!(" {}", first.from)),
        None => line.push_str(" (empty)"),
    }
    line
}

/// `futurelock: task 18 keeps `queued` at src/main.rs:120, an idle future holding Mutex 0x…; waiting for it: task 20`.
fn futurelock_line(futurelock: &Futurelock, style: &Style) -> String {
    let blocked = match futurelock.blocked.as_slice() {
        [] => "nobody waits for it yet".to_string(),
        blocked => format!("waiting for it: {}", task_list(blocked)),
    };
    format!(
        "futurelock: task {} keeps `{}` at {}, an idle future holding {}; {blocked}",
        futurelock.task,
        futurelock
            .local
            .split('.')
            .next()
            .unwrap_or(&futurelock.local),
        at(&futurelock.location, style),
        resource_name(&futurelock.resource, Party::Task(futurelock.task))
    )
}
