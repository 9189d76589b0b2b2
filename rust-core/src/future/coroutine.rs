//! Coroutine envs (async fn, async block, async closure): the state from the `__state`
//! discriminant, the await location from the active variant's `decl_line`, the awaited
//! future from `__awaitee`, the saved locals, and `select!`/`join!` branches, which rustc
//! keeps as sibling locals of a `PollFn` awaitee.

use serde_json::json;

use super::plans::Plans;
use super::{holdings, locals, Child, Decoded};
use crate::error::{Error, Result};
use crate::memory::MemoryExt;
use crate::model::{Branch, BranchStatus, CoroutineState, FutureNode, Location, NodeKind};
use crate::names;
use crate::stack::ResolvedFrame;
use crate::value::{offset, Value};

/// rustc's coroutine discriminants: 0 Unresumed, 1 Returned, 2 Panicked, 3 + k SuspendK.
pub(super) const UNRESUMED_STATE: u64 = 0;
pub(super) const FIRST_SUSPEND_STATE: u64 = 3;
pub(super) const AWAITEE_FIELD: &str = "__awaitee";
/// `tokio::select!` / `tokio::join!` keep their branch futures in a local tuple `futures`;
/// `select!` also keeps a bit mask `disabled`.
const BRANCHES_LOCAL: &str = "futures";
const SELECT_DISABLED_LOCAL: &str = "disabled";

/// The active variant of a coroutine env: its discriminant and its fields.
pub struct ActiveVariant<'a> {
    pub raw_state: u64,
    pub fields: Value<'a>,
    /// Its index in the env type's variant part.
    pub index: usize,
}

pub fn active_variant<'a>(value: &Value<'a>) -> Result<ActiveVariant<'a>> {
    let info = &value.ty;
    let address = value.address;
    let part = info
        .variant_part
        .as_ref()
        .ok_or_else(|| Error::layout(format!("coroutine {} has no variant part", info.name)))?;
    let discriminant = part
        .discriminant
        .as_ref()
        .ok_or_else(|| Error::layout(format!("coroutine {} has no discriminant", info.name)))?;
    let target = value.target;
    let size = match discriminant.ty {
        Some(ty) => target.debug.type_info(ty)?.size.unwrap_or(1),
        None => 1,
    };
    let raw_state = target
        .memory
        .read_uint(offset(address, discriminant.offset)?, size)
        .map_err(|error| error.context(format!("state of {} at {address:#x}", info.name)))?;
    let (index, variant) = part.variants.iter().enumerate().find(|(_, variant)| variant.discr_value == Some(raw_state)).ok_or_else(|| {
        Error::layout(format!(
            "{} at {address:#x} has state {raw_state}, which no variant has (corrupt or freed memory?)",
            info.name
        ))
    })?;
    let variant_ty = variant
        .member
        .ty
        .ok_or_else(|| Error::layout("coroutine variant without a type"))?;
    Ok(ActiveVariant {
        raw_state,
        fields: target.value(variant_ty, offset(address, variant.member.offset)?)?,
        index,
    })
}

/// A coroutine env's state, without decoding anything else.
pub fn coroutine_state(value: &Value<'_>) -> Result<CoroutineState> {
    active_variant(value).map(|active| state_of(active.raw_state).0)
}

fn state_of(raw: u64) -> (CoroutineState, Option<u64>) {
    match raw {
        0 => (CoroutineState::Unresumed, None),
        1 => (CoroutineState::Returned, None),
        2 => (CoroutineState::Panicked, None),
        n => (CoroutineState::Suspended, Some(n - FIRST_SUSPEND_STATE)),
    }
}

