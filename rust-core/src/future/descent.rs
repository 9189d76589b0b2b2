//! Futures no decoder knows, searched structurally: their fields, the active variant of
//! enums, and what they own: a `Box` (or a `Box<dyn http_body::Body>`, through its
//! vtable), std's collections (`Vec`, `VecDeque`, boxed and shared slices, arrays,
//! `HashMap`/`HashSet`, `BTreeMap`/`BTreeSet`: `crate::collections`) and the value of an
//! `Arc`/`Rc` they alone own, down to the nearest values that are futures themselves (a
//! coroutine, a type with a decoder, among them what a hand-written future keeps and polls,
//! a `dyn Future`/`dyn Stream`, a `Pin` of a future, or a type the binary has
//! `poll`/`poll_next` code for). Whether a type can hold a future at all is decided once
//! per type from the DWARF type graph (`type_graph`), so buffers and maps of plain data are
//! never walked. What an `Arc` shares with other owners (a client's pool, a registry of
//! requests in flight) is not searched, since a future keeps what it polls to itself, and
//! tokio's own shared state (a channel's, the runtime's) is left to the decoders. Every
//! walk is bounded: the values looked at, the nesting, the elements of each collection.

use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::decoders::boxed;
use super::outcome::{Child, SearchRoot};
use super::type_graph::{TypeGraphSearch, TypeShape};
use super::{registry, FutureDecoder};
use crate::collections::{self, Container, Naming};
use crate::dwarf::{DebugInfo, DieRef, TypeInfo, TypeTag};
use crate::error::{Error, Result};
use crate::layouts::{rust, tokio_futures};
use crate::names;
use crate::std_values;
use crate::value::{offset, Value};

/// How many nested values (fields, elements, pointees) one search goes through.
const MAX_DEPTH: usize = 64;
/// How many values one search looks at (each costs at most one small read).
const MAX_VISITED: usize = 8192;
/// How many values of one collection are searched.
const MAX_ELEMENTS: u64 = 4096;
/// Types with a `Future`/`Stream` impl that only forwards to what they hold: the search
/// looks inside them (the active variant, the boxed value) instead of stopping there.
const CONTAINERS: &[&str] = &[
    "core::option::Option",
    "alloc::boxed::Box",
    "core::pin::Pin",
    "either::Either",
];

/// A future found inside another, with the path that leads to it (`signals[1].1`).
pub struct Found<'a> {
    pub via: String,
    pub value: Value<'a>,
}

/// What a search found, and what stopped part of it (a corrupt collection, a bound): the
/// rest was searched.
pub struct Searched<'a> {
    pub found: Vec<Found<'a>>,
    pub incomplete: Option<Error>,
}

/// What is known about each type, per command.
#[derive(Default)]
pub struct TypeFacts {
    can_hold_future: TypeGraphSearch<DieRef>,
}

impl<'a> FutureDecoder<'a> {
    /// Whether a value of this type is a future the decoder can show as a node.
    pub(super) fn is_future(&self, info: &TypeInfo) -> bool {
        // A pointer is followed only as a Box (`collections`); a boxed body is looked into.
        if info.tag == TypeTag::Pointer || boxed::is_dyn_body(info) {
            return false;
        }
        if info.name.starts_with(rust::PIN_PREFIX) {
            return self.pins_a_future(info);
        }
        let path = names::strip_last_generics(&info.name);
        names::coroutine_kind(&info.name).is_some()
            || boxed::is_dyn_future(info)
            || registry::decoder_for(info).is_some()
            || (!CONTAINERS.contains(&path.as_str()) && self.polled_types.contains(&path))
    }

    /// `Pin<P>` is a future when P is a `dyn Future` or points to a future; a pinned box of
    /// anything else (an I/O object, a body) is searched like any other field.
    fn pins_a_future(&self, pin: &TypeInfo) -> bool {
        let debug = self.target().debug;
        let Some(pointer) = std_values::pin_pointer_type(debug, pin) else {
            return false;
        };
        if boxed::is_dyn_future(&pointer) {
            return true;
        }
        pointer.tag == TypeTag::Pointer
            && pointer
                .target
                .and_then(|target| debug.type_info(target).ok())
                .is_some_and(|pointee| self.is_future(&pointee))
    }

