//! One small decoder per kind of future (see `../registry.rs`), and the helpers they share.
//! Decoders follow the layout table (`crate::layouts`) through `std_values`; none spells a
//! field name. Each returns typed facts (`model::Detail`) and a summary line.

pub mod boxed;
pub mod channels;
pub mod futures_channels;
pub mod hyper;
pub mod io;
pub mod io_util;
pub mod join_handle;
pub mod notify;
pub mod poll_fn;
pub mod process;
pub mod semaphore;
pub mod sets;
pub mod signals;
pub mod sleep;
pub mod streams;
pub mod sync_waits;
pub mod tokio_util;
pub mod tonic;
pub mod tower;
pub mod trivial;
pub mod wrappers;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::outcome::{Child, DecodeContext, Outcome};
use crate::dwarf::TypeInfo;
use crate::error::{Error, Result};
use crate::layouts::{libraries, tokio, tokio_futures, Paths};
use crate::memory::MemoryExt;
use crate::model::{Branch, BranchStatus};
use crate::std_values;
use crate::value::Value;

/// What every decoder is: the value of a future of a type the registry maps to it.
pub type DecodeFn = for<'a> fn(&DecodeContext<'a>, &Value<'a>) -> Result<Outcome>;

/// Upper bound on nodes counted in one intrusive list (waiters of a lock, say).
pub const MAX_LIST_NODES: u64 = 1_000_000;
/// Nodes of a list read between two releases of the memory's cache.
const NODES_PER_RELEASE: usize = 4096;

/// The node addresses of a tokio `LinkedList` (at most `limit`, cycle-safe), and the
/// nodes' type.
pub fn linked_list_nodes(list: &Value<'_>, limit: u64) -> Result<(Vec<u64>, Arc<TypeInfo>)> {
    let head = list.field(tokio::LINKED_LIST_HEAD)?;
    let node_type = list.target.debug.type_info(head.pointer_target()?)?;
    let probe = list.target.value_of_type(node_type.clone(), 0);
    let next_offset =
        std_values::at(&probe.field(tokio::NODE_POINTERS)?, tokio::POINTERS_NEXT)?.address;
    let mut node = head.read_pointer()?;
    let mut nodes = Vec::new();
    let mut seen = FxHashSet::default();
    while node != 0 && (nodes.len() as u64) < limit {
        if !seen.insert(node) {
            return Err(Error::layout(format!("linked list loops at {node:#x}")));
        }
        if nodes.len().is_multiple_of(NODES_PER_RELEASE) {
            // A lock's waiters live in their tasks' futures, across a core's whole heap.
            list.target.memory.release_cache();
        }
        nodes.push(node);
        node = list
            .target
            .memory
            .read_u64(crate::value::offset(node, next_offset)?)?;
    }
    Ok((nodes, node_type))
}

/// How many nodes a tokio `LinkedList` holds (counted once per list and command).
pub fn linked_list_len(list: &Value<'_>) -> Result<u64> {
    list.target.list_length(list.address, || {
        Ok(linked_list_nodes(list, MAX_LIST_NODES)?.0.len() as u64)
    })
}

/// The length of the tokio `LinkedList` at `paths` from `value`.
pub fn list_len_at(value: &Value<'_>, paths: Paths) -> Result<u64> {
    linked_list_len(&std_values::at(value, paths)?)
}

/// A tokio batch semaphore: (permits available, closed, waiters queued).
pub fn semaphore_state(semaphore: &Value<'_>) -> Result<(u64, bool, u64)> {
    let (available, closed) = semaphore_permits(semaphore)?;
    let waiters = list_len_at(semaphore, tokio_futures::BATCH_WAITERS)?;
    Ok((available, closed, waiters))
}

/// A tokio batch semaphore's permits available, and whether it is closed (its `permits`
/// word is `available << 1 | closed`).
pub fn semaphore_permits(semaphore: &Value<'_>) -> Result<(u64, bool)> {
    let permits = semaphore.field(tokio_futures::BATCH_PERMITS)?.read_uint()?;
    Ok(tokio_futures::permits_word(permits))
}

/// A `join!` branch or `join_all` member: `MaybeDone::Future(f)` is pending, `Done`
/// finished, `Gone` taken (the futures crate's and tokio's `MaybeDone` alike).
pub fn maybe_done_branch(value: &Value<'_>, index: usize) -> Result<Child> {
    use libraries::futures::{MAYBE_DONE_DONE, MAYBE_DONE_FUTURE, MAYBE_DONE_PENDING};
    let (variant, payload) = value.variant()?;
    let status = match variant.as_str() {
        MAYBE_DONE_PENDING => BranchStatus::Pending,
        MAYBE_DONE_DONE => BranchStatus::Done,
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
    let inner = std_values::at(&payload, MAYBE_DONE_FUTURE)?;
    Ok(Child {
        branch: Some(Branch::new(index, status)),
        ..Child::of(&inner)
    })
}

/// `a::B<c::D<e>>` -> `c::D<e>`.
fn generic_argument(type_name: &str) -> Option<&str> {
    let open = type_name.find('<')?;
    type_name[open + 1..].strip_suffix('>')
}

pub fn plural(count: u64, word: &str) -> String {
    if count == 1 {
        format!("1 {word}")
    } else {
        format!("{count} {word}s")
    }
}

pub fn hex(address: u64) -> String {
    format!("{address:#x}")
}
