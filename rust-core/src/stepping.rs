//! What following one task as it runs needs from a stop (`async next`, `step`, `finish`,
//! `until-polled`, `until-woken`): the coroutine the selected frame runs and its awaiters
//! outward, the async fns its line awaits, the coroutines task N is suspended in, and
//! where each can be stopped for that one instance: a breakpoint at each copy of its resume
//! function, on the condition that the register holding the coroutine's address there holds
//! this one's. The glue drives the debugger with these; nothing here resumes anything.

use crate::arch::{DWARF_REGISTER_NAMES, FIRST_TWO_ARGUMENTS};
use crate::dwarf::{AddressAtEntry, DebugInfo, FrameRegisters, TypeInfo};
use crate::error::{Error, ErrorKind, Result};
use crate::future::coroutine_function;
use crate::layouts::rust::{coroutine, PIN_POINTER_FIELDS, PIN_PREFIX};
use crate::memory::Memory;
use crate::model::{FutureNode, Report};
use crate::names;
pub use crate::tokio::tasks::WakeWatch;

/// How deep `step` looks inside an awaited future for the async fns it polls, and how many.
const MAX_AWAITEE_DEPTH: usize = 6;
const MAX_AWAITEES: usize = 16;
/// How many coroutines of one task `until-polled` stops at (the leaves of a `select!`).
const MAX_LEAVES: usize = 16;

/// One frame of the selected thread as the debugger unwound it (runtime addresses).
#[derive(Debug, Clone)]
pub struct FrameState {
    pub pc: u64,
    pub inlined: bool,
    pub file: Option<String>,
    pub line: Option<u64>,
    pub registers: FrameRegisters,
}

/// A breakpoint address and the registers, any of which holds the coroutine's address
/// there when it is the one resumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub address: u64,
    pub registers: Vec<&'static str>,
}

/// One coroutine instance the glue can stop at.
#[derive(Debug, Clone, Default)]
pub struct Coroutine {
    pub address: u64,
    pub type_name: String,
    pub function: String,
    /// The line it is at: its frame's (in a chain), or its await line (a suspended one).
    pub file: Option<String>,
    pub line: Option<u64>,
    /// Whether that line is in the program's own code (not a dependency's or std's).
    pub users_own: bool,
    /// Where it is written: its resume function's dispatch is on that line (the header).
    pub declared_file: Option<String>,
    pub declared_line: Option<u64>,
    pub stops: Vec<Stop>,
    /// Why `stops` is empty.
    pub unstoppable: Option<String>,
    /// Where its state discriminant is, to tell whether it returned.
    pub state_offset: Option<u64>,
    pub state_size: u64,
    /// The frame (index in the thread) that runs it, in a chain.
    pub frame: Option<usize>,
}

/// Whether a coroutine's state discriminant (its bytes, little-endian) says it returned.
pub fn has_returned(state: &[u8]) -> bool {
    let mut value = 0u64;
    for (shift, byte) in state.iter().take(8).enumerate() {
        value |= u64::from(*byte) << (8 * shift);
    }
    value == coroutine::RETURNED
}

/// What the selected frame runs.
#[derive(Debug, Clone, Default)]
pub struct StepPlan {
    /// The task the thread polls now; `None` in a `block_on` future.
    pub task: Option<u64>,
    /// The selected frame's coroutine, then the coroutines awaiting it, outward.
    pub chain: Vec<Coroutine>,
    /// The async fns the selected frame's line awaits, with their addresses.
    pub awaitees: Vec<Coroutine>,
    /// The type the line awaits, when it awaits one.
    pub awaited: Option<String>,
}

