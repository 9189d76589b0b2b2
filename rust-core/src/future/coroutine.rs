//! Coroutine envs (async fn, async block, async closure), one level at a time: the state
//! and await location of the active variant, the saved locals, what it keeps that others
//! wait for, and what it awaits: the `__awaitee`, or for `select!`/`join!` the branch
//! futures rustc keeps as sibling locals of a `PollFn` awaitee.

use std::sync::Arc;

use super::decoders::maybe_done_branch;
use super::env::{state_of, ActiveVariant};
use super::outcome::{Child, Decoded};
use super::plans::Plans;
use super::{holdings, locals};
use crate::dwarf::{TypeInfo, TypeTag};
use crate::error::Result;
use crate::layouts::rust::{coroutine, macros};
use crate::model::{Branch, BranchStatus, CoroutineState, FutureNode, Location, SetKind};
use crate::names;
use crate::stack::ResolvedFrame;
use crate::value::{offset, Value};

/// Decodes one coroutine level: fills state, location (and with `with_locals`, the saved
/// locals) of `node`, and returns what it awaits (`None` when it awaits nothing).
pub fn step<'a>(
    plans: &Plans,
    value: &Value<'a>,
    active: ActiveVariant<'a>,
    node: &mut FutureNode,
    with_locals: bool,
) -> Result<Option<Decoded>> {
    let (state, await_point) = state_of(active.raw_state);
    node.state = Some(state);
    node.set_await_point(await_point);
    let awaitee = match state {
        CoroutineState::Suspended => active.fields.field(coroutine::AWAITEE).ok(),
        _ => None,
    };
    let suspend = value
        .ty
        .variant_part
        .as_ref()
        .and_then(|part| part.variants[active.index].member.decl.as_ref());
    let plan = plans.await_at(
        value.target.debug,
        &value.ty,
        active.raw_state,
        suspend,
        awaitee.as_ref().map(|awaitee| &*awaitee.ty),
    );
    node.location = plan.location.clone();
    if let Some(at) = &plan.macro_location {
        node.set_macro_location(at.clone());
    }
    if state != CoroutineState::Suspended {
        return Ok(None);
    }
    let saved_locals = match with_locals {
        true => locals::saved_locals(&active.fields, coroutine::AWAITEE),
        false => Vec::new(),
    };
    let holds = holdings::of_saved_locals(
        &plans.holding_types,
        value,
        &active.fields,
        &[
            coroutine::AWAITEE,
            macros::TOKIO_BRANCHES,
            macros::TOKIO_SELECT_DISABLED,
        ],
    );
    if !saved_locals.is_empty() {
        node.set_locals(saved_locals);
    }
    if !holds.is_empty() {
        node.set_holds(holds);
    }
    let Some(awaitee) = awaitee else {
        return Ok(None);
    };
    if macros::POLL_FNS
        .iter()
        .any(|prefix| awaitee.ty.name.starts_with(prefix))
    {
        let macro_call = MacroCall {
            plans,
            env: value,
            raw_state: active.raw_state,
            line: node.macro_location().and(node.location.as_deref()),
        };
        let tree = match macro_branches(&macro_call, &active.fields, &awaitee)? {
            Some(tree) => Some(tree),
            None => futures_macro_branches(&macro_call, &active.fields, &awaitee)?,
        };
        if let Some(tree) = tree {
            return Ok(Some(Decoded::children_only(vec![tree])));
        }
    }
    Ok(Some(Decoded::children_only(vec![Child::of(&awaitee)])))
}

/// The coroutine a macro's await is in, and the user's line of the macro call.
struct MacroCall<'v, 'a> {
    plans: &'v Plans,
    env: &'v Value<'a>,
    raw_state: u64,
    line: Option<&'v Location>,
}

impl MacroCall<'_, '_> {
    /// Gives each branch the line its future is written at.
    fn locate(&self, children: &mut [Child]) {
        let debug = self.env.target.debug;
        let types: Vec<std::sync::Arc<TypeInfo>> = children
            .iter()
            .map(|child| debug.type_info(child.ty))
            .collect::<Result<_>>()
            .unwrap_or_default();
        if types.len() != children.len() {
            return;
        }
        let types: Vec<&TypeInfo> = types.iter().map(|info| &**info).collect();
        let lines = self
            .plans
            .branch_lines(debug, &self.env.ty, self.raw_state, self.line, &types);
        for (child, line) in children.iter_mut().zip(lines.iter()) {
            if let Some(branch) = child.branch.as_mut() {
                branch.location = line.clone();
            }
        }
    }
}

/// `tokio::select!` / `tokio::join!` (and `try_join!`): the awaited `PollFn` polls the
/// futures kept in the sibling local `futures`. The child shown for the `PollFn` is a
/// select or join node with one branch per future.
fn macro_branches<'a>(
    call: &MacroCall<'_, 'a>,
    fields: &Value<'a>,
    awaitee: &Value<'a>,
) -> Result<Option<Child>> {
    let Ok(branches) = fields.field(macros::TOKIO_BRANCHES) else {
        return Ok(None);
    };
    if !branches.ty.name.starts_with('(') {
        return Ok(None);
    }
    let disabled = match fields.field(macros::TOKIO_SELECT_DISABLED) {
        Ok(mask) => Some(mask.read_uint()?),
        Err(_) => None,
    };
    let mut children = Vec::new();
    for (index, element) in branches.ty.fields.iter().enumerate() {
        let Some(ty) = element.ty else { continue };
        let future = fields
            .target
            .value(ty, offset(branches.address, element.offset)?)?;
        children.push(match disabled {
            Some(mask) => {
                let status = if mask & (1 << index) != 0 {
                    BranchStatus::Disabled
                } else {
                    BranchStatus::Pending
                };
                // A disabled branch's future is still in place (finished or never polled).
                Child {
                    branch: Some(Branch::new(index, status)),
                    ..Child::of(&future)
                }
            }
            None => maybe_done_branch(&future, index)?,
        });
    }
    let (kind, word) = if disabled.is_some() {
        (SetKind::Select, "select!")
    } else {
        (SetKind::Join, "join!")
    };
    call.locate(&mut children);
    Ok(Some(macro_tree(kind, word, children, awaitee)))
}

