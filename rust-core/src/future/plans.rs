//! What every instance of a future type shares, worked out once per command: a type's node
//! kind, function name and decoder, and per suspend state the await line (the user's line for an
//! await inside a macro) and where each macro branch is written. Ten thousand tasks of a
//! few shapes then cost memory reads, not DWARF lookups and name parsing per task.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::await_lines;
use super::decoders::DecodeFn;
use super::registry;
use crate::dwarf::{DebugInfo, DieRef, SourceLocation, TypeInfo};
use crate::model::{Location, NodeKind, NodeNames};
use crate::names::{self, CoroutineKind};

/// A future type's kind, its decoder and, for a coroutine, the function it belongs to.
pub struct NodeHead {
    pub kind: NodeKind,
    pub names: Arc<NodeNames>,
    /// From the registry's table, whose patterns are matched once per type, not per node.
    pub decoder: Option<DecodeFn>,
}

/// Where a coroutine is suspended in one state: `location` is the user's line, and
/// `macro_location` the macro's own line when the await is written inside a macro.
#[derive(Clone)]
pub struct AwaitPlan {
    /// Shared by every node suspended here: a million nodes point at a few hundred.
    pub location: Option<Arc<Location>>,
    pub macro_location: Option<Arc<Location>>,
}

/// Branch lines by (env type, state, branch types).
type BranchLines = FxHashMap<(DieRef, u64, Vec<DieRef>), Rc<Vec<Option<Arc<Location>>>>>;

#[derive(Default)]
pub struct Plans {
    /// Which types can contain a guard, a permit or a sender.
    pub holding_types: super::holdings::HoldingTypes,
    heads: RefCell<FxHashMap<DieRef, Rc<NodeHead>>>,
    awaits: RefCell<FxHashMap<(DieRef, u64), Rc<AwaitPlan>>>,
    branches: RefCell<BranchLines>,
}

impl Plans {
    pub fn head(&self, debug: &DebugInfo, info: &TypeInfo) -> Rc<NodeHead> {
        if let Some(head) = self.heads.borrow().get(&info.die) {
            return head.clone();
        }
        let kind = match names::coroutine_kind(&info.name) {
            Some(CoroutineKind::AsyncFn) => NodeKind::AsyncFn,
            Some(CoroutineKind::AsyncBlock) => NodeKind::AsyncBlock,
            Some(CoroutineKind::AsyncClosure) => NodeKind::AsyncClosure,
            None => NodeKind::Future,
        };
        let function = kind
            .is_coroutine()
            .then(|| coroutine_function(debug, info))
            .flatten();
        let head = Rc::new(NodeHead {
            kind,
            names: Arc::new(NodeNames::new(info.name.as_str(), function.map(Into::into))),
            decoder: registry::decoder_for(info),
        });
        self.heads.borrow_mut().insert(info.die, head.clone());
        head
    }

    /// The await location of coroutine `env` in state `raw_state`, whose variant is
    /// declared at `suspend` and awaits a future of type `awaitee`.
    pub fn await_at(
        &self,
        debug: &DebugInfo,
        env: &TypeInfo,
        raw_state: u64,
        suspend: Option<&SourceLocation>,
        awaitee: Option<&TypeInfo>,
    ) -> Rc<AwaitPlan> {
        let key = (env.die, raw_state);
        if let Some(plan) = self.awaits.borrow().get(&key) {
            return plan.clone();
        }
        let suspend = suspend.map(await_lines::location_of);
        let mut plan = AwaitPlan {
            location: suspend.clone().map(Arc::new),
            macro_location: None,
        };
        if let (Some(suspend), Some(awaitee)) = (&suspend, awaitee) {
            if await_lines::is_macro_await(env, suspend) {
                if let Some(user_line) = await_lines::user_await_location(debug, env, awaitee) {
                    plan.location = Some(Arc::new(user_line));
                    plan.macro_location = Some(Arc::new(suspend.clone()));
                }
            }
        }
        let plan = Rc::new(plan);
        self.awaits.borrow_mut().insert(key, plan.clone());
        plan
    }

    /// Where each branch of the macro awaited by `env` in `raw_state` is written
    /// (`await_lines::branch_locations`), for branches of types `branches`.
    pub fn branch_lines(
        &self,
        debug: &DebugInfo,
        env: &TypeInfo,
        raw_state: u64,
        macro_line: Option<&Location>,
        branches: &[&TypeInfo],
    ) -> Rc<Vec<Option<Arc<Location>>>> {
        let key = (
            env.die,
            raw_state,
            branches.iter().map(|branch| branch.die).collect::<Vec<_>>(),
        );
        if let Some(lines) = self.branches.borrow().get(&key) {
            return lines.clone();
        }
        let lines: Rc<Vec<_>> = Rc::new(
            await_lines::branch_locations(debug, env, macro_line, branches)
                .into_iter()
                .map(|line| line.map(Arc::new))
                .collect(),
        );
        self.branches.borrow_mut().insert(key, lines.clone());
        lines
    }
}

/// The readable function path of a coroutine env type, e.g.
/// `tokio::sync::mutex::{impl#10}::lock::{async_fn_env#0}<u32>` -> `tokio::sync::mutex::Mutex<T>::lock`.
pub fn coroutine_function(debug: &DebugInfo, env: &TypeInfo) -> Option<String> {
    names::coroutine_kind(&env.name)?;
    let dwarf_path: Vec<String> = names::split_path(&names::resume_function_name(&env.name))
        .iter()
        .map(|s| s.to_string())
        .collect();
    // The resume function is compiled where its env type is (generic ones, in the crate
    // that instantiates them).
    // Only an `{impl#N}` segment needs the linkage name (see `replace_impl_segments`).
    let has_impl = dwarf_path
        .iter()
        .any(|segment| segment.starts_with("{impl#"));
    let readable = match has_impl
        .then(|| debug.coroutine_linkage_name(&dwarf_path.join("::"), Some(env.die)))
        .flatten()
    {
        Some(linkage) => names::replace_impl_segments(&dwarf_path, linkage),
        None => dwarf_path,
    };
    let kept: Vec<&str> = readable
        .iter()
        .map(String::as_str)
        .filter(|segment| {
            !segment.starts_with("{async_fn#") && !segment.starts_with("{async_closure#")
        })
        .collect();
    Some(kept.join("::"))
}