/// The coroutines the frames from `selected` outward run, innermost first, and what the
/// selected one's line awaits.
pub fn plan_for_frames(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    frames: &[FrameState],
    selected: usize,
) -> Result<StepPlan> {
    let mut plan = StepPlan::default();
    let mut physical_index = 0usize;
    let mut position_in_group = 0usize;
    for (index, frame) in frames.iter().enumerate() {
        if index > 0 {
            match frames[index - 1].inlined {
                true => position_in_group += 1,
                false => {
                    physical_index += 1;
                    position_in_group = 0;
                }
            }
        }
        if index < selected {
            continue;
        }
        let place = FramePlace {
            index,
            physical_index,
            position_in_group,
        };
        let Some(target) = coroutine_of_frame(debug, memory, load_bias, frame, place)? else {
            continue;
        };
        plan.chain.push(target);
    }
    // No coroutine: the glue says what that means for its command.
    let Some(current) = plan.chain.first() else {
        return Ok(plan);
    };
    if current.frame == Some(selected) {
        if let Some(line) = current.line {
            let env = debug.type_named(&current.type_name)?;
            if let Some(env) = env {
                let (awaited, awaitees) =
                    awaitees_at_line(debug, &env, current.address, line, load_bias)?;
                plan.awaited = awaited;
                plan.awaitees = awaitees;
            }
        }
    }
    Ok(plan)
}

/// Where a frame stands: its index among the frames, the physical frame it is part of, and
/// its place in that frame's group of inlined calls (0: the innermost).
#[derive(Clone, Copy)]
struct FramePlace {
    index: usize,
    physical_index: usize,
    position_in_group: usize,
}

/// The coroutine whose body frame `frame` runs, if it runs one, with where it stands.
fn coroutine_of_frame(
    debug: &DebugInfo,
    memory: &dyn Memory,
    load_bias: u64,
    frame: &FrameState,
    place: FramePlace,
) -> Result<Option<Coroutine>> {
    let Some(link_pc) = frame.pc.checked_sub(load_bias) else {
        return Ok(None);
    };
    // A caller's pc is its return address: the call is the instruction before.
    let lookup = if place.physical_index > 0 {
        link_pc.saturating_sub(1)
    } else {
        link_pc
    };
    let functions = debug.functions_at(lookup)?;
    let Some(function) = functions.iter().rev().nth(place.position_in_group) else {
        return Ok(None);
    };
    let path = names::strip_last_generics(&function.path);
    if !names::is_coroutine_body_path(&path) {
        return Ok(None);
    }
    let Some(subprogram) = functions.first().map(|outermost| outermost.code) else {
        return Ok(None);
    };
    let Some(env) = env_of_resume_function(debug, function.code)? else {
        return Ok(None);
    };
    let address = debug.first_parameter_value(
        function.code,
        subprogram,
        lookup,
        &frame.registers,
        memory,
        load_bias,
    )?;
    let mut target = coroutine_at(debug, &env, address.unwrap_or(0), load_bias);
    if address.is_none() {
        target.stops.clear();
        target.unstoppable = Some(format!(
            "the debug info does not say where {}'s address is in frame #{} of this build",
            target.function, place.index
        ));
    }
    target.users_own = frame.file.as_deref().is_some_and(names::is_users_own);
    target.file = frame.file.as_deref().map(|file| {
        // As the report spells the coroutine's own file, whichever debugger gave it.
        match &target.declared_file {
            Some(home) if file.ends_with(home.as_str()) => home.clone(),
            _ => names::short_path(file),
        }
    });
    target.line = frame.line;
    target.frame = Some(place.index);
    Ok(Some(target))
}

/// The coroutine type a resume function (copy) resumes: its first parameter is
/// `Pin<&mut Env>`.
fn env_of_resume_function(
    debug: &DebugInfo,
    function: crate::dwarf::DieRef,
) -> Result<Option<std::sync::Arc<TypeInfo>>> {
    let Some(parameter) = debug.first_parameter_type(function) else {
        return Ok(None);
    };
    let pin = debug.type_info(parameter)?;
    if !pin.name.starts_with(PIN_PREFIX) {
        return Ok(None);
    }
    let Some(pointer) = PIN_POINTER_FIELDS
        .iter()
        .find_map(|name| pin.field(name))
        .and_then(|field| field.ty)
    else {
        return Ok(None);
    };
    let pointer = debug.type_info(pointer)?;
    match pointer.target {
        Some(env) => debug.type_info(env).map(Some),
        None => Ok(None),
    }
}

