//! What linking and the wait analysis read of a task the report leaves out (`--name`,
//! `--state`, `async task N` over a million tasks): the nodes they read, the await paths
//! down to them, and a bare node in place of anything else, so that a task left out holds
//! a node or a few rather than its whole tree (chains of async fns calling one another
//! stand as the innermost), and every link, holder, edge, deadlock and futurelock comes
//! out as from the whole tree.

use std::sync::Arc;

use thin_vec::ThinVec;

use crate::links;
use crate::model::{FutureNode, NodeKind};

use super::{locks, resource_waited};

/// `root`'s tree as the analysis reads it; `None` when it reads nothing of it (a task
/// waiting on a timer or a socket).
pub fn for_analysis(root: &FutureNode) -> Option<FutureNode> {
    Some(trimmed(root)).filter(|root| !is_bare_leaf(root))
}

/// Whether the analysis reads `node` itself: what it waits on, a lock's permits, what it
/// holds, what linking reads, or that it could not be read (holders may hide there).
fn read(node: &FutureNode) -> bool {
    node.error().is_some()
        || !node.holds().is_empty()
        || resource_waited(node).is_some()
        || locks::LockWait::of(node).is_some()
        || links::reads(node)
}

fn trimmed(node: &FutureNode) -> FutureNode {
    let mut kept = node.bare();
    if let Some(branch) = node.branch() {
        kept.set_branch(branch.clone());
    }
    if !node.holds().is_empty() {
        kept.set_holds(node.holds().to_vec());
    }
    if let Some(detail) = node.shared_detail().filter(|_| read(node)) {
        kept.set_shared_detail(Arc::clone(detail));
    }
    if let Some(error) = node.error() {
        kept.set_error(error);
    }
    let children: ThinVec<FutureNode> = node.children.iter().map(trimmed).collect();
    // Children the analysis reads nothing of are each free to go on, as no children are;
    // where one is read, its bare siblings still count (a select! branch that may finish).
    if children.iter().any(|child| !is_bare_leaf(child)) {
        kept.children = children;
    }
    match passes_through(&kept) {
        true => kept.children.pop().unwrap_or(kept),
        false => kept,
    }
}

/// Whether the analysis reads of `node` only its one child, which can stand in its place:
/// `node` holds and waits on nothing, goes on only when the child does (not running, not a
/// `JoinHandle`, whose walk stops there), and the child is no branch (which the walk may
/// pass by) and needs no await line from above (a coroutine's own, else none above).
fn passes_through(node: &FutureNode) -> bool {
    let [child] = node.children.as_slice() else {
        return false;
    };
    let gives_await_line = node.kind.is_coroutine() && node.location.is_some();
    let has_own_line = child.kind.is_coroutine() && child.location.is_some();
    node.detail().is_none()
        && node.holds().is_empty()
        && node.error().is_none()
        && !node.running()
        && node.kind != NodeKind::JoinHandle
        && child.branch().is_none()
        && (has_own_line || !gives_await_line)
}

fn is_bare_leaf(node: &FutureNode) -> bool {
    node.children.is_empty()
        && node.detail().is_none()
        && node.holds().is_empty()
        && node.error().is_none()
}
