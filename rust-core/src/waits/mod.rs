//! Who waits for whom, once every task is decoded: the holders of each lock, permit,
//! channel and Notify (from the `holds` of suspended coroutines; for locks, as many as the
//! lock's permits say, `locks`), written into the nodes that wait for them; the wait-for
//! graph's edges; the deadlocks among tasks (`deadlocks`); and futurelocks, idle futures
//! keeping what others wait for.

mod deadlocks;
mod futurelocks;
mod listing;
mod locks;
mod node;
mod noted;
pub mod trim;

use std::ops::Deref;
use std::sync::Arc;

use itertools::Itertools;
use rustc_hash::FxHashMap;

use crate::error::ErrorKind;
use crate::links::visit_mut;
use crate::model::{
    AnalysedTask, Fact, FutureNode, HolderCertainty, Holding, Location, NodeKind, Party, Report,
    Resource, ResourceKind, TaskReport, TaskState, WaitEdge,
};
pub use deadlocks::Condition;
use listing::{holder_notes, holders_note, Listing};
use locks::{LockHolders, Share};
use node::Node;
use noted::{LastNoted, NotedHolders};

/// One holder of a resource: who, where, and what it keeps.
#[derive(Debug, Clone)]
struct Holder {
    party: Party,
    /// The await line of the coroutine keeping it.
    location: Option<Arc<Location>>,
    holding: Holding,
}

/// Holders by resource key (a lock's semaphore, a channel's shared state, a Notify).
type Holders = FxHashMap<u64, Vec<Holder>>;

/// Analyses `report` in place: annotates waiting nodes with their holders, and fills
/// `deadlocks`, `futurelocks` and, with `keep_edges`, `waits`. `left_out`: the records of
/// the tasks the report leaves out (by id), which count as its tasks do.
pub fn analyse(report: &mut Report, left_out: &mut [AnalysedTask], keep_edges: bool) {
    analyse_split(report, left_out, keep_edges, crate::threads::MANY_TASKS)
}

/// `analyse`, walking tasks on two threads from `two_threads_from` tasks on.
fn analyse_split(
    report: &mut Report,
    left_out: &mut [AnalysedTask],
    keep_edges: bool,
    two_threads_from: usize,
) {
    let Gathered {
        holders,
        lock_waits,
        guarded,
        unread_nodes,
    } = gather(report, left_out);
    let locks = locks::lock_holders(&lock_waits, &holders);
    mark_released(report, &guarded, &locks);
    let every_holder_read = !unread_nodes && every_task_read(report, left_out);
    let context = WalkContext {
        holders: &holders,
        locks: &locks,
        every_holder_read,
    };
    let Visited {
        mut labels,
        mut edges,
        conditions,
        mut noted,
    } = visit_tasks(&context, &mut report.tasks, left_out, two_threads_from);
    for thread in &mut report.threads {
        let party = Party::Thread(thread.tid);
        if let Some(root) = thread.own_block_on_future_mut() {
            context
                .walk(party, &mut labels, &mut edges, &mut noted)
                .visit(root, None);
        }
    }
    let stuck = deadlocks::find(&conditions, &edges);
    report.deadlocks = stuck.deadlocks;
    report.stranded = stuck.stranded;
    report.futurelocks = futurelocks::futurelocks(&holders, &locks, &labels, &edges);
    if keep_edges {
        edges.sort_by(|a, b| (&a.resource, a.from, a.to).cmp(&(&b.resource, b.from, b.to)));
        report.waits = Some(edges);
    }
}

/// What the walk shares: the holders found and what each lock's permits say.
struct WalkContext<'w> {
    holders: &'w Holders,
    locks: &'w FxHashMap<u64, LockHolders<'w>>,
    every_holder_read: bool,
}

impl<'w> WalkContext<'w> {
    fn walk<'v>(
        &'v self,
        party: Party,
        labels: &'v mut FxHashMap<u64, Resource>,
        edges: &'v mut Vec<WaitEdge>,
        noted: &'v mut LastNoted,
    ) -> Walk<'v>
    where
        'w: 'v,
    {
        Walk {
            party,
            holders: self.holders,
            locks: self.locks,
            labels,
            edges,
            noted,
            every_holder_read: self.every_holder_read,
        }
    }
}

/// What walking tasks found: each resource's label, the edges, and each idle task's
/// condition (over those edges, by index).
#[derive(Default)]
struct Visited {
    labels: FxHashMap<u64, Resource>,
    edges: Vec<WaitEdge>,
    conditions: Vec<(u64, Condition)>,
    /// Kept from task to task on the walk's thread.
    noted: LastNoted,
}

/// Walks every task's tree (the report's and the left-out records, by id); a long list in
/// two halves at once (a million tasks' walk takes half a second on one thread), joined as
/// one walk in order would have made them.
fn visit_tasks(
    context: &WalkContext<'_>,
    tasks: &mut [TaskReport],
    left_out: &mut [AnalysedTask],
    two_threads_from: usize,
) -> Visited {
    if tasks.len() + left_out.len() < two_threads_from.max(2) {
        return visit_some(context, (tasks, left_out));
    }
    // Halved at the middle task of the longer list: the shorter one splits at its id.
    let split = match tasks.len() >= left_out.len() {
        true => tasks[tasks.len() / 2].id,
        false => left_out[left_out.len() / 2].id,
    };
    let (first_tasks, second_tasks) =
        tasks.split_at_mut(tasks.partition_point(|task| task.id < split));
    let (first_left_out, second_left_out) =
        left_out.split_at_mut(left_out.partition_point(|task| task.id < split));
    let (visited, later) = crate::threads::in_two_halves(
        "tokio-async-waits",
        (first_tasks, first_left_out),
        (second_tasks, second_left_out),
        |tasks| visit_some(context, tasks),
    );
    visited.then(later)
}

