//! `async tasks`: one aligned line per task (or per group of alike tasks) saying where it
//! stands: its root, the deepest frame in the user's own code with its await line, and
//! what the task waits on.

use std::fmt::Write;

use super::style::{id_preview, pad, thousands, Style};
use super::{counted, group_states, state_name};
use crate::model::{FutureNode, TaskGroup, TaskReport};
use crate::names;

pub fn render_task_table(out: &mut String, tasks: &[TaskReport], style: &Style) {
    if tasks.is_empty() {
        out.push_str("No task matches.\n");
        return;
    }
    let spawned = tasks.iter().any(|task| task.spawned_at.is_some());
    let mut rows = vec![header(
        &["ID", "STATE", "RUNTIME", "ROOT", "WAITING AT"],
        spawned,
    )];
    for task in tasks {
        let mut row = vec![
            // As tokio prints it (`Id(10001)`), so that it can be typed back.
            task.id.to_string(),
            style.state(state_name(task.state)),
            format!("{:#x}", task.runtime),
        ];
        row.extend(where_it_stands(&task.root, style));
        if spawned {
            row.insert(
                row.len() - 1,
                task.spawned_at
                    .as_ref()
                    .map(|at| style.file(&format!("{}:{}", at.file, at.line)))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        rows.push(row);
    }
    write_rows(out, &rows, &[0]);
}

pub fn render_group_table(out: &mut String, groups: &[TaskGroup], style: &Style) {
    if groups.is_empty() {
        out.push_str("No task matches.\n");
        return;
    }
    let mut rows = vec![header(&["TASKS", "STATE", "ROOT", "WAITING AT"], false)];
    rows[0].push("IDS".into());
    for group in groups {
        let mut row = vec![
            thousands(group.count as u64),
            group_states(&group.states, style),
        ];
        row.extend(where_it_stands(&group.root, style));
        row.push(id_preview(&group.tasks));
        rows.push(row);
    }
    write_rows(out, &rows, &[0]);
    let _ = writeln!(
        out,
        "\n{} in {}",
        counted(groups.iter().map(|group| group.count).sum(), "task"),
        counted(groups.len(), "group")
    );
}

fn header(columns: &[&str], spawned: bool) -> Vec<String> {
    let mut row: Vec<String> = columns.iter().map(|column| column.to_string()).collect();
    if spawned {
        row.push("SPAWNED AT".into());
    }
    row.push("WAITING ON".into());
    row
}

/// Columns padded to their widest cell; `right` columns aligned right; the last unpadded.
fn write_rows(out: &mut String, rows: &[Vec<String>], right: &[usize]) {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|row| row.get(c))
                .map(|cell| super::visible_width(cell))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let last = c + 1 == row.len();
            let padded = match (right.contains(&c), last) {
                (true, _) => format!(
                    "{}{cell}",
                    " ".repeat(widths[c].saturating_sub(super::visible_width(cell)))
                ),
                (false, false) => pad(cell, widths[c]),
                (false, true) => cell.clone(),
            };
            line.push_str(&padded);
            if !last {
                line.push_str("  ");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// [root, deepest user frame with its line, what the task waits on].
pub(super) fn where_it_stands(root: &FutureNode, style: &Style) -> [String; 3] {
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
    let waits_on = match (&leaf.error, &leaf.summary) {
        (Some(error), _) => format!("error: {error}"),
        (None, Some(summary)) => summary.clone(),
        (None, None) if leaf.running => format!("{} (running)", frame_name(leaf)),
        (None, None) => frame_name(leaf),
    };
    [style.function(&frame_name(root)), user_frame, waits_on]
}

/// The one future a node awaits, unless it has several (a `select!`, a set) or none.
fn single_child(node: &FutureNode) -> Option<&FutureNode> {
    match node.children.as_slice() {
        [only] if only.branch.is_none() => Some(only),
        _ => None,
    }
}

/// A coroutine's function, else its type with generic arguments elided.
fn frame_name(node: &FutureNode) -> String {
    match (&node.function, node.kind.is_coroutine()) {
        (Some(function), true) => function.to_string(),
        _ => elide_generics(&node.type_name),
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
    fn elides_generic_arguments() {
        assert_eq!(
            elide_generics("tokio::sync::oneshot::Receiver<alloc::string::String>"),
            "tokio::sync::oneshot::Receiver<…>"
        );
        assert_eq!(elide_generics("a::B<c::D<e>>::f<g>"), "a::B<…>::f<…>");
        assert_eq!(elide_generics("<a::B as c::D>::e"), "<…>::e");
    }
}
