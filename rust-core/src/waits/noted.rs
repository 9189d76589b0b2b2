//! Waiters alike are noted alike: a quarter of a million tasks waiting on one Mutex share
//! its facts and summary, and noting the same holder on each would copy both for every
//! one (70 MB at a million tasks). The last noting made from shared facts is kept; a node
//! that starts from those same facts and summary and is given the same holders takes its
//! result, shared.

use std::sync::Arc;

use crate::model::{Detail, FutureNode, HolderCertainty, HolderNote};

/// What a waiting node is told of its holders (`note_holders`).
#[derive(PartialEq)]
pub struct NotedHolders {
    pub listed: Vec<HolderNote>,
    pub certainty: Option<HolderCertainty>,
    /// The line added to its summary.
    pub note: String,
}

/// The last noting made from shared facts, and what it gave.
struct Noting {
    from_detail: Arc<Detail>,
    from_summary: Option<Arc<str>>,
    holders: NotedHolders,
    detail: Option<Arc<Detail>>,
    summary: Option<Arc<str>>,
}

#[derive(Default)]
pub struct LastNoted(Option<Noting>);

impl LastNoted {
    /// Notes `holders` on `node` with `note`, or gives it the result of the last noting
    /// where that started from the same shared facts and summary.
    pub fn note(
        &mut self,
        node: &mut FutureNode,
        holders: NotedHolders,
        note: impl FnOnce(&mut FutureNode, &NotedHolders),
    ) {
        // Facts of one node alone are changed in place: no other node starts from them.
        let shared = node
            .shared_detail()
            .filter(|detail| Arc::strong_count(detail) > 1)
            .cloned();
        let Some(from_detail) = shared else {
            note(node, &holders);
            return;
        };
        if let Some(last) = self.0.as_ref().filter(|last| {
            Arc::ptr_eq(&last.from_detail, &from_detail)
                && last.from_summary == node.summary
                && last.holders == holders
        }) {
            if let Some(detail) = &last.detail {
                node.set_shared_detail(detail.clone());
            }
            node.summary = last.summary.clone();
            return;
        }
        let from_summary = node.summary.clone();
        note(node, &holders);
        self.0 = Some(Noting {
            from_detail,
            from_summary,
            holders,
            detail: node.shared_detail().cloned(),
            summary: node.summary.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NodeKind, Party, PermitWait};

    /// A Mutex at 0x100 that `waiters` wait for.
    fn waiting_for_mutex(waiters: u64) -> Detail {
        Detail::MutexLock(PermitWait {
            address: 0x100,
            closed: false,
            holders: None,
            holders_certainty: None,
            permits_assigned: Some(0),
            permits_available: 0,
            permits_needed: 1,
            permits_total: Some(1),
            semaphore: 0x100,
            waiters,
        })
    }

    fn waiting_on_one_mutex(facts: &Arc<Detail>, summary: &Arc<str>) -> FutureNode {
        let mut node = FutureNode::new(NodeKind::MutexLock, "tokio::sync::Mutex", 0x10);
        node.set_shared_detail(facts.clone());
        node.summary = Some(summary.clone());
        node
    }

    fn held_by(task: u64) -> NotedHolders {
        NotedHolders {
            listed: vec![HolderNote {
                party: Party::Task(task),
                location: None,
                local: "_guard".into(),
                idle_future: false,
                permits: Some(1),
            }],
            certainty: Some(HolderCertainty::Certain),
            note: format!("held by task {task}"),
        }
    }

    fn note(node: &mut FutureNode, holders: &NotedHolders) {
        if let Some(Detail::MutexLock(wait)) = node.detail_mut() {
            wait.holders = Some(holders.listed.clone());
            wait.holders_certainty = holders.certainty;
        }
        node.add_note(&holders.note);
    }

    /// Waiters sharing their facts and given the same holders share the result; one given
    /// others gets its own; each reads what noting it alone would have written.
    #[test]
    fn waiters_alike_share_what_they_are_told() {
        let facts = Arc::new(waiting_for_mutex(3));
        let summary: Arc<str> = "lock on Mutex 0x100 (3 waiters)".into();
        let mut nodes: Vec<FutureNode> = (0..3)
            .map(|_| waiting_on_one_mutex(&facts, &summary))
            .collect();
        let mut last = LastNoted::default();
        last.note(&mut nodes[0], held_by(4), note);
        last.note(&mut nodes[1], held_by(4), note);
        last.note(&mut nodes[2], held_by(5), note);
        let detail = |node: &FutureNode| node.shared_detail().unwrap().clone();
        assert!(Arc::ptr_eq(&detail(&nodes[0]), &detail(&nodes[1])));
        assert!(!Arc::ptr_eq(&detail(&nodes[1]), &detail(&nodes[2])));
        for (node, task) in nodes.iter().zip([4, 4, 5]) {
            let mut alone = waiting_on_one_mutex(&facts, &summary);
            note(&mut alone, &held_by(task));
            assert_eq!(node.detail(), alone.detail());
            assert_eq!(node.summary, alone.summary);
        }
        assert_eq!(
            nodes[1].summary.as_deref(),
            Some("lock on Mutex 0x100 (3 waiters; held by task 4)")
        );
    }

    /// Facts of one node alone are changed in place, and nothing is kept of them.
    #[test]
    fn a_node_of_its_own_facts_is_noted_in_place() {
        let mut node = FutureNode::new(NodeKind::MutexLock, "tokio::sync::Mutex", 0x10);
        node.set_detail(waiting_for_mutex(1));
        let before = Arc::as_ptr(node.shared_detail().unwrap());
        let mut last = LastNoted::default();
        last.note(&mut node, held_by(4), note);
        assert_eq!(Arc::as_ptr(node.shared_detail().unwrap()), before);
        assert!(last.0.is_none());
    }
}
