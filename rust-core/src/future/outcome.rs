//! What a decoder is given and what it gives back: the context of one command's decoding
//! (the target, the task reader, facts of a live process), and its outcome, a node of its
//! own (typed facts, a summary, the futures inside) or the one future it only wraps.
//! Decoders see nothing of the decoder that walks the tree.

use std::cell::RefCell;

use crate::dwarf::DieRef;
use crate::model::{Branch, BranchStatus, Detail, FutureSet, Location, SetKind};
use crate::tokio::anchors::Anchor;
use crate::tokio::tasks::TaskReader;
use crate::value::{Target, Value};

/// The most children one node (a set of futures) lists.
pub const MAX_CHILDREN: usize = 10_000;

/// What a decoder makes of a value.
pub enum Outcome {
    /// The value only wraps another future: show that one instead.
    SeeThrough(Child),
    /// A node of its own, possibly with children to decode.
    Node(Decoded),
    /// Not this decoder's case after all (an async fn in a state it does not describe):
    /// decode the value as if no decoder knew its type.
    Default,
}

pub struct Decoded {
    /// The node's facts, which also give its kind; none keeps the kind it has (a
    /// coroutine's, or `future`).
    pub detail: Option<Detail>,
    pub summary: Option<String>,
    pub children: Vec<Child>,
    /// Also the futures found by searching these values (what a service waits on before it
    /// is ready, what a `poll_fn` closure captures).
    pub searches: Vec<SearchRoot>,
    /// Where the node's code is written, for a node that is no coroutine (a `poll_fn`'s
    /// closure).
    pub location: Option<Location>,
}

/// A value to search for futures, with the field path shown before each one found.
pub struct SearchRoot {
    pub ty: DieRef,
    pub address: u64,
    pub via: String,
    /// The value itself, when it is a future, rather than only its fields.
    pub itself: bool,
    /// What is found is kept in the value's fields and polled from its own `poll`.
    pub held: bool,
}

impl SearchRoot {
    /// The futures in `value`'s fields, each shown as `via.field` and held there.
    pub fn fields_of(value: &Value<'_>, via: impl Into<String>) -> SearchRoot {
        SearchRoot {
            ty: value.ty.die,
            address: value.address,
            via: via.into(),
            itself: false,
            held: true,
        }
    }

    /// `value` if it is a future, else the futures in its fields: what a closure polls.
    pub fn value(value: &Value<'_>, via: impl Into<String>) -> SearchRoot {
        SearchRoot {
            itself: true,
            held: false,
            ..SearchRoot::fields_of(value, via)
        }
    }
}

impl Decoded {
    /// A leaf: facts and a summary, nothing inside.
    pub fn leaf(detail: Detail, summary: String) -> Decoded {
        Decoded {
            detail: Some(detail),
            summary: Some(summary),
            children: Vec::new(),
            searches: Vec::new(),
            location: None,
        }
    }

    /// A node with facts, a summary and the futures it holds.
    pub fn with_children(detail: Detail, summary: String, children: Vec<Child>) -> Decoded {
        Decoded {
            detail: Some(detail),
            summary: Some(summary),
            children,
            searches: Vec::new(),
            location: None,
        }
    }

    /// A set of futures: its facts count them and the pending ones, its summary reads
    /// "`what` of N (M pending)".
    pub fn set(
        kind: SetKind,
        what: &str,
        children: Vec<Child>,
        outputs_queued: Option<u64>,
    ) -> Decoded {
        let pending = children
            .iter()
            .filter(|child| {
                child
                    .branch
                    .as_ref()
                    .is_some_and(|branch| branch.status == BranchStatus::Pending)
            })
            .count();
        let detail = Detail::future_set(
            kind,
            FutureSet {
                len: children.len(),
                outputs_queued,
                pending,
            },
        );
        let summary = format!("{what} of {} ({pending} pending)", children.len());
        Decoded::with_children(detail, summary, children)
    }

    /// No node of its own: the children hang under the value's node as it is.
    pub fn children_only(children: Vec<Child>) -> Decoded {
        Decoded {
            detail: None,
            summary: None,
            children,
            searches: Vec::new(),
            location: None,
        }
    }
}

/// A future inside another, to decode as a child node.
pub struct Child {
    pub ty: DieRef,
    pub address: u64,
    pub boxed: bool,
    pub branch: Option<Branch>,
    /// Only name its type: the future is finished or gone, its memory holds no future.
    pub describe_only: bool,
    /// Already decoded by the parent (a `select!` seen from the coroutine that holds it).
    pub prepared: Option<Box<Decoded>>,
    /// The field path from the parent, for futures found by searching its fields.
    pub via: Option<String>,
    /// Kept in a field of a future that polls it from its own `poll`, not awaited.
    pub held: bool,
}

impl Child {
    pub fn at(ty: DieRef, address: u64) -> Child {
        Child {
            ty,
            address,
            boxed: false,
            branch: None,
            describe_only: false,
            prepared: None,
            via: None,
            held: false,
        }
    }

    pub fn of(value: &Value<'_>) -> Child {
        Child::at(value.ty.die, value.address)
    }

    /// A member of a set, still pending, at position `index`.
    pub fn pending_branch(value: &Value<'_>, index: usize) -> Child {
        Child {
            branch: Some(Branch::new(index, BranchStatus::Pending)),
            ..Child::of(value)
        }
    }
}

/// Facts about the process that only some decoders need.
#[derive(Default, Clone, Copy)]
pub struct LiveProcess {
    /// The pid, when the process runs on this machine (to name file descriptors).
    pub pid: Option<u32>,
    /// CLOCK_MONOTONIC now, when the process is live (to say how long a sleep has left).
    pub now: Option<(i64, u32)>,
}

/// What decoders may read and note during one command.
pub struct DecodeContext<'a> {
    pub target: &'a Target<'a>,
    /// Lets `JoinHandle` nodes name the task they wait for.
    pub tasks: Option<&'a TaskReader<'a>>,
    pub live: LiveProcess,
    /// What decoding met that leads to task lists (LocalSets, runtime handles, tasks
    /// through their `JoinHandle`s), for the caller to walk too: a LocalSet's tasks are in
    /// no runtime's list, and a runtime no thread is inside is named by no thread.
    anchors: RefCell<Vec<Anchor>>,
}

impl<'a> DecodeContext<'a> {
    pub fn new(target: &'a Target<'a>) -> DecodeContext<'a> {
        DecodeContext {
            target,
            tasks: None,
            live: LiveProcess::default(),
            anchors: RefCell::default(),
        }
    }

    pub fn note(&self, anchor: Anchor) {
        let mut anchors = self.anchors.borrow_mut();
        if !anchors.contains(&anchor) {
            anchors.push(anchor);
        }
    }

    /// What was noted since the last call.
    pub fn take_anchors(&self) -> Vec<Anchor> {
        std::mem::take(&mut *self.anchors.borrow_mut())
    }
}
