//! Who of the parties keeping a lock's guards holds it, from the lock's own permits. A
//! guard moved out (`drop(guard)`) leaves its bytes in the coroutine until its scope ends,
//! so the guards found in saved locals are candidates only; the permits the lock says its
//! guards have taken (its total, less those available and those tokio assigned to acquire
//! futures) are what the candidates can hold between them.

use rustc_hash::FxHashMap;

use super::{Holder, Holders};
use crate::model::{Fact, HolderCertainty, HoldingKind, Party};

/// What is known of one lock's batch semaphore at the stop, from its waiters' nodes and
/// from the holdings that point to it (all read at the same stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockState {
    pub available: Option<u64>,
    /// 1 for a Mutex, `mr` for a RwLock; unknown for a Semaphore.
    pub total: Option<u64>,
    /// Permits tokio assigned to acquire futures not yet turned into guards: waiters part
    /// way (a writer is given what readers free), idle acquire futures. Unknown once one of
    /// them could not be read.
    pub assigned: Option<u64>,
}

impl Default for LockState {
    fn default() -> Self {
        LockState {
            available: None,
            total: None,
            assigned: Some(0),
        }
    }
}

impl LockState {
    fn seen(&mut self, available: u64, total: Option<u64>) {
        self.available.get_or_insert(available);
        if self.total.is_none() {
            self.total = total;
        }
    }

    fn assign(&mut self, permits: Option<u64>) {
        self.assigned = self
            .assigned
            .zip(permits)
            .and_then(|(sum, more)| sum.checked_add(more));
    }

    /// The permits the lock's guards and permits keep between them; none where that is not
    /// known (a Semaphore's total, a count that could not be read, numbers that do not add up).
    pub fn taken_by_guards(&self) -> Option<u64> {
        let taken = self.total?.checked_sub(self.available?)?;
        if taken == 0 {
            // Nothing is taken at all, whatever was assigned.
            return Some(0);
        }
        taken.checked_sub(self.assigned?)
    }
}

fn is_lock_holding(kind: HoldingKind) -> bool {
    matches!(
        kind,
        HoldingKind::LockGuard | HoldingKind::Permit | HoldingKind::Assigned
    )
}

/// A guard or permit, which holds its lock only while the lock says so.
pub fn is_guard(kind: HoldingKind) -> bool {
    matches!(kind, HoldingKind::LockGuard | HoldingKind::Permit)
}

/// What a lock's waiter saw of it at the stop.
#[derive(Debug, Clone, Copy)]
pub struct LockWait {
    semaphore: u64,
    available: u64,
    total: Option<u64>,
    assigned: Option<u64>,
}

impl LockWait {
    /// The wait of a node waiting for a lock or permits; none for any other node.
    pub fn of(fact: &Fact) -> Option<LockWait> {
        match *fact {
            Fact::Lock {
                semaphore,
                available,
                total,
                assigned,
                ..
            } => Some(LockWait {
                semaphore,
                available,
                total,
                assigned,
            }),
            _ => None,
        }
    }
}

/// The state of every lock waited for or held, by its semaphore's address.
fn lock_states(waits: &[LockWait], holders: &Holders) -> FxHashMap<u64, LockState> {
    let mut states: FxHashMap<u64, LockState> = FxHashMap::default();
    for wait in waits {
        let state = states.entry(wait.semaphore).or_default();
        state.seen(wait.available, wait.total);
        state.assign(wait.assigned);
    }
    for (key, holders) in holders {
        for holding in holders
            .iter()
            .map(|holder| &holder.holding)
            .filter(|holding| is_lock_holding(holding.kind))
        {
            let state = states.entry(*key).or_default();
            if let Some(lock) = holding.lock {
                state.seen(lock.available, lock.total);
            }
            if holding.kind == HoldingKind::Assigned {
                state.assign(holding.permits);
            }
        }
    }
    states
}

/// One party's guards (or permits) of a lock, as a candidate holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The permits its guards keep between them; none where a count could not be read.
    pub permits: Option<u64>,
    /// Only captured variables keep them, whose bytes rustc keeps after the body moved them.
    pub captured: bool,
}

