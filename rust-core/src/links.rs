//! Facts that join tasks, found once every task is decoded: what one task waits for that
//! another task's future holds. Today: oneshot channels whose sender a decoder found in
//! another task (a tower `Buffer` worker holding a queued request, a hyper client
//! connection holding a request's response callback), named by their shared state.

use rustc_hash::FxHashMap;

use crate::model::{Detail, FutureNode, Report};

/// The oneshot channel whose sender a node's future holds, if a decoder found one.
fn sender_held(node: &FutureNode) -> Option<u64> {
    match node.detail()? {
        Detail::HttpClientConnection(connection) => connection.holds_sender_of,
        Detail::TowerBufferWorker(worker) => worker.holds_sender_of,
        _ => None,
    }
}

/// Adds to each waiting node the task that holds what it waits for.
pub fn link_tasks(report: &mut Report) {
    let mut holders: FxHashMap<u64, u64> = FxHashMap::default();
    for task in &report.tasks {
        visit(&task.root, &mut |node| {
            if let Some(channel) = sender_held(node) {
                holders.insert(channel, task.id);
            }
        });
    }
    if holders.is_empty() {
        return;
    }
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
        visit_mut(root, &mut |node| link_node(node, &holders));
    }
}

/// Names, in a node waiting on a oneshot, the task holding its sender.
fn link_node(node: &mut FutureNode, holders: &FxHashMap<u64, u64>) {
    let holder_of =
        |channel: Option<u64>| channel.and_then(|channel| holders.get(&channel).copied());
    let note = match node.detail_mut() {
        Some(Detail::TowerBufferResponse(request)) => {
            let Some(holder) = holder_of(request.channel) else {
                return;
            };
            request.worker_task = Some(holder);
            node.summary =
                Some(format!("request held by the tower Buffer worker, task {holder}, until its service is ready"));
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
        node.summary = Some("recv on oneshot".to_string());
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

fn visit_mut(node: &mut FutureNode, f: &mut impl FnMut(&mut FutureNode)) {
    f(node);
    for child in &mut node.children {
        visit_mut(child, f);
    }
}
