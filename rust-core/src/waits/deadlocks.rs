//! Deadlocks: tasks none of which can go on. Each idle task's wait is a condition over
//! other tasks (a select! goes on when any branch can; a lock when every holder lets go;
//! a channel when any sender can send). Tasks that can go on are found first, from those
//! that wait on nothing another task holds, outward; what remains is stuck, and the
//! cycles among the stuck tasks are the deadlocks reported. The other stuck tasks are
//! stranded: behind a deadlock, or on a lock no live party holds.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::model::{Deadlock, Party, Resource, Stranded, StrandedWhy, WaitEdge};

/// What an idle task waits for, in terms of other parties.
#[derive(Debug, Clone)]
pub enum Condition {
    /// Can go on without any task (a timer, I/O, anything not known to be held).
    Free,
    /// Waits for this party (holding a lock, sending, finishing), by the edge of this index
    /// in the analysis's edges.
    Wait(Party, usize),
    /// Waits on what no live task or thread holds (a lock none of whose guards is found,
    /// where every task was read and none runs).
    Never(Resource),
    All(Vec<Condition>),
    Any(Vec<Condition>),
}

impl Condition {
    /// Any of `parts`: free where one is (a `select!` with a timer's branch goes on by
    /// itself), so a million such tasks keep no list of their branches; one part is
    /// itself.
    pub fn any(mut parts: Vec<Condition>) -> Condition {
        if parts.iter().any(|part| matches!(part, Condition::Free)) {
            return Condition::Free;
        }
        match parts.len() {
            1 => parts.swap_remove(0),
            _ => Condition::Any(parts),
        }
    }

    /// All of `parts`, less those that are free.
    pub fn all(mut parts: Vec<Condition>) -> Condition {
        parts.retain(|part| !matches!(part, Condition::Free));
        match parts.len() {
            0 => Condition::Free,
            1 => parts.swap_remove(0),
            _ => Condition::All(parts),
        }
    }

    /// Whether the task can go on, given which tasks cannot (`stuck`).
    fn holds(&self, stuck: &impl Fn(u64) -> bool) -> bool {
        match self {
            Condition::Free => true,
            Condition::Wait(Party::Task(id), _) => !stuck(*id),
            Condition::Wait(Party::Thread(_), _) => true,
            Condition::Never(_) => false,
            Condition::All(parts) => parts.iter().all(|part| part.holds(stuck)),
            Condition::Any(parts) => parts.iter().any(|part| part.holds(stuck)),
        }
    }

    fn waited_tasks<'e>(&self, edges: &'e [WaitEdge], out: &mut Targets<'e>) {
        match self {
            Condition::Free | Condition::Never(_) | Condition::Wait(Party::Thread(_), _) => {}
            Condition::Wait(Party::Task(id), edge) => {
                if let Some(edge) = edges.get(*edge) {
                    out.push((*id, edge));
                }
            }
            Condition::All(parts) | Condition::Any(parts) => {
                parts.iter().for_each(|part| part.waited_tasks(edges, out))
            }
        }
    }

    /// Its edge indices moved `by` along (its walk's edges now follow others).
    pub fn move_edges(&mut self, by: usize) {
        match self {
            Condition::Wait(_, edge) => *edge += by,
            Condition::All(parts) | Condition::Any(parts) => {
                parts.iter_mut().for_each(|part| part.move_edges(by))
            }
            Condition::Free | Condition::Never(_) => {}
        }
    }

    /// The first resource below that no live party holds.
    fn never(&self) -> Option<Resource> {
        match self {
            Condition::Never(resource) => Some(*resource),
            Condition::All(parts) | Condition::Any(parts) => {
                parts.iter().find_map(Condition::never)
            }
            Condition::Free | Condition::Wait(..) => None,
        }
    }
}

/// What the search finds: the cycles, and the other tasks that cannot go on.
#[derive(Debug, Default)]
pub struct Stuck {
    pub deadlocks: Vec<Deadlock>,
    pub stranded: Vec<Stranded>,
}

/// The tasks a task waits for, each by the edge of its condition (borrowed: a hundred
/// thousand waiting tasks are not copied to find the few stuck ones).
type Targets<'c> = Vec<(u64, &'c WaitEdge)>;

