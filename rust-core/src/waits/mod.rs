//! Who waits for whom, once every task is decoded: the holders of each lock, permit,
//! channel and Notify (from the `holds` of suspended coroutines), written into the nodes
//! that wait for them; the wait-for graph's edges; the deadlocks among tasks (`deadlocks`);
//! and futurelocks, idle futures keeping what others wait for.

mod deadlocks;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value as Json};

use crate::links::visit;
use crate::model::{
    BranchStatus, FutureNode, Futurelock, Holding, Location, NodeKind, Party, Report, Resource,
    TaskState, WaitEdge,
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
type Holders = FxHashMap<String, Vec<Holder>>;

/// Analyses `report` in place: annotates waiting nodes with their holders, and fills
/// `deadlocks`, `futurelocks` and, with `keep_edges`, `waits`.
pub fn analyse(report: &mut Report, keep_edges: bool) {
    let holders = collect_holders(report);
    let mut labels: FxHashMap<String, Resource> = FxHashMap::default();
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
                    .entry(holding.resource.address.clone())
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

/// The keys of a waiting node's `detail` that `waiting` reads; the rest are skipped
/// without being built.
#[derive(serde::Deserialize)]
struct WaitDetail {
    semaphore: Option<Json>,
    address: Option<Json>,
    queued: Option<Json>,
    closed: Option<Json>,
    senders: Option<Json>,
    value_sent: Option<Json>,
    version_seen: Option<Json>,
    version_current: Option<Json>,
    permit_stored: Option<Json>,
}

/// The keys of a JoinHandle's `detail` that the wait-for graph reads.
#[derive(serde::Deserialize)]
struct JoinDetail {
    task_id: Option<Json>,
    task_state: Option<Json>,
    task_address: Option<Json>,
}

/// What a waiting leaf waits for: its resource, the key its holders are found by, how it
/// relates to them, and whether it waits at all (a channel with a value queued does not).
struct Waiting {
    resource: Resource,
    key: String,
    relation: Relation,
    waits: bool,
    /// Every holder must be found for a wait on them to be certain (a channel's senders):
    /// the count the resource keeps.
    expected_holders: Option<u64>,
    /// The word the summary uses for the holders' side.
    held_by: &'static str,
}

fn waiting(node: &FutureNode) -> Option<Waiting> {
    // Parsed on first use, which only the waiting kinds' arms make: a Sleep's or a
    // select!'s detail is never read.
    let parsed = std::cell::OnceCell::new();
    let detail = || {
        parsed
            .get_or_init(|| {
                node.detail
                    .as_deref()
                    .and_then(|raw| serde_json::from_str::<WaitDetail>(raw.get()).ok())
            })
            .as_ref()
    };
    type Key = fn(&WaitDetail) -> &Option<Json>;
    let text = |key: Key| Some(key(detail()?).as_ref()?.as_str()?.to_string());
    let number = |key: Key| key(detail()?).as_ref()?.as_u64();
    let flag = |key: Key| {
        detail()
            .and_then(|detail| key(detail).as_ref()?.as_bool())
            .unwrap_or(false)
    };
    let (kind, key, relation, waits, expected, held_by) = match node.kind {
        // One holder at a time.
        NodeKind::MutexLock => (
            "mutex",
            text(|d| &d.semaphore)?,
            Relation::AllOf,
            true,
            Some(1),
            "held by",
        ),
        NodeKind::RwlockRead | NodeKind::RwlockWrite => (
            "rwlock",
            text(|d| &d.semaphore)?,
            Relation::AllOf,
            true,
            None,
            "held by",
        ),
        NodeKind::SemaphoreAcquire => (
            "semaphore",
            text(|d| &d.semaphore)?,
            Relation::AnyOf,
            true,
            None,
            "held by",
        ),
        NodeKind::MpscRecv => (
            "mpsc",
            text(|d| &d.address)?,
            Relation::AnyOf,
            number(|d| &d.queued) == Some(0) && !flag(|d| &d.closed),
            number(|d| &d.senders),
            "sender held by",
        ),
        NodeKind::OneshotRecv => (
            "oneshot",
            text(|d| &d.address)?,
            Relation::AnyOf,
            !flag(|d| &d.value_sent) && !flag(|d| &d.closed),
            Some(1),
            "sender held by",
        ),
        NodeKind::BroadcastRecv => (
            "broadcast",
            text(|d| &d.address)?,
            Relation::AnyOf,
            number(|d| &d.queued) == Some(0) && !flag(|d| &d.closed),
            number(|d| &d.senders),
            "sender held by",
        ),
        NodeKind::WatchChanged => (
            "watch",
            text(|d| &d.address)?,
            Relation::Possibly,
            number(|d| &d.version_seen) == number(|d| &d.version_current) && !flag(|d| &d.closed),
            None,
            "sender held by",
        ),
        NodeKind::Notified => (
            "notify",
            text(|d| &d.address)?,
            Relation::Possibly,
            !flag(|d| &d.permit_stored),
            None,
            "possible notifiers:",
        ),
        _ => return None,
    };
    let address = text(|d| &d.address).unwrap_or_else(|| key.clone());
    Some(Waiting {
        resource: Resource { kind, address },
        key,
        relation,
        waits,
        expected_holders: expected,
        held_by,
    })
}

struct Walk<'w> {
    party: Party,
    holders: &'w Holders,
    /// Resource key -> the resource as its waiters name it.
    labels: &'w mut FxHashMap<String, Resource>,
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
        let detail: Option<JoinDetail> = node
            .detail
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        let Some(detail) = detail else {
            return Condition::Free;
        };
        let (Some(task), Some(state)) = (
            detail.task_id.as_ref().and_then(Json::as_u64),
            detail.task_state.as_ref().and_then(Json::as_str),
        ) else {
            return Condition::Free;
        };
        let address = detail
            .task_address
            .as_ref()
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string();
        let edge = WaitEdge {
            from: self.party,
            to: Party::Task(task),
            resource: Resource {
                kind: "task",
                address,
            },
            location: at,
            held_at: None,
            possible: false,
            idle_future: false,
        };
        self.edges.push(edge.clone());
        match state {
            "complete" | "cancelled" => Condition::Free,
            _ => Condition::Wait(Party::Task(task), Box::new(edge)),
        }
    }

    fn wait_on(
        &mut self,
        node: &mut FutureNode,
        waiting: Waiting,
        at: Option<Location>,
    ) -> Condition {
        self.labels
            .insert(waiting.key.clone(), waiting.resource.clone());
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
                resource: waiting.resource.clone(),
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

/// Writes the holders into a waiting node: `detail.holders` and a note in its summary
/// (`…; held by task 4 at src/bank.rs:27)`).
fn note_holders(node: &mut FutureNode, waiting: &Waiting, holders: &[&Holder]) {
    let listed: Vec<Json> = holders
        .iter()
        .map(|holder| {
            let mut entry = Map::new();
            match holder.party {
                Party::Task(id) => entry.insert("task".into(), Json::from(id)),
                Party::Thread(tid) => entry.insert("thread".into(), Json::from(tid)),
            };
            entry.insert(
                "location".into(),
                serde_json::to_value(&holder.location).unwrap_or(Json::Null),
            );
            entry.insert("local".into(), Json::from(holder.holding.local.clone()));
            if holder.holding.idle_future {
                entry.insert("idle_future".into(), Json::from(true));
            }
            Json::Object(entry)
        })
        .collect();
    if let Some(Json::Object(mut detail)) = node
        .detail
        .as_deref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
    {
        let key = if waiting.held_by.starts_with("possible") {
            "notifiers"
        } else if waiting.held_by.starts_with("sender") {
            "senders_held_by"
        } else {
            "holders"
        };
        detail.insert(key.into(), Json::Array(listed));
        node.detail = serde_json::value::to_raw_value(&detail).ok();
    }
    let note = format!("{} {}", waiting.held_by, party_list(holders));
    node.summary = node
        .summary
        .take()
        .map(|summary| match summary.strip_suffix(')') {
            Some(open) => format!("{open}; {note})"),
            None => format!("{summary} ({note})"),
        });
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
            format!("{}{at}{}", party_name(holder.party), idle(holder))
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

pub fn party_name(party: Party) -> String {
    match party {
        Party::Task(id) => format!("task {id}"),
        Party::Thread(tid) => format!("thread {tid}"),
    }
}

/// Idle futures in tasks keeping what others wait for (or could): each with the tasks
/// waiting on that resource.
fn futurelocks(
    holders: &Holders,
    labels: &FxHashMap<String, Resource>,
    edges: &[WaitEdge],
) -> Vec<Futurelock> {
    let mut found = Vec::new();
    for (key, holders) in holders {
        for holder in holders.iter().filter(|holder| holder.holding.idle_future) {
            let Party::Task(task) = holder.party else {
                continue;
            };
            let resource = labels
                .get(key)
                .cloned()
                .unwrap_or_else(|| holder.holding.resource.clone());
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
