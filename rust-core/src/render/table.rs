//! `async tasks`: one aligned line per task (or per group of alike tasks) saying where it
//! stands: its root, the deepest frame in the user's own code with its await line, and
//! what the task waits on.

use std::fmt::Write;

use super::style::{id_preview, painted, thousands, Style};
use super::{counted, group_states, state_name};
use crate::model::{FutureNode, TaskGroup, TaskReport};
use crate::names;

/// What takes a table's text as it is written, a piece at a time (and empties `out`):
/// a million rows are never one string.
pub type Flush<'f> = dyn FnMut(&mut String) -> std::io::Result<()> + 'f;

/// Text is handed to the flush in pieces of about this many bytes.
const FLUSHED_EVERY: usize = 1 << 20;

pub fn render_task_table(
    out: &mut String,
    tasks: &[TaskReport],
    style: &Style,
    flush: &mut Flush<'_>,
) -> std::io::Result<()> {
    render_task_table_split(out, tasks, style, crate::threads::MANY_TASKS, flush)
}

/// `render_task_table`, the rows made by two threads from `two_threads_from` tasks on.
fn render_task_table_split(
    out: &mut String,
    tasks: &[TaskReport],
    style: &Style,
    two_threads_from: usize,
    flush: &mut Flush<'_>,
) -> std::io::Result<()> {
    if tasks.is_empty() {
        out.push_str("No task matches.\n");
        return Ok(());
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
        return Table::write_all(&[&header, &rows(tasks)], out, &[0], flush);
    }
    let (first, second) = tasks.split_at(tasks.len() / 2);
    let (first, second) = crate::threads::in_two_halves("tokio-async-table", first, second, rows);
    Table::write_all(&[&header, &first, &second], out, &[0], flush)
}

fn task_row(table: &mut Table, task: &TaskReport, spawned: bool, style: &Style) {
    // As tokio prints it (`Id(10001)`), so that it can be typed back.
    table.push_fmt(format_args!("{}", task.id));
    table.push_with(|text| {
        painted(text, &style.state, |text| {
            text.push_str(state_name(task.state))
        })
    });
    table.push_fmt(format_args!("{:#x}", task.runtime));
    let standing = Standing::of(&task.root);
    table.push_with(|text| standing.write_root(text, style));
    table.push_with(|text| standing.write_user_frame(text, style));
    if spawned {
        match &task.spawned_at {
            Some(at) => table.push_with(|text| {
                painted(text, &style.file, |text| {
                    let _ = write!(text, "{}:{}", at.file, at.line);
                })
            }),
            None => table.push("-"),
        }
    }
    table.push_with(|text| standing.write_waits_on(text));
}

pub fn render_group_table(
    out: &mut String,
    groups: &[TaskGroup],
    style: &Style,
    flush: &mut Flush<'_>,
) -> std::io::Result<()> {
    if groups.is_empty() {
        out.push_str("No task matches.\n");
        return Ok(());
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
    table.write(out, &[0], flush)?;
    let _ = writeln!(
        out,
        "\n{} in {}",
        counted(groups.iter().map(|group| group.count).sum(), "task"),
        counted(groups.len(), "group")
    );
    Ok(())
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

    /// A cell `write` writes into the table's text.
    fn push_with(&mut self, write: impl FnOnce(&mut String)) {
        write(&mut self.text);
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
    /// unpadded; trailing blanks trimmed. Written into `out`, flushed as it grows.
    fn write(
        &self,
        out: &mut String,
        right: &[usize],
        flush: &mut Flush<'_>,
    ) -> std::io::Result<()> {
        Table::write_all(&[self], out, right, flush)
    }

    /// `parts` one after another as one table, each column as wide as its widest cell in
    /// any part (all have the first part's columns).
    fn write_all(
        parts: &[&Table],
        out: &mut String,
        right: &[usize],
        flush: &mut Flush<'_>,
    ) -> std::io::Result<()> {
        let Some(first) = parts.first() else {
            return Ok(());
        };
        let mut widths = vec![0; first.columns];
        for part in parts {
            for (index, cell) in part.cells.iter().enumerate() {
                let column = index % part.columns;
                widths[column] = widths[column].max(cell.width);
            }
        }
        for part in parts {
            part.write_padded(out, right, &widths, flush)?;
        }
        Ok(())
    }

    fn write_padded(
        &self,
        out: &mut String,
        right: &[usize],
        widths: &[usize],
        flush: &mut Flush<'_>,
    ) -> std::io::Result<()> {
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
                if out.len() >= FLUSHED_EVERY {
                    flush(out)?;
                }
            } else {
                out.push_str("  ");
            }
        }
        Ok(())
    }
}

fn push_spaces(out: &mut String, count: usize) {
    out.extend(std::iter::repeat_n(' ', count));
}