fn visit_some(
    context: &WalkContext<'_>,
    (tasks, left_out): (&mut [TaskReport], &mut [AnalysedTask]),
) -> Visited {
    let mut visited = Visited::default();
    for task in in_id_order(tasks.iter_mut(), left_out.iter_mut()) {
        let (id, state) = (task.id(), task.state());
        let mut walk = context.walk(
            Party::Task(id),
            &mut visited.labels,
            &mut visited.edges,
            &mut visited.noted,
        );
        let condition = match task {
            Task::Shown(task) => walk.visit(&mut task.root, None),
            Task::LeftOut(task) => walk.visit(&mut task.root, None),
        };
        // A task free to go on is none of the deadlock search's business: it frees its
        // waiters as a task missing from the conditions does (most tasks wait on a timer).
        if state == TaskState::Idle && !matches!(condition, Condition::Free) {
            visited.conditions.push((id, condition));
        }
    }
    visited
}

/// A task the analysis reads: one the report shows, or a left-out one's record.
enum Task<S, L> {
    Shown(S),
    LeftOut(L),
}

impl<S: Deref<Target = TaskReport>, L: Deref<Target = AnalysedTask>> Task<S, L> {
    fn id(&self) -> u64 {
        match self {
            Task::Shown(task) => task.id,
            Task::LeftOut(task) => task.id,
        }
    }

    fn state(&self) -> TaskState {
        match self {
            Task::Shown(task) => task.state,
            Task::LeftOut(task) => task.state,
        }
    }
}

/// The report's tasks and the left-out ones' records as one list, by id.
fn in_id_order<S, L>(
    shown: impl Iterator<Item = S>,
    left_out: impl Iterator<Item = L>,
) -> impl Iterator<Item = Task<S, L>>
where
    S: Deref<Target = TaskReport>,
    L: Deref<Target = AnalysedTask>,
{
    shown
        .map(Task::Shown)
        .merge_by(left_out.map(Task::LeftOut), |shown, left_out| {
            shown.id() <= left_out.id()
        })
}

impl Visited {
    /// This walk followed by `later`: its edges after these (the indices in its conditions
    /// moved along), its labels over these.
    fn then(mut self, later: Visited) -> Visited {
        let offset = self.edges.len();
        self.edges.extend(later.edges);
        self.labels.extend(later.labels);
        self.conditions
            .extend(later.conditions.into_iter().map(|(id, mut condition)| {
                condition.move_edges(offset);
                (id, condition)
            }));
        self
    }
}

/// Whether every task was read where a guard may be (with no node unread: `Gathered`), so
/// that a guard nobody was found to keep is kept by no live party: the walk was not cut
/// short, and no task was running, mid-poll with guards it took since its last await, or
/// failed to read. Threads outside the runtime are not read: `Stranded` says so.
fn every_task_read(report: &Report, left_out: &[AnalysedTask]) -> bool {
    let cut_short = report
        .errors
        .iter()
        .any(|error| matches!(error.kind, ErrorKind::Budget | ErrorKind::Interrupted));
    !cut_short
        && !report.tasks.iter().any(TaskReport::may_hide_holdings)
        && !left_out.iter().any(|task| task.may_hide_holdings)
}

/// Marks the guards and permits that hold nothing, as their lock says: every guard of a
/// lock none of which a guard has taken, and permits that keep none. Only the trees that
/// keep one are walked again.
fn mark_released(report: &mut Report, guarded: &[Tree], locks: &FxHashMap<u64, LockHolders<'_>>) {
    let mut mark = |node: &mut FutureNode| {
        for holding in node
            .holds_mut()
            .iter_mut()
            .filter(|holding| locks::is_guard(holding.kind))
        {
            let free = locks
                .get(&holding.resource.address)
                .is_some_and(|lock| lock.free);
            holding.released = free || holding.permits == Some(0);
        }
    };
    for tree in guarded {
        let root = match *tree {
            Tree::Task(index) => report.tasks.get_mut(index).map(|task| &mut task.root),
            Tree::Thread(index) => report
                .threads
                .get_mut(index)
                .and_then(|thread| thread.own_block_on_future_mut()),
        };
        if let Some(root) = root {
            visit_mut(root, &mut mark);
        }
    }
}

/// What one pass over every tree (the tasks', then the threads' block_on futures) finds
/// for the analysis, so that 100,000 trees are walked once, not once per question.
struct Gathered {
    /// Every holding, by resource key.
    holders: Holders,
    /// What each lock waiter saw of its lock, in the order of the walk.
    lock_waits: Vec<locks::LockWait>,
    /// The trees that keep a guard or permit.
    guarded: Vec<Tree>,
    /// Some node could not be read: what it keeps is not known.
    unread_nodes: bool,
}

/// A tree of the report: a task's, or a thread's block_on future, by its index.
#[derive(Debug, Clone, Copy)]
enum Tree {
    Task(usize),
    Thread(usize),
}

