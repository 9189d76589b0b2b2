//! Decoding a future's state from memory into a tree of nodes. Coroutine envs (async fn,
//! block, closure) are decoded through their DWARF variant part, following `__awaitee`;
//! every other future type goes through the decoder table in `registry.rs`; anything
//! unknown is searched for the futures inside (`descent.rs`), and ends the chain as a plain
//! `future` with its type name when it holds none.
//!
//! Inside, each module uses only those listed before it: `env` (a coroutine's layout),
//! `outcome` (what decoders are given and give), `locals`, `decoders`, `registry`,
//! `type_graph` (which types can reach what a search wants), `holdings`, `await_lines`,
//! `plans`, `coroutine`, `descent`, then this one, which walks the tree.

mod await_lines;
pub(crate) mod coroutine;
pub mod decoders;
mod descent;
pub mod env;
mod holdings;
pub(crate) mod locals;
pub mod outcome;
mod plans;
mod recent;
mod registry;
mod type_graph;

use std::cell::RefCell;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::dwarf::{DebugInfo, DieRef, TypeInfo};
use crate::error::{Error, ErrorKind};
use crate::model::{Detail, FutureNode, NodeKind, WrapperState};
use crate::tokio::anchors::{Anchor, AnchorTypes};
use crate::tokio::tasks::TaskReader;
use crate::value::Target;

pub use coroutine::mark_running;
pub use descent::polled_types;
pub use env::coroutine_state;
pub use outcome::{Child, DecodeContext, Decoded, LiveProcess, Outcome, MAX_CHILDREN};
pub use plans::coroutine_function;
use plans::NodeHead;

/// The longest await chain followed before giving up (a corrupt or cyclic chain).
pub const MAX_AWAIT_DEPTH: usize = 128;

/// The task whose future a decode reads, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRef {
    pub id: u64,
    /// Its header.
    pub address: u64,
}

/// One decode's walk down a tree: what it has decoded (a future reached again is shown
/// once), the futures above the one being decoded (a future among them is a cycle), and
/// the path that led to it (the task, each frame above with its await point).
#[derive(Default)]
struct Walk {
    seen: FxHashSet<(u64, DieRef)>,
    ancestors: Vec<(u64, DieRef)>,
    task: Option<TaskRef>,
    trail: Vec<(Arc<str>, Option<u32>)>,
}

/// Why a future is not decoded where it is reached.
enum Refusal {
    /// Said as the node's error.
    Error(String),
    /// The budget ran out and says nothing more.
    Quiet,
    /// Decoded already where another path reached it (a `Shared` future, one `Arc`'d
    /// future two parents poll): not an error, and not shown twice.
    Shared,
}

/// The state a library future is shown in when its fields could hold a future but hold none.
const EMPTY_STATE: &str = "empty";

pub struct FutureDecoder<'a> {
    context: DecodeContext<'a>,
    type_facts: RefCell<descent::TypeFacts>,
    polled_types: Arc<FxHashSet<String>>,
    plans: plans::Plans,
    /// Which types can keep a LocalSet or a runtime handle (`tokio::anchors`).
    anchor_types: AnchorTypes,
    /// Read the locals each suspended coroutine saves (`async backtrace full`).
    with_locals: bool,
    /// The tokio version the program was built with, for errors about unknown layouts.
    tokio_version: Option<String>,
    /// The last decode's walk, emptied, for the next: a million tasks' walks would each
    /// grow a set and a trail of their own.
    spare_walk: RefCell<Walk>,
    /// The details, summaries and extras made last, for the next node with the same to
    /// share.
    recent: RefCell<recent::RecentFacts>,
}

/// Works out ahead of any command what every first command needs of a binary besides the
/// units a load indexes (on the loading thread, behind the debugger's own work).
pub fn prepare(debug: &DebugInfo) {
    descent::polled_types(debug);
    debug.prepare();
}

impl<'a> FutureDecoder<'a> {
    pub fn new(target: &'a Target<'a>) -> Self {
        FutureDecoder {
            context: DecodeContext::new(target),
            type_facts: Default::default(),
            polled_types: descent::polled_types(target.debug),
            plans: Default::default(),
            anchor_types: Default::default(),
            with_locals: false,
            tokio_version: crate::tokio::version(target.debug),
            spare_walk: Default::default(),
            recent: Default::default(),
        }
    }

    pub fn with_locals(mut self, with_locals: bool) -> Self {
        self.with_locals = with_locals;
        self
    }