/// Decodes one coroutine level: fills state, location (and with `with_locals`, the saved
/// locals) of `node`, and returns what it awaits (`None` when it awaits nothing).
pub fn step(
    plans: &Plans,
    value: &Value<'_>,
    node: &mut FutureNode,
    with_locals: bool,
) -> Result<Option<Decoded>> {
    let active = active_variant(value)?;
    let (state, await_point) = state_of(active.raw_state);
    node.state = Some(state);
    node.await_point = await_point;
    let awaitee = match state {
        CoroutineState::Suspended => active.fields.field(AWAITEE_FIELD).ok(),
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
    node.macro_location = plan.macro_location.clone().map(Box::new);
    if state != CoroutineState::Suspended {
        return Ok(None);
    }
    if with_locals {
        node.locals = locals::saved_locals(&active.fields, AWAITEE_FIELD);
    }
    node.holds = holdings::of_saved_locals(
        &plans.holding_types,
        value,
        &active.fields,
        &[AWAITEE_FIELD, BRANCHES_LOCAL, SELECT_DISABLED_LOCAL],
    );
    let Some(awaitee) = awaitee else {
        return Ok(None);
    };
    if crate::tokio::compat::MACRO_POLL_FNS
        .iter()
        .any(|prefix| awaitee.ty.name.starts_with(prefix))
    {
        let macro_call = MacroCall {
            plans,
            env: value,
            raw_state: active.raw_state,
            line: node.macro_location.as_ref().and(node.location.as_ref()),
        };
        let tree = match macro_branches(&macro_call, &active.fields, &awaitee)? {
            Some(tree) => Some(tree),
            None => futures_macro_branches(&macro_call, &active.fields, &awaitee)?,
        };
        if let Some(tree) = tree {
            return Ok(Some(Decoded {
                kind: NodeKind::Future,
                detail: None,
                summary: None,
                children: vec![tree],
            }));
        }
    }
    Ok(Some(Decoded {
        kind: NodeKind::Future,
        detail: None,
        summary: None,
        children: vec![Child::of(&awaitee)],
    }))
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
        let types: Vec<std::sync::Arc<crate::dwarf::TypeInfo>> = children
            .iter()
            .map(|child| debug.type_info(child.ty))
            .collect::<Result<_>>()
            .unwrap_or_default();
        if types.len() != children.len() {
            return;
        }
        let types: Vec<&crate::dwarf::TypeInfo> = types.iter().map(|info| &**info).collect();
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
    let Ok(branches) = fields.field(BRANCHES_LOCAL) else {
        return Ok(None);
    };
    if !branches.ty.name.starts_with('(') {
        return Ok(None);
    }
    let disabled = match fields.field(SELECT_DISABLED_LOCAL) {
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
        (NodeKind::Select, "select!")
    } else {
        (NodeKind::Join, "join!")
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
        let Ok(future) = fields.field(&format!("_fut{index}")) else {
            break;
        };
        children.push(maybe_done_branch(&future, index)?);
    }
    let mut named = false;
    let kind = if !children.is_empty() {
        NodeKind::Join
    } else {
        let Ok(closure) = awaitee.field("f") else {
            return Ok(None);
        };
        for field in &closure.ty.fields {
            let Some(name) = field.name.strip_prefix("_ref__") else {
                continue;
            };
            let reference = closure.field(&field.name)?;
            let pointee = reference.pointee()?;
            if pointee.ty.tag == crate::dwarf::TypeTag::Base {
                continue;
            }
            let index = children.len();
            named = true;
            children.push(Child {
                branch: Some(Branch {
                    name: Some(name.to_string()),
                    ..Branch::new(index, BranchStatus::Pending)
                }),
                ..Child::of(&pointee)
            });
        }
        if children.is_empty() {
            return Ok(None);
        }
        NodeKind::Select
    };
    let word = if kind == NodeKind::Join {
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

/// The node shown for a macro's `PollFn`: a select or join over `children`.
fn macro_tree(kind: NodeKind, word: &str, children: Vec<Child>, poll_fn: &Value<'_>) -> Child {
    let decoded = Decoded::tree(kind, word, children, json!({}));
    Child {
        prepared: Some(Box::new(decoded)),
        ..Child::of(poll_fn)
    }
}

/// A `join!` branch: `MaybeDone::Future(f)` is pending, `Done` finished, `Gone` taken.
pub fn maybe_done_branch(value: &Value<'_>, index: usize) -> Result<Child> {
    let (variant, payload) = value.variant()?;
    let status = match variant.as_str() {
        "Future" => BranchStatus::Pending,
        "Done" => BranchStatus::Done,
        _ => BranchStatus::Gone,
    };
    if status != BranchStatus::Pending {
        // Show the future's type, not the MaybeDone holding its output.
        let ty = value
            .ty
            .template_params
            .first()
            .map(|(_, ty)| *ty)
            .or_else(|| {
                generic_argument(&value.ty.name)
                    .and_then(|name| value.target.debug.type_by_name(name, Some(value.ty.die)))
            })
            .unwrap_or(value.ty.die);
        return Ok(Child {
            branch: Some(Branch::new(index, status)),
            describe_only: true,
            ..Child::at(ty, value.address)
        });
    }
    let inner = payload.first_path(&[&["future"], &["__0"]])?;
    Ok(Child {
        branch: Some(Branch::new(index, status)),
        describe_only: status != BranchStatus::Pending,
        ..Child::of(&inner)
    })
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
            let resume = names::resume_function_name(&node.type_name);
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
    node.running = true;
    node.state = None;
    node.await_point = None;
    node.children.clear();
    node.locals.clear();
    // The file as DWARF names it for this coroutine (debuggers spell paths differently);
    // the line is where the thread is.
    node.location = match (node.location.take(), &frame.input.file, frame.input.line) {
        (Some(own), _, Some(line)) => Some(Location { line, ..own }),
        (None, Some(file), Some(line)) => Some(Location {
            file: names::short_path(file).into(),
            line,
            path: file.as_str().into(),
        }),
        _ => None,
    };
}

/// `a::B<c::D<e>>` -> `c::D<e>`.
fn generic_argument(type_name: &str) -> Option<&str> {
    let open = type_name.find('<')?;
    type_name[open + 1..].strip_suffix('>')
}
