//! Facts that join tasks, found once every task is decoded: what one task waits for that
//! another task's future holds. Today: a request queued in a tower `Buffer` and the worker
//! task that holds it (both name the oneshot its response comes back on).

use std::collections::HashMap;

use serde_json::Value as Json;

use crate::model::{FutureNode, NodeKind, Report};

/// Adds to each waiting node the task that holds what it waits for.
pub fn link_tasks(report: &mut Report) {
    let mut holders: HashMap<String, u64> = HashMap::new();
    for task in &report.tasks {
        visit(&task.root, &mut |node| {
            if node.kind == NodeKind::TowerBufferWorker {
                if let Some(channel) = detail_str(node, "holding") {
                    holders.insert(channel.to_string(), task.id);
                }
            }
        });
    }
    if holders.is_empty() {
        return;
    }
    let thread_futures = report.threads.iter_mut().flat_map(|thread| thread.future.iter_mut().chain(thread.block_on_future.iter_mut()));
    for root in report.tasks.iter_mut().map(|task| &mut task.root).chain(thread_futures) {
        visit_mut(root, &mut |node| {
            if node.kind != NodeKind::TowerBufferResponse {
                return;
            }
            let Some(&worker) = detail_str(node, "channel").and_then(|channel| holders.get(channel)) else { return };
            if let Some(Json::Object(detail)) = node.detail.as_mut() {
                detail.insert("worker_task".to_string(), Json::from(worker));
            }
            node.summary = Some(format!("request held by the tower Buffer worker, task {worker}, until its service is ready"));
        });
    }
}

fn detail_str<'n>(node: &'n FutureNode, key: &str) -> Option<&'n str> {
    node.detail.as_ref()?.get(key)?.as_str()
}

fn visit(node: &FutureNode, f: &mut impl FnMut(&FutureNode)) {
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
