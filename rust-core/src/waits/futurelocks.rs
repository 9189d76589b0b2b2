//! Futurelocks: idle futures in tasks keeping what others wait for.

use rustc_hash::FxHashMap;

use super::locks::{self, LockHolders, Share};
use super::Holders;
use crate::model::{Futurelock, Party, Resource, WaitEdge};

/// Idle futures in tasks keeping what others wait for (or could): each with the tasks
/// waiting on that resource. A guard its lock says may not be held, or is not, keeps
/// nothing for sure.
pub(super) fn futurelocks(
    holders: &Holders,
    locks: &FxHashMap<u64, LockHolders<'_>>,
    labels: &FxHashMap<u64, Resource>,
    edges: &[WaitEdge],
) -> Vec<Futurelock> {
    let mut found = Vec::new();
    for (key, holders) in holders {
        let lock = locks.get(key);
        for holder in holders.iter().filter(|holder| holder.holding.idle_future) {
            let Party::Task(task) = holder.party else {
                continue;
            };
            let released = locks::is_guard(holder.holding.kind)
                && (lock.is_some_and(|lock| lock.free) || holder.holding.permits == Some(0));
            let share = lock.and_then(|lock| lock.share_of(holder.party));
            if released || matches!(share, Some(Share::MayHold | Share::Not)) {
                continue;
            }
            let resource = labels.get(key).copied().unwrap_or(holder.holding.resource);
            let mut blocked: Vec<u64> = edges
                .iter()
                .filter(|edge| edge.to == holder.party && edge.resource == resource)
                .filter(|edge| !edge.uncertain)
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
