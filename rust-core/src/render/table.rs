//! `async tasks`: one aligned line per task (or per group of alike tasks) saying where it
//! stands: its root, the deepest frame in the user's own code with its await line, and
//! what the task waits on.

use std::fmt::Write;

use super::style::{id_preview, thousands, Style};
use super::{counted, group_states, state_name};
use crate::model::{FutureNode, TaskGroup, TaskReport};
use crate::names;

pub fn render_task_table(out: &mut String, tasks: &[TaskReport], style: &Style) {
    render_task_table_split(out, tasks, style, crate::threads::MANY_TASKS);
}

/// `render_task_table`, the rows made by two threads from `two_threads_from` tasks on.
fn render_task_table_split(
    out: &mut String,
    tasks: &[TaskReport],
    style: &Style,
    two_threads_from: usize,
) {
    if tasks.is_empty() {
        out.push_str("No task matches.\n");
        return;
    }
    let spawned = tasks.iter().any(|task| task.spawned_at.is_some());
    let header = Table::new(&header(
        &["ID", "STATE", "RUNTIME", "ROOT", "WAITING AT"],
        spawned,
    ));
    let rows = |tasks: &[TaskReport]| {
        let mut rows = Table::rows(header.columns);
        for task in tasks {
            task_row(&mut rows, task, spawned, style);
        }
        rows
    };
    if tasks.len() < two_threads_from.max(2) {
        Table::write_all(&[&header, &rows(tasks)], out, &[0]);
        return;
    }
    let (first, second) = tasks.split_at(tasks.len() / 2);
    let (first, second) = crate::threads::in_two_halves("tokio-async-table", first, second, rows);
    Table::write_all(&[&header, &first, &second], out, &[0]);
}

fn task_row(table: &mut Table, task: &TaskReport, spawned: bool, style: &Style) {
    // As tokio prints it (`Id(10001)`), so that it can be typed back.
    table.push_fmt(format_args!("{}", task.id));
    table.push(&style.state(state_name(task.state)));
    table.push_fmt(format_args!("{:#x}", task.runtime));
    let [root, user_frame, waits_on] = where_it_stands(&task.root, style);
    table.push(&root);
    table.push(&user_frame);
    if spawned {
        match &task.spawned_at {
            Some(at) => table.push(&style.file(&format!("{}:{}", at.file, at.line))),
            None => table.push("-"),
        }
    }
    table.push(&waits_on);
}

pub fn render_group_table(out: &mut String, groups: &[TaskGroup], style: &Style) {
    if groups.is_empty() {
        out.push_str("No task matches.\n");
        return;
    }
    let mut columns = header(&["TASKS", "STATE", "ROOT", "WAITING AT"], false);
    columns.push("IDS");
    let mut table = Table::new(&columns);
    for group in groups {
        table.push(&thousands(group.count as u64));
        table.push(&group_states(&group.states, style));
        for cell in where_it_stands(&group.root, style) {
            table.push(&cell);
        }
        table.push(&id_preview(&group.tasks));
    }
    table.write(out, &[0]);
    let _ = writeln!(
        out,
        "\n{} in {}",
        counted(groups.iter().map(|group| group.count).sum(), "task"),
        counted(groups.len(), "group")
    );
}

fn header<'a>(columns: &[&'a str], spawned: bool) -> Vec<&'a str> {
    let mut row = columns.to_vec();
    if spawned {
        row.push("SPAWNED AT");
    }
    row.push("WAITING ON");
    row
}

/// A table's cells, row after row, in one string with each cell's end and visible width:
/// a million rows are their text and one vector, not millions of strings measured twice.
struct Table {
    columns: usize,
    text: String,
    cells: Vec<Cell>,
}

struct Cell {
    end: usize,
    width: usize,
}

impl Table {
    /// A table of the header's columns, the header its first row.
    fn new(header: &[&str]) -> Self {
        let mut table = Table::rows(header.len());
        for column in header {
            table.push(column);
        }
        table
    }

    /// Rows of `columns` columns, to be written after others (`write_all`).
    fn rows(columns: usize) -> Self {
        Table {
            columns,
            text: String::new(),
            cells: Vec::new(),
        }
    }

    fn push(&mut self, cell: &str) {
        self.text.push_str(cell);
        self.end_cell();
    }

    fn push_fmt(&mut self, cell: std::fmt::Arguments<'_>) {
        let _ = self.text.write_fmt(cell);
        self.end_cell();
    }

    fn end_cell(&mut self) {
        let start = self.cells.last().map_or(0, |cell| cell.end);
        let width = super::visible_width(&self.text[start..]);
        self.cells.push(Cell {
            end: self.text.len(),
            width,
        });
    }

    /// Columns padded to their widest cell; `right` columns aligned right; the last
    /// unpadded; trailing blanks trimmed.
    fn write(&self, out: &mut String, right: &[usize]) {
        Table::write_all(&[self], out, right);
    }

    /// `parts` one after another as one table, each column as wide as its widest cell in
    /// any part (all have the first part's columns).
    fn write_all(parts: &[&Table], out: &mut String, right: &[usize]) {
        let Some(first) = parts.first() else {
            return;
        };
        let mut widths = vec![0; first.columns];
        for part in parts {
            for (index, cell) in part.cells.iter().enumerate() {
                let column = index % part.columns;
                widths[column] = widths[column].max(cell.width);
            }
        }
        for part in parts {
            part.write_padded(out, right, &widths);
        }
    }