/// Whether a candidate holds the lock, as the permits tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    Holds,
    /// The candidates keep more than the lock has taken, and the others could hold it
    /// without this one: memory cannot tell.
    MayHold,
    /// Its guards keep nothing the lock has taken (a free lock, a forgotten permit), or
    /// locals of other parties keep what is taken and it only a captured variable's bytes.
    Not,
}

/// What the permits tell of a lock's candidates: each one's share, in their order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub certainty: HolderCertainty,
    pub shares: Vec<Share>,
    /// The permits the lock's guards keep between them.
    pub taken: u64,
}

/// Counts the candidates' permits against those the lock's guards have taken; none where
/// the state or a candidate's count is not known.
pub fn account(state: &LockState, candidates: &[Candidate]) -> Option<Account> {
    let taken = state.taken_by_guards()?;
    let permits: Vec<u64> = candidates
        .iter()
        .map(|candidate| candidate.permits)
        .collect::<Option<_>>()?;
    let total_of = |keep: &dyn Fn(usize) -> bool| {
        (0..permits.len())
            .filter(|&at| keep(at))
            .try_fold(0u64, |sum, at| sum.checked_add(permits[at]))
    };
    let counted = |certainty, share: &dyn Fn(usize) -> Share| Account {
        certainty,
        shares: (0..permits.len())
            .map(|at| {
                if permits[at] == 0 {
                    Share::Not
                } else {
                    share(at)
                }
            })
            .collect(),
        taken,
    };
    if taken == 0 {
        return Some(counted(HolderCertainty::Certain, &|_| Share::Not));
    }
    let captured = |at: usize| candidates[at].captured;
    // The surer first: locals that keep exactly what is taken leave captured copies out.
    if (0..permits.len()).any(captured) && total_of(&|at| !captured(at)) == Some(taken) {
        return Some(counted(HolderCertainty::Certain, &|at| {
            if captured(at) {
                Share::Not
            } else {
                Share::Holds
            }
        }));
    }
    let all = total_of(&|_| true);
    match all {
        Some(all) if all == taken => Some(counted(HolderCertainty::Certain, &|_| Share::Holds)),
        Some(all) if all < taken => Some(counted(HolderCertainty::Incomplete, &|_| Share::Holds)),
        _ => {
            // More than is taken: one holds for sure where the others could not hold it all,
            // and what those keep may leave nothing to the rest.
            let all = all.unwrap_or(u64::MAX);
            let sure = |at: usize| all.saturating_sub(permits[at]) < taken;
            let rest = match total_of(&sure) {
                Some(held) if held < taken => Share::MayHold,
                _ => Share::Not,
            };
            let ambiguous =
                rest == Share::MayHold && (0..permits.len()).any(|at| permits[at] > 0 && !sure(at));
            let certainty = if ambiguous {
                HolderCertainty::Ambiguous
            } else {
                HolderCertainty::Certain
            };
            Some(counted(certainty, &|at| {
                if sure(at) {
                    Share::Holds
                } else {
                    rest
                }
            }))
        }
    }
}

/// One party's holding of a lock, as its waiters list it.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'h> {
    /// The surest of its holdings: a local over a captured variable.
    pub holder: &'h Holder,
    /// The permits its holdings keep between them.
    pub permits: Option<u64>,
    pub share: Share,
}

/// Who holds one lock, as far as its permits tell.
pub struct LockHolders<'h> {
    /// Tokio's assignments to idle acquire futures, then the parties keeping guards, one
    /// entry per party; none where the permits could not be counted.
    pub counted: Option<Counted<'h>>,
    /// None of the lock is taken by a guard: the guards found are moved out.
    pub free: bool,
}

pub struct Counted<'h> {
    pub entries: Vec<Entry<'h>>,
    pub certainty: HolderCertainty,
    pub taken: u64,
}

impl LockHolders<'_> {
    /// The share of `party` in the lock, where its permits were counted.
    pub fn share_of(&self, party: Party) -> Option<Share> {
        let counted = self.counted.as_ref()?;
        let mut shares = counted
            .entries
            .iter()
            .filter(|entry| entry.holder.party == party)
            .map(|entry| entry.share);
        let first = shares.next()?;
        // A party with an assignment and a guard holds it.
        Some(if shares.any(|share| share == Share::Holds) {
            Share::Holds
        } else {
            first
        })
    }
}

