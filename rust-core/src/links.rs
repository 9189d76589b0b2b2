//! Facts that join tasks, found once every task is decoded: what one task waits for that
//! another task's future holds (oneshot channels whose sender a decoder found in another
//! task: a tower `Buffer` worker holding a queued request, a hyper client connection
//! holding a request's response callback, named by their shared state), and the
//! blocking-pool thread running the blocking task a `JoinHandle` waits for
//! (`spawn_blocking`, `tokio::fs`).

use rustc_hash::FxHashMap;

use crate::format::task_list;
use crate::model::{AnalysedNode, AnalysedTask, Detail, Fact, FutureNode, Report};

/// The oneshot channel whose sender a node's future holds, if a decoder found one.
fn sender_held(node: &FutureNode) -> Option<u64> {
    node.detail().and_then(Fact::of)?.sender_held()
}

/// Names in each `JoinHandle` of a blocking task running now the thread that runs it.
pub fn link_blocking_threads(report: &mut Report) {
    let running: FxHashMap<u64, (u64, Option<String>)> = report
        .threads
        .iter()
        .filter_map(|thread| {
            thread
                .blocking_task
                .map(|task| (task, (thread.tid, thread.blocking_function.clone())))
        })
        .collect();
    if running.is_empty() {
        return;
    }
    for_each_root(report, &mut |node| {
        let joins = |detail: &Detail| matches!(detail, Detail::JoinHandle(_));
        let Some(Detail::JoinHandle(target)) = node.detail_mut_if(joins) else {
            return;
        };
        let Some((tid, function)) = running.get(&target.task_id) else {
            return;
        };
        target.blocking_thread = Some(*tid);
        let what = function
            .as_deref()
            .map(|function| format!(": {function}"))
            .unwrap_or_default();
        node.summary = Some(
            format!(
                "JoinHandle -> blocking task {} (running on thread {tid}{what})",
                target.task_id
            )
            .into(),
        );
    });
}

/// Names in each LocalSet polled as a future the tasks the report lists under it, and
/// those it leaves out (`left_out`, and `dropped`: (runtime, id)).
pub fn link_local_sets(report: &mut Report, left_out: &[AnalysedTask], dropped: &[(u64, u64)]) {
    let mut tasks_of: FxHashMap<u64, Vec<u64>> = report
        .runtimes
        .iter()
        .filter(|runtime| runtime.flavor == crate::model::LOCAL_SET_FLAVOR)
        .map(|runtime| (runtime.address, Vec::new()))
        .collect();
    if tasks_of.is_empty() {
        return;
    }
    let listed = report.tasks.iter().map(|task| (task.runtime, task.id));
    let recorded = left_out.iter().map(|task| (task.runtime, task.id));
    for (runtime, id) in listed.chain(recorded).chain(dropped.iter().copied()) {
        if let Some(tasks) = tasks_of.get_mut(&runtime) {
            tasks.push(id);
        }
    }
    if !left_out.is_empty() || !dropped.is_empty() {
        tasks_of
            .values_mut()
            .for_each(|tasks| tasks.sort_unstable());
    }
    for_each_root(report, &mut |node| {
        let runs = |detail: &Detail| matches!(detail, Detail::LocalSet(_));
        let Some(Detail::LocalSet(local_set)) = node.detail_mut_if(runs) else {
            return;
        };
        let Some(tasks) = tasks_of.get(&local_set.address) else {
            return;
        };
        local_set.tasks = Some(tasks.clone());
        let listed = match tasks.as_slice() {
            [] => "no tasks".to_string(),
            tasks => task_list(tasks),
        };
        node.summary = Some(format!("LocalSet {:#x} running {listed}", local_set.address).into());
    });
}

/// Calls `f` on every node of every task's and thread's tree.
fn for_each_root(report: &mut Report, f: &mut impl FnMut(&mut FutureNode)) {
    let thread_futures = report.threads.iter_mut().flat_map(|thread| {
        thread
            .future
            .iter_mut()
            .chain(thread.block_on_future.iter_mut())
    });
    for root in report
        .tasks
        .iter_mut()
        .map(|task| &mut task.root)
        .chain(thread_futures)
    {
        visit_mut(root, f);
    }
}

/// Adds to each waiting node the task that holds what it waits for, among the report's
/// tasks and those it leaves out (`left_out`).
pub fn link_tasks(report: &mut Report, left_out: &[AnalysedTask]) {
    let mut holders: FxHashMap<u64, u64> = FxHashMap::default();
    for task in &report.tasks {
        visit(&task.root, &mut |node| {
            if let Some(channel) = sender_held(node) {
                holders.insert(channel, task.id);
            }
        });
    }
    for task in left_out {
        visit_record(&task.root, &mut |node| {
            if let Some(channel) = node.fact.as_ref().and_then(|fact| fact.sender_held()) {
                holders.insert(channel, task.id);
            }
        });
    }
    if holders.is_empty() {
        return;
    }
    for_each_root(report, &mut |node| link_node(node, &holders));
}

/// Names, in a node waiting on a oneshot, the task holding its sender.
fn link_node(node: &mut FutureNode, holders: &FxHashMap<u64, u64>) {
    let holder_of =
        |channel: Option<u64>| channel.and_then(|channel| holders.get(&channel).copied());
    let linked = |detail: &Detail| {
        matches!(
            detail,
            Detail::TowerBufferResponse(_) | Detail::OneshotRecv(_)
        )
    };
    let note = match node.detail_mut_if(linked) {
        Some(Detail::TowerBufferResponse(request)) => {
            let Some(holder) = holder_of(request.channel) else {
                return;
            };
            request.worker_task = Some(holder);
            node.summary =
                Some(format!("request held by the tower Buffer worker, task {holder}, until its service is ready").into());
            return;
        }
        Some(Detail::OneshotRecv(wait)) => {
            let Some(holder) = holder_of(wait.address) else {
                return;
            };
            wait.sender_task = Some(holder);
            format!("sender held by task {holder}")
        }
        _ => return,
    };
    if node.summary.is_none() {
        node.summary = Some("recv on oneshot".into());
    }
    node.add_note(&note);
}

/// Calls `f` on `node` and every node below it.
pub(crate) fn visit(node: &FutureNode, f: &mut impl FnMut(&FutureNode)) {
    f(node);
    for child in &node.children {
        visit(child, f);
    }
}

fn visit_record(node: &AnalysedNode, f: &mut impl FnMut(&AnalysedNode)) {
    f(node);
    for child in &node.children {
        visit_record(child, f);
    }
}

pub(crate) fn visit_mut(node: &mut FutureNode, f: &mut impl FnMut(&mut FutureNode)) {
    f(node);
    for child in &mut node.children {
        visit_mut(child, f);
    }
}