    fn write_padded(&self, out: &mut String, right: &[usize], widths: &[usize]) {
        let mut start = 0;
        let mut line_start = out.len();
        for (index, cell) in self.cells.iter().enumerate() {
            let column = index % self.columns;
            if column == 0 {
                line_start = out.len();
            }
            let text = &self.text[start..cell.end];
            start = cell.end;
            let padding = widths[column].saturating_sub(cell.width);
            let last = column + 1 == self.columns;
            if right.contains(&column) {
                push_spaces(out, padding);
                out.push_str(text);
            } else {
                out.push_str(text);
                if !last {
                    push_spaces(out, padding);
                }
            }
            if last {
                let kept = out[line_start..].trim_end().len();
                out.truncate(line_start + kept);
                out.push('\n');
            } else {
                out.push_str("  ");
            }
        }
    }
}

fn push_spaces(out: &mut String, count: usize) {
    out.extend(std::iter::repeat_n(' ', count));
}

/// [root, deepest user frame with its line, what the task waits on].
pub(crate) fn where_it_stands(root: &FutureNode, style: &Style) -> [String; 3] {
    let mut chain = vec![root];
    while let Some(next) = chain.last().and_then(|node| single_child(node)) {
        chain.push(next);
    }
    let user_frame = chain
        .iter()
        .rev()
        .find(|node| {
            node.kind.is_coroutine()
                && node
                    .location
                    .as_ref()
                    .is_some_and(|at| names::is_users_own(&at.path))
        })
        .map(|node| {
            let at = node
                .location
                .as_ref()
                .map(|at| format!(" at {}", style.file(&format!("{}:{}", at.file, at.line))))
                .unwrap_or_default();
            format!("{}{at}", style.function(&frame_name(node)))
        })
        .unwrap_or_else(|| "-".into());
    let leaf = chain.last().copied().unwrap_or(root);
    let waits_on = match (leaf.error(), &leaf.summary) {
        (Some(error), _) => format!("error: {error}"),
        (None, Some(summary)) => summary.to_string(),
        (None, None) if leaf.running() => format!("{} (running)", frame_name(leaf)),
        (None, None) => frame_name(leaf),
    };
    [style.function(&frame_name(root)), user_frame, waits_on]
}

/// The one future a node awaits, unless it has several (a `select!`, a set) or none.
fn single_child(node: &FutureNode) -> Option<&FutureNode> {
    match node.children.as_slice() {
        [only] if only.branch().is_none() => Some(only),
        _ => None,
    }
}

/// A coroutine's function, else its type with generic arguments elided.
fn frame_name(node: &FutureNode) -> String {
    match (node.function(), node.kind.is_coroutine()) {
        (Some(function), true) => function.to_string(),
        _ => elide_generics(node.type_name()),
    }
}

/// `tokio::sync::oneshot::Receiver<alloc::string::String>` -> `tokio::sync::oneshot::Receiver<…>`.
fn elide_generics(name: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' => {
                if depth == 0 {
                    out.push_str("<…");
                }
                depth += 1;
            }
            '>' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    out.push('>');
                }
            }
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_pads_columns_to_the_widest_cell_by_visible_width() {
        let mut table = Table::new(&["ID", "NAME", "LAST"]);
        for (id, name, last) in [("7", "\x1b[1ma\x1b[0m", "x"), ("1234", "bcd", "")] {
            table.push(id);
            table.push(name);
            table.push(last);
        }
        let mut out = String::from("kept\n");
        table.write(&mut out, &[0]);
        assert_eq!(
            out,
            "kept\n  ID  NAME  LAST\n   7  \x1b[1ma\x1b[0m     x\n1234  bcd\n"
        );
    }

    /// Rows made by two threads, a half each, are the table one thread makes: each column
    /// as wide as its widest cell in either half (here the second's).
    #[test]
    fn a_table_made_by_two_threads_is_the_one_made_by_one() {
        use crate::model::{FutureNode, NodeKind, TaskState};
        let tasks: Vec<TaskReport> = (0..40u64)
            .map(|id| {
                let name = format!("app::handler_{}", "x".repeat(id as usize % 13));
                let mut root = FutureNode::new(NodeKind::AsyncFn, name, 0x9000 + id);
                root.summary = Some(format!("waits {}", "y".repeat(id as usize)).into());
                TaskReport {
                    id: id * id * 1000,
                    address: 0x7000 + id,
                    state: if id % 3 == 0 {
                        TaskState::Idle
                    } else {
                        TaskState::Running
                    },
                    root,
                    runtime: 0x100 << (id % 5),
                    spawned_at: None,
                    error: None,
                }
            })
            .collect();
        let style = Style::default();
        let (mut one, mut two) = (String::new(), String::new());
        render_task_table_split(&mut one, &tasks, &style, usize::MAX);
        render_task_table_split(&mut two, &tasks, &style, 2);
        assert_eq!(two, one);
        assert_eq!(one.lines().count(), 41);
    }

    #[test]
    fn elides_generic_arguments() {
        assert_eq!(
            elide_generics("tokio::sync::oneshot::Receiver<alloc::string::String>"),
            "tokio::sync::oneshot::Receiver<…>"
        );
        assert_eq!(elide_generics("a::B<c::D<e>>::f<g>"), "a::B<…>::f<…>");
        assert_eq!(elide_generics("<a::B as c::D>::e"), "<…>::e");
    }
}
