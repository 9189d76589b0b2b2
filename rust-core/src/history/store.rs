//! The snapshots kept between commands, in the extension's memory: per process (its pid or
//! core file, with the executable's build id), the latest stop's and the one before it, so
//! that a second command at the same stop still compares with the stop before, and takes
//! the stop's own snapshot from here rather than marking a million tasks again.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use super::snapshot::Snapshot;
use crate::model::TakenAt;

/// Processes remembered at once; the least recently used is forgotten past this.
const PROCESSES_KEPT: usize = 16;

/// Which process and build a snapshot is of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProcessKey {
    /// `pid 1234`, `core /path/core.1234`, or what else names the target.
    pub target: String,
    pub build_id: Option<String>,
}

struct Kept {
    latest: Arc<Snapshot>,
    /// The memory `latest` was marked from (the debugger's stop key), where it counted
    /// each task's `since` from `earlier` (not from a saved report): while the memory is
    /// that, it is what marking the stop again would give.
    latest_of_memory: Option<String>,
    earlier: Option<Arc<Snapshot>>,
    used: u64,
}

#[derive(Default)]
struct Store {
    processes: FxHashMap<ProcessKey, Kept>,
    clock: u64,
}

static STORE: Mutex<Option<Store>> = Mutex::new(None);

fn same_stop(snapshot: &Snapshot, taken_at: Option<TakenAt>) -> bool {
    snapshot.taken_at.is_some() && snapshot.taken_at == taken_at
}

/// The snapshot of the stop before the one at `now` (the report's `taken_at`): the latest
/// kept, unless that is of this very stop.
pub fn previous(key: &ProcessKey, now: Option<TakenAt>) -> Option<Arc<Snapshot>> {
    let store = STORE.lock().ok()?;
    let kept = store.as_ref()?.processes.get(key)?;
    match same_stop(&kept.latest, now) {
        true => kept.earlier.clone(),
        false => Some(kept.latest.clone()),
    }
}

/// The snapshot of the stop at `now` itself, kept by an earlier command at this stop that
/// counted from the stop before it, while the memory is as it was then (`memory`, the
/// debugger's stop key, is what it was): then neither have the marks changed.
pub fn this_stop(
    key: &ProcessKey,
    now: Option<TakenAt>,
    memory: Option<&str>,
) -> Option<Arc<Snapshot>> {
    let store = STORE.lock().ok()?;
    let kept = store.as_ref()?.processes.get(key)?;
    let same_memory = memory.is_some() && kept.latest_of_memory.as_deref() == memory;
    (same_stop(&kept.latest, now) && same_memory).then(|| kept.latest.clone())
}

/// Keeps `snapshot` as the latest of its process (shared: a sampler keeps it too).
/// `of_memory`: the memory it was marked from, where its tasks' `since` count from the
/// stop kept before it (`previous`); `None` where they count from a saved report, or the
/// debugger cannot tell when memory changes.
pub fn keep(key: ProcessKey, snapshot: Arc<Snapshot>, of_memory: Option<String>) {
    let Ok(mut store) = STORE.lock() else {
        return;
    };
    let store = store.get_or_insert_with(Store::default);
    store.clock += 1;
    let used = store.clock;
    match store.processes.get_mut(&key) {
        Some(kept) => {
            if !same_stop(&kept.latest, snapshot.taken_at) {
                kept.earlier = Some(kept.latest.clone());
            }
            kept.latest = snapshot;
            kept.latest_of_memory = of_memory;
            kept.used = used;
        }
        None => {
            if store.processes.len() >= PROCESSES_KEPT {
                if let Some(oldest) = store
                    .processes
                    .iter()
                    .min_by_key(|(_, kept)| kept.used)
                    .map(|(key, _)| key.clone())
                {
                    store.processes.remove(&oldest);
                }
            }
            store.processes.insert(
                key,
                Kept {
                    latest: snapshot,
                    latest_of_memory: of_memory,
                    earlier: None,
                    used,
                },
            );
        }
    }
}
