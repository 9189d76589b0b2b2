//! Who waits for whom, once every task is decoded: the holders of each lock, permit,
//! channel and Notify (from the `holds` of suspended coroutines), written into the nodes
//! that wait for them; the wait-for graph's edges; the deadlocks among tasks (`deadlocks`);
//! and futurelocks, idle futures keeping what others wait for.

mod deadlocks;

use rustc_hash::FxHashMap;

use crate::links::visit;
use crate::model::{
    BranchStatus, Detail, FutureNode, Futurelock, HolderNote, Holding, Location, NodeKind, Party,
    Report, Resource, ResourceKind, TaskState, WaitEdge,
};
pub use deadlocks::Condition;

/// One holder of a resource: who, where, and what it keeps.
#[derive(Debug, Clone)]
struct Holder {
    party: Party,
    /// The await line of the coroutine keeping it.
    location: Option<Location>,
    holding: Holding,
}

/// Holders by resource key (a lock's semaphore, a channel's shared state, a Notify).
type Holders = FxHashMap<u64, Vec<Holder>>;

/// Analyses `report` in place: annotates waiting nodes with their holders, and fills
/// `deadlocks`, `futurelocks` and, with `keep_edges`, `waits`.
pub fn analyse(report: &mut Report, keep_edges: bool) {
    let holders = collect_holders(report);
    let mut labels: FxHashMap<u64, Resource> = FxHashMap::default();
    let mut conditions: Vec<(u64, Condition)> = Vec::new();
    let mut edges: Vec<WaitEdge> = Vec::new();
    let waiting_tasks: Vec<(Party, bool)> = report
        .tasks
        .iter()
        .map(|task| (Party::Task(task.id), task.state == TaskState::Idle))
        .collect();
    for ((party, idle), task) in waiting_tasks.into_iter().zip(report.tasks.iter_mut()) {
        let mut walk = Walk {
            party,
            holders: &holders,
            labels: &mut labels,
            edges: &mut edges,
        };
        let condition = walk.visit(&mut task.root, None);
        if idle {
            if let Party::Task(id) = party {
                conditions.push((id, condition));
            }
        }
    }
    for thread in &mut report.threads {
        let party = Party::Thread(thread.tid);
        if let Some(root) = thread.own_block_on_future_mut() {
            Walk {
                party,
                holders: &holders,
                labels: &mut labels,
                edges: &mut edges,
            }
            .visit(root, None);
        }
    }
    report.deadlocks = deadlocks::find(&conditions);
    report.futurelocks = futurelocks(&holders, &labels, &edges);
    if keep_edges {
        edges.sort_by(|a, b| (&a.resource, a.from, a.to).cmp(&(&b.resource, b.from, b.to)));
        report.waits = Some(edges);
    }
}

/// Every holding in the tasks' trees and the threads' block_on futures, by resource key.
fn collect_holders(report: &Report) -> Holders {
    let mut holders = Holders::default();
    let mut add = |party: Party, root: &FutureNode| {
        visit(root, &mut |node| {
            for holding in &node.holds {
                let holder = Holder {
                    party,
                    location: node.location.clone(),
                    holding: holding.clone(),
                };
                holders
                    .entry(holding.resource.address)
                    .or_default()
                    .push(holder);
            }
        })
    };
    for task in &report.tasks {
        add(Party::Task(task.id), &task.root);
    }
    for thread in &report.threads {
        // A thread's current task is among the tasks; its block_on future is its own.
        if let Some(root) = thread.own_block_on_future() {
            add(Party::Thread(thread.tid), root);
        }
    }
    holders
}

/// How a waiting node relates to its resource's holders.
enum Relation {
    /// Waits until every holder lets go (a Mutex, a RwLock).
    AllOf,
    /// Any holder may serve it (a Semaphore's permits, a channel's senders).
    AnyOf,
    /// Holders may serve it, or anyone else may: edges are shown, never a deadlock.
    Possibly,
}