fn gather(report: &Report, left_out: &[AnalysedTask]) -> Gathered {
    let mut gathered = Gathered {
        holders: Holders::default(),
        lock_waits: Vec::new(),
        guarded: Vec::new(),
        unread_nodes: false,
    };
    let mut shown = 0..;
    for task in in_id_order(report.tasks.iter(), left_out.iter()) {
        let party = Party::Task(task.id());
        match task {
            Task::Shown(task) => {
                let index = shown.next().unwrap_or_default();
                gathered.add(party, Some(Tree::Task(index)), &task.root);
            }
            // Nothing of a left-out task is marked: its holdings are not shown.
            Task::LeftOut(task) => gathered.add(party, None, &task.root),
        }
    }
    for (index, thread) in report.threads.iter().enumerate() {
        // A thread's current task is among the tasks; its block_on future is its own.
        if let Some(root) = thread.own_block_on_future() {
            gathered.add(Party::Thread(thread.tid), Some(Tree::Thread(index)), root);
        }
    }
    gathered
}

impl Gathered {
    /// What `party`'s tree (`tree`, to mark its guards) holds and waits for.
    fn add<N: Node>(&mut self, party: Party, tree: Option<Tree>, root: &N) {
        let mut keeps_guard = false;
        node::each(root, &mut |node| {
            self.unread_nodes |= node.unread();
            self.lock_waits
                .extend(node.fact().as_ref().and_then(locks::LockWait::of));
            for holding in node.holds() {
                keeps_guard |= locks::is_guard(holding.kind);
                let holder = Holder {
                    party,
                    location: node.held_at().cloned(),
                    holding: holding.clone(),
                };
                self.holders
                    .entry(holding.resource.address)
                    .or_default()
                    .push(holder);
            }
        });
        if let Some(tree) = tree.filter(|_| keeps_guard) {
            self.guarded.push(tree);
        }
    }
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
    /// A lock's: its holders are as many as its permits say (`locks`).
    lock: bool,
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
            lock: true,
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
            lock: false,
        }
    }
}

/// The resource a leaf waits on: a lock, semaphore, channel or Notify, or the task a
/// `JoinHandle` waits for.
pub fn resource_waited(node: &FutureNode) -> Option<Resource> {
    node.detail()
        .and_then(Fact::of)
        .as_ref()
        .and_then(resource_of)
}

fn resource_of(fact: &Fact) -> Option<Resource> {
    match *fact {
        Fact::Joins { task_address, .. } => Some(Resource {
            kind: ResourceKind::Task,
            address: task_address,
        }),
        _ => waiting(fact).map(|waiting| waiting.resource),
    }
}

fn waiting(fact: &Fact) -> Option<Waiting> {
    use Relation::{AllOf, AnyOf, Possibly};
    Some(match *fact {
        Fact::Lock {
            kind,
            address,
            semaphore,
            ..
        } => {
            let (relation, expected) = match kind {
                // One holder at a time.
                ResourceKind::Mutex => (AllOf, Some(1)),
                ResourceKind::Rwlock => (AllOf, None),
                _ => (AnyOf, None),
            };
            Waiting::lock(kind, relation, expected, address, semaphore)
        }
        Fact::Channel {
            kind,
            address,
            waits,
            senders,
        } => {
            let relation = match kind {
                ResourceKind::Watch => Possibly,
                _ => AnyOf,
            };
            Waiting::channel(kind, relation, address, waits, senders)
        }
        Fact::Notify { address, waits } => Waiting {
            resource: Resource {
                kind: ResourceKind::Notify,
                address,
            },
            key: address,
            relation: Possibly,
            waits,
            expected_holders: None,
            held_by: "possible notifiers:",
            lock: false,
        },
        Fact::Joins { .. } | Fact::HoldsSender(_) => return None,
    })
}

struct Walk<'w> {
    party: Party,
    holders: &'w Holders,
    locks: &'w FxHashMap<u64, LockHolders<'w>>,
    /// Resource key -> the resource as its waiters name it.
    labels: &'w mut FxHashMap<u64, Resource>,
    edges: &'w mut Vec<WaitEdge>,
    noted: &'w mut LastNoted,
    /// A lock none of whose guards is found is held by no live party (`Condition::Never`).
    every_holder_read: bool,
}

impl<'w> Walk<'w> {
    /// What the party is blocked on below `node` (the await path: pending branches only),
    /// adding the edges it finds and each waiting node's holders.
    fn visit<N: Node>(&mut self, node: &mut N, at: Option<&Arc<Location>>) -> Condition {
        if node.running() {
            return Condition::Free;
        }
        let kind = node.kind();
        let fact = node.fact();
        if kind == NodeKind::JoinHandle {
            let at = node.await_line().or(at).cloned();
            return self.join_handle(fact, at);
        }
        if let Some(waiting) = fact.as_ref().and_then(waiting) {
            let at = node.await_line().or(at).cloned();
            return self.wait_on(node, waiting, at);
        }
        let all = matches!(
            kind,
            NodeKind::Join | NodeKind::JoinAll | NodeKind::FuturesOrdered
        );
        // The await line of the innermost coroutine: borrowed down the walk, and copied
        // only into the edges made.
        let (line, children) = node.line_and_children();
        let at = line.or(at);
        let mut pending = children.iter_mut().filter(|child| !child.finished_branch());
        // Most nodes await one future: its condition is theirs, with no vector made.
        let Some(first) = pending.next() else {
            return Condition::Free;
        };
        let first = self.visit(first, at);
        let Some(second) = pending.next() else {
            return first;
        };
        let mut conditions = vec![first, self.visit(second, at)];
        conditions.extend(pending.map(|child| self.visit(child, at)));
        // A select! goes on when any branch does; unknown trees are taken the same way,
        // so a deadlock is never claimed on a guess.
        match all {
            true => Condition::all(conditions),
            false => Condition::any(conditions),
        }
    }

