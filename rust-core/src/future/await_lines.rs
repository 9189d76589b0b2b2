//! The user's line for an await written inside a macro (`tokio::select!`, `join!`, the
//! futures crate's macros, any macro). rustc gives such a suspend point the macro's own
//! source line; the user's line is the line of the call that polls the awaited future in
//! the coroutine's resume function, which the line table and inline info still give.

use crate::dwarf::{DebugInfo, DieRef, SourceLocation, TypeInfo};
use crate::layouts::rust::{coroutine, macros};
use crate::model::Location;
use crate::names;
use crate::std_values;

fn callee_is(debug: &DebugInfo, site: &crate::dwarf::CallSite, function: &str) -> bool {
    debug.subprogram_path(site.callee).is_some_and(|(path, _)| {
        names::strip_last_generics(path).rsplit("::").next() == Some(function)
    })
}

pub fn location_of(decl: &SourceLocation) -> Location {
    Location::new(
        names::short_path(&decl.file).into(),
        decl.line,
        decl.file.as_str().into(),
    )
}

/// The file the coroutine is written in (its `Unresumed` variant's `decl_file`).
fn home_file(env: &TypeInfo) -> Option<&str> {
    let part = env.variant_part.as_ref()?;
    let unresumed = part
        .variants
        .iter()
        .find(|variant| variant.discr_value == Some(coroutine::UNRESUMED))?;
    unresumed
        .member
        .decl
        .as_ref()
        .map(|decl| decl.file.as_str())
}

/// Whether a suspend point's line is in another file than its coroutine: a macro's.
pub fn is_macro_await(env: &TypeInfo, suspend: &Location) -> bool {
    home_file(env).is_some_and(|home| home != &*suspend.path)
}

/// The user's line for the await of `awaitee` inside the coroutine `env`: the line of the
/// resume function's call that polls it.
pub fn user_await_location(
    debug: &DebugInfo,
    env: &TypeInfo,
    awaitee: &TypeInfo,
) -> Option<Location> {
    let resume = names::resume_function_name(&env.name);
    line_of_poll_call(debug, &resume, env.die, &awaitee.name).map(|decl| location_of(&decl))
}

/// The line from which the resume function `resume` polls a future of the type named
/// `awaitee`: it calls a function whose first parameter is `Pin<&mut Awaitee>`.
fn line_of_poll_call(
    debug: &DebugInfo,
    resume: &str,
    env: DieRef,
    awaitee: &str,
) -> Option<SourceLocation> {
    let pins_the_awaitee = |parameter: &TypeInfo| {
        std_values::pin_pointer_type(debug, parameter)
            .and_then(|pointer| debug.type_info(pointer.target?).ok())
            .is_some_and(|pointee| pointee.name == awaitee)
    };
    debug.line_of_call_taking(resume, env, awaitee, &pins_the_awaitee)
}

/// Where each branch future of a macro is written, in branch order. An async block is
/// written where its `Unresumed` variant says. Any other future is written where the resume
/// function calls something that makes it (see `creation_lines`), on a line of the user's
/// file within the macro call: from its first line up to the coroutine's next await.
/// Branches of one type take that type's lines in source order, only when the counts agree.
pub fn branch_locations(
    debug: &DebugInfo,
    env: &TypeInfo,
    macro_line: Option<&Location>,
    branches: &[&TypeInfo],
) -> Vec<Option<Location>> {
    let (Some(home), Some(macro_line)) = (home_file(env), macro_line) else {
        return vec![None; branches.len()];
    };
    let resume = names::resume_function_name(&env.name);
    let next_await = await_lines(debug, env)
        .into_iter()
        .filter(|&line| line > macro_line.line)
        .min()
        .unwrap_or(u64::MAX);
    let in_macro_call = |location: &Location| {
        &*location.path == home && macro_line.line <= location.line && location.line < next_await
    };
    let mut lines_by_type: Vec<(&str, std::vec::IntoIter<Location>)> = Vec::new();
    branches
        .iter()
        .map(|branch| {
            if names::coroutine_kind(&branch.name) == Some(names::CoroutineKind::AsyncBlock) {
                let part = branch.variant_part.as_ref()?;
                let unresumed = part
                    .variants
                    .iter()
                    .find(|variant| variant.discr_value == Some(coroutine::UNRESUMED))?;
                let location = unresumed.member.decl.as_ref().map(location_of)?;
                return (&*location.path == home && location.line >= macro_line.line)
                    .then_some(location);
            }
            if let Some((_, lines)) = lines_by_type
                .iter_mut()
                .find(|(name, _)| *name == branch.name)
            {
                return lines.next();
            }
            let mut lines: Vec<Location> = creation_lines(debug, &resume, env.die, &branch.name)
                .iter()
                .map(location_of)
                .filter(in_macro_call)
                .collect();
            lines.sort_by_key(|location| location.line);
            lines.dedup();
            let same_type = branches
                .iter()
                .filter(|other| other.name == branch.name)
                .count();
            if lines.len() != same_type {
                lines.clear();
            }
            let mut lines = lines.into_iter();
            let first = lines.next();
            lines_by_type.push((&branch.name, lines));
            first
        })
        .collect()
}

/// Lines where `resume` calls what creates a future of type `future`: a function returning
/// it, or, for an async fn's env (whose function DWARF gives no return type), a function of
/// the same name in the same module (`Receiver<T>::recv` for `{impl#0}::recv::{async_fn_env#0}`).
fn creation_lines(
    debug: &DebugInfo,
    resume: &str,
    env: DieRef,
    future: &str,
) -> Vec<SourceLocation> {
    if names::coroutine_kind(future) != Some(names::CoroutineKind::AsyncFn) {
        return debug
            .calls_returning(resume, env, future)
            .into_iter()
            .filter(|site| !callee_is(debug, site, macros::INTO_FUTURE))
            .map(|site| site.location)
            .collect();
    }
    let env_path = names::split_path(future);
    let [module @ .., function, _env] = env_path.as_slice() else {
        return Vec::new();
    };
    let module: Vec<&str> = module
        .iter()
        .copied()
        .filter(|segment| !segment.starts_with("{impl#"))
        .collect();
    let module = module.join("::");
    debug
        .call_sites_in(resume, env)
        .iter()
        .filter(|site| {
            debug.subprogram_path(site.callee).is_some_and(|(path, _)| {
                let callee = names::strip_last_generics(path);
                callee.starts_with(&module) && callee.rsplit("::").next() == Some(*function)
            })
        })
        .map(|site| site.location.clone())
        .collect()
}

/// The user's line of every await of a coroutine: its `decl_line` where that is in the
/// coroutine's own file, else the line of the call that polls its awaitee.
fn await_lines(debug: &DebugInfo, env: &TypeInfo) -> Vec<u64> {
    let (Some(home), Some(part)) = (home_file(env), env.variant_part.as_ref()) else {
        return Vec::new();
    };
    let resume = names::resume_function_name(&env.name);
    part.variants
        .iter()
        .filter(|variant| {
            variant
                .discr_value
                .is_some_and(|value| value >= coroutine::FIRST_SUSPEND)
        })
        .filter_map(|variant| {
            let decl = variant.member.decl.as_ref()?;
            if decl.file == home {
                return Some(decl.line);
            }
            let fields = debug.type_info(variant.member.ty?).ok()?;
            let awaitee = debug
                .type_info(fields.field(coroutine::AWAITEE)?.ty?)
                .ok()?;
            line_of_poll_call(debug, &resume, env.die, &awaitee.name)
                .filter(|call| call.file == home)
                .map(|call| call.line)
        })
        .collect()
}
