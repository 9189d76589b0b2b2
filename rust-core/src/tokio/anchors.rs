//! What leads to task lists no thread context names: a `LocalSet` and a runtime's handle
//! (`scheduler::Handle`, inside every `Runtime`, `LocalRuntime` and `Handle`), wherever a
//! value keeps them: in its fields, the active variant of its enums, what its `Box`es,
//! collections, `Arc`s and `Rc`s hold (`collections`), and the set `OnceLock`s and
//! `LazyLock`s of statics.
//! Whether a type can hold one at all is worked out once per type, so that the search of a
//! coroutine's saved locals or a static costs a lookup where it holds none.

use std::cell::RefCell;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::collections::Container;
use crate::dwarf::{DebugInfo, DieRef, TypeInfo, TypeTag};
use crate::error::Result;
use crate::layouts::{rust, tokio as layout, Path};

/// An entry of `rust::ONCE_CELLS`.
type OnceCell = (&'static str, Path, Path);
use crate::std_values;
use crate::value::{offset, Value};

/// How deep one search nests (fields in variants in boxes …).
const MAX_DEPTH: usize = 12;
/// Values one search looks at, each at most one small read.
const MAX_VISITED: usize = 256;
/// Elements of one collection looked at.
const MAX_ELEMENTS: u64 = 64;
/// How deep the type graph is followed when classifying a type.
const MAX_TYPE_DEPTH: usize = 48;

/// Something that leads to a task list, as a value met in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Anchor {
    /// A `tokio::task::local::LocalSet` (its type, its address).
    LocalSet(DieRef, u64),
    /// A `tokio::runtime::scheduler::Handle`.
    RuntimeHandle(DieRef, u64),
    /// A task's header, met through a `JoinHandle`: a task no list walked so far holds
    /// leads to its owner's.
    Task(u64),
}

fn anchor_at(info: &TypeInfo, address: u64) -> Option<Anchor> {
    if info.name == layout::LOCAL_SET_TYPE {
        Some(Anchor::LocalSet(info.die, address))
    } else if info.name == layout::SCHEDULER_HANDLE_TYPE {
        Some(Anchor::RuntimeHandle(info.die, address))
    } else {
        None
    }
}

/// Which types can hold an anchor, per command.
#[derive(Default)]
pub struct AnchorTypes {
    reaches: RefCell<FxHashMap<DieRef, bool>>,
}

impl AnchorTypes {
    /// Whether a value of this type can hold an anchor: it is one, or its fields, variants,
    /// or what it owns or shares can. Cycles in the type graph count as "no".
    pub fn reach(&self, debug: &DebugInfo, ty: DieRef) -> bool {
        self.reaches_at(debug, ty, 0)
    }

    fn reaches_at(&self, debug: &DebugInfo, ty: DieRef, depth: usize) -> bool {
        if let Some(&known) = self.reaches.borrow().get(&ty) {
            return known;
        }
        if depth > MAX_TYPE_DEPTH {
            return false;
        }
        self.reaches.borrow_mut().insert(ty, false);
        let Ok(info) = debug.type_info(ty) else {
            return false;
        };
        let reaches = anchor_at(&info, 0).is_some()
            || inner_types(debug, &info)
                .into_iter()
                .any(|inner| self.reaches_at(debug, inner, depth + 1));
        self.reaches.borrow_mut().insert(ty, reaches);
        reaches
    }

    /// The anchors `value` holds (not more than the search's bounds allow).
    pub fn find_in(&self, value: &Value<'_>) -> Vec<Anchor> {
        let mut search = Search {
            types: self,
            visited: 0,
            found: Vec::new(),
            shared_seen: FxHashSet::default(),
        };
        // A value that cannot be read holds nothing this search can tell of.
        let _ = search.visit(value, 0);
        search.found
    }
}

/// The types a value of `info` holds or leads to: what a std container holds
/// (`collections`), else its fields and variants (unions are not read: which member is
/// live is unknown, but in the `ONCE_CELLS`).
fn inner_types(debug: &DebugInfo, info: &TypeInfo) -> Vec<DieRef> {
    if let Some(inner) = once_cell_value_type(debug, info) {
        return vec![inner];
    }
    if let Some(container) = Container::of(debug, info) {
        return container.holds;
    }
    match info.tag {
        TypeTag::Struct => {
            let members = info.fields.iter().filter_map(|field| field.ty);
            let variants = info
                .variant_part
                .iter()
                .flat_map(|part| part.variants.iter().filter_map(|variant| variant.member.ty));
            members.chain(variants).collect()
        }
        _ => Vec::new(),
    }
}

/// For a `OnceLock`/`LazyLock`: its entry in `ONCE_CELLS`.
fn once_cell(info: &TypeInfo) -> Option<&'static OnceCell> {
    rust::ONCE_CELLS
        .iter()
        .find(|(prefix, ..)| info.name.starts_with(prefix))
}

/// The type of the value a once-cell holds, from its layout alone.
fn once_cell_value_type(debug: &DebugInfo, info: &TypeInfo) -> Option<DieRef> {
    let (_, _, value_path) = once_cell(info)?;
    std_values::type_along(debug, info, value_path).map(|inner| inner.die)
}

struct Search<'s> {
    types: &'s AnchorTypes,
    visited: usize,
    found: Vec<Anchor>,
    shared_seen: FxHashSet<u64>,
}

impl Search<'_> {
    fn visit(&mut self, value: &Value<'_>, depth: usize) -> Result<()> {
        self.visited += 1;
        if self.visited > MAX_VISITED || depth > MAX_DEPTH {
            return Ok(());
        }
        if let Some(anchor) = anchor_at(&value.ty, value.address) {
            if !self.found.contains(&anchor) {
                self.found.push(anchor);
            }
            return Ok(());
        }
        let debug = value.target.debug;
        if !self.types.reach(debug, value.ty.die) {
            return Ok(());
        }
        if let Some((_, state_path, value_path)) = once_cell(&value.ty) {
            let state = std_values::at_path(value, state_path)?.read_uint()?;
            if state & rust::ONCE_STATE_MASK != rust::ONCE_COMPLETE {
                return Ok(());
            }
            return self.visit(&std_values::at_path(value, value_path)?, depth + 1);
        }
        if let Some(container) = Container::of(debug, &value.ty) {
            let contents = container.contents(value, MAX_ELEMENTS)?;
            // What others share is searched once.
            if contents
                .shared
                .is_some_and(|shared| !self.shared_seen.insert(shared.at))
            {
                return Ok(());
            }
            for held in contents.held {
                self.visit(&held.value, depth + 1)?;
            }
            return Ok(());
        }
        match value.ty.tag {
            TypeTag::Struct if value.ty.variant_part.is_some() => {
                let (_, payload) = value.variant()?;
                self.visit_fields(&payload, depth)?;
            }
            TypeTag::Struct => self.visit_fields(value, depth)?,
            _ => {}
        }
        Ok(())
    }

    fn visit_fields(&mut self, value: &Value<'_>, depth: usize) -> Result<()> {
        let debug = value.target.debug;
        for field in &value.ty.fields {
            let Some(ty) = field.ty.filter(|&ty| self.types.reach(debug, ty)) else {
                continue;
            };
            let inner = value
                .target
                .value(ty, offset(value.address, field.offset)?)?;
            // One unreadable field does not hide the others.
            let _ = self.visit(&inner, depth + 1);
        }
        Ok(())
    }
}