    fn join_handle(&mut self, fact: Option<Fact>, at: Option<Arc<Location>>) -> Condition {
        let Some(Fact::Joins {
            task_id,
            task_address,
            task_state,
        }) = fact
        else {
            return Condition::Free;
        };
        let edge = WaitEdge {
            from: self.party,
            to: Party::Task(task_id),
            resource: Resource {
                kind: ResourceKind::Task,
                address: task_address,
            },
            location: at,
            held_at: None,
            possible: false,
            idle_future: false,
            uncertain: false,
        };
        self.edges.push(edge);
        match task_state {
            TaskState::Complete | TaskState::Cancelled => Condition::Free,
            _ => Condition::Wait(Party::Task(task_id), self.edges.len() - 1),
        }
    }

    fn wait_on<N: Node>(
        &mut self,
        node: &mut N,
        waiting: Waiting,
        at: Option<Arc<Location>>,
    ) -> Condition {
        self.labels.insert(waiting.key, waiting.resource);
        let counted = self
            .locks
            .get(&waiting.key)
            .filter(|_| waiting.lock)
            .and_then(|lock| lock.counted.as_ref());
        let listing = match counted {
            Some(counted) => Listing::counted(counted, &waiting),
            None => self.found_holders(&waiting),
        };
        if N::SHOWN && !listing.entries.is_empty() {
            let holders = NotedHolders {
                listed: holder_notes(&listing),
                certainty: listing.certainty,
                note: holders_note(&waiting, &listing),
            };
            node.note_holders(self.noted, holders);
        }
        let nobody_holds = listing.entries.is_empty()
            && listing.certainty == Some(HolderCertainty::Incomplete)
            && self.every_holder_read;
        if nobody_holds {
            return Condition::Never(waiting.resource);
        }
        let possible = matches!(waiting.relation, Relation::Possibly);
        let first = self.edges.len();
        self.edges
            .extend(listing.entries.iter().map(|entry| WaitEdge {
                from: self.party,
                to: entry.holder.party,
                resource: waiting.resource,
                location: at.clone(),
                held_at: entry.holder.location.clone(),
                possible,
                idle_future: entry.holder.holding.idle_future,
                uncertain: entry.share == Share::MayHold,
            }));
        let made = &self.edges[first..];
        let sure = || made.iter().enumerate().filter(|(_, edge)| !edge.uncertain);
        let only_tasks = sure().all(|(_, edge)| matches!(edge.to, Party::Task(_)));
        // Any holder may serve it: one that may not hold it may be the one that does.
        let any_uncertain =
            matches!(waiting.relation, Relation::AnyOf) && made.iter().any(|edge| edge.uncertain);
        if !waiting.waits
            || possible
            || sure().next().is_none()
            || !listing.every_holder_known
            || !only_tasks
            || any_uncertain
        {
            return Condition::Free;
        }
        let waits = sure()
            .map(|(index, edge)| Condition::Wait(edge.to, first + index))
            .collect();
        match waiting.relation {
            Relation::AllOf => Condition::all(waits),
            _ => Condition::any(waits),
        }
    }

    /// The holders found for a resource whose holders are not counted (a channel, a Notify,
    /// a lock whose permits are not known): one entry per party, the surest first.
    fn found_holders(&self, waiting: &Waiting) -> Listing<'w> {
        let mut holders: Vec<&Holder> = self
            .holders
            .get(&waiting.key)
            .map(|holders| holders.iter().collect())
            .unwrap_or_default();
        if matches!(waiting.relation, Relation::Possibly) {
            // The waiter keeps its own handle to wait with.
            holders.retain(|holder| holder.party != self.party);
        }
        // A forgotten permit keeps none.
        holders.retain(|holder| holder.holding.permits != Some(0));
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
        let every_holder_known = waiting
            .expected_holders
            .is_none_or(|count| count == holders.len() as u64);
        Listing {
            entries: holders
                .into_iter()
                .map(|holder| locks::Entry {
                    holder,
                    permits: holder.holding.permits,
                    share: Share::Holds,
                })
                .collect(),
            certainty: waiting.lock.then_some(HolderCertainty::Unchecked),
            taken: None,
            every_holder_known,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        Branch, BranchStatus, Detail, HoldingKind, LockPermits, PermitWait, ReportError, Stranded,
        StrandedWhy,
    };

    const FILE: &str = "src/main.rs";

    fn at(line: u64) -> Location {
        Location::new(FILE.into(), line, FILE.into())
    }

    /// A guard or permit of the lock whose semaphore is `semaphore`, as the search finds it.
    fn guard(
        kind: ResourceKind,
        semaphore: u64,
        local: &str,
        permits: u64,
        lock: LockPermits,
    ) -> Holding {
        Holding {
            kind: if kind == ResourceKind::Semaphore {
                HoldingKind::Permit
            } else {
                HoldingKind::LockGuard
            },
            resource: Resource {
                kind,
                address: semaphore,
            },
            local: local.into(),
            idle_future: false,
            captured: false,
            permits: Some(permits),
            released: false,
            lock: Some(lock),
        }
    }

    fn mutex_guard(semaphore: u64, available: u64) -> Holding {
        let lock = LockPermits {
            available,
            total: Some(1),
        };
        guard(ResourceKind::Mutex, semaphore, "_held", 1, lock)
    }

    /// A waiter's leaf: its kind, the lock (whose semaphore is at the same address), and the
    /// permits as its decoder reads them.
    struct Wait {
        kind: fn(PermitWait) -> Detail,
        lock: u64,
        available: u64,
        needed: u64,
        total: Option<u64>,
        assigned: u64,
    }

