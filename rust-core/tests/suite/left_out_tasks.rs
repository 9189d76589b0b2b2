//! A filter that each task's own tree decides (`async task N`, `--name`, `--state`,
//! `--waiting-on`, `--runtime`) leaves the other tasks out as they are decoded, keeping only
//! what linking and the wait analysis read of them (`waits::trim`). On every recorded stop,
//! each such command reports byte for byte what the filter makes of the whole report (every
//! tree linked and analysed whole, then selected and grouped): the same tasks, links,
//! holders, edges, groups, deadlocks and futurelocks; and the stop's snapshot is still of
//! every task, as from the whole report.

use crate::common;
use crate::fuzzing;

use std::collections::BTreeSet;

use fuzzing::{Harness, PatchedMemory, FULL};
use tokio_async_core::budget::Budget;
use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::groups::group_tasks;
use tokio_async_core::inspect::{
    analyse_stop, inspect, inspect_over_time, read_stop, Inspection, Request,
};
use tokio_async_core::memory::Memory;
use tokio_async_core::model::{FutureNode, Party, Report};
use tokio_async_core::output::{self, Format};
use tokio_async_core::render::{TextOptions, View};
use tokio_async_core::selection::{Selection, TaskFilter};

/// A filter for each task alone, each state, leaf kind, coroutine and runtime of `report`.
fn filters(report: &Report) -> Vec<TaskFilter> {
    let mut states = BTreeSet::new();
    let mut leaves = BTreeSet::new();
    let mut functions = BTreeSet::new();
    fn walk(
        node: &FutureNode,
        leaves: &mut BTreeSet<&'static str>,
        functions: &mut BTreeSet<String>,
    ) {
        if node.children.is_empty() {
            leaves.insert(node.kind.name());
        }
        if let Some(function) = node.function() {
            functions.insert(function.to_string());
        }
        node.children
            .iter()
            .for_each(|child| walk(child, leaves, functions));
    }
    for task in &report.tasks {
        states.insert(task.state.name());
        walk(&task.root, &mut leaves, &mut functions);
    }
    // Alone: every task of the wait-for graph, and every fifth of the others.
    let mut waiting: BTreeSet<u64> = BTreeSet::new();
    for edge in report.waits.iter().flatten() {
        waiting.extend(
            [&edge.from, &edge.to]
                .into_iter()
                .filter_map(|party| match party {
                    Party::Task(id) => Some(*id),
                    Party::Thread(_) => None,
                }),
        );
    }
    let by_id = report
        .tasks
        .iter()
        .enumerate()
        .filter(|(index, task)| waiting.contains(&task.id) || index % 5 == 0)
        .map(|(_, task)| TaskFilter {
            ids: Some(vec![task.id]),
            ..Default::default()
        });
    let by_state = states.into_iter().map(|state| TaskFilter {
        state: Some(state.to_string()),
        ..Default::default()
    });
    let by_leaf = leaves.into_iter().map(|kind| TaskFilter {
        waiting_on: Some(kind.to_string()),
        ..Default::default()
    });
    let by_name = functions.into_iter().map(|function| TaskFilter {
        name: Some(format!("^{}$", regex::escape(&function))),
        ..Default::default()
    });
    let by_runtime = report.runtimes.iter().map(|runtime| TaskFilter {
        runtime: Some(format!("{:#x}", runtime.address)),
        ..Default::default()
    });
    by_id
        .chain(by_state)
        .chain(by_leaf)
        .chain(by_name)
        .chain(by_runtime)
        .collect()
}

/// What the filter makes of the whole report: its tasks selected after every tree was
/// linked and analysed whole, then grouped.
fn selected_from_whole(mut whole: Report, filter: &TaskFilter) -> Result<Report, String> {
    let selection = Selection::new(filter).map_err(|error| error.message())?;
    selection
        .apply(&mut whole, None, None)
        .map_err(|error| error.message())?;
    whole.groups = Some(group_tasks(&whole.tasks));
    Ok(whole)
}

/// `request` read and analysed as `inspect_over_time` does, and how many tasks the walk
/// left out as it read them.
fn read_leaving_out(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    request: &Request,
) -> (usize, Result<Inspection, String>) {
    let budget = Budget::new(request.limits, None);
    let read = read_stop(debug, memory, load_bias, request, &budget).unwrap();
    let left_out = read.tasks_left_out();
    let got = analyse_stop(read, debug, request, &budget).map_err(|error| error.message());
    (left_out, got)
}

