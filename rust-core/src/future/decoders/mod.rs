//! One small decoder per kind of future (see `../registry.rs`), and the helpers they share.
//! Decoders find everything by field name in the DWARF layout.

pub mod boxed;
pub mod channels;
pub mod hyper;
pub mod io;
pub mod join_handle;
pub mod notify;
pub mod semaphore;
pub mod sets;
pub mod sleep;
pub mod streams;
pub mod tonic;
pub mod tower;
pub mod trivial;
pub mod wrappers;

use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::dwarf::TypeInfo;
use crate::error::{Error, Result};
use crate::future::coroutine::active_variant;
use crate::memory::MemoryExt;
use crate::tokio::compat;
use crate::value::Value;

/// Upper bound on nodes counted in one intrusive list (waiters of a lock, say).
pub const MAX_LIST_NODES: u64 = 1_000_000;

/// The `self` an async method was called on: the upvar of the coroutine's active variant,
/// dereferenced (`&self`, `&mut self`, `Arc<Self>`).
pub fn async_self<'a>(env: &Value<'a>) -> Result<Value<'a>> {
    let active = active_variant(env)?;
    let receiver = active.fields.field(compat::ASYNC_SELF)?;
    if receiver.ty.name.starts_with("alloc::sync::Arc<") {
        return receiver.arc_data();
    }
    receiver.pointee()
}

/// An upvar (argument) of an async fn, from the active variant.
pub fn async_argument<'a>(env: &Value<'a>, name: &str) -> Result<Value<'a>> {
    active_variant(env)?.fields.field(name)
}

/// The node addresses of a tokio `LinkedList` (at most `limit`, cycle-safe), and the
/// nodes' type.
pub fn linked_list_nodes(list: &Value<'_>, limit: u64) -> Result<(Vec<u64>, Arc<TypeInfo>)> {
    let head = list.field(compat::LINKED_LIST_HEAD)?;
    let node_type = list.target.debug.type_info(head.pointer_target()?)?;
    let probe = list.target.value_of_type(node_type.clone(), 0);
    let next_offset = probe
        .field(compat::NODE_POINTERS)?
        .first_path(compat::POINTERS_NEXT)?
        .address;
    let mut node = head.read_pointer()?;
    let mut nodes = Vec::new();
    let mut seen = FxHashSet::default();
    while node != 0 && (nodes.len() as u64) < limit {
        if !seen.insert(node) {
            return Err(Error::layout(format!("linked list loops at {node:#x}")));
        }
        nodes.push(node);
        node = list
            .target
            .memory
            .read_u64(crate::value::offset(node, next_offset)?)?;
    }
    Ok((nodes, node_type))
}

/// Elements of a `Vec<T>`, at most `limit` (more is taken for corruption).
pub fn vec_elements<'a>(vec: &Value<'a>, limit: u64) -> Result<Vec<Value<'a>>> {
    let length = vec.field(compat::VEC_LENGTH)?.read_uint()?;
    if length > limit {
        return Err(Error::layout(format!(
            "{} at {:#x} claims {length} elements (corrupt?)",
            vec.ty.name, vec.address
        )));
    }
    elements(vec, length)
}

/// The first elements of a `Vec<T>`, at most `count`.
pub fn vec_first_elements<'a>(vec: &Value<'a>, count: u64) -> Result<Vec<Value<'a>>> {
    elements(vec, vec.field(compat::VEC_LENGTH)?.read_uint()?.min(count))
}

/// The first `length` elements of a `Vec<T>` (its length already read and bounded).
fn elements<'a>(vec: &Value<'a>, length: u64) -> Result<Vec<Value<'a>>> {
    let element = vec
        .ty
        .template_param(compat::VEC_ELEMENT_PARAM)
        .ok_or_else(|| Error::layout(format!("{} names no element type", vec.ty.name)))?;
    let base = vec.find_field(compat::VEC_POINTER)?.read_pointer()?;
    let element = vec.target.debug.type_info(element)?;
    let stride = element
        .size
        .ok_or_else(|| Error::layout(format!("{} has no size", element.name)))?;
    (0..length)
        .map(|i| {
            let address = i
                .checked_mul(stride)
                .and_then(|offset| base.checked_add(offset))
                .ok_or_else(|| {
                    Error::layout(format!(
                        "{} at {:#x}: element {i} lies past the address space",
                        vec.ty.name, vec.address
                    ))
                })?;
            Ok(vec.target.value_of_type(element.clone(), address))
        })
        .collect()
}

/// How many nodes a tokio `LinkedList` holds (counted once per list and command).
pub fn linked_list_len(list: &Value<'_>) -> Result<u64> {
    if let Some(&length) = list.target.list_lengths.borrow().get(&list.address) {
        return Ok(length);
    }
    let length = linked_list_nodes(list, MAX_LIST_NODES)?.0.len() as u64;
    list.target
        .list_lengths
        .borrow_mut()
        .insert(list.address, length);
    Ok(length)
}

/// A tokio batch semaphore: (permits available, closed, waiters queued).
pub fn semaphore_state(semaphore: &Value<'_>) -> Result<(u64, bool, u64)> {
    let permits = semaphore
        .field(compat::leaves::BATCH_PERMITS)?
        .read_uint()?;
    let waiters = semaphore
        .field(compat::leaves::BATCH_WAITERS)?
        .find_descendant(|ty| ty.name.starts_with(compat::LINKED_LIST_TYPE_PREFIX))?;
    Ok((permits >> 1, permits & 1 == 1, linked_list_len(&waiters)?))
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