    /// Lets `JoinHandle` nodes name the task they wait for.
    pub fn with_tasks(mut self, tasks: &'a TaskReader<'a>) -> Self {
        self.context.tasks = Some(tasks);
        self
    }

    pub fn with_live_process(mut self, live: LiveProcess) -> Self {
        self.context.live = live;
        self
    }

    pub fn target(&self) -> &'a Target<'a> {
        self.context.target
    }

    pub fn tasks(&self) -> Option<&'a TaskReader<'a>> {
        self.context.tasks
    }

    pub fn live(&self) -> LiveProcess {
        self.context.live
    }

    /// What the decodes since the last call met that leads to task lists.
    pub fn take_anchors(&self) -> Vec<Anchor> {
        self.context.take_anchors()
    }

    /// The await tree rooted at the future of type `ty` at `address`.
    pub fn decode(&self, ty: DieRef, address: u64) -> FutureNode {
        self.decode_walking(ty, address, None)
    }

    /// The await tree of `task`'s future: errors name the task.
    pub fn decode_task(&self, ty: DieRef, address: u64, task: TaskRef) -> FutureNode {
        self.decode_walking(ty, address, Some(task))
    }

    /// Decodes with the spare walk (a decode within a decode takes a new one).
    fn decode_walking(&self, ty: DieRef, address: u64, task: Option<TaskRef>) -> FutureNode {
        let mut walk = self.spare_walk.take();
        walk.seen.clear();
        walk.ancestors.clear();
        walk.trail.clear();
        walk.task = task;
        let mut node = self.decode_at(ty, address, 0, &mut walk);
        self.spare_walk.replace(walk);
        self.share_extras(&mut node);
        node
    }

    /// A node for a future whose memory is not to be read (a finished task).
    pub fn describe_type(&self, ty: DieRef, address: u64) -> FutureNode {
        match self.target().debug.type_info(ty) {
            Ok(info) => self.bare_node(&info, address),
            Err(error) => error_node("<unknown>", address, error),
        }
    }

    fn bare_node(&self, info: &TypeInfo, address: u64) -> FutureNode {
        node_of(&self.plans.head(self.target().debug, info), address)
    }

    fn decode_at(&self, ty: DieRef, address: u64, depth: usize, walk: &mut Walk) -> FutureNode {
        let info = match self.target().debug.type_info(ty) {
            Ok(info) => info,
            Err(error) => return error_node("<unknown>", address, error),
        };
        let head = self.plans.head(self.target().debug, &info);
        let mut node = node_of(&head, address);
        match self.refusal(&info, ty, address, depth, walk) {
            Some(Refusal::Error(error)) => node.set_error(error),
            Some(Refusal::Shared) => node.set_shared(true),
            Some(Refusal::Quiet) => {}
            None => {
                walk.ancestors.push((address, ty));
                node = self.decode_fresh(node, &head, info, depth, walk);
                walk.ancestors.pop();
            }
        }
        node
    }

    /// `node`, the future of type `info` first reached here, decoded (or what it sees
    /// through to).
    fn decode_fresh(
        &self,
        mut node: FutureNode,
        head: &NodeHead,
        info: Arc<TypeInfo>,
        depth: usize,
        walk: &mut Walk,
    ) -> FutureNode {
        let address = node.address;
        let value = self.target().value_of_type(info.clone(), address);
        if let Some(decode) = head.decoder {
            let searches_before = self.target().field_searches.get();
            let outcome = decode(&self.context, &value);
            node.set_field_search(self.target().field_searches.get() > searches_before);
            match outcome {
                Ok(Outcome::SeeThrough(child)) => return self.child_node(child, depth, walk),
                Ok(Outcome::Node(decoded)) => {
                    self.apply(&mut node, decoded, depth, walk);
                    return node;
                }
                Ok(Outcome::Default) => {}
                Err(error) => {
                    let error = self.with_path(walk, &node, self.explain(error));
                    node.set_error(error);
                    return node;
                }
            }
        }
        if node.kind.is_coroutine() {
            self.step_coroutine(&mut node, &value, depth, walk);
        } else {
            self.decode_unknown(&mut node, &value, depth, walk);
        }
        node
    }