/// The deadlocks among `conditions` (each idle task's, over `edges`), as cycles starting
/// at their lowest id, lowest first; and the stranded tasks, by id.
pub fn find(conditions: &[(u64, Condition)], edges: &[WaitEdge]) -> Stuck {
    let waits = WaitTable::new(conditions, edges);
    let still_stuck = waits.stuck_after_freeing();
    // Cycles among the stuck (a handful, where a million wait): one per strongly connected
    // component.
    let stuck: FxHashSet<u64> = still_stuck
        .iter()
        .map(|&index| conditions[index].0)
        .collect();
    let graph: FxHashMap<u64, Targets<'_>> = still_stuck
        .iter()
        .map(|&index| {
            let targets = waits
                .targets_of(index)
                .iter()
                .filter(|(target, _)| stuck.contains(target))
                .copied()
                .collect();
            (conditions[index].0, targets)
        })
        .collect();
    let mut deadlocks: Vec<Deadlock> = components(&graph)
        .into_iter()
        .filter_map(|component| cycle_in(&graph, &component))
        .collect();
    deadlocks.sort_by_key(|deadlock| deadlock.tasks.clone());
    let condition_of = |task: u64| waits.index_of.get(&task).map(|&index| &conditions[index].1);
    let stranded = stranded(&stuck, &deadlocks, condition_of, &graph);
    Stuck {
        deadlocks,
        stranded,
    }
}

/// The conditions by their index, with each one's waited tasks and its waiters in flat
/// vectors: a million waiting tasks cost a few large vectors, not a map and a vector each.
struct WaitTable<'c> {
    conditions: &'c [(u64, Condition)],
    /// Each task's index among the conditions.
    index_of: FxHashMap<u64, usize>,
    /// Condition `i` waits for `targets[target_starts[i]..target_starts[i + 1]]`.
    targets: Targets<'c>,
    target_starts: Vec<usize>,
    /// The conditions that wait for condition `i`'s task, likewise.
    waiters: Vec<usize>,
    waiter_starts: Vec<usize>,
}

impl<'c> WaitTable<'c> {
    fn new(conditions: &'c [(u64, Condition)], edges: &'c [WaitEdge]) -> Self {
        let index_of: FxHashMap<u64, usize> = conditions
            .iter()
            .enumerate()
            .map(|(index, (id, _))| (*id, index))
            .collect();
        let mut targets = Vec::new();
        let mut target_starts = Vec::with_capacity(conditions.len() + 1);
        for (_, condition) in conditions {
            target_starts.push(targets.len());
            condition.waited_tasks(edges, &mut targets);
        }
        target_starts.push(targets.len());
        // Waiters by the waited task's index, counted then placed: only a task with a
        // condition can be freed by the search, so only its waiters are kept.
        let waited_index = |target: &u64| index_of.get(target).copied();
        let mut waiter_starts = vec![0; conditions.len() + 1];
        for index in targets
            .iter()
            .filter_map(|(target, _)| waited_index(target))
        {
            waiter_starts[index + 1] += 1;
        }
        for index in 0..conditions.len() {
            waiter_starts[index + 1] += waiter_starts[index];
        }
        let mut placed = waiter_starts.clone();
        let mut waiters = vec![0; waiter_starts[conditions.len()]];
        for waiter in 0..conditions.len() {
            let range = target_starts[waiter]..target_starts[waiter + 1];
            for index in targets[range]
                .iter()
                .filter_map(|(target, _)| waited_index(target))
            {
                waiters[placed[index]] = waiter;
                placed[index] += 1;
            }
        }
        WaitTable {
            conditions,
            index_of,
            targets,
            target_starts,
            waiters,
            waiter_starts,
        }
    }