/// What a waiting leaf waits for: its resource, the key its holders are found by, how it
/// relates to them, and whether it waits at all (a channel with a value queued does not).
struct Waiting {
    resource: Resource,
    key: u64,
    relation: Relation,
    waits: bool,
    /// Every holder must be found for a wait on them to be certain (a channel's senders):
    /// the count the resource keeps.
    expected_holders: Option<u64>,
    /// The word the summary uses for the holders' side.
    held_by: &'static str,
}

impl Waiting {
    /// A lock's waiter: its holders keep guards on the lock's semaphore.
    fn lock(
        kind: ResourceKind,
        relation: Relation,
        expected: Option<u64>,
        address: u64,
        semaphore: u64,
    ) -> Waiting {
        Waiting {
            resource: Resource { kind, address },
            key: semaphore,
            relation,
            waits: true,
            expected_holders: expected,
            held_by: "held by",
        }
    }

    /// A receiver's wait: its holders keep senders to the channel's shared state.
    fn channel(
        kind: ResourceKind,
        relation: Relation,
        address: u64,
        waits: bool,
        expected: Option<u64>,
    ) -> Waiting {
        Waiting {
            resource: Resource { kind, address },
            key: address,
            relation,
            waits,
            expected_holders: expected,
            held_by: "sender held by",
        }
    }
}

fn waiting(node: &FutureNode) -> Option<Waiting> {
    use Relation::{AllOf, AnyOf, Possibly};
    Some(match node.detail()? {
        // One holder at a time.
        Detail::MutexLock(wait) => Waiting::lock(
            ResourceKind::Mutex,
            AllOf,
            Some(1),
            wait.address,
            wait.semaphore,
        ),
        Detail::RwlockRead(wait) | Detail::RwlockWrite(wait) => Waiting::lock(
            ResourceKind::Rwlock,
            AllOf,
            None,
            wait.address,
            wait.semaphore,
        ),
        Detail::SemaphoreAcquire(wait) => Waiting::lock(
            ResourceKind::Semaphore,
            AnyOf,
            None,
            wait.address,
            wait.semaphore,
        ),
        Detail::MpscRecv(wait) => {
            let waits = wait.queued == 0 && !wait.closed;
            Waiting::channel(
                ResourceKind::Mpsc,
                AnyOf,
                wait.address,
                waits,
                Some(wait.senders),
            )
        }
        Detail::OneshotRecv(wait) => {
            let waits = wait.value_sent != Some(true) && !wait.closed;
            Waiting::channel(ResourceKind::Oneshot, AnyOf, wait.address?, waits, Some(1))
        }
        Detail::BroadcastRecv(wait) => {
            let waits = wait.queued == 0 && !wait.closed;
            Waiting::channel(
                ResourceKind::Broadcast,
                AnyOf,
                wait.address,
                waits,
                Some(wait.senders),
            )
        }
        Detail::WatchChanged(wait) => {
            let waits = wait.version_seen == wait.version_current && !wait.closed;
            Waiting::channel(ResourceKind::Watch, Possibly, wait.address, waits, None)
        }
        Detail::Notified(wait) => Waiting {
            resource: Resource {
                kind: ResourceKind::Notify,
                address: wait.address,
            },
            key: wait.address,
            relation: Possibly,
            waits: !wait.permit_stored,
            expected_holders: None,
            held_by: "possible notifiers:",
        },
        _ => return None,
    })
}

struct Walk<'w> {
    party: Party,
    holders: &'w Holders,
    /// Resource key -> the resource as its waiters name it.
    labels: &'w mut FxHashMap<u64, Resource>,
    edges: &'w mut Vec<WaitEdge>,
}

