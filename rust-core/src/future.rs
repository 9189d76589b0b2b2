//! Decoding a future's state from memory: coroutine envs (async fn, async block, async
//! closure) through their DWARF variant part, following `__awaitee` down the chain.
//! Anything else ends the chain as a plain `future` with its type name.

use std::collections::HashSet;

use crate::dwarf::{DieRef, TypeInfo};
use crate::error::{Error, Result};
use crate::memory::MemoryExt;
use crate::model::{CoroutineState, FutureNode, Location, NodeKind};
use crate::names::{self, CoroutineKind};
use crate::value::Target;

/// The longest await chain followed before giving up (a corrupt or cyclic chain).
pub const MAX_AWAIT_DEPTH: usize = 128;

/// rustc's coroutine discriminants: 0 Unresumed, 1 Returned, 2 Panicked, 3 + k SuspendK.
const FIRST_SUSPEND_STATE: u64 = 3;
const AWAITEE_FIELD: &str = "__awaitee";

/// Wrappers that add nothing a person wants to see: (type name prefix, field holding the
/// wrapped future). The node shows the wrapped future instead.
const TRANSPARENT_WRAPPERS: &[(&str, &str)] = &[
    // Wraps every task's future when tokio is built with `tokio_taskdump`.
    ("tokio::runtime::task::trace::Root<", "future"),
];

pub struct FutureDecoder<'a> {
    target: &'a Target<'a>,
}

impl<'a> FutureDecoder<'a> {
    pub fn new(target: &'a Target<'a>) -> Self {
        FutureDecoder { target }
    }

    /// The await tree rooted at the future of type `ty` at `address`.
    pub fn decode(&self, ty: DieRef, address: u64) -> FutureNode {
        let mut seen = HashSet::new();
        self.decode_at(ty, address, 0, &mut seen)
    }

    /// A node for a future whose memory is not to be read (a finished task).
    pub fn describe_type(&self, ty: DieRef, address: u64) -> FutureNode {
        match self.target.debug.type_info(ty) {
            Ok(info) => match transparent_field(&info).and_then(|field| field.ty) {
                Some(inner) => self.describe_type(inner, address),
                None => self.bare_node(&info, address),
            },
            Err(error) => error_node("<unknown>", address, error),
        }
    }

    fn bare_node(&self, info: &TypeInfo, address: u64) -> FutureNode {
        let kind = names::coroutine_kind(&info.name);
        FutureNode {
            kind: match kind {
                Some(CoroutineKind::AsyncFn) => NodeKind::AsyncFn,
                Some(CoroutineKind::AsyncBlock) => NodeKind::AsyncBlock,
                Some(CoroutineKind::AsyncClosure) => NodeKind::AsyncClosure,
                None => NodeKind::Future,
            },
            type_name: info.name.clone(),
            function: kind.and_then(|_| names::coroutine_function(&self.target.debug.index, &info.name)),
            state: None,
            await_point: None,
            location: None,
            children: Vec::new(),
            address: format!("{address:#x}"),
            running: false,
            error: None,
        }
    }

    fn decode_at(&self, ty: DieRef, address: u64, depth: usize, seen: &mut HashSet<(u64, DieRef)>) -> FutureNode {
        let info = match self.target.debug.type_info(ty) {
            Ok(info) => info,
            Err(error) => return error_node("<unknown>", address, error),
        };
        if let Some(field) = transparent_field(&info) {
            if let Some(inner_ty) = field.ty {
                if depth < MAX_AWAIT_DEPTH {
                    return self.decode_at(inner_ty, address + field.offset, depth + 1, seen);
                }
            }
        }
        let mut node = self.bare_node(&info, address);
        if node.kind == NodeKind::Future {
            return node;
        }
        if !seen.insert((address, ty)) {
            node.error = Some(format!("cycle: this future was already seen at {address:#x}"));
            return node;
        }
        if depth >= MAX_AWAIT_DEPTH {
            node.error = Some(format!("await chain deeper than {MAX_AWAIT_DEPTH}; stopped"));
            return node;
        }
        match self.coroutine_step(&info, address) {
            Ok(step) => {
                node.state = Some(step.state);
                node.await_point = step.await_point;
                node.location = step.location;
                if let Some((awaitee_ty, awaitee_address)) = step.awaitee {
                    node.children.push(self.decode_at(awaitee_ty, awaitee_address, depth + 1, seen));
                }
            }
            Err(error) => node.error = Some(error.message),
        }
        node
    }