    fn targets_of(&self, index: usize) -> &[(u64, &'c WaitEdge)] {
        &self.targets[self.target_starts[index]..self.target_starts[index + 1]]
    }

    /// The conditions that cannot hold, by index: starting from "every task is stuck",
    /// frees those whose condition holds, then those that waited on them, until nothing
    /// changes (a worklist, so a million tasks stay linear).
    fn stuck_after_freeing(&self) -> Vec<usize> {
        let count = self.conditions.len();
        let mut stuck = vec![true; count];
        let mut queue: VecDeque<usize> = (0..count).collect();
        while let Some(index) = queue.pop_front() {
            let is_stuck = |id: u64| self.index_of.get(&id).is_some_and(|&at| stuck[at]);
            if !stuck[index] || !self.conditions[index].1.holds(&is_stuck) {
                continue;
            }
            stuck[index] = false;
            let waiters = &self.waiters[self.waiter_starts[index]..self.waiter_starts[index + 1]];
            queue.extend(waiters.iter().filter(|&&waiter| stuck[waiter]));
        }
        (0..count).filter(|&index| stuck[index]).collect()
    }
}

/// The stuck tasks in no deadlock's cycle, each with what it waits on: the lock no party
/// holds, else the stuck tasks it waits for.
fn stranded<'c>(
    stuck: &FxHashSet<u64>,
    deadlocks: &[Deadlock],
    condition_of: impl Fn(u64) -> Option<&'c Condition>,
    graph: &FxHashMap<u64, Targets<'_>>,
) -> Vec<Stranded> {
    let in_cycles: FxHashSet<u64> = deadlocks
        .iter()
        .flat_map(|deadlock| deadlock.tasks.iter().copied())
        .collect();
    let mut ids: Vec<u64> = stuck.difference(&in_cycles).copied().collect();
    ids.sort_unstable();
    ids.into_iter()
        .filter_map(|task| {
            if let Some(resource) = condition_of(task).and_then(Condition::never) {
                return Some(Stranded {
                    task,
                    why: StrandedWhy::NoHolder { resource },
                });
            }
            let targets = graph.get(&task)?;
            let (_, first) = targets.first()?;
            let mut tasks: Vec<u64> = targets.iter().map(|(target, _)| *target).collect();
            tasks.sort_unstable();
            tasks.dedup();
            Some(Stranded {
                task,
                why: StrandedWhy::WaitsForStuck {
                    resource: first.resource,
                    tasks,
                },
            })
        })
        .collect()
}

