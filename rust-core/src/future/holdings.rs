//! What a suspended coroutine keeps across its await that other tasks may wait for: lock
//! guards and semaphore permits, channel senders, Notify handles, and permits tokio has
//! assigned to an acquire future that sits in a local, unpolled (a futurelock, RFD 609).
//! The wait-for graph (`waits/`) ties them to the tasks that wait.

use std::cell::RefCell;

use rustc_hash::FxHashSet;

use super::decoders::{semaphore, semaphore_permits};
use super::env::{active_variant, captured_variables};
use super::type_graph::{TypeGraphSearch, TypeShape};
use crate::collections::{self, Container, Naming};
use crate::dwarf::{DebugInfo, DieRef, TypeTag};
use crate::error::Result;
use crate::layouts::tokio_futures::{self as layout, HeldPermits, HoldingType, LockTotal};
use crate::model::{Holding, HoldingKind, LockPermits, Resource, ResourceKind};
use crate::names;
use crate::std_values;
use crate::value::Value;

/// How deep values are searched for holdings (structs in enums in coroutines …).
const MAX_DEPTH: usize = 8;
/// Holdings kept per coroutine: a corrupt image must not make millions.
const MAX_HOLDINGS: usize = 64;
/// Values of one collection searched: enough for a handful of guards, bounded for big ones.
const MAX_ELEMENTS: u64 = 64;

/// Whether values of a type can contain a holding: by value, or through what the value
/// owns (a `Box`, the elements of std's collections: `crate::collections`, as the search
/// for futures sees them); what an `Arc` shares is not the coroutine's to hold, and other
/// pointers are not followed but for the guards' own. Worked out once per type and command.
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
                Ok(info) => match Container::of(debug, &info) {
                    Some(container) if container.is_shared() => TypeShape::Owns(Vec::new()),
                    Some(container) => TypeShape::Owns(container.holds),
                    None if info.tag == TypeTag::Pointer => TypeShape::Owns(Vec::new()),
                    None => {
                        let members = info.fields.iter().filter_map(|field| field.ty);
                        let variants = info.variant_part.iter().flat_map(|part| {
                            part.variants.iter().filter_map(|variant| variant.member.ty)
                        });
                        TypeShape::Owns(members.chain(variants).collect())
                    }
                },
                Err(_) => TypeShape::Owns(Vec::new()),
            })
    }
}

fn holding_type(name: &str) -> Option<&'static HoldingType> {
    layout::HOLDING_TYPES
        .iter()
        .find(|holding| name.starts_with(holding.type_prefix))
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
    let mut seen = FieldOffsets::for_fields(fields.ty.fields.len());
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

/// The field offsets met so far: a variant's few fields in a vector (a hash set was an
/// allocation and its growth per coroutine decoded), a long list in a set.
enum FieldOffsets {
    Few(Vec<u64>),
    Many(FxHashSet<u64>),
}

/// Fields up to which a vector is searched.
const FEW_FIELDS: usize = 32;

impl FieldOffsets {
    fn for_fields(count: usize) -> FieldOffsets {
        match count <= FEW_FIELDS {
            true => FieldOffsets::Few(Vec::with_capacity(count)),
            false => FieldOffsets::Many(FxHashSet::default()),
        }
    }

