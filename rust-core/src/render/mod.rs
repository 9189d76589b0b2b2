//! Text rendering of a report, one frame a line in the spirit of `bt`: the task's own
//! future first (#0), each next line what the one above awaits; trees indent their
//! branches. `full` adds the locals each suspended coroutine keeps across its await.
//! `async tasks` prints a table instead (`table.rs`); `--group` prints each shape once.

mod diff;
mod sample;
mod style;
mod table;
pub(crate) use table::where_it_stands;
mod waits;

use std::fmt::Write;

use serde::Deserialize;

use crate::format::task_list;
use crate::model::{
    BranchStatus, CoroutineState, FutureNode, NodeKind, Report, StateCount, TaskGroup, TaskReport,
    TaskState, ThreadReport, ThreadRole, WorkerState,
};
pub use sample::render_sample;
pub use style::Style;
use style::{id_preview, pad, thousands, visible_width};
pub use waits::stranded_text;

/// What a command shows of the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// `async backtrace`: threads, then each task's tree (or each group's).
    #[default]
    Backtrace,
    /// `async tasks`: one line per task (or group).
    Tasks,
    /// `async task N`: that task's tree alone, as `async backtrace all` prints it.
    Task,
    /// `async waits`: the wait-for graph, deadlocks and futurelocks.
    Waits,
    /// `async diff`: how each task changed since an earlier stop.
    Diff,
}

#[derive(Debug, Clone, Default)]
pub struct TextOptions {
    /// Show saved locals under each suspended coroutine.
    pub locals: bool,
    pub view: View,
    pub style: Style,
}

