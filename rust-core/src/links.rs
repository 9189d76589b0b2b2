//! Facts that join tasks, found once every task is decoded: what one task waits for that
//! another task's future holds. Today: oneshot channels whose sender a decoder found in
//! another task (a tower `Buffer` worker holding a queued request, a hyper client
//! connection holding a request's response callback), named by their shared state.

use rustc_hash::FxHashMap;
use serde_json::Value as Json;

use crate::model::{FutureNode, NodeKind, Report};

/// The `detail` key of a node holding the sending end of a oneshot: its shared state.
pub const HOLDS_SENDER_OF: &str = "holds_sender_of";

/// Adds to each waiting node the task that holds what it waits for.
pub fn link_tasks(report: &mut Report) {
    let mut holders: FxHashMap<String, u64> = FxHashMap::default();
    for task in &report.tasks {
        visit(&task.root, &mut |node| {
            if let Some(channel) = detail_str(node, HOLDS_SENDER_OF) {
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
        visit_mut(root, &mut |node| {
            let (key, channel) = match node.kind {
                NodeKind::TowerBufferResponse => ("worker_task", detail_str(node, "channel")),
                NodeKind::OneshotRecv => ("sender_task", detail_str(node, "address")),
                _ => return,
            };
            let Some(holder) = channel.and_then(|channel| holders.get(&channel).copied()) else {
                return;
            };
            if let Some(Json::Object(mut detail)) = node
                .detail
                .as_deref()
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
            {
                detail.insert(key.to_string(), Json::from(holder));
                node.detail = serde_json::value::to_raw_value(&detail).ok();
            }
            node.summary = Some(match node.kind {
                NodeKind::TowerBufferResponse => {
                    format!("request held by the tower Buffer worker, task {holder}, until its service is ready")
                }
                _ => with_note(
                    node.summary.as_deref().unwrap_or("recv on oneshot"),
                    &format!("sender held by task {holder}"),
                ),
            });
        });
    }
}

/// `recv on oneshot 0x… (nothing sent)` + note -> `recv on oneshot 0x… (nothing sent; note)`.
fn with_note(summary: &str, note: &str) -> String {
    match summary.strip_suffix(')') {
        Some(open) => format!("{open}; {note})"),
        None => format!("{summary} ({note})"),
    }
}

/// A string in the node's detail. Details are kept encoded; most do not name `key` at all.
fn detail_str(node: &FutureNode, key: &str) -> Option<String> {
    let raw = node.detail.as_deref()?.get();
    if !raw.contains(key) {
        return None;
    }
    let detail: FxHashMap<String, Json> = serde_json::from_str(raw).ok()?;
    detail.get(key)?.as_str().map(str::to_string)
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