impl Walk<'_> {
    /// What the party is blocked on below `node` (the await path: pending branches only),
    /// adding the edges it finds and each waiting node's holders.
    fn visit(&mut self, node: &mut FutureNode, at: Option<&Location>) -> Condition {
        if node.running {
            return Condition::Free;
        }
        // The await line of the innermost coroutine: a field apart from the children, so
        // it is borrowed down the walk and copied only into the edges made.
        let at = if node.kind.is_coroutine() {
            node.location.as_ref().or(at)
        } else {
            at
        };
        if node.kind == NodeKind::JoinHandle {
            let at = at.cloned();
            return self.join_handle(node, at);
        }
        if let Some(waiting) = waiting(node) {
            let at = at.cloned();
            return self.wait_on(node, waiting, at);
        }
        let all = matches!(
            node.kind,
            NodeKind::Join | NodeKind::JoinAll | NodeKind::FuturesOrdered
        );
        let pending = node.children.iter_mut().filter(|child| {
            child
                .branch
                .as_ref()
                .is_none_or(|branch| branch.status == BranchStatus::Pending)
        });
        let conditions: Vec<Condition> = pending.map(|child| self.visit(child, at)).collect();
        match conditions.len() {
            0 => Condition::Free,
            1 => conditions.into_iter().next().unwrap_or(Condition::Free),
            // A select! goes on when any branch does; unknown trees are taken the same way,
            // so a deadlock is never claimed on a guess.
            _ if all => Condition::All(conditions),
            _ => Condition::Any(conditions),
        }
    }

    fn join_handle(&mut self, node: &FutureNode, at: Option<Location>) -> Condition {
        let Some(Detail::JoinHandle(target)) = node.detail() else {
            return Condition::Free;
        };
        let edge = WaitEdge {
            from: self.party,
            to: Party::Task(target.task_id),
            resource: Resource {
                kind: ResourceKind::Task,
                address: target.task_address,
            },
            location: at,
            held_at: None,
            possible: false,
            idle_future: false,
        };
        self.edges.push(edge.clone());
        match target.task_state {
            TaskState::Complete | TaskState::Cancelled => Condition::Free,
            _ => Condition::Wait(Party::Task(target.task_id), Box::new(edge)),
        }
    }

    fn wait_on(
        &mut self,
        node: &mut FutureNode,
        waiting: Waiting,
        at: Option<Location>,
    ) -> Condition {
        self.labels.insert(waiting.key, waiting.resource);
        let mut holders: Vec<&Holder> = self
            .holders
            .get(&waiting.key)
            .map(|holders| holders.iter().collect())
            .unwrap_or_default();
        if matches!(waiting.relation, Relation::Possibly) {
            // The waiter keeps its own handle to wait with.
            holders.retain(|holder| holder.party != self.party);
        }
        // One entry per party, the surest first: a local over a captured variable, whose
        // bytes rustc keeps after the body moved it away.
        holders.sort_by_key(|holder| (holder.party, holder.holding.captured));
        holders.dedup_by_key(|holder| holder.party);
        if let Some(expected) = waiting.expected_holders {
            let sure: Vec<&Holder> = holders
                .iter()
                .copied()
                .filter(|holder| !holder.holding.captured)
                .collect();
            if holders.len() as u64 > expected && !sure.is_empty() && sure.len() as u64 <= expected
            {
                holders = sure;
            }
        }
        if !holders.is_empty() {
            note_holders(node, &waiting, &holders);
        }
        let possible = matches!(waiting.relation, Relation::Possibly);
        let edges: Vec<WaitEdge> = holders
            .iter()
            .map(|holder| WaitEdge {
                from: self.party,
                to: holder.party,
                resource: waiting.resource,
                location: at.clone(),
                held_at: holder.location.clone(),
                possible,
                idle_future: holder.holding.idle_future,
            })
            .collect();
        self.edges.extend(edges.iter().cloned());
        let every_holder_known = waiting
            .expected_holders
            .is_none_or(|count| count == holders.len() as u64);
        let only_tasks = holders
            .iter()
            .all(|holder| matches!(holder.party, Party::Task(_)));
        if !waiting.waits || possible || edges.is_empty() || !every_holder_known || !only_tasks {
            return Condition::Free;
        }
        let waits = edges
            .into_iter()
            .map(|edge| Condition::Wait(edge.to, Box::new(edge)))
            .collect();
        match waiting.relation {
            Relation::AllOf => Condition::All(waits),
            _ => Condition::Any(waits),
        }
    }
}