/// The stops of one coroutine instance, and the facts about it the glue needs.
pub fn coroutine_at(debug: &DebugInfo, env: &TypeInfo, address: u64, load_bias: u64) -> Coroutine {
    let resume = names::resume_function_name(&env.name);
    let function = coroutine_function(debug, env).unwrap_or_else(|| resume.clone());
    let pinned = format!("{PIN_PREFIX}&mut {}>", env.name);
    let entries: Vec<_> = debug
        .resume_entries(&resume, env.die)
        .into_iter()
        .filter(|entry| {
            entry
                .first_parameter_type
                .and_then(|ty| debug.type_info(ty).ok())
                .is_some_and(|ty| ty.name == pinned)
        })
        .collect();
    let stops: Vec<Stop> = entries
        .iter()
        .filter_map(|entry| {
            let registers = match entry.address_at_entry? {
                AddressAtEntry::Register(number) => {
                    vec![*DWARF_REGISTER_NAMES.get(usize::from(number))?]
                }
                AddressAtEntry::FirstOrSecondArgument => FIRST_TWO_ARGUMENTS.to_vec(),
            };
            Some(Stop {
                address: entry.address.checked_add(load_bias)?,
                registers,
            })
        })
        .collect();
    let unstoppable = stops.is_empty().then(|| match entries.is_empty() {
        true => format!("{function} has no resume function of its own in this build"),
        false => format!(
            "{function}'s resume function is inlined into its callers in this build, and the \
             debug info does not say where the coroutine's address is at their start; \
             rebuild with less optimization (opt-level 1) to follow it"
        ),
    });
    let discriminant = env
        .variant_part
        .as_ref()
        .and_then(|part| part.discriminant.as_ref());
    let declared = env.variant_part.as_ref().and_then(|part| {
        part.variants
            .iter()
            .find(|variant| variant.discr_value == Some(coroutine::UNRESUMED))
            .and_then(|variant| variant.member.decl.as_ref())
    });
    Coroutine {
        address,
        type_name: env.name.clone(),
        function,
        declared_file: declared.map(|decl| names::short_path(&decl.file)),
        declared_line: declared.map(|decl| decl.line),
        stops,
        unstoppable,
        state_offset: discriminant.map(|field| field.offset),
        state_size: discriminant
            .and_then(|field| field.ty)
            .and_then(|ty| debug.type_info(ty).ok())
            .and_then(|ty| ty.size)
            .unwrap_or(1),
        ..Coroutine::default()
    }
}

/// The async fns the await on `line` of the coroutine at `address` polls: its awaited
/// future if that is one, else the ones held by value inside it (a `select!`'s branches,
/// a `timeout`'s future), at most `MAX_AWAITEES`; and the awaited type. A future behind a
/// pointer (a `Box<dyn Future>`) is not looked into.
pub fn awaitees_at_line(
    debug: &DebugInfo,
    env: &TypeInfo,
    address: u64,
    line: u64,
    load_bias: u64,
) -> Result<(Option<String>, Vec<Coroutine>)> {
    let Some(part) = env.variant_part.as_ref() else {
        return Ok((None, Vec::new()));
    };
    let mut awaited = None;
    let mut found = Vec::new();
    for variant in &part.variants {
        if variant
            .discr_value
            .is_none_or(|value| value < coroutine::FIRST_SUSPEND)
        {
            continue;
        }
        if variant.member.decl.as_ref().map(|decl| decl.line) != Some(line) {
            continue;
        }
        let Some(suspend) = variant.member.ty else {
            continue;
        };
        let suspend = debug.type_info(suspend)?;
        let Some(awaitee) = suspend.field(coroutine::AWAITEE) else {
            continue;
        };
        let Some(ty) = awaitee.ty else {
            continue;
        };
        let Some(at) = address
            .checked_add(variant.member.offset)
            .and_then(|at| at.checked_add(awaitee.offset))
        else {
            continue;
        };
        let ty = debug.type_info(ty)?;
        awaited.get_or_insert_with(|| ty.name.clone());
        coroutines_within(debug, &ty, at, load_bias, 0, &mut found)?;
    }
    Ok((awaited, found))
}

