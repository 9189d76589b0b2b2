//! What linking and the wait analysis read of a task the report leaves out (`--name`,
//! `--state`, `async task N` over a million tasks): a record (`AnalysedTask`) of the nodes
//! they read, the await paths down to them, and a bare node in place of anything else, so
//! that a task left out keeps about 150 bytes rather than its tree's 460 (chains of async
//! fns calling one another stand as the innermost's await line), and every link, holder,
//! edge, deadlock and futurelock comes out as from the whole tree.

use thin_vec::ThinVec;

use crate::model::{AnalysedNode, AnalysedTask, FutureNode, Held, NodeKind, TaskReport};

use super::node::Node;

/// The record of `task` the analysis reads; `None` when it reads nothing of it (a task
/// waiting on a timer or a socket). A task running, or not read whole, stays as a bare
/// root at least: the analysis claims nothing it might hide (`Stranded`).
pub fn for_analysis(task: &TaskReport) -> Option<AnalysedTask> {
    let may_hide_holdings = task.may_hide_holdings();
    let root = Some(recorded(&task.root))
        .filter(|root| !is_bare_leaf(root))
        .or_else(|| may_hide_holdings.then(|| bare(&task.root)))?;
    Some(AnalysedTask {
        id: task.id,
        runtime: task.runtime,
        state: task.state,
        may_hide_holdings,
        root,
    })
}

/// `node` as the analysis reads it, with nothing else: no fact, holdings nor children.
fn bare(node: &FutureNode) -> AnalysedNode {
    AnalysedNode {
        kind: node.kind,
        running: node.running(),
        finished_branch: Node::finished_branch(node),
        unread: node.error().is_some(),
        await_line: node.location.clone().filter(|_| node.kind.is_coroutine()),
        fact: None,
        held: None,
        children: ThinVec::new(),
    }
}

fn recorded(node: &FutureNode) -> AnalysedNode {
    let mut kept = bare(node);
    kept.fact = Node::fact(node).map(Box::new);
    if !node.holds().is_empty() {
        kept.held = Some(Box::new(Held {
            at: node.location.clone(),
            holds: node.holds().to_vec(),
        }));
    }
    let children: ThinVec<AnalysedNode> = node.children.iter().map(recorded).collect();
    // Children the analysis reads nothing of are each free to go on, as no children are;
    // where one is read, its bare siblings still count (a select! branch that may finish).
    if children.iter().any(|child| !is_bare_leaf(child)) {
        kept.children = children;
    }
    if !passes_through(&kept) {
        return kept;
    }
    let (line, finished_branch) = (kept.await_line.take(), kept.finished_branch);
    let mut child = kept.children.pop().unwrap_or(kept);
    // In the node's place: suspended at the line of the coroutine above, unless at its
    // own, and a branch where the node was one.
    child.await_line = child.await_line.take().or(line);
    child.finished_branch = finished_branch;
    child
}

/// Whether the analysis reads of `node` only its one child, which can stand in its place
/// with `node`'s await line: `node` holds, waits on and links nothing, was read, goes on
/// only when the child does (not running, not a `JoinHandle`, whose walk stops there),
/// and the child is no finished branch (which the walk passes by).
fn passes_through(node: &AnalysedNode) -> bool {
    let [child] = node.children.as_slice() else {
        return false;
    };
    node.fact.is_none()
        && node.held.is_none()
        && !node.unread
        && !node.running
        && node.kind != NodeKind::JoinHandle
        && !child.finished_branch
}

fn is_bare_leaf(node: &AnalysedNode) -> bool {
    node.children.is_empty() && node.fact.is_none() && node.held.is_none() && !node.unread
}