/// Writes the holders into a waiting node: its facts' list of holders, senders or
/// notifiers, and a note in its summary (`…; held by task 4 at src/bank.rs:27)`).
fn note_holders(node: &mut FutureNode, waiting: &Waiting, holders: &[&Holder]) {
    let listed: Vec<HolderNote> = holders
        .iter()
        .map(|holder| HolderNote {
            party: holder.party,
            location: holder.location.clone(),
            local: holder.holding.local.clone(),
            idle_future: holder.holding.idle_future,
        })
        .collect();
    let slot = match node.detail_mut() {
        Some(
            Detail::MutexLock(wait)
            | Detail::RwlockRead(wait)
            | Detail::RwlockWrite(wait)
            | Detail::SemaphoreAcquire(wait),
        ) => &mut wait.holders,
        Some(Detail::MpscRecv(wait)) => &mut wait.senders_held_by,
        Some(Detail::OneshotRecv(wait)) => &mut wait.senders_held_by,
        Some(Detail::BroadcastRecv(wait)) => &mut wait.senders_held_by,
        Some(Detail::WatchChanged(wait)) => &mut wait.senders_held_by,
        Some(Detail::Notified(wait)) => &mut wait.notifiers,
        _ => return,
    };
    *slot = Some(listed);
    node.add_note(&format!("{} {}", waiting.held_by, party_list(holders)));
}

/// `task 4 at src/bank.rs:27` / `tasks 4, 7` / `thread 1201 at src/main.rs:9`; an idle
/// future's holding says so.
fn party_list(holders: &[&Holder]) -> String {
    let idle = |holder: &Holder| {
        if holder.holding.idle_future {
            " (an idle future)"
        } else {
            ""
        }
    };
    match holders {
        [holder] => {
            let at = holder
                .location
                .as_ref()
                .map(|at| format!(" at {}:{}", at.file, at.line))
                .unwrap_or_default();
            format!("{}{at}{}", holder.party, idle(holder))
        }
        holders => {
            let tasks: Vec<String> = holders
                .iter()
                .map(|holder| match holder.party {
                    Party::Task(id) => format!("{id}{}", idle(holder)),
                    Party::Thread(tid) => format!("thread {tid}"),
                })
                .collect();
            format!("tasks {}", tasks.join(", "))
        }
    }
}

/// Idle futures in tasks keeping what others wait for (or could): each with the tasks
/// waiting on that resource.
fn futurelocks(
    holders: &Holders,
    labels: &FxHashMap<u64, Resource>,
    edges: &[WaitEdge],
) -> Vec<Futurelock> {
    let mut found = Vec::new();
    for (key, holders) in holders {
        for holder in holders.iter().filter(|holder| holder.holding.idle_future) {
            let Party::Task(task) = holder.party else {
                continue;
            };
            let resource = labels.get(key).copied().unwrap_or(holder.holding.resource);
            let mut blocked: Vec<u64> = edges
                .iter()
                .filter(|edge| edge.to == holder.party && edge.resource == resource)
                .filter_map(|edge| match edge.from {
                    Party::Task(id) => Some(id),
                    Party::Thread(_) => None,
                })
                .collect();
            blocked.sort_unstable();
            blocked.dedup();
            found.push(Futurelock {
                task,
                resource,
                local: holder.holding.local.clone(),
                location: holder.location.clone(),
                blocked,
            });
        }
    }
    found.sort_by(|a, b| (a.task, &a.resource).cmp(&(b.task, &b.resource)));
    found
}
