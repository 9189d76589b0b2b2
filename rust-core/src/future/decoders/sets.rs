//! Collections of futures: `FuturesUnordered`, `FuturesOrdered`, `JoinSet`, `join_all`,
//! `select_all`, `futures::future::select`. Each member becomes a child.

use rustc_hash::FxHashSet;
use serde_json::json;

use super::{async_self, linked_list_nodes, MAX_LIST_NODES};
use crate::error::{Error, Result};
use crate::future::coroutine::maybe_done_branch;
use crate::future::{Child, Decoded, FutureDecoder, Outcome, MAX_CHILDREN};
use crate::model::{Branch, BranchStatus, NodeKind};
use crate::tokio::compat::leaves;
use crate::value::Value;

fn pending_branch(value: &Value<'_>, index: usize) -> Child {
    Child {
        branch: Some(Branch::new(index, BranchStatus::Pending)),
        ..Child::of(value)
    }
}

fn tree(kind: NodeKind, what: &str, children: Vec<Child>, extra: serde_json::Value) -> Outcome {
    Outcome::Node(Decoded::tree(kind, what, children, extra))
}

/// The futures in a `FuturesUnordered`: its `head_all` list of tasks, each holding
/// `Option<Fut>`.
fn unordered_members<'a>(set: &Value<'a>) -> Result<Vec<Value<'a>>> {
    let head = set.field("head_all")?;
    let task_type = set.target.debug.type_info(head.pointer_target()?)?;
    let mut node = head.read_pointer()?;
    let mut members = Vec::new();
    let mut seen = FxHashSet::default();
    while node != 0 && (seen.len() as u64) < MAX_LIST_NODES && members.len() < MAX_CHILDREN {
        if !seen.insert(node) {
            return Err(Error::layout(format!(
                "FuturesUnordered list loops at {node:#x}"
            )));
        }
        let task = set.target.value_of_type(task_type.clone(), node);
        let slot = task
            .field("future")?
            .find_descendant(|ty| ty.name.starts_with("core::option::Option<"))?;
        let (variant, payload) = slot.variant()?;
        if variant == "Some" {
            members.push(payload.field("__0")?);
        }
        node = task.field("next_all")?.read_pointer()?;
    }
    Ok(members)
}

pub fn futures_unordered<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let members = unordered_members(value)?;
    let children = members
        .iter()
        .enumerate()
        .map(|(i, member)| pending_branch(member, i))
        .collect();
    Ok(tree(
        NodeKind::FuturesUnordered,
        "FuturesUnordered",
        children,
        json!({}),
    ))
}

pub fn futures_ordered<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let members = unordered_members(&value.field("in_progress_queue")?)?;
    let mut children = Vec::new();
    for (i, wrapper) in members.iter().enumerate() {
        children.push(pending_branch(&wrapper.field("data")?, i));
    }
    let queued = value
        .field("queued_outputs")?
        .find_field("len")?
        .read_uint()?;
    Ok(tree(
        NodeKind::FuturesOrdered,
        "FuturesOrdered",
        children,
        json!({"outputs_queued": queued}),
    ))
}

/// A `JoinSet`: the `JoinHandle`s on its idle and notified lists.
pub fn join_set<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let lists = value.path(leaves::JOIN_SET_LISTS)?.arc_data()?;
    let mut children = Vec::new();
    for list_name in leaves::JOIN_SET_LIST_NAMES {
        let (entries, entry_type) =
            linked_list_nodes(&lists.find_field(list_name)?, MAX_CHILDREN as u64)?;
        for entry in entries {
            let entry = lists.target.value_of_type(entry_type.clone(), entry);
            let handle = entry
                .field(leaves::JOIN_SET_ENTRY_VALUE)?
                .find_descendant(|ty| ty.name.starts_with(leaves::JOIN_HANDLE_TYPE))?;
            let index = children.len();
            children.push(pending_branch(&handle, index));
        }
    }
    Ok(tree(NodeKind::JoinSet, "JoinSet", children, json!({})))
}

pub fn join_set_join_next<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    join_set(decoder, &async_self(value)?)
}

/// `join_all`: small sets keep a boxed slice of `MaybeDone`s; big ones a `FuturesOrdered`.
pub fn join_all<'a>(decoder: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (variant, payload) = value.field("kind")?.variant()?;
    if variant != "Small" {
        return match futures_ordered(
            decoder,
            &payload.find_descendant(|ty| {
                ty.name
                    .starts_with("futures_util::stream::futures_ordered::FuturesOrdered<")
            })?,
        )? {
            Outcome::Node(mut decoded) => {
                decoded.kind = NodeKind::JoinAll;
                Ok(Outcome::Node(decoded))
            }
            other => Ok(other),
        };
    }
    let slice = payload
        .find_descendant(|ty| ty.field("data_ptr").is_some() && ty.field("length").is_some())?;
    let mut children = Vec::new();
    for (index, element) in slice.boxed_slice(MAX_CHILDREN as u64)?.iter().enumerate() {
        children.push(maybe_done_branch(element, index)?);
    }
    Ok(tree(NodeKind::JoinAll, "join_all", children, json!({})))
}

/// `select_all`: a `Vec` of futures.
pub fn select_all<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let vec = value.field("inner")?;
    let element = vec
        .ty
        .template_param("T")
        .ok_or_else(|| Error::layout("Vec without element type"))?;
    let element = vec.target.debug.type_info(element)?;
    let stride = element
        .size
        .ok_or_else(|| Error::layout("element without size"))?;
    let length = vec.field("len")?.read_uint()?;
    if length > MAX_CHILDREN as u64 {
        return Err(Error::layout(format!(
            "select_all of {length} futures (corrupt?)"
        )));
    }
    let data = vec.find_field("pointer")?.read_pointer()?;
    let children = (0..length)
        .map(|i| {
            let address = crate::value::offset(data, i.saturating_mul(stride))?;
            Ok(pending_branch(
                &vec.target.value_of_type(element.clone(), address),
                i as usize,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(tree(NodeKind::SelectAll, "select_all", children, json!({})))
}

/// `futures::future::select(a, b)`: `Option<(A, B)>`, `None` once finished.
pub fn select<'a>(_: &FutureDecoder<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (variant, payload) = value.field("inner")?.variant()?;
    let mut children = Vec::new();
    if variant == "Some" {
        let pair = payload.field("__0")?;
        for (index, name) in ["__0", "__1"].iter().enumerate() {
            children.push(pending_branch(&pair.field(name)?, index));
        }
    }
    Ok(tree(NodeKind::Select, "select", children, json!({})))
}