    fn mutex_wait(lock: u64, available: u64) -> Wait {
        Wait {
            kind: Detail::MutexLock,
            lock,
            available,
            needed: 1,
            total: Some(1),
            assigned: 0,
        }
    }

    fn leaf(wait: Wait) -> FutureNode {
        let mut node = FutureNode::new(NodeKind::MutexLock, "tokio::sync::lock", 0x8000);
        node.set_detail((wait.kind)(PermitWait {
            address: wait.lock,
            closed: false,
            holders: None,
            holders_certainty: None,
            permits_assigned: Some(wait.assigned),
            permits_available: wait.available,
            permits_needed: wait.needed,
            permits_total: wait.total,
            semaphore: wait.lock,
            waiters: 1,
        }));
        node.summary = Some(format!("waiting for {:#x} (1 waiter)", wait.lock).into());
        node
    }

    /// An idle task at `line` of an async fn keeping `holds`, waiting in `waits` (else
    /// sleeping).
    fn task(id: u64, line: u64, holds: Vec<Holding>, waits: Option<Wait>) -> TaskReport {
        let mut root = FutureNode::new(NodeKind::AsyncFn, "app::f", 0x9000 + id * 0x100);
        root.location = Some(Arc::new(at(line)));
        if !holds.is_empty() {
            root.set_holds(holds);
        }
        root.children.push(match waits {
            Some(wait) => leaf(wait),
            None => FutureNode::new(NodeKind::Sleep, "tokio::time::sleep::Sleep", 0x6000),
        });
        TaskReport {
            id,
            address: 0x7000 + id,
            state: TaskState::Idle,
            root,
            runtime: 0x100,
            spawned_at: None,
            error: None,
        }
    }

    fn analysed(tasks: Vec<TaskReport>) -> Report {
        let mut report = Report {
            tasks,
            ..Report::empty(None)
        };
        analyse(&mut report, &mut [], true);
        report
    }

    fn task_of(report: &Report, id: u64) -> &TaskReport {
        report.tasks.iter().find(|task| task.id == id).unwrap()
    }

    /// What a waiter's leaf lists: its holders (party, line, permits), how certain they
    /// are, and its summary.
    type Listed = (
        Vec<(Party, u64, Option<u64>)>,
        Option<HolderCertainty>,
        String,
    );

    fn holders_of(report: &Report, id: u64) -> Listed {
        let leaf = &task_of(report, id).root.children[0];
        let Some(
            Detail::MutexLock(wait)
            | Detail::RwlockRead(wait)
            | Detail::RwlockWrite(wait)
            | Detail::SemaphoreAcquire(wait),
        ) = leaf.detail()
        else {
            panic!("no lock wait: {leaf:?}")
        };
        let holders = wait
            .holders
            .iter()
            .flatten()
            .map(|note| {
                (
                    note.party,
                    note.location.as_ref().map_or(0, |at| at.line),
                    note.permits,
                )
            })
            .collect();
        (
            holders,
            wait.holders_certainty,
            leaf.summary.as_deref().unwrap_or_default().to_string(),
        )
    }

    fn cycles(report: &Report) -> Vec<Vec<u64>> {
        report
            .deadlocks
            .iter()
            .map(|deadlock| deadlock.tasks.clone())
            .collect()
    }

    /// Tasks walked in two halves at once make the report one walk makes: deadlocks whose
    /// tasks are in both halves, the waiters' notes, the edges and their order.
    #[test]
    fn two_threads_walk_as_one() {
        const PAIRS: u64 = 20;
        let lock = |index: u64| 0x1000 * (index + 1);
        let tasks = || {
            let mut tasks: Vec<TaskReport> = (0..2 * PAIRS)
                .map(|index| {
                    let other = (index + PAIRS) % (2 * PAIRS);
                    let holds = vec![mutex_guard(lock(index), 0)];
                    task(
                        index + 1,
                        10 + index,
                        holds,
                        Some(mutex_wait(lock(other), 0)),
                    )
                })
                .collect();
            tasks.push(task(100, 5, Vec::new(), None));
            tasks
        };
        let analysed_from = |two_threads_from| {
            let mut report = Report {
                tasks: tasks(),
                ..Report::empty(None)
            };
            analyse_split(&mut report, &mut [], true, two_threads_from);
            report
        };
        let one = analysed_from(usize::MAX);
        let two = analysed_from(2);
        assert_eq!(cycles(&one).len(), PAIRS as usize);
        assert_eq!(cycles(&one)[0], vec![1, 1 + PAIRS]);
        assert_eq!(
            serde_json::to_string(&one).unwrap(),
            serde_json::to_string(&two).unwrap()
        );
    }

    #[test]
    fn a_locked_mutex_no_task_holds_strands_its_waiter_only_where_every_task_was_read() {
        const LOCK: u64 = 0x1000;
        let lock = Resource {
            kind: ResourceKind::Mutex,
            address: LOCK,
        };
        let stranded = || {
            vec![
                task(1, 10, Vec::new(), Some(mutex_wait(LOCK, 0))),
                task(2, 20, Vec::new(), None),
            ]
        };
        let report = analysed(stranded());
        assert_eq!(
            report.stranded,
            vec![Stranded {
                task: 1,
                why: StrandedWhy::NoHolder { resource: lock }
            }]
        );
        assert!(report.deadlocks.is_empty());
        // A task mid-poll may hold a guard it took since its last await; a tree not read
        // whole, or a walk cut short, may hide one.
        let mut running = stranded();
        running[1].state = TaskState::Running;
        let mut unread = stranded();
        unread[1].root.children[0].set_error("cannot read");
        let mut cut_short = Report {
            tasks: stranded(),
            ..Report::empty(None)
        };
        cut_short
            .errors
            .push(ReportError::new(ErrorKind::Budget, "stopped at 2 tasks"));
        analyse(&mut cut_short, &mut [], true);
        for (what, report) in [
            ("running", analysed(running)),
            ("unread", analysed(unread)),
            ("cut short", cut_short),
        ] {
            assert!(report.stranded.is_empty(), "{what}: {:?}", report.stranded);
        }
        // A guard found, or a lock free: nothing stranded.
        let held = analysed(vec![
            task(1, 10, Vec::new(), Some(mutex_wait(LOCK, 0))),
            task(2, 20, vec![mutex_guard(LOCK, 1)], None),
        ]);
        assert!(held.stranded.is_empty(), "{:?}", held.stranded);
        let free = analysed(vec![task(1, 10, Vec::new(), Some(mutex_wait(LOCK, 1)))]);
        assert!(free.stranded.is_empty(), "{:?}", free.stranded);
    }