    /// The futures a search root gives, as children, and what stopped part of the search.
    pub(super) fn search(&self, root: &SearchRoot) -> Result<(Vec<Child>, Option<Error>)> {
        let value = self.target().value(root.ty, root.address)?;
        if root.itself && self.is_future(&value.ty) {
            let child = Child {
                via: Some(root.via.clone()),
                held: root.held,
                ..Child::of(&value)
            };
            return Ok((vec![child], None));
        }
        let searched = self.inner_futures(&value);
        let children = searched
            .found
            .into_iter()
            .map(|found| Child {
                via: Some(join(&root.via, &found.via)),
                held: root.held,
                ..Child::of(&found.value)
            })
            .collect();
        let incomplete = searched.incomplete.map(|error| match root.via.as_str() {
            "" => error,
            via => error.context(via),
        });
        Ok((children, incomplete))
    }

    /// The nearest futures inside `value` (not `value` itself).
    pub(crate) fn inner_futures(&self, value: &Value<'a>) -> Searched<'a> {
        let mut search = Search::default();
        if let Err(error) = self.look_inside(value, "", 0, &mut search) {
            search.note("", error);
        }
        Searched {
            found: search.found,
            incomplete: search.incomplete,
        }
    }

    /// `value` if it is a future, else the futures inside it.
    fn visit(&self, value: Value<'a>, via: &str, depth: usize, search: &mut Search<'a>) {
        search.visited += 1;
        if search.visited > MAX_VISITED {
            let error = Error::layout(format!("search stopped after {MAX_VISITED} values"));
            search.note("", error);
            return;
        }
        if depth > MAX_DEPTH {
            search.note(
                via,
                Error::layout(format!("nested deeper than {MAX_DEPTH}")),
            );
            return;
        }
        if self.is_future(&value.ty) {
            search.found.push(Found {
                via: via.to_string(),
                value,
            });
            return;
        }
        if let Err(error) = self.look_inside(&value, via, depth, search) {
            search.note(via, error);
        }
    }

    /// The futures inside `value`: through what it owns, or its fields.
    fn look_inside(
        &self,
        value: &Value<'a>,
        via: &str,
        depth: usize,
        search: &mut Search<'a>,
    ) -> Result<()> {
        if !self.can_hold_future(value.ty.die) {
            return Ok(());
        }
        if boxed::is_dyn_body(&value.ty) {
            if boxed::is_null(value)? {
                return Ok(());
            }
            let (concrete, data) = boxed::concrete(&self.context, value)?;
            self.visit(value.target.value(concrete, data)?, via, depth + 1, search);
            return Ok(());
        }
        // What holds one value is no step of the path: `Some`, a cell, a Mutex, a `Pin`.
        let only_value = if std_values::is_option(&value.ty) {
            match std_values::option(value)? {
                Some(inner) => Some(inner),
                None => return Ok(()),
            }
        } else if value.ty.name.starts_with(rust::PIN_PREFIX) {
            Some(std_values::pin_pointer(value)?)
        } else {
            std_values::wrapped_value(value)?
        };
        if let Some(inner) = only_value {
            self.visit(inner, via, depth + 1, search);
            return Ok(());
        }
        if let Some(container) = Container::of(self.target().debug, &value.ty) {
            return self.search_container(&container, value, via, depth, search);
        }
        self.search_fields(value, via, depth, search)
    }

    fn search_fields(
        &self,
        value: &Value<'a>,
        via: &str,
        depth: usize,
        search: &mut Search<'a>,
    ) -> Result<()> {
        for field in &value.ty.fields {
            let Some(ty) = field.ty else { continue };
            if !self.can_hold_future(ty) {
                continue;
            }
            let child = value
                .target
                .value(ty, offset(value.address, field.offset)?)?;
            self.visit(
                child,
                &join(via, field_name(&field.name)),
                depth + 1,
                search,
            );
        }
        if value.ty.variant_part.is_some() {
            let (variant, payload) = value.variant()?;
            if self.can_hold_future(payload.ty.die) {
                self.search_fields(&payload, &join(via, &variant), depth + 1, search)?;
            }
        }
        Ok(())
    }

    /// The values a collection, a `Box` or an `Arc` holds, each named by its position or
    /// key; a shared value only where this `Arc` (`Rc`) is its one owner, and once.
    fn search_container(
        &self,
        container: &Container,
        value: &Value<'a>,
        via: &str,
        depth: usize,
        search: &mut Search<'a>,
    ) -> Result<()> {
        let contents = container.contents(value, MAX_ELEMENTS)?;
        if let Some(shared) = contents.shared {
            // What other owners share too is not this future's to await: a client handle's
            // pool, a registry of every request in flight (hickory's resolver keeps one
            // behind the `Arc` each lookup holds). A future keeps what it polls to itself.
            if shared.owners > 1 || !search.shared_seen.insert(shared.at) {
                return Ok(());
            }
        }
        let held = contents.held.len();
        if (held as u64) < contents.len {
            search.note(
                via,
                Error::layout(format!(
                    "holds {} values, the first {held} searched",
                    contents.len
                )),
            );
        }
        for (position, held) in contents.held.into_iter().enumerate() {
            if search.visited > MAX_VISITED || !self.target().go_on() {
                break;
            }
            if !self.can_hold_future(held.value.ty.die) {
                continue;
            }
            let via = match container.naming() {
                Naming::Itself => via.to_string(),
                Naming::Position => format!("{via}[{position}]"),
                Naming::Key => {
                    let key = held.key.as_ref().and_then(collections::key_name);
                    format!("{via}[{}]", key.unwrap_or_else(|| format!("#{position}")))
                }
            };
            self.visit(held.value, &via, depth + 1, search);
        }
        Ok(())
    }

    /// Whether a value of this type can contain a future: it is one, or what it owns (its
    /// fields, enum variants, boxed, collected and shared values) can, at any depth.
    pub fn can_hold_future(&self, ty: DieRef) -> bool {
        self.type_facts
            .borrow_mut()
            .can_hold_future
            .reaches(ty, &mut |ty| self.type_shape(ty))
    }

    /// A type as the search sees it: a future, or what a value of it owns.
    fn type_shape(&self, ty: DieRef) -> TypeShape<DieRef> {
        let debug = self.target().debug;
        let Ok(info) = debug.type_info(ty) else {
            return TypeShape::Owns(Vec::new());
        };
        // What a boxed body holds is known only at run time.
        if self.is_future(&info) || boxed::is_dyn_body(&info) {
            return TypeShape::Wanted;
        }
        if let Some(container) = Container::of(debug, &info) {
            if container.is_shared() && holds_tokio_state(debug, &container) {
                return TypeShape::Owns(Vec::new());
            }
            return TypeShape::Owns(container.holds);
        }
        match info.tag {
            TypeTag::Struct => {
                let fields = info.fields.iter().filter_map(|field| field.ty);
                let variants = info
                    .variant_part
                    .iter()
                    .flat_map(|part| part.variants.iter().filter_map(|variant| variant.member.ty));
                TypeShape::Owns(fields.chain(variants).collect())
            }
            // Other pointers are not followed; a union's value may not be there at all.
            _ => TypeShape::Owns(Vec::new()),
        }
    }
}

/// Whether an `Arc`/`Rc` shares tokio's own state rather than the program's.
fn holds_tokio_state(debug: &DebugInfo, container: &Container) -> bool {
    container.holds.iter().any(|ty| {
        debug.type_info(*ty).is_ok_and(|info| {
            info.name.starts_with(tokio_futures::OWN_STATE_PREFIX)
                && !tokio_futures::PROGRAM_VALUE_HOLDERS
                    .iter()
                    .any(|prefix| info.name.starts_with(prefix))
        })
    })
}

#[derive(Default)]
struct Search<'a> {
    found: Vec<Found<'a>>,
    visited: usize,
    /// The shared values (`Arc`s' and `Rc`s' allocations) already searched.
    shared_seen: FxHashSet<u64>,
    incomplete: Option<Error>,
}

impl Search<'_> {
    /// What stopped the search at `via`: the first such is kept.
    fn note(&mut self, via: &str, error: Error) {
        if self.incomplete.is_none() {
            self.incomplete = Some(match via {
                "" => error,
                via => error.context(via),
            });
        }
    }
}

/// A field's name in a path: a tuple's `__1` is `1`, as Rust writes it.
fn field_name(name: &str) -> &str {
    match name.strip_prefix("__") {
        Some(index) if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) => index,
        _ => name,
    }
}

/// `via` and then `name`: a field's (`.name`) or, from a collection, an element's (`[2]`).
fn join(via: &str, name: &str) -> String {
    if via.is_empty() || name.starts_with('[') {
        format!("{via}{name}")
    } else {
        format!("{via}.{name}")
    }
}

/// The types the binary has `Future::poll` or `Stream::poll_next` code for (their paths
/// without generic arguments): worked out once per binary and kept with it.
pub fn polled_types(debug: &DebugInfo) -> Arc<FxHashSet<String>> {
    debug.types_implementing(rust::POLL_IMPLS)
}

#[cfg(test)]
mod tests;