    /// Why a future is not decoded here: the budget ran out (said only when it says why),
    /// the chain is too deep, it leads back to itself, or it was decoded where another
    /// path reached it; `None` to decode it.
    fn refusal(
        &self,
        info: &TypeInfo,
        ty: DieRef,
        address: u64,
        depth: usize,
        walk: &mut Walk,
    ) -> Option<Refusal> {
        if let Some(budget) = self.target().budget {
            if !budget.spend_node() {
                return Some(match budget.stopped() {
                    Some(stop) => Refusal::Error(format!("not decoded: {}", stop.message())),
                    None => Refusal::Quiet,
                });
            }
        }
        if depth >= MAX_AWAIT_DEPTH {
            return Some(Refusal::Error(format!(
                "await chain deeper than {MAX_AWAIT_DEPTH}; stopped"
            )));
        }
        // A future of no size holds nothing, so cannot lead back to itself; many of them
        // (the members of a set) share one address.
        if info.size != Some(0) && !walk.seen.insert((address, ty)) {
            if walk.ancestors.contains(&(address, ty)) {
                return Some(Refusal::Error(format!(
                    "cycle: this future awaits itself, at {address:#x}"
                )));
            }
            return Some(Refusal::Shared);
        }
        None
    }

    /// A coroutine: the await it is suspended at and what that awaits. Its active variant
    /// is read once: for the anchors its locals keep, and to step.
    fn step_coroutine(
        &self,
        node: &mut FutureNode,
        value: &crate::value::Value<'a>,
        depth: usize,
        walk: &mut Walk,
    ) {
        let stepped = match env::active_variant(value) {
            Ok(active) => {
                self.note_anchors_kept(&active.fields);
                coroutine::step(&self.plans, value, active, node, self.with_locals)
            }
            Err(error) => {
                self.note_anchors_in(value);
                Err(error)
            }
        };
        match stepped {
            Ok(Some(decoded)) => self.apply(node, decoded, depth, walk),
            Ok(None) => {}
            Err(error) => {
                let error = self.with_path(walk, node, error.message());
                node.set_error(error);
            }
        }
    }

    /// A type no decoder knows: the futures its fields keep (it polls them from its own
    /// `poll`), and what it holds; or that it holds no future now.
    fn decode_unknown(
        &self,
        node: &mut FutureNode,
        value: &crate::value::Value<'a>,
        depth: usize,
        walk: &mut Walk,
    ) {
        let holds = holdings::of_fields(&self.plans.holding_types, value);
        if !holds.is_empty() {
            node.set_holds(holds);
        }
        self.note_anchors_in(value);
        let searched = self.inner_futures(value);
        let children = searched.found.into_iter().map(|found| Child {
            via: Some(found.via),
            held: true,
            ..Child::of(&found.value)
        });
        for child in children.take(MAX_CHILDREN) {
            node.children.push(self.child_node(child, depth, walk));
        }
        if let Some(error) = searched.incomplete {
            let error = self.with_path(walk, node, error.message());
            node.set_error(error);
        } else if node.children.is_empty()
            && value
                .ty
                .fields
                .iter()
                .filter_map(|field| field.ty)
                .any(|ty| self.can_hold_future(ty))
        {
            // Its fields have room for a future (an `Option`, a fused slot, a collection) but
            // hold none now: it has finished, or not begun, that part of its work.
            node.set_detail(Detail::Future(WrapperState {
                state: EMPTY_STATE.to_string(),
            }));
            node.summary = Some(
                format!(
                    "{} (holds no future now: finished or not begun)",
                    node.type_name()
                )
                .into(),
            );
        }
    }

    /// Notes the LocalSets and runtime handles a future keeps: a coroutine's in the locals
    /// of its active variant, another's in its fields. What it awaits (and a macro's branch
    /// futures) is decoded as its children, which note their own.
    fn note_anchors_in(&self, value: &crate::value::Value<'_>) {
        match value.ty.variant_part.is_some() {
            true => {
                if let Ok(active) = env::active_variant(value) {
                    self.note_anchors_kept(&active.fields);
                }
            }
            false => self.note_anchors_kept(value),
        }
    }

    /// `note_anchors_in` the value that keeps them: a struct, or a coroutine's active
    /// variant.
    fn note_anchors_kept(&self, kept: &crate::value::Value<'_>) {
        let debug = self.target().debug;
        if !self.anchor_types.reach(debug, kept.ty.die) {
            return;
        }
        let children = [
            crate::layouts::rust::coroutine::AWAITEE,
            crate::layouts::rust::macros::TOKIO_BRANCHES,
        ];
        for field in kept.ty.fields.iter() {
            if children.contains(&field.name.as_str())
                || !field
                    .ty
                    .is_some_and(|ty| self.anchor_types.reach(debug, ty))
            {
                continue;
            }
            let Ok(field) = kept.field(&field.name) else {
                continue;
            };
            for anchor in self.anchor_types.find_in(&field) {
                self.context.note(anchor);
            }
        }
    }