/// Who holds each lock waited for or held, by its semaphore's address.
pub fn lock_holders<'h>(
    waits: &[LockWait],
    holders: &'h Holders,
) -> FxHashMap<u64, LockHolders<'h>> {
    lock_states(waits, holders)
        .into_iter()
        .map(|(key, state)| {
            let found = holders.get(&key).map(Vec::as_slice).unwrap_or_default();
            (key, holders_of_lock(&state, found))
        })
        .collect()
}

fn holders_of_lock<'h>(state: &LockState, found: &'h [Holder]) -> LockHolders<'h> {
    let free = state.taken_by_guards() == Some(0);
    let assigned = by_party(
        found
            .iter()
            .filter(|holder| holder.holding.kind == HoldingKind::Assigned),
    );
    let guards = by_party(found.iter().filter(|holder| is_guard(holder.holding.kind)));
    let candidates: Vec<Candidate> = guards.iter().map(|(_, candidate)| *candidate).collect();
    let counted = account(state, &candidates).map(|account| {
        let entries = assigned
            .iter()
            .map(|(holder, candidate)| (holder, candidate, Share::Holds))
            .chain(
                guards
                    .iter()
                    .zip(&account.shares)
                    .map(|((holder, candidate), share)| (holder, candidate, *share)),
            )
            .filter(|(.., share)| *share != Share::Not)
            .map(|(holder, candidate, share)| Entry {
                holder,
                permits: candidate.permits,
                share,
            })
            .collect();
        Counted {
            entries,
            certainty: account.certainty,
            taken: account.taken,
        }
    });
    LockHolders { counted, free }
}

