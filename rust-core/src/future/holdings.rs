//! What a suspended coroutine keeps across its await that other tasks may wait for: lock
//! guards and semaphore permits, channel senders, Notify handles, and permits tokio has
//! assigned to an acquire future that sits in a local, unpolled (a futurelock, RFD 609).
//! The wait-for graph (`waits/`) ties them to the tasks that wait.

use std::cell::RefCell;

use rustc_hash::FxHashSet;

use super::env::{active_variant, captured_variables};
use super::type_graph::{TypeGraphSearch, TypeShape};
use crate::dwarf::{DebugInfo, DieRef, TypeTag};
use crate::error::{Error, Result};
use crate::layouts::tokio_futures::{self as layout, HoldingType};
use crate::model::{Holding, HoldingKind, Resource, ResourceKind};
use crate::names;
use crate::std_values;
use crate::value::Value;

/// How deep values are searched for holdings (structs in enums in coroutines …).
const MAX_DEPTH: usize = 8;
/// Holdings kept per coroutine: a corrupt image must not make millions.
const MAX_HOLDINGS: usize = 64;
/// Elements of one `Vec` searched: enough for a handful of guards, bounded for big ones.
const MAX_VEC_ELEMENTS: u64 = 64;

/// Whether values of a type can contain a holding: by value, or through what the value
/// owns (a `Box`, the elements of a `Vec`); other pointers are not followed but for the
/// guards' own. Worked out once per type and command.
#[derive(Default)]
pub struct HoldingTypes {
    may_hold: RefCell<TypeGraphSearch<DieRef>>,
}

impl HoldingTypes {
    fn may_hold(&self, debug: &DebugInfo, ty: DieRef) -> bool {
        self.may_hold
            .borrow_mut()
            .reaches(ty, &mut |ty| match debug.type_info(ty) {
                Ok(info)
                    if holding_type(&info.name).is_some() || info.name == layout::ACQUIRE_TYPE =>
                {
                    TypeShape::Wanted
                }
                Ok(info) if info.name.starts_with(crate::layouts::rust::BOX_PREFIX) => {
                    TypeShape::Owns(info.target.into_iter().collect())
                }
                Ok(info) if std_values::is_vec(&info) => {
                    TypeShape::Owns(std_values::element_type(&info).into_iter().collect())
                }
                Ok(info) if info.tag == TypeTag::Pointer => TypeShape::Owns(Vec::new()),
                Ok(info) => {
                    let members = info.fields.iter().filter_map(|field| field.ty);
                    let variants = info.variant_part.iter().flat_map(|part| {
                        part.variants.iter().filter_map(|variant| variant.member.ty)
                    });
                    TypeShape::Owns(members.chain(variants).collect())
                }
                Err(_) => TypeShape::Owns(Vec::new()),
            })
    }
}

fn holding_type(name: &str) -> Option<&'static HoldingType> {
    layout::HOLDING_TYPES
        .iter()
        .find(|(prefix, ..)| name.starts_with(prefix))
}

/// The holdings among a coroutine's saved locals (the fields of its active variant, at
/// `fields`, of the env `env`), but `skip` (the future it awaits, which is being polled)
/// and the branch futures of a `select!`/`join!` (decoded as its children, each with its
/// own holdings).
pub fn of_saved_locals(
    types: &HoldingTypes,
    env: &Value<'_>,
    fields: &Value<'_>,
    skip: &[&str],
) -> Vec<Holding> {
    let debug = fields.target.debug;
    let captured = captured_variables(env);
    let mut found = Vec::new();
    let mut seen = FxHashSet::default();
    for field in &fields.ty.fields {
        let Some(ty) = field.ty else { continue };
        if skip.contains(&field.name.as_str())
            || field
                .name
                .starts_with(crate::layouts::rust::macros::FUTURES_JOIN_PREFIX)
            || !seen.insert(field.offset)
        {
            continue;
        }
        if !types.may_hold(debug, ty) {
            continue;
        }
        let Some(address) = fields.address.checked_add(field.offset) else {
            continue;
        };
        let Ok(value) = fields.target.value(ty, address) else {
            continue;
        };
        let before = found.len();
        let mut search = Search {
            types,
            found: &mut found,
        };
        search.visit(&value, field.name.clone(), false, 0);
        let offset_in_env = address.wrapping_sub(env.address);
        if captured
            .iter()
            .any(|(offset, name)| *offset == offset_in_env && *name == field.name)
        {
            found[before..]
                .iter_mut()
                .for_each(|holding| holding.captured = true);
        }
    }
    found
}

