//! The details, summaries and extras of the nodes a decoder made last, shared with the
//! next node that has the same: a million tasks' `select!`s and `join!`s have a few
//! details and branch lists between them, and their sleeps a few summaries, so one
//! allocation stands for thousands.
//! Small and bounded: a few recent values per type, found by comparing them. Values equal
//! by `PartialEq` write the same JSON: a detail's floats (a deadline's seconds left) follow
//! from the fields compared beside them, so -0.0 never meets 0.0.

use std::sync::Arc;

use crate::model::{Detail, Extras};

/// Sets of values: a type's set is its name hash's remainder.
const SETS: usize = 64;
/// Values kept per set: a type's nodes alternate between a few values (the two sleeps of
/// a `join!`, tasks spawned a millisecond apart).
const WAYS: usize = 4;

/// The recent details, summaries and extras of one decoder (one thread).
#[derive(Default)]
pub struct RecentFacts {
    details: Recent<Detail>,
    summaries: Recent<str>,
    extras: Recent<Extras>,
}

impl RecentFacts {
    /// `detail` for a node of type `names_hash`: a recent one equal to it, else kept.
    pub fn detail(&mut self, names_hash: u64, detail: Detail) -> Arc<Detail> {
        self.details.share(names_hash, detail)
    }

    /// `summary` for a node of type `names_hash`, as `detail`.
    pub fn summary(&mut self, names_hash: u64, summary: String) -> Arc<str> {
        self.summaries.share(names_hash, summary)
    }

    /// A node's `extras`, as `detail`.
    pub fn extras(&mut self, names_hash: u64, extras: Arc<Extras>) -> Arc<Extras> {
        self.extras.share(names_hash, extras)
    }
}

/// A set-associative store of recent values, replaced in turn within a set.
struct Recent<T: ?Sized> {
    sets: Vec<[Option<Arc<T>>; WAYS]>,
    /// Per set, the way to replace next.
    next: Vec<u8>,
}

impl<T: ?Sized> Default for Recent<T> {
    fn default() -> Self {
        Recent {
            sets: (0..SETS).map(|_| Default::default()).collect(),
            next: vec![0; SETS],
        }
    }
}

impl<T: ?Sized + PartialEq> Recent<T> {
    fn share<V>(&mut self, key: u64, value: V) -> Arc<T>
    where
        V: std::borrow::Borrow<T> + Into<Arc<T>>,
    {
        let set = (key % SETS as u64) as usize;
        let ways = &mut self.sets[set];
        if let Some(kept) = ways
            .iter()
            .flatten()
            .find(|kept| ***kept == *value.borrow())
        {
            return Arc::clone(kept);
        }
        let shared: Arc<T> = value.into();
        let way = usize::from(self.next[set]) % WAYS;
        ways[way] = Some(Arc::clone(&shared));
        self.next[set] = ((way + 1) % WAYS) as u8;
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FutureSet;

    fn set_of(len: usize) -> Detail {
        Detail::Join(FutureSet {
            len,
            outputs_queued: None,
            pending: len,
        })
    }

    #[test]
    fn equal_values_of_a_type_share_one_allocation() {
        let mut recent = RecentFacts::default();
        let first = recent.detail(7, set_of(2));
        let second = recent.detail(7, set_of(2));
        assert!(Arc::ptr_eq(&first, &second));
        let other = recent.detail(7, set_of(3));
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(*other, set_of(3));
        let summary = recent.summary(7, "join! of 2".to_string());
        assert!(Arc::ptr_eq(
            &summary,
            &recent.summary(7, "join! of 2".to_string())
        ));
    }

    #[test]
    fn a_set_keeps_its_last_four_values() {
        let mut recent = RecentFacts::default();
        let kept: Vec<_> = (0..4).map(|len| recent.detail(1, set_of(len))).collect();
        for (len, first) in kept.iter().enumerate() {
            assert!(Arc::ptr_eq(first, &recent.detail(1, set_of(len))));
        }
        // A fifth replaces the oldest, which is then made anew.
        recent.detail(1, set_of(9));
        assert!(!Arc::ptr_eq(&kept[0], &recent.detail(1, set_of(0))));
        assert!(Arc::ptr_eq(&kept[3], &recent.detail(1, set_of(3))));
    }
}