/// One entry per party, its surest holding first (a local over a captured variable), with
/// the permits its holdings of that sureness keep between them.
fn by_party<'h>(holders: impl Iterator<Item = &'h Holder>) -> Vec<(&'h Holder, Candidate)> {
    let mut holders: Vec<&Holder> = holders.collect();
    holders.sort_by_key(|holder| (holder.party, holder.holding.captured));
    let mut parties: Vec<(&Holder, Candidate)> = Vec::new();
    for holder in holders {
        match parties.last_mut() {
            Some((first, candidate)) if first.party == holder.party => {
                // A captured copy of what a local keeps adds nothing.
                if holder.holding.captured == candidate.captured {
                    candidate.permits = candidate
                        .permits
                        .zip(holder.holding.permits)
                        .and_then(|(sum, more)| sum.checked_add(more));
                }
            }
            _ => parties.push((
                holder,
                Candidate {
                    permits: holder.holding.permits,
                    captured: holder.holding.captured,
                },
            )),
        }
    }
    parties
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(total: Option<u64>, available: u64, assigned: u64) -> LockState {
        LockState {
            available: Some(available),
            total,
            assigned: Some(assigned),
        }
    }

    fn local(permits: u64) -> Candidate {
        Candidate {
            permits: Some(permits),
            captured: false,
        }
    }

    fn captured(permits: u64) -> Candidate {
        Candidate {
            permits: Some(permits),
            captured: true,
        }
    }

    fn shares(state: &LockState, candidates: &[Candidate]) -> (HolderCertainty, Vec<Share>) {
        let account = account(state, candidates).expect("counted");
        (account.certainty, account.shares)
    }

    use HolderCertainty::{Ambiguous, Certain, Incomplete};
    use Share::{Holds, MayHold, Not};

    #[test]
    fn a_free_mutex_has_no_holder_whatever_guards_are_left() {
        let free = state(Some(1), 1, 0);
        assert_eq!(free.taken_by_guards(), Some(0));
        assert_eq!(
            shares(&free, &[local(1), local(1)]),
            (Certain, vec![Not, Not])
        );
        // Given to a queued waiter, not yet polled: taken, but by no guard.
        let assigned = state(Some(1), 0, 1);
        assert_eq!(shares(&assigned, &[local(1)]), (Certain, vec![Not]));
    }

    #[test]
    fn a_locked_mutex_has_one_holder_or_one_of_its_candidates() {
        let locked = state(Some(1), 0, 0);
        assert_eq!(shares(&locked, &[local(1)]), (Certain, vec![Holds]));
        assert_eq!(
            shares(&locked, &[local(1), local(1)]),
            (Ambiguous, vec![MayHold, MayHold])
        );
        // A local over a captured variable's bytes, as before.
        assert_eq!(
            shares(&locked, &[captured(1), local(1)]),
            (Certain, vec![Not, Holds])
        );
        assert_eq!(
            shares(&locked, &[captured(1), captured(1)]),
            (Ambiguous, vec![MayHold, MayHold])
        );
        // Nobody found: the holder is where the tool does not look.
        assert_eq!(shares(&locked, &[]), (Incomplete, vec![]));
    }

    #[test]
    fn rwlock_readers_and_writers_count_their_permits() {
        const MOST_READERS: u64 = 536_870_911;
        // Two readers hold it; a writer queued took every other permit as readers left.
        let read = state(Some(MOST_READERS), 0, MOST_READERS - 2);
        assert_eq!(
            shares(&read, &[local(1), local(1)]),
            (Certain, vec![Holds, Holds])
        );
        assert_eq!(
            shares(&read, &[local(1), local(1), local(1)]),
            (Ambiguous, vec![MayHold, MayHold, MayHold])
        );
        // A writer's guard holds every permit; a reader's stale guard cannot hold one then.
        let written = state(Some(MOST_READERS), 0, 0);
        assert_eq!(
            shares(&written, &[local(MOST_READERS), local(1)]),
            (Certain, vec![Holds, Not])
        );
        assert_eq!(
            shares(&written, &[local(MOST_READERS), local(MOST_READERS)]),
            (Ambiguous, vec![MayHold, MayHold])
        );
        // Free: readers all gone.
        let free = state(Some(MOST_READERS), MOST_READERS, 0);
        assert_eq!(shares(&free, &[local(1)]), (Certain, vec![Not]));
        // More taken than the readers found keep: the rest is held where the tool does not look.
        assert_eq!(shares(&read, &[local(1)]), (Incomplete, vec![Holds]));
    }

    #[test]
    fn semaphore_permits_count_as_many_as_they_keep() {
        // A semaphore's total is not known: its permits are not counted.
        assert_eq!(account(&state(None, 0, 0), &[local(2)]), None);
        // Where the total is known (a bare batch semaphore a holding tells), permits are
        // counted by number, and a forgotten permit (0) holds nothing.
        let five = state(Some(5), 1, 1);
        assert_eq!(
            shares(&five, &[local(2), local(1), local(0)]),
            (Certain, vec![Holds, Holds, Not])
        );
        assert_eq!(
            shares(&five, &[local(2), local(2), local(1)]),
            (Ambiguous, vec![MayHold, MayHold, MayHold])
        );
        // Three taken, kept 2 + 2: each could hold it without the other only in part.
        let three = state(Some(5), 2, 0);
        assert_eq!(
            shares(&three, &[local(2), local(2)]),
            (Certain, vec![Holds, Holds])
        );
    }

    #[test]
    fn numbers_that_do_not_add_up_are_not_counted() {
        // More available than the lock has; more assigned than taken; a count not read.
        assert_eq!(account(&state(Some(1), 2, 0), &[local(1)]), None);
        assert_eq!(account(&state(Some(3), 1, 3), &[local(1)]), None);
        assert_eq!(
            account(
                &state(Some(1), 0, 0),
                &[Candidate {
                    permits: None,
                    captured: false
                }]
            ),
            None
        );
        let unknown_assignment = LockState {
            assigned: None,
            ..state(Some(1), 0, 0)
        };
        assert_eq!(account(&unknown_assignment, &[local(1)]), None);
        // Nothing taken is known whatever was assigned.
        let free = LockState {
            assigned: None,
            ..state(Some(1), 1, 0)
        };
        assert_eq!(free.taken_by_guards(), Some(0));
    }
}