#[test]
fn a_filtered_report_is_the_one_made_from_every_whole_tree() {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    let json = |report: &Report| output::to_string(report, &Format::Json(View::Backtrace)).unwrap();
    let (mut compared, mut left_out) = (0, 0);
    for image in &harness.images {
        let debug = harness.debug_info(&image.program, &image.profile);
        let memory = PatchedMemory { image, writes: &[] };
        let request = |filter: TaskFilter, group: bool| -> Request {
            Request {
                filter,
                group,
                snapshot: true,
                ..image.request(FULL)
            }
        };
        let every_task = request(TaskFilter::default(), false);
        let budget = Budget::new(every_task.limits, None);
        let Ok(whole) = inspect_over_time(debug, &memory, image.load_bias, &every_task, &budget)
        else {
            continue;
        };
        let whole_snapshot = format!(
            "{:?}",
            whole
                .snapshot
                .as_ref()
                .map(|snapshot| snapshot.tasks().collect::<Vec<_>>())
        );
        for filter in filters(&whole.report) {
            let again = inspect(debug, &memory, image.load_bias, &every_task).unwrap();
            let expected = selected_from_whole(again, &filter).map(|report| json(&report));
            let request = request(filter.clone(), true);
            let (left, got) = read_leaving_out(debug, &memory, image.load_bias, &request);
            left_out += left;
            let snapshot = got.as_ref().ok().map(|got| {
                format!(
                    "{:?}",
                    got.snapshot
                        .as_ref()
                        .map(|snapshot| snapshot.tasks().collect::<Vec<_>>())
                )
            });
            let got = got.map(|inspection| json(&inspection.report));
            assert!(
                expected == got,
                "{}: {filter:?}: the report differs",
                image.name
            );
            // The stop's snapshot is of every task, marked before any was left out.
            if let Some(snapshot) = snapshot {
                assert!(
                    snapshot == whole_snapshot,
                    "{}: {filter:?}: the snapshot differs",
                    image.name
                );
            }
            compared += 1;
        }
    }
    assert!(compared > 200, "only {compared} filtered reports compared");
    assert!(
        left_out > 1000,
        "only {left_out} tasks were left out as they were read"
    );
}

/// As text, `--group` prints the groups, not the tasks: each group's tasks but the first
/// are left out as they are read, and the groups read as those of every whole tree.
#[test]
fn groups_printed_as_text_are_those_of_every_whole_tree() {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    let text = |report: &Report| -> String {
        [View::Backtrace, View::Tasks]
            .into_iter()
            .map(|view| {
                let options = TextOptions {
                    locals: true,
                    view,
                    style: Default::default(),
                };
                output::to_string(report, &Format::Text(options)).unwrap()
            })
            .collect()
    };
    let (mut compared, mut left_out) = (0, 0);
    for image in &harness.images {
        let debug = harness.debug_info(&image.program, &image.profile);
        let memory = PatchedMemory { image, writes: &[] };
        let every_task = Request {
            group: false,
            ..image.request(FULL)
        };
        let Ok(whole) = inspect(debug, &memory, image.load_bias, &every_task) else {
            continue;
        };
        let mut filters = filters(&whole);
        filters.retain(|filter| filter.ids.is_none());
        filters.push(TaskFilter::default());
        for filter in filters {
            let again = inspect(debug, &memory, image.load_bias, &every_task).unwrap();
            let expected = selected_from_whole(again, &filter).map(|report| text(&report));
            let request = Request {
                filter: filter.clone(),
                group: true,
                only_groups: true,
                ..image.request(FULL)
            };
            let (left, got) = read_leaving_out(debug, &memory, image.load_bias, &request);
            left_out += left;
            let got = got.map(|inspection| text(&inspection.report));
            assert!(
                expected == got,
                "{}: {filter:?}: the groups differ",
                image.name
            );
            compared += 1;
        }
    }
    assert!(compared > 100, "only {compared} grouped reports compared");
    assert!(
        left_out > 500,
        "only {left_out} tasks were left out as they were read"
    );
}