/// Strongly connected components with a cycle (two or more tasks, or a task waiting on
/// itself), by Tarjan's algorithm without recursion.
fn components(graph: &FxHashMap<u64, Targets<'_>>) -> Vec<Vec<u64>> {
    let mut index: FxHashMap<u64, usize> = FxHashMap::default();
    let mut low: FxHashMap<u64, usize> = FxHashMap::default();
    let mut on_stack: FxHashSet<u64> = FxHashSet::default();
    let mut stack: Vec<u64> = Vec::new();
    let mut found = Vec::new();
    let mut nodes: Vec<u64> = graph.keys().copied().collect();
    nodes.sort_unstable();
    for &start in &nodes {
        if index.contains_key(&start) {
            continue;
        }
        // (node, next edge to look at)
        let mut work: Vec<(u64, usize)> = vec![(start, 0)];
        while let Some(&mut (node, ref mut next)) = work.last_mut() {
            if *next == 0 && !index.contains_key(&node) {
                let order = index.len();
                index.insert(node, order);
                low.insert(node, order);
                stack.push(node);
                on_stack.insert(node);
            }
            let targets = &graph[&node];
            if let Some((target, _)) = targets.get(*next) {
                *next += 1;
                let target = *target;
                if !index.contains_key(&target) {
                    work.push((target, 0));
                } else if on_stack.contains(&target) {
                    let lowest = low[&node].min(index[&target]);
                    low.insert(node, lowest);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                let lowest = low[&parent].min(low[&node]);
                low.insert(parent, lowest);
            }
            if low[&node] == index[&node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack.remove(&member);
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                let self_loop = graph[&node].iter().any(|(target, _)| *target == node);
                if component.len() > 1 || self_loop {
                    found.push(component);
                }
            }
        }
    }
    found
}

/// The shortest cycle through the component's lowest task, as a deadlock.
fn cycle_in(graph: &FxHashMap<u64, Targets<'_>>, component: &[u64]) -> Option<Deadlock> {
    let members: FxHashSet<u64> = component.iter().copied().collect();
    let start = *component.iter().min()?;
    // Breadth first from `start` back to it, within the component.
    let mut came_from: FxHashMap<u64, (u64, &WaitEdge)> = FxHashMap::default();
    let mut queue = VecDeque::from([start]);
    let mut closing: Option<(u64, &WaitEdge)> = None;
    'search: while let Some(node) = queue.pop_front() {
        for &(target, edge) in &graph[&node] {
            if target == start {
                closing = Some((node, edge));
                break 'search;
            }
            if members.contains(&target) && !came_from.contains_key(&target) {
                came_from.insert(target, (node, edge));
                queue.push_back(target);
            }
        }
    }
    let (last, closing_edge) = closing?;
    let mut edges = vec![closing_edge.clone()];
    let mut node = last;
    while node != start {
        let &(previous, edge) = came_from.get(&node)?;
        edges.push(edge.clone());
        node = previous;
    }
    edges.reverse();
    let tasks = edges
        .iter()
        .map(|edge| match edge.from {
            Party::Task(id) => id,
            Party::Thread(tid) => tid,
        })
        .collect();
    Some(Deadlock { tasks, edges })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Resource, ResourceKind};

    /// `from` waiting for `to`: its edge kept in `edges`, the condition naming it.
    fn wait(edges: &mut Vec<WaitEdge>, from: u64, to: u64) -> Condition {
        edges.push(WaitEdge {
            from: Party::Task(from),
            to: Party::Task(to),
            resource: Resource {
                kind: ResourceKind::Mutex,
                address: to,
            },
            location: None,
            held_at: None,
            possible: false,
            idle_future: false,
            uncertain: false,
        });
        Condition::Wait(Party::Task(to), edges.len() - 1)
    }

    /// A condition with a free way out is free; free parts of an `All` are dropped; one
    /// part is itself. The search finds what it found with the lists kept whole.
    #[test]
    fn conditions_keep_only_what_can_hold_a_task_back() {
        let mut edges = Vec::new();
        let e = &mut edges;
        let any = Condition::any(vec![wait(e, 5, 4), Condition::Free]);
        assert!(matches!(any, Condition::Free));
        let all = Condition::all(vec![wait(e, 7, 8), Condition::Free]);
        assert!(matches!(all, Condition::Wait(Party::Task(8), _)));
        let one = Condition::any(vec![wait(e, 3, 1)]);
        assert!(matches!(one, Condition::Wait(Party::Task(1), _)));
        assert!(matches!(
            Condition::all(vec![Condition::Free, Condition::Free]),
            Condition::Free
        ));
        let both = Condition::all(vec![wait(e, 13, 4), Condition::Never(lock(13))]);
        assert!(matches!(both, Condition::All(ref parts) if parts.len() == 2));
        let either = Condition::any(vec![wait(e, 13, 4), Condition::Never(lock(13))]);
        assert!(matches!(either, Condition::Any(ref parts) if parts.len() == 2));
    }

    #[test]
    fn finds_cycles_and_nothing_else() {
        let mut edges = Vec::new();
        let e = &mut edges;
        let conditions = vec![
            (1, wait(e, 1, 2)),
            (2, wait(e, 2, 1)),
            // 3 waits on the deadlocked 1: stuck, but not in a cycle.
            (3, wait(e, 3, 1)),
            // 4 and 5 wait on each other, but 5 may also go on by itself (a select!).
            (4, wait(e, 4, 5)),
            (5, Condition::Any(vec![wait(e, 5, 4), Condition::Free])),
            // 6 -> 7 -> 8 -> 6
            (6, wait(e, 6, 7)),
            (7, Condition::All(vec![wait(e, 7, 8), Condition::Free])),
            (8, wait(e, 8, 6)),
            (9, wait(e, 9, 9)),
            // 10 waits on a lock nobody holds, 11 for 10; 12 may also go on by itself.
            (10, Condition::Never(lock(10))),
            (11, wait(e, 11, 10)),
            (
                12,
                Condition::Any(vec![Condition::Never(lock(12)), Condition::Free]),
            ),
            (
                13,
                Condition::All(vec![wait(e, 13, 4), Condition::Never(lock(13))]),
            ),
        ];
        let Stuck {
            deadlocks: found,
            stranded,
        } = find(&conditions, &edges);
        let cycles: Vec<Vec<u64>> = found
            .iter()
            .map(|deadlock| deadlock.tasks.clone())
            .collect();
        assert_eq!(cycles, vec![vec![1, 2], vec![6, 7, 8], vec![9]]);
        let hops: Vec<(Party, Party)> = found[1]
            .edges
            .iter()
            .map(|edge| (edge.from, edge.to))
            .collect();
        assert_eq!(
            hops,
            vec![
                (Party::Task(6), Party::Task(7)),
                (Party::Task(7), Party::Task(8)),
                (Party::Task(8), Party::Task(6))
            ]
        );
        let behind = |task, on: u64, tasks| Stranded {
            task,
            why: StrandedWhy::WaitsForStuck {
                resource: Resource {
                    kind: ResourceKind::Mutex,
                    address: on,
                },
                tasks,
            },
        };
        let no_holder = |task| Stranded {
            task,
            why: StrandedWhy::NoHolder {
                resource: lock(task),
            },
        };
        assert_eq!(
            stranded,
            vec![
                behind(3, 1, vec![1]),
                no_holder(10),
                behind(11, 10, vec![10]),
                no_holder(13)
            ]
        );
    }

    fn lock(address: u64) -> Resource {
        Resource {
            kind: ResourceKind::Mutex,
            address,
        }
    }
}