/// [root, deepest user frame with its line, what the task waits on].
pub(crate) fn where_it_stands(root: &FutureNode, style: &Style) -> [String; 3] {
    let standing = Standing::of(root);
    let mut cells: [String; 3] = Default::default();
    standing.write_root(&mut cells[0], style);
    standing.write_user_frame(&mut cells[1], style);
    standing.write_waits_on(&mut cells[2]);
    cells
}

/// The nodes a task's row names: written straight into the table's text, as a million
/// rows' three cells each would otherwise be a dozen strings made and freed.
struct Standing<'n> {
    root: &'n FutureNode,
    /// The deepest coroutine of the user's own code down the one-child chain.
    user_frame: Option<&'n FutureNode>,
    /// Where the one-child chain ends.
    leaf: &'n FutureNode,
}

impl<'n> Standing<'n> {
    fn of(root: &'n FutureNode) -> Self {
        let is_users = |node: &FutureNode| {
            node.kind.is_coroutine()
                && node
                    .location
                    .as_ref()
                    .is_some_and(|at| names::is_users_own(&at.path))
        };
        let mut standing = Standing {
            root,
            user_frame: is_users(root).then_some(root),
            leaf: root,
        };
        while let Some(next) = single_child(standing.leaf) {
            standing.leaf = next;
            if is_users(next) {
                standing.user_frame = Some(next);
            }
        }
        standing
    }

    fn write_root(&self, out: &mut String, style: &Style) {
        painted(out, &style.function, |out| write_frame_name(out, self.root));
    }

    fn write_user_frame(&self, out: &mut String, style: &Style) {
        let Some(node) = self.user_frame else {
            out.push('-');
            return;
        };
        painted(out, &style.function, |out| write_frame_name(out, node));
        if let Some(at) = &node.location {
            out.push_str(" at ");
            painted(out, &style.file, |out| {
                let _ = write!(out, "{}:{}", at.file, at.line);
            });
        }
    }

    fn write_waits_on(&self, out: &mut String) {
        let leaf = self.leaf;
        match (leaf.error(), &leaf.summary) {
            (Some(error), _) => {
                out.push_str("error: ");
                out.push_str(error);
            }
            (None, Some(summary)) => out.push_str(summary),
            (None, None) => {
                write_frame_name(out, leaf);
                if leaf.running() {
                    out.push_str(" (running)");
                }
            }
        }
    }
}

/// The one future a node awaits, unless it has several (a `select!`, a set) or none.
fn single_child(node: &FutureNode) -> Option<&FutureNode> {
    match node.children.as_slice() {
        [only] if only.branch().is_none() => Some(only),
        _ => None,
    }
}

/// A coroutine's function, else its type with generic arguments elided.
fn write_frame_name(out: &mut String, node: &FutureNode) {
    match (node.function(), node.kind.is_coroutine()) {
        (Some(function), true) => out.push_str(function),
        _ => write_elided_generics(out, node.type_name()),
    }
}

#[cfg(test)]
fn elide_generics(name: &str) -> String {
    let mut out = String::new();
    write_elided_generics(&mut out, name);
    out
}

/// `tokio::sync::oneshot::Receiver<alloc::string::String>` -> `tokio::sync::oneshot::Receiver<…>`.
fn write_elided_generics(out: &mut String, name: &str) {
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
        table.write(&mut out, &[0], &mut |_| Ok(())).unwrap();
        assert_eq!(
            out,
            "kept\n  ID  NAME  LAST\n   7  \x1b[1ma\x1b[0m     x\n1234  bcd\n"
        );
    }

    /// A table longer than a flush is handed over in pieces, each of whole lines, which
    /// together are the table written at once.
    #[test]
    fn a_long_table_flushed_in_pieces_is_the_table_written_whole() {
        let mut table = Table::new(&["ID", "NAME"]);
        for id in 0..100_000 {
            table.push_fmt(format_args!("{id}"));
            table.push_with(|text| text.push_str(&"n".repeat(id % 40)));
        }
        let mut whole = String::new();
        table.write(&mut whole, &[0], &mut |_| Ok(())).unwrap();
        assert!(whole.len() > 2 * FLUSHED_EVERY);
        let mut pieces = Vec::new();
        let mut out = String::new();
        table
            .write(&mut out, &[0], &mut |out: &mut String| {
                pieces.push(std::mem::take(out));
                Ok(())
            })
            .unwrap();
        pieces.push(out);
        assert!(pieces.len() >= 3);
        assert!(pieces.iter().all(|piece| piece.ends_with('\n')));
        assert_eq!(pieces.concat(), whole);
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
        let mut kept = |_: &mut String| Ok(());
        render_task_table_split(&mut one, &tasks, &style, usize::MAX, &mut kept).unwrap();
        render_task_table_split(&mut two, &tasks, &style, 2, &mut kept).unwrap();
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