    #[test]
    fn an_unlocked_mutex_has_no_holder_and_its_moved_out_guards_are_released() {
        const LOCK: u64 = 0x1000;
        let mut idle = mutex_guard(LOCK, 1);
        idle.idle_future = true;
        idle.local = "queued.__awaitee".into();
        let report = analysed(vec![
            task(1, 10, vec![mutex_guard(LOCK, 1)], None),
            // Were it held, an idle future keeping it would be a futurelock.
            task(2, 20, vec![idle], None),
            // A waiter on it the moment it was let go.
            task(3, 30, Vec::new(), Some(mutex_wait(LOCK, 1))),
        ]);
        for id in [1, 2] {
            assert!(task_of(&report, id).root.holds()[0].released, "task {id}");
        }
        assert_eq!(
            holders_of(&report, 3),
            (vec![], None, format!("waiting for {LOCK:#x} (1 waiter)"))
        );
        assert!(report.futurelocks.is_empty(), "{:?}", report.futurelocks);
        assert_eq!(report.waits.as_deref().map(<[WaitEdge]>::len), Some(0));
        let json = serde_json::to_value(&task_of(&report, 1).root.holds()[0]).unwrap();
        assert_eq!(json["released"], true);
        assert_eq!(json["permits"], 1);
    }

    #[test]
    fn a_locked_mutex_with_one_guard_is_held_by_it_for_certain() {
        const FIRST: u64 = 0x1000;
        const SECOND: u64 = 0x2000;
        // Each holds one and waits for the other's: a deadlock, claimed.
        let report = analysed(vec![
            task(
                1,
                10,
                vec![mutex_guard(FIRST, 0)],
                Some(mutex_wait(SECOND, 0)),
            ),
            task(
                2,
                20,
                vec![mutex_guard(SECOND, 0)],
                Some(mutex_wait(FIRST, 0)),
            ),
        ]);
        let (holders, certainty, summary) = holders_of(&report, 2);
        assert_eq!(holders, vec![(Party::Task(1), 10, Some(1))]);
        assert_eq!(certainty, Some(HolderCertainty::Certain));
        assert!(
            summary.ends_with("; held by task 1 at src/main.rs:10)"),
            "{summary}"
        );
        assert!(!task_of(&report, 1).root.holds()[0].released);
        assert_eq!(cycles(&report), vec![vec![1, 2]]);
    }

    #[test]
    fn two_guards_of_a_locked_mutex_are_one_of_them_and_make_no_deadlock() {
        const CONTENDED: u64 = 0x1000;
        const OTHER: u64 = 0x2000;
        let report = analysed(vec![
            // Moved its guard out and waits for the Mutex task 3 holds.
            task(
                1,
                10,
                vec![mutex_guard(CONTENDED, 0)],
                Some(mutex_wait(OTHER, 0)),
            ),
            // Holds it and sleeps.
            task(2, 20, vec![mutex_guard(CONTENDED, 0)], None),
            task(
                3,
                30,
                vec![mutex_guard(OTHER, 0)],
                Some(mutex_wait(CONTENDED, 0)),
            ),
        ]);
        let (holders, certainty, summary) = holders_of(&report, 3);
        assert_eq!(
            holders,
            vec![(Party::Task(1), 10, Some(1)), (Party::Task(2), 20, Some(1))]
        );
        assert_eq!(certainty, Some(HolderCertainty::Ambiguous));
        assert!(
            summary.ends_with("; held by one of tasks 1, 2)"),
            "{summary}"
        );
        // Were task 1 taken for its holder, 1 → 3 → 1 would be a cycle.
        assert_eq!(cycles(&report), Vec::<Vec<u64>>::new());
        let edges: Vec<(Party, Party, bool)> = report
            .waits
            .iter()
            .flatten()
            .map(|edge| (edge.from, edge.to, edge.uncertain))
            .collect();
        assert_eq!(
            edges,
            vec![
                (Party::Task(3), Party::Task(1), true),
                (Party::Task(3), Party::Task(2), true),
                (Party::Task(1), Party::Task(3), false),
            ]
        );
        assert!(report.tasks.iter().all(|task| task
            .root
            .holds()
            .iter()
            .all(|holding| !holding.released)));
        // An idle future among the candidates is no futurelock for sure.
        let mut idle = mutex_guard(CONTENDED, 0);
        idle.idle_future = true;
        let report = analysed(vec![
            task(1, 10, vec![idle], None),
            task(2, 20, vec![mutex_guard(CONTENDED, 0)], None),
            task(3, 30, Vec::new(), Some(mutex_wait(CONTENDED, 0))),
        ]);
        assert!(report.futurelocks.is_empty(), "{:?}", report.futurelocks);
    }

