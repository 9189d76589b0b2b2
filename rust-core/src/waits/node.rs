//! A node as the wait analysis reads it: a decoded future's, into which it writes the
//! holders it finds, or a left-out task's record (`AnalysedNode`, made by `trim`), which it
//! only reads. One walk serves both, so that a task reads alike shown or left out.

use std::sync::Arc;

use crate::model::{AnalysedNode, BranchStatus, Fact, FutureNode, Holding, Location, NodeKind};

use super::listing::note_holders;
use super::noted::{LastNoted, NotedHolders};

pub trait Node: Sized {
    /// Whether the report shows the node: the walk writes into it what it finds.
    const SHOWN: bool;
    fn kind(&self) -> NodeKind;
    fn running(&self) -> bool;
    /// A branch the walk passes by: it finished.
    fn finished_branch(&self) -> bool;
    /// It could not be read: what it holds is not known.
    fn unread(&self) -> bool;
    /// What the analysis reads of its detail.
    fn fact(&self) -> Option<Fact>;
    fn holds(&self) -> &[Holding];
    /// Where its holdings are kept.
    fn held_at(&self) -> Option<&Arc<Location>>;
    fn children(&self) -> &[Self];
    /// The await line it gives itself and the nodes below (a coroutine's), beside its
    /// children to walk: borrowed apart, so that the line is never copied down the walk.
    fn line_and_children(&mut self) -> (Option<&Arc<Location>>, &mut [Self]);
    /// Writes what was found of the holders of what it waits for (where it is shown).
    fn note_holders(&mut self, noted: &mut LastNoted, holders: NotedHolders);

    fn await_line(&mut self) -> Option<&Arc<Location>> {
        self.line_and_children().0
    }
}

impl Node for FutureNode {
    const SHOWN: bool = true;

    fn kind(&self) -> NodeKind {
        self.kind
    }

    fn running(&self) -> bool {
        FutureNode::running(self)
    }

    fn finished_branch(&self) -> bool {
        self.branch()
            .is_some_and(|branch| branch.status != BranchStatus::Pending)
    }

    fn unread(&self) -> bool {
        self.error().is_some()
    }

    fn fact(&self) -> Option<Fact> {
        self.detail().and_then(Fact::of)
    }

    fn holds(&self) -> &[Holding] {
        FutureNode::holds(self)
    }

    fn held_at(&self) -> Option<&Arc<Location>> {
        self.location.as_ref()
    }

    fn children(&self) -> &[Self] {
        &self.children
    }

    fn line_and_children(&mut self) -> (Option<&Arc<Location>>, &mut [Self]) {
        let line = self.location.as_ref().filter(|_| self.kind.is_coroutine());
        (line, &mut self.children)
    }

    fn note_holders(&mut self, noted: &mut LastNoted, holders: NotedHolders) {
        noted.note(self, holders, note_holders);
    }
}

impl Node for AnalysedNode {
    const SHOWN: bool = false;

    fn kind(&self) -> NodeKind {
        self.kind
    }

    fn running(&self) -> bool {
        self.running
    }

    fn finished_branch(&self) -> bool {
        self.finished_branch
    }

    fn unread(&self) -> bool {
        self.unread
    }

    fn fact(&self) -> Option<Fact> {
        self.fact.as_deref().copied()
    }

    fn holds(&self) -> &[Holding] {
        self.held.as_ref().map_or(&[], |held| &held.holds)
    }

    fn held_at(&self) -> Option<&Arc<Location>> {
        self.held.as_ref().and_then(|held| held.at.as_ref())
    }

    fn children(&self) -> &[Self] {
        &self.children
    }

    fn line_and_children(&mut self) -> (Option<&Arc<Location>>, &mut [Self]) {
        (self.await_line.as_ref(), &mut self.children)
    }

    fn note_holders(&mut self, _: &mut LastNoted, _: NotedHolders) {}
}

/// Calls `f` on `node` and every node below it.
pub fn each<N: Node>(node: &N, f: &mut impl FnMut(&N)) {
    f(node);
    for child in node.children() {
        each(child, f);
    }
}
