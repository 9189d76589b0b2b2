//! What a suspended coroutine keeps across its await that other tasks may wait for: lock
//! guards and semaphore permits, channel senders, Notify handles, and permits tokio has
//! assigned to an acquire future that sits in a local, unpolled (a futurelock, RFD 609).
//! The wait-for graph (`waits/`) ties them to the tasks that wait.

use std::cell::RefCell;

use rustc_hash::{FxHashMap, FxHashSet};

use super::decoders::{semaphore, semaphore_permits};
use super::env::{active_variant, captured_variables};
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
            .reaches_holding(ty, &mut |ty| match debug.type_info(ty) {
                Ok(info)
                    if holding_type(&info.name).is_some() || info.name == layout::ACQUIRE_TYPE =>
                {
                    TypeShape::Holding
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

/// A type as the search for holdings sees it.
enum TypeShape<T> {
    Holding,
    /// What a value of it owns: its fields and variants, a Box's pointee, a Vec's element.
    Owns(Vec<T>),
}

/// Which types reach a holding through what they own, at any depth, each worked out once.
/// Types that own each other (through Boxes, Vecs) reach the same holdings, so the answer
/// is found per strongly connected set of types (Tarjan's algorithm), which is exact where
/// assuming "no" for a type met again while open is not.
struct TypeGraphSearch<T> {
    known: FxHashMap<T, bool>,
    /// Types on the current search path or in a set not yet closed: their order of
    /// discovery, the lowest order they reach, and whether they reach a holding so far.
    open: FxHashMap<T, OpenType>,
    stack: Vec<T>,
}

struct OpenType {
    order: usize,
    lowest_reached: usize,
    holds: bool,
}

/// How far a search may nest: only corrupt DWARF nests types this deep, and what lies
/// below counts as holding nothing.
const MAX_TYPE_NESTING: usize = 512;

impl<T> Default for TypeGraphSearch<T> {
    fn default() -> Self {
        TypeGraphSearch {
            known: FxHashMap::default(),
            open: FxHashMap::default(),
            stack: Vec::new(),
        }
    }
}

impl<T: Copy + Eq + std::hash::Hash> TypeGraphSearch<T> {
    fn reaches_holding(&mut self, ty: T, shape: &mut impl FnMut(T) -> TypeShape<T>) -> bool {
        if let Some(&known) = self.known.get(&ty) {
            return known;
        }
        self.visit(ty, 0, shape);
        self.open.clear();
        self.known.get(&ty).copied().unwrap_or(false)
    }

    fn visit(&mut self, ty: T, nesting: usize, shape: &mut impl FnMut(T) -> TypeShape<T>) {
        let order = self.open.len();
        let owned = match shape(ty) {
            TypeShape::Holding => {
                self.known.insert(ty, true);
                return;
            }
            TypeShape::Owns(owned) => owned,
        };
        self.open.insert(
            ty,
            OpenType {
                order,
                lowest_reached: order,
                holds: false,
            },
        );
        self.stack.push(ty);
        for member in owned {
            let reached = match self.known.get(&member) {
                Some(&holds) => (holds, None),
                None if !self.open.contains_key(&member) && nesting < MAX_TYPE_NESTING => {
                    self.visit(member, nesting + 1, shape);
                    match self.known.get(&member) {
                        Some(&holds) => (holds, None),
                        None => (
                            false,
                            self.open.get(&member).map(|open| open.lowest_reached),
                        ),
                    }
                }
                // Open: in the set being worked out, which decides for all its types at once.
                None => (false, self.open.get(&member).map(|open| open.order)),
            };
            if let Some(this) = self.open.get_mut(&ty) {
                this.holds |= reached.0;
                this.lowest_reached = this.lowest_reached.min(reached.1.unwrap_or(usize::MAX));
            }
        }
        // The first type of a set closes it: the set is it and what lies above it on the stack.
        let closes = self
            .open
            .get(&ty)
            .is_some_and(|this| this.lowest_reached == this.order);
        if let Some(start) = self
            .stack
            .iter()
            .rposition(|open| *open == ty)
            .filter(|_| closes)
        {
            let set: Vec<T> = self.stack.drain(start..).collect();
            let holds = set
                .iter()
                .any(|member| self.open.get(member).is_some_and(|open| open.holds));
            for member in set {
                self.known.insert(member, holds);
            }
        }
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
    use super::{TypeGraphSearch, TypeShape, MAX_TYPE_NESTING};

    /// Types as numbers: `0` is a guard; each other type owns the types listed for it.
    fn graph<'a>(owns: &'a [(u32, Vec<u32>)]) -> impl FnMut(u32) -> TypeShape<u32> + 'a {
        move |ty| match owns.iter().find(|(owner, _)| *owner == ty) {
            _ if ty == 0 => TypeShape::Holding,
            Some((_, owned)) => TypeShape::Owns(owned.clone()),
            None => TypeShape::Owns(Vec::new()),
        }
    }

    fn chain(length: u32) -> Vec<(u32, Vec<u32>)> {
        (1..=length)
            .map(|ty| (ty, vec![if ty == length { 0 } else { ty + 1 }]))
            .collect()
    }

    #[test]
    fn types_that_own_each_other_share_their_answer() {
        // 1 { x: 2, guard }, 2 { Box<1> } (3 is the Box): 2 reaches the guard through 1.
        let owns = [(1, vec![2, 0]), (2, vec![3]), (3, vec![1])];
        let mut search = TypeGraphSearch::default();
        assert!(search.reaches_holding(1, &mut graph(&owns)));
        assert!(search.reaches_holding(2, &mut graph(&owns)));
        assert!(search.reaches_holding(3, &mut graph(&owns)));
        // The same with the guard found last, from the Box's side.
        let owns = [
            (1, vec![2]),
            (2, vec![3, 4]),
            (3, vec![1]),
            (4, vec![5]),
            (5, vec![0]),
        ];
        let mut search = TypeGraphSearch::default();
        assert!(search.reaches_holding(3, &mut graph(&owns)));
        assert!(search.reaches_holding(1, &mut graph(&owns)));
    }

    #[test]
    fn the_answer_for_a_type_does_not_depend_on_where_it_was_first_met() {
        // A chain 1 -> 2 -> ... -> 20 -> guard, asked from its top and then from inside.
        let owns = chain(20);
        let mut search = TypeGraphSearch::default();
        assert!(search.reaches_holding(1, &mut graph(&owns)));
        assert!(search.reaches_holding(15, &mut graph(&owns)));
        // Too deep for a search to follow: only corrupt DWARF nests types so far.
        let owns = chain(MAX_TYPE_NESTING as u32 + 10);
        assert!(!TypeGraphSearch::default().reaches_holding(1, &mut graph(&owns)));
    }

    #[test]
    fn every_type_is_worked_out_once() {
        // 30 types that each own all the others, and a list node { next: Box<Node>, value }.
        let everyone: Vec<(u32, Vec<u32>)> = (1..=30)
            .map(|ty| (ty, (1..=30).filter(|other| *other != ty).collect()))
            .collect();
        let node = [(41, vec![42, 44]), (42, vec![41])];
        for (owns, types) in [(&everyone[..], 30), (&node[..], 3)] {
            let mut search = TypeGraphSearch::default();
            let mut asked = 0;
            let mut counting = |ty| {
                asked += 1;
                graph(owns)(ty)
            };
            assert!(!search.reaches_holding(owns[0].0, &mut counting));
            assert!(owns
                .iter()
                .all(|(ty, _)| !search.reaches_holding(*ty, &mut counting)));
            assert_eq!(asked, types);
        }
    }
}