    #[test]
    fn rwlock_readers_and_writers_hold_as_many_as_its_permits_say() {
        const LOCK: u64 = 0x1000;
        const MOST: u64 = 10;
        let read_guard = |local: &str| {
            let lock = LockPermits {
                available: 0,
                total: None,
            };
            guard(ResourceKind::Rwlock, LOCK, local, 1, lock)
        };
        // A writer waits; tokio gave it the 8 permits no reader holds.
        let writer = || Wait {
            kind: Detail::RwlockWrite,
            lock: LOCK,
            available: 0,
            needed: MOST,
            total: Some(MOST),
            assigned: MOST - 2,
        };
        let report = analysed(vec![
            task(1, 10, vec![read_guard("_reading")], None),
            task(2, 20, vec![read_guard("_reading")], None),
            task(3, 30, Vec::new(), Some(writer())),
        ]);
        let (holders, certainty, summary) = holders_of(&report, 3);
        assert_eq!(
            holders,
            vec![(Party::Task(1), 10, Some(1)), (Party::Task(2), 20, Some(1))]
        );
        assert_eq!(certainty, Some(HolderCertainty::Certain));
        assert!(summary.ends_with("; held by tasks 1, 2)"), "{summary}");
        // A third reader's guard, moved out: two of the three hold it.
        let report = analysed(vec![
            task(1, 10, vec![read_guard("_reading")], None),
            task(2, 20, vec![read_guard("_reading")], None),
            task(3, 30, Vec::new(), Some(writer())),
            task(4, 40, vec![read_guard("_was_reading")], None),
        ]);
        let (holders, certainty, summary) = holders_of(&report, 3);
        assert_eq!(holders.len(), 3);
        assert_eq!(certainty, Some(HolderCertainty::Ambiguous));
        assert!(
            summary.ends_with("; held by 2 of tasks 1, 2, 4)"),
            "{summary}"
        );
        // Write-locked: the writer holds every permit, a reader's old guard none of them.
        let write_guard = guard(
            ResourceKind::Rwlock,
            LOCK,
            "_writing",
            MOST,
            LockPermits {
                available: 0,
                total: Some(MOST),
            },
        );
        let reader = Wait {
            kind: Detail::RwlockRead,
            needed: 1,
            assigned: 0,
            ..writer()
        };
        let report = analysed(vec![
            task(5, 50, vec![write_guard], None),
            task(6, 60, vec![read_guard("_was_reading")], None),
            task(7, 70, Vec::new(), Some(reader)),
        ]);
        let (holders, certainty, summary) = holders_of(&report, 7);
        assert_eq!(holders, vec![(Party::Task(5), 50, Some(MOST))]);
        assert_eq!(certainty, Some(HolderCertainty::Certain));
        assert!(
            summary.ends_with("; held by task 5 at src/main.rs:50)"),
            "{summary}"
        );
    }

    #[test]
    fn semaphore_permits_are_listed_with_their_counts_and_a_forgotten_one_holds_none() {
        const SEMAPHORE: u64 = 0x1000;
        let permit = |count| {
            let lock = LockPermits {
                available: 0,
                total: None,
            };
            guard(ResourceKind::Semaphore, SEMAPHORE, "_permit", count, lock)
        };
        let acquire_many = Wait {
            kind: Detail::SemaphoreAcquire,
            lock: SEMAPHORE,
            available: 0,
            needed: 2,
            total: None,
            assigned: 1,
        };
        let report = analysed(vec![
            task(1, 10, vec![permit(2)], None),
            task(2, 20, vec![permit(1)], None),
            task(3, 30, vec![permit(0)], None),
            task(4, 40, Vec::new(), Some(acquire_many)),
        ]);
        let (holders, certainty, summary) = holders_of(&report, 4);
        assert_eq!(
            holders,
            vec![(Party::Task(1), 10, Some(2)), (Party::Task(2), 20, Some(1))]
        );
        // tokio keeps no Semaphore's total: what is taken is not known.
        assert_eq!(certainty, Some(HolderCertainty::Unchecked));
        assert!(summary.ends_with("; held by tasks 1, 2)"), "{summary}");
        let released: Vec<bool> = report
            .tasks
            .iter()
            .flat_map(|task| task.root.holds().iter().map(|holding| holding.released))
            .collect();
        assert_eq!(released, vec![false, false, true]);
    }

    /// `task`'s tree three async fns deep above its leaf, each at its own line.
    fn three_deep(mut task: TaskReport) -> TaskReport {
        for line in [5, 6] {
            let mut caller = FutureNode::new(NodeKind::AsyncFn, "app::caller", 0xa000 + line);
            caller.location = Some(Arc::new(at(line)));
            caller.children.push(task.root);
            task.root = caller;
        }
        task
    }

    /// A task that is a `select!` whose one branch left had waited on `wait` and is
    /// finished.
    fn finished_branch(id: u64, wait: Wait) -> TaskReport {
        let mut task = task(id, 40, Vec::new(), None);
        task.root = FutureNode::new(NodeKind::Select, "tokio::select", 0xb000);
        let mut done = leaf(wait);
        done.set_branch(Branch::new(0, BranchStatus::Disabled));
        task.root.children.push(done);
        task
    }