    /// False if `offset` was met before.
    fn insert(&mut self, offset: u64) -> bool {
        match self {
            FieldOffsets::Few(offsets) if offsets.contains(&offset) => false,
            FieldOffsets::Few(offsets) => {
                offsets.push(offset);
                true
            }
            FieldOffsets::Many(offsets) => offsets.insert(offset),
        }
    }
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
        if let Some(holding_type) = holding_type(name) {
            if let Ok(Some(resource)) = std_values::follow(value, holding_type.to_resource) {
                let permits = held_permits(value, holding_type);
                let lock = permits
                    .is_some()
                    .then(|| lock_permits(value, &resource, holding_type.lock_total))
                    .flatten();
                self.push(Found {
                    kind: holding_type.kind,
                    resource: Resource {
                        kind: holding_type.resource,
                        address: resource.address,
                    },
                    local: path,
                    idle_future,
                    permits,
                    lock,
                });
            }
            return;
        }
        if name == layout::ACQUIRE_TYPE {
            if let Ok(Some(found)) = assigned_permits(value, path) {
                self.push(found);
            }
            return;
        }
        if !self.types.may_hold(value.target.debug, value.ty.die) {
            return;
        }
        let debug = value.target.debug;
        if let Some(container) = Container::of(debug, &value.ty).filter(|c| !c.is_shared()) {
            let Ok(contents) = container.contents(value, MAX_ELEMENTS) else {
                return;
            };
            for (position, held) in contents.held.into_iter().enumerate() {
                let path = match container.naming() {
                    Naming::Itself => path.clone(),
                    Naming::Position => format!("{path}[{position}]"),
                    Naming::Key => {
                        let key = held.key.as_ref().and_then(collections::key_name);
                        format!("{path}[{}]", key.unwrap_or_else(|| format!("#{position}")))
                    }
                };
                self.visit(&held.value, path, idle_future, depth + 1);
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

    fn push(&mut self, found: Found) {
        let holding = Holding {
            kind: found.kind,
            resource: found.resource,
            local: found.local,
            idle_future: found.idle_future,
            captured: false,
            permits: found.permits,
            released: false,
            lock: found.lock,
        };
        if !self.found.contains(&holding) {
            self.found.push(holding);
        }
    }
}

/// A holding as the search finds it (`captured` and `released` are decided later).
struct Found {
    kind: HoldingKind,
    resource: Resource,
    local: String,
    idle_future: bool,
    permits: Option<u64>,
    lock: Option<LockPermits>,
}

/// The permits of its lock a guard or permit keeps; none for other holdings, or where the
/// count cannot be read (then the wait-for graph does not count it).
fn held_permits(holding: &Value<'_>, holding_type: &HoldingType) -> Option<u64> {
    match holding_type.permits {
        HeldPermits::NotPermits => None,
        HeldPermits::One => Some(1),
        HeldPermits::Field(name) => holding.field(name).and_then(|count| count.read_uint()).ok(),
    }
}

/// The lock's semaphore as the holding shows it: its permits available, and its total where
/// the holding tells it.
fn lock_permits(
    holding: &Value<'_>,
    semaphore: &Value<'_>,
    total: LockTotal,
) -> Option<LockPermits> {
    let (available, _closed) = semaphore_permits(semaphore).ok()?;
    let total = match total {
        LockTotal::Unknown => None,
        LockTotal::Mutex => Some(layout::MUTEX_PERMITS),
        LockTotal::At(path) => std_values::follow(holding, path)
            .ok()
            .flatten()
            .and_then(|count| count.read_uint().ok()),
    };
    Some(LockPermits { available, total })
}

/// An acquire future's semaphore, as a holding, when tokio has assigned permits to its
/// waiter.
fn assigned_permits(acquire: &Value<'_>, local: String) -> Result<Option<Found>> {
    let assigned = semaphore::assigned(acquire)?;
    if assigned == 0 {
        return Ok(None);
    }
    let Some(semaphore) = std_values::follow(acquire, layout::ACQUIRE_SEMAPHORE)? else {
        return Ok(None);
    };
    let lock = semaphore_permits(&semaphore)
        .ok()
        .map(|(available, _closed)| LockPermits {
            available,
            total: None,
        });
    Ok(Some(Found {
        kind: HoldingKind::Assigned,
        resource: Resource {
            kind: ResourceKind::Semaphore,
            address: semaphore.address,
        },
        local,
        idle_future: true,
        permits: Some(assigned),
        lock,
    }))
}

#[cfg(test)]
mod tests {
    use super::{of_fields, HoldingTypes};
    use crate::model::{HoldingKind, ResourceKind};
    use crate::testing::{die_of, Program, TestMemory};
    use crate::value::Target;

    #[test]
    fn guards_kept_in_std_collections_are_held() {
        let mut program = Program::new();
        let u64 = program.u64();
        let mutex_name = "tokio::sync::mutex::Mutex<u32>";
        let mutex = program.structure(mutex_name, 16, &[("s", 0, u64)]);
        let lock = program.reference(mutex_name, mutex);
        let guard_name = "tokio::sync::mutex::MutexGuard<u32>";
        let guard = program.structure(guard_name, 8, &[("lock", 0, lock)]);
        let queue = program.vec_deque(guard_name, guard);
        let pair = program.array(guard, 2);
        program.structure("app::Pool", 48, &[("queue", 0, queue), ("pair", 32, pair)]);
        let debug = program.load();
        let mut memory = TestMemory::default();
        // Two slots, both in use from slot 1; each guard points to its Mutex.
        memory.write_u64(0x1000, 2);
        memory.write_u64(0x1008, 0x2000);
        memory.write_u64(0x1010, 1);
        memory.write_u64(0x1018, 2);
        memory.write_u64(0x2000, 0x3000);
        memory.write_u64(0x2008, 0x3100);
        memory.write_u64(0x1020, 0x3200);
        memory.write_u64(0x1028, 0x3300);
        let target = Target::new(&debug, &memory, 0);
        let pool = target.value(die_of(&debug, "app::Pool"), 0x1000).unwrap();
        let held: Vec<_> = of_fields(&HoldingTypes::default(), &pool)
            .into_iter()
            .map(|holding| {
                assert_eq!(
                    (holding.kind, holding.resource.kind),
                    (HoldingKind::LockGuard, ResourceKind::Mutex)
                );
                (holding.local, holding.resource.address)
            })
            .collect();
        let expected = [
            ("self.queue[0]", 0x3100),
            ("self.queue[1]", 0x3000),
            ("self.pair[0]", 0x3200),
            ("self.pair[1]", 0x3300),
        ];
        assert_eq!(
            held,
            expected.map(|(local, address)| (local.to_string(), address))
        );
    }
}
