//! Decoding a future's state from memory into a tree of nodes. Coroutine envs (async fn,
//! block, closure) are decoded through their DWARF variant part, following `__awaitee`;
//! every other future type goes through the decoder table in `registry.rs`; anything
//! unknown ends the chain as a plain `future` with its type name.

mod await_lines;
pub(crate) mod coroutine;
mod decoders;
mod descent;
mod holdings;
pub(crate) mod locals;
mod plans;
mod registry;

use rustc_hash::FxHashSet;

use crate::dwarf::{DieRef, TypeInfo};
use crate::error::Error;
use crate::model::{Branch, FutureNode, NodeKind};
use crate::tokio::tasks::TaskReader;
use crate::value::{Target, Value};

pub use coroutine::{coroutine_state, mark_running};

/// The longest await chain followed before giving up (a corrupt or cyclic chain).
pub const MAX_AWAIT_DEPTH: usize = 128;
/// The most children one node (a set of futures) lists.
pub const MAX_CHILDREN: usize = 10_000;

/// What a decoder makes of a value.
pub enum Outcome {
    /// The value only wraps another future: show that one instead.
    SeeThrough(Child),
    /// A node of its own, possibly with children to decode.
    Node(Decoded),
}

pub struct Decoded {
    pub kind: NodeKind,
    pub detail: Option<serde_json::Value>,
    pub summary: Option<String>,
    pub children: Vec<Child>,
}

impl Decoded {
    pub fn leaf(kind: NodeKind, detail: serde_json::Value, summary: String) -> Decoded {
        Decoded {
            kind,
            detail: Some(detail),
            summary: Some(summary),
            children: Vec::new(),
        }
    }

    /// A tree of futures: `detail` gets `len` and `pending` (plus `extra`), the summary
    /// reads "`what` of N (M pending)".
    pub fn tree(
        kind: NodeKind,
        what: &str,
        children: Vec<Child>,
        extra: serde_json::Value,
    ) -> Decoded {
        let pending = children
            .iter()
            .filter(|child| {
                child
                    .branch
                    .as_ref()
                    .is_some_and(|branch| branch.status == crate::model::BranchStatus::Pending)
            })
            .count();
        let mut detail = serde_json::json!({"len": children.len(), "pending": pending});
        if let (Some(detail), Some(extra)) = (detail.as_object_mut(), extra.as_object()) {
            detail.extend(extra.clone());
        }
        Decoded {
            kind,
            detail: Some(detail),
            summary: Some(format!("{what} of {} ({pending} pending)", children.len())),
            children,
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
        }
    }

    pub fn of(value: &Value<'_>) -> Child {
        Child::at(value.ty.die, value.address)
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

pub struct FutureDecoder<'a> {
    target: &'a Target<'a>,
    tasks: Option<&'a TaskReader<'a>>,
    live: LiveProcess,
    /// `LocalSet`s met while decoding (type, address): their tasks are not in any
    /// runtime's list, so the caller walks them too.
    local_sets: std::cell::RefCell<Vec<(DieRef, u64)>>,
    type_facts: std::cell::RefCell<descent::TypeFacts>,
    plans: plans::Plans,
    /// Read the locals each suspended coroutine saves (`async backtrace full`).
    with_locals: bool,
    /// The frames above the node being decoded (name, await point), for error messages.
    trail: std::cell::RefCell<Vec<(std::sync::Arc<str>, Option<u64>)>>,
}

impl<'a> FutureDecoder<'a> {
    pub fn new(target: &'a Target<'a>) -> Self {
        FutureDecoder {
            target,
            tasks: None,
            live: LiveProcess::default(),
            local_sets: Default::default(),
            type_facts: Default::default(),
            plans: Default::default(),
            with_locals: false,
            trail: Default::default(),
        }
    }

    pub fn with_locals(mut self, with_locals: bool) -> Self {
        self.with_locals = with_locals;
        self
    }

    /// Lets `JoinHandle` nodes name the task they wait for.
    pub fn with_tasks(mut self, tasks: &'a TaskReader<'a>) -> Self {
        self.tasks = Some(tasks);
        self
    }

    pub fn with_live_process(mut self, live: LiveProcess) -> Self {
        self.live = live;
        self
    }

    pub fn target(&self) -> &'a Target<'a> {
        self.target
    }

    pub fn tasks(&self) -> Option<&'a TaskReader<'a>> {
        self.tasks
    }

    pub fn live(&self) -> LiveProcess {
        self.live
    }

    pub fn note_local_set(&self, ty: DieRef, address: u64) {
        let mut local_sets = self.local_sets.borrow_mut();
        if !local_sets.contains(&(ty, address)) {
            local_sets.push((ty, address));
        }
    }

    /// The `LocalSet`s met so far.
    pub fn local_sets(&self) -> Vec<(DieRef, u64)> {
        self.local_sets.borrow().clone()
    }

    /// The await tree rooted at the future of type `ty` at `address`.
    pub fn decode(&self, ty: DieRef, address: u64) -> FutureNode {
        let mut seen = FxHashSet::default();
        self.decode_at(ty, address, 0, &mut seen)
    }

    /// A node for a future whose memory is not to be read (a finished task).
    pub fn describe_type(&self, ty: DieRef, address: u64) -> FutureNode {
        match self.target.debug.type_info(ty) {
            Ok(info) => self.bare_node(&info, address),
            Err(error) => error_node("<unknown>", address, error),
        }
    }

    fn bare_node(&self, info: &TypeInfo, address: u64) -> FutureNode {
        let head = self.plans.head(self.target.debug, info);
        let mut node = FutureNode::new(head.kind, head.type_name.clone(), address);
        node.function = head.function.clone();
        node
    }

