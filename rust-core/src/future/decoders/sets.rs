//! Collections of futures: `FuturesUnordered`, `FuturesOrdered`, `JoinSet`, `join_all`,
//! `select_all`, `futures::future::select`. Each member becomes a child.

use rustc_hash::FxHashSet;

use super::{linked_list_nodes, maybe_done_branch, MAX_LIST_NODES};
use crate::error::{Error, Result};
use crate::future::env::async_self;
use crate::future::outcome::{Child, DecodeContext, Decoded, Outcome, MAX_CHILDREN};
use crate::layouts::libraries::futures as layout;
use crate::layouts::{rust, tokio_futures};
use crate::model::SetKind;
use crate::std_values;
use crate::value::Value;

fn set(kind: SetKind, what: &str, children: Vec<Child>, outputs_queued: Option<u64>) -> Outcome {
    Outcome::Node(Decoded::set(kind, what, children, outputs_queued))
}

/// The futures in a `FuturesUnordered`: its `head_all` list of tasks, each holding
/// `Option<Fut>`.
fn unordered_members<'a>(futures: &Value<'a>) -> Result<Vec<Value<'a>>> {
    let head = futures.field(layout::UNORDERED_HEAD)?;
    let task_type = futures.target.debug.type_info(head.pointer_target()?)?;
    let mut node = head.read_pointer()?;
    let mut members = Vec::new();
    let mut seen = FxHashSet::default();
    while node != 0 && (seen.len() as u64) < MAX_LIST_NODES && members.len() < MAX_CHILDREN {
        if !seen.insert(node) {
            return Err(Error::layout(format!(
                "FuturesUnordered list loops at {node:#x}"
            )));
        }
        let task = futures.target.value_of_type(task_type.clone(), node);
        let slot = std_values::at(&task, layout::UNORDERED_TASK_FUTURE)?;
        if let Some(member) = std_values::option(&slot)? {
            members.push(member);
        }
        node = task.field(layout::UNORDERED_NEXT)?.read_pointer()?;
    }
    Ok(members)
}

pub fn futures_unordered<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let members = unordered_members(value)?;
    let children = members
        .iter()
        .enumerate()
        .map(|(i, member)| Child::pending_branch(member, i))
        .collect();
    Ok(set(
        SetKind::FuturesUnordered,
        "FuturesUnordered",
        children,
        None,
    ))
}

/// A `FuturesOrdered`'s members and the outputs it holds for later.
fn ordered_members<'a>(value: &Value<'a>) -> Result<(Vec<Child>, u64)> {
    let members = unordered_members(&value.field(layout::ORDERED_IN_PROGRESS)?)?;
    let mut children = Vec::new();
    for (i, wrapper) in members.iter().enumerate() {
        children.push(Child::pending_branch(
            &wrapper.field(layout::ORDER_WRAPPER_DATA)?,
            i,
        ));
    }
    let queued = std_values::vec_len(&std_values::at_path(value, layout::ORDERED_OUTPUTS)?)?;
    Ok((children, queued))
}

pub fn futures_ordered<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (children, queued) = ordered_members(value)?;
    Ok(set(
        SetKind::FuturesOrdered,
        "FuturesOrdered",
        children,
        Some(queued),
    ))
}

/// A `JoinSet`: the `JoinHandle`s on its idle and notified lists.
pub fn join_set<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let lists = std_values::at(value, tokio_futures::JOIN_SET_LISTS)?;
    let mut children = Vec::new();
    for list_name in tokio_futures::JOIN_SET_LIST_NAMES {
        let (entries, entry_type) =
            linked_list_nodes(&lists.field(list_name)?, MAX_CHILDREN as u64)?;
        for entry in entries {
            let entry = lists.target.value_of_type(entry_type.clone(), entry);
            let handle = std_values::at(&entry, tokio_futures::JOIN_SET_ENTRY_HANDLE)?;
            let index = children.len();
            children.push(Child::pending_branch(&handle, index));
        }
    }
    Ok(set(SetKind::JoinSet, "JoinSet", children, None))
}

pub fn join_set_join_next<'a>(context: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    join_set(context, &async_self(value)?)
}

/// `join_all`: small sets keep a boxed slice of `MaybeDone`s; big ones a `FuturesOrdered`.
pub fn join_all<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let (variant, payload) = value.field(layout::JOIN_ALL_KIND)?.variant()?;
    if variant != layout::JOIN_ALL_SMALL {
        let (children, queued) =
            ordered_members(&std_values::at(&payload, layout::JOIN_ALL_ORDERED)?)?;
        return Ok(set(
            SetKind::JoinAll,
            "FuturesOrdered",
            children,
            Some(queued),
        ));
    }
    let slice = std_values::pin_pointer(&payload.field(layout::JOIN_ALL_ELEMENTS)?)?;
    let mut children = Vec::new();
    for (index, element) in std_values::boxed_slice(&slice, MAX_CHILDREN as u64)?
        .iter()
        .enumerate()
    {
        children.push(maybe_done_branch(element, index)?);
    }
    Ok(set(SetKind::JoinAll, "join_all", children, None))
}

/// `select_all`: a `Vec` of futures.
pub fn select_all<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let futures = value.field(layout::SELECT_ALL_FUTURES)?;
    let length = std_values::vec_len(&futures)?;
    if length > MAX_CHILDREN as u64 {
        return Err(Error::layout(format!(
            "select_all of {length} futures (corrupt?)"
        )));
    }
    let children = std_values::vec_elements(&futures, MAX_CHILDREN as u64)?
        .iter()
        .enumerate()
        .map(|(i, member)| Child::pending_branch(member, i))
        .collect();
    Ok(set(SetKind::SelectAll, "select_all", children, None))
}

/// `futures::future::select(a, b)`: `Option<(A, B)>`, `None` once finished.
pub fn select<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let mut children = Vec::new();
    if let Some(pair) = std_values::option(&value.field(layout::SELECT_PAIR)?)? {
        for (index, name) in [rust::TUPLE_FIRST, rust::TUPLE_SECOND].iter().enumerate() {
            children.push(Child::pending_branch(&pair.field(name)?, index));
        }
    }
    Ok(set(SetKind::Select, "select", children, None))
}
