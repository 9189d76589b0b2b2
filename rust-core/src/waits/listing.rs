//! The holders a waiting node lists, how sure that list is, and what the node is told of
//! them: its facts' list and the note in its summary.

use super::locks::{self, Share};
use super::noted::NotedHolders;
use super::{Holder, Relation, Waiting};
use crate::model::{Detail, FutureNode, HolderCertainty, HolderNote, Party};

/// The holders a waiting node lists, and how sure that list is.
pub(super) struct Listing<'h> {
    pub(super) entries: Vec<locks::Entry<'h>>,
    /// For a lock: from its permits, or `Unchecked`.
    pub(super) certainty: Option<HolderCertainty>,
    /// The permits its guards keep between them, where counted.
    pub(super) taken: Option<u64>,
    /// No holder is left out that could let the waiter go on.
    pub(super) every_holder_known: bool,
}

impl<'h> Listing<'h> {
    pub(super) fn counted(counted: &locks::Counted<'h>, waiting: &Waiting) -> Listing<'h> {
        Listing {
            entries: counted.entries.clone(),
            certainty: Some(counted.certainty),
            taken: Some(counted.taken),
            // A lock waits for every holder: those found are enough to wait for. Any one of
            // a semaphore's may serve it: all must be found.
            every_holder_known: matches!(waiting.relation, Relation::AllOf)
                || counted.certainty == HolderCertainty::Certain,
        }
    }
}

/// The holders a listing names, as a waiting node lists them.
pub(super) fn holder_notes(listing: &Listing<'_>) -> Vec<HolderNote> {
    listing
        .entries
        .iter()
        .map(|entry| HolderNote {
            party: entry.holder.party,
            location: entry.holder.location.clone(),
            local: entry.holder.holding.local.clone(),
            idle_future: entry.holder.holding.idle_future,
            permits: entry.permits,
        })
        .collect()
}

/// Writes the holders into a waiting node: its facts' list of holders, senders or
/// notifiers, and a note in its summary (`…; held by task 4 at src/bank.rs:27)`, `…; held
/// by one of tasks 7, 8)`).
pub(super) fn note_holders(node: &mut FutureNode, holders: &NotedHolders) {
    let slot = match node.detail_mut() {
        Some(
            Detail::MutexLock(wait)
            | Detail::RwlockRead(wait)
            | Detail::RwlockWrite(wait)
            | Detail::SemaphoreAcquire(wait),
        ) => {
            wait.holders_certainty = holders.certainty;
            &mut wait.holders
        }
        Some(Detail::MpscRecv(wait)) => &mut wait.senders_held_by,
        Some(Detail::OneshotRecv(wait)) => &mut wait.senders_held_by,
        Some(Detail::BroadcastRecv(wait)) => &mut wait.senders_held_by,
        Some(Detail::WatchChanged(wait)) => &mut wait.senders_held_by,
        Some(Detail::Notified(wait)) => &mut wait.notifiers,
        _ => return,
    };
    *slot = Some(holders.listed.clone());
    node.add_note(&holders.note);
}

/// `held by task 4 at src/bank.rs:27`; where the permits cannot tell which candidates hold
/// it, how many of them do: `held by one of tasks 7, 8`, `held by 2 of tasks 3, 5, 9`,
/// `held by task 4 and one of tasks 7, 8`.
pub(super) fn holders_note(waiting: &Waiting, listing: &Listing<'_>) -> String {
    let (may, holds): (Vec<&locks::Entry>, Vec<&locks::Entry>) = listing
        .entries
        .iter()
        .partition(|entry| entry.share == Share::MayHold);
    if may.is_empty() {
        return format!("{} {}", waiting.held_by, party_list(&holds));
    }
    let among = format!(
        "{} of {}",
        how_many(listing.taken, &holds, &may),
        parties(&may)
    );
    if holds.is_empty() {
        format!("{} {among}", waiting.held_by)
    } else {
        format!("{} {} and {among}", waiting.held_by, party_list(&holds))
    }
}

/// How many of the uncertain candidates hold the permits the sure guards leave: a number
/// where they each keep as many, else `some`.
fn how_many(taken: Option<u64>, holds: &[&locks::Entry], may: &[&locks::Entry]) -> String {
    // Permits tokio assigned are not among those the guards have taken.
    let held_for_sure = holds
        .iter()
        .filter(|entry| locks::is_guard(entry.holder.holding.kind))
        .try_fold(0u64, |sum, entry| sum.checked_add(entry.permits?));
    let left = taken
        .zip(held_for_sure)
        .and_then(|(taken, held)| taken.checked_sub(held));
    let each = may.first().and_then(|entry| entry.permits);
    let alike = may.iter().all(|entry| entry.permits == each);
    match (left, each) {
        (Some(left), Some(each)) if alike && each > 0 && left % each == 0 => match left / each {
            1 => "one".to_string(),
            count => count.to_string(),
        },
        _ => "some".to_string(),
    }
}

/// `task 4 at src/bank.rs:27` / `tasks 4, 7` / `thread 1201 at src/main.rs:9`; an idle
/// future's holding says so.
fn party_list(entries: &[&locks::Entry]) -> String {
    match entries {
        [entry] => {
            let at = entry
                .holder
                .location
                .as_ref()
                .map(|at| format!(" at {}:{}", at.file, at.line))
                .unwrap_or_default();
            format!("{}{at}{}", entry.holder.party, idle(entry.holder))
        }
        entries => parties(entries),
    }
}

/// `tasks 4, 7 (an idle future), thread 1201`.
fn parties(entries: &[&locks::Entry]) -> String {
    let listed: Vec<String> = entries
        .iter()
        .map(|entry| match entry.holder.party {
            Party::Task(id) => format!("{id}{}", idle(entry.holder)),
            Party::Thread(tid) => format!("thread {tid}"),
        })
        .collect();
    format!("tasks {}", listed.join(", "))
}

fn idle(holder: &Holder) -> &'static str {
    if holder.holding.idle_future {
        " (an idle future)"
    } else {
        ""
    }
}