    fn decode_at(
        &self,
        ty: DieRef,
        address: u64,
        depth: usize,
        seen: &mut FxHashSet<(u64, DieRef)>,
    ) -> FutureNode {
        let info = match self.target.debug.type_info(ty) {
            Ok(info) => info,
            Err(error) => return error_node("<unknown>", address, error),
        };
        let mut node = self.bare_node(&info, address);
        if let Some(budget) = self.target.budget {
            if !budget.spend_node() {
                node.error = budget
                    .stopped()
                    .map(|stop| format!("not decoded: {}", stop.message));
                return node;
            }
        }
        if depth >= MAX_AWAIT_DEPTH {
            node.error = Some(format!(
                "await chain deeper than {MAX_AWAIT_DEPTH}; stopped"
            ));
            return node;
        }
        if !seen.insert((address, ty)) {
            node.error = Some(format!(
                "cycle: this future was already seen at {address:#x}"
            ));
            return node;
        }
        let value = self.target.value_of_type(info.clone(), address);
        if let Some(decode) = registry::decoder_for(&info) {
            match decode(self, &value) {
                Ok(Outcome::SeeThrough(child)) => return self.child_node(child, depth, seen),
                Ok(Outcome::Node(decoded)) => {
                    self.apply(&mut node, decoded, depth, seen);
                    return node;
                }
                Err(error) => {
                    node.error = Some(self.with_path(&node, self.explain(error)));
                    return node;
                }
            }
        }
        if node.kind.is_coroutine() {
            match coroutine::step(&self.plans, &value, &mut node, self.with_locals) {
                Ok(Some(decoded)) => self.apply(&mut node, decoded, depth, seen),
                Ok(None) => {}
                Err(error) => node.error = Some(self.with_path(&node, error.message)),
            }
            return node;
        }
        // No decoder knows it: look for the futures inside, and what it holds.
        node.holds = holdings::of_fields(&self.plans.holding_types, &value);
        match self.inner_futures(&value) {
            Ok(found) => {
                let children = found.into_iter().map(|found| Child {
                    via: Some(found.via),
                    ..Child::of(&found.value)
                });
                for child in children.take(MAX_CHILDREN) {
                    node.children.push(self.child_node(child, depth, seen));
                }
            }
            Err(error) => node.error = Some(self.with_path(&node, error.message)),
        }
        node
    }

    /// An error's message with the path that led to it: the task, each frame above with
    /// its await point, then the node itself (`task 12 (0x…) → app::transfer await #2 →
    /// tokio::sync::mutex::Mutex<T>::lock: cannot read 8 bytes at 0x10`).
    fn with_path(&self, node: &FutureNode, message: String) -> String {
        let mut path = String::new();
        if let Some((id, address)) = crate::budget::reading_task() {
            path.push_str(&format!("task {id} ({address:#x}) → "));
        }
        for (name, await_point) in self.trail.borrow().iter() {
            match await_point {
                Some(point) => path.push_str(&format!("{name} await #{point} → ")),
                None => path.push_str(&format!("{name} → ")),
            }
        }
        let name = node.function.as_deref().unwrap_or(&node.type_name);
        format!("{path}{name}: {message}")
    }

    /// A decoder's error; an unknown layout also names the tokio version found, since
    /// layouts differ between versions (`compat.rs`).
    fn explain(&self, error: Error) -> String {
        match (&self.target.debug.tokio_version, error.kind) {
            (Some(version), crate::error::ErrorKind::Layout) => {
                format!("{} (tokio {version})", error.message)
            }
            _ => error.message,
        }
    }

    fn apply(
        &self,
        node: &mut FutureNode,
        decoded: Decoded,
        depth: usize,
        seen: &mut FxHashSet<(u64, DieRef)>,
    ) {
        // A coroutine stays a coroutine unless a decoder names what it really is.
        if decoded.kind != NodeKind::Future {
            node.kind = decoded.kind;
        }
        node.detail = decoded
            .detail
            .and_then(|detail| serde_json::value::to_raw_value(&detail).ok());
        node.summary = decoded.summary;
        // Exactly as many as needed: most nodes have one child, and a node is 400 bytes.
        node.children
            .reserve_exact(decoded.children.len().min(MAX_CHILDREN));
        let name = node
            .function
            .clone()
            .unwrap_or_else(|| node.type_name.clone());
        self.trail.borrow_mut().push((name, node.await_point));
        for child in decoded.children.into_iter().take(MAX_CHILDREN) {
            node.children.push(self.child_node(child, depth, seen));
        }
        self.trail.borrow_mut().pop();
    }

    fn child_node(
        &self,
        child: Child,
        depth: usize,
        seen: &mut FxHashSet<(u64, DieRef)>,
    ) -> FutureNode {
        let mut node = if let Some(decoded) = child.prepared {
            let mut node = self.describe_type(child.ty, child.address);
            self.apply(&mut node, *decoded, depth + 1, seen);
            node
        } else if child.describe_only {
            self.describe_type(child.ty, child.address)
        } else {
            self.decode_at(child.ty, child.address, depth + 1, seen)
        };
        node.boxed |= child.boxed;
        if child.via.is_some() {
            node.via = child.via;
        }
        if child.branch.is_some() {
            node.branch = child.branch.map(Box::new);
        }
        node
    }
}

pub fn error_node(type_name: &str, address: u64, error: Error) -> FutureNode {
    let mut node = FutureNode::new(NodeKind::Future, type_name, address);
    node.error = Some(error.message);
    node
}