/// `futures::join!` keeps its futures in sibling locals `_fut0`, `_fut1`, ... (each a
/// `MaybeDone`); `futures::select!` polls the user's own futures through references the
/// `PollFn` closure captures (`_ref__NAME`).
fn futures_macro_branches<'a>(
    call: &MacroCall<'_, 'a>,
    fields: &Value<'a>,
    awaitee: &Value<'a>,
) -> Result<Option<Child>> {
    let mut children = Vec::new();
    for index in 0.. {
        let Ok(future) = fields.field(&format!("{}{index}", macros::FUTURES_JOIN_PREFIX)) else {
            break;
        };
        children.push(maybe_done_branch(&future, index)?);
    }
    let mut named = false;
    let kind = if !children.is_empty() {
        SetKind::Join
    } else {
        let Ok(closure) = awaitee.field(macros::POLL_FN_CLOSURE) else {
            return Ok(None);
        };
        if !made_by_futures_select(&closure) {
            return Ok(None);
        }
        for field in &closure.ty.fields {
            let Some(name) = field.name.strip_prefix(macros::REFERENCE_CAPTURE_PREFIX) else {
                continue;
            };
            let pointee = closure.field(&field.name)?.pointee()?;
            if pointee.ty.tag == TypeTag::Base {
                continue;
            }
            let index = children.len();
            named = true;
            let branch = Branch {
                name: Some(name.to_string()),
                ..Branch::new(index, BranchStatus::Pending)
            };
            children.push(Child {
                branch: Some(branch),
                ..Child::of(&pointee)
            });
        }
        if children.is_empty() {
            return Ok(None);
        }
        SetKind::Select
    };
    let word = if kind == SetKind::Join {
        "join!"
    } else {
        "select!"
    };
    if !named {
        // `futures::select!` polls the user's own variables, named already.
        call.locate(&mut children);
    }
    Ok(Some(macro_tree(kind, word, children, awaitee)))
}

/// Whether a `PollFn`'s closure is the one `futures::select!` writes: it returns the
/// result enum the macro declares beside it (`Poll<scope::__PrivResult<..>>`). Any other
/// closure is a `poll_fn` of its own (`decoders::poll_fn`).
fn made_by_futures_select(closure: &Value<'_>) -> bool {
    let segments = names::split_path(&closure.ty.name);
    let Some((_, scope)) = segments.split_last() else {
        return false;
    };
    let result = format!("{}::{}<", scope.join("::"), macros::FUTURES_SELECT_RESULT);
    let debug = closure.target.debug;
    debug
        .function_returns(
            &names::resume_function_name(&closure.ty.name),
            closure.ty.die,
        )
        .and_then(|returned| debug.type_info(returned).ok())
        .is_some_and(|returned| returned.name.contains(&result))
}

/// The node shown for a macro's `PollFn`: a select or join over `children`.
fn macro_tree(kind: SetKind, word: &str, children: Vec<Child>, poll_fn: &Value<'_>) -> Child {
    let decoded = Decoded::set(kind, word, children, None);
    Child {
        prepared: Some(Box::new(decoded)),
        ..Child::of(poll_fn)
    }
}

/// Marks the deepest coroutine of a running chain that is on the thread's stack: it is
/// executing, not suspended, so its await point, awaitee and locals are stale.
pub fn mark_running(root: &mut FutureNode, frames: &[ResolvedFrame<'_>]) {
    let frame_paths: Vec<(String, &ResolvedFrame<'_>)> = frames
        .iter()
        .filter_map(|frame| frame.path_without_generics().map(|path| (path, frame)))
        .collect();
    let mut deepest: Option<(usize, &ResolvedFrame<'_>)> = None;
    let mut node = &*root;
    let mut depth = 0;
    loop {
        if node.kind.is_coroutine() {
            let resume = names::resume_function_name(node.type_name());
            if let Some((_, frame)) = frame_paths.iter().find(|(path, _)| *path == resume) {
                deepest = Some((depth, frame));
            }
        }
        match node.children.as_slice() {
            [child] => {
                node = child;
                depth += 1;
            }
            _ => break,
        }
    }
    let Some((target_depth, frame)) = deepest else {
        return;
    };
    let mut node = root;
    for _ in 0..target_depth {
        node = &mut node.children[0];
    }
    node.set_running(true);
    node.state = None;
    node.set_await_point(None);
    node.children.clear();
    if !node.locals().is_empty() {
        node.set_locals(Vec::new());
    }
    // The file as DWARF names it for this coroutine (debuggers spell paths differently);
    // the line is where the thread is.
    node.location = match (node.location.take(), &frame.input.file, frame.input.line) {
        (Some(own), _, Some(line)) => Some(Arc::new(own.at_line(line))),
        (None, Some(file), Some(line)) => Some(Arc::new(Location::new(
            names::short_path(file).into(),
            line,
            file.as_str().into(),
        ))),
        _ => None,
    };
}