    /// An error's message with the path that led to it: the task, each frame above with
    /// its await point, then the node itself (`task 12 (0x…) → app::transfer await #2 →
    /// tokio::sync::mutex::Mutex<T>::lock: cannot read 8 bytes at 0x10`).
    fn with_path(&self, walk: &Walk, node: &FutureNode, message: String) -> String {
        let mut path = String::new();
        if let Some(task) = walk.task {
            path.push_str(&format!("task {} ({:#x}) → ", task.id, task.address));
        }
        for (name, await_point) in &walk.trail {
            match await_point {
                Some(point) => path.push_str(&format!("{name} await #{point} → ")),
                None => path.push_str(&format!("{name} → ")),
            }
        }
        let name = node.function().unwrap_or(node.type_name());
        format!("{path}{name}: {message}")
    }

    /// A decoder's error; an unknown layout also names the tokio version found, since
    /// layouts differ between versions (`crate::layouts`).
    fn explain(&self, error: Error) -> String {
        match (&self.tokio_version, error.kind) {
            (Some(version), ErrorKind::Layout) => format!("{} (tokio {version})", error.message()),
            _ => error.message(),
        }
    }

    fn apply(&self, node: &mut FutureNode, decoded: Decoded, depth: usize, walk: &mut Walk) {
        let mut recent = self.recent.borrow_mut();
        // A coroutine stays a coroutine unless a decoder names what it really is.
        if let Some(detail) = decoded.detail {
            node.set_shared_detail(recent.detail(node.names_hash(), detail));
        }
        node.summary = decoded
            .summary
            .map(|summary| recent.summary(node.names_hash(), summary));
        drop(recent);
        let mut children = decoded.children;
        if let Some(location) = decoded.location {
            node.location = Some(Arc::new(location));
        }
        for root in decoded.searches {
            match self.search(&root) {
                Ok((found, incomplete)) => {
                    children.extend(found);
                    if let Some(error) = incomplete {
                        let error = self.with_path(walk, node, error.message());
                        node.set_error(error);
                    }
                }
                Err(error) => {
                    let error = self.with_path(walk, node, error.message());
                    node.set_error(error);
                }
            }
        }
        // Exactly as many as needed: most nodes have one child, and a node is 112 bytes.
        node.children
            .reserve_exact(children.len().min(MAX_CHILDREN));
        let name = node.shared_name();
        walk.trail.push((name, node.await_point()));
        for child in children.into_iter().take(MAX_CHILDREN) {
            node.children.push(self.child_node(child, depth, walk));
        }
        walk.trail.pop();
    }

    fn child_node(&self, child: Child, depth: usize, walk: &mut Walk) -> FutureNode {
        let mut node = if let Some(decoded) = child.prepared {
            let mut node = self.describe_type(child.ty, child.address);
            self.apply(&mut node, *decoded, depth + 1, walk);
            node
        } else if child.describe_only {
            self.describe_type(child.ty, child.address)
        } else {
            self.decode_at(child.ty, child.address, depth + 1, walk)
        };
        if child.boxed {
            node.set_boxed(true);
        }
        if let Some(via) = child.via {
            node.set_via(via);
        }
        if child.held {
            node.set_held(true);
        }
        if let Some(branch) = child.branch {
            node.set_branch(branch);
        }
        self.share_extras(&mut node);
        node
    }

    /// Puts an equal list a recent node has in place of `node`'s extras.
    fn share_extras(&self, node: &mut FutureNode) {
        let names_hash = node.names_hash();
        node.share_extras(|extras| self.recent.borrow_mut().extras(names_hash, extras));
    }
}

/// A node with its type's kind and function, not decoded yet.
fn node_of(head: &NodeHead, address: u64) -> FutureNode {
    FutureNode::named(head.kind, head.names.clone(), address)
}

pub fn error_node(type_name: &str, address: u64, error: Error) -> FutureNode {
    let mut node = FutureNode::new(NodeKind::Future, type_name, address);
    node.set_error(error.message());
    node
}