    fn coroutine_step(&self, info: &TypeInfo, address: u64) -> Result<CoroutineStep> {
        let part = info
            .variant_part
            .as_ref()
            .ok_or_else(|| Error::layout(format!("coroutine {} has no variant part", info.name)))?;
        let discriminant = part
            .discriminant
            .as_ref()
            .ok_or_else(|| Error::layout(format!("coroutine {} has no discriminant", info.name)))?;
        let size = match discriminant.ty {
            Some(ty) => self.target.debug.type_info(ty)?.size.unwrap_or(1),
            None => 1,
        };
        let raw = self
            .target
            .memory
            .read_uint(address + discriminant.offset, size)
            .map_err(|error| error.context(format!("state of {} at {address:#x}", info.name)))?;
        let variant = part.variants.iter().find(|variant| variant.discr_value == Some(raw)).ok_or_else(|| {
            Error::layout(format!("{} at {address:#x} has state {raw}, which no variant has (corrupt or freed memory?)", info.name))
        })?;
        let (state, await_point) = match raw {
            0 => (CoroutineState::Unresumed, None),
            1 => (CoroutineState::Returned, None),
            2 => (CoroutineState::Panicked, None),
            n => (CoroutineState::Suspended, Some(n - FIRST_SUSPEND_STATE)),
        };
        let location = variant.member.decl.as_ref().map(|decl| Location {
            file: names::short_path(&decl.file),
            line: decl.line,
            path: decl.file.clone(),
        });
        let mut awaitee = None;
        if state == CoroutineState::Suspended {
            if let Some(variant_ty) = variant.member.ty {
                let variant_info = self.target.debug.type_info(variant_ty)?;
                if let Some(field) = variant_info.field(AWAITEE_FIELD) {
                    if let Some(field_ty) = field.ty {
                        awaitee = Some((field_ty, address + variant.member.offset + field.offset));
                    }
                }
            }
        }
        Ok(CoroutineStep { state, await_point, location, awaitee })
    }
}

fn transparent_field(info: &TypeInfo) -> Option<&crate::dwarf::Field> {
    TRANSPARENT_WRAPPERS
        .iter()
        .find(|(prefix, _)| info.name.starts_with(prefix))
        .and_then(|(_, field)| info.field(field))
}

struct CoroutineStep {
    state: CoroutineState,
    await_point: Option<u64>,
    location: Option<Location>,
    awaitee: Option<(DieRef, u64)>,
}

pub fn error_node(type_name: &str, address: u64, error: Error) -> FutureNode {
    FutureNode {
        kind: NodeKind::Future,
        type_name: type_name.to_string(),
        function: None,
        state: None,
        await_point: None,
        location: None,
        children: Vec::new(),
        address: format!("{address:#x}"),
        running: false,
        error: Some(error.message),
    }
}

/// The name of the function that resumes a coroutine env, generics dropped:
/// `app::run::{async_fn_env#0}<u8>` -> `app::run::{async_fn#0}`.
pub fn resume_function_name(env_type: &str) -> String {
    let mut segments: Vec<String> = names::split_path(env_type).iter().map(|s| s.to_string()).collect();
    if let Some(last) = segments.last_mut() {
        let base = last.split('<').next().unwrap_or(last).replace("_env#", "#");
        *last = base;
    }
    segments.join("::")
}

/// Marks the deepest coroutine of a running chain that is on the thread's stack: it is
/// executing, not suspended, so its await point and awaitee are stale.
pub fn mark_running(root: &mut FutureNode, frames: &[crate::inspect::ResolvedFrame<'_>]) {
    let frame_paths: Vec<(String, &crate::inspect::ResolvedFrame<'_>)> =
        frames.iter().filter_map(|frame| frame.path_without_generics().map(|path| (path, frame))).collect();
    let mut deepest: Option<(usize, &crate::inspect::ResolvedFrame<'_>)> = None;
    let mut node = &*root;
    let mut depth = 0;
    loop {
        if node.kind != NodeKind::Future {
            let resume = resume_function_name(&node.type_name);
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
    let Some((target_depth, frame)) = deepest else { return };
    let mut node = root;
    for _ in 0..target_depth {
        node = &mut node.children[0];
    }
    node.running = true;
    node.state = None;
    node.await_point = None;
    node.children.clear();
    // The file as DWARF names it for this coroutine (debuggers spell paths differently);
    // the line is where the thread is.
    node.location = match (node.location.take(), &frame.input.file, frame.input.line) {
        (Some(own), _, Some(line)) => Some(Location { line, ..own }),
        (None, Some(file), Some(line)) => Some(Location { file: names::short_path(file), line, path: file.clone() }),
        _ => None,
    };
}