    /// Every task but `shown` recorded as the analysis reads it (`trim`), or dropped when it
    /// reads nothing: the analysis says of `shown` and of the whole what it says when every
    /// tree is whole, on one thread and on two.
    #[test]
    fn recorded_tasks_are_analysed_as_whole_ones() {
        const FIRST: u64 = 0x1000;
        const SECOND: u64 = 0x2000;
        const THIRD: u64 = 0x3000;
        let unread = |mut task: TaskReport| {
            task.root.children[0].set_error("cannot read");
            task
        };
        let tasks = || {
            vec![
                three_deep(task(
                    1,
                    10,
                    vec![mutex_guard(FIRST, 0)],
                    Some(mutex_wait(SECOND, 0)),
                )),
                three_deep(task(
                    2,
                    20,
                    vec![mutex_guard(SECOND, 0)],
                    Some(mutex_wait(FIRST, 0)),
                )),
                three_deep(task(3, 30, Vec::new(), Some(mutex_wait(FIRST, 0)))),
                // Waited for FIRST once: free to go on, no edge.
                finished_branch(4, mutex_wait(FIRST, 0)),
                task(5, 50, Vec::new(), None),
                // Waits on a lock no task holds, but task 7 was not read whole: no claim.
                task(6, 60, Vec::new(), Some(mutex_wait(THIRD, 0))),
                unread(task(7, 70, Vec::new(), None)),
                // A finished branch standing for a chain of async fns is still passed by.
                finished_chain(8, mutex_wait(FIRST, 0)),
                // A select! of a lock wait and a sleep: free to go on, with its edges.
                waits_or_sleeps(9, mutex_wait(SECOND, 0)),
            ]
        };
        let said = |report: &Report, shown: u64| {
            serde_json::to_string(&(
                task_of(report, shown),
                &report.deadlocks,
                &report.futurelocks,
                &report.stranded,
                &report.waits,
            ))
            .unwrap()
        };
        let whole = analysed(tasks());
        assert_eq!(cycles(&whole), vec![vec![1, 2]]);
        // Task 3 waits for the deadlocked task 1.
        let stranded: Vec<u64> = whole.stranded.iter().map(|task| task.task).collect();
        assert_eq!(stranded, vec![3]);
        let waits_of = |report: &Report, id: u64| {
            let waits = report.waits.iter().flatten();
            let from = waits.filter(|edge| edge.from == Party::Task(id));
            let lines = from.map(|edge| edge.location.as_ref().map(|at| at.line));
            lines.collect::<Vec<_>>()
        };
        assert_eq!(waits_of(&whole, 8), Vec::<Option<u64>>::new());
        assert_eq!(waits_of(&whole, 9), vec![Some(90)]);
        for shown in 1..=9 {
            for two_threads_from in [usize::MAX, 2] {
                let mut report = Report::empty(None);
                let mut left_out = Vec::new();
                let mut dropped = 0;
                for task in tasks() {
                    match (task.id == shown, trim::for_analysis(&task)) {
                        (true, _) => report.tasks.push(task),
                        (false, Some(record)) => left_out.push(record),
                        (false, None) => dropped += 1,
                    }
                }
                // The sleeping task; a finished branch's lock wait still tells the lock's state.
                assert_eq!(dropped, usize::from(shown != 5), "task {shown} shown");
                analyse_split(&mut report, &mut left_out, true, two_threads_from);
                assert_eq!(
                    said(&report, shown),
                    said(&whole, shown),
                    "task {shown} shown, two threads from {two_threads_from}"
                );
            }
        }
        // A chain of async fns stands as its innermost's leaf, at its await line.
        let waiter = three_deep(task(3, 30, Vec::new(), Some(mutex_wait(FIRST, 0))));
        let record = trim::for_analysis(&waiter).expect("a waiter is read");
        assert_eq!(record.root.await_line.as_ref().map(|at| at.line), Some(30));
        assert_eq!(record.root.kind, NodeKind::MutexLock);
        assert!(record.root.children.is_empty());
        // A holder keeps its own line, apart from the lines of those above.
        let holder = three_deep(task(1, 10, vec![mutex_guard(FIRST, 0)], None));
        let record = trim::for_analysis(&holder).expect("a holder is read");
        let held_at = record.root.held.as_ref().and_then(|held| held.at.as_ref());
        assert_eq!(held_at.map(|at| at.line), Some(10));
    }

    /// A `select!` whose one branch, finished, is a chain of two async fns that had waited
    /// on `wait`.
    fn finished_chain(id: u64, wait: Wait) -> TaskReport {
        let mut task = task(id, 40, Vec::new(), None);
        task.root = FutureNode::new(NodeKind::Select, "tokio::select", 0xb000);
        let mut inner = FutureNode::new(NodeKind::AsyncFn, "app::inner", 0xc000);
        inner.location = Some(Arc::new(at(80)));
        inner.children.push(leaf(wait));
        let mut outer = FutureNode::new(NodeKind::AsyncBlock, "app::outer", 0xc100);
        outer.set_branch(Branch::new(0, BranchStatus::Disabled));
        outer.children.push(inner);
        task.root.children.push(outer);
        task
    }

    /// A task at line 90 in a `select!` of `wait` and a sleep.
    fn waits_or_sleeps(id: u64, wait: Wait) -> TaskReport {
        let mut task = task(id, 90, Vec::new(), Some(wait));
        let waiting = task.root.children.pop().unwrap();
        let mut select = FutureNode::new(NodeKind::Select, "tokio::select", 0xd000);
        for (index, mut branch) in [
            waiting,
            FutureNode::new(NodeKind::Sleep, "tokio::time::sleep::Sleep", 0x6000),
        ]
        .into_iter()
        .enumerate()
        {
            branch.set_branch(Branch::new(index, BranchStatus::Pending));
            select.children.push(branch);
        }
        task.root.children.push(select);
        task
    }
}