/// The coroutines held by value in a future of type `ty` at `address`, itself included.
fn coroutines_within(
    debug: &DebugInfo,
    ty: &TypeInfo,
    address: u64,
    load_bias: u64,
    depth: usize,
    found: &mut Vec<Coroutine>,
) -> Result<()> {
    if found.len() >= MAX_AWAITEES || depth > MAX_AWAITEE_DEPTH {
        return Ok(());
    }
    if names::coroutine_kind(&ty.name).is_some() {
        if !found.iter().any(|known| known.address == address) {
            found.push(coroutine_at(debug, ty, address, load_bias));
        }
        return Ok(());
    }
    let variant_members = ty
        .variant_part
        .iter()
        .flat_map(|part| part.variants.iter().map(|variant| &variant.member));
    for field in ty.fields.iter().chain(variant_members) {
        let (Some(field_ty), Some(at)) = (field.ty, address.checked_add(field.offset)) else {
            continue;
        };
        let field_ty = debug.type_info(field_ty)?;
        coroutines_within(debug, &field_ty, at, load_bias, depth + 1, found)?;
    }
    Ok(())
}

/// The innermost coroutines task `id` is suspended in (the leaves of its tree of async
/// fns), with their await lines: where `until-polled` stops.
pub fn suspended_leaves(
    debug: &DebugInfo,
    report: &Report,
    id: u64,
    load_bias: u64,
) -> Result<Vec<Coroutine>> {
    let task = report
        .tasks
        .iter()
        .find(|task| task.id == id)
        .ok_or_else(|| Error::new(ErrorKind::Usage, format!("no task {id} in the program")))?;
    if polled_on_a_stack(&task.root) {
        return Err(Error::new(
            ErrorKind::Usage,
            format!("task {id} is being polled now; `async next` or `async finish` follow it from its frame"),
        ));
    }
    let mut leaves = Vec::new();
    collect_leaves(&task.root, &mut leaves);
    let mut found = Vec::new();
    for node in leaves.into_iter().take(MAX_LEAVES) {
        let Some(env) = debug.type_named(node.type_name())? else {
            continue;
        };
        let mut target = coroutine_at(debug, &env, node.address, load_bias);
        target.file = node
            .location
            .as_ref()
            .map(|location| location.file.to_string());
        target.line = node.location.as_ref().map(|location| location.line);
        found.push(target);
    }
    if found.is_empty() {
        return Err(Error::new(
            ErrorKind::Usage,
            format!("task {id} is in no async fn or block to stop in"),
        ));
    }
    Ok(found)
}

/// Whether a thread is inside the task's future (a node of its tree runs there): its next
/// poll is not the one to wait for. Its state word alone saying running is not that: a
/// worker that has claimed the task and not yet entered its future (or has left it) stops
/// at its innermost async fns as any other poll does.
fn polled_on_a_stack(node: &FutureNode) -> bool {
    node.running() || node.children.iter().any(polled_on_a_stack)
}

/// Coroutine nodes with no coroutine below them.
fn collect_leaves<'n>(node: &'n FutureNode, leaves: &mut Vec<&'n FutureNode>) -> bool {
    let mut below = false;
    for child in &node.children {
        below |= collect_leaves(child, leaves);
    }
    let is_coroutine = names::coroutine_kind(node.type_name()).is_some() && node.address != 0;
    if is_coroutine && !below {
        leaves.push(node);
    }
    below || is_coroutine
}

/// Task `id`'s state word and the bit a wake sets in it.
pub fn wake_watch(
    debug: &DebugInfo,
    memory: &dyn Memory,
    report: &Report,
    id: u64,
) -> Result<WakeWatch> {
    let task = report
        .tasks
        .iter()
        .find(|task| task.id == id)
        .ok_or_else(|| Error::new(ErrorKind::Usage, format!("no task {id} in the program")))?;
    crate::tokio::tasks::wake_watch(debug, memory, task.address, id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeKind;

    fn chain(running_at: Option<usize>) -> FutureNode {
        let mut node = FutureNode::new(NodeKind::Sleep, "tokio::time::sleep::Sleep", 0x300);
        for depth in (0..3).rev() {
            let mut parent = FutureNode::new(
                NodeKind::AsyncFn,
                "app::level{async_fn_env#0}",
                0x100 + depth,
            );
            if running_at == Some(depth as usize) {
                parent.set_running(true);
            }
            parent.children.push(node);
            node = parent;
        }
        node
    }

    #[test]
    fn a_task_is_polled_on_a_stack_where_any_node_of_its_tree_runs() {
        assert!(!polled_on_a_stack(&chain(None)));
        assert!(polled_on_a_stack(&chain(Some(0))));
        assert!(polled_on_a_stack(&chain(Some(2))));
    }
}