pub fn render_text(report: &Report, options: &TextOptions) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail, and only UTF-8 is written.
    let _ = render_text_to(report, options, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Renders into `sink` a thread or task at a time, so 100,000 tasks never make one string.
pub fn render_text_to(
    report: &Report,
    options: &TextOptions,
    sink: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let mut out = String::new();
    let mut flush = |out: &mut String| {
        let result = sink.write_all(out.as_bytes());
        out.clear();
        result
    };
    if options.view == View::Task {
        for task in &report.tasks {
            render_task(&mut out, task, options);
            flush(&mut out)?;
        }
        return flush(&mut out);
    }
    render_header(&mut out, report);
    if options.view == View::Waits {
        waits::render_waits(&mut out, report, &options.style);
        return flush(&mut out);
    }
    if let (View::Diff, Some(changes)) = (options.view, &report.diff) {
        diff::render_diff(&mut out, report, changes, &options.style);
        return flush(&mut out);
    }
    if options.view == View::Tasks {
        match &report.groups {
            Some(groups) => {
                table::render_group_table(&mut out, groups, &options.style, &mut flush)?
            }
            None => table::render_task_table(&mut out, &report.tasks, &options.style, &mut flush)?,
        }
        flush(&mut out)?;
    } else {
        for thread in &report.threads {
            render_thread(&mut out, thread, options);
            flush(&mut out)?;
        }
        match &report.groups {
            Some(groups) => {
                for group in groups {
                    render_group(&mut out, group, options);
                    flush(&mut out)?;
                }
            }
            None => {
                for task in &report.tasks {
                    render_task(&mut out, task, options);
                    flush(&mut out)?;
                }
            }
        }
    }
    waits::render_locks(&mut out, report, &options.style);
    for error in &report.errors {
        let _ = writeln!(out, "error: {}", error.message);
    }
    if report.threads.is_empty() && report.tasks.is_empty() {
        out.push_str("No tokio threads or tasks found.\n");
    }
    flush(&mut out)
}

/// `tokio 1.54.1: 1 runtime (MultiThread), 14 tasks`.
fn render_header(out: &mut String, report: &Report) {
    if report.runtimes.is_empty() {
        return;
    }
    // What tokio counts where it counts more than was read (the walk stopped early); a
    // count read from corrupt memory may be anything, so the sum saturates.
    let total: u64 = report
        .runtimes
        .iter()
        .map(|runtime| runtime.task_count.unwrap_or(0).max(runtime.tasks_read))
        .fold(0, u64::saturating_add);
    let total = total as usize;
    let selected = report.tasks_selected();
    let shown = match selected == total {
        true => counted(total, "task"),
        false => format!(
            "{} of {}",
            thousands(selected as u64),
            counted(total, "task")
        ),
    };
    let version = report
        .runtimes
        .iter()
        .find_map(|runtime| runtime.tokio_version.as_deref())
        .unwrap_or("(version unknown)");
    let flavors: Vec<&str> = report
        .runtimes
        .iter()
        .map(|runtime| runtime.flavor.as_str())
        .collect();
    let _ = writeln!(
        out,
        "tokio {version}: {} ({}), {}",
        counted(flavors.len(), "runtime"),
        flavors.join(", "),
        shown
    );
    for runtime in &report.runtimes {
        if let Some(tokio_count) = runtime
            .task_count
            .filter(|&tokio_count| tokio_count != runtime.tasks_read)
        {
            let why = runtime
                .missing
                .as_ref()
                .map(|why| format!(" ({why})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{} {:#x}: tokio counts {}; {} read{why}",
                crate::model::list_word(&runtime.flavor),
                runtime.address,
                counted(tokio_count as usize, "task"),
                thousands(runtime.tasks_read)
            );
        }
        if runtime.shutting_down == Some(true) {
            let _ = writeln!(
                out,
                "{} {:#x}: shutting down (its task list is closed)",
                crate::model::list_word(&runtime.flavor),
                runtime.address
            );
        }
        if let Some(inject) = runtime.inject.as_ref().filter(|inject| !inject.is_empty()) {
            let _ = writeln!(
                out,
                "runtime {:#x}: inject queue: {}",
                runtime.address,
                task_list(inject)
            );
        }
    }
    out.push('\n');
}

/// `1 task` / `14 tasks`.
pub(crate) fn counted(count: usize, word: &str) -> String {
    if count == 1 {
        format!("1 {word}")
    } else {
        format!("{} {word}s", thousands(count as u64))
    }
}

fn render_thread(out: &mut String, thread: &ThreadReport, options: &TextOptions) {
    let name = thread
        .name
        .as_deref()
        .map(|name| format!(" \"{name}\""))
        .unwrap_or_default();
    let role = match thread.role {
        ThreadRole::Worker => {
            let index = thread
                .worker
                .map(|w| w.to_string())
                .unwrap_or_else(|| "?".into());
            match (thread.current_task, thread.state) {
                (Some(task), _) => format!("worker {index}, running task {task}"),
                (None, Some(WorkerState::Searching)) => {
                    format!("worker {index}, searching for work")
                }
                (None, Some(WorkerState::Parked)) => format!("worker {index}, parked"),
                _ => format!("worker {index}, idle"),
            }
        }
        ThreadRole::BlockOn => match thread.current_task {
            Some(task) => format!("block_on, running task {task}"),
            None => "block_on".to_string(),
        },
        ThreadRole::Blocking => match &thread.blocking_function {
            Some(function) => format!("blocking pool, running {function}"),
            None => "blocking pool, idle".to_string(),
        },
        ThreadRole::Other => match (thread.runtime, thread.local_set) {
            (None, Some(local_set)) => {
                format!("inside LocalSet {local_set:#x} (polling, entering or dropping it)")
            }
            _ => "runtime thread".to_string(),
        },
    };
    let _ = writeln!(out, "Thread {}{name}: {role}", thread.tid);
    if let Some(error) = &thread.error {
        let _ = writeln!(out, "  error: {error}");
    }
    if let Some(queue) = &thread.queue {
        let mut parts = Vec::new();
        if let Some(task) = queue.lifo_slot {
            parts.push(format!("task {task} next (LIFO slot)"));
        }
        if !queue.local.is_empty() {
            parts.push(format!("{} (run queue)", task_list(&queue.local)));
        }
        if !parts.is_empty() {
            let _ = writeln!(out, "  queued: {}", parts.join(", then "));
        }
    }
    if let Some(future) = &thread.future {
        render_stack(out, future, options);
    }
    if let Some(future) = &thread.block_on_future {
        out.push_str("  block_on future:\n");
        render_stack(out, future, options);
    }
    out.push('\n');
}

/// One task as `async task ID` shows it.
pub fn render_one_task(task: &TaskReport, options: &TextOptions) -> String {
    let mut out = String::new();
    render_task(&mut out, task, options);
    out
}

fn render_task(out: &mut String, task: &TaskReport, options: &TextOptions) {
    let spawned = match &task.spawned_at {
        Some(at) => format!(
            ", spawned at {}",
            options.style.file(&format!("{}:{}", at.file, at.line))
        ),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "Task {} ({}{spawned})",
        task.id,
        options.style.state(state_name(task.state))
    );
    render_stack(out, &task.root, options);
    out.push('\n');
}

/// `412 tasks (ids 3, 5, 9, … 1023): idle`, then the first task's tree.
fn render_group(out: &mut String, group: &TaskGroup, options: &TextOptions) {
    let ids = match group.tasks.as_slice() {
        [only] => format!("id {only}"),
        ids => format!("ids {}", id_preview(ids)),
    };
    let _ = writeln!(
        out,
        "{} ({ids}): {}",
        counted(group.count, "task"),
        group_states(&group.states, &options.style)
    );
    render_stack(out, &group.root, options);
    out.push('\n');
}

/// `idle` when all are, else `400 idle, 12 scheduled`.
pub(crate) fn group_states(states: &[StateCount], style: &Style) -> String {
    match states {
        [only] => style.state(state_name(only.state)),
        states => states
            .iter()
            .map(|counted| {
                format!(
                    "{} {}",
                    thousands(counted.count as u64),
                    style.state(state_name(counted.state))
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

pub(crate) fn state_name(state: TaskState) -> &'static str {
    state.name()
}

/// One line per frame; a node with several children lists each branch indented.
fn render_stack(out: &mut String, root: &FutureNode, options: &TextOptions) {
    let mut lines = Vec::new();
    collect_lines(root, 0, "", options, &mut lines);
    let width = lines
        .iter()
        .filter(|line| !line.tail.is_empty())
        .map(|line| visible_width(&line.head))
        .max()
        .unwrap_or(0);
    for line in lines {
        if line.tail.is_empty() {
            let _ = writeln!(out, "{}", line.head);
        } else {
            let _ = writeln!(out, "{}  {}", pad(&line.head, width), line.tail);
        }
    }
}

struct Line {
    head: String,
    tail: String,
}

/// What a coroutine node is called before its function: `async fn `; empty for others.
pub fn label(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::AsyncFn => "async fn ",
        NodeKind::AsyncBlock => "async block ",
        NodeKind::AsyncClosure => "async closure ",
        _ => "",
    }
}

/// A node that only passes its one future through (a library type found by the structural
/// search): runs of them are folded into one line unless `full` is asked for.
fn is_pass_through(node: &FutureNode) -> bool {
    node.kind == NodeKind::Future
        && node.summary.is_none()
        && node.error().is_none()
        && !node.running()
        && matches!(node.children.as_slice(), [only] if only.branch().is_none())
}

/// Runs shorter than this are printed in full.
const MIN_FOLDED_RUN: usize = 2;

fn collect_lines(
    node: &FutureNode,
    frame: usize,
    indent: &str,
    options: &TextOptions,
    lines: &mut Vec<Line>,
) {
    if !options.locals {
        if let Some((fold, first_worth_reading)) = folded_run(node, frame, indent) {
            lines.push(fold);
            collect_lines(first_worth_reading, frame + 1, indent, options, lines);
            return;
        }
    }
    lines.push(node_line(node, frame, indent, options));
    if options.locals {
        for local in node.locals() {
            let value = local
                .value
                .as_ref()
                .map(|v| format!(" = {v}"))
                .unwrap_or_default();
            lines.push(Line {
                head: format!("{indent}      {}: {}{value}", local.name, local.type_name),
                tail: String::new(),
            });
        }
    }
    if let Some(error) = node.error() {
        lines.push(Line {
            head: format!("{indent}   error: {error}"),
            tail: String::new(),
        });
    }
    match node.children.as_slice() {
        [] => {}
        [only] if only.branch().is_none() => collect_lines(only, frame + 1, indent, options, lines),
        branches => {
            for (i, branch) in branches.iter().enumerate() {
                lines.push(Line {
                    head: branch_head(branch, i, indent, options),
                    tail: String::new(),
                });
                collect_lines(branch, frame + 1, &format!("{indent}    "), options, lines);
            }
        }
    }
}

/// A run of pass-through nodes from `node` long enough to fold: its one line, and the
/// first node after it worth reading.
fn folded_run<'n>(
    node: &'n FutureNode,
    frame: usize,
    indent: &str,
) -> Option<(Line, &'n FutureNode)> {
    let mut run = vec![node];
    while let Some(next) = run
        .last()
        .filter(|last| is_pass_through(last))
        .map(|last| &last.children[0])
    {
        run.push(next);
    }
    // The last node of `run` is the first one worth reading.
    if run.len() <= MIN_FOLDED_RUN {
        return None;
    }
    let folded = &run[..run.len() - 1];
    let mut crates: Vec<&str> = Vec::new();
    for passed in folded {
        let krate =
            crate::names::split_path(passed.type_name().trim_start_matches(['<', '&', '*']))[0];
        if !crates.contains(&krate) {
            crates.push(krate);
        }
    }
    let head = format!(
        "{indent}#{frame} … {} frames in {}",
        folded.len(),
        crates.join(", ")
    );
    let line = Line {
        head,
        tail: String::new(),
    };
    Some((line, run[run.len() - 1]))
}

/// A node's own line: what it is, and for a coroutine where it stands.
fn node_line(node: &FutureNode, frame: usize, indent: &str, options: &TextOptions) -> Line {
    let coroutine = node.kind.is_coroutine();
    let body = match &node.summary {
        _ if coroutine => format!(
            "{}{}",
            label(node.kind),
            options
                .style
                .function(node.function().unwrap_or(node.type_name()))
        ),
        Some(summary) => summary.to_string(),
        None => node.type_name().to_string(),
    };
    let boxed = if node.boxed() { " [boxed]" } else { "" };
    let shared = if node.shared() {
        " [shared: shown where first reached]"
    } else {
        ""
    };
    let head = format!("{indent}#{frame} {body}{boxed}{shared}");
    // Where a coroutine stands; a recognised async fn (Mutex::lock) says what it waits for
    // instead, and its inner await line is tokio's, not the user's.
    let mut tail = String::new();
    if coroutine {
        if let Some(location) = &node.location {
            let _ = write!(
                tail,
                "at {}",
                options
                    .style
                    .file(&format!("{}:{}", location.file, location.line))
            );
        }
        let state = match (node.state, node.await_point()) {
            _ if node.running() => "(running)".to_string(),
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
            tail.push_str(&options.style.state(&state));
        }
    }
    Line { head, tail }
}

/// The line above child `i` of a node with several (or one that is a branch): the
/// branch, its status and line, or the field a future was found in.
fn branch_head(branch: &FutureNode, i: usize, indent: &str, options: &TextOptions) -> String {
    let (index, status, name, at) = match branch.branch() {
        Some(info) => (
            info.index,
            info.status,
            info.name
                .as_deref()
                .map(|n| format!(" `{n}`"))
                .unwrap_or_default(),
            info.location
                .as_ref()
                .map(|l| {
                    format!(
                        " at {}",
                        options.style.file(&format!("{}:{}", l.file, l.line))
                    )
                })
                .unwrap_or_default(),
        ),
        None => (i, BranchStatus::Pending, String::new(), String::new()),
    };
    match (branch.branch(), branch.via()) {
        // A future found in a field: where it is kept, not a branch.
        (None, Some(via)) => {
            let held = if branch.held() { "held in" } else { "in" };
            format!("{indent}   {held} `{via}`:")
        }
        _ => format!("{indent}   branch {index}{name} ({}){at}:", status.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FoundBy, Report, RuntimeReport};

    /// A task count read from corrupt memory (found by the fuzzer: `u64::MAX` beside a
    /// second runtime's) is said as it is, not summed past `u64::MAX`.
    #[test]
    fn a_corrupt_task_count_beside_another_runtime_is_said_as_read() {
        let runtime = |address, task_count| RuntimeReport {
            address,
            flavor: "MultiThread".into(),
            found_by: FoundBy::ThreadContext { thread: 4242 },
            task_count: Some(task_count),
            tasks_read: 1,
            missing: None,
            tokio_version: Some("1.54.1".into()),
            inject: None,
            shutting_down: None,
        };
        let report = Report {
            runtimes: vec![runtime(0x1000, u64::MAX), runtime(0x2000, 1)],
            ..Report::empty(None)
        };
        let text = render_text(&report, &TextOptions::default());
        assert!(
            text.contains("runtime 0x1000: tokio counts 18,446,744,073,709,551,615 tasks; 1 read"),
            "{text}"
        );
    }

    /// The header names runtimes by their address in hex, as the JSON does, and says where
    /// fewer tasks were read than tokio counts (a LocalSet keeps no count).
    #[test]
    fn the_header_names_a_runtime_shutting_down_and_its_inject_queue_by_address() {
        let report = Report {
            runtimes: vec![
                RuntimeReport {
                    address: 0x5555_5576_b000,
                    flavor: "MultiThread".into(),
                    found_by: FoundBy::ThreadContext { thread: 4242 },
                    task_count: Some(5),
                    tasks_read: 2,
                    missing: Some(
                        "task list shard 3: cannot follow the task at 0x10: cannot read 8 bytes at 0x28"
                            .into(),
                    ),
                    tokio_version: Some("1.54.1".into()),
                    inject: Some(vec![3, 7]),
                    shutting_down: Some(true),
                },
                RuntimeReport {
                    address: 0x5555_5577_0000,
                    flavor: "LocalSet".into(),
                    found_by: FoundBy::BlockOnFuture { thread: 4242 },
                    task_count: None,
                    tasks_read: 1,
                    missing: None,
                    tokio_version: Some("1.54.1".into()),
                    inject: None,
                    shutting_down: Some(false),
                },
            ],
            ..Report::empty(None)
        };
        let text = render_text(&report, &TextOptions::default());
        assert_eq!(
            text.lines().take(5).collect::<Vec<_>>(),
            [
                "tokio 1.54.1: 2 runtimes (MultiThread, LocalSet), 0 of 6 tasks",
                "runtime 0x55555576b000: tokio counts 5 tasks; 2 read (task list shard 3: cannot \
                 follow the task at 0x10: cannot read 8 bytes at 0x28)",
                "runtime 0x55555576b000: shutting down (its task list is closed)",
                "runtime 0x55555576b000: inject queue: tasks 3, 7",
                "",
            ]
        );
        let json = serde_json::to_string(&report).unwrap();
        assert!(
            json.contains(
                r#""runtimes":[{"address":"0x55555576b000","flavor":"MultiThread","found_by":{"via":"thread_context","thread":4242},"task_count":5,"tasks_read":2,"missing":"task list shard 3"#
            ),
            "{json}"
        );
        assert!(
            json.contains(r#""flavor":"LocalSet","found_by":{"via":"block_on_future","thread":4242},"task_count":null,"tasks_read":1,"tokio_version""#),
            "{json}"
        );
    }
}