/// The holdings in the fields of a library future (one no decoder knows): it is being
/// polled, so what it keeps is held, not idle, but futures inside it are searched as idle.
pub fn of_fields(types: &HoldingTypes, value: &Value<'_>) -> Vec<Holding> {
    let mut found = Vec::new();
    if types.may_hold(value.target.debug, value.ty.die) {
        Search {
            types,
            found: &mut found,
        }
        .visit_fields(value, "self", false, 0);
    }
    found
}

struct Search<'s> {
    types: &'s HoldingTypes,
    found: &'s mut Vec<Holding>,
}

impl Search<'_> {
    fn visit(&mut self, value: &Value<'_>, path: String, idle_future: bool, depth: usize) {
        if self.found.len() >= MAX_HOLDINGS || depth > MAX_DEPTH {
            return;
        }
        let name = value.ty.name.as_str();
        if let Some(&(_, kind, resource_kind, path_to_resource)) = holding_type(name) {
            if let Ok(Some(resource)) = std_values::follow(value, path_to_resource) {
                self.push(kind, resource_kind, resource.address, path, idle_future);
            }
            return;
        }
        if name == layout::ACQUIRE_TYPE {
            if let Ok(Some(address)) = assigned_permits(value) {
                self.push(
                    HoldingKind::Assigned,
                    ResourceKind::Semaphore,
                    address,
                    path,
                    true,
                );
            }
            return;
        }
        if !self.types.may_hold(value.target.debug, value.ty.die) {
            return;
        }
        if name.starts_with(crate::layouts::rust::BOX_PREFIX) {
            if let Ok(boxed) = value.pointee() {
                self.visit(&boxed, path, idle_future, depth + 1);
            }
            return;
        }
        if std_values::is_vec(&value.ty) {
            for (position, element) in std_values::vec_first_elements(value, MAX_VEC_ELEMENTS)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                self.visit(
                    element,
                    format!("{path}[{position}]"),
                    idle_future,
                    depth + 1,
                );
            }
            return;
        }
        // A future kept in a local: nothing polls it while its owner waits elsewhere.
        if names::coroutine_kind(name).is_some() {
            if let Ok(active) = active_variant(value) {
                self.visit_fields(&active.fields, &path, true, depth);
            }
            return;
        }
        if value.ty.variant_part.is_some() {
            if let Ok((variant, payload)) = value.variant() {
                self.visit_fields(&payload, &format!("{path}.{variant}"), idle_future, depth);
            }
            return;
        }
        self.visit_fields(value, &path, idle_future, depth);
    }

    fn visit_fields(&mut self, value: &Value<'_>, path: &str, idle_future: bool, depth: usize) {
        for field in &value.ty.fields {
            let Some(ty) = field.ty else { continue };
            let Some(address) = value.address.checked_add(field.offset) else {
                continue;
            };
            if let Ok(inner) = value.target.value(ty, address) {
                self.visit(
                    &inner,
                    format!("{path}.{}", field.name),
                    idle_future,
                    depth + 1,
                );
            }
        }
    }

    fn push(
        &mut self,
        kind: HoldingKind,
        resource_kind: ResourceKind,
        address: u64,
        local: String,
        idle_future: bool,
    ) {
        let resource = Resource {
            kind: resource_kind,
            address,
        };
        let holding = Holding {
            kind,
            resource,
            local,
            idle_future,
            captured: false,
        };
        if !self.found.contains(&holding) {
            self.found.push(holding);
        }
    }
}

/// An acquire future's semaphore when tokio has assigned permits to its waiter.
fn assigned_permits(acquire: &Value<'_>) -> Result<Option<u64>> {
    if acquire.field(layout::ACQUIRE_QUEUED)?.read_uint()? == 0 {
        return Ok(None);
    }
    let wanted = acquire.field(layout::ACQUIRE_PERMITS)?.read_uint()?;
    let remaining = std_values::at(acquire, layout::ACQUIRE_REMAINING)?.read_uint()?;
    let assigned = wanted
        .checked_sub(remaining)
        .ok_or_else(|| Error::layout("an acquire waiter needs more permits than it asked for"))?;
    if assigned == 0 {
        return Ok(None);
    }
    Ok(std_values::follow(acquire, layout::ACQUIRE_SEMAPHORE)?.map(|semaphore| semaphore.address))
}
